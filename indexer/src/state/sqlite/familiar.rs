//! The familiars' tables (`familiar`, `familiar_signature`): a familiar's row inside the
//! append transaction, and [`VowReader`]'s reads of the familiars recorded.

use rusqlite::{params, Connection, OptionalExtension};

use super::vows::{is_constraint, SqliteVows};
use super::StoreError;
use crate::ledger::append::FamiliarIndex;
pub use crate::state::vows::FamiliarRow;

pub(super) fn put_familiar(conn: &Connection, row: &FamiliarIndex<'_>) -> Result<bool, StoreError> {
    let stored = conn.execute(
        "INSERT INTO familiar (familiar_id, log_index, owner_wallet, owner_vow, at, data)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            row.familiar_id,
            row.log_index as i64,
            row.owner_wallet,
            row.owner_vow,
            row.at as i64,
            row.leaf
        ],
    );
    match stored {
        Ok(_) => Ok(true),
        Err(e) if is_constraint(&e) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

fn familiar_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<FamiliarRow> {
    Ok(FamiliarRow {
        familiar_id: r.get(0)?,
        log_index: r.get::<_, i64>(1)? as u64,
        at: r.get::<_, i64>(2)? as u64,
        leaf: r.get(3)?,
    })
}

impl SqliteVows {
    /// The familiar `id` (`None` when there is none).
    pub(super) fn familiar(&self, id: &str) -> Result<Option<FamiliarRow>, StoreError> {
        self.with(|c| {
            c.query_row(
                "SELECT familiar_id, log_index, at, data FROM familiar WHERE familiar_id = ?1",
                params![id],
                familiar_row,
            )
            .optional()
        })
    }

    /// Every familiar, in log order.
    pub(super) fn familiars(&self) -> Result<Vec<FamiliarRow>, StoreError> {
        self.with(|c| {
            let mut st = c.prepare_cached(
                "SELECT familiar_id, log_index, at, data FROM familiar ORDER BY log_index",
            )?;
            let rows = st.query_map([], familiar_row)?;
            rows.collect()
        })
    }
}
