//! The arguments of an action: each checked against its [`Kind`], typed, defaults filled.
//! Unknown names are refused, and so is any name that looks like a key (the service never
//! asks for or accepts a private key, a mnemonic or a seed).

use std::collections::BTreeMap;

use alloy::primitives::{Address, B256, U256};

use super::{Action, Kind};

/// Parts of argument names that name a secret: refused outright.
const SECRET_NAMES: &[&str] = &[
    "private",
    "privkey",
    "priv_key",
    "secret",
    "mnemonic",
    "seed",
    "passphrase",
    "password",
    "keystore",
    "signing_key",
];

/// Why an argument was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgError {
    /// The argument's name as given.
    pub name: String,
    /// What is wrong.
    pub detail: String,
    /// The name asks for a key (refused as such).
    pub secret: bool,
}

impl ArgError {
    fn new(name: &str, detail: impl Into<String>) -> ArgError {
        ArgError {
            name: name.to_owned(),
            detail: detail.into(),
            secret: false,
        }
    }
}

/// Whether `name` names a secret (a private key, mnemonic, seed, ...).
pub fn is_secret_name(name: &str) -> bool {
    let n = name.to_ascii_lowercase().replace('-', "_");
    SECRET_NAMES.iter().any(|s| n.contains(s)) || n == "pk" || n == "key"
}

/// A checked argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Arg {
    /// `address`.
    Address(Address),
    /// `uint*`.
    Uint(U256),
    /// `bytes32`.
    Bytes32(B256),
    /// `string`.
    Text(String),
}

impl Arg {
    /// The normal form shown back: lower-case hex, decimal, the text.
    pub fn shown(&self) -> String {
        match self {
            Arg::Address(a) => super::super::registry::address_text(a),
            Arg::Uint(u) => u.to_string(),
            Arg::Bytes32(b) => super::super::registry::b256_text(b),
            Arg::Text(t) => t.clone(),
        }
    }
}

/// The checked arguments of one action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Args {
    values: BTreeMap<&'static str, Arg>,
}

impl Args {
    /// An address argument (`None`: not given and no default).
    pub fn address(&self, name: &str) -> Option<Address> {
        match self.values.get(name) {
            Some(Arg::Address(a)) => Some(*a),
            _ => None,
        }
    }

    /// An integer argument.
    pub fn uint(&self, name: &str) -> Option<U256> {
        match self.values.get(name) {
            Some(Arg::Uint(u)) => Some(*u),
            _ => None,
        }
    }

    /// A bytes32 argument.
    pub fn bytes32(&self, name: &str) -> Option<B256> {
        match self.values.get(name) {
            Some(Arg::Bytes32(b)) => Some(*b),
            _ => None,
        }
    }

    /// A string argument.
    pub fn text(&self, name: &str) -> Option<&str> {
        match self.values.get(name) {
            Some(Arg::Text(t)) => Some(t),
            _ => None,
        }
    }

    /// Every argument in its normal form.
    pub fn shown(&self) -> BTreeMap<&'static str, String> {
        self.values.iter().map(|(k, v)| (*k, v.shown())).collect()
    }
}

/// Why a value does not fit its kind (the text is an argument's `detail`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadValue {
    /// Not an address.
    #[error("{raw:?} is not an address: {rule}")]
    NotAddress {
        /// The value.
        raw: String,
        /// The kind's rule ([`Kind::rule`]).
        rule: String,
    },
    /// The zero address where it is refused.
    #[error("the zero address is not allowed here")]
    ZeroAddress,
    /// Not of the kind's form.
    #[error("{raw:?} is not {rule}")]
    NotOfKind {
        /// The value.
        raw: String,
        /// The kind's rule ([`Kind::rule`]).
        rule: String,
    },
    /// A decimal over 2^256 - 1.
    #[error("{0:?} is larger than 2^256 - 1")]
    TooLarge(String),
    /// Zero where it is refused.
    #[error("must be at least 1")]
    Zero,
    /// Over the kind's largest value.
    #[error("must be at most {0}")]
    AboveMax(u64),
    /// Not a bytes32.
    #[error("{0:?} is not bytes32")]
    NotBytes32(String),
    /// All zeros where they are refused.
    #[error("must not be all zeros")]
    AllZeros,
    /// A string of the wrong length.
    #[error("{len} bytes; {rule} is allowed")]
    Length {
        /// Its length, bytes.
        len: usize,
        /// The kind's rule ([`Kind::rule`]).
        rule: String,
    },
    /// A string with control characters.
    #[error("control characters are not allowed")]
    Control,
}

/// Check one value against its kind.
pub fn check(kind: Kind, raw: &str) -> Result<Arg, BadValue> {
    let not_of_kind = || BadValue::NotOfKind {
        raw: raw.to_owned(),
        rule: kind.rule(),
    };
    match kind {
        Kind::Address { nonzero } => {
            let a =
                super::super::registry::parse_address(raw).map_err(|_| BadValue::NotAddress {
                    raw: raw.to_owned(),
                    rule: kind.rule(),
                })?;
            if nonzero && a == Address::ZERO {
                return Err(BadValue::ZeroAddress);
            }
            Ok(Arg::Address(a))
        }
        Kind::Uint { nonzero, max, .. } => {
            let digits =
                !raw.is_empty() && raw.len() <= 78 && raw.bytes().all(|b| b.is_ascii_digit());
            if !digits || (raw.len() > 1 && raw.starts_with('0')) {
                return Err(not_of_kind());
            }
            let v =
                U256::from_str_radix(raw, 10).map_err(|_| BadValue::TooLarge(raw.to_owned()))?;
            if nonzero && v.is_zero() {
                return Err(BadValue::Zero);
            }
            if let Some(m) = max {
                if v > U256::from(m) {
                    return Err(BadValue::AboveMax(m));
                }
            }
            Ok(Arg::Uint(v))
        }
        Kind::Bytes32 { nonzero } => {
            let hex = raw.strip_prefix("0x").unwrap_or("");
            if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(not_of_kind());
            }
            let b: B256 = raw
                .parse()
                .map_err(|_| BadValue::NotBytes32(raw.to_owned()))?;
            if nonzero && b == B256::ZERO {
                return Err(BadValue::AllZeros);
            }
            Ok(Arg::Bytes32(b))
        }
        Kind::Text { min, max } => {
            if raw.len() < min || raw.len() > max {
                return Err(BadValue::Length {
                    len: raw.len(),
                    rule: kind.rule(),
                });
            }
            if raw.chars().any(char::is_control) {
                return Err(BadValue::Control);
            }
            Ok(Arg::Text(raw.to_owned()))
        }
    }
}

/// Check `given` (name, value pairs, in the order given) against `action`'s parameters:
/// every problem at once.
pub fn parse_args(action: &Action, given: &[(String, String)]) -> Result<Args, Vec<ArgError>> {
    let mut errors = Vec::new();
    let mut values = BTreeMap::new();
    let mut seen: Vec<&str> = Vec::new();
    for (name, raw) in given {
        if is_secret_name(name) {
            errors.push(ArgError {
                name: name.clone(),
                detail: "the service never asks for or accepts a private key, mnemonic, seed or \
                         any secret: it prepares unsigned transactions, and you sign them with \
                         your own wallet"
                    .into(),
                secret: true,
            });
            continue;
        }
        let Some(p) = action.params.iter().find(|p| p.name == name) else {
            let known: Vec<&str> = action.params.iter().map(|p| p.name).collect();
            errors.push(ArgError::new(
                name,
                format!(
                    "{} takes no argument {name:?}; its arguments are {}",
                    action.name,
                    known.join(", ")
                ),
            ));
            continue;
        };
        if seen.contains(&p.name) {
            errors.push(ArgError::new(name, "given more than once"));
            continue;
        }
        seen.push(p.name);
        match check(p.kind, raw) {
            Ok(v) => {
                values.insert(p.name, v);
            }
            Err(e) => errors.push(ArgError::new(name, e.to_string())),
        }
    }
    for p in action.params {
        if values.contains_key(p.name) || seen.contains(&p.name) {
            continue;
        }
        match (p.required, p.default) {
            (true, _) => errors.push(ArgError::new(
                p.name,
                format!("missing: {} ({})", p.description, p.kind.rule()),
            )),
            (false, Some(d)) => match check(p.kind, d) {
                Ok(v) => {
                    values.insert(p.name, v);
                }
                Err(e) => errors.push(ArgError::new(p.name, format!("default: {e}"))),
            },
            (false, None) => {}
        }
    }
    if errors.is_empty() {
        Ok(Args { values })
    } else {
        Err(errors)
    }
}
