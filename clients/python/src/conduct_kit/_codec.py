"""Strict parsing shared by the verifiers: JSON with no duplicate members and no non-finite
numbers, RFC 8785 canonical bytes, canonical base64 and hex."""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any, NoReturn

import rfc8785

from .errors import MalformedError

JsonObject = dict[str, Any]

_HEX64 = re.compile(r"[0-9a-f]{64}\Z")


def fail(subject: str, reason: str) -> NoReturn:
    """Raise :class:`MalformedError`."""
    raise MalformedError(subject, reason)


def _pairs(subject: str) -> Any:
    def hook(pairs: list[tuple[str, Any]]) -> JsonObject:
        out: JsonObject = {}
        for k, v in pairs:
            if k in out:
                fail(subject, f"duplicate member {k!r}")
            out[k] = v
        return out

    return hook


def _constant(subject: str) -> Any:
    def hook(name: str) -> Any:
        fail(subject, f"{name} is not a JSON number")

    return hook


def parse_json(data: bytes | str, subject: str) -> Any:
    """Parse one JSON document strictly: valid UTF-8, no duplicate member, no NaN/Infinity."""
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            fail(subject, f"not UTF-8 ({e.reason} at byte {e.start})")
    else:
        text = data
    try:
        return json.loads(text, object_pairs_hook=_pairs(subject), parse_constant=_constant(subject))
    except json.JSONDecodeError as e:
        fail(subject, f"not JSON ({e.msg} at {e.pos})")
    except RecursionError:
        fail(subject, "nested too deeply")


def parse_object(data: bytes | str | JsonObject, subject: str) -> JsonObject:
    """A JSON object from bytes, text or an already parsed mapping (copied)."""
    if isinstance(data, dict):
        return dict(data)
    doc = parse_json(data, subject)
    if not isinstance(doc, dict):
        fail(subject, "not a JSON object")
    return doc


def canonical(value: Any, subject: str = "object") -> bytes:
    """RFC 8785 bytes of ``value``."""
    try:
        return rfc8785.dumps(value)
    except rfc8785.CanonicalizationError as e:
        fail(subject, f"cannot be canonicalized with RFC 8785 ({e})")


def b64decode_strict(text: str, subject: str, what: str, length: int | None = None) -> bytes:
    """Standard base64 (RFC 4648 section 4, padded), refusing any other spelling of the same
    bytes: the text must be exactly what encoding the bytes gives."""
    if not isinstance(text, str):
        fail(subject, f"{what} is not a string")
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        fail(subject, f"{what} is not base64")
    if base64.b64encode(raw).decode("ascii") != text:
        fail(subject, f"{what} is not canonical base64")
    if length is not None and len(raw) != length:
        fail(subject, f"{what} is {len(raw)} bytes, not {length}")
    return raw


def hex64(value: Any, subject: str, what: str) -> str:
    """A lower-case hex SHA-256 (64 digits)."""
    if not isinstance(value, str) or not _HEX64.match(value):
        fail(subject, f"{what} is not 64 lower-case hex digits")
    return value


def member(obj: JsonObject, name: str, kind: type | tuple[type, ...], subject: str) -> Any:
    """``obj[name]``, which must be present and of ``kind`` (``bool`` is never an ``int``)."""
    if name not in obj:
        fail(subject, f"member {name!r} is missing")
    v = obj[name]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(v, bool) and bool not in kinds:
        fail(subject, f"member {name!r} is not {_names(kinds)}")
    if not isinstance(v, kinds):
        fail(subject, f"member {name!r} is not {_names(kinds)}")
    return v


def _names(kinds: tuple[type, ...]) -> str:
    names = {str: "a string", int: "an integer", bool: "a boolean", dict: "an object",
             list: "an array", float: "a number", type(None): "null"}
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def uint(obj: JsonObject, name: str, subject: str) -> int:
    """A non-negative integer member."""
    v = member(obj, name, int, subject)
    if v < 0:
        fail(subject, f"member {name!r} is negative")
    return int(v)
