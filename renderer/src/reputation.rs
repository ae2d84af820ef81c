//! The reputation record's pages (library/REPUTATION.md): the signed status
//! `/reputation` and the holders board `/reputation/holders` (a static signed snapshot; the
//! api's thin query route filters the same rows), both JSON and HTML, and the body of
//! `/reputation/{address}`.
//!
//! Everything here comes from the chain: the mirror (the contract's events as the follower
//! read them) and a live read (code, threshold). Nothing of the meter is read, and no page
//! here shows a meter number: the two are different objects. Not configured, not deployed,
//! or not answering are each said as such: `null` and `false` are never turned into zeros.

use askama::Template;
use conduct_core::scope::scope_value;
use conduct_core::signing::ServiceKey;
use conduct_core::time::rfc3339;
use conduct_indexer::chain::reputation::{fold, Mirror, Probe, RepKind, ReputationEvent, U256};
use conduct_indexer::chain::{ChainConfig, ChainStatus};
use serde_json::{json, Value};

use crate::pages::PageHead;
use crate::snapshot::signed_bytes;
use crate::vows::Files;
use crate::RenderError;

/// Format name of `/reputation`.
pub const STATUS_TYPE: &str = "conduct.reputation/v1";
/// Format name of `/reputation/holders`.
pub const HOLDERS_TYPE: &str = "conduct.reputation-holders/v1";
/// Format name of `/reputation/{address}`.
pub const SCORE_TYPE: &str = "conduct.reputation-score/v1";
/// Events shown in `recent_events`.
pub const RECENT: usize = 20;
/// Largest `limit` of a holders query.
pub const MAX_LIMIT: usize = 1000;

const WHAT: &str = "A soulbound reputation record: one score per wallet, earned by market \
outcomes and lowered by rulings. No transfer or payment moves it (the contract has no transfer \
and takes no money); only market contracts that governance authorized may credit it, and only \
authorized arbiters may slash it. It is a different object from the meter's behavioral \
reading: no meter number reads it, and no page here shows the two together.";

const VERIFIED_MEANS: &str = "verified: the runtime code at the address is byte-identical to \
contracts/Reputation.sol as this repository compiles it (solc 0.8.28, contracts/out/Reputation.json).";

/// What the pages are rendered from.
pub struct ReputationInput<'a> {
    /// The signing key.
    pub key: &'a ServiceKey,
    /// The followed chain (none: not configured).
    pub chain: Option<&'a ChainConfig>,
    /// The follower's state.
    pub status: &'a ChainStatus,
    /// Every reputation event the follower stored, in chain order.
    pub events: &'a [ReputationEvent],
    /// The last live read of the contract, if any was made.
    pub probe: Option<&'a Probe>,
    /// The render instant.
    pub now: u64,
}

impl ReputationInput<'_> {
    fn address(&self) -> Option<&str> {
        self.chain
            .and_then(|c| c.reputation.as_ref())
            .map(|r| r.address.as_str())
    }

    /// `live`, `not-configured`, `not-deployed` or `unreachable`.
    fn state(&self) -> &'static str {
        if self.address().is_none() {
            return "not-configured";
        }
        match self.probe.and_then(|p| p.deployed) {
            Some(false) => "not-deployed",
            Some(true) if self.status.reachable => "live",
            _ => "unreachable",
        }
    }

    /// The threshold: the live read, else the mirror's (only while the contract is known to
    /// be there).
    fn threshold(&self, mirror: &Mirror) -> Option<String> {
        if self.state() == "not-configured" || self.state() == "not-deployed" {
            return None;
        }
        self.probe
            .and_then(|p| p.threshold)
            .or(mirror.threshold)
            .map(|t| t.to_string())
    }
}

fn event_value(e: &ReputationEvent) -> Value {
    let mut v = json!({
        "block": e.block_number,
        "tx": e.tx_hash,
        "kind": e.kind.name(),
    });
    match &e.kind {
        RepKind::Credited {
            who,
            actor,
            amount,
            new_score,
            reason,
        } => {
            v["who"] = json!(who);
            v["market"] = json!(actor);
            v["amount"] = json!(amount);
            v["new_score"] = json!(new_score);
            v["outcome"] = json!(reason);
        }
        RepKind::Slashed {
            who,
            actor,
            amount,
            new_score,
            reason,
        } => {
            v["who"] = json!(who);
            v["arbiter"] = json!(actor);
            v["amount"] = json!(amount);
            v["new_score"] = json!(new_score);
            v["ruling"] = json!(reason);
        }
        RepKind::MarketSet { actor, authorized } => {
            v["market"] = json!(actor);
            v["authorized"] = json!(authorized);
        }
        RepKind::ArbiterSet { actor, authorized } => {
            v["arbiter"] = json!(actor);
            v["authorized"] = json!(authorized);
        }
        RepKind::ThresholdSet { threshold } => v["threshold"] = json!(threshold),
        RepKind::Governance { from, to } => {
            v["from"] = json!(from);
            v["to"] = json!(to);
        }
    }
    v
}

/// Whether the mirror has read the chain at least once: its counts are a reading only then
/// (before, and with no chain configured, they are unknown: null, never a zero nobody read).
fn mirror_read(input: &ReputationInput<'_>) -> bool {
    input.state() != "not-configured" && input.status.indexed_to.is_some()
}

fn mirror_block(input: &ReputationInput<'_>, mirror: &Mirror) -> Value {
    let read = mirror_read(input);
    json!({
        "events": read.then_some(mirror.events),
        "holders": read.then_some(mirror.scores.len()),
        "indexed_to_block": input.status.indexed_to,
        "reachable": input.status.reachable,
        "cached_seconds_ago": input.status.synced_at.map(|t| input.now.saturating_sub(t)),
        "note": "The mirror is the contract's events as this service's follower read them, \
            confirmations behind the head; /reputation/{address} compares it with a live eth_call.",
    })
}

/// The body of `/reputation` (library/REPUTATION.md), unsigned.
pub fn status_doc(input: &ReputationInput<'_>) -> Value {
    let mirror = fold(input.events);
    let state = input.state();
    let deployed = match state {
        "not-configured" => json!(false),
        _ => json!(input.probe.and_then(|p| p.deployed)),
    };
    let verified = match state {
        "not-configured" | "not-deployed" => json!(false),
        _ => json!(input.probe.and_then(|p| p.verified)),
    };
    let contract = match state {
        "not-configured" | "not-deployed" => Value::Null,
        _ => json!(input.address()),
    };
    let recent: Vec<Value> = match state {
        "not-configured" | "not-deployed" => Vec::new(),
        _ => input
            .events
            .iter()
            .rev()
            .take(RECENT)
            .map(event_value)
            .collect(),
    };
    let note = match state {
        "not-configured" => "No reputation contract is configured on this instance ([chain.reputation] in conduct.toml): there is no record to show, which is not a record of zero.".to_owned(),
        "not-deployed" => format!(
            "The configured address {} holds no contract on this chain: nothing is deployed there yet. No score exists, which is not a score of zero.",
            input.address().unwrap_or_default()
        ),
        "unreachable" => "The chain does not answer right now: the mirror below is the last state read, with its age; live values are null (unknown), never zero.".to_owned(),
        _ => "Scores come from the mirror of the contract's events; each lookup also reads the contract live and says whether the two agree.".to_owned(),
    };
    json!({
        "type": STATUS_TYPE,
        "what": WHAT,
        "soulbound": true,
        "contract": contract,
        "deployed": deployed,
        "verified": verified,
        "verified_means": VERIFIED_MEANS,
        "explorer": Value::Null,
        "chain": input.chain.map(|c| json!({
            "name": c.name,
            "chain_id": c.chain_id,
            "rpc": c.shown_rpc(),
            "explorer_api": Value::Null,
        })),
        "threshold": input.threshold(&mirror),
        "recent_events": recent,
        "mirror": mirror_block(input, &mirror),
        "lookup": "/reputation/{address}",
        "search": "/reputation/holders?q=&limit=&sort=wallet|score",
        "status": state,
        "note": note,
        "as_of": rfc3339(input.now),
        "scope": scope_value(),
    })
}

/// How the holders board is sorted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sort {
    /// By wallet address (the default: no order by score unless asked for).
    Wallet,
    /// By score, highest first (ties by wallet).
    Score,
}

impl Sort {
    /// From `?sort=`.
    pub fn parse(s: &str) -> Option<Sort> {
        match s {
            "wallet" => Some(Sort::Wallet),
            "score" => Some(Sort::Score),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Sort::Wallet => "wallet",
            Sort::Score => "score",
        }
    }
}

/// A holders query: `q` (a case-insensitive part of the wallet), `limit`, `sort`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    /// Part of the wallet address.
    pub q: Option<String>,
    /// At most this many rows.
    pub limit: usize,
    /// The order.
    pub sort: Sort,
}

impl Default for Query {
    fn default() -> Self {
        Query {
            q: None,
            limit: MAX_LIMIT,
            sort: Sort::Wallet,
        }
    }
}

/// The body of `/reputation/holders` for `query` (the snapshot is the default query), unsigned.
pub fn holders_doc(input: &ReputationInput<'_>, query: &Query) -> Value {
    let mirror = fold(input.events);
    let state = input.state();
    let threshold = input.threshold(&mirror).and_then(|t| parse_u256(&t));
    let needle = query.q.as_deref().map(str::to_ascii_lowercase);
    let mut rows: Vec<(&String, &U256)> = mirror
        .scores
        .iter()
        .filter(|(w, _)| needle.as_deref().is_none_or(|n| w.contains(n)))
        .collect();
    if query.sort == Sort::Score {
        rows.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    }
    let matched = rows.len();
    let holders: Vec<Value> = rows
        .into_iter()
        .take(query.limit)
        .map(|(w, s)| {
            json!({
                "wallet": w,
                "score": s.to_string(),
                "meets": threshold.map(|t| *s >= t),
            })
        })
        .collect();
    json!({
        "type": HOLDERS_TYPE,
        "status": state,
        "threshold": threshold.map(|t| t.to_string()),
        "query": {"q": query.q, "limit": query.limit, "sort": query.sort.name()},
        "matched": mirror_read(input).then_some(matched),
        "truncated": matched > holders.len(),
        "holders": holders,
        "columns": ["wallet", "score", "meets"],
        "note": "Every wallet the contract ever credited or slashed, from the mirror of its events. meets is score >= threshold (null when the threshold cannot be read). Sorted by wallet unless ?sort=score is asked for. A reputation score, never a meter reading.",
        "mirror": mirror_block(input, &mirror),
        "as_of": rfc3339(input.now),
        "scope": scope_value(),
    })
}

fn parse_u256(s: &str) -> Option<U256> {
    U256::from_str_radix(s, 10).ok()
}

/// The body of `/reputation/{address}`: the mirror's score, `meets`, and whether a live read
/// (`live`: `(score, meets)`, `None` when the chain did not answer) agreed. Unsigned.
pub fn score_doc(input: &ReputationInput<'_>, wallet: &str, live: Option<(U256, bool)>) -> Value {
    let mirror = fold(input.events);
    let state = input.state();
    // A score is known once the mirror caught up with the chain at least once (before, a
    // credit may sit in a block not read yet: null, never a 0 that is not one).
    let known = matches!(state, "live" | "unreachable")
        && input.status.indexed_to.is_some()
        && input.status.caught_up;
    let score = known.then(|| mirror.scores.get(wallet).copied().unwrap_or_default());
    let threshold = input.threshold(&mirror).and_then(|t| parse_u256(&t));
    let meets = match (score, threshold) {
        (Some(s), Some(t)) => Some(s >= t),
        _ => None,
    };
    let verified = match (score, live) {
        (Some(s), Some((ls, lm))) => Some(s == ls && meets.is_none_or(|m| m == lm)),
        _ => None,
    };
    json!({
        "type": SCORE_TYPE,
        "wallet": wallet,
        "status": state,
        "score": score.map(|s| s.to_string()),
        "threshold": threshold.map(|t| t.to_string()),
        "meets": meets,
        "verified": verified,
        "live": live.map(|(s, m)| json!({"score": s.to_string(), "meets": m})),
        "mirror": mirror_block(input, &mirror),
        "note": match (state, verified) {
            ("not-configured", _) => "No reputation contract is configured here: no score, which is not a score of zero.",
            ("not-deployed", _) => "No contract is deployed at the configured address: no score, which is not a score of zero.",
            (_, Some(true)) => "The mirror and a live eth_call agree.",
            (_, Some(false)) => "The mirror and a live eth_call disagree: the mirror is confirmations behind the head (a change in the last blocks), or the chain reorganised; the live value is the chain's word now.",
            _ => "The chain did not answer a live read: the score is the mirror's, unverified (verified: null, never false or zero).",
        },
        "as_of": rfc3339(input.now),
        "scope": scope_value(),
    })
}

/// One holder row of the HTML board.
pub struct HolderRow {
    /// Wallet.
    pub wallet: String,
    /// Score (decimal).
    pub score: String,
    /// `yes`, `no` or `unknown`.
    pub meets: &'static str,
}

/// `/reputation` (HTML).
#[derive(Template)]
#[template(path = "reputation.html")]
pub struct StatusPage<'a> {
    /// Head.
    pub head: PageHead<'a>,
    /// What it is.
    pub what: &'a str,
    /// Status word.
    pub status: String,
    /// The note.
    pub note: String,
    /// Contract address, if deployed (or not known not to be).
    pub contract: Option<String>,
    /// Deployed: yes / no / unknown.
    pub deployed: &'static str,
    /// Verified: yes / no / unknown.
    pub verified: &'static str,
    /// What verified means.
    pub verified_means: &'a str,
    /// Threshold, if known.
    pub threshold: Option<String>,
    /// Recent events, one line each.
    pub recent: Vec<String>,
    /// Mirror line.
    pub mirror: String,
}

/// `/reputation/holders` (HTML).
#[derive(Template)]
#[template(path = "holders.html")]
pub struct HoldersPage<'a> {
    /// Head.
    pub head: PageHead<'a>,
    /// Status word.
    pub status: String,
    /// Threshold, if known.
    pub threshold: Option<String>,
    /// The rows.
    pub rows: Vec<HolderRow>,
    /// The note.
    pub note: String,
}

fn tri(v: &Value) -> &'static str {
    match v.as_bool() {
        Some(true) => "yes",
        Some(false) => "no",
        None => "unknown (the chain did not answer)",
    }
}

fn event_line(e: &Value) -> String {
    let s = |k: &str| e[k].as_str().unwrap_or_default().to_owned();
    let what = match e["kind"].as_str().unwrap_or_default() {
        "credited" => format!(
            "{} credited {} by market {} (score now {})",
            s("who"),
            s("amount"),
            s("market"),
            s("new_score")
        ),
        "slashed" => format!(
            "{} slashed {} by arbiter {} (score now {})",
            s("who"),
            s("amount"),
            s("arbiter"),
            s("new_score")
        ),
        "market" => format!(
            "market {} {}",
            s("market"),
            if e["authorized"] == true {
                "authorized"
            } else {
                "deauthorized"
            }
        ),
        "arbiter" => format!(
            "arbiter {} {}",
            s("arbiter"),
            if e["authorized"] == true {
                "authorized"
            } else {
                "deauthorized"
            }
        ),
        "threshold" => format!("threshold set to {}", s("threshold")),
        "governance" => format!("governance passed from {} to {}", s("from"), s("to")),
        other => other.to_owned(),
    };
    format!("block {}: {what}", e["block"])
}

fn mirror_line(m: &Value) -> String {
    let indexed = match m["indexed_to_block"].as_u64() {
        Some(b) => format!("indexed to block {b}"),
        None => "never read".to_owned(),
    };
    let age = match m["cached_seconds_ago"].as_u64() {
        Some(a) => format!(", last read {a} s ago"),
        None => String::new(),
    };
    let count = |v: &Value, what: &str| match v.as_u64() {
        Some(n) => format!("{n} {what}"),
        None => format!("{what} unknown"),
    };
    format!(
        "Mirror: {}, {}, {indexed}{age}.",
        count(&m["events"], "events"),
        count(&m["holders"], "holders")
    )
}

/// `/reputation` and `/reputation/holders` (JSON and HTML).
pub fn reputation_files(input: &ReputationInput<'_>) -> Result<Files, RenderError> {
    let doc = status_doc(input);
    let text = |k: &str| doc[k].as_str().map(str::to_owned);
    let page = StatusPage {
        head: PageHead::new(
            input.key,
            "Reputation record",
            "A soulbound reputation record: earned by market outcomes, slashed by rulings, never moved by money.",
        ),
        what: WHAT,
        status: text("status").unwrap_or_default(),
        note: text("note").unwrap_or_default(),
        contract: text("contract"),
        deployed: tri(&doc["deployed"]),
        verified: tri(&doc["verified"]),
        verified_means: VERIFIED_MEANS,
        threshold: text("threshold"),
        recent: doc["recent_events"]
            .as_array()
            .map_or(Vec::new(), |a| a.iter().map(event_line).collect()),
        mirror: mirror_line(&doc["mirror"]),
    }
    .render()?;
    let mut files = vec![
        ("reputation.json".into(), signed_bytes(input.key, doc)?),
        ("reputation.html".into(), page.into_bytes()),
    ];
    files.extend(holders_files(input, &Query::default())?);
    Ok(files)
}

/// The stem of the holders board's files.
pub const HOLDERS_STEM: &str = "reputation/holders";

/// `/reputation/holders` for `query` (JSON and HTML); the default query is the published
/// snapshot.
pub fn holders_files(input: &ReputationInput<'_>, query: &Query) -> Result<Files, RenderError> {
    let holders = holders_doc(input, query);
    let rows = holders["holders"].as_array().map_or(Vec::new(), |a| {
        a.iter()
            .map(|h| HolderRow {
                wallet: h["wallet"].as_str().unwrap_or_default().to_owned(),
                score: h["score"].as_str().unwrap_or_default().to_owned(),
                meets: match h["meets"].as_bool() {
                    Some(true) => "yes",
                    Some(false) => "no",
                    None => "unknown",
                },
            })
            .collect()
    });
    let board = HoldersPage {
        head: PageHead::new(
            input.key,
            "Reputation holders",
            "Every wallet the reputation record credited or slashed: wallet, score, meets.",
        ),
        status: holders["status"].as_str().unwrap_or_default().to_owned(),
        threshold: holders["threshold"].as_str().map(str::to_owned),
        rows,
        note: holders["note"].as_str().unwrap_or_default().to_owned(),
    }
    .render()?;
    Ok(vec![
        (
            format!("{HOLDERS_STEM}.json"),
            signed_bytes(input.key, holders)?,
        ),
        (format!("{HOLDERS_STEM}.html"), board.into_bytes()),
    ])
}
