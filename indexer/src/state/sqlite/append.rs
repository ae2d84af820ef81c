//! A batch of the log on SQLite ([`SqliteBatch`]): [`Append`], the statements a job runs
//! inside the log's transaction under the savepoint the ledger opens for it (the contract is
//! in [`crate::ledger::append`]), and [`LogBatch`], the savepoints, the batch's leaves and the
//! checkpoint's compare-and-swap (the contract heads [`crate::state`]). Each table group's
//! statements live with its reads (`vows`, `munus`, `nostr`, `witness`, `familiar`); the
//! single-use signatures and the per-day counts are here.

use conduct_core::munus::record::BoardRecord;
use rusqlite::{params, OptionalExtension, Transaction};

use super::vows::is_constraint;
use super::{familiar, munus, nostr, vows, witness, StoreError};
use crate::ledger::append::{
    Append, BindingIndex, BoardIndex, Daily, FamiliarIndex, PledgeIndex, PutVow, Signatures, Sworn,
    VowHead, VowIndex,
};
use crate::state::{LogBatch, NewLeaves};

/// A batch's write transaction (`BEGIN IMMEDIATE` on the ledger's connection).
pub(crate) struct SqliteBatch<'c> {
    conn: Transaction<'c>,
}

impl<'c> SqliteBatch<'c> {
    /// The batch in transaction `conn`.
    pub(crate) fn new(conn: Transaction<'c>) -> SqliteBatch<'c> {
        SqliteBatch { conn }
    }
}

impl LogBatch for SqliteBatch<'_> {
    fn savepoint(&mut self) -> Result<(), StoreError> {
        Ok(self.conn.execute_batch("SAVEPOINT job")?)
    }

    fn release(&mut self) -> Result<(), StoreError> {
        Ok(self.conn.execute_batch("RELEASE job")?)
    }

    fn rollback(&mut self) -> Result<(), StoreError> {
        Ok(self.conn.execute_batch("ROLLBACK TO job; RELEASE job")?)
    }

    fn write(&mut self, new: &NewLeaves<'_>) -> Result<bool, StoreError> {
        let written = (|| -> rusqlite::Result<usize> {
            let mut st = self
                .conn
                .prepare_cached("INSERT INTO leaf (idx, data, hash) VALUES (?1, ?2, ?3)")?;
            for (i, (e, h)) in new.leaves.iter().enumerate() {
                st.execute(params![(new.first + i as u64) as i64, e, &h[..]])?;
            }
            let mut st = self
                .conn
                .prepare_cached("INSERT INTO node (level, idx, hash) VALUES (?1, ?2, ?3)")?;
            for (level, idx, h) in new.nodes {
                st.execute(params![i64::from(*level), *idx as i64, &h[..]])?;
            }
            let to = new.checkpoint;
            self.conn.execute(
                "UPDATE checkpoint SET size = ?1, root = ?2, note = ?3 WHERE id = 1 AND size = ?4",
                params![to.size as i64, &to.root[..], to.note, new.first as i64],
            )
        })();
        match written {
            Ok(moved) => Ok(moved == 1),
            Err(e) if is_constraint(&e) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    fn commit(self: Box<Self>) -> Result<(), StoreError> {
        Ok(self.conn.commit()?)
    }
}

fn signature_table(set: Signatures) -> &'static str {
    match set {
        Signatures::Munus => "munus_signature",
        Signatures::Npub => "npub_signature",
        Signatures::Witness => "witness_signature",
        Signatures::Familiar => "familiar_signature",
    }
}

impl Append for SqliteBatch<'_> {
    fn put_vow(&mut self, vow: &VowIndex<'_>) -> Result<PutVow, StoreError> {
        vows::put_vow(&self.conn, vow)
    }

    fn vow_head(&mut self, vow_id: &str) -> Result<Option<VowHead>, StoreError> {
        vows::vow_head(&self.conn, vow_id)
    }

    fn move_head(
        &mut self,
        vow_id: &str,
        head: &VowHead,
        log_index: u64,
    ) -> Result<(), StoreError> {
        vows::move_head(&self.conn, vow_id, head, log_index)
    }

    fn use_report_signature(
        &mut self,
        signature: &str,
        vow_id: &str,
        seq: u64,
    ) -> Result<Option<u64>, StoreError> {
        vows::use_report_signature(&self.conn, signature, vow_id, seq)
    }

    fn sworn(&mut self, vow_id: &str) -> Result<Option<Sworn>, StoreError> {
        vows::sworn(&self.conn, vow_id)
    }

    fn signature_used(&mut self, set: Signatures, signature: &str) -> Result<bool, StoreError> {
        let sql = format!(
            "SELECT log_index FROM {} WHERE signature = ?1",
            signature_table(set)
        );
        let used: Option<i64> = self
            .conn
            .query_row(&sql, params![signature], |r| r.get(0))
            .optional()?;
        Ok(used.is_some())
    }

    fn use_signature(
        &mut self,
        set: Signatures,
        signature: &str,
        log_index: u64,
    ) -> Result<bool, StoreError> {
        let sql = format!(
            "INSERT INTO {} (signature, log_index) VALUES (?1, ?2)",
            signature_table(set)
        );
        match self
            .conn
            .execute(&sql, params![signature, log_index as i64])
        {
            Ok(_) => Ok(true),
            Err(e) if is_constraint(&e) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    fn count_on_day(&mut self, daily: Daily, vow_id: &str, at: u64) -> Result<u64, StoreError> {
        let table = match daily {
            Daily::Bindings => "npub_binding",
            Daily::Pledges => "witness_pledge",
        };
        let day_start = at - at % 86_400;
        let n: i64 = self.conn.query_row(
            &format!("SELECT COUNT(*) FROM {table} WHERE vow_id = ?1 AND at >= ?2 AND at < ?3"),
            params![vow_id, day_start as i64, (day_start + 86_400) as i64],
            |r| r.get(0),
        )?;
        Ok(n as u64)
    }

    fn board_records(&mut self) -> Result<Vec<(u64, BoardRecord)>, StoreError> {
        vows::board_records(&self.conn)
    }

    fn put_board_record(&mut self, row: &BoardIndex<'_>) -> Result<bool, StoreError> {
        munus::put_board_record(&self.conn, row)
    }

    fn put_binding(&mut self, row: &BindingIndex<'_>) -> Result<(), StoreError> {
        nostr::put_binding(&self.conn, row)
    }

    fn put_pledge(&mut self, row: &PledgeIndex<'_>) -> Result<(), StoreError> {
        witness::put_pledge(&self.conn, row)
    }

    fn put_familiar(&mut self, row: &FamiliarIndex<'_>) -> Result<bool, StoreError> {
        familiar::put_familiar(&self.conn, row)
    }
}
