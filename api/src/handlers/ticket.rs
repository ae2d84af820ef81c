//! Ticket copies (library/PREPARE.md "Tickets"): `GET /ticket/{game}/prepare` (the
//! `buy_ticket` action for the game: approve with `skip_if`, then buy), `GET
//! /ticket/{game}/message?wallet=` (the exact EIP-191 text a holder signs,
//! [`conduct_core::ticket::holder_message`]) and `POST /ticket/{game}/entitle {wallet,
//! signature}`: the signature proves the wallet, the entitlement is a live balance read, and a
//! signed `conduct.ticket-entitlement/v1` comes back. A chain that does not answer is 503
//! `chain-unreachable` with `Retry-After`, never a no.

use bytes::Bytes;
use conduct_core::owner;
use conduct_core::scope::scope_value;
use conduct_core::ticket::{entitlement_doc, holder_message, BalanceAt};
use conduct_core::trace::FieldError;
use conduct_core::vow::eip191;
use conduct_indexer::chain::prepare::args::{check, is_secret_name, Arg};
use conduct_indexer::chain::prepare::holding::{holding, HoldingError};
use conduct_indexer::chain::prepare::{self, Kind};
use conduct_indexer::chain::registry::{address_text, parse_address};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use warp::http::{header, StatusCode};
use warp::reply::Response as WarpResponse;

use crate::handlers::prepare::{query_pairs, run, signed_answer, Prepare, Source};
use crate::http::reply::{text_response, Problem};
use crate::http::request::query_param;
use crate::sources::service_now;

/// What the ticket routes read of the running service: what preparing reads (the key, the
/// chain followed), and the public URL the holder's text names.
#[derive(Clone, Copy)]
pub struct Tickets<'a> {
    /// What `/prepare/buy_ticket` reads.
    pub prepare: Prepare<'a>,
    /// The public URL.
    pub public_url: &'a str,
}

// The body of `POST /ticket/{game}/entitle`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(rename = "EntitleRequest", title = "POST /ticket/{game}/entitle body")]
#[serde(deny_unknown_fields)]
pub(crate) struct EntitleBody {
    #[schemars(pattern(conduct_core::schema::ADDRESS))]
    wallet: String,
    #[schemars(
        pattern(conduct_core::schema::EIP191),
        description = "The wallet's EIP-191 personal_sign signature over the exact text of GET \
            /ticket/{game}/message?wallet= (today's UTC date)."
    )]
    signature: String,
}

const GAME: Kind = Kind::Uint {
    nonzero: false,
    max: None,
    abi: "uint256",
};

/// The game of `/ticket/{game}/...`, in decimal.
fn game_of(path: &str) -> Result<(String, alloy_primitives::U256), Problem> {
    let raw = path
        .strip_prefix("/ticket/")
        .and_then(|r| r.split('/').next())
        .unwrap_or("");
    let raw = percent_encoding::percent_decode_str(raw)
        .decode_utf8_lossy()
        .into_owned();
    match check(GAME, &raw) {
        Ok(Arg::Uint(u)) => Ok((u.to_string(), u)),
        Ok(_) | Err(_) => Err(Problem::invalid(vec![FieldError::at(
            "/game",
            format!("{raw:?} is not a game: {}", GAME.rule()),
        )])),
    }
}

fn wallet_of(raw: &str, pointer: &str) -> Result<alloy_primitives::Address, Problem> {
    parse_address(raw).map_err(|_| {
        Problem::invalid(vec![FieldError::at(
            pointer,
            format!("{raw:?} is not a wallet: 0x and 40 hex digits"),
        )])
    })
}

/// `GET /ticket/{game}/prepare?from=[&amount=][&price=][&token=]`: `/prepare/buy_ticket` for the
/// game.
pub async fn prepare(ctx: Tickets<'_>, path: &str, query: &str) -> Result<WarpResponse, Problem> {
    let (game, _) = game_of(path)?;
    let mut given = query_pairs(query);
    if given.iter().any(|(k, _)| k == "game") {
        return Err(Problem::invalid(vec![FieldError::at(
            "?game",
            "the game is the path's /ticket/{game}",
        )]));
    }
    given.insert(0, ("game".to_owned(), game));
    let Some(action) = prepare::action("buy_ticket") else {
        return Err(Problem::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "unrepresentable",
            "No buy_ticket action",
            "the catalogue has no buy_ticket",
        ));
    };
    run(
        &ctx.prepare,
        action,
        &given,
        Source::Query,
        &[("game", "/game")],
    )
    .await
}

/// `GET /ticket/{game}/message?wallet=`: the exact text to sign.
pub async fn message(ctx: Tickets<'_>, path: &str, query: &str) -> Result<WarpResponse, Problem> {
    let (game, _) = game_of(path)?;
    let mut errors = Vec::new();
    for (k, _) in query_pairs(query) {
        if k != "wallet" {
            let detail = if is_secret_name(&k) {
                "the service never asks for a key: sign the text with your own wallet"
            } else {
                "the only parameter is wallet"
            };
            errors.push(FieldError::at(format!("?{k}"), detail));
        }
    }
    if !errors.is_empty() {
        let mut p = Problem::invalid(errors);
        if query_pairs(query).iter().any(|(k, _)| is_secret_name(k)) {
            p.kind = "never-a-key";
            p.title = "The service never asks for or accepts a key";
        }
        return Err(p);
    }
    let Some(raw) = query_param(query, "wallet") else {
        return Err(Problem::invalid(vec![FieldError::at(
            "?wallet",
            "missing: the wallet that signs (0x and 40 hex digits)",
        )]));
    };
    let wallet = wallet_of(&raw, "?wallet")?;
    let text = holder_message(ctx.public_url, &game, &address_text(&wallet), service_now());
    let mut resp = text_response(text);
    resp.headers_mut().insert(
        header::CACHE_CONTROL,
        warp::http::HeaderValue::from_static("no-store"),
    );
    Ok(resp)
}

fn chain_unreachable(detail: String) -> Problem {
    Problem::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "chain-unreachable",
        "The chain did not answer",
        format!(
            "{detail}; an entitlement is a live balance read, so none is given (never a no): \
             retry"
        ),
    )
    .with_header(header::RETRY_AFTER, "30")
}

fn contract_unset(detail: String) -> Problem {
    Problem::new(
        StatusCode::NOT_FOUND,
        "ticket-contract-unset",
        "No ticket contract here",
        detail,
    )
}

/// `POST /ticket/{game}/entitle {wallet, signature}`.
pub async fn entitle(ctx: Tickets<'_>, path: &str, body: Bytes) -> Result<WarpResponse, Problem> {
    let (game, game_id) = game_of(path)?;
    // A member named like a key is refused as such, before anything else is read.
    if let Ok(Value::Object(m)) = serde_json::from_slice::<Value>(&body) {
        let secret: Vec<FieldError> = m
            .keys()
            .filter(|k| is_secret_name(k))
            .map(|k| {
                FieldError::at(
                    format!("/{k}"),
                    "the service never asks for or accepts a key: sign the text of GET \
                     /ticket/{game}/message with your own wallet and send the signature",
                )
            })
            .collect();
        if !secret.is_empty() {
            let mut p = Problem::invalid(secret);
            p.kind = "never-a-key";
            p.title = "The service never asks for or accepts a key";
            return Err(p);
        }
    }
    let b: EntitleBody =
        conduct_core::trace::parse_json(&body).map_err(|e| Problem::invalid(vec![e]))?;
    let wallet = wallet_of(&b.wallet, "/wallet")?;
    let wallet_text = address_text(&wallet);
    let now = service_now();
    let text = holder_message(ctx.public_url, &game, &wallet_text, now);
    match owner::recover(owner::Kind::ProveHolder, &text, &b.signature) {
        Ok(addr) if addr == wallet.into_array() => {}
        Ok(addr) => {
            let mut p = Problem::new(
                StatusCode::FORBIDDEN,
                "ticket-wrong-signer",
                "The wallet did not sign this",
                format!(
                    "the signature recovers to 0x{}, not {wallet_text}; sign the exact text of \
                     GET /ticket/{game}/message?wallet={wallet_text} (it names the game, the \
                     wallet and today's UTC date) with that wallet",
                    hex::encode(addr)
                ),
            );
            p.errors
                .push(FieldError::at("/signature", "not the wallet's"));
            return Err(p);
        }
        Err(e) => {
            let mut p = Problem::invalid(vec![FieldError::at("/signature", e.to_string())]);
            p.kind = "bad-signature";
            p.title = "Not a signature";
            return Err(p);
        }
    }
    let chain = ctx.prepare.chain.cfg;
    let contract = chain
        .and_then(|c| c.tickets.as_ref())
        .and_then(|t| parse_address(&t.address).ok());
    let rpc = ctx.prepare.chain.parts.rpc.as_ref();
    let (Some(chain), Some(contract), Some(rpc)) = (chain, contract, rpc) else {
        return Err(contract_unset(
            "this instance has no ticket contract ([chain.tickets] is not set): no copy can be \
             held here, and no entitlement is read"
                .into(),
        ));
    };
    let h = match holding(rpc, contract, wallet, game_id).await {
        Ok(h) => h,
        Err(HoldingError::Unreachable(e)) => return Err(chain_unreachable(e)),
        Err(HoldingError::NoContract(a)) => {
            return Err(contract_unset(format!(
                "no ticket contract is deployed at {a} ([chain.tickets]) on {}",
                chain.name
            )))
        }
        Err(HoldingError::Unreadable(e)) => return Err(chain_unreachable(e)),
    };
    let balance = h.balance.to_string();
    // The holder's proof in its one spelling (0x, low s, v 27/28, lower-case hex); it recovered
    // above, so it is a signature.
    let holder_signature =
        eip191::canonical(&b.signature).unwrap_or_else(|_| b.signature.to_ascii_lowercase());
    let contract_text = address_text(&contract);
    let reading = BalanceAt {
        origin: ctx.public_url,
        game: &game,
        wallet: &wallet_text,
        holder_signature: &holder_signature,
        contract: &contract_text,
        chain_id: chain.chain_id,
        balance: &balance,
        block: h.block,
        block_hash: h.block_hash.as_deref(),
        at: now,
    };
    signed_answer(
        ctx.prepare.key,
        StatusCode::OK,
        entitlement_doc(&reading, scope_value()),
    )
}
