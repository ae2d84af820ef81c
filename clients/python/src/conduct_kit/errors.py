"""Exceptions of the kit.

Two families:

- :class:`VerificationError` and its subclasses: something the service signed (or a copy of
  it) does not check out offline. The message says exactly what failed and where.
- :class:`ConductError` and its subclasses: a call to the service failed. A refusal the service
  explains is a :class:`ProblemError` carrying the RFC 9457 problem document
  (library/ERRORS.md): ``type``, ``title``, ``status``, ``detail``, ``instance`` and the field
  pointers of ``errors[]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

__all__ = [
    "VerificationError",
    "MalformedError",
    "SignatureError",
    "KeyMismatchError",
    "TypeMismatchError",
    "HashMismatchError",
    "MeterError",
    "ChainError",
    "InclusionError",
    "ManifestError",
    "ExpiredError",
    "ConductError",
    "ProblemError",
    "FieldError",
    "PaymentError",
    "UnexpectedResponseError",
]


class VerificationError(Exception):
    """Something signed by the service does not verify.

    Attributes:
        subject: what was being checked (``"attestation"``, ``"manifest/3.json"``,
            ``"checkpoint"``, ``"chain record 4"``, ...).
        reason: what exactly failed, in words.
    """

    def __init__(self, subject: str, reason: str) -> None:
        super().__init__(f"{subject}: {reason}")
        self.subject = subject
        self.reason = reason


class MalformedError(VerificationError):
    """The bytes are not the format they claim to be (not JSON, a missing or mistyped member,
    a line out of place, non-canonical base64, ...)."""


class SignatureError(VerificationError):
    """The Ed25519 signature does not verify over the canonical bytes under the pinned key."""


class KeyMismatchError(VerificationError):
    """The object names another key (``key_id``, a note signature line) than the pinned one."""


class TypeMismatchError(VerificationError):
    """The object is signed but is not of the expected ``type``."""


class HashMismatchError(VerificationError):
    """A SHA-256 (or Keccak-256) or a length does not match what the signed parent pins."""


class MeterError(VerificationError):
    """The ``meter`` block names a meter the kit does not know, or another meter than the one
    asked for, or is not exactly the block of its meter; or a quantity of the ``profile`` does
    not have its meter's shape (library/ATTESTATION.md, "The meter")."""


class ChainError(VerificationError):
    """A vow chain does not hold: ``seq``, ``prev``, ``vow_id``, ``log_index`` or ``at``."""


class InclusionError(VerificationError):
    """An inclusion proof does not lead from the leaf to the checkpoint's root."""


class ManifestError(VerificationError):
    """The manifest's trie or the tree it lists does not hold (a bin out of place, a count that
    differs, a file missing or unlisted)."""


class ExpiredError(VerificationError):
    """The manifest's root has expired (its ``expires`` is in the past)."""


class ConductError(Exception):
    """A call to the service failed."""


@dataclass(frozen=True)
class FieldError:
    """One entry of a problem's ``errors[]``: an RFC 6901 pointer into the request (``""`` is
    the whole body; a header is named bare, e.g. ``Idempotency-Key``; a query parameter as
    ``?name``) and what is wrong there."""

    pointer: str
    detail: str


class ProblemError(ConductError):
    """The service refused the request with an RFC 9457 problem document.

    Attributes:
        type: the problem type as served (``/library/ERRORS.md#invalid``).
        name: the type's name alone (``invalid``, ``rate-limited``, ``unknown-vow``, ...).
        title: the short, fixed title of the type.
        status: the HTTP status.
        detail: what was wrong with this request.
        instance: the path that answered.
        errors: the field pointers the service names (:class:`FieldError`).
        retry_after: seconds from ``Retry-After``, when the answer carried one.
        document: the whole problem document.
    """

    def __init__(
        self,
        document: Mapping[str, Any],
        status: int,
        retry_after: float | None = None,
    ) -> None:
        self.document: dict[str, Any] = dict(document)
        self.type: str = str(document.get("type", "about:blank"))
        self.name: str = self.type.rsplit("#", 1)[-1] if "#" in self.type else self.type
        self.title: str = str(document.get("title", ""))
        st = document.get("status", status)
        self.status: int = st if isinstance(st, int) else status
        self.detail: str = str(document.get("detail", ""))
        self.instance: str | None = (
            str(document["instance"]) if "instance" in document else None
        )
        errs = document.get("errors")
        self.errors: list[FieldError] = []
        if isinstance(errs, list):
            for e in errs:
                if isinstance(e, Mapping):
                    self.errors.append(
                        FieldError(str(e.get("pointer", "")), str(e.get("detail", "")))
                    )
        self.retry_after = retry_after
        where = f" at {', '.join(self.pointers)}" if self.errors else ""
        super().__init__(f"{self.status} {self.name}{where}: {self.detail or self.title}")

    @property
    def pointers(self) -> list[str]:
        """The pointers of ``errors[]``, in order."""
        return [e.pointer for e in self.errors]


class PaymentError(ConductError):
    """A paid call was not served: the 402 challenge could not be paid, or the payment was
    refused (``reason`` is the challenge's ``error``, e.g. ``payment_already_used``), or
    settlement failed (``settlement`` is the decoded ``PAYMENT-RESPONSE``)."""

    def __init__(
        self,
        message: str,
        reason: str | None = None,
        settlement: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.reason = reason
        self.settlement = dict(settlement) if settlement is not None else None


class UnexpectedResponseError(ConductError):
    """The service answered something that is neither the expected success nor a problem
    document."""

    def __init__(self, message: str, status: int, body: bytes) -> None:
        super().__init__(message)
        self.status = status
        self.body = body
