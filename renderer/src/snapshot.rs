//! Signed JSON snapshots: a `serde_json::Value` object signed with the service key and
//! serialized as pretty, key-sorted JSON (deterministic bytes; verifiers re-canonicalize).

use conduct_core::canonical::CanonicalError;
use conduct_core::signing::ServiceKey;
use serde_json::Value;

/// Sign `doc` (must be an object) and return its file bytes.
pub fn signed_bytes(key: &ServiceKey, doc: Value) -> Result<Vec<u8>, CanonicalError> {
    let mut obj = match doc {
        Value::Object(m) => m,
        other => {
            return Err(CanonicalError(format!(
                "a snapshot must be a JSON object, not {other}"
            )))
        }
    };
    key.sign_object(&mut obj)?;
    let mut bytes = serde_json::to_vec_pretty(&Value::Object(obj))
        .map_err(|e| CanonicalError(e.to_string()))?;
    bytes.push(b'\n');
    Ok(bytes)
}
