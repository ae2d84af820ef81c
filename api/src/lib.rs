//! conduct-api: the warp server and the pieces of the `conduct` binary.
//!
//! A small API that handles only what cannot be static (paid calls, free demo writes, health);
//! every read is a file of the rendered tree, served with clean URLs and content negotiation.

pub mod app;
pub mod board;
pub mod bodies;
pub mod card;
pub mod chain;
pub mod config;
pub mod dev;
pub mod dev_tls;
pub mod erc8004;
pub mod error;
pub mod familiar;
pub mod mcp;
pub mod munus;
pub mod nginx;
pub mod nostr;
pub mod oracle;
pub mod payment;
pub mod prepare;
pub mod profile;
pub mod ratelimit;
pub mod reading;
mod refusal;
pub mod reply;
pub mod reputation;
pub mod request;
pub mod routes;
pub mod serve;
pub mod sign_index;
pub mod sources;
pub mod state;
pub mod static_site;
pub mod ticket;
pub mod vows;
pub mod who;
pub mod witness;

/// Lock a mutex, recovering from poison (the one helper: `conduct_core::sync::lock`).
pub use conduct_core::sync::lock;
