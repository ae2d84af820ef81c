"""Offline: the public index of vows (``/vows``, ``conduct.vows/v2``, and its full pages
``/vows/<k>``, ``conduct.vows_page/v1``; library/VOWS.md), on indexes built here as the
renderer writes them and signed with a key of the test's own, so every refusal is reached."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

import httpx
import pytest
import rfc8785
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from conduct_kit import (
    VOWS_PAGE_SIZE,
    ChainError,
    HashMismatchError,
    MalformedError,
    PinnedKey,
    SignatureError,
    TypeMismatchError,
    VerificationError,
    verify_vows_files,
    verify_vows_head,
    verify_vows_page,
    vow_id_for,
)
from conduct_kit.client import Client

from chains import SCOPE
from conftest import accepts, flips

SIZE = VOWS_PAGE_SIZE


class Signer:
    def __init__(self, seed: int = 7) -> None:
        self.sk = Ed25519PrivateKey.from_private_bytes(bytes([seed]) * 32)
        self.pin = PinnedKey("example.org/log", self.sk.public_key().public_bytes_raw())

    def sign(self, body: dict[str, Any]) -> bytes:
        body = dict(body, scope=SCOPE, key_id=self.pin.key_id)
        body.pop("signature", None)
        s = base64.b64encode(self.sk.sign(rfc8785.dumps(body))).decode()
        return rfc8785.dumps(dict(body, signature=s))


def vow(pin: PinnedKey, i: int) -> dict[str, Any]:
    """Vow ``i`` as the index lists it (log indexes 10, 13, 16, ...; every fifth one sealed)."""
    text = f"I keep my word & report in ({i})"
    text_sha = hashlib.sha256(text.encode()).hexdigest()
    agent, index = f"agent-{i % 7}", 10 + 3 * i
    vid = vow_id_for(pin.origin, index, text_sha, agent)
    v: dict[str, Any] = {
        "vow_id": vid, "agent": agent, "sealed": i % 5 == 0, "sandbox": i % 2 == 0,
        "wallet": None if i % 2 == 0 else "0x" + "ab" * 20, "cadence_hours": 24.0,
        "taken_at": f"2026-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z", "log_index": index,
        "text_sha256": text_sha, "href": f"/vow/{vid}",
    }
    if not v["sealed"]:
        v["text"] = text
    return v


def pin_of(k: int, data: bytes) -> dict[str, Any]:
    return {"href": f"/vows/{k}", "page": k, "sha256": hashlib.sha256(data).hexdigest()}


def page_doc(k: int, vows: list[dict[str, Any]], prev: bytes | None) -> dict[str, Any]:
    return {"type": "conduct.vows_page/v1", "page": k, "from": k * SIZE, "order": "in the order taken",
            "prev": None if prev is None else pin_of(k - 1, prev), "head": "/vows", "vows": vows}


def head_doc(vows: list[dict[str, Any]], pages: list[bytes]) -> dict[str, Any]:
    p = len(pages)
    return {"type": "conduct.vows/v2", "count": len(vows), "order": "in the order taken", "page_size": SIZE,
            "pages": p, "last_page": pin_of(p - 1, pages[-1]) if pages else None, "tail_from": p * SIZE,
            "tail": vows[p * SIZE:], "how_to_verify": "walk back from the head"}


def build(s: Signer, vows: list[dict[str, Any]]) -> tuple[bytes, list[bytes]]:
    """The head and the full pages of an index of ``vows``, as the renderer writes them."""
    pages: list[bytes] = []
    for k in range(len(vows) // SIZE):
        pages.append(s.sign(page_doc(k, vows[k * SIZE:(k + 1) * SIZE], pages[-1] if pages else None)))
    return s.sign(head_doc(vows, pages)), pages


@pytest.fixture(scope="module")
def signer() -> Signer:
    return Signer()


@pytest.fixture(scope="module")
def vows(signer: Signer) -> list[dict[str, Any]]:
    return [vow(signer.pin, i) for i in range(2 * SIZE + 5)]


@pytest.fixture(scope="module")
def index(signer: Signer, vows: list[dict[str, Any]]) -> tuple[bytes, list[bytes]]:
    return build(signer, vows)


def test_walking_back_from_the_head_gives_every_vow_in_the_order_taken(
    signer: Signer, vows: list[dict[str, Any]], index: tuple[bytes, list[bytes]]
) -> None:
    head, pages = index
    assert len(pages) == 2
    read: list[int] = []

    def reader(k: int) -> bytes:
        read.append(k)
        return pages[k]

    got = verify_vows_files(head, reader, signer.pin)
    assert [v["vow_id"] for v in got] == [v["vow_id"] for v in vows]
    assert read == [1, 0], "the walk goes back from the last full page, each page read once"
    assert verify_vows_files(head, pages, signer.pin) == got
    assert "text" not in got[0] and got[1]["text"].endswith("(1)")
    for n in (0, 3, SIZE, SIZE + 1):  # no page, a tail alone, one full page and no tail, ...
        h, p = build(signer, vows[:n])
        assert [v["log_index"] for v in verify_vows_files(h, p, signer.pin)] == [v["log_index"] for v in vows[:n]]
    h, p = build(signer, vows[:3])
    assert verify_vows_head(h, signer.pin)["last_page"] is None and p == []
    assert verify_vows_files(h, lambda k: pytest.fail(f"no page to read, {k} read"), signer.pin)


def test_a_tampered_page_is_refused_by_its_pin(signer: Signer, index: tuple[bytes, list[bytes]]) -> None:
    head, pages = index
    for k in (0, 1):
        bad = bytearray(pages[k])
        bad[len(bad) // 2] ^= 0x01
        served = [bytes(bad) if j == k else p for j, p in enumerate(pages)]
        with pytest.raises(HashMismatchError, match=f"vows page {k}"):
            verify_vows_files(head, served, signer.pin)
    # A page correctly signed (by the service's key, even) but not the one pinned.
    other = signer.sign(dict(page_doc(0, [dict(v) for v in verify_vows_page(pages[0], signer.pin)["vows"]], None),
                             order="another order"))
    with pytest.raises(HashMismatchError, match="page 1's prev"):
        verify_vows_files(head, [other, pages[1]], signer.pin)
    # Every byte of the last page, changed, is refused (every 13th position of its ~80 KB).
    accepted = [(i, m) for i, m, bad in flips(pages[1], (0x01,))
                if i % 13 == 0 and accepts(lambda: verify_vows_files(head, [pages[0], bad], signer.pin))]
    assert not accepted, accepted[:10]


def test_a_wrong_pin_is_refused(signer: Signer, vows: list[dict[str, Any]], index: tuple[bytes, list[bytes]]) -> None:
    head, pages = index
    doc = head_doc(vows, pages)
    wrong = dict(doc, last_page=dict(doc["last_page"], sha256=hashlib.sha256(pages[0]).hexdigest()))
    with pytest.raises(HashMismatchError, match="last_page"):
        verify_vows_files(signer.sign(wrong), pages, signer.pin)
    # Page 1 re-signed with a wrong prev, and pinned by the head as it is: page 0 is refused.
    p1 = page_doc(1, vows[SIZE:2 * SIZE], pages[0])
    p1["prev"] = dict(p1["prev"], sha256="0" * 64)
    bad1 = signer.sign(p1)
    head2 = signer.sign(head_doc(vows, [pages[0], bad1]))
    with pytest.raises(HashMismatchError, match="vows page 0"):
        verify_vows_files(head2, [pages[0], bad1], signer.pin)
    # A pin that names another page (the head's last_page naming page 0), or a malformed one.
    for pin in ({"href": "/vows/0", "page": 0, "sha256": doc["last_page"]["sha256"]},
                {"href": "/vows/9", "page": 1, "sha256": doc["last_page"]["sha256"]}):
        with pytest.raises(ChainError, match="last_page"):
            verify_vows_files(signer.sign(dict(doc, last_page=pin)), pages, signer.pin)
    with pytest.raises(MalformedError):
        verify_vows_files(signer.sign(dict(doc, last_page=dict(doc["last_page"], sha256="XY"))), pages, signer.pin)
    with pytest.raises(ChainError, match="last_page"):
        verify_vows_files(signer.sign(dict(doc, last_page=None)), pages, signer.pin)


def test_pages_must_be_full_numbered_and_chained(signer: Signer, vows: list[dict[str, Any]]) -> None:
    def served(p0: dict[str, Any], p1: dict[str, Any] | None = None) -> tuple[bytes, list[bytes]]:
        b0 = signer.sign(p0)
        b1 = signer.sign(p1 if p1 is not None else page_doc(1, vows[SIZE:2 * SIZE], b0))
        return signer.sign(head_doc(vows, [b0, b1])), [b0, b1]

    good = page_doc(0, vows[:SIZE], None)
    verify_vows_files(*served(good), signer.pin)
    cases: dict[str, tuple[dict[str, Any], dict[str, Any] | None, str]] = {
        "from": (dict(good, **{"from": 1}), None, "from 1"),
        "page number": (dict(good, page=1), None, "is page 1, not page 0"),
        "short page": (dict(good, vows=vows[:SIZE - 1]), None, "holds 256 vows, this one 255"),
        "long page": (dict(good, vows=vows[:SIZE + 1]), None, "this one 257"),
        "prev on page 0": (dict(good, prev=pin_of(0, b"x")), None, "page 0 pins no page"),
        "swapped vows": (dict(good, vows=[vows[1], vows[0]] + vows[2:SIZE]), None, "not after"),
        "no prev on page 1": (good, page_doc(1, vows[SIZE:2 * SIZE], None), "prev"),
    }
    for what, (p0, p1, match) in cases.items():
        with pytest.raises(VerificationError, match=match):
            verify_vows_files(*served(p0, p1), signer.pin)
            pytest.fail(what)
    with pytest.raises(MalformedError):
        verify_vows_files(*served({k: v for k, v in good.items() if k != "prev"}), signer.pin)
    # Each page in order alone, but page 1 before page 0 in the order taken.
    later = [dict(v, log_index=v["log_index"] + 10_000) for v in vows[:SIZE]]
    later = [dict(v, vow_id=vow_id_for(signer.pin.origin, v["log_index"], v["text_sha256"], v["agent"])) for v in later]
    later = [dict(v, href=f"/vow/{v['vow_id']}") for v in later]
    verify_vows_page(signer.sign(page_doc(0, later, None)), signer.pin, page=0)
    with pytest.raises(ChainError, match="vows page 1, vow 256"):
        verify_vows_files(*served(page_doc(0, later, None)), signer.pin)
    # A page of another type, or signed by another key.
    with pytest.raises(TypeMismatchError):
        verify_vows_files(*served(dict(good, type="conduct.chain_page/v1")), signer.pin)
    b0 = Signer(8).sign(good)
    b1 = signer.sign(page_doc(1, vows[SIZE:2 * SIZE], b0))
    with pytest.raises(VerificationError, match="vows page 0"):
        verify_vows_files(signer.sign(head_doc(vows, [b0, b1])), [b0, b1], signer.pin)


def test_the_head_must_add_up(signer: Signer, vows: list[dict[str, Any]], index: tuple[bytes, list[bytes]]) -> None:
    head, pages = index
    doc = head_doc(vows, pages)
    for change, match in (({"count": len(vows) + 1}, "count"), ({"tail_from": 2 * SIZE - 1}, "tail_from"),
                          ({"pages": 1}, "tail_from"), ({"tail": vows[2 * SIZE + 1:]}, "count"),
                          ({"tail": [vows[0]] + vows[2 * SIZE + 1:]}, "not after")):
        with pytest.raises(VerificationError, match=match):
            verify_vows_files(signer.sign(dict(doc, **change)), pages, signer.pin)
    with pytest.raises(TypeMismatchError):
        verify_vows_head(signer.sign(dict(doc, type="conduct.vows/v1")), signer.pin)
    with pytest.raises(SignatureError):
        verify_vows_head(Signer(8).sign(doc).replace(Signer(8).pin.key_id.encode(), signer.pin.key_id.encode()),
                         signer.pin)
    with pytest.raises(VerificationError):
        verify_vows_files(head, pages[:1], signer.pin)
    accepted = [(i, m) for i, m, bad in flips(head, (0x01,))
                if i % 3 == 0 and accepts(lambda: verify_vows_files(bad, pages, signer.pin))]
    assert not accepted, accepted[:10]


def test_each_listed_vow_is_checked(signer: Signer, vows: list[dict[str, Any]]) -> None:
    sealed, open_ = vows[0], vows[1]
    cases = {
        "a sealed vow with its text": (dict(sealed, text="x"), MalformedError),
        "an open vow without it": ({k: v for k, v in open_.items() if k != "text"}, MalformedError),
        "another text": (dict(open_, text="another text"), HashMismatchError),
        "another agent": (dict(open_, agent="someone-else"), ChainError),
        "another log index": (dict(open_, log_index=open_["log_index"] + 1), ChainError),
        "another href": (dict(open_, href="/vow/0000000000000000"), MalformedError),
        "no taken_at": ({k: v for k, v in open_.items() if k != "taken_at"}, MalformedError),
    }
    for what, (changed, error) in cases.items():
        with pytest.raises(error):
            verify_vows_head(signer.sign(head_doc([sealed, changed], [])), signer.pin)
            pytest.fail(what)


def test_the_client_reads_the_head_a_page_and_every_vow(
    signer: Signer, vows: list[dict[str, Any]], index: tuple[bytes, list[bytes]]
) -> None:
    head, pages = index
    files = {"/vows": head, "/vows/0": pages[0], "/vows/1": pages[1]}
    asked: list[str] = []

    def serve(request: httpx.Request) -> httpx.Response:
        asked.append(request.url.path)
        body = files.get(request.url.path)
        if body is None:
            return httpx.Response(404, json={"type": "/library/ERRORS.md#not-found", "title": "Not found", "status": 404})
        return httpx.Response(200, content=body, headers={"content-type": "application/json"})

    c = Client("http://conduct.test", vkey=signer.pin, http=httpx.Client(transport=httpx.MockTransport(serve)))
    assert c.vows()["count"] == len(vows)
    assert c.vows_page(1)["from"] == SIZE
    asked.clear()
    assert [v["vow_id"] for v in c.all_vows()] == [v["vow_id"] for v in vows]
    assert asked == ["/vows", "/vows/1", "/vows/0"]
    files["/vows/0"] = pages[0].replace(b'"sealed":true', b'"sealed":false', 1)
    with pytest.raises(HashMismatchError):
        c.all_vows()
    files["/vows/0"] = pages[1]
    with pytest.raises(ChainError, match="is page 1, not page 0"):
        c.vows_page(0)


