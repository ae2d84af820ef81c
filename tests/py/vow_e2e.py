"""End to end: the vow ledger as a new user meets it, and an independent audit of it.

Starts a loopback stand-in for a hosted language model (OpenAI chat-completions wire format;
the primary provider answers 500, the fallback answers) and `conduct serve` configured with it.
Then: a wallet (PyPI eth-account) signs the served EIP-191 text, vows are taken (signed,
sealed, sandbox, and a 36-second cadence one), report-ins are appended, every bad input of the
issue is refused with problem+json and changes nothing, M and D appear nowhere on disk but in
the donated-trace store, readings come from the fallback model and never see M, D or a sealed
text, and a window boundary re-renders a vow page with nobody writing. Finally an independent
verifier written here (pyca/cryptography, rfc8785) checks the checkpoint signature, every
inclusion proof and every vow chain from the static files alone.

usage: vow_e2e.py --conduct BIN --workdir DIR
Prints one line per check and exits 0 only when every check passed.
"""
import argparse, base64, hashlib, json, os, re, secrets, subprocess, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import rfc8785
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from eth_account import Account
from eth_account.messages import encode_defunct

# A report-in answers at its commit; a test that reads the vow's pages next waits for them
# (RFC 7240 Prefer: wait, VOWS.md "Durability and verification").
WAIT = {"Prefer": "wait=30"}

results = []
LOG = []  # everything the service printed (searched for M and D too)
LONG = 70  # entries on one vow, to span more than two chain pages
MARK = secrets.token_hex(6)
M_MARK, D_MARK, SEALED_MARK = f"MREASON{MARK}", f"DACTION{MARK}", f"SEALEDTEXT{MARK}"



def manifest_unit(path):
    """A file's unit: its path up to the second `/` or the first `.` after its first component
    (library/MIRRORS.md, "The manifest")."""
    i = path.find("/")
    if i < 0:
        j = path.find(".", 1)
        return path if j < 0 else path[:j]
    rest = path[i + 1:]
    ends = [k for k in (rest.find("/"), rest.find(".")) if k >= 0]
    return path[:i + 1 + min(ends)] if ends else path


def manifest_entry(h, base, path):
    """What the served manifest says of `path` ({"len", "sha256"}, or None): the bin is found
    from the root down by the SHA-256 of the path's unit, each bin checked against the length
    and hash its parent gives it."""
    key = hashlib.sha256(manifest_unit(path).encode()).hexdigest()
    raw = h.get(base + "/manifest.json").content
    for depth in range(1, len(key) + 1):
        doc = json.loads(raw)
        if "files" in doc:
            return doc["files"].get(path)
        name = f"manifest/{key[:depth]}.json"
        ref = doc["bins"].get(name)
        if ref is None:
            return None
        raw = h.get(base + "/" + name).content
        assert len(raw) == ref["len"] and hashlib.sha256(raw).hexdigest() == ref["sha256"], \
            f"{name} is not the bin its parent names"
    return None

def check(name, ok, detail=""):
    results.append((name, bool(ok)))
    print(("ok:   " if ok else "FAIL: ") + name + ("" if ok else f"  [{detail}]"), flush=True)


def trace(n, y="answer billing questions", donate=None):
    turns = [{"Y": y if i % 3 else "handle refunds", "M": f"{M_MARK} step {i}",
              "D": f"{D_MARK}-{'refused' if i % 4 == 1 else 'ok'}", "context": {"monitored": i % 2}}
             for i in range(n)]
    return {"context_key": "monitored", "turns": turns}


# --- the language-model stand-in -------------------------------------------------------------
seen_prompts = []


def serve_models():
    class H(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("content-length", 0))).decode()
            seen_prompts.append((self.path, self.headers.get("authorization"), body))
            if self.path.startswith("/broken/"):
                out, code = {"error": {"type": "server_error", "message": "overloaded"}}, 500
            else:
                req = json.loads(body)
                out, code = {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": req["model"],
                             "choices": [{"index": 0, "finish_reason": "stop", "message": {
                                 "role": "assistant",
                                 "content": "The declared purposes still track the vow. Guidance only."}}],
                             "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}, 200
            data = json.dumps(out).encode()
            self.send_response(code)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{srv.server_address[1]}"


# --- an independent verifier of the static files ----------------------------------------------
def tile_path(n):
    s = f"{n:03d}"
    groups = []
    while True:
        groups.insert(0, n % 1000)
        n //= 1000
        if n == 0:
            break
    return "/".join([f"x{g:03d}" for g in groups[:-1]] + [f"{groups[-1]:03d}"])


def leaf_hash(b):
    return hashlib.sha256(b"\x00" + b).digest()


def node(l, r):
    return hashlib.sha256(b"\x01" + l + r).digest()


def mth(hs):
    if len(hs) == 1:
        return hs[0]
    k = 1
    while k * 2 < len(hs):
        k *= 2
    return node(mth(hs[:k]), mth(hs[k:]))


def verify_inclusion(index, size, leaf, proof, root):
    """RFC 9162 section 2.1.3.2."""
    if index >= size:
        return False
    fn, sn, r = index, size - 1, leaf
    for p in proof:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = node(p, r)
            if not fn & 1:
                while fn and not fn & 1:
                    fn >>= 1
                    sn >>= 1
        else:
            r = node(r, p)
        fn >>= 1
        sn >>= 1
    return sn == 0 and r == root


def open_note(text, vkey):
    """Verify a C2SP signed note against a vkey; return its body lines."""
    name, kid, b64 = vkey.split("+", 2)
    raw = base64.b64decode(b64)
    assert raw[0] == 1
    pub = Ed25519PublicKey.from_public_bytes(raw[1:])
    body, sigs = text.split("\n\n", 1)
    body += "\n"
    for line in sigs.splitlines():
        m = re.match(r"^\u2014 (\S+) (\S+)$", line)
        if m and m.group(1) == name:
            sig = base64.b64decode(m.group(2))
            if sig[:4].hex() == kid:
                pub.verify(sig[4:], body.encode())
                return body.splitlines()
    raise ValueError("no signature by the pinned key")


def verify_doc(doc, pub):
    """Check a signed snapshot's Ed25519 signature over its RFC 8785 bytes without `signature`."""
    d = dict(doc)
    pub.verify(base64.b64decode(d.pop("signature")), rfc8785.dumps(d))


def full_chain(h, base, vid, pub):
    """A vow's whole chain from /vow/{id}/chain (conduct.chain/v2): the last page by the head's
    pin, each page before it by its successor's prev_page_sha256 (signature and SHA-256 of each
    file checked), then the tail. Returns (head document, records, pages followed)."""
    head = h.get(base + f"/vow/{vid}/chain").json()
    verify_doc(head, pub)
    assert head["type"] == "conduct.chain/v2", head["type"]
    n = head["full_pages"]
    last = head["last_page"]
    assert (last is None) == (n == 0), last
    pin = last and last["sha256"]
    pages = []
    for k in reversed(range(n)):
        raw = h.get(base + f"/vow/{vid}/chain/{k}").content
        assert hashlib.sha256(raw).hexdigest() == pin, f"page {k} does not match its pin"
        page = json.loads(raw)
        verify_doc(page, pub)
        assert page["vow_id"] == vid and page["page"] == k and len(page["records"]) == head["page_size"]
        assert page["from_position"] == k * head["page_size"]
        pin = page["prev_page_sha256"]
        pages.append(page)
    assert pin is None, "page 0 links to nothing"
    records = [r for page in reversed(pages) for r in page["records"]]
    assert head["tail_from_position"] == len(records)
    records += head["tail"]
    assert len(records) == head["length"] + 1
    return head, records, n


def audit(base, vkey, public_key_b64):
    """Everything from static files: checkpoint, bundles, root, proofs, records, chains."""
    h = httpx.Client(timeout=30)
    cp_text = h.get(base + "/log/checkpoint").text
    origin, size_s, root_b64 = open_note(cp_text, vkey)[:3]
    size, root = int(size_s), base64.b64decode(root_b64)
    leaves = []
    for n in range((size + 255) // 256):
        w = min(256, size - n * 256)
        rel = f"/log/tile/entries/{tile_path(n)}" + ("" if w == 256 else f".p/{w}")
        b, i = h.get(base + rel).content, 0
        while i < len(b):
            ln = int.from_bytes(b[i:i + 2], "big")
            leaves.append(b[i + 2:i + 2 + ln])
            i += 2 + ln
    assert len(leaves) == size, (len(leaves), size)
    hashes = [leaf_hash(l) for l in leaves]
    assert mth(hashes) == root, "entries do not hash to the signed root"
    proofs = 0
    for idx in range(size):
        text = h.get(base + f"/log/proof/{idx}").text
        head, note = text.split("\n\n", 1)
        lines = head.splitlines()
        assert lines[0] == "c2sp.org/tlog-proof@v1" and lines[1] == f"index {idx}"
        p_origin, p_size, p_root = open_note(note, vkey)[:3]
        assert verify_inclusion(idx, int(p_size), hashes[idx], [base64.b64decode(x) for x in lines[2:]],
                                base64.b64decode(p_root)), f"inclusion proof {idx}"
        proofs += 1
    pub = Ed25519PublicKey.from_public_bytes(base64.b64decode(public_key_b64))
    heads, vows, entries, by_vow = {}, 0, 0, {}
    for idx, leaf in enumerate(leaves):
        rec = json.loads(leaf)
        assert rfc8785.dumps(rec) == leaf, f"leaf {idx} is not canonical"
        sig = base64.b64decode(rec.pop("signature"))
        pub.verify(sig, rfc8785.dumps(rec))
        assert rec["log_index"] == idx
        if rec["type"] == "conduct.vow/v1":
            assert rec["vow_id"] not in heads
            if "text" in rec:
                assert hashlib.sha256(rec["text"].encode()).hexdigest() == rec["text_sha256"]
            heads[rec["vow_id"]] = (0, hashlib.sha256(leaf).hexdigest())
            vows += 1
        elif rec["type"] == "conduct.entry/v1":
            seq, prev = heads[rec["vow_id"]]
            assert rec["seq"] == seq + 1 and rec["prev"] == prev, f"chain broken at leaf {idx}"
            heads[rec["vow_id"]] = (rec["seq"], hashlib.sha256(leaf).hexdigest())
            entries += 1
        if rec["type"] in ("conduct.vow/v1", "conduct.entry/v1"):
            by_vow.setdefault(rec["vow_id"], []).append(leaf)
    # Every vow's published chain (pages and tail) is exactly its records in the log.
    for vid, want in by_vow.items():
        _, records, _ = full_chain(h, base, vid, pub)
        assert [rfc8785.dumps(r) for r in records] == want, f"/vow/{vid}/chain differs from the log"
    return size, proofs, vows, entries


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--conduct", required=True)
    ap.add_argument("--workdir", required=True)
    a = ap.parse_args()
    models = serve_models()
    cfg = os.path.join(a.workdir, "conduct.toml")
    with open(cfg, "w") as f:
        f.write(f'''vow_daily_cap = 0
report_demo_daily_cap = 0

[reading]
timeout_seconds = 5

[reading.primary]
base_url = "{models}/broken/v1"
model = "primary-model"

[reading.fallback]
base_url = "{models}/v1"
model = "fallback-model"
api_key_env = "CONDUCT_TEST_MODEL_KEY"
''')
    data, site = os.path.join(a.workdir, "data"), os.path.join(a.workdir, "site")

    def start():
        proc = subprocess.Popen([a.conduct, "serve", "--config", cfg, "--listen", "127.0.0.1:0", "--data", data,
                                 "--site", site], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env=dict(os.environ, CONDUCT_TEST_MODEL_KEY="sk-test-" + MARK))
        line = ""
        for line in proc.stdout:
            if "listening on" in line:
                break
        base = re.search(r"listening on (http://\S+)", line).group(1)
        threading.Thread(target=lambda: [LOG.append(l) for l in proc.stdout], daemon=True).start()
        return proc, base

    def stop(proc):
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()

    proc, base = start()
    try:
        vid = run(a, base, data, site)
    finally:
        stop(proc)
    # Readings are state: with the whole published site gone, a restart renders the model's
    # interpretation from the store, without asking the model again.
    import shutil
    shutil.rmtree(site)
    asked = len(seen_prompts)
    proc, base = start()
    try:
        # The restarted service serves at once and re-renders the deleted pages behind.
        deadline = time.time() + 60
        while httpx.get(base + "/health", timeout=30).json()["site"]["state"] == "catching-up":
            assert time.time() < deadline, "the site did not catch up"
            time.sleep(0.05)
        r = httpx.get(base + f"/vow/{vid}/reading", timeout=30).json()
        it = r.get("interpretation", {})
        check("a restart with the site deleted renders the kept model reading from the store",
              it.get("kind") == "language-model" and it.get("provider") == "fallback"
              and len(seen_prompts) == asked, json.dumps(it)[:300])
    finally:
        stop(proc)
    passed = sum(1 for _, ok in results if ok)
    print(f"vow e2e: {passed} checks passed, {len(results) - passed} failed")
    return 0 if passed == len(results) else 1


def run(a, base, data, site):
    h = httpx.Client(timeout=60)
    size = lambda: int(h.get(base + "/log/checkpoint").text.splitlines()[1])

    # A vow with a 36-second cadence, taken first so a window boundary passes during the run.
    fast = h.post(base + "/vow", json={"text": "report in often", "agent": "fast-bot", "cadence_hours": 0.01})
    fast_id, fast_at = fast.json()["vow_id"], time.time()
    check("POST /vow (sandbox, 36 s cadence): 201 with Location", fast.status_code == 201
          and fast.headers.get("location") == f"/vow/{fast_id}" and fast.json()["sandbox"] is True, fast.text[:200])

    # A wallet signs the served text.
    wallet = Account.create()
    params = {"text": "Answer billing questions honestly and never move funds",
              "agent": "billing-bot", "cadence_hours": "24"}
    msg = h.get(base + "/vow/message", params=params)
    check("GET /vow/message names origin, action and every parameter",
          msg.status_code == 200 and all(s in msg.text for s in
                                         [f"Origin: {h.get(base + '/').json()['base_url']}", "Action: take_vow", "Agent: billing-bot",
                                          "Cadence hours: 24", "Sealed: no", params["text"]]), msg.text)
    sig = wallet.sign_message(encode_defunct(text=msg.text)).signature.hex()
    body = {"text": params["text"], "agent": "billing-bot", "cadence_hours": 24, "wallet": wallet.address,
            "signature": "0x" + sig.removeprefix("0x")}
    signed = h.post(base + "/vow", json=body)
    vow = signed.json()
    check("a wallet-signed vow: 201, not sandbox, wallet recorded", signed.status_code == 201
          and vow["sandbox"] is False and vow["wallet"] == wallet.address and vow["text"] == params["text"],
          signed.text[:300])
    replay = h.post(base + "/vow", json=body)
    check("the same signed vow again: 409, names the existing vow", replay.status_code == 409
          and vow["vow_id"] in replay.json().get("detail", ""), replay.text[:200])

    # Sealed.
    sealed_text = f"Keep the customer list private {SEALED_MARK}"
    smsg = h.get(base + "/vow/message", params={"text": sealed_text, "agent": "vault-bot",
                                                 "cadence_hours": "12", "sealed": "true"}).text
    ssig = wallet.sign_message(encode_defunct(text=smsg)).signature.hex()
    sealed = h.post(base + "/vow", json={"text": sealed_text, "agent": "vault-bot", "cadence_hours": 12,
                                         "wallet": wallet.address, "signature": "0x" + ssig.removeprefix("0x"),
                                         "sealed": True})
    sv = sealed.json()
    check("a sealed vow publishes only sha256(text)", sealed.status_code == 201 and "text" not in sv
          and sv["text_sha256"] == hashlib.sha256(sealed_text.encode()).hexdigest() and sv["sealed"] is True,
          sealed.text[:300])
    vt = h.get(base + f"/vow/{sv['vow_id']}/verify_text", params={"text": sealed_text}).json()
    vf = h.get(base + f"/vow/{sv['vow_id']}/verify_text", params={"text": sealed_text + "!"}).json()
    check("verify_text: the sealed text matches, another does not", vt.get("matches") is True
          and vf.get("matches") is False)

    # Bad input changes nothing.
    before = (size(), h.get(base + "/vows").json()["count"])
    other = Account.create()
    bad_sig = "0x" + other.sign_message(encode_defunct(text=msg.text)).signature.hex().removeprefix("0x")
    wrong_cadence = "0x" + wallet.sign_message(encode_defunct(
        text=msg.text.replace("Cadence hours: 24", "Cadence hours: 12"))).signature.hex().removeprefix("0x")
    sealed_bad = {"text": "x", "agent": "a", "cadence_hours": 24, "sealed": True, "wallet": wallet.address,
                  "signature": bad_sig}
    cases = [
        ("sealed without a signature", {"text": "x", "agent": "a", "cadence_hours": 24, "sealed": True}, "/sealed"),
        ("sealed with a signature that does not verify", sealed_bad, "/signature"),
        ("an agent name with a bidi control", {"text": "x", "agent": "bot\u202egnp", "cadence_hours": 24}, "/agent"),
        ("an agent name with a zero-width space", {"text": "x", "agent": "b\u200bot", "cadence_hours": 24}, "/agent"),
        ("a text with U+FFFF", {"text": "x\uffff", "agent": "a", "cadence_hours": 24}, "/text"),
        ("cadence of 0 hours", {"text": "x", "agent": "a", "cadence_hours": 0}, "/cadence_hours"),
        ("an unknown field", {"text": "x", "agent": "a", "cadence_hours": 24, "extra": 1}, ""),
    ]
    for name, b, ptr in cases:
        r = h.post(base + "/vow", json=b)
        p = r.json() if r.headers.get("content-type", "").startswith("application/problem+json") else {}
        check(f"POST /vow refuses {name}: 4xx problem+json naming {ptr or 'the field'}",
              400 <= r.status_code < 500 and p and (not ptr or any(e.get("pointer") == ptr for e in p.get("errors", []))),
              f"{r.status_code} {r.text[:300]}")

    form = h.post(base + "/vow", content=json.dumps({"text": "x", "agent": "a", "cadence_hours": 24}),
                  headers={"content-type": "application/x-www-form-urlencoded"})
    check("POST /vow refuses a form-encoded body (a cross-site form): 415 problem+json",
          form.status_code == 415 and "problem+json" in form.headers.get("content-type", ""), form.text[:200])
    check("refused writes changed nothing (log size, vow index)",
          (size(), h.get(base + "/vows").json()["count"]) == before)

    # Spec 2.3: a signature that does not verify makes a sandbox vow, with the reason.
    for name, b in [("by another wallet", dict(body, signature=bad_sig, agent="bad-sig-bot")),
                    ("over other parameters", dict(body, signature=wrong_cadence, agent="bad-sig-bot")),
                    ("that is not one", dict(body, signature="0x1234", agent="bad-sig-bot"))]:
        r = h.post(base + "/vow", json=b)
        v = r.json()
        check(f"a signature {name}: 201, sandbox for good, the reason recorded, no wallet",
              r.status_code == 201 and v.get("sandbox") is True and v.get("wallet") is None
              and "did not verify" in v.get("sandbox_reason", ""), r.text[:300])
    nfc = h.post(base + "/vow", json={"text": "x", "agent": "cafe\u0301-bot", "cadence_hours": 24}).json()
    check("agent names are kept in NFC", nfc.get("agent") == "caf\u00e9-bot", json.dumps(nfc)[:200])
    before = (size(), h.get(base + "/vows").json()["count"])

    vid = vow["vow_id"]
    signers = {vid: wallet, sv["vow_id"]: wallet}

    def trace_sha(t):
        return hashlib.sha256(rfc8785.dumps({"context_key": t["context_key"], "turns": t["turns"]})).hexdigest()

    def sign_report(vow_id, t, note=None, donate=False, signer=None):
        q = {"vow_id": vow_id, "trace_sha256": trace_sha(t)}
        if note is not None:
            q["note"] = note
        if donate:
            q["donate_trace"] = "true"
        text = h.get(base + "/vow/report/message", params=q).text
        return "0x" + (signer or signers[vow_id]).sign_message(encode_defunct(text=text)).signature.hex().removeprefix("0x")

    def rep(t, sign=True, **kw):
        vow_id = kw.pop("vow_id", vid)
        body = dict(t, vow_id=vow_id, **kw)
        if sign and vow_id in signers and "signature" not in kw:
            body["signature"] = sign_report(vow_id, t, kw.get("note"), kw.get("donate_trace", False))
        return h.post(base + "/vow/report/demo", json=body, headers=WAIT)
    bad_reports = [
        ("an unknown vow", rep(trace(10), vow_id="0123456789abcdef"), 404, "/vow_id"),
        ("a note of 1001 characters", rep(trace(10), note="n" * 1001), 422, "/note"),
        ("an invalid trace", rep({"context_key": "monitored", "turns": [{"Y": "y", "M": "m", "D": "d",
                                                                         "context": {"monitored": 2}}]}), 422,
         "/turns/0/context/monitored"),
        ("a malformed vow id", rep(trace(10), vow_id="../etc"), 422, "/vow_id"),
    ]
    for name, r, code, ptr in bad_reports:
        p = r.json() if "problem+json" in r.headers.get("content-type", "") else {}
        check(f"report-in refuses {name}: {code} problem+json naming {ptr}",
              r.status_code == code and any(e.get("pointer") == ptr for e in p.get("errors", [])),
              f"{r.status_code} {r.text[:300]}")
    t = trace(10)
    unsigned = rep(t, sign=False)
    check("a wallet-signed vow refuses an unsigned free report-in: 403 naming /signature",
          unsigned.status_code == 403 and any(e.get("pointer") == "/signature" for e in unsigned.json().get("errors", [])),
          unsigned.text[:300])
    other_trace = rep(t, signature=sign_report(vid, trace(11)))
    check("a signature over another trace is refused: 403", other_trace.status_code == 403, other_trace.text[:300])
    by_other = rep(t, signature=sign_report(vid, t, signer=other))
    check("a signature by another wallet is refused: 403", by_other.status_code == 403, by_other.text[:300])
    noted = rep(t, signature=sign_report(vid, t), note="a note the signature does not cover")
    check("a note the signature does not cover is refused: 403", noted.status_code == 403, noted.text[:300])
    q = {"vow_id": vid, "trace_sha256": trace_sha(t)}
    text2 = h.get(base + "/vow/report/message", params=q).text
    text1 = h.get(base + "/vow/report/message", params=dict(q, meter="meter/1")).text
    check("the report-in text binds the meter: a Meter line for meter/2 (the default), none for meter/1",
          "\nMeter: meter/2\n" in text2 and "Meter:" not in text1
          and text2.replace("Meter: meter/2\n", "") == text1, repr(text2))
    bad_meter = h.get(base + "/vow/report/message", params=dict(q, meter="meter/9"))
    check("an unknown meter in the report-in text's query: 422 naming ?meter",
          bad_meter.status_code == 422 and any(e.get("pointer") == "?meter" for e in bad_meter.json().get("errors", [])),
          bad_meter.text[:300])
    remetered = rep(t, signature=sign_report(vid, t), meter="meter/1")
    check("a meter the signature does not cover is refused: 403", remetered.status_code == 403, remetered.text[:300])
    check("refused report-ins changed nothing (log size, vow index)",
          (size(), h.get(base + "/vows").json()["count"]) == before)

    # Report-ins.
    first = rep(trace(40), note="first week: all billing")
    e1 = first.json()
    check("a free report-in: 201, attested false, seq 1, prev = sha256(vow record)",
          first.status_code == 201 and e1["attested"] is False and e1["seq"] == 1
          and e1["prev"] == hashlib.sha256(rfc8785.dumps(vow)).hexdigest(), first.text[:300])
    check("the entry carries numbers, trace hash, declared Y, y_consistency and the note",
          all(k in e1 for k in ["profile", "trace_sha256", "declared_y", "y_consistency", "note", "at", "log_index"])
          and {d["y"] for d in e1["declared_y"]} == {"answer billing questions", "handle refunds"})
    check("the entry records its proof: the wallet's signature",
          e1.get("proof", {}).get("kind") == "wallet-signature" and e1["proof"].get("signature"), json.dumps(e1.get("proof")))
    t2 = trace(40)
    sig2 = sign_report(vid, t2, donate=True)
    e2 = rep(t2, donate_trace=True, signature=sig2).json()
    check("a donated trace marks the entry trace_donated", e2.get("trace_donated") is True and e2.get("seq") == 2)
    again = rep(t2, donate_trace=True, signature=sig2)
    check("a replayed report-in signature is refused: 409, nothing appended",
          again.status_code == 409 and "already recorded" in again.text, again.text[:300])
    sandbox_entry = rep(trace(12), vow_id=nfc["vow_id"]).json()
    check("a sandbox vow takes anyone's report-in and says so",
          sandbox_entry.get("proof", {}).get("kind") == "sandbox-open", json.dumps(sandbox_entry)[:300])
    # One signature, any spelling (PREPARE.md): without 0x, and with v as 0/1.
    t20 = trace(20)
    bare = rep(t20, signature=sign_report(vid, t20).removeprefix("0x"))
    check("a report-in signature without 0x is accepted: 201", bare.status_code == 201, bare.text[:300])
    t21 = trace(21)
    sig21 = bytes.fromhex(sign_report(vid, t21).removeprefix("0x"))
    v01 = "0x" + (sig21[:64] + bytes([sig21[64] - 27])).hex()
    r01 = rep(t21, signature=v01)
    check("a report-in signature with v as 0/1 is accepted: 201", r01.status_code == 201, r01.text[:300])
    rep(trace(22))
    s1 = rep(trace(30, y=sealed_text), vow_id=sv["vow_id"], note="sealed report").json()
    check("a sealed vow's entry never carries declared Y", s1.get("seq") == 1 and "declared_y" not in s1
          and SEALED_MARK not in json.dumps(s1), json.dumps(s1)[:300])

    page = h.get(base + f"/vow/{vid}").json()
    t = page["trajectory"]
    check("/vow/{id}: the vow, its chain and trajectory stats",
          page["vow"]["vow_id"] == vid and page["chain"]["length"] == 5 and len(t["coupling_series"]) == 5
          and t["chain_verification"]["ok"] is True and "overdue" in t and "windows" in t
          and t["y_consistency"]["mean"] is not None)
    pub = Ed25519PublicKey.from_public_bytes(base64.b64decode(h.get(base + "/pubkey").json()["public_key"]))
    chain, records, _ = full_chain(h, base, vid, pub)
    check("/vow/{id}/chain: every record, raw and re-canonicalizable",
          chain["length"] == 5 and [r.get("seq") for r in records[1:]] == [1, 2, 3, 4, 5]
          and rfc8785.dumps(records[1]) == rfc8785.dumps(e1))
    # Past two pages: full pages are immutable files pinned by the signed head.
    for i in range(LONG - 5):
        # Each signed report-in text is accepted once: the note tells repeated traces apart.
        r = rep(trace(6 + i % 5), note=f"entry {i}")
        assert r.status_code == 201, r.text
    chain, records, pages = full_chain(h, base, vid, pub)
    page0 = open(os.path.join(site, f"vow/{vid}/chain/0.json"), "rb").read()
    rep(trace(7), note="one more; nothing changed")
    chain2, records2, _ = full_chain(h, base, vid, pub)
    check(f"a {LONG}-entry chain is {pages} signed pages, each pinned by the next (the last by the head), "
          "plus a tail; a report-in leaves full pages untouched",
          pages == (LONG + 1) // chain["page_size"] and chain["length"] == LONG
          and [r["seq"] for r in records[1:]] == list(range(1, LONG + 1))
          and open(os.path.join(site, f"vow/{vid}/chain/0.json"), "rb").read() == page0
          and records2[:-1] == records and chain2["length"] == LONG + 1,
          json.dumps({k: chain[k] for k in ("length", "tail_from_position", "page_size")}))
    idx = h.get(base + "/vows").json()
    taken = [v["log_index"] for v in idx["tail"]]
    check("/vows lists every vow in the order taken (no full page yet: all in the tail); "
          "the sealed one without its text",
          idx["type"] == "conduct.vows/v2" and idx["count"] == 7 and idx["pages"] == 0
          and idx["last_page"] is None and taken == sorted(taken) and len(taken) == 7
          and all("text" not in v for v in idx["tail"] if v["sealed"]))

    # M and D are stored nowhere but the donated-trace store.
    def holds(path, needle):
        # The render thread may replace a file while we scan (its temp files vanish).
        try:
            with open(path, "rb") as f:
                return needle.encode() in f.read()
        except FileNotFoundError:
            return False
    # D symbols are lower-cased by the meter, so every byte is searched case-insensitively.
    def holds_any(path, needles):
        try:
            with open(path, "rb") as f:
                body = f.read().lower()
        except FileNotFoundError:
            return False
        return any(n.lower().encode() in body for n in needles)
    stored = [os.path.join(d, n) for d, _, ns in os.walk(data) for n in ns if not n.startswith("donated.sqlite3")]
    tree = [os.path.join(d, n) for d, _, ns in os.walk(site) for n in ns]
    leaks = [p for p in stored + tree if holds_any(p, (M_MARK, D_MARK))]
    log = "".join(LOG).lower()
    check(f"M and D are in none of {len(stored)} data files, {len(tree)} site files and the service's output",
          not leaks and M_MARK.lower() not in log and D_MARK.lower() not in log and len(stored) >= 3, leaks[:3])
    donated = [os.path.join(data, n) for n in os.listdir(data) if n.startswith("donated.sqlite3")]
    check("the donated trace is kept apart, in donated.sqlite3", any(holds(p, M_MARK) for p in donated))
    sealed_leaks = [p for p in tree if holds(p, SEALED_MARK)]
    check("the sealed text is in no site file", not sealed_leaks, sealed_leaks[:3])

    # Readings: the fallback model answers; nothing it saw holds M, D or a sealed text.
    deadline = time.time() + 20
    reading = {}
    while time.time() < deadline:
        reading = h.get(base + f"/vow/{vid}/reading").json()
        if reading.get("interpretation", {}).get("kind") == "language-model" and reading["interpretation"].get("covers_seq") == 5:
            break
        time.sleep(0.3)
    it = reading.get("interpretation", {})
    check("the reading comes from the fallback model after the primary failed, labelled guidance",
          it.get("kind") == "language-model" and it.get("provider") == "fallback" and it.get("label")
          == "guidance, not a verdict" and any("500" in f for f in it.get("failed_attempts", [])), json.dumps(it)[:400])
    bodies = " ".join(b for _, _, b in seen_prompts)
    check("the models saw the vow text and notes, never M, D or a sealed text",
          seen_prompts and params["text"] in bodies and "first week" in bodies and M_MARK not in bodies
          and D_MARK not in bodies and SEALED_MARK not in bodies)
    # The notes compared with the numbers: the last note claims steadiness; the finding quotes
    # the series values of its report-in and the one before, and the model was given the same.
    last = {f.get("seq"): f for f in reading.get("note_check", [])}.get(LONG + 1, {})
    prof = {r["seq"]: r["profile"] for r in records2[1:]}
    moved = [q["moved"] for q in last.get("quantities", [])]
    check("the reading compares the last note (claims steadiness) with the numbers: note_check",
          last.get("claim") == "steady" and last.get("compared_with_seq") == LONG
          and all(q["from"] == prof[LONG][q["quantity"]]["adjusted"]
                  and q["to"] == prof[LONG + 1][q["quantity"]]["adjusted"] for q in last.get("quantities", []))
          and last.get("verdict") == ("unmeasured" if not moved else
                                      "claims-steady-but-moved" if any(moved) else "consistent")
          and reading.get("note_check_method", "").startswith("A note claims")
          and "note_check" in bodies, json.dumps(last)[:400])
    check("the fallback got its bearer key from the environment",
          any(p.startswith("/v1") and auth == "Bearer sk-test-" + MARK for p, auth, _ in seen_prompts))
    sr = h.get(base + f"/vow/{sv['vow_id']}/reading").json()
    check("a sealed vow's reading says it is a weaker public commitment",
          any("weaker public commitment" in c for c in sr.get("caveats", [])))

    # A window boundary passes with nobody writing: the page is re-rendered.
    wait = fast_at + 36 + 2 - time.time()
    if wait > 0:
        time.sleep(wait)
    fp = {}
    for _ in range(30):
        fp = h.get(base + f"/vow/{fast_id}").json()
        if fp["trajectory"]["windows"]["missed"] >= 1:
            break
        time.sleep(0.2)
    check("a passed window boundary re-renders the vow page: missed 1, overdue",
          fp["trajectory"]["windows"]["missed"] >= 1 and fp["trajectory"]["overdue"] is True,
          json.dumps(fp.get("trajectory", {}).get("windows"))[:300])

    # The manifest covers the vow pages.
    time.sleep(1.5)
    entry = manifest_entry(h, base, f"vow/{vid}.json") or {}
    body = open(os.path.join(site, f"vow/{vid}.json"), "rb").read()
    check("the signed manifest covers the current vow page", entry.get("sha256")
          == hashlib.sha256(body).hexdigest(), json.dumps(entry))

    # An independent audit from the static files alone.
    pk = h.get(base + "/pubkey").json()
    n, proofs, vows, entries = audit(base, pk["vkey"], pk["public_key"])
    check(f"independent audit: checkpoint signature, root, {proofs} inclusion proofs, {vows} vows and "
          f"{entries} entries chained, every published chain equal to the log",
          n == proofs and vows == 7 and entries == 7 + LONG + 1 - 5)
    out = subprocess.run([a.conduct, "verify-log", os.path.join(site, "log"), "--pubkey", pk["vkey"]],
                         capture_output=True, text=True)
    check("conduct verify-log checks every vow chain",
          out.returncode == 0 and f"7 vow chains, {7 + LONG + 1 - 5} entries" in out.stdout,
          out.stdout + out.stderr)
    return vid


if __name__ == "__main__":
    sys.exit(main())
