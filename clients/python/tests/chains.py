"""Test helper: vow chains and their files (``conduct.chain/v2`` heads and linked
``conduct.chain_page/v2`` pages, or the ``v1`` head that pinned every page), built as the
renderer writes them (library/VOWS.md, "The chain") and signed with a key of the test's own;
and the measured part of attestations and entries: ``meter`` blocks and profiles of either
meter (library/ATTESTATION.md, "The meter"; METER.md sections 6 and 10.2)."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

import rfc8785
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from conduct_kit import PinnedKey, record_sha256, vow_id_for

#: The scope statement, as library/ATTESTATION.md prints it (the kit compares it exactly).
SCOPE = {
    "no_meter_is_immune": "An agent optimizing against this output can learn to write clean traces. A low coupling is not proof of good conduct.",
    "not_trade_advice": "Not trade advice: no signal, no market model, no risk sizing.",
    "off_meter_blind_spot": "Only channels present in the trace are read. What the agent did off the trace is outside the meter.",
    "trace_provenance_is_the_callers": "The service attests that it scored this trace. It does not attest that the trace faithfully records what the agent did.",
}
SIZE = 32

#: The two meter blocks, exactly as library/ATTESTATION.md ("The meter") lists them.
METER_BLOCKS: dict[str, dict[str, Any]] = {
    "meter/1": {"d_clean": ["clean"], "m_symbols": "lexicon/1", "p_exact_max_tables": 20000,
                "p_monte_carlo_samples": 1000, "version": "meter/1"},
    "meter/2": {"d_clean": ["clean"], "m_symbols": "lexicon/2", "p_exact_max_tables": 20000,
                "p_exact_max_work": 200000, "p_monte_carlo_samples": 1000, "stratified_by": "Y",
                "version": "meter/2"},
}


def meter_block(version: str = "meter/2", stored: bool = False) -> dict[str, Any]:
    """The meter block of ``version``; ``stored``: as an entry carries it (VOWS.md: with
    ``"labels": "stored-labels/1"``)."""
    block = json.loads(json.dumps(METER_BLOCKS[version]))
    if stored:
        block["labels"] = "stored-labels/1"
    return block


def quantity(columns: list[str], version: str = "meter/2") -> dict[str, Any]:
    """One quantity (METER.md section 10.5's numbers); under ``meter/2`` with ``stratified``."""
    q: dict[str, Any] = {"n": 40, "columns": columns, "table": [[2, 18], [8, 12]], "bits": 0.091305030437,
                         "emi": 0.019136060444, "adjusted": 0.072168969993, "ami": 0.081408601942,
                         "p": 0.064833161607, "p_method": "exact"}
    if version == "meter/2":
        q["stratified"] = {"by": "Y", "strata": 20, "n": 40, "table": [[2, 18], [8, 12]],
                           "margins": [[12, 1, [[1, 2]]], [6, 1, [[0, 1], [1, 1]]], [2, 1, [[0, 2]]]],
                           "p": 0.03125, "p_method": "exact"}
    return q


def profile(version: str = "meter/2") -> dict[str, Any]:
    """The four quantities of a profile measured by ``version``, with stored labels."""
    m = ["plain", "tied"] if version == "meter/2" else ["aware", "plain"]
    return {"i_c_d": dict(quantity(["clean", "d#1"], version), direction=-0.3),
            "i_c_m": quantity(m, version),
            "i_c_m_given_d_clean": quantity(m, version),
            "i_c_dm": quantity([f"clean|{m[0]}", f"d#1|{m[1]}"], version)}


def brief_profile(version: str = "meter/2") -> dict[str, Any]:
    """A one-quantity profile of ``version``'s shape, small enough that pages of 32 entries
    stay quick to tamper with byte by byte."""
    q: dict[str, Any] = {"n": 4, "columns": ["clean", "d#1"], "table": [[2, 0], [1, 1]]}
    if version == "meter/2":
        q["stratified"] = {"by": "Y", "strata": 2, "n": 4}
    return {"i_c_d": q}


def attestation(signer: "Signer", version: str = "meter/2", **members: Any) -> bytes:
    """A signed ``conduct.attestation/v1`` measured by ``version`` (``members`` replace or add
    members before it is signed: another ``meter``, ``profile``, ...)."""
    body: dict[str, Any] = {"type": "conduct.attestation/v1", "context_key": "monitored", "n_turns": 40,
                            "issued_at": "2026-01-01T00:00:00Z", "trace_sha256": "0" * 64,
                            "meter": meter_block(version), "profile": profile(version), "scope": SCOPE}
    body.update(members)
    return signer.sign(body)


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


def records(signer: Signer, entries: int, tag: str = "a", first_index: int = 10,
            meters: tuple[str, ...] = ("meter/2",)) -> list[dict[str, Any]]:
    """A valid chain: a sandbox vow record (log index ``first_index``) and ``entries``
    report-ins, every record signed and linked; entry n is measured by ``meters[(n - 1) %
    len(meters)]`` (a chain may mix meters)."""
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
                 "profile": brief_profile(meters[(n - 1) % len(meters)]),
                 "meter": meter_block(meters[(n - 1) % len(meters)], stored=True), "scope": SCOPE}
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
