"""The pinned service key (library/ATTESTATION.md, "The public key").

A service signs with one Ed25519 key. ``GET /pubkey`` publishes it three ways: ``public_key``
(base64 of the 32 bytes), ``key_id`` (the C2SP signed-note key id: the first 4 bytes of
``SHA-256(name || 0x0A || 0x01 || public_key)`` as 8 hex digits, ``name`` being the log origin)
and ``vkey`` (``name+key_id+base64(0x01 || public_key)``, the form C2SP note verifiers take).
Pin it once, from a channel you trust, and hand the pin to every verifier of this kit.
"""

from __future__ import annotations

import base64
import hashlib
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Union

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from ._codec import b64decode_strict, fail
from .errors import KeyMismatchError

__all__ = ["PinnedKey", "KeyLike", "key_id_for"]

_KEY_ID = re.compile(r"[0-9a-f]{8}\Z")
# C2SP signed-note: a key name is non-empty, with no Unicode spaces and no plus sign.
_NAME_FORBIDDEN = re.compile(r"[\s+]")


def key_id_for(name: str, public_key: bytes) -> str:
    """The C2SP key id of an Ed25519 ``public_key`` under ``name``, as 8 hex digits."""
    return hashlib.sha256(name.encode("utf-8") + b"\n\x01" + public_key).digest()[:4].hex()


@dataclass(frozen=True)
class PinnedKey:
    """An Ed25519 verification key with its C2SP name (the log origin) and key id.

    Build it with :meth:`from_vkey` (the ``vkey`` of ``GET /pubkey``), :meth:`from_pubkey_doc`
    (the whole ``/pubkey`` document) or :meth:`parse` (any of these).
    """

    name: str
    public_key: bytes
    key_id: str = field(init=False)

    def __post_init__(self) -> None:
        if len(self.public_key) != 32:
            fail("pinned key", f"an Ed25519 public key is 32 bytes, not {len(self.public_key)}")
        if not self.name or _NAME_FORBIDDEN.search(self.name):
            fail("pinned key", f"{self.name!r} is not a C2SP key name")
        object.__setattr__(self, "key_id", key_id_for(self.name, self.public_key))

    @property
    def vkey(self) -> str:
        """The C2SP vkey: ``name+key_id+base64(0x01 || public_key)``."""
        data = base64.b64encode(b"\x01" + self.public_key).decode("ascii")
        return f"{self.name}+{self.key_id}+{data}"

    @property
    def origin(self) -> str:
        """The log origin (the key's name), e.g. ``localhost:8402/log``."""
        return self.name

    @classmethod
    def from_vkey(cls, vkey: str) -> "PinnedKey":
        """Parse a C2SP vkey; its key id must be the one its name and key give."""
        subject = "vkey"
        if not isinstance(vkey, str) or vkey.count("+") < 2:
            fail(subject, "not name+key_id+base64(0x01 || key)")
        # A key name holds no '+' and the base64 key data may: split from the left.
        name, kid, data = vkey.split("+", 2)
        if not _KEY_ID.match(kid):
            fail(subject, f"key id {kid!r} is not 8 lower-case hex digits")
        raw = b64decode_strict(data, subject, "key data", 33)
        if raw[0] != 0x01:
            fail(subject, f"algorithm byte is 0x{raw[0]:02x}, not 0x01 (Ed25519)")
        key = cls(name, raw[1:])
        if key.key_id != kid:
            raise KeyMismatchError(subject, f"key id {kid} is not the key's id {key.key_id}")
        return key

    @classmethod
    def from_pubkey_doc(cls, doc: Mapping[str, Any]) -> "PinnedKey":
        """From a ``GET /pubkey`` document: its ``vkey``, which must agree with its
        ``public_key`` and ``key_id`` (and ``name``, when present)."""
        subject = "/pubkey"
        vkey = doc.get("vkey")
        if not isinstance(vkey, str):
            fail(subject, "member 'vkey' is missing")
        key = cls.from_vkey(vkey)
        pk = b64decode_strict(doc.get("public_key", ""), subject, "public_key", 32)
        if pk != key.public_key:
            raise KeyMismatchError(subject, "public_key is not the key of vkey")
        if doc.get("key_id") != key.key_id:
            raise KeyMismatchError(subject, f"key_id {doc.get('key_id')!r} is not {key.key_id}")
        if "name" in doc and doc["name"] != key.name:
            raise KeyMismatchError(subject, f"name {doc['name']!r} is not {key.name!r}")
        return key

    @classmethod
    def parse(cls, key: "KeyLike") -> "PinnedKey":
        """A :class:`PinnedKey` from a pin in any accepted form."""
        if isinstance(key, PinnedKey):
            return key
        if isinstance(key, str):
            return cls.from_vkey(key.strip())
        if isinstance(key, Mapping):
            return cls.from_pubkey_doc(key)
        fail("pinned key", f"cannot pin a {type(key).__name__}")

    def verify(self, signature: bytes, message: bytes) -> bool:
        """Whether ``signature`` is this key's Ed25519 signature over ``message``."""
        try:
            Ed25519PublicKey.from_public_bytes(self.public_key).verify(signature, message)
        except InvalidSignature:
            return False
        return True


KeyLike = Union[PinnedKey, str, Mapping[str, Any]]
"""A pin: a :class:`PinnedKey`, a vkey string, or a ``/pubkey`` document."""
