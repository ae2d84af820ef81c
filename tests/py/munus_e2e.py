"""The wallets of the quest board's end-to-end test (tests/tests/munus.rs): PyPI eth-account,
a third-party signer, signs the exact EIP-191 texts the service serves (`GET /vow/message`,
`GET /play/message`) with `sign_message(encode_defunct(text=...))`, as an agent's wallet would,
and recovers a signer from a text and a signature, independently of the service's recovery.

It runs as a co-process: one JSON request per line on stdin, one JSON answer per line on
stdout (so the test pays Python's start-up once, not once per signature):

  {"op": "address", "key": "0x<64 hex>"}                  -> {"address": "0x<EIP-55>"}
  {"op": "sign", "key": "0x<64 hex>", "text": "..."}      -> {"address": ..., "signature": "0x<130 hex>"}
  {"op": "recover", "text": "...", "signature": "0x.."}   -> {"address": "0x<EIP-55>"}

A request it cannot answer gets {"error": "..."}; the test fails on it.

usage: munus_e2e.py wallet
"""
import json
import sys

from eth_account import Account
from eth_account.messages import encode_defunct


def answer(req):
    op = req.get("op")
    if op == "address":
        return {"address": Account.from_key(req["key"]).address}
    if op == "sign":
        acct = Account.from_key(req["key"])
        sig = acct.sign_message(encode_defunct(text=req["text"])).signature.hex()
        return {"address": acct.address, "signature": "0x" + sig.removeprefix("0x")}
    if op == "recover":
        return {"address": Account.recover_message(encode_defunct(text=req["text"]),
                                                   signature=req["signature"])}
    raise ValueError(f"unknown op {op!r}")


def main():
    if sys.argv[1:] != ["wallet"]:
        print(__doc__, file=sys.stderr)
        return 2
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            out = answer(json.loads(line))
        except Exception as e:  # reported to the test, which fails on it
            out = {"error": f"{type(e).__name__}: {e}"}
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
