//! What a render reads ([`SiteInput`]) and the running route table as the renderer sees it
//! ([`RouteInfo`], [`route_matches`]): shared by the static pages (`site`), the discovery
//! documents and `/openapi.json`, none of which depends on another for them.

use conduct_core::signing::ServiceKey;
use serde_json::Value;

/// One HTTP endpoint as the running route table declares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouteInfo {
    /// HTTP method.
    pub method: &'static str,
    /// Path (templated segments in braces).
    pub path: &'static str,
    /// Paid through x402.
    pub paid: bool,
    /// What it does.
    pub description: &'static str,
    /// What it takes and answers, for `/openapi.json`.
    pub contract: crate::contract::Contract,
}

/// Does route pattern `pattern` match the concrete path `path`? Segments are compared one by
/// one; a `{X}` in a pattern segment stands for a non-empty part of that segment (so
/// `/library/{NAME}.md` matches `/library/METER.md`, and `/vow/{id}/chain/{k}` matches
/// `/vow/ab12/chain/3`).
pub fn route_matches(pattern: &str, path: &str) -> bool {
    let segment = |p: &str, q: &str| match p.split_once('{') {
        None => p == q,
        Some((pre, rest)) => {
            let suffix = rest.split_once('}').map_or("", |(_, s)| s);
            q.len() > pre.len() + suffix.len() && q.starts_with(pre) && q.ends_with(suffix)
        }
    };
    let (mut ps, mut qs) = (pattern.split('/'), path.split('/'));
    loop {
        match (ps.next(), qs.next()) {
            (None, None) => return true,
            (Some(p), Some(q)) if segment(p, q) => {}
            _ => return false,
        }
    }
}

/// Everything a render reads.
#[derive(Debug, Clone)]
pub struct SiteInput<'a> {
    /// The service key (signs every JSON file).
    pub key: &'a ServiceKey,
    /// Public base URL, without a trailing slash.
    pub public_url: &'a str,
    /// The running route table.
    pub routes: &'a [RouteInfo],
    /// The x402 `accepts` entries of every configured rail (may be empty).
    pub accepts: &'a [Value],
    /// Price per paid read in USD, e.g. `0.10`.
    pub price_usd: &'a str,
    /// Paid routes posted at a price of their own (a familiar's labor price), with their
    /// `accepts` at that price; every other paid route is at `price_usd`.
    pub posted: &'a [PostedPrice<'a>],
    /// The free demo cap per IP per UTC day (`None` when lifted).
    pub demo_daily_cap: Option<u32>,
    /// Render instant, unix seconds.
    pub as_of: u64,
    /// How long the manifest stays valid, seconds.
    pub manifest_ttl: u64,
}

/// A paid route posted at a price of its own (`POST /familiar/summon`'s labor price), not the
/// read price.
#[derive(Debug, Clone, Copy)]
pub struct PostedPrice<'a> {
    /// The route's path.
    pub path: &'a str,
    /// Its price in USD, e.g. `1.00`.
    pub price_usd: &'a str,
    /// Its x402 `accepts` entries at that price (one per configured rail).
    pub accepts: &'a [Value],
}
