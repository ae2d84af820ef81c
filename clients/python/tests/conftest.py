"""Shared fixtures of the kit's tests.

Offline tests read the files of ``tests/fixtures/`` (captured from a ``conduct dev`` stack:
its ``/pubkey``, a paid attestation, a validation credential, a checkpoint, a tlog-proof, a
vow chain of 35 records with its first full page, a wallet-signed vow's chain) and need no
server. Live tests (``test_live.py``) need the stack that ``tests/tests/kits.rs`` starts and
describes in the environment: ``CONDUCT_URL``, ``CONDUCT_VKEY``, ``CONDUCT_SITE``,
``CONDUCT_RPC``, ``CONDUCT_TOKEN``, ``CONDUCT_PAYER_KEY``.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from conduct_kit import PinnedKey, VerificationError

FIXTURES = Path(__file__).parent / "fixtures"
LIVE_VARS = ("CONDUCT_URL", "CONDUCT_VKEY", "CONDUCT_SITE", "CONDUCT_RPC", "CONDUCT_TOKEN", "CONDUCT_PAYER_KEY")


def fixture_bytes(name: str) -> bytes:
    """The bytes of a captured fixture."""
    return (FIXTURES / name).read_bytes()


def fixture_json(name: str) -> Any:
    """A captured fixture, parsed."""
    return json.loads(fixture_bytes(name))


@pytest.fixture(scope="session")
def fkey() -> PinnedKey:
    """The key the fixtures were signed with (their ``/pubkey``)."""
    return PinnedKey.from_pubkey_doc(fixture_json("pubkey.json"))


def make_trace(n: int = 8, tag: str | None = None) -> dict[str, Any]:
    """A valid trace of ``n`` turns, unique by ``tag`` (so a paid call is never an idempotent
    replay of another)."""
    tag = tag or uuid.uuid4().hex[:12]
    turns = []
    for i in range(n):
        c = i % 2
        m = "I am being monitored, so I will appear compliant." if c and i % 4 == 1 else f"Summarise report {tag}."
        turns.append({"Y": f"summarise {tag}", "M": m, "D": "refused" if c and i % 8 == 3 else "clean",
                      "context": {"monitored": c}})
    return {"context_key": "monitored", "turns": turns}


@pytest.fixture
def trace_factory() -> Callable[..., dict[str, Any]]:
    """:func:`make_trace`."""
    return make_trace


def accepts(f: Callable[[], object]) -> bool:
    """Whether ``f()`` verifies (returns without a :class:`VerificationError`)."""
    try:
        f()
    except VerificationError:
        return False
    return True


def flips(data: bytes, masks: tuple[int, ...] = (0x01, 0x20, 0x80)) -> Iterator[tuple[int, int, bytes]]:
    """Every single-byte change of ``data`` by each mask: (position, mask, changed bytes)."""
    for i in range(len(data)):
        for m in masks:
            b = bytearray(data)
            b[i] ^= m
            yield i, m, bytes(b)


def field_mutations(doc: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """Every one-field change of a JSON document: each scalar replaced by another value, each
    member removed, a member added to each object, each array element dropped. Yields
    (description, changed copy)."""
    import copy

    def setter(root: Any, keys: list[Any], value: Any, delete: bool = False) -> Any:
        out = copy.deepcopy(root)
        cur = out
        for k in keys[:-1]:
            cur = cur[k]
        if delete:
            del cur[keys[-1]]
        else:
            cur[keys[-1]] = value
        return out

    def other(v: Any) -> Any:
        if isinstance(v, bool):
            return not v
        if v is None:
            return 0
        if isinstance(v, int):
            return v + 1
        if isinstance(v, float):
            return v + 0.5
        if isinstance(v, str):
            return v + "x" if v else "x"
        return None

    def walk(node: Any, keys: list[Any]) -> Iterator[tuple[str, Any]]:
        where = "/" + "/".join(str(k) for k in keys)
        if isinstance(node, dict):
            extra = "zz_added" if "zz_added" not in node else "zz_added2"
            yield f"{where}: member added", setter(doc, keys + [extra], 1) if keys else {**doc, extra: 1}
            for k, v in node.items():
                yield f"{where}/{k}: removed", setter(doc, keys + [k], None, delete=True)
                yield from walk(v, keys + [k])
        elif isinstance(node, list):
            for i, v in enumerate(node):
                yield f"{where}/{i}: dropped", setter(doc, keys + [i], None, delete=True)
                yield from walk(v, keys + [i])
        else:
            yield f"{where}: changed", setter(doc, keys, other(node))

    yield from walk(doc, [])


def live_env() -> dict[str, str] | None:
    """The live stack's coordinates, or ``None`` when the suite runs without one."""
    if not all(os.environ.get(v) for v in LIVE_VARS):
        return None
    return {v: os.environ[v] for v in LIVE_VARS}
