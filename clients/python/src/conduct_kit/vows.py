"""Vows, report-in entries and their hash chains (library/VOWS.md, "Record formats").

- ``conduct.vow/v1``: the vow record. ``vow_id`` is the first 8 bytes, in hex, of SHA-256 over
  the length-prefixed strings ``conduct.vow_id/v1``, the log origin, the decimal log index,
  ``text_sha256`` and ``agent`` (each prefixed by its UTF-8 length as 8 bytes, big-endian).
- ``conduct.entry/v1``: one report-in. Entry 1's ``prev`` is the hex SHA-256 of the vow
  record's leaf bytes (its RFC 8785 bytes, signature included); entry n's is that of entry
  n-1's. ``seq`` counts 1, 2, ...; ``log_index`` is the record's position in the log and
  grows along the chain; ``at`` never decreases.
- ``conduct.chain/v1`` (``/vow/<id>/chain``) and ``conduct.chain_page/v1``
  (``/vow/<id>/chain/<k>``): the raw chain in pages of 32 records; the signed head pins each
  full page by the SHA-256 of its file and carries the rest in ``tail``.
- ``conduct.vows/v2`` (``/vows``) and ``conduct.vows_page/v1`` (``/vows/<k>``): the public
  index of every vow, in the order taken (by log index), oldest first, in immutable pages of
  256. The signed head pins the last full page (``last_page``) by the SHA-256 of its file and
  lists the vows after it (``tail``); each page pins the one before it (``prev``), so walking
  back from the head reaches every vow (library/VOWS.md, "The index of vows").
"""

from __future__ import annotations

import hashlib
import struct
from datetime import datetime
from typing import Any, Callable, Mapping, Sequence

from ._codec import JsonObject, fail, hex64, member, parse_object, uint
from .errors import ChainError, HashMismatchError, VerificationError
from .keys import KeyLike, PinnedKey
from .signed import leaf_bytes, trace_sha256, verify_signed

__all__ = [
    "VOW_TYPE",
    "ENTRY_TYPE",
    "CHAIN_TYPE",
    "CHAIN_PAGE_TYPE",
    "vow_id_for",
    "record_sha256",
    "verify_vow_record",
    "verify_entry",
    "verify_link",
    "verify_chain",
    "verify_chain_files",
    "VOWS_TYPE",
    "VOWS_PAGE_TYPE",
    "VOWS_PAGE_SIZE",
    "verify_vows_head",
    "verify_vows_page",
    "verify_vows_files",
]

VOW_TYPE = "conduct.vow/v1"
ENTRY_TYPE = "conduct.entry/v1"
CHAIN_TYPE = "conduct.chain/v1"
CHAIN_PAGE_TYPE = "conduct.chain_page/v1"
VOWS_TYPE = "conduct.vows/v2"
VOWS_PAGE_TYPE = "conduct.vows_page/v1"
#: Vows in a full page of the index: ``/vows/<k>`` holds the vows taken ``256k .. 256k+255``.
VOWS_PAGE_SIZE = 256
PROOF_KINDS = frozenset({"sandbox-open", "wallet-signature", "x402-payer"})


def vow_id_for(origin: str, log_index: int, text_sha256: str, agent: str) -> str:
    """The vow id the service assigns to the vow recorded at ``log_index``."""
    h = hashlib.sha256()
    for part in ("conduct.vow_id/v1", origin, str(log_index), text_sha256, agent):
        b = part.encode("utf-8")
        h.update(struct.pack(">Q", len(b)))
        h.update(b)
    return h.digest()[:8].hex()


def record_sha256(record: Mapping[str, Any]) -> str:
    """The hex SHA-256 of a record's leaf bytes: what the next entry's ``prev`` names."""
    return hashlib.sha256(leaf_bytes(record)).hexdigest()


def _instant(value: Any, subject: str, what: str) -> datetime:
    if not isinstance(value, str) or not value.endswith("Z"):
        fail(subject, f"{what} is not an RFC 3339 UTC instant")
    try:
        return datetime.fromisoformat(value[:-1] + "+00:00")
    except ValueError:
        fail(subject, f"{what} {value!r} is not an RFC 3339 instant")


def _check_text(doc: JsonObject, sealed: bool, text_hash: str, subject: str) -> None:
    """A sealed vow publishes no ``text``; an open one publishes the text ``text_sha256`` hashes."""
    if sealed:
        if "text" in doc:
            fail(subject, "a sealed vow publishes no text")
    else:
        text = member(doc, "text", str, subject)
        if hashlib.sha256(text.encode("utf-8")).hexdigest() != text_hash:
            raise HashMismatchError(subject, "text_sha256 is not the SHA-256 of text")


def verify_vow_record(data: bytes | str | Mapping[str, Any], key: KeyLike) -> JsonObject:
    """Verify a ``conduct.vow/v1`` record: its signature, its ``vow_id`` (derived from the
    pinned key's origin), its text hash (an open vow) and the sandbox and sealed rules."""
    pin = PinnedKey.parse(key)
    subject = "vow record"
    doc = verify_signed(data, pin, expected_type=VOW_TYPE, subject=subject)
    vid = member(doc, "vow_id", str, subject)
    text_hash = hex64(doc.get("text_sha256"), subject, "text_sha256")
    agent = member(doc, "agent", str, subject)
    index = uint(doc, "log_index", subject)
    want = vow_id_for(pin.origin, index, text_hash, agent)
    if vid != want:
        raise ChainError(subject, f"vow_id {vid} is not the id its log index, text and agent give ({want})")
    sealed = member(doc, "sealed", bool, subject)
    sandbox = member(doc, "sandbox", bool, subject)
    _instant(doc.get("at"), subject, "at")
    _check_text(doc, sealed, text_hash, subject)
    if sandbox:
        member(doc, "sandbox_reason", str, subject)
        if doc.get("wallet") is not None:
            fail(subject, "a sandbox vow records no wallet")
    else:
        member(doc, "wallet", str, subject)
        member(doc, "wallet_signature", str, subject)
    return doc


def verify_entry(
    data: bytes | str | Mapping[str, Any],
    key: KeyLike,
    *,
    previous: Mapping[str, Any] | None = None,
    trace: Mapping[str, Any] | None = None,
) -> JsonObject:
    """Verify a ``conduct.entry/v1`` (a report-in): its signature and shape, and, with
    ``previous`` (the vow record for entry 1, else entry n-1, as verified), its link (see
    :func:`verify_link`). With ``trace``, its ``trace_sha256`` is recomputed."""
    subject = "entry"
    doc = verify_signed(data, key, expected_type=ENTRY_TYPE, subject=subject)
    seq = uint(doc, "seq", subject)
    if seq < 1:
        fail(subject, "seq counts from 1")
    hex64(doc.get("prev"), subject, "prev")
    got = hex64(doc.get("trace_sha256"), subject, "trace_sha256")
    member(doc, "vow_id", str, subject)
    uint(doc, "log_index", subject)
    _instant(doc.get("at"), subject, "at")
    member(doc, "attested", bool, subject)
    member(doc, "trace_donated", bool, subject)
    proof = member(doc, "proof", dict, subject)
    if proof.get("kind") not in PROOF_KINDS:
        fail(subject, f"proof kind {proof.get('kind')!r} is not one of {sorted(PROOF_KINDS)}")
    if ("declared_y" in doc) == ("declared_y_withheld" in doc):
        fail(subject, "an entry carries exactly one of declared_y and declared_y_withheld")
    if trace is not None and got != trace_sha256(trace):
        raise HashMismatchError(subject, f"trace_sha256 {got} is not the trace's hash {trace_sha256(trace)}")
    if previous is not None:
        verify_link(previous, doc)
    return doc


def verify_link(previous: Mapping[str, Any], entry: Mapping[str, Any], position: int | None = None) -> None:
    """Check that ``entry`` follows ``previous`` in its vow's chain: the same vow, ``seq`` one
    more (1 after the vow record), ``prev`` the SHA-256 of ``previous``'s leaf bytes, a larger
    ``log_index`` and an ``at`` no earlier. Both must already be verified records."""
    subject = f"chain record {position}" if position is not None else "chain link"
    is_vow = previous.get("type") == VOW_TYPE
    if entry.get("vow_id") != previous.get("vow_id"):
        raise ChainError(subject, f"vow_id {entry.get('vow_id')} is not {previous.get('vow_id')}")
    want_seq = 1 if is_vow else int(previous.get("seq", -1)) + 1
    if entry.get("seq") != want_seq:
        raise ChainError(subject, f"seq {entry.get('seq')} where {want_seq} follows")
    want_prev = record_sha256(previous)
    if entry.get("prev") != want_prev:
        raise ChainError(subject, f"prev {entry.get('prev')} is not the previous record's hash {want_prev}")
    pi, ei = previous.get("log_index"), entry.get("log_index")
    if not isinstance(pi, int) or not isinstance(ei, int) or ei <= pi:
        raise ChainError(subject, f"log_index {ei} does not follow {pi}")
    if _instant(entry.get("at"), subject, "at") < _instant(previous.get("at"), subject, "at"):
        raise ChainError(subject, f"at {entry.get('at')} is earlier than the previous record's {previous.get('at')}")


def verify_chain(records: Sequence[bytes | str | Mapping[str, Any]], key: KeyLike) -> list[JsonObject]:
    """Verify a whole chain in order: position 0 the vow record, then entries ``seq`` 1, 2, ...
    Every record's signature and every link is checked. Returns the parsed records."""
    pin = PinnedKey.parse(key)
    if not records:
        fail("chain", "no records (position 0 is the vow record)")
    out: list[JsonObject] = []
    for n, rec in enumerate(records):
        try:
            doc = verify_vow_record(rec, pin) if n == 0 else verify_entry(rec, pin)
        except VerificationError as e:
            raise type(e)(f"chain record {n} ({e.subject})", e.reason) from e
        if n > 0:
            verify_link(out[-1], doc, n)
        out.append(doc)
    return out


def verify_chain_files(
    head: bytes | str | Mapping[str, Any],
    pages: Sequence[bytes],
    key: KeyLike,
    *,
    vow_id: str | None = None,
) -> list[JsonObject]:
    """Read a whole chain from its signed head (``/vow/<id>/chain``) and the bytes of each full
    page it pins (``/vow/<id>/chain/<k>``, in order), and verify it.

    Checks the head's signature, each page file against the SHA-256 the head pins and then its
    own signature, page number, ``from_position`` and record count, that ``tail`` starts where
    the pages end, ``length`` (the number of entries), ``head_sha256`` (the last record's), and
    then the chain itself (:func:`verify_chain`). Returns every record, position 0 first.
    """
    pin = PinnedKey.parse(key)
    subject = "chain head"
    doc = verify_signed(head, pin, expected_type=CHAIN_TYPE, subject=subject)
    vid = member(doc, "vow_id", str, subject)
    if vow_id is not None and vid != vow_id:
        raise ChainError(subject, f"is the chain of {vid}, not {vow_id}")
    size = uint(doc, "page_size", subject)
    listed = member(doc, "pages", list, subject)
    if len(listed) != len(pages):
        fail(subject, f"pins {len(listed)} pages, {len(pages)} given")
    records: list[Any] = []
    for k, (pin_k, raw) in enumerate(zip(listed, pages)):
        psub = f"chain page {k}"
        if not isinstance(pin_k, dict):
            fail(subject, f"pages[{k}] is not an object")
        want = hex64(pin_k.get("sha256"), subject, f"pages[{k}].sha256")
        got = hashlib.sha256(raw).hexdigest()
        if got != want:
            raise HashMismatchError(psub, f"file SHA-256 {got} is not the head's pin {want}")
        page = verify_signed(raw, pin, expected_type=CHAIN_PAGE_TYPE, subject=psub, require_scope=False)
        if page.get("vow_id") != vid or page.get("page") != k or page.get("from_position") != k * size:
            raise ChainError(psub, f"is not page {k} of {vid} from position {k * size}")
        recs = member(page, "records", list, psub)
        if len(recs) != size or pin_k.get("records", size) != size:
            raise ChainError(psub, f"a full page holds {size} records, this one {len(recs)}")
        records.extend(recs)
    if member(doc, "tail_from_position", int, subject) != len(records):
        raise ChainError(subject, f"tail_from_position {doc.get('tail_from_position')} where the pages end at {len(records)}")
    records.extend(member(doc, "tail", list, subject))
    if uint(doc, "length", subject) != len(records) - 1:
        raise ChainError(subject, f"length {doc.get('length')} but {len(records) - 1} entries")
    out = verify_chain(records, pin)
    if doc.get("head_sha256") != record_sha256(out[-1]):
        raise ChainError(subject, "head_sha256 is not the SHA-256 of the last record")
    return out


def _listed_vow(value: Any, origin: str, subject: str) -> JsonObject:
    """Check one vow as the index lists it: its id derived from ``origin``, its log index, its
    text hash (an open vow), no text for a sealed one, and its page's ``href``."""
    if not isinstance(value, dict):
        fail(subject, "is not an object")
    vid = member(value, "vow_id", str, subject)
    agent = member(value, "agent", str, subject)
    index = uint(value, "log_index", subject)
    text_hash = hex64(value.get("text_sha256"), subject, "text_sha256")
    member(value, "sandbox", bool, subject)
    _instant(value.get("taken_at"), subject, "taken_at")
    want = vow_id_for(origin, index, text_hash, agent)
    if vid != want:
        raise ChainError(subject, f"vow_id {vid} is not the id its log index, text and agent give ({want})")
    if value.get("href") != f"/vow/{vid}":
        fail(subject, f"href {value.get('href')!r} is not /vow/{vid}")
    _check_text(value, member(value, "sealed", bool, subject), text_hash, subject)
    return value


def _listed_vows(values: Any, origin: str, subject: str, first: int) -> list[JsonObject]:
    """Check a run of listed vows (ranks ``first ..``): each one, and log indexes increasing."""
    if not isinstance(values, list):
        fail(subject, "vows are not an array")
    out: list[JsonObject] = []
    for n, v in enumerate(values):
        vow = _listed_vow(v, origin, f"{subject}, vow {first + n}")
        if out and vow["log_index"] <= out[-1]["log_index"]:
            raise ChainError(f"{subject}, vow {first + n}", f"log_index {vow['log_index']} is not after {out[-1]['log_index']} (the order taken)")
        out.append(vow)
    return out


def _page_pin(value: Any, k: int, subject: str, what: str) -> str:
    """The SHA-256 a pin ``{"href": "/vows/<k>", "page": k, "sha256"}`` names for page ``k``."""
    if value is None:
        raise ChainError(subject, f"{what} is null where page {k} is full")
    if not isinstance(value, dict):
        fail(subject, f"{what} is not an object")
    if value.get("page") != k or value.get("href") != f"/vows/{k}":
        raise ChainError(subject, f"{what} names page {value.get('page')!r} ({value.get('href')!r}), not page {k} (/vows/{k})")
    return hex64(value.get("sha256"), subject, f"{what}.sha256")


def verify_vows_head(data: bytes | str | Mapping[str, Any], key: KeyLike) -> JsonObject:
    """Verify the head of the index of vows (``/vows``, ``conduct.vows/v2``): its signature, that
    ``tail_from`` is where the ``pages`` full pages of ``page_size`` end, that ``count`` is
    ``tail_from`` plus the tail, that ``last_page`` pins page ``pages - 1`` (``null`` when no page
    is full), and every vow of the tail (see :func:`verify_vows_files` for the whole index)."""
    pin = PinnedKey.parse(key)
    subject = "vows head"
    doc = verify_signed(data, pin, expected_type=VOWS_TYPE, subject=subject)
    size = uint(doc, "page_size", subject)
    if size < 1:
        fail(subject, "page_size is 0")
    pages = uint(doc, "pages", subject)
    if uint(doc, "tail_from", subject) != pages * size:
        raise ChainError(subject, f"tail_from {doc['tail_from']} where {pages} pages of {size} end at {pages * size}")
    tail = _listed_vows(doc.get("tail"), pin.origin, subject, pages * size)
    if uint(doc, "count", subject) != pages * size + len(tail):
        raise ChainError(subject, f"count {doc['count']} but {pages} pages of {size} and {len(tail)} in the tail")
    _pin_unless_first(doc, "last_page", pages, subject, "last_page pins a page where no page is full")
    return doc


def _pin_unless_first(doc: Mapping[str, Any], member: str, k: int, subject: str, why: str) -> None:
    """``doc[member]`` is ``null`` when ``k`` is 0 (``why`` says so otherwise), else a pin of
    page ``k - 1``."""
    if member not in doc:
        fail(subject, f"member '{member}' is missing")
    if k == 0:
        if doc[member] is not None:
            raise ChainError(subject, why)
    else:
        _page_pin(doc[member], k - 1, subject, member)


def verify_vows_page(
    data: bytes | str | Mapping[str, Any],
    key: KeyLike,
    *,
    page: int | None = None,
    page_size: int = VOWS_PAGE_SIZE,
) -> JsonObject:
    """Verify one full page of the index of vows (``/vows/<k>``, ``conduct.vows_page/v1``): its
    signature, its number (``page``, when given), ``from`` = ``page_size * k``, exactly
    ``page_size`` vows each as the index lists them and in the order taken, and ``prev``:
    ``null`` on page 0, else a pin of page ``k - 1``. Its bytes against the pin that names it
    are :func:`verify_vows_files`'s."""
    pin = PinnedKey.parse(key)
    subject = f"vows page {page}" if page is not None else "vows page"
    doc = verify_signed(data, pin, expected_type=VOWS_PAGE_TYPE, subject=subject)
    k = uint(doc, "page", subject)
    if page is not None and k != page:
        raise ChainError(subject, f"is page {k}, not page {page}")
    subject = f"vows page {k}"
    if uint(doc, "from", subject) != k * page_size:
        raise ChainError(subject, f"from {doc['from']} where page {k} starts at {k * page_size}")
    vows = _listed_vows(doc.get("vows"), pin.origin, subject, k * page_size)
    if len(vows) != page_size:
        raise ChainError(subject, f"a full page holds {page_size} vows, this one {len(vows)}")
    _pin_unless_first(doc, "prev", k, subject, "page 0 pins no page before it")
    return doc


def verify_vows_files(
    head: bytes | str | Mapping[str, Any],
    pages: Sequence[bytes] | Callable[[int], bytes],
    key: KeyLike,
) -> list[JsonObject]:
    """Read the whole index of vows from its signed head (``/vows``) and the bytes of its full
    pages (``/vows/<k>``), and verify it: every vow, in the order taken, oldest first.

    ``pages`` is the page files in order (page 0 first) or a function that reads page ``k``'s
    bytes as served. The walk goes back from the head: the bytes of page ``pages - 1`` must
    have the SHA-256 that ``last_page`` pins, then each page is verified
    (:func:`verify_vows_page`) before the pin in its ``prev`` is trusted for the page before
    it, down to page 0. Log indexes increase across the pages and into the tail.
    """
    pin = PinnedKey.parse(key)
    doc = verify_vows_head(head, pin)
    size, count = doc["page_size"], doc["pages"]
    read: Callable[[int], bytes] = pages if callable(pages) else pages.__getitem__
    if not callable(pages) and len(pages) != count:
        fail("vows head", f"has {count} full pages, {len(pages)} given")
    listed: list[list[JsonObject]] = []
    want = doc["last_page"]["sha256"] if count else None
    for k in range(count - 1, -1, -1):
        raw = read(k)
        got = hashlib.sha256(raw).hexdigest()
        if got != want:
            by = "the head's last_page" if k == count - 1 else f"page {k + 1}'s prev"
            raise HashMismatchError(f"vows page {k}", f"file SHA-256 {got} is not the pin of {by} {want}")
        page = verify_vows_page(raw, pin, page=k, page_size=size)
        listed.append(page["vows"])
        want = page["prev"]["sha256"] if k else None
    tail: list[JsonObject] = doc["tail"]
    out = [v for vows in reversed(listed) for v in vows] + tail
    # Within a page and within the tail the order is checked already; here, across them.
    for r in range(size, len(out), size):
        if out[r]["log_index"] <= out[r - 1]["log_index"]:
            where = f"vows page {r // size}" if r < count * size else "vows head"
            raise ChainError(f"{where}, vow {r}", f"log_index {out[r]['log_index']} is not after {out[r - 1]['log_index']} (the order taken)")
    return out


def parse_record(data: bytes | str | Mapping[str, Any]) -> JsonObject:
    """Parse a record without verifying it (for display; verify before you rely on it)."""
    return parse_object(dict(data) if isinstance(data, Mapping) else data, "record")
