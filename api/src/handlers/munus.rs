//! The quest board's endpoints (library/MUNUS.md): `GET /play/message` (the exact
//! EIP-191 text of a claim or a submit), `POST /munus/{id}/claim` and `POST /munus/{id}/submit`.
//! The list and the quest pages are static files the live site keeps current (source
//! [`crate::sources::MUNUS`]); what runs by itself (payments, flags, lapses) is the keeper's
//! ([`crate::board`]).
//!
//! Every check that needs no write runs first (the quest, the vow, the signature); the board's
//! rules are then checked again inside the append transaction
//! ([`conduct_indexer::munus::board_job`]), so first come and one claim per vow per UTC day
//! hold under concurrent requests. A write is acknowledged (201) once the log committed it.

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use conduct_core::munus::record::{BoardRecord, Claim, Delivery};
use conduct_core::munus::state::{ClaimRefusal, SubmitRefusal};
use conduct_core::munus::{check_link, is_quest_id, play_message, Action, Quest};
use conduct_core::schema;
use conduct_core::trace::{parse_json, FieldError};
use conduct_indexer::ledger::{Appended, LedgerError, Refusal};
use conduct_indexer::munus::board_job;
use conduct_indexer::munus::keeper::{read_quests, Keeper};
use conduct_renderer::live::munus::quest_key;
use schemars::JsonSchema;
use serde::Deserialize;
use warp::http::StatusCode;
use warp::reply::Response as WarpResponse;

use crate::error::ledger_problem;
use crate::handlers::common::{blocking, find_vow};
use crate::handlers::owner::{self, sworn_vow, Ack, Refuse};
use crate::handlers::views::{Ledger, Signing};
use crate::http::reply::{text_response, Problem};
use crate::http::request::{query_param, required_param};
use crate::sources::{service_now, MUNUS};

/// What the quest board's endpoints read of the running service.
#[derive(Clone, Copy)]
pub struct Munus<'a> {
    /// The signing key and public URL.
    pub sign: Signing<'a>,
    /// The log, the vows and their pages.
    pub ledger: Ledger<'a>,
    /// The data directory (the operator's quest file).
    pub data: &'a Path,
    /// The quest board's keeper (its records, flags and lapses).
    pub keeper: &'a Arc<Keeper>,
}

// The body of `POST /munus/{id}/claim`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(rename = "ClaimRequest", title = "POST /munus/{id}/claim body")]
#[serde(deny_unknown_fields)]
pub(crate) struct ClaimBody {
    #[schemars(pattern(schema::vow_id()), description = CLAIMING_VOW)]
    vow_id: String,
    #[schemars(pattern(schema::EIP191), description = PLAY_SIGNATURE)]
    signature: String,
}

// The body of `POST /munus/{id}/submit`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(rename = "SubmitRequest", title = "POST /munus/{id}/submit body")]
#[serde(deny_unknown_fields)]
pub(crate) struct SubmitBody {
    #[schemars(pattern(schema::vow_id()), description = CLAIMING_VOW)]
    vow_id: String,
    #[schemars(pattern(schema::HTTPS_LINK), length(max = conduct_core::munus::MAX_LINK),
        description = "The delivery: an https link (a pull request), never fetched or run.")]
    link: String,
    #[schemars(pattern(schema::EIP191), description = PLAY_SIGNATURE)]
    signature: String,
}

/// The schemas' description of a claim's or a delivery's vow.
const CLAIMING_VOW: &str = "The claiming vow: signed with a wallet, not sandbox.";
/// The schemas' description of a claim's or a delivery's signature.
const PLAY_SIGNATURE: &str = "The vow wallet's EIP-191 personal_sign signature over the exact \
    text of GET /play/message for this action, quest, vow and UTC day; accepted once.";

/// The quest id of `/munus/{id}/claim` or `/munus/{id}/submit`.
fn quest_of(path: &str) -> &str {
    path.strip_prefix("/munus/")
        .and_then(|rest| rest.split('/').next())
        .unwrap_or("")
}

fn unknown_quest(id: &str) -> Problem {
    Problem::new(
        StatusCode::NOT_FOUND,
        "munus-unknown-quest",
        "No such quest",
        format!("there is no quest {id:?} on the board; see /munus"),
    )
    .at("/id", format!("no quest {id:?}"))
}

/// A claim the board refuses, as its problem (library/ERRORS.md).
pub(crate) fn claim_problem(r: ClaimRefusal) -> Problem {
    let refused = |status, title| Problem::new(status, r.slug(), title, r.detail());
    match r {
        ClaimRefusal::UnknownQuest => refused(StatusCode::NOT_FOUND, "No such quest"),
        ClaimRefusal::Retired => refused(StatusCode::GONE, "The quest is retired"),
        ClaimRefusal::Done => refused(StatusCode::CONFLICT, "The quest is done"),
        ClaimRefusal::AlreadyClaimed => {
            refused(StatusCode::CONFLICT, "The quest is already claimed")
        }
        ClaimRefusal::VowClaimedToday => {
            refused(StatusCode::CONFLICT, "This vow already claimed today")
        }
        ClaimRefusal::PaymentUncheckable => refused(
            StatusCode::SERVICE_UNAVAILABLE,
            "The quest's payment cannot be checked right now",
        )
        .with_header(warp::http::header::RETRY_AFTER, "60"),
    }
}

/// A delivery the board refuses, as its problem (library/ERRORS.md).
pub(crate) fn submit_problem(r: SubmitRefusal) -> Problem {
    let (status, title) = match r {
        SubmitRefusal::UnknownQuest => (StatusCode::NOT_FOUND, "No such quest"),
        SubmitRefusal::Done => (StatusCode::CONFLICT, "The quest is done"),
        SubmitRefusal::NotClaimed => (StatusCode::CONFLICT, "Nobody holds this quest"),
        SubmitRefusal::NotClaimant => (StatusCode::FORBIDDEN, "Another vow holds this quest"),
    };
    Problem::new(status, r.slug(), title, r.detail().to_owned())
}

/// How the board refuses a claim's or a delivery's vow and signature: problem types of its own
/// (library/ERRORS.md), none naming a field but the unreadable signature.
pub(crate) struct Board;

impl Refuse for Board {
    fn sandbox(&self, _id: &str) -> Problem {
        Problem::new(
            StatusCode::FORBIDDEN,
            "munus-sandbox-vow",
            "A sandbox vow cannot claim",
            "only a vow signed with its wallet (not sandbox) claims a quest; take one with POST /vow and a signature over GET /vow/message",
        )
    }

    /// The body requires a signature (an empty one is unreadable).
    fn missing(&self) -> Option<Problem> {
        None
    }

    fn unreadable(&self, why: String) -> Problem {
        let mut p = Problem::invalid(vec![FieldError::at("/signature", why)]);
        p.kind = "bad-signature";
        p.title = "Not a signature";
        p
    }

    fn not_owner(&self, signer: &str, _wallet: &str) -> Problem {
        Problem::new(
            StatusCode::FORBIDDEN,
            "munus-wrong-wallet",
            "Not the vow's wallet",
            format!(
                "the signature recovers to {signer}, not the vow's wallet; sign the exact text \
                 of GET /play/message (it names the action, the quest, the vow and today's UTC \
                 date) with the vow's wallet"
            ),
        )
    }

    fn wrong_wallet(&self) -> Problem {
        Problem::new(
            StatusCode::FORBIDDEN,
            "munus-wrong-wallet",
            "Not the vow's wallet",
            "the claim must be signed by the wallet the vow was signed with",
        )
    }
}

/// The quest `id` as the operator's file lists it now (retired ones included), and every
/// quest of the file.
async fn find_quest(data: &Path, id: &str) -> Result<(Quest, Vec<Quest>), Problem> {
    if !is_quest_id(id) {
        return Err(unknown_quest(id));
    }
    let data = data.to_path_buf();
    let parsed = blocking("reading the quests", move || Ok(read_quests(&data))).await?;
    let quests = parsed.items;
    match quests.iter().find(|q| q.id == id) {
        Some(q) => Ok((q.clone(), quests)),
        // The file could not be read at all: not "no such quest".
        None if parsed
            .errors
            .iter()
            .any(|e| e.contains("could not be read")) =>
        {
            Err(Problem::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "store-unavailable",
                "The quest file could not be read now",
                parsed.errors.join("; "),
            )
            .with_header(warp::http::header::RETRY_AFTER, "5"))
        }
        None => Err(unknown_quest(id)),
    }
}

/// `GET /play/message?action=claim|submit&quest=&vow_id=[&link=]`: the exact text to sign.
pub async fn message(ctx: Munus<'_>, query: &str) -> Result<WarpResponse, Problem> {
    let mut errs = Vec::new();
    let action = required_param(query, "action", &mut errs);
    let quest = required_param(query, "quest", &mut errs);
    let vow_id = required_param(query, "vow_id", &mut errs);
    let link = query_param(query, "link");
    let submit = match action.as_str() {
        "claim" | "claim_quest" => false,
        "submit" | "submit_delivery" => true,
        "" => false,
        other => {
            errs.push(FieldError::at(
                "?action",
                format!("{other:?} is not claim or submit"),
            ));
            false
        }
    };
    match (&link, submit) {
        (None, true) => errs.push(FieldError::at("?link", "a submit names its delivery link")),
        (Some(_), false) if !action.is_empty() => {
            errs.push(FieldError::at("?link", "only a submit carries a link"))
        }
        (Some(l), true) => {
            if let Err(e) = check_link(l) {
                errs.push(FieldError::at("?link", e.to_string()));
            }
        }
        _ => {}
    }
    if !errs.is_empty() {
        return Err(Problem::invalid(errs));
    }
    find_quest(ctx.data, &quest).await?;
    find_vow(ctx.ledger.vows, &vow_id).await?;
    let act = match &link {
        Some(l) if submit => Action::Submit { link: l },
        _ => Action::Claim,
    };
    let text = play_message(ctx.sign.public_url, act, &quest, &vow_id, service_now());
    Ok(text_response(text))
}

/// Append `rec` after the due lapses of its quest (a claim waits for them).
async fn append(
    ctx: &Munus<'_>,
    rec: BoardRecord,
    quests: Vec<Quest>,
    ask: owner::AskOnCommit,
) -> Result<Appended, Problem> {
    let id = rec.quest_id().to_owned();
    // A claim that finds a lapse due waits for it once; found again, it is refused.
    let mut waited = false;
    loop {
        if let Err(e) = ctx.keeper.append_due_lapses(rec.at(), Some(&id)).await {
            tracing::warn!(error = %e, "appending a due lapse failed");
        }
        let flags = ctx.keeper.flags().snapshot();
        let job = board_job(ctx.sign.key.clone(), rec.clone(), quests.clone(), flags);
        match ctx.ledger.seq.submit_job_then(job, ask.hook()).await {
            Ok(a) => return Ok(a),
            Err(LedgerError::Refused(Refusal::MunusLapsePending)) if !waited => waited = true,
            Err(e) => return Err(ledger_problem(e)),
        }
    }
}

/// How a committed claim or delivery is answered: 201 once the quest's pages are rendered (or
/// why not), located at the quest.
fn ack(id: &str) -> Ack {
    Ack::at(format!("/munus/{id}")).page(MUNUS, quest_key(id), true)
}

/// `POST /munus/{id}/claim` `{vow_id, signature}`.
pub async fn claim(ctx: Munus<'_>, path: &str, body: Bytes) -> Result<WarpResponse, Problem> {
    let req: ClaimBody = parse_json(&body).map_err(|e| Problem::invalid(vec![e]))?;
    let id = quest_of(path).to_owned();
    let (quest, quests) = find_quest(ctx.data, &id).await?;
    if quest.retired {
        return Err(claim_problem(ClaimRefusal::Retired));
    }
    let (vow, signer) = sworn_vow(ctx.ledger.vows, &req.vow_id, &Board).await?;
    let at = service_now();
    let make = |wallet_signature| Claim {
        quest_id: id.clone(),
        vow_id: vow.vow_id.clone(),
        wallet: signer.wallet.clone(),
        wallet_signature,
        at,
    };
    let append = |rec, ask| append(&ctx, BoardRecord::Claim(rec), quests, ask);
    let (origin, site) = (ctx.sign.public_url, ctx.ledger.site);
    owner::write(
        origin,
        site,
        &signer,
        Some(&req.signature),
        make,
        append,
        ack(&id),
    )
    .await
}

/// `POST /munus/{id}/submit` `{vow_id, link, signature}`.
pub async fn submit(ctx: Munus<'_>, path: &str, body: Bytes) -> Result<WarpResponse, Problem> {
    let req: SubmitBody = parse_json(&body).map_err(|e| Problem::invalid(vec![e]))?;
    check_link(&req.link)
        .map_err(|e| Problem::invalid(vec![FieldError::at("/link", e.to_string())]))?;
    let id = quest_of(path).to_owned();
    let (_, quests) = find_quest(ctx.data, &id).await?;
    let (vow, signer) = sworn_vow(ctx.ledger.vows, &req.vow_id, &Board).await?;
    let at = service_now();
    // The claim delivered on is the board's, read once the signature holds (the text does not
    // name it).
    let mut rec = owner::verify(ctx.sign.public_url, &signer, Some(&req.signature), |sig| {
        Delivery {
            quest_id: id.clone(),
            vow_id: vow.vow_id.clone(),
            claim: 0,
            link: req.link.clone(),
            wallet_signature: sig,
            at,
        }
    })?;
    let keeper = ctx.keeper.clone();
    let (board, _) = blocking("reading the board", move || {
        keeper.board(at).map_err(|e| e.to_string())
    })
    .await?;
    rec.claim = board
        .check_submit(&id, &vow.vow_id)
        .map_err(submit_problem)?;
    let record = BoardRecord::Delivery(rec);
    Ok(owner::commit(ctx.ledger.site, ack(&id), |ask| {
        append(&ctx, record, quests, ask)
    })
    .await?
    .response)
}
