//! The HTTP room: the accept loop ([`conn`]), dispatch over the route table ([`dispatch`]),
//! request bodies ([`body`]), replies and problems ([`reply`]), the free daily caps and the
//! client address they count ([`caps`]), the rendered tree ([`static_site`]), and the
//! operators' `GET /metrics` on a listener of its own ([`metrics`]). It names no
//! handler: a route's handler is a row of [`crate::routes`].

pub mod body;
pub mod call;
pub mod caps;
pub mod conn;
pub mod dispatch;
pub mod metrics;
pub mod prefer;
pub mod reply;
pub mod request;
pub mod server;
pub mod static_objects;
pub mod static_site;
