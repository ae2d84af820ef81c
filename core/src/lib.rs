//! conduct-core: the pure logic of the conduct attestation service.
//!
//! No IO, no async, no clock. Counterparties depend on this crate alone to recompute
//! `sha256(trace)`, re-run the meter and verify signed objects offline (conduct-verify wraps
//! the checks of attestations, logs and mirrors).
//!
//! Features: `wallet` (default) adds EIP-191 signature recovery (`vow::eip191`), EIP-55
//! addresses and what builds vow records with them (`vow::record::vow_record`,
//! `vow::fixture`) and BIP-340 signing (`nostr::sign_prehash`); it brings in alloy-primitives
//! and k256. Verifiers build without it (they check BIP-340 with `nostr::bip340`).

pub mod attestation;
pub mod canonical;
pub mod erc8004;
pub mod erc8257;
pub mod familiar;
pub mod leaf;
pub mod limits;
pub mod manifest;
pub mod meter;
pub mod munus;
pub mod nostr;
pub mod owner;
pub mod record;
pub mod schema;
pub mod scope;
pub mod signing;
pub mod sync;
pub mod ticket;
pub mod time;
pub mod tlog;
pub mod trace;
pub mod vow;
pub mod witness;
