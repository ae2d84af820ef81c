//! Payment rails from configuration: each rail is one x402 `accepts` entry at the flat price,
//! and the means to verify and settle payments made on it.

use serde::Deserialize;
use serde_json::{Map, Value};

use super::facilitator::RemoteFacilitator;
use super::wire::{requirements, to_checksum};

/// A rail as written in `conduct.toml` (`[[rails]]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RailConfig {
    /// `facilitator`: `exact` + EIP-3009, verified and settled by a facilitator over HTTP.
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
}

fn default_decimals() -> u32 {
    6
}

fn default_timeout() -> u64 {
    60
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
    pub facilitator: RemoteFacilitator,
}

/// Atomic units of `price_usd` (a decimal string like `0.10`) for a token with `decimals`.
pub fn atomic_amount(price_usd: &str, decimals: u32) -> Result<String, String> {
    let (whole, frac) = price_usd.split_once('.').unwrap_or((price_usd, ""));
    if whole.is_empty() && frac.is_empty()
        || !whole.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
        || frac.len() > decimals as usize
    {
        return Err(format!(
            "price {price_usd:?} cannot be expressed with {decimals} decimals"
        ));
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
    /// Check and build the rail at `price_usd`.
    pub fn build(&self, price_usd: &str) -> Result<Rail, String> {
        let at = |field: &str, why: &str| format!("rails[{}].{field}: {why}", self.network);
        if !self.network.starts_with("eip155:") || self.network[7..].parse::<u64>().is_err() {
            return Err(at("network", "must be a CAIP-2 eip155:<chain id>"));
        }
        // Advertised in EIP-55 form: some facilitators refuse any other case.
        let asset = to_checksum(&self.asset)
            .ok_or_else(|| at("asset", "must be a 0x-prefixed 20-byte address"))?;
        let pay_to = to_checksum(&self.pay_to)
            .ok_or_else(|| at("pay_to", "must be a 0x-prefixed 20-byte address"))?;
        let amount = atomic_amount(price_usd, self.decimals).map_err(|e| at("decimals", &e))?;
        let mut extra = Map::new();
        extra.insert("name".into(), Value::String(self.eip712_name.clone()));
        extra.insert("version".into(), Value::String(self.eip712_version.clone()));
        let requirements = requirements(
            &self.network,
            &amount,
            &asset,
            &pay_to,
            self.max_timeout_seconds,
            extra,
        );
        match self.kind.as_str() {
            "facilitator" => {
                let url = self.facilitator_url.as_deref().ok_or_else(|| {
                    at("facilitator_url", "is required for kind = \"facilitator\"")
                })?;
                if !(url.starts_with("https://") || url.starts_with("http://")) {
                    return Err(at("facilitator_url", "must be an http(s) URL"));
                }
                Ok(Rail {
                    name: format!("facilitator:{}", self.network),
                    network: self.network.clone(),
                    requirements,
                    facilitator: RemoteFacilitator::new(url)?,
                })
            }
            other => Err(at(
                "kind",
                &format!("{other:?} is not a rail kind this build serves (\"facilitator\")"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn price_in_atomic_units() {
        assert_eq!(atomic_amount("0.10", 6).unwrap(), "100000");
        assert_eq!(atomic_amount("1", 6).unwrap(), "1000000");
        assert_eq!(atomic_amount("0.10", 18).unwrap(), "100000000000000000");
        assert!(atomic_amount("0.1234567", 6).is_err());
        assert!(atomic_amount("abc", 6).is_err());
    }
}
