//! The chain indexer: follows one EVM chain over JSON-RPC and keeps what the service shows of
//! it (today the ERC-8257 tool registry) in `<data>/chain.sqlite3`.
//!
//! - [`follower`]: chunked `eth_getLogs` backfill up to head minus confirmations (the chunk
//!   shrinks when a node refuses a range and grows back), then following; every row keeps its
//!   block number, block hash and log index, and the cursor moves in the same transaction as
//!   the rows; a changed block hash rewinds to the common ancestor and re-reads.
//! - [`payment`]: the quest board's payment check (a receipt with the matching ERC-20
//!   `Transfer`: true, false, or None when no RPC answered).
//! - [`rpc`]: one or more RPC URLs, falling over to the next when one fails.
//! - the chain database (events, cursor, anchors, manifest checks) is the store's
//!   [`crate::state::chain`].
//! - [`registry`]: the ERC-8257 events and calls, and the tools folded from the events.
//! - [`prepare`]: the unsigned transactions of `/prepare` (the action catalogue, argument
//!   checks, calldata) and the live reads of their preconditions (library/PREPARE.md).
//! - [`verify`]: the manifest verifier (fetch with [`crate::fetch`], rules in
//!   `conduct_core::erc8257`).
//!
//! A chain that does not answer is `reachable: false` with the last good state, never zeros
//! (ARCHITECTURE.md, "The chain").

pub mod follower;
pub mod payment;
pub mod prepare;
pub mod registry;
pub mod reputation;
pub mod rpc;
pub mod verify;

use serde::Deserialize;

use registry::AddressError;

/// Why a chain task (the follower, the manifest verifier, an RPC client) could not be set up;
/// the text names the configuration key or the URL (by scheme, host and port only).
#[derive(Debug, thiserror::Error)]
pub enum ChainError {
    /// `[chain] rpc` is empty.
    #[error("[chain] rpc: at least one URL")]
    NoRpc,
    /// An RPC URL is not http(s).
    #[error("[chain] rpc: {0:?} is not an http(s) URL")]
    RpcScheme(String),
    /// `[chain] max_range` is 0.
    #[error("[chain] max_range: at least 1")]
    MaxRange,
    /// A contract's address (`[chain.<key>] address`) is not an address.
    #[error("[chain.{key}] address: {source}")]
    ContractAddress {
        /// The contract's table (`registry`, `reputation`, `tickets`, `validation`).
        key: &'static str,
        /// Why.
        source: AddressError,
    },
    /// An address is not one.
    #[error(transparent)]
    Address(#[from] AddressError),
    /// An RPC URL does not parse (named by scheme, host and port).
    #[error("{url}: {reason}")]
    RpcUrl {
        /// The URL, shown without credentials or path.
        url: String,
        /// The parser's reason.
        reason: String,
    },
    /// No RPC URL was given.
    #[error("no RPC URL")]
    NoRpcUrl,
    /// The manifest fetcher's policy is unusable.
    #[error(transparent)]
    Fetch(#[from] crate::fetch::FetchError),
}

/// `[chain]` of `conduct.toml`: the chain to follow. Absent: no chain (every chain-backed page
/// says so).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ChainConfig {
    /// Human name, e.g. "Base".
    pub name: String,
    /// EIP-155 chain id; the follower refuses an RPC that reports another.
    pub chain_id: u64,
    /// JSON-RPC URLs, tried in order; a failing one falls over to the next.
    pub rpc: Vec<String>,
    /// Blocks below the head a block must be before it is indexed.
    #[serde(default = "default_confirmations")]
    pub confirmations: u64,
    /// Milliseconds between polls once caught up.
    #[serde(default = "default_poll_ms")]
    pub poll_ms: u64,
    /// Largest block span of one `eth_getLogs` (it shrinks while a node refuses ranges).
    #[serde(default = "default_max_range")]
    pub max_range: u64,
    /// Seconds one RPC call may take before the URL counts as failing.
    #[serde(default = "default_rpc_timeout")]
    pub rpc_timeout_seconds: u64,
    /// The public RPC URL shown to readers (`/rh`, the registry view). Never one of `rpc`
    /// by default: a provider's URL often carries its API key.
    pub public_rpc: Option<String>,
    /// The ERC-8257 tool registry to view.
    pub registry: Option<ContractConfig>,
    /// The soulbound reputation record to mirror (contracts/Reputation.sol).
    #[serde(default)]
    pub reputation: Option<ContractConfig>,
    /// The ERC-1155 ticket copies contract (contracts/TicketCopies.sol): `/prepare/buy_ticket`,
    /// `/ticket/{game}/*`. Not followed (its `start_block` is not read); absent: not deployed
    /// here (a prepared transaction's `to` is null).
    #[serde(default)]
    pub tickets: Option<ContractConfig>,
    /// The ERC-8004 validation registry (contracts/ValidationRegistry.sol):
    /// `/prepare/validation_request` and `/prepare/validation_response`. Not followed.
    #[serde(default)]
    pub validation: Option<ContractConfig>,
}

/// A followed contract.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ContractConfig {
    /// Its address (0x + 40 hex).
    pub address: String,
    /// The block it was deployed in (nothing below is read).
    #[serde(default)]
    pub start_block: u64,
}

fn default_confirmations() -> u64 {
    2
}
fn default_poll_ms() -> u64 {
    2000
}
fn default_max_range() -> u64 {
    2000
}
fn default_rpc_timeout() -> u64 {
    10
}

impl ChainConfig {
    /// The RPC URL shown to readers: `public_rpc` only.
    pub fn shown_rpc(&self) -> Option<&str> {
        self.public_rpc.as_deref()
    }

    /// Check the values a follower cannot work with; the error names the key.
    pub fn validate(&self) -> Result<(), ChainError> {
        if self.rpc.is_empty() {
            return Err(ChainError::NoRpc);
        }
        for u in &self.rpc {
            let ok = url_scheme(u).is_some_and(|s| s == "http" || s == "https");
            if !ok {
                return Err(ChainError::RpcScheme(u.clone()));
            }
        }
        if self.max_range == 0 {
            return Err(ChainError::MaxRange);
        }
        let contracts = [
            ("registry", &self.registry),
            ("reputation", &self.reputation),
            ("tickets", &self.tickets),
            ("validation", &self.validation),
        ];
        for (key, contract) in contracts {
            if let Some(r) = contract {
                registry::parse_address(&r.address)
                    .map_err(|source| ChainError::ContractAddress { key, source })?;
            }
        }
        Ok(())
    }
}

fn url_scheme(u: &str) -> Option<String> {
    u.split_once("://").map(|(s, _)| s.to_ascii_lowercase())
}

/// What the follower knows of the chain right now (shared with the pages).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChainStatus {
    /// The last poll reached an RPC and it answered.
    pub reachable: bool,
    /// Unix seconds of the last poll that succeeded (kept across restarts).
    pub synced_at: Option<u64>,
    /// The head the last good poll saw.
    pub head: Option<u64>,
    /// The highest block indexed.
    pub indexed_to: Option<u64>,
    /// The backfill has reached head minus confirmations at least once.
    pub caught_up: bool,
    /// Why the last poll failed (URLs named by scheme, host and port only: never a path,
    /// which may carry an API key).
    pub error: Option<String>,
}
