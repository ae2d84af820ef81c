//! Verify one signed JSON object (`conduct verify FILE`): an attestation, or any record or
//! snapshot the service signs. The signature is Ed25519 over the RFC 8785 canonical form of the
//! object without `signature`, and `key_id` must name the pinned key (library/ATTESTATION.md).

use conduct_core::attestation::ATTESTATION_TYPE;
use conduct_core::signing::{verify_object, PinnedKey};
use serde_json::Value;

use crate::Error;

/// The name a document is given in errors when it has no file name.
const DOCUMENT: &str = "document";

/// Parse a pinned key: a C2SP vkey (`name+id+base64`, as `/pubkey` gives it in `vkey`, which
/// also pins the key id) or the base64 of the 32-byte Ed25519 key.
pub fn pinned_key(pubkey: &str) -> Result<PinnedKey, Error> {
    PinnedKey::parse(pubkey).map_err(|e| Error::PinnedKey(e.to_string()))
}

/// Verify the signed JSON object `bytes` under `key` and return it: its `signature` verifies
/// over every other member, `key_id` (when the key pins one) matches, and the scope statement
/// is intact where its type carries one. Any object the service signs passes; see
/// [`verify_attestation`] to also require an attestation.
pub fn verify_signed(bytes: &[u8], key: &PinnedKey) -> Result<Value, Error> {
    let doc: Value = serde_json::from_slice(bytes).map_err(|source| Error::NotJson {
        path: DOCUMENT.into(),
        source,
    })?;
    verify_object(&doc, key).map_err(|source| Error::Signature {
        path: DOCUMENT.into(),
        source,
    })?;
    Ok(doc)
}

/// [`verify_signed`], and the object is an attestation (`type` `conduct.attestation/v1`). Its
/// `trace_sha256` is the RFC 8785 SHA-256 of the trace it attests (recompute it with
/// `conduct_core::canonical::trace_sha256` when you hold the trace).
pub fn verify_attestation(bytes: &[u8], key: &PinnedKey) -> Result<Value, Error> {
    let doc = verify_signed(bytes, key)?;
    match doc.get("type").and_then(Value::as_str) {
        Some(ATTESTATION_TYPE) => Ok(doc),
        found => Err(Error::NotAnAttestation {
            found: found.map(str::to_owned),
            expected: ATTESTATION_TYPE,
        }),
    }
}
