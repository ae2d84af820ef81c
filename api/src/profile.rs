//! The profile handlers: `POST /demo/profile` (free, unsigned) and `POST /profile` (paid through
//! the x402 gate, signed, idempotent for 24 hours).

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use conduct_core::attestation::{measure, resolve_predicate, Attestation};
use conduct_core::signing::ServiceKey;
use conduct_core::trace::{parse_json, validate, ProfileRequest};
use conduct_indexer::store::{PaymentStatus, IDEMPOTENCY_WINDOW};
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

/// The bytes already paid for under idempotency key `idem` within 24 hours, answered with
/// `Idempotent-Replayed: true`; the new authorization is left unsettled, recorded with `why`.
pub(crate) async fn replay(
    app: &Arc<App>,
    auth: &payment::Authorized,
    idem: &str,
    now: u64,
    why: &'static str,
) -> Option<WarpResponse> {
    let (store, key) = (app.store.clone(), idem.to_owned());
    let bytes = tokio::task::spawn_blocking(move || {
        store.idempotent_get(&key, now.saturating_sub(IDEMPOTENCY_WINDOW))
    })
    .await
    .ok()
    .and_then(Result::ok)
    .flatten()?;
    leave_unsettled(app, auth, why).await;
    let mut resp = json_response(bytes);
    resp.headers_mut().insert(
        "idempotent-replayed",
        warp::http::HeaderValue::from_static("true"),
    );
    Some(resp)
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

/// The idempotency cache key: the `Idempotency-Key` header (default: none, which makes the
/// key `sha256(trace)` with its `context_key`) together with what the result depends on.
pub(crate) fn idempotency_key(headers: &HeaderMap, request: &str) -> Result<String, Problem> {
    let given = match headers.get("idempotency-key") {
        None => "",
        Some(v) => v
            .to_str()
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
    };
    let mut h = Sha256::new();
    h.update(given.as_bytes());
    h.update([0u8]);
    h.update(request.as_bytes());
    Ok(hex::encode(h.finalize()))
}

/// Leave a claimed payment unsettled (idempotent replay or handler failure): never charged.
async fn leave_unsettled(app: &Arc<App>, auth: &payment::Authorized, why: &'static str) {
    let (s, p) = (app.store.clone(), auth.payment.clone());
    let now = now_unix();
    let _ = tokio::task::spawn_blocking(move || {
        s.finish_payment(&p.key(), PaymentStatus::Unsettled, None, Some(why), now)
    })
    .await;
}

/// `POST /profile`: validate, take payment, score and sign, settle, serve.
pub async fn paid(
    app: &Arc<App>,
    body: Bytes,
    headers: &HeaderMap,
    path: &str,
) -> Result<WarpResponse, Problem> {
    // Refuse bad input before asking for money; the price never depends on the trace.
    let request = check_request(&body)?;
    let idem = idempotency_key(headers, &request)?;
    // One paid call per idempotency key at a time; nothing has been verified or charged yet.
    let _inflight = InFlight::enter_or_refuse(&app.inflight, &idem)?;
    let url = format!("{}{}", app.cfg.public_url, path);
    let resource = Resource {
        url: &url,
        description: "Signed channel-coupling profile of a trace",
    };
    let now = now_unix();
    let t_verify = Instant::now();
    let auth = match payment::authorize(&app.rails, &app.store, headers, resource, now).await {
        Ok(a) => a,
        Err(Refusal::Challenge(r)) => return Ok(r),
        Err(Refusal::Problem(p)) => return Err(p),
    };
    // The same key within 24 h returns the identical bytes and charges nothing more.
    if let Some(resp) = replay(
        app,
        &auth,
        &idem,
        now,
        "idempotent replay: served from cache, not charged",
    )
    .await
    {
        return Ok(resp);
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
    let store = app.store.clone();
    let stored = tokio::task::spawn_blocking(move || store.idempotent_put(&idem, &bytes, now))
        .await
        .map_err(|e| e.to_string())
        .and_then(|r| r.map_err(|e| e.to_string()))
        .map_err(|e| {
            Problem::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "store-unavailable",
                "Settled, but the response could not be recorded",
                format!("{e}; the payment settled (transaction {}); retry with the same Idempotency-Key", receipt.transaction),
            )
        })?;
    let settle_ms = t_settle.elapsed().as_secs_f64() * 1e3;
    let mut resp = payment::with_receipt(json_response(stored), &receipt);
    // Where the time of a paid call goes (W3C Server-Timing).
    let timing = format!(
        "verify;dur={verify_ms:.1};desc=\"verify+claim\", handler;dur={handler_ms:.1};desc=\"score+sign\", settle;dur={settle_ms:.1}"
    );
    if let Ok(v) = warp::http::HeaderValue::from_str(&timing) {
        resp.headers_mut().insert("server-timing", v);
    }
    Ok(resp)
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
