//! Signed JSON snapshots: a `serde_json::Value` object signed with the service key and
//! serialized as pretty, key-sorted JSON (deterministic bytes; verifiers re-canonicalize).

use conduct_core::canonical::{jcs_map_with_raw, CanonicalError};
use conduct_core::signing::{ServiceKey, KEY_ID_FIELD, SIGNATURE_FIELD};
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

/// Sign `doc` (must be an object) under the `x-key-id` and `x-signature` extension members (a
/// format, like OpenAPI, that admits no other unknown members) and return its file bytes.
pub fn signed_extension_bytes(key: &ServiceKey, doc: Value) -> Result<Vec<u8>, CanonicalError> {
    let Value::Object(mut obj) = doc else {
        return Err(CanonicalError("a snapshot must be a JSON object".into()));
    };
    key.sign_object_extension(&mut obj)?;
    let mut bytes = serde_json::to_vec_pretty(&Value::Object(obj))
        .map_err(|e| CanonicalError(e.to_string()))?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// Sign the object made of `map` plus `raw` members (values already RFC 8785 bytes, spliced
/// in unparsed) and return its file bytes: the RFC 8785 form, then a newline. The signature
/// covers the same bytes a verifier gets by canonicalizing the file without `signature`.
pub fn signed_raw(
    key: &ServiceKey,
    mut map: serde_json::Map<String, Value>,
    raw: &[(&str, &[u8])],
) -> Result<Vec<u8>, CanonicalError> {
    use base64::Engine;
    map.remove(SIGNATURE_FIELD);
    map.insert(KEY_ID_FIELD.into(), Value::String(key.key_id_hex()));
    let unsigned = jcs_map_with_raw(&map, raw)?;
    let sig = base64::engine::general_purpose::STANDARD.encode(key.sign_bytes(&unsigned));
    map.insert(SIGNATURE_FIELD.into(), Value::String(sig));
    let mut bytes = jcs_map_with_raw(&map, raw)?;
    bytes.push(b'\n');
    Ok(bytes)
}
