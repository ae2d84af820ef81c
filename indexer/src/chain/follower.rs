//! The follower: one loop that brings the chain database up to head minus confirmations and
//! keeps it there.
//!
//! Each step reads the head, checks that the cursor's block still has the hash stored for it
//! (else: a reorg, see [`Follower::rewind`]), reads the hash of the last block of the next
//! range *before* its logs (so a reorg during the read changes that hash and is caught by the
//! next step's check), reads the range's logs with `eth_getLogs`, and appends them with the
//! new cursor in one transaction. The range halves while a node refuses it and doubles back
//! up to `max_range` after each success (never past a span a node refused). A step that cannot reach any RPC leaves everything
//! as it is: the status says `reachable: false`, and the next step resumes from the cursor.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use alloy::primitives::B256;
use alloy::rpc::types::Filter;
use conduct_core::sync::lock;

use super::registry::{self, b256_text};
use super::reputation::{self, ReputationEvent};
use super::rpc::{Rpc, RpcFailure};
use super::{ChainConfig, ChainError, ChainStatus};
use crate::state::chain::ChainIndex;

/// What changed in one step, for the pages.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Change {
    /// Tools whose events were added or removed.
    pub tools: BTreeSet<u64>,
    /// Creators of tools a rewind removed (their `/who` records change too).
    pub creators: BTreeSet<String>,
    /// Wallets whose reputation events were added or removed.
    pub wallets: BTreeSet<String>,
    /// The reputation record's governance events (threshold, markets, arbiters) changed.
    pub reputation: bool,
    /// The status changed (reachable, caught up).
    pub status: bool,
}

/// Told of every change (the live site re-renders what it names).
pub type OnChange = Box<dyn Fn(Change) + Send + Sync>;

/// Longest wait between polls while no RPC answers.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// Successful ranges after which a span ceiling (set by a refusal, perhaps a passing rate
/// limit) is lifted and the span may grow again.
const CEILING_KEPT: u32 = 100;

/// The chain follower.
pub struct Follower {
    cfg: ChainConfig,
    db: Arc<dyn ChainIndex>,
    rpc: Rpc,
    status: Arc<Mutex<ChainStatus>>,
    on_change: OnChange,
    registry: Option<(alloy::primitives::Address, u64)>,
    reputation: Option<(alloy::primitives::Address, u64)>,
    span: u64,
    /// The widest span a node accepted after refusing a wider one: growth stops there (for
    /// [`CEILING_KEPT`] successful ranges, then it may grow again).
    ceiling: Option<u64>,
    /// A span was refused and no range succeeded since.
    refused: bool,
    /// Successful ranges since the ceiling was set.
    since_ceiling: u32,
    chain_checked: bool,
}

/// What one step did.
#[derive(Debug, PartialEq, Eq)]
enum Step {
    /// Indexed a range and more is waiting: step again at once.
    More,
    /// At head minus confirmations.
    Idle,
}

impl Follower {
    /// A follower of `cfg` writing to `db`, publishing its state in `status` and telling
    /// `on_change` of each change.
    pub fn new(
        cfg: ChainConfig,
        db: Arc<dyn ChainIndex>,
        status: Arc<Mutex<ChainStatus>>,
        on_change: OnChange,
    ) -> Result<Follower, ChainError> {
        cfg.validate()?;
        let rpc = Rpc::new(
            &cfg.rpc,
            Duration::from_secs(cfg.rpc_timeout_seconds.max(1)),
        )?;
        let registry = match &cfg.registry {
            Some(r) => Some((registry::parse_address(&r.address)?, r.start_block)),
            None => None,
        };
        let reputation = match &cfg.reputation {
            Some(r) => Some((registry::parse_address(&r.address)?, r.start_block)),
            None => None,
        };
        let span = cfg.max_range;
        Ok(Follower {
            cfg,
            db,
            rpc,
            status,
            on_change,
            registry,
            reputation,
            span,
            ceiling: None,
            refused: false,
            since_ceiling: 0,
            chain_checked: false,
        })
    }

    /// Step until the database holds everything up to head minus confirmations (a backfill);
    /// the block reached.
    pub async fn catch_up(&mut self) -> Result<Option<u64>, RpcFailure> {
        while self.step().await? == Step::More {}
        lock(&self.status).caught_up = true;
        Ok(lock(&self.status).indexed_to)
    }

    /// Follow until the task is dropped.
    pub async fn run(mut self) {
        let poll = Duration::from_millis(self.cfg.poll_ms.max(10));
        let mut backoff = poll;
        loop {
            match self.step().await {
                Ok(step) => {
                    backoff = poll;
                    self.set_status(|s| {
                        s.reachable = true;
                        s.error = None;
                        if step == Step::Idle {
                            s.caught_up = true;
                        }
                    });
                    if step == Step::Idle {
                        tokio::time::sleep(poll).await;
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "chain follower: step failed; retrying");
                    let unreachable = matches!(e, RpcFailure::Unreachable(_));
                    self.set_status(|s| {
                        s.reachable = !unreachable && s.reachable;
                        s.error = Some(e.to_string());
                    });
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
            }
        }
    }

    /// Change the shared status; tell the pages when what they show changed.
    fn set_status(&self, f: impl FnOnce(&mut ChainStatus)) {
        let changed = {
            let mut s = lock(&self.status);
            let before = (s.reachable, s.caught_up);
            f(&mut s);
            if let Ok(Some(c)) = self.db.cursor() {
                s.synced_at = Some(c.synced_at);
                s.indexed_to = Some(c.number);
            }
            let m = crate::metrics::metrics();
            m.chain_configured
                .store(true, std::sync::atomic::Ordering::Relaxed);
            m.chain_reachable.set(i64::from(s.reachable));
            if let Some(head) = s.head {
                m.chain_head.set(i64::try_from(head).unwrap_or(i64::MAX));
                let behind = head.saturating_sub(s.indexed_to.unwrap_or(0));
                m.chain_lag.set(i64::try_from(behind).unwrap_or(i64::MAX));
            }
            before != (s.reachable, s.caught_up)
        };
        if changed {
            (self.on_change)(Change {
                status: true,
                ..Change::default()
            });
        }
    }

    /// One step: check for a reorg, then index the next range (if any).
    async fn step(&mut self) -> Result<Step, RpcFailure> {
        if !self.chain_checked {
            let id = self.rpc.chain_id().await?;
            if id != self.cfg.chain_id {
                return Err(RpcFailure::Bad(format!(
                    "the RPC serves chain {id}, the configuration says {}",
                    self.cfg.chain_id
                )));
            }
            self.chain_checked = true;
        }
        let head = self.rpc.head().await?;
        lock(&self.status).head = Some(head);
        let db = |e: crate::store::StoreError| RpcFailure::Bad(format!("chain database: {e}"));
        let cursor = self.db.cursor().map_err(db)?;
        if let Some(c) = &cursor {
            match self.rpc.block_hash(c.number).await? {
                // The node answering is behind the cursor (a slower fallback, a lagging
                // backend): not a reorganisation. Wait for it.
                None => return Ok(Step::Idle),
                Some(h) if b256_text(&h) != c.hash => {
                    self.rewind().await?;
                    return Ok(Step::More);
                }
                Some(_) => {}
            }
        }
        // Every followed contract, read from the lowest start block (a contract has no logs
        // before its deployment).
        let followed: Vec<(alloy::primitives::Address, u64)> = self
            .registry
            .iter()
            .chain(self.reputation.iter())
            .copied()
            .collect();
        let Some(start) = followed.iter().map(|(_, b)| *b).min() else {
            self.db.synced(crate::clock::service_now()).map_err(db)?;
            return Ok(Step::Idle);
        };
        let addresses: Vec<alloy::primitives::Address> = followed.iter().map(|(a, _)| *a).collect();
        let mut topics = registry::topics();
        topics.extend(reputation::topics());
        let target = head.saturating_sub(self.cfg.confirmations);
        let from = cursor.as_ref().map_or(start, |c| c.number + 1);
        if from > target {
            self.db.synced(crate::clock::service_now()).map_err(db)?;
            return Ok(Step::Idle);
        }
        loop {
            let to = target.min(from.saturating_add(self.span - 1));
            // The hash of `to` first: see the module header.
            let Some(hash) = self.rpc.block_hash(to).await? else {
                return Err(RpcFailure::Bad(format!(
                    "the node reported head {head} but has no block {to}"
                )));
            };
            let filter = Filter::new()
                .address(addresses.clone())
                .event_signature(topics.clone())
                .from_block(from)
                .to_block(to);
            let logs = match self.rpc.logs(&filter).await {
                Ok(l) => l,
                Err(RpcFailure::Refused(e)) if self.span > 1 => {
                    self.span = (self.span / 2).max(1);
                    self.refused = true;
                    tracing::info!(span = self.span, error = %e, "eth_getLogs range refused; halving it");
                    continue;
                }
                Err(e) => return Err(e),
            };
            let mut events = Vec::with_capacity(logs.len());
            let mut rep: Vec<ReputationEvent> = Vec::new();
            for log in &logs {
                if log.removed {
                    continue;
                }
                if log.block_number == Some(to) && log.block_hash != Some(hash) {
                    // The chain moved under the read: read the range again.
                    return Ok(Step::More);
                }
                if self.reputation.is_some_and(|(a, _)| a == log.address()) {
                    match reputation::decode(log) {
                        Ok(e) => rep.push(e),
                        Err(e) => tracing::warn!(error = %e, "skipping a reputation log"),
                    }
                    continue;
                }
                if self.registry.is_none_or(|(a, _)| a != log.address()) {
                    continue;
                }
                match registry::decode(log) {
                    Ok(e) => events.push(e),
                    Err(e) => tracing::warn!(error = %e, "skipping a registry log"),
                }
            }
            let governance = rep.iter().any(|e| {
                !matches!(
                    e.kind,
                    reputation::RepKind::Credited { .. } | reputation::RepKind::Slashed { .. }
                )
            });
            let (touched, wallets) = self
                .db
                .apply_all(
                    &events,
                    &rep,
                    to,
                    &b256_text(&hash),
                    crate::clock::service_now(),
                )
                .map_err(db)?;
            if std::mem::take(&mut self.refused) {
                // The widest span that worked after a refusal.
                self.ceiling = Some(self.span);
                self.since_ceiling = 0;
            } else if self.ceiling.is_some() {
                self.since_ceiling += 1;
                if self.since_ceiling >= CEILING_KEPT {
                    self.ceiling = None;
                }
            }
            let cap = self.ceiling.unwrap_or(self.cfg.max_range).max(1);
            self.span = self.span.saturating_mul(2).min(cap);
            lock(&self.status).indexed_to = Some(to);
            if !touched.is_empty() || !wallets.is_empty() || governance {
                (self.on_change)(Change {
                    tools: touched,
                    wallets,
                    reputation: governance || !rep.is_empty(),
                    ..Change::default()
                });
            }
            return Ok(if to < target { Step::More } else { Step::Idle });
        }
    }

    /// The cursor's block is no longer on the chain: find the highest known block that still
    /// is (the common ancestor), forget everything above it, and resume from there.
    async fn rewind(&mut self) -> Result<(), RpcFailure> {
        let db = |e: crate::store::StoreError| RpcFailure::Bad(format!("chain database: {e}"));
        let anchors = self.db.anchors().map_err(db)?;
        let mut ancestor = None;
        for (n, h) in anchors {
            let on_chain: Option<B256> = self.rpc.block_hash(n).await?;
            match on_chain {
                Some(x) if b256_text(&x) == h => {
                    ancestor = Some((n, h));
                    break;
                }
                Some(_) => {}
                // The node has no such block yet: it says nothing about this anchor.
                None => continue,
            }
        }
        tracing::warn!(
            ancestor = ancestor.as_ref().map(|(n, _)| *n),
            "chain reorganised; rewinding to the common ancestor"
        );
        // The creators of what the rewind may remove, read before it is gone.
        let before = self.db.tools().map_err(db)?;
        let rep_before = self.db.reputation_events().map_err(db)?.len();
        let (touched, wallets) = self
            .db
            .rewind(ancestor, crate::clock::service_now())
            .map_err(db)?;
        let rep_changed = self.db.reputation_events().map_err(db)?.len() != rep_before;
        if !touched.is_empty() || rep_changed {
            let creators = before
                .into_iter()
                .filter(|t| touched.contains(&t.tool_id))
                .map(|t| t.creator)
                .collect();
            (self.on_change)(Change {
                tools: touched,
                creators,
                wallets,
                reputation: rep_changed,
                status: false,
            });
        }
        Ok(())
    }
}
