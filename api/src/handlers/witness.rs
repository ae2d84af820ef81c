//! The witness (library/WITNESS.md): `GET /witness/pledge/message` (the exact text a vow's
//! wallet signs to pledge portfolio limits), `POST /witness/pledge` (free, owner-signed; a
//! record of the log) and `POST /witness/reading` (paid through the one payment gate at the
//! read price: the wallet's token transfers read from the chain, every pledged limit checked,
//! signed).
//!
//! A pledge is checked before anything is written (the body, the limits, the vow, the wallet's
//! EIP-191 signature over the exact text); the vow, its wallet, the signature's single use and
//! the daily share are checked again inside the append transaction
//! ([`conduct_indexer::witness::pledge_job`]).
//!
//! A reading refuses what needs no money first (the body, the vow, its pledge), then pins the
//! chain's head: a chain that does not answer is 503 `chain-unreachable` before any payment is
//! asked for, never "no breach". The read itself runs inside the gate before settlement, so a
//! chain that stops answering mid-read is never charged either. The same vow, window, pledge
//! and head within 24 hours is the same signed bytes, not charged again.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use conduct_core::owner::Kind;
use conduct_core::schema;
use conduct_core::trace::{parse_json, FieldError};
use conduct_core::witness::reading::{signed_reading, ReadingInput};
use conduct_core::witness::record::Pledge;
use conduct_core::witness::{
    normalize_limits, parse_limits_query, pledge_message, Limit, LimitInput, DEFAULT_WINDOW_DAYS,
    MAX_WINDOW_DAYS,
};
use conduct_indexer::chain::rpc::Rpc;
use conduct_indexer::vows::VowReader;
use conduct_indexer::witness::chain::{self as witness_chain, Head, ReadError, ReadQuery};
use conduct_indexer::witness::{pledge_job, PledgeRow};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use warp::http::{header, StatusCode};
use warp::reply::Response as WarpResponse;

use crate::handlers::common::{blocking, find_vow};
use crate::handlers::owner::{self, sworn_vow, Ack, Party, Words};
use crate::handlers::views::{Chain, Ledger, Signing};
use crate::http::reply::{json_response, Problem};
use crate::payment::gate::{gate, Charge, Payments, Served};
use crate::sources::service_now;

/// What the witness reads of the running service.
#[derive(Clone, Copy)]
pub struct Witness<'a> {
    /// The signing key and public URL.
    pub sign: Signing<'a>,
    /// The log, the vows and their pages (pledges).
    pub ledger: Ledger<'a>,
    /// The chain followed (readings).
    pub chain: Chain<'a>,
    /// What the payment gate charges with (`POST /witness/reading`).
    pub pay: Payments<'a>,
}

/// Most transfers one reading lists (all pledged assets together).
pub const MAX_TRANSFERS: usize = 1000;

/// A limit of a pledge body.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(inline, description = "")]
#[serde(deny_unknown_fields)]
struct LimitBody {
    #[schemars(pattern(schema::ADDRESS))]
    asset: String,
    #[schemars(pattern(schema::amount()), description = AMOUNT)]
    max_balance: Option<String>,
    #[schemars(pattern(schema::amount()), description = AMOUNT)]
    max_outflow_per_day: Option<String>,
}

/// The schemas' description of a limit's amount.
const AMOUNT: &str = "Base units of the token, a decimal string (at most 2^256 - 1).";

impl From<LimitBody> for LimitInput {
    fn from(l: LimitBody) -> LimitInput {
        LimitInput {
            asset: l.asset,
            max_balance: l.max_balance,
            max_outflow_per_day: l.max_outflow_per_day,
        }
    }
}

// The body of `POST /witness/pledge`. The signature is optional here so that a missing one is
// refused as what it is (403 naming it), not as a malformed body; the schema says it is
// required.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(rename = "PledgeRequest", title = "POST /witness/pledge body")]
#[serde(deny_unknown_fields)]
pub(crate) struct PledgeBody {
    #[schemars(pattern(schema::vow_id()))]
    vow_id: String,
    #[schemars(length(min = 1, max = conduct_core::witness::MAX_LIMITS),
        description = "One limit per ERC-20 asset, each with max_balance, max_outflow_per_day \
            or both.")]
    limits: Vec<LimitBody>,
    #[schemars(
        required,
        pattern(schema::EIP191),
        description = "The vow wallet's EIP-191 personal_sign signature over the exact text of \
            GET /witness/pledge/message (today's UTC date); accepted once."
    )]
    signature: Option<String>,
}

// The body of `POST /witness/reading`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(rename = "WitnessReadingRequest", title = "POST /witness/reading body")]
#[serde(deny_unknown_fields)]
pub(crate) struct ReadingBody {
    #[schemars(pattern(schema::vow_id()))]
    vow_id: String,
    #[schemars(range(min = 1, max = conduct_core::witness::MAX_WINDOW_DAYS),
        description = format!("Whole UTC days ending at the chain's head (default {}).",
            conduct_core::witness::DEFAULT_WINDOW_DAYS))]
    window_days: Option<u64>,
}

/// How a pledge's signature and vow are refused (library/ERRORS.md).
pub(crate) const WORDS: Words = Words {
    kind: Kind::PledgeLimits,
    party: Party::Vow,
    sandbox: (
        "witness-sandbox-vow",
        "A sandbox vow cannot pledge",
        "no wallet is bound to it",
    ),
    signature: (
        "witness-pledge-signature",
        "The vow's wallet did not sign this pledge",
    ),
    member: "signature",
    names: "the vow, every limit",
};

/// 404 `witness-no-pledge`: a reading needs the vow's pledge.
fn no_pledge(id: &str) -> Problem {
    Problem::new(
        StatusCode::NOT_FOUND,
        "witness-no-pledge",
        "This vow pledged no limits",
        format!(
            "vow {id} has no pledge to read against; its wallet pledges limits with POST \
             /witness/pledge first (library/WITNESS.md)"
        ),
    )
    .at("/vow_id", "a vow without a pledge")
}

/// 503 `chain-unreachable`: the reading cannot look, which is never "no breach".
pub(crate) fn chain_unreachable(detail: String) -> Problem {
    Problem::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "chain-unreachable",
        "The chain could not be read",
        format!("{detail}; nothing was charged and nothing is concluded (an unread chain is never \"no breach\")"),
    )
    .with_header(header::RETRY_AFTER, "30")
}

/// Limits from `?limits=`: the compact form (`<asset>:<max_balance>:<max_outflow_per_day>`,
/// comma-separated) or the JSON array a pledge body carries.
fn query_limits(raw: &str) -> Result<Vec<Limit>, Vec<FieldError>> {
    if raw.trim_start().starts_with('[') {
        let bodies: Vec<LimitBody> = serde_json::from_str(raw).map_err(|e| {
            vec![FieldError::at(
                "?limits",
                format!(
                    "not a JSON array of limits {{asset, max_balance?, max_outflow_per_day?}}: {e}"
                ),
            )]
        })?;
        let input: Vec<LimitInput> = bodies.into_iter().map(Into::into).collect();
        return normalize_limits(&input, "?limits");
    }
    parse_limits_query(raw)
}

/// `GET /witness/pledge/message?vow_id=&limits=`: the exact text to sign (`text/plain`), for
/// any vow that exists (`POST /witness/pledge` refuses a sandbox vow).
pub async fn message(ctx: Witness<'_>, query: &str) -> Result<WarpResponse, Problem> {
    let limits = |raw: Option<String>| match raw {
        None => Err(vec![FieldError::at(
            "?limits",
            "missing query parameter (<asset>:<max_balance>:<max_outflow_per_day>, \
             comma-separated, or the JSON array of the pledge)",
        )]),
        Some(raw) => query_limits(&raw),
    };
    let (origin, vows) = (ctx.sign.public_url, ctx.ledger.vows);
    owner::vow_message(
        origin,
        vows,
        query,
        "limits",
        limits,
        |origin, vow, limits, date| pledge_message(origin, vow, limits, date),
    )
    .await
}

/// `POST /witness/pledge` `{vow_id, limits, signature}`: 201 and the signed
/// `conduct.witness-pledge/v1` record (the vow's pledge from now on).
pub async fn pledge(ctx: Witness<'_>, body: Bytes) -> Result<WarpResponse, Problem> {
    let req: PledgeBody = parse_json(&body).map_err(|e| Problem::invalid(vec![e]))?;
    let input: Vec<LimitInput> = req.limits.into_iter().map(Into::into).collect();
    let limits = normalize_limits(&input, "/limits").map_err(Problem::invalid)?;
    let (vow, signer) = sworn_vow(ctx.ledger.vows, &req.vow_id, &WORDS).await?;
    let at = service_now();
    let make = |wallet_signature| Pledge {
        origin: ctx.sign.public_url.to_owned(),
        vow_id: vow.vow_id.clone(),
        wallet: signer.wallet.clone(),
        limits,
        wallet_signature,
        at,
    };
    let append =
        |rec, ask| owner::append(ctx.ledger.seq, pledge_job(ctx.sign.key.clone(), rec), ask);
    let (origin, site, sent) = (
        ctx.sign.public_url,
        ctx.ledger.site,
        req.signature.as_deref(),
    );
    owner::write(origin, site, &signer, sent, make, append, Ack::proof()).await
}

/// The vow's current pledge (of `vows`), or 404 `witness-no-pledge`.
async fn current_pledge(vows: &Arc<VowReader>, id: &str) -> Result<PledgeRow, Problem> {
    let (reader, key) = (vows.clone(), id.to_owned());
    let row = blocking("reading the pledge", move || {
        reader.pledge(&key).map_err(|e| e.to_string())
    })
    .await?;
    row.ok_or_else(|| no_pledge(id))
}

/// What a reading needs of the chain: the RPC, its name and id, and its limits.
struct ChainUse {
    rpc: Arc<Rpc>,
    chain: serde_json::Value,
    max_range: u64,
    timeout: Duration,
}

fn chain_use(chain: &Chain<'_>) -> Result<ChainUse, Problem> {
    match (chain.cfg, &chain.parts.rpc) {
        (Some(c), Some(rpc)) => Ok(ChainUse {
            rpc: rpc.clone(),
            chain: json!({"name": c.name, "chain_id": c.chain_id}),
            max_range: c.max_range,
            timeout: Duration::from_secs(c.rpc_timeout_seconds.max(1)),
        }),
        _ => Err(chain_unreachable(
            "this instance follows no chain ([chain] is not configured), so it cannot read a \
             wallet's transfers"
                .into(),
        )),
    }
}

/// `POST /witness/reading` `{vow_id, window_days?}`: check (nothing is asked for before the vow
/// has a pledge and the chain answers), take payment, read the chain and check every limit,
/// sign, settle, serve.
pub async fn reading(
    ctx: Witness<'_>,
    body: Bytes,
    charge: Charge<'_>,
) -> Result<WarpResponse, Problem> {
    let req: ReadingBody = parse_json(&body).map_err(|e| Problem::invalid(vec![e]))?;
    let days = req.window_days.unwrap_or(DEFAULT_WINDOW_DAYS);
    if !(1..=MAX_WINDOW_DAYS).contains(&days) {
        return Err(Problem::invalid(vec![FieldError::at(
            "/window_days",
            format!("a window is 1 to {MAX_WINDOW_DAYS} whole UTC days (got {days})"),
        )]));
    }
    let vow = find_vow(ctx.ledger.vows, &req.vow_id).await?;
    let pledge = current_pledge(ctx.ledger.vows, &vow.vow_id).await?;
    let chain = chain_use(&ctx.chain)?;
    let head: Head = witness_chain::head(&chain.rpc, chain.timeout)
        .await
        .map_err(|e| chain_unreachable(format!("the chain did not answer: {e}")))?;
    let now = service_now();
    // The reading depends on the vow's pledge, the window and the block it is taken at.
    let request = format!(
        "{}|{days}|{}|{}|{}",
        vow.vow_id, pledge.log_index, head.number, head.hash
    );
    let (key, issuer) = (ctx.sign.key.clone(), ctx.sign.public_url.to_owned());
    let handler = || async move {
        let p = &pledge.pledge;
        let wallet = p.wallet.parse().map_err(|_| {
            chain_unreachable(format!("the pledge's wallet {} does not parse", p.wallet))
        })?;
        let assets: Vec<alloy_primitives::Address> = p
            .limits
            .iter()
            .filter_map(|l| l.asset.parse().ok())
            .collect();
        let q = ReadQuery {
            wallet,
            assets: &assets,
            days,
            max_range: chain.max_range,
            max_transfers: MAX_TRANSFERS,
            timeout: chain.timeout,
        };
        let (window, reads) =
            witness_chain::read(&chain.rpc, &head, &q)
                .await
                .map_err(|e| match e {
                    ReadError::Chain(e) => {
                        chain_unreachable(format!("the chain did not answer: {e}"))
                    }
                    ReadError::TooMany(n) => Problem::new(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        "witness-window-too-busy",
                        "Too many transfers in the window",
                        format!(
                            "the window holds more than {n} transfers of the pledged assets; \
                             ask for a shorter window_days (nothing was charged)"
                        ),
                    )
                    .at("/window_days", "too many transfers in this window"),
                })?;
        let input = ReadingInput {
            vow_id: &p.vow_id,
            wallet: &p.wallet,
            chain: chain.chain.clone(),
            pledge_log_index: pledge.log_index,
            pledge_at: p.at,
            limits: &p.limits,
            window: &window,
            reads: &reads,
            issued_at: now,
            issuer: &issuer,
        };
        let bytes = signed_reading(&key, &input).map_err(|e| {
            Problem::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "unrepresentable",
                "Result not representable",
                e.to_string(),
            )
        })?;
        Ok(Served {
            record: bytes.clone(),
            response: json_response(bytes),
        })
    };
    let parts = ctx.pay.gate_parts(charge.pay.price, now);
    gate(parts, &charge, request, Ok, |_| Ok(()), handler).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use conduct_indexer::ledger::Refusal;

    #[test]
    fn query_limits_take_both_forms() {
        let a = "0x5FbDB2315678afecb367f032d93F642f64180aa3";
        let compact = query_limits(&format!("{a}:1000:100")).unwrap();
        let json_form = query_limits(&format!(
            r#"[{{"asset":"{}","max_balance":"1000","max_outflow_per_day":"100"}}]"#,
            a.to_ascii_lowercase()
        ))
        .unwrap();
        assert_eq!(compact, json_form);
        assert!(query_limits("[{\"asset\": 5}]").is_err());
        assert!(query_limits("0x12:1:").is_err());
    }

    #[test]
    fn refusals_name_their_field() {
        use crate::handlers::owner::Refuse;
        assert_eq!(WORDS.refused(String::new()).errors[0].pointer, "/signature");
        assert_eq!(no_pledge("x").status, StatusCode::NOT_FOUND);
        assert_eq!(WORDS.sandbox("x").status, StatusCode::FORBIDDEN);
        let p = chain_unreachable("down".into());
        assert_eq!(p.status, StatusCode::SERVICE_UNAVAILABLE);
        let replay = Problem::from(Refusal::WitnessPledgeReplayed);
        assert_eq!(
            (replay.status, replay.kind),
            (StatusCode::CONFLICT, "witness-pledge-replayed")
        );
    }
}
