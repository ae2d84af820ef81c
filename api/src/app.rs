//! The running service: shared state, request dispatch over the route table, and the dynamic
//! handlers (profile, demo profile, health). Static reads go to [`crate::static_site`].

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use bytes::{Buf, Bytes, BytesMut};
use conduct_core::attestation::{measure, resolve_predicate, Attestation};
use conduct_core::scope::scope_value;
use conduct_core::signing::ServiceKey;
use conduct_core::trace::{parse_json, validate, ProfileRequest};
use conduct_indexer::store::{PaymentKey, PaymentStatus, Store, IDEMPOTENCY_WINDOW};
use futures_util::{Stream, StreamExt};
use serde_json::json;
use sha2::{Digest, Sha256};
use warp::http::{header, HeaderMap, Method, StatusCode};
use warp::reply::Response as WarpResponse;

use crate::config::{Config, MAX_BODY};
use crate::payment::{self, Rails, Refusal, Resource};
use crate::ratelimit::{DailyCap, Take};
use crate::reply::{finish, json_response, preflight, Problem};
use crate::routes::{self, Dynamic};
use crate::static_site::{self, Found, Variant};

/// An oversized body is read and discarded up to this many bytes before the 413 is sent.
const DRAIN_LIMIT: usize = 4 * MAX_BODY;

/// Bodies above this size are scored on the blocking pool instead of a runtime worker.
const BLOCKING_THRESHOLD: usize = 64 * 1024;

/// Shared state of a running service.
pub struct App {
    /// Resolved configuration.
    pub cfg: Config,
    /// The signing key.
    pub key: ServiceKey,
    /// Configured payment rails.
    pub rails: Rails,
    /// The durable store (payment claims, idempotency).
    pub store: Arc<Store>,
    /// Free `/demo/profile` counter.
    pub demo_cap: DailyCap,
    /// Start instant, for uptime.
    pub started: Instant,
}

impl App {
    /// State for a configuration and key.
    pub fn new(cfg: Config, key: ServiceKey, rails: Rails, store: Arc<Store>) -> Self {
        let demo_cap = DailyCap::new(cfg.demo_daily_cap);
        App {
            cfg,
            key,
            rails,
            store,
            demo_cap,
            started: Instant::now(),
        }
    }
}

/// Unix seconds now.
pub fn now_unix() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// One request as the dispatcher sees it.
pub struct Request<S> {
    /// Method.
    pub method: Method,
    /// Path (not decoded).
    pub path: String,
    /// Raw query string (may be empty).
    pub query: String,
    /// Headers.
    pub headers: HeaderMap,
    /// Peer address.
    pub remote: Option<SocketAddr>,
    /// Body stream.
    pub body: S,
}

/// Answer one request. Never panics on input; every refusal is problem+json.
pub async fn dispatch<S, B>(app: Arc<App>, req: Request<S>) -> WarpResponse
where
    S: Stream<Item = Result<B, warp::Error>> + Send,
    B: Buf,
{
    let path = req.path.clone();
    let resp = match route(&app, req).await {
        Ok(r) => r,
        Err(p) => p.into_response(&path),
    };
    finish(resp)
}

async fn route<S, B>(app: &Arc<App>, req: Request<S>) -> Result<WarpResponse, Problem>
where
    S: Stream<Item = Result<B, warp::Error>> + Send,
    B: Buf,
{
    let method = req.method.as_str();
    if req.method == Method::OPTIONS {
        return Ok(preflight());
    }
    if let Some(handler) = routes::find(method, &req.path) {
        return match handler {
            Dynamic::Profile => {
                let body = read_body(&req.headers, req.body).await?;
                profile(app, body, &req.headers, false, &req.path).await
            }
            Dynamic::DemoProfile => {
                let ip = client_ip(app, &req.headers, req.remote);
                if let Take::Refused(retry) = app.demo_cap.take(ip, now_unix()) {
                    return Err(Problem::new(
                        StatusCode::TOO_MANY_REQUESTS,
                        "rate-limited",
                        "Free daily cap reached",
                        format!(
                            "the free /demo/profile cap of {} calls per IP per UTC day is used up; \
                             it resets at UTC midnight, or pay for POST /profile",
                            app.cfg.demo_daily_cap.unwrap_or(0)
                        ),
                    )
                    .with_header(header::RETRY_AFTER, retry.to_string()));
                }
                let body = read_body(&req.headers, req.body).await?;
                profile(app, body, &req.headers, true, &req.path).await
            }
            Dynamic::Health => Ok(health(app).await),
        };
    }
    let is_get = req.method == Method::GET || req.method == Method::HEAD;
    let format = query_param(&req.query, "format");
    let format = match format.as_deref() {
        None => None,
        Some(f) => Some(Variant::from_format(f).ok_or_else(|| {
            Problem::new(
                StatusCode::BAD_REQUEST,
                "bad-format",
                "Unknown format",
                format!("format={f:?} is not one of json, html, txt"),
            )
        })?),
    };
    let accept = req
        .headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok());
    let found = static_site::lookup(&app.cfg.site, &req.path, accept, format).await;
    let dynamic = routes::dynamic_methods(&req.path);
    match (found, is_get) {
        (Found::File(p, negotiated), true) => {
            static_site::file_response(&p, negotiated, req.method == Method::HEAD)
                .await
                .ok_or_else(|| not_found(&req.path))
        }
        (Found::NotAcceptable, true) => Err(Problem::new(
            StatusCode::NOT_ACCEPTABLE,
            "not-acceptable",
            "No acceptable representation",
            "this path is served as application/json, text/html or text/plain; use ?format= or Accept",
        )),
        (Found::File(..) | Found::NotAcceptable, false) => Err(method_not_allowed(&["GET", "HEAD"])),
        (Found::Missing, _) if !dynamic.is_empty() => Err(method_not_allowed(&dynamic)),
        (Found::Missing, _) => Err(not_found(&req.path)),
    }
}

fn not_found(path: &str) -> Problem {
    Problem::new(
        StatusCode::NOT_FOUND,
        "not-found",
        "Not found",
        format!("nothing is served at {path}; see /catalog for every endpoint"),
    )
}

fn method_not_allowed(allowed: &[&str]) -> Problem {
    let mut allow: Vec<&str> = allowed.to_vec();
    allow.push("OPTIONS");
    Problem::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method-not-allowed",
        "Method not allowed",
        format!("this path answers {}", allow.join(", ")),
    )
    .with_header(header::ALLOW, allow.join(", "))
}

/// The first value of a query parameter, percent-decoded.
pub fn query_param(query: &str, name: &str) -> Option<String> {
    query.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        (k == name).then(|| {
            percent_encoding::percent_decode_str(&v.replace('+', " "))
                .decode_utf8_lossy()
                .into_owned()
        })
    })
}

fn client_ip(app: &App, headers: &HeaderMap, remote: Option<SocketAddr>) -> IpAddr {
    if app.cfg.trust_forwarded_for {
        if let Some(ip) = headers
            .get("x-forwarded-for")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(',').next())
            .and_then(|s| s.trim().parse().ok())
        {
            return ip;
        }
    }
    remote
        .map(|r| r.ip())
        .unwrap_or(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED))
}

fn too_large() -> Problem {
    Problem::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "too-large",
        "Body too large",
        format!("request bodies are limited to {MAX_BODY} bytes (4 MiB)"),
    )
}

/// Collect a request body, refusing more than [`MAX_BODY`] bytes and multipart bodies.
async fn read_body<S, B>(headers: &HeaderMap, body: S) -> Result<Bytes, Problem>
where
    S: Stream<Item = Result<B, warp::Error>>,
    B: Buf,
{
    if let Some(ct) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    {
        let media = ct
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        // Bodies are read as JSON whatever the label (curl -d sends a form type); only a
        // multipart body, which cannot be JSON, is refused.
        if media.starts_with("multipart/") {
            return Err(Problem::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported-media-type",
                "Send JSON",
                format!("Content-Type {media:?} cannot carry a JSON body; send application/json"),
            ));
        }
    }
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let mut over = declared.is_some_and(|len| len > MAX_BODY as u64);
    let mut seen = 0usize;
    let mut buf = BytesMut::new();
    let mut body = std::pin::pin!(body);
    while let Some(chunk) = body.next().await {
        let mut chunk = chunk.map_err(|e| {
            Problem::new(
                StatusCode::BAD_REQUEST,
                "unreadable-body",
                "Body could not be read",
                e.to_string(),
            )
        })?;
        seen += chunk.remaining();
        if seen > MAX_BODY {
            over = true;
        }
        if over {
            // Drain (bounded) so the client is still reading when the 413 arrives.
            if seen > DRAIN_LIMIT {
                break;
            }
            chunk.advance(chunk.remaining());
            continue;
        }
        while chunk.has_remaining() {
            let piece = chunk.chunk();
            let n = piece.len();
            buf.extend_from_slice(piece);
            chunk.advance(n);
        }
    }
    if over {
        return Err(too_large());
    }
    Ok(buf.freeze())
}

/// The profile path: parse, validate, (payment), meter, build, (sign).
async fn profile(
    app: &Arc<App>,
    body: Bytes,
    headers: &HeaderMap,
    demo: bool,
    path: &str,
) -> Result<WarpResponse, Problem> {
    if !demo {
        return paid_profile(app, body, headers, path).await;
    }
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
fn idempotency_key(headers: &HeaderMap, request: &str) -> Result<String, Problem> {
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
    let (s, net, payer, nonce) = (
        app.store.clone(),
        auth.payment.accepted["network"]
            .as_str()
            .unwrap_or("")
            .to_owned(),
        auth.payment.payer.clone(),
        auth.payment.nonce.clone(),
    );
    let now = now_unix();
    let _ = tokio::task::spawn_blocking(move || {
        let key = PaymentKey {
            network: &net,
            payer: &payer,
            nonce: &nonce,
        };
        s.finish_payment(&key, PaymentStatus::Unsettled, None, Some(why), now)
    })
    .await;
}

/// `POST /profile`: validate, take payment, score and sign, settle, serve.
async fn paid_profile(
    app: &Arc<App>,
    body: Bytes,
    headers: &HeaderMap,
    path: &str,
) -> Result<WarpResponse, Problem> {
    // Refuse bad input before asking for money; the price never depends on the trace.
    let request = check_request(&body)?;
    let idem = idempotency_key(headers, &request)?;
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
    let store = app.store.clone();
    let key2 = idem.clone();
    let cached = tokio::task::spawn_blocking(move || {
        store.idempotent_get(&key2, now.saturating_sub(IDEMPOTENCY_WINDOW))
    })
    .await
    .ok()
    .and_then(Result::ok)
    .flatten();
    if let Some(bytes) = cached {
        leave_unsettled(
            app,
            &auth,
            "idempotent replay: served from cache, not charged",
        )
        .await;
        let mut resp = json_response(bytes);
        resp.headers_mut().insert(
            "idempotent-replayed",
            warp::http::HeaderValue::from_static("true"),
        );
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

async fn health(app: &App) -> WarpResponse {
    let mut rails = Vec::with_capacity(app.rails.rails.len());
    for r in &app.rails.rails {
        let up = r.settler.up(&r.network).await;
        rails.push(json!({
            "rail": r.name,
            "network": r.network,
            "settled_by": r.settler.describe(),
            "up": up,
            "accepts": r.requirements,
        }));
    }
    let body = json!({
        "type": "conduct.health/v1",
        "status": "ok",
        "version": env!("CARGO_PKG_VERSION"),
        "uptime_seconds": app.started.elapsed().as_secs(),
        "key_id": app.key.key_id_hex(),
        "rails": rails,
        "rails_note": if app.rails.rails.is_empty() {
            "no payment rail is configured on this instance: paid calls answer 402 with an empty accepts"
        } else {
            "a facilitator rail is up when its facilitator answers /supported listing exact on its network; a permit2 rail when its RPC answers with its chain id"
        },
        "scope": scope_value(),
    });
    let mut resp = json_response(serde_json::to_vec(&body).unwrap_or_default());
    resp.headers_mut().insert(
        header::CACHE_CONTROL,
        warp::http::HeaderValue::from_static("no-store"),
    );
    resp
}
