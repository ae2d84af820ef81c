//! conduct-indexer: everything that writes state.
//!
//! Today: the service signing key store, durable file writes, and the SQLite store (payment
//! claims, idempotency), and the transparency-log ledger with its group-commit sequencer. The
//! chain indexer joins here.

pub mod chain;
pub mod clock;
pub mod durable;
pub mod familiar;
pub mod fetch;
pub mod keystore;
pub mod ledger;
pub mod munus;
pub mod nostr;
pub mod store;
pub mod vows;
pub mod witness;
