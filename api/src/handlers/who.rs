//! `GET /who?handle=<wallet or agent name>[&format=json|html]`: the public conduct record of a
//! handle: its vows, their ledger paths, and the registry tools its wallet created.
//!
//! Served from the record rendered at [`who_stem`] by the registry source; a handle with no
//! rendered record gets the negative record, rendered on the fly: a successful lookup with a
//! negative result (200), never a 404.

use std::collections::HashMap;

use conduct_core::signing::ServiceKey;
use conduct_renderer::discovery::normalize_key;
use conduct_renderer::registry::{who_files, who_stem};
use warp::http::StatusCode;
use warp::reply::Response as WarpResponse;

use crate::http::reply::Problem;
use crate::http::request::query_param;
use crate::http::static_site::Variant;

/// What a `/who` lookup reads of the running service: the rendered tree, and the key a
/// negative record is signed with.
#[derive(Clone, Copy)]
pub struct Who<'a> {
    /// The rendered tree.
    pub tree: &'a conduct_indexer::tree::SharedTree,
    /// The signing key.
    pub key: &'a ServiceKey,
}

/// The representations a record has.
const WHO_VARIANTS: [Variant; 2] = [Variant::Json, Variant::Html];

fn missing_handle() -> Problem {
    Problem::new(
        StatusCode::BAD_REQUEST,
        "bad-request",
        "The handle is missing",
        "GET /who needs ?handle=<wallet or agent name>",
    )
    .at("?handle", "missing or empty query parameter")
}

fn not_acceptable() -> Problem {
    Problem::new(
        StatusCode::NOT_ACCEPTABLE,
        "not-acceptable",
        "No acceptable representation",
        "a record is served as application/json or text/html; use ?format=json|html or Accept",
    )
}

/// Answer a `/who` lookup.
pub async fn who(ctx: Who<'_>, query: &str, accept: Option<&str>) -> Result<WarpResponse, Problem> {
    let handle = query_param(query, "handle")
        .map(|h| normalize_key(&h))
        .filter(|h| !h.is_empty())
        .ok_or_else(missing_handle)?;
    let format = match query_param(query, "format") {
        None => None,
        Some(f) => match Variant::from_format(&f) {
            Some(v) if WHO_VARIANTS.contains(&v) => Some(v),
            _ => {
                return Err(Problem::new(
                    StatusCode::BAD_REQUEST,
                    "bad-format",
                    "Unknown format",
                    format!("format={f:?} is not one of json, html"),
                ))
            }
        },
    };
    crate::handlers::card::serve_lookup(
        ctx.tree,
        &who_stem(&handle),
        (accept, format),
        &WHO_VARIANTS,
        not_acceptable,
        "The record could not be rendered",
        || who_files(ctx.key, &handle, &[], &[], &HashMap::new()),
    )
    .await
}
