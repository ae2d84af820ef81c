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

use serde_json::{json, Value};

use super::{Limit, LimitInput};
use crate::owner::Kind;
use crate::record::{Logged, Members, OwnerSigned, Parts, RecordError};
use crate::trace::FieldError;

/// Type of a pledge record.
pub const PLEDGE_TYPE: &str = "conduct.witness-pledge/v1";

/// What `signed` says in every pledge record.
pub const SIGNED: &str = "The text is conduct_core::witness::pledge_message(origin, vow_id, \
limits, date) (library/WITNESS.md). wallet_signature: EIP-191 personal_sign of the text by \
wallet.";

/// Most pledges one vow makes per UTC day (library/WITNESS.md).
pub use crate::owner::MAX_PLEDGES_PER_DAY;

/// A vow's pledge of portfolio limits.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
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

impl Logged for Pledge {
    const TYPE: &'static str = PLEDGE_TYPE;

    /// The limits are read back normalized ([`limits_of`]).
    fn fields(&mut self, m: &mut Members<'_>) -> Result<(), RecordError> {
        m.signed(&mut self.wallet_signature, &mut self.at)?;
        let write = |l: &Vec<Limit>| json!(l.iter().map(Limit::to_value).collect::<Vec<_>>());
        m.member("limits", &mut self.limits, write, |r| {
            limits_of(r.get("limits")).map_err(|e| r.refused(format!("limits: {e}")))
        })?;
        m.text("origin", &mut self.origin)?;
        m.sworn(&mut self.vow_id, &mut self.wallet)?;
        m.computed("signed", json!(SIGNED));
        Ok(())
    }
}

impl OwnerSigned for Pledge {
    const KIND: Kind = Kind::PledgeLimits;

    fn parts(&self) -> Parts<'_> {
        Parts::signed(&self.wallet_signature, self.at)
            .sworn(&self.vow_id, &self.wallet)
            .at_origin(&self.origin)
    }

    fn message_at(&self, origin: &str) -> String {
        super::pledge_message(origin, &self.vow_id, &self.limits, &self.date())
    }
}

/// Why a record's `limits` were refused ([`limits_of`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LimitsError {
    /// `limits` is missing or not an array.
    #[error("not an array")]
    NotArray,
    /// The limits break the pledge's rules (`normalize_limits`): each reason, `; ` between.
    #[error("{}", join(.0))]
    Invalid(Vec<FieldError>),
    /// The limits are not written as `normalize_limits` writes them.
    #[error("not in the normalized form (EIP-55 assets by address, null for unset)")]
    NotNormalized,
}

fn join(errs: &[FieldError]) -> String {
    errs.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// Limits as a record holds them, checked to be normalized (re-normalizing gives the same).
pub fn limits_of(v: Option<&Value>) -> Result<Vec<Limit>, LimitsError> {
    let arr = v.and_then(Value::as_array).ok_or(LimitsError::NotArray)?;
    let mut input = Vec::with_capacity(arr.len());
    for l in arr {
        let opt = |k: &str| l.get(k).and_then(Value::as_str).map(str::to_owned);
        input.push(LimitInput {
            asset: opt("asset").unwrap_or_default(),
            max_balance: opt("max_balance"),
            max_outflow_per_day: opt("max_outflow_per_day"),
        });
    }
    let limits = super::normalize_limits(&input, "").map_err(LimitsError::Invalid)?;
    let written: Vec<Value> = limits.iter().map(Limit::to_value).collect();
    if &written != arr {
        return Err(LimitsError::NotNormalized);
    }
    Ok(limits)
}
