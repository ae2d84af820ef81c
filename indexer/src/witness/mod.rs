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

use crate::ledger::append::{Daily, PledgeIndex, Signatures};
use crate::ledger::{Job, Refused};

pub use crate::store::witness::PledgeRow;

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
    Job::build(move |tx, index| {
        let conflict = |s: &str| Err(Refused::Conflict(s.to_owned()));
        let sig = rec.wallet_signature.to_ascii_lowercase();
        if tx.signature_used(Signatures::Witness, &sig)? {
            return conflict("witness-pledge-replayed");
        }
        tx.require_sworn(&rec.vow_id, &rec.wallet, "witness")?;
        if tx.count_on_day(Daily::Pledges, &rec.vow_id, rec.at)? >= MAX_PLEDGES_PER_DAY {
            return conflict("witness-pledge-daily-limit");
        }
        let leaf = rec.leaf(&key, index).map_err(|e| Refused::Invalid(e.0))?;
        tx.put_pledge(&PledgeIndex {
            log_index: index,
            vow_id: &rec.vow_id,
            wallet: rec.wallet.to_ascii_lowercase(),
            at: rec.at,
            leaf: &leaf,
        })?;
        if !tx.use_signature(Signatures::Witness, &sig, index)? {
            return conflict("witness-pledge-replayed");
        }
        Ok(leaf)
    })
}

#[cfg(test)]
mod tests;
