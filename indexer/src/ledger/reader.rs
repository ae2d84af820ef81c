//! Reading the committed log: [`LedgerReader`] (one consistent snapshot per call over its own
//! connection) and inclusion proofs computed from the stored hashes.

use std::sync::Mutex;

use conduct_core::tlog::{TileHashReader, TileReadError, TlogProof};
use rusqlite::{Connection, OptionalExtension};

use super::sql::{stored_entry, tile_bytes, to_u64};
use super::{LedgerError, Result};
use crate::store::Store;

/// Inclusion proof of `idx` in the tree of `size` leaves whose signed checkpoint is `note`.
pub(super) fn proof_at(conn: &Connection, size: u64, note: &str, idx: u64) -> Result<TlogProof> {
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
        let mut guard = conduct_core::sync::lock(&self.conn);
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
            stored_entry(conn, idx)
        })
    }

    /// Inclusion proof of entry `idx` as a C2SP tlog-proof with the committed checkpoint.
    pub fn inclusion_proof(&self, idx: u64) -> Result<TlogProof> {
        self.snapshot(|conn, size, note| proof_at(conn, size, note, idx))
    }
}
