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
//! spent here (sign a new one). A `settlement_pending` reply keeps the claim open: the same
//! payment sent again resumes it, the facilitator settles it once, and the read is served.

pub mod facilitator;
pub mod gate;
pub mod local;
pub mod rails;
pub mod wire;

use std::sync::Arc;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use conduct_indexer::store::{PaymentStatus, Store};
use serde_json::{json, Value};
use warp::http::{header, HeaderMap, HeaderValue, StatusCode};
use warp::reply::Response as WarpResponse;

use crate::http::reply::Problem;
use rails::Rail;
use wire::{accepted_matches, decode_payment, encode_settle, Payment, SettleResponse};

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

/// What a paid call is for: its URL and a description, both echoed in the challenge.
#[derive(Debug, Clone, Copy)]
pub struct Resource<'a> {
    /// Absolute URL of the paid resource.
    pub url: &'a str,
    /// What it returns.
    pub description: &'a str,
}

/// The 402 challenge for `resource`.
pub fn challenge(rails: &Rails, resource: Resource<'_>, error: &str) -> WarpResponse {
    let doc = json!({
        "x402Version": X402_VERSION,
        "error": error,
        "resource": {"url": resource.url, "description": resource.description, "mimeType": "application/json"},
        "accepts": rails.accepts,
        "extensions": {},
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

/// How [`authorize`] refused.
pub enum Refusal {
    /// Answer with this 402 challenge.
    Challenge(WarpResponse),
    /// Answer with this problem (rail or store unavailable).
    Problem(Problem),
}

/// Verify and claim the request's payment, or say why not.
pub async fn authorize(
    rails: &Rails,
    store: &Arc<Store>,
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
    // A known authorization is refused at once (the claim below settles races).
    let (s0, p0) = (store.clone(), payment.clone());
    let known = blocking(move || s0.payment_status(&p0.key()))
        .await
        .map_err(Refusal::Problem)?;
    if matches!(known, Some((st, tx)) if !(st == PaymentStatus::Claimed && tx.is_some())) {
        return Err(deny(
            "payment_already_used: this authorization has already bought a read; sign a new one",
        ));
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
    let auth = Authorized { payment, rail };
    let (s1, p1) = (store.clone(), auth.payment.clone());
    let (rail_name, url, amount) = (
        r.name.clone(),
        resource.url.to_owned(),
        r.requirements["amount"].as_str().unwrap_or("").to_owned(),
    );
    let outcome = blocking(move || {
        if s1.claim_payment(&p1.key(), &rail_name, &url, &amount, now)? {
            return Ok(None);
        }
        s1.payment_status(&p1.key()).map(Some)
    })
    .await
    .map_err(Refusal::Problem)?;
    match outcome {
        None => Ok(auth),
        // A pending settlement of this very authorization resumes.
        Some(Some((PaymentStatus::Claimed, Some(_tx)))) => Ok(auth),
        Some(_) => Err(deny(
            "payment_already_used: this authorization has already bought a read; sign a new one",
        )),
    }
}

/// Settle an authorized payment after the handler ran.
pub async fn settle(
    rails: &Rails,
    store: &Arc<Store>,
    auth: &Authorized,
    resource: Resource<'_>,
    now: u64,
) -> Result<SettleResponse, Refusal> {
    let r = &rails.rails[auth.rail];
    let result = r.settler.settle(&auth.payment, &r.requirements).await;
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
    blocking(move || s2.finish_payment(&p2.key(), status, tx2.as_deref(), detail2.as_deref(), now))
        .await
        .map_err(Refusal::Problem)?;
    if status == PaymentStatus::Settled {
        return Ok(reply);
    }
    let why = match (&reply.error_reason, &reply.error_message) {
        (Some(r), Some(m)) => format!("{r}: {m}"),
        (Some(r), None) => r.clone(),
        _ => "settlement_failed".into(),
    };
    let why = if status == PaymentStatus::Claimed {
        format!("{why}: the transfer is not confirmed yet; send the same payment again to resume")
    } else {
        format!("{why}: nothing was served and nothing was charged; sign a new authorization")
    };
    Err(Refusal::Challenge(with_receipt(
        challenge(rails, resource, &why),
        &reply,
    )))
}
