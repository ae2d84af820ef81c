//! A batch of the log on PostgreSQL ([`PgBatch`]): [`Append`], the statements a job runs in
//! the log's transaction (the contract is in [`crate::ledger::append`]; each is the twin of
//! one in `state/sqlite`), and [`LogBatch`], the savepoints, the batch's leaves and the
//! checkpoint's compare-and-swap. A unique violation would abort the whole transaction here,
//! so each single-use insert says `ON CONFLICT DO NOTHING` and reads how many rows it added.

use conduct_core::munus::record::BoardRecord;

use super::{i64_of, u64_of, Conn};
use crate::ledger::append::{
    Append, BindingIndex, BoardIndex, Daily, FamiliarIndex, PledgeIndex, PutVow, Signatures, Sworn,
    VowHead, VowIndex,
};
use crate::state::{board_row, LogBatch, NewLeaves, StoreError};

/// A batch's transaction on the log's connection; rolled back when dropped uncommitted.
pub(super) struct PgBatch<'c> {
    conn: &'c Conn,
    open: bool,
}

impl<'c> PgBatch<'c> {
    /// The batch in the transaction just begun on `conn`.
    pub(super) fn new(conn: &'c Conn) -> PgBatch<'c> {
        PgBatch { conn, open: true }
    }
}

impl Drop for PgBatch<'_> {
    fn drop(&mut self) {
        if self.open {
            if let Err(e) = self.conn.end("ROLLBACK") {
                tracing::warn!(error = %e, "rolling back a batch failed; its connection is replaced");
                self.conn.replace();
            }
        }
    }
}

impl LogBatch for PgBatch<'_> {
    fn savepoint(&mut self) -> Result<(), StoreError> {
        self.conn.batch("SAVEPOINT job")
    }

    fn release(&mut self) -> Result<(), StoreError> {
        self.conn.batch("RELEASE SAVEPOINT job")
    }

    fn rollback(&mut self) -> Result<(), StoreError> {
        self.conn
            .batch("ROLLBACK TO SAVEPOINT job; RELEASE SAVEPOINT job")
    }

    fn write(&mut self, new: &NewLeaves<'_>) -> Result<bool, StoreError> {
        let mut idx = Vec::with_capacity(new.leaves.len());
        for i in 0..new.leaves.len() as u64 {
            idx.push(i64_of(new.first + i)?);
        }
        let data: Vec<&[u8]> = new.leaves.iter().map(|(e, _)| *e).collect();
        let hash: Vec<&[u8]> = new.leaves.iter().map(|(_, h)| &h[..]).collect();
        let added = self.conn.execute(
            "INSERT INTO leaf (idx, data, hash)
             SELECT * FROM UNNEST($1::BIGINT[], $2::BYTEA[], $3::BYTEA[])
             ON CONFLICT DO NOTHING",
            &[&idx, &data, &hash],
        )?;
        if added != new.leaves.len() as u64 {
            return Ok(false);
        }
        let mut levels = Vec::with_capacity(new.nodes.len());
        let mut at = Vec::with_capacity(new.nodes.len());
        for (level, i, _) in new.nodes {
            levels.push(i64::from(*level));
            at.push(i64_of(*i)?);
        }
        let hashes: Vec<&[u8]> = new.nodes.iter().map(|(_, _, h)| &h[..]).collect();
        let added = self.conn.execute(
            "INSERT INTO node (level, idx, hash)
             SELECT * FROM UNNEST($1::BIGINT[], $2::BIGINT[], $3::BYTEA[])
             ON CONFLICT DO NOTHING",
            &[&levels, &at, &hashes],
        )?;
        if added != new.nodes.len() as u64 {
            return Ok(false);
        }
        let to = new.checkpoint;
        let moved = self.conn.execute(
            "UPDATE checkpoint SET size = $1, root = $2, note = $3 WHERE id = 1 AND size = $4",
            &[&i64_of(to.size)?, &to.root, &to.note, &i64_of(new.first)?],
        )?;
        Ok(moved == 1)
    }

    fn commit(mut self: Box<Self>) -> Result<(), StoreError> {
        self.open = false;
        self.conn.end("COMMIT")
    }
}

fn signature_table(set: Signatures) -> (&'static str, &'static str) {
    match set {
        Signatures::Munus => (
            "SELECT 1 FROM munus_signature WHERE signature = $1",
            "INSERT INTO munus_signature (signature, log_index) VALUES ($1, $2)
             ON CONFLICT DO NOTHING",
        ),
        Signatures::Npub => (
            "SELECT 1 FROM npub_signature WHERE signature = $1",
            "INSERT INTO npub_signature (signature, log_index) VALUES ($1, $2)
             ON CONFLICT DO NOTHING",
        ),
        Signatures::Witness => (
            "SELECT 1 FROM witness_signature WHERE signature = $1",
            "INSERT INTO witness_signature (signature, log_index) VALUES ($1, $2)
             ON CONFLICT DO NOTHING",
        ),
        Signatures::Familiar => (
            "SELECT 1 FROM familiar_signature WHERE signature = $1",
            "INSERT INTO familiar_signature (signature, log_index) VALUES ($1, $2)
             ON CONFLICT DO NOTHING",
        ),
    }
}

impl Append for PgBatch<'_> {
    fn put_vow(&mut self, vow: &VowIndex<'_>) -> Result<PutVow, StoreError> {
        let added = self.conn.execute(
            "INSERT INTO vow (vow_id, log_index, agent, text, sealed, sandbox, wallet,
                signed_message, cadence_seconds, created_at, head_seq, head_hash, head_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 0, $11, $10)
             ON CONFLICT DO NOTHING",
            &[
                &vow.vow_id,
                &i64_of(vow.log_index)?,
                &vow.agent,
                &vow.text,
                &vow.sealed,
                &vow.sandbox,
                &vow.wallet,
                &vow.signed_message,
                &i64_of(vow.cadence_seconds)?,
                &i64_of(vow.at)?,
                &vow.head_hash,
            ],
        )?;
        if added == 1 {
            return Ok(PutVow::Indexed);
        }
        let existing = self.conn.query_opt(
            "SELECT vow_id FROM vow WHERE signed_message = $1",
            &[&vow.signed_message],
        )?;
        Ok(match existing {
            Some(row) => PutVow::TakenAs(row.try_get(0)?),
            None => PutVow::Collision,
        })
    }

    fn vow_head(&mut self, vow_id: &str) -> Result<Option<VowHead>, StoreError> {
        let row = self.conn.query_opt(
            "SELECT head_seq, head_hash, head_at FROM vow WHERE vow_id = $1",
            &[&vow_id],
        )?;
        row.map(|r| {
            Ok(VowHead {
                seq: u64_of(r.try_get(0)?, "seq")?,
                hash: r.try_get(1)?,
                at: u64_of(r.try_get(2)?, "instant")?,
            })
        })
        .transpose()
    }

    fn move_head(
        &mut self,
        vow_id: &str,
        head: &VowHead,
        log_index: u64,
    ) -> Result<(), StoreError> {
        let (seq, at) = (i64_of(head.seq)?, i64_of(head.at)?);
        self.conn.execute(
            "UPDATE vow SET head_seq = $2, head_hash = $3, head_at = $4 WHERE vow_id = $1",
            &[&vow_id, &seq, &head.hash, &at],
        )?;
        self.conn.execute(
            "INSERT INTO vow_entry (vow_id, seq, log_index, at) VALUES ($1, $2, $3, $4)",
            &[&vow_id, &seq, &i64_of(log_index)?, &at],
        )?;
        Ok(())
    }

    fn use_report_signature(
        &mut self,
        signature: &str,
        vow_id: &str,
        seq: u64,
    ) -> Result<Option<u64>, StoreError> {
        let added = self.conn.execute(
            "INSERT INTO report_signature (signature, vow_id, seq) VALUES ($1, $2, $3)
             ON CONFLICT DO NOTHING",
            &[&signature, &vow_id, &i64_of(seq)?],
        )?;
        if added == 1 {
            return Ok(None);
        }
        let first = self.conn.query_opt(
            "SELECT seq FROM report_signature WHERE signature = $1",
            &[&signature],
        )?;
        match first {
            Some(row) => Ok(Some(u64_of(row.try_get(0)?, "seq")?)),
            None => Ok(Some(0)),
        }
    }

    fn sworn(&mut self, vow_id: &str) -> Result<Option<Sworn>, StoreError> {
        let row = self.conn.query_opt(
            "SELECT sandbox, wallet FROM vow WHERE vow_id = $1",
            &[&vow_id],
        )?;
        row.map(|r| {
            Ok(Sworn {
                sandbox: r.try_get(0)?,
                wallet: r.try_get(1)?,
            })
        })
        .transpose()
    }

    fn signature_used(&mut self, set: Signatures, signature: &str) -> Result<bool, StoreError> {
        let (select, _) = signature_table(set);
        Ok(self.conn.query_opt(select, &[&signature])?.is_some())
    }

    fn use_signature(
        &mut self,
        set: Signatures,
        signature: &str,
        log_index: u64,
    ) -> Result<bool, StoreError> {
        let (_, insert) = signature_table(set);
        let added = self
            .conn
            .execute(insert, &[&signature, &i64_of(log_index)?])?;
        Ok(added == 1)
    }

    fn count_on_day(&mut self, daily: Daily, vow_id: &str, at: u64) -> Result<u64, StoreError> {
        let sql = match daily {
            Daily::Bindings => {
                "SELECT COUNT(*) FROM npub_binding WHERE vow_id = $1 AND at >= $2 AND at < $3"
            }
            Daily::Pledges => {
                "SELECT COUNT(*) FROM witness_pledge WHERE vow_id = $1 AND at >= $2 AND at < $3"
            }
        };
        let day_start = at - at % 86_400;
        let row = self
            .conn
            .query_opt(
                sql,
                &[&vow_id, &i64_of(day_start)?, &i64_of(day_start + 86_400)?],
            )?
            .ok_or_else(|| StoreError::Corrupt("no row from a count".into()))?;
        u64_of(row.try_get(0)?, "count")
    }

    fn board_records(&mut self) -> Result<Vec<(u64, BoardRecord)>, StoreError> {
        // Not joined with `leaf`: a batch's earlier jobs are visible here before its leaves are.
        let rows = self.conn.query(
            "SELECT log_index, data FROM munus_record ORDER BY log_index",
            &[],
        )?;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            let (index, data): (i64, Vec<u8>) = (row.try_get(0)?, row.try_get(1)?);
            out.extend(board_row(index, &data));
        }
        Ok(out)
    }

    fn put_board_record(&mut self, row: &BoardIndex<'_>) -> Result<bool, StoreError> {
        let added = self.conn.execute(
            "INSERT INTO munus_record (log_index, quest_id, kind, tx, data)
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
            &[
                &i64_of(row.log_index)?,
                &row.quest_id,
                &row.kind,
                &row.tx,
                &row.leaf,
            ],
        )?;
        Ok(added == 1)
    }

    fn put_binding(&mut self, row: &BindingIndex<'_>) -> Result<(), StoreError> {
        self.conn.execute(
            "INSERT INTO npub_binding (log_index, npub, pubkey, vow_id, at)
             VALUES ($1, $2, $3, $4, $5)",
            &[
                &i64_of(row.log_index)?,
                &row.npub,
                &row.pubkey,
                &row.vow_id,
                &i64_of(row.at)?,
            ],
        )?;
        Ok(())
    }

    fn put_pledge(&mut self, row: &PledgeIndex<'_>) -> Result<(), StoreError> {
        self.conn.execute(
            "INSERT INTO witness_pledge (log_index, vow_id, wallet, at, data)
             VALUES ($1, $2, $3, $4, $5)",
            &[
                &i64_of(row.log_index)?,
                &row.vow_id,
                &row.wallet,
                &i64_of(row.at)?,
                &row.leaf,
            ],
        )?;
        Ok(())
    }

    fn put_familiar(&mut self, row: &FamiliarIndex<'_>) -> Result<bool, StoreError> {
        let added = self.conn.execute(
            "INSERT INTO familiar (familiar_id, log_index, owner_wallet, owner_vow, at, data)
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING",
            &[
                &row.familiar_id,
                &i64_of(row.log_index)?,
                &row.owner_wallet,
                &row.owner_vow,
                &i64_of(row.at)?,
                &row.leaf,
            ],
        )?;
        Ok(added == 1)
    }
}
