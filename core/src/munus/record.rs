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

use super::Action;
use crate::canonical::CanonicalError;
use crate::owner::Kind;
use crate::record::{signed_leaf, Logged, Members, OwnerSigned, Parts, RecordError};
use crate::signing::ServiceKey;

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
#[derive(Debug, Clone, Default, PartialEq, Eq)]
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
#[derive(Debug, Clone, Default, PartialEq, Eq)]
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
#[derive(Debug, Clone, Default, PartialEq, Eq)]
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
#[derive(Debug, Clone, Default, PartialEq, Eq)]
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
        match self {
            BoardRecord::Claim(c) => c.to_object(log_index),
            BoardRecord::Delivery(d) => d.to_object(log_index),
            BoardRecord::Lapse(l) => l.to_object(log_index),
            BoardRecord::Payment(p) => p.to_object(log_index),
        }
    }

    /// Sign the record that will sit at `log_index`; its leaf bytes (RFC 8785).
    pub fn leaf(&self, key: &ServiceKey, log_index: u64) -> Result<Vec<u8>, CanonicalError> {
        signed_leaf(key, self.to_object(log_index))
    }

    /// Read a logged object back: `Ok(None)` when it is not a board record, else the record and
    /// its `log_index`, read by its kind's [`Logged::parse`] (exactly the written form).
    pub fn parse(v: &Value) -> Result<Option<(u64, BoardRecord)>, RecordError> {
        fn read<T: Logged>(
            v: &Value,
            wrap: fn(T) -> BoardRecord,
        ) -> Result<Option<(u64, BoardRecord)>, RecordError> {
            Ok(T::parse(v)?.map(|(i, r)| (i, wrap(r))))
        }
        match v.get("type").and_then(Value::as_str) {
            Some(CLAIM_TYPE) => read(v, BoardRecord::Claim),
            Some(DELIVERY_TYPE) => read(v, BoardRecord::Delivery),
            Some(LAPSE_TYPE) => read(v, BoardRecord::Lapse),
            Some(PAYMENT_TYPE) => read(v, BoardRecord::Payment),
            _ => Ok(None),
        }
    }
}

impl Logged for Claim {
    const TYPE: &'static str = CLAIM_TYPE;

    fn fields(&mut self, m: &mut Members<'_>) -> Result<(), RecordError> {
        m.text("quest_id", &mut self.quest_id)?;
        m.signed(&mut self.wallet_signature, &mut self.at)?;
        m.sworn(&mut self.vow_id, &mut self.wallet)
    }
}

impl OwnerSigned for Claim {
    const KIND: Kind = Kind::ClaimQuest;

    fn message_at(&self, origin: &str) -> String {
        super::play_message(origin, Action::Claim, &self.quest_id, &self.vow_id, self.at)
    }

    /// The claim keeps no origin.
    fn parts(&self) -> Parts<'_> {
        Parts::signed(&self.wallet_signature, self.at).sworn(&self.vow_id, &self.wallet)
    }
}

impl Logged for Delivery {
    const TYPE: &'static str = DELIVERY_TYPE;

    fn fields(&mut self, m: &mut Members<'_>) -> Result<(), RecordError> {
        m.text("quest_id", &mut self.quest_id)?;
        m.signed(&mut self.wallet_signature, &mut self.at)?;
        m.text("vow_id", &mut self.vow_id)?;
        m.int("claim", &mut self.claim)?;
        m.text("link", &mut self.link)
    }
}

impl OwnerSigned for Delivery {
    const KIND: Kind = Kind::SubmitDelivery;

    fn message_at(&self, origin: &str) -> String {
        let action = Action::Submit { link: &self.link };
        super::play_message(origin, action, &self.quest_id, &self.vow_id, self.at)
    }

    /// The delivery keeps no origin and names no wallet (its claim's wallet signed).
    fn parts(&self) -> Parts<'_> {
        Parts {
            vow_id: Some(&self.vow_id),
            ..Parts::signed(&self.wallet_signature, self.at)
        }
    }

    /// The claim delivered on: a claim takes [`super::MAX_DELIVERIES_PER_DAY`] a UTC day.
    fn daily_key(&self) -> Option<String> {
        Some(self.claim.to_string())
    }
}

impl Logged for Lapse {
    const TYPE: &'static str = LAPSE_TYPE;

    fn fields(&mut self, m: &mut Members<'_>) -> Result<(), RecordError> {
        m.text("quest_id", &mut self.quest_id)?;
        m.instant("at", &mut self.at)?;
        m.text("vow_id", &mut self.vow_id)?;
        m.int("claim", &mut self.claim)?;
        m.instant("idle_since", &mut self.idle_since)
    }
}

impl Logged for Payment {
    const TYPE: &'static str = PAYMENT_TYPE;

    /// `claim` is `null` when no claim was live.
    fn fields(&mut self, m: &mut Members<'_>) -> Result<(), RecordError> {
        m.text("quest_id", &mut self.quest_id)?;
        m.instant("at", &mut self.at)?;
        let claim = |c: &Option<u64>| c.map_or(Value::Null, |c| json!(c));
        m.member("claim", &mut self.claim, claim, |r| match r.get("claim") {
            Some(Value::Null) => Ok(None),
            _ => r.u64("claim").map(Some),
        })?;
        m.text("to", &mut self.to)?;
        m.text("amount_scry", &mut self.amount_scry)?;
        m.text("token", &mut self.token)?;
        m.int("chain_id", &mut self.chain_id)?;
        m.text("tx", &mut self.tx)?;
        m.computed(
            "verification",
            json!("re-read from the chain when the list is served; not part of this record"),
        );
        Ok(())
    }
}
