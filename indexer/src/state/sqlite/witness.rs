//! The witness's tables (`witness_pledge`, `witness_signature`): a pledge's row inside the
//! append transaction, and [`VowReader::pledge`] (the latest pledge of a vow wins).

use conduct_core::record::Logged;
use conduct_core::witness::record::Pledge;
use rusqlite::{params, Connection, OptionalExtension};

use super::vows::VowReader;
use super::StoreError;
use crate::ledger::append::PledgeIndex;

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

/// A vow's current pledge as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PledgeRow {
    /// Log index of the pledge record.
    pub log_index: u64,
    /// The record.
    pub pledge: Pledge,
    /// Its leaf bytes (the signed record).
    pub leaf: Vec<u8>,
}

impl VowReader {
    /// The current pledge of `vow_id`: its latest (`None` when it never pledged).
    pub fn pledge(&self, vow_id: &str) -> Result<Option<PledgeRow>, StoreError> {
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
        let parsed = serde_json::from_slice::<serde_json::Value>(&leaf)
            .ok()
            .and_then(|v| Pledge::parse(&v).ok().flatten());
        match parsed {
            Some((log_index, pledge)) => Ok(Some(PledgeRow {
                log_index,
                pledge,
                leaf,
            })),
            None => {
                tracing::error!(
                    log_index = index,
                    "a witness_pledge row names no pledge record"
                );
                Ok(None)
            }
        }
    }
}
