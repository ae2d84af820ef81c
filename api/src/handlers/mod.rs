//! The handlers: one module per resource, each answering the routes its rows of
//! [`crate::routes`] name. No handler imports the dispatcher, the route table or the service's
//! state: each takes a narrow context, its module's, listing what it reads (of the shared
//! [`views`], and what only it reads), which the route table's rows build from the state
//! (ARCHITECTURE.md, "api"). What several share is `common` (a vow looked up, a 201 and its
//! render state) and `owner` (the owner-signed write, written once); `refusal` turns each
//! refused append into its problem.
//!
//! A request body a handler parses into a type derives its schema from the type
//! (`Schema::of`, ARCHITECTURE.md, "renderer"); such a type carries a plain comment, not a doc
//! comment, which schemars would publish as the schema's description.

pub mod bodies;
pub mod card;
mod common;
pub mod erc8004;
pub mod familiar;
pub mod health;
pub mod log_proof;
pub mod mcp;
pub mod munus;
pub mod nostr;
pub mod oracle;
mod owner;
pub mod prepare;
pub mod profile;
mod refusal;
pub mod reputation;
pub mod sign_index;
pub mod ticket;
pub mod views;
pub mod vows;
pub mod who;
pub mod witness;

/// The meters a measuring route offers (`/profile`, `/demo/profile`, `/vow/report`,
/// `/vow/report/demo`, `/erc8004/validation` and their MCP tools): every served version.
pub const METERS: &[conduct_core::meter::Meter] = &conduct_core::meter::Meter::ALL;
