//! The narrow views of the running service that handlers are given (ARCHITECTURE.md, "api"):
//! a handler module's context is made of these and of the few parts only it reads. The
//! composition root (`state.rs`) cuts them from the service's state for the route table's
//! rows; no handler names that state. The payments view is the gate's
//! ([`crate::payment::gate::Payments`]).

use std::sync::Arc;

use conduct_core::signing::ServiceKey;
use conduct_indexer::chain::ChainConfig;
use conduct_indexer::ledger::Sequencer;
use conduct_indexer::vows::VowReader;
use conduct_renderer::live::LiveSite;

use crate::chain::ChainParts;

/// What signs: the service's key, and the public URL its texts and records name.
#[derive(Clone, Copy)]
pub struct Signing<'a> {
    /// The signing key.
    pub key: &'a ServiceKey,
    /// The public URL (the origin of every owner message).
    pub public_url: &'a str,
}

/// What writes the log and keeps its pages: appends, vow reads, the live site.
#[derive(Clone, Copy)]
pub struct Ledger<'a> {
    /// Appends to the log (group commit).
    pub seq: &'a Sequencer,
    /// Reads of vows and their chains (shared with blocking reads).
    pub vows: &'a Arc<VowReader>,
    /// Keeps the pages current.
    pub site: &'a LiveSite,
}

/// The chain followed: its configuration (none without `[chain]`) and the chain parts (the
/// database, the follower's status, the live reputation read, the RPC).
#[derive(Clone, Copy)]
pub struct Chain<'a> {
    /// `[chain]`, when configured.
    pub cfg: Option<&'a ChainConfig>,
    /// The chain parts.
    pub parts: &'a ChainParts,
}
