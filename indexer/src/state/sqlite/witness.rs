//! The witness's tables (`witness_pledge`, `witness_signature`): a pledge's row inside the
//! append transaction, and [`VowReader::pledge`] (the latest pledge of a vow wins).

use rusqlite::{params, Connection, OptionalExtension};

use super::vows::SqliteVows;
use super::StoreError;
use crate::ledger::append::PledgeIndex;
pub use crate::state::vows::PledgeRow;

pub(super) fn put_pledge(conn: &Connection, row: &PledgeIndex<'_>) -> Result<(), StoreError> {
    conn.execute(
        "INSERT INTO witness_pledge (log_index, vow_id, wallet, at, data)
         VALUES (?1, ?2, ?3, ?4, ?5)",
        params![
            row.log_index as i64,
            row.vow_id,
            row.wallet,
            row.at as i64,
            row.leaf
        ],
    )?;
    Ok(())
}

impl SqliteVows {
    /// The current pledge of `vow_id`: its latest (`None` when it never pledged).
    pub(super) fn pledge(&self, vow_id: &str) -> Result<Option<PledgeRow>, StoreError> {
        let row: Option<(i64, Vec<u8>)> = self.with(|c| {
            c.query_row(
                "SELECT log_index, data FROM witness_pledge WHERE vow_id = ?1
                 ORDER BY log_index DESC LIMIT 1",
                params![vow_id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
        })?;
        let Some((index, leaf)) = row else {
            return Ok(None);
        };
        Ok(crate::state::vows::pledge_row(index, leaf))
    }
}
