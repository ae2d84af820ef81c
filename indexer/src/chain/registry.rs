//! The ERC-8257 tool registry as the follower reads it: the interface (events, the one view
//! the verifier calls), decoding logs into [`RegistryEvent`]s, and folding a tool's events
//! into its current [`Tool`] row.

use alloy::primitives::{Address, B256, U256};
use alloy::rpc::types::Log;
use alloy::sol_types::SolEvent;

alloy::sol! {
    /// ERC-8257 `IToolRegistry`: the parts the follower and the verifier read.
    #[sol(rpc)]
    interface IToolRegistry {
        /// A tool's on-chain record.
        struct ToolConfig {
            address creator;
            string metadataURI;
            bytes32 manifestHash;
            address accessPredicate;
        }
        /// A tool was registered.
        event ToolRegistered(uint256 indexed toolId, address indexed creator, address indexed accessPredicate, string metadataURI, bytes32 manifestHash);
        /// A tool's manifest location and commitment changed.
        event ToolMetadataUpdated(uint256 indexed toolId, string newURI, bytes32 newHash);
        /// A tool's access predicate changed.
        event AccessPredicateUpdated(uint256 indexed toolId, address indexed newPredicate);
        /// A tool was deregistered (irreversible).
        event ToolDeregistered(uint256 indexed toolId);
        /// The current record of a tool.
        function getToolConfig(uint256 toolId) external view returns (ToolConfig memory);
        /// Register a tool (from the creator's own wallet).
        function registerTool(string metadataURI, bytes32 manifestHash, address accessPredicate) external returns (uint256 toolId);
    }
}

/// The calldata of `registerTool(metadataURI, manifestHash, accessPredicate)`.
pub fn register_tool_calldata(
    metadata_uri: &str,
    manifest_hash: [u8; 32],
    predicate: Address,
) -> Vec<u8> {
    use alloy::sol_types::SolCall;
    IToolRegistry::registerToolCall {
        metadataURI: metadata_uri.to_owned(),
        manifestHash: B256::from(manifest_hash),
        accessPredicate: predicate,
    }
    .abi_encode()
}

/// The topic0 of every registry event the follower reads.
pub fn topics() -> Vec<B256> {
    vec![
        IToolRegistry::ToolRegistered::SIGNATURE_HASH,
        IToolRegistry::ToolMetadataUpdated::SIGNATURE_HASH,
        IToolRegistry::AccessPredicateUpdated::SIGNATURE_HASH,
        IToolRegistry::ToolDeregistered::SIGNATURE_HASH,
    ]
}

/// Why a text is not an address (each names the text).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AddressError {
    /// It does not start with `0x`.
    #[error("{0:?} does not start with 0x")]
    NoPrefix(String),
    /// It is not 40 hex digits after `0x`.
    #[error("{0:?} is not 0x and 40 hex digits")]
    NotHex(String),
    /// The address parser refused it.
    #[error("{text:?}: {reason}")]
    Invalid {
        /// The text.
        text: String,
        /// The parser's reason.
        reason: String,
    },
}

/// Parse a 0x-prefixed 20-byte address (any hex case).
pub fn parse_address(s: &str) -> Result<Address, AddressError> {
    let hex = s
        .strip_prefix("0x")
        .ok_or_else(|| AddressError::NoPrefix(s.to_owned()))?;
    if hex.len() != 40 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(AddressError::NotHex(s.to_owned()));
    }
    s.parse::<Address>().map_err(|e| AddressError::Invalid {
        text: s.to_owned(),
        reason: e.to_string(),
    })
}

/// An address as the registry view shows it: 0x and lower-case hex.
pub fn address_text(a: &Address) -> String {
    alloy::hex::encode_prefixed(a.as_slice())
}

/// A 32-byte value as 0x and lower-case hex.
pub fn b256_text(b: &B256) -> String {
    alloy::hex::encode_prefixed(b.as_slice())
}

/// What one registry event says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventKind {
    /// `ToolRegistered`.
    Registered {
        /// The creator (msg.sender of registerTool).
        creator: String,
        /// The access predicate (zero address: open).
        predicate: String,
        /// The manifest location.
        uri: String,
        /// The manifest commitment.
        hash: String,
    },
    /// `ToolMetadataUpdated`.
    Metadata {
        /// The new location.
        uri: String,
        /// The new commitment.
        hash: String,
    },
    /// `AccessPredicateUpdated`.
    Predicate {
        /// The new predicate.
        predicate: String,
    },
    /// `ToolDeregistered`.
    Deregistered,
}

impl EventKind {
    /// Its name as stored.
    pub fn name(&self) -> &'static str {
        match self {
            EventKind::Registered { .. } => "registered",
            EventKind::Metadata { .. } => "metadata",
            EventKind::Predicate { .. } => "predicate",
            EventKind::Deregistered => "deregistered",
        }
    }

    /// Its stored columns: creator, uri, hash, predicate.
    pub fn columns(&self) -> (Option<&str>, Option<&str>, Option<&str>, Option<&str>) {
        match self {
            EventKind::Registered {
                creator,
                predicate,
                uri,
                hash,
            } => (Some(creator), Some(uri), Some(hash), Some(predicate)),
            EventKind::Metadata { uri, hash } => (None, Some(uri), Some(hash), None),
            EventKind::Predicate { predicate } => (None, None, None, Some(predicate)),
            EventKind::Deregistered => (None, None, None, None),
        }
    }

    /// Back from the stored columns; `None` for a row this version cannot read.
    pub fn from_columns(
        kind: &str,
        creator: Option<String>,
        uri: Option<String>,
        hash: Option<String>,
        predicate: Option<String>,
    ) -> Option<EventKind> {
        Some(match kind {
            "registered" => EventKind::Registered {
                creator: creator?,
                predicate: predicate?,
                uri: uri?,
                hash: hash?,
            },
            "metadata" => EventKind::Metadata {
                uri: uri?,
                hash: hash?,
            },
            "predicate" => EventKind::Predicate {
                predicate: predicate?,
            },
            "deregistered" => EventKind::Deregistered,
            _ => return None,
        })
    }
}

/// A registry event where the chain put it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryEvent {
    /// Block number.
    pub block_number: u64,
    /// Block hash (0x + 64 hex).
    pub block_hash: String,
    /// Index of the log in its block.
    pub log_index: u64,
    /// The transaction (0x + 64 hex).
    pub tx_hash: String,
    /// The tool.
    pub tool_id: u64,
    /// What happened.
    pub kind: EventKind,
}

/// Why a log could not be read as a registry event.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// A log without block number, block hash, log index or transaction (a pending log).
    #[error("log without its position in the chain")]
    Unplaced,
    /// The node returned a log of another event or a malformed one.
    #[error("undecodable registry log: {0}")]
    Abi(String),
    /// A tool id beyond 2^63 (ids count up from 1; such an id is not a registry's).
    #[error("tool id {0} out of range")]
    ToolId(U256),
    /// A log whose topic0 is no event the follower reads.
    #[error("unknown event topic {0}")]
    Unknown(String),
}

/// Decode a log of the registry.
pub fn decode(log: &Log) -> Result<RegistryEvent, DecodeError> {
    let (Some(block_number), Some(block_hash), Some(log_index), Some(tx)) = (
        log.block_number,
        log.block_hash,
        log.log_index,
        log.transaction_hash,
    ) else {
        return Err(DecodeError::Unplaced);
    };
    let abi = |e: alloy::sol_types::Error| DecodeError::Abi(e.to_string());
    let topic0 = log.topic0().copied().unwrap_or_default();
    let (id, kind) = if topic0 == IToolRegistry::ToolRegistered::SIGNATURE_HASH {
        let e = log
            .log_decode::<IToolRegistry::ToolRegistered>()
            .map_err(abi)?;
        let d = e.inner.data;
        (
            d.toolId,
            EventKind::Registered {
                creator: address_text(&d.creator),
                predicate: address_text(&d.accessPredicate),
                uri: d.metadataURI,
                hash: b256_text(&d.manifestHash),
            },
        )
    } else if topic0 == IToolRegistry::ToolMetadataUpdated::SIGNATURE_HASH {
        let e = log
            .log_decode::<IToolRegistry::ToolMetadataUpdated>()
            .map_err(abi)?;
        let d = e.inner.data;
        (
            d.toolId,
            EventKind::Metadata {
                uri: d.newURI,
                hash: b256_text(&d.newHash),
            },
        )
    } else if topic0 == IToolRegistry::AccessPredicateUpdated::SIGNATURE_HASH {
        let e = log
            .log_decode::<IToolRegistry::AccessPredicateUpdated>()
            .map_err(abi)?;
        let d = e.inner.data;
        (
            d.toolId,
            EventKind::Predicate {
                predicate: address_text(&d.newPredicate),
            },
        )
    } else if topic0 == IToolRegistry::ToolDeregistered::SIGNATURE_HASH {
        let e = log
            .log_decode::<IToolRegistry::ToolDeregistered>()
            .map_err(abi)?;
        (e.inner.data.toolId, EventKind::Deregistered)
    } else {
        return Err(DecodeError::Abi(format!("unknown topic {topic0}")));
    };
    let tool_id = u64::try_from(id)
        .ok()
        .filter(|v| *v <= i64::MAX as u64)
        .ok_or(DecodeError::ToolId(id))?;
    Ok(RegistryEvent {
        block_number,
        block_hash: b256_text(&block_hash),
        log_index,
        tx_hash: b256_text(&tx),
        tool_id,
        kind,
    })
}

/// Whether a tool is still registered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolState {
    /// Registered and not deregistered.
    Registered,
    /// Deregistered (irreversible).
    Deregistered,
}

impl ToolState {
    /// As the view shows it.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolState::Registered => "registered",
            ToolState::Deregistered => "deregistered",
        }
    }
}

/// A tool as its events leave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tool {
    /// On-chain id.
    pub tool_id: u64,
    /// Registered or deregistered.
    pub state: ToolState,
    /// The creator (0x + 40 lower-case hex).
    pub creator: String,
    /// The manifest location.
    pub metadata_uri: String,
    /// The manifest commitment (0x + 64 lower-case hex).
    pub manifest_hash: String,
    /// The access predicate (zero address: open).
    pub access_predicate: String,
    /// Block and transaction of the registration.
    pub registered_block: u64,
    /// The registration's transaction.
    pub registered_tx: String,
    /// Block of the latest event.
    pub updated_block: u64,
}

/// Fold events (in chain order) into tools, by id. Events of a tool before its registration
/// are ignored (a registry cannot emit them).
pub fn fold(events: &[RegistryEvent]) -> Vec<Tool> {
    let mut tools: std::collections::BTreeMap<u64, Tool> = Default::default();
    for e in events {
        match &e.kind {
            EventKind::Registered {
                creator,
                predicate,
                uri,
                hash,
            } => {
                tools.insert(
                    e.tool_id,
                    Tool {
                        tool_id: e.tool_id,
                        state: ToolState::Registered,
                        creator: creator.clone(),
                        metadata_uri: uri.clone(),
                        manifest_hash: hash.clone(),
                        access_predicate: predicate.clone(),
                        registered_block: e.block_number,
                        registered_tx: e.tx_hash.clone(),
                        updated_block: e.block_number,
                    },
                );
            }
            other => {
                let Some(t) = tools.get_mut(&e.tool_id) else {
                    continue;
                };
                match other {
                    EventKind::Metadata { uri, hash } => {
                        t.metadata_uri = uri.clone();
                        t.manifest_hash = hash.clone();
                    }
                    EventKind::Predicate { predicate } => t.access_predicate = predicate.clone(),
                    EventKind::Deregistered => t.state = ToolState::Deregistered,
                    EventKind::Registered { .. } => {}
                }
                t.updated_block = e.block_number;
            }
        }
    }
    tools.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(block: u64, idx: u64, tool: u64, kind: EventKind) -> RegistryEvent {
        RegistryEvent {
            block_number: block,
            block_hash: format!("0x{block:064x}"),
            log_index: idx,
            tx_hash: format!("0x{:064x}", block * 100 + idx),
            tool_id: tool,
            kind,
        }
    }

    #[test]
    fn events_fold_into_the_current_record() {
        let reg = |uri: &str| EventKind::Registered {
            creator: "0x00000000000000000000000000000000000000aa".into(),
            predicate: "0x0000000000000000000000000000000000000000".into(),
            uri: uri.into(),
            hash: format!("0x{:064x}", 1),
        };
        let tools = fold(&[
            ev(1, 0, 1, reg("https://a.example/.well-known/ai-tool/a.json")),
            ev(2, 0, 2, reg("https://b.example/.well-known/ai-tool/b.json")),
            ev(
                3,
                0,
                1,
                EventKind::Metadata {
                    uri: "https://a.example/.well-known/ai-tool/a2.json".into(),
                    hash: format!("0x{:064x}", 2),
                },
            ),
            ev(4, 1, 2, EventKind::Deregistered),
            ev(5, 0, 9, EventKind::Deregistered),
        ]);
        assert_eq!(tools.len(), 2);
        assert_eq!(
            tools[0].metadata_uri,
            "https://a.example/.well-known/ai-tool/a2.json"
        );
        assert_eq!(tools[0].updated_block, 3);
        assert_eq!(tools[0].registered_block, 1);
        assert_eq!(tools[1].state, ToolState::Deregistered);
    }

    #[test]
    fn addresses_must_be_forty_hex_digits() {
        assert!(parse_address("0x00000000000000000000000000000000000000aA").is_ok());
        assert!(parse_address("00000000000000000000000000000000000000aa").is_err());
        assert!(parse_address("0x0000000000000000000000000000000000000g0a").is_err());
        assert!(parse_address("0x00").is_err());
    }
}
