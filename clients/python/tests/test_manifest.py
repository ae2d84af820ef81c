"""Offline: the manifest's trie of signed bins (library/MIRRORS.md), on trees built here and
signed with a key of the test's own, so interior bins, splits and every refusal are reached."""

from __future__ import annotations

import base64
import hashlib
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import rfc8785
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from conduct_kit import (
    ExpiredError,
    HashMismatchError,
    ManifestError,
    PinnedKey,
    SignatureError,
    VerificationError,
    file_key,
    unit,
    verify_bin,
    verify_manifest,
    verify_nostr_event,
)

from conftest import accepts, fixture_bytes, flips

SCOPE = {k: "text" for k in ("no_meter_is_immune", "not_trade_advice", "off_meter_blind_spot",
                             "trace_provenance_is_the_callers")}
NOW = datetime(2026, 11, 27, tzinfo=timezone.utc)


class Signer:
    def __init__(self) -> None:
        self.sk = Ed25519PrivateKey.generate()
        self.pin = PinnedKey("example.org/log", self.sk.public_key().public_bytes_raw())

    def sign(self, body: dict[str, Any], sig: str = "signature", kid: str = "key_id") -> bytes:
        body = dict(body, **{kid: self.pin.key_id})
        s = base64.b64encode(self.sk.sign(rfc8785.dumps(body))).decode()
        return rfc8785.dumps(dict(body, **{sig: s}))


def build(root: Path, signer: Signer, files: dict[str, bytes], split: int = 3) -> None:
    """Write ``files`` and a manifest trie over them (a leaf over ``split`` files of more than
    one key splits), as library/MIRRORS.md describes it."""
    for p, b in files.items():
        (root / p).parent.mkdir(parents=True, exist_ok=True)
        (root / p).write_bytes(b)
    (root / "manifest").mkdir(exist_ok=True)

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
        "type": "conduct.manifest/v2", "as_of": "2026-11-26T00:00:00Z", "expires": "2026-12-03T00:00:00Z",
        "version": 1, "bins": top["bins"], "scope": SCOPE}))


def tree(signer: Signer) -> dict[str, bytes]:
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
        files[f"vow/{vid}.json"] = signer.sign({"type": "conduct.vow_page/v1", "n": i, "scope": SCOPE})
        files[f"vow/{vid}.html"] = f"<p>{i}</p>".encode()
        files[f"vow/{vid}/chain/0.json"] = signer.sign({"type": "conduct.chain_page/v1", "n": i, "scope": SCOPE})
    return files


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
    assert r.files == len(tree(s)) and r.counted and r.snapshots >= 20
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


