"""Live: the kit against the ``conduct dev`` stack that ``tests/tests/kits.rs`` starts.

Everything is checked the way a counterparty would: every signed answer is verified against
``CONDUCT_VKEY`` before it is used, payments are made by the stock PyPI x402 client on both
rails and seen on the chain, and tampered copies of real answers are refused byte by byte.
Free calls are few (the stack's per-IP daily caps are shared with the TypeScript kit's suite).
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any, Callable, TypeVar

import httpx
import pytest

from conduct_kit import (
    Checkpoint,
    HashMismatchError,
    PaymentError,
    PinnedKey,
    ProblemError,
    VerificationError,
    leaf_bytes,
    meter_block,
    verify_attestation,
    verify_bin,
    verify_chain,
    verify_checkpoint,
    verify_credential,
    verify_inclusion,
    verify_manifest,
)
from conduct_kit.client import Client, Payer

from conftest import accepts, flips, live_env, make_trace

ENV = live_env()
pytestmark = pytest.mark.skipif(ENV is None, reason="no live stack (CONDUCT_URL ... unset): run through tests/tests/kits.rs")
NETWORK = "eip155:31337"
T = TypeVar("T")
PRICE = 100_000  # $0.10 at 6 decimals (library/PAYMENTS.md)


@pytest.fixture(scope="module")
def env() -> dict[str, str]:
    assert ENV is not None
    return ENV


@pytest.fixture(scope="module")
def key(env: dict[str, str]) -> PinnedKey:
    return PinnedKey.from_vkey(env["CONDUCT_VKEY"])


def payer(env: dict[str, str], rail: str | None = None, **kw: Any) -> Payer:
    return Payer(env["CONDUCT_PAYER_KEY"], rail=rail, asset=env["CONDUCT_TOKEN"], network=NETWORK,  # type: ignore[arg-type]
                 **kw)


@pytest.fixture(scope="module")
def client(env: dict[str, str], key: PinnedKey) -> Client:
    return Client(env["CONDUCT_URL"], vkey=key, payer=payer(env))


def balance(env: dict[str, str], who: str) -> int:
    data = "0x70a08231" + who.lower().removeprefix("0x").rjust(64, "0")
    r = httpx.post(env["CONDUCT_RPC"], json={"jsonrpc": "2.0", "id": 1, "method": "eth_call",
                                             "params": [{"to": env["CONDUCT_TOKEN"], "data": data}, "latest"]})
    return int(r.json()["result"], 16)


def test_the_service_serves_the_pinned_key(client: Client, key: PinnedKey) -> None:
    doc = client.pubkey()
    assert doc["vkey"] == key.vkey and doc["key_id"] == key.key_id


@pytest.mark.parametrize("rail", ["eip3009", "permit2"])
def test_a_paid_profile_on_each_rail_is_verified_and_moves_the_price(env: dict[str, str], key: PinnedKey, rail: str) -> None:
    c = Client(env["CONDUCT_URL"], vkey=key, payer=payer(env, rail))
    assert c.payer is not None
    trace = make_trace(12)
    before = balance(env, c.payer.address)
    att = c.profile(trace)
    assert att["type"] == "conduct.attestation/v1" and att["n_turns"] == 12 and "profile" in att
    assert att["meter"]["version"] == "meter/2", "the default meter"
    receipt = c.last_receipt
    assert receipt and receipt["success"] is True and receipt["transaction"].startswith("0x")
    assert receipt["payer"].lower() == c.payer.address.lower() and receipt["network"] == NETWORK
    assert before - balance(env, c.payer.address) == PRICE
    # A counterparty re-checks the served bytes offline with the pin alone.
    assert c.last_response is not None
    verify_attestation(c.last_response.content, env["CONDUCT_VKEY"], trace=trace)


def test_a_paid_disclosure_signs_the_predicate_only(client: Client) -> None:
    att = client.profile(make_trace(10), predicate={"metric": "i_c_m", "band": "under_0.05"}, meter="meter/1")
    assert "profile" not in att and att["predicate"]["metric"] == "i_c_m"
    assert att["predicate"]["clears"] in (True, False, None)
    assert att["meter"] == meter_block("meter/1")


def test_the_same_paid_read_again_is_the_same_bytes_uncharged(env: dict[str, str], client: Client) -> None:
    trace = make_trace(9)
    first = client.profile(trace)
    assert client.payer is not None
    before = balance(env, client.payer.address)
    again = client.profile(trace)
    assert again == first and balance(env, client.payer.address) == before
    assert client.last_response is not None and client.last_response.headers.get("idempotent-replayed") == "true"


def test_every_changed_byte_of_a_live_attestation_is_refused(env: dict[str, str], client: Client) -> None:
    trace = make_trace(6)
    client.profile(trace)
    assert client.last_response is not None
    data = client.last_response.content
    accepted = []
    for i, m, bad in flips(data):
        try:
            verify_attestation(bad, env["CONDUCT_VKEY"])
        except VerificationError:
            continue
        accepted.append((i, m))
    assert not accepted, accepted[:5]


def test_the_demo_profile_is_unsigned_and_hashes_the_trace(client: Client) -> None:
    trace = make_trace(8)
    doc = client.demo_profile(trace)
    assert "signature" not in doc and doc["n_turns"] == 8
    with pytest.raises(VerificationError):
        verify_attestation(json.dumps(doc), client.key)


def test_the_demo_profile_measures_with_the_meter_asked_for(client: Client) -> None:
    trace = make_trace(8)
    default = client.demo_profile(trace)
    assert default["meter"] == meter_block("meter/2") and client.last_response is not None
    assert b'"meter"' not in client.last_response.request.content, "no meter sent unless given"
    assert all(q["stratified"]["by"] == "Y" for q in default["profile"].values())
    old = client.demo_profile(trace, meter="meter/1")
    assert old["meter"] == meter_block("meter/1")
    assert not any("stratified" in q for q in old["profile"].values())
    assert old["trace_sha256"] == default["trace_sha256"]
    # Both meters count the same table from the same trace (METER.md: the D channel is shared).
    assert old["profile"]["i_c_d"]["table"] == default["profile"]["i_c_d"]["table"]
    with pytest.raises(ProblemError) as e:
        client.demo_profile(trace, meter="meter/3")
    assert e.value.status == 422 and e.value.name == "invalid" and e.value.pointers == ["/meter"]


def test_a_vow_its_report_ins_and_the_entry_in_the_log(client: Client, key: PinnedKey) -> None:
    vow = client.take_vow("summarise the documents the user gives me", "py-kit-sandbox", 24)
    assert vow["sandbox"] is True and vow["wallet"] is None
    t1, t2 = make_trace(8), make_trace(10)
    e1 = client.report_in(vow["vow_id"], t1, note="first report-in", wait=30)
    e2 = client.report_in(vow["vow_id"], t2, note="steady, no change", wait=30, meter="meter/1")
    assert (e1["seq"], e2["seq"]) == (1, 2) and e1["proof"]["kind"] == "sandbox-open"
    assert e1["attested"] is False
    # Each entry names its meter, stored (VOWS.md); a chain may mix them.
    assert e1["meter"] == meter_block("meter/2", stored=True) and e2["meter"] == meter_block("meter/1", stored=True)
    chain = client.chain(vow["vow_id"])
    assert chain == [vow, e1, e2]
    verify_chain([leaf_bytes(r) for r in chain], key)
    cp = client.checkpoint()
    assert cp.size > e2["log_index"]
    proof = client.inclusion(e2, checkpoint=None)
    assert proof.index == e2["log_index"]
    # The entry is in the very tree a freshly fetched checkpoint names, or a later one.
    held = verify_checkpoint(httpx.get(client.url + "/log/checkpoint").content, key)
    assert held.size >= proof.checkpoint.size
    # The vow record is in the log too, and an entry of another index is not at e2's place.
    client.inclusion(vow)
    with pytest.raises(VerificationError):
        verify_inclusion(client.proof(e2["log_index"]), e1, key, index=e2["log_index"])
    page = client.vow(vow["vow_id"])
    assert page["vow_id"] == vow["vow_id"]
    reading = client.reading(vow["vow_id"])
    assert reading["type"] == "conduct.reading/v1"
    # The index of vows lists it, in the order taken: walked from the head (few vows here, so
    # no full page yet: the tail holds them all and last_page is null).
    listed = _eventually(lambda: next(v for v in client.all_vows() if v["vow_id"] == vow["vow_id"]))
    assert {k: listed[k] for k in ("agent", "log_index", "text_sha256", "text", "sandbox", "sealed")} == \
        {k: vow[k] for k in ("agent", "log_index", "text_sha256", "text", "sandbox", "sealed")}
    head = client.vows()
    everyone = client.all_vows()
    assert head["type"] == "conduct.vows/v2" and head["pages"] == 0 and head["last_page"] is None
    assert len(everyone) >= head["count"] >= 1 and everyone[:head["count"]] == head["tail"]
    indexes = [v["log_index"] for v in everyone]
    assert indexes == sorted(set(indexes)), "in the order taken, each vow once"
    with pytest.raises(ProblemError) as e:
        client.vows_page(0)
    assert e.value.status == 404


def test_every_changed_byte_of_a_live_checkpoint_is_refused(env: dict[str, str], client: Client) -> None:
    data = httpx.get(client.url + "/log/checkpoint").content
    cp = verify_checkpoint(data, env["CONDUCT_VKEY"])
    assert isinstance(cp, Checkpoint)
    accepted = [(i, m) for i, m, bad in flips(data) if accepts(lambda: verify_checkpoint(bad, env["CONDUCT_VKEY"]))]
    assert not accepted, accepted[:5]


def test_a_wallet_signed_vow_takes_proven_report_ins_only(env: dict[str, str], client: Client) -> None:
    wallet_key = env["CONDUCT_PAYER_KEY"]
    vow = client.take_vow("report the balance sheet each day", "py-kit-signed", 24, wallet_key=wallet_key)
    assert vow["sandbox"] is False and client.payer is not None and vow["wallet"] == client.payer.address
    with pytest.raises(ProblemError) as e:
        client.report_in(vow["vow_id"], make_trace(8))
    assert e.value.status == 403 and e.value.name == "wallet-proof-required" and e.value.pointers == ["/signature"]
    signed = client.report_in(vow["vow_id"], make_trace(8), note="signed by the wallet", wallet_key=wallet_key, wait=30)
    assert signed["proof"]["kind"] == "wallet-signature" and signed["attested"] is False
    paid = client.report_in(vow["vow_id"], make_trace(8), paid=True, wait=30)
    assert paid["proof"]["kind"] == "x402-payer" and paid["attested"] is True and paid["seq"] == 2
    assert client.last_receipt and client.last_receipt["success"] is True
    assert [r.get("seq") for r in client.chain(vow["vow_id"])] == [None, 1, 2]


def test_a_validation_credential_is_verified_with_its_hash(env: dict[str, str], client: Client) -> None:
    trace = make_trace(10)
    assert client.payer is not None
    answer = client.validation(trace, metric="i_c_m", band="under_0.05", subject_form="wallet",
                               subject_id=client.payer.address.lower())
    cred = verify_credential(answer, env["CONDUCT_VKEY"], trace=trace, meter="meter/2")
    assert cred["subject"] == {"form": "wallet", "id": client.payer.address}
    assert cred["meter"] == meter_block("meter/2"), "the default meter"
    with pytest.raises(HashMismatchError):
        verify_credential(dict(answer, credential_hash="0x" + "ab" * 32), env["CONDUCT_VKEY"])


def test_refusals_are_problem_exceptions_naming_the_field(client: Client) -> None:
    bad = make_trace(4)
    bad["turns"][2]["context"]["monitored"] = 2
    with pytest.raises(ProblemError) as e:
        client.demo_profile(bad)
    assert e.value.status == 422 and e.value.name == "invalid" and e.value.type.endswith("#invalid")
    assert "/turns/2/context/monitored" in e.value.pointers and e.value.detail and e.value.title
    with pytest.raises(ProblemError) as e:
        client.report_in("0123456789abcdef", make_trace(4))
    assert e.value.status == 404 and e.value.name == "unknown-vow" and e.value.pointers == ["/vow_id"]
    with pytest.raises(ProblemError) as e:
        client.take_vow("a sealed vow needs a signature", "py-kit-sealed", 24, sealed=True)
    assert e.value.status == 422 and e.value.pointers
    with pytest.raises(ProblemError) as e:
        client.report_message("not-a-vow", make_trace(4))
    assert e.value.name == "invalid" and "?vow_id" in e.value.pointers


def test_an_idempotency_key_reused_for_another_trace_is_refused_before_payment(env: dict[str, str], client: Client) -> None:
    k = "py-kit-" + str(time.time_ns())
    client.profile(make_trace(7), idempotency_key=k)
    assert client.payer is not None
    before = balance(env, client.payer.address)
    with pytest.raises(ProblemError) as e:
        client.profile(make_trace(7), idempotency_key=k)
    assert e.value.name == "idempotency-key-reused" and e.value.status == 422
    assert balance(env, client.payer.address) == before


def test_payment_errors(env: dict[str, str], key: PinnedKey) -> None:
    with pytest.raises(PaymentError) as e:
        Client(env["CONDUCT_URL"], vkey=key).profile(make_trace(5))
    assert e.value.reason
    with pytest.raises(PaymentError):
        Client(env["CONDUCT_URL"], vkey=key, payer=payer(env, max_amount=PRICE - 1)).profile(make_trace(5))


def test_lookups_are_verified(client: Client) -> None:
    assert {m["metric"] for m in client.predicates()["metrics"]} >= {"i_c_d", "i_c_m"}
    reg = client.registry()
    assert reg["type"] == "conduct.registry/v1"
    for tool in reg.get("tools", [])[:2]:
        assert client.registry_tool(tool["toolId"])["type"] == "conduct.registry-tool/v1"
    board = client.munus()
    assert board["type"] == "conduct.munus/v1" and "walls" in board
    for q in board.get("quests", [])[:2]:
        assert client.quest(q["id"])["type"] == "conduct.munus-quest/v1"
    vows = client.vows()
    assert vows["type"] == "conduct.vows/v2" and vows["page_size"] == 256 and vows["count"] == len(vows["tail"])
    assert client.openapi()["openapi"].startswith("3.")
    assert "rails" in client.health()


def test_the_rendered_tree_verifies(env: dict[str, str], key: PinnedKey) -> None:
    report = verify_manifest(env["CONDUCT_SITE"], key, settle=60)
    assert report.counted and report.files > 50 and report.snapshots > 10


def test_the_served_tree_verifies_over_http(client: Client) -> None:
    report = client.manifest(settle=60)
    assert report.files > 50 and not report.counted


def _stable_copy(site: str, key: PinnedKey, dest: Path) -> Path:
    """A copy of the live tree that verifies (the service may write while we copy)."""
    deadline = time.monotonic() + 60
    while True:
        if dest.exists():
            shutil.rmtree(dest)
        shutil.copytree(site, dest, ignore=shutil.ignore_patterns(".conduct-tmp.*"))
        try:
            verify_manifest(dest, key)
            return dest
        except VerificationError:
            if time.monotonic() > deadline:
                raise


def test_a_tampered_copy_of_the_live_tree_is_refused(env: dict[str, str], key: PinnedKey, tmp_path: Path) -> None:
    site = _stable_copy(env["CONDUCT_SITE"], key, tmp_path / "copy")
    root = json.loads((site / "manifest.json").read_bytes())
    path, ent = sorted(root["bins"].items())[0]
    data = (site / path).read_bytes()
    prefix = path[len("manifest/"):-len(".json")]
    accepted = []
    for i, m, bad in flips(data):
        try:
            verify_bin(bad, key, prefix=prefix, files=ent["files"], length=ent["len"], sha256=ent["sha256"])
        except VerificationError:
            continue
        accepted.append((i, m))
    assert not accepted, accepted[:5]
    # Whole-tree changes, each on a fresh state of the copy.
    listed = next(iter(json.loads(data)["files"])) if "files" in json.loads(data) else "index.html"
    original = (site / listed).read_bytes()
    (site / listed).write_bytes(original + b" ")
    with pytest.raises(VerificationError, match=listed):
        verify_manifest(site, key)
    (site / listed).write_bytes(original)
    (site / "unlisted.txt").write_bytes(b"x")
    with pytest.raises(VerificationError, match="unlisted.txt"):
        verify_manifest(site, key)
    (site / "unlisted.txt").unlink()
    (site / path).write_bytes(data[:-1] + b" ")
    with pytest.raises(VerificationError, match=path):
        verify_manifest(site, key)
    (site / path).write_bytes(data)
    verify_manifest(site, key)


def _eventually(f: Callable[[], T], seconds: float = 30) -> T:
    """``f()`` once it stops raising (the service renders its pages after it answers)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return f()
        except (StopIteration, VerificationError):
            if time.monotonic() > deadline:
                raise
        time.sleep(0.2)


