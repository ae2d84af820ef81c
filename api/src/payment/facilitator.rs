//! A client for an x402 facilitator over HTTP (`POST /verify`, `POST /settle`,
//! `GET /supported`): the hosted-facilitator rails.

use crate::error::Error;
use std::time::Duration;

use serde_json::{json, Value};

use super::wire::{Payment, SettleResponse, VerifyResponse};

/// A remote facilitator.
#[derive(Debug, Clone)]
pub struct RemoteFacilitator {
    base: String,
    http: reqwest::Client,
    rpc: Option<String>,
}

/// Timeout of a `/verify` call.
pub const VERIFY_TIMEOUT: Duration = Duration::from_secs(10);
/// Timeout of a `/settle` call (it waits for a receipt).
pub const SETTLE_TIMEOUT: Duration = Duration::from_secs(60);

impl RemoteFacilitator {
    /// A client for the facilitator at `base` (no trailing slash needed).
    pub fn new(base: &str) -> Result<Self, Error> {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| Error::Rail(format!("facilitator client: {e}")))?;
        Ok(RemoteFacilitator {
            base: base.trim_end_matches('/').to_owned(),
            http,
            rpc: None,
        })
    }

    /// With the chain's JSON-RPC URL, by which a pending settlement is confirmed.
    pub fn with_rpc(mut self, rpc: Option<String>) -> Self {
        self.rpc = rpc;
        self
    }

    /// The facilitator's base URL.
    pub fn url(&self) -> &str {
        &self.base
    }

    /// The chain's JSON-RPC URL, when configured.
    pub fn rpc_url(&self) -> Option<&str> {
        self.rpc.as_deref()
    }

    /// The HTTP client.
    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }

    async fn post(
        &self,
        path: &str,
        payment: &Payment,
        req: &Value,
        timeout: Duration,
    ) -> Result<Value, Error> {
        let body = json!({
            "x402Version": payment.version,
            "paymentPayload": payment.raw,
            "paymentRequirements": req,
        });
        let resp = self
            .http
            .post(format!("{}{path}", self.base))
            .timeout(timeout)
            .json(&body)
            .send()
            .await
            .map_err(|e| Error::Rail(format!("facilitator {path} unreachable: {e}")))?;
        let status = resp.status();
        let text = resp
            .text()
            .await
            .map_err(|e| Error::Rail(format!("facilitator {path} reply unreadable: {e}")))?;
        // A non-2xx reply that still carries the verdict is a verdict (as the x402 clients read it).
        serde_json::from_str::<Value>(&text)
            .map_err(|_| Error::Rail(format!("facilitator {path} answered {status} without JSON")))
    }

    /// Ask whether a payment would settle.
    pub async fn verify(&self, payment: &Payment, req: &Value) -> Result<VerifyResponse, Error> {
        let v = self.post("/verify", payment, req, VERIFY_TIMEOUT).await?;
        serde_json::from_value(v)
            .map_err(|e| Error::Rail(format!("facilitator /verify reply: {e}")))
    }

    /// Settle a verified payment on chain.
    pub async fn settle(&self, payment: &Payment, req: &Value) -> Result<SettleResponse, Error> {
        let v = self.post("/settle", payment, req, SETTLE_TIMEOUT).await?;
        serde_json::from_value(v)
            .map_err(|e| Error::Rail(format!("facilitator /settle reply: {e}")))
    }

    /// Whether the facilitator answers `/supported` and lists `network` for `exact` v2.
    pub async fn supports(&self, network: &str) -> bool {
        let resp = self
            .http
            .get(format!("{}/supported", self.base))
            .timeout(Duration::from_secs(3))
            .send()
            .await;
        let Ok(resp) = resp else { return false };
        let Ok(v) = resp.json::<Value>().await else {
            return false;
        };
        v["kinds"].as_array().is_some_and(|kinds| {
            kinds
                .iter()
                .any(|k| k["x402Version"] == 2 && k["scheme"] == "exact" && k["network"] == network)
        })
    }
}
