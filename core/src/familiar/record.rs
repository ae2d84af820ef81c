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
use crate::canonical::{jcs_map, CanonicalError};
use crate::scope::scope_value;
use crate::signing::ServiceKey;
use crate::time::{parse_rfc3339, rfc3339};

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

    /// The UTC date (`YYYY-MM-DD`) its text names.
    pub fn date(&self) -> String {
        crate::munus::utc_date(self.at)
    }

    /// The exact text the owner's wallet signed.
    pub fn message(&self) -> String {
        super::familiar_message(
            &self.origin,
            &self.owner.named(),
            &order_sha256(&self.order),
            &self.date(),
        )
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

    /// Check that `owner_signature` recovers to the owner's wallet over the text (EIP-191).
    #[cfg(feature = "wallet")]
    pub fn check_wallet(&self) -> Result<(), String> {
        let addr = crate::vow::eip191::recover(&self.message(), &self.owner_signature)
            .map_err(|e| format!("owner_signature: {e}"))?;
        if crate::vow::record::checksum_address(&addr) != self.owner.wallet() {
            return Err("owner_signature does not recover to the owner's wallet".into());
        }
        Ok(())
    }

    /// The unsigned object (without `key_id` and `signature`) at `log_index`.
    pub fn to_object(&self, log_index: u64) -> Map<String, Value> {
        let owner = match &self.owner {
            Owner::Vow { vow_id, wallet } => {
                json!({"form": "vow", "vow_id": vow_id, "wallet": wallet})
            }
            Owner::Wallet { wallet } => json!({"form": "wallet", "vow_id": null, "wallet": wallet}),
        };
        let mut m = Map::new();
        m.insert("type".into(), json!(FAMILIAR_TYPE));
        m.insert("familiar_id".into(), json!(self.id()));
        m.insert("origin".into(), json!(self.origin));
        m.insert("owner".into(), owner);
        m.insert("owner_signature".into(), json!(self.owner_signature));
        m.insert("order".into(), self.order.to_value());
        m.insert("order_sha256".into(), json!(order_sha256(&self.order)));
        m.insert("wallet".into(), Value::Null);
        m.insert("faucet_cap".into(), json!(FAUCET_CAP));
        m.insert("status".into(), json!(STATUS));
        m.insert("labor_price_usd".into(), json!(self.labor_price_usd));
        m.insert("is_not".into(), json!(IS_NOT));
        m.insert("signed".into(), json!(SIGNED));
        m.insert("date".into(), json!(self.date()));
        m.insert("summoned_at".into(), json!(rfc3339(self.at)));
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

    /// Read a logged object back: `Ok(None)` when it is not a familiar record, else the
    /// record and its `log_index`. Checks the shape, the order's rules, and that the object is
    /// exactly what [`Self::to_object`] writes (so `wallet` is `null`, `faucet_cap` `"0"`,
    /// `familiar_id` and `order_sha256` recompute), plus `key_id`, `signature` and `scope` as
    /// written; the service's signature is checked by the caller (`signing::verify_object`).
    pub fn parse(v: &Value) -> Result<Option<(u64, Familiar)>, String> {
        if v.get("type").and_then(Value::as_str) != Some(FAMILIAR_TYPE) {
            return Ok(None);
        }
        let obj = v.as_object().ok_or("not an object")?;
        let s = |o: &Map<String, Value>, k: &str| -> Result<String, String> {
            o.get(k)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| format!("{FAMILIAR_TYPE}: `{k}` is missing or not a string"))
        };
        let log_index = obj
            .get("log_index")
            .and_then(Value::as_u64)
            .ok_or_else(|| format!("{FAMILIAR_TYPE}: `log_index` is missing or not an integer"))?;
        let at = parse_rfc3339(&s(obj, "summoned_at")?).ok_or_else(|| {
            format!("{FAMILIAR_TYPE}: `summoned_at` is not an RFC 3339 UTC instant")
        })?;
        let owner_v = obj
            .get("owner")
            .and_then(Value::as_object)
            .ok_or_else(|| format!("{FAMILIAR_TYPE}: `owner` is missing or not an object"))?;
        let wallet = s(owner_v, "wallet")?;
        let owner = match owner_v.get("form").and_then(Value::as_str) {
            Some("vow") => Owner::Vow {
                vow_id: s(owner_v, "vow_id")?,
                wallet,
            },
            Some("wallet") => Owner::Wallet { wallet },
            _ => return Err(format!("{FAMILIAR_TYPE}: owner.form is not vow or wallet")),
        };
        let order =
            parse_order(obj.get("order").unwrap_or(&Value::Null), "/order").map_err(|errs| {
                format!(
                    "{FAMILIAR_TYPE} at log index {log_index}: {}",
                    errs.iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join("; ")
                )
            })?;
        let rec = Familiar {
            origin: s(obj, "origin")?,
            owner,
            owner_signature: s(obj, "owner_signature")?,
            order,
            labor_price_usd: s(obj, "labor_price_usd")?,
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
                "{FAMILIAR_TYPE} at log index {log_index}: members differ from the record format"
            ));
        }
        Ok(Some((log_index, rec)))
    }
}
