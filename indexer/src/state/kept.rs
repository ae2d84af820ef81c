//! The State seam's two side tables, apart from the log and never rendered: donated traces
//! ([`DonatedTraces`], the only place a trace's reasoning and actions are ever kept, by the
//! agent's choice) and the renderer's resume points ([`ResumePoints`], derived data).
//!
//! An implementation promises:
//! - [`DonatedTraces::put`] returns `Ok` only once the trace is durably committed: the entry
//!   naming it is appended after. A trace donated twice for a vow is kept once.
//! - A resume point is derived: a backend may lose the last ones in a crash (SQLite keeps them
//!   with `synchronous=NORMAL`), which costs one full read of a vow's chain, never a wrong
//!   page. [`ResumePoints::get`] answers only a point written by the same renderer whose
//!   bytes hash to the SHA-256 kept beside them ([`taken`]).
//!
//! Four methods in all.

use conduct_core::canonical::sha256_hex;

use super::StoreError;

/// Donated raw traces.
pub trait DonatedTraces: Send + Sync + std::fmt::Debug {
    /// Keep a donated trace (its canonical bytes), durably, before the entry naming it is
    /// appended.
    fn put(
        &self,
        vow_id: &str,
        trace_sha256: &str,
        trace: &[u8],
        at: u64,
    ) -> Result<(), StoreError>;

    /// How many traces are kept.
    fn count(&self) -> Result<u64, StoreError>;
}

/// One vow's resume point: its render state after the first `records` records of its chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResumePoint {
    /// Records of the chain (from its vow record) the state has taken.
    pub records: u64,
    /// The state, as the renderer wrote it.
    pub state: Vec<u8>,
}

/// The renderer's resume points, one per vow.
pub trait ResumePoints: Send + Sync + std::fmt::Debug {
    /// Vow `vow_id`'s resume point, if one written by `render` is kept and intact.
    fn get(&self, vow_id: &str, render: &str) -> Result<Option<ResumePoint>, StoreError>;

    /// Keep `points` (vow id and resume point), written by `render`, in one transaction,
    /// each replacing the vow's point before it.
    fn put_many(&self, render: &str, points: &[(String, ResumePoint)]) -> Result<(), StoreError>;
}

/// A kept row as the point it holds, or `None` when its bytes do not hash to `sha256`
/// (logged) or it covers no record: how every backend reads a resume point.
pub(crate) fn taken(
    vow_id: &str,
    records: i64,
    sha256: &str,
    state: Vec<u8>,
) -> Option<ResumePoint> {
    let intact = sha256_hex(&state) == sha256;
    if !intact {
        tracing::warn!(vow_id, "a resume point does not match its hash; not taken");
    }
    (intact && records > 0).then_some(ResumePoint {
        records: records as u64,
        state,
    })
}
