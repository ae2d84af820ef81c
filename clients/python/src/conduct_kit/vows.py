"""Vows, report-in entries and their hash chains (library/VOWS.md, "Record formats").

- ``conduct.vow/v1``: the vow record. ``vow_id`` is the first 8 bytes, in hex, of SHA-256 over
  the length-prefixed strings ``conduct.vow_id/v1``, the log origin, the decimal log index,
  ``text_sha256`` and ``agent`` (each prefixed by its UTF-8 length as 8 bytes, big-endian).
- ``conduct.entry/v1``: one report-in. Entry 1's ``prev`` is the hex SHA-256 of the vow
  record's leaf bytes (its RFC 8785 bytes, signature included); entry n's is that of entry
  n-1's. ``seq`` counts 1, 2, ...; ``log_index`` is the record's position in the log and
  grows along the chain; ``at`` never decreases.
- ``conduct.chain/v2`` (``/vow/<id>/chain``) and ``conduct.chain_page/v2``
  (``/vow/<id>/chain/<k>``): the raw chain in pages of 32 records. The signed head pins only
  the last full page (``last_page``) by the SHA-256 of its file and carries the records after
  it in ``tail``; each page pins the one before it (``prev_page_sha256``, ``null`` on page 0),
  so walking back from the head reaches every page (library/VOWS.md, "The chain"). The
  kit still reads ``conduct.chain/v1`` heads, which pin every full page (``pages``), and their
  ``conduct.chain_page/v1`` pages (no ``prev_page_sha256``).
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
from typing import Any, Callable, Iterator, Mapping, Sequence

from ._codec import JsonObject, fail, hex64, member, parse_object, uint
from .errors import ChainError, HashMismatchError, TypeMismatchError, VerificationError
from .keys import KeyLike, PinnedKey
from .meter import check_meter
from .signed import leaf_bytes, trace_sha256, verify_signed

__all__ = [
    "VOW_TYPE",
    "ENTRY_TYPE",
    "CHAIN_TYPE",
    "CHAIN_PAGE_TYPE",
    "CHAIN_V1_TYPE",
    "CHAIN_PAGE_V1_TYPE",
    "CHAIN_PAGE_SIZE",
    "vow_id_for",
    "record_sha256",
    "verify_vow_record",
    "verify_entry",
    "verify_link",
    "verify_chain",
    "verify_chain_head",
    "verify_chain_page",
    "chain_page_count",
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
#: The chain head (``/vow/<id>/chain``) the service writes: it pins the last full page.
CHAIN_TYPE = "conduct.chain/v2"
#: A full page of a chain (``/vow/<id>/chain/<k>``), pinning the page before it.
CHAIN_PAGE_TYPE = "conduct.chain_page/v2"
#: The chain head before linked pages: it pinned every full page (``pages``). Still read.
CHAIN_V1_TYPE = "conduct.chain/v1"
#: A page of a ``conduct.chain/v1`` head (no ``prev_page_sha256``). Still read.
CHAIN_PAGE_V1_TYPE = "conduct.chain_page/v1"
#: The records of a full chain page: page ``k`` holds chain positions ``32k .. 32k+31``.
CHAIN_PAGE_SIZE = 32
_PAGE_TYPE_OF = {CHAIN_TYPE: CHAIN_PAGE_TYPE, CHAIN_V1_TYPE: CHAIN_PAGE_V1_TYPE}
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
    meter: str | None = None,
) -> JsonObject:
    """Verify a ``conduct.entry/v1`` (a report-in): its signature and shape, and, with
    ``previous`` (the vow record for entry 1, else entry n-1, as verified), its link (see
    :func:`verify_link`). With ``trace``, its ``trace_sha256`` is recomputed.

    Its ``meter`` block must be exactly that of a meter the kit knows, stored
    (``"labels": "stored-labels/1"``), and its ``profile``'s quantities must have that meter's
    shape (:func:`~conduct_kit.meter.check_meter`); with ``meter``, it must be that meter. The
    entries of one chain may name different meters."""
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
    member(doc, "profile", dict, subject)
    check_meter(doc, subject, meter=meter, stored=True)
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


def verify_chain_head(
    data: bytes | str | Mapping[str, Any],
    key: KeyLike,
    *,
    vow_id: str | None = None,
    subject: str = "chain head",
) -> JsonObject:
    """Verify a chain head (``/vow/<id>/chain``) by itself, ``conduct.chain/v2`` or
    ``conduct.chain/v1``: its signature and type, its vow (``vow_id``, when given), and that it
    adds up: ``tail_from_position`` is where the full pages end, ``length`` is the number of
    entries the pages and ``tail`` hold, ``head_sha256`` is a SHA-256. For ``v2``, ``tail``
    holds fewer than ``page_size`` records and ``last_page`` is ``null`` when ``full_pages`` is
    0, else the pin of page ``full_pages - 1`` (its ``href``, ``from_position``, ``records``
    and ``sha256``); for ``v1``, ``pages`` has a pin (``sha256``) for each full page.

    The pages themselves and the records are :func:`verify_chain_files`'s. Returns the head."""
    pin = PinnedKey.parse(key)
    doc = verify_signed(data, pin, subject=subject)
    kind = doc.get("type")
    if kind not in _PAGE_TYPE_OF:
        raise TypeMismatchError(subject, f"type {kind!r} is not {CHAIN_TYPE!r} (or {CHAIN_V1_TYPE!r})")
    vid = member(doc, "vow_id", str, subject)
    if vow_id is not None and vid != vow_id:
        raise ChainError(subject, f"is the chain of {vid}, not {vow_id}")
    size = uint(doc, "page_size", subject)
    if size < 1:
        fail(subject, "page_size is 0")
    length = uint(doc, "length", subject)
    hex64(doc.get("head_sha256"), subject, "head_sha256")
    tail = member(doc, "tail", list, subject)
    if kind == CHAIN_TYPE:
        n = uint(doc, "full_pages", subject)
        if len(tail) >= size:
            raise ChainError(subject, f"tail holds {len(tail)} records; a page is written at its {size}th")
        if "last_page" not in doc:
            fail(subject, "member 'last_page' is missing")
        last = doc["last_page"]
        if n == 0:
            if last is not None:
                raise ChainError(subject, "last_page pins a page where no page is full")
        else:
            _chain_pin(last, vid, n - 1, size, subject, "last_page")
    else:
        listed = member(doc, "pages", list, subject)
        n = len(listed)
        for k, p in enumerate(listed):
            if not isinstance(p, dict):
                fail(subject, f"pages[{k}] is not an object")
            hex64(p.get("sha256"), subject, f"pages[{k}].sha256")
            if p.get("records", size) != size:
                raise ChainError(subject, f"pages[{k}] pins a page of {p.get('records')!r} records; a full page holds {size}")
    ends = n * size
    if member(doc, "tail_from_position", int, subject) != ends:
        raise ChainError(subject, f"tail_from_position {doc.get('tail_from_position')} where the {n} full pages end at {ends}")
    if length != ends + len(tail) - 1:
        raise ChainError(subject, f"length {length} but {ends + len(tail) - 1} entries ({n} full pages and a tail of {len(tail)})")
    return doc


def _chain_pin(value: Any, vid: str, k: int, size: int, subject: str, what: str) -> str:
    """The SHA-256 that the pin ``{href, from_position, records, sha256}`` of page ``k`` names."""
    if not isinstance(value, dict):
        fail(subject, f"{what} is not an object")
    href = f"/vow/{vid}/chain/{k}"
    if value.get("href") != href or value.get("from_position") != k * size:
        raise ChainError(
            subject,
            f"{what} names {value.get('href')!r} from position {value.get('from_position')!r}, "
            f"not page {k} ({href} from position {k * size})",
        )
    if value.get("records") != size:
        raise ChainError(subject, f"{what} pins a page of {value.get('records')!r} records; a full page holds {size}")
    return hex64(value.get("sha256"), subject, f"{what}.sha256")


def verify_chain_page(
    data: bytes | str | Mapping[str, Any],
    key: KeyLike,
    *,
    vow_id: str | None = None,
    page: int | None = None,
    page_size: int = CHAIN_PAGE_SIZE,
    expected_type: str | None = None,
    subject: str | None = None,
) -> JsonObject:
    """Verify one full chain page (``/vow/<id>/chain/<k>``) by itself: its signature, its type
    (``expected_type``, else ``conduct.chain_page/v2`` or ``v1``), its vow and number (when
    given), ``from_position`` = ``page_size * k`` and exactly ``page_size`` records. A ``v2``
    page also names its ``head`` (``/vow/<id>/chain``) and pins the page before it:
    ``prev_page_sha256`` is ``null`` on page 0, else a SHA-256.

    Its bytes against the pin naming it, and its records, are :func:`verify_chain_files`'s.
    Returns the page."""
    pin = PinnedKey.parse(key)
    subject = subject or (f"chain page {page}" if page is not None else "chain page")
    doc = verify_signed(data, pin, expected_type=expected_type, subject=subject, require_scope=False)
    kind = doc.get("type")
    if expected_type is None and kind not in (CHAIN_PAGE_TYPE, CHAIN_PAGE_V1_TYPE):
        raise TypeMismatchError(subject, f"type {kind!r} is not {CHAIN_PAGE_TYPE!r} (or {CHAIN_PAGE_V1_TYPE!r})")
    vid = member(doc, "vow_id", str, subject)
    k = uint(doc, "page", subject)
    if (vow_id is not None and vid != vow_id) or (page is not None and k != page):
        want = f"page {page if page is not None else k} of {vow_id if vow_id is not None else vid}"
        raise ChainError(subject, f"is page {k} of {vid}, not {want}")
    if doc.get("from_position") != k * page_size:
        raise ChainError(subject, f"from_position {doc.get('from_position')!r} where page {k} starts at {k * page_size}")
    recs = member(doc, "records", list, subject)
    if len(recs) != page_size:
        raise ChainError(subject, f"a full page holds {page_size} records, this one {len(recs)}")
    if kind == CHAIN_PAGE_TYPE:
        if doc.get("head") != f"/vow/{vid}/chain":
            raise ChainError(subject, f"head {doc.get('head')!r} is not /vow/{vid}/chain")
        if "prev_page_sha256" not in doc:
            fail(subject, "member 'prev_page_sha256' is missing")
        if k == 0:
            if doc["prev_page_sha256"] is not None:
                raise ChainError(subject, "page 0 pins no page before it (prev_page_sha256 is not null)")
        else:
            hex64(doc["prev_page_sha256"], subject, "prev_page_sha256")
    return doc


def chain_page_count(head: Mapping[str, Any]) -> int:
    """The number of full pages a verified chain head (``v2`` or ``v1``) has."""
    if head.get("type") == CHAIN_V1_TYPE:
        return len(head["pages"])
    return int(head["full_pages"])


def _walk_chain_pages(
    head: Mapping[str, Any],
    read: Callable[[int], bytes],
    pin: PinnedKey,
    name: Callable[[int], str],
) -> Iterator[tuple[int, JsonObject]]:
    """Read and check every full page of a verified chain ``head``: yields ``(k, page)``.

    A ``v2`` head is walked back from ``last_page``: page ``n - 1``'s bytes must have the
    SHA-256 it pins, then each page is verified (:func:`verify_chain_page`) before its
    ``prev_page_sha256`` is trusted for the page before it, down to page 0. A ``v1`` head's
    pages are read in order, each against its pin in ``pages``. ``read(k)`` gives page ``k``'s
    bytes as served; ``name(k)`` is how errors name it."""
    vid, size = str(head["vow_id"]), int(head["page_size"])
    want_type = _PAGE_TYPE_OF[str(head["type"])]
    if head["type"] == CHAIN_V1_TYPE:
        for k, p in enumerate(head["pages"]):
            raw = read(k)
            got = hashlib.sha256(raw).hexdigest()
            if got != p["sha256"]:
                raise HashMismatchError(name(k), f"file SHA-256 {got} is not the head's pin {p['sha256']}")
            yield k, verify_chain_page(raw, pin, vow_id=vid, page=k, page_size=size, expected_type=want_type, subject=name(k))
        return
    n = int(head["full_pages"])
    want = head["last_page"]["sha256"] if n else None
    for k in range(n - 1, -1, -1):
        raw = read(k)
        got = hashlib.sha256(raw).hexdigest()
        if got != want:
            by = "the head's last_page" if k == n - 1 else f"page {k + 1}'s prev_page_sha256"
            raise HashMismatchError(name(k), f"file SHA-256 {got} is not the pin of {by} {want}")
        page = verify_chain_page(raw, pin, vow_id=vid, page=k, page_size=size, expected_type=want_type, subject=name(k))
        want = page["prev_page_sha256"]
        yield k, page


def verify_chain_files(
    head: bytes | str | Mapping[str, Any],
    pages: Sequence[bytes] | Callable[[int], bytes],
    key: KeyLike,
    *,
    vow_id: str | None = None,
) -> list[JsonObject]:
    """Read a whole chain from its signed head (``/vow/<id>/chain``) and the bytes of its full
    pages (``/vow/<id>/chain/<k>``), and verify it. Both ``conduct.chain/v2`` and
    ``conduct.chain/v1`` heads are read.

    ``pages`` is the page files in page order (page 0 first), or a function that reads page
    ``k``'s bytes as served (called only after the head verifies, once a page, in the order of
    the walk). Checks the head (:func:`verify_chain_head`); each page file against the SHA-256
    pinning it: for ``v2``, page ``n - 1`` against the head's ``last_page`` and each page
    before it against its successor's ``prev_page_sha256``, down to page 0 (whose
    ``prev_page_sha256`` is ``null``); for ``v1``, each page against its pin in ``pages``;
    then each page's signature, vow, number, ``from_position`` and record count
    (:func:`verify_chain_page`); ``head_sha256`` (the last record's); and then the chain
    itself, the pages' records in order followed by ``tail`` (:func:`verify_chain`). Returns
    every record, position 0 first.
    """
    pin = PinnedKey.parse(key)
    subject = "chain head"
    doc = verify_chain_head(head, pin, vow_id=vow_id, subject=subject)
    n = chain_page_count(doc)
    if callable(pages):
        read: Callable[[int], bytes] = pages
    else:
        if len(pages) != n:
            fail(subject, f"has {n} full pages, {len(pages)} given")
        read = pages.__getitem__
    held: dict[int, list[Any]] = {k: page["records"] for k, page in _walk_chain_pages(doc, read, pin, lambda k: f"chain page {k}")}
    records: list[Any] = [r for k in range(n) for r in held[k]]
    records.extend(doc["tail"])
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
