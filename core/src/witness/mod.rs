//! The witness (library/WITNESS.md): a signed vow's wallet pledges portfolio limits, and a paid
//! reading checks the wallet's token transfers, read from the chain, against them.
//!
//! - **Limits** ([`Limit`], [`normalize_limits`]): per ERC-20 asset, a maximum balance and/or a
//!   maximum outflow per UTC day, both in the token's base units as decimal strings. Their
//!   canonical order is by asset address; [`limits_query`] is the compact form
//!   `GET /witness/pledge/message?limits=` takes, [`parse_limits_query`] reads it back.
//! - **The pledge text** ([`pledge_message`]): what the vow's wallet signs (EIP-191
//!   `personal_sign`). It names the origin, the action `pledge_limits`, the vow, every limit and
//!   the UTC date; a signature is good on that day and accepted once.
//! - [`record`]: the pledge's log record `conduct.witness-pledge/v1`; [`reading`]: the
//!   arithmetic of a reading and its signed document `conduct.witness-reading/v1`; [`verify`]:
//!   the offline checks of pledge records for verify-log.

pub mod reading;
pub mod record;
pub mod verify;

use num_bigint::BigUint;
use serde_json::{json, Value};

use crate::erc8004::eip55;
use crate::trace::FieldError;

/// The `Action:` line of the pledge text.
pub const PLEDGE_ACTION: &str = "pledge_limits";
/// Most limits one pledge holds (one per asset).
pub const MAX_LIMITS: usize = 16;
pub use crate::limits::MAX_AMOUNT_DIGITS;
/// A reading's window when the request names none, in UTC days.
pub const DEFAULT_WINDOW_DAYS: u64 = 7;
/// The longest window of a reading, in UTC days.
pub const MAX_WINDOW_DAYS: u64 = 30;

/// One pledged limit on one ERC-20 asset. At least one of the two maxima is set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limit {
    /// The token contract, EIP-55.
    pub asset: String,
    /// The most the wallet may hold, in base units (decimal, no leading zero).
    pub max_balance: Option<String>,
    /// The most that may leave the wallet in one UTC day, in base units.
    pub max_outflow_per_day: Option<String>,
}

impl Limit {
    /// The limit as a record or request member: `{asset, max_balance, max_outflow_per_day}`
    /// (an unset maximum is `null`).
    pub fn to_value(&self) -> Value {
        json!({
            "asset": self.asset,
            "max_balance": self.max_balance,
            "max_outflow_per_day": self.max_outflow_per_day,
        })
    }
}

/// Why an address or an amount of a pledge or a reading is refused (the text is a field's
/// detail).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    /// An address without `0x`.
    #[error("an address starts with 0x")]
    AddressPrefix,
    /// An address that is not 40 hex digits.
    #[error("an address is 0x and 40 hex digits")]
    AddressDigits,
    /// Mixed case that is not the EIP-55 checksum (which it names).
    #[error("mixed case but not the EIP-55 checksum (which is {0})")]
    Checksum(String),
    /// An amount that is not digits without a leading zero.
    #[error("an amount is a decimal string of base units (digits only, no leading zero)")]
    AmountDigits,
    /// An amount that does not parse.
    #[error("an amount is a decimal string of base units")]
    AmountParse,
    /// An amount over 2^256 - 1.
    #[error("an amount is at most 2^256 - 1 (a uint256)")]
    AmountRange,
}

/// An EVM address (`0x` + 40 hex digits, one case or a valid EIP-55 checksum) in EIP-55.
pub fn address(s: &str) -> Result<String, ValueError> {
    let hex_part = s.strip_prefix("0x").ok_or(ValueError::AddressPrefix)?;
    if hex_part.len() != 40 || !hex_part.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(ValueError::AddressDigits);
    }
    let mut bytes = [0u8; 20];
    hex::decode_to_slice(hex_part, &mut bytes).map_err(|_| ValueError::AddressDigits)?;
    let normal = eip55(&bytes);
    let mixed = hex_part.bytes().any(|b| b.is_ascii_lowercase())
        && hex_part.bytes().any(|b| b.is_ascii_uppercase());
    if mixed && normal != s {
        return Err(ValueError::Checksum(normal));
    }
    Ok(normal)
}

/// A token amount in base units: a decimal string without sign, point or leading zero, at
/// most 2^256 - 1.
pub fn amount(s: &str) -> Result<BigUint, ValueError> {
    let digits_ok = !s.is_empty()
        && s.len() <= MAX_AMOUNT_DIGITS
        && s.bytes().all(|b| b.is_ascii_digit())
        && (s == "0" || !s.starts_with('0'));
    if !digits_ok {
        return Err(ValueError::AmountDigits);
    }
    let v = BigUint::parse_bytes(s.as_bytes(), 10).ok_or(ValueError::AmountParse)?;
    if v.bits() > 256 {
        return Err(ValueError::AmountRange);
    }
    Ok(v)
}

/// A limit as a request gives it, before normalizing.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LimitInput {
    /// The token contract.
    pub asset: String,
    /// `max_balance`, if given.
    pub max_balance: Option<String>,
    /// `max_outflow_per_day`, if given.
    pub max_outflow_per_day: Option<String>,
}

/// Check and normalize limits (`pointer` names the array, e.g. `/limits`): 1 to
/// [`MAX_LIMITS`] limits, each asset once, each with at least one maximum; assets in EIP-55,
/// sorted by address.
pub fn normalize_limits(
    input: &[LimitInput],
    pointer: &str,
) -> Result<Vec<Limit>, Vec<FieldError>> {
    let mut errs = Vec::new();
    if input.is_empty() {
        errs.push(FieldError::at(pointer, "at least one limit is pledged"));
    }
    if input.len() > MAX_LIMITS {
        errs.push(FieldError::at(
            pointer,
            format!("at most {MAX_LIMITS} limits (one per asset)"),
        ));
    }
    let mut out: Vec<Limit> = Vec::with_capacity(input.len());
    for (i, l) in input.iter().enumerate() {
        let at = |m: &str| format!("{pointer}/{i}{m}");
        let asset = match address(&l.asset) {
            Ok(a) => a,
            Err(e) => {
                errs.push(FieldError::at(at("/asset"), e.to_string()));
                continue;
            }
        };
        let mut ok = true;
        for (name, v) in [
            ("max_balance", &l.max_balance),
            ("max_outflow_per_day", &l.max_outflow_per_day),
        ] {
            if let Some(s) = v {
                if let Err(e) = amount(s) {
                    errs.push(FieldError::at(at(&format!("/{name}")), e.to_string()));
                    ok = false;
                }
            }
        }
        if l.max_balance.is_none() && l.max_outflow_per_day.is_none() {
            errs.push(FieldError::at(
                at(""),
                "a limit sets max_balance, max_outflow_per_day or both",
            ));
            ok = false;
        }
        if out.iter().any(|o| o.asset == asset) {
            errs.push(FieldError::at(
                at("/asset"),
                format!("{asset} is pledged twice; one limit per asset"),
            ));
            ok = false;
        }
        if ok {
            out.push(Limit {
                asset,
                max_balance: l.max_balance.clone(),
                max_outflow_per_day: l.max_outflow_per_day.clone(),
            });
        }
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    out.sort_by_key(|l| l.asset.to_ascii_lowercase());
    Ok(out)
}

/// The compact form of normalized limits (`GET /witness/pledge/message?limits=`): each limit
/// as `<asset>:<max_balance>:<max_outflow_per_day>` (an unset maximum is empty), joined by
/// `,`, in canonical order.
pub fn limits_query(limits: &[Limit]) -> String {
    limits
        .iter()
        .map(|l| {
            format!(
                "{}:{}:{}",
                l.asset,
                l.max_balance.as_deref().unwrap_or(""),
                l.max_outflow_per_day.as_deref().unwrap_or("")
            )
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Read the compact form (any order, any case of address) back into normalized limits.
pub fn parse_limits_query(s: &str) -> Result<Vec<Limit>, Vec<FieldError>> {
    let mut input = Vec::new();
    for (i, part) in s.split(',').enumerate() {
        let fields: Vec<&str> = part.trim().split(':').collect();
        let [asset, bal, out] = fields[..] else {
            return Err(vec![FieldError::at(
                format!("?limits/{i}"),
                "each limit is <asset>:<max_balance>:<max_outflow_per_day> (an unset maximum is \
                 empty), limits joined by commas",
            )]);
        };
        let opt = |v: &str| (!v.is_empty()).then(|| v.to_owned());
        input.push(LimitInput {
            asset: asset.to_owned(),
            max_balance: opt(bal),
            max_outflow_per_day: opt(out),
        });
    }
    normalize_limits(&input, "?limits")
}

/// The exact text a signed vow's wallet signs with EIP-191 `personal_sign` to pledge `limits`
/// (normalized, [`normalize_limits`]) for `vow_id` on the UTC `date` (`YYYY-MM-DD`):
/// `GET /witness/pledge/message`. A signature over it is good on that day, once.
pub fn pledge_message(origin: &str, vow_id: &str, limits: &[Limit], date: &str) -> String {
    let mut params = vec![("Vow", vow_id.to_owned())];
    for l in limits {
        let mut s = l.asset.clone();
        if let Some(b) = &l.max_balance {
            s.push_str(&format!(" max_balance={b}"));
        }
        if let Some(o) = &l.max_outflow_per_day {
            s.push_str(&format!(" max_outflow_per_day={o}"));
        }
        params.push(("Limit", s));
    }
    crate::owner::OwnerText {
        kind: crate::owner::Kind::PledgeLimits,
        effect: "Signing puts these limits on the public record as this vow's pledge: a witness \
                 reading checks the wallet's token transfers on the chain against them, in base \
                 units of each token (outflow per UTC day). It moves no funds and no measured \
                 number. A later pledge of the vow replaces this one.",
        origin,
        params,
        date,
        after: Vec::new(),
        block: None,
    }
    .render()
}

#[cfg(test)]
pub(crate) mod tests;
