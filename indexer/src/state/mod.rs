//! The State seam: what the service keeps durably, behind traits a backend implements, and the
//! one place a backend is chosen from the configuration. Two backends live side by side, one
//! folder each: `sqlite/` (the embedded default, `<data>/conduct.sqlite3`) and `postgres/`
//! (`state = "postgres://..."`). No module outside a backend's folder names its client.
//!
//! # The log's contract ([`LogState`], [`LogBatch`])
//!
//! The transparency log's tables are its leaves (index, bytes, leaf hash), the stored hashes
//! of its complete subtrees (level >= 1, index), and one signed checkpoint (size, root, note).
//! An implementation promises:
//!
//! - **One batch, one transaction.** [`LogState::begin`] opens a write transaction. The jobs
//!   of the batch run in it through [`Append`] (the job seam's own contract heads
//!   [`crate::ledger::append`]), each between [`LogBatch::savepoint`] and either
//!   [`LogBatch::release`] or [`LogBatch::rollback`]; then [`LogBatch::write`] inserts the
//!   batch's leaves and hashes and moves the checkpoint.
//! - **Compare-and-swap.** [`LogBatch::write`] moves the checkpoint only from the size the
//!   batch extends, and answers `Ok(false)` (nothing kept) when the stored checkpoint is
//!   elsewhere or a leaf index is taken: another writer forked the log, which the ledger
//!   treats as fatal.
//! - **Durable when acknowledged.** [`LogBatch::commit`] returns `Ok` only once the
//!   transaction is durably committed (SQLite: WAL with `synchronous=FULL`; PostgreSQL: a
//!   synchronous commit). A commit that fails may or may not have committed: the ledger
//!   re-opens ([`LogState::reopen`]) and re-reads before it writes again. A batch dropped
//!   without a commit is rolled back.
//! - **Consistent reads.** Every read of a [`LogRead`] returned by [`LogState::snapshot`]
//!   sees one committed state; the reads of a [`LogState`] itself see at least every batch it
//!   committed.
//! - **Failures are errors, never answers.** A backend that is down answers `Err` (the api's
//!   503), never an empty or partial read as if it were the truth.
//!
//! [`LogState`] has 6 methods of its own and [`LogRead`]'s 5; [`LogBatch`] has 5 beside
//! [`Append`]'s 13 (ARCHITECTURE.md, "The two seams").

pub mod chain;
pub mod kept;
pub mod postgres;
pub mod sqlite;
pub mod tables;
pub mod vows;

use conduct_core::tlog::Hash;

use std::path::PathBuf;

use crate::ledger::append::Append;

/// Why a state operation failed. Every variant is a failure of the store, never a decision
/// about a request: the api answers each with 503 and `Retry-After`.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The backend refused or failed, in its own words (`sqlite: database is locked`).
    #[error("{backend}: {detail}")]
    Backend {
        /// `sqlite` or `postgres`.
        backend: &'static str,
        /// What it said.
        detail: String,
    },
    /// Filesystem trouble.
    #[error("{path}: {source}")]
    Io {
        /// The path involved.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The database was written by a newer version of this program.
    #[error("database schema version {found} is newer than this program's {known}")]
    TooNew {
        /// Version in the database.
        found: i64,
        /// Newest version known here.
        known: i64,
    },
    /// A stored value is out of its range (a negative size, say).
    #[error("corrupt state: {0}")]
    Corrupt(String),
}

/// The state of a running service: the one backend the configuration chose.
#[derive(Debug, Clone)]
pub enum State {
    /// SQLite in the data directory (the embedded default).
    Sqlite(std::sync::Arc<sqlite::Store>),
    /// A PostgreSQL database.
    Postgres(postgres::Postgres),
}

impl State {
    /// The one switch: `spec` names a PostgreSQL database (`postgres://...` or
    /// `postgresql://...`), or is absent for SQLite in `data`. Creates or migrates the schema.
    pub fn open(spec: Option<&str>, data: &std::path::Path) -> Result<State, StoreError> {
        match spec {
            Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
                Ok(State::Postgres(postgres::Postgres::open(url)?))
            }
            Some(other) => Err(StoreError::Backend {
                backend: "state",
                detail: format!(
                    "{other:?} is not a postgres:// URL (leave state unset for SQLite in data)"
                ),
            }),
            None => Ok(State::Sqlite(std::sync::Arc::new(sqlite::Store::open(
                data,
            )?))),
        }
    }

    /// The log's tables over a connection of their own (the ledger's, or a reader's).
    pub fn log(&self) -> Result<Box<dyn LogState>, StoreError> {
        match self {
            State::Sqlite(store) => store.log(),
            State::Postgres(pg) => pg.log(),
        }
    }

    /// The vows' reads, over connections of their own.
    pub fn vows(&self) -> Result<vows::VowReader, StoreError> {
        match self {
            State::Sqlite(store) => vows::VowReader::open(store),
            State::Postgres(pg) => Ok(vows::VowReader::new(Box::new(pg.vows()))),
        }
    }

    /// The quest board's reads, over connections of their own.
    pub fn munus(&self) -> Result<vows::MunusReader, StoreError> {
        Ok(vows::MunusReader::new(self.vows()?))
    }

    /// The service's own tables (payments, idempotency, payment identifiers, caps, readings).
    pub fn tables(&self) -> std::sync::Arc<dyn tables::Tables> {
        match self {
            State::Sqlite(store) => store.clone(),
            State::Postgres(pg) => std::sync::Arc::new(pg.tables()),
        }
    }

    /// The donated traces.
    pub fn donated(&self) -> Result<std::sync::Arc<dyn kept::DonatedTraces>, StoreError> {
        Ok(match self {
            State::Sqlite(store) => {
                std::sync::Arc::new(sqlite::donated::SqliteDonated::open(store.data_dir())?)
            }
            State::Postgres(pg) => std::sync::Arc::new(pg.donated()),
        })
    }

    /// The renderer's resume points.
    pub fn resume_points(&self) -> Result<std::sync::Arc<dyn kept::ResumePoints>, StoreError> {
        Ok(match self {
            State::Sqlite(store) => {
                std::sync::Arc::new(sqlite::resume::SqliteResumePoints::open(store.data_dir())?)
            }
            State::Postgres(pg) => std::sync::Arc::new(pg.resume_points()),
        })
    }

    /// The chain index for the chain and contracts named by `identity` (chain id, addresses,
    /// start blocks): emptied first when it was written for another.
    pub fn chain(
        &self,
        identity: &str,
    ) -> Result<std::sync::Arc<dyn chain::ChainIndex>, StoreError> {
        Ok(match self {
            State::Sqlite(store) => std::sync::Arc::new(sqlite::chain::SqliteChain::open(
                store.data_dir(),
                identity,
            )?),
            State::Postgres(pg) => std::sync::Arc::new(pg.chain(identity)?),
        })
    }

    /// Where the state lives, for messages (never a password).
    pub fn locator(&self) -> String {
        match self {
            State::Sqlite(store) => store.path().display().to_string(),
            State::Postgres(pg) => pg.locator().to_owned(),
        }
    }
}

/// A kept board record row (its log index and leaf) as the record, or `None` (logged) when it
/// names none: how every backend reads the board's rows.
pub(crate) fn board_row(
    index: i64,
    data: &[u8],
) -> Option<(u64, conduct_core::munus::record::BoardRecord)> {
    let parsed = serde_json::from_slice::<serde_json::Value>(data)
        .ok()
        .and_then(|v| {
            conduct_core::munus::record::BoardRecord::parse(&v)
                .ok()
                .flatten()
        });
    if parsed.is_none() {
        tracing::error!(
            log_index = index,
            "a munus_record row names no board record"
        );
    }
    parsed
}

/// The stored signed checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredCheckpoint {
    /// Tree size.
    pub size: u64,
    /// RFC 6962 root (32 bytes when sound; checked by the ledger).
    pub root: Vec<u8>,
    /// The signed note.
    pub note: String,
}

/// What a new batch writes besides its jobs' rows.
#[derive(Debug, Clone, Copy)]
pub struct NewLeaves<'a> {
    /// Index of the first leaf: the size the batch extends.
    pub first: u64,
    /// The leaves, in order, with their leaf hashes.
    pub leaves: &'a [(&'a [u8], Hash)],
    /// The newly complete subtrees: (level, index, hash).
    pub nodes: &'a [(u8, u64, Hash)],
    /// The checkpoint after the batch.
    pub checkpoint: &'a StoredCheckpoint,
}

/// Reads of the log's tables.
pub trait LogRead {
    /// The stored checkpoint (`None`: the log was never opened).
    fn checkpoint(&self) -> Result<Option<StoredCheckpoint>, StoreError>;

    /// The first and last leaf index (`None`: no leaf), each read through the primary key.
    fn leaf_span(&self) -> Result<Option<(u64, u64)>, StoreError>;

    /// The stored hashes `first .. first + count` at `level` (0: leaf hashes), in order; fewer
    /// when some are missing (the caller checks the count).
    fn hashes(&self, level: u8, first: u64, count: u64) -> Result<Vec<Vec<u8>>, StoreError>;

    /// Leaves `first .. first + count`, in order; fewer when some are missing.
    fn entries(&self, first: u64, count: u64) -> Result<Vec<Vec<u8>>, StoreError>;

    /// The byte length of an entry bundle of leaves `first .. first + count`: their bytes and
    /// two length bytes each.
    fn bundle_len(&self, first: u64, count: u64) -> Result<u64, StoreError>;
}

/// The log's tables, as the ledger (their one writer) and its readers hold them.
pub trait LogState: LogRead + Send {
    /// Create the size-0 checkpoint `note` of root `root` unless a checkpoint exists.
    fn create_checkpoint(&mut self, root: &Hash, note: &str) -> Result<(), StoreError>;

    /// Open a batch's write transaction.
    fn begin(&mut self) -> Result<Box<dyn LogBatch + '_>, StoreError>;

    /// One consistent read of committed state (a read transaction, ended when dropped).
    fn snapshot(&self) -> Result<Box<dyn LogRead + '_>, StoreError>;

    /// Prove that a write commits now (a no-op write of the checkpoint row).
    fn probe_write(&mut self) -> Result<(), StoreError>;

    /// Drop the connection and open a new one (after a commit whose outcome is unknown).
    fn reopen(&mut self) -> Result<(), StoreError>;

    /// Where the log lives, for messages (a path, or a server without its credentials).
    fn locator(&self) -> String;
}

/// One batch's write transaction (see the module's contract).
pub trait LogBatch: Append {
    /// Open a job's savepoint.
    fn savepoint(&mut self) -> Result<(), StoreError>;

    /// Keep the job's writes (release its savepoint).
    fn release(&mut self) -> Result<(), StoreError>;

    /// Drop the job's writes (roll back to its savepoint and release it).
    fn rollback(&mut self) -> Result<(), StoreError>;

    /// Insert the batch's leaves and hashes and move the checkpoint from `new.first` to
    /// `new.checkpoint`; `Ok(false)` when the checkpoint was not at `new.first` or a leaf
    /// index is taken (a fork: nothing of the batch may be committed then).
    fn write(&mut self, new: &NewLeaves<'_>) -> Result<bool, StoreError>;

    /// Commit durably.
    fn commit(self: Box<Self>) -> Result<(), StoreError>;
}
