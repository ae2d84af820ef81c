//! conduct-api: the `conduct` binary's library, in three rooms (ARCHITECTURE.md, "api"):
//! [`http`] (the accept loop, dispatch over the route table, bodies, replies, free caps, the
//! static tree), [`handlers`] (one module per resource) and [`cmd`] (the subcommands). The one
//! route table is [`routes`]; what the rooms share is at the top ([`state`], [`config`],
//! [`error`], [`sources`], [`payment`], and the service's tokio tasks: [`chain`], [`board`],
//! [`interpretation`]).
//!
//! A small API that handles only what cannot be static (paid calls, signed and free writes,
//! thin lookups); every read is a file of the rendered tree, served with clean URLs and
//! content negotiation.

pub mod board;
pub mod chain;
pub mod cmd;
pub mod config;
pub mod error;
pub mod handlers;
pub mod http;
pub mod interpretation;
pub mod payment;
pub mod routes;
pub mod sources;
pub mod state;

/// Lock a mutex, recovering from poison (the one helper: `conduct_core::sync::lock`).
pub use conduct_core::sync::lock;
