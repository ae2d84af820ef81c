//! The profile handlers: `POST /demo/profile` (free, unsigned) and `POST /profile` (paid through
//! the x402 gate, signed, idempotent for 24 hours).

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use conduct_core::attestation::{measure, resolve_predicate, Attestation};
use conduct_core::signing::ServiceKey;
use conduct_core::trace::{parse_json, validate, ProfileRequest};
use conduct_indexer::store::{Idempotent, PaymentStatus, IDEMPOTENCY_WINDOW};
use sha2::{Digest, Sha256};
use warp::http::{header, HeaderMap, StatusCode};
use warp::reply::Response as WarpResponse;

use crate::app::{now_unix, App};
use crate::payment::{self, Refusal, Resource};
use crate::reply::{json_response, Problem};

/// Bodies above this size are scored on the blocking pool instead of a runtime worker.
const BLOCKING_THRESHOLD: usize = 64 * 1024;

/// Marks an idempotency key as in flight until dropped, so two paid calls with the same key
/// can never both settle.
pub(crate) struct InFlight<'a> {
    set: &'a std::sync::Mutex<std::collections::HashSet<String>>,
    key: String,
}

impl<'a> InFlight<'a> {
    pub(crate) fn enter(
        set: &'a std::sync::Mutex<std::collections::HashSet<String>>,
        key: &str,
    ) -> Option<Self> {
        let mut g = match set.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        g.insert(key.to_owned()).then(|| InFlight {
            set,
            key: key.to_owned(),
        })
    }
}

impl<'a> InFlight<'a> {
    /// [`InFlight::enter`], or the 409 (with `Retry-After`) for a key already in flight.
    pub(crate) fn enter_or_refuse(
        set: &'a std::sync::Mutex<std::collections::HashSet<String>>,
        key: &str,
    ) -> Result<Self, Problem> {
        InFlight::enter(set, key).ok_or_else(|| {
            Problem::new(
                StatusCode::CONFLICT,
                "in-flight",
                "The same request is being paid for right now",
                "a paid call with the same idempotency key is in progress; retry shortly and \
                 what it paid for is returned without a second charge",
            )
            .with_header(header::RETRY_AFTER, "1")
        })
    }
}

/// An idempotency key and the request it is used for (see [`idempotency_key`]).
#[derive(Debug, Clone)]
pub(crate) struct Idem {
    /// The cache key.
    pub key: String,
    /// Fingerprint of the request: a key reused for another request is refused.
    pub request: String,
}

fn key_reused() -> Problem {
    let mut p = Problem::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "idempotency-key-reused",
        "Idempotency-Key reused for another request",
        "this Idempotency-Key was used within the last 24 hours for a different request; send a \
         new key for a new request (the first request's result stays available under this key)",
    );
    p.errors.push(conduct_core::trace::FieldError::at(
        "Idempotency-Key",
        "already used for a different request",
    ));
    p
}

/// Refuse at once (before any payment is asked for) a key already used for another request.
pub(crate) async fn refuse_reused(app: &Arc<App>, idem: &Idem, now: u64) -> Result<(), Problem> {
    let (store, i) = (app.store.clone(), idem.clone());
    let found = tokio::task::spawn_blocking(move || {
        store.idempotent_get(&i.key, &i.request, now.saturating_sub(IDEMPOTENCY_WINDOW))
    })
    .await;
    match found {
        Ok(Ok(Idempotent::Reused)) => Err(key_reused()),
        _ => Ok(()),
    }
}

/// What was already paid for under `idem` within 24 hours, answered with
/// `Idempotent-Replayed: true`: `materialize` turns the stored record into the response bytes.
/// The new authorization is left unsettled, recorded with `why`. A key reused for another
/// request is refused (422), also unsettled.
pub(crate) async fn replay(
    app: &Arc<App>,
    auth: &payment::Authorized,
    idem: &Idem,
    now: u64,
    why: &'static str,
    materialize: impl FnOnce(Vec<u8>) -> Result<Vec<u8>, Problem> + Send + 'static,
) -> Option<Result<WarpResponse, Problem>> {
    let (store, i) = (app.store.clone(), idem.clone());
    let found = tokio::task::spawn_blocking(move || {
        let stored =
            store.idempotent_get(&i.key, &i.request, now.saturating_sub(IDEMPOTENCY_WINDOW));
        match stored {
            Ok(Idempotent::Cached(record)) => Some(materialize(record)),
            Ok(Idempotent::Reused) => Some(Err(key_reused())),
            Ok(Idempotent::Fresh) | Err(_) => None,
        }
    })
    .await
    .ok()
    .flatten()?;
    leave_unsettled(app, auth, why).await;
    Some(found.map(|bytes| {
        let mut resp = json_response(bytes);
        resp.headers_mut().insert(
            "idempotent-replayed",
            warp::http::HeaderValue::from_static("true"),
        );
        resp
    }))
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut g = match self.set.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        g.remove(&self.key);
    }
}

/// `POST /demo/profile`: parse, validate, meter, build; unsigned.
pub async fn demo(body: Bytes, headers: &HeaderMap) -> Result<WarpResponse, Problem> {
    let issued_at = now_unix();
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

/// Validate a profile request; returns the cache key material of the request (the trace hash
/// and the disclosure), which is everything the signed result depends on.
fn check_request(body: &[u8]) -> Result<String, Problem> {
    let req: ProfileRequest = parse_json(body).map_err(|e| Problem::invalid(vec![e]))?;
    if let Some(d) = &req.disclosure {
        resolve_predicate(d).map_err(|e| Problem::invalid(vec![e]))?;
    }
    validate(req.trace()).map_err(Problem::invalid)?;
    let hash = conduct_core::canonical::trace_sha256(req.trace());
    let disclosure = req
        .disclosure
        .as_ref()
        .map(|d| format!("{}/{}", d.predicate.metric, d.predicate.band))
        .unwrap_or_default();
    Ok(format!("{}|{disclosure}", hex::encode(hash)))
}

/// The idempotency key of a paid call to `route`: the `Idempotency-Key` header when given,
/// else `request` itself (spec 4.1: `sha256(trace)` with its `context_key`, and what else the
/// result depends on). `request` is also the fingerprint a reused key is checked against.
pub(crate) fn idempotency_key(
    headers: &HeaderMap,
    route: &str,
    request: &str,
) -> Result<Idem, Problem> {
    let given = match headers.get("idempotency-key") {
        None => None,
        Some(v) => Some(
            v.to_str()
                .ok()
                .filter(|k| !k.is_empty() && k.len() <= 255)
                .ok_or_else(|| {
                    Problem::new(
                        StatusCode::BAD_REQUEST,
                        "bad-idempotency-key",
                        "Bad Idempotency-Key",
                        "Idempotency-Key must be 1 to 255 visible ASCII characters",
                    )
                })?,
        ),
    };
    let mut h = Sha256::new();
    h.update(route.as_bytes());
    h.update([0u8]);
    match given {
        Some(k) => {
            h.update(b"header\0");
            h.update(k.as_bytes());
        }
        None => {
            h.update(b"request\0");
            h.update(request.as_bytes());
        }
    }
    Ok(Idem {
        key: hex::encode(h.finalize()),
        request: hex::encode(Sha256::digest(request.as_bytes())),
    })
}

/// Leave a claimed payment unsettled (idempotent replay or handler failure): never charged.
pub(crate) async fn leave_unsettled(app: &Arc<App>, auth: &payment::Authorized, why: &'static str) {
    let (s, p) = (app.store.clone(), auth.payment.clone());
    let now = now_unix();
    let _ = tokio::task::spawn_blocking(move || {
        s.finish_payment(&p.key(), PaymentStatus::Unsettled, None, Some(why), now)
    })
    .await;
}

/// `POST /profile`: validate, take payment, score and sign, settle, serve.
///
/// The idempotency cache keeps no trace text: it records the attestation's `issued_at` and
/// the SHA-256 of its bytes, and a replay (which carries the same trace) re-scores and re-signs
/// (Ed25519 is deterministic), serving the identical bytes after checking their hash.
pub async fn paid(
    app: &Arc<App>,
    body: Bytes,
    headers: &HeaderMap,
    path: &str,
) -> Result<WarpResponse, Problem> {
    // Refuse bad input before asking for money; the price never depends on the trace.
    let request = check_request(&body)?;
    let idem = idempotency_key(headers, "profile", &request)?;
    // One paid call per idempotency key at a time; nothing has been verified or charged yet.
    let _inflight = InFlight::enter_or_refuse(&app.inflight, &idem.key)?;
    let now = now_unix();
    refuse_reused(app, &idem, now).await?;
    let url = format!("{}{}", app.cfg.public_url, path);
    let resource = Resource {
        url: &url,
        description: "Signed channel-coupling profile of a trace",
    };
    let t_verify = Instant::now();
    let auth = match payment::authorize(&app.rails, &app.store, headers, resource, now).await {
        Ok(a) => a,
        Err(Refusal::Challenge(r)) => return Ok(r),
        Err(Refusal::Problem(p)) => return Err(p),
    };
    // The same key within 24 h returns the identical bytes and charges nothing more.
    let (again, key) = (body.clone(), app.key.clone());
    let rebuild = move |record: Vec<u8>| reproduce(&again, &record, &key);
    let why = "idempotent replay: served again, not charged";
    if let Some(resp) = replay(app, &auth, &idem, now, why, rebuild).await {
        return resp;
    }
    let verify_ms = t_verify.elapsed().as_secs_f64() * 1e3;
    let t_handler = Instant::now();
    let app2 = app.clone();
    let signed = tokio::task::spawn_blocking(move || score(&body, now, Some(&app2.key))).await;
    let bytes = match signed {
        Ok(Ok(b)) => b,
        Ok(Err(p)) => {
            leave_unsettled(app, &auth, "handler refused the request: not charged").await;
            return Err(p);
        }
        Err(e) => {
            leave_unsettled(app, &auth, "handler failed: not charged").await;
            return Err(Problem::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "busy",
                "Could not score now",
                format!("scoring task failed: {e}"),
            ));
        }
    };
    let handler_ms = t_handler.elapsed().as_secs_f64() * 1e3;
    let t_settle = Instant::now();
    let receipt = match payment::settle(&app.rails, &app.store, &auth, resource, now_unix()).await {
        Ok(r) => r,
        Err(Refusal::Challenge(r)) => return Ok(r),
        Err(Refusal::Problem(p)) => return Err(p),
    };
    let record = serde_json::to_vec(&serde_json::json!({
        "issued_at": now,
        "sha256": hex::encode(Sha256::digest(&bytes)),
    }))
    .unwrap_or_default();
    let store = app.store.clone();
    let i = idem.clone();
    let stored =
        tokio::task::spawn_blocking(move || store.idempotent_put(&i.key, &i.request, &record, now))
            .await;
    if !matches!(stored, Ok(Ok(Idempotent::Cached(_)))) {
        // Settled and served; only a later replay under this key would be charged again.
        eprintln!(
            "conduct: a settled /profile (transaction {}) could not be recorded for idempotent replay",
            receipt.transaction
        );
    }
    let settle_ms = t_settle.elapsed().as_secs_f64() * 1e3;
    let mut resp = payment::with_receipt(json_response(bytes), &receipt);
    // Where the time of a paid call goes (W3C Server-Timing).
    let timing = format!(
        "verify;dur={verify_ms:.1};desc=\"verify+claim\", handler;dur={handler_ms:.1};desc=\"score+sign\", settle;dur={settle_ms:.1}"
    );
    if let Ok(v) = warp::http::HeaderValue::from_str(&timing) {
        resp.headers_mut().insert("server-timing", v);
    }
    Ok(resp)
}

/// Re-create the attestation an idempotency `record` (`{issued_at, sha256}`) describes from the
/// same request `body`, checking the bytes are the ones first served.
fn reproduce(body: &[u8], record: &[u8], key: &ServiceKey) -> Result<Vec<u8>, Problem> {
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
    let bytes = score(body, issued_at, Some(key))?;
    if r["sha256"].as_str() != Some(hex::encode(Sha256::digest(&bytes)).as_str()) {
        return Err(gone("re-scoring did not give the same bytes"));
    }
    Ok(bytes)
}

/// Score a body into attestation bytes (RFC 8785), signed when `key` is given.
pub fn score(body: &[u8], issued_at: u64, key: Option<&ServiceKey>) -> Result<Vec<u8>, Problem> {
    let req: ProfileRequest = parse_json(body).map_err(|e| Problem::invalid(vec![e]))?;
    let predicate = match &req.disclosure {
        Some(d) => Some(resolve_predicate(d).map_err(|e| Problem::invalid(vec![e]))?),
        None => None,
    };
    let measured = measure(req.trace()).map_err(Problem::invalid)?;
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
