//! The chain side of the running service: opens the chain database, starts the follower and
//! the manifest verifier as tokio tasks, and turns what they change into renders of the
//! registry source ([`crate::app::REGISTRY`]).

use std::sync::{Arc, Mutex};

use conduct_indexer::chain::db::ChainDb;
use conduct_indexer::chain::follower::{Change, Follower};
use conduct_indexer::chain::verify::{Verifier, VerifyPolicy};
use conduct_indexer::chain::ChainStatus;
use conduct_indexer::fetch::FetchPolicy;
use conduct_renderer::live::registry::tool_key;
use conduct_renderer::live::LiveSite;

use crate::app::REGISTRY;
use crate::config::Config;
use crate::error::Error;

/// The chain database (none without `[chain]`) and the follower's status.
pub struct ChainParts {
    /// The chain database.
    pub db: Option<Arc<ChainDb>>,
    /// What the follower knows now.
    pub status: Arc<Mutex<ChainStatus>>,
}

/// The identity a chain database belongs to: chain id and the followed contracts.
fn identity(c: &conduct_indexer::chain::ChainConfig) -> String {
    match &c.registry {
        Some(r) => format!(
            "eip155:{}/registry:{}@{}",
            c.chain_id,
            r.address.to_ascii_lowercase(),
            r.start_block
        ),
        None => format!("eip155:{}", c.chain_id),
    }
}

/// Open the chain database when a chain is configured.
pub fn open(cfg: &Config) -> Result<ChainParts, Error> {
    let status = Arc::new(Mutex::new(ChainStatus::default()));
    let Some(chain) = &cfg.chain else {
        return Ok(ChainParts { db: None, status });
    };
    let db = Arc::new(ChainDb::open(&cfg.data, &identity(chain))?);
    if let Some(c) = db.cursor()? {
        // The last good state is shown with its age until the chain answers.
        let mut s = conduct_core::sync::lock(&status);
        s.synced_at = Some(c.synced_at);
        s.indexed_to = Some(c.number);
    }
    Ok(ChainParts {
        db: Some(db),
        status,
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

/// Start the follower and the verifier (when a chain is configured); their changes are
/// rendered by `site`.
pub fn spawn(cfg: &Config, parts: &ChainParts, site: LiveSite) -> Result<(), Error> {
    let (Some(chain), Some(db)) = (&cfg.chain, &parts.db) else {
        return Ok(());
    };
    let render = {
        let site = site.clone();
        move |change: Change| {
            for id in &change.tools {
                drop(site.start_render(REGISTRY, &tool_key(*id), true));
            }
            if change.status && change.tools.is_empty() {
                drop(site.start_render(REGISTRY, "", true));
            }
        }
    };
    let verifier = Verifier::new(
        db.clone(),
        chain.clone(),
        fetch_policy(cfg)?,
        VerifyPolicy {
            reverify_every: cfg.manifests.reverify_hours.unwrap_or(24).max(1) * 3600,
            ..VerifyPolicy::default()
        },
        Box::new({
            let site = site.clone();
            move |id: u64| drop(site.start_render(REGISTRY, &tool_key(id), true))
        }),
    )
    .map_err(Error::Chain)?;
    let wake = verifier.waker();
    let follower = Follower::new(
        chain.clone(),
        db.clone(),
        parts.status.clone(),
        Box::new(move |change: Change| {
            if !change.tools.is_empty() {
                wake.notify_one();
            }
            render(change)
        }),
    )
    .map_err(Error::Chain)?;
    tokio::spawn(follower.run());
    tokio::spawn(verifier.run());
    Ok(())
}
