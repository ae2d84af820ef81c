"""Offline: vow records, entries, chains and chain pages (library/VOWS.md)."""

from __future__ import annotations

import hashlib
import json

import pytest
import rfc8785

from conduct_kit import (
    ChainError,
    HashMismatchError,
    PinnedKey,
    VerificationError,
    leaf_bytes,
    record_sha256,
    verify_chain,
    verify_chain_files,
    verify_entry,
    verify_link,
    verify_vow_record,
    vow_id_for,
)

from conftest import accepts, field_mutations, fixture_bytes, fixture_json, flips


def _chain(fkey: PinnedKey) -> list[dict]:
    return verify_chain_files(fixture_bytes("chain_head.json"), [fixture_bytes("chain_page_0.json")], fkey)


def test_a_35_record_chain_with_a_full_page_verifies(fkey: PinnedKey) -> None:
    recs = _chain(fkey)
    assert len(recs) == 35 and recs[0]["type"] == "conduct.vow/v1"
    assert [r.get("seq") for r in recs[1:]] == list(range(1, 35))
    assert recs[1]["prev"] == hashlib.sha256(rfc8785.dumps(recs[0])).hexdigest()
    head = fixture_json("chain_head.json")
    assert head["pages"][0]["sha256"] == hashlib.sha256(fixture_bytes("chain_page_0.json")).hexdigest()
    assert head["head_sha256"] == record_sha256(recs[-1])


def test_the_vow_id_is_derived_from_origin_index_text_hash_and_agent(fkey: PinnedKey) -> None:
    vow = _chain(fkey)[0]
    assert vow_id_for(fkey.origin, vow["log_index"], vow["text_sha256"], vow["agent"]) == vow["vow_id"]
    assert vow_id_for(fkey.origin, vow["log_index"] + 1, vow["text_sha256"], vow["agent"]) != vow["vow_id"]
    assert vow_id_for("other/log", vow["log_index"], vow["text_sha256"], vow["agent"]) != vow["vow_id"]


def test_a_wallet_signed_vow_and_its_three_proofs(fkey: PinnedKey) -> None:
    recs = verify_chain(fixture_json("signed_vow_chain.json"), fkey)
    assert recs[0]["sandbox"] is False and recs[0]["wallet"].startswith("0x")
    assert [r["proof"]["kind"] for r in recs[1:]] == ["wallet-signature", "x402-payer"]
    assert [r["attested"] for r in recs[1:]] == [False, True]


def test_links_that_do_not_hold_are_refused(fkey: PinnedKey) -> None:
    recs = _chain(fkey)
    other = fixture_json("signed_vow_chain.json")
    cases = {
        "dropped entry": recs[:5] + recs[6:],
        "swapped entries": recs[:5] + [recs[6], recs[5]] + recs[7:],
        "repeated entry": recs[:5] + [recs[4]] + recs[5:],
        "another vow's entry": recs[:1] + other[1:2],
        "another vow's record first": other[:1] + recs[1:3],
        "entry first": recs[1:4],
        "no vow record": [],
    }
    for what, chain in cases.items():
        with pytest.raises(VerificationError):
            verify_chain(chain, fkey)
            pytest.fail(what)
    with pytest.raises(ChainError, match="seq"):
        verify_link(recs[3], recs[5])
    with pytest.raises(ChainError, match="vow_id"):
        verify_link(recs[3], other[2])


def test_every_changed_field_of_every_record_is_refused(fkey: PinnedKey) -> None:
    recs = fixture_json("signed_vow_chain.json")
    accepted, n = [], 0
    for pos, rec in enumerate(recs):
        for what, changed in field_mutations(rec):
            n += 1
            chain = recs[:pos] + [changed] + recs[pos + 1:]
            try:
                verify_chain(chain, fkey)
            except VerificationError:
                continue
            accepted.append((pos, what))
    assert n > 300 and not accepted, accepted[:10]


def test_every_changed_byte_of_an_entry_is_refused(fkey: PinnedKey) -> None:
    recs = fixture_json("signed_vow_chain.json")
    data = leaf_bytes(recs[1])
    verify_entry(data, fkey, previous=recs[0])
    accepted = [(i, m) for i, m, bad in flips(data) if accepts(lambda: verify_entry(bad, fkey, previous=recs[0]))]
    assert not accepted, accepted[:10]


def test_every_changed_byte_of_a_chain_page_is_refused(fkey: PinnedKey) -> None:
    head, page = fixture_bytes("chain_head.json"), fixture_bytes("chain_page_0.json")
    # A page is pinned by its file's SHA-256: any change is caught before its signature. Every
    # 37th position of the 74 KB page (each attempt re-verifies the head's signature first).
    accepted = []
    for i, m, bad in flips(page, (0x01,)):
        if i % 37:
            continue
        try:
            verify_chain_files(head, [bad], fkey)
        except HashMismatchError:
            continue
        accepted.append((i, m))
    assert not accepted, accepted[:10]


def test_every_changed_byte_of_a_chain_head_is_refused(fkey: PinnedKey) -> None:
    head, page = fixture_bytes("chain_head.json"), fixture_bytes("chain_page_0.json")
    # One mask, every other position: each attempt hashes the 74 KB page and may verify 35
    # signatures, so the whole head at three masks would take a minute.
    accepted = [(i, m) for i, m, bad in flips(head, (0x01,))
                if i % 2 == 0 and accepts(lambda: verify_chain_files(bad, [page], fkey))]
    assert not accepted, accepted[:10]


def test_a_missing_page_or_a_wrong_vow_is_refused(fkey: PinnedKey) -> None:
    head, page = fixture_bytes("chain_head.json"), fixture_bytes("chain_page_0.json")
    with pytest.raises(VerificationError):
        verify_chain_files(head, [], fkey)
    with pytest.raises(ChainError):
        verify_chain_files(head, [page], fkey, vow_id="0" * 16)


def test_a_sealed_vow_with_text_or_an_open_one_with_the_wrong_hash_is_refused(fkey: PinnedKey) -> None:
    vow = fixture_json("signed_vow_chain.json")[0]
    verify_vow_record(vow, fkey)
    # (the signature would fail anyway; the shape checks run on a correctly signed record too)
    with pytest.raises(VerificationError):
        verify_vow_record(dict(vow, sealed=True), fkey)


def test_the_fixture_chain_is_valid_json_lines() -> None:
    assert isinstance(json.loads(fixture_bytes("signed_vow_chain.json")), list)
