//! The board's signed log records, beside the vows' (`vow::record`): each is an object signed
//! by the service (Ed25519 over RFC 8785, `key_id` inside), its leaf bytes the RFC 8785 bytes
//! of the signed object, appended through the same log.
//!
//! - `conduct.munus-claim/v1`: a sworn vow's wallet claimed a quest (its EIP-191 signature
//!   over [`super::play_message`] is kept, so anyone can re-check it offline).
//! - `conduct.munus-delivery/v1`: the claimant's signed delivery link, naming the claim.
//! - `conduct.munus-lapse/v1`: the claim sat idle 14 days; `at` is the exact instant it fell
//!   due (`idle_since` + 14 days), whenever the record was written.
//! - `conduct.munus-payment/v1`: the operator's payment row (`to`, `amount_scry`, token,
//!   chain, transaction). Its verification flag is *not* in the record: it is re-read from the
//!   chain whenever the list is served.

use serde_json::{json, Map, Value};

use crate::canonical::{jcs_map, CanonicalError};
use crate::scope::scope_value;
use crate::signing::ServiceKey;
use crate::time::{parse_rfc3339, rfc3339};

/// Type of a claim record.
pub const CLAIM_TYPE: &str = "conduct.munus-claim/v1";
/// Type of a delivery record.
pub const DELIVERY_TYPE: &str = "conduct.munus-delivery/v1";
/// Type of a lapse record.
pub const LAPSE_TYPE: &str = "conduct.munus-lapse/v1";
/// Type of a payment record.
pub const PAYMENT_TYPE: &str = "conduct.munus-payment/v1";
/// Every board record type.
pub const TYPES: [&str; 4] = [CLAIM_TYPE, DELIVERY_TYPE, LAPSE_TYPE, PAYMENT_TYPE];

/// A claim: the vow's wallet signed the claim text of this quest on this UTC day.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    /// The quest claimed.
    pub quest_id: String,
    /// The sworn (signed, not sandbox) vow claiming it.
    pub vow_id: String,
    /// The vow's wallet, EIP-55.
    pub wallet: String,
    /// Its EIP-191 signature over the claim text, canonical (`0x`, low `s`, `v` 27/28,
    /// lowercase hex).
    pub wallet_signature: String,
    /// Instant of the claim, unix seconds (its UTC date is the message's).
    pub at: u64,
}

/// A delivery: the claimant's signed link, on the claim at log index `claim`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// The quest.
    pub quest_id: String,
    /// The claimant vow.
    pub vow_id: String,
    /// Log index of the claim delivered on.
    pub claim: u64,
    /// The delivery link (https, bounded; never fetched or run).
    pub link: String,
    /// EIP-191 signature over the submit text, canonical (`0x`, low `s`, `v` 27/28, lowercase
    /// hex).
    pub wallet_signature: String,
    /// Instant, unix seconds.
    pub at: u64,
}

/// A lapse: the claim at log index `claim` sat idle since `idle_since` for 14 days.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lapse {
    /// The quest (open again).
    pub quest_id: String,
    /// The vow whose claim lapsed.
    pub vow_id: String,
    /// Log index of the lapsed claim.
    pub claim: u64,
    /// Last activity on the claim (the claim or its latest delivery), unix seconds.
    pub idle_since: u64,
    /// The instant the claim lapsed: `idle_since` + [`super::LAPSE_SECONDS`].
    pub at: u64,
}

/// A payment the operator recorded (one row of `paid`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Payment {
    /// The quest paid for.
    pub quest_id: String,
    /// The claim it settles (log index), `None` when none was live when it was recorded.
    pub claim: Option<u64>,
    /// Recipient wallet, as the operator wrote it (0x + 40 hex).
    pub to: String,
    /// Amount in the token's base units, decimal string.
    pub amount_scry: String,
    /// ERC-20 token address.
    pub token: String,
    /// EIP-155 chain id of the transfer.
    pub chain_id: u64,
    /// Transaction hash (lowercase, 0x + 64 hex).
    pub tx: String,
    /// Instant it was recorded, unix seconds.
    pub at: u64,
}

/// One board record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BoardRecord {
    /// `conduct.munus-claim/v1`.
    Claim(Claim),
    /// `conduct.munus-delivery/v1`.
    Delivery(Delivery),
    /// `conduct.munus-lapse/v1`.
    Lapse(Lapse),
    /// `conduct.munus-payment/v1`.
    Payment(Payment),
}

impl BoardRecord {
    /// The quest it is about.
    pub fn quest_id(&self) -> &str {
        match self {
            BoardRecord::Claim(c) => &c.quest_id,
            BoardRecord::Delivery(d) => &d.quest_id,
            BoardRecord::Lapse(l) => &l.quest_id,
            BoardRecord::Payment(p) => &p.quest_id,
        }
    }

    /// Its instant, unix seconds.
    pub fn at(&self) -> u64 {
        match self {
            BoardRecord::Claim(c) => c.at,
            BoardRecord::Delivery(d) => d.at,
            BoardRecord::Lapse(l) => l.at,
            BoardRecord::Payment(p) => p.at,
        }
    }

    /// Its `type`.
    pub fn type_name(&self) -> &'static str {
        match self {
            BoardRecord::Claim(_) => CLAIM_TYPE,
            BoardRecord::Delivery(_) => DELIVERY_TYPE,
            BoardRecord::Lapse(_) => LAPSE_TYPE,
            BoardRecord::Payment(_) => PAYMENT_TYPE,
        }
    }

    /// The unsigned object (without `key_id` and `signature`) at `log_index`.
    pub fn to_object(&self, log_index: u64) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("type".into(), json!(self.type_name()));
        m.insert("quest_id".into(), json!(self.quest_id()));
        match self {
            BoardRecord::Claim(c) => {
                m.insert("vow_id".into(), json!(c.vow_id));
                m.insert("wallet".into(), json!(c.wallet));
                m.insert("wallet_signature".into(), json!(c.wallet_signature));
                m.insert("date".into(), json!(super::utc_date(c.at)));
            }
            BoardRecord::Delivery(d) => {
                m.insert("vow_id".into(), json!(d.vow_id));
                m.insert("claim".into(), json!(d.claim));
                m.insert("link".into(), json!(d.link));
                m.insert("wallet_signature".into(), json!(d.wallet_signature));
                m.insert("date".into(), json!(super::utc_date(d.at)));
            }
            BoardRecord::Lapse(l) => {
                m.insert("vow_id".into(), json!(l.vow_id));
                m.insert("claim".into(), json!(l.claim));
                m.insert("idle_since".into(), json!(rfc3339(l.idle_since)));
            }
            BoardRecord::Payment(p) => {
                m.insert("claim".into(), p.claim.map_or(Value::Null, |c| json!(c)));
                m.insert("to".into(), json!(p.to));
                m.insert("amount_scry".into(), json!(p.amount_scry));
                m.insert("token".into(), json!(p.token));
                m.insert("chain_id".into(), json!(p.chain_id));
                m.insert("tx".into(), json!(p.tx));
                m.insert(
                    "verification".into(),
                    json!(
                        "re-read from the chain when the list is served; not part of this record"
                    ),
                );
            }
        }
        m.insert("at".into(), json!(rfc3339(self.at())));
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

    /// Read a logged object back: `Ok(None)` when it is not a board record, else the record and
    /// its `log_index`. Checks the shape and that the object is exactly what [`Self::to_object`]
    /// writes (plus `key_id` and `signature`); the signature itself is checked by the caller
    /// (`signing::verify_object`), as for every record of the log.
    pub fn parse(v: &Value) -> Result<Option<(u64, BoardRecord)>, String> {
        let Some(ty) = v.get("type").and_then(Value::as_str) else {
            return Ok(None);
        };
        if !TYPES.contains(&ty) {
            return Ok(None);
        }
        let obj = v.as_object().ok_or("not an object")?;
        let s = |k: &str| -> Result<String, String> {
            obj.get(k)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| format!("{ty}: `{k}` is missing or not a string"))
        };
        let n = |k: &str| -> Result<u64, String> {
            obj.get(k)
                .and_then(Value::as_u64)
                .ok_or_else(|| format!("{ty}: `{k}` is missing or not an integer"))
        };
        let t = |k: &str| -> Result<u64, String> {
            parse_rfc3339(&s(k)?)
                .ok_or_else(|| format!("{ty}: `{k}` is not an RFC 3339 UTC instant"))
        };
        let quest_id = s("quest_id")?;
        let at = t("at")?;
        let log_index = n("log_index")?;
        let rec = match ty {
            CLAIM_TYPE => BoardRecord::Claim(Claim {
                quest_id,
                vow_id: s("vow_id")?,
                wallet: s("wallet")?,
                wallet_signature: s("wallet_signature")?,
                at,
            }),
            DELIVERY_TYPE => BoardRecord::Delivery(Delivery {
                quest_id,
                vow_id: s("vow_id")?,
                claim: n("claim")?,
                link: s("link")?,
                wallet_signature: s("wallet_signature")?,
                at,
            }),
            LAPSE_TYPE => BoardRecord::Lapse(Lapse {
                quest_id,
                vow_id: s("vow_id")?,
                claim: n("claim")?,
                idle_since: t("idle_since")?,
                at,
            }),
            _ => BoardRecord::Payment(Payment {
                quest_id,
                claim: match obj.get("claim") {
                    Some(Value::Null) => None,
                    _ => Some(n("claim")?),
                },
                to: s("to")?,
                amount_scry: s("amount_scry")?,
                token: s("token")?,
                chain_id: n("chain_id")?,
                tx: s("tx")?,
                at,
            }),
        };
        // Exactly the written form: no member added, dropped or changed.
        let mut rebuilt = rec.to_object(log_index);
        // `scope` is the service's wording of its day, kept as written.
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
                "{ty} at log index {log_index}: members differ from the record format"
            ));
        }
        Ok(Some((log_index, rec)))
    }
}
