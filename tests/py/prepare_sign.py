"""Sign what /prepare hands out with a real wallet library (PyPI eth-account), the way a
caller's own wallet would: the service holds no key, so this script is the only place a key is.

  prepare_sign.py send --rpc URL --key HEX --answer FILE
      Read a /prepare answer (conduct.prepared/v1) from FILE and, for each transaction in the
      given order: check that the key's address is the transaction's `from`; for an approve with
      `skip_if`, read its `check` call independently (eth_call) and drop the transaction when the
      allowance already covers the amount; otherwise fill the nonce, gas and fees from the node,
      sign it with eth-account (Account.sign_transaction), send it raw (eth_sendRawTransaction)
      and wait for its receipt before the next one. Prints one JSON object:
      {"sent": [{"step", "skipped", "holds_read", "holds_served", "hash", "status", "gas_used"}]}
      and exits 1 if any transaction reverted or could not be sent.

  prepare_sign.py sign-message --key HEX --text-file FILE
      EIP-191 personal_sign of the file's exact UTF-8 text (encode_defunct); prints 0x + 130 hex.
"""
import argparse, json, sys

from eth_account import Account
from eth_account.messages import encode_defunct
from web3 import Web3


def send(args):
    w3 = Web3(Web3.HTTPProvider(args.rpc))
    acct = Account.from_key(args.key)
    answer = json.load(open(args.answer))
    out, ok = [], True
    for tx in answer["txs"]:
        row = {"step": tx["step"], "skipped": False, "holds_served": None, "holds_read": None}
        if tx["from"].lower() != acct.address.lower():
            raise SystemExit(f"step {tx['step']}: from {tx['from']} is not this key's {acct.address}")
        if tx["to"] is None or tx["data"] is None:
            raise SystemExit(f"step {tx['step']}: to or data is null (not deployed here); nothing to sign")
        skip = tx.get("skip_if")
        if skip is not None:
            row["holds_served"] = skip["holds"]
            got = w3.eth.call({"to": Web3.to_checksum_address(skip["check"]["to"]), "data": skip["check"]["data"]})
            allowance = int.from_bytes(bytes(got), "big")
            row["holds_read"] = allowance >= int(skip["amount"])
            if row["holds_read"]:
                row["skipped"] = True
                out.append(row)
                continue
        assert tx["value"] == "0"
        chain_id = w3.eth.chain_id
        if tx["chain_id"] != chain_id:
            raise SystemExit(f"step {tx['step']}: chain_id {tx['chain_id']} but the node is {chain_id}")
        call = {
            "from": acct.address,
            "to": Web3.to_checksum_address(tx["to"]),
            "data": tx["data"],
            "value": 0,
        }
        base = w3.eth.get_block("latest")["baseFeePerGas"]
        signed = acct.sign_transaction({
            **call,
            "chainId": chain_id,
            "nonce": w3.eth.get_transaction_count(acct.address, "pending"),
            "gas": w3.eth.estimate_gas(call) * 2,
            "maxPriorityFeePerGas": 1_000_000_000,
            "maxFeePerGas": base * 2 + 1_000_000_000,
            "type": 2,
        })
        h = w3.eth.send_raw_transaction(signed.raw_transaction)
        r = w3.eth.wait_for_transaction_receipt(h, timeout=30)
        row.update({"hash": "0x" + bytes(h).hex().removeprefix("0x"), "status": r["status"], "gas_used": r["gasUsed"]})
        out.append(row)
        if r["status"] != 1:
            ok = False
            break
    print(json.dumps({"sent": out}))
    sys.exit(0 if ok else 1)


def sign_message(args):
    text = open(args.text_file, encoding="utf-8").read()
    sig = Account.from_key(args.key).sign_message(encode_defunct(text=text)).signature
    print("0x" + bytes(sig).hex().removeprefix("0x"))


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("send")
    s.add_argument("--rpc", required=True)
    s.add_argument("--key", required=True)
    s.add_argument("--answer", required=True)
    m = sub.add_parser("sign-message")
    m.add_argument("--key", required=True)
    m.add_argument("--text-file", required=True)
    args = ap.parse_args()
    {"send": send, "sign-message": sign_message}[args.cmd](args)


if __name__ == "__main__":
    main()
