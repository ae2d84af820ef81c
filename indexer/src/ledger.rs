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

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;

use conduct_core::signing::ServiceKey;
use conduct_core::tlog::{
    empty_root, encode_bundle, entries_path, leaf_hash, new_tiles, node_hash, open_checkpoint,
    root, tiles_for_size, Checkpoint, CheckpointError, Hash, Tile, TileHashReader, TileReadError,
    TlogProof, Verifier, MAX_ENTRY_LEN, TILE_HEIGHT, TILE_WIDTH,
};
use rusqlite::{params, Connection, ErrorCode, OptionalExtension, TransactionBehavior};

use crate::durable::write_atomic;
use crate::store::{Store, StoreError};

/// Permission bits of published files (they are public).
const FILE_MODE: u32 = 0o644;

/// Default bound on the entries one group commit takes.
pub const DEFAULT_MAX_BATCH: usize = 256;

/// Why a ledger operation failed.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    /// SQLite refused.
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// The store could not hand out a connection.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Filesystem trouble while publishing.
    #[error("{path}: {source}")]
    Io {
        /// The path involved.
        path: PathBuf,
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
    Refused(Refused),
}

type Result<T, E = LedgerError> = std::result::Result<T, E>;

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> LedgerError + '_ {
    move |source| LedgerError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn to_hash(bytes: &[u8]) -> Result<Hash> {
    bytes
        .try_into()
        .map_err(|_| LedgerError::Corrupt(format!("stored hash of {} bytes", bytes.len())))
}

fn to_u64(n: i64, what: &str) -> Result<u64> {
    u64::try_from(n).map_err(|_| LedgerError::Corrupt(format!("negative {what} {n}")))
}

fn to_i64(n: u64) -> Result<i64> {
    i64::try_from(n).map_err(|_| LedgerError::Corrupt(format!("index {n} too large")))
}

/// Stored hashes `first .. first + count` at tile `level` (0: leaf hashes, else `node`).
fn stored_hashes(conn: &Connection, level: u8, first: u64, count: u64) -> Result<Vec<Hash>> {
    let (lo, hi) = (to_i64(first)?, to_i64(first + count)?);
    let rows: Vec<Vec<u8>> = if level == 0 {
        let mut st =
            conn.prepare_cached("SELECT hash FROM leaf WHERE idx >= ?1 AND idx < ?2 ORDER BY idx")?;
        let rows = st.query_map(params![lo, hi], |r| r.get(0))?;
        rows.collect::<Result<_, _>>()?
    } else {
        let mut st = conn.prepare_cached(
            "SELECT hash FROM node WHERE level = ?3 AND idx >= ?1 AND idx < ?2 ORDER BY idx",
        )?;
        let rows = st.query_map(params![lo, hi, i64::from(level)], |r| r.get(0))?;
        rows.collect::<Result<_, _>>()?
    };
    if rows.len() as u64 != count {
        return Err(LedgerError::Corrupt(format!(
            "level {level}: {} stored hashes from {first}, expected {count}",
            rows.len()
        )));
    }
    rows.iter().map(|h| to_hash(h)).collect()
}

/// Entries `first .. first + count`.
fn stored_entries(conn: &Connection, first: u64, count: u64) -> Result<Vec<Vec<u8>>> {
    let mut st =
        conn.prepare_cached("SELECT data FROM leaf WHERE idx >= ?1 AND idx < ?2 ORDER BY idx")?;
    let rows = st.query_map(params![to_i64(first)?, to_i64(first + count)?], |r| {
        r.get(0)
    })?;
    let rows: Vec<Vec<u8>> = rows.collect::<Result<_, _>>()?;
    if rows.len() as u64 != count {
        return Err(LedgerError::Corrupt(format!(
            "{} entries from {first}, expected {count}",
            rows.len()
        )));
    }
    Ok(rows)
}

/// Bytes of hash tile `tile` from the stored hashes.
fn tile_bytes(conn: &Connection, tile: Tile) -> Result<Vec<u8>> {
    let first = tile.index * u64::from(TILE_WIDTH);
    Ok(stored_hashes(conn, tile.level, first, u64::from(tile.width))?.concat())
}

/// Bytes of the entry bundle with the index and width of level-0 tile `tile`.
fn bundle_bytes(conn: &Connection, tile: Tile) -> Result<Vec<u8>> {
    let first = tile.index * u64::from(TILE_WIDTH);
    let entries = stored_entries(conn, first, u64::from(tile.width))?;
    encode_bundle(&entries).map_err(|e| LedgerError::Corrupt(e.to_string()))
}

/// The right edge of the tree of `size` leaves, rebuilt from stored hashes: its perfect
/// subtrees as (height, hash), largest (leftmost) first.
fn edge_for_size(conn: &Connection, size: u64) -> Result<Vec<(u32, Hash)>> {
    let mut edge = Vec::new();
    let mut start = 0u64;
    for height in (0..64u32).rev() {
        if (size >> height) & 1 == 0 {
            continue;
        }
        let level = height / TILE_HEIGHT;
        let first = start >> (level * TILE_HEIGHT);
        let count = 1u64 << (height % TILE_HEIGHT);
        let hashes = stored_hashes(conn, level as u8, first, count)?;
        edge.push((height, root(&hashes)));
        start += 1u64 << height;
    }
    Ok(edge)
}

/// Root of the tree whose right edge is `edge`.
fn edge_root(edge: &[(u32, Hash)]) -> Hash {
    let mut iter = edge.iter().rev();
    let Some(&(_, mut acc)) = iter.next() else {
        return empty_root();
    };
    for (_, left) in iter {
        acc = node_hash(left, &acc);
    }
    acc
}

/// Add leaf `idx` with hash `leaf` to the right edge, collecting the tile-level stored hashes
/// (level ≥ 1) that become complete as `(level, index, hash)`.
fn push_edge(edge: &mut Vec<(u32, Hash)>, idx: u64, leaf: Hash, nodes: &mut Vec<(u8, u64, Hash)>) {
    let (mut height, mut hash) = (0u32, leaf);
    while let Some(&(h, left)) = edge.last() {
        if h != height {
            break;
        }
        edge.pop();
        height += 1;
        hash = node_hash(&left, &hash);
        if height % TILE_HEIGHT == 0 {
            let level = (height / TILE_HEIGHT) as u8;
            nodes.push((level, ((idx + 1) >> height) - 1, hash));
        }
    }
    edge.push((height, hash));
}

fn is_constraint(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(f, _) if f.code == ErrorCode::ConstraintViolation)
}

/// Builds a leaf inside the append transaction from the index it will get. It may read and
/// write other tables through the connection (a savepoint, rolled back if it refuses).
pub type BuildLeaf = Box<dyn FnOnce(&Connection, u64) -> Result<Vec<u8>, Refused> + Send>;

/// One unit of an append batch.
pub enum Job {
    /// A ready leaf.
    Raw(Vec<u8>),
    /// A leaf built in the transaction (see [`BuildLeaf`]).
    Build(BuildLeaf),
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Job::Raw(b) => write!(f, "Job::Raw({} bytes)", b.len()),
            Job::Build(_) => f.write_str("Job::Build"),
        }
    }
}

/// Why a [`Job::Build`] declined to produce a leaf; nothing it wrote is kept.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// What it refers to does not exist.
    #[error("not found: {0}")]
    NotFound(String),
    /// It repeats or contradicts something already recorded.
    #[error("conflict: {0}")]
    Conflict(String),
    /// Its input cannot be recorded.
    #[error("invalid: {0}")]
    Invalid(String),
    /// The store failed while building.
    #[error("store: {0}")]
    Store(String),
}

impl From<rusqlite::Error> for Refused {
    fn from(e: rusqlite::Error) -> Self {
        Refused::Store(e.to_string())
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

/// The new tree state of a written, not yet committed, batch.
struct Batch {
    size: u64,
    root: Hash,
    note: String,
    edge: Vec<(u32, Hash)>,
}

/// Commit a written batch. On failure, says whether the ledger must stop (a fork, or a
/// commit whose outcome is unknown).
fn commit_batch(
    tx: rusqlite::Transaction<'_>,
    written: rusqlite::Result<Option<Batch>>,
    first: u64,
) -> Result<Batch, (LedgerError, bool)> {
    let batch = match written {
        Ok(Some(b)) => b,
        Ok(None) => return Err((LedgerError::Forked { expected: first }, true)),
        Err(e) if is_constraint(&e) => return Err((LedgerError::Forked { expected: first }, true)),
        Err(e) => return Err((e.into(), false)),
    };
    // Whether a failed commit committed is unknown: only a reopen can tell.
    tx.commit().map_err(|e| (e.into(), true))?;
    Ok(batch)
}

/// Insert `leaves` from index `first`, their stored subtree hashes, and the new signed
/// checkpoint (compare-and-swap on `first`). `None` when the checkpoint moved (a fork).
fn write_batch(
    tx: &Connection,
    key: &ServiceKey,
    first: u64,
    edge: &[(u32, Hash)],
    leaves: &[&[u8]],
) -> rusqlite::Result<Option<Batch>> {
    let mut edge = edge.to_vec();
    let mut nodes = Vec::new();
    let mut hashes = Vec::with_capacity(leaves.len());
    for (i, e) in leaves.iter().enumerate() {
        let h = leaf_hash(e);
        push_edge(&mut edge, first + i as u64, h, &mut nodes);
        hashes.push(h);
    }
    let size = first + leaves.len() as u64;
    let root = edge_root(&edge);
    let note = Checkpoint::new(key.name(), size, root)
        .and_then(|c| c.sign(key))
        .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
    {
        let mut st = tx.prepare_cached("INSERT INTO leaf (idx, data, hash) VALUES (?1, ?2, ?3)")?;
        for (i, (e, h)) in leaves.iter().zip(&hashes).enumerate() {
            st.execute(params![(first + i as u64) as i64, e, &h[..]])?;
        }
        let mut st =
            tx.prepare_cached("INSERT INTO node (level, idx, hash) VALUES (?1, ?2, ?3)")?;
        for (level, idx, h) in &nodes {
            st.execute(params![i64::from(*level), *idx as i64, &h[..]])?;
        }
    }
    let moved = tx.execute(
        "UPDATE checkpoint SET size = ?1, root = ?2, note = ?3 WHERE id = 1 AND size = ?4",
        params![size as i64, &root[..], note, first as i64],
    )?;
    Ok((moved == 1).then_some(Batch {
        size,
        root,
        note,
        edge,
    }))
}

/// The transparency log: SQLite is the truth, the files under the log directory are derived.
pub struct Ledger {
    conn: Connection,
    key: ServiceKey,
    verifier: Verifier,
    log_dir: PathBuf,
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
            .field("log_dir", &self.log_dir)
            .field("size", &self.size)
            .finish()
    }
}

impl Ledger {
    /// Open the log in `store` (which has run the migrations), signing with `key` (whose name
    /// is the origin) and publishing under `log_dir`. See [`Ledger::open_connection`].
    pub fn open(store: &Store, key: ServiceKey, log_dir: &Path) -> Result<Ledger> {
        Ledger::open_connection(store.connection()?, key, log_dir)
    }

    /// Open the log over its own connection to a migrated store database.
    ///
    /// Creates the signed size-0 checkpoint of an empty log; otherwise verifies the stored
    /// checkpoint (signature, leaf count, root recomputed from stored hashes), then re-publishes
    /// any derived file that is missing, of the wrong length, or behind.
    pub fn open_connection(conn: Connection, key: ServiceKey, log_dir: &Path) -> Result<Ledger> {
        let verifier = Verifier::for_key(&key).map_err(CheckpointError::from)?;
        let select = "SELECT size, root, note FROM checkpoint WHERE id = 1";
        let read = |conn: &Connection| {
            conn.query_row(select, [], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, Vec<u8>>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })
            .optional()
        };
        let row = match read(&conn)? {
            Some(row) => row,
            None => {
                let note = Checkpoint::new(key.name(), 0, empty_root())?.sign(&key)?;
                conn.execute(
                    "INSERT INTO checkpoint (id, size, root, note) VALUES (1, 0, ?1, ?2)
                     ON CONFLICT (id) DO NOTHING",
                    params![&empty_root()[..], note],
                )?;
                read(&conn)?
                    .ok_or_else(|| LedgerError::Corrupt("checkpoint row vanished".into()))?
            }
        };
        let (size, root_hash, note) = (to_u64(row.0, "size")?, to_hash(&row.1)?, row.2);
        let signed = open_checkpoint(&note, std::slice::from_ref(&verifier))?;
        if signed.checkpoint.size != size || signed.checkpoint.root != root_hash {
            return Err(LedgerError::Corrupt(
                "checkpoint note disagrees with its size or root columns".into(),
            ));
        }
        let (count, max): (i64, i64) = conn.query_row(
            "SELECT COUNT(*), COALESCE(MAX(idx), -1) FROM leaf",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        if count != row.0 || max != row.0 - 1 {
            return Err(LedgerError::Corrupt(format!(
                "checkpoint size {size} but {count} leaves up to index {max}"
            )));
        }
        let edge = edge_for_size(&conn, size)?;
        if edge_root(&edge) != root_hash {
            return Err(LedgerError::Corrupt(format!(
                "stored hashes do not give the checkpoint root at size {size}"
            )));
        }
        let mut ledger = Ledger {
            conn,
            key,
            verifier,
            log_dir: log_dir.to_path_buf(),
            size,
            root: root_hash,
            note,
            edge,
            published: 0,
            poisoned: false,
            repaired: 0,
        };
        ledger.repaired = ledger.repair()?;
        Ok(ledger)
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
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let leaves: Vec<&[u8]> = entries.iter().map(AsRef::as_ref).collect();
        let written = write_batch(&tx, &self.key, first, &self.edge, &leaves);
        let committed = commit_batch(tx, written, first);
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
        if self.poisoned {
            return Err(LedgerError::Poisoned);
        }
        let first = self.size;
        let mut tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut leaves: Vec<Vec<u8>> = Vec::with_capacity(jobs.len());
        let mut results = Vec::with_capacity(jobs.len());
        for (position, job) in jobs.into_iter().enumerate() {
            let index = first + leaves.len() as u64;
            let (leaf, built) = match job {
                Job::Raw(leaf) => (leaf, false),
                Job::Build(build) => {
                    let sp = tx.savepoint()?;
                    match build(&sp, index) {
                        Ok(leaf) if leaf.len() <= MAX_ENTRY_LEN => {
                            sp.commit()?;
                            (leaf, true)
                        }
                        Ok(leaf) => {
                            drop(sp);
                            results.push(Err(LedgerError::EntryTooLarge {
                                position,
                                len: leaf.len(),
                            }));
                            continue;
                        }
                        Err(refused) => {
                            drop(sp);
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
        let written = write_batch(&tx, &self.key, first, &self.edge, &refs);
        let committed = commit_batch(tx, written, first);
        self.adopt(committed)?;
        on_commit(&results);
        if let Err(e) = self.publish() {
            eprintln!("ledger: publishing after commit (from index {first}) failed: {e}");
        }
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

    /// Write the files the log gained since the last publish, the checkpoint last.
    fn publish(&mut self) -> Result<()> {
        for tile in new_tiles(self.published, self.size) {
            self.write_tile(tile)?;
        }
        self.write_file("checkpoint", self.note.as_bytes())?;
        self.published = self.size;
        Ok(())
    }

    /// Write hash tile `tile` and, at level 0, its entry bundle.
    fn write_tile(&self, tile: Tile) -> Result<()> {
        self.write_file(&tile.path(), &tile_bytes(&self.conn, tile)?)?;
        if tile.level == 0 {
            let path = entries_path(tile.index, tile.width);
            self.write_file(&path, &bundle_bytes(&self.conn, tile)?)?;
        }
        Ok(())
    }

    fn write_file(&self, rel: &str, bytes: &[u8]) -> Result<()> {
        let path = self.log_dir.join(rel);
        write_atomic(&path, bytes, FILE_MODE).map_err(io_err(&path))
    }

    /// Re-publish every derived file that is missing or has the wrong length, then the
    /// checkpoint if it differs. Returns how many files were written.
    fn repair(&mut self) -> Result<usize> {
        let cp_path = self.log_dir.join("checkpoint");
        let published = match fs::read_to_string(&cp_path) {
            Ok(text) => Some(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => None,
            Err(e) => return Err(io_err(&cp_path)(e)),
        };
        let checkpoint_ok = published.as_deref() == Some(self.note.as_str());
        if let Some(text) = published.as_deref().filter(|_| !checkpoint_ok) {
            if let Ok(signed) = open_checkpoint(text, std::slice::from_ref(&self.verifier)) {
                let c = signed.checkpoint;
                if c.size > self.size {
                    return Err(LedgerError::PublishedAhead {
                        published: c.size,
                        stored: self.size,
                    });
                }
                if c.size == self.size && c.root != self.root {
                    return Err(LedgerError::Corrupt(format!(
                        "published checkpoint at size {} has a different root",
                        c.size
                    )));
                }
            }
        }
        // Byte length of every entry bundle, by bundle index.
        let mut bundle_len: HashMap<u64, u64> = HashMap::new();
        {
            let mut st = self.conn.prepare(
                "SELECT idx / 256, SUM(length(data)) + 2 * COUNT(*) FROM leaf GROUP BY idx / 256",
            )?;
            let rows = st.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)))?;
            for row in rows {
                let (n, len) = row?;
                bundle_len.insert(to_u64(n, "bundle")?, to_u64(len, "length")?);
            }
        }
        let len_ok = |rel: &str, expected: u64| {
            fs::metadata(self.log_dir.join(rel)).is_ok_and(|m| m.is_file() && m.len() == expected)
        };
        let mut written = 0;
        for tile in tiles_for_size(self.size) {
            if !len_ok(&tile.path(), tile.byte_len() as u64) {
                self.write_file(&tile.path(), &tile_bytes(&self.conn, tile)?)?;
                written += 1;
            }
            if tile.level == 0 {
                let rel = entries_path(tile.index, tile.width);
                let expected = bundle_len.get(&tile.index).copied().unwrap_or(0);
                if !len_ok(&rel, expected) {
                    self.write_file(&rel, &bundle_bytes(&self.conn, tile)?)?;
                    written += 1;
                }
            }
        }
        if !checkpoint_ok {
            self.write_file("checkpoint", self.note.as_bytes())?;
            written += 1;
        }
        self.published = self.size;
        Ok(written)
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

    /// Write the files the log gained since they were last published (a retry after a
    /// publish failure).
    pub fn republish(&mut self) -> Result<()> {
        self.publish()
    }

    /// Recover from a failed write: re-open a stopped ledger over a new connection to the
    /// same database (which re-verifies the stored checkpoint against the leaves and repairs
    /// the published files), then prove a write commits (a no-op transaction on the checkpoint
    /// row). On success the ledger takes appends again.
    pub fn recover(&mut self) -> Result<()> {
        if self.poisoned {
            let path =
                self.conn.path().map(PathBuf::from).ok_or_else(|| {
                    LedgerError::Corrupt("the ledger's database has no path".into())
                })?;
            let conn = crate::store::configured(&path)?;
            let fresh = Ledger::open_connection(conn, self.key.clone(), &self.log_dir)?;
            *self = fresh;
        }
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute("UPDATE checkpoint SET note = note WHERE id = 1", [])?;
        tx.commit()?;
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

    /// The directory the derived files are published under.
    pub fn log_dir(&self) -> &Path {
        &self.log_dir
    }

    /// Entry `idx`.
    pub fn entry(&self, idx: u64) -> Result<Vec<u8>> {
        self.check_index(idx)?;
        stored_entries(&self.conn, idx, 1)?
            .pop()
            .ok_or_else(|| LedgerError::Corrupt(format!("entry {idx} missing")))
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
        proof_at(&self.conn, self.size, &self.note, idx)
    }
}

/// Inclusion proof of `idx` in the tree of `size` leaves whose signed checkpoint is `note`.
fn proof_at(conn: &Connection, size: u64, note: &str, idx: u64) -> Result<TlogProof> {
    if idx >= size {
        return Err(LedgerError::OutOfRange { index: idx, size });
    }
    let mut reader = TileHashReader::new(size, |tile| tile_bytes(conn, tile));
    let proof = reader.inclusion_proof(idx).map_err(|e| match e {
        TileReadError::Fetch { source, .. } => source,
        other => LedgerError::Corrupt(other.to_string()),
    })?;
    Ok(TlogProof {
        extra: None,
        index: idx,
        proof,
        checkpoint: note.to_owned(),
    })
}

/// A read-only view of the committed log over its own connection, usable while a
/// [`Sequencer`] owns the [`Ledger`]. Each call reads one consistent snapshot; it may be ahead
/// of the published files for the moment between a commit and its publish.
pub struct LedgerReader {
    conn: Mutex<Connection>,
}

impl std::fmt::Debug for LedgerReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LedgerReader").finish_non_exhaustive()
    }
}

impl LedgerReader {
    /// A reader over a new connection to `store`. The log must have been opened once with
    /// [`Ledger::open`] (which creates the first checkpoint).
    pub fn open(store: &Store) -> Result<LedgerReader> {
        Ok(LedgerReader {
            conn: Mutex::new(store.connection()?),
        })
    }

    /// Run `f` inside one read transaction with the committed size and signed checkpoint.
    fn snapshot<T>(&self, f: impl FnOnce(&Connection, u64, &str) -> Result<T>) -> Result<T> {
        let mut guard = match self.conn.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        let tx = guard.transaction()?;
        let (size, note): (i64, String) = tx
            .query_row("SELECT size, note FROM checkpoint WHERE id = 1", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()?
            .ok_or_else(|| LedgerError::Corrupt("no checkpoint: open the ledger first".into()))?;
        f(&tx, to_u64(size, "size")?, &note)
    }

    /// The committed size and signed checkpoint note.
    pub fn checkpoint(&self) -> Result<(u64, String)> {
        self.snapshot(|_, size, note| Ok((size, note.to_owned())))
    }

    /// Entry `idx` of the committed log.
    pub fn entry(&self, idx: u64) -> Result<Vec<u8>> {
        self.snapshot(|conn, size, _| {
            if idx >= size {
                return Err(LedgerError::OutOfRange { index: idx, size });
            }
            stored_entries(conn, idx, 1)?
                .pop()
                .ok_or_else(|| LedgerError::Corrupt(format!("entry {idx} missing")))
        })
    }

    /// Inclusion proof of entry `idx` as a C2SP tlog-proof with the committed checkpoint.
    pub fn inclusion_proof(&self, idx: u64) -> Result<TlogProof> {
        self.snapshot(|conn, size, note| proof_at(conn, size, note, idx))
    }
}

/// The latest committed state, as seen by a [`Sequencer`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogHead {
    /// Tree size.
    pub size: u64,
    /// Root hash.
    pub root: Hash,
    /// Signed checkpoint note.
    pub checkpoint: String,
    /// Checkpoints (batches) this sequencer has committed.
    pub commits: u64,
    /// `None` while writes commit; else why the last one failed (the sequencer retries by
    /// itself, re-opening a stopped ledger, until a write commits again).
    pub failing: Option<WriterFailure>,
}

/// Why the ledger's writer is not taking writes now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriterFailure {
    /// The last error.
    pub error: String,
    /// The ledger stopped (a commit whose outcome was unknown, or a fork) and is being
    /// re-opened; until then every append is refused.
    pub stopped: bool,
    /// Unix seconds of the first failure of this episode.
    pub since: u64,
    /// The log's files lag the committed log (publishing failed); retried.
    pub files_behind: bool,
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// How often a failing writer retries by itself.
const RECOVER_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

enum Reply {
    Async(tokio::sync::oneshot::Sender<Result<Appended>>),
    Blocking(mpsc::SyncSender<Result<Appended>>),
}

impl Reply {
    fn send(self, r: Result<Appended>) {
        // A requester that went away no longer needs its answer; the entry stays committed.
        match self {
            Reply::Async(s) => {
                let _ = s.send(r);
            }
            Reply::Blocking(s) => {
                let _ = s.send(r);
            }
        }
    }
}

/// Called with a job's result once its batch has committed, before the log's files are
/// published.
pub type OnCommit = Box<dyn FnOnce(&Result<Appended>) + Send>;

struct Request {
    job: Job,
    reply: Reply,
    on_commit: Option<OnCommit>,
}

/// Group commit: a thread owns the [`Ledger`] and appends whatever requests are pending (up
/// to a bound) as one batch, answering each with its index only after the commit.
///
/// Dropping it (or [`Sequencer::shutdown`]) finishes the pending requests and joins the
/// thread, which blocks the caller for at most one commit.
pub struct Sequencer {
    tx: Option<mpsc::Sender<Request>>,
    thread: Option<JoinHandle<Ledger>>,
    head: Arc<Mutex<LogHead>>,
}

impl std::fmt::Debug for Sequencer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sequencer")
            .field("head", &self.head())
            .finish()
    }
}

impl Sequencer {
    /// Start the sequencer thread; each commit takes at most `max_batch` entries (≥ 1).
    pub fn spawn(ledger: Ledger, max_batch: usize) -> Result<Sequencer> {
        let head = Arc::new(Mutex::new(LogHead {
            size: ledger.size(),
            root: ledger.root(),
            checkpoint: ledger.checkpoint().to_owned(),
            commits: 0,
            failing: None,
        }));
        let (tx, rx) = mpsc::channel();
        let shared = head.clone();
        let thread = std::thread::Builder::new()
            .name("ledger-sequencer".into())
            .spawn(move || run(ledger, rx, max_batch.max(1), shared))
            .map_err(|e| LedgerError::Sequencer(format!("spawning the thread: {e}")))?;
        Ok(Sequencer {
            tx: Some(tx),
            thread: Some(thread),
            head,
        })
    }

    fn submit(&self, job: Job, reply: Reply, on_commit: Option<OnCommit>) -> Result<()> {
        let gone = || LedgerError::Sequencer("stopped".into());
        self.tx
            .as_ref()
            .ok_or_else(gone)?
            .send(Request {
                job,
                reply,
                on_commit,
            })
            .map_err(|_| gone())
    }

    /// Append one job; resolves once its batch has committed and the log's files are
    /// published.
    pub async fn submit_job(&self, job: Job) -> Result<Appended> {
        self.submit_job_then(job, None).await
    }

    /// [`Sequencer::submit_job`], calling `on_commit` on the sequencer thread as soon as the
    /// batch has committed (before the log's files are published).
    pub async fn submit_job_then(&self, job: Job, on_commit: Option<OnCommit>) -> Result<Appended> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.submit(job, Reply::Async(tx), on_commit)?;
        rx.await
            .map_err(|_| LedgerError::Sequencer("stopped before answering".into()))?
    }

    /// Blocking [`Sequencer::submit_job`], for threads outside an async runtime.
    pub fn submit_job_blocking(&self, job: Job) -> Result<Appended> {
        let (tx, rx) = mpsc::sync_channel(1);
        self.submit(job, Reply::Blocking(tx), None)?;
        rx.recv()
            .map_err(|_| LedgerError::Sequencer("stopped before answering".into()))?
    }

    /// Append one entry; resolves to its index once its batch has committed.
    pub async fn append(&self, entry: Vec<u8>) -> Result<u64> {
        self.submit_job(Job::Raw(entry)).await.map(|a| a.index)
    }

    /// Blocking [`Sequencer::append`], for threads outside an async runtime.
    pub fn append_blocking(&self, entry: Vec<u8>) -> Result<u64> {
        self.submit_job_blocking(Job::Raw(entry)).map(|a| a.index)
    }

    /// The latest committed size, root and checkpoint.
    pub fn head(&self) -> LogHead {
        match self.head.lock() {
            Ok(g) => g.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Stop accepting requests, finish the pending ones, and hand back the ledger.
    pub fn shutdown(mut self) -> Result<Ledger> {
        drop(self.tx.take());
        self.thread
            .take()
            .ok_or_else(|| LedgerError::Sequencer("already stopped".into()))?
            .join()
            .map_err(|_| LedgerError::Sequencer("the sequencer thread panicked".into()))
    }
}

impl Drop for Sequencer {
    fn drop(&mut self) {
        drop(self.tx.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The sequencer loop: block for one request, drain what else is pending, commit, answer.
/// While writes fail (a full disk), it retries by itself every [`RECOVER_EVERY`] (and before
/// the next batch), re-opening a stopped ledger, so writes resume once they can.
fn run(
    mut ledger: Ledger,
    rx: mpsc::Receiver<Request>,
    max_batch: usize,
    head: Arc<Mutex<LogHead>>,
) -> Ledger {
    let set = |f: &dyn Fn(&mut LogHead)| match head.lock() {
        Ok(mut g) => f(&mut g),
        Err(poisoned) => f(&mut poisoned.into_inner()),
    };
    let mut failing = false;
    loop {
        let first = if failing || ledger.publish_behind() {
            match rx.recv_timeout(RECOVER_EVERY) {
                Ok(r) => Some(r),
                Err(mpsc::RecvTimeoutError::Timeout) => None,
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        } else {
            match rx.recv() {
                Ok(r) => Some(r),
                Err(_) => break,
            }
        };
        if failing || ledger.is_poisoned() || ledger.publish_behind() {
            match ledger.recover() {
                Ok(()) => {
                    if failing {
                        eprintln!("ledger: writes commit again");
                    }
                    failing = false;
                    set(&|g| {
                        update_files(g, &ledger);
                        g.failing = None;
                    });
                }
                Err(e) => {
                    failing = true;
                    record_failure(&set, &ledger, &e);
                }
            }
        }
        let Some(first) = first else { continue };
        let mut batch = vec![first];
        while batch.len() < max_batch {
            match rx.try_recv() {
                Ok(r) => batch.push(r),
                Err(_) => break,
            }
        }
        let mut jobs = Vec::with_capacity(batch.len());
        let mut replies = Vec::with_capacity(batch.len());
        let mut hooks = Vec::with_capacity(batch.len());
        for r in batch {
            jobs.push(r.job);
            replies.push(r.reply);
            hooks.push(r.on_commit);
        }
        let on_commit = |results: &[Result<Appended>]| {
            for (hook, r) in hooks.into_iter().zip(results) {
                if let Some(hook) = hook {
                    hook(r);
                }
            }
        };
        match ledger.append_jobs_then(jobs, on_commit) {
            Ok(results) => {
                failing = false;
                set(&|g| {
                    update_head(g, &ledger);
                    g.failing = None;
                    update_files(g, &ledger);
                });
                for (reply, r) in replies.into_iter().zip(results) {
                    reply.send(r);
                }
            }
            Err(e) => {
                failing = true;
                record_failure(&set, &ledger, &e);
                let msg = e.to_string();
                for reply in replies {
                    reply.send(Err(LedgerError::Sequencer(msg.clone())));
                }
            }
        }
    }
    ledger
}

/// Applies an update to the shared [`LogHead`].
type SetHead<'a> = dyn Fn(&dyn Fn(&mut LogHead)) + 'a;

fn record_failure(set: &SetHead<'_>, ledger: &Ledger, e: &LedgerError) {
    let error = e.to_string();
    let stopped = ledger.is_poisoned();
    let behind = ledger.publish_behind();
    set(&|g| {
        let since = g.failing.as_ref().map_or_else(unix_now, |f| f.since);
        g.failing = Some(WriterFailure {
            error: error.clone(),
            stopped,
            since,
            files_behind: behind,
        });
    });
}

/// Note in the head whether the log's files lag (a publish failure without a write failure).
fn update_files(g: &mut LogHead, ledger: &Ledger) {
    if ledger.publish_behind() && g.failing.is_none() {
        g.failing = Some(WriterFailure {
            error: "the log's files could not be written; retrying".into(),
            stopped: false,
            since: unix_now(),
            files_behind: true,
        });
    }
}

fn update_head(g: &mut LogHead, ledger: &Ledger) {
    g.size = ledger.size();
    g.root = ledger.root();
    g.checkpoint = ledger.checkpoint().to_owned();
    g.commits += 1;
}
