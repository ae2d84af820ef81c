//! The chain side of the running service: opens the chain index, starts the follower and
//! the manifest verifier as tokio tasks, and turns what they change into renders of the
//! registry source ([`crate::sources::REGISTRY`]).

use std::sync::{Arc, Mutex};

use conduct_indexer::chain::follower::{Change, Follower};
use conduct_indexer::chain::reputation::{self, Probe};
use conduct_indexer::chain::rpc::Rpc;
use conduct_indexer::chain::verify::{Verifier, VerifyPolicy};
use conduct_indexer::chain::{ChainError, ChainStatus};
use conduct_indexer::fetch::FetchPolicy;
use conduct_indexer::state::chain::ChainIndex;
use conduct_indexer::state::State;
use conduct_renderer::live::registry::{tool_key, who_key};
use conduct_renderer::live::LiveSite;

use crate::config::Config;
use crate::error::Error;
use crate::sources::{service_now, REGISTRY, REPUTATION};

/// The chain index (none without `[chain]`), the follower's status, and the live view of
/// the reputation contract.
pub struct ChainParts {
    /// The chain index.
    pub db: Option<Arc<dyn ChainIndex>>,
    /// What the follower knows now.
    pub status: Arc<Mutex<ChainStatus>>,
    /// The last live read of the reputation contract (none yet, or none configured).
    pub probe: Arc<Mutex<Option<Probe>>>,
    /// The RPC for live reads (none without `[chain]`).
    pub rpc: Option<Arc<Rpc>>,
}

/// The identity a chain index belongs to: chain id and the followed contracts.
fn identity(c: &conduct_indexer::chain::ChainConfig) -> String {
    let mut id = match &c.registry {
        Some(r) => format!(
            "eip155:{}/registry:{}@{}",
            c.chain_id,
            r.address.to_ascii_lowercase(),
            r.start_block
        ),
        None => format!("eip155:{}", c.chain_id),
    };
    if let Some(r) = &c.reputation {
        id.push_str(&format!(
            "/reputation:{}@{}",
            r.address.to_ascii_lowercase(),
            r.start_block
        ));
    }
    id
}

/// Open the chain index in `state` when a chain is configured.
pub fn open(cfg: &Config, state: &State) -> Result<ChainParts, Error> {
    let status = Arc::new(Mutex::new(ChainStatus::default()));
    let probe = Arc::new(Mutex::new(None));
    let Some(chain) = &cfg.chain else {
        return Ok(ChainParts {
            db: None,
            status,
            probe,
            rpc: None,
        });
    };
    let timeout = std::time::Duration::from_secs(chain.rpc_timeout_seconds.max(1));
    let rpc =
        Rpc::new(&chain.rpc, timeout).map_err(|e| Error::Config(format!("[chain] rpc: {e}")))?;
    let db = state.chain(&identity(chain))?;
    if let Some(c) = db.cursor()? {
        // The last good state is shown with its age until the chain answers.
        let mut s = conduct_core::sync::lock(&status);
        s.synced_at = Some(c.synced_at);
        s.indexed_to = Some(c.number);
    }
    Ok(ChainParts {
        db: Some(db),
        status,
        probe,
        rpc: Some(Arc::new(rpc)),
    })
}

/// The fetch policy `[manifests]` sets.
fn fetch_policy(cfg: &Config) -> Result<FetchPolicy, Error> {
    let mut policy = FetchPolicy {
        allow_loopback: cfg.manifests.allow_loopback,
        ..FetchPolicy::default()
    };
    for p in &cfg.manifests.extra_roots {
        let pem = std::fs::read(p)
            .map_err(|e| Error::Config(format!("[manifests] extra_roots: {}: {e}", p.display())))?;
        policy.extra_roots.push(pem);
    }
    if policy.allow_loopback {
        tracing::warn!(
            "[manifests] allow_loopback is on: tool manifests may be fetched from this \
             machine's loopback addresses. For tests and `conduct dev` only; never in production."
        );
    }
    Ok(policy)
}

/// Start the follower and the verifier (when a chain is configured), each supervised: a task
/// that ends (a panic in a dependency) is logged, shown in the chain status, and started
/// again after a pause. Their changes are rendered by `site`.
pub fn spawn(cfg: &Config, parts: &ChainParts, site: LiveSite) -> Result<(), Error> {
    let (Some(chain), Some(db)) = (&cfg.chain, &parts.db) else {
        return Ok(());
    };
    let wake = Arc::new(tokio::sync::Notify::new());
    let probe_wake = Arc::new(tokio::sync::Notify::new());
    let on_change: Arc<dyn Fn(Change) + Send + Sync> = {
        let (site, wake, probe_wake) = (site.clone(), wake.clone(), probe_wake.clone());
        Arc::new(move |change: Change| {
            if change.reputation || !change.wallets.is_empty() {
                probe_wake.notify_one();
                drop(site.start_render(REPUTATION, "", true));
            }
            if !change.tools.is_empty() {
                wake.notify_one();
            }
            for id in &change.tools {
                drop(site.start_render(REGISTRY, &tool_key(*id), true));
            }
            for creator in &change.creators {
                drop(site.start_render(REGISTRY, &who_key(creator), false));
            }
            if change.status && change.tools.is_empty() {
                drop(site.start_render(REGISTRY, "", true));
                drop(site.start_render(REPUTATION, "", true));
            }
        })
    };
    let on_checked: Arc<dyn Fn(u64) + Send + Sync> = {
        let site = site.clone();
        Arc::new(move |id: u64| drop(site.start_render(REGISTRY, &tool_key(id), true)))
    };
    let policy = VerifyPolicy {
        reverify_every: cfg
            .manifests
            .reverify_hours
            .unwrap_or(24)
            .clamp(1, 24 * 365)
            * 3600,
        ..VerifyPolicy::default()
    };
    let fetch = fetch_policy(cfg)?;
    let (c, d, s) = (chain.clone(), db.clone(), parts.status.clone());
    let follower = move || {
        let on_change = on_change.clone();
        Follower::new(
            c.clone(),
            d.clone(),
            s.clone(),
            Box::new(move |change| on_change(change)),
        )
        .map(Follower::run)
    };
    let (c, d) = (chain.clone(), db.clone());
    let verifier = move || {
        let on_checked = on_checked.clone();
        Verifier::new(
            d.clone(),
            c.clone(),
            fetch.clone(),
            policy,
            Box::new(move |id| on_checked(id)),
        )
        .map(|v| v.woken_by(wake.clone()).run())
    };
    // The first of each is built here, so a configuration error stops the start rather than
    // a background task.
    let first_follower = follower().map_err(Error::Chain)?;
    let first_verifier = verifier().map_err(Error::Chain)?;
    supervise(
        "chain follower",
        parts.status.clone(),
        first_follower,
        follower,
    );
    supervise(
        "manifest verifier",
        parts.status.clone(),
        first_verifier,
        verifier,
    );
    if let (Some(r), Some(rpc)) = (&chain.reputation, &parts.rpc) {
        let address = conduct_indexer::chain::registry::parse_address(&r.address)
            .map_err(|e| Error::Config(format!("[chain.reputation] address: {e}")))?;
        let (rpc, probe, site) = (rpc.clone(), parts.probe.clone(), site.clone());
        let make = move || {
            let (rpc, probe, site, wake) =
                (rpc.clone(), probe.clone(), site.clone(), probe_wake.clone());
            Ok(probe_contract(rpc, address, probe, site, wake))
        };
        let first = make().map_err(Error::Chain)?;
        supervise("reputation probe", parts.status.clone(), first, make);
    }
    Ok(())
}

/// Seconds between live reads of the reputation contract (sooner when its events change).
const PROBE_EVERY: u64 = 15;

/// Read the reputation contract live (code, ours or not, threshold) now and then; a read that
/// differs from the last one re-renders the reputation pages.
async fn probe_contract(
    rpc: Arc<Rpc>,
    address: alloy_primitives::Address,
    probe: Arc<Mutex<Option<Probe>>>,
    site: LiveSite,
    wake: Arc<tokio::sync::Notify>,
) {
    loop {
        let p = reputation::probe(&rpc, address, service_now()).await;
        let changed = {
            let mut last = conduct_core::sync::lock(&probe);
            let same = last.as_ref().is_some_and(|l| {
                (l.deployed, l.verified, l.threshold) == (p.deployed, p.verified, p.threshold)
            });
            *last = Some(p);
            !same
        };
        if changed {
            drop(site.start_render(REPUTATION, "", true));
        }
        let _ = tokio::time::timeout(std::time::Duration::from_secs(PROBE_EVERY), wake.notified())
            .await;
    }
}

/// Run `first` until the service stops; when a task ends (only a panic ends it), log it, put
/// it in the chain status, and start a new one that `make` builds after a pause.
fn supervise<F, Fut>(name: &'static str, status: Arc<Mutex<ChainStatus>>, first: Fut, make: F)
where
    F: Fn() -> Result<Fut, ChainError> + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    tokio::spawn(async move {
        let mut next: Result<Fut, ChainError> = Ok(first);
        loop {
            let why = match next {
                Ok(task) => match tokio::spawn(task).await {
                    Ok(()) => return,
                    Err(e) => e.to_string(),
                },
                Err(e) => e.to_string(),
            };
            tracing::error!(task = name, error = %why, "stopped; starting it again in 5 s");
            conduct_core::sync::lock(&status).error = Some(format!("{name} stopped: {why}"));
            tokio::time::sleep(std::time::Duration::from_secs(5)).await;
            next = make();
        }
    });
}
