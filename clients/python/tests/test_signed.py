"""Offline: signed objects (library/ATTESTATION.md) and ERC-8004 credentials (ERC8004.md)."""

from __future__ import annotations

import base64
import json

import pytest
import rfc8785
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from conduct_kit import (
    HashMismatchError,
    KeyMismatchError,
    MalformedError,
    PinnedKey,
    SignatureError,
    TypeMismatchError,
    VerificationError,
    credential_hash,
    key_id_for,
    trace_sha256,
    verify_attestation,
    verify_credential,
    verify_signed,
)

from chains import SCOPE
from conftest import accepts, field_mutations, fixture_bytes, fixture_json, flips


def test_the_pubkey_fixture_pins_and_round_trips(fkey: PinnedKey) -> None:
    doc = fixture_json("pubkey.json")
    assert fkey.vkey == doc["vkey"]
    assert PinnedKey.parse(doc["vkey"]) == fkey
    assert fkey.key_id == key_id_for(doc["name"], base64.b64decode(doc["public_key"]))
    verify_signed(fixture_bytes("pubkey.json"), fkey, expected_type="conduct.pubkey/v1")


def test_a_vkey_whose_id_does_not_match_its_key_is_refused(fkey: PinnedKey) -> None:
    name, kid, data = fkey.vkey.rsplit("+", 2)
    bad = f"{name}+{'0' * 8 if kid != '0' * 8 else '1' * 8}+{data}"
    with pytest.raises(KeyMismatchError):
        PinnedKey.from_vkey(bad)
    with pytest.raises(KeyMismatchError):
        PinnedKey.from_vkey(f"other.example/log+{kid}+{data}")
    with pytest.raises(MalformedError):
        PinnedKey.from_vkey("not a vkey")


def test_a_vkey_is_read_from_the_left_as_its_key_data_may_hold_a_plus() -> None:
    while True:  # a key whose base64 (after the 0x01 byte) holds '+': about 3 in 4 keys do
        pk = Ed25519PrivateKey.generate().public_key().public_bytes_raw()
        if "+" in base64.b64encode(b"\x01" + pk).decode():
            break
    pin = PinnedKey("localhost:8402/log", pk)
    assert "+" in pin.vkey.split("+", 2)[2]
    assert PinnedKey.from_vkey(pin.vkey) == pin


def test_a_real_paid_attestation_verifies_with_its_trace_hash(fkey: PinnedKey) -> None:
    att = verify_attestation(fixture_bytes("attestation.json"), fkey)
    assert att["type"] == "conduct.attestation/v1" and att["key_id"] == fkey.key_id
    with pytest.raises(HashMismatchError):
        verify_attestation(fixture_bytes("attestation.json"), fkey,
                           trace={"context_key": "monitored", "turns": []})


def test_every_changed_byte_of_an_attestation_is_refused(fkey: PinnedKey) -> None:
    data = fixture_bytes("attestation.json")
    verify_attestation(data, fkey)
    accepted = []
    n = 0
    for i, m, bad in flips(data):
        n += 1
        try:
            verify_attestation(bad, fkey)
        except VerificationError:
            continue
        accepted.append((i, m, bad[max(0, i - 10): i + 10]))
    assert n == 3 * len(data) and not accepted, accepted[:5]


def test_every_changed_field_of_an_attestation_is_refused(fkey: PinnedKey) -> None:
    doc = fixture_json("attestation.json")
    accepted, n = [], 0
    for what, changed in field_mutations(doc):
        n += 1
        try:
            verify_attestation(rfc8785.dumps(changed), fkey)
        except VerificationError:
            continue
        accepted.append(what)
    assert n > 100 and not accepted, accepted


def test_refusals_are_typed(fkey: PinnedKey) -> None:
    doc = fixture_json("attestation.json")
    with pytest.raises(KeyMismatchError):
        verify_attestation(dict(doc, key_id="00000000"), fkey)
    with pytest.raises(SignatureError):
        verify_attestation(dict(doc, n_turns=doc["n_turns"] + 1), fkey)
    with pytest.raises(MalformedError):
        verify_attestation({k: v for k, v in doc.items() if k != "signature"}, fkey)
    with pytest.raises(MalformedError, match="canonical base64"):
        s = doc["signature"]
        alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
        twin = s[:-3] + alphabet[alphabet.index(s[-3]) ^ 1] + s[-2:]
        assert base64.b64decode(twin) == base64.b64decode(s)  # the same 64 bytes, spelled otherwise
        verify_attestation(dict(doc, signature=twin), fkey)
    with pytest.raises(MalformedError, match="duplicate"):
        raw = fixture_bytes("attestation.json")
        verify_attestation(raw[:-1] + b',"n_turns":1}', fkey)
    with pytest.raises(TypeMismatchError):
        verify_signed(fixture_bytes("pubkey.json"), fkey, expected_type="conduct.attestation/v1")


def test_another_key_refuses_everything(fkey: PinnedKey) -> None:
    other = PinnedKey(fkey.name, Ed25519PrivateKey.generate().public_key().public_bytes_raw())
    with pytest.raises(KeyMismatchError):
        verify_attestation(fixture_bytes("attestation.json"), other)


def test_an_object_signed_by_an_independent_signer_verifies() -> None:
    # Sign as ATTESTATION.md describes, with a key of our own: the verifier needs nothing else.
    sk = Ed25519PrivateKey.generate()
    pin = PinnedKey("example.org/log", sk.public_key().public_bytes_raw())
    scope = SCOPE
    meter = {"d_clean": ["clean"], "m_symbols": "lexicon/1", "p_exact_max_tables": 20000,
             "p_monte_carlo_samples": 1000, "version": "meter/1"}
    body = {"type": "conduct.attestation/v1", "key_id": pin.key_id, "n_turns": 2, "issued_at": "2026-01-01T00:00:00Z",
            "trace_sha256": "0" * 64, "profile": {"i_c_d": {"x": 0.333333333333, "é": "ü"}}, "meter": meter,
            "scope": scope}
    signed = dict(body, signature=base64.b64encode(sk.sign(rfc8785.dumps(body))).decode())
    # Key order and whitespace of the served text do not matter: the canonical bytes do.
    text = json.dumps(signed, indent=2, ensure_ascii=True)
    assert verify_attestation(text, pin)["profile"]["i_c_d"]["é"] == "ü"
    # The scope statement is compared exactly: stripped, a text changed, a member added.
    changed = dict(SCOPE, not_trade_advice=SCOPE["not_trade_advice"] + " ")
    for bad in [None, changed, dict(SCOPE, extra="x")]:
        b = {k: v for k, v in body.items() if k != "scope"}
        if bad is not None:
            b["scope"] = bad
        signed = dict(b, signature=base64.b64encode(sk.sign(rfc8785.dumps(b))).decode())
        with pytest.raises(MalformedError, match="scope"):
            verify_attestation(signed, pin)


def test_trace_sha256_hashes_only_context_key_and_turns() -> None:
    t = {"context_key": "monitored", "turns": [{"Y": "y", "M": "m", "D": "clean", "context": {"monitored": 1}}]}
    assert trace_sha256(t) == trace_sha256(dict(t, disclosure={"predicate": {}}, vow_id="x"))
    import hashlib
    assert trace_sha256(t) == hashlib.sha256(
        b'{"context_key":"monitored","turns":[{"D":"clean","M":"m","Y":"y","context":{"monitored":1}}]}').hexdigest()


def test_a_real_credential_verifies_with_its_hash(fkey: PinnedKey) -> None:
    answer = fixture_json("credential_answer.json")
    cred = verify_credential(answer, fkey)
    assert credential_hash(cred) == answer["credential_hash"]
    with pytest.raises(HashMismatchError):
        verify_credential(dict(answer, credential_hash="0x" + "0" * 64), fkey)
    with pytest.raises(HashMismatchError):
        verify_credential(answer["credential"], fkey, credential_hash_hex="0x" + "1" * 64)
    data = rfc8785.dumps(answer["credential"])
    bad = [i for i, _, b in flips(data, (0x01,)) if accepts(lambda: verify_credential(b, fkey))]
    assert not bad


