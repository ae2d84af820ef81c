//! The self-hosted allowance rail: `exact` + Permit2, verified and settled in-process against an
//! EVM JSON-RPC with the `x402-chain-eip155` facilitator (payer signature, amount, recipient,
//! time window, Permit2 allowance, balance and an `eth_call` simulation of the x402 Permit2
//! proxy before; the proxy's `settle` and a receipt after).
//!
//! The settler key is read from an environment variable named in the configuration, never from
//! the file, and is never logged.

use crate::error::Error;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use x402_chain_eip155::chain::config::{
    Eip155ChainConfig, Eip155ChainConfigInner, EvmPrivateKey, RpcConfig,
};
use x402_chain_eip155::chain::{Eip155ChainProvider, Eip155ChainReference};
use x402_chain_eip155::v2_eip155_exact::{
    V2Eip155ExactFacilitator, V2Eip155ExactFacilitatorConfig,
};
use x402_types::chain::FromConfig;
use x402_types::config::LiteralOrEnv;
use x402_types::proto::{self, AsPaymentProblem};
use x402_types::scheme::X402SchemeFacilitator;

use super::wire::{Payment, SettleResponse, VerifyResponse};

/// Seconds the settler waits for a settlement receipt.
pub const RECEIPT_TIMEOUT_SECS: u64 = 30;

/// An in-process facilitator for one EVM chain.
pub struct LocalFacilitator {
    fac: V2Eip155ExactFacilitator<Arc<Eip155ChainProvider>>,
    network: String,
    rpc_url: String,
    http: reqwest::Client,
}

impl std::fmt::Debug for LocalFacilitator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalFacilitator")
            .field("network", &self.network)
            .field("rpc_url", &self.rpc_url)
            .finish()
    }
}

impl LocalFacilitator {
    /// Connect to `rpc_url` for chain `chain_id`, settling with `settler_key` (hex).
    ///
    /// Fails when the chain has no Permit2 or x402 Permit2 proxy at their canonical addresses.
    pub async fn connect(chain_id: u64, rpc_url: &str, settler_key: &str) -> Result<Self, Error> {
        Self::connect_to(chain_id, rpc_url, settler_key)
            .await
            .map_err(Error::Rail)
    }

    async fn connect_to(chain_id: u64, rpc_url: &str, settler_key: &str) -> Result<Self, String> {
        let key = settler_key
            .trim()
            .parse::<EvmPrivateKey>()
            .map_err(|_| "the settler key is not a 32-byte hex private key".to_string())?;
        let url = url::Url::parse(rpc_url).map_err(|e| format!("rpc_url {rpc_url:?}: {e}"))?;
        let config = Eip155ChainConfig {
            chain_reference: Eip155ChainReference::new(chain_id),
            inner: Eip155ChainConfigInner {
                eip1559: true,
                flashblocks: false,
                signers: vec![LiteralOrEnv::from_literal(key)],
                rpc: vec![RpcConfig {
                    http: LiteralOrEnv::from_literal(url),
                    rate_limit: None,
                }],
                receipt_timeout_secs: RECEIPT_TIMEOUT_SECS,
            },
        };
        let provider = Eip155ChainProvider::from_config(&config)
            .await
            .map_err(|e| format!("permit2 rail on eip155:{chain_id} via {rpc_url}: {e}"))?;
        let fac = V2Eip155ExactFacilitator::new(
            Arc::new(provider),
            V2Eip155ExactFacilitatorConfig {
                eip2612_gas_sponsoring: false,
            },
        );
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("rpc client: {e}"))?;
        Ok(LocalFacilitator {
            fac,
            network: format!("eip155:{chain_id}"),
            rpc_url: rpc_url.to_owned(),
            http,
        })
    }

    fn request(payment: &Payment, req: &Value) -> Result<proto::VerifyRequest, Error> {
        let body = json!({
            "x402Version": payment.version,
            "paymentPayload": payment.raw,
            "paymentRequirements": req,
        });
        serde_json::value::to_raw_value(&body)
            .map(proto::VerifyRequest::from)
            .map_err(|e| Error::Rail(format!("invalid_payload: {e}")))
    }

    /// Verify a payment: the verdict, with the facilitator's reason when invalid.
    pub async fn verify(&self, payment: &Payment, req: &Value) -> Result<VerifyResponse, Error> {
        let request = Self::request(payment, req)?;
        match self.fac.verify(&request).await {
            Ok(proto::VerifyResponse(v)) => serde_json::from_value(v)
                .map_err(|e| Error::Rail(format!("local verify reply: {e}"))),
            Err(e) => {
                let p = e.as_payment_problem();
                Ok(VerifyResponse {
                    is_valid: false,
                    invalid_reason: Some(reason_of(&p.reason())),
                    invalid_message: Some(p.details().to_string()),
                    payer: Some(payment.payer.clone()),
                })
            }
        }
    }

    /// Settle a verified payment and wait for its receipt.
    pub async fn settle(&self, payment: &Payment, req: &Value) -> Result<SettleResponse, Error> {
        let request = Self::request(payment, req)?;
        match self.fac.settle(&request).await {
            Ok(proto::SettleResponse(v)) => Ok(SettleResponse {
                success: v["success"].as_bool().unwrap_or(false),
                error_reason: None,
                error_message: None,
                transaction: v["transaction"].as_str().unwrap_or("").to_owned(),
                network: self.network.clone(),
                payer: v["payer"].as_str().map(str::to_owned),
            }),
            Err(e) => {
                let p = e.as_payment_problem();
                Ok(SettleResponse {
                    success: false,
                    error_reason: Some(reason_of(&p.reason())),
                    error_message: Some(p.details().to_string()),
                    transaction: String::new(),
                    network: self.network.clone(),
                    payer: Some(payment.payer.clone()),
                })
            }
        }
    }

    /// Whether the RPC answers `eth_chainId` with this rail's chain.
    pub async fn rpc_up(&self) -> bool {
        let resp = self
            .http
            .post(&self.rpc_url)
            .timeout(Duration::from_secs(3))
            .json(&json!({"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}))
            .send()
            .await;
        let Ok(resp) = resp else { return false };
        let Ok(v) = resp.json::<Value>().await else {
            return false;
        };
        let want = self.network.strip_prefix("eip155:").unwrap_or("");
        v["result"]
            .as_str()
            .and_then(|h| u64::from_str_radix(h.trim_start_matches("0x"), 16).ok())
            .is_some_and(|id| id.to_string() == want)
    }

    /// The RPC URL.
    pub fn rpc_url(&self) -> &str {
        &self.rpc_url
    }

    /// The HTTP client of its RPC.
    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }
}

fn reason_of<T: serde::Serialize>(reason: &T) -> String {
    serde_json::to_value(reason)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| "unexpected_error".into())
}
