//! conduct-indexer: everything that writes state (ARCHITECTURE.md, "indexer").
//!
//! The service signing key store, durable file writes, the store (`store/`: SQLite, a module
//! per table group, and the append seam's implementation), the transparency-log ledger with
//! its group-commit sequencer and the append seam (`ledger/`), the features' jobs (vows, the
//! quest board, Nostr bindings, the witness, familiars), the service clock, the SSRF-safe
//! fetcher, and the chain indexer (`chain/`: the follower, the manifest verifier, payment
//! checks, prepared transactions).

pub mod chain;
pub mod clean_stop;
pub mod clock;
pub mod durable;
pub mod familiar;
pub mod fetch;
pub mod integrated;
#[cfg(test)]
mod job_bench;
pub mod keystore;
pub mod ledger;
pub mod metrics;
pub mod munus;
pub mod nostr;
pub mod state;
/// The State seam's SQLite backend, by its older name (`state::sqlite`).
pub use state::sqlite as store;
pub mod tree;
pub mod vows;
pub mod witness;
