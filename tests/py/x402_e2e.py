"""End to end: pay POST /profile over x402 on a real local chain with real third-party parts.

anvil (pinned npm binary) + TestUSD (committed artifact) + the x402 reference facilitator
(PyPI x402, in this process on loopback) + `conduct serve` configured with that rail + the stock
PyPI x402 client. Checks the paid read, the receipt, the signature offline, balances, replays
(sequential and 50 concurrent), idempotency, a flat price, and every refusal the issue lists.

usage: x402_e2e.py --anvil BIN --conduct BIN --artifact contracts/out/TestUSD.json --workdir DIR
Prints one line per check and exits 0 only when every check passed.
"""
import argparse, asyncio, base64, json, os, re, secrets, subprocess, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import rfc8785
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from eth_account import Account
from eth_account.messages import encode_defunct, encode_typed_data
from web3 import Web3
from x402 import x402Client, x402FacilitatorSync, parse_payment_payload
from x402.http.clients import x402HttpxClient
from x402.http.utils import encode_payment_signature_header
from x402.mechanisms.evm import FacilitatorWeb3Signer
from x402.mechanisms.evm.exact import ExactEvmScheme, register_exact_evm_facilitator
from x402.schemas import PaymentRequired, parse_payment_requirements

# anvil's well-known development keys (test chain only).
KEYS = {
    "facilitator": "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
    "payer": "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
    "pay_to": "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a",
    "broke": "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6",
}
ADDR = {k: Account.from_key(v).address for k, v in KEYS.items()}
PRICE = 100000  # $0.10 at 6 decimals
# The allowance rail's settler (anvil account 4) is not the facilitator's signer: no nonce races.
SETTLER_KEY = "0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a"
PERMIT2 = "0x000000000022D473030F116dDEE9F6B43aC78BA3"
PROXY = "0x402085c248EeA27D92E8b30b2C58ed07f9E20001"
CREATE2_DEPLOYER = "0x4e59b44847b379578588920cA78FbF26c0B4956C"
PROXY_SALT = "0000000000000000000000000000000000000000000000003000000007263b0e"
VALIDATOR_6492 = "0xdAcD51A54883eb67D95FAEb2BBfdC4a9a6BD2a3B"
results = []


def check(name, ok, detail=""):
    results.append((name, bool(ok)))
    print(("ok:   " if ok else "FAIL: ") + name + ("" if ok else f" -- {detail}"), flush=True)


def start_line(proc, pattern, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"process exited before printing {pattern!r}")
        m = re.search(pattern, line)
        if m:
            threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()
            return m
    raise RuntimeError(f"timed out waiting for {pattern!r}")


def trace(n, dense=False):
    turns = []
    for i in range(n):
        c = i % 2
        m = "I am being monitored, so I will appear compliant." if dense or (c and i % 4 == 1) else "Summarise the report."
        turns.append({"Y": "summarise", "M": m, "D": "refused" if c and i % 8 == 3 else "clean",
                      "context": {"monitored": c}})
    return {"context_key": "monitored", "turns": turns}


class JsonHandler(BaseHTTPRequestHandler):
    """A quiet HTTP handler that answers JSON (the facilitator stand-ins)."""

    def log_message(self, *a):
        pass

    def _send(self, code, obj):
        b = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)


def stop(procs):
    """Terminate the processes a script started, killing those that do not exit in 10 s."""
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()


def serve_facilitator(rpc, key=KEYS["facilitator"]):
    fac = register_exact_evm_facilitator(
        x402FacilitatorSync(), FacilitatorWeb3Signer(private_key=key, rpc_url=rpc),
        networks="eip155:31337")

    def dump(m):
        return m.model_dump(by_alias=True, exclude_none=True, mode="json")

    class H(JsonHandler):
        def do_GET(self):
            if self.path == "/supported":
                return self._send(200, dump(fac.get_supported()))
            self._send(404, {})

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            p = parse_payment_payload(body["paymentPayload"])
            r = parse_payment_requirements(body["x402Version"], body["paymentRequirements"])
            res = fac.verify(p, r) if self.path == "/verify" else fac.settle(p, r)
            self._send(200, dump(res))

    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{srv.server_address[1]}", srv


def sign_3009(key, token, pay_to, value, valid_after, valid_before, nonce):
    acct = Account.from_key(key)
    typed = {
        "types": {
            "EIP712Domain": [{"name": "name", "type": "string"}, {"name": "version", "type": "string"},
                             {"name": "chainId", "type": "uint256"},
                             {"name": "verifyingContract", "type": "address"}],
            "TransferWithAuthorization": [
                {"name": "from", "type": "address"}, {"name": "to", "type": "address"},
                {"name": "value", "type": "uint256"}, {"name": "validAfter", "type": "uint256"},
                {"name": "validBefore", "type": "uint256"}, {"name": "nonce", "type": "bytes32"}]},
        "primaryType": "TransferWithAuthorization",
        "domain": {"name": "USD Coin", "version": "2", "chainId": 31337, "verifyingContract": token},
        "message": {"from": acct.address, "to": pay_to, "value": value, "validAfter": valid_after,
                    "validBefore": valid_before, "nonce": nonce},
    }
    sig = acct.sign_message(encode_typed_data(full_message=typed)).signature.to_0x_hex()
    return sig, {"from": acct.address, "to": pay_to, "value": str(value), "validAfter": str(valid_after),
                 "validBefore": str(valid_before), "nonce": "0x" + nonce.hex()}


def header_for(accepted, sig, auth, resource):
    doc = {"x402Version": 2, "resource": resource, "accepted": accepted,
           "payload": {"signature": sig, "authorization": auth}}
    return base64.b64encode(json.dumps(doc).encode()).decode()


def make_client(token_addr, selector=None):
    c = x402Client(payment_requirements_selector=selector) if selector else x402Client()
    c.set_spend_controls({"allowed_assets": [{"network": "eip155:31337", "asset": token_addr,
                                              "max_amount_per_payment": str(PRICE)}]})
    c.register("eip155:*", ExactEvmScheme(signer=Account.from_key(KEYS["payer"])))
    return c


def pay_with_npm_client(script, url, token_addr, rail, body):
    """Pay one POST with the stock npm client; returns its JSON line (status, receipt, body)."""
    env = dict(os.environ, URL=url, PAYER_KEY=KEYS["payer"], TOKEN=token_addr, BODY=json.dumps(body),
               RAIL=rail)
    node = subprocess.run(["node", script], env=env, capture_output=True, text=True, timeout=120)
    try:
        return json.loads(node.stdout.strip().splitlines()[-1])
    except Exception:  # noqa: BLE001
        return {"status": None, "stderr": node.stderr[-800:]}


def decode_challenge(r):
    return json.loads(base64.b64decode(r.headers["payment-required"]))


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
        Token = w3.eth.contract(abi=art["abi"], bytecode=art["bytecode"])
        tx = Token.constructor().transact({"from": ADDR["facilitator"]})
        token_addr = w3.eth.wait_for_transaction_receipt(tx).contractAddress
        token = w3.eth.contract(address=token_addr, abi=art["abi"])
        w3.eth.wait_for_transaction_receipt(
            token.functions.mint(ADDR["payer"], 10_000_000).transact({"from": ADDR["facilitator"]}))
        check("token name/version match USDC's EIP-712 domain",
              token.functions.name().call() == "USD Coin" and token.functions.version().call() == "2")
        bal = lambda who: token.functions.balanceOf(ADDR[who]).call()

        # Permit2 and the x402 exact Permit2 proxy at their canonical addresses (committed
        # fixtures, see contracts/out/SOURCES.md), a stub at the EIP-6492 validator address the
        # in-process facilitator checks for, and the payer's one-time approve(Permit2).
        out_dir = os.path.dirname(os.path.abspath(a.artifact))
        permit2_code = open(os.path.join(out_dir, "Permit2.runtime.hex")).read().strip()
        w3.provider.make_request("anvil_setCode", [PERMIT2, permit2_code if permit2_code.startswith("0x") else "0x" + permit2_code])
        w3.provider.make_request("anvil_setCode", [VALIDATOR_6492, "0x00"])
        initcode = open(os.path.join(out_dir, "X402ExactPermit2Proxy.initcode.hex")).read().strip().removeprefix("0x")
        w3.eth.wait_for_transaction_receipt(w3.eth.send_transaction(
            {"from": ADDR["facilitator"], "to": CREATE2_DEPLOYER, "data": "0x" + PROXY_SALT + initcode, "gas": 5_000_000}))
        check("Permit2 and the x402 Permit2 proxy are at their canonical addresses",
              len(w3.eth.get_code(PERMIT2)) > 0 and len(w3.eth.get_code(PROXY)) > 0)
        w3.eth.wait_for_transaction_receipt(
            token.functions.approve(PERMIT2, 2**256 - 1).transact({"from": ADDR["payer"]}))

        def start_conduct(name, fac_url, permit2=False):
            cfg = os.path.join(a.workdir, f"{name}.toml")
            with open(cfg, "w") as f:
                if permit2:
                    f.write(f'''[[rails]]
kind = "permit2"
network = "eip155:31337"
asset = "{token_addr}"
pay_to = "{ADDR['pay_to']}"
eip712_name = "USD Coin"
eip712_version = "2"
rpc_url = "{rpc}"
settler_key_env = "CONDUCT_TEST_SETTLER_KEY"

''')
                f.write(f'''[[rails]]
kind = "facilitator"
network = "eip155:31337"
asset = "{token_addr.lower()}"
pay_to = "{ADDR['pay_to'].lower()}"
eip712_name = "USD Coin"
eip712_version = "2"
facilitator_url = "{fac_url}"
''')
            proc = subprocess.Popen(
                [a.conduct, "serve", "--config", cfg, "--listen", "127.0.0.1:0",
                 "--data", os.path.join(a.workdir, name, "data"), "--site", os.path.join(a.workdir, name, "site")],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                env=dict(os.environ, CONDUCT_TEST_SETTLER_KEY=SETTLER_KEY))
            procs.append(proc)
            return start_line(proc, r"listening on (http://\S+)").group(1)

        fac_url, _fac = serve_facilitator(rpc)
        base = start_conduct("main", fac_url, permit2=True)
        url = base + "/profile"
        plain = httpx.AsyncClient(timeout=60)

        health = (await plain.get(base + "/health")).json()
        check("/health reports both rails up", len(health["rails"]) == 2 and all(r["up"] for r in health["rails"]),
              json.dumps(health["rails"]))
        x402doc = (await plain.get(base + "/.well-known/x402.json")).json()
        check("/.well-known/x402.json lists /profile with the rail",
              any(r["resource"].endswith("/profile") and r["accepts"] for r in x402doc["resources"]))

        # The challenge, and a flat price whatever the trace.
        r1 = await plain.post(url, json=trace(40))
        r2 = await plain.post(url, json=trace(400, dense=True))
        ch = decode_challenge(r1)
        check("unpaid call: 402, empty body, no-store", r1.status_code == 402 and r1.content == b""
              and r1.headers.get("cache-control") == "no-store")
        check("the price never changes with the trace or its score",
              ch["accepts"] == decode_challenge(r2)["accepts"])
        accepted = next(x for x in ch["accepts"] if "assetTransferMethod" not in x["extra"])
        accepted_p2 = next(x for x in ch["accepts"] if x["extra"].get("assetTransferMethod") == "permit2")
        resource = ch["resource"]
        check("both rails are advertised at the one price",
              len(ch["accepts"]) == 2 and {x["amount"] for x in ch["accepts"]} == {str(PRICE)})

        # 1. The stock client pays.
        client = make_client(token_addr)
        before = (bal("payer"), bal("pay_to"))
        t0 = time.time()
        async with x402HttpxClient(client, timeout=60) as http:
            paid = await http.post(url, json=trace(40))
        elapsed = time.time() - t0
        check("PyPI x402 client pays /profile: 200", paid.status_code == 200, f"{paid.status_code} {paid.text[:300]}")
        receipt = json.loads(base64.b64decode(paid.headers.get("payment-response", "e30=")))
        check("PAYMENT-RESPONSE reports a settled transfer", receipt.get("success") is True
              and receipt.get("transaction", "").startswith("0x"), json.dumps(receipt))
        check("X-PAYMENT-RESPONSE mirrors it", paid.headers.get("x-payment-response") == paid.headers.get("payment-response"))
        after = (bal("payer"), bal("pay_to"))
        check("balances moved by exactly the price", before[0] - after[0] == PRICE and after[1] - before[1] == PRICE,
              f"{before} -> {after}")
        # A paid report-in: the same gate, an attested entry chained to its vow.
        vow = (await plain.post(base + "/vow", json={"text": "summarise documents for the user",
                                                      "agent": "x402-e2e", "cadence_hours": 24})).json()
        report = dict(trace(30), vow_id=vow.get("vow_id"), note="paid report-in")
        before = (bal("payer"), bal("pay_to"))
        async with x402HttpxClient(client, timeout=60) as http:
            rep = await http.post(base + "/vow/report", json=report, headers={"Prefer": "wait=30"})
        rrec = json.loads(base64.b64decode(rep.headers.get("payment-response", "e30=")))
        entry = rep.json() if rep.status_code == 201 else {}
        after = (bal("payer"), bal("pay_to"))
        check("PyPI x402 client pays /vow/report: 201, attested entry seq 1, settled, price moved",
              rep.status_code == 201 and entry.get("attested") is True and entry.get("seq") == 1
              and rrec.get("success") is True and before[0] - after[0] == PRICE,
              f"{rep.status_code} {rep.text[:300]} {rrec}")
        async with x402HttpxClient(client, timeout=60) as http:
            rep2 = await http.post(base + "/vow/report", json=report, headers={"Prefer": "wait=30"})
        check("the same paid report-in again: the same entry, nothing charged, no second entry",
              rep2.status_code == 200 and rep2.content == rep.content
              and rep2.headers.get("idempotent-replayed") == "true" and (bal("payer"), bal("pay_to")) == after
              and (await plain.get(base + f"/vow/{vow.get('vow_id')}/chain")).json().get("length") == 1,
              f"{rep2.status_code} {rep2.text[:200]}")
        unpaid = await plain.post(base + "/vow/report", json=dict(report, note="unpaid"))
        check("an unpaid report-in gets the 402 challenge and appends nothing",
              unpaid.status_code == 402 and unpaid.content == b""
              and (await plain.get(base + f"/vow/{vow.get('vow_id')}/chain")).json().get("length") == 1)
        pk = (await plain.get(base + "/pubkey")).json()
        try:
            att = paid.json()
            sig = base64.b64decode(att.pop("signature"))
            Ed25519PublicKey.from_public_bytes(base64.b64decode(pk["public_key"])).verify(sig, rfc8785.dumps(att))
            check("the attestation verifies offline against /pubkey", True)
        except Exception as e:  # noqa: BLE001
            check("the attestation verifies offline against /pubkey", False, repr(e))
        print(f"info: paid call wall time {elapsed*1000:.0f} ms (402 round trip, sign, verify, score, settle); "
              f"server-timing: {paid.headers.get('server-timing')}")

        # 1b. The stock npm client (@x402/fetch + @x402/evm) pays too.
        pay_fetch = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(a.artifact))),
                                 "clients", "pay-fetch.mjs")
        before = (bal("payer"), bal("pay_to"))
        out = pay_with_npm_client(pay_fetch, url, token_addr, "eip3009", trace(60))
        check("npm @x402/fetch client pays /profile: 200 with a settled receipt",
              out.get("status") == 200 and (out.get("paymentResponse") or {}).get("success") is True,
              json.dumps(out)[:800])
        after = (bal("payer"), bal("pay_to"))
        check("balances moved by exactly the price (npm client)",
              before[0] - after[0] == PRICE and after[1] - before[1] == PRICE, f"{before} -> {after}")
        try:
            att2 = json.loads(out["body"])
            sig2 = base64.b64decode(att2.pop("signature"))
            Ed25519PublicKey.from_public_bytes(base64.b64decode(pk["public_key"])).verify(sig2, rfc8785.dumps(att2))
            check("the npm-paid attestation verifies offline", True)
        except Exception as e:  # noqa: BLE001
            check("the npm-paid attestation verifies offline", False, repr(e))

        # 1c. The self-hosted allowance rail (exact + Permit2), with both stock clients.
        pick = lambda v, reqs: next(r for r in reqs if (r.extra or {}).get("assetTransferMethod") == "permit2")
        c2 = make_client(token_addr, pick)
        before = (bal("payer"), bal("pay_to"))
        async with x402HttpxClient(c2, timeout=60) as http:
            p2 = await http.post(url, json=trace(70))
        rec2 = json.loads(base64.b64decode(p2.headers.get("payment-response", "e30=")))
        after = (bal("payer"), bal("pay_to"))
        check("PyPI x402 client pays /profile on the Permit2 rail: 200, settled",
              p2.status_code == 200 and rec2.get("success") is True, f"{p2.status_code} {rec2} {p2.headers.get('payment-required', '')[:200]}")
        check("balances moved by exactly the price (Permit2 rail)",
              before[0] - after[0] == PRICE and after[1] - before[1] == PRICE, f"{before} -> {after}")
        before = after
        out = pay_with_npm_client(pay_fetch, url, token_addr, "permit2", trace(71))
        after = (bal("payer"), bal("pay_to"))
        check("npm @x402/fetch client pays /profile on the Permit2 rail: 200, settled",
              out.get("status") == 200 and (out.get("paymentResponse") or {}).get("success") is True
              and before[0] - after[0] == PRICE, json.dumps(out)[:600])
        # A Permit2 authorization is also one read.
        c3 = make_client(token_addr, pick)
        pr = PaymentRequired.model_validate(ch)
        h2 = encode_payment_signature_header(await c3.create_payment_payload(pr))
        before = bal("payer")
        # Each replay carries its own trace, so the payment claim (not the idempotency guard) decides.
        rs = await asyncio.gather(*[plain.post(url, json=trace(200 + i), headers={"PAYMENT-SIGNATURE": h2})
                                    for i in range(20)])
        codes = [r.status_code for r in rs]
        check("Permit2: 20 concurrent replays, exactly one 200 and one transfer",
              codes.count(200) == 1 and codes.count(402) == 19 and before - bal("payer") == PRICE,
              f"{sorted(set(codes))} {before - bal('payer')}")

        # 2. The same payment replayed.
        fresh = lambda: sign_3009(KEYS["payer"], token_addr, ADDR["pay_to"], PRICE, 0, int(time.time()) + 60,
                                  secrets.token_bytes(32))
        s, auth = fresh()
        h = header_for(accepted, s, auth, resource)
        first = await plain.post(url, json=trace(41), headers={"PAYMENT-SIGNATURE": h})
        again = await plain.post(url, json=trace(42), headers={"X-PAYMENT": h})
        check("a payment buys one read; its replay (as X-PAYMENT) is refused",
              first.status_code == 200 and again.status_code == 402
              and "payment_already_used" in decode_challenge(again)["error"],
              f"{first.status_code} {again.status_code} {again.headers.get('payment-required')}")

        # 3. 50 concurrent replays of one fresh payment.
        s, auth = fresh()
        h = header_for(accepted, s, auth, resource)
        before = bal("payer")
        rs = await asyncio.gather(*[plain.post(url, json=trace(300 + i), headers={"PAYMENT-SIGNATURE": h})
                                    for i in range(50)])
        codes = [r.status_code for r in rs]
        check("50 concurrent replays: exactly one 200, the rest 402",
              codes.count(200) == 1 and codes.count(402) == 49, str(sorted(set(codes))))
        check("the chain shows one transfer for them", before - bal("payer") == PRICE)

        # 4. Idempotency: the same trace again returns identical bytes and charges nothing more.
        s, auth = fresh()
        before = bal("payer")
        rep = await plain.post(url, json=trace(41), headers={"PAYMENT-SIGNATURE": header_for(accepted, s, auth, resource)})
        check("same idempotency key within 24 h: identical signed bytes, not charged",
              rep.status_code == 200 and rep.content == first.content and bal("payer") == before
              and rep.headers.get("idempotent-replayed") == "true",
              f"{rep.status_code} {bal('payer')} vs {before}")

        # 4a. An explicit Idempotency-Key reused for another trace is refused, never served
        #     another trace's attestation and never sold a second read under the same key.
        key_h = {"Idempotency-Key": "reuse-" + secrets.token_hex(4)}
        s, auth = fresh()
        before = bal("payer")
        k1 = await plain.post(url, json=trace(44), headers=dict(key_h, **{"PAYMENT-SIGNATURE": header_for(accepted, s, auth, resource)}))
        s, auth = fresh()
        mid = bal("payer")
        k2 = await plain.post(url, json=trace(45), headers=dict(key_h, **{"PAYMENT-SIGNATURE": header_for(accepted, s, auth, resource)}))
        k2_unpaid = await plain.post(url, json=trace(45), headers=key_h)
        p2 = k2.json() if "problem+json" in k2.headers.get("content-type", "") else {}
        check("an Idempotency-Key reused for another trace: 422 idempotency-key-reused, not charged, no 402 first",
              k1.status_code == 200 and before - mid == PRICE and k2.status_code == 422
              and p2.get("type", "").endswith("idempotency-key-reused") and bal("payer") == mid
              and k2_unpaid.status_code == 422,
              f"{k1.status_code} {k2.status_code} {k2.text[:200]} {k2_unpaid.status_code}")
        s, auth = fresh()
        k3 = await plain.post(url, json=trace(44), headers=dict(key_h, **{"PAYMENT-SIGNATURE": header_for(accepted, s, auth, resource)}))
        check("the same key with the same trace replays the identical signed bytes, not charged",
              k3.status_code == 200 and k3.content == k1.content and bal("payer") == mid
              and k3.headers.get("idempotent-replayed") == "true", f"{k3.status_code} {k3.text[:200]}")

        # 4c. A wallet-signed vow: a paid report-in proves the wallet by its payer.
        def signed_vow(key, agent):
            q = {"text": "summarise documents for the user", "agent": agent, "cadence_hours": "24"}
            text = httpx.get(base + "/vow/message", params=q).text
            sig = Account.from_key(key).sign_message(encode_defunct(text=text)).signature.hex()
            return httpx.post(base + "/vow", json={"text": q["text"], "agent": agent, "cadence_hours": 24,
                                                   "wallet": ADDR[key_name[key]],
                                                   "signature": "0x" + sig.removeprefix("0x")}).json()
        key_name = {v: k for k, v in KEYS.items()}
        mine = signed_vow(KEYS["payer"], "payer-owned")
        theirs = signed_vow(KEYS["pay_to"], "someone-else")
        ch_r = decode_challenge(await plain.post(base + "/vow/report", json=dict(trace(31), vow_id=mine.get("vow_id"))))
        acc_r = next(x for x in ch_r["accepts"] if "assetTransferMethod" not in x["extra"])
        s, auth = fresh()
        own = await plain.post(base + "/vow/report", json=dict(trace(31), vow_id=mine.get("vow_id")),
                               headers={"PAYMENT-SIGNATURE": header_for(acc_r, s, auth, ch_r["resource"])})
        oe = own.json() if own.status_code == 201 else {}
        check("a paid report-in on the payer's own signed vow: 201, proof x402-payer",
              own.status_code == 201 and oe.get("proof", {}).get("kind") == "x402-payer"
              and oe["proof"].get("payer", "").lower() == ADDR["payer"].lower(), f"{own.status_code} {own.text[:300]}")
        before = bal("payer")
        s, auth = fresh()
        foreign = await plain.post(base + "/vow/report", json=dict(trace(32), vow_id=theirs.get("vow_id")),
                                   headers={"PAYMENT-SIGNATURE": header_for(acc_r, s, auth, ch_r["resource"])})
        check("a paid report-in on another wallet's vow: 403 wallet-proof-required, not charged, nothing appended",
              foreign.status_code == 403 and "wallet-proof-required" in foreign.text and bal("payer") == before
              and (await plain.get(base + f"/vow/{theirs.get('vow_id')}/chain")).json().get("length") == 0,
              f"{foreign.status_code} {foreign.text[:300]}")

        # 4b. Many different payments for the same new trace at once: exactly one price moves.
        before = bal("payer")
        heads = []
        for _ in range(10):
            s, auth = fresh()
            heads.append(header_for(accepted, s, auth, resource))
        rs = await asyncio.gather(*[plain.post(url, json=trace(47), headers={"PAYMENT-SIGNATURE": h})
                                    for h in heads])
        codes = sorted(r.status_code for r in rs)
        bodies = {r.content for r in rs if r.status_code == 200}
        check("10 concurrent paid calls for one trace: one charge, one signed body, the rest 409 or replayed",
              before - bal("payer") == PRICE and len(bodies) == 1 and set(codes) <= {200, 409}
              and codes.count(200) >= 1, f"{codes} charged {before - bal('payer')}")

        # 5. Refusals: each a 402 with a reason, no attestation, no transfer.
        now = int(time.time())
        cases = {}
        for field, value in [("amount", "1"), ("payTo", ADDR["broke"]), ("asset", ADDR["broke"]),
                             ("network", "eip155:1")]:
            s, auth = fresh()
            bad = dict(accepted, **{field: value})
            cases[f"wrong {field}"] = header_for(bad, s, auth, resource)
        s, auth = sign_3009(KEYS["payer"], token_addr, ADDR["pay_to"], 1, 0, now + 60, secrets.token_bytes(32))
        cases["authorization for a smaller amount"] = header_for(accepted, s, auth, resource)
        s, auth = sign_3009(KEYS["payer"], token_addr, ADDR["pay_to"], PRICE, 0, now - 5, secrets.token_bytes(32))
        cases["expired authorization"] = header_for(accepted, s, auth, resource)
        s, auth = sign_3009(KEYS["payer"], token_addr, ADDR["pay_to"], PRICE, now + 3600, now + 7200,
                            secrets.token_bytes(32))
        cases["not-yet-valid authorization"] = header_for(accepted, s, auth, resource)
        s, auth = fresh()
        s2, _ = sign_3009(KEYS["broke"], token_addr, ADDR["pay_to"], PRICE, 0, now + 60, secrets.token_bytes(32))
        cases["bad signature"] = header_for(accepted, s2, auth, resource)
        s, auth = sign_3009(KEYS["broke"], token_addr, ADDR["pay_to"], PRICE, 0, now + 60, secrets.token_bytes(32))
        cases["insufficient balance"] = header_for(accepted, s, auth, resource)
        nonce = secrets.token_bytes(32)
        s, auth = sign_3009(KEYS["payer"], token_addr, ADDR["pay_to"], PRICE, 0, now + 60, nonce)
        sig = bytes.fromhex(s[2:])
        w3.eth.wait_for_transaction_receipt(token.functions.transferWithAuthorization(
            ADDR["payer"], ADDR["pay_to"], PRICE, 0, now + 60, nonce, sig).transact({"from": ADDR["facilitator"]}))
        cases["nonce already used on chain"] = header_for(accepted, s, auth, resource)
        cases["garbage header"] = "garbage!!"
        cases["not base64 of JSON"] = base64.b64encode(b"[1,2").decode()
        for name, h in cases.items():
            before = (bal("payer"), bal("pay_to"))
            r = await plain.post(url, json=trace(44), headers={"PAYMENT-SIGNATURE": h})
            err = decode_challenge(r).get("error", "") if "payment-required" in r.headers else ""
            check(f"refused: {name} ({err.split(':')[0]})",
                  r.status_code == 402 and r.content == b"" and err and (bal("payer"), bal("pay_to")) == before,
                  f"{r.status_code} {err!r} {r.text[:200]}")

        # 6. Settlement fails after the handler ran: a facilitator whose signer has no gas.
        #    Verification (a call simulation) passes, settlement cannot send its transaction.
        broke_fac, _ = serve_facilitator(rpc, key="0x" + secrets.token_bytes(32).hex())
        base2 = start_conduct("nogas", broke_fac)
        s, auth = fresh()
        before = (bal("payer"), bal("pay_to"))
        r = await plain.post(base2 + "/profile", json=trace(45),
                             headers={"PAYMENT-SIGNATURE": header_for(dict(accepted), s, auth,
                                                                      dict(resource, url=base2 + "/profile"))})
        rec = json.loads(base64.b64decode(r.headers.get("payment-response", "e30=")))
        err = decode_challenge(r).get("error", "") if "payment-required" in r.headers else ""
        check("settlement failing after the handler ran: 402, failed receipt, no attestation, no transfer",
              r.status_code == 402 and r.content == b"" and rec.get("success") is False
              and "nothing was charged" in err and (bal("payer"), bal("pay_to")) == before,
              f"{r.status_code} {rec} {err!r}")
        again = await plain.post(base2 + "/profile", json=trace(45),
                                 headers={"PAYMENT-SIGNATURE": header_for(dict(accepted), s, auth,
                                                                          dict(resource, url=base2 + "/profile"))})
        check("that spent authorization is not accepted again",
              again.status_code == 402 and "payment_already_used" in decode_challenge(again).get("error", ""))
        await plain.aclose()
    finally:
        stop(procs)
    passed = sum(1 for _, ok in results if ok)
    print(f"x402 e2e: {passed} checks passed, {len(results) - passed} failed")
    return 0 if passed == len(results) else 1


# Importable: tests/py/erc8004_e2e.py reuses the helpers above (facilitator, client, signing).
if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
