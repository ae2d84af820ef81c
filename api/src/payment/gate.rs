//! The one paid sequence every paid route runs (library/PAYMENTS.md): idempotency key, the
//! payment identifier (calls carrying one run one at a time; a retry with the same identifier
//! and payload is answered from what it bought, a different payload under it is refused),
//! in-flight refusal, a reused key refused, verify and claim, replay, the route's own check of
//! the payer, then the handler and settlement in the order the route asks for (a pending
//! settlement answered 202 and resumed by the same payment), then the idempotent record of
//! what was served.
//!
//! A route supplies only what differs: its request fingerprint, how to rebuild a replay from
//! its record, a check of the authorized payment, and its handler.

use std::borrow::Cow;
use std::collections::HashSet;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use conduct_indexer::state::tables::Tables;
use conduct_indexer::store::payid::{PaymentIdBinding, PaymentIdState, ServedAnswer};
use conduct_indexer::store::{Idempotent, PaymentStatus, IDEMPOTENCY_WINDOW};
use sha2::{Digest, Sha256};
use warp::http::{header, HeaderMap, HeaderValue, StatusCode};
use warp::reply::Response as WarpResponse;

use super::wire::{self, SettleResponse};
use super::{authorize, pending, settle, with_receipt, Authorized, Rails, Refusal, Resource};
use crate::http::reply::{json_response, Problem};
use conduct_core::trace::FieldError;
use conduct_indexer::metrics::metrics;

/// What the gate needs of the running service.
#[derive(Clone, Copy)]
pub struct GateParts<'a> {
    /// The configured rails.
    pub rails: &'a Rails,
    /// Payment claims and the idempotency cache.
    pub store: &'a Arc<dyn Tables>,
    /// Idempotency keys of paid calls in progress.
    pub inflight: &'a Mutex<HashSet<String>>,
    /// Unix seconds now.
    pub now: u64,
}

/// The payment state of the running service, at either posted price: what a paid handler is
/// given, and the [`GateParts`] it hands the gate.
#[derive(Clone, Copy)]
pub struct Payments<'a> {
    /// The rails at the read price.
    pub rails: &'a Rails,
    /// The same rails at the posted labor price (`POST /familiar/summon`).
    pub labor_rails: &'a Rails,
    /// Payment claims and the idempotency cache.
    pub store: &'a Arc<dyn Tables>,
    /// Idempotency keys of paid calls in progress.
    pub inflight: &'a Mutex<HashSet<String>>,
}

impl<'a> Payments<'a> {
    /// What the gate needs to charge `price`, as of `now` (at the labor price, the labor
    /// rails: their `accepts`, so its 402 challenge carries that price).
    pub fn gate_parts(&self, price: Price, now: u64) -> GateParts<'a> {
        GateParts {
            rails: match price {
                Price::Read => self.rails,
                Price::Labor => self.labor_rails,
            },
            store: self.store,
            inflight: self.inflight,
            now,
        }
    }
}

/// When the payment settles relative to the handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettleWhen {
    /// Settle first: the handler's result exists only for a settled payment (an attested
    /// report-in). A handler that fails after settlement is refunded by the operator.
    BeforeHandler,
    /// Run the handler first; serve only when settlement succeeds (a signed read). A handler
    /// that fails leaves the payment unsettled: never charged.
    AfterHandler,
}

/// Which posted price a paid route charges: the rails whose `accepts` its challenge carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Price {
    /// The flat read price (`config::PRICE_USD`).
    Read,
    /// The posted labor price (`[familiar] labor_price_usd`).
    Labor,
}

/// A paid route's terms, as its row of the route table states them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pay {
    /// The route's idempotency namespace (`profile`, `vow-report`, ...).
    pub route: &'static str,
    /// What the paid resource returns, echoed in the challenge.
    pub description: &'static str,
    /// Settlement order.
    pub settle: SettleWhen,
    /// The price charged.
    pub price: Price,
}

/// One request of a paid route: its row's terms, the paid resource's absolute URL and the
/// request's headers (the payment, the idempotency key).
pub struct Charge<'a> {
    /// The route's terms.
    pub pay: &'static Pay,
    /// Absolute URL of the paid resource.
    pub url: String,
    /// The route's pattern in the route table (the label of its payment metrics).
    pub pattern: &'static str,
    /// The route's `bazaar` discovery extension, derived from its row's contract.
    pub bazaar: Option<&'static serde_json::Value>,
    /// The request's headers.
    pub headers: &'a HeaderMap,
}

impl Charge<'_> {
    /// The paid resource, echoed in the challenge.
    fn resource(&self) -> Resource<'_> {
        Resource {
            url: &self.url,
            description: self.pay.description,
            bazaar: self.bazaar,
        }
    }
}

/// What a handler served: the response, and the record kept for an idempotent replay.
pub struct Served {
    /// The response (the gate adds the payment receipt).
    pub response: WarpResponse,
    /// What the idempotency cache keeps; [`gate`]'s `rebuild` turns it back into bytes.
    pub record: Vec<u8>,
}

/// Marks an idempotency key as in flight until dropped, so two paid calls with the same key
/// can never both settle.
struct InFlight<'a> {
    set: &'a Mutex<HashSet<String>>,
    key: String,
}

fn in_flight(what: &str) -> Problem {
    Problem::new(
        StatusCode::CONFLICT,
        "in-flight",
        "The same request is being paid for right now",
        format!(
            "a paid call with the same {what} is in progress; retry shortly and what it paid \
             for is returned without a second charge"
        ),
    )
    .with_header(header::RETRY_AFTER, "1")
}

/// How long a call waits for an earlier call carrying the same payment identifier: longer
/// than that call's verification, handler and settlement can take.
const TURN_WAIT: std::time::Duration = std::time::Duration::from_secs(90);

impl<'a> InFlight<'a> {
    fn try_enter(set: &'a Mutex<HashSet<String>>, key: &str) -> Option<Self> {
        crate::lock(set).insert(key.to_owned()).then(|| InFlight {
            set,
            key: key.to_owned(),
        })
    }

    /// Enter `key`, or the 409 (with `Retry-After`) for a key already in flight.
    fn enter(set: &'a Mutex<HashSet<String>>, key: &str) -> Result<Self, Problem> {
        Self::try_enter(set, key).ok_or_else(|| in_flight("idempotency key"))
    }

    /// Enter `key` once the call holding it has finished (its answer is then in the store),
    /// or the 409 when it is still held after [`TURN_WAIT`].
    async fn wait(set: &'a Mutex<HashSet<String>>, key: &str) -> Result<Self, Problem> {
        let deadline = Instant::now() + TURN_WAIT;
        loop {
            if let Some(turn) = Self::try_enter(set, key) {
                return Ok(turn);
            }
            if Instant::now() >= deadline {
                return Err(in_flight("payment identifier"));
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        crate::lock(self.set).remove(&self.key);
    }
}

/// An idempotency key and the request it is used for.
#[derive(Debug, Clone)]
struct Idem {
    key: String,
    request: String,
}

/// The idempotency key of a paid call to `route`: the `Idempotency-Key` header when given,
/// else `request` itself (library/PAYMENTS.md: `sha256(trace)` with its `context_key`, and what else the
/// result depends on). `request` is also the fingerprint a reused key is checked against.
fn idempotency_key(headers: &HeaderMap, route: &str, request: &str) -> Result<Idem, Problem> {
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

/// A paid call's x402 payment identifier (library/PAYMENTS.md, "Payment identifiers"): its
/// `id`, the digest of the payment payload carrying it, and the request it pays for (the
/// idempotency key and fingerprint), which a retry under the same id must repeat.
#[derive(Debug, Clone)]
struct PayId {
    id: String,
    payload: String,
    request: String,
}

impl PayId {
    /// The identifier of the payment in `headers`, if it carries one; a malformed one is a
    /// 400 naming it. A payment header that cannot be read carries none (the gate's
    /// verification refuses it with the reason).
    fn of(headers: &HeaderMap, idem: &Idem) -> Result<Option<PayId>, Problem> {
        let Some(payment) =
            super::payment_header(headers).and_then(|h| wire::decode_payment(h).ok())
        else {
            return Ok(None);
        };
        let id = wire::payment_identifier(&payment.raw).map_err(|why| {
            let mut p = Problem::new(
                StatusCode::BAD_REQUEST,
                "bad-payment-identifier",
                "Bad payment identifier",
                format!("{}: {why}", wire::PAYMENT_ID_POINTER),
            );
            p.errors.push(FieldError::at(wire::PAYMENT_ID_POINTER, why));
            p
        })?;
        Ok(id.map(|id| PayId {
            id,
            payload: payment.digest,
            request: format!("{}:{}", idem.key, idem.request),
        }))
    }

    /// Its key among the calls in flight (a route's identifiers are its own).
    fn turn_key(&self, route: &str) -> String {
        format!("payment-identifier\0{route}\0{}", self.id)
    }
}

/// The 409 of an identifier already bound to another payment payload or request.
fn identifier_reused(p: &PayId, bound: &PaymentIdBinding) -> Problem {
    let what = if bound.payload != p.payload {
        "another payment payload"
    } else {
        "another request (body or Idempotency-Key)"
    };
    let mut problem = Problem::new(
        StatusCode::CONFLICT,
        "payment-identifier-reused",
        "Payment identifier used for another payment",
        format!(
            "the payment identifier {} was first used with {what}; one identifier names one \
             payment: resend the identical PAYMENT-SIGNATURE to retry it, or use a new \
             identifier for a new payment (nothing was charged for this call)",
            p.id
        ),
    );
    problem.errors.push(FieldError::at(
        wire::PAYMENT_ID_POINTER,
        format!("already used with {what}"),
    ));
    problem
}

/// The answer kept under a payment identifier, served again: the same status, body bytes,
/// `PAYMENT-RESPONSE` and `Location`, with `Idempotent-Replayed: true`.
async fn replay_identified<R>(bound: PaymentIdBinding, rebuild: R) -> Result<WarpResponse, Problem>
where
    R: FnOnce(Vec<u8>) -> Result<Vec<u8>, Problem> + Send + 'static,
{
    let record = bound.record.unwrap_or_default();
    let bytes = blocking(move || rebuild(record))
        .await
        .ok_or_else(replay_failed)??;
    let mut resp = json_response(bytes);
    *resp.status_mut() = bound
        .status
        .and_then(|s| StatusCode::from_u16(s).ok())
        .unwrap_or(StatusCode::OK);
    if let Some(loc) = bound.location.and_then(|l| HeaderValue::from_str(&l).ok()) {
        resp.headers_mut().insert(header::LOCATION, loc);
    }
    resp.headers_mut()
        .insert("idempotent-replayed", HeaderValue::from_static("true"));
    match bound
        .receipt
        .as_deref()
        .and_then(|r| serde_json::from_str::<SettleResponse>(r).ok())
    {
        Some(receipt) => Ok(with_receipt(resp, &receipt)),
        None => Ok(resp),
    }
}

fn replay_failed() -> Problem {
    Problem::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "busy",
        "Could not replay now",
        "the replay task failed",
    )
}

/// Keep what was served under a payment identifier (retrying a failing store a few times).
async fn keep_identified(
    store: &Arc<dyn Tables>,
    route: &'static str,
    p: &PayId,
    resp: &WarpResponse,
    record: &[u8],
    receipt: Option<&SettleResponse>,
    now: u64,
) {
    let status = resp.status().as_u16();
    let location = resp
        .headers()
        .get(header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let receipt_json = receipt
        .and_then(|r| serde_json::to_string(r).ok())
        .unwrap_or_default();
    let tx = receipt.map(|r| r.transaction.clone()).unwrap_or_default();
    for attempt in 0..3u64 {
        let (s, id) = (store.clone(), p.id.clone());
        let (rec, loc, rj, tx) = (
            record.to_vec(),
            location.clone(),
            receipt_json.clone(),
            tx.clone(),
        );
        let kept = blocking(move || {
            let answer = ServedAnswer {
                status,
                receipt: &rj,
                record: &rec,
                location: loc.as_deref(),
                tx: &tx,
            };
            s.payment_id_served(route, &id, &answer, now)
        })
        .await;
        if matches!(kept, Some(Ok(()))) {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50 << attempt)).await;
    }
    tracing::error!(
        id = %p.id,
        "a paid call's answer could not be kept under its payment identifier"
    );
}

/// Mark a payment identifier pending on its settlement's transaction, keeping the record of
/// the answer already made (settled after the handler), and answer 202.
async fn answer_pending(
    store: &Arc<dyn Tables>,
    route: &'static str,
    pid: Option<&PayId>,
    reply: &SettleResponse,
    record: Option<Vec<u8>>,
    now: u64,
) -> WarpResponse {
    if let Some(p) = pid {
        let (s, id, tx) = (store.clone(), p.id.clone(), reply.transaction.clone());
        let kept =
            blocking(move || s.payment_id_pending(route, &id, &tx, record.as_deref(), now)).await;
        if !matches!(kept, Some(Ok(()))) {
            tracing::error!(id = %p.id, "a pending payment identifier could not be recorded");
        }
    }
    pending(reply, pid.map(|p| p.id.as_str()))
}

fn key_reused() -> Problem {
    let mut p = Problem::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "idempotency-key-reused",
        "Idempotency-Key reused for another request",
        "this Idempotency-Key was used within the last 24 hours for a different request; send a \
         new key for a new request (the first request's result stays available under this key)",
    );
    p.errors.push(FieldError::at(
        "Idempotency-Key",
        "already used for a different request",
    ));
    p
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1e3
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    tokio::task::spawn_blocking(f).await.ok()
}

/// What the cache holds for `idem` now.
async fn cached(store: &Arc<dyn Tables>, idem: &Idem, now: u64) -> Idempotent {
    let (store, i) = (store.clone(), idem.clone());
    blocking(move || {
        store.idempotent_get(&i.key, &i.request, now.saturating_sub(IDEMPOTENCY_WINDOW))
    })
    .await
    .and_then(Result::ok)
    .unwrap_or(Idempotent::Fresh)
}

/// Leave a claimed payment unsettled (a replay, a refused payer, a failed handler): never
/// charged; `why` is kept on the payment record.
async fn leave_unsettled(store: &Arc<dyn Tables>, auth: &Authorized, why: &'static str, now: u64) {
    let (s, p) = (store.clone(), auth.payment.clone());
    let _ = blocking(move || {
        s.finish_payment(&p.key(), PaymentStatus::Unsettled, None, Some(why), now)
    })
    .await;
}

/// Keep what a settled call served for 24 hours, retrying a failing store a few times. When it
/// still fails the response says so (`Idempotency-Recorded: false`): a retry under the same
/// key would then be a new, charged read, and the operator's log names the transaction.
async fn record(
    store: &Arc<dyn Tables>,
    idem: &Idem,
    bytes: Vec<u8>,
    now: u64,
    transaction: &str,
) -> bool {
    for attempt in 0..3u64 {
        let (s, i, b) = (store.clone(), idem.clone(), bytes.clone());
        let stored = blocking(move || s.idempotent_put(&i.key, &i.request, &b, now)).await;
        match stored {
            Some(Ok(Idempotent::Cached(_))) => return true,
            // The same key was recorded for another request meanwhile: nothing to keep.
            Some(Ok(Idempotent::Reused)) => return false,
            Some(Ok(Idempotent::Fresh)) | Some(Err(_)) | None => {
                tokio::time::sleep(std::time::Duration::from_millis(50 << attempt)).await;
            }
        }
    }
    tracing::error!(
        transaction,
        "a settled paid call could not be recorded for idempotent replay; a retry under its key \
         would be charged again"
    );
    false
}

/// Count a payment's outcome (library/METRICS.md, `conduct_payments_total`): by the paid
/// route's pattern, its rail (`none` before one matched) and what happened.
fn outcome(charge: &Charge<'_>, rails: &Rails, auth: Option<&Authorized>, what: &'static str) {
    let rail = auth
        .and_then(|a| rails.rails.get(a.rail))
        .map_or(Cow::Borrowed("none"), |r| Cow::Owned(r.name.clone()));
    metrics()
        .payments
        .with([Cow::Borrowed(charge.pattern), rail, Cow::Borrowed(what)])
        .inc();
}

/// Settle an authorized payment, counting the outcome.
async fn settled(
    rails: &Rails,
    store: &Arc<dyn Tables>,
    auth: &Authorized,
    charge: &Charge<'_>,
    now: u64,
) -> Result<SettleResponse, Refusal> {
    let r = settle(rails, store, auth, charge.resource(), now).await;
    let what = match &r {
        Ok(_) => "settled",
        Err(Refusal::Pending(_)) => "pending",
        Err(_) => "refused",
    };
    outcome(charge, rails, Some(auth), what);
    r
}

/// Run one paid call through the whole sequence, on the rails of `parts` under the route's
/// terms (`charge`):
///
/// - `request` is what the result depends on (the default idempotency key, and the fingerprint
///   a reused key is checked against);
/// - `rebuild` turns a cached record back into the bytes first served (a replay, served with
///   `Idempotent-Replayed: true` and not charged);
/// - `check` looks at the authorized payment before anything settles (say, the payer must be a
///   vow's wallet); a refusal leaves the payment unsettled;
/// - `handler` does the work.
pub async fn gate<R, C, H, F>(
    parts: GateParts<'_>,
    charge: &Charge<'_>,
    request: String,
    rebuild: R,
    check: C,
    handler: H,
) -> Result<WarpResponse, Problem>
where
    R: FnOnce(Vec<u8>) -> Result<Vec<u8>, Problem> + Send + 'static,
    C: FnOnce(&Authorized) -> Result<(), Problem>,
    H: FnOnce() -> F,
    F: Future<Output = Result<Served, Problem>>,
{
    let GateParts {
        rails,
        store,
        inflight,
        now,
    } = parts;
    let headers = charge.headers;
    let route = charge.pay.route;
    let idem = idempotency_key(headers, route, &request)?;
    // Calls carrying one payment identifier run one at a time: a second waits for the first
    // and is then answered from what it recorded (they share its one settlement).
    let pid = PayId::of(headers, &idem)?;
    let _turn = match &pid {
        Some(p) => Some(InFlight::wait(inflight, &p.turn_key(route)).await?),
        None => None,
    };
    // Looked up before verification: a retry's payment may no longer verify (it settled).
    let mut bound_record = None;
    if let Some(p) = &pid {
        let (s, id) = (store.clone(), p.id.clone());
        let bound = blocking(move || s.payment_id(route, &id))
            .await
            .and_then(Result::ok)
            .flatten();
        match bound {
            None => {}
            Some(b) if b.payload != p.payload || b.request != p.request => {
                return Err(identifier_reused(p, &b))
            }
            Some(b) if b.state == PaymentIdState::Served => {
                return replay_identified(b, rebuild).await
            }
            // Open or pending: the payment's own claim decides below (a pending settlement
            // resumes; anything else is a spent authorization).
            Some(b) => bound_record = b.record,
        }
    }
    // One paid call per key at a time; nothing has been verified or charged yet.
    let _inflight = InFlight::enter(inflight, &idem.key)?;
    // A key reused for another request is refused before any payment is asked for. The key
    // is ours while in flight, so what the cache holds cannot change before the replay below.
    let held = cached(store, &idem, now).await;
    if held == Idempotent::Reused {
        return Err(key_reused());
    }
    let t_verify = Instant::now();
    let offered = super::payment_header(headers).is_some();
    let auth = match authorize(rails, store, headers, charge.resource(), now).await {
        Ok(a) => {
            outcome(charge, rails, Some(&a), "verified");
            a
        }
        Err(refusal) => {
            // A request without a payment is asked for one; only an offered one is refused.
            if offered {
                outcome(charge, rails, None, "refused");
            }
            return match refusal {
                Refusal::Challenge(r) => Ok(r),
                Refusal::Problem(p) => Err(p),
                Refusal::Pending(reply) => Ok(pending(&reply, pid.as_ref().map(|p| p.id.as_str()))),
            };
        }
    };
    let verify_ms = ms(t_verify);
    // A fresh claim binds its identifier (the first binding wins, also across processes).
    if let (Some(p), None) = (&pid, &auth.pending) {
        let (s, id, pay) = (store.clone(), p.id.clone(), p.clone());
        let key = auth.payment.clone();
        let bound = blocking(move || {
            s.bind_payment_id(route, &id, &pay.payload, &pay.request, &key.key(), now)
        })
        .await
        .and_then(Result::ok);
        match bound {
            Some(b) if b.payload == p.payload && b.request == p.request => {}
            Some(b) => {
                leave_unsettled(store, &auth, "payment identifier reused: not charged", now).await;
                return Err(identifier_reused(p, &b));
            }
            None => {
                leave_unsettled(store, &auth, "store unavailable: not charged", now).await;
                return Err(Problem::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "store-unavailable",
                    "The store could not record the payment",
                    "the payment identifier could not be recorded; nothing was charged",
                )
                .with_header(header::RETRY_AFTER, "1"));
            }
        }
    }
    // The same key within 24 hours returns what was served and charges nothing more (a
    // pending settlement is finished instead: its transfer is already broadcast).
    match held {
        Idempotent::Cached(rec) if auth.pending.is_none() => {
            leave_unsettled(store, &auth, "idempotent replay: not charged", now).await;
            let kept = rec.clone();
            let bytes = blocking(move || rebuild(rec))
                .await
                .ok_or_else(replay_failed)??;
            let mut resp = json_response(bytes);
            if let Some(p) = &pid {
                keep_identified(store, route, p, &resp, &kept, None, now).await;
            }
            resp.headers_mut()
                .insert("idempotent-replayed", HeaderValue::from_static("true"));
            return Ok(resp);
        }
        _ => {}
    }
    if let Err(p) = check(&auth) {
        if auth.pending.is_none() {
            leave_unsettled(store, &auth, "refused before settlement: not charged", now).await;
        }
        return Err(p);
    }
    let pid_ref = pid.as_ref();
    let (handler_ms, settle_ms);
    let (served, receipt) = match charge.pay.settle {
        SettleWhen::BeforeHandler => {
            let t = Instant::now();
            let receipt = match settled(rails, store, &auth, charge, now).await {
                Ok(r) => r,
                Err(Refusal::Challenge(r)) => return Ok(r),
                Err(Refusal::Problem(p)) => return Err(p),
                Err(Refusal::Pending(reply)) => {
                    return Ok(answer_pending(store, route, pid_ref, &reply, None, now).await)
                }
            };
            settle_ms = ms(t);
            let t = Instant::now();
            let done = handler().await;
            handler_ms = ms(t);
            match done {
                Ok(s) => (s, receipt),
                Err(mut p) => {
                    p.detail = format!(
                        "{}; the payment settled (transaction {}) but the call did not complete: \
                         the operator refunds it from the payment record",
                        p.detail, receipt.transaction
                    );
                    return Err(p);
                }
            }
        }
        SettleWhen::AfterHandler => {
            let t = Instant::now();
            // A resumed settlement whose answer was made and kept serves that answer.
            let done = match (&auth.pending, bound_record) {
                (Some(_), Some(record)) => {
                    let kept = record.clone();
                    blocking(move || rebuild(record))
                        .await
                        .ok_or_else(replay_failed)
                        .and_then(|r| r)
                        .map(|bytes| Served {
                            response: json_response(bytes),
                            record: kept,
                        })
                }
                _ => handler().await,
            };
            handler_ms = ms(t);
            let t = Instant::now();
            let served = match done {
                Ok(s) => s,
                Err(p) => {
                    if auth.pending.is_none() {
                        leave_unsettled(
                            store,
                            &auth,
                            "handler refused the request: not charged",
                            now,
                        )
                        .await;
                    }
                    return Err(p);
                }
            };
            let settled = match settled(rails, store, &auth, charge, now).await {
                Ok(r) => (served, r),
                Err(Refusal::Challenge(r)) => return Ok(r),
                Err(Refusal::Problem(p)) => return Err(p),
                Err(Refusal::Pending(reply)) => {
                    let record = Some(served.record);
                    return Ok(answer_pending(store, route, pid_ref, &reply, record, now).await);
                }
            };
            settle_ms = ms(t);
            settled
        }
    };
    let recorded = record(
        store,
        &idem,
        served.record.clone(),
        now,
        &receipt.transaction,
    )
    .await;
    let mut resp = with_receipt(served.response, &receipt);
    if let Some(p) = pid_ref {
        keep_identified(store, route, p, &resp, &served.record, Some(&receipt), now).await;
    }
    // Where the time of the paid call went (W3C Server-Timing), after the handler's own.
    let stages = format!(
        "verify;dur={verify_ms:.1};desc=\"verify+claim\", handler;dur={handler_ms:.1}, \
         settle;dur={settle_ms:.1}"
    );
    let timing = match resp
        .headers()
        .get("server-timing")
        .and_then(|v| v.to_str().ok())
    {
        Some(own) => format!("{own}, {stages}"),
        None => stages,
    };
    if let Ok(v) = HeaderValue::from_str(&timing) {
        resp.headers_mut().insert("server-timing", v);
    }
    if !recorded {
        resp.headers_mut()
            .insert("idempotency-recorded", HeaderValue::from_static("false"));
    }
    Ok(resp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_per_route_and_header_keys_ignore_the_request() {
        let mut h = HeaderMap::new();
        let a = idempotency_key(&h, "profile", "r1").unwrap();
        let b = idempotency_key(&h, "vow-report", "r1").unwrap();
        assert_ne!(a.key, b.key);
        h.insert("idempotency-key", HeaderValue::from_static("k"));
        let c = idempotency_key(&h, "profile", "r1").unwrap();
        let d = idempotency_key(&h, "profile", "r2").unwrap();
        assert_eq!(c.key, d.key);
        assert_ne!(c.request, d.request);
        h.insert("idempotency-key", HeaderValue::from_static(""));
        assert!(idempotency_key(&h, "profile", "r1").is_err());
    }

    #[test]
    fn a_key_in_flight_is_refused_until_released() {
        let set = Mutex::new(HashSet::new());
        let first = InFlight::enter(&set, "k").unwrap();
        assert!(InFlight::enter(&set, "k").is_err());
        drop(first);
        assert!(InFlight::enter(&set, "k").is_ok());
    }
}
