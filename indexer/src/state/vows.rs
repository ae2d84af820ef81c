//! The vows' reads in the State seam: the rows a backend answers with, [`VowReads`] (what the
//! renderer and the api read of the committed vows and of the records that name them: npub
//! bindings, pledges, familiars), and [`VowReader`], the handle they hold. Each backend
//! implements [`VowReads`] in its own folder (`sqlite/vows.rs`, `postgres/vows.rs`).
//!
//! # Contract
//!
//! - **Committed state only.** A read sees what committed transactions wrote, never a batch in
//!   progress; [`VowReads::links`] and [`VowReads::links_from`] read one snapshot, so a chain's
//!   head and its records agree.
//! - **One order.** Every list is in the order its method names, with text compared byte by
//!   byte (SQLite's `BINARY`, PostgreSQL's `C` collation), so both backends answer the same
//!   rows in the same order.
//! - **Failures are errors.** A backend that is down answers `Err`, never an empty list.

use conduct_core::munus::record::BoardRecord;
use conduct_core::witness::record::Pledge;

use super::StoreError;

/// A chain's records as (log index, leaf bytes): the vow record, then entries in seq order.
pub type Records = Vec<(u64, Vec<u8>)>;

/// A vow as the state indexes it.
#[derive(Debug, Clone, PartialEq)]
pub struct VowRow {
    /// Vow id.
    pub vow_id: String,
    /// Index of its record in the log.
    pub log_index: u64,
    /// Agent name.
    pub agent: String,
    /// The text (private when sealed: never publish it from here).
    pub text: String,
    /// Sealed.
    pub sealed: bool,
    /// Unsigned.
    pub sandbox: bool,
    /// Wallet (lowercase hex) of a signed vow.
    pub wallet: Option<String>,
    /// Cadence, seconds.
    pub cadence_seconds: u64,
    /// Instant taken, unix seconds.
    pub created_at: u64,
    /// Entries in its chain.
    pub head_seq: u64,
    /// Instant of its last record.
    pub head_at: u64,
}

/// A vow's window clock: its windows are `[start + k·cadence, start + (k+1)·cadence)`
/// (library/VOWS.md, "Trajectory stats").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VowClock {
    /// Vow id.
    pub vow_id: String,
    /// The instant it was taken, unix seconds: its first window's start.
    pub start: u64,
    /// Cadence, seconds.
    pub cadence: u64,
}

/// The head of a vow's chain as the state has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainHead {
    /// Entries in the chain (its last record's chain position).
    pub seq: u64,
    /// Hex SHA-256 of its last record's leaf.
    pub hash: String,
}

/// One npub binding as the state indexes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BindingRow {
    /// The npub (lowercase).
    pub npub: String,
    /// Its key, lowercase hex.
    pub pubkey: String,
    /// The vow it names.
    pub vow_id: String,
    /// Log index of the binding record.
    pub log_index: u64,
    /// Instant recorded, unix seconds.
    pub at: u64,
}

/// A vow's current pledge as the state keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PledgeRow {
    /// Log index of the pledge record.
    pub log_index: u64,
    /// The record.
    pub pledge: Pledge,
    /// Its leaf bytes (the signed record).
    pub leaf: Vec<u8>,
}

/// A recorded familiar as the state keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FamiliarRow {
    /// Its id.
    pub familiar_id: String,
    /// Log index of its record.
    pub log_index: u64,
    /// When it was summoned, unix seconds.
    pub at: u64,
    /// The record's leaf bytes (the signed record).
    pub leaf: Vec<u8>,
}

/// A kept pledge row (its log index and leaf) as the pledge, or `None` (logged) when it
/// names none: how every backend reads the pledge rows.
pub(crate) fn pledge_row(index: i64, leaf: Vec<u8>) -> Option<PledgeRow> {
    use conduct_core::record::Logged;
    let parsed = serde_json::from_slice::<serde_json::Value>(&leaf)
        .ok()
        .and_then(|v| Pledge::parse(&v).ok().flatten());
    match parsed {
        Some((log_index, pledge)) => Some(PledgeRow {
            log_index,
            pledge,
            leaf,
        }),
        None => {
            tracing::error!(
                log_index = index,
                "a witness_pledge row names no pledge record"
            );
            None
        }
    }
}

/// What the renderer and the api read of the committed vows and the records that name them
/// (the module's contract): 22 methods, each one query (or one snapshot) of a backend.
pub trait VowReads: Send + Sync {
    /// One vow.
    fn vow(&self, vow_id: &str) -> Result<Option<VowRow>, StoreError>;

    /// One vow about to take an entry: [`VowReads::vow`], where a backend may also warm what
    /// the entry's write will touch (SQLite reads the page of its head entry's row).
    fn vow_to_append(&self, vow_id: &str) -> Result<Option<VowRow>, StoreError>;

    /// Every vow, by agent name then id.
    fn all(&self) -> Result<Vec<VowRow>, StoreError>;

    /// At most `limit` vows taken after the one at log index `after` (from the first when
    /// `None`), in the order they were taken (library/VOWS.md, the signed index).
    fn taken_after(&self, after: Option<u64>, limit: usize) -> Result<Vec<VowRow>, StoreError>;

    /// The size of the committed log: every record below it is committed.
    fn log_size(&self) -> Result<u64, StoreError>;

    /// At most `limit` records at log index `from` or later that change a vow's pages, as
    /// (vow id, log index), by log index: vow records, entries and npub bindings.
    fn touched_since(&self, from: u64, limit: usize) -> Result<Vec<(String, u64)>, StoreError>;

    /// The vows whose model interpretation was kept at or after `at` (service clock), by id.
    fn interpreted_since(&self, at: u64) -> Result<Vec<String>, StoreError>;

    /// The vows whose model reading was asked for and not yet kept, by id.
    fn readings_asked(&self) -> Result<Vec<String>, StoreError>;

    /// At most `limit` vows' window clocks after the vow id `after` (from the first when
    /// empty), by id.
    fn clocks_after(&self, after: &str, limit: usize) -> Result<Vec<VowClock>, StoreError>;

    /// Every vow a lookup key names in any role: its vow id, its agent name, or its wallet
    /// (compared in lowercase), oldest first.
    fn matching(&self, lookup: &str) -> Result<Vec<VowRow>, StoreError>;

    /// The vow and its chain from one snapshot: the vow row and every record's (log index,
    /// leaf bytes), the vow record first, then the entries in seq order.
    fn links(&self, vow_id: &str) -> Result<Option<(VowRow, Records)>, StoreError>;

    /// The kept model interpretation of a vow's reading (JSON text) and the chain position it
    /// covers, if any.
    fn reading(&self, vow_id: &str) -> Result<Option<(u64, String)>, StoreError>;

    /// A vow's chain head and its records from chain position `from` on (position 0 is the
    /// vow record, position n is entry seq n), from one snapshot; `None` when there is no
    /// such vow.
    fn links_from(
        &self,
        vow_id: &str,
        from: u64,
    ) -> Result<Option<(ChainHead, Records)>, StoreError>;

    /// The current binding of `npub` (its latest; `None` when it was never bound here).
    fn binding(&self, npub: &str) -> Result<Option<BindingRow>, StoreError>;

    /// The npubs whose current binding names `vow_id`, oldest binding first.
    fn npubs_of(&self, vow_id: &str) -> Result<Vec<BindingRow>, StoreError>;

    /// Every npub bound here, with its current binding, by npub.
    fn bindings(&self) -> Result<Vec<BindingRow>, StoreError>;

    /// The npubs bound at log index `from` or later, by npub.
    fn npubs_bound_since(&self, from: u64) -> Result<Vec<String>, StoreError>;

    /// Every npub ever bound to `vow_id` (current or moved away since), by npub.
    fn npubs_ever_of(&self, vow_id: &str) -> Result<Vec<String>, StoreError>;

    /// The current pledge of `vow_id`: its latest (`None` when it never pledged).
    fn pledge(&self, vow_id: &str) -> Result<Option<PledgeRow>, StoreError>;

    /// The familiar `id` (`None` when there is none).
    fn familiar(&self, id: &str) -> Result<Option<FamiliarRow>, StoreError>;

    /// Every familiar, in log order.
    fn familiars(&self) -> Result<Vec<FamiliarRow>, StoreError>;

    /// Every board record committed, in log order (rows that name none are skipped, logged).
    fn board_records(&self) -> Result<Vec<(u64, BoardRecord)>, StoreError>;
}

/// Reads of the committed vows on whichever backend holds the state (its methods are
/// [`VowReads`]'s).
pub struct VowReader {
    reads: Box<dyn VowReads>,
}

impl std::fmt::Debug for VowReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VowReader").finish_non_exhaustive()
    }
}

impl VowReader {
    /// A reader over `reads`.
    pub fn new(reads: Box<dyn VowReads>) -> VowReader {
        VowReader { reads }
    }
}

impl std::ops::Deref for VowReader {
    type Target = dyn VowReads;

    fn deref(&self) -> &Self::Target {
        self.reads.as_ref()
    }
}

/// The quest board's reads for the renderer and the api: every committed board record.
#[derive(Debug)]
pub struct MunusReader(VowReader);

impl MunusReader {
    /// The board's reads through `reads`.
    pub fn new(reads: VowReader) -> MunusReader {
        MunusReader(reads)
    }

    /// Every board record committed, in log order.
    pub fn records(&self) -> Result<Vec<(u64, BoardRecord)>, StoreError> {
        self.0.board_records()
    }
}
