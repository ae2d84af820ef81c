//! The append seam: what a job sees inside the log's transaction. A job ([`super::Job::Build`])
//! builds its leaf from the index it will get, reading and writing the state its feature keeps
//! through [`Append`] alone; no job sees a database connection, and every statement behind
//! [`Append`] lives in the store (`crate::store::append` for SQLite).
//!
//! # Contract
//!
//! An implementation of [`Append`] (SQLite today; a PostgreSQL one is written against this) and
//! the ledger that runs the jobs promise:
//!
//! - **One writer, in order.** The jobs of a batch run one at a time, in submission order, on
//!   the one thread that owns the ledger, inside one write transaction that no other writer
//!   interleaves with (SQLite: `BEGIN IMMEDIATE` on the single sequencer connection). A check
//!   a job makes and the write it then does are therefore one step: "first come", "once per
//!   signature" and "so many per day" hold under any number of concurrent requests.
//! - **What a job reads.** Every committed record, and every write of the earlier jobs of the
//!   same batch (they are in the same transaction). It does not read the batch's leaves: those
//!   are written after the last job ran, so a feature that re-reads its own records (the quest
//!   board) keeps a copy in its own rows. Nothing is read from the published files.
//! - **What is atomic.** A job's writes and its leaf commit together or not at all. Each job
//!   runs under a savepoint of the batch's transaction: when it refuses (returns a
//!   [`Refusal`]) or its leaf is too large, that savepoint is rolled back and only that job
//!   is answered with the refusal; the other jobs of the batch go on. A store failure inside
//!   a job is that job's refusal too ([`Refusal::Store`]). When the batch's commit fails,
//!   every job of the batch fails and nothing of it is kept.
//! - **What is durable, when.** The batch's transaction holds the jobs' writes, the leaves, the
//!   new stored hashes and the new signed checkpoint (compare-and-swap on the previous size). A
//!   job is answered only after that transaction committed durably (SQLite: WAL with
//!   `synchronous=FULL`, so the commit is on disk). From then on the answer is the
//!   acknowledgement; the log's files are derived afterwards and repaired if behind.
//! - **What a job may do.** Read and write through [`Append`], compute, and sign; it runs
//!   exactly once (never retried), so it holds no lock of its own, does no network or file IO,
//!   and takes anything else it needs (the clock, the payment flags) as input.
//! - **Refusals versus failures.** A method returns `Ok` with what it found (`false`: the
//!   signature was used, the row was there) for what the caller decides on; `Err` only when
//!   the store failed. Conflicts on single-use values are answered, never raised: an
//!   implementation whose database aborts a transaction on a unique violation (PostgreSQL)
//!   uses `ON CONFLICT DO NOTHING` or a savepoint of its own.

use conduct_core::munus::state::{ClaimRefusal, SubmitRefusal};

use crate::store::StoreError;

/// Why a job declined to produce a leaf; nothing it wrote is kept. Each refusal is named
/// (the api turns each into its problem, `api/src/error.rs`); the text (`Display`) is the
/// kind (`not found`, `conflict`, `invalid`, `store`) and [`Refusal::detail`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The record names a vow that does not exist.
    #[error("not found: {}", self.detail())]
    UnknownVow {
        /// The vow named.
        vow_id: String,
    },
    /// The signed message of a new vow was taken already.
    #[error("conflict: {}", self.detail())]
    VowTaken {
        /// The vow it was taken as.
        vow_id: String,
    },
    /// A new vow's id or index is taken already.
    #[error("conflict: {}", self.detail())]
    VowIdCollision,
    /// A report-in's wallet signature proved an earlier report-in.
    #[error("conflict: {}", self.detail())]
    ReportReplayed {
        /// The vow.
        vow_id: String,
        /// The report-in that used it first.
        seq: u64,
    },
    /// An owner-signed record names a sandbox vow.
    #[error("conflict: {}", self.detail())]
    SandboxVow {
        /// The record.
        record: OwnerRecord,
        /// The vow.
        vow_id: String,
    },
    /// An owner-signed record's wallet is not its vow's.
    #[error("conflict: {}", self.detail())]
    WrongWallet {
        /// The record.
        record: OwnerRecord,
    },
    /// A claim's or delivery's signature was used already.
    #[error("conflict: {}", self.detail())]
    MunusReplayedSignature,
    /// A claim's quest has a lapse due that is not recorded yet.
    #[error("conflict: {}", self.detail())]
    MunusLapsePending,
    /// The board refuses the claim.
    #[error("conflict: {}", self.detail())]
    MunusClaim(ClaimRefusal),
    /// The board refuses the delivery.
    #[error("conflict: {}", self.detail())]
    MunusSubmit(SubmitRefusal),
    /// The delivery's claim took its deliveries of the day.
    #[error("conflict: {}", self.detail())]
    MunusDeliveryDailyLimit,
    /// The lapse is not one of the board's due lapses.
    #[error("conflict: {}", self.detail())]
    MunusLapseNotDue,
    /// The payment's transaction is recorded already.
    #[error("conflict: {}", self.detail())]
    MunusPaymentRecorded,
    /// A binding's wallet or nostr signature was used already.
    #[error("conflict: {}", self.detail())]
    NostrBindReplayed,
    /// The vow made its bindings of the day.
    #[error("conflict: {}", self.detail())]
    NostrBindDailyLimit,
    /// A pledge's signature was used already.
    #[error("conflict: {}", self.detail())]
    WitnessPledgeReplayed,
    /// The vow made its pledges of the day.
    #[error("conflict: {}", self.detail())]
    WitnessPledgeDailyLimit,
    /// A familiar's owner signature was used already.
    #[error("conflict: {}", self.detail())]
    FamiliarReplayed,
    /// The record cannot be built (its canonical form failed).
    #[error("invalid: {0}")]
    Invalid(String),
    /// The store failed while the job ran (a failure, not a decision about the record).
    #[error("store: {0}")]
    Store(String),
}

impl Refusal {
    /// What was refused, in words (the stable slug of a board or owner-record refusal).
    pub fn detail(&self) -> String {
        match self {
            Refusal::UnknownVow { vow_id } => format!("no vow {vow_id}"),
            Refusal::VowTaken { vow_id } => {
                format!("this signed vow was already taken as vow {vow_id}")
            }
            Refusal::VowIdCollision => "vow id collision; retry".into(),
            Refusal::ReportReplayed { vow_id, seq } => format!(
                "this signed report-in was already recorded (seq {seq} of vow {vow_id}); sign \
                 the text of the next report-in"
            ),
            Refusal::SandboxVow { record, .. } => format!("{}-sandbox-vow", record.prefix()),
            Refusal::WrongWallet { record } => format!("{}-wrong-wallet", record.prefix()),
            Refusal::MunusReplayedSignature => "munus-replayed-signature".into(),
            Refusal::MunusLapsePending => "munus-lapse-pending".into(),
            Refusal::MunusClaim(r) => r.slug().into(),
            Refusal::MunusSubmit(r) => r.slug().into(),
            Refusal::MunusDeliveryDailyLimit => "munus-delivery-daily-limit".into(),
            Refusal::MunusLapseNotDue => "munus-lapse-not-due".into(),
            Refusal::MunusPaymentRecorded => "munus-payment-recorded".into(),
            Refusal::NostrBindReplayed => "nostr-bind-replayed".into(),
            Refusal::NostrBindDailyLimit => "nostr-bind-daily-limit".into(),
            Refusal::WitnessPledgeReplayed => "witness-pledge-replayed".into(),
            Refusal::WitnessPledgeDailyLimit => "witness-pledge-daily-limit".into(),
            Refusal::FamiliarReplayed => "familiar-replayed".into(),
            Refusal::Invalid(m) | Refusal::Store(m) => m.clone(),
        }
    }

    /// Whether the record repeats or contradicts what is recorded (every refusal but an
    /// unknown vow, an invalid record and a store failure).
    pub fn is_conflict(&self) -> bool {
        !matches!(
            self,
            Refusal::UnknownVow { .. } | Refusal::Invalid(_) | Refusal::Store(_)
        )
    }
}

impl From<StoreError> for Refusal {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Backend { detail, .. } => Refusal::Store(detail),
            other => Refusal::Store(other.to_string()),
        }
    }
}

/// The owner-signed records that name a vow (checked by [`Append::require_sworn`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OwnerRecord {
    /// A quest claim.
    Munus,
    /// An npub binding.
    NostrBind,
    /// A witness pledge.
    Witness,
    /// A familiar.
    Familiar,
}

impl OwnerRecord {
    /// The prefix of its refusals' slugs (`<prefix>-sandbox-vow`, `<prefix>-wrong-wallet`).
    pub fn prefix(self) -> &'static str {
        match self {
            OwnerRecord::Munus => "munus",
            OwnerRecord::NostrBind => "nostr-bind",
            OwnerRecord::Witness => "witness",
            OwnerRecord::Familiar => "familiar",
        }
    }
}

/// What a job reads and writes inside the log's transaction (the module's contract).
pub trait Append {
    /// Index a new vow at `vow.log_index` with its chain head at seq 0 (nothing is written
    /// unless the answer is [`PutVow::Indexed`]).
    fn put_vow(&mut self, vow: &VowIndex<'_>) -> Result<PutVow, StoreError>;

    /// The head of vow `vow_id`'s chain (`None`: no such vow).
    fn vow_head(&mut self, vow_id: &str) -> Result<Option<VowHead>, StoreError>;

    /// Move vow `vow_id`'s head to `head` and index its entry `head.seq` at `log_index`.
    fn move_head(&mut self, vow_id: &str, head: &VowHead, log_index: u64)
        -> Result<(), StoreError>;

    /// Record that `signature` proved report-in `seq` of `vow_id`. `Ok(None)` when it was
    /// unused; `Ok(Some(first))` when report-in `first` used it already.
    fn use_report_signature(
        &mut self,
        signature: &str,
        vow_id: &str,
        seq: u64,
    ) -> Result<Option<u64>, StoreError>;

    /// Whether vow `vow_id` is sandbox, and its wallet (lowercase hex) (`None`: no such vow).
    fn sworn(&mut self, vow_id: &str) -> Result<Option<Sworn>, StoreError>;

    /// Whether `signature` (lowercase) was used by a record of `set`.
    fn signature_used(&mut self, set: Signatures, signature: &str) -> Result<bool, StoreError>;

    /// Record that the record at `log_index` used `signature` (lowercase); `false` when it was
    /// used already (nothing recorded).
    fn use_signature(
        &mut self,
        set: Signatures,
        signature: &str,
        log_index: u64,
    ) -> Result<bool, StoreError>;

    /// How many records of `daily` vow `vow_id` made on the UTC day of instant `at`.
    fn count_on_day(&mut self, daily: Daily, vow_id: &str, at: u64) -> Result<u64, StoreError>;

    /// Every board record, in log order (those of this batch's earlier jobs included).
    fn board_records(
        &mut self,
    ) -> Result<Vec<(u64, conduct_core::munus::record::BoardRecord)>, StoreError>;

    /// Keep board record `leaf` (its quest, type name and, for a payment, its transaction,
    /// lowercase) at `log_index`; `false` when the transaction is recorded already.
    fn put_board_record(&mut self, row: &BoardIndex<'_>) -> Result<bool, StoreError>;

    /// Index an npub binding.
    fn put_binding(&mut self, row: &BindingIndex<'_>) -> Result<(), StoreError>;

    /// Keep a witness pledge (its leaf) of `vow_id` by `wallet` (lowercase) at `log_index`.
    fn put_pledge(&mut self, row: &PledgeIndex<'_>) -> Result<(), StoreError>;

    /// Keep a familiar (its leaf) by its id; `false` when the id is recorded already.
    fn put_familiar(&mut self, row: &FamiliarIndex<'_>) -> Result<bool, StoreError>;

    /// `vow_id` names a signed (not sandbox) vow whose wallet is `wallet` (any case), or the
    /// refusal: [`Refusal::UnknownVow`], [`Refusal::SandboxVow`] or [`Refusal::WrongWallet`].
    /// Every owner-signed record that names a vow (quest claims, npub bindings, pledges,
    /// familiars) is checked here.
    fn require_sworn(
        &mut self,
        vow_id: &str,
        wallet: &str,
        record: OwnerRecord,
    ) -> Result<(), Refusal> {
        match self.sworn(vow_id)? {
            None => Err(Refusal::UnknownVow {
                vow_id: vow_id.to_owned(),
            }),
            Some(Sworn { sandbox: true, .. }) => Err(Refusal::SandboxVow {
                record,
                vow_id: vow_id.to_owned(),
            }),
            Some(Sworn { wallet: w, .. }) if w.as_deref() != Some(&wallet.to_ascii_lowercase()) => {
                Err(Refusal::WrongWallet { record })
            }
            Some(_) => Ok(()),
        }
    }
}

/// A new vow's index row.
#[derive(Debug, Clone)]
pub struct VowIndex<'a> {
    /// Its id.
    pub vow_id: &'a str,
    /// Index of its record.
    pub log_index: u64,
    /// Agent name.
    pub agent: &'a str,
    /// The text (kept here only when sealed).
    pub text: &'a str,
    /// Sealed.
    pub sealed: bool,
    /// Unsigned.
    pub sandbox: bool,
    /// Wallet, lowercase `0x` hex, of a signed vow.
    pub wallet: Option<String>,
    /// SHA-256 of the signed message (a signed vow is taken once).
    pub signed_message: Option<&'a str>,
    /// Cadence, seconds.
    pub cadence_seconds: u64,
    /// Instant taken, unix seconds.
    pub at: u64,
    /// Hash of its record (the chain's first `prev`).
    pub head_hash: String,
}

/// What [`Append::put_vow`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PutVow {
    /// The vow is indexed.
    Indexed,
    /// Its signed message was taken already, as this vow.
    TakenAs(String),
    /// Its id or index is taken already.
    Collision,
}

/// The head of a vow's chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VowHead {
    /// Entries in the chain (0: the vow record alone).
    pub seq: u64,
    /// Hash of the last record.
    pub hash: String,
    /// Instant of the last record.
    pub at: u64,
}

/// What an owner-signed record checks of the vow it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sworn {
    /// Unsigned.
    pub sandbox: bool,
    /// Its wallet, lowercase hex.
    pub wallet: Option<String>,
}

/// The sets of single-use signatures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signatures {
    /// Quest claims and deliveries.
    Munus,
    /// Npub bindings (the wallet's and the npub's).
    Npub,
    /// Witness pledges.
    Witness,
    /// Familiars' owner signatures.
    Familiar,
}

/// The records counted per vow and UTC day.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Daily {
    /// Npub bindings.
    Bindings,
    /// Witness pledges.
    Pledges,
}

/// A board record's row.
#[derive(Debug, Clone)]
pub struct BoardIndex<'a> {
    /// Index of the record.
    pub log_index: u64,
    /// Its quest.
    pub quest_id: &'a str,
    /// Its type name (`conduct.munus-claim/v1`, ...).
    pub kind: &'a str,
    /// A payment's transaction, lowercase.
    pub tx: Option<String>,
    /// The leaf.
    pub leaf: &'a [u8],
}

/// An npub binding's row.
#[derive(Debug, Clone)]
pub struct BindingIndex<'a> {
    /// Index of the record.
    pub log_index: u64,
    /// The npub.
    pub npub: &'a str,
    /// Its key, hex.
    pub pubkey: &'a str,
    /// The vow it names.
    pub vow_id: &'a str,
    /// Instant, unix seconds.
    pub at: u64,
}

/// A witness pledge's row.
#[derive(Debug, Clone)]
pub struct PledgeIndex<'a> {
    /// Index of the record.
    pub log_index: u64,
    /// The vow.
    pub vow_id: &'a str,
    /// Its wallet, lowercase.
    pub wallet: String,
    /// Instant, unix seconds.
    pub at: u64,
    /// The leaf.
    pub leaf: &'a [u8],
}

/// A familiar's row.
#[derive(Debug, Clone)]
pub struct FamiliarIndex<'a> {
    /// Its id.
    pub familiar_id: &'a str,
    /// Index of the record.
    pub log_index: u64,
    /// The owner's wallet, lowercase.
    pub owner_wallet: &'a str,
    /// The owner's vow, for a vow owner.
    pub owner_vow: Option<&'a str>,
    /// Instant, unix seconds.
    pub at: u64,
    /// The leaf.
    pub leaf: &'a [u8],
}
