//! The handlers: one module per resource, each answering the routes its rows of
//! [`crate::routes`] name. No handler imports the dispatcher or the route table.

pub mod bodies;
pub mod card;
pub mod erc8004;
pub mod familiar;
pub mod health;
pub mod log_proof;
pub mod mcp;
pub mod munus;
pub mod nostr;
pub mod oracle;
pub mod prepare;
pub mod profile;
mod refusal;
pub mod reputation;
pub mod sign_index;
pub mod ticket;
pub mod vows;
pub mod who;
pub mod witness;
