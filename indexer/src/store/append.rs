//! [`Append`] on SQLite: the statements a job runs inside the log's transaction, over the
//! savepoint the ledger opens for it (the contract is in [`crate::ledger::append`]). Each
//! table group's statements live with its reads (`vows`, `munus`, `nostr`, `witness`,
//! `familiar`); the single-use signatures and the per-day counts are here.

use conduct_core::munus::record::BoardRecord;
use rusqlite::{params, Connection, OptionalExtension};

use super::vows::is_constraint;
use super::{familiar, munus, nostr, vows, witness, StoreError};
use crate::ledger::append::{
    Append, BindingIndex, BoardIndex, Daily, FamiliarIndex, PledgeIndex, PutVow, Signatures, Sworn,
    VowHead, VowIndex,
};

/// A job's view of the append transaction: the savepoint the ledger opened for it.
pub(crate) struct SqliteAppend<'c> {
    conn: &'c Connection,
}

impl<'c> SqliteAppend<'c> {
    /// The view over `conn` (a savepoint of the batch's transaction).
    pub(crate) fn new(conn: &'c Connection) -> SqliteAppend<'c> {
        SqliteAppend { conn }
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

impl Append for SqliteAppend<'_> {
    fn put_vow(&mut self, vow: &VowIndex<'_>) -> Result<PutVow, StoreError> {
        vows::put_vow(self.conn, vow)
    }

    fn vow_head(&mut self, vow_id: &str) -> Result<Option<VowHead>, StoreError> {
        vows::vow_head(self.conn, vow_id)
    }

    fn move_head(
        &mut self,
        vow_id: &str,
        head: &VowHead,
        log_index: u64,
    ) -> Result<(), StoreError> {
        vows::move_head(self.conn, vow_id, head, log_index)
    }

    fn use_report_signature(
        &mut self,
        signature: &str,
        vow_id: &str,
        seq: u64,
    ) -> Result<Option<u64>, StoreError> {
        vows::use_report_signature(self.conn, signature, vow_id, seq)
    }

    fn sworn(&mut self, vow_id: &str) -> Result<Option<Sworn>, StoreError> {
        vows::sworn(self.conn, vow_id)
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
        munus::board_records(self.conn)
    }

    fn put_board_record(&mut self, row: &BoardIndex<'_>) -> Result<bool, StoreError> {
        munus::put_board_record(self.conn, row)
    }

    fn put_binding(&mut self, row: &BindingIndex<'_>) -> Result<(), StoreError> {
        nostr::put_binding(self.conn, row)
    }

    fn put_pledge(&mut self, row: &PledgeIndex<'_>) -> Result<(), StoreError> {
        witness::put_pledge(self.conn, row)
    }

    fn put_familiar(&mut self, row: &FamiliarIndex<'_>) -> Result<bool, StoreError> {
        familiar::put_familiar(self.conn, row)
    }
}
