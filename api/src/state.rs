//! Shared state of a running service ([`App`]) and the parts it is built from: the
//! composition root (ARCHITECTURE.md, "api"). No handler names it: each takes a narrow context
//! (its module's, made of the views of `handlers::views` and `payment::gate::Payments`), cut
//! from it here (`From<&App>`) and handed over by the route table's rows (`Call::ctx`).

use std::sync::Arc;
use std::time::Instant;

use conduct_core::signing::ServiceKey;

use crate::config::Config;
use crate::handlers::views::{Chain, Ledger, Signing};
use crate::handlers::{
    card, erc8004, familiar, health, munus, nostr, prepare, profile, reputation, ticket, vows, who,
    witness,
};
use crate::http::caps::Caps;
use crate::payment::gate::Payments;
use crate::payment::Rails;

/// Shared state of a running service.
pub struct App {
    /// Resolved configuration.
    pub cfg: Config,
    /// The signing key.
    pub key: ServiceKey,
    /// Configured payment rails.
    pub rails: Rails,
    /// The same rails at the posted labor price (`POST /familiar/summon`).
    pub labor_rails: Rails,
    /// The durable store (payment claims, idempotency).
    pub store: Arc<dyn conduct_indexer::state::tables::Tables>,
    /// The free per-IP daily counters (`/demo/profile`, `POST /vow`, `/vow/report/demo`).
    pub caps: Caps,
    /// Reads of the transparency log (proofs).
    pub log: Arc<conduct_indexer::ledger::LedgerReader>,
    /// Appends to the log (group commit).
    pub seq: Arc<conduct_indexer::ledger::Sequencer>,
    /// Reads of vows and their chains.
    pub vows: Arc<conduct_indexer::vows::VowReader>,
    /// Donated raw traces, kept apart.
    pub donated: Arc<dyn conduct_indexer::vows::DonatedTraces>,
    /// Keeps the vow pages current.
    pub site: conduct_renderer::live::LiveSite,
    /// The published tree, as the renderer writes it (`site` of the config).
    pub tree: conduct_indexer::tree::SharedTree,
    /// What the chain follower knows (none configured: never changes).
    pub chain: Arc<std::sync::Mutex<conduct_indexer::chain::ChainStatus>>,
    /// Idempotency keys of paid calls in progress.
    pub inflight: std::sync::Mutex<std::collections::HashSet<String>>,
    /// Start instant, for uptime.
    pub started: Instant,
    /// The MCP endpoint (`POST /mcp`).
    pub mcp: crate::handlers::mcp::Endpoint,
    /// The quest board's keeper (its records, flags and lapses).
    pub munus: Arc<conduct_indexer::munus::keeper::Keeper>,
    /// The chain database, the live reputation read and the RPC (reputation lookups).
    pub chain_parts: Arc<crate::chain::ChainParts>,
}

/// The stateful parts an [`App`] is built from.
pub struct Parts {
    /// Configured payment rails.
    pub rails: Rails,
    /// The same rails at the posted labor price.
    pub labor_rails: Rails,
    /// The durable store.
    pub store: Arc<dyn conduct_indexer::state::tables::Tables>,
    /// Log reads.
    pub log: Arc<conduct_indexer::ledger::LedgerReader>,
    /// Log appends.
    pub seq: Arc<conduct_indexer::ledger::Sequencer>,
    /// Vow reads.
    pub vows: Arc<conduct_indexer::vows::VowReader>,
    /// Donated traces.
    pub donated: Arc<dyn conduct_indexer::vows::DonatedTraces>,
    /// The vow render thread.
    pub site: conduct_renderer::live::LiveSite,
    /// The published tree.
    pub tree: conduct_indexer::tree::SharedTree,
    /// The chain follower's status.
    pub chain: Arc<std::sync::Mutex<conduct_indexer::chain::ChainStatus>>,
    /// The quest board's keeper.
    pub munus: Arc<conduct_indexer::munus::keeper::Keeper>,
    /// The chain parts.
    pub chain_parts: Arc<crate::chain::ChainParts>,
}

impl App {
    /// State for a configuration, key and opened parts.
    pub fn new(cfg: Config, key: ServiceKey, parts: Parts) -> Self {
        App {
            caps: Caps::new(
                cfg.demo_daily_cap,
                cfg.vow_daily_cap,
                cfg.report_demo_daily_cap,
                cfg.oracle_daily_cap,
                cfg.owner_daily_cap,
                cfg.lookup_daily_cap,
            ),
            log: parts.log,
            rails: parts.rails,
            labor_rails: parts.labor_rails,
            store: parts.store,
            seq: parts.seq,
            vows: parts.vows,
            donated: parts.donated,
            site: parts.site,
            tree: parts.tree,
            chain: parts.chain,
            munus: parts.munus,
            chain_parts: parts.chain_parts,
            mcp: crate::handlers::mcp::Endpoint::new(&cfg),
            cfg,
            key,
            inflight: Default::default(),
            started: Instant::now(),
        }
    }
}

impl<'a> From<&'a App> for Signing<'a> {
    fn from(app: &'a App) -> Self {
        Signing {
            key: &app.key,
            public_url: &app.cfg.public_url,
        }
    }
}

impl<'a> From<&'a App> for Ledger<'a> {
    fn from(app: &'a App) -> Self {
        Ledger {
            seq: &app.seq,
            vows: &app.vows,
            site: &app.site,
        }
    }
}

impl<'a> From<&'a App> for Chain<'a> {
    fn from(app: &'a App) -> Self {
        Chain {
            cfg: app.cfg.chain.as_ref(),
            parts: &app.chain_parts,
        }
    }
}

impl<'a> From<&'a App> for Payments<'a> {
    fn from(app: &'a App) -> Self {
        Payments {
            rails: &app.rails,
            labor_rails: &app.labor_rails,
            store: &app.store,
            inflight: &app.inflight,
        }
    }
}

// Each handler's context, cut from the state (the route table's rows take them with
// `Call::ctx`).

impl<'a> From<&'a App> for health::Health<'a> {
    fn from(app: &'a App) -> Self {
        health::Health {
            rails: &app.rails,
            seq: &app.seq,
            site: &app.site,
            chain: app.cfg.chain.as_ref(),
            status: &app.chain,
            started: app.started,
            key: &app.key,
        }
    }
}

impl<'a> From<&'a App> for card::Cards<'a> {
    fn from(app: &'a App) -> Self {
        card::Cards {
            tree: &app.tree,
            sign: app.into(),
        }
    }
}

impl<'a> From<&'a App> for who::Who<'a> {
    fn from(app: &'a App) -> Self {
        who::Who {
            tree: &app.tree,
            key: &app.key,
        }
    }
}

impl<'a> From<&'a App> for reputation::Reputation<'a> {
    fn from(app: &'a App) -> Self {
        reputation::Reputation {
            tree: &app.tree,
            key: &app.key,
            chain: app.into(),
        }
    }
}

impl<'a> From<&'a App> for prepare::Prepare<'a> {
    fn from(app: &'a App) -> Self {
        prepare::Prepare {
            key: &app.key,
            chain: app.into(),
            quest_token: app.cfg.munus.token.as_deref(),
        }
    }
}

impl<'a> From<&'a App> for ticket::Tickets<'a> {
    fn from(app: &'a App) -> Self {
        ticket::Tickets {
            prepare: app.into(),
            public_url: &app.cfg.public_url,
        }
    }
}

impl<'a> From<&'a App> for profile::Profile<'a> {
    fn from(app: &'a App) -> Self {
        profile::Profile {
            key: &app.key,
            pay: app.into(),
        }
    }
}

impl<'a> From<&'a App> for erc8004::Erc8004<'a> {
    fn from(app: &'a App) -> Self {
        erc8004::Erc8004 {
            sign: app.into(),
            vows: &app.vows,
            pay: app.into(),
        }
    }
}

impl<'a> From<&'a App> for vows::Vows<'a> {
    fn from(app: &'a App) -> Self {
        vows::Vows {
            sign: app.into(),
            ledger: app.into(),
            donated: &app.donated,
            pay: app.into(),
        }
    }
}

impl<'a> From<&'a App> for munus::Munus<'a> {
    fn from(app: &'a App) -> Self {
        munus::Munus {
            sign: app.into(),
            ledger: app.into(),
            data: &app.cfg.data,
            keeper: &app.munus,
        }
    }
}

impl<'a> From<&'a App> for nostr::Nostr<'a> {
    fn from(app: &'a App) -> Self {
        nostr::Nostr {
            sign: app.into(),
            ledger: app.into(),
        }
    }
}

impl<'a> From<&'a App> for witness::Witness<'a> {
    fn from(app: &'a App) -> Self {
        witness::Witness {
            sign: app.into(),
            ledger: app.into(),
            chain: app.into(),
            pay: app.into(),
        }
    }
}

impl<'a> From<&'a App> for familiar::Familiars<'a> {
    fn from(app: &'a App) -> Self {
        familiar::Familiars {
            sign: app.into(),
            ledger: app.into(),
            labor_price_usd: &app.cfg.familiar.labor_price_usd,
            pay: app.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    /// Whether `code` (comments removed) names `word` as an identifier.
    fn names(code: &str, word: &str) -> bool {
        let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
        code.match_indices(word).any(|(i, _)| {
            let before = code[..i].chars().next_back();
            let after = code[i + word.len()..].chars().next();
            !before.is_some_and(ident) && !after.is_some_and(ident)
        })
    }

    /// The source files under `dir`.
    fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("reads the source dir") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                sources(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    /// ARCHITECTURE.md, "api": the service's state is the composition root's. Only `state.rs`,
    /// the route table, `http/` and `cmd/` name it; a handler (and anything else) takes the
    /// narrow context its row builds, and no handler imports `state`.
    #[test]
    fn only_the_composition_root_names_the_services_state() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        sources(&src, &mut files);
        let root = ["state.rs", "routes.rs", "http", "cmd"];
        let mut offenders = Vec::new();
        for f in &files {
            let rel = f.strip_prefix(&src).expect("under src");
            if root.iter().any(|r| rel.starts_with(r)) {
                continue;
            }
            let text = std::fs::read_to_string(f).expect("reads a source file");
            let code: String = text
                .lines()
                .map(|l| l.split("//").next().unwrap_or(""))
                .collect::<Vec<_>>()
                .join("\n");
            if names(&code, "App") || code.contains("crate::state") {
                offenders.push(rel.display().to_string());
            }
        }
        assert!(files.len() > 20, "found only {} source files", files.len());
        assert!(offenders.is_empty(), "these name the App: {offenders:#?}");
    }
}
