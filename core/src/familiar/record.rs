//! The familiar's log record, `conduct.familiar/v1`: the owner's wallet signed
//! [`super::familiar_message`] for the order on the record's UTC date, and the summon was paid
//! at the posted labor price. Members:
//!
//! `type`, `familiar_id` ([`super::familiar_id`] of the owner's signature), `origin`, `owner`
//! (`{form: "vow"|"wallet", vow_id (null for a wallet), wallet (EIP-55)}`), `owner_signature`
//! (EIP-191, `0x` and 130 lowercase hex digits), `order` (as sent), `order_sha256`, `wallet`
//! (always `null`), `faucet_cap` (always `"0"`), `status` (always `"summoned"`),
//! `labor_price_usd` (the posted price it was summoned at), `is_not` (fixed words), `signed`
//! (how the text is rebuilt and signed), `date` (the text's), `summoned_at` (RFC 3339 UTC),
//! `log_index`, `scope`, `key_id`, `signature`.
//!
//! Like every record of the log it is signed by the service (Ed25519 over RFC 8785) and its
//! leaf bytes are the RFC 8785 bytes of the signed object.

use serde_json::{json, Map, Value};

use super::{familiar_id, order_sha256, parse_order, Order, Owner};
use crate::owner::Kind;
use crate::record::{Fields, Logged, Members, OwnerSigned, Parts, RecordError};

/// Type of a familiar record.
pub const FAMILIAR_TYPE: &str = "conduct.familiar/v1";

/// The one status a familiar has here.
pub const STATUS: &str = "summoned";

/// A hosted familiar's faucet cap: nothing.
pub const FAUCET_CAP: &str = "0";

/// What every familiar record says it is not.
pub const IS_NOT: &str = "A recorded labor order with an owner, nothing more: it holds no \
wallet (wallet: null) and no key, has a faucet cap of 0, moves no funds, signs nothing and runs \
no code of anyone's. What happens next is a person's act (library/FAMILIARS.md).";

/// What `signed` says in every familiar record.
pub const SIGNED: &str = "The text is conduct_core::familiar::familiar_message(origin, owner, \
order_sha256, date) (library/FAMILIARS.md), owner named as \"vow <vow_id>\" or \"wallet \
<wallet>\". owner_signature: EIP-191 personal_sign of the text by owner.wallet. order_sha256: \
SHA-256 of the RFC 8785 bytes of order.";

/// How long the same summon sent again is answered with the record it made, in seconds: 24
/// hours from `summoned_at` (library/FAMILIARS.md, "Summoning").
pub const RESEND_WINDOW: u64 = 24 * 60 * 60;

/// A summoned familiar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Familiar {
    /// The service's public URL the text names.
    pub origin: String,
    /// Who owns it.
    pub owner: Owner,
    /// EIP-191 signature of the text by the owner's wallet (`0x`, lowercase hex).
    pub owner_signature: String,
    /// The labor order.
    pub order: Order,
    /// The posted labor price it was summoned at (USD, e.g. `1.00`).
    pub labor_price_usd: String,
    /// Instant recorded, unix seconds (its UTC date is the text's).
    pub at: u64,
}

impl Familiar {
    /// Its id.
    pub fn id(&self) -> String {
        familiar_id(&self.owner_signature)
    }

    /// True when a summon by `owner` for `order` at `origin`, signed with `owner_signature`,
    /// arriving at `now` (unix seconds) is this record's own summon sent again within
    /// [`RESEND_WINDOW`]: the same signature (any spelling of it, compared as
    /// `vow::eip191::canonical` writes it), owner, order (by its hash) and origin. Such a
    /// summon is answered with this record, uncharged; any other summon with this signature is
    /// refused (library/FAMILIARS.md, "Summoning").
    pub fn resent_by(
        &self,
        origin: &str,
        owner: &Owner,
        order: &Order,
        owner_signature: &str,
        now: u64,
    ) -> bool {
        self.owner_signature.eq_ignore_ascii_case(owner_signature)
            && self.origin == origin
            && &self.owner == owner
            && order_sha256(&self.order) == order_sha256(order)
            && now < self.at.saturating_add(RESEND_WINDOW)
    }
}

/// A blank familiar, which [`Logged::parse`] reads a record into.
impl Default for Familiar {
    fn default() -> Self {
        Familiar {
            origin: String::new(),
            owner: Owner::Wallet {
                wallet: String::new(),
            },
            owner_signature: String::new(),
            order: Order(Map::new()),
            labor_price_usd: String::new(),
            at: 0,
        }
    }
}

impl Logged for Familiar {
    const TYPE: &'static str = FAMILIAR_TYPE;

    /// The order is read back by its rules ([`parse_order`]); the exact form then holds
    /// `wallet` to `null`, `faucet_cap` to `"0"`, and `familiar_id` and `order_sha256` to what
    /// they recompute to.
    fn fields(&mut self, m: &mut Members<'_>) -> Result<(), RecordError> {
        m.instant("summoned_at", &mut self.at)?;
        m.member("owner", &mut self.owner, owner_value, read_owner)?;
        m.member("order", &mut self.order, Order::to_value, |r| {
            let order = r.get("order").unwrap_or(&Value::Null);
            parse_order(order, "/order").map_err(|errs| {
                let why: Vec<String> = errs.iter().map(ToString::to_string).collect();
                r.refused(why.join("; "))
            })
        })?;
        m.text("origin", &mut self.origin)?;
        m.text("owner_signature", &mut self.owner_signature)?;
        m.text("labor_price_usd", &mut self.labor_price_usd)?;
        m.computed("familiar_id", json!(self.id()));
        m.computed("order_sha256", json!(order_sha256(&self.order)));
        m.computed("wallet", Value::Null);
        m.computed("faucet_cap", json!(FAUCET_CAP));
        m.computed("status", json!(STATUS));
        m.computed("is_not", json!(IS_NOT));
        m.computed("signed", json!(SIGNED));
        m.computed("date", json!(self.date()));
        Ok(())
    }
}

/// The record's `owner`: `{form, vow_id (null for a wallet), wallet}`.
fn owner_value(owner: &Owner) -> Value {
    match owner {
        Owner::Vow { vow_id, wallet } => json!({"form": "vow", "vow_id": vow_id, "wallet": wallet}),
        Owner::Wallet { wallet } => json!({"form": "wallet", "vow_id": null, "wallet": wallet}),
    }
}

/// The record's `owner` read back.
fn read_owner(r: &Fields<'_>) -> Result<Owner, RecordError> {
    let o = r.object("owner")?;
    let wallet = o.str("wallet")?;
    match o.get("form").and_then(Value::as_str) {
        Some("vow") => Ok(Owner::Vow {
            vow_id: o.str("vow_id")?,
            wallet,
        }),
        Some("wallet") => Ok(Owner::Wallet { wallet }),
        _ => Err(r.malformed("owner.form is not vow or wallet")),
    }
}

impl OwnerSigned for Familiar {
    const KIND: Kind = Kind::SummonFamiliar;

    fn message_at(&self, origin: &str) -> String {
        let order = order_sha256(&self.order);
        super::familiar_message(origin, &self.owner.named(), &order, &self.date())
    }

    /// The owner's wallet signed (the familiar itself holds none: `wallet: null`).
    fn parts(&self) -> Parts<'_> {
        Parts {
            vow_id: self.owner.vow_id(),
            wallet: Some(self.owner.wallet()),
            ..Parts::signed(&self.owner_signature, self.at).at_origin(&self.origin)
        }
    }
}
