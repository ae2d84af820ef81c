//! Reading the committed log: [`LedgerReader`] (one consistent snapshot per call over its own
//! hold on the log's tables) and inclusion proofs computed from the stored hashes.

use std::sync::Mutex;

use super::stored::{stored_entry, tile_bytes};
use super::{LedgerError, Result};
use crate::state::{LogRead, LogState};
use crate::store::Store;
use conduct_core::tlog::{TileHashReader, TileReadError, TlogProof};

/// Inclusion proof of `idx` in the tree of `size` leaves whose signed checkpoint is `note`.
pub(super) fn proof_at(log: &dyn LogRead, size: u64, note: &str, idx: u64) -> Result<TlogProof> {
    if idx >= size {
        return Err(LedgerError::OutOfRange { index: idx, size });
    }
    let mut reader = TileHashReader::new(size, |tile| tile_bytes(log, tile));
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

/// A read-only view of the committed log over its own hold on the log's tables, usable while
/// a [`Sequencer`] owns the [`Ledger`]. Each call reads one consistent snapshot; it may be
/// ahead of the published files for the moment between a commit and its publish.
pub struct LedgerReader {
    log: Mutex<Box<dyn LogState>>,
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
        Ok(LedgerReader::over(store.log()?))
    }

    /// A reader over `log`.
    pub fn over(log: Box<dyn LogState>) -> LedgerReader {
        LedgerReader {
            log: Mutex::new(log),
        }
    }

    /// Run `f` inside one read transaction with the committed size and signed checkpoint.
    fn snapshot<T>(&self, f: impl FnOnce(&dyn LogRead, u64, &str) -> Result<T>) -> Result<T> {
        let guard = conduct_core::sync::lock(&self.log);
        let snap = guard.snapshot()?;
        let stored = snap
            .checkpoint()?
            .ok_or_else(|| LedgerError::Corrupt("no checkpoint: open the ledger first".into()))?;
        f(snap.as_ref(), stored.size, &stored.note)
    }

    /// The committed size and signed checkpoint note.
    pub fn checkpoint(&self) -> Result<(u64, String)> {
        self.snapshot(|_, size, note| Ok((size, note.to_owned())))
    }

    /// Entry `idx` of the committed log.
    pub fn entry(&self, idx: u64) -> Result<Vec<u8>> {
        self.snapshot(|log, size, _| {
            if idx >= size {
                return Err(LedgerError::OutOfRange { index: idx, size });
            }
            stored_entry(log, idx)
        })
    }

    /// Inclusion proof of entry `idx` as a C2SP tlog-proof with the committed checkpoint.
    pub fn inclusion_proof(&self, idx: u64) -> Result<TlogProof> {
        self.snapshot(|log, size, note| proof_at(log, size, note, idx))
    }
}
