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

/// What [`verify_measurement`] found: the meter the attestation names, and that every number
/// (or the predicate's outcome) is what that meter gives for the trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Measurement {
    /// The meter named in the attestation's `meter` block.
    pub meter: conduct_core::meter::Meter,
    /// Quantities recomputed and compared (4 for a full profile, 1 for a predicate).
    pub checked: usize,
}

/// Recompute a verified attestation `doc` (see [`verify_attestation`]) from the trace it
/// attests: `trace` is the JSON body as posted (members besides `context_key` and `turns`,
/// such as `disclosure` or `meter`, are ignored). Checks that its `trace_sha256` is the
/// trace's, that it names a meter this verifier knows (`meter/1`, `meter/2`), and that the
/// profile (every number, table and within-Y test) or the predicate's outcome is exactly
/// what that meter gives.
pub fn verify_measurement(doc: &Value, trace: &[u8]) -> Result<Measurement, Error> {
    use conduct_core::meter::Meter;
    use conduct_core::trace::{parse_json, TraceDoc};
    let mismatch = |what: String| Error::Measurement(what);
    let body: Value = serde_json::from_slice(trace).map_err(|source| Error::NotJson {
        path: "trace".into(),
        source,
    })?;
    let bare = serde_json::json!({"context_key": body["context_key"], "turns": body["turns"]});
    let bytes = serde_json::to_vec(&bare).map_err(|e| mismatch(e.to_string()))?;
    let parsed: TraceDoc<'_> = parse_json(&bytes).map_err(|e| mismatch(format!("trace: {e}")))?;
    let name = doc["meter"]["version"].as_str().unwrap_or_default();
    let meter = Meter::parse(name).ok_or_else(|| {
        mismatch(format!(
            "the attestation names meter {name:?}; this verifier knows {}",
            Meter::names()
        ))
    })?;
    let measured = conduct_core::attestation::measure(parsed.trace(), meter).map_err(|e| {
        mismatch(format!(
            "the trace is not valid: {}",
            e.first().map(|e| e.to_string()).unwrap_or_default()
        ))
    })?;
    let hash = hex::encode(measured.trace_sha256);
    if doc["trace_sha256"].as_str() != Some(hash.as_str()) {
        return Err(mismatch(format!(
            "trace_sha256 is {}, the trace's is {hash}",
            doc["trace_sha256"]
        )));
    }
    let want = serde_json::to_value(&measured.profile).map_err(|e| mismatch(e.to_string()))?;
    if let Some(predicate) = doc.get("predicate") {
        let metric = predicate["metric"].as_str().unwrap_or_default();
        let band = conduct_core::attestation::BANDS
            .iter()
            .find(|b| predicate["band"].as_str() == Some(b.name))
            .ok_or_else(|| mismatch(format!("unknown band {}", predicate["band"])))?;
        let clears = match want[metric]["adjusted"].as_f64() {
            Some(a) => Value::Bool(a <= band.max_adjusted_bits),
            None if want.get(metric).is_some() => Value::Null,
            None => return Err(mismatch(format!("unknown metric {metric:?}"))),
        };
        if predicate["clears"] != clears {
            return Err(mismatch(format!(
                "{metric} clears {}: {meter} gives {clears}",
                predicate["clears"]
            )));
        }
        return Ok(Measurement { meter, checked: 1 });
    }
    let got = &doc["profile"];
    // Compared as RFC 8785 bytes: a number is its value, however it was written (1 or 1.0).
    let canonical = |v: &Value| conduct_core::canonical::jcs(v).ok();
    for key in conduct_core::meter::QUANTITY_KEYS {
        if canonical(&got[key]) != canonical(&want[key]) {
            return Err(mismatch(format!(
                "{key}: the attestation says {}, {meter} gives {}",
                got[key], want[key]
            )));
        }
    }
    Ok(Measurement { meter, checked: 4 })
}
