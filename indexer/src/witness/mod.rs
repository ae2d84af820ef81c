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

use conduct_core::record::Logged;
use conduct_core::signing::ServiceKey;
use conduct_core::witness::record::Pledge;

use crate::ledger::append::{Daily, OwnerRecord, PledgeIndex, Signatures};
use crate::ledger::{Job, Refusal};

pub use crate::store::witness::PledgeRow;

/// Most pledges one vow makes per UTC day.
pub use conduct_core::owner::MAX_PLEDGES_PER_DAY;

/// The job that appends `rec`, refused (nothing written) when, inside the append transaction:
///
/// - its signature was recorded by an earlier pledge: [`Refusal::WitnessPledgeReplayed`]
///   (checked first);
/// - the vow does not exist, is sandbox, or its wallet is not the record's:
///   [`Refusal::UnknownVow`], [`Refusal::SandboxVow`], [`Refusal::WrongWallet`];
/// - the vow already pledged [`MAX_PLEDGES_PER_DAY`] times on the record's UTC day:
///   [`Refusal::WitnessPledgeDailyLimit`].
///
/// The signature itself is checked by the caller before it submits the job.
pub fn pledge_job(key: ServiceKey, rec: Pledge) -> Job {
    Job::build(move |tx, index| {
        let sig = rec.wallet_signature.to_ascii_lowercase();
        if tx.signature_used(Signatures::Witness, &sig)? {
            return Err(Refusal::WitnessPledgeReplayed);
        }
        tx.require_sworn(&rec.vow_id, &rec.wallet, OwnerRecord::Witness)?;
        if tx.count_on_day(Daily::Pledges, &rec.vow_id, rec.at)? >= MAX_PLEDGES_PER_DAY {
            return Err(Refusal::WitnessPledgeDailyLimit);
        }
        let leaf = rec.leaf(&key, index).map_err(|e| Refusal::Invalid(e.0))?;
        tx.put_pledge(&PledgeIndex {
            log_index: index,
            vow_id: &rec.vow_id,
            wallet: rec.wallet.to_ascii_lowercase(),
            at: rec.at,
            leaf: &leaf,
        })?;
        if !tx.use_signature(Signatures::Witness, &sig, index)? {
            return Err(Refusal::WitnessPledgeReplayed);
        }
        Ok(leaf)
    })
}

#[cfg(test)]
mod tests;
