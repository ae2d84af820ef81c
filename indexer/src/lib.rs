//! conduct-indexer: everything that writes state.
//!
//! Today: the service signing key store, durable file writes, and the SQLite store (payment
//! claims, idempotency). The ledger sequencer and the chain indexer join here.

pub mod durable;
pub mod keystore;
pub mod store;
