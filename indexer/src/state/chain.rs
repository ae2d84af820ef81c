//! The State seam's chain index: what the chain follower read from the chain (the registry's
//! and the reputation record's events, each at its block number, block hash and log index),
//! where it is (the cursor, and recent anchors for finding a common ancestor after a reorg),
//! and the registry's manifest checks. Tools and scores are folded from their events on read
//! ([`crate::chain::registry::fold`], [`crate::chain::reputation::fold`]), so a rewind is a
//! delete of the events above the common ancestor and nothing else can go stale.
//!
//! An implementation promises:
//! - **Rows and cursor move together.** [`ChainIndex::apply_all`] and [`ChainIndex::rewind`]
//!   each run in one transaction and return only once it is durably committed: a crash
//!   leaves the index at a cursor with exactly the events below it.
//! - **One chain per index.** A backend is opened for an identity (chain id, addresses,
//!   start blocks); an index written for another identity is emptied at open, since its
//!   cursor means nothing for this chain.
//! - **Anchors are bounded**: the newest [`ANCHORS_KEPT`] are kept.
//! - **Failures are errors**, never an empty answer (a chain index that is down is a
//!   registry page not re-rendered, never one emptied).
//!
//! Eleven methods (three more are provided).

use std::collections::{BTreeSet, HashMap};

use super::StoreError;
use crate::chain::registry::{RegistryEvent, Tool};
use crate::chain::reputation::ReputationEvent;

/// Anchors kept for finding the common ancestor after a reorg.
pub const ANCHORS_KEPT: u64 = 1024;

/// The follower's position: the highest block indexed, and its hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    /// Block number.
    pub number: u64,
    /// Block hash (0x + 64 lower-case hex).
    pub hash: String,
    /// Unix seconds of the last poll that succeeded.
    pub synced_at: u64,
}

/// A manifest check as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// The metadataURI checked.
    pub uri: String,
    /// The on-chain manifestHash it was checked against.
    pub hash: String,
    /// `verified`, `unreachable`, `hash-mismatch`, ...
    pub status: String,
    /// A stable reason for anything but `verified` (`redirect`, `http-status`, `refused`,
    /// `timeout`, `bom`, `not-nfc`, ...).
    pub reason: Option<String>,
    /// keccak256 of the canonical manifest, when it was fetched and hashable.
    pub computed: Option<String>,
    /// Why, for anything but `verified`.
    pub detail: Option<String>,
    /// The manifest's claims (JSON object: name, description, endpoint).
    pub claims: String,
    /// Unix seconds.
    pub checked_at: u64,
}

/// The tools and the wallets (credited, slashed) a write or a rewind touched.
pub type Touched = (BTreeSet<u64>, BTreeSet<String>);

/// The chain index of one chain.
pub trait ChainIndex: Send + Sync + std::fmt::Debug {
    /// The cursor, if anything was indexed yet.
    fn cursor(&self) -> Result<Option<Cursor>, StoreError>;

    /// Append registry `events` and reputation events `rep` (all in blocks up to `to`), move
    /// the cursor to `to` (hash `hash`, synced at `now`) and keep `to` as an anchor, in one
    /// transaction. An event already kept at its (block, log index) is replaced.
    fn apply_all(
        &self,
        events: &[RegistryEvent],
        rep: &[ReputationEvent],
        to: u64,
        hash: &str,
        now: u64,
    ) -> Result<Touched, StoreError>;

    /// Record a successful poll at `now` that indexed nothing new.
    fn synced(&self, now: u64) -> Result<(), StoreError>;

    /// Known (block number, hash) pairs, highest first: the anchors and the blocks of the
    /// stored events.
    fn anchors(&self) -> Result<Vec<(u64, String)>, StoreError>;

    /// Forget everything above `ancestor` (all of it when `None`) and put the cursor there
    /// (none when `None`), in one transaction.
    fn rewind(&self, ancestor: Option<(u64, String)>, now: u64) -> Result<Touched, StoreError>;

    /// Every reputation event, in chain order.
    fn reputation_events(&self) -> Result<Vec<ReputationEvent>, StoreError>;

    /// Every registry event of tool `id`, in chain order.
    fn events_of(&self, id: u64) -> Result<Vec<RegistryEvent>, StoreError>;

    /// Every registry event, in chain order.
    fn events(&self) -> Result<Vec<RegistryEvent>, StoreError>;

    /// The stored check of tool `id`.
    fn check(&self, id: u64) -> Result<Option<Check>, StoreError>;

    /// Every stored check, by tool id.
    fn checks(&self) -> Result<HashMap<u64, Check>, StoreError>;

    /// Store (replace) the check of tool `id`.
    fn put_check(&self, id: u64, c: &Check) -> Result<(), StoreError>;

    /// Append registry `events` and move the cursor ([`ChainIndex::apply_all`] without
    /// reputation events); the tools they touch.
    fn apply(
        &self,
        events: &[RegistryEvent],
        to: u64,
        hash: &str,
        now: u64,
    ) -> Result<BTreeSet<u64>, StoreError> {
        Ok(self.apply_all(events, &[], to, hash, now)?.0)
    }

    /// Every tool, folded from its events, by id.
    fn tools(&self) -> Result<Vec<Tool>, StoreError> {
        Ok(crate::chain::registry::fold(&self.events()?))
    }

    /// Tool `id`, folded from its events; `None` when the chain (as indexed) has no such tool.
    fn tool(&self, id: u64) -> Result<Option<Tool>, StoreError> {
        Ok(crate::chain::registry::fold(&self.events_of(id)?)
            .into_iter()
            .next())
    }
}

/// The wallet a reputation event credits or slashes, if it does either: what a write or a
/// rewind reports as touched.
pub(crate) fn scored_wallet(e: &ReputationEvent) -> Option<&str> {
    use crate::chain::reputation::RepKind;
    match &e.kind {
        RepKind::Credited { who, .. } | RepKind::Slashed { who, .. } => Some(who),
        _ => None,
    }
}
