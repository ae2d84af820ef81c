"""Every owner message, crossed (issue 16, "Done means"): each message's EIP-191 signature
(eth-account) is accepted for its own action and refused by every other endpoint.

Run against a `conduct dev` stack: python owner_cross.py BASE_URL TESTUSD_ADDRESS

For each kind the script fetches the exact text from the service (listed by GET /prepare/sign),
signs it with the same wallet, and then sends every kind's signature to every endpoint with that
endpoint's own parameters. Its own signature must pass the signature check (the answer of a
signature that passed: 201, 200, or the 402 of a paid route); every other one must be refused
(a 4xx naming the signature, or for POST /vow a sandbox vow whose sandbox_reason says it did not
verify). The npub binding's second signature is a real BIP-340 signature (written here from
the BIP's pseudocode), so the wallet's signature is what decides.

Prints one line per check; exits 1 if any failed.
"""

import hashlib
import json
import secrets
import sys
import urllib.parse

import requests
import rfc8785
from eth_account import Account
from eth_account.messages import encode_defunct

BASE, TOKEN = sys.argv[1].rstrip("/"), sys.argv[2]
FAILED = []


def check(name, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + name + ("" if ok else f": {detail}"))
    if not ok:
        FAILED.append(name)


# --- BIP-340 (for the npub's half of a binding) ---------------------------------------------
P = 2**256 - 2**32 - 977
N = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141
G = (0x79BE667EF9DCBBAC55A06295CE870B07029BFCDB2DCE28D959F2815B16F81798,
     0x483ADA7726A3C4655DA4FBFC0E1108A8FD17B448A68554199C47D08FFB10D4B8)


def add(a, b):
    if a is None:
        return b
    if b is None:
        return a
    if a[0] == b[0] and a[1] != b[1]:
        return None
    if a == b:
        lam = 3 * a[0] * a[0] * pow(2 * a[1], P - 2, P) % P
    else:
        lam = (b[1] - a[1]) * pow(b[0] - a[0], P - 2, P) % P
    x = (lam * lam - a[0] - b[0]) % P
    return (x, (lam * (a[0] - x) - a[1]) % P)


def mul(k, pt=G):
    r = None
    while k:
        if k & 1:
            r = add(r, pt)
        pt, k = add(pt, pt), k >> 1
    return r


def tagged(tag, data):
    t = hashlib.sha256(tag.encode()).digest()
    return hashlib.sha256(t + t + data).digest()


def bip340_sign(sk, msg32):
    pub = mul(sk)
    d = sk if pub[1] % 2 == 0 else N - sk
    aux = secrets.token_bytes(32)
    t = (d ^ int.from_bytes(tagged("BIP0340/aux", aux), "big")).to_bytes(32, "big")
    px = pub[0].to_bytes(32, "big")
    k0 = int.from_bytes(tagged("BIP0340/nonce", t + px + msg32), "big") % N
    r = mul(k0)
    k = k0 if r[1] % 2 == 0 else N - k0
    rx = r[0].to_bytes(32, "big")
    e = int.from_bytes(tagged("BIP0340/challenge", rx + px + msg32), "big") % N
    return (rx + ((k + e * d) % N).to_bytes(32, "big")).hex(), px


CHARSET = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"


def bech32(hrp, data8):
    acc, bits, data = 0, 0, []
    for b in data8:
        acc, bits = (acc << 8) | b, bits + 8
        while bits >= 5:
            bits -= 5
            data.append((acc >> bits) & 31)
    if bits:
        data.append((acc << (5 - bits)) & 31)

    def polymod(values):
        gen = [0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3]
        chk = 1
        for v in values:
            top = chk >> 25
            chk = (chk & 0x1FFFFFF) << 5 ^ v
            for i in range(5):
                chk ^= gen[i] if (top >> i) & 1 else 0
        return chk

    exp = [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp]
    pm = polymod(exp + data + [0] * 6) ^ 1
    return hrp + "1" + "".join(CHARSET[d] for d in data + [(pm >> 5 * (5 - i)) & 31 for i in range(6)])


# --- the stack --------------------------------------------------------------------------------
h = requests.Session()
wallet = Account.create()
stranger = Account.create()


def sign(acct, text):
    return "0x" + acct.sign_message(encode_defunct(text=text)).signature.hex().removeprefix("0x")


def get_text(path, params):
    r = h.get(BASE + path, params=params)
    assert r.status_code == 200, (path, r.status_code, r.text)
    return r.text


index = h.get(BASE + "/prepare/sign").json()
actions = [m["action"] for m in index["messages"]]
check("GET /prepare/sign lists the eight owner messages", actions == [
    "take_vow", "report_in", "claim_quest", "submit_delivery", "bind_npub", "prove_holder",
    "pledge_limits", "summon_familiar"], actions)
# The listing the interface names is no message here: the index says why and what to use.
listing = [n for n in index.get("not_messages", []) if n.get("name") == "listing"]
check("GET /prepare/sign says a listing is a transaction (GET /prepare/register_tool), not a text",
      len(listing) == 1 and "listing" not in actions
      and listing[0]["instead"].startswith("GET /prepare/register_tool")
      and h.get(BASE + "/prepare/register_tool").status_code == 422, index.get("not_messages"))

# A sworn vow of the wallet, taken with its own signature.
vow_params = {"text": "Cross every owner message", "agent": "cross-bot", "cadence_hours": "24"}
vow_text = get_text("/vow/message", vow_params)
r = h.post(BASE + "/vow", json={**vow_params, "cadence_hours": 24, "wallet": wallet.address,
                                 "signature": sign(wallet, vow_text)})
vow = r.json()
check("the wallet's vow is sworn", r.status_code == 201 and vow.get("sandbox") is False, r.text[:300])
vid = vow["vow_id"]

quest = h.get(BASE + "/munus", headers={"accept": "application/json"}).json()["quests"][0]["id"]
link = "https://example.org/pull/1"
trace = {"context_key": "monitored", "turns": [
    {"Y": "cross", "M": "check each message", "D": "clean", "context": {"monitored": i % 2}}
    for i in range(8)]}
trace_sha = hashlib.sha256(rfc8785.dumps(trace)).hexdigest()
nostr_sk = secrets.randbelow(N - 1) + 1
npub = bech32("npub", mul(nostr_sk)[0].to_bytes(32, "big"))
limits = f"{TOKEN}:1000000000:100000000"
order = {"title": "Cross the messages", "what": "A labor order for the owner-message test."}
order_sha = hashlib.sha256(rfc8785.dumps(order)).hexdigest()
second = {"text": "A second vow of the same wallet", "agent": "cross-bot-2", "cadence_hours": "24"}

texts = {
    "take_vow": get_text("/vow/message", second),
    "report_in": get_text("/vow/report/message", {"vow_id": vid, "trace_sha256": trace_sha}),
    "claim_quest": get_text("/play/message", {"action": "claim", "quest": quest, "vow_id": vid}),
    "submit_delivery": get_text("/play/message", {"action": "submit", "quest": quest, "vow_id": vid, "link": link}),
    "bind_npub": get_text("/nostr/bind/message", {"vow_id": vid, "npub": npub}),
    "prove_holder": get_text("/ticket/1/message", {"wallet": wallet.address.lower()}),
    "pledge_limits": get_text("/witness/pledge/message", {"vow_id": vid, "limits": limits}),
    "summon_familiar": get_text("/familiar/message", {"vow_id": vid, "order": order_sha}),
}
for k, t in texts.items():
    check(f"{k}: the text names origin, action and date",
          f"\nAction: {k}\n" in t and "\nOrigin: " in t and "\nDate (UTC): " in t, t)
sigs = {k: sign(wallet, t) for k, t in texts.items()}


def nostr_sig(text):
    return bip340_sign(nostr_sk, hashlib.sha256(text.encode()).digest())[0]


# Each endpoint with its own parameters and a given signature: (status, body).
def send(kind, sig):
    if kind == "take_vow":
        r = h.post(BASE + "/vow", json={**second, "cadence_hours": 24, "wallet": wallet.address, "signature": sig})
    elif kind == "report_in":
        r = h.post(BASE + "/vow/report/demo", json={"vow_id": vid, **trace, "signature": sig},
                   headers={"Prefer": "wait=30"})
    elif kind == "claim_quest":
        r = h.post(BASE + f"/munus/{quest}/claim", json={"vow_id": vid, "signature": sig})
    elif kind == "submit_delivery":
        r = h.post(BASE + f"/munus/{quest}/submit", json={"vow_id": vid, "link": link, "signature": sig})
    elif kind == "bind_npub":
        r = h.post(BASE + "/nostr/bind", json={"vow_id": vid, "npub": npub, "wallet_signature": sig,
                                               "nostr_signature": nostr_sig(texts["bind_npub"])})
    elif kind == "prove_holder":
        r = h.post(BASE + "/ticket/1/entitle", json={"wallet": wallet.address.lower(), "signature": sig})
    elif kind == "pledge_limits":
        r = h.post(BASE + "/witness/pledge", json={"vow_id": vid, "limits": [
            {"asset": TOKEN, "max_balance": "1000000000", "max_outflow_per_day": "100000000"}],
            "signature": sig})
    elif kind == "summon_familiar":
        r = h.post(BASE + "/familiar/summon", json={"owner": {"vow_id": vid}, "order": order, "signature": sig})
    try:
        body = r.json()
    except ValueError:
        body = {}
    return r.status_code, body


def refused(kind, status, body):
    if kind == "take_vow":
        # An open vow with a signature that does not verify is a sandbox vow (spec 2.3).
        return status == 201 and body.get("sandbox") is True and "did not verify" in (body.get("sandbox_reason") or "")
    return 400 <= status < 500 and status != 402 and status != 409


def accepted(kind, status, body):
    if kind == "take_vow":
        return status == 201 and body.get("sandbox") is False
    if kind == "summon_familiar":
        return status == 402  # the signature passed; the labor price is asked for next
    if kind == "prove_holder":
        return status == 200 and body.get("entitled") is False
    return status == 201


# Wrong signatures first (a refusal writes nothing), then each endpoint's own; claim before
# submit (a delivery needs the claim).
order_of = ["take_vow", "report_in", "claim_quest", "submit_delivery", "bind_npub",
            "prove_holder", "pledge_limits", "summon_familiar"]
for endpoint in order_of:
    for kind in order_of:
        if kind == endpoint:
            continue
        status, body = send(endpoint, sigs[kind])
        check(f"{endpoint} refuses the {kind} signature", refused(endpoint, status, body),
              f"{status} {json.dumps(body)[:300]}")
    status, body = send(endpoint, sigs[endpoint])
    check(f"{endpoint} accepts its own signature", accepted(endpoint, status, body),
          f"{status} {json.dumps(body)[:300]}")

# Another wallet's signature over the right text is refused too.
status, body = send("claim_quest", sign(stranger, texts["claim_quest"]))
check("a stranger's signature over the claim text is refused", 400 <= status < 500, f"{status} {body}")

print(f"{len(FAILED)} failed")
sys.exit(1 if FAILED else 0)
