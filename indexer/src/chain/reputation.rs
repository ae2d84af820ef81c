//! The soulbound reputation record as the follower reads it (contracts/Reputation.sol,
//! library/REPUTATION.md): the interface (events, the views a live check calls), decoding logs
//! into [`ReputationEvent`]s, and folding them into the mirror: each wallet's score (the
//! `newScore` of its latest credit or slash), the threshold, the authorized markets and
//! arbiters. Only the contract's events move the mirror; a token transfer or a payment emits
//! none of them, so it cannot.

use std::collections::BTreeMap;

pub use alloy::primitives::U256;
use alloy::primitives::{Address, B256};
use alloy::rpc::types::Log;
use alloy::sol_types::SolEvent;

use super::registry::{address_text, b256_text, DecodeError};

alloy::sol! {
    /// `Reputation.sol`: the parts the follower and the live checks read.
    #[sol(rpc)]
    interface IReputation {
        /// An authorized market credited a wallet (a market outcome).
        event Credited(address indexed who, address indexed market, uint256 amount, uint256 newScore, bytes32 outcome);
        /// An authorized arbiter slashed a wallet (a ruling); `amount` is what was removed.
        event Slashed(address indexed who, address indexed arbiter, uint256 amount, uint256 newScore, bytes32 ruling);
        /// Governance authorized or deauthorized a market.
        event MarketSet(address indexed market, bool authorized);
        /// Governance authorized or deauthorized an arbiter.
        event ArbiterSet(address indexed arbiter, bool authorized);
        /// Governance set the threshold of `meets`.
        event ThresholdSet(uint256 threshold);
        /// Governance passed to another address.
        event GovernanceTransferred(address indexed from, address indexed to);
        /// A wallet's score.
        function scoreOf(address who) external view returns (uint256);
        /// Whether a wallet's score reaches the threshold.
        function meets(address who) external view returns (bool);
        /// The public threshold.
        function threshold() external view returns (uint256);
    }
}

/// The topic0 of every reputation event the follower reads.
pub fn topics() -> Vec<B256> {
    vec![
        IReputation::Credited::SIGNATURE_HASH,
        IReputation::Slashed::SIGNATURE_HASH,
        IReputation::MarketSet::SIGNATURE_HASH,
        IReputation::ArbiterSet::SIGNATURE_HASH,
        IReputation::ThresholdSet::SIGNATURE_HASH,
        IReputation::GovernanceTransferred::SIGNATURE_HASH,
    ]
}

/// What one reputation event says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RepKind {
    /// `Credited`: `actor` is the market.
    Credited {
        /// The wallet credited.
        who: String,
        /// The market contract.
        actor: String,
        /// Amount credited (decimal).
        amount: String,
        /// The score after (decimal).
        new_score: String,
        /// The market outcome (0x + 64 hex).
        reason: String,
    },
    /// `Slashed`: `actor` is the arbiter.
    Slashed {
        /// The wallet slashed.
        who: String,
        /// The arbiter.
        actor: String,
        /// Amount removed (decimal).
        amount: String,
        /// The score after (decimal).
        new_score: String,
        /// The ruling (0x + 64 hex).
        reason: String,
    },
    /// `MarketSet`.
    MarketSet {
        /// The market.
        actor: String,
        /// Authorized or not.
        authorized: bool,
    },
    /// `ArbiterSet`.
    ArbiterSet {
        /// The arbiter.
        actor: String,
        /// Authorized or not.
        authorized: bool,
    },
    /// `ThresholdSet`.
    ThresholdSet {
        /// The new threshold (decimal).
        threshold: String,
    },
    /// `GovernanceTransferred`.
    Governance {
        /// The previous governance.
        from: String,
        /// The new governance.
        to: String,
    },
}

impl RepKind {
    /// The stored kind name.
    pub fn name(&self) -> &'static str {
        match self {
            RepKind::Credited { .. } => "credited",
            RepKind::Slashed { .. } => "slashed",
            RepKind::MarketSet { .. } => "market",
            RepKind::ArbiterSet { .. } => "arbiter",
            RepKind::ThresholdSet { .. } => "threshold",
            RepKind::Governance { .. } => "governance",
        }
    }

    /// The stored columns: (who, actor, amount, value, reason). `value` is the new score, the
    /// threshold, or `1`/`0` for an authorization.
    pub fn columns(&self) -> [Option<String>; 5] {
        match self {
            RepKind::Credited {
                who,
                actor,
                amount,
                new_score,
                reason,
            }
            | RepKind::Slashed {
                who,
                actor,
                amount,
                new_score,
                reason,
            } => [
                Some(who.clone()),
                Some(actor.clone()),
                Some(amount.clone()),
                Some(new_score.clone()),
                Some(reason.clone()),
            ],
            RepKind::MarketSet { actor, authorized }
            | RepKind::ArbiterSet { actor, authorized } => [
                None,
                Some(actor.clone()),
                None,
                Some(if *authorized { "1" } else { "0" }.into()),
                None,
            ],
            RepKind::ThresholdSet { threshold } => {
                [None, None, None, Some(threshold.clone()), None]
            }
            RepKind::Governance { from, to } => {
                [Some(to.clone()), Some(from.clone()), None, None, None]
            }
        }
    }

    /// Rebuild from stored columns (see [`RepKind::columns`]); `None` for a row that names no
    /// kind (never written by this code).
    pub fn from_columns(kind: &str, c: [Option<String>; 5]) -> Option<RepKind> {
        let [who, actor, amount, value, reason] = c;
        Some(match kind {
            "credited" => RepKind::Credited {
                who: who?,
                actor: actor?,
                amount: amount?,
                new_score: value?,
                reason: reason?,
            },
            "slashed" => RepKind::Slashed {
                who: who?,
                actor: actor?,
                amount: amount?,
                new_score: value?,
                reason: reason?,
            },
            "market" => RepKind::MarketSet {
                actor: actor?,
                authorized: value? == "1",
            },
            "arbiter" => RepKind::ArbiterSet {
                actor: actor?,
                authorized: value? == "1",
            },
            "threshold" => RepKind::ThresholdSet { threshold: value? },
            "governance" => RepKind::Governance {
                from: actor?,
                to: who?,
            },
            _ => return None,
        })
    }
}

/// One reputation event, where the chain put it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReputationEvent {
    /// Block number.
    pub block_number: u64,
    /// Block hash (0x + 64 lower-case hex).
    pub block_hash: String,
    /// Log index in the block.
    pub log_index: u64,
    /// Transaction hash.
    pub tx_hash: String,
    /// What it says.
    pub kind: RepKind,
}

fn dec(v: U256) -> String {
    v.to_string()
}

fn addr(a: Address) -> String {
    address_text(&a)
}

/// Decode a reputation log (the caller filtered by address and topic).
pub fn decode(log: &Log) -> Result<ReputationEvent, DecodeError> {
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
    let kind = if topic0 == IReputation::Credited::SIGNATURE_HASH {
        let e = log
            .log_decode::<IReputation::Credited>()
            .map_err(abi)?
            .inner
            .data;
        RepKind::Credited {
            who: addr(e.who),
            actor: addr(e.market),
            amount: dec(e.amount),
            new_score: dec(e.newScore),
            reason: b256_text(&e.outcome),
        }
    } else if topic0 == IReputation::Slashed::SIGNATURE_HASH {
        let e = log
            .log_decode::<IReputation::Slashed>()
            .map_err(abi)?
            .inner
            .data;
        RepKind::Slashed {
            who: addr(e.who),
            actor: addr(e.arbiter),
            amount: dec(e.amount),
            new_score: dec(e.newScore),
            reason: b256_text(&e.ruling),
        }
    } else if topic0 == IReputation::MarketSet::SIGNATURE_HASH {
        let e = log
            .log_decode::<IReputation::MarketSet>()
            .map_err(abi)?
            .inner
            .data;
        RepKind::MarketSet {
            actor: addr(e.market),
            authorized: e.authorized,
        }
    } else if topic0 == IReputation::ArbiterSet::SIGNATURE_HASH {
        let e = log
            .log_decode::<IReputation::ArbiterSet>()
            .map_err(abi)?
            .inner
            .data;
        RepKind::ArbiterSet {
            actor: addr(e.arbiter),
            authorized: e.authorized,
        }
    } else if topic0 == IReputation::ThresholdSet::SIGNATURE_HASH {
        let e = log
            .log_decode::<IReputation::ThresholdSet>()
            .map_err(abi)?
            .inner
            .data;
        RepKind::ThresholdSet {
            threshold: dec(e.threshold),
        }
    } else if topic0 == IReputation::GovernanceTransferred::SIGNATURE_HASH {
        let e = log
            .log_decode::<IReputation::GovernanceTransferred>()
            .map_err(abi)?
            .inner
            .data;
        RepKind::Governance {
            from: addr(e.from),
            to: addr(e.to),
        }
    } else {
        return Err(DecodeError::Unknown(b256_text(&topic0)));
    };
    Ok(ReputationEvent {
        block_number,
        block_hash: b256_text(&block_hash),
        log_index,
        tx_hash: b256_text(&tx),
        kind,
    })
}

/// The runtime code of `contracts/Reputation.sol` as this repository compiles it.
const ARTIFACT: &str = include_str!("../../../contracts/out/Reputation.json");

/// What a live read of the contract said (`None` fields: the chain did not answer).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Probe {
    /// Code is deployed at the address (`Some(false)`: the chain answered, no code).
    pub deployed: Option<bool>,
    /// The deployed code is byte-identical to this repository's compiled Reputation.sol.
    pub verified: Option<bool>,
    /// `threshold()` now.
    pub threshold: Option<U256>,
    /// Unix seconds of the read.
    pub at: u64,
}

/// The compiled runtime code of Reputation.sol (from the committed artifact).
pub fn artifact_runtime() -> Option<Vec<u8>> {
    let v: serde_json::Value = serde_json::from_str(ARTIFACT).ok()?;
    let hex = v["deployedBytecode"].as_str()?.trim_start_matches("0x");
    hex::decode(hex).ok()
}

/// Read the contract at `address` live: is it there, is it ours, its threshold.
pub async fn probe(rpc: &super::rpc::Rpc, address: Address, now: u64) -> Probe {
    use alloy::sol_types::SolCall;
    let mut p = Probe {
        at: now,
        ..Probe::default()
    };
    let Ok(code) = rpc.code(address).await else {
        return p;
    };
    p.deployed = Some(!code.is_empty());
    if code.is_empty() {
        return p;
    }
    p.verified = artifact_runtime().map(|a| a == code.as_ref());
    let data = IReputation::thresholdCall {}.abi_encode();
    if let Ok(out) = rpc.view(address, data).await {
        p.threshold = IReputation::thresholdCall::abi_decode_returns(&out).ok();
    }
    p
}

/// `scoreOf(who)` and `meets(who)` read live; `None` when the chain did not answer (or the
/// answer did not decode).
pub async fn live_score(
    rpc: &super::rpc::Rpc,
    address: Address,
    who: Address,
) -> Option<(U256, bool)> {
    use alloy::sol_types::SolCall;
    // Both reads at once: a chain that does not answer costs one timeout, not two.
    let (score, meets) = tokio::join!(
        rpc.view(address, IReputation::scoreOfCall { who }.abi_encode()),
        rpc.view(address, IReputation::meetsCall { who }.abi_encode()),
    );
    let (score, meets) = (score.ok()?, meets.ok()?);
    Some((
        IReputation::scoreOfCall::abi_decode_returns(&score).ok()?,
        IReputation::meetsCall::abi_decode_returns(&meets).ok()?,
    ))
}

/// The mirror: what the events say now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Mirror {
    /// Each wallet that was ever credited or slashed, with its score (decimal).
    pub scores: BTreeMap<String, U256>,
    /// The threshold of `meets`, when a `ThresholdSet` was seen (the contract starts at 0).
    pub threshold: Option<U256>,
    /// Markets authorized now.
    pub markets: Vec<String>,
    /// Arbiters authorized now.
    pub arbiters: Vec<String>,
    /// Governance now, when a transfer was seen.
    pub governance: Option<String>,
    /// Events folded.
    pub events: usize,
}

impl Mirror {
    /// Whether `score` meets the threshold (the contract's rule: `score >= threshold`; a
    /// threshold never set is 0, as the contract starts).
    pub fn meets(&self, score: U256) -> bool {
        score >= self.threshold.unwrap_or(U256::ZERO)
    }
}

/// Fold events (in chain order) into the mirror.
pub fn fold(events: &[ReputationEvent]) -> Mirror {
    let mut m = Mirror::default();
    let mut markets = BTreeMap::new();
    let mut arbiters = BTreeMap::new();
    for e in events {
        m.events += 1;
        match &e.kind {
            RepKind::Credited { who, new_score, .. } | RepKind::Slashed { who, new_score, .. } => {
                let v = U256::from_str_radix(new_score, 10).unwrap_or_default();
                m.scores.insert(who.clone(), v);
            }
            RepKind::MarketSet { actor, authorized } => {
                markets.insert(actor.clone(), *authorized);
            }
            RepKind::ArbiterSet { actor, authorized } => {
                arbiters.insert(actor.clone(), *authorized);
            }
            RepKind::ThresholdSet { threshold } => {
                m.threshold = U256::from_str_radix(threshold, 10).ok();
            }
            RepKind::Governance { to, .. } => m.governance = Some(to.clone()),
        }
    }
    m.markets = markets
        .into_iter()
        .filter(|(_, a)| *a)
        .map(|(k, _)| k)
        .collect();
    m.arbiters = arbiters
        .into_iter()
        .filter(|(_, a)| *a)
        .map(|(k, _)| k)
        .collect();
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(n: u64, kind: RepKind) -> ReputationEvent {
        ReputationEvent {
            block_number: n,
            block_hash: format!("0x{:064x}", n),
            log_index: 0,
            tx_hash: format!("0x{:064x}", n + 1000),
            kind,
        }
    }

    #[test]
    fn the_latest_credit_or_slash_is_the_score_and_columns_round_trip() {
        let w = "0x00000000000000000000000000000000000000aa".to_owned();
        let market = "0x00000000000000000000000000000000000000bb".to_owned();
        let r = format!("0x{}", "0".repeat(64));
        let events = vec![
            ev(
                1,
                RepKind::MarketSet {
                    actor: market.clone(),
                    authorized: true,
                },
            ),
            ev(
                2,
                RepKind::ThresholdSet {
                    threshold: "10".into(),
                },
            ),
            ev(
                3,
                RepKind::Credited {
                    who: w.clone(),
                    actor: market.clone(),
                    amount: "7".into(),
                    new_score: "7".into(),
                    reason: r.clone(),
                },
            ),
            ev(
                4,
                RepKind::Credited {
                    who: w.clone(),
                    actor: market.clone(),
                    amount: "5".into(),
                    new_score: "12".into(),
                    reason: r.clone(),
                },
            ),
            ev(
                5,
                RepKind::Slashed {
                    who: w.clone(),
                    actor: market.clone(),
                    amount: "3".into(),
                    new_score: "9".into(),
                    reason: r,
                },
            ),
            ev(
                6,
                RepKind::MarketSet {
                    actor: market.clone(),
                    authorized: false,
                },
            ),
        ];
        let m = fold(&events);
        assert_eq!(m.scores[&w], U256::from(9));
        assert!(!m.meets(m.scores[&w]));
        assert!(m.meets(U256::from(10)));
        assert!(m.markets.is_empty());
        for e in &events {
            assert_eq!(
                RepKind::from_columns(e.kind.name(), e.kind.columns()),
                Some(e.kind.clone())
            );
        }
    }
}
