//! The quest board's tables (`munus_record`, `munus_signature`): every board record as the
//! append transaction reads it (a copy of each leaf, so the jobs of one batch see the earlier
//! ones before the batch's leaves are written), a record's row, and [`MunusReader`] for the
//! renderer and the api.

use rusqlite::{params, Connection};

use super::vows::is_constraint;
use super::{Store, StoreError};
use crate::ledger::append::BoardIndex;
pub use crate::state::vows::MunusReader;

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

impl MunusReader {
    /// The board's reads of the SQLite store `store`.
    pub fn open(store: &Store) -> Result<MunusReader, StoreError> {
        Ok(MunusReader::new(super::vows::VowReader::open(store)?))
    }
}
