"""The signed manifest of the rendered tree, a trie of signed bins (library/MIRRORS.md, "The
manifest" and "Checking a mirror").

- A file's *unit* is its path up to the second ``/``, or up to the first ``.`` after its first
  component; a root file's unit is its name up to its first ``.`` (``index.html`` is
  ``index``, ``.well-known/x402.json`` is ``.well-known/x402``). Its *key* is the lower-case
  hex SHA-256 of its unit.
- ``manifest.json`` (``conduct.manifest/v3``) is the root: ``as_of``, ``expires``, ``version``
  and ``bins``, one ``"manifest/<d>.json": {files, len, sha256}`` per non-empty first digit.
  (``conduct.manifest/v2`` had the same members and also listed the chain pages; it is still
  read, as a tree mid-upgrade has it.)
- ``manifest/<prefix>.json`` (``conduct.manifest-bin/v1``, with ``prefix``) is a *leaf*
  listing ``files`` (``{"<path>": {len, sha256}}``, exactly the files whose key starts with
  the prefix) or an *interior* bin listing ``bins``, its children one digit longer.

:func:`verify_manifest` walks the trie from the root, each bin against the length and
SHA-256 its parent gives, its own signature, type and prefix and file count; checks every
listed file's length and SHA-256 (and, by default, every JSON file's signature); walks the
pages of every listed vow chain head (``vow/<id>/chain.json``); and, for a directory,
completeness by counting.

The manifest lists every file of the tree but ``log/``, the manifest itself and the vow chain
pages (``vow/<id>/chain/<k>.json``): a chain page is proven by its vow's chain head, which the
manifest lists (the head pins the last full page by hash, each page the one before it;
library/VOWS.md, "The chain"). A tree mid-upgrade may still list some pages; a listed page is
checked like any listed file, and every page, listed or not, through its head.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator, Protocol, Union

import httpx

from ._codec import JsonObject, fail, hex64, member, parse_object, uint
from .errors import ExpiredError, HashMismatchError, ManifestError, TypeMismatchError, VerificationError
from .keys import KeyLike, PinnedKey
from .nostr import verify_nostr_event
from .signed import verify_openapi, verify_signed
from .vows import _walk_chain_pages, chain_page_count, verify_chain_head

__all__ = [
    "ROOT_TYPE",
    "ROOT_TYPES",
    "BIN_TYPE",
    "chain_page_path",
    "chain_head_path",
    "unit",
    "file_key",
    "bin_path",
    "SiteSource",
    "DirectorySource",
    "HttpSource",
    "ManifestReport",
    "verify_bin",
    "verify_manifest",
]

#: The root's type (``manifest.json``) the service writes.
ROOT_TYPE = "conduct.manifest/v3"
#: The root's type before the chain pages left the listing (same members). Still read.
ROOT_V2_TYPE = "conduct.manifest/v2"
#: The root types :func:`verify_manifest` reads.
ROOT_TYPES = (ROOT_TYPE, ROOT_V2_TYPE)
BIN_TYPE = "conduct.manifest-bin/v1"
ROOT_PATH = "manifest.json"
NOSTR_PROFILE = "hive/profile.json"
OPENAPI = "openapi.json"
_HEX = "0123456789abcdef"
_BIN_PATH = re.compile(r"manifest/([0-9a-f]{1,64})\.json\Z")
_CHAIN_PAGE = re.compile(r"vow/([^/]+)/chain/(0|[1-9][0-9]*)\.json\Z")
_CHAIN_HEAD = re.compile(r"vow/([^/]+)/chain\.json\Z")


def unit(path: str) -> str:
    """The unit of a file of the tree (library/MIRRORS.md, "Units and keys")."""
    i = path.find("/")
    if i >= 0:
        rest = path[i + 1 :]
        ends = [j for j in (rest.find("/"), rest.find(".")) if j >= 0]
        return path[: i + 1 + (min(ends) if ends else len(rest))]
    j = path.find(".", 1)
    return path if j < 0 else path[:j]


def file_key(path: str) -> str:
    """A file's bin key: the lower-case hex SHA-256 of its unit."""
    return hashlib.sha256(unit(path).encode("utf-8")).hexdigest()


def bin_path(prefix: str) -> str:
    """The path of the bin with ``prefix`` (``""`` is the root, ``manifest.json``)."""
    return ROOT_PATH if prefix == "" else f"manifest/{prefix}.json"


def chain_page_path(path: str) -> tuple[str, int] | None:
    """The vow and page number of a chain page's path, ``vow/<id>/chain/<k>.json`` (``<k>`` in
    decimal, no leading zero), which the manifest does not list; ``None`` for any other path
    (``vow/<id>/chain/01.json`` is an ordinary file the manifest must list)."""
    m = _CHAIN_PAGE.match(path)
    return (m.group(1), int(m.group(2))) if m else None


def chain_head_path(path: str) -> str | None:
    """The vow of a chain head's path, ``vow/<id>/chain.json``; ``None`` for any other path."""
    m = _CHAIN_HEAD.match(path)
    return m.group(1) if m else None


def _is_manifest_path(path: str) -> bool:
    return path == ROOT_PATH or path.startswith("manifest/")


class SiteSource(Protocol):
    """Where the tree's files are read from."""

    def read(self, path: str) -> bytes | None:
        """The bytes of ``path`` (relative, ``/``-separated), or ``None`` when absent."""

    def listing(self) -> Iterator[str] | None:
        """Every file's path, when the source can list them (a directory), else ``None``."""


class DirectorySource:
    """A tree on disk (an rsync copy, or the ``--site`` directory of ``conduct serve``)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        if not self.root.is_dir():
            raise ManifestError(str(root), "is not a directory")

    def read(self, path: str) -> bytes | None:
        """The file's bytes, or ``None`` when there is no such regular file."""
        if path.startswith("/") or ".." in path.split("/"):
            return None
        p = self.root / path
        try:
            return p.read_bytes() if p.is_file() else None
        except OSError:
            return None

    def listing(self) -> Iterator[str]:
        """Every regular file and symbolic link under the root, relative, ``/``-separated."""
        for dirpath, dirnames, filenames in os.walk(self.root):
            rel = os.path.relpath(dirpath, self.root)
            dirnames.sort()
            for f in sorted(filenames):
                yield f if rel == "." else f"{rel}/{f}".replace(os.sep, "/")


class HttpSource:
    """A tree served over HTTP (the origin or a mirror); it cannot list, so completeness is
    not counted."""

    def __init__(self, base_url: str, client: httpx.Client | None = None) -> None:
        self.base = base_url.rstrip("/")
        self.client = client or httpx.Client(timeout=30)

    def read(self, path: str) -> bytes | None:
        """``GET base/path``: the body of a 200, ``None`` for a 404."""
        r = self.client.get(f"{self.base}/{path}")
        if r.status_code == 404:
            return None
        if r.status_code != 200:
            raise ManifestError(path, f"GET answered {r.status_code}")
        return r.content

    def listing(self) -> None:
        """HTTP offers no listing."""
        return None


class _FetcherSource:
    def __init__(self, fetch: Callable[[str], bytes | None]) -> None:
        self.fetch = fetch

    def read(self, path: str) -> bytes | None:
        return self.fetch(path)

    def listing(self) -> None:
        return None


SourceLike = Union[str, "os.PathLike[str]", SiteSource, Callable[[str], Union[bytes, None]]]


def _source(src: SourceLike) -> SiteSource:
    if isinstance(src, str) and src.startswith(("http://", "https://")):
        return HttpSource(src)
    if isinstance(src, (str, os.PathLike)):
        return DirectorySource(src)
    if hasattr(src, "read") and hasattr(src, "listing"):
        return src
    if callable(src):
        return _FetcherSource(src)
    raise TypeError(f"not a site source: {type(src).__name__}")


@dataclass
class ManifestReport:
    """What :func:`verify_manifest` checked.

    ``root_type`` is the root's type. ``files`` counts the listed files (the chain pages a tree
    mid-upgrade lists included, also counted as ``listed_chain_pages``); ``chain_heads`` the
    listed chain heads whose pages were walked, and ``chain_pages`` the pages they reach, each
    checked (``chain_pages_of``: how many, per vow)."""

    as_of: str
    expires: str
    version: int
    files: int = 0
    bins: int = 1
    snapshots: int = 0
    counted: bool = False
    bin_paths: set[str] = field(default_factory=set)
    root_type: str = ROOT_TYPE
    chain_heads: int = 0
    chain_pages: int = 0
    listed_chain_pages: int = 0
    chain_pages_of: dict[str, int] = field(default_factory=dict, repr=False)


def _instant(value: Any, subject: str, what: str) -> datetime:
    if not isinstance(value, str) or not value.endswith("Z"):
        fail(subject, f"{what} is not an RFC 3339 UTC instant")
    try:
        return datetime.fromisoformat(value[:-1] + "+00:00")
    except ValueError:
        fail(subject, f"{what} {value!r} is not an RFC 3339 instant")


def _child_entries(doc: JsonObject, prefix: str, subject: str) -> list[tuple[str, str, int, int, str]]:
    """A bin's ``bins``: (path, child prefix, files, len, sha256), each child one digit longer."""
    bins = member(doc, "bins", dict, subject)
    out = []
    for path, ent in sorted(bins.items()):
        m = _BIN_PATH.match(path)
        if not m or len(m.group(1)) != len(prefix) + 1 or not m.group(1).startswith(prefix):
            raise ManifestError(subject, f"names {path!r}, which is not a child of prefix {prefix!r}")
        if not isinstance(ent, dict):
            fail(subject, f"the entry of {path} is not an object")
        files = uint(ent, "files", subject)
        if files == 0:
            raise ManifestError(subject, f"names the empty bin {path}")
        out.append((path, m.group(1), files, uint(ent, "len", subject), hex64(ent.get("sha256"), subject, f"{path} sha256")))
    return out


def verify_bin(
    data: bytes,
    key: KeyLike,
    *,
    prefix: str,
    files: int | None = None,
    length: int | None = None,
    sha256: str | None = None,
) -> JsonObject:
    """Verify one bin (``manifest/<prefix>.json``) by itself and against what its parent
    names (``files``, ``length``, ``sha256``, each checked when given). Returns the bin."""
    subject = bin_path(prefix)
    if length is not None and len(data) != length:
        raise HashMismatchError(subject, f"is {len(data)} bytes, its parent says {length}")
    if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
        raise HashMismatchError(subject, "its SHA-256 is not the one its parent names")
    doc = verify_signed(data, key, expected_type=BIN_TYPE, subject=subject)
    if doc.get("prefix") != prefix:
        raise ManifestError(subject, f"prefix {doc.get('prefix')!r} is not {prefix!r}")
    if ("files" in doc) == ("bins" in doc):
        raise ManifestError(subject, "a bin lists exactly one of 'files' and 'bins'")
    if "files" in doc:
        listed = member(doc, "files", dict, subject)
        for path, ent in listed.items():
            if not file_key(path).startswith(prefix):
                raise ManifestError(subject, f"lists {path!r}, whose key does not start with {prefix!r}")
            if not isinstance(ent, dict):
                fail(subject, f"the entry of {path} is not an object")
            uint(ent, "len", subject)
            hex64(ent.get("sha256"), subject, f"{path} sha256")
        n = len(listed)
    else:
        n = sum(c[2] for c in _child_entries(doc, prefix, subject))
    if files is not None and n != files:
        raise ManifestError(subject, f"lists {n} files, its parent says {files}")
    return doc


def _check_path(path: str, subject: str) -> None:
    parts = path.split("/")
    if not path or path.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise ManifestError(subject, f"lists the path {path!r}, which is not a relative file path")
    if path.startswith("log/") or _is_manifest_path(path):
        raise ManifestError(subject, f"lists {path!r}, which the manifest does not cover")


def _check_snapshot(path: str, data: bytes, pin: PinnedKey) -> None:
    if path == OPENAPI:
        verify_openapi(data, pin)
    elif path == NOSTR_PROFILE:
        verify_nostr_event(data, path)
    else:
        verify_signed(data, pin, subject=path)


def verify_manifest(
    source: SourceLike,
    key: KeyLike,
    *,
    now: datetime | None = None,
    check_snapshots: bool = True,
    settle: float = 0.0,
) -> ManifestReport:
    """Verify the tree's manifest and every file it lists.

    Args:
        source: a directory (path), a base URL (``http(s)://``), a :class:`SiteSource`, or a
            function ``fetch(path) -> bytes | None``.
        key: the pinned key.
        now: the instant the root must not have expired by (default: the current time).
        check_snapshots: also verify every listed ``.json`` file as a signed snapshot
            (``openapi.json`` by ``x-signature``, ``hive/profile.json`` as a Nostr event).
        settle: seconds to keep trying when a check fails. A tree the service is writing (or
            a cache in front of it) can briefly hold a page newer than its manifest
            (library/MIRRORS.md, "Checking a mirror"); each attempt starts again from the root,
            and the last attempt's failure is raised.

    Checks, stopping at the first failure (the exception names the path): the root's
    signature, type (``conduct.manifest/v3``, or ``v2`` mid-upgrade) and expiry; every bin,
    depth first, against its parent's length, SHA-256 and file count, its own signature, type
    and prefix, its children one digit longer and its files' keys under its prefix; every
    listed file's length and SHA-256; every listed chain head (``vow/<id>/chain.json``): its
    signature, vow and sums (:func:`conduct_kit.vows.verify_chain_head`) and every page it
    reaches (``vow/<id>/chain/<k>.json``, listed or not): a ``conduct.chain/v2`` head's
    ``last_page`` by its pin, each page before it by its successor's ``prev_page_sha256``,
    a ``v1`` head's pages by its ``pages`` pins, each page signed, numbered and of the vow
    (:func:`conduct_kit.vows.verify_chain_page`). For a source that can list (a directory):
    every file outside ``log/``, the manifest and the chain pages is listed (counted), the
    chain pages on disk are exactly those the heads reach (none stray), every file under
    ``manifest/`` is a bin the trie names, and no dotfile but under ``.well-known/``. The log
    under ``log/`` and the records inside the chain pages are not checked here
    (:func:`conduct_kit.tlog.verify_checkpoint`, :func:`conduct_kit.vows.verify_chain_files`).
    """
    pin = PinnedKey.parse(key)
    src = _source(source)
    deadline = time.monotonic() + settle
    while True:
        try:
            return _verify_once(src, pin, now or datetime.now(timezone.utc), check_snapshots)
        except VerificationError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))


def _verify_once(src: SiteSource, pin: PinnedKey, now: datetime, check_snapshots: bool) -> ManifestReport:
    raw = src.read(ROOT_PATH)
    if raw is None:
        raise ManifestError(ROOT_PATH, "is missing")
    root = verify_signed(raw, pin, subject=ROOT_PATH)
    if root.get("type") not in ROOT_TYPES:
        raise TypeMismatchError(ROOT_PATH, f"type {root.get('type')!r} is not {ROOT_TYPE!r} (or {ROOT_V2_TYPE!r})")
    as_of = _instant(root.get("as_of"), ROOT_PATH, "as_of")
    expires = _instant(root.get("expires"), ROOT_PATH, "expires")
    if expires <= now:
        raise ExpiredError(ROOT_PATH, f"expired at {root['expires']}")
    if as_of > expires:
        raise ManifestError(ROOT_PATH, "as_of is after expires")
    report = ManifestReport(
        as_of=root["as_of"], expires=root["expires"], version=uint(root, "version", ROOT_PATH), root_type=root["type"]
    )
    report.bin_paths.add(ROOT_PATH)
    listed_paths: set[str] = set()
    stack = list(reversed(_child_entries(root, "", ROOT_PATH)))
    while stack:
        path, prefix, files, length, sha = stack.pop()
        data = src.read(path)
        if data is None:
            raise ManifestError(path, "is missing (its parent names it)")
        doc = verify_bin(data, pin, prefix=prefix, files=files, length=length, sha256=sha)
        report.bins += 1
        report.bin_paths.add(path)
        if "bins" in doc:
            stack.extend(reversed(_child_entries(doc, prefix, path)))
            continue
        for fpath, ent in sorted(doc["files"].items()):
            _check_path(fpath, path)
            if fpath in listed_paths:  # pragma: no cover - a key names one leaf
                raise ManifestError(path, f"lists {fpath!r} a second time")
            listed_paths.add(fpath)
            body = src.read(fpath)
            if body is None:
                raise ManifestError(fpath, f"is listed by {path} and missing")
            if len(body) != ent["len"]:
                raise HashMismatchError(fpath, f"is {len(body)} bytes, {path} lists {ent['len']}")
            if hashlib.sha256(body).hexdigest() != ent["sha256"]:
                raise HashMismatchError(fpath, f"its SHA-256 is not the one {path} lists")
            if check_snapshots and fpath.endswith(".json"):
                _check_snapshot(fpath, body, pin)
                report.snapshots += 1
            report.files += 1
            if chain_page_path(fpath) is not None:
                report.listed_chain_pages += 1
            vid = chain_head_path(fpath)
            if vid is not None:
                _walk_chain(src, pin, fpath, vid, body, report)
    listing = src.listing()
    if listing is not None:
        _count(listing, listed_paths, report)
    return report


def _walk_chain(src: SiteSource, pin: PinnedKey, head_path: str, vid: str, body: bytes, report: ManifestReport) -> None:
    """Check every page the listed chain head at ``head_path`` reaches (its bytes, already
    checked against the manifest, are ``body``)."""
    head = verify_chain_head(body, pin, vow_id=vid, subject=head_path)

    def name(k: int) -> str:
        return f"vow/{vid}/chain/{k}.json"

    def read(k: int) -> bytes:
        data = src.read(name(k))
        if data is None:
            raise ManifestError(name(k), f"is missing (chain page {k}, which {head_path} reaches)")
        return data

    for _ in _walk_chain_pages(head, read, pin, name):
        report.chain_pages += 1
    report.chain_heads += 1
    report.chain_pages_of[vid] = chain_page_count(head)


def _count(listing: Iterator[str], listed: set[str], report: ManifestReport) -> None:
    on_disk = 0
    pages_on_disk = 0
    for path in listing:
        parts = path.split("/")
        if any(p.startswith(".") for p in parts) and not (
            parts[0] == ".well-known" and not any(p.startswith(".") for p in parts[1:])
        ):
            raise ManifestError(path, "is a dotfile; only .well-known/ may hold one")
        if path.startswith("log/"):
            continue
        if _is_manifest_path(path):
            if path not in report.bin_paths:
                raise ManifestError(path, "is under manifest/ but no bin of the trie names it")
            continue
        page = chain_page_path(path)
        if page is not None:
            vid, k = page
            head = f"vow/{vid}/chain.json"
            if vid not in report.chain_pages_of:
                raise ManifestError(path, f"is a chain page on disk, and the manifest lists no chain head {head} to reach it")
            reached = report.chain_pages_of[vid]
            if k >= reached or path != f"vow/{vid}/chain/{k}.json":
                raise ManifestError(path, f"is a chain page on disk that its head {head} does not reach (it has {reached} full pages)")
            pages_on_disk += 1
            continue
        on_disk += 1
        if path not in listed:
            raise ManifestError(path, "is on disk and not listed by the manifest")
    want = report.files - report.listed_chain_pages
    if on_disk != want:  # pragma: no cover - each listed file was read above
        raise ManifestError(ROOT_PATH, f"lists {want} files besides chain pages, {on_disk} are on disk")
    if pages_on_disk != report.chain_pages:  # pragma: no cover - each reached page was read above
        raise ManifestError(ROOT_PATH, f"its chain heads reach {report.chain_pages} pages, {pages_on_disk} are on disk")
    report.counted = True


__all__ += ["VerificationError"]
