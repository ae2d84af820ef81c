//! The x402 v2 payment gate, as far as it goes today: the challenge.
//!
//! A paid route without a verified payment answers 402 with an empty body and the rails in the
//! `PAYMENT-REQUIRED` header (base64 JSON: `x402Version: 2`, `resource`, `accepts`). `accepts`
//! is byte-stable between requests because clients deep-compare it. Payment verification and
//! settlement are not wired yet, so no payment is ever accepted: no path returns a signed
//! attestation without one.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use serde_json::{json, Value};
use warp::http::{header, HeaderMap, HeaderValue, StatusCode};
use warp::reply::Response as WarpResponse;

/// The x402 protocol version spoken.
pub const X402_VERSION: u64 = 2;

/// The configured rails, as x402 `PaymentRequirements` objects.
#[derive(Debug, Clone, Default)]
pub struct Rails {
    /// One entry per rail, in configuration order.
    pub accepts: Vec<Value>,
}

/// True when the request carries a payment header (either name).
pub fn has_payment(headers: &HeaderMap) -> bool {
    headers.contains_key("payment-signature") || headers.contains_key("x-payment")
}

/// The 402 challenge for `resource_url`.
pub fn challenge(
    rails: &Rails,
    resource_url: &str,
    description: &str,
    error: &str,
) -> WarpResponse {
    let doc = json!({
        "x402Version": X402_VERSION,
        "error": error,
        "resource": {"url": resource_url, "description": description, "mimeType": "application/json"},
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
