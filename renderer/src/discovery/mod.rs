//! Discovery for agents: the arrival door `/lost` (signed JSON, plain text, HTML), the
//! one-page summary `/llms.txt`, and the cards answered at `/card?key=` (signed JSON and
//! text).
//!
//! Everything here is deterministic and carries no clock: the same input gives the same bytes,
//! so a second provider can serve identical files. Endpoints are linked only when the running
//! route table has them; planned ones are named "not on this instance yet". A card is the
//! caller's own signed material plus fixed text: no score, no ranking, no trajectory number,
//! and never the text of a sealed vow.
//!
//! The parts: `lost.rs` (the arrival door), `llms.rs` (`/llms.txt`), `cards.rs` (cards); this
//! file holds what they share (which endpoints this instance has, the fixed texts).

mod cards;
mod llms;
mod lost;
#[cfg(test)]
mod tests;

pub use cards::{
    card_files, card_files_bound, card_stem, normalize_key, CardBinding, CARD_TEXT_CHARS,
    CARD_TYPE, CARD_VOW_LIMIT,
};
pub use lost::{lost_questions, LostPage, LostQuestion, DOES_NOT_KNOW, LOST_TYPE};

use crate::docs;
use crate::input::{RouteInfo, SiteInput};
use crate::RenderError;

pub(super) const NOT_YET: &str = "not on this instance yet";

/// The path of the MCP endpoint.
pub const MCP_PATH: &str = "/mcp";

/// The tools of `POST /mcp` (library/MCP.md), each with the route it answers as. The discovery
/// documents name them; the api's MCP server serves exactly these, in this order (its tests
/// check).
pub const MCP_TOOLS: [(&str, &str); 8] = [
    ("about", "GET /"),
    ("take_vow", "POST /vow (sandbox)"),
    ("report_in", "POST /vow/report/demo"),
    ("read_ledger", "GET /vow/{id}/chain"),
    ("list_vows", "GET /vows"),
    ("get_reading", "GET /vow/{id}/reading"),
    ("demo_profile", "POST /demo/profile"),
    ("ask", "POST /oracle/ask"),
];

/// The MCP endpoint as the agent card and `/llms.txt` describe it, when the route table has it.
pub fn mcp_summary(routes: &[RouteInfo], public_url: &str) -> Option<serde_json::Value> {
    has_route(routes, "POST", MCP_PATH).then(|| {
        serde_json::json!({
            "url": format!("{public_url}{MCP_PATH}"),
            "transport": "streamable-http",
            "stateless": true,
            "tools": MCP_TOOLS.iter().map(|(name, _)| *name).collect::<Vec<_>>(),
            "moves_money": false,
            "caps": "each tool counts against the per-IP daily cap of the HTTP route it answers as",
            "docs": "/library/MCP.md",
        })
    })
}

pub(super) const HOW_TO_VERIFY: &str =
    "Remove 'signature', canonicalize the rest with RFC 8785 (JCS) and \
verify the base64 Ed25519 signature with the key from /pubkey, pinned out of band.";

// ---------------------------------------------------------------------------------------
// Routes

/// An endpoint a question points at.
pub(super) struct Want {
    method: &'static str,
    path: &'static str,
    /// Shown after the path (e.g. a query), never part of the match.
    query: &'static str,
}

pub(super) const fn want(method: &'static str, path: &'static str) -> Want {
    Want {
        method,
        path,
        query: "",
    }
}

/// One endpoint as `/lost` states it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LostEndpoint {
    /// HTTP method.
    pub method: String,
    /// Path, as shown (with any query hint).
    pub path: String,
    /// The running route table has it.
    pub present: bool,
    /// A plain GET with no template: worth a link.
    pub linked: bool,
    /// The route's description, or "not on this instance yet".
    pub what: String,
}

/// The route answering `w`, when this instance has one (library documents must also be
/// published).
pub(super) fn find_route<'r>(routes: &'r [RouteInfo], w: &Want) -> Option<&'r RouteInfo> {
    if let Some(name) = w.path.strip_prefix("/library/") {
        if name.ends_with(".md") && !docs::published().iter().any(|d| d.name == name) {
            return None;
        }
    }
    routes
        .iter()
        .find(|r| r.method == w.method && r.path == w.path)
        .or_else(|| {
            routes
                .iter()
                .find(|r| r.method == w.method && crate::input::route_matches(r.path, w.path))
        })
}

pub(super) fn endpoint(routes: &[RouteInfo], w: &Want) -> LostEndpoint {
    let found = find_route(routes, w);
    LostEndpoint {
        method: w.method.to_owned(),
        path: format!("{}{}", w.path, w.query),
        present: found.is_some(),
        linked: found.is_some_and(|r| !needs_query(r))
            && w.method == "GET"
            && w.query.is_empty()
            && !w.path.contains('{'),
        what: found.map_or(NOT_YET.to_owned(), |r| r.description.to_owned()),
    }
}

/// A route whose description names a required `?param=` answers nothing useful bare.
pub(super) fn needs_query(r: &RouteInfo) -> bool {
    r.description.contains('?') && r.description.contains('=')
}

pub(super) fn has_route(routes: &[RouteInfo], method: &str, path: &str) -> bool {
    routes.iter().any(|r| r.method == method && r.path == path)
}

/// /lost (.json, .txt, .html) and /llms.txt, as (relative path, bytes).
pub fn discovery_files(input: &SiteInput<'_>) -> Result<Vec<(String, Vec<u8>)>, RenderError> {
    let mut files = lost::lost_files(input)?;
    files.push(("llms.txt".into(), llms::llms_txt(input).into_bytes()));
    Ok(files)
}
