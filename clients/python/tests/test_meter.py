"""Offline: the meters (library/ATTESTATION.md, "The meter"; METER.md sections 10.1-10.2;
VOWS.md, "Record formats"). Attestations, credentials and entries of ``meter/1`` and
``meter/2`` are accepted, each with its exact block and its quantities' shape; an unknown
meter, a wrong block, a quantity of the other meter's shape and a meter other than the one
asked for are refused. The client sends ``meter`` only when given and checks the answer."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
import rfc8785

from conduct_kit import (
    KNOWN_METERS,
    MalformedError,
    MeterError,
    PinnedKey,
    VerificationError,
    check_meter,
    credential_hash,
    meter_block,
    trace_sha256,
    verify_attestation,
    verify_chain,
    verify_credential,
    verify_entry,
    verify_vow_record,
)
from conduct_kit.client import Client

from chains import SCOPE, Signer, attestation, brief_profile, meter_block as doc_block, profile, records
from conftest import fixture_bytes, fixture_json, make_trace

METERS = ("meter/1", "meter/2")


@pytest.fixture(scope="module")
def signer() -> Signer:
    return Signer(23)


def test_the_kit_knows_both_meters_and_their_blocks_are_the_documents() -> None:
    assert KNOWN_METERS == METERS
    for v in METERS:
        assert meter_block(v) == doc_block(v)
        assert meter_block(v, stored=True) == doc_block(v, stored=True)
    with pytest.raises(KeyError):
        meter_block("meter/3")


@pytest.mark.parametrize("version", METERS)
def test_an_attestation_of_either_meter_verifies(signer: Signer, version: str) -> None:
    att = verify_attestation(attestation(signer, version), signer.pin)
    assert att["meter"]["version"] == version
    assert verify_attestation(attestation(signer, version), signer.pin, meter=version)["meter"] == doc_block(version)
    # A disclosure carries the meter but no profile.
    predicate = {"metric": "i_c_m", "band": "under_0.05", "clears": True}
    disclosed = attestation(signer, version, profile=None, predicate=predicate)
    doc = json.loads(disclosed)
    del doc["profile"]
    verify_attestation(signer.sign(doc), signer.pin, meter=version)


def test_the_captured_attestation_is_meter_1(fkey: PinnedKey) -> None:
    data = fixture_bytes("attestation.json")
    assert verify_attestation(data, fkey, meter="meter/1")["meter"]["version"] == "meter/1"
    with pytest.raises(MeterError, match=r"meter 'meter/1' is not the meter asked for \('meter/2'\)"):
        verify_attestation(data, fkey, meter="meter/2")


def test_real_entries_and_demo_profiles_of_both_meters() -> None:
    # Captured from a conduct dev stack: a vow, a report-in by default (meter/2), one with
    # "meter": "meter/1", and the demo profile of the same trace under each meter.
    cap = fixture_json("meters.json")
    key = PinnedKey.from_vkey(cap["vkey"])
    vow = verify_vow_record(cap["vow"], key)
    e2 = verify_entry(cap["entry_meter_2"], key, previous=vow, trace=cap["trace"], meter="meter/2")
    e1 = verify_entry(cap["entry_meter_1"], key, previous=e2, trace=cap["trace"], meter="meter/1")
    assert [r["seq"] for r in verify_chain([cap["vow"], cap["entry_meter_2"], cap["entry_meter_1"]], key)[1:]] == [1, 2]
    assert e2["meter"] == doc_block("meter/2", stored=True) and e1["meter"] == doc_block("meter/1", stored=True)
    with pytest.raises(MeterError, match="entry: meter 'meter/1' is not the meter asked for"):
        verify_entry(cap["entry_meter_1"], key, meter="meter/2")
    for v, demo in (("meter/2", json.loads(cap["demo_meter_2"])), ("meter/1", json.loads(cap["demo_meter_1"]))):
        assert check_meter(demo, "demo profile", meter=v) == v and demo["meter"] == doc_block(v)
        assert demo["trace_sha256"] == trace_sha256(cap["trace"])
        # A stored profile's D columns are labels; the caller's answer keeps the caller's.
        assert demo["profile"]["i_c_d"]["columns"] == ["clean", "refused"]
    assert e2["profile"]["i_c_d"]["columns"] == e1["profile"]["i_c_d"]["columns"] == ["clean", "d#1"]
    # The caller's answer carries the plain block; an entry's block is refused on it.
    relabelled = dict(json.loads(cap["demo_meter_2"]), meter=doc_block("meter/2", stored=True))
    with pytest.raises(MeterError, match="is not meter/2's: 'labels' is not a member of it"):
        check_meter(relabelled, "demo profile")


def test_an_unknown_meter_is_refused_naming_the_meters_known(signer: Signer) -> None:
    block = dict(doc_block("meter/2"), version="meter/3")
    with pytest.raises(MeterError) as e:
        verify_attestation(attestation(signer, "meter/2", meter=block), signer.pin)
    assert str(e.value) == "attestation: meter 'meter/3' is not one this kit knows (meter/1, meter/2)"
    # Even when it is the meter asked for: the kit cannot read its numbers.
    with pytest.raises(MeterError, match="not one this kit knows"):
        verify_attestation(attestation(signer, "meter/2", meter=block), signer.pin, meter="meter/3")
    assert isinstance(e.value, VerificationError)


@pytest.mark.parametrize("block", [None, "meter/2", ["meter/2"], {}, {"version": 2}])
def test_a_missing_or_malformed_meter_block_is_refused(signer: Signer, block: Any) -> None:
    doc = json.loads(attestation(signer, "meter/2", meter=block))
    if block is None:
        del doc["meter"]
    with pytest.raises(MalformedError, match="meter"):
        verify_attestation(signer.sign(doc), signer.pin)


@pytest.mark.parametrize("version", METERS)
def test_every_change_of_a_meter_block_is_refused(signer: Signer, version: str) -> None:
    base = doc_block(version)
    changed: list[dict[str, Any]] = [dict(base, labels="stored-labels/1"), dict(base, extra=1)]
    for k, v in base.items():
        if k == "version":
            continue
        changed.append({m: w for m, w in base.items() if m != k})
        changed.append(dict(base, **{k: (v + 1 if isinstance(v, int) else v + ["flagged"] if isinstance(v, list) else v + "x")}))
    changed.append(dict(base, p_exact_max_tables=True))
    # The other meter's constants under this version.
    other = doc_block("meter/1" if version == "meter/2" else "meter/2")
    changed.append(dict(other, version=version))
    for block in changed:
        with pytest.raises(MeterError, match=f"the meter block is not {version}'s"):
            verify_attestation(attestation(signer, version, meter=block), signer.pin)
    # A number is compared by value, as RFC 8785 writes it: 20000.0 is 20000.
    verify_attestation(attestation(signer, version, meter=dict(base, p_exact_max_tables=20000.0)), signer.pin)


def test_a_meter_2_quantity_without_stratified_is_refused(signer: Signer) -> None:
    for name in ("i_c_d", "i_c_m", "i_c_m_given_d_clean", "i_c_dm"):
        prof = profile("meter/2")
        del prof[name]["stratified"]
        with pytest.raises(MeterError, match=f"profile quantity '{name}' has no stratified object"):
            verify_attestation(attestation(signer, "meter/2", profile=prof), signer.pin)
    for bad in (None, "Y", [], {"by": "X"}, {"strata": 2}):
        prof = profile("meter/2")
        prof["i_c_m"]["stratified"] = bad
        with pytest.raises(MeterError, match="'i_c_m'"):
            verify_attestation(attestation(signer, "meter/2", profile=prof), signer.pin)
    # The numbers of a null stratified test are null; its member is still there (METER.md 10.1).
    prof = profile("meter/2")
    prof["i_c_d"]["stratified"] = {"by": "Y", "strata": 0, "n": 0, "table": [[0, 0], [0, 0]], "margins": [],
                                   "p": None, "p_method": None,
                                   "reason": "no group of turns with the same Y holds both C values"}
    verify_attestation(attestation(signer, "meter/2", profile=prof), signer.pin)


def test_a_meter_1_quantity_with_stratified_is_refused(signer: Signer) -> None:
    for name in ("i_c_d", "i_c_dm"):
        prof = profile("meter/1")
        prof[name]["stratified"] = profile("meter/2")[name]["stratified"]
        with pytest.raises(MeterError, match=f"profile quantity '{name}' carries stratified, which no meter/1 quantity does"):
            verify_attestation(attestation(signer, "meter/1", profile=prof), signer.pin)
    prof = profile("meter/1")
    prof["i_c_m"]["stratified"] = None
    with pytest.raises(MeterError, match="carries stratified"):
        verify_attestation(attestation(signer, "meter/1", profile=prof), signer.pin)
    # A meter/2 profile under a meter/1 block, and the other way round.
    with pytest.raises(MeterError):
        verify_attestation(attestation(signer, "meter/1", profile=profile("meter/2")), signer.pin)
    with pytest.raises(MeterError):
        verify_attestation(attestation(signer, "meter/2", profile=profile("meter/1")), signer.pin)
    with pytest.raises(MalformedError, match="profile"):
        verify_attestation(attestation(signer, "meter/1", profile={"i_c_d": 0.5}), signer.pin)


def test_a_meter_other_than_the_one_asked_for_is_refused(signer: Signer) -> None:
    for asked, got in (("meter/1", "meter/2"), ("meter/2", "meter/1")):
        with pytest.raises(MeterError, match=f"meter '{got}' is not the meter asked for \\('{asked}'\\)"):
            verify_attestation(attestation(signer, got), signer.pin, meter=asked)


def _credential(signer: Signer, version: str, **members: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"type": "conduct.erc8004-validation/v1", "context_key": "monitored", "n_turns": 40,
                            "issued_at": "2026-01-01T00:00:00Z", "trace_sha256": "0" * 64,
                            "predicate": {"metric": "i_c_m", "band": "under_0.05", "clears": False},
                            "subject": {"form": "wallet", "id": "0x" + "ab" * 20}, "what": "a predicate",
                            "issuer": {"url": "http://conduct.test", "pubkey": "http://conduct.test/pubkey"},
                            "meter": doc_block(version), "scope": SCOPE}
    body.update(members)
    cred = json.loads(signer.sign(body))
    return {"credential": cred, "credential_hash": credential_hash(cred), "how_to_use": {}, "scope": SCOPE}


def test_a_credential_names_a_meter_the_kit_knows(signer: Signer) -> None:
    for v in METERS:
        assert verify_credential(_credential(signer, v), signer.pin, meter=v)["meter"]["version"] == v
    with pytest.raises(MeterError, match="credential: meter 'meter/2' is not the meter asked for"):
        verify_credential(_credential(signer, "meter/2"), signer.pin, meter="meter/1")
    with pytest.raises(MeterError, match=r"credential: meter 'meter/9' is not one this kit knows \(meter/1, meter/2\)"):
        verify_credential(_credential(signer, "meter/2", meter=dict(doc_block("meter/2"), version="meter/9")), signer.pin)
    with pytest.raises(MeterError, match="is not meter/1's"):
        verify_credential(_credential(signer, "meter/1", meter=doc_block("meter/1", stored=True)), signer.pin)


def test_entries_carry_the_stored_block_and_a_chain_may_mix_meters(signer: Signer) -> None:
    recs = records(signer, 4, tag="mixed", meters=("meter/1", "meter/2"))
    chain = verify_chain(recs, signer.pin)
    assert [r["meter"]["version"] for r in chain[1:]] == ["meter/1", "meter/2", "meter/1", "meter/2"]
    assert verify_entry(recs[2], signer.pin, meter="meter/2")["meter"]["labels"] == "stored-labels/1"
    with pytest.raises(MeterError, match="entry: meter 'meter/2' is not the meter asked for"):
        verify_entry(recs[2], signer.pin, meter="meter/1")

    def resigned(n: int, **members: Any) -> list[dict[str, Any]]:
        """The chain with entry ``n`` changed, then it and every entry after it re-linked."""
        from conduct_kit import record_sha256

        out = [recs[0]]
        for k, r in enumerate(recs[1:], 1):
            doc = dict(r, **members) if k == n else dict(r)
            doc["prev"] = record_sha256(out[-1])
            out.append(json.loads(signer.sign(doc)))
        return out

    for members, why in (
        ({"meter": doc_block("meter/2")}, "is not meter/2's: 'labels' is missing"),
        ({"meter": dict(doc_block("meter/2", stored=True), labels="stored-labels/2")}, "'labels' is 'stored-labels/2'"),
        ({"meter": dict(doc_block("meter/2", stored=True), version="meter/3")}, "not one this kit knows"),
        ({"profile": brief_profile("meter/1")}, "has no stratified object"),
    ):
        with pytest.raises(MeterError, match=why) as e:
            verify_chain(resigned(2, **members), signer.pin)
        assert e.value.subject == "chain record 2 (entry)"
    bad = resigned(1, profile=brief_profile("meter/2"))
    with pytest.raises(MeterError, match="carries stratified"):
        verify_chain(bad, signer.pin)
    doc = dict(recs[1])
    del doc["profile"]
    with pytest.raises(MalformedError, match="'profile' is missing"):
        verify_entry(signer.sign(doc), signer.pin)


# ---- the client -----------------------------------------------------------------------------


def _client(signer: Signer, answers: dict[str, Any], sent: list[dict[str, Any]]) -> Client:
    """A client of a fake service: each POST's body is kept in ``sent``; the answer to a path
    is ``answers[path](body)``."""

    def serve(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        sent.append(body)
        return httpx.Response(200, content=answers[request.url.path](body), headers={"content-type": "application/json"})

    return Client("http://conduct.test", vkey=signer.pin, http=httpx.Client(transport=httpx.MockTransport(serve)))


def _attested(signer: Signer, served: str | None, trace: dict[str, Any]) -> Any:
    """An answer measured by ``served``, or, when ``None``, by the meter the body asks for
    (``meter/2`` without one)."""
    return lambda body: attestation(signer, served or body.get("meter", "meter/2"), trace_sha256=trace_sha256(trace))


def test_the_client_sends_meter_only_when_given_and_checks_the_answer(signer: Signer) -> None:
    trace = make_trace(8)
    sent: list[dict[str, Any]] = []
    c = _client(signer, {"/profile": _attested(signer, None, trace), "/demo/profile": _attested(signer, None, trace)}, sent)
    assert c.profile(trace)["meter"]["version"] == "meter/2"
    assert c.profile(trace, meter="meter/1")["meter"]["version"] == "meter/1"
    assert c.demo_profile(trace)["meter"]["version"] == "meter/2"
    assert c.demo_profile(trace, meter="meter/1")["meter"]["version"] == "meter/1"
    assert c.demo_profile(trace, meter="meter/2")["meter"]["version"] == "meter/2"
    assert [b.get("meter") for b in sent] == [None, "meter/1", None, "meter/1", "meter/2"]
    assert "meter" not in sent[0] and "meter" not in sent[2]
    assert all(set(b) <= {"context_key", "turns", "meter"} for b in sent)


@pytest.mark.parametrize("route", ["/profile", "/demo/profile"])
def test_the_client_refuses_an_answer_of_another_meter(signer: Signer, route: str) -> None:
    trace = make_trace(8)
    call = {"/profile": lambda c, **kw: c.profile(trace, **kw), "/demo/profile": lambda c, **kw: c.demo_profile(trace, **kw)}[route]
    subject = "attestation" if route == "/profile" else "demo profile"
    c = _client(signer, {route: _attested(signer, "meter/2", trace)}, [])
    with pytest.raises(MeterError, match=f"{subject}: meter 'meter/2' is not the meter asked for \\('meter/1'\\)"):
        call(c, meter="meter/1")
    call(c)  # without a meter asked for, any meter the kit knows
    c = _client(signer, {route: lambda body: attestation(signer, "meter/2", trace_sha256=trace_sha256(trace),
                                                         meter=dict(doc_block("meter/2"), version="meter/3"))}, [])
    with pytest.raises(MeterError, match=f"{subject}: meter 'meter/3' is not one this kit knows"):
        call(c)
    c = _client(signer, {route: lambda body: attestation(signer, "meter/1", trace_sha256=trace_sha256(trace),
                                                         profile=profile("meter/2"))}, [])
    with pytest.raises(MeterError, match="carries stratified"):
        call(c, meter="meter/1")


def test_the_client_checks_the_meter_of_a_report_in_and_a_credential(signer: Signer) -> None:
    trace = make_trace(8)
    vow = records(signer, 0, tag="client")[0]

    def entry(body: dict[str, Any]) -> bytes:
        version = body.get("meter", "meter/2")
        return signer.sign({"type": "conduct.entry/v1", "vow_id": vow["vow_id"], "seq": 1, "prev": "0" * 64,
                            "trace_sha256": trace_sha256(trace), "log_index": 11, "at": "2026-01-01T00:00:01Z",
                            "attested": False, "trace_donated": False, "proof": {"kind": "sandbox-open"},
                            "declared_y": [{"y": "summarise", "turns": 8}], "profile": brief_profile(version),
                            "meter": doc_block(version, stored=True), "scope": SCOPE})

    def credential(body: dict[str, Any]) -> bytes:
        return rfc8785.dumps(_credential(signer, body.get("meter", "meter/2"), trace_sha256=trace_sha256(trace)))

    sent: list[dict[str, Any]] = []
    c = _client(signer, {"/vow/report/demo": entry, "/erc8004/validation": credential}, sent)
    assert c.report_in(vow["vow_id"], trace)["meter"]["version"] == "meter/2"
    assert c.report_in(vow["vow_id"], trace, meter="meter/1")["meter"]["version"] == "meter/1"
    kw: dict[str, Any] = {"metric": "i_c_m", "band": "under_0.05", "subject_form": "wallet", "subject_id": "0x" + "ab" * 20}
    assert c.validation(trace, **kw)["credential"]["meter"]["version"] == "meter/2"
    assert c.validation(trace, meter="meter/1", **kw)["credential"]["meter"]["version"] == "meter/1"
    assert [b.get("meter") for b in sent] == [None, "meter/1", None, "meter/1"]
    assert "meter" not in sent[0] and "meter" not in sent[2]
    wrong = _client(signer, {"/vow/report/demo": lambda body: entry({"meter": "meter/2"}),
                             "/erc8004/validation": lambda body: credential({"meter": "meter/2"})}, [])
    with pytest.raises(MeterError, match="entry: meter 'meter/2' is not the meter asked for"):
        wrong.report_in(vow["vow_id"], trace, meter="meter/1")
    with pytest.raises(MeterError, match="credential: meter 'meter/2' is not the meter asked for"):
        wrong.validation(trace, meter="meter/1", **kw)
