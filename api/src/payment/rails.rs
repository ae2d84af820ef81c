//! Payment rails from configuration: each rail is one x402 `accepts` entry at the flat price,
//! and the means to verify and settle payments made on it.

use serde::Deserialize;
use serde_json::{Map, Value};

use std::sync::Arc;

use super::facilitator::RemoteFacilitator;
use super::local::LocalFacilitator;
use super::wire::{requirements, to_checksum};
use super::wire::{Payment, SettleResponse, VerifyResponse};
use crate::error::Error;

/// A rail as written in `conduct.toml` (`[[rails]]`).
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RailConfig {
    /// `facilitator`: `exact` + EIP-3009, verified and settled by a facilitator over HTTP.
    /// `permit2`: `exact` + Permit2, verified and settled in-process against `rpc_url`.
    pub kind: String,
    /// CAIP-2 network, e.g. `eip155:8453`.
    pub network: String,
    /// Token contract address.
    pub asset: String,
    /// Recipient address.
    pub pay_to: String,
    /// Token decimals (USDC: 6).
    #[serde(default = "default_decimals")]
    pub decimals: u32,
    /// EIP-712 domain name of the token (`name()`; USDC on Base: "USD Coin").
    pub eip712_name: String,
    /// EIP-712 domain version of the token (`version()`; USDC: "2").
    pub eip712_version: String,
    /// How long a signed authorization may be in flight.
    #[serde(default = "default_timeout")]
    pub max_timeout_seconds: u64,
    /// Facilitator base URL (`kind = "facilitator"`).
    pub facilitator_url: Option<String>,
    /// JSON-RPC URL of the chain: required for `kind = "permit2"`; optional for
    /// `kind = "facilitator"`, where it confirms a pending settlement by its transaction's
    /// receipt (library/PAYMENTS.md, "Settlement pending").
    pub rpc_url: Option<String>,
    /// Name of the environment variable holding the settler's private key (`kind = "permit2"`).
    /// The key itself never goes in the file.
    pub settler_key_env: Option<String>,
    /// Seconds the Permit2 rail waits for its settlement's receipt before answering the
    /// payment pending (202; library/PAYMENTS.md, "Settlement pending"). Default 10.
    #[serde(default = "default_receipt_wait")]
    pub receipt_wait_seconds: u64,
    /// The settler key itself, set only by `conduct dev` (never read from a file).
    #[serde(skip)]
    pub settler_key: Option<String>,
}

impl std::fmt::Debug for RailConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print a key.
        f.debug_struct("RailConfig")
            .field("kind", &self.kind)
            .field("network", &self.network)
            .field("asset", &self.asset)
            .field("pay_to", &self.pay_to)
            .field("facilitator_url", &self.facilitator_url)
            .field("rpc_url", &self.rpc_url)
            .field("settler_key_env", &self.settler_key_env)
            .field(
                "settler_key",
                &self.settler_key.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

fn default_decimals() -> u32 {
    6
}

fn default_timeout() -> u64 {
    60
}

/// The Permit2 rail's default receipt wait, in seconds.
pub fn default_receipt_wait() -> u64 {
    10
}

pub use super::broadcast::{OnBroadcast, Recording};

/// Who verifies and settles a rail's payments.
#[derive(Debug, Clone)]
pub enum Settler {
    /// A facilitator over HTTP.
    Remote(RemoteFacilitator),
    /// The in-process Permit2 settler.
    Local(Arc<LocalFacilitator>),
}

impl Settler {
    /// Verify a payment.
    pub async fn verify(&self, p: &Payment, req: &Value) -> Result<VerifyResponse, Error> {
        match self {
            Settler::Remote(f) => f.verify(p, req).await,
            Settler::Local(f) => f.verify(p, req).await,
        }
    }

    /// Settle a verified payment. The Permit2 rail broadcasts the transaction itself and
    /// hands its hash to `on_sent` before waiting for the receipt; a facilitator broadcasts
    /// on its own side and answers with the hash.
    pub async fn settle(
        &self,
        p: &Payment,
        req: &Value,
        on_sent: OnBroadcast<'_>,
    ) -> Result<SettleResponse, Error> {
        match self {
            Settler::Remote(f) => f.settle(p, req).await,
            Settler::Local(f) => f.settle(p, req, on_sent).await,
        }
    }

    /// Whether the settlement of `p` broadcast as transaction `tx` has confirmed, without
    /// broadcasting anything: a success, `settlement_pending` while it has not, or the
    /// failure. The Permit2 rail, and a facilitator rail given an `rpc_url`, read the
    /// transaction's receipt; a facilitator rail without one asks the facilitator's `/settle`
    /// again with the same payload, which an x402 facilitator answers from the transaction it
    /// already broadcast (library/PAYMENTS.md, "Settlement pending").
    pub async fn confirm(
        &self,
        p: &Payment,
        req: &Value,
        tx: &str,
    ) -> Result<SettleResponse, Error> {
        let network = req["network"].as_str().unwrap_or("");
        match self {
            Settler::Remote(f) => match f.rpc_url() {
                Some(rpc) => receipt_outcome(f.http(), rpc, tx, network, &p.payer).await,
                None => f.settle(p, req).await,
            },
            Settler::Local(f) => {
                receipt_outcome(f.http(), f.rpc_url(), tx, network, &p.payer).await
            }
        }
    }

    /// Whether the rail can take payments now.
    pub async fn up(&self, network: &str) -> bool {
        match self {
            Settler::Remote(f) => f.supports(network).await,
            Settler::Local(f) => f.rpc_up().await,
        }
    }

    /// Where payments go, for `/health`.
    pub fn describe(&self) -> String {
        match self {
            Settler::Remote(f) => format!("facilitator {}", f.url()),
            Settler::Local(f) => format!("in-process via {}", f.rpc_url()),
        }
    }
}

/// What the receipt of settlement transaction `tx` says, read over JSON-RPC at `rpc_url`: a
/// success (status 1), a failure (status 0, `transaction_failed`), or `settlement_pending`
/// while the chain has no receipt for it.
pub async fn receipt_outcome(
    http: &reqwest::Client,
    rpc_url: &str,
    tx: &str,
    network: &str,
    payer: &str,
) -> Result<SettleResponse, Error> {
    let resp = http
        .post(rpc_url)
        .timeout(std::time::Duration::from_secs(10))
        .json(&serde_json::json!({"jsonrpc": "2.0", "id": 1,
            "method": "eth_getTransactionReceipt", "params": [tx]}))
        .send()
        .await
        .map_err(|e| Error::Rail(format!("receipt of {tx}: {e}")))?;
    let v: Value = resp
        .json()
        .await
        .map_err(|e| Error::Rail(format!("receipt of {tx}: {e}")))?;
    if let Some(err) = v.get("error") {
        return Err(Error::Rail(format!("receipt of {tx}: {err}")));
    }
    let reply = |success: bool, reason: Option<&str>| SettleResponse {
        success,
        error_reason: reason.map(str::to_owned),
        error_message: None,
        transaction: tx.to_owned(),
        network: network.to_owned(),
        payer: Some(payer.to_owned()),
    };
    Ok(match v["result"]["status"].as_str() {
        _ if v["result"].is_null() => reply(false, Some("settlement_pending")),
        Some("0x1") => reply(true, None),
        Some(_) => reply(false, Some("transaction_failed")),
        None => return Err(Error::Rail(format!("receipt of {tx}: no status"))),
    })
}

/// A configured rail.
#[derive(Debug, Clone)]
pub struct Rail {
    /// A short name for logs and records (`facilitator:eip155:8453`).
    pub name: String,
    /// CAIP-2 network.
    pub network: String,
    /// The `accepts` entry (byte-stable).
    pub requirements: Value,
    /// Who verifies and settles.
    pub settler: Settler,
}

/// Atomic units of `price_usd` (a decimal string like `0.10`) for a token with `decimals`.
pub fn atomic_amount(price_usd: &str, decimals: u32) -> Result<String, Error> {
    let (whole, frac) = price_usd.split_once('.').unwrap_or((price_usd, ""));
    if whole.is_empty() && frac.is_empty()
        || !whole.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
        || frac.len() > decimals as usize
    {
        return Err(Error::Config(format!(
            "price {price_usd:?} cannot be expressed with {decimals} decimals"
        )));
    }
    let digits = format!("{whole}{frac:0<width$}", width = decimals as usize);
    let trimmed = digits.trim_start_matches('0');
    Ok(if trimmed.is_empty() {
        "0".into()
    } else {
        trimmed.into()
    })
}

impl RailConfig {
    fn at(&self, field: &str, why: &str) -> Error {
        Error::Config(format!("rails[{}].{field}: {why}", self.network))
    }

    /// Check the rail and build its `accepts` entry at `price_usd`.
    pub fn requirements(&self, price_usd: &str) -> Result<Value, Error> {
        if !self.network.starts_with("eip155:") || self.network[7..].parse::<u64>().is_err() {
            return Err(self.at("network", "must be a CAIP-2 eip155:<chain id>"));
        }
        // Advertised in EIP-55 form: some facilitators refuse any other case.
        let asset = to_checksum(&self.asset)
            .ok_or_else(|| self.at("asset", "must be a 0x-prefixed 20-byte address"))?;
        let pay_to = to_checksum(&self.pay_to)
            .ok_or_else(|| self.at("pay_to", "must be a 0x-prefixed 20-byte address"))?;
        let amount = atomic_amount(price_usd, self.decimals)
            .map_err(|e| self.at("decimals", &e.to_string()))?;
        let mut extra = Map::new();
        match self.kind.as_str() {
            "facilitator" => {}
            "permit2" => {
                extra.insert(
                    "assetTransferMethod".into(),
                    Value::String("permit2".into()),
                );
            }
            other => {
                return Err(self.at(
                    "kind",
                    &format!("{other:?} is not a rail kind (\"facilitator\" or \"permit2\")"),
                ))
            }
        }
        extra.insert("name".into(), Value::String(self.eip712_name.clone()));
        extra.insert("version".into(), Value::String(self.eip712_version.clone()));
        Ok(requirements(
            &self.network,
            &amount,
            &asset,
            &pay_to,
            self.max_timeout_seconds,
            extra,
        ))
    }

    /// Build the rail: its requirements and a settler (the Permit2 kind connects to its chain).
    pub async fn build(&self, price_usd: &str) -> Result<Rail, Error> {
        let requirements = self.requirements(price_usd)?;
        let settler = match self.kind.as_str() {
            "permit2" => {
                let rpc = self
                    .rpc_url
                    .as_deref()
                    .ok_or_else(|| self.at("rpc_url", "is required for kind = \"permit2\""))?;
                let key = match &self.settler_key {
                    Some(k) => k.clone(),
                    None => {
                        let var = self.settler_key_env.as_deref().ok_or_else(|| {
                            self.at("settler_key_env", "is required for kind = \"permit2\"")
                        })?;
                        std::env::var(var).map_err(|_| {
                            self.at(
                                "settler_key_env",
                                &format!("environment variable {var} is not set"),
                            )
                        })?
                    }
                };
                let chain_id: u64 = self.network[7..]
                    .parse()
                    .map_err(|_| self.at("network", "bad chain id"))?;
                let wait = std::time::Duration::from_secs(self.receipt_wait_seconds.max(1));
                Settler::Local(Arc::new(
                    LocalFacilitator::connect(chain_id, rpc, &key, wait).await?,
                ))
            }
            _ => {
                let url = self.facilitator_url.as_deref().ok_or_else(|| {
                    self.at("facilitator_url", "is required for kind = \"facilitator\"")
                })?;
                if !(url.starts_with("https://") || url.starts_with("http://")) {
                    return Err(self.at("facilitator_url", "must be an http(s) URL"));
                }
                if let Some(rpc) = &self.rpc_url {
                    if !(rpc.starts_with("https://") || rpc.starts_with("http://")) {
                        return Err(self.at("rpc_url", "must be an http(s) URL"));
                    }
                }
                Settler::Remote(RemoteFacilitator::new(url)?.with_rpc(self.rpc_url.clone()))
            }
        };
        Ok(Rail {
            name: format!("{}:{}", self.kind, self.network),
            network: self.network.clone(),
            requirements,
            settler,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_prints_the_settler_key() {
        let c = RailConfig {
            kind: "permit2".into(),
            network: "eip155:31337".into(),
            asset: "0x5fbdb2315678afecb367f032d93f642f64180aa3".into(),
            pay_to: "0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc".into(),
            decimals: 6,
            eip712_name: "USD Coin".into(),
            eip712_version: "2".into(),
            max_timeout_seconds: 60,
            facilitator_url: None,
            rpc_url: Some("http://127.0.0.1:8545".into()),
            settler_key_env: None,
            receipt_wait_seconds: default_receipt_wait(),
            settler_key: Some("0xsecretsecret".into()),
        };
        assert!(!format!("{c:?}").contains("secret"));
        assert!(c.requirements("0.10").is_ok());
    }

    #[test]
    fn price_in_atomic_units() {
        assert_eq!(atomic_amount("0.10", 6).unwrap(), "100000");
        assert_eq!(atomic_amount("1", 6).unwrap(), "1000000");
        assert_eq!(atomic_amount("0.10", 18).unwrap(), "100000000000000000");
        assert!(atomic_amount("0.1234567", 6).is_err());
        assert!(atomic_amount("abc", 6).is_err());
    }
}
