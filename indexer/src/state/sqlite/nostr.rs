//! The npub bindings' tables (`npub_binding`, `npub_signature`): the binding's row inside the
//! append transaction, and [`VowReader`]'s binding reads (the latest binding of an npub wins).

use rusqlite::{params, Connection};

use super::vows::SqliteVows;
use super::StoreError;
use crate::ledger::append::BindingIndex;
pub use crate::state::vows::BindingRow;

pub(super) fn put_binding(conn: &Connection, row: &BindingIndex<'_>) -> Result<(), StoreError> {
    conn.execute(
        "INSERT INTO npub_binding (log_index, npub, pubkey, vow_id, at)
         VALUES (?1, ?2, ?3, ?4, ?5)",
        params![
            row.log_index as i64,
            row.npub,
            row.pubkey,
            row.vow_id,
            row.at as i64
        ],
    )?;
    Ok(())
}

fn binding_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<BindingRow> {
    Ok(BindingRow {
        npub: r.get(0)?,
        pubkey: r.get(1)?,
        vow_id: r.get(2)?,
        log_index: r.get::<_, i64>(3)? as u64,
        at: r.get::<_, i64>(4)? as u64,
    })
}

/// The current binding of each npub: its latest record.
const CURRENT: &str = "SELECT npub, pubkey, vow_id, log_index, at FROM npub_binding b
     WHERE log_index = (SELECT MAX(log_index) FROM npub_binding c WHERE c.npub = b.npub)";

impl SqliteVows {
    /// The current binding of `npub` (its latest; `None` when it was never bound here).
    pub(super) fn binding(&self, npub: &str) -> Result<Option<BindingRow>, StoreError> {
        use rusqlite::OptionalExtension;
        self.with(|c| {
            c.query_row(
                "SELECT npub, pubkey, vow_id, log_index, at FROM npub_binding WHERE npub = ?1
                 ORDER BY log_index DESC LIMIT 1",
                params![npub],
                binding_row,
            )
            .optional()
        })
    }

    /// The npubs whose current binding names `vow_id`, oldest binding first.
    pub(super) fn npubs_of(&self, vow_id: &str) -> Result<Vec<BindingRow>, StoreError> {
        self.with(|c| {
            let mut st =
                c.prepare_cached(&format!("{CURRENT} AND vow_id = ?1 ORDER BY log_index"))?;
            let rows = st.query_map(params![vow_id], binding_row)?;
            rows.collect()
        })
    }

    /// Every npub bound here, with its current binding, by npub.
    pub(super) fn bindings(&self) -> Result<Vec<BindingRow>, StoreError> {
        self.with(|c| {
            let mut st = c.prepare_cached(&format!("{CURRENT} ORDER BY npub"))?;
            let rows = st.query_map([], binding_row)?;
            rows.collect()
        })
    }

    /// The npubs bound at log index `from` or later (their `/who` and card pages change), by
    /// npub.
    pub(super) fn npubs_bound_since(&self, from: u64) -> Result<Vec<String>, StoreError> {
        self.with(|c| {
            let mut st = c.prepare_cached(
                "SELECT DISTINCT npub FROM npub_binding WHERE log_index >= ?1 ORDER BY npub",
            )?;
            let rows = st.query_map(params![from as i64], |r| r.get(0))?;
            rows.collect()
        })
    }

    /// Every npub ever bound to `vow_id` (current or moved away since), by npub.
    pub(super) fn npubs_ever_of(&self, vow_id: &str) -> Result<Vec<String>, StoreError> {
        self.with(|c| {
            let mut st = c.prepare_cached(
                "SELECT DISTINCT npub FROM npub_binding WHERE vow_id = ?1 ORDER BY npub",
            )?;
            let rows = st.query_map(params![vow_id], |r| r.get(0))?;
            rows.collect()
        })
    }
}
