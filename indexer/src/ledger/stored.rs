//! The log's stored rows as the ledger uses them: stored hashes and entries checked for
//! count, tile and bundle bytes, the right edge rebuilt from stored hashes, and writing a
//! batch's leaves, hashes and signed checkpoint through a [`LogBatch`] (the statements are the
//! backend's: `crate::state`).

use conduct_core::signing::ServiceKey;
use conduct_core::tlog::{
    edge_root, edge_spans, encode_bundle, leaf_hash, push_edge, root, Checkpoint, Hash, Tile,
    TILE_WIDTH,
};

use super::{LedgerError, Result};
use crate::state::{LogBatch, LogRead, NewLeaves, StoredCheckpoint};

pub(super) fn to_hash(bytes: &[u8]) -> Result<Hash> {
    bytes
        .try_into()
        .map_err(|_| LedgerError::Corrupt(format!("stored hash of {} bytes", bytes.len())))
}

/// Stored hashes `first .. first + count` at tile `level` (0: leaf hashes, else `node`).
fn stored_hashes(log: &dyn LogRead, level: u8, first: u64, count: u64) -> Result<Vec<Hash>> {
    let rows = log.hashes(level, first, count)?;
    if rows.len() as u64 != count {
        return Err(LedgerError::Corrupt(format!(
            "level {level}: {} stored hashes from {first}, expected {count}",
            rows.len()
        )));
    }
    rows.iter().map(|h| to_hash(h)).collect()
}

/// Entries `first .. first + count`.
fn stored_entries(log: &dyn LogRead, first: u64, count: u64) -> Result<Vec<Vec<u8>>> {
    let rows = log.entries(first, count)?;
    if rows.len() as u64 != count {
        return Err(LedgerError::Corrupt(format!(
            "{} entries from {first}, expected {count}",
            rows.len()
        )));
    }
    Ok(rows)
}

/// Bytes of hash tile `tile` from the stored hashes.
pub(super) fn tile_bytes(log: &dyn LogRead, tile: Tile) -> Result<Vec<u8>> {
    let first = tile.index * u64::from(TILE_WIDTH);
    Ok(stored_hashes(log, tile.level, first, u64::from(tile.width))?.concat())
}

/// Bytes of the entry bundle with the index and width of level-0 tile `tile`.
pub(super) fn bundle_bytes(log: &dyn LogRead, tile: Tile) -> Result<Vec<u8>> {
    let first = tile.index * u64::from(TILE_WIDTH);
    let entries = stored_entries(log, first, u64::from(tile.width))?;
    encode_bundle(&entries).map_err(|e| LedgerError::Corrupt(e.to_string()))
}

/// Byte length of the entry bundle with the index and width of level-0 tile `tile` (a u16
/// length before each entry).
pub(super) fn bundle_len(log: &dyn LogRead, tile: Tile) -> Result<u64> {
    let first = tile.index * u64::from(TILE_WIDTH);
    Ok(log.bundle_len(first, u64::from(tile.width))?)
}

/// Entry `idx`.
pub(super) fn stored_entry(log: &dyn LogRead, idx: u64) -> Result<Vec<u8>> {
    stored_entries(log, idx, 1)?
        .pop()
        .ok_or_else(|| LedgerError::Corrupt(format!("entry {idx} missing")))
}

/// The right edge of the tree of `size` leaves, rebuilt from stored hashes: its perfect
/// subtrees as (height, hash), largest (leftmost) first.
pub(super) fn edge_for_size(log: &dyn LogRead, size: u64) -> Result<Vec<(u32, Hash)>> {
    edge_spans(size)
        .into_iter()
        .map(|s| {
            let hashes = stored_hashes(log, s.level, s.first, s.count)?;
            Ok((s.height, root(&hashes)))
        })
        .collect()
}

/// The new tree state of a written, not yet committed, batch.
pub(super) struct Batch {
    pub(super) size: u64,
    pub(super) root: Hash,
    pub(super) note: String,
    pub(super) edge: Vec<(u32, Hash)>,
}

/// Write `leaves` from index `first` with their stored subtree hashes and the new signed
/// checkpoint (compare-and-swap on `first`), then commit. On failure, says whether the ledger
/// must stop (a fork, or a commit whose outcome is unknown).
pub(super) fn write_and_commit(
    mut batch: Box<dyn LogBatch + '_>,
    key: &ServiceKey,
    first: u64,
    edge: &[(u32, Hash)],
    leaves: &[&[u8]],
) -> Result<Batch, (LedgerError, bool)> {
    let mut edge = edge.to_vec();
    let mut nodes = Vec::new();
    let mut hashed = Vec::with_capacity(leaves.len());
    for (i, e) in leaves.iter().enumerate() {
        let h = leaf_hash(e);
        push_edge(&mut edge, first + i as u64, h, &mut nodes);
        hashed.push((*e, h));
    }
    let size = first + leaves.len() as u64;
    let root = edge_root(&edge);
    let note = Checkpoint::new(key.name(), size, root)
        .and_then(|c| c.sign(key))
        .map_err(|e| (LedgerError::from(e), false))?;
    let checkpoint = StoredCheckpoint {
        size,
        root: root.to_vec(),
        note,
    };
    let new = NewLeaves {
        first,
        leaves: &hashed,
        nodes: &nodes,
        checkpoint: &checkpoint,
    };
    match batch.write(&new) {
        Ok(true) => {}
        Ok(false) => return Err((LedgerError::Forked { expected: first }, true)),
        Err(e) => return Err((e.into(), false)),
    }
    // Whether a failed commit committed is unknown: only a reopen can tell.
    batch.commit().map_err(|e| (e.into(), true))?;
    Ok(Batch {
        size,
        root,
        note: checkpoint.note,
        edge,
    })
}
