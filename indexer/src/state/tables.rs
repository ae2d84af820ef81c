//! The service's own tables in the State seam, beside the log: payment claims, the
//! idempotency cache, x402 payment identifiers, the free-cap counters and the model readings
//! ([`Tables`], 16 methods), with the values they take and answer. Each backend implements
//! [`Tables`] in its own folder (`sqlite/mod.rs` and `sqlite/payid.rs`, `postgres/tables.rs`).
//!
//! # Contract
//!
//! - **Acknowledged once committed.** Every write is committed durably when it returns `Ok`;
//!   the writes of one call commit together or not at all.
//! - **Once, under any concurrency.** Of any number of concurrent [`Tables::claim_payment`]
//!   calls of one key exactly one returns `true`; of concurrent [`Tables::bind_payment_id`]
//!   calls of one id the first binding holds and every call answers it; the first idempotent
//!   body within the window wins. This holds across processes sharing the state.
//! - **Failures are errors.** A backend that is down answers `Err` (the api's 503), never
//!   "fresh" or "unclaimed".

use super::StoreError;

/// How long an idempotency key holds: 24 hours (library/PAYMENTS.md).
pub const IDEMPOTENCY_WINDOW: u64 = 24 * 3600;

/// The status of a claimed payment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PaymentStatus {
    /// Claimed for a read; settlement not finished.
    Claimed,
    /// Settled on chain.
    Settled,
    /// Settlement failed; the authorization is spent here all the same.
    Failed,
    /// Claimed but deliberately not settled (an idempotent replay, or the handler failed).
    Unsettled,
}

impl PaymentStatus {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            PaymentStatus::Claimed => "claimed",
            PaymentStatus::Settled => "settled",
            PaymentStatus::Failed => "failed",
            PaymentStatus::Unsettled => "unsettled",
        }
    }

    /// The status a stored spelling names (an unknown one reads as claimed).
    pub fn parse(s: &str) -> PaymentStatus {
        match s {
            "settled" => PaymentStatus::Settled,
            "failed" => PaymentStatus::Failed,
            "unsettled" => PaymentStatus::Unsettled,
            _ => PaymentStatus::Claimed,
        }
    }
}

/// Identity of one payment authorization.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaymentKey<'a> {
    /// CAIP-2 network, e.g. `eip155:31337`.
    pub network: &'a str,
    /// Payer address, lower-case hex.
    pub payer: &'a str,
    /// Authorization nonce (EIP-3009 bytes32 hex, or Permit2 decimal nonce).
    pub nonce: &'a str,
}

/// What the idempotency cache holds for a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Idempotent {
    /// Nothing within the window: the call is new.
    Fresh,
    /// The stored response of the same request.
    Cached(Vec<u8>),
    /// The key was used for a different request within the window.
    Reused,
}

/// Where a bound payment identifier stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PaymentIdState {
    /// Bound; nothing served or pending under it (in progress, or refused without a charge).
    Open,
    /// Its payment's settlement was broadcast and is not confirmed yet.
    Pending,
    /// Served: the answer is kept.
    Served,
}

impl PaymentIdState {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            PaymentIdState::Open => "open",
            PaymentIdState::Pending => "pending",
            PaymentIdState::Served => "served",
        }
    }

    /// The state a stored spelling names (an unknown one reads as open).
    pub fn parse(s: &str) -> Self {
        match s {
            "pending" => PaymentIdState::Pending,
            "served" => PaymentIdState::Served,
            _ => PaymentIdState::Open,
        }
    }
}

/// A payment identifier's binding, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaymentIdBinding {
    /// SHA-256 (hex) of the payment payload it was bound with.
    pub payload: String,
    /// The request fingerprint it was bound with.
    pub request: String,
    /// The payment's network.
    pub network: String,
    /// The payment's payer.
    pub payer: String,
    /// The payment's nonce.
    pub nonce: String,
    /// Where it stands.
    pub state: PaymentIdState,
    /// The HTTP status served (when served).
    pub status: Option<u16>,
    /// The settlement reply served as `PAYMENT-RESPONSE` (JSON text; when served).
    pub receipt: Option<String>,
    /// The gate's record of what was served (or, pending, of what will be).
    pub record: Option<Vec<u8>>,
    /// The `Location` served, if any.
    pub location: Option<String>,
    /// The settlement's transaction (pending or settled).
    pub tx: Option<String>,
}

/// What a served answer keeps under its identifier.
#[derive(Debug, Clone, Copy)]
pub struct ServedAnswer<'a> {
    /// HTTP status.
    pub status: u16,
    /// The settlement reply (JSON text).
    pub receipt: &'a str,
    /// The gate's record of the body.
    pub record: &'a [u8],
    /// The `Location` header, if any.
    pub location: Option<&'a str>,
    /// The settlement's transaction.
    pub tx: &'a str,
}

/// The service's own tables (the module's contract).
pub trait Tables: Send + Sync {
    /// Claim an authorization for one read, by the payload whose SHA-256 is `payload`;
    /// `false` when it was claimed before (a replay).
    fn claim_payment(
        &self,
        key: &PaymentKey<'_>,
        payload: &str,
        rail: &str,
        resource: &str,
        amount: &str,
        now: u64,
    ) -> Result<bool, StoreError>;

    /// Record the outcome of a claimed payment.
    fn finish_payment(
        &self,
        key: &PaymentKey<'_>,
        status: PaymentStatus,
        tx: Option<&str>,
        detail: Option<&str>,
        now: u64,
    ) -> Result<(), StoreError>;

    /// Record the outcome of a payment that is still `claimed`; `false` when another call
    /// finished it first.
    fn finish_claimed(
        &self,
        key: &PaymentKey<'_>,
        status: PaymentStatus,
        tx: Option<&str>,
        detail: Option<&str>,
        now: u64,
    ) -> Result<bool, StoreError>;

    /// The SHA-256 of the payload that claimed a payment, if it is claimed.
    fn payment_payload(&self, key: &PaymentKey<'_>) -> Result<Option<String>, StoreError>;

    /// The recorded status of a payment and its transaction, if claimed.
    fn payment_status(
        &self,
        key: &PaymentKey<'_>,
    ) -> Result<Option<(PaymentStatus, Option<String>)>, StoreError>;

    /// The cached response for idempotency `key` created at or after `not_before`, if the
    /// key was first used for `request`; [`Idempotent::Reused`] when it was used for another.
    fn idempotent_get(
        &self,
        key: &str,
        request: &str,
        not_before: u64,
    ) -> Result<Idempotent, StoreError>;

    /// Remember `body` for `key` and `request` (the first write within the window wins);
    /// returns what is now stored for the key.
    fn idempotent_put(
        &self,
        key: &str,
        request: &str,
        body: &[u8],
        now: u64,
    ) -> Result<Idempotent, StoreError>;

    /// Drop idempotency entries older than the window; how many.
    fn prune_idempotency(&self, now: u64) -> Result<usize, StoreError>;

    /// The binding of identifier `id` of `scope`, if bound.
    fn payment_id(&self, scope: &str, id: &str) -> Result<Option<PaymentIdBinding>, StoreError>;

    /// Bind `id` of `scope` to a payload, a request fingerprint and the payment `key`, unless
    /// it is bound already (the first binding wins); the binding that now holds.
    fn bind_payment_id(
        &self,
        scope: &str,
        id: &str,
        payload: &str,
        request: &str,
        key: &PaymentKey<'_>,
        now: u64,
    ) -> Result<PaymentIdBinding, StoreError>;

    /// Mark `id` of `scope` pending on transaction `tx`, keeping `record` when given (unless
    /// it was served).
    fn payment_id_pending(
        &self,
        scope: &str,
        id: &str,
        tx: &str,
        record: Option<&[u8]>,
        now: u64,
    ) -> Result<(), StoreError>;

    /// Keep what was served under `id` of `scope`.
    fn payment_id_served(
        &self,
        scope: &str,
        id: &str,
        answer: &ServedAnswer<'_>,
        now: u64,
    ) -> Result<(), StoreError>;

    /// Keep the model interpretation of `vow_id`'s reading covering chain position
    /// `covers_seq`, unless one covering a later position is kept; the asks it answers go.
    fn put_interpretation(
        &self,
        vow_id: &str,
        covers_seq: u64,
        interpretation: &str,
        now: u64,
    ) -> Result<(), StoreError>;

    /// Keep, in one transaction, that a model reading was asked for each `(vow_id, seq)`.
    fn put_readings_asked(&self, asked: &[(String, u64)], now: u64) -> Result<(), StoreError>;

    /// The free-tier counts of UTC day number `day`, as (counter, bucket, used).
    fn free_caps(&self, day: u64) -> Result<Vec<(String, String, u32)>, StoreError>;

    /// Record the free-tier counts of `day` (each `used` replaces the stored one) and drop
    /// earlier days, in one transaction.
    fn put_free_caps(&self, day: u64, rows: &[(String, String, u32)]) -> Result<(), StoreError>;
}
