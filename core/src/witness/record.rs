//! The pledge's log record, `conduct.witness-pledge/v1`: a signed vow's wallet signed
//! [`super::pledge_message`] for the vow and its limits on the record's UTC date. The latest
//! pledge of a vow is the one a reading checks.
//!
//! Like every record of the log it is an object signed by the service (Ed25519 over RFC 8785,
//! `key_id` inside), its leaf bytes the RFC 8785 bytes of the signed object. Members:
//!
//! `type`, `origin` (the service's public URL, named by the text), `vow_id`, `wallet` (EIP-55),
//! `limits` (normalized: `[{asset, max_balance, max_outflow_per_day}]` by asset, an unset
//! maximum `null`), `wallet_signature` (EIP-191, `0x` and 130 lowercase hex digits), `signed`
//! (how the text is rebuilt and signed, fixed words), `date` (`YYYY-MM-DD`, the text's), `at`
//! (RFC 3339 UTC), `log_index`, `scope`, `key_id`, `signature`.

use serde_json::{json, Map, Value};

use super::{Limit, LimitInput};
use crate::canonical::{jcs_map, CanonicalError};
use crate::scope::scope_value;
use crate::signing::ServiceKey;
use crate::time::{parse_rfc3339, rfc3339};

/// Type of a pledge record.
pub const PLEDGE_TYPE: &str = "conduct.witness-pledge/v1";

/// What `signed` says in every pledge record.
pub const SIGNED: &str = "The text is conduct_core::witness::pledge_message(origin, vow_id, \
limits, date) (library/WITNESS.md). wallet_signature: EIP-191 personal_sign of the text by \
wallet.";

/// A vow's pledge of portfolio limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pledge {
    /// The service's public URL the text names.
    pub origin: String,
    /// The signed (not sandbox) vow.
    pub vow_id: String,
    /// The vow's wallet, EIP-55.
    pub wallet: String,
    /// The limits, normalized.
    pub limits: Vec<Limit>,
    /// EIP-191 signature of the text by `wallet` (`0x`, lowercase hex).
    pub wallet_signature: String,
    /// Instant recorded, unix seconds (its UTC date is the text's).
    pub at: u64,
}

impl Pledge {
    /// The UTC date of the pledge (`YYYY-MM-DD`), the one its text names.
    pub fn date(&self) -> String {
        crate::munus::utc_date(self.at)
    }

    /// The exact text the wallet signed.
    pub fn message(&self) -> String {
        super::pledge_message(&self.origin, &self.vow_id, &self.limits, &self.date())
    }

    /// Check that `wallet_signature` recovers to `wallet` over the text (EIP-191).
    #[cfg(feature = "wallet")]
    pub fn check_wallet(&self) -> Result<(), String> {
        let addr = crate::vow::eip191::recover(&self.message(), &self.wallet_signature)
            .map_err(|e| format!("wallet_signature: {e}"))?;
        if crate::vow::record::checksum_address(&addr) != self.wallet {
            return Err("wallet_signature does not recover to wallet".into());
        }
        Ok(())
    }

    /// The unsigned object (without `key_id` and `signature`) at `log_index`.
    pub fn to_object(&self, log_index: u64) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("type".into(), json!(PLEDGE_TYPE));
        m.insert("origin".into(), json!(self.origin));
        m.insert("vow_id".into(), json!(self.vow_id));
        m.insert("wallet".into(), json!(self.wallet));
        m.insert(
            "limits".into(),
            Value::Array(self.limits.iter().map(Limit::to_value).collect()),
        );
        m.insert("wallet_signature".into(), json!(self.wallet_signature));
        m.insert("signed".into(), json!(SIGNED));
        m.insert("date".into(), json!(self.date()));
        m.insert("at".into(), json!(rfc3339(self.at)));
        m.insert("log_index".into(), json!(log_index));
        m.insert("scope".into(), scope_value());
        m
    }

    /// Sign the record that will sit at `log_index`; its leaf bytes (RFC 8785).
    pub fn leaf(&self, key: &ServiceKey, log_index: u64) -> Result<Vec<u8>, CanonicalError> {
        let mut m = self.to_object(log_index);
        key.sign_object(&mut m)?;
        jcs_map(&m)
    }

    /// Read a logged object back: `Ok(None)` when it is not a pledge record, else the record
    /// and its `log_index`. Checks the shape, that the limits are normalized, and that the
    /// object is exactly what [`Self::to_object`] writes (plus `key_id`, `signature`, and
    /// `scope` as written); the service's signature is checked by the caller
    /// (`signing::verify_object`).
    pub fn parse(v: &Value) -> Result<Option<(u64, Pledge)>, String> {
        if v.get("type").and_then(Value::as_str) != Some(PLEDGE_TYPE) {
            return Ok(None);
        }
        let obj = v.as_object().ok_or("not an object")?;
        let s = |k: &str| -> Result<String, String> {
            obj.get(k)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| format!("{PLEDGE_TYPE}: `{k}` is missing or not a string"))
        };
        let log_index = obj
            .get("log_index")
            .and_then(Value::as_u64)
            .ok_or_else(|| format!("{PLEDGE_TYPE}: `log_index` is missing or not an integer"))?;
        let at = parse_rfc3339(&s("at")?)
            .ok_or_else(|| format!("{PLEDGE_TYPE}: `at` is not an RFC 3339 UTC instant"))?;
        let limits = limits_of(obj.get("limits"))
            .map_err(|e| format!("{PLEDGE_TYPE} at log index {log_index}: limits: {e}"))?;
        let rec = Pledge {
            origin: s("origin")?,
            vow_id: s("vow_id")?,
            wallet: s("wallet")?,
            limits,
            wallet_signature: s("wallet_signature")?,
            at,
        };
        let mut rebuilt = rec.to_object(log_index);
        for k in [
            crate::signing::KEY_ID_FIELD,
            crate::signing::SIGNATURE_FIELD,
            "scope",
        ] {
            if let Some(x) = obj.get(k) {
                rebuilt.insert(k.into(), x.clone());
            }
        }
        if &rebuilt != obj {
            return Err(format!(
                "{PLEDGE_TYPE} at log index {log_index}: members differ from the record format"
            ));
        }
        Ok(Some((log_index, rec)))
    }
}

/// Limits as a record holds them, checked to be normalized (re-normalizing gives the same).
pub fn limits_of(v: Option<&Value>) -> Result<Vec<Limit>, String> {
    let arr = v.and_then(Value::as_array).ok_or("not an array")?;
    let mut input = Vec::with_capacity(arr.len());
    for l in arr {
        let opt = |k: &str| l.get(k).and_then(Value::as_str).map(str::to_owned);
        input.push(LimitInput {
            asset: opt("asset").unwrap_or_default(),
            max_balance: opt("max_balance"),
            max_outflow_per_day: opt("max_outflow_per_day"),
        });
    }
    let limits = super::normalize_limits(&input, "").map_err(|errs| {
        errs.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    })?;
    let written: Vec<Value> = limits.iter().map(Limit::to_value).collect();
    if &written != arr {
        return Err("not in the normalized form (EIP-55 assets by address, null for unset)".into());
    }
    Ok(limits)
}
