"""The service's Nostr profile (``hive/profile.json``; library/NOSTR.md, "/hive/profile").

The one JSON file of the tree that is not a signed snapshot: a NIP-01 kind-0 event, exactly
the members NIP-01 gives, whose ``id`` is the SHA-256 of the compact JSON
``[0, pubkey, created_at, kind, tags, content]`` and whose ``sig`` is a BIP-340 Schnorr
signature over the 32 id bytes. Verified here in plain integer arithmetic (BIP-340's own
verification algorithm), so no secp256k1 library is needed.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Mapping

from ._codec import JsonObject, fail, parse_object
from .errors import HashMismatchError, SignatureError

__all__ = ["verify_nostr_event", "bip340_verify"]

_P = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEFFFFFC2F
_N = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141
_G = (
    0x79BE667EF9DCBBAC55A06295CE870B07029BFCDB2DCE28D959F2815B16F81798,
    0x483ADA7726A3C4655DA4FBFC0E1108A8FD17B448A68554199C47D08FFB10D4B8,
)
_HEX = {32: re.compile(r"[0-9a-f]{64}\Z"), 64: re.compile(r"[0-9a-f]{128}\Z")}
_MEMBERS = {"id", "pubkey", "created_at", "kind", "tags", "content", "sig"}

Point = tuple[int, int] | None


def _add(a: Point, b: Point) -> Point:
    if a is None:
        return b
    if b is None:
        return a
    if a[0] == b[0] and a[1] != b[1]:
        return None
    if a == b:
        lam = 3 * a[0] * a[0] * pow(2 * a[1], _P - 2, _P) % _P
    else:
        lam = (b[1] - a[1]) * pow(b[0] - a[0], _P - 2, _P) % _P
    x = (lam * lam - a[0] - b[0]) % _P
    return (x, (lam * (a[0] - x) - a[1]) % _P)


def _mul(p: Point, k: int) -> Point:
    r: Point = None
    while k:
        if k & 1:
            r = _add(r, p)
        p = _add(p, p)
        k >>= 1
    return r


def _tagged(tag: str, data: bytes) -> bytes:
    t = hashlib.sha256(tag.encode()).digest()
    return hashlib.sha256(t + t + data).digest()


def bip340_verify(pubkey: bytes, msg: bytes, sig: bytes) -> bool:
    """BIP-340 ``Verify(pk, m, sig)`` for a 32-byte x-only key and a 64-byte signature."""
    if len(pubkey) != 32 or len(sig) != 64:
        return False
    x = int.from_bytes(pubkey, "big")
    if x >= _P:
        return False
    c = (pow(x, 3, _P) + 7) % _P
    y = pow(c, (_P + 1) // 4, _P)
    if y * y % _P != c:
        return False
    point = (x, y if y % 2 == 0 else _P - y)
    r = int.from_bytes(sig[:32], "big")
    s = int.from_bytes(sig[32:], "big")
    if r >= _P or s >= _N:
        return False
    e = int.from_bytes(_tagged("BIP0340/challenge", sig[:32] + pubkey + msg), "big") % _N
    rr = _add(_mul(_G, s), _mul(point, _N - e))
    return rr is not None and rr[1] % 2 == 0 and rr[0] == r


def verify_nostr_event(data: bytes | str | Mapping[str, Any], subject: str = "hive/profile.json") -> JsonObject:
    """Verify a NIP-01 kind-0 event: exactly NIP-01's members, its id and its BIP-340
    signature. Returns the event."""
    ev = parse_object(dict(data) if isinstance(data, Mapping) else data, subject)
    if set(ev) != _MEMBERS:
        fail(subject, f"members {sorted(ev)} are not exactly NIP-01's {sorted(_MEMBERS)}")
    if ev["kind"] != 0 or isinstance(ev["kind"], bool):
        fail(subject, f"kind {ev['kind']!r}, not 0")
    for m, n in (("id", 32), ("pubkey", 32), ("sig", 64)):
        if not isinstance(ev[m], str) or not _HEX[n].match(ev[m]):
            fail(subject, f"{m} is not {2 * n} lower-case hex digits")
    if not isinstance(ev["created_at"], int) or isinstance(ev["created_at"], bool) or ev["created_at"] < 0:
        fail(subject, "created_at is not a non-negative integer")
    if not isinstance(ev["content"], str) or not isinstance(ev["tags"], list):
        fail(subject, "content is not a string or tags not an array")
    ser = json.dumps(
        [0, ev["pubkey"], ev["created_at"], ev["kind"], ev["tags"], ev["content"]],
        separators=(",", ":"),
        ensure_ascii=False,
    ).encode("utf-8")
    eid = hashlib.sha256(ser).hexdigest()
    if eid != ev["id"]:
        raise HashMismatchError(subject, f"id {ev['id']} is not the NIP-01 hash of the event {eid}")
    if not bip340_verify(bytes.fromhex(ev["pubkey"]), bytes.fromhex(eid), bytes.fromhex(ev["sig"])):
        raise SignatureError(subject, "the BIP-340 signature does not verify over the id")
    return ev
