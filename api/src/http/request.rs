//! A request as the dispatcher sees it, and reading its query: what handlers, the MCP tools
//! and [`crate::http::dispatch`] share, importing none of them.

use std::net::SocketAddr;

use warp::http::{HeaderMap, Method};

/// One request as the dispatcher sees it.
pub struct Request<S> {
    /// Method.
    pub method: Method,
    /// Path (not decoded).
    pub path: String,
    /// Raw query string (may be empty).
    pub query: String,
    /// Headers.
    pub headers: HeaderMap,
    /// Peer address.
    pub remote: Option<SocketAddr>,
    /// Body stream.
    pub body: S,
}

/// The first value of a query parameter, percent-decoded.
pub fn query_param(query: &str, name: &str) -> Option<String> {
    query.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        (k == name).then(|| {
            percent_encoding::percent_decode_str(&v.replace('+', " "))
                .decode_utf8_lossy()
                .into_owned()
        })
    })
}
