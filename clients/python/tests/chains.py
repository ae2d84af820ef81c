"""Test helper: vow chains and their files (``conduct.chain/v2`` heads and linked
``conduct.chain_page/v2`` pages, or the ``v1`` head that pinned every page), built as the
renderer writes them (library/VOWS.md, "The chain") and signed with a key of the test's own."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

import rfc8785
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from conduct_kit import PinnedKey, record_sha256, vow_id_for

SCOPE = {k: "text" for k in ("no_meter_is_immune", "not_trade_advice", "off_meter_blind_spot",
                             "trace_provenance_is_the_callers")}
SIZE = 32


class Signer:
    """A service key of the test's own (``seed``: a fixed key; ``None``: a fresh one)."""

    def __init__(self, seed: int | None = 11) -> None:
        self.sk = Ed25519PrivateKey.generate() if seed is None else Ed25519PrivateKey.from_private_bytes(bytes([seed]) * 32)
        self.pin = PinnedKey("example.org/log", self.sk.public_key().public_bytes_raw())

    def sign(self, body: dict[str, Any], sig: str = "signature", kid: str = "key_id") -> bytes:
        """The RFC 8785 bytes of ``body`` with ``kid`` and ``sig`` (no final newline)."""
        body = {k: v for k, v in body.items() if k != sig}
        body[kid] = self.pin.key_id
        s = base64.b64encode(self.sk.sign(rfc8785.dumps(body))).decode()
        return rfc8785.dumps(dict(body, **{sig: s}))

    def file(self, body: dict[str, Any]) -> bytes:
        """A signed snapshot file as the service writes it: RFC 8785 bytes and one newline."""
        return self.sign(dict(body, scope=SCOPE)) + b"\n"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def records(signer: Signer, entries: int, tag: str = "a", first_index: int = 10) -> list[dict[str, Any]]:
    """A valid chain: a sandbox vow record (log index ``first_index``) and ``entries``
    report-ins, every record signed and linked."""
    text = f"I keep my word ({tag})"
    text_sha = sha(text.encode())
    agent = f"agent-{tag}"
    vid = vow_id_for(signer.pin.origin, first_index, text_sha, agent)
    vow = {"type": "conduct.vow/v1", "vow_id": vid, "agent": agent, "text": text, "text_sha256": text_sha,
           "log_index": first_index, "sealed": False, "sandbox": True, "sandbox_reason": "no wallet",
           "cadence_hours": 24, "at": "2026-01-01T00:00:00Z", "scope": SCOPE}
    out = [json.loads(signer.sign(vow))]
    for n in range(1, entries + 1):
        entry = {"type": "conduct.entry/v1", "vow_id": vid, "seq": n, "prev": record_sha256(out[-1]),
                 "trace_sha256": sha(f"{tag}/{n}".encode()), "log_index": first_index + 2 * n,
                 "at": f"2026-01-01T{n // 60 % 24:02d}:{n % 60:02d}:00Z", "attested": False,
                 "trace_donated": False, "proof": {"kind": "sandbox-open"}, "declared_y_withheld": True,
                 "scope": SCOPE}
        out.append(json.loads(signer.sign(entry)))
    return out


def page_pin(vid: str, k: int, data: bytes) -> dict[str, Any]:
    """The pin of page ``k`` (a ``v2`` head's ``last_page``, an element of a ``v1`` head's ``pages``)."""
    return {"href": f"/vow/{vid}/chain/{k}", "from_position": k * SIZE, "records": SIZE, "sha256": sha(data)}


def page_doc(recs: list[dict[str, Any]], k: int, prev: bytes | None, version: int = 2) -> dict[str, Any]:
    """Page ``k`` of the chain ``recs`` (unsigned); ``prev`` is page ``k - 1``'s file."""
    vid = recs[0]["vow_id"]
    doc: dict[str, Any] = {"type": f"conduct.chain_page/v{version}", "vow_id": vid, "page": k,
                           "from_position": k * SIZE, "head": f"/vow/{vid}/chain",
                           "records": recs[k * SIZE:(k + 1) * SIZE]}
    if version == 2:
        doc["prev_page_sha256"] = None if prev is None else sha(prev)
    return doc


def head_doc(recs: list[dict[str, Any]], pages: list[bytes], version: int = 2) -> dict[str, Any]:
    """The head of the chain ``recs`` whose full pages' files are ``pages`` (unsigned)."""
    vid, n = recs[0]["vow_id"], len(pages)
    doc: dict[str, Any] = {"type": f"conduct.chain/v{version}", "vow_id": vid, "length": len(recs) - 1,
                           "head_sha256": record_sha256(recs[-1]), "page_size": SIZE,
                           "tail_from_position": n * SIZE, "tail": recs[n * SIZE:],
                           "how_to_verify": "walk back from the head"}
    if version == 2:
        doc["full_pages"] = n
        doc["last_page"] = page_pin(vid, n - 1, pages[-1]) if pages else None
    else:
        doc["pages"] = [page_pin(vid, k, p) for k, p in enumerate(pages)]
    return doc


def chain_files(signer: Signer, recs: list[dict[str, Any]], version: int = 2) -> tuple[bytes, list[bytes]]:
    """The head's file and the full pages' files (page 0 first) of the chain ``recs``."""
    pages: list[bytes] = []
    for k in range(len(recs) // SIZE):
        pages.append(signer.file(page_doc(recs, k, pages[-1] if pages else None, version)))
    return signer.file(head_doc(recs, pages, version)), pages


def tree_files(signer: Signer, recs: list[dict[str, Any]], version: int = 2) -> dict[str, bytes]:
    """The chain's files at their paths in the tree: ``vow/<id>/chain.json`` and
    ``vow/<id>/chain/<k>.json``."""
    head, pages = chain_files(signer, recs, version)
    vid = recs[0]["vow_id"]
    out = {f"vow/{vid}/chain.json": head}
    out.update({f"vow/{vid}/chain/{k}.json": p for k, p in enumerate(pages)})
    return out
