"""Independent offline verifier: RFC 8785 (Trail of Bits' rfc8785) + Ed25519 (pyca/cryptography).

usage: verify_attestation.py ATTESTATION.json PUBKEY_B64 [TRACE.json]
Exit 0 when the signature verifies (and, with TRACE.json, trace_sha256 matches); 1 otherwise.
"""
import base64, hashlib, json, sys

import rfc8785
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey


def main():
    doc = json.load(open(sys.argv[1], encoding="utf-8"))
    key = Ed25519PublicKey.from_public_bytes(base64.b64decode(sys.argv[2]))
    sig = base64.b64decode(doc.pop("signature"))
    try:
        key.verify(sig, rfc8785.dumps(doc))
    except InvalidSignature:
        print("FAIL: bad signature")
        return 1
    if len(sys.argv) > 3:
        trace = json.load(open(sys.argv[3], encoding="utf-8"))
        body = {"context_key": trace["context_key"], "turns": trace["turns"]}
        h = hashlib.sha256(rfc8785.dumps(body)).hexdigest()
        if h != doc["trace_sha256"]:
            print(f"FAIL: trace_sha256 {doc['trace_sha256']} != recomputed {h}")
            return 1
    print("OK")
    return 0


sys.exit(main())
