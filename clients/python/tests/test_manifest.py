"""Offline: the manifest's trie of signed bins (library/MIRRORS.md), on trees built here and
signed with a key of the test's own, so interior bins, splits and every refusal are reached;
and the vow chain pages, which a ``conduct.manifest/v3`` tree leaves to their chain heads."""

from __future__ import annotations

import base64
import hashlib
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable

import pytest
import rfc8785

from conduct_kit import (
    ExpiredError,
    HashMismatchError,
    ChainError,
    ManifestError,
    SignatureError,
    TypeMismatchError,
    VerificationError,
    chain_page_path,
    file_key,
    unit,
    verify_bin,
    verify_manifest,
    verify_nostr_event,
)

import chains
from conftest import accepts, fixture_bytes, flips

SCOPE = chains.SCOPE
NOW = datetime(2026, 11, 27, tzinfo=timezone.utc)


class Signer(chains.Signer):
    """A fresh key of the test's own (``sign``: RFC 8785 bytes with ``key_id`` and ``signature``)."""

    def __init__(self) -> None:
        super().__init__(seed=None)


def build(root: Path, signer: Signer, files: dict[str, bytes], split: int = 3,
          root_type: str = "conduct.manifest/v3", listed: Callable[[str], bool] | None = None) -> None:
    """Write ``files`` and a manifest trie over them (a leaf over ``split`` files of more than
    one key splits), as library/MIRRORS.md describes it. A ``v3`` root lists no chain page, a
    ``v2`` root every one (``listed``, when given, says which files are listed)."""
    for p, b in files.items():
        (root / p).parent.mkdir(parents=True, exist_ok=True)
        (root / p).write_bytes(b)
    (root / "manifest").mkdir(exist_ok=True)
    if listed is None:
        listed = (lambda p: chain_page_path(p) is None) if root_type == "conduct.manifest/v3" else (lambda p: True)
    files = {p: b for p, b in files.items() if listed(p)}

    def write_bin(prefix: str, members: dict[str, bytes]) -> dict[str, Any]:
        keys = {file_key(p) for p in members}
        if len(members) > split and len(keys) > 1:
            children = {}
            for d in "0123456789abcdef":
                part = {p: b for p, b in members.items() if file_key(p)[len(prefix)] == d}
                if part:
                    children[f"manifest/{prefix}{d}.json"] = write_bin(prefix + d, part)
            body: dict[str, Any] = {"bins": children}
        else:
            body = {"files": {p: {"len": len(b), "sha256": hashlib.sha256(b).hexdigest()} for p, b in members.items()}}
        if prefix == "":
            return body
        data = signer.sign(dict(body, type="conduct.manifest-bin/v1", prefix=prefix, scope=SCOPE))
        (root / f"manifest/{prefix}.json").write_bytes(data)
        return {"files": len(members), "len": len(data), "sha256": hashlib.sha256(data).hexdigest()}

    top = write_bin("", files)
    if "files" in top:  # the root always lists bins: one per first digit
        top = {"bins": {f"manifest/{d}.json": write_bin(d, {p: b for p, b in files.items() if file_key(p)[0] == d})
                        for d in sorted({file_key(p)[0] for p in files})}}
    (root / "manifest.json").write_bytes(signer.sign({
        "type": root_type, "as_of": "2026-11-26T00:00:00Z", "expires": "2026-12-03T00:00:00Z",
        "version": 1, "bins": top["bins"], "scope": SCOPE}))


def tree(signer: Signer, versions: tuple[int, ...] = (2, 2, 2)) -> dict[str, bytes]:
    files = {
        "index.html": b"<html>index</html>",
        "index.json": signer.sign({"type": "conduct.card/v1", "scope": SCOPE}),
        "robots.txt": b"User-agent: *\n",
        ".well-known/x402.json": signer.sign({"type": "conduct.x402/v1", "scope": SCOPE}),
        "openapi.json": signer.sign({"openapi": "3.1.0", "info": {}}, sig="x-signature", kid="x-key-id"),
        "hive/profile.json": fixture_bytes("hive_profile.json"),
        "library/METER.md": b"# meter\n",
        "library/METER.html": b"<p>meter</p>",
    }
    for i in range(12):
        vid = hashlib.sha256(str(i).encode()).hexdigest()[:16]
        if i < len(CHAINS):  # a chain of 0, 1 and 2 full pages
            recs = chains.records(signer, CHAINS[i], tag=str(i), first_index=10 + 100 * i)
            vid = recs[0]["vow_id"]
            files.update(chains.tree_files(signer, recs, versions[i]))
        files[f"vow/{vid}.json"] = signer.sign({"type": "conduct.vow_page/v1", "n": i, "scope": SCOPE})
        files[f"vow/{vid}.html"] = f"<p>{i}</p>".encode()
    return files


#: The entries of the chains of the tree's first vows: no full page, one and a tail, two and
#: no tail.
CHAINS = (4, 40, 63)


@pytest.fixture
def site(tmp_path: Path) -> tuple[Path, Signer]:
    s = Signer()
    root = tmp_path / "site"
    build(root, s, tree(s))
    (root / "log").mkdir()
    (root / "log" / "checkpoint").write_text("not checked here\n")
    return root, s


def test_units_and_keys_as_the_document_gives_them() -> None:
    for path, u in [("vow/ab12/chain/3.json", "vow/ab12"), ("vow/ab12.json", "vow/ab12"),
                    ("index.html", "index"), ("robots.txt", "robots"), ("sitemap", "sitemap"),
                    (".well-known/x402.json", ".well-known/x402"), ("library/METER.md", "library/METER"),
                    ("registry/tool/7.json", "registry/tool")]:
        assert unit(path) == u, path
    assert file_key("index.html") == hashlib.sha256(b"index").hexdigest()


def test_a_tree_with_interior_bins_verifies(site: tuple[Path, Signer]) -> None:
    root, s = site
    r = verify_manifest(root, s.pin, now=NOW)
    files = tree(s)
    pages = [p for p in files if chain_page_path(p)]
    assert len(pages) == 3 and r.files == len(files) - 3 and r.counted and r.snapshots >= 15
    assert (r.root_type, r.chain_heads, r.chain_pages, r.listed_chain_pages) == ("conduct.manifest/v3", 3, 3, 0)
    assert any(len(p) > len("manifest/0.json") for p in r.bin_paths), "no interior bin was built"
    fetched = verify_manifest(lambda p: (root / p).read_bytes() if (root / p).is_file() else None, s.pin, now=NOW)
    assert fetched.files == r.files and not fetched.counted


def test_an_expired_root_and_another_key_are_refused(site: tuple[Path, Signer]) -> None:
    root, s = site
    with pytest.raises(ExpiredError):
        verify_manifest(root, s.pin, now=NOW + timedelta(days=30))
    with pytest.raises(VerificationError):
        verify_manifest(root, Signer().pin, now=NOW)


def _deep_leaf(root: Path) -> Path:
    return max((root / "manifest").iterdir(), key=lambda p: (len(p.name), p.name))


def test_every_changed_byte_of_a_bin_is_refused(site: tuple[Path, Signer]) -> None:
    import json

    root, s = site
    leaf = _deep_leaf(root)
    prefix = leaf.name[:-5]
    parent = root / ("manifest.json" if len(prefix) == 1 else f"manifest/{prefix[:-1]}.json")
    ent = json.loads(parent.read_bytes())["bins"][f"manifest/{prefix}.json"]
    data = leaf.read_bytes()
    verify_bin(data, s.pin, prefix=prefix, files=ent["files"], length=ent["len"], sha256=ent["sha256"])
    with_parent, alone = [], []
    for i, m, bad in flips(data):
        try:
            verify_bin(bad, s.pin, prefix=prefix, files=ent["files"], length=ent["len"], sha256=ent["sha256"])
            with_parent.append((i, m))
        except VerificationError:
            pass
        try:  # the bin's own signature refuses it too, without its parent
            verify_bin(bad, s.pin, prefix=prefix)
            alone.append((i, m))
        except VerificationError:
            pass
    assert not with_parent and not alone, (with_parent[:5], alone[:5])
    # And through the whole walk (from memory), at every position with one mask.
    files = _in_memory(root)
    rel = leaf.relative_to(root).as_posix()
    for i, m, bad in flips(data, (0x01,)):
        with pytest.raises(VerificationError):
            verify_manifest({**files, rel: bad}.get, s.pin, now=NOW, check_snapshots=False)
    verify_manifest(files.get, s.pin, now=NOW)


def test_every_changed_byte_of_the_root_is_refused(site: tuple[Path, Signer]) -> None:
    root, s = site
    data = (root / "manifest.json").read_bytes()
    files = _in_memory(root)
    accepted = []
    for i, m, bad in flips(data):
        try:
            verify_manifest({**files, "manifest.json": bad}.get, s.pin, now=NOW, check_snapshots=False)
            accepted.append((i, m))
        except VerificationError:
            pass
    assert not accepted, accepted[:5]


@pytest.mark.parametrize("change", [
    "modify a listed file", "remove a listed file", "add an unlisted file", "add a dotfile",
    "add a stray bin", "remove a bin", "swap two bins", "unsign a snapshot", "break the nostr profile",
    "append to a file",
])
def test_a_changed_tree_is_refused(site: tuple[Path, Signer], change: str) -> None:
    root, s = site
    leaf = _deep_leaf(root)
    if change == "modify a listed file":
        (root / "robots.txt").write_bytes(b"User-agent: x\n")
    elif change == "remove a listed file":
        (root / "library/METER.md").unlink()
    elif change == "add an unlisted file":
        (root / "library/NEW.md").write_bytes(b"new")
    elif change == "add a dotfile":
        (root / "vow/.conduct-tmp.x").write_bytes(b"")
    elif change == "add a stray bin":
        (root / "manifest/fff.json").write_bytes(b"{}")
    elif change == "remove a bin":
        leaf.unlink()
    elif change == "swap two bins":
        a, b = sorted(p for p in (root / "manifest").iterdir() if len(p.name) == 6)[:2]
        da, db = a.read_bytes(), b.read_bytes()
        a.write_bytes(db)
        b.write_bytes(da)
    elif change == "unsign a snapshot":
        # Re-listing it by hash would be needed for the walk to reach the signature check;
        # build a tree whose manifest lists an unsigned JSON file.
        shutil.rmtree(root)
        files = tree(s)
        files["index.json"] = b'{"type":"conduct.card/v1"}'
        build(root, s, files)
        with pytest.raises(VerificationError, match="index.json"):
            verify_manifest(root, s.pin, now=NOW)
        verify_manifest(root, s.pin, now=NOW, check_snapshots=False)
        return
    elif change == "break the nostr profile":
        shutil.rmtree(root)
        files = tree(s)
        files["hive/profile.json"] = files["hive/profile.json"].replace(b'"kind":0', b'"kind":1')
        build(root, s, files)
        with pytest.raises(VerificationError, match="hive/profile.json"):
            verify_manifest(root, s.pin, now=NOW)
        return
    elif change == "append to a file":
        with open(root / "index.html", "ab") as f:
            f.write(b" ")
    with pytest.raises(VerificationError):
        verify_manifest(root, s.pin, now=NOW)


def test_a_correctly_signed_but_misplaced_listing_is_refused(tmp_path: Path) -> None:
    s = Signer()
    root = tmp_path / "s"
    build(root, s, tree(s))
    leaf = _deep_leaf(root)
    prefix = leaf.name[:-5]
    wrong = next(p for p in tree(s) if not file_key(p).startswith(prefix))
    body = {"type": "conduct.manifest-bin/v1", "prefix": prefix, "scope": SCOPE,
            "files": {wrong: {"len": 1, "sha256": "0" * 64}}}
    with pytest.raises(ManifestError, match="does not start"):
        verify_bin(s.sign(body), s.pin, prefix=prefix)
    both = dict(body, bins={})
    with pytest.raises(ManifestError, match="exactly one"):
        verify_bin(s.sign(both), s.pin, prefix=prefix)
    with pytest.raises(ManifestError, match="prefix"):
        verify_bin(s.sign(dict(body, files={})), s.pin, prefix=prefix + "0")
    with pytest.raises(ManifestError, match="lists 0 files"):
        verify_bin(s.sign(dict(body, files={})), s.pin, prefix=prefix, files=1)
    with pytest.raises(HashMismatchError):
        verify_bin(s.sign(dict(body, files={})), s.pin, prefix=prefix, sha256="0" * 64)
    other = Signer()  # another key, claiming ours
    forged = dict(body, key_id=s.pin.key_id)
    forged["signature"] = base64.b64encode(other.sk.sign(rfc8785.dumps(forged))).decode()
    with pytest.raises(SignatureError):
        verify_bin(rfc8785.dumps(forged), s.pin, prefix=prefix)


def test_the_captured_nostr_profile_verifies() -> None:
    ev = verify_nostr_event(fixture_bytes("hive_profile.json"))
    assert ev["kind"] == 0
    data = fixture_bytes("hive_profile.json")
    accepted = [(i, m) for i, m, bad in flips(data, (0x01,)) if i % 5 == 0 and accepts(lambda: verify_nostr_event(bad))]
    assert not accepted, accepted[:5]


def _in_memory(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}




# -- the vow chain pages, proven by their heads (conduct.manifest/v3) --------------------------


def _pages(root: Path) -> dict[str, list[str]]:
    """The chain pages on disk, by vow: ``{vid: [path of page 0, page 1, ...]}``."""
    out: dict[str, list[str]] = {}
    for p in sorted(root.glob("vow/*/chain/*.json"), key=lambda p: int(p.stem)):
        out.setdefault(p.parent.parent.name, []).append(p.relative_to(root).as_posix())
    return out


def test_a_v3_tree_leaves_the_chain_pages_to_their_heads(site: tuple[Path, Signer]) -> None:
    root, s = site
    pages = _pages(root)
    assert sorted(len(v) for v in pages.values()) == [1, 2]
    for leaf in (root / "manifest").iterdir():
        assert b"/chain/" not in leaf.read_bytes(), f"{leaf.name} lists a chain page"
    r = verify_manifest(root, s.pin, now=NOW)
    assert r.counted and r.chain_pages == 3 and r.chain_pages_of[next(iter(pages))] == len(pages[next(iter(pages))])
    read: list[str] = []

    def fetch(path: str) -> bytes | None:
        read.append(path)
        return (root / path).read_bytes() if (root / path).is_file() else None

    r = verify_manifest(fetch, s.pin, now=NOW, check_snapshots=False)
    assert not r.counted and r.chain_pages == 3
    two = next(v for v in pages.values() if len(v) == 2)
    assert [p for p in read if p in two] == [two[1], two[0]], "the walk goes back from the head's last_page"


@pytest.mark.parametrize("stray", ["a page past the last", "a page of a vow with no chain head", "a second name for a page"])
def test_a_stray_chain_page_on_disk_is_refused(site: tuple[Path, Signer], stray: str) -> None:
    root, s = site
    pages = _pages(root)
    one = next(v for v in pages.values() if len(v) == 1)
    if stray == "a page past the last":
        path = one[0].replace("/0.json", "/1.json")
        match = "does not reach"
    elif stray == "a page of a vow with no chain head":
        vid = next(p.stem for p in (root / "vow").glob("*.json") if p.stem not in pages)
        path = f"vow/{vid}/chain/0.json"
        match = "lists no chain head"
    else:
        path = one[0].replace("/0.json", "/00.json")
        match = "not listed"
    (root / path).parent.mkdir(parents=True, exist_ok=True)
    (root / path).write_bytes((root / one[0]).read_bytes())
    with pytest.raises(ManifestError, match=f"{path}: .*{match}"):
        verify_manifest(root, s.pin, now=NOW)
    # Over HTTP there is no listing to count: the pages the heads reach are checked alone.
    files = _in_memory(root)
    assert verify_manifest(files.get, s.pin, now=NOW).chain_pages == 3


@pytest.mark.parametrize("source", ["directory", "fetch"])
def test_a_missing_or_changed_chain_page_is_refused(site: tuple[Path, Signer], source: str) -> None:
    root, s = site
    pages = _pages(root)
    two = next(v for v in pages.values() if len(v) == 2)
    one = next(v for v in pages.values() if len(v) == 1)
    original = {p: (root / p).read_bytes() for p in two + one}

    def check(error: type[VerificationError], match: str) -> None:
        src: Any = root if source == "directory" else _in_memory(root).get
        with pytest.raises(error, match=match):
            verify_manifest(src, s.pin, now=NOW, check_snapshots=False)
        for p, b in original.items():
            (root / p).write_bytes(b)
        verify_manifest(root, s.pin, now=NOW)

    (root / two[0]).unlink()
    check(ManifestError, f"{two[0]}: is missing")
    (root / two[1]).unlink()
    check(ManifestError, f"{two[1]}: is missing")
    changed = bytearray(original[two[0]])
    changed[len(changed) // 2] ^= 0x01
    (root / two[0]).write_bytes(bytes(changed))
    check(HashMismatchError, f"{two[0]}: .*page 1's prev_page_sha256")
    (root / two[1]).write_bytes(original[two[1]] + b" ")
    check(HashMismatchError, f"{two[1]}: .*last_page")
    (root / two[0]).write_bytes(original[two[1]])
    (root / two[1]).write_bytes(original[two[0]])
    check(HashMismatchError, two[1])
    (root / two[0]).write_bytes(original[one[0]])  # another vow's page 0
    check(HashMismatchError, two[0])


def test_a_chain_head_of_another_vow_is_refused(tmp_path: Path) -> None:
    s = Signer()
    files = tree(s)
    heads = sorted(p for p in files if p.endswith("/chain.json"))
    files[heads[0]] = files[heads[1]]  # listed, by the bytes it has: signed, but another vow's
    build(tmp_path, s, files)
    other = heads[1].split("/")[1]
    with pytest.raises(ChainError, match=f"{heads[0]}: is the chain of {other}"):
        verify_manifest(tmp_path, s.pin, now=NOW)


def test_a_tree_mid_upgrade_verifies(tmp_path: Path) -> None:
    s = Signer()
    # Before the upgrade: a v2 root, v1 heads, every page listed.
    old = tmp_path / "old"
    build(old, s, tree(s, (1, 1, 1)), root_type="conduct.manifest/v2")
    r = verify_manifest(old, s.pin, now=NOW)
    assert r.root_type == "conduct.manifest/v2" and r.counted
    assert r.listed_chain_pages == r.chain_pages == 3 and r.files == len(tree(s, (1, 1, 1)))
    assert any(b"/chain/" in leaf.read_bytes() for leaf in (old / "manifest").iterdir())
    # A listed page is checked like any listed file, and through its head.
    pages = _pages(old)
    two = next(v for v in pages.values() if len(v) == 2)
    data = (old / two[1]).read_bytes()
    (old / two[1]).write_bytes(data + b" ")
    with pytest.raises(HashMismatchError, match=two[1]):
        verify_manifest(old, s.pin, now=NOW)
    (old / two[1]).write_bytes(data)
    stray = two[1].replace("/1.json", "/2.json")
    (old / stray).write_bytes(data)
    with pytest.raises(ManifestError, match=stray):
        verify_manifest(old, s.pin, now=NOW)
    (old / stray).unlink()
    # Mid-way: a v3 root, a v1 head whose pages are still listed beside v2 heads whose are not.
    mid = tmp_path / "mid"
    files = tree(s, (2, 1, 2))
    v1pages = {p for p in files if chain_page_path(p) and b"conduct.chain_page/v1" in files[p]}
    assert len(v1pages) == 1
    build(mid, s, files, listed=lambda p: chain_page_path(p) is None or p in v1pages)
    r = verify_manifest(mid, s.pin, now=NOW)
    assert (r.root_type, r.listed_chain_pages, r.chain_pages, r.counted) == ("conduct.manifest/v3", 1, 3, True)
    # v2 heads with their pages still listed, and v1 heads with theirs no longer: both hold.
    for versions, listed in (((2, 2, 2), True), ((1, 1, 1), False)):
        t = tmp_path / f"t{versions[0]}{listed}"
        build(t, s, tree(s, versions), listed=(lambda p: True) if listed else None)
        r = verify_manifest(t, s.pin, now=NOW)
        assert r.chain_pages == 3 and r.listed_chain_pages == (3 if listed else 0)
        v1 = _pages(t)
        first = next(v for v in v1.values() if len(v) == 2)[0]
        (t / first).write_bytes((t / first).read_bytes().replace(b'"page":0', b'"page":0 '))
        with pytest.raises(HashMismatchError, match=first):
            verify_manifest(t, s.pin, now=NOW, check_snapshots=False)


def test_a_root_of_another_type_is_refused(tmp_path: Path) -> None:
    s = Signer()
    for kind in ("conduct.manifest/v1", "conduct.manifest/v4", "conduct.manifest-bin/v1"):
        root = tmp_path / kind.replace("/", "_")
        build(root, s, tree(s), root_type=kind)
        with pytest.raises(TypeMismatchError, match="manifest.json"):
            verify_manifest(root, s.pin, now=NOW)
