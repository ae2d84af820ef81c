//! The reputation record's lookups (library/REPUTATION.md): `GET /reputation/{address}`
//! (the mirror's score and `meets`, checked against a live `eth_call`) and
//! `GET /reputation/holders?q=&limit=&sort=` (the thin query route over the holders snapshot
//! the site publishes; without a query it serves that snapshot). `/reputation` itself is a
//! static page of the live site ([`crate::sources::REPUTATION`]).

use conduct_core::signing::ServiceKey;
use conduct_indexer::chain::reputation::{live_score, ReputationEvent};
use conduct_renderer::reputation::{
    holders_files, score_doc, Query, ReputationInput, Sort, HOLDERS_STEM, MAX_LIMIT,
};
use conduct_renderer::snapshot::signed_bytes;
use warp::http::StatusCode;
use warp::reply::Response as WarpResponse;

use crate::handlers::common::blocking;
use crate::handlers::views::Chain;
use crate::http::reply::{json_response, Problem};
use crate::http::request::query_param;
use crate::http::static_site::Variant;
use crate::sources::service_now;

/// What the reputation lookups read of the running service: the rendered tree (the holders
/// snapshot), the signing key and the chain followed.
#[derive(Clone, Copy)]
pub struct Reputation<'a> {
    /// The rendered tree.
    pub tree: &'a conduct_indexer::tree::SharedTree,
    /// The signing key.
    pub key: &'a ServiceKey,
    /// The chain followed.
    pub chain: Chain<'a>,
}

/// The representations of the holders board.
const VARIANTS: [Variant; 2] = [Variant::Json, Variant::Html];

fn bad(pointer: &str, detail: String) -> Problem {
    Problem::new(
        StatusCode::BAD_REQUEST,
        "bad-request",
        "The lookup cannot be read",
        detail.clone(),
    )
    .at(pointer, detail)
}

fn not_acceptable() -> Problem {
    Problem::new(
        StatusCode::NOT_ACCEPTABLE,
        "not-acceptable",
        "No acceptable representation",
        "the holders board is served as application/json or text/html; use ?format=json|html or Accept",
    )
}

/// The stored reputation events (none without a chain).
async fn events(chain: &Chain<'_>) -> Result<Vec<ReputationEvent>, Problem> {
    let Some(db) = chain.parts.db.clone() else {
        return Ok(Vec::new());
    };
    blocking("reading the reputation mirror", move || {
        db.reputation_events().map_err(|e| e.to_string())
    })
    .await
}

/// Build the renderer's input from the chain followed and call `f` with it.
fn with_input<T>(
    chain: &Chain<'_>,
    key: &ServiceKey,
    events: &[ReputationEvent],
    f: impl FnOnce(&ReputationInput<'_>) -> T,
) -> T {
    let status = conduct_core::sync::lock(&chain.parts.status).clone();
    let probe = conduct_core::sync::lock(&chain.parts.probe).clone();
    let input = ReputationInput {
        key,
        chain: chain.cfg,
        status: &status,
        events,
        probe: probe.as_ref(),
        now: service_now(),
    };
    f(&input)
}

fn parse_query(query: &str) -> Result<Option<Query>, Problem> {
    let (q, limit, sort) = (
        query_param(query, "q"),
        query_param(query, "limit"),
        query_param(query, "sort"),
    );
    if q.is_none() && limit.is_none() && sort.is_none() {
        return Ok(None);
    }
    let q = match q.map(|s| s.trim().to_ascii_lowercase()) {
        None => None,
        Some(s) if s.is_empty() => None,
        Some(s) => {
            let hex = s.strip_prefix("0x").unwrap_or(&s);
            if hex.len() > 40 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(bad(
                    "?q",
                    "q is part of a wallet address: hex digits, optionally after 0x, at most 40"
                        .into(),
                ));
            }
            Some(s)
        }
    };
    let limit = match limit {
        None => MAX_LIMIT,
        Some(l) => match l.parse::<usize>() {
            Ok(n) if (1..=MAX_LIMIT).contains(&n) => n,
            _ => {
                return Err(bad(
                    "?limit",
                    format!("limit is a whole number from 1 to {MAX_LIMIT}"),
                ))
            }
        },
    };
    let sort = match sort.as_deref() {
        None => Sort::Wallet,
        Some(s) => Sort::parse(s)
            .ok_or_else(|| bad("?sort", format!("sort={s:?} is not wallet or score")))?,
    };
    Ok(Some(Query { q, limit, sort }))
}

/// `GET /reputation/holders[?q=&limit=&sort=]`.
pub async fn holders(
    ctx: Reputation<'_>,
    query: &str,
    accept: Option<&str>,
) -> Result<WarpResponse, Problem> {
    let format = match query_param(query, "format") {
        None => None,
        Some(f) => match Variant::from_format(&f) {
            Some(v) if VARIANTS.contains(&v) => Some(v),
            _ => {
                return Err(bad(
                    "?format",
                    format!("format={f:?} is not one of json, html"),
                ))
            }
        },
    };
    let parsed = parse_query(query)?;
    let events = events(&ctx.chain).await?;
    let render = |q: &Query| {
        with_input(&ctx.chain, ctx.key, &events, |input| {
            holders_files(input, q)
        })
    };
    let unrepresentable = |e: conduct_renderer::RenderError| {
        Problem::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "unrepresentable",
            "The holders board could not be rendered",
            e.to_string(),
        )
    };
    match parsed {
        // No query: the published snapshot (rendered on the fly only if it is missing).
        None => {
            crate::handlers::card::serve_lookup(
                ctx.tree,
                HOLDERS_STEM,
                (accept, format),
                &VARIANTS,
                not_acceptable,
                "The holders board could not be rendered",
                || render(&Query::default()),
            )
            .await
        }
        Some(q) => {
            let chosen = match format {
                Some(f) => Some(f),
                None => crate::http::static_site::negotiate(accept, &VARIANTS),
            }
            .ok_or_else(not_acceptable)?;
            let files = render(&q).map_err(unrepresentable)?;
            Ok(crate::handlers::card::negative_response(
                files,
                HOLDERS_STEM,
                chosen,
                format.is_some(),
            ))
        }
    }
}

/// `GET /reputation/{address}`.
pub async fn score(ctx: Reputation<'_>, path: &str) -> Result<WarpResponse, Problem> {
    let raw = path.trim_start_matches("/reputation/");
    let hex = raw.strip_prefix("0x").unwrap_or("");
    if hex.len() != 40 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(bad(
            "/address",
            format!("{raw:?} is not a wallet: 0x and 40 hex digits"),
        ));
    }
    let wallet = raw.to_ascii_lowercase();
    let events = events(&ctx.chain).await?;
    let contract = ctx
        .chain
        .cfg
        .and_then(|c| c.reputation.as_ref())
        .and_then(|r| conduct_indexer::chain::registry::parse_address(&r.address).ok());
    let live = match (contract, &ctx.chain.parts.rpc, wallet.parse()) {
        (Some(c), Some(rpc), Ok(who)) => live_score(rpc, c, who).await,
        _ => None,
    };
    let doc = with_input(&ctx.chain, ctx.key, &events, |input| {
        score_doc(input, &wallet, live)
    });
    let bytes = signed_bytes(ctx.key, doc).map_err(|e| {
        Problem::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "unrepresentable",
            "The score could not be signed",
            e.to_string(),
        )
    })?;
    Ok(json_response(bytes))
}
