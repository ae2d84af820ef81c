"""The transparency log: C2SP signed notes and checkpoints, RFC 6962 hashing, and the C2SP
``tlog-proof@v1`` inclusion proofs of ``GET /log/proof/<index>`` (library/VOWS.md,
"Durability and verification"; the README's "Audit the log").

A checkpoint (``/log/checkpoint``) is a signed note whose text is three lines, the log's
origin, its size in decimal and its root hash in base64, then a blank line and signature lines
``— <key name> base64(key id (4 bytes) || Ed25519 signature (64 bytes))``. The signature covers
the note text, final newline included. The origin is the pinned key's name.

A leaf is the RFC 8785 bytes of a signed record; its hash is ``SHA-256(0x00 || leaf)``, an
interior node's ``SHA-256(0x01 || left || right)`` (RFC 6962, RFC 9162 section 2.1).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ._codec import b64decode_strict, fail
from .errors import InclusionError, KeyMismatchError, MalformedError, SignatureError
from .keys import KeyLike, PinnedKey
from .signed import leaf_bytes

__all__ = [
    "Checkpoint",
    "InclusionProof",
    "leaf_hash",
    "node_hash",
    "merkle_root",
    "verify_note",
    "verify_checkpoint",
    "parse_proof",
    "verify_inclusion",
    "verify_inclusion_path",
]

_DECIMAL = re.compile(r"(0|[1-9][0-9]{0,19})\Z")
_SIG_LINE = re.compile(r"\u2014 (\S+) (\S+)\Z")
PROOF_HEADER = "c2sp.org/tlog-proof@v1"


def leaf_hash(leaf: bytes) -> bytes:
    """RFC 6962 leaf hash: ``SHA-256(0x00 || leaf)``."""
    return hashlib.sha256(b"\x00" + leaf).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """RFC 6962 interior node hash: ``SHA-256(0x01 || left || right)``."""
    return hashlib.sha256(b"\x01" + left + right).digest()


def merkle_root(leaf_hashes: Sequence[bytes]) -> bytes:
    """The RFC 6962 Merkle tree hash of the leaves whose hashes are given (the empty tree's is
    ``SHA-256("")``)."""
    n = len(leaf_hashes)
    if n == 0:
        return hashlib.sha256(b"").digest()
    if n == 1:
        return leaf_hashes[0]
    k = 1
    while k * 2 < n:
        k *= 2
    return node_hash(merkle_root(leaf_hashes[:k]), merkle_root(leaf_hashes[k:]))


@dataclass(frozen=True)
class Checkpoint:
    """A verified checkpoint: the log's ``origin``, its ``size`` and ``root`` hash, any
    extension lines, and the note's exact ``text``."""

    origin: str
    size: int
    root: bytes
    extensions: tuple[str, ...]
    text: str

    @property
    def root_b64(self) -> str:
        """The root hash in base64, as the note writes it."""
        import base64

        return base64.b64encode(self.root).decode("ascii")


def verify_note(note: bytes | str, key: KeyLike, subject: str = "note") -> str:
    """Verify a C2SP signed note under the pinned key and return its text (the signed part,
    final newline included). Signature lines of other keys (witnesses) are ignored; one line
    must be the pinned key's and verify."""
    pin = PinnedKey.parse(key)
    if isinstance(note, bytes):
        try:
            note = note.decode("utf-8")
        except UnicodeDecodeError:
            fail(subject, "not UTF-8")
    if not note.endswith("\n"):
        fail(subject, "does not end with a newline")
    cut = note.rfind("\n\n")
    if cut < 0:
        fail(subject, "no blank line before the signatures")
    text, sigs = note[: cut + 1], note[cut + 2 :]
    if "\n\n" in text or not text.strip("\n"):
        fail(subject, "the text is empty or holds a blank line")
    lines = sigs[:-1].split("\n")
    if not lines or lines == [""]:
        fail(subject, "no signature line")
    named = False
    for line in lines:
        m = _SIG_LINE.match(line)
        if not m:
            fail(subject, f"signature line {line!r} is not '\u2014 <name> <base64>'")
        raw = b64decode_strict(m.group(2), subject, "a signature line's data")
        if len(raw) < 5:
            fail(subject, "a signature line's data is shorter than a key id")
        if m.group(1) != pin.name or raw[:4].hex() != pin.key_id:
            continue
        named = True
        if len(raw) != 68:
            fail(subject, f"the pinned key's signature is {len(raw) - 4} bytes, not 64")
        if pin.verify(raw[4:], text.encode("utf-8")):
            return text
        raise SignatureError(subject, f"the signature of {pin.name} does not verify over the note text")
    if named:  # pragma: no cover - the loop returns or raises once named
        raise SignatureError(subject, "no valid signature")
    raise KeyMismatchError(subject, f"no signature line by the pinned key {pin.name}+{pin.key_id}")


def verify_checkpoint(note: bytes | str, key: KeyLike) -> Checkpoint:
    """Verify a checkpoint (``/log/checkpoint``) under the pinned key and parse it. Its origin
    must be the pinned key's name."""
    subject = "checkpoint"
    pin = PinnedKey.parse(key)
    text = verify_note(note, pin, subject)
    lines = text[:-1].split("\n")
    if len(lines) < 3:
        fail(subject, "fewer than three lines (origin, size, root)")
    origin, size, root = lines[0], lines[1], lines[2]
    if origin != pin.name:
        raise KeyMismatchError(subject, f"origin {origin!r} is not the pinned log {pin.name!r}")
    if not _DECIMAL.match(size):
        fail(subject, f"size {size!r} is not a decimal without leading zeros")
    return Checkpoint(
        origin=origin,
        size=int(size),
        root=b64decode_strict(root, subject, "root hash", 32),
        extensions=tuple(lines[3:]),
        text=text,
    )


@dataclass(frozen=True)
class InclusionProof:
    """A parsed ``c2sp.org/tlog-proof@v1``: the leaf ``index``, the audit ``path`` (hashes,
    leaf to root), optional ``extra`` data, and the ``checkpoint`` it proves against (its
    signature verified)."""

    index: int
    path: tuple[bytes, ...]
    extra: bytes | None
    checkpoint: Checkpoint


def parse_proof(proof: bytes | str, key: KeyLike) -> InclusionProof:
    """Parse a ``c2sp.org/tlog-proof@v1`` and verify the checkpoint it carries (not yet the
    path: :func:`verify_inclusion` does that against a leaf)."""
    subject = "tlog-proof"
    if isinstance(proof, bytes):
        try:
            proof = proof.decode("utf-8")
        except UnicodeDecodeError:
            fail(subject, "not UTF-8")
    head, sep, note = proof.partition("\n\n")
    if not sep:
        fail(subject, "no blank line before the checkpoint")
    lines = head.split("\n")
    if lines[0] != PROOF_HEADER:
        fail(subject, f"first line is not {PROOF_HEADER!r}")
    i = 1
    extra = None
    if i < len(lines) and lines[i].startswith("extra "):
        extra = b64decode_strict(lines[i][6:], subject, "extra data")
        i += 1
    if i >= len(lines) or not lines[i].startswith("index "):
        fail(subject, "no 'index' line")
    idx = lines[i][6:]
    if not _DECIMAL.match(idx):
        fail(subject, f"index {idx!r} is not a decimal without leading zeros")
    path = tuple(b64decode_strict(h, subject, f"proof hash {n}", 32) for n, h in enumerate(lines[i + 1 :]))
    cp = verify_checkpoint(note, key)
    return InclusionProof(index=int(idx), path=path, extra=extra, checkpoint=cp)


def verify_inclusion_path(
    leaf_hash_: bytes, index: int, size: int, path: Sequence[bytes], root: bytes
) -> None:
    """Check an RFC 9162 (section 2.1.3.2) inclusion path; raise :class:`InclusionError`."""
    subject = "inclusion proof"
    if index >= size:
        raise InclusionError(subject, f"index {index} is not below the tree size {size}")
    fn, sn, r = index, size - 1, leaf_hash_
    for p in path:
        if sn == 0:
            raise InclusionError(subject, "the path is longer than the tree is deep")
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if not fn & 1:
                while not fn & 1 and fn != 0:
                    fn >>= 1
                    sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise InclusionError(subject, "the path is shorter than the tree is deep")
    if r != root:
        raise InclusionError(subject, f"the path from leaf {index} does not lead to the checkpoint's root")


def verify_inclusion(
    proof: bytes | str,
    leaf: bytes | Mapping[str, Any],
    key: KeyLike,
    *,
    checkpoint: Checkpoint | bytes | str | None = None,
    index: int | None = None,
) -> InclusionProof:
    """Verify that ``leaf`` is in the log, by the tlog-proof of ``GET /log/proof/<index>``.

    Args:
        proof: the proof text.
        leaf: the leaf bytes, or the signed record whose RFC 8785 bytes are the leaf.
        key: the pinned key (the proof's checkpoint must be signed by it).
        checkpoint: a checkpoint you hold (verified, or its note text to verify): the proof's
            checkpoint must then be that very tree (same size and root).
        index: the leaf index you expect (default: the record's ``log_index`` when ``leaf`` is
            a record).

    Returns:
        The parsed proof. Raises a :class:`~conduct_kit.errors.VerificationError` subclass.
    """
    pin = PinnedKey.parse(key)
    parsed = parse_proof(proof, pin)
    if isinstance(leaf, Mapping):
        if index is None and isinstance(leaf.get("log_index"), int):
            index = int(leaf["log_index"])
        data = leaf_bytes(leaf)
    else:
        data = bytes(leaf)
    if index is not None and parsed.index != index:
        raise InclusionError("inclusion proof", f"proves index {parsed.index}, not {index}")
    if checkpoint is not None:
        held = checkpoint if isinstance(checkpoint, Checkpoint) else verify_checkpoint(checkpoint, pin)
        if (held.size, held.root) != (parsed.checkpoint.size, parsed.checkpoint.root):
            raise InclusionError(
                "inclusion proof",
                f"proves against size {parsed.checkpoint.size}, not the checkpoint held (size {held.size})",
            )
    verify_inclusion_path(leaf_hash(data), parsed.index, parsed.checkpoint.size, parsed.path, parsed.checkpoint.root)
    return parsed


__all__ += ["MalformedError"]
