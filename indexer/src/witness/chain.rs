//! The chain side of a witness reading: a wallet's ERC-20 transfers of each pledged asset over
//! a window of whole UTC days, and its balances, as of one block (library/WITNESS.md, "What is
//! read").
//!
//! [`head`] pins the block a reading is taken at (its number, hash and timestamp); [`read`]
//! then finds the window's first block by its timestamp (a binary search over block headers),
//! reads every `Transfer` log with the wallet as sender and as recipient for each asset
//! (`eth_getLogs`, the span halving while a node refuses it), the timestamp of each log's block
//! (the log's own `blockTimestamp` when the node gives it), and `balanceOf(wallet)` by
//! `eth_call` at the pinned block. A node that does not answer is an error, never an empty
//! read: a reading is never "no breach" for lack of a chain.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use alloy::eips::{BlockId, BlockNumberOrTag};
use alloy::primitives::{Address, B256, U256};
use alloy::providers::Provider;
use alloy::rpc::types::{Filter, Log};
use alloy::sol_types::SolEvent;
use conduct_core::erc8004::eip55;
use conduct_core::witness::reading::{window_start, AssetRead, Transfer, Window};

use crate::chain::payment::Transfer as TransferEvent;
use crate::chain::rpc::{Rpc, RpcFailure};

/// The block a reading is taken at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    /// Its number.
    pub number: u64,
    /// Its hash (`0x`, lowercase).
    pub hash: String,
    /// Its timestamp, unix seconds.
    pub time: u64,
}

/// Why a read failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ReadError {
    /// The chain did not answer (or refused, or answered something unusable).
    #[error("{0}")]
    Chain(#[from] RpcFailure),
    /// The window holds more transfers than one reading lists.
    #[error("the window holds more than {0} transfers of the pledged assets")]
    TooMany(usize),
}

fn b256_text(h: &B256) -> String {
    format!("0x{}", hex::encode(h.as_slice()))
}

/// `(hash, timestamp)` of block `n` (the current node, bounded by `timeout`).
async fn header(rpc: &Rpc, n: u64, timeout: Duration) -> Result<(B256, u64), RpcFailure> {
    let p = rpc.provider();
    let got = tokio::time::timeout(timeout, p.get_block_by_number(BlockNumberOrTag::Number(n)))
        .await
        .map_err(|_| RpcFailure::Unreachable(format!("eth_getBlockByNumber({n}): no answer")))?
        .map_err(|e| RpcFailure::Unreachable(format!("eth_getBlockByNumber({n}): {e}")))?;
    let b = got.ok_or_else(|| RpcFailure::Bad(format!("the node has no block {n}")))?;
    Ok((b.header.hash, b.header.timestamp))
}

/// The chain's head now: the block a reading is taken at.
pub async fn head(rpc: &Rpc, timeout: Duration) -> Result<Head, RpcFailure> {
    let number = rpc.head().await?;
    let (hash, time) = header(rpc, number, timeout).await?;
    Ok(Head {
        number,
        hash: b256_text(&hash),
        time,
    })
}

/// The first block whose timestamp is at or after `from` (at most `head.number`).
async fn first_block_at(
    rpc: &Rpc,
    head: &Head,
    from: u64,
    timeout: Duration,
) -> Result<u64, RpcFailure> {
    if head.time < from {
        return Ok(head.number);
    }
    let (_, t0) = header(rpc, 0, timeout).await?;
    if t0 >= from {
        return Ok(0);
    }
    // time(lo) < from <= time(hi).
    let (mut lo, mut hi) = (0u64, head.number);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        let (_, t) = header(rpc, mid, timeout).await?;
        if t >= from {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(hi)
}

/// Every log `base` (address, topics) matches from `from` to `to`, in spans of at most
/// `max_range` blocks (halved while the node refuses a span).
async fn logs_in(
    rpc: &Rpc,
    base: &Filter,
    from: u64,
    to: u64,
    max_range: u64,
) -> Result<Vec<Log>, RpcFailure> {
    let mut out = Vec::new();
    let mut span = max_range.max(1);
    let mut at = from;
    while at <= to {
        let end = to.min(at.saturating_add(span - 1));
        let f = base.clone().from_block(at).to_block(end);
        match rpc.logs(&f).await {
            Ok(l) => {
                out.extend(l);
                at = end + 1;
            }
            Err(RpcFailure::Refused(_)) if span > 1 => span = (span / 2).max(1),
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

/// `balanceOf(wallet)` of `asset` at block `n`.
async fn balance_of(
    rpc: &Rpc,
    asset: Address,
    wallet: Address,
    n: u64,
    timeout: Duration,
) -> Result<U256, RpcFailure> {
    let mut data = Vec::with_capacity(36);
    data.extend_from_slice(&[0x70, 0xa0, 0x82, 0x31]); // balanceOf(address)
    data.extend_from_slice(&[0u8; 12]);
    data.extend_from_slice(wallet.as_slice());
    let tx = alloy::rpc::types::TransactionRequest::default()
        .to(asset)
        .input(data.into());
    let p = rpc.provider();
    let out = tokio::time::timeout(timeout, async {
        p.call(tx).block(BlockId::number(n)).await
    })
    .await
    .map_err(|_| RpcFailure::Unreachable("eth_call balanceOf: no answer".into()))?
    .map_err(|e| match e {
        alloy::transports::RpcError::ErrorResp(e) => {
            RpcFailure::Refused(format!("eth_call balanceOf: {}", e.message))
        }
        e => RpcFailure::Unreachable(format!("eth_call balanceOf: {e}")),
    })?;
    if out.len() < 32 {
        return Err(RpcFailure::Bad(format!(
            "balanceOf of {} answered {} bytes: is it an ERC-20 token?",
            eip55(&asset.into_array()),
            out.len()
        )));
    }
    Ok(U256::from_be_slice(&out[..32]))
}

/// What one reading reads.
#[derive(Debug, Clone)]
pub struct ReadQuery<'a> {
    /// The vow's wallet.
    pub wallet: Address,
    /// The pledged assets.
    pub assets: &'a [Address],
    /// The window, in whole UTC days ending at the head.
    pub days: u64,
    /// Largest block span of one `eth_getLogs`.
    pub max_range: u64,
    /// Most transfers one reading lists, all assets together.
    pub max_transfers: usize,
    /// Bound of each header read and `eth_call`.
    pub timeout: Duration,
}

/// Read what a reading of `q.wallet` over `q.days` whole UTC days ending at `head` checks, for
/// each of `q.assets`: the window, and per asset its transfers and its balance at `head`. At
/// most `q.max_transfers` transfers in all (else [`ReadError::TooMany`]).
pub async fn read(
    rpc: &Rpc,
    head: &Head,
    q: &ReadQuery<'_>,
) -> Result<(Window, Vec<AssetRead>), ReadError> {
    let ReadQuery {
        wallet,
        assets,
        days,
        max_range,
        max_transfers,
        timeout,
    } = *q;
    let from = window_start(head.time, days);
    let from_block = first_block_at(rpc, head, from, timeout).await?;
    let window = Window {
        days,
        from,
        to: head.time,
        from_block,
        to_block: head.number,
        to_block_hash: head.hash.clone(),
    };
    let wallet_topic = B256::left_padding_from(wallet.as_slice());
    let mut times: HashMap<u64, u64> = HashMap::new();
    let mut total = 0usize;
    let mut reads = Vec::with_capacity(assets.len());
    for asset in assets {
        let base = Filter::new()
            .address(*asset)
            .event_signature(TransferEvent::SIGNATURE_HASH);
        let mut logs: BTreeMap<(u64, u64), Log> = BTreeMap::new();
        for f in [
            base.clone().topic1(wallet_topic),
            base.clone().topic2(wallet_topic),
        ] {
            for log in logs_in(rpc, &f, from_block, head.number, max_range).await? {
                if log.removed {
                    continue;
                }
                let (Some(b), Some(i)) = (log.block_number, log.log_index) else {
                    continue;
                };
                if b < from_block || b > head.number {
                    continue;
                }
                logs.insert((b, i), log);
            }
        }
        total += logs.len();
        if total > max_transfers {
            return Err(ReadError::TooMany(max_transfers));
        }
        let mut transfers = Vec::with_capacity(logs.len());
        for ((block, log_index), log) in &logs {
            let Ok(ev) = TransferEvent::decode_log_data(log.data()) else {
                tracing::warn!(
                    block,
                    log_index,
                    "skipping a Transfer log that does not decode"
                );
                continue;
            };
            let time = match (log.block_timestamp, times.get(block)) {
                (Some(t), _) => t,
                (None, Some(t)) => *t,
                (None, None) => header(rpc, *block, timeout).await?.1,
            };
            times.insert(*block, time);
            transfers.push(Transfer {
                tx: log
                    .transaction_hash
                    .map(|h| b256_text(&h))
                    .unwrap_or_default(),
                block: *block,
                log_index: *log_index,
                time,
                from: eip55(&ev.from.into_array()),
                to: eip55(&ev.to.into_array()),
                amount: ev.value.to_string(),
            });
        }
        let balance = balance_of(rpc, *asset, wallet, head.number, timeout).await?;
        reads.push(AssetRead {
            asset: eip55(&asset.into_array()),
            balance: balance.to_string(),
            transfers,
        });
    }
    Ok((window, reads))
}
