//! A request as the dispatcher sees it, and reading its query: what handlers, the MCP tools
//! and [`crate::http::dispatch`] share, importing none of them. The MCP tools' requests
//! ([`ToolBody`]) go back through the dispatcher as a [`Dispatch`].

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use conduct_core::trace::FieldError;
use futures_util::future::BoxFuture;
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

/// The query parameter `name` that a route requires: its value, or empty with the field error
/// `?name` ("missing query parameter") added to `errs`.
pub fn required_param(query: &str, name: &str, errs: &mut Vec<FieldError>) -> String {
    let v = query_param(query, name);
    if v.is_none() {
        errs.push(FieldError::at(
            format!("?{name}"),
            "missing query parameter",
        ));
    }
    v.unwrap_or_default()
}

/// The body of a request an MCP tool makes: its one JSON chunk.
pub type ToolBody = futures_util::stream::Once<std::future::Ready<Result<Bytes, warp::Error>>>;

/// The dispatcher an MCP tool's request goes through: `http::dispatch` over the running
/// service, handed to `POST /mcp` with its request (so the tools import neither).
pub type Dispatch =
    Arc<dyn Fn(Request<ToolBody>) -> BoxFuture<'static, warp::reply::Response> + Send + Sync>;
