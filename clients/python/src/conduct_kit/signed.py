"""Signed objects: attestations, records, snapshots, credentials (library/ATTESTATION.md).

Every JSON object the service signs is checked the same way:

1. parse it as JSON (strictly: no duplicate member, no ``NaN``);
2. remove ``signature`` (base64 of 64 bytes; nothing else is removed, so ``key_id`` and the
   ``scope`` statement are inside the signed body);
3. canonicalize the rest with RFC 8785;
4. verify the Ed25519 signature over those bytes with the pinned key;
5. check that ``key_id`` is the pinned key's id.

The OpenAPI document carries its signature and key id as ``x-signature`` and ``x-key-id``
(library/MIRRORS.md, "Checking a mirror"), the only members an OpenAPI document may add.
"""

from __future__ import annotations

import hashlib
from typing import Any, Mapping

from Crypto.Hash import keccak

from ._codec import JsonObject, b64decode_strict, canonical, fail, hex64, member, parse_object
from .errors import HashMismatchError, KeyMismatchError, SignatureError, TypeMismatchError
from .keys import KeyLike, PinnedKey
from .meter import check_meter

__all__ = [
    "SCOPE",
    "SCOPE_KEYS",
    "verify_signed",
    "verify_attestation",
    "verify_credential",
    "verify_openapi",
    "trace_sha256",
    "credential_hash",
    "leaf_bytes",
]

#: The scope statement every signed ``conduct.*`` body carries: exactly these four members and
#: texts (library/ATTESTATION.md, "The scope statement").
SCOPE: dict[str, str] = {
    "no_meter_is_immune": (
        "An agent optimizing against this output can learn to write clean traces. A low coupling is not proof of good conduct."
    ),
    "not_trade_advice": (
        "Not trade advice: no signal, no market model, no risk sizing."
    ),
    "off_meter_blind_spot": (
        "Only channels present in the trace are read. What the agent did off the trace is outside the meter."
    ),
    "trace_provenance_is_the_callers": (
        "The service attests that it scored this trace. It does not attest that the trace faithfully records what the agent did."
    ),
}

#: The four members of :data:`SCOPE`.
SCOPE_KEYS = frozenset(SCOPE)

ATTESTATION_TYPE = "conduct.attestation/v1"
CREDENTIAL_TYPE = "conduct.erc8004-validation/v1"


def _check_scope(doc: JsonObject, subject: str) -> None:
    scope = member(doc, "scope", dict, subject)
    missing = sorted(SCOPE_KEYS - scope.keys())
    if missing:
        fail(subject, f"scope statement lacks {', '.join(missing)}")
    extra = sorted(scope.keys() - SCOPE_KEYS)
    if extra:
        fail(subject, f"scope statement has members it never carries: {', '.join(extra)}")
    for k in sorted(SCOPE_KEYS):
        if scope[k] != SCOPE[k]:
            fail(subject, f"scope statement {k!r} is not the published text (library/ATTESTATION.md)")


def verify_signed(
    data: bytes | str | Mapping[str, Any],
    key: KeyLike,
    *,
    expected_type: str | None = None,
    subject: str = "signed object",
    require_scope: bool = True,
    signature_member: str = "signature",
    key_id_member: str = "key_id",
) -> JsonObject:
    """Verify one signed object and return it (``signature`` included).

    Args:
        data: the object's bytes as served (or its text, or an already parsed object).
        key: the pinned key (:class:`~conduct_kit.keys.PinnedKey`, vkey or ``/pubkey`` doc).
        expected_type: when given, the object's ``type`` must be exactly this.
        subject: how errors name the object.
        require_scope: require the four-text ``scope`` statement (every signed body of the
            service carries it).
        signature_member, key_id_member: the members holding the signature and key id.

    Raises:
        MalformedError: not a JSON object, or a member missing or of the wrong shape.
        KeyMismatchError: ``key_id`` is not the pinned key's id.
        SignatureError: the signature does not verify over the RFC 8785 bytes.
        TypeMismatchError: ``type`` is not ``expected_type``.
    """
    pin = PinnedKey.parse(key)
    doc = parse_object(dict(data) if isinstance(data, Mapping) else data, subject)
    sig_text = member(doc, signature_member, str, subject)
    sig = b64decode_strict(sig_text, subject, signature_member, 64)
    kid = member(doc, key_id_member, str, subject)
    if kid != pin.key_id:
        raise KeyMismatchError(subject, f"{key_id_member} {kid!r} is not the pinned key's id {pin.key_id}")
    body = {k: v for k, v in doc.items() if k != signature_member}
    if not pin.verify(sig, canonical(body, subject)):
        raise SignatureError(subject, "the Ed25519 signature does not verify over its RFC 8785 bytes")
    if expected_type is not None and doc.get("type") != expected_type:
        raise TypeMismatchError(subject, f"type {doc.get('type')!r} is not {expected_type!r}")
    if require_scope:
        _check_scope(doc, subject)
    return doc


def trace_sha256(trace: Mapping[str, Any]) -> str:
    """``trace_sha256``: the hex SHA-256 of the RFC 8785 bytes of ``{context_key, turns}``
    (any other member of ``trace``, such as ``disclosure`` or ``vow_id``, left out)."""
    if "context_key" not in trace or "turns" not in trace:
        fail("trace", "a trace has context_key and turns")
    body = {"context_key": trace["context_key"], "turns": trace["turns"]}
    return hashlib.sha256(canonical(body, "trace")).hexdigest()


def _check_trace(doc: JsonObject, trace: Mapping[str, Any] | None, subject: str) -> None:
    got = hex64(doc.get("trace_sha256"), subject, "trace_sha256")
    if trace is not None:
        want = trace_sha256(trace)
        if got != want:
            raise HashMismatchError(subject, f"trace_sha256 {got} is not the trace's hash {want}")


def verify_attestation(
    data: bytes | str | Mapping[str, Any],
    key: KeyLike,
    *,
    trace: Mapping[str, Any] | None = None,
    meter: str | None = None,
) -> JsonObject:
    """Verify a ``conduct.attestation/v1`` (library/ATTESTATION.md) and return it.

    With ``trace`` (your own copy of what was scored), ``trace_sha256`` is recomputed and
    compared. The ``meter`` block must be exactly that of a meter the kit knows
    (:data:`~conduct_kit.meter.KNOWN_METERS`) and the profile's quantities must have its
    shape (:func:`~conduct_kit.meter.check_meter`); with ``meter`` (``"meter/1"`` or
    ``"meter/2"``), it must be that meter. Raises a
    :class:`~conduct_kit.errors.VerificationError` subclass on any failure
    (:class:`~conduct_kit.errors.MeterError` for the meter).
    """
    subject = "attestation"
    doc = verify_signed(data, key, expected_type=ATTESTATION_TYPE, subject=subject)
    _check_trace(doc, trace, subject)
    member(doc, "n_turns", int, subject)
    member(doc, "issued_at", str, subject)
    if ("profile" in doc) == ("predicate" in doc):
        fail(subject, "an attestation carries exactly one of 'profile' and 'predicate'")
    check_meter(doc, subject, meter=meter)
    return doc


def keccak256(data: bytes) -> bytes:
    """Ethereum's Keccak-256 (not SHA3-256)."""
    h = keccak.new(digest_bits=256)
    h.update(data)
    return h.digest()


def credential_hash(credential: Mapping[str, Any]) -> str:
    """``credential_hash``: ``0x`` + hex Keccak-256 of the RFC 8785 bytes of the whole signed
    credential, ``signature`` included (library/ERC8004.md, "Exactly which bytes are hashed")."""
    return "0x" + keccak256(canonical(dict(credential), "credential")).hex()


def verify_credential(
    data: bytes | str | Mapping[str, Any],
    key: KeyLike,
    *,
    credential_hash_hex: str | None = None,
    trace: Mapping[str, Any] | None = None,
    meter: str | None = None,
) -> JsonObject:
    """Verify an ERC-8004 validation credential (library/ERC8004.md, "Verifying a credential
    offline") and return the credential.

    ``data`` is the credential, or the whole answer of ``POST /erc8004/validation``
    (``{credential, credential_hash, ...}``), whose ``credential_hash`` is then checked too.
    ``credential_hash_hex`` (e.g. the ``requestHash`` read on chain) is checked when given.
    Its ``meter`` block is checked as an attestation's (with ``meter``, it must be that one).
    """
    subject = "credential"
    outer = parse_object(dict(data) if isinstance(data, Mapping) else data, subject)
    hashes: list[str] = []
    if "credential" in outer and isinstance(outer["credential"], dict):
        if "credential_hash" in outer:
            hashes.append(member(outer, "credential_hash", str, subject))
        outer = outer["credential"]
    if credential_hash_hex is not None:
        hashes.append(credential_hash_hex)
    doc = verify_signed(outer, key, expected_type=CREDENTIAL_TYPE, subject=subject)
    _check_trace(doc, trace, subject)
    pred = member(doc, "predicate", dict, subject)
    for m in ("metric", "band", "clears"):
        if m not in pred:
            fail(subject, f"predicate lacks {m!r}")
    member(doc, "subject", dict, subject)
    check_meter(doc, subject, meter=meter)
    got = credential_hash(doc)
    for want in hashes:
        if want != got:
            raise HashMismatchError(subject, f"credential_hash {want} is not keccak256(JCS(credential)) {got}")
    return doc


def verify_openapi(data: bytes | str | Mapping[str, Any], key: KeyLike) -> JsonObject:
    """Verify the signed OpenAPI document (``x-signature`` over the RFC 8785 bytes of the
    document without it; ``x-key-id`` inside)."""
    return verify_signed(
        data,
        key,
        subject="openapi.json",
        require_scope=False,
        signature_member="x-signature",
        key_id_member="x-key-id",
    )


def leaf_bytes(record: Mapping[str, Any]) -> bytes:
    """A log record's leaf: the RFC 8785 bytes of the signed object, ``signature`` included
    (library/VOWS.md, "Record formats")."""
    return canonical(dict(record), "record")
