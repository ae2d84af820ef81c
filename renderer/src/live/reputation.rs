//! The reputation record as a source of change ([`super::Source`]): `/reputation` and the
//! holders snapshot `/reputation/holders` (built by [`crate::reputation`]). One key, the empty
//! one: every change (a credit, a slash, a rewind, the threshold, a live read that differs)
//! re-renders both. While a contract is followed the pages also fall due every minute, so
//! `cached_seconds_ago` keeps telling the truth when the chain stops answering.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use conduct_core::signing::ServiceKey;
use conduct_core::sync::lock;
use conduct_indexer::chain::reputation::Probe;
use conduct_indexer::chain::{ChainConfig, ChainStatus};
use conduct_indexer::state::chain::ChainIndex;

use super::{Known, Source};
use crate::publish::Publisher;
use crate::reputation::{reputation_files, ReputationInput};
use crate::vows::Files;
use crate::RenderError;

/// Seconds between re-renders while a contract is followed.
const HEARTBEAT: u64 = 60;

/// The reputation source.
pub struct ReputationSource {
    key: ServiceKey,
    chain: Option<ChainConfig>,
    db: Option<Arc<dyn ChainIndex>>,
    status: Arc<Mutex<ChainStatus>>,
    probe: Arc<Mutex<Option<Probe>>>,
    due: Option<u64>,
}

impl ReputationSource {
    /// The source's name ([`super::SourceId`]).
    pub const NAME: &'static str = "reputation";

    /// The source over `db` (none without a chain), the follower's `status` and the last live
    /// read of the contract in `probe` (kept by the api's chain task).
    pub fn new(
        key: ServiceKey,
        chain: Option<ChainConfig>,
        db: Option<Arc<dyn ChainIndex>>,
        status: Arc<Mutex<ChainStatus>>,
        probe: Arc<Mutex<Option<Probe>>>,
    ) -> ReputationSource {
        ReputationSource {
            key,
            chain,
            db,
            status,
            probe,
            due: None,
        }
    }

    fn files(&mut self, now: u64) -> Result<Files, RenderError> {
        let events = match &self.db {
            Some(db) => db.reputation_events()?,
            None => Vec::new(),
        };
        let status = lock(&self.status).clone();
        let probe = lock(&self.probe).clone();
        let input = ReputationInput {
            key: &self.key,
            chain: self.chain.as_ref(),
            status: &status,
            events: &events,
            probe: probe.as_ref(),
            now,
        };
        let followed = self.chain.as_ref().is_some_and(|c| c.reputation.is_some());
        self.due = followed.then_some(now + HEARTBEAT);
        reputation_files(&input)
    }
}

impl Source for ReputationSource {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn render_all(&mut self, publisher: &mut Publisher, now: u64) -> Result<(), RenderError> {
        let files = self.files(now)?;
        publisher
            .put_many(files)
            .map_err(|e| RenderError::Input(format!("reputation: {e}")))?;
        Ok(())
    }

    fn render(
        &mut self,
        _keys: &BTreeSet<String>,
        _index: bool,
        now: u64,
        _known: &Known<'_>,
    ) -> Result<Files, RenderError> {
        self.files(now)
    }

    fn take_due(&mut self, now: u64, _limit: usize) -> Vec<String> {
        match self.due {
            Some(t) if t <= now => {
                self.due = None;
                vec![String::new()]
            }
            _ => Vec::new(),
        }
    }

    fn next_due(&self) -> Option<u64> {
        self.due
    }

    fn forget(&mut self, _keys: &BTreeSet<String>) {}
}
