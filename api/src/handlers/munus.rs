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

use std::sync::Arc;

use bytes::Bytes;
use conduct_core::munus::record::{BoardRecord, Claim, Delivery};
use conduct_core::munus::state::{ClaimRefusal, SubmitRefusal};
use conduct_core::munus::{check_link, is_quest_id, play_message, Action, Quest};
use conduct_core::owner::{self, Kind};
use conduct_core::schema;
use conduct_core::trace::{parse_json, FieldError};
use conduct_core::vow::eip191;
use conduct_core::vow::record::checksum_address;
use conduct_indexer::ledger::{LedgerError, Refusal};
use conduct_indexer::munus::board_job;
use conduct_indexer::munus::keeper::read_quests;
use conduct_indexer::vows::VowRow;
use conduct_renderer::live::munus::quest_key;
use schemars::JsonSchema;
use serde::Deserialize;
use warp::http::StatusCode;
use warp::reply::Response as WarpResponse;

use crate::error::ledger_problem;
use crate::handlers::vows::{blocking, created, find_vow, with_render_state};
use crate::http::reply::{bytes_response, Problem};
use crate::http::request::query_param;
use crate::sources::{service_now, MUNUS};
use crate::state::App;

/// The body of `POST /munus/{id}/claim`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(
    rename = "ClaimRequest",
    title = "POST /munus/{id}/claim body",
    description = ""
)]
#[serde(deny_unknown_fields)]
pub(crate) struct ClaimBody {
    #[schemars(pattern(schema::vow_id()), description = CLAIMING_VOW)]
    vow_id: String,
    #[schemars(pattern(schema::EIP191), description = PLAY_SIGNATURE)]
    signature: String,
}

/// The body of `POST /munus/{id}/submit`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(
    rename = "SubmitRequest",
    title = "POST /munus/{id}/submit body",
    description = ""
)]
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

fn refused(status: StatusCode, slug: &'static str, title: &'static str, detail: &str) -> Problem {
    Problem::new(status, slug, title, detail.to_owned())
}

fn unknown_quest(id: &str) -> Problem {
    let mut p = Problem::new(
        StatusCode::NOT_FOUND,
        "munus-unknown-quest",
        "No such quest",
        format!("there is no quest {id:?} on the board; see /munus"),
    );
    p.errors
        .push(FieldError::at("/id", format!("no quest {id:?}")));
    p
}

pub(crate) fn claim_problem(r: ClaimRefusal) -> Problem {
    let (status, title) = match r {
        ClaimRefusal::UnknownQuest => (StatusCode::NOT_FOUND, "No such quest"),
        ClaimRefusal::Retired => (StatusCode::GONE, "The quest is retired"),
        ClaimRefusal::Done => (StatusCode::CONFLICT, "The quest is done"),
        ClaimRefusal::AlreadyClaimed => (StatusCode::CONFLICT, "The quest is already claimed"),
        ClaimRefusal::VowClaimedToday => (StatusCode::CONFLICT, "This vow already claimed today"),
        ClaimRefusal::PaymentUncheckable => (
            StatusCode::SERVICE_UNAVAILABLE,
            "The quest's payment cannot be checked right now",
        ),
    };
    let p = refused(status, r.slug(), title, r.detail());
    if r == ClaimRefusal::PaymentUncheckable {
        p.with_header(warp::http::header::RETRY_AFTER, "60")
    } else {
        p
    }
}

pub(crate) fn submit_problem(r: SubmitRefusal) -> Problem {
    let (status, title) = match r {
        SubmitRefusal::UnknownQuest => (StatusCode::NOT_FOUND, "No such quest"),
        SubmitRefusal::Done => (StatusCode::CONFLICT, "The quest is done"),
        SubmitRefusal::NotClaimed => (StatusCode::CONFLICT, "Nobody holds this quest"),
        SubmitRefusal::NotClaimant => (StatusCode::FORBIDDEN, "Another vow holds this quest"),
    };
    refused(status, r.slug(), title, r.detail())
}

pub(crate) fn sandbox_vow() -> Problem {
    refused(
        StatusCode::FORBIDDEN,
        "munus-sandbox-vow",
        "A sandbox vow cannot claim",
        "only a vow signed with its wallet (not sandbox) claims a quest; take one with POST /vow and a signature over GET /vow/message",
    )
}

/// The quest `id` as the operator's file lists it now (retired ones included), and every
/// quest of the file.
async fn find_quest(app: &Arc<App>, id: &str) -> Result<(Quest, Vec<Quest>), Problem> {
    if !is_quest_id(id) {
        return Err(unknown_quest(id));
    }
    let data = app.cfg.data.clone();
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

/// The sworn vow `id` and its wallet (lower-case `0x` hex), or the refusal.
async fn sworn_vow(app: &Arc<App>, id: &str) -> Result<(VowRow, String), Problem> {
    let row = find_vow(app, id).await?;
    match (row.sandbox, row.wallet.clone()) {
        (false, Some(w)) => Ok((row, w.to_ascii_lowercase())),
        _ => Err(sandbox_vow()),
    }
}

/// The one stored spelling of a signature that recovered (see `eip191::canonical`).
fn canonical(signature: &str) -> String {
    eip191::canonical(signature).unwrap_or_else(|_| signature.to_ascii_lowercase())
}

/// Recover the signer of `text`, a message of `kind`; it must be `wallet`.
fn check_signature(
    kind: Kind,
    text: &str,
    signature: &str,
    wallet: &str,
) -> Result<String, Problem> {
    match owner::recover(kind, text, signature) {
        Ok(addr) if format!("0x{}", hex::encode(addr)) == wallet => Ok(checksum_address(&addr)),
        Ok(addr) => Err(refused(
            StatusCode::FORBIDDEN,
            "munus-wrong-wallet",
            "Not the vow's wallet",
            &format!(
                "the signature recovers to {}, not the vow's wallet; sign the exact text of \
                 GET /play/message (it names the action, the quest, the vow and today's UTC \
                 date) with the vow's wallet",
                checksum_address(&addr)
            ),
        )),
        Err(e) => {
            let mut p = Problem::invalid(vec![FieldError::at("/signature", e.to_string())]);
            p.kind = "bad-signature";
            p.title = "Not a signature";
            Err(p)
        }
    }
}

/// `GET /play/message?action=claim|submit&quest=&vow_id=[&link=]`: the exact text to sign.
pub async fn message(app: &Arc<App>, query: &str) -> Result<WarpResponse, Problem> {
    let mut errs = Vec::new();
    let mut get = |name: &str| {
        let v = query_param(query, name);
        if v.is_none() {
            errs.push(FieldError::at(
                format!("?{name}"),
                "missing query parameter",
            ));
        }
        v.unwrap_or_default()
    };
    let (action, quest, vow_id) = (get("action"), get("quest"), get("vow_id"));
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
    find_quest(app, &quest).await?;
    find_vow(app, &vow_id).await?;
    let act = match &link {
        Some(l) if submit => Action::Submit { link: l },
        _ => Action::Claim,
    };
    let text = play_message(&app.cfg.public_url, act, &quest, &vow_id, service_now());
    Ok(bytes_response(
        StatusCode::OK,
        "text/plain; charset=utf-8",
        text.into_bytes(),
    ))
}

/// Append `rec` after the due lapses of its quest (a claim waits for them).
async fn append(app: &Arc<App>, rec: BoardRecord, quests: Vec<Quest>) -> Result<Vec<u8>, Problem> {
    let id = rec.quest_id().to_owned();
    // A claim that finds a lapse due waits for it once; found again, it is refused.
    let mut waited = false;
    loop {
        if let Err(e) = app.munus.append_due_lapses(rec.at(), Some(&id)).await {
            tracing::warn!(error = %e, "appending a due lapse failed");
        }
        let flags = app.munus.flags().snapshot();
        let job = board_job(app.key.clone(), rec.clone(), quests.clone(), flags);
        match app.seq.submit_job(job).await {
            Ok(a) => return Ok(a.leaf.unwrap_or_default()),
            Err(LedgerError::Refused(Refusal::MunusLapsePending)) if !waited => waited = true,
            Err(e) => return Err(ledger_problem(e)),
        }
    }
}

/// Answer a committed record: 201 once the quest's pages are rendered (or why not).
async fn acknowledge(app: &Arc<App>, id: &str, leaf: Vec<u8>) -> WarpResponse {
    let rendered = app.site.render(MUNUS, &quest_key(id), true).await;
    with_render_state(
        created(leaf, &format!("/munus/{id}")),
        rendered.err().map(|e| e.0),
    )
}

/// `POST /munus/{id}/claim` `{vow_id, signature}`.
pub async fn claim(app: &Arc<App>, path: &str, body: Bytes) -> Result<WarpResponse, Problem> {
    let req: ClaimBody = parse_json(&body).map_err(|e| Problem::invalid(vec![e]))?;
    let id = quest_of(path).to_owned();
    let (quest, quests) = find_quest(app, &id).await?;
    if quest.retired {
        return Err(claim_problem(ClaimRefusal::Retired));
    }
    let (vow, wallet) = sworn_vow(app, &req.vow_id).await?;
    let now = service_now();
    let text = play_message(&app.cfg.public_url, Action::Claim, &id, &vow.vow_id, now);
    let wallet = check_signature(Kind::ClaimQuest, &text, &req.signature, &wallet)?;
    let rec = BoardRecord::Claim(Claim {
        quest_id: id.clone(),
        vow_id: vow.vow_id,
        wallet,
        wallet_signature: canonical(&req.signature),
        at: now,
    });
    let leaf = append(app, rec, quests).await?;
    Ok(acknowledge(app, &id, leaf).await)
}

/// `POST /munus/{id}/submit` `{vow_id, link, signature}`.
pub async fn submit(app: &Arc<App>, path: &str, body: Bytes) -> Result<WarpResponse, Problem> {
    let req: SubmitBody = parse_json(&body).map_err(|e| Problem::invalid(vec![e]))?;
    check_link(&req.link)
        .map_err(|e| Problem::invalid(vec![FieldError::at("/link", e.to_string())]))?;
    let id = quest_of(path).to_owned();
    let (_, quests) = find_quest(app, &id).await?;
    let (vow, wallet) = sworn_vow(app, &req.vow_id).await?;
    let now = service_now();
    let act = Action::Submit { link: &req.link };
    let text = play_message(&app.cfg.public_url, act, &id, &vow.vow_id, now);
    check_signature(Kind::SubmitDelivery, &text, &req.signature, &wallet)?;
    let a = app.clone();
    let (board, _) = blocking("reading the board", move || {
        a.munus.board(now).map_err(|e| e.to_string())
    })
    .await?;
    let claim = board
        .check_submit(&id, &vow.vow_id)
        .map_err(submit_problem)?;
    let rec = BoardRecord::Delivery(Delivery {
        quest_id: id.clone(),
        vow_id: vow.vow_id,
        claim,
        link: req.link,
        wallet_signature: canonical(&req.signature),
        at: now,
    });
    let leaf = append(app, rec, quests).await?;
    Ok(acknowledge(app, &id, leaf).await)
}
