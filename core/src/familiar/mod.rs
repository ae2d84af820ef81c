//! Familiars (library/FAMILIARS.md): a hosted familiar is a recorded labor order with an owner,
//! summoned by a paid call at the posted labor price. It holds no wallet (`wallet: null`), has a
//! faucet cap of `0`, moves no funds, signs nothing and runs no code of the caller's (library/PREPARE.md
//! rule 6: the service never asks for a private key).
//!
//! - **The order** ([`Order`], [`parse_order`], [`order_sha256`]): bounded text, `title` and
//!   `what` required, `budget` and `deliverable` optional (omitted, never `null`); its hash is
//!   the SHA-256 of its RFC 8785 bytes.
//! - **The owner** ([`Owner`]): a signed vow (its wallet signs) or a wallet.
//! - **The owner-auth text** ([`familiar_message`]): what the owner's wallet signs (EIP-191
//!   `personal_sign`); it names the origin, the action `summon_familiar`, the owner, the
//!   order's hash and the UTC date. A signature is good that day and accepted once.
//! - [`record`]: the log record `conduct.familiar/v1`; [`verify`]: its offline checks.

pub mod record;
pub mod verify;

#[cfg(test)]
mod tests;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::canonical::jcs;
use crate::trace::FieldError;
use crate::vow::has_control;

/// The `Action:` line of the owner-auth text.
pub const SUMMON_ACTION: &str = "summon_familiar";
/// Most characters of an order's `title`.
pub const MAX_TITLE: usize = 120;
/// Most characters of an order's `what`.
pub const MAX_WHAT: usize = 4000;
/// Most characters of an order's `budget`.
pub const MAX_BUDGET: usize = 120;
/// Most characters of an order's `deliverable`.
pub const MAX_DELIVERABLE: usize = 1000;
/// The members of an order: (name, most characters, required, may span lines).
pub const ORDER_MEMBERS: [(&str, usize, bool, bool); 4] = [
    ("title", MAX_TITLE, true, false),
    ("what", MAX_WHAT, true, true),
    ("budget", MAX_BUDGET, false, false),
    ("deliverable", MAX_DELIVERABLE, false, true),
];

/// A labor order: bounded text, kept exactly as sent (its hash is over these bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Order(pub Map<String, Value>);

impl Order {
    /// The order as JSON.
    pub fn to_value(&self) -> Value {
        Value::Object(self.0.clone())
    }

    /// Its `title`.
    pub fn title(&self) -> &str {
        self.0.get("title").and_then(Value::as_str).unwrap_or("")
    }
}

/// An order's schema, from the table [`parse_order`] checks ([`ORDER_MEMBERS`]): each member a
/// string of 1 to its most characters, one line or lines; no other member, none `null`.
#[cfg(feature = "schemars")]
impl schemars::JsonSchema for Order {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Order".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        use crate::schema::{AGENT_CHARS, TEXT_CHARS};
        let mut properties = Map::new();
        let mut required = Vec::new();
        for (name, max, must, lines) in ORDER_MEMBERS {
            let chars = if lines { TEXT_CHARS } else { AGENT_CHARS };
            properties.insert(
                name.into(),
                serde_json::json!({"type": "string", "minLength": 1, "maxLength": max,
                    "pattern": chars}),
            );
            if must {
                required.push(name);
            }
        }
        schemars::json_schema!({
            "type": "object",
            "description": "The labor order, recorded as sent: optional members are left out, \
                never null. order_sha256 is sha256 of its RFC 8785 bytes.",
            "required": required,
            "additionalProperties": false,
            "properties": properties,
        })
    }
}

/// Bidirectional controls and zero-width characters (they make one text look like another).
fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{061C}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2064}'
        | '\u{2066}'..='\u{2069}' | '\u{FEFF}' | '\u{180E}')
}

/// Check an order (`pointer` names it, e.g. `/order`): an object with `title` and `what`, and
/// optionally `budget` and `deliverable`, each a string within its bound ([`ORDER_MEMBERS`]),
/// not blank, without control characters (newline and tab are allowed in `what` and
/// `deliverable`), bidirectional controls or zero-width characters. No other member, no `null`.
pub fn parse_order(v: &Value, pointer: &str) -> Result<Order, Vec<FieldError>> {
    let Some(obj) = v.as_object() else {
        return Err(vec![FieldError::at(
            pointer,
            "the order is an object {title, what, budget?, deliverable?}",
        )]);
    };
    let mut errs = Vec::new();
    for k in obj.keys() {
        if !ORDER_MEMBERS.iter().any(|(n, ..)| n == k) {
            errs.push(FieldError::at(
                format!("{pointer}/{k}"),
                "unknown member (an order has title, what, budget, deliverable)",
            ));
        }
    }
    for (name, max, required, lines) in ORDER_MEMBERS {
        let at = format!("{pointer}/{name}");
        match obj.get(name) {
            None if required => errs.push(FieldError::at(at, "missing")),
            None => {}
            Some(Value::String(s)) => {
                let n = s.chars().count();
                if s.trim().is_empty() {
                    errs.push(FieldError::at(at, "blank"));
                } else if n > max {
                    errs.push(FieldError::at(at, format!("{n} characters; at most {max}")));
                } else if has_control(s, lines) || s.contains('\r') {
                    errs.push(FieldError::at(
                        at,
                        if lines {
                            "no control characters other than newline and tab"
                        } else {
                            "one line: no control characters"
                        },
                    ));
                } else if s.chars().any(is_invisible) {
                    errs.push(FieldError::at(
                        at,
                        "no bidirectional controls or zero-width characters",
                    ));
                }
            }
            Some(Value::Null) => errs.push(FieldError::at(
                at,
                "null: leave an optional member out instead",
            )),
            Some(_) => errs.push(FieldError::at(at, "not a string")),
        }
    }
    if errs.is_empty() {
        Ok(Order(obj.clone()))
    } else {
        Err(errs)
    }
}

/// The order's hash: lowercase hex SHA-256 of its RFC 8785 bytes (what the owner-auth text
/// names; `sha256(rfc8785.dumps(order))` in Python).
pub fn order_sha256(order: &Order) -> String {
    let bytes = jcs(&order.to_value()).unwrap_or_default();
    hex::encode(Sha256::digest(bytes))
}

/// Who owns a familiar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    /// A signed (not sandbox) vow; its wallet signs.
    Vow {
        /// The vow.
        vow_id: String,
        /// Its wallet, EIP-55.
        wallet: String,
    },
    /// A wallet, which signs.
    Wallet {
        /// EIP-55.
        wallet: String,
    },
}

impl Owner {
    /// The wallet that signs for the owner.
    pub fn wallet(&self) -> &str {
        match self {
            Owner::Vow { wallet, .. } | Owner::Wallet { wallet } => wallet,
        }
    }

    /// The vow, for a vow owner.
    pub fn vow_id(&self) -> Option<&str> {
        match self {
            Owner::Vow { vow_id, .. } => Some(vow_id),
            Owner::Wallet { .. } => None,
        }
    }

    /// How the owner-auth text names the owner: `vow <id>` or `wallet <EIP-55>`.
    pub fn named(&self) -> String {
        match self {
            Owner::Vow { vow_id, .. } => format!("vow {vow_id}"),
            Owner::Wallet { wallet } => format!("wallet {wallet}"),
        }
    }
}

/// The exact text the owner's wallet signs with EIP-191 `personal_sign` to summon a familiar
/// with the order whose hash is `order_sha256` on the UTC `date` (`GET /familiar/message`).
/// `owner` is [`Owner::named`]'s form (`vow <id>` or `wallet <EIP-55>`).
pub fn familiar_message(origin: &str, owner: &str, order_sha256: &str, date: &str) -> String {
    crate::owner::OwnerText {
        kind: crate::owner::Kind::SummonFamiliar,
        effect: "Signing puts a hosted familiar on the public record: a labor order with this \
                 owner. The familiar holds no wallet (wallet: null), has a faucet cap of 0, moves \
                 no funds and signs nothing; what happens next is a person's act. Summoning is \
                 paid separately, at the posted labor price.",
        origin,
        params: vec![
            ("Owner", owner.to_owned()),
            ("Order (sha256)", order_sha256.to_owned()),
        ],
        date,
        after: Vec::new(),
        block: None,
    }
    .render()
}

/// The familiar id the owner's signature gives: the first 16 hex digits of
/// `sha256("conduct.familiar/v1\0" || lowercase signature)` (a signature is accepted once, so
/// ids do not repeat).
pub fn familiar_id(owner_signature: &str) -> String {
    let mut h = Sha256::new();
    h.update(b"conduct.familiar/v1\0");
    h.update(owner_signature.to_ascii_lowercase().as_bytes());
    hex::encode(h.finalize())[..16].to_owned()
}

/// True for a familiar id: 16 lowercase hex digits.
pub fn is_familiar_id(s: &str) -> bool {
    s.len() == 16 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}
