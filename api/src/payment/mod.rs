//! The x402 v2 payment gate every paid route goes through.
//!
//! Order of a paid call: the body is validated first (bad input never asks for money), then
//! [`authorize`] reads `PAYMENT-SIGNATURE` or `X-PAYMENT` (treated alike), decodes the payload
//! by its own `x402Version`, matches its `accepted` against the byte-stable `accepts`, has the
//! rail verify it, and claims the authorization in the store (the first claim wins, so one
//! authorization buys exactly one read, replays included, concurrent ones too). The handler
//! then runs, and [`settle`] settles; the response is served only when settlement succeeded,
//! with `PAYMENT-RESPONSE` and `X-PAYMENT-RESPONSE`.
//!
//! When settlement fails after the handler ran, nothing is served and nothing was charged:
//! the answer is a 402 carrying the failed `PAYMENT-RESPONSE`, and the authorization stays
//! spent here (sign a new one). A settlement broadcast but not confirmed in time
//! (`settlement_pending`) is answered [`pending`]: 202 with `Retry-After`, never a 402 for a
//! payment already in flight. The claim stays open on its transaction; the same payload sent
//! again is not verified or broadcast again: [`settle`] asks the rail whether that transaction
//! confirmed ([`rails::Settler::confirm`]) and the read is served once it has
//! (library/PAYMENTS.md, "Settlement pending").

pub mod broadcast;
pub mod facilitator;
pub mod gate;
pub mod local;
pub mod rails;
pub mod wire;

use std::sync::Arc;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use conduct_indexer::state::tables::Tables;
use conduct_indexer::store::PaymentStatus;
use serde_json::{json, Value};
use warp::http::{header, HeaderMap, HeaderValue, StatusCode};
use warp::reply::Response as WarpResponse;

use crate::http::reply::Problem;
use rails::Rail;
use wire::{accepted_matches, decode_payment, encode_settle, Payment, SettleResponse};

/// Seconds a pending settlement's answer asks the client to wait before sending the same
/// payment again (`Retry-After`).
pub const PENDING_RETRY_AFTER: u64 = 2;

/// The x402 protocol version spoken.
pub const X402_VERSION: u64 = 2;

/// The configured rails.
#[derive(Debug, Clone, Default)]
pub struct Rails {
    /// Rails in configuration order.
    pub rails: Vec<Rail>,
    /// Their `accepts` entries, in the same order (byte-stable).
    pub accepts: Vec<Value>,
}

impl Rails {
    /// Build every configured rail at `price_usd` (the Permit2 kind connects to its chain).
    pub async fn from_config(
        cfgs: &[rails::RailConfig],
        price_usd: &str,
    ) -> Result<Self, crate::error::Error> {
        let mut rails = Vec::with_capacity(cfgs.len());
        for c in cfgs {
            rails.push(c.build(price_usd).await?);
        }
        let accepts = rails.iter().map(|r| r.requirements.clone()).collect();
        Ok(Rails { rails, accepts })
    }

    /// The same rails at another price (a familiar's labor price): each rail's `accepts`
    /// entry rebuilt from its configuration `cfgs` (the ones these rails were built from, in
    /// order) at `price_usd`, the settlers shared.
    pub fn at_price(
        &self,
        cfgs: &[rails::RailConfig],
        price_usd: &str,
    ) -> Result<Self, crate::error::Error> {
        let mut out = self.clone();
        for (rail, cfg) in out.rails.iter_mut().zip(cfgs) {
            rail.requirements = cfg.requirements(price_usd)?;
        }
        out.accepts = out.rails.iter().map(|r| r.requirements.clone()).collect();
        Ok(out)
    }

    /// The `accepts` entries of configured rails, without connecting to anything.
    pub fn advertised(
        cfgs: &[rails::RailConfig],
        price_usd: &str,
    ) -> Result<Vec<Value>, crate::error::Error> {
        cfgs.iter().map(|c| c.requirements(price_usd)).collect()
    }
}

fn payment_header(headers: &HeaderMap) -> Option<&str> {
    headers
        .get("payment-signature")
        .or_else(|| headers.get("x-payment"))
        .and_then(|v| v.to_str().ok())
}

/// What a paid call is for: its URL and a description, both echoed in the challenge, and its
/// route's `bazaar` discovery extension (derived from the route table's contract).
#[derive(Debug, Clone, Copy)]
pub struct Resource<'a> {
    /// Absolute URL of the paid resource.
    pub url: &'a str,
    /// What it returns.
    pub description: &'a str,
    /// The `bazaar` extension of its route, when the route table describes it.
    pub bazaar: Option<&'a Value>,
}

/// The `extensions` of a challenge for `resource`: `payment-identifier` (optional) always,
/// `bazaar` when the route is described (library/PAYMENTS.md).
pub fn extensions(resource: Resource<'_>) -> Value {
    let mut ext = serde_json::Map::new();
    ext.insert(
        wire::PAYMENT_IDENTIFIER.into(),
        wire::declare_payment_identifier(),
    );
    if let Some(b) = resource.bazaar {
        ext.insert("bazaar".into(), b.clone());
    }
    Value::Object(ext)
}

/// The 402 challenge for `resource`.
pub fn challenge(rails: &Rails, resource: Resource<'_>, error: &str) -> WarpResponse {
    let doc = json!({
        "x402Version": X402_VERSION,
        "error": error,
        "resource": {"url": resource.url, "description": resource.description, "mimeType": "application/json"},
        "accepts": rails.accepts,
        "extensions": extensions(resource),
    });
    let encoded = B64.encode(serde_json::to_vec(&doc).unwrap_or_default());
    let mut resp = WarpResponse::new(Vec::<u8>::new().into());
    *resp.status_mut() = StatusCode::PAYMENT_REQUIRED;
    let h = resp.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&encoded) {
        h.insert("payment-required", v);
    }
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

/// Attach a settlement reply as `PAYMENT-RESPONSE` and `X-PAYMENT-RESPONSE`.
pub fn with_receipt(mut resp: WarpResponse, s: &SettleResponse) -> WarpResponse {
    if let Ok(v) = HeaderValue::from_str(&encode_settle(s)) {
        resp.headers_mut().insert("payment-response", v.clone());
        resp.headers_mut().insert("x-payment-response", v);
    }
    resp
}

/// A verified payment, claimed for this read.
#[derive(Debug, Clone)]
pub struct Authorized {
    /// The decoded payment.
    pub payment: Payment,
    /// Index of its rail.
    pub rail: usize,
    /// The transaction of this payment's settlement, broadcast by an earlier call and not
    /// confirmed then: this call resumes it (confirms it, never broadcasts again).
    pub pending: Option<String>,
}

/// The answer to a paid call whose settlement is pending (library/PAYMENTS.md, "Settlement
/// pending"): 202 with `Retry-After`, the pending `PAYMENT-RESPONSE` (`success: false`,
/// `errorReason: settlement_pending`, the transaction), and a JSON body saying the same with
/// the payment's identifier when it has one. Nothing is served yet; nothing is charged twice.
pub fn pending(reply: &SettleResponse, identifier: Option<&str>) -> WarpResponse {
    let body = json!({
        "status": "settlement_pending",
        "transaction": reply.transaction,
        "network": reply.network,
        "payer": reply.payer,
        "payment_identifier": identifier,
        "retry_after_seconds": PENDING_RETRY_AFTER,
        "detail": "the payment's transfer was broadcast and is not confirmed yet; nothing is \
                   served until it is, and it is never broadcast again. Send the same payment \
                   (the same PAYMENT-SIGNATURE) again after Retry-After: it is served once the \
                   transfer confirms, and charged once.",
    });
    let mut resp = WarpResponse::new(serde_json::to_vec(&body).unwrap_or_default().into());
    *resp.status_mut() = StatusCode::ACCEPTED;
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::RETRY_AFTER, HeaderValue::from(PENDING_RETRY_AFTER));
    with_receipt(resp, reply)
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, conduct_indexer::store::StoreError> + Send + 'static,
) -> Result<T, Problem> {
    let failed = match tokio::task::spawn_blocking(f).await {
        Ok(Ok(v)) => return Ok(v),
        Ok(Err(e)) => e.to_string(),
        Err(e) => e.to_string(),
    };
    Err(Problem::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "store-unavailable",
        "The store could not record the payment",
        failed,
    ))
}

/// How [`authorize`] or [`settle`] refused.
pub enum Refusal {
    /// Answer with this 402 challenge.
    Challenge(WarpResponse),
    /// Answer with this problem (rail or store unavailable).
    Problem(Problem),
    /// The settlement is pending (broadcast, not confirmed): this reply, answered [`pending`].
    Pending(SettleResponse),
}

/// Verify and claim the request's payment, or say why not.
pub async fn authorize(
    rails: &Rails,
    store: &Arc<dyn Tables>,
    headers: &HeaderMap,
    resource: Resource<'_>,
    now: u64,
) -> Result<Authorized, Refusal> {
    let deny = |e: &str| Refusal::Challenge(challenge(rails, resource, e));
    let Some(h) = payment_header(headers) else {
        return Err(deny("PAYMENT-SIGNATURE header is required"));
    };
    let payment = decode_payment(h).map_err(|e| deny(&e.0))?;
    let Some(rail) = rails
        .rails
        .iter()
        .position(|r| accepted_matches(&payment.accepted, &r.requirements))
    else {
        return Err(deny(
            "invalid_payment_requirements: accepted matches none of the offered rails \
             (amount, asset, network, payTo, extra); read PAYMENT-REQUIRED again",
        ));
    };
    let r = &rails.rails[rail];
    const USED: &str =
        "payment_already_used: this authorization has already bought a read; sign a new one";
    // A known authorization is refused at once (the claim below settles races), unless it is
    // this very payload's pending settlement: that resumes without verifying again (its
    // transfer is broadcast, so a fresh verification would find the nonce spent).
    let (s0, p0) = (store.clone(), payment.clone());
    let known = blocking(move || {
        let st = s0.payment_status(&p0.key())?;
        let payload = match st {
            Some((PaymentStatus::Claimed, Some(_))) => s0.payment_payload(&p0.key())?,
            _ => None,
        };
        Ok((st, payload))
    })
    .await
    .map_err(Refusal::Problem)?;
    match known {
        (None, _) => {}
        (Some((PaymentStatus::Claimed, Some(tx))), Some(payload)) if payload == payment.digest => {
            return Ok(Authorized {
                payment,
                rail,
                pending: Some(tx),
            })
        }
        _ => return Err(deny(USED)),
    }
    let verdict = r
        .settler
        .verify(&payment, &r.requirements)
        .await
        .map_err(|e| Refusal::Problem(e.into()))?;
    if !verdict.is_valid {
        let reason = verdict
            .invalid_reason
            .unwrap_or_else(|| "invalid_payment".into());
        let msg = match verdict.invalid_message {
            Some(m) => format!("{reason}: {}", m.chars().take(200).collect::<String>()),
            None => reason,
        };
        return Err(deny(&msg));
    }
    let mut auth = Authorized {
        payment,
        rail,
        pending: None,
    };
    let (s1, p1) = (store.clone(), auth.payment.clone());
    let (rail_name, url, amount) = (
        r.name.clone(),
        resource.url.to_owned(),
        r.requirements["amount"].as_str().unwrap_or("").to_owned(),
    );
    let outcome = blocking(move || {
        if s1.claim_payment(&p1.key(), &p1.digest, &rail_name, &url, &amount, now)? {
            return Ok(None);
        }
        let st = s1.payment_status(&p1.key())?;
        Ok(Some((st, s1.payment_payload(&p1.key())?)))
    })
    .await
    .map_err(Refusal::Problem)?;
    match outcome {
        None => Ok(auth),
        // A pending settlement of this very payload resumes.
        Some((Some((PaymentStatus::Claimed, Some(tx))), Some(payload)))
            if payload == auth.payment.digest =>
        {
            auth.pending = Some(tx);
            Ok(auth)
        }
        Some(_) => Err(deny(USED)),
    }
}

/// Settle an authorized payment (before or after the handler, as its route says); a pending
/// settlement being resumed is confirmed instead ([`confirm`]), never broadcast again.
pub async fn settle(
    rails: &Rails,
    store: &Arc<dyn Tables>,
    auth: &Authorized,
    resource: Resource<'_>,
    now: u64,
) -> Result<SettleResponse, Refusal> {
    let r = &rails.rails[auth.rail];
    if let Some(tx) = &auth.pending {
        return confirm(rails, store, auth, tx, resource, now).await;
    }
    // The hash of a transaction this service broadcasts itself (the Permit2 rail) is kept with
    // the claim before its receipt is awaited: if no answer comes (a timeout, a crash), the
    // same payment resumes by confirming that transaction, never by sending again.
    let (s_sent, p_sent) = (store.clone(), auth.payment.clone());
    let on_sent = move |tx: String| -> rails::Recording {
        let (s, p) = (s_sent.clone(), p_sent.clone());
        Box::pin(async move {
            let kept = blocking(move || {
                s.finish_claimed(
                    &p.key(),
                    PaymentStatus::Claimed,
                    Some(&tx),
                    Some("settlement_pending"),
                    now,
                )
            })
            .await;
            if kept.is_err() {
                tracing::error!("a broadcast settlement's transaction could not be recorded");
            }
        })
    };
    let result = r
        .settler
        .settle(&auth.payment, &r.requirements, &on_sent)
        .await;
    let (status, tx, detail, reply) = match &result {
        Ok(s) if s.success => (
            PaymentStatus::Settled,
            Some(s.transaction.clone()),
            None,
            s.clone(),
        ),
        Ok(s) if s.error_reason.as_deref() == Some("settlement_pending") => (
            PaymentStatus::Claimed,
            Some(s.transaction.clone()).filter(|t| !t.is_empty()),
            s.error_reason.clone(),
            s.clone(),
        ),
        Ok(s) => (
            PaymentStatus::Failed,
            None,
            s.error_reason.clone(),
            s.clone(),
        ),
        Err(e) => (
            PaymentStatus::Failed,
            None,
            Some(e.to_string()),
            SettleResponse {
                success: false,
                error_reason: Some("settlement_failed".into()),
                error_message: Some(e.to_string()),
                transaction: String::new(),
                network: r.network.clone(),
                payer: Some(auth.payment.payer.clone()),
            },
        ),
    };
    let (s2, p2) = (store.clone(), auth.payment.clone());
    let (tx2, detail2) = (tx.clone(), detail.clone());
    // Still claimed unless a call resuming its broadcast transaction finished it meanwhile:
    // then that call answered it, and exactly one call is served.
    let finished = blocking(move || {
        s2.finish_claimed(&p2.key(), status, tx2.as_deref(), detail2.as_deref(), now)
    })
    .await
    .map_err(Refusal::Problem)?;
    if !finished {
        return Err(Refusal::Challenge(challenge(
            rails,
            resource,
            "payment_already_used: this payment's settlement was resumed by another call",
        )));
    }
    match status {
        PaymentStatus::Settled => Ok(reply),
        PaymentStatus::Claimed => Err(Refusal::Pending(reply)),
        _ => Err(failed(rails, resource, &reply)),
    }
}

/// The 402 of a settlement that failed: nothing was served and nothing was charged.
fn failed(rails: &Rails, resource: Resource<'_>, reply: &SettleResponse) -> Refusal {
    let why = match (&reply.error_reason, &reply.error_message) {
        (Some(r), Some(m)) => format!("{r}: {m}"),
        (Some(r), None) => r.clone(),
        _ => "settlement_failed".into(),
    };
    let why =
        format!("{why}: nothing was served and nothing was charged; sign a new authorization");
    Refusal::Challenge(with_receipt(challenge(rails, resource, &why), reply))
}

/// Resume a pending settlement: ask the rail whether transaction `tx` confirmed (never
/// broadcast again). Confirmed: the claim is settled, by exactly one of any concurrent
/// resumers (the others are refused as a replay). Still pending, or the rail cannot say:
/// pending again. Failed on chain: the claim fails and nothing is served.
async fn confirm(
    rails: &Rails,
    store: &Arc<dyn Tables>,
    auth: &Authorized,
    tx: &str,
    resource: Resource<'_>,
    now: u64,
) -> Result<SettleResponse, Refusal> {
    let r = &rails.rails[auth.rail];
    let still = |why: Option<String>| SettleResponse {
        success: false,
        error_reason: Some("settlement_pending".into()),
        error_message: why,
        transaction: tx.to_owned(),
        network: r.network.clone(),
        payer: Some(auth.payment.payer.clone()),
    };
    let reply = match r.settler.confirm(&auth.payment, &r.requirements, tx).await {
        Ok(s) if s.success => s,
        Ok(s) if s.error_reason.as_deref() == Some("settlement_pending") => {
            return Err(Refusal::Pending(still(s.error_message)))
        }
        Ok(s) => s,
        Err(e) => return Err(Refusal::Pending(still(Some(e.to_string())))),
    };
    let status = if reply.success {
        PaymentStatus::Settled
    } else {
        PaymentStatus::Failed
    };
    let (s2, p2, tx2) = (store.clone(), auth.payment.clone(), tx.to_owned());
    let detail = reply.error_reason.clone();
    let finished =
        blocking(move || s2.finish_claimed(&p2.key(), status, Some(&tx2), detail.as_deref(), now))
            .await
            .map_err(Refusal::Problem)?;
    if !finished {
        return Err(Refusal::Challenge(challenge(
            rails,
            resource,
            "payment_already_used: this payment's settlement was resumed by another call",
        )));
    }
    if reply.success {
        Ok(reply)
    } else {
        Err(failed(rails, resource, &reply))
    }
}
