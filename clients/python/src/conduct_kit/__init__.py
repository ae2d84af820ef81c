"""conduct-kit: a client and an offline verifier for a conduct attestation service.

Everything the service signs can be checked here without the service, against the key you
pinned once (the ``vkey`` of ``GET /pubkey``):

>>> from conduct_kit import verify_attestation
>>> att = verify_attestation(open("attestation.json", "rb").read(), VKEY, trace=my_trace)  # doctest: +SKIP

The formats are those of the service's library documents (``/library``): ATTESTATION.md,
VOWS.md, MIRRORS.md, ERRORS.md, ERC8004.md, PAYMENTS.md; the meters it knows
(:data:`KNOWN_METERS`: ``meter/1``, ``meter/2``) are those of METER.md.
"""

from .errors import (
    ChainError,
    ConductError,
    ExpiredError,
    FieldError,
    HashMismatchError,
    InclusionError,
    KeyMismatchError,
    MalformedError,
    ManifestError,
    MeterError,
    PaymentError,
    ProblemError,
    SignatureError,
    TypeMismatchError,
    UnexpectedResponseError,
    VerificationError,
)
from .keys import PinnedKey, key_id_for
from .manifest import (
    DirectorySource,
    HttpSource,
    ManifestReport,
    chain_head_path,
    chain_page_path,
    file_key,
    unit,
    verify_bin,
    verify_manifest,
)
from .meter import KNOWN_METERS, check_meter, meter_block
from .nostr import verify_nostr_event
from .signed import (
    credential_hash,
    leaf_bytes,
    trace_sha256,
    verify_attestation,
    verify_credential,
    verify_openapi,
    verify_signed,
)
from .tlog import (
    Checkpoint,
    InclusionProof,
    leaf_hash,
    merkle_root,
    parse_proof,
    verify_checkpoint,
    verify_inclusion,
    verify_note,
)
from .vows import (
    CHAIN_PAGE_SIZE,
    CHAIN_PAGE_TYPE,
    CHAIN_PAGE_V1_TYPE,
    CHAIN_TYPE,
    CHAIN_V1_TYPE,
    VOWS_PAGE_SIZE,
    VOWS_PAGE_TYPE,
    VOWS_TYPE,
    chain_page_count,
    record_sha256,
    verify_chain,
    verify_chain_files,
    verify_chain_head,
    verify_chain_page,
    verify_entry,
    verify_link,
    verify_vow_record,
    verify_vows_files,
    verify_vows_head,
    verify_vows_page,
    vow_id_for,
)

verify_vow_entry = verify_entry
"""Alias of :func:`verify_entry` (a report-in's ``conduct.entry/v1``)."""

__version__ = "0.1.0"

__all__ = [
    "CHAIN_PAGE_SIZE",
    "CHAIN_PAGE_TYPE",
    "CHAIN_PAGE_V1_TYPE",
    "CHAIN_TYPE",
    "CHAIN_V1_TYPE",
    "ChainError",
    "Checkpoint",
    "ConductError",
    "DirectorySource",
    "ExpiredError",
    "FieldError",
    "HashMismatchError",
    "HttpSource",
    "InclusionError",
    "InclusionProof",
    "KNOWN_METERS",
    "KeyMismatchError",
    "MalformedError",
    "ManifestError",
    "ManifestReport",
    "MeterError",
    "PaymentError",
    "PinnedKey",
    "ProblemError",
    "SignatureError",
    "TypeMismatchError",
    "UnexpectedResponseError",
    "VOWS_PAGE_SIZE",
    "VOWS_PAGE_TYPE",
    "VOWS_TYPE",
    "VerificationError",
    "chain_head_path",
    "chain_page_count",
    "chain_page_path",
    "check_meter",
    "credential_hash",
    "file_key",
    "key_id_for",
    "leaf_bytes",
    "leaf_hash",
    "merkle_root",
    "meter_block",
    "parse_proof",
    "record_sha256",
    "trace_sha256",
    "unit",
    "verify_attestation",
    "verify_bin",
    "verify_chain",
    "verify_chain_files",
    "verify_chain_head",
    "verify_chain_page",
    "verify_checkpoint",
    "verify_credential",
    "verify_entry",
    "verify_inclusion",
    "verify_link",
    "verify_manifest",
    "verify_note",
    "verify_nostr_event",
    "verify_openapi",
    "verify_signed",
    "verify_vow_entry",
    "verify_vow_record",
    "verify_vows_files",
    "verify_vows_head",
    "verify_vows_page",
    "vow_id_for",
]


def __getattr__(name: str) -> object:
    # The client pulls in httpx only; paying needs the `pay` extra, imported when used.
    if name in ("Client", "Payer"):
        from . import client

        return getattr(client, name)
    raise AttributeError(name)
