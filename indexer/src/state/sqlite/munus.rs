//! The quest board's tables (`munus_record`, `munus_signature`): every board record as the
//! append transaction reads it (a copy of each leaf, so the jobs of one batch see the earlier
//! ones before the batch's leaves are written), a record's row, and [`MunusReader`] for the
//! renderer and the api.

use std::sync::Mutex;

use conduct_core::munus::record::BoardRecord;
use rusqlite::{params, Connection};

use super::vows::is_constraint;
use super::{Store, StoreError};
use crate::ledger::append::BoardIndex;

/// Every board record committed (and written by the earlier jobs of this transaction), in log
/// order.
pub(super) fn board_records(conn: &Connection) -> Result<Vec<(u64, BoardRecord)>, StoreError> {
    let mut st = conn.prepare_cached(
        // Not joined with `leaf`: a batch's earlier jobs are visible here before its leaves are.
        "SELECT log_index, data FROM munus_record ORDER BY log_index",
    )?;
    let rows = st.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, Vec<u8>>(1)?)))?;
    let mut out = Vec::new();
    for row in rows {
        let (i, data) = row?;
        out.extend(crate::state::board_row(i, &data));
    }
    Ok(out)
}

pub(super) fn put_board_record(
    conn: &Connection,
    row: &BoardIndex<'_>,
) -> Result<bool, StoreError> {
    let inserted = conn.execute(
        "INSERT INTO munus_record (log_index, quest_id, kind, tx, data)
         VALUES (?1, ?2, ?3, ?4, ?5)",
        params![
            row.log_index as i64,
            row.quest_id,
            row.kind,
            row.tx,
            row.leaf
        ],
    );
    match inserted {
        Ok(_) => Ok(true),
        Err(e) if is_constraint(&e) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Reads the board's records for the renderer and the api (its own connection).
pub struct MunusReader {
    conn: Mutex<Connection>,
}

impl std::fmt::Debug for MunusReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MunusReader").finish_non_exhaustive()
    }
}

impl MunusReader {
    /// A reader over a new connection to `store`.
    pub fn open(store: &Store) -> Result<MunusReader, StoreError> {
        Ok(MunusReader {
            conn: Mutex::new(store.connection()?),
        })
    }

    /// Every board record committed, in log order.
    pub fn records(&self) -> Result<Vec<(u64, BoardRecord)>, StoreError> {
        let conn = conduct_core::sync::lock(&self.conn);
        board_records(&conn)
    }
}
