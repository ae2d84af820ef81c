"""Offline: a vow's chain in linked pages (``conduct.chain/v2`` heads, ``conduct.chain_page/v2``
pages; library/VOWS.md, "The chain"), and the ``v1`` head that pinned every page, on chains
built here as the renderer writes them and signed with a key of the test's own."""

from __future__ import annotations

import hashlib
from typing import Any

import httpx
import pytest

from conduct_kit import (
    CHAIN_TYPE,
    ChainError,
    HashMismatchError,
    MalformedError,
    TypeMismatchError,
    VerificationError,
    verify_chain_files,
    verify_chain_head,
    verify_chain_page,
)
from conduct_kit.client import Client

from chains import SIZE, Signer, chain_files, head_doc, page_doc, page_pin, records, sha
from conftest import accepts, flips


@pytest.fixture(scope="module")
def signer() -> Signer:
    return Signer()


@pytest.fixture(scope="module")
def recs(signer: Signer) -> list[dict[str, Any]]:
    """A chain of 100 records: three full pages and a tail of 4."""
    return records(signer, 99)


@pytest.fixture(scope="module")
def files(signer: Signer, recs: list[dict[str, Any]]) -> tuple[bytes, list[bytes]]:
    return chain_files(signer, recs)


@pytest.mark.parametrize("entries,pages,tail", [(0, 0, 1), (4, 0, 5), (30, 0, 31), (31, 1, 0), (40, 1, 9), (99, 3, 4)])
def test_a_linked_chain_verifies(signer: Signer, entries: int, pages: int, tail: int) -> None:
    recs = records(signer, entries)
    head, files = chain_files(signer, recs)
    assert len(files) == pages
    doc = verify_chain_head(head, signer.pin, vow_id=recs[0]["vow_id"])
    assert doc["type"] == CHAIN_TYPE and doc["full_pages"] == pages and len(doc["tail"]) == tail
    assert (doc["last_page"] is None) == (pages == 0)
    assert verify_chain_files(head, files, signer.pin, vow_id=recs[0]["vow_id"]) == recs
    read: list[int] = []

    def reader(k: int) -> bytes:
        read.append(k)
        return files[k]

    assert verify_chain_files(head, reader, signer.pin) == recs
    assert read == list(range(pages - 1, -1, -1)), "the walk goes back from last_page, each page read once"


def test_the_pages_link_back_to_page_0(signer: Signer, recs: list[dict[str, Any]], files: tuple[bytes, list[bytes]]) -> None:
    head, pages = files
    vid = recs[0]["vow_id"]
    for k, p in enumerate(pages):
        doc = verify_chain_page(p, signer.pin, vow_id=vid, page=k)
        assert doc["prev_page_sha256"] == (sha(pages[k - 1]) if k else None)
        assert doc["records"] == recs[k * SIZE:(k + 1) * SIZE] and p.endswith(b"}\n")
    assert verify_chain_head(head, signer.pin)["last_page"] == page_pin(vid, 2, pages[2])


def test_a_v1_head_and_its_pages_still_verify(signer: Signer, recs: list[dict[str, Any]]) -> None:
    head, pages = chain_files(signer, recs, version=1)
    assert verify_chain_files(head, pages, signer.pin) == recs
    read: list[int] = []
    assert verify_chain_files(head, lambda k: read.append(k) or pages[k], signer.pin) == recs
    assert read == [0, 1, 2]
    # A v1 head's pages are v1 pages, a v2 head's v2 pages.
    v2head, v2pages = chain_files(signer, recs)
    with pytest.raises(HashMismatchError):
        verify_chain_files(head, v2pages, signer.pin)
    mixed = signer.file(head_doc(recs, v2pages, version=1))
    with pytest.raises(TypeMismatchError, match="chain page 0"):
        verify_chain_files(mixed, v2pages, signer.pin)
    mixed = signer.file(head_doc(recs, pages, version=2))
    with pytest.raises(TypeMismatchError, match="chain page 2"):
        verify_chain_files(mixed, pages, signer.pin)


def test_a_tampered_page_is_refused_by_its_pin(signer: Signer, files: tuple[bytes, list[bytes]]) -> None:
    head, pages = files
    for k in range(3):
        bad = bytearray(pages[k])
        bad[len(bad) // 2] ^= 0x01
        served = [bytes(bad) if j == k else p for j, p in enumerate(pages)]
        by = "last_page" if k == 2 else f"page {k + 1}'s prev_page_sha256"
        with pytest.raises(HashMismatchError, match=f"chain page {k}: .*{by}"):
            verify_chain_files(head, served, signer.pin)
    # Every 41st byte of the first page (pinned by page 1, itself pinned by the head).
    accepted = [(i, m) for i, m, bad in flips(pages[0], (0x01,))
                if i % 41 == 0 and accepts(lambda: verify_chain_files(head, [bad, pages[1], pages[2]], signer.pin))]
    assert not accepted, accepted[:10]


def test_a_wrong_prev_link_is_refused(signer: Signer, recs: list[dict[str, Any]], files: tuple[bytes, list[bytes]]) -> None:
    head, pages = files
    # Page 2 re-signed with its prev naming page 0, and the head pinning it as it is: page 1
    # is then refused, by page 2's link.
    doc = page_doc(recs, 2, pages[0])
    bad2 = signer.file(doc)
    head2 = signer.file(head_doc(recs, [pages[0], pages[1], bad2]))
    with pytest.raises(HashMismatchError, match="chain page 1: .*page 2's prev_page_sha256"):
        verify_chain_files(head2, [pages[0], pages[1], bad2], signer.pin)
    # Page 1 (and, re-linked, page 2 and the head) pinning a page 0 that is not the one served.
    other0 = signer.file(dict(page_doc(recs, 0, None), how="another page 0"))
    p1 = signer.file(page_doc(recs, 1, other0))
    p2 = signer.file(page_doc(recs, 2, p1))
    h = signer.file(head_doc(recs, [pages[0], p1, p2]))
    verify_chain_files(h, [other0, p1, p2], signer.pin)
    with pytest.raises(HashMismatchError, match="chain page 0: .*page 1's prev_page_sha256"):
        verify_chain_files(h, [pages[0], p1, p2], signer.pin)
    # A link that is not a SHA-256, a page after 0 with no link, page 0 with one.
    for change, error, match in (({"prev_page_sha256": "XY"}, MalformedError, "prev_page_sha256"),
                                 ({"prev_page_sha256": None}, MalformedError, "prev_page_sha256"),
                                 ({"page": 0, "from_position": 0}, ChainError, "chain page 1: is page 0")):
        p1 = signer.file(dict(page_doc(recs, 1, pages[0]), **change))
        p2 = signer.file(page_doc(recs, 2, p1))
        h = signer.file(head_doc(recs, [pages[0], p1, p2]))
        with pytest.raises(error, match=match):
            verify_chain_files(h, [pages[0], p1, p2], signer.pin)
    p0 = signer.file(page_doc(recs, 0, pages[2]))
    p1 = signer.file(page_doc(recs, 1, p0))
    p2 = signer.file(page_doc(recs, 2, p1))
    with pytest.raises(ChainError, match="chain page 0: page 0 pins no page"):
        verify_chain_files(signer.file(head_doc(recs, [p0, p1, p2])), [p0, p1, p2], signer.pin)
    no_link = {k: v for k, v in page_doc(recs, 0, None).items() if k != "prev_page_sha256"}
    p0 = signer.file(no_link)
    with pytest.raises(MalformedError, match="prev_page_sha256"):
        verify_chain_page(p0, signer.pin, page=0)


def test_a_missing_page_is_refused(signer: Signer, recs: list[dict[str, Any]], files: tuple[bytes, list[bytes]]) -> None:
    head, pages = files
    for given in ([], pages[:2], pages[1:], pages + [pages[0]]):
        with pytest.raises(MalformedError, match=f"has 3 full pages, {len(given)} given"):
            verify_chain_files(head, given, signer.pin)
    # Page 1 skipped: page 2 served where page 1 is read.
    with pytest.raises(HashMismatchError, match="chain page 1"):
        verify_chain_files(head, [pages[0], pages[2], pages[2]], signer.pin)
    # A head that says fewer full pages than the chain has, or none.
    short = signer.file(dict(head_doc(recs, pages[:2]), tail=recs[2 * SIZE:]))
    with pytest.raises(ChainError, match="tail holds 36 records"):
        verify_chain_files(short, pages[:2], signer.pin)
    for change, match in (({"full_pages": 2}, "last_page names"), ({"full_pages": 4}, "last_page names"),
                          ({"last_page": None}, "last_page is null|last_page is not an object"),
                          ({"tail_from_position": 64}, "tail_from_position 64"),
                          ({"length": 100}, "length 100")):
        bad = signer.file(dict(head_doc(recs, pages), **change))
        with pytest.raises(VerificationError, match=match):
            verify_chain_files(bad, pages, signer.pin)


def test_a_page_of_another_vow_is_refused(signer: Signer, recs: list[dict[str, Any]], files: tuple[bytes, list[bytes]]) -> None:
    head, pages = files
    other = records(signer, 40, tag="other", first_index=500)
    ohead, opages = chain_files(signer, other)
    vid, ovid = recs[0]["vow_id"], other[0]["vow_id"]
    # In place of page 0: refused by page 1's link.
    with pytest.raises(HashMismatchError, match="chain page 0"):
        verify_chain_files(head, [opages[0], pages[1], pages[2]], signer.pin)
    # Pinned, and correctly linked: refused as a page of another vow.
    p1 = signer.file(page_doc(recs, 1, opages[0]))
    p2 = signer.file(page_doc(recs, 2, p1))
    h = signer.file(head_doc(recs, [opages[0], p1, p2]))
    with pytest.raises(ChainError, match=f"chain page 0: is page 0 of {ovid}, not page 0 of {vid}"):
        verify_chain_files(h, [opages[0], p1, p2], signer.pin)
    # Another vow's head, or a head asked for as another vow's.
    with pytest.raises(ChainError, match=f"is the chain of {ovid}, not {vid}"):
        verify_chain_files(ohead, opages, signer.pin, vow_id=vid)
    # A page naming another head.
    p0 = signer.file(dict(page_doc(recs, 0, None), head=f"/vow/{ovid}/chain"))
    with pytest.raises(ChainError, match="head"):
        verify_chain_page(p0, signer.pin, vow_id=vid, page=0)


def test_a_wrong_last_page_pin_is_refused(signer: Signer, recs: list[dict[str, Any]], files: tuple[bytes, list[bytes]]) -> None:
    head, pages = files
    vid = recs[0]["vow_id"]
    doc = head_doc(recs, pages)
    wrong = dict(doc, last_page=dict(doc["last_page"], sha256=sha(pages[1])))
    with pytest.raises(HashMismatchError, match="chain page 2: .*the head's last_page"):
        verify_chain_files(signer.file(wrong), pages, signer.pin)
    for change, error in (({"href": f"/vow/{vid}/chain/1"}, ChainError), ({"from_position": 32}, ChainError),
                          ({"records": 31}, ChainError), ({"sha256": "XY"}, MalformedError)):
        bad = dict(doc, last_page=dict(doc["last_page"], **change))
        with pytest.raises(error, match="last_page"):
            verify_chain_files(signer.file(bad), pages, signer.pin)
    few = records(signer, 5)
    h, p = chain_files(signer, few)
    bad = dict(head_doc(few, p), last_page=page_pin(vid, 0, pages[0]))
    with pytest.raises(ChainError, match="no page is full"):
        verify_chain_files(signer.file(bad), [], signer.pin)
    with pytest.raises(MalformedError, match="last_page"):
        verify_chain_files(signer.file({k: v for k, v in doc.items() if k != "last_page"}), pages, signer.pin)


def test_pages_must_be_full_and_numbered(signer: Signer, recs: list[dict[str, Any]], files: tuple[bytes, list[bytes]]) -> None:
    head, pages = files
    for change, match in (({"records": recs[1:33]}, None), ({"records": recs[:31]}, "holds 32 records, this one 31"),
                          ({"from_position": 1}, "from_position 1"), ({"page": 1}, "is page 1"),
                          ({"type": "conduct.vows_page/v1"}, "type")):
        p0 = signer.file(dict(page_doc(recs, 0, None), **change))
        p1 = signer.file(page_doc(recs, 1, p0))
        p2 = signer.file(page_doc(recs, 2, p1))
        with pytest.raises(VerificationError, match=match):
            verify_chain_files(signer.file(head_doc(recs, [p0, p1, p2])), [p0, p1, p2], signer.pin)
    # A page signed by another key, and the chain's own head refused under another key.
    p0 = Signer(12).file(page_doc(recs, 0, None))
    p1 = signer.file(page_doc(recs, 1, p0))
    p2 = signer.file(page_doc(recs, 2, p1))
    with pytest.raises(VerificationError, match="chain page 0"):
        verify_chain_files(signer.file(head_doc(recs, [p0, p1, p2])), [p0, p1, p2], signer.pin)
    with pytest.raises(VerificationError, match="chain head"):
        verify_chain_files(head, pages, Signer(12).pin)
    with pytest.raises(TypeMismatchError):
        verify_chain_head(signer.file(dict(head_doc(recs, pages), type="conduct.chain/v3")), signer.pin)


def test_every_changed_byte_of_a_linked_head_is_refused(signer: Signer) -> None:
    recs = records(signer, 40)
    head, pages = chain_files(signer, recs)
    accepted = [(i, m) for i, m, bad in flips(head, (0x01,))
                if i % 3 == 0 and accepts(lambda: verify_chain_files(bad, pages, signer.pin))]
    assert not accepted, accepted[:10]


def _client(files: dict[str, bytes], asked: list[str], signer: Signer) -> Client:
    def serve(request: httpx.Request) -> httpx.Response:
        asked.append(request.url.path)
        body = files.get(request.url.path)
        if body is None:
            return httpx.Response(404, json={"type": "/library/ERRORS.md#not-found", "title": "Not found", "status": 404})
        return httpx.Response(200, content=body, headers={"content-type": "application/json"})

    return Client("http://conduct.test", vkey=signer.pin, http=httpx.Client(transport=httpx.MockTransport(serve)))


@pytest.mark.parametrize("version", [2, 1])
def test_the_client_follows_the_links(signer: Signer, recs: list[dict[str, Any]], version: int) -> None:
    head, pages = chain_files(signer, recs, version)
    vid = recs[0]["vow_id"]
    files = {f"/vow/{vid}/chain": head, **{f"/vow/{vid}/chain/{k}": p for k, p in enumerate(pages)}}
    asked: list[str] = []
    c = _client(files, asked, signer)
    assert c.chain(vid) == recs
    order = [2, 1, 0] if version == 2 else [0, 1, 2]
    assert asked == [f"/vow/{vid}/chain"] + [f"/vow/{vid}/chain/{k}" for k in order]
    assert c.chain_head(vid)["vow_id"] == vid
    assert c.chain_page(vid, 1)["from_position"] == SIZE
    files[f"/vow/{vid}/chain/1"] = pages[0]
    with pytest.raises(HashMismatchError, match="chain page 1"):
        c.chain(vid)
    with pytest.raises(ChainError, match="is page 0"):
        c.chain_page(vid, 1)


def test_a_pin_is_of_the_file_as_served(signer: Signer) -> None:
    # The hashes a v2 head pins are those of the files exactly as served, final newline included.
    recs = records(signer, 31)
    head, pages = chain_files(signer, recs)
    assert verify_chain_head(head, signer.pin)["last_page"]["sha256"] == hashlib.sha256(pages[0]).hexdigest()
    with pytest.raises(HashMismatchError):
        verify_chain_files(head, [pages[0].rstrip(b"\n")], signer.pin)
