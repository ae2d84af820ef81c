//! A witness reading (library/WITNESS.md, "The arithmetic"): the pledged limits checked
//! against the wallet's ERC-20 transfers over a window of whole UTC days and its balance at
//! the window's last block, all read from the chain by the caller (the indexer). No clock and
//! no IO here: the same transfers, balances and limits give the same document.
//!
//! - **Direction**: a transfer from the wallet to another address is an outflow, from another
//!   address to the wallet an inflow; a transfer from the wallet to itself moves nothing and is
//!   listed as `self`, counted in neither.
//! - **`max_outflow_per_day`**: the outflows of each UTC day of the window (by block
//!   timestamp) are summed; a day whose sum is over the limit is a breach listing every outflow
//!   of that day with the running total, and `crossed_by`, the transfer after which the sum
//!   first went over.
//! - **`max_balance`**: the balance at the window's start is the balance read at its last
//!   block minus the window's inflows plus its outflows; the running balance then follows the
//!   transfers in chain order. Any point over the limit (the start, after a transfer, the end)
//!   is a breach listing the inflows after which the running balance was over. A token whose
//!   balance moves without `Transfer` events (rebasing, fees) can make that reconstruction
//!   negative: then only the balance read is checked, and the breach says so.

use std::collections::BTreeMap;

use num_bigint::{BigInt, BigUint};
use serde_json::{json, Map, Value};

use super::{amount, Limit, ValueError};
use crate::canonical::{jcs_map, CanonicalError};
use crate::scope::scope_value;
use crate::signing::ServiceKey;
use crate::time::rfc3339;

/// Type of a signed reading.
pub const READING_TYPE: &str = "conduct.witness-reading/v1";

/// What every reading says it is.
pub const WHAT: &str = "A witness reading: the vow's pledged portfolio limits checked \
arithmetically against the wallet's ERC-20 Transfer events over the window and its balance at \
the window's last block, as the service read them from the chain. breaches is empty when every \
limit held. It says what the chain showed, not why; it is not trade advice.";

/// One ERC-20 `Transfer` touching the wallet, as read from the chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transfer {
    /// Transaction hash (`0x`, lowercase).
    pub tx: String,
    /// Block number.
    pub block: u64,
    /// Log index within the block.
    pub log_index: u64,
    /// Block timestamp, unix seconds.
    pub time: u64,
    /// Sender, EIP-55.
    pub from: String,
    /// Recipient, EIP-55.
    pub to: String,
    /// Amount in base units, decimal.
    pub amount: String,
}

/// What was read for one asset: its transfers over the window and the balance at its end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssetRead {
    /// The token, EIP-55.
    pub asset: String,
    /// `balanceOf(wallet)` at the window's last block, decimal.
    pub balance: String,
    /// Transfers from or to the wallet over the window, in any order.
    pub transfers: Vec<Transfer>,
}

/// The window read: whole UTC days ending at the chain's block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    /// Length in UTC days (1 to [`super::MAX_WINDOW_DAYS`]).
    pub days: u64,
    /// Its first instant (00:00:00 UTC of its first day), unix seconds.
    pub from: u64,
    /// The last block's timestamp, unix seconds.
    pub to: u64,
    /// The first block at or after `from`.
    pub from_block: u64,
    /// The last block read (the head when the reading began).
    pub to_block: u64,
    /// That block's hash (`0x`, lowercase).
    pub to_block_hash: String,
}

/// The first instant of the window of `days` UTC days that ends at `head_time`.
pub fn window_start(head_time: u64, days: u64) -> u64 {
    let today = head_time - head_time % 86_400;
    today.saturating_sub(days.saturating_sub(1) * 86_400)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    In,
    Out,
    SelfTransfer,
}

impl Direction {
    fn name(self) -> &'static str {
        match self {
            Direction::In => "in",
            Direction::Out => "out",
            Direction::SelfTransfer => "self",
        }
    }
}

fn direction(t: &Transfer, wallet: &str) -> Option<Direction> {
    let from = t.from.eq_ignore_ascii_case(wallet);
    let to = t.to.eq_ignore_ascii_case(wallet);
    match (from, to) {
        (true, true) => Some(Direction::SelfTransfer),
        (true, false) => Some(Direction::Out),
        (false, true) => Some(Direction::In),
        (false, false) => None,
    }
}

/// A transfer as a reading lists it.
fn transfer_value(t: &Transfer, d: Direction) -> Value {
    json!({
        "tx": t.tx,
        "block": t.block,
        "log_index": t.log_index,
        "at": rfc3339(t.time),
        "direction": d.name(),
        "from": t.from,
        "to": t.to,
        "amount": t.amount,
    })
}

fn at_ref(t: &Transfer) -> Value {
    json!({"tx": t.tx, "block": t.block, "log_index": t.log_index})
}

/// The checked limits: one summary per pledged asset and every breach, in asset order (and
/// by day, then kind, within an asset).
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    /// Per pledged asset: its limits, balances, daily outflows and transfers.
    pub assets: Vec<Value>,
    /// Every breach (empty when every limit held).
    pub breaches: Vec<Value>,
}

/// Why reads do not fit the limits they are checked against.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadsError {
    /// A pledged asset has no read.
    #[error("no read of {0}")]
    NoRead(String),
    /// A transfer touches neither side of the wallet (its transaction).
    #[error("transfer {0} does not touch the wallet")]
    Stranger(String),
    /// An amount (a transfer's, the balance, a limit) is malformed.
    #[error("{what}: {source}")]
    Amount {
        /// Which amount.
        what: &'static str,
        /// Why.
        source: ValueError,
    },
}

/// Check `limits` of `wallet` against `reads` (one per pledged asset). Refused when an asset
/// has no read, a read's amount is malformed, or a transfer touches neither side of the wallet.
pub fn evaluate(
    wallet: &str,
    limits: &[Limit],
    reads: &[AssetRead],
) -> Result<Evaluation, ReadsError> {
    let mut assets = Vec::with_capacity(limits.len());
    let mut breaches = Vec::new();
    for limit in limits {
        let read = reads
            .iter()
            .find(|r| r.asset.eq_ignore_ascii_case(&limit.asset))
            .ok_or_else(|| ReadsError::NoRead(limit.asset.clone()))?;
        let (summary, found) = evaluate_asset(wallet, limit, read)?;
        assets.push(summary);
        breaches.extend(found);
    }
    Ok(Evaluation { assets, breaches })
}

fn big(s: &str, what: &'static str) -> Result<BigUint, ReadsError> {
    amount(s).map_err(|source| ReadsError::Amount { what, source })
}

fn evaluate_asset(
    wallet: &str,
    limit: &Limit,
    read: &AssetRead,
) -> Result<(Value, Vec<Value>), ReadsError> {
    let mut transfers: Vec<(&Transfer, Direction, BigUint)> = Vec::new();
    for t in &read.transfers {
        let d = direction(t, wallet).ok_or_else(|| ReadsError::Stranger(t.tx.clone()))?;
        transfers.push((t, d, big(&t.amount, "a transfer's amount")?));
    }
    transfers.sort_by_key(|(t, _, _)| (t.block, t.log_index));
    let balance = big(&read.balance, "the balance")?;
    let (mut inflow, mut outflow) = (BigUint::default(), BigUint::default());
    let mut by_day: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    for (i, (t, d, a)) in transfers.iter().enumerate() {
        match d {
            Direction::In => inflow += a,
            Direction::Out => {
                outflow += a;
                by_day.entry(t.time / 86_400).or_default().push(i);
            }
            Direction::SelfTransfer => {}
        }
    }
    let mut breaches = Vec::new();

    // max_outflow_per_day: each UTC day's outflows against the limit.
    let mut days = Vec::new();
    for (day, idx) in &by_day {
        let date = rfc3339(day * 86_400)[..10].to_owned();
        let mut sum = BigUint::default();
        let mut listed = Vec::new();
        let mut crossed: Option<&Transfer> = None;
        let max = match &limit.max_outflow_per_day {
            Some(m) => Some(big(m, "max_outflow_per_day")?),
            None => None,
        };
        for &i in idx {
            let (t, d, a) = &transfers[i];
            sum += a;
            let mut v = transfer_value(t, *d);
            v["running_total"] = json!(sum.to_string());
            listed.push(v);
            if crossed.is_none() && max.as_ref().is_some_and(|m| &sum > m) {
                crossed = Some(t);
            }
        }
        days.push(json!({"date": date, "outflow": sum.to_string(), "transfers": idx.len()}));
        if let (Some(m), Some(c)) = (&max, crossed) {
            breaches.push(json!({
                "asset": limit.asset,
                "limit": "max_outflow_per_day",
                "limit_value": m.to_string(),
                "date": date,
                "observed": sum.to_string(),
                "excess": (&sum - m).to_string(),
                "crossed_by": at_ref(c),
                "transfers": listed,
            }));
        }
    }

    // max_balance: the running balance from the window's start to its last block.
    let start = BigInt::from(balance.clone()) - BigInt::from(inflow.clone())
        + BigInt::from(outflow.clone());
    let reconstructed = start >= BigInt::default();
    let mut peak = if reconstructed {
        start.clone()
    } else {
        BigInt::from(balance.clone())
    };
    let mut over_by: Vec<Value> = Vec::new();
    if let Some(m) = &limit.max_balance {
        let max = BigInt::from(big(m, "max_balance")?);
        let mut running = start.clone();
        let over_at_start = reconstructed && running > max;
        if reconstructed {
            for (t, d, a) in &transfers {
                match d {
                    Direction::In => running += BigInt::from(a.clone()),
                    Direction::Out => running -= BigInt::from(a.clone()),
                    Direction::SelfTransfer => {}
                }
                if running > peak {
                    peak = running.clone();
                }
                if *d == Direction::In && running > max {
                    let mut v = transfer_value(t, *d);
                    v["running_balance"] = json!(running.to_string());
                    over_by.push(v);
                }
            }
        }
        let current = BigInt::from(balance.clone());
        let over_now = current > max;
        if over_at_start || over_now || !over_by.is_empty() {
            let observed = if peak > current {
                peak.clone()
            } else {
                current.clone()
            };
            let mut b = json!({
                "asset": limit.asset,
                "limit": "max_balance",
                "limit_value": m,
                "observed": observed.to_string(),
                "excess": (&observed - &max).to_string(),
                "over_at_window_start": over_at_start,
                "over_at_last_block": over_now,
                "transfers": over_by,
            });
            if !reconstructed {
                b["note"] = json!(
                    "the balance at the window's start cannot be reconstructed \
                    from Transfer events (the token's balance moves without them): only the \
                    balance read at the last block is checked"
                );
            }
            breaches.push(b);
        }
    } else if reconstructed {
        let mut running = start.clone();
        for (_, d, a) in &transfers {
            match d {
                Direction::In => running += BigInt::from(a.clone()),
                Direction::Out => running -= BigInt::from(a.clone()),
                Direction::SelfTransfer => {}
            }
            if running > peak {
                peak = running.clone();
            }
        }
    }
    let summary = json!({
        "asset": limit.asset,
        "max_balance": limit.max_balance,
        "max_outflow_per_day": limit.max_outflow_per_day,
        "balance": balance.to_string(),
        "balance_at_window_start": reconstructed.then(|| start.to_string()),
        "peak_balance": reconstructed.then(|| peak.to_string()),
        "inflow": inflow.to_string(),
        "outflow": outflow.to_string(),
        "outflow_by_day": days,
        "transfers": transfers
            .iter()
            .map(|(t, d, _)| transfer_value(t, *d))
            .collect::<Vec<_>>(),
    });
    Ok((summary, breaches))
}

/// Everything a signed reading states besides the evaluation.
#[derive(Debug, Clone)]
pub struct ReadingInput<'a> {
    /// The vow whose pledge is read.
    pub vow_id: &'a str,
    /// Its wallet, EIP-55.
    pub wallet: &'a str,
    /// The chain: `{name, chain_id}`.
    pub chain: Value,
    /// Log index of the pledge checked (the vow's latest).
    pub pledge_log_index: u64,
    /// When that pledge was recorded, unix seconds.
    pub pledge_at: u64,
    /// Its limits.
    pub limits: &'a [Limit],
    /// The window read.
    pub window: &'a Window,
    /// What was read, per asset.
    pub reads: &'a [AssetRead],
    /// The instant of issue, unix seconds.
    pub issued_at: u64,
    /// The service's public URL.
    pub issuer: &'a str,
}

/// The unsigned reading object: `type`, `what`, `vow_id`, `wallet`, `chain`, `pledge`,
/// `window`, `assets`, `breaches`, `held`, `source`, `issued_at`, `issuer`, `scope`.
pub fn reading_object(input: &ReadingInput<'_>) -> Result<Map<String, Value>, ReadsError> {
    let ev = evaluate(input.wallet, input.limits, input.reads)?;
    let w = input.window;
    let mut m = Map::new();
    m.insert("type".into(), json!(READING_TYPE));
    m.insert("what".into(), json!(WHAT));
    m.insert("vow_id".into(), json!(input.vow_id));
    m.insert("wallet".into(), json!(input.wallet));
    m.insert("chain".into(), input.chain.clone());
    m.insert(
        "pledge".into(),
        json!({
            "log_index": input.pledge_log_index,
            "at": rfc3339(input.pledge_at),
            "limits": input.limits.iter().map(Limit::to_value).collect::<Vec<_>>(),
            "proof": format!("/log/proof/{}", input.pledge_log_index),
        }),
    );
    m.insert(
        "window".into(),
        json!({
            "days": w.days,
            "from": rfc3339(w.from),
            "to": rfc3339(w.to),
            "from_block": w.from_block,
            "to_block": w.to_block,
            "to_block_hash": w.to_block_hash,
        }),
    );
    m.insert("held".into(), json!(ev.breaches.is_empty()));
    m.insert("breaches".into(), Value::Array(ev.breaches));
    m.insert("assets".into(), Value::Array(ev.assets));
    m.insert(
        "source".into(),
        json!(
            "eth_getLogs for ERC-20 Transfer events with the wallet as sender or recipient, \
               for each pledged asset, from from_block to to_block; block timestamps from \
               eth_getBlockByNumber; balanceOf(wallet) by eth_call at to_block. Read through the \
               service's chain indexer (its configured RPC)."
        ),
    );
    m.insert("issued_at".into(), json!(rfc3339(input.issued_at)));
    m.insert("issuer".into(), json!(input.issuer));
    m.insert("scope".into(), scope_value());
    Ok(m)
}

/// Why a reading could not be signed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadingError {
    /// The reads do not fit the limits.
    #[error(transparent)]
    Input(#[from] ReadsError),
    /// Not representable as canonical JSON.
    #[error(transparent)]
    Canonical(#[from] CanonicalError),
}

/// The signed reading's bytes (RFC 8785, Ed25519 by `key`).
pub fn signed_reading(key: &ServiceKey, input: &ReadingInput<'_>) -> Result<Vec<u8>, ReadingError> {
    let mut m = reading_object(input).map_err(ReadingError::Input)?;
    key.sign_object(&mut m)?;
    Ok(jcs_map(&m)?)
}
