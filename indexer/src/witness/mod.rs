//! The witness in the store (library/WITNESS.md): the job that appends a vow's pledge of
//! portfolio limits, the read of a vow's current (latest) pledge, and [`chain`], the read of a
//! wallet's ERC-20 transfers and balances over a window that a reading checks the pledge
//! against.
//!
//! [`pledge_job`] appends a `conduct.witness-pledge/v1` record through the
//! [`crate::ledger::Sequencer`], re-checking inside the append transaction that the vow exists,
//! is signed (not sandbox) with the record's wallet, that the signature was not used before
//! and that the vow is within its daily share of pledges. Rows of `witness_pledge` keep each
//! record (the latest of a vow wins).

pub mod chain;

use conduct_core::signing::ServiceKey;
use conduct_core::witness::record::Pledge;
use rusqlite::{params, ErrorCode, OptionalExtension};

use crate::ledger::{Job, Refused};
use crate::store::StoreError;
use crate::vows::VowReader;

/// Most pledges one vow makes per UTC day.
pub const MAX_PLEDGES_PER_DAY: u64 = 10;

/// The job that appends `rec`, refused (nothing written) when, inside the append transaction:
///
/// - its signature was recorded by an earlier pledge: `Refused::Conflict("witness-pledge-replayed")`
///   (checked first);
/// - the vow does not exist: `Refused::NotFound`;
/// - the vow is sandbox: `Refused::Conflict("witness-sandbox-vow")`;
/// - its wallet is not the record's: `Refused::Conflict("witness-wrong-wallet")`;
/// - the vow already pledged [`MAX_PLEDGES_PER_DAY`] times on the record's UTC day:
///   `Refused::Conflict("witness-pledge-daily-limit")`.
///
/// The signature itself is checked by the caller before it submits the job.
pub fn pledge_job(key: ServiceKey, rec: Pledge) -> Job {
    Job::Build(Box::new(move |conn, index| {
        let conflict = |s: &str| Err(Refused::Conflict(s.to_owned()));
        let sig = rec.wallet_signature.to_ascii_lowercase();
        let used: Option<i64> = conn
            .query_row(
                "SELECT log_index FROM witness_signature WHERE signature = ?1",
                params![sig],
                |r| r.get(0),
            )
            .optional()?;
        if used.is_some() {
            return conflict("witness-pledge-replayed");
        }
        crate::vows::require_sworn(conn, &rec.vow_id, &rec.wallet, "witness")?;
        let day_start = rec.at - rec.at % 86_400;
        let today: i64 = conn.query_row(
            "SELECT COUNT(*) FROM witness_pledge WHERE vow_id = ?1 AND at >= ?2 AND at < ?3",
            params![rec.vow_id, day_start as i64, (day_start + 86_400) as i64],
            |r| r.get(0),
        )?;
        if today as u64 >= MAX_PLEDGES_PER_DAY {
            return conflict("witness-pledge-daily-limit");
        }
        let leaf = rec.leaf(&key, index).map_err(|e| Refused::Invalid(e.0))?;
        conn.execute(
            "INSERT INTO witness_pledge (log_index, vow_id, wallet, at, data)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![
                index as i64,
                rec.vow_id,
                rec.wallet.to_ascii_lowercase(),
                rec.at as i64,
                leaf
            ],
        )?;
        let stored = conn.execute(
            "INSERT INTO witness_signature (signature, log_index) VALUES (?1, ?2)",
            params![sig, index as i64],
        );
        if matches!(&stored, Err(rusqlite::Error::SqliteFailure(e, _)) if e.code == ErrorCode::ConstraintViolation)
        {
            return conflict("witness-pledge-replayed");
        }
        stored?;
        Ok(leaf)
    }))
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

#[cfg(test)]
mod tests;
