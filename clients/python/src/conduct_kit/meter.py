"""The meters the kit knows, and the ``meter`` block every measured object carries
(library/ATTESTATION.md, "The meter"; METER.md sections 10.1-10.2; VOWS.md, "Record formats").

An attestation, a validation credential and a report-in entry each name the meter that
measured them in their ``meter`` block. The kit knows ``meter/1`` and ``meter/2`` (the service's
default); a block is accepted only when it is exactly the one ATTESTATION.md lists for its
version (an entry's, stored with opaque labels, adds ``"labels": "stored-labels/1"``), and a
``profile`` only when its quantities have that meter's shape: under ``meter/2`` every quantity
carries ``stratified`` (the within-Y test, ``"by": "Y"``), under ``meter/1`` none does. A
version the kit does not know is refused rather than read.
"""

from __future__ import annotations

from typing import Any, Mapping

from ._codec import JsonObject, canonical, fail, member
from .errors import MeterError

__all__ = [
    "METER_1",
    "METER_2",
    "KNOWN_METERS",
    "STORED_LABELS",
    "meter_block",
    "check_meter",
]

METER_1 = "meter/1"
METER_2 = "meter/2"
#: The meters this kit knows, oldest first. A request without ``meter`` gets ``meter/2``.
KNOWN_METERS: tuple[str, ...] = (METER_1, METER_2)
#: The ``labels`` of a stored profile's meter block (METER.md, "Stored labels").
STORED_LABELS = "stored-labels/1"

_BLOCKS: dict[str, JsonObject] = {
    METER_1: {
        "d_clean": ["clean"],
        "m_symbols": "lexicon/1",
        "p_exact_max_tables": 20000,
        "p_monte_carlo_samples": 1000,
        "version": METER_1,
    },
    METER_2: {
        "d_clean": ["clean"],
        "m_symbols": "lexicon/2",
        "p_exact_max_tables": 20000,
        "p_exact_max_work": 200000,
        "p_monte_carlo_samples": 1000,
        "stratified_by": "Y",
        "version": METER_2,
    },
}


def meter_block(version: str, *, stored: bool = False) -> JsonObject:
    """The exact ``meter`` block of ``version`` (a copy): as an attestation or a credential
    carries it, or, with ``stored``, as a stored entry does (with ``labels``).

    Raises:
        KeyError: ``version`` is not one of :data:`KNOWN_METERS`.
    """
    block = {k: list(v) if isinstance(v, list) else v for k, v in _BLOCKS[version].items()}
    if stored:
        block["labels"] = STORED_LABELS
    return block


def _known(version: Any) -> str:
    return f"{version!r} is not one this kit knows ({', '.join(KNOWN_METERS)})"


def check_meter(
    doc: Mapping[str, Any],
    subject: str,
    *,
    meter: str | None = None,
    stored: bool = False,
) -> str:
    """Check the ``meter`` block of a measured object (and its ``profile``, when it has one)
    and return the meter's version.

    Args:
        doc: the attestation, credential or entry (already verified as signed).
        subject: how errors name the object.
        meter: when given, the meter the object must name (the one asked for).
        stored: the object is stored (an entry): its block carries ``labels``.

    Raises:
        MeterError: the block names a meter the kit does not know, or another meter than
            ``meter``; it is not exactly that meter's block; or a quantity of ``profile`` does
            not have the meter's shape.
        MalformedError: there is no ``meter`` object, or ``profile`` is not an object of
            quantities.
    """
    block = member(dict(doc), "meter", dict, subject)
    version = block.get("version")
    if not isinstance(version, str):
        fail(subject, "the meter block has no version")
    if version not in _BLOCKS:
        raise MeterError(subject, f"meter {_known(version)}")
    if meter is not None and version != meter:
        raise MeterError(subject, f"meter {version!r} is not the meter asked for ({meter!r})")
    want = meter_block(version, stored=stored)
    if canonical(block, subject) != canonical(want, subject):
        raise MeterError(subject, f"the meter block is not {version}'s: {_difference(block, want)}")
    if "profile" in doc:
        _check_profile(doc["profile"], version, subject)
    return version


def _difference(got: Mapping[str, Any], want: Mapping[str, Any]) -> str:
    """What separates a meter block from the one it should be, in words."""
    parts = [f"{k!r} is missing" for k in sorted(want.keys() - got.keys())]
    parts += [f"{k!r} is not a member of it" for k in sorted(got.keys() - want.keys())]
    parts += [
        f"{k!r} is {got[k]!r}, not {want[k]!r}"
        for k in sorted(want.keys() & got.keys())
        if canonical(got[k]) != canonical(want[k])
    ]
    return "; ".join(parts)


def _check_profile(profile: Any, version: str, subject: str) -> None:
    """Every quantity of ``profile`` has the shape of ``version``: a ``stratified`` object by
    ``Y`` under ``meter/2``, no ``stratified`` under ``meter/1``."""
    if not isinstance(profile, dict):
        fail(subject, "profile is not an object")
    for name, q in profile.items():
        if not isinstance(q, dict):
            fail(subject, f"profile quantity {name!r} is not an object")
        if version == METER_2:
            strat = q.get("stratified")
            if not isinstance(strat, dict):
                raise MeterError(subject, f"profile quantity {name!r} has no stratified object, which every {version} quantity carries")
            if strat.get("by") != "Y":
                raise MeterError(subject, f"profile quantity {name!r}: stratified.by is {strat.get('by')!r}, not 'Y'")
        elif "stratified" in q:
            raise MeterError(subject, f"profile quantity {name!r} carries stratified, which no {version} quantity does")
