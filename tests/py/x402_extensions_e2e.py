"""End to end: the x402 extensions on a real local chain with the stock clients.

One anvil (TestUSD, Permit2 and the x402 Permit2 proxy), one `conduct serve` with both rails,
and a stand-in facilitator for the EIP-3009 rail that speaks the facilitator wire protocol:
/verify and /supported are the reference PyPI x402 facilitator's; /settle broadcasts
transferWithAuthorization itself and answers `settlement_pending` with the transaction hash
when no receipt is seen within a second (anvil's mining paused with evm_setAutomine false);
asked /settle again for a payload it already broadcast, it reads that transaction's receipt and
never broadcasts again (as x402's facilitators do). It counts its broadcasts.

Checks: `payment-identifier` (declared, replayed byte for byte, across a restart, 409 on a
different payload or request, 400 on a malformed id, concurrent calls sharing one settlement,
with the Idempotency-Key); settlement pending (202, Retry-After, resumed once mined, charged
once, never broadcast twice, with and without an identifier, after and before the handler);
`bazaar` (in the 402 and /.well-known/x402.json, validated by the stock x402 bazaar code).

usage: x402_extensions_e2e.py --anvil BIN --conduct BIN --artifact contracts/out/TestUSD.json --workdir DIR
Prints one line per check and exits 0 only when every check passed.
"""
import argparse, asyncio, base64, collections, json, os, secrets, subprocess, sys, threading, time
from http.server import ThreadingHTTPServer

import httpx
from eth_account import Account
from web3 import Web3
from x402 import x402FacilitatorSync, parse_payment_payload
from x402.extensions.bazaar import validate_discovery_extension, validate_discovery_extension_spec
from x402.extensions.payment_identifier import append_payment_identifier_to_extensions, generate_payment_id
from x402.http.clients import x402HttpxClient
from x402.http.utils import encode_payment_signature_header
from x402.mechanisms.evm import FacilitatorWeb3Signer
from x402.mechanisms.evm.exact import register_exact_evm_facilitator
from x402.schemas import PaymentRequired, parse_payment_requirements

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from x402_e2e import (ADDR, CREATE2_DEPLOYER, KEYS, PERMIT2, PRICE, PROXY, PROXY_SALT,  # noqa: E402
                      SETTLER_KEY, VALIDATOR_6492, JsonHandler, decode_challenge, make_client,
                      start_line, stop, trace)

results = []


def check(name, ok, detail=""):
    results.append((name, bool(ok)))
    print(("ok:   " if ok else "FAIL: ") + name + ("" if ok else f" -- {detail}"), flush=True)


def receipt_of(r):
    h = r.headers.get("payment-response")
    return json.loads(base64.b64decode(h)) if h else {}


def problem(r):
    return r.json() if "problem+json" in r.headers.get("content-type", "") else {}


def serve_facilitator(rpc, w3, token):
    """The stand-in facilitator (see the module doc); returns (url, broadcasts by signature)."""
    ref = register_exact_evm_facilitator(
        x402FacilitatorSync(), FacilitatorWeb3Signer(private_key=KEYS["facilitator"], rpc_url=rpc),
        networks="eip155:31337")
    pending, broadcasts, lock = {}, collections.Counter(), threading.Lock()

    def dump(m):
        return m.model_dump(by_alias=True, exclude_none=True, mode="json")

    def receipt(tx, wait):
        deadline = time.time() + wait
        while True:
            try:
                return w3.eth.get_transaction_receipt(tx)
            except Exception:  # noqa: BLE001 (not found yet)
                if time.time() >= deadline:
                    return None
                time.sleep(0.05)

    def settle(body):
        raw = body["paymentPayload"]
        sig, auth = raw["payload"]["signature"], raw["payload"]["authorization"]
        base = {"network": "eip155:31337", "payer": auth["from"]}
        with lock:
            tx = pending.get(sig)
            if tx is None:
                p = parse_payment_payload(raw)
                r = parse_payment_requirements(body["x402Version"], body["paymentRequirements"])
                v = ref.verify(p, r)
                if not v.is_valid:
                    return dict(base, success=False, errorReason=v.invalid_reason or "invalid_payment", transaction="")
                tx = token.functions.transferWithAuthorization(
                    Web3.to_checksum_address(auth["from"]), Web3.to_checksum_address(auth["to"]),
                    int(auth["value"]), int(auth["validAfter"]), int(auth["validBefore"]),
                    bytes.fromhex(auth["nonce"][2:]), bytes.fromhex(sig[2:]),
                ).transact({"from": ADDR["facilitator"], "gas": 200_000}).to_0x_hex()
                broadcasts[sig] += 1
                pending[sig] = tx
        rc = receipt(tx, 1.0)
        if rc is None:
            return dict(base, success=False, errorReason="settlement_pending", transaction=tx)
        with lock:
            pending.pop(sig, None)
        if rc.status != 1:
            return dict(base, success=False, errorReason="transaction_failed", transaction=tx)
        return dict(base, success=True, transaction=tx)

    class H(JsonHandler):
        def do_GET(self):
            if self.path == "/supported":
                return self._send(200, dump(ref.get_supported()))
            self._send(404, {})

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            if self.path == "/settle":
                return self._send(200, settle(body))
            p = parse_payment_payload(body["paymentPayload"])
            r = parse_payment_requirements(body["x402Version"], body["paymentRequirements"])
            self._send(200, dump(ref.verify(p, r)))

    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{srv.server_address[1]}", broadcasts


def pay_fetch(script, url, token_addr, body, payment_id=None, rail="eip3009"):
    """Pay one POST with the stock npm client; returns its JSON line."""
    env = dict(os.environ, URL=url, PAYER_KEY=KEYS["payer"], TOKEN=token_addr, BODY=json.dumps(body), RAIL=rail)
    if payment_id:
        env["PAYMENT_ID"] = payment_id
    node = subprocess.run(["node", script], env=env, capture_output=True, text=True, timeout=120)
    try:
        return json.loads(node.stdout.strip().splitlines()[-1])
    except Exception:  # noqa: BLE001
        return {"status": None, "stderr": node.stderr[-800:]}


def with_identifier(client, pid):
    """The stock client, putting `pid` in each payment's payment-identifier extension."""
    def before(ctx):
        append_payment_identifier_to_extensions(ctx.payment_required.extensions, pid)
    client.on_before_payment_creation(before)
    return client


async def signed_header(client, challenge, pid=None):
    """A payment header made by the stock client for `challenge` (with `pid`, when given)."""
    ch = json.loads(json.dumps(challenge))
    if pid:
        append_payment_identifier_to_extensions(ch.setdefault("extensions", {}), pid)
    return encode_payment_signature_header(await client.create_payment_payload(PaymentRequired.model_validate(ch)))


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--anvil", required=True)
    ap.add_argument("--conduct", required=True)
    ap.add_argument("--artifact", required=True)
    ap.add_argument("--workdir", required=True)
    a = ap.parse_args()
    procs = []
    try:
        anvil = subprocess.Popen([a.anvil, "--host", "127.0.0.1", "--port", "0"], stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)
        procs.append(anvil)
        port = start_line(anvil, r"Listening on 127\.0\.0\.1:(\d+)").group(1)
        rpc = f"http://127.0.0.1:{port}"
        w3 = Web3(Web3.HTTPProvider(rpc))
        art = json.load(open(a.artifact))
        tx = w3.eth.contract(abi=art["abi"], bytecode=art["bytecode"]).constructor().transact({"from": ADDR["facilitator"]})
        token_addr = w3.eth.wait_for_transaction_receipt(tx).contractAddress
        token = w3.eth.contract(address=token_addr, abi=art["abi"])
        w3.eth.wait_for_transaction_receipt(token.functions.mint(ADDR["payer"], 10_000_000).transact({"from": ADDR["facilitator"]}))
        out_dir = os.path.dirname(os.path.abspath(a.artifact))
        code = open(os.path.join(out_dir, "Permit2.runtime.hex")).read().strip()
        w3.provider.make_request("anvil_setCode", [PERMIT2, code if code.startswith("0x") else "0x" + code])
        w3.provider.make_request("anvil_setCode", [VALIDATOR_6492, "0x00"])
        initcode = open(os.path.join(out_dir, "X402ExactPermit2Proxy.initcode.hex")).read().strip().removeprefix("0x")
        w3.eth.wait_for_transaction_receipt(w3.eth.send_transaction(
            {"from": ADDR["facilitator"], "to": CREATE2_DEPLOYER, "data": "0x" + PROXY_SALT + initcode, "gas": 5_000_000}))
        w3.eth.wait_for_transaction_receipt(token.functions.approve(PERMIT2, 2**256 - 1).transact({"from": ADDR["payer"]}))
        bal = lambda: token.functions.balanceOf(ADDR["payer"]).call()
        fac_url, broadcasts = serve_facilitator(rpc, w3, token)

        cfg = os.path.join(a.workdir, "conduct.toml")
        with open(cfg, "w") as f:
            f.write(f'''[[rails]]
kind = "facilitator"
network = "eip155:31337"
asset = "{token_addr}"
pay_to = "{ADDR['pay_to']}"
eip712_name = "USD Coin"
eip712_version = "2"
facilitator_url = "{fac_url}"

[[rails]]
kind = "permit2"
network = "eip155:31337"
asset = "{token_addr}"
pay_to = "{ADDR['pay_to']}"
eip712_name = "USD Coin"
eip712_version = "2"
rpc_url = "{rpc}"
settler_key_env = "CONDUCT_TEST_SETTLER_KEY"
receipt_wait_seconds = 2
''')
        server = {}

        def start():
            proc = subprocess.Popen(
                [a.conduct, "serve", "--config", cfg, "--listen", "127.0.0.1:0",
                 "--data", os.path.join(a.workdir, "data"), "--site", os.path.join(a.workdir, "site")],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                env=dict(os.environ, CONDUCT_TEST_SETTLER_KEY=SETTLER_KEY))
            procs.append(proc)
            server["proc"], server["base"] = proc, start_line(proc, r"listening on (http://\S+)").group(1)

        start()
        base = lambda: server["base"]
        url = lambda: base() + "/profile"
        plain = httpx.AsyncClient(timeout=120)
        pay_script = os.path.join(os.path.dirname(out_dir), "clients", "pay-fetch.mjs")

        # ---- The challenge declares the extensions.
        ch = decode_challenge(await plain.post(url(), json=trace(40)))
        ext = ch.get("extensions", {})
        pi = ext.get("payment-identifier", {})
        check("the 402 declares payment-identifier (optional, with its schema)",
              pi.get("info") == {"required": False}
              and pi.get("schema", {}).get("properties", {}).get("id", {}).get("minLength") == 16, json.dumps(pi))
        try:
            bz = ext.get("bazaar", {})
            v1, v2 = validate_discovery_extension(bz), validate_discovery_extension_spec(bz)
            check("the 402's bazaar extension passes the stock x402 bazaar validation (info against schema, spec rules)",
                  v1.valid and v2.valid and bz["info"]["input"]["method"] == "POST"
                  and bz["info"]["input"]["bodyType"] == "json", f"{v1} {v2}")
            oa = (await plain.get(base() + "/openapi.json")).json()
            op = oa["paths"]["/profile"]["post"]
            comp = oa["components"]["schemas"]
            body_ref = op["requestBody"]["content"]["application/json"]["schema"]["$ref"].split("/")[-1]
            bz_body = bz["schema"]["properties"]["input"]["properties"]["body"]
            check("the bazaar body and output schemas are the ones /openapi.json publishes",
                  bz_body.get("properties", {}).keys() == comp[body_ref].get("properties", {}).keys()
                  and bz["schema"]["properties"]["output"]["properties"]["example"].get("properties", {}).keys()
                  == comp["Attestation"].get("properties", {}).keys(), f"{body_ref}")
            check("/openapi.json documents the pending 202 of paid routes",
                  "202" in op["responses"] and "Retry-After" in op["responses"]["202"]["headers"])
            wk = (await plain.get(base() + "/.well-known/x402.json")).json()
            paid_routes = {r["resource"][len(base()):]: r for r in wk["resources"]}
            same = True
            for path, item in paid_routes.items():
                body = {"vow_id": "0123456789abcdef"} if path != "/profile" else trace(40)
                r = await plain.post(base() + path, json=body)
                if r.status_code == 402:
                    same &= decode_challenge(r)["extensions"]["bazaar"] == item["extensions"]["bazaar"]
                same &= validate_discovery_extension(item["extensions"]["bazaar"]).valid
            check("/.well-known/x402.json carries each paid route's bazaar extension, the same as its 402",
                  same and len(paid_routes) == 5 and paid_routes["/profile"]["input"]["method"] == "POST",
                  json.dumps(list(paid_routes)))
        except Exception as e:  # noqa: BLE001 (a check that cannot run fails, the rest still run)
            check("the bazaar checks ran", False, repr(e))

        # ---- payment-identifier with the stock PyPI client.
        pid = generate_payment_id()
        sent = {}
        client = with_identifier(make_client(token_addr), pid)
        client.on_after_payment_creation(lambda ctx: sent.__setitem__("h", encode_payment_signature_header(ctx.payment_payload)))
        before = bal()
        async with x402HttpxClient(client, timeout=120) as http:
            first = await http.post(url(), json=trace(50))
        check("PyPI x402 client pays /profile with a payment identifier: 200, settled, charged once",
              first.status_code == 200 and receipt_of(first).get("success") is True and before - bal() == PRICE,
              f"{first.status_code} {first.text[:300]}")
        payload = json.loads(base64.b64decode(sent.get("h", "e30=")))
        check("the stock client's payload carries the identifier",
              payload.get("extensions", {}).get("payment-identifier", {}).get("info", {}).get("id") == pid)
        before = bal()
        again = await plain.post(url(), json=trace(50), headers={"PAYMENT-SIGNATURE": sent.get("h", "")})
        check("the same identifier and payload again: the same bytes and receipt, Idempotent-Replayed, not charged",
              again.status_code == 200 and again.content == first.content
              and again.headers.get("payment-response") == first.headers.get("payment-response")
              and again.headers.get("idempotent-replayed") == "true" and bal() == before,
              f"{again.status_code} {again.text[:300]}")
        server["proc"].terminate()
        server["proc"].wait(20)
        start()
        after_restart = await plain.post(url(), json=trace(50), headers={"PAYMENT-SIGNATURE": sent.get("h", "")})
        check("after a restart the same identifier and payload replay the same bytes (the store, not memory)",
              after_restart.status_code == 200 and after_restart.content == first.content
              and after_restart.headers.get("payment-response") == first.headers.get("payment-response")
              and bal() == before, f"{after_restart.status_code} {after_restart.text[:300]}")
        async with x402HttpxClient(with_identifier(make_client(token_addr), pid), timeout=120) as http:
            other = await http.post(url(), json=trace(50))
        pr = problem(other)
        check("a new payload under the same identifier: 409 payment-identifier-reused naming the field, not charged",
              other.status_code == 409 and pr.get("type", "").endswith("payment-identifier-reused")
              and any(e.get("pointer", "").endswith("payment-identifier/info/id") for e in pr.get("errors", []))
              and bal() == before, f"{other.status_code} {other.text[:300]}")
        moved = await plain.post(url(), json=trace(51), headers={"PAYMENT-SIGNATURE": sent.get("h", "")})
        check("the same payload and identifier with another trace: 409 payment-identifier-reused, not charged",
              moved.status_code == 409 and problem(moved).get("type", "").endswith("payment-identifier-reused")
              and bal() == before, f"{moved.status_code} {moved.text[:300]}")
        ch = decode_challenge(await plain.post(url(), json=trace(52)))
        bad = json.loads(base64.b64decode(await signed_header(make_client(token_addr), ch)))
        bad.setdefault("extensions", {}).setdefault("payment-identifier", {}).setdefault("info", {})["id"] = "short"
        r = await plain.post(url(), json=trace(52),
                             headers={"PAYMENT-SIGNATURE": base64.b64encode(json.dumps(bad).encode()).decode()})
        check("a malformed identifier: 400 bad-payment-identifier naming the field, not charged",
              r.status_code == 400 and problem(r).get("type", "").endswith("bad-payment-identifier")
              and (problem(r).get("errors") or [{}])[0].get("pointer", "").endswith("payment-identifier/info/id")
              and bal() == before,
              f"{r.status_code} {r.text[:300]}")

        # The stock npm client, with an identifier; its own header sent again.
        npid = generate_payment_id()
        before = bal()
        out = pay_fetch(pay_script, url(), token_addr, trace(53), npid)
        mid = bal()
        resent = await plain.post(url(), json=trace(53), headers={"PAYMENT-SIGNATURE": out.get("paymentSignature") or ""})
        check("npm @x402/fetch client pays with a payment identifier; its header resent: the same answer, not charged",
              out.get("status") == 200 and before - mid == PRICE and resent.status_code == 200
              and resent.text == out.get("body") and receipt_of(resent) == out.get("paymentResponse") and bal() == mid,
              f"{json.dumps(out)[:400]} {resent.status_code}")

        # Concurrent calls carrying one payment and identifier share its one settlement.
        cpid = generate_payment_id()
        h = await signed_header(make_client(token_addr), decode_challenge(await plain.post(url(), json=trace(54))), cpid)
        before = bal()
        rs = await asyncio.gather(*[plain.post(url(), json=trace(54), headers={"PAYMENT-SIGNATURE": h}) for _ in range(10)])
        check("10 concurrent calls with one payment and identifier: all 200 with the same bytes, one transfer",
              [r.status_code for r in rs] == [200] * 10 and len({r.content for r in rs}) == 1
              and before - bal() == PRICE, f"{[r.status_code for r in rs]} {before - bal()}")

        # With the Idempotency-Key: a new payment for a read already served under the key is a
        # replay, uncharged, and its identifier keeps that answer.
        key = {"Idempotency-Key": "ext-" + secrets.token_hex(6)}
        h1 = await signed_header(make_client(token_addr), ch, generate_payment_id())
        k1 = await plain.post(url(), json=trace(55), headers=dict(key, **{"PAYMENT-SIGNATURE": h1}))
        mid = bal()
        h2 = await signed_header(make_client(token_addr), ch, generate_payment_id())
        k2 = await plain.post(url(), json=trace(55), headers=dict(key, **{"PAYMENT-SIGNATURE": h2}))
        k2b = await plain.post(url(), json=trace(55), headers=dict(key, **{"PAYMENT-SIGNATURE": h2}))
        check("a new payment under a served Idempotency-Key replays uncharged, and its identifier keeps that answer",
              k1.status_code == 200 and k2.status_code == 200 and k2.content == k1.content
              and k2.headers.get("idempotent-replayed") == "true" and k2b.content == k1.content and bal() == mid,
              f"{k1.status_code} {k2.status_code} {k2b.status_code}")

        # ---- Settlement pending: anvil's mining paused, so the broadcast transfer has no receipt.
        w3.provider.make_request("evm_setAutomine", [False])
        ppid = generate_payment_id()
        hp = await signed_header(make_client(token_addr), ch, ppid)
        sig = json.loads(base64.b64decode(hp))["payload"]["signature"]
        before = bal()
        p1 = await plain.post(url(), json=trace(60), headers={"PAYMENT-SIGNATURE": hp})
        rp, bp = receipt_of(p1), (p1.json() if p1.status_code == 202 else {})
        check("settlement pending: 202, Retry-After, the pending receipt with its transaction, the identifier, not charged yet",
              p1.status_code == 202 and p1.headers.get("retry-after", "").isdigit()
              and rp.get("success") is False and rp.get("errorReason") == "settlement_pending"
              and rp.get("transaction", "").startswith("0x") and bp.get("payment_identifier") == ppid
              and bp.get("transaction") == rp.get("transaction") and bal() == before,
              f"{p1.status_code} {p1.headers} {p1.text[:300]}")
        p2 = await plain.post(url(), json=trace(60), headers={"PAYMENT-SIGNATURE": hp})
        check("the same payment while still pending: 202 again, the same transaction, not broadcast again",
              p2.status_code == 202 and receipt_of(p2).get("transaction") == rp.get("transaction")
              and broadcasts[sig] == 1, f"{p2.status_code} {p2.text[:200]} broadcasts={broadcasts[sig]}")
        # A paid report-in settles before its handler: pending, nothing appended yet.
        vow = (await plain.post(base() + "/vow", json={"text": "summarise documents for the user",
                                                        "agent": "ext-e2e", "cadence_hours": 24})).json()
        report = dict(trace(30), vow_id=vow.get("vow_id"), note="pending report-in")
        rch = decode_challenge(await plain.post(base() + "/vow/report", json=report))
        hr = await signed_header(make_client(token_addr), rch, generate_payment_id())
        r1 = await plain.post(base() + "/vow/report", json=report, headers={"PAYMENT-SIGNATURE": hr, "Prefer": "wait=30"})
        chain_len = lambda: httpx.get(base() + f"/vow/{vow.get('vow_id')}/chain").json().get("length")
        check("a paid report-in (settled before its handler) pending: 202, nothing appended",
              r1.status_code == 202 and chain_len() == 0, f"{r1.status_code} {r1.text[:300]}")
        # Without an identifier, too.
        hn = await signed_header(make_client(token_addr), ch)
        n1 = await plain.post(url(), json=trace(61), headers={"PAYMENT-SIGNATURE": hn})
        # The stock npm client meets a pending settlement: it gets the 202, never a fresh 402.
        out = pay_fetch(pay_script, url(), token_addr, trace(62), generate_payment_id())
        check("npm @x402/fetch client with mining paused: 202 settlement_pending, never a fresh 402",
              out.get("status") == 202 and (out.get("paymentResponse") or {}).get("errorReason") == "settlement_pending",
              json.dumps(out)[:400])
        # The Permit2 rail (settled in-process): its receipt not seen within receipt_wait_seconds,
        # the same 202, its transaction kept with the claim; a retry reads the receipt, never sends.
        settler = Account.from_key(SETTLER_KEY).address
        sent_by_settler = lambda: w3.eth.get_transaction_count(settler, "pending")
        pick = lambda v, reqs: next(r for r in reqs if (r.extra or {}).get("assetTransferMethod") == "permit2")
        k2pid = generate_payment_id()
        h2 = await signed_header(make_client(token_addr, pick), ch, k2pid)
        sent0, bal0 = sent_by_settler(), bal()
        q1 = await plain.post(url(), json=trace(63), headers={"PAYMENT-SIGNATURE": h2})
        rq = receipt_of(q1)
        q1_tx = rq.get("transaction", "")
        check("Permit2 rail, receipt not seen in time: 202 settlement_pending with its transaction, sent once, not charged yet",
              q1.status_code == 202 and json.loads(base64.b64decode(h2))["accepted"]["extra"].get("assetTransferMethod") == "permit2"
              and rq.get("errorReason") == "settlement_pending" and q1_tx.startswith("0x")
              and (q1.json().get("transaction") == q1_tx) and q1.json().get("payment_identifier") == k2pid
              and sent_by_settler() == sent0 + 1 and bal() == bal0,
              f"{q1.status_code} {q1.text[:300]} sent={sent_by_settler() - sent0}")
        q2 = await plain.post(url(), json=trace(63), headers={"PAYMENT-SIGNATURE": h2})
        check("Permit2 rail: the same payment while still pending: 202, the same transaction, nothing sent again",
              q2.status_code == 202 and receipt_of(q2).get("transaction") == q1_tx and sent_by_settler() == sent0 + 1,
              f"{q2.status_code} {q2.text[:300]} sent={sent_by_settler() - sent0}")
        # Concurrent retries of a pending payment, then mining resumes.
        q_conc = asyncio.gather(*[plain.post(url(), json=trace(63), headers={"PAYMENT-SIGNATURE": h2}) for _ in range(3)])
        conc = asyncio.gather(*[plain.post(url(), json=trace(60), headers={"PAYMENT-SIGNATURE": hp}) for _ in range(5)])
        w3.provider.make_request("evm_mine", [])
        w3.provider.make_request("evm_setAutomine", [True])
        shared = await conc
        q_shared = await q_conc
        check("concurrent retries of a pending payment share its one settlement: the same answer, broadcast once",
              [r.status_code for r in shared] == [200] * 5 and len({r.content for r in shared}) == 1
              and broadcasts[sig] == 1, f"{[r.status_code for r in shared]} broadcasts={broadcasts[sig]}")
        deadline = time.time() + 60
        while True:
            p3 = await plain.post(url(), json=trace(60), headers={"PAYMENT-SIGNATURE": hp})
            if p3.status_code != 202 or time.time() > deadline:
                break
            await asyncio.sleep(0.2)
        r3 = receipt_of(p3)
        check("once mined, the same payment: 200 with the settled receipt of that transaction, charged once, broadcast once",
              p3.status_code == 200 and r3.get("success") is True and r3.get("transaction") == rp.get("transaction")
              and broadcasts[sig] == 1,
              f"{p3.status_code} {p3.text[:300]} broadcasts={broadcasts[sig]}")
        p4 = await plain.post(url(), json=trace(60), headers={"PAYMENT-SIGNATURE": hp})
        check("that payment again: the kept answer replayed byte for byte",
              p4.status_code == 200 and p4.content == p3.content
              and p4.headers.get("payment-response") == p3.headers.get("payment-response"),
              f"{p4.status_code} {p4.text[:200]}")
        r2 = await plain.post(base() + "/vow/report", json=report, headers={"PAYMENT-SIGNATURE": hr, "Prefer": "wait=30"})
        r2b = await plain.post(base() + "/vow/report", json=report, headers={"PAYMENT-SIGNATURE": hr, "Prefer": "wait=30"})
        check("once mined, the same report-in payment appends one entry (201), and again replays it",
              r2.status_code == 201 and r2.json().get("attested") is True and chain_len() == 1
              and r2b.status_code == 201 and r2b.content == r2.content, f"{r2.status_code} {r2.text[:300]}")
        n2 = await plain.post(url(), json=trace(61), headers={"PAYMENT-SIGNATURE": hn})
        n3 = await plain.post(url(), json=trace(61), headers={"PAYMENT-SIGNATURE": hn})
        check("pending without an identifier: the same payment resumes once mined (200), then is spent (402)",
              n1.status_code == 202 and n2.status_code == 200 and receipt_of(n2).get("success") is True
              and n3.status_code == 402 and "payment_already_used" in decode_challenge(n3).get("error", ""),
              f"{n1.status_code} {n2.status_code} {n3.status_code}")
        resent = await plain.post(url(), json=trace(62), headers={"PAYMENT-SIGNATURE": out.get("paymentSignature") or ""})
        check("the npm client's pending payment, its header sent again once mined: 200 settled",
              resent.status_code == 200 and receipt_of(resent).get("success") is True, f"{resent.status_code} {resent.text[:200]}")
        deadline = time.time() + 60
        while True:
            q3 = await plain.post(url(), json=trace(63), headers={"PAYMENT-SIGNATURE": h2})
            if q3.status_code != 202 or time.time() > deadline:
                break
            await asyncio.sleep(0.2)
        q4 = await plain.post(url(), json=trace(63), headers={"PAYMENT-SIGNATURE": h2})
        mined = w3.eth.get_transaction_receipt(q1_tx) if q1_tx.startswith("0x") else {}
        transfers = token.events.Transfer().process_receipt(mined) if mined else []
        check("Permit2 rail once mined: the same payment served (200, the settled receipt of that transaction), "
              "one transfer on chain, charged once, never sent again",
              q3.status_code == 200 and receipt_of(q3).get("success") is True and receipt_of(q3).get("transaction") == q1_tx
              and all(r.status_code == 202 or (r.status_code == 200 and r.content == q3.content) for r in q_shared),
              f"{q3.status_code} {q3.text[:300]} {[r.status_code for r in q_shared]}")
        check("Permit2 rail: one transfer on chain, the payer charged once, the settler sent once, the answer replayed",
              mined and mined.get("status") == 1 and len(transfers) == 1 and transfers[0]["args"]["value"] == PRICE
              and transfers[0]["args"]["from"] == ADDR["payer"] and sent_by_settler() == sent0 + 1
              and q4.status_code == 200 and q4.content == q3.content,
              f"charged {bal0 - bal()} sent={sent_by_settler() - sent0} transfers={len(transfers)} {q4.status_code}")
        check("every pending payment above was charged exactly once and broadcast once",
              before - bal() == 5 * PRICE and all(n == 1 for n in broadcasts.values()),
              f"charged {before - bal()} broadcasts {dict(broadcasts)}")
        await plain.aclose()
    finally:
        stop(procs)
    passed = sum(1 for _, ok in results if ok)
    print(f"x402 extensions e2e: {passed} checks passed, {len(results) - passed} failed")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
