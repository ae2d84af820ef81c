"""Offline: C2SP checkpoints, tlog-proofs and RFC 6962 inclusion (library/VOWS.md,
"Durability and verification")."""

from __future__ import annotations

import base64
import hashlib

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from conduct_kit import (
    InclusionError,
    KeyMismatchError,
    MalformedError,
    PinnedKey,
    SignatureError,
    VerificationError,
    leaf_hash,
    merkle_root,
    parse_proof,
    verify_chain_files,
    verify_checkpoint,
    verify_inclusion,
)
from conduct_kit.tlog import node_hash, verify_inclusion_path

from conftest import fixture_bytes, flips


def _records(fkey: PinnedKey) -> list[dict]:
    return verify_chain_files(fixture_bytes("chain_head.json"), [fixture_bytes("chain_page_0.json")], fkey)


def test_the_captured_checkpoint_verifies(fkey: PinnedKey) -> None:
    cp = verify_checkpoint(fixture_bytes("checkpoint.txt"), fkey)
    assert cp.origin == fkey.name and cp.size == 35 and len(cp.root) == 32


def test_the_log_root_is_the_merkle_tree_of_the_records(fkey: PinnedKey) -> None:
    # The fixtures' log holds exactly one vow and its 34 entries, in log order.
    from conduct_kit import leaf_bytes

    recs = sorted(_records(fkey), key=lambda r: r["log_index"])
    assert [r["log_index"] for r in recs] == list(range(35))
    cp = verify_checkpoint(fixture_bytes("checkpoint.txt"), fkey)
    assert merkle_root([leaf_hash(leaf_bytes(r)) for r in recs]) == cp.root


def test_every_changed_byte_of_a_checkpoint_is_refused(fkey: PinnedKey) -> None:
    data = fixture_bytes("checkpoint.txt")
    accepted = []
    for i, m, bad in flips(data):
        try:
            verify_checkpoint(bad, fkey)
        except VerificationError:
            continue
        accepted.append((i, m))
    assert not accepted, accepted


def test_checkpoint_refusals_are_typed(fkey: PinnedKey) -> None:
    text = fixture_bytes("checkpoint.txt").decode()
    with pytest.raises(MalformedError):
        verify_checkpoint(text.rstrip("\n"), fkey)
    with pytest.raises(SignatureError):
        verify_checkpoint(text.replace("\n35\n", "\n36\n"), fkey)
    other = PinnedKey(fkey.name, Ed25519PrivateKey.generate().public_key().public_bytes_raw())
    with pytest.raises(KeyMismatchError):
        verify_checkpoint(text, other)


def test_a_checkpoint_with_witness_lines_and_another_origin() -> None:
    sk = Ed25519PrivateKey.generate()
    pin = PinnedKey("example.org/log", sk.public_key().public_bytes_raw())
    root = hashlib.sha256(b"r").digest()
    body = f"example.org/log\n7\n{base64.b64encode(root).decode()}\n"

    def line(name: str, kid: bytes, sig: bytes) -> str:
        return f"\u2014 {name} {base64.b64encode(kid + sig).decode()}\n"

    witness = line("witness.example", b"\x01\x02\x03\x04", b"\x00" * 64)
    own = line(pin.name, bytes.fromhex(pin.key_id), sk.sign(body.encode()))
    cp = verify_checkpoint(body + "\n" + witness + own, pin)
    assert cp.size == 7 and cp.root == root
    other_origin = f"other.example/log\n7\n{base64.b64encode(root).decode()}\n"
    with pytest.raises(KeyMismatchError):
        verify_checkpoint(other_origin + "\n" + line(pin.name, bytes.fromhex(pin.key_id), sk.sign(other_origin.encode())), pin)


def test_the_captured_proof_includes_its_entry(fkey: PinnedKey) -> None:
    proof = fixture_bytes("proof_20.txt")
    entry = next(r for r in _records(fkey) if r["log_index"] == 20)
    got = verify_inclusion(proof, entry, fkey, checkpoint=fixture_bytes("checkpoint.txt"))
    assert got.index == 20 and got.checkpoint.size == 35
    other = next(r for r in _records(fkey) if r["log_index"] == 21)
    with pytest.raises(InclusionError):
        verify_inclusion(proof, other, fkey)
    with pytest.raises(InclusionError):
        verify_inclusion(proof, entry, fkey, index=21)


def test_every_changed_byte_of_a_proof_is_refused(fkey: PinnedKey) -> None:
    data = fixture_bytes("proof_20.txt")
    entry = next(r for r in _records(fkey) if r["log_index"] == 20)
    accepted = []
    for i, m, bad in flips(data):
        try:
            verify_inclusion(bad, entry, fkey)
        except VerificationError:
            continue
        accepted.append((i, m))
    assert not accepted, accepted


def _path(hashes: list[bytes], m: int) -> list[bytes]:
    """RFC 6962 section 2.1.1 PATH(m, D[n]), written from the RFC independently of the
    verifier's iterative algorithm."""
    n = len(hashes)
    if n == 1:
        return []
    k = 1
    while k * 2 < n:
        k *= 2
    if m < k:
        return _path(hashes[:k], m) + [merkle_root(hashes[k:])]
    return _path(hashes[k:], m - k) + [merkle_root(hashes[:k])]


def test_inclusion_paths_for_every_leaf_of_trees_up_to_40() -> None:
    for size in range(1, 41):
        hashes = [leaf_hash(str(i).encode()) for i in range(size)]
        root = merkle_root(hashes)
        for m in range(size):
            p = _path(hashes, m)
            verify_inclusion_path(hashes[m], m, size, p, root)
            if p:
                with pytest.raises(InclusionError):
                    verify_inclusion_path(hashes[m], m, size, p[:-1], root)
                with pytest.raises(InclusionError):
                    verify_inclusion_path(hashes[m], m, size, p + [p[0]], root)
                with pytest.raises(InclusionError):
                    bad = list(p)
                    bad[0] = node_hash(bad[0], bad[0])
                    verify_inclusion_path(hashes[m], m, size, bad, root)
            if size > 1:
                with pytest.raises(InclusionError):
                    verify_inclusion_path(hashes[m], (m + 1) % size, size, p, root)
        with pytest.raises(InclusionError):
            verify_inclusion_path(hashes[0], size, size, [], root)


def test_rfc6962_known_answers() -> None:
    # The empty tree and single-leaf hashes of RFC 6962 (as in certificate-transparency-go).
    assert merkle_root([]).hex() == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert leaf_hash(b"").hex() == "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d"


def test_a_proof_is_parsed_as_c2sp_writes_it(fkey: PinnedKey) -> None:
    text = fixture_bytes("proof_20.txt").decode()
    p = parse_proof(text, fkey)
    assert text.startswith("c2sp.org/tlog-proof@v1\nindex 20\n") and p.extra is None and p.path
    with pytest.raises(MalformedError):
        parse_proof(text.replace("index 20", "index 020"), fkey)
    with_extra = text.replace("index 20", "extra " + base64.b64encode(b"hello").decode() + "\nindex 20")
    assert parse_proof(with_extra, fkey).extra == b"hello"
