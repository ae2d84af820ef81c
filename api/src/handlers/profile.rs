//! The profile handlers: `POST /demo/profile` (free, unsigned) and `POST /profile` (paid through
//! the x402 gate, signed, idempotent for 24 hours).

use std::sync::Arc;

use bytes::Bytes;
use conduct_core::attestation::{measure, resolve_predicate, Attestation};
use conduct_core::meter::Meter;
use conduct_core::signing::ServiceKey;
use conduct_core::trace::{validate, ProfileRequest};

use sha2::{Digest, Sha256};
use warp::http::{header, HeaderMap, StatusCode};
use warp::reply::Response as WarpResponse;

use crate::http::reply::{json_response, Problem};
use crate::payment::gate::{gate, Charge, Payments, Served};
use crate::sources::service_now;

/// What `POST /profile` reads of the running service: the signing key, and the payments.
#[derive(Clone, Copy)]
pub struct Profile<'a> {
    /// The signing key.
    pub key: &'a ServiceKey,
    /// What the payment gate charges with.
    pub pay: Payments<'a>,
}

/// Bodies above this size are scored on the blocking pool instead of a runtime worker.
const BLOCKING_THRESHOLD: usize = 64 * 1024;

/// `POST /demo/profile`: parse, validate, meter, build; unsigned.
pub async fn demo(body: Bytes, headers: &HeaderMap) -> Result<WarpResponse, Problem> {
    let issued_at = service_now();
    let work = move || score(&body, issued_at, None);
    let bytes = if body_len_hint(headers) > BLOCKING_THRESHOLD {
        tokio::task::spawn_blocking(work).await.map_err(|e| {
            Problem::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "busy",
                "Could not score now",
                format!("scoring task failed: {e}"),
            )
        })??
    } else {
        work()?
    };
    Ok(json_response(bytes))
}

fn body_len_hint(headers: &HeaderMap) -> usize {
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or(usize::MAX)
}

self_cell::self_cell!(
    /// A profile request parsed once, borrowing the body it came from (the paid path checks
    /// it before asking for money, then scores the same parse).
    pub struct ParsedProfile {
        owner: Bytes,
        #[covariant]
        dependent: ProfileRequest,
    }
);

impl ParsedProfile {
    /// Parse and check a body: the schema, the disclosure and every trace rule.
    pub fn checked(body: Bytes) -> Result<ParsedProfile, Problem> {
        let parsed = ParsedProfile::try_new(body, |b| {
            ProfileRequest::from_json(b).map_err(|e| Problem::invalid(vec![e]))
        })?;
        let req = parsed.borrow_dependent();
        if let Some(d) = &req.disclosure {
            resolve_predicate(d).map_err(|e| Problem::invalid(vec![e]))?;
        }
        req.meter(super::METERS)
            .map_err(|e| Problem::invalid(vec![e]))?;
        validate(req.trace()).map_err(Problem::invalid)?;
        Ok(parsed)
    }

    /// What the signed result depends on: the trace hash with its `context_key` (inside the
    /// hash), the disclosure and the meter the body names. The default idempotency key.
    fn request(&self) -> String {
        let req = self.borrow_dependent();
        let hash = conduct_core::canonical::trace_sha256(req.trace());
        let disclosure = req
            .disclosure
            .as_ref()
            .map(|d| format!("{}/{}", d.predicate.metric, d.predicate.band))
            .unwrap_or_default();
        match &req.meter {
            Some(m) => format!("{}|{disclosure}|{m}", hex::encode(hash)),
            None => format!("{}|{disclosure}", hex::encode(hash)),
        }
    }
}

/// `POST /profile`: check, take payment, score and sign, settle, serve (the payment gate,
/// settling after the handler: a read that fails is never charged).
///
/// The idempotency cache keeps no trace text: it records the attestation's `issued_at` and
/// the SHA-256 of its bytes, and a replay (which carries the same trace) re-scores and re-signs
/// (Ed25519 is deterministic), serving the identical bytes after checking their hash.
pub async fn paid(
    ctx: Profile<'_>,
    body: Bytes,
    charge: Charge<'_>,
) -> Result<WarpResponse, Problem> {
    // Refuse bad input before asking for money; the price never depends on the trace.
    let parsed = Arc::new(ParsedProfile::checked(body)?);
    let request = parsed.request();
    let now = service_now();
    let meter = parsed
        .borrow_dependent()
        .meter(super::METERS)
        .map_err(|e| Problem::invalid(vec![e]))?;
    let (again, key) = (parsed.clone(), ctx.key.clone());
    let rebuild = move |record: Vec<u8>| reproduce(again.borrow_dependent(), &record, &key);
    let key = ctx.key.clone();
    let handler = || async move {
        let bytes = tokio::task::spawn_blocking(move || {
            score_with(parsed.borrow_dependent(), meter, now, Some(&key))
        })
        .await
        .map_err(|e| {
            Problem::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "busy",
                "Could not score now",
                format!("scoring task failed: {e}"),
            )
        })??;
        Ok(Served {
            record: replay_record(now, meter, &bytes),
            response: json_response(bytes),
        })
    };
    let parts = ctx.pay.gate_parts(charge.pay.price, now);
    gate(parts, &charge, request, rebuild, |_| Ok(()), handler).await
}

/// Re-create the attestation an idempotency `record` (`{issued_at, meter, sha256}`) describes
/// from the same request, checking the bytes are the ones first served.
fn reproduce(
    req: &ProfileRequest<'_>,
    record: &[u8],
    key: &ServiceKey,
) -> Result<Vec<u8>, Problem> {
    replay_from_record(record, |issued_at, meter| {
        score_with(req, meter, issued_at, Some(key))
    })
}

/// The idempotency record of a signed read served as `bytes` at `issued_at`, measured with
/// `meter`: `{issued_at, meter, sha256}`, no request text. [`replay_from_record`] turns it back
/// into the bytes.
pub fn replay_record(issued_at: u64, meter: Meter, bytes: &[u8]) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "issued_at": issued_at,
        "meter": meter.as_str(),
        "sha256": hex::encode(Sha256::digest(bytes)),
    }))
    .unwrap_or_default()
}

/// Re-create what a [`replay_record`] describes: `issue` signs the same request again at the
/// recorded `issued_at` with the recorded meter (a record without one is from before
/// `meter/2`: `meter/1`), Ed25519 being deterministic, and the bytes are served only when they
/// hash to the recorded value.
pub fn replay_from_record(
    record: &[u8],
    issue: impl FnOnce(u64, Meter) -> Result<Vec<u8>, Problem>,
) -> Result<Vec<u8>, Problem> {
    let gone = |why: &str| {
        Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "replay-unavailable",
            "The earlier attestation could not be served again",
            format!("{why}; send a new Idempotency-Key to buy a fresh read"),
        )
    };
    let r: serde_json::Value =
        serde_json::from_slice(record).map_err(|_| gone("its record is unreadable"))?;
    let issued_at = r["issued_at"]
        .as_u64()
        .ok_or_else(|| gone("its record has no issued_at"))?;
    let meter = match r.get("meter") {
        None => Meter::V1,
        Some(v) => v
            .as_str()
            .and_then(Meter::parse)
            .ok_or_else(|| gone("its record names a meter this service does not serve"))?,
    };
    let bytes = issue(issued_at, meter)?;
    if r["sha256"].as_str() != Some(hex::encode(Sha256::digest(&bytes)).as_str()) {
        return Err(gone("re-scoring did not give the same bytes"));
    }
    Ok(bytes)
}

/// Score a body into attestation bytes (RFC 8785), signed when `key` is given.
pub fn score(body: &[u8], issued_at: u64, key: Option<&ServiceKey>) -> Result<Vec<u8>, Problem> {
    let req = ProfileRequest::from_json(body).map_err(|e| Problem::invalid(vec![e]))?;
    score_request(&req, issued_at, key)
}

/// Score a parsed request with the meter it names into attestation bytes (RFC 8785), signed
/// when `key` is given.
pub fn score_request(
    req: &ProfileRequest<'_>,
    issued_at: u64,
    key: Option<&ServiceKey>,
) -> Result<Vec<u8>, Problem> {
    let meter = req
        .meter(super::METERS)
        .map_err(|e| Problem::invalid(vec![e]))?;
    score_with(req, meter, issued_at, key)
}

/// Score a parsed request with `meter` into attestation bytes (RFC 8785), signed when `key`
/// is given.
pub fn score_with(
    req: &ProfileRequest<'_>,
    meter: Meter,
    issued_at: u64,
    key: Option<&ServiceKey>,
) -> Result<Vec<u8>, Problem> {
    let predicate = match &req.disclosure {
        Some(d) => Some(resolve_predicate(d).map_err(|e| Problem::invalid(vec![e]))?),
        None => None,
    };
    let measured = measure(req.trace(), meter).map_err(Problem::invalid)?;
    let mut att = Attestation {
        measured: &measured,
        context_key: &req.context_key,
        n_turns: req.turns.len(),
        predicate,
        issued_at_unix: issued_at,
        key_id: None,
    };
    let bytes = match key {
        Some(k) => att.signed(k),
        None => att.canonical(None),
    };
    bytes.map_err(|e| {
        Problem::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "unrepresentable",
            "Result not representable",
            e.to_string(),
        )
    })
}
