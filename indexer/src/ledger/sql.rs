//! The ledger's SQL: the statements and row access (stored hashes and entries, tile and
//! bundle bytes, the right edge rebuilt from stored hashes) and writing and committing a batch.

use conduct_core::signing::ServiceKey;
use conduct_core::tlog::{
    edge_root, edge_spans, encode_bundle, leaf_hash, push_edge, root, Checkpoint, Hash, Tile,
    TILE_WIDTH,
};
use rusqlite::{params, Connection, ErrorCode};

use super::{LedgerError, Result};

pub(super) fn to_hash(bytes: &[u8]) -> Result<Hash> {
    bytes
        .try_into()
        .map_err(|_| LedgerError::Corrupt(format!("stored hash of {} bytes", bytes.len())))
}

pub(super) fn to_u64(n: i64, what: &str) -> Result<u64> {
    u64::try_from(n).map_err(|_| LedgerError::Corrupt(format!("negative {what} {n}")))
}

pub(super) fn to_i64(n: u64) -> Result<i64> {
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
pub(super) fn tile_bytes(conn: &Connection, tile: Tile) -> Result<Vec<u8>> {
    let first = tile.index * u64::from(TILE_WIDTH);
    Ok(stored_hashes(conn, tile.level, first, u64::from(tile.width))?.concat())
}

/// Bytes of the entry bundle with the index and width of level-0 tile `tile`.
pub(super) fn bundle_bytes(conn: &Connection, tile: Tile) -> Result<Vec<u8>> {
    let first = tile.index * u64::from(TILE_WIDTH);
    let entries = stored_entries(conn, first, u64::from(tile.width))?;
    encode_bundle(&entries).map_err(|e| LedgerError::Corrupt(e.to_string()))
}

/// Entry `idx`.
/// Byte length of the entry bundle with the index and width of level-0 tile `tile` (a u16
/// length before each entry).
pub(super) fn bundle_len(conn: &Connection, tile: Tile) -> Result<u64> {
    let first = tile.index * u64::from(TILE_WIDTH);
    let (lo, hi) = (to_i64(first)?, to_i64(first + u64::from(tile.width))?);
    let len: i64 = conn.query_row(
        "SELECT COALESCE(SUM(length(data)) + 2 * COUNT(*), 0) FROM leaf WHERE idx >= ?1 AND idx < ?2",
        params![lo, hi],
        |r| r.get(0),
    )?;
    to_u64(len, "length")
}

pub(super) fn stored_entry(conn: &Connection, idx: u64) -> Result<Vec<u8>> {
    stored_entries(conn, idx, 1)?
        .pop()
        .ok_or_else(|| LedgerError::Corrupt(format!("entry {idx} missing")))
}

/// The right edge of the tree of `size` leaves, rebuilt from stored hashes: its perfect
/// subtrees as (height, hash), largest (leftmost) first.
pub(super) fn edge_for_size(conn: &Connection, size: u64) -> Result<Vec<(u32, Hash)>> {
    edge_spans(size)
        .into_iter()
        .map(|s| {
            let hashes = stored_hashes(conn, s.level, s.first, s.count)?;
            Ok((s.height, root(&hashes)))
        })
        .collect()
}

fn is_constraint(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(f, _) if f.code == ErrorCode::ConstraintViolation)
}

/// The new tree state of a written, not yet committed, batch.
pub(super) struct Batch {
    pub(super) size: u64,
    pub(super) root: Hash,
    pub(super) note: String,
    pub(super) edge: Vec<(u32, Hash)>,
}

/// Commit a written batch. On failure, says whether the ledger must stop (a fork, or a
/// commit whose outcome is unknown).
pub(super) fn commit_batch(
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
pub(super) fn write_batch(
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
