//! conduct-indexer: everything that writes state.
//!
//! Today: the service signing key store and durable file writes. The ledger sequencer and the
//! chain indexer join here.

pub mod durable;
pub mod keystore;
