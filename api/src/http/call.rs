//! One request as the dispatcher hands it to its route's handler (a row of
//! [`crate::routes`]): the service's state, the request's parts, the body the row reads, and
//! the way back into the dispatcher for the MCP tools. A paid row's handler also gets its
//! [`Charge`].

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use warp::http::{header, HeaderMap, Method};
use warp::reply::Response as WarpResponse;

use crate::http::request::{Dispatch, Request, ToolBody};
use crate::payment::gate::{Charge, Pay};
use crate::state::App;

/// The dispatcher, as a plain function an MCP tool's request goes back through.
pub type Again = fn(Arc<App>, Request<ToolBody>) -> BoxFuture<'static, WarpResponse>;

/// One request of a dynamic route.
pub struct Call {
    /// The running service.
    pub app: Arc<App>,
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
    /// The pattern of the route's row (the label of its metrics, library/METRICS.md).
    pub pattern: &'static str,
    /// The body, read (JSON, bounded, within its deadline) when the route's row says so;
    /// empty otherwise.
    pub body: Bytes,
    /// The dispatcher, for the MCP tools ([`Call::tools`]).
    pub again: Again,
}

impl Call {
    /// The `Accept` header, when it is text.
    pub fn accept(&self) -> Option<&str> {
        self.headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
    }

    /// The context a handler takes, cut from the service's state by the composition root
    /// (its `From<&App>`, `state.rs`).
    pub fn ctx<'a, T: From<&'a App>>(&'a self) -> T {
        T::from(&self.app)
    }

    /// This request of a route paid on `pay`'s terms (the paid resource is this path at the
    /// public URL), described for discovery by `bazaar`.
    pub fn charge(
        &self,
        pay: &'static Pay,
        bazaar: Option<&'static serde_json::Value>,
    ) -> Charge<'_> {
        Charge {
            pay,
            url: format!("{}{}", self.app.cfg.public_url, self.path),
            pattern: self.pattern,
            bazaar,
            headers: &self.headers,
        }
    }

    /// What the MCP tools dispatch their requests through: the dispatcher over this service.
    pub fn tools(&self) -> Dispatch {
        let (app, again) = (self.app.clone(), self.again);
        Arc::new(move |req: Request<ToolBody>| again(app.clone(), req))
    }
}
