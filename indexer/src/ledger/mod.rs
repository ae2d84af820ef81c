//! The ledger (library/VOWS.md, "Durability and verification"): one global append-only transparency log in C2SP
//! tlog-tiles format with RFC 6962 hashing, stored in SQLite and published as static files.
//!
//! Durability follows Sunlight's rule. [`Ledger::append`] commits the leaves, the new stored
//! subtree hashes and the new signed checkpoint in one SQLite transaction, the checkpoint by
//! compare-and-swap on the previous size (a miss means another writer forked the log, which is
//! fatal). Only after the commit are the derived files written under the log directory (hash
//! tiles, entry bundles, then `checkpoint` last), each temp → fsync → rename → dir fsync.
//! [`Ledger::open`] checks the stored checkpoint against the leaves and re-publishes whatever
//! files are missing or behind (a crash between commit and publish).
//!
//! The root is kept incrementally: the right edge of the tree (its perfect subtrees, largest
//! first) lives in memory and is rebuilt on open from at most 8 × 256 stored hashes per level.
//!
//! [`Sequencer`] is the group-commit front end: a thread owns the ledger and turns whatever
//! appends are pending into one transaction and one checkpoint.
//!
//! A job that builds its leaf in the transaction ([`Job::Build`]) sees the state through
//! [`append::Append`], the seam whose contract (what one job sees, what is atomic, what is
//! durable when) heads [`append`]; it never sees a connection.
//!
//! The module's parts: [`append`] (the seam), `sql.rs` (statements and row access: stored
//! hashes and entries, tile and bundle bytes, writing and committing a batch), `publish.rs`
//! (publishing the derived files and repairing them on open), `reader.rs` ([`LedgerReader`],
//! snapshots, inclusion proofs) and `sequencer.rs` ([`Sequencer`], its loop, [`LogHead`],
//! [`WriterFailure`]). The pure right-edge arithmetic is `conduct_core::tlog::edge`.

pub mod append;
mod publish;
mod reader;
mod sequencer;
mod stored;

use crate::state::LogState;
use crate::store::{Store, StoreError};
use crate::tree::SharedTree;
use conduct_core::signing::ServiceKey;
use conduct_core::tlog::{
    edge_root, empty_root, open_checkpoint, Checkpoint, CheckpointError, Hash, TlogProof, Verifier,
    MAX_ENTRY_LEN,
};

pub use append::{Append, Refusal};

pub use reader::LedgerReader;
pub use sequencer::{LogHead, OnCommit, Sequencer, WriterFailure};

use reader::proof_at;
use stored::{edge_for_size, stored_entry, to_hash, write_and_commit, Batch};

/// Default bound on the entries one group commit takes.
pub const DEFAULT_MAX_BATCH: usize = 256;

/// Why a ledger operation failed.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    /// The state's backend failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The tree refused or lost a write while publishing.
    #[error("{path}: {source}")]
    Io {
        /// The tree path involved.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// An entry is longer than an entry bundle can carry; nothing was written.
    #[error("entry {position} of the batch is {len} bytes, more than {MAX_ENTRY_LEN}")]
    EntryTooLarge {
        /// Position of the entry in the batch.
        position: usize,
        /// Its length.
        len: usize,
    },
    /// Building, signing or verifying a checkpoint failed.
    #[error("checkpoint: {0}")]
    Checkpoint(#[from] CheckpointError),
    /// The stored checkpoint moved under us: another writer forked the log. Fatal.
    #[error("log forked: the stored checkpoint is no longer at size {expected}")]
    Forked {
        /// The size this ledger expected to extend.
        expected: u64,
    },
    /// The stored state is inconsistent (checkpoint, leaves and hashes disagree).
    #[error("corrupt ledger: {0}")]
    Corrupt(String),
    /// The published checkpoint is larger than the stored one (the database went back).
    #[error("published checkpoint size {published} is ahead of the stored size {stored}")]
    PublishedAhead {
        /// Size of the published checkpoint.
        published: u64,
        /// Size of the stored checkpoint.
        stored: u64,
    },
    /// A leaf index at or beyond the tree size.
    #[error("index {index} is out of range for a log of size {size}")]
    OutOfRange {
        /// The index asked for.
        index: u64,
        /// The log size.
        size: u64,
    },
    /// The batch committed (from index `first`), but writing the derived files failed; they
    /// are written again by the next append or on open.
    #[error("committed from index {first}, but publishing failed: {source}")]
    Publish {
        /// Index of the first committed entry.
        first: u64,
        /// The cause.
        source: Box<LedgerError>,
    },
    /// An earlier fatal error (fork, failed commit) stopped this ledger; reopen it.
    #[error("ledger stopped after a fatal error; reopen it")]
    Poisoned,
    /// The sequencer failed the batch or is gone.
    #[error("sequencer: {0}")]
    Sequencer(String),
    /// A build job declined; nothing of it was written.
    #[error(transparent)]
    Refused(Refusal),
}

type Result<T, E = LedgerError> = std::result::Result<T, E>;

/// Builds a leaf inside the append transaction from the index it will get. It reads and
/// writes the state it needs through [`Append`] alone (under a savepoint, rolled back if it
/// refuses; see [`append`] for the contract).
pub type BuildLeaf = Box<dyn FnOnce(&mut dyn Append, u64) -> Result<Vec<u8>, Refusal> + Send>;

/// One unit of an append batch.
pub enum Job {
    /// A ready leaf.
    Raw(Vec<u8>),
    /// A leaf built in the transaction (see [`BuildLeaf`]).
    Build(BuildLeaf),
}

impl Job {
    /// A job that builds its leaf in the transaction (see [`BuildLeaf`]).
    pub fn build(
        f: impl FnOnce(&mut dyn Append, u64) -> Result<Vec<u8>, Refusal> + Send + 'static,
    ) -> Job {
        Job::Build(Box::new(f))
    }
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Job::Raw(b) => write!(f, "Job::Raw({} bytes)", b.len()),
            Job::Build(_) => f.write_str("Job::Build"),
        }
    }
}

/// A committed job: its index, and the leaf when the job built it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Appended {
    /// Log index.
    pub index: u64,
    /// The leaf bytes of a built job.
    pub leaf: Option<Vec<u8>>,
}

/// The transparency log: the state is the truth, the objects under the tree's `log/` are
/// derived.
pub struct Ledger {
    log: Box<dyn LogState>,
    key: ServiceKey,
    verifier: Verifier,
    /// Where the derived files are published, under `log/`.
    tree: SharedTree,
    size: u64,
    root: Hash,
    note: String,
    edge: Vec<(u32, Hash)>,
    /// Size whose files are known to be published.
    published: u64,
    poisoned: bool,
    repaired: usize,
}

impl std::fmt::Debug for Ledger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ledger")
            .field("origin", &self.key.name())
            .field("tree", &self.tree.locator())
            .field("size", &self.size)
            .finish()
    }
}

impl Ledger {
    /// Open the log in `store` (which has run the migrations), signing with `key` (whose name
    /// is the origin) and publishing under `log/` of `tree`. See [`Ledger::open_log`].
    pub fn open(store: &Store, key: ServiceKey, tree: SharedTree) -> Result<Ledger> {
        Ledger::open_log(store.log()?, key, tree)
    }

    /// Open the log over its own hold on the state's log tables (migrated).
    ///
    /// Creates the signed size-0 checkpoint of an empty log; otherwise verifies the stored
    /// checkpoint (signature, leaf count, root recomputed from stored hashes), then re-publishes
    /// any derived file that is missing, of the wrong length, or behind.
    pub fn open_log(log: Box<dyn LogState>, key: ServiceKey, tree: SharedTree) -> Result<Ledger> {
        let verifier = Verifier::for_key(&key).map_err(CheckpointError::from)?;
        let mut ledger = Ledger {
            log,
            key,
            verifier,
            tree,
            size: 0,
            root: empty_root(),
            note: String::new(),
            edge: Vec::new(),
            published: 0,
            poisoned: true,
            repaired: 0,
        };
        ledger.load()?;
        Ok(ledger)
    }

    /// Read and verify the stored checkpoint (creating the size-0 one of an empty log), then
    /// repair the published files; the ledger takes appends once this succeeded.
    fn load(&mut self) -> Result<()> {
        let stored = match self.log.checkpoint()? {
            Some(stored) => stored,
            None => {
                let note = Checkpoint::new(self.key.name(), 0, empty_root())?.sign(&self.key)?;
                self.log.create_checkpoint(&empty_root(), &note)?;
                self.log
                    .checkpoint()?
                    .ok_or_else(|| LedgerError::Corrupt("checkpoint row vanished".into()))?
            }
        };
        let (size, root_hash, note) = (stored.size, to_hash(&stored.root)?, stored.note);
        let signed = open_checkpoint(&note, std::slice::from_ref(&self.verifier))?;
        if signed.checkpoint.size != size || signed.checkpoint.root != root_hash {
            return Err(LedgerError::Corrupt(
                "checkpoint note disagrees with its size or root columns".into(),
            ));
        }
        // The first and last leaf (both read through the primary key, so opening costs no
        // scan of the log; `conduct verify-log` audits every leaf).
        let span = self.log.leaf_span()?;
        let expected = size.checked_sub(1).map(|last| (0, last));
        if span != expected {
            return Err(LedgerError::Corrupt(format!(
                "checkpoint size {size} but leaves {span:?} (first, last)"
            )));
        }
        let edge = edge_for_size(self.log.as_ref(), size)?;
        if edge_root(&edge) != root_hash {
            return Err(LedgerError::Corrupt(format!(
                "stored hashes do not give the checkpoint root at size {size}"
            )));
        }
        (self.size, self.root, self.note, self.edge) = (size, root_hash, note, edge);
        self.published = 0;
        self.repaired = self.repair()?;
        self.poisoned = false;
        Ok(())
    }

    /// Append `entries` as one batch: one transaction, one new checkpoint. Returns the index
    /// of the first entry (the others follow contiguously); an empty batch returns the size.
    ///
    /// An entry over 65 535 bytes fails the whole batch and nothing is written. When the
    /// commit succeeds but publishing does not, the error is [`LedgerError::Publish`], which
    /// carries the committed index.
    pub fn append<T: AsRef<[u8]>>(&mut self, entries: &[T]) -> Result<u64> {
        if self.poisoned {
            return Err(LedgerError::Poisoned);
        }
        if let Some((position, e)) = entries
            .iter()
            .enumerate()
            .find(|(_, e)| e.as_ref().len() > MAX_ENTRY_LEN)
        {
            return Err(LedgerError::EntryTooLarge {
                position,
                len: e.as_ref().len(),
            });
        }
        let first = self.size;
        if entries.is_empty() {
            return Ok(first);
        }
        let batch = self.log.begin()?;
        let leaves: Vec<&[u8]> = entries.iter().map(AsRef::as_ref).collect();
        let committed = write_and_commit(batch, &self.key, first, &self.edge, &leaves);
        self.finish_batch(committed, first)
    }

    /// Append a batch of jobs in one transaction with one checkpoint. Each job either is a
    /// ready leaf or builds its leaf inside the transaction from the index it will get (and
    /// may write other tables there, under a savepoint that is rolled back if it refuses).
    ///
    /// Returns one result per job: its index and, for a built leaf, the leaf bytes. A refused
    /// or oversized job takes no index and does not fail the others; a failed commit fails
    /// all. A publish failure after the commit is logged and repaired by the next append.
    pub fn append_jobs(&mut self, jobs: Vec<Job>) -> Result<Vec<Result<Appended>>> {
        self.append_jobs_then(jobs, |_| {})
    }

    /// [`Self::append_jobs`], calling `on_commit` with the results once the batch has
    /// committed and before the derived files are published (so work that needs only the
    /// committed state can overlap publishing).
    pub fn append_jobs_then(
        &mut self,
        jobs: Vec<Job>,
        on_commit: impl FnOnce(&[Result<Appended>]),
    ) -> Result<Vec<Result<Appended>>> {
        let results = self.commit_jobs_then(jobs, on_commit)?;
        if let Err(e) = self.publish() {
            tracing::warn!(size = self.size, error = %e, "ledger: publishing the log files after a commit failed; retried");
        }
        Ok(results)
    }

    /// [`Self::append_jobs_then`] without publishing: the batch is committed (durable) and
    /// the log's files lag ([`Self::publish_behind`]) until [`Self::republish`] writes them,
    /// for a caller that publishes several commits at once (the sequencer under load).
    pub fn commit_jobs_then(
        &mut self,
        jobs: Vec<Job>,
        on_commit: impl FnOnce(&[Result<Appended>]),
    ) -> Result<Vec<Result<Appended>>> {
        if self.poisoned {
            return Err(LedgerError::Poisoned);
        }
        let first = self.size;
        let mut tx = self.log.begin()?;
        let mut leaves: Vec<Vec<u8>> = Vec::with_capacity(jobs.len());
        let mut results = Vec::with_capacity(jobs.len());
        for (position, job) in jobs.into_iter().enumerate() {
            let index = first + leaves.len() as u64;
            let (leaf, built) = match job {
                Job::Raw(leaf) => (leaf, false),
                Job::Build(build) => {
                    tx.savepoint()?;
                    let built = build(&mut *tx, index);
                    match built {
                        Ok(leaf) if leaf.len() <= MAX_ENTRY_LEN => {
                            tx.release()?;
                            (leaf, true)
                        }
                        Ok(leaf) => {
                            tx.rollback()?;
                            results.push(Err(LedgerError::EntryTooLarge {
                                position,
                                len: leaf.len(),
                            }));
                            continue;
                        }
                        Err(refused) => {
                            tx.rollback()?;
                            results.push(Err(LedgerError::Refused(refused)));
                            continue;
                        }
                    }
                }
            };
            if leaf.len() > MAX_ENTRY_LEN {
                results.push(Err(LedgerError::EntryTooLarge {
                    position,
                    len: leaf.len(),
                }));
                continue;
            }
            results.push(Ok(Appended {
                index,
                leaf: built.then(|| leaf.clone()),
            }));
            leaves.push(leaf);
        }
        if leaves.is_empty() {
            tx.commit()?;
            on_commit(&results);
            return Ok(results);
        }
        let refs: Vec<&[u8]> = leaves.iter().map(Vec::as_slice).collect();
        let committed = write_and_commit(tx, &self.key, first, &self.edge, &refs);
        self.adopt(committed)?;
        on_commit(&results);
        Ok(results)
    }

    /// Adopt a committed batch, or poison the ledger when the commit failed fatally.
    fn adopt(&mut self, committed: Result<Batch, (LedgerError, bool)>) -> Result<()> {
        let batch = match committed {
            Ok(b) => b,
            Err((e, poison)) => {
                self.poisoned |= poison;
                return Err(e);
            }
        };
        self.size = batch.size;
        self.root = batch.root;
        self.note = batch.note;
        self.edge = batch.edge;
        Ok(())
    }

    /// Adopt a committed batch (see [`Self::adopt`]), then publish.
    fn finish_batch(
        &mut self,
        committed: Result<Batch, (LedgerError, bool)>,
        first: u64,
    ) -> Result<u64> {
        self.adopt(committed)?;
        self.publish().map_err(|e| LedgerError::Publish {
            first,
            source: Box::new(e),
        })?;
        Ok(first)
    }

    /// Whether an earlier fatal error stopped this ledger (it refuses appends until
    /// [`Ledger::recover`] succeeds).
    pub fn is_poisoned(&self) -> bool {
        self.poisoned
    }

    /// Whether the log's files are behind the committed log (publishing failed).
    pub fn publish_behind(&self) -> bool {
        self.published < self.size
    }

    /// Recover from a failed write: re-open a stopped ledger over a new connection to the
    /// same state (which re-verifies the stored checkpoint against the leaves and repairs the
    /// published files), then prove a write commits (a no-op transaction on the checkpoint
    /// row). On success the ledger takes appends again.
    pub fn recover(&mut self) -> Result<()> {
        if self.poisoned {
            self.log.reopen()?;
            self.load()?;
        }
        self.log.probe_write()?;
        if self.publish_behind() {
            self.publish()?;
        }
        Ok(())
    }

    /// How many derived files [`Ledger::open`] had to (re)write.
    pub fn repaired_files(&self) -> usize {
        self.repaired
    }

    /// The tree size.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The tree's RFC 6962 root hash.
    pub fn root(&self) -> Hash {
        self.root
    }

    /// The current signed checkpoint note.
    pub fn checkpoint(&self) -> &str {
        &self.note
    }

    /// The log origin (the key name).
    pub fn origin(&self) -> &str {
        self.key.name()
    }

    /// Entry `idx`.
    pub fn entry(&self, idx: u64) -> Result<Vec<u8>> {
        self.check_index(idx)?;
        stored_entry(self.log.snapshot()?.as_ref(), idx)
    }

    fn check_index(&self, idx: u64) -> Result<()> {
        if idx >= self.size {
            return Err(LedgerError::OutOfRange {
                index: idx,
                size: self.size,
            });
        }
        Ok(())
    }

    /// Inclusion proof of entry `idx` in the current tree, as a C2SP tlog-proof carrying the
    /// current signed checkpoint. Computed from the stored hashes (at most one tile per level
    /// per proof step), never by rehashing the leaves.
    pub fn inclusion_proof(&self, idx: u64) -> Result<TlogProof> {
        proof_at(self.log.snapshot()?.as_ref(), self.size, &self.note, idx)
    }
}
