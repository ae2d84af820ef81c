//! `GET /health`: liveness, the writers' true state (the ledger, the live site), the chain
//! followed and the payment rails.

use conduct_core::scope::scope_value;
use serde_json::json;
use warp::http::{header, StatusCode};
use warp::reply::Response as WarpResponse;

use std::sync::Mutex;
use std::time::Instant;

use conduct_core::signing::ServiceKey;
use conduct_indexer::chain::{ChainConfig, ChainStatus};
use conduct_indexer::ledger::Sequencer;
use conduct_renderer::live::LiveSite;

use crate::http::reply::json_response;
use crate::payment::Rails;

/// What `/health` reads of the running service.
pub struct Health<'a> {
    /// The configured payment rails.
    pub rails: &'a Rails,
    /// The log's writer (its head, whether it commits).
    pub seq: &'a Sequencer,
    /// The live site (whether it is behind).
    pub site: &'a LiveSite,
    /// `[chain]`, when configured.
    pub chain: Option<&'a ChainConfig>,
    /// What the chain follower knows.
    pub status: &'a Mutex<ChainStatus>,
    /// Start instant, for uptime.
    pub started: Instant,
    /// The signing key (its id).
    pub key: &'a ServiceKey,
}

/// `GET /health`: 200 when the ledger commits and the site is current, else 503 (`degraded`).
pub async fn health(ctx: Health<'_>) -> WarpResponse {
    let mut rails = Vec::with_capacity(ctx.rails.rails.len());
    for r in &ctx.rails.rails {
        let up = r.settler.up(&r.network).await;
        rails.push(json!({
            "rail": r.name,
            "network": r.network,
            "settled_by": r.settler.describe(),
            "up": up,
            "accepts": r.requirements,
        }));
    }
    // The writers' true state: a ledger that cannot commit (or whose files lag), or a site
    // that is behind the ledger, is not "ok", and the status code says so too.
    let head = ctx.seq.head();
    let ledger = match &head.failing {
        None => json!({"state": "ok", "size": head.size}),
        Some(f) => json!({
            "state": if f.stopped { "stopped" } else { "failing" },
            "files_behind": f.files_behind,
            "size": head.size,
            "error": f.error,
            "since": conduct_core::time::rfc3339(f.since),
            "recovery": "retried every second: the ledger re-opens, verifies and resumes by itself once writes can commit",
        }),
    };
    let catching_up = ctx.site.catching_up();
    let behind = ctx.site.behind();
    let healthy = head.failing.is_none() && behind.is_none();
    let site = match behind {
        None if catching_up > 0 => json!({
            "state": "catching-up",
            "keys_left": catching_up,
            "note": "restarted: the tree on disk is served while every vow's files are brought up to date",
        }),
        None => json!({"state": "ok"}),
        Some(b) => json!({
            "state": "behind",
            "error": b.error,
            "waiting": b.waiting,
            "since": conduct_core::time::rfc3339(b.since),
            "recovery": "every committed entry is acknowledged; its pages are re-rendered with backoff until they are written",
        }),
    };
    // The chain is someone else's: a chain that does not answer is reported, never "degraded".
    let chain = ctx.chain.map(|c| {
        let s = conduct_core::sync::lock(ctx.status).clone();
        json!({
            "name": c.name,
            "chain_id": c.chain_id,
            "reachable": s.reachable,
            "head": s.head,
            "indexed_to": s.indexed_to,
            "caught_up": s.caught_up,
            "synced_at": s.synced_at.map(conduct_core::time::rfc3339),
            "error": s.error,
        })
    });
    let body = json!({
        "type": "conduct.health/v1",
        "status": if healthy { "ok" } else { "degraded" },
        "ledger": ledger,
        "site": site,
        "chain": chain,
        "version": env!("CARGO_PKG_VERSION"),
        "uptime_seconds": ctx.started.elapsed().as_secs(),
        "key_id": ctx.key.key_id_hex(),
        "rails": rails,
        "rails_note": if ctx.rails.rails.is_empty() {
            "no payment rail is configured on this instance: paid calls answer 402 with an empty accepts"
        } else {
            "a facilitator rail is up when its facilitator answers /supported listing exact on its network; a permit2 rail when its RPC answers with its chain id"
        },
        "scope": scope_value(),
    });
    let mut body = body;
    let offset = conduct_indexer::clock::offset();
    if offset != 0 {
        // A shifted clock (tests, `conduct dev`) is never hidden.
        body["clock_offset_seconds"] = json!(offset);
    }
    let mut resp = json_response(serde_json::to_vec(&body).unwrap_or_default());
    if !healthy {
        *resp.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    }
    resp.headers_mut().insert(
        header::CACHE_CONTROL,
        warp::http::HeaderValue::from_static("no-store"),
    );
    resp
}
