"""End to end: POST /erc8004/validation paid over x402 on a real local chain, checked with
independent third-party code, then used with an ERC-8004 validation registry on the same chain.

One anvil (pinned npm binary), TestUSD (committed artifact), the x402 reference facilitator (PyPI
x402, in this process), one `conduct serve` with that rail, and the stock PyPI x402 client; the
helpers are x402_e2e.py's. Checks:

- unpaid: 402, empty body, the posted price in PAYMENT-REQUIRED;
- a paid credential for every subject form (erc8004-agentId, wallet, caip10, vow, npub, did):
  200, settled, the price moved; the credential verifies offline with the pinned key (PyPI
  cryptography + rfc8785, and `conduct verify`); credential_hash equals keccak256 of
  rfc8785.dumps(credential) (PyPI rfc8785 + eth-utils); the subject is in its normal form
  (EIP-55 by eth-utils); the predicate is /profile's disclosure predicate; no number leaks;
- the same request again: identical bytes, not charged;
- a malformed subject of each form (and an unknown form and vow): 422 invalid-subject naming
  the member, and a raw-number request: 422 predicate-only naming the member; each sent with a
  valid payment that is never settled (balances unchanged, and the same payment then still buys
  a credential);
- the ERC-8004 example: ValidationRegistry (committed artifact) deployed on the same anvil,
  validationRequest(validator, agentId, requestURI, credential_hash) from the agent's owner and
  validationResponse(...) from the validator, both eth-account-signed raw transactions, the
  validator fetching the credential from requestURI and checking it first; then
  getValidationStatus(credential_hash) reads back what was sent.

usage: erc8004_e2e.py --anvil BIN --conduct BIN --contracts contracts/ --workdir DIR
Prints one line per check and exits 0 only when every check passed; leaves the erc8004-agentId
answer in DIR/answer.json and /pubkey's body in DIR/pubkey.json for the Rust side's own checks.
"""
import argparse, asyncio, base64, copy, json, os, secrets, subprocess, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import rfc8785
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from eth_account import Account
from eth_utils import keccak, to_checksum_address
from web3 import Web3
from x402.http.clients import x402HttpxClient

from x402_e2e import (ADDR, KEYS, PRICE, decode_challenge, header_for, make_client, serve_facilitator,
                      sign_3009, start_line, stop, trace)

# anvil's development accounts 5 (the validator) and 6 (the registry's deployer); test chain only.
VALIDATOR_KEY = "0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba"
DEPLOYER_KEY = "0x92db14e403b83dfe3df233f83dfa3a0d7096f21ca9b0d6d6b8d88b2b4ec1564e"
# NIP-19's example npub.
NPUB = "npub10elfcs4fr0l0r8af98jlmgdh9c8tcxjvz9qkw038js35mp4dma8qzvjptg"
# The identity registry an erc8004-agentId subject names (the test chain has none deployed; the
# validation registry below is built without one, so anyone may request).
IDENTITY = "0x8004a169fb4a3325136eb29fa0ceb6d2e539a432"
AGENT_ID = 7
PREDICATE = {"metric": "i_c_m", "band": "under_0.05"}
results = []


def check(name, ok, detail=""):
    results.append((name, bool(ok)))
    print(("ok:   " if ok else "FAIL: ") + name + ("" if ok else f" -- {detail}"), flush=True)


def verify_offline(cred, pk):
    """Ed25519 over RFC 8785 of the credential without signature, with the pinned key."""
    body = dict(cred)
    sig = base64.b64decode(body.pop("signature"))
    Ed25519PublicKey.from_public_bytes(base64.b64decode(pk["public_key"])).verify(sig, rfc8785.dumps(body))
    return cred.get("key_id") == pk["key_id"]


def independent_hash(cred):
    return "0x" + keccak(rfc8785.dumps(cred)).hex()


def serve_files(files):
    """A loopback HTTP server for the agent's published credential (its requestURI)."""
    class H(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_GET(self):
            body = files.get(self.path)
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body or b"")))
            self.end_headers()
            self.wfile.write(body or b"")

    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{srv.server_address[1]}"


def send_signed(w3, key, tx):
    """Sign with eth-account and send raw; returns the receipt."""
    acct = Account.from_key(key)
    tx = dict(tx, nonce=w3.eth.get_transaction_count(acct.address, "pending"), chainId=w3.eth.chain_id)
    # The estimate is exact for the state it was taken on; a margin, as wallets add, keeps a
    # transaction from running out of gas on a state that moved (a revert then says nothing).
    if "gas" in tx:
        tx["gas"] = tx["gas"] * 5 // 4
    signed = acct.sign_transaction(tx)
    return w3.eth.wait_for_transaction_receipt(w3.eth.send_raw_transaction(signed.raw_transaction))


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--anvil", required=True)
    ap.add_argument("--conduct", required=True)
    ap.add_argument("--contracts", required=True)
    ap.add_argument("--workdir", required=True)
    a = ap.parse_args()
    out_dir = os.path.join(a.contracts, "out")
    procs = []
    try:
        anvil = subprocess.Popen([a.anvil, "--host", "127.0.0.1", "--port", "0"], stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)
        procs.append(anvil)
        port = start_line(anvil, r"Listening on 127\.0\.0\.1:(\d+)").group(1)
        rpc = f"http://127.0.0.1:{port}"
        w3 = Web3(Web3.HTTPProvider(rpc))
        usd = json.load(open(os.path.join(out_dir, "TestUSD.json")))
        tx = w3.eth.contract(abi=usd["abi"], bytecode=usd["bytecode"]).constructor().transact({"from": ADDR["facilitator"]})
        token_addr = w3.eth.wait_for_transaction_receipt(tx).contractAddress
        token = w3.eth.contract(address=token_addr, abi=usd["abi"])
        w3.eth.wait_for_transaction_receipt(token.functions.mint(ADDR["payer"], 10_000_000).transact({"from": ADDR["facilitator"]}))
        bal = lambda who: token.functions.balanceOf(ADDR[who]).call()

        fac_url, _fac = serve_facilitator(rpc)
        cfg = os.path.join(a.workdir, "conduct.toml")
        with open(cfg, "w") as f:
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
             "--data", os.path.join(a.workdir, "data"), "--site", os.path.join(a.workdir, "site")],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        procs.append(proc)
        base = start_line(proc, r"listening on (http://\S+)").group(1)
        url = base + "/erc8004/validation"
        plain = httpx.AsyncClient(timeout=60)
        pk = (await plain.get(base + "/pubkey")).json()
        json.dump(pk, open(os.path.join(a.workdir, "pubkey.json"), "w"))
        vow = (await plain.post(base + "/vow", json={"text": "summarise documents for the user",
                                                      "agent": "erc8004-e2e", "cadence_hours": 24})).json()
        vow_id = vow.get("vow_id", "")

        def body(form, sid, n=40, **extra):
            return dict({"trace": trace(n), "predicate": PREDICATE, "subject": {"form": form, "id": sid}}, **extra)

        # 1. Unpaid: the challenge at the posted price, and the route is a paid resource.
        r = await plain.post(url, json=body("wallet", ADDR["payer"]))
        ch = decode_challenge(r) if "payment-required" in r.headers else {}
        check("unpaid: 402, empty body, the price in PAYMENT-REQUIRED",
              r.status_code == 402 and r.content == b"" and ch.get("accepts")
              and {x["amount"] for x in ch["accepts"]} == {str(PRICE)}
              and ch["resource"]["url"].endswith("/erc8004/validation"), f"{r.status_code} {ch}")
        x402doc = (await plain.get(base + "/.well-known/x402.json")).json()
        check("/.well-known/x402.json lists /erc8004/validation",
              any(x["resource"].endswith("/erc8004/validation") for x in x402doc["resources"]))
        accepted, resource = ch["accepts"][0], ch["resource"]

        # 2. A paid credential for every subject form, from the stock x402 client.
        subjects = {
            "erc8004-agentId": (f"eip155:31337:{IDENTITY}#{AGENT_ID}",
                                f"eip155:31337:{to_checksum_address(IDENTITY)}#{AGENT_ID}"),
            "wallet": (ADDR["payer"].lower(), to_checksum_address(ADDR["payer"])),
            "caip10": (f"eip155:31337:{ADDR['payer'].lower()}", f"eip155:31337:{to_checksum_address(ADDR['payer'])}"),
            "vow": (vow_id, vow_id),
            "npub": (NPUB.upper(), NPUB),
            "did": ("did:web:agent.example.com%3A8443:alice", "did:web:agent.example.com%3A8443:alice"),
        }
        client = make_client(token_addr)
        demo = (await plain.post(base + "/demo/profile",
                                 json=dict(trace(40), disclosure={"predicate": PREDICATE}))).json()
        answers = {}
        for i, (form, (given, normal)) in enumerate(subjects.items()):
            before = (bal("payer"), bal("pay_to"))
            async with x402HttpxClient(client, timeout=60) as http:
                paid = await http.post(url, json=body(form, given))
            rec = json.loads(base64.b64decode(paid.headers.get("payment-response", "e30=")))
            after = (bal("payer"), bal("pay_to"))
            ans = paid.json() if paid.status_code == 200 else {}
            answers[form] = (paid, ans)
            cred = ans.get("credential", {})
            check(f"{form}: paid 200, settled, the price moved once",
                  paid.status_code == 200 and rec.get("success") is True
                  and before[0] - after[0] == PRICE and after[1] - before[1] == PRICE,
                  f"{paid.status_code} {paid.text[:300]} {rec}")
            try:
                key_ok = verify_offline(cred, pk)
                check(f"{form}: the credential verifies offline with the pinned key", key_ok)
            except Exception as e:  # noqa: BLE001
                check(f"{form}: the credential verifies offline with the pinned key", False, repr(e))
            check(f"{form}: credential_hash == keccak256(rfc8785.dumps(credential)) (rfc8785 + eth-utils)",
                  ans.get("credential_hash") == independent_hash(cred)
                  and ans.get("how_to_use", {}).get("request_hash") == ans.get("credential_hash"),
                  f"{ans.get('credential_hash')} vs {independent_hash(cred)}")
            check(f"{form}: the subject in its normal form",
                  cred.get("subject") == {"form": form, "id": normal}, json.dumps(cred.get("subject")))
            text = json.dumps(cred)
            check(f"{form}: /profile's disclosure predicate, and no number of the profile",
                  cred.get("type") == "conduct.erc8004-validation/v1"
                  and cred.get("predicate") == demo.get("predicate")
                  and all(f'"{k}"' not in text for k in ("profile", "adjusted", "bits", "ami", "emi", "p", "table")),
                  f"{cred.get('predicate')} vs {demo.get('predicate')}")
        agent = answers["erc8004-agentId"][1].get("how_to_use", {}).get("agent", {})
        check("erc8004-agentId: how_to_use names the agentId and identity registry",
              agent == {"chain_id": "31337", "identity_registry": to_checksum_address(IDENTITY),
                        "agent_id": str(AGENT_ID)}, json.dumps(agent))

        # `conduct verify` (the service's own offline verifier) on a saved credential, and a
        # tampered copy.
        cred = answers["did"][1]["credential"]
        good, bad = os.path.join(a.workdir, "cred.json"), os.path.join(a.workdir, "tampered.json")
        json.dump(cred, open(good, "w"))
        t = copy.deepcopy(cred)
        t["subject"]["id"] = "did:web:someone.else"
        json.dump(t, open(bad, "w"))
        v1 = subprocess.run([a.conduct, "verify", good, "--pubkey", pk["vkey"]], capture_output=True, text=True)
        v2 = subprocess.run([a.conduct, "verify", bad, "--pubkey", pk["vkey"]], capture_output=True, text=True)
        check("conduct verify: the credential verifies, a changed subject does not",
              v1.returncode == 0 and v2.returncode != 0, f"{v1.returncode} {v1.stderr} / {v2.returncode}")

        # 3. The same request again: the identical bytes, not charged.
        first = answers["wallet"][0]
        before = bal("payer")
        async with x402HttpxClient(client, timeout=60) as http:
            again = await http.post(url, json=body("wallet", subjects["wallet"][0]))
        check("the same request within 24 h: identical bytes, Idempotent-Replayed, not charged",
              again.status_code == 200 and again.content == first.content and bal("payer") == before
              and again.headers.get("idempotent-replayed") == "true", f"{again.status_code} {again.text[:200]}")

        # 4. Refusals, each sent with one valid payment that must never settle.
        s, auth = sign_3009(KEYS["payer"], token_addr, ADDR["pay_to"], PRICE, 0, int(time.time()) + 600,
                            secrets.token_bytes(32))
        pay = {"PAYMENT-SIGNATURE": header_for(accepted, s, auth, resource)}
        before = (bal("payer"), bal("pay_to"))
        malformed = {
            "erc8004-agentId": f"eip155:31337:{IDENTITY}",  # no #agentId
            "wallet": "0x" + "g" * 40,
            "caip10": "eip155:31337",
            "vow": vow_id.upper(),
            "npub": NPUB[:-1] + ("q" if NPUB[-1] != "q" else "p"),  # checksum broken
            "did": "did:web:example.com/path",
        }
        for form, bad_id in malformed.items():
            r = await plain.post(url, json=body(form, bad_id), headers=pay)
            p = r.json() if "problem+json" in r.headers.get("content-type", "") else {}
            check(f"malformed {form} subject: 422 invalid-subject naming /subject/id, nothing charged",
                  r.status_code == 422 and p.get("type", "").endswith("invalid-subject")
                  and p.get("errors", [{}])[0].get("pointer") == "/subject/id"
                  and (bal("payer"), bal("pay_to")) == before, f"{r.status_code} {r.text[:300]}")
        for name, b, pointer, kind in [
            ("an unknown form", body("ens", "alice.eth"), "/subject/form", "invalid-subject"),
            ("a vow that does not exist", body("vow", "0123456789abcdef"), "/subject/id", "invalid-subject"),
            ("raw numbers: full: true", body("wallet", ADDR["payer"], full=True), "/full", "predicate-only"),
            ("raw numbers: numbers", body("wallet", ADDR["payer"], numbers=True), "/numbers", "predicate-only"),
            ("raw numbers: a full disclosure", body("wallet", ADDR["payer"], disclosure={"mode": "full"}),
             "/disclosure", "predicate-only"),
            ("raw numbers: no predicate", {"trace": trace(40), "subject": {"form": "wallet", "id": ADDR["payer"]}},
             "/predicate", "predicate-only"),
            ("raw numbers: predicate.full", dict(body("wallet", ADDR["payer"]), predicate=dict(PREDICATE, full=True)),
             "/predicate/full", "predicate-only"),
        ]:
            r = await plain.post(url, json=b, headers=pay)
            p = r.json() if "problem+json" in r.headers.get("content-type", "") else {}
            check(f"refused: {name}: 422 {kind} naming {pointer}, nothing charged",
                  r.status_code == 422 and p.get("type", "").endswith(kind)
                  and p.get("errors", [{}])[0].get("pointer") == pointer
                  and (bal("payer"), bal("pay_to")) == before, f"{r.status_code} {r.text[:300]}")
        r = await plain.post(url, json=body("did", "did:example:paid-after-refusals"), headers=pay)
        check("that payment was never claimed: it still buys one credential",
              r.status_code == 200 and before[0] - bal("payer") == PRICE, f"{r.status_code} {r.text[:200]}")

        # 5. The ERC-8004 example: the agent's owner asks a validator to validate, with the
        #    credential hash as requestHash; the validator checks the credential and answers.
        reg_art = json.load(open(os.path.join(out_dir, "ValidationRegistry.json")))
        deploy = w3.eth.contract(abi=reg_art["abi"], bytecode=reg_art["bytecode"]).constructor(
            "0x0000000000000000000000000000000000000000").build_transaction(
            {"from": Account.from_key(DEPLOYER_KEY).address})
        reg_addr = send_signed(w3, DEPLOYER_KEY, deploy).contractAddress
        reg = w3.eth.contract(address=reg_addr, abi=reg_art["abi"])
        paid, ans = answers["erc8004-agentId"]
        json.dump(ans, open(os.path.join(a.workdir, "answer.json"), "w"), indent=2)
        cred, hash_hex = ans["credential"], ans["credential_hash"]
        request_hash = bytes.fromhex(hash_hex[2:])
        files = {"/credential.json": json.dumps(cred).encode()}
        request_uri = serve_files(files) + "/credential.json"
        owner = Account.from_key(KEYS["payer"]).address
        validator = Account.from_key(VALIDATOR_KEY).address
        agent_id = int(ans["how_to_use"]["agent"]["agent_id"])
        rq = send_signed(w3, KEYS["payer"], reg.functions.validationRequest(
            validator, agent_id, request_uri, request_hash).build_transaction({"from": owner}))
        ev = reg.events.ValidationRequest().process_receipt(rq)
        check("validationRequest(validator, agentId, requestURI, credential_hash) from the owner: mined, event",
              rq.status == 1 and len(ev) == 1 and ev[0].args.requestHash == request_hash
              and ev[0].args.agentId == agent_id and ev[0].args.requestURI == request_uri, str(rq.status))
        # The validator: fetch requestURI, verify offline, recompute the hash, answer.
        fetched = httpx.get(request_uri).json()
        try:
            sig_ok = verify_offline(fetched, pk)
        except Exception:  # noqa: BLE001
            sig_ok = False
        hash_ok = independent_hash(fetched) == "0x" + request_hash.hex()
        check("the validator fetches requestURI: the credential verifies and hashes to requestHash",
              sig_ok and hash_ok)
        score = 100 if (sig_ok and hash_ok and fetched["predicate"]["clears"] is True) else 0
        response_doc = {"requestHash": hash_hex, "credential_verified": sig_ok and hash_ok,
                        "clears": fetched["predicate"]["clears"], "response": score}
        response_hash = keccak(rfc8785.dumps(response_doc))
        files["/response.json"] = json.dumps(response_doc).encode()
        response_uri = request_uri.replace("/credential.json", "/response.json")
        tag = "conduct.erc8004-validation/v1"
        rs = send_signed(w3, VALIDATOR_KEY, reg.functions.validationResponse(
            request_hash, score, response_uri, response_hash, tag).build_transaction({"from": validator}))
        check("validationResponse(requestHash, response, responseURI, responseHash, tag) from the validator: mined",
              rs.status == 1 and len(reg.events.ValidationResponse().process_receipt(rs)) == 1,
              f"status {rs.status}, gas used {rs.gasUsed} of {w3.eth.get_transaction(rs.transactionHash)['gas']}, "
              f"block {rs.blockNumber}, score {score}, "
              f"credential verified {sig_ok and hash_ok}")
        st = reg.functions.getValidationStatus(request_hash).call()
        block_time = w3.eth.get_block(rs.blockNumber).timestamp
        check("getValidationStatus(credential_hash) reads back what was sent",
              st[0] == validator and st[1] == agent_id and st[2] == score and st[3] == response_hash
              and st[4] == tag and st[5] == block_time, str(st))
        check("getAgentValidations(agentId) lists the credential hash",
              reg.functions.getAgentValidations(agent_id).call() == [request_hash])
        # A stranger cannot answer for the validator.
        try:
            r = send_signed(w3, DEPLOYER_KEY, reg.functions.validationResponse(
                request_hash, 0, "", b"\0" * 32, "").build_transaction(
                {"from": Account.from_key(DEPLOYER_KEY).address, "gas": 200_000}))
            stranger = f"mined with status {r.status}"
            refused = r.status == 0
        except Exception as e:  # noqa: BLE001 (a node may refuse it before mining)
            stranger, refused = repr(e), True
        check("a response from anyone but the named validator is refused (NotValidator)",
              refused and reg.functions.getValidationStatus(request_hash).call()[2] == score, stranger)
        await plain.aclose()
    finally:
        stop(procs)
    passed = sum(1 for _, ok in results if ok)
    print(f"erc8004 e2e: {passed} checks passed, {len(results) - passed} failed")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
