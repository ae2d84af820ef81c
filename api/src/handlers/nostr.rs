//! Binding an npub to a signed vow (library/NOSTR.md): `GET /nostr/bind/message` (the exact
//! text both keys sign) and `POST /nostr/bind`. `/hive/profile` and the marks are static files
//! (written at startup and by the vows source).
//!
//! Every check that needs no write runs first (the body, the npub, the vow, the wallet's
//! EIP-191 signature, the npub key's BIP-340 signature over `sha256(text)`); the vow, its
//! wallet, the daily limit and the signatures' single use are checked again inside the append
//! transaction ([`conduct_indexer::nostr::binding_job`]). A binding is acknowledged (201, the
//! signed record) once the log committed it, after the vow's cards (the npub's among them)
//! and the npub's `/who` record are rendered.

use std::sync::Arc;

use bytes::Bytes;
use conduct_core::munus::utc_date;
use conduct_core::nostr::record::Binding;
use conduct_core::nostr::{bind_message, is_curve_point, npub_decode, npub_encode, verify_text};
use conduct_core::owner::{self, Kind};
use conduct_core::schema;
use conduct_core::trace::{parse_json, FieldError};
use conduct_core::vow::eip191;
use conduct_core::vow::record::checksum_address;
use conduct_indexer::nostr::binding_job;
use conduct_indexer::vows::VowRow;
use conduct_renderer::live::registry::who_key;
use schemars::JsonSchema;
use serde::Deserialize;
use warp::http::StatusCode;
use warp::reply::Response as WarpResponse;

use crate::error::ledger_problem;
use crate::handlers::vows::{created, find_vow, with_render_state};
use crate::http::reply::{bytes_response, Problem};
use crate::http::request::query_param;
use crate::sources::{service_now, REGISTRY, VOWS};
use crate::state::App;

/// The body of `POST /nostr/bind`. The signatures are optional here so that a missing one is
/// refused as what it is (403 naming it), not as a malformed body; the schema says they are
/// required.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(
    rename = "BindRequest",
    title = "POST /nostr/bind body",
    description = ""
)]
#[serde(deny_unknown_fields)]
pub(crate) struct BindBody {
    #[schemars(
        pattern(schema::vow_id()),
        description = "The vow: signed with a wallet, not sandbox."
    )]
    vow_id: String,
    #[schemars(
        pattern(schema::npub()),
        description = "The NIP-19 npub to bind (written in capitals, it is read the same)."
    )]
    npub: String,
    #[schemars(
        required,
        pattern(schema::EIP191),
        description = "The vow wallet's EIP-191 personal_sign signature over the exact text of \
            GET /nostr/bind/message (today's UTC date)."
    )]
    wallet_signature: Option<String>,
    #[schemars(
        required,
        pattern(schema::BIP340),
        description = "The npub key's BIP-340 signature over the 32 bytes sha256(UTF-8 text) of \
            the same text, in hex."
    )]
    nostr_signature: Option<String>,
}

fn problem(status: StatusCode, slug: &'static str, title: &'static str, detail: String) -> Problem {
    Problem::new(status, slug, title, detail)
}

fn at(mut p: Problem, pointer: &str, detail: &str) -> Problem {
    p.errors.push(FieldError::at(pointer, detail));
    p
}

pub(crate) fn sandbox_vow(id: &str) -> Problem {
    at(
        problem(
            StatusCode::FORBIDDEN,
            "nostr-bind-sandbox-vow",
            "A sandbox vow cannot bind an npub",
            format!(
                "vow {id} is sandbox (no wallet signed it), so nothing ties it to a key; take a \
                 signed vow with POST /vow and a signature over GET /vow/message"
            ),
        ),
        "/vow_id",
        "a sandbox vow",
    )
}

pub(crate) fn wallet_signature(detail: String) -> Problem {
    at(
        problem(
            StatusCode::FORBIDDEN,
            "nostr-bind-wallet-signature",
            "The vow's wallet did not sign this binding",
            detail,
        ),
        "/wallet_signature",
        "the vow wallet's EIP-191 signature over the text of GET /nostr/bind/message",
    )
}

fn nostr_signature(detail: String) -> Problem {
    at(
        problem(
            StatusCode::FORBIDDEN,
            "nostr-bind-nostr-signature",
            "The npub's key did not sign this binding",
            detail,
        ),
        "/nostr_signature",
        "the npub key's BIP-340 signature (128 hex digits) over sha256 of the text of GET \
         /nostr/bind/message",
    )
}

/// The canonical (lowercase) npub of `s`, or why it is not one that can sign.
fn check_npub(s: &str) -> Result<(String, [u8; 32]), String> {
    let pk = npub_decode(s.trim()).map_err(|e| e.to_string())?;
    if !is_curve_point(&pk) {
        return Err("its key is not a point of secp256k1: no key signs for it".into());
    }
    Ok((npub_encode(&pk), pk))
}

/// The signed vow `id` and its wallet (lowercase `0x` hex), or the refusal (404, or 403 for a
/// sandbox vow).
async fn signed_vow(app: &Arc<App>, id: &str) -> Result<(VowRow, String), Problem> {
    let row = find_vow(app, id).await?;
    match (row.sandbox, row.wallet.clone()) {
        (false, Some(w)) => Ok((row, w.to_ascii_lowercase())),
        _ => Err(sandbox_vow(id)),
    }
}

/// `GET /nostr/bind/message?vow_id=&npub=`: the exact text to sign (`text/plain`), for any
/// vow that exists (as `/play/message`; `POST /nostr/bind` refuses a sandbox vow).
pub async fn message(app: &Arc<App>, query: &str) -> Result<WarpResponse, Problem> {
    let mut errs = Vec::new();
    let vow_id = query_param(query, "vow_id");
    if vow_id.is_none() {
        errs.push(FieldError::at("?vow_id", "missing query parameter"));
    }
    let npub = match query_param(query, "npub") {
        None => {
            errs.push(FieldError::at("?npub", "missing query parameter"));
            None
        }
        Some(n) => match check_npub(&n) {
            Ok((n, _)) => Some(n),
            Err(e) => {
                errs.push(FieldError::at("?npub", format!("not an npub: {e}")));
                None
            }
        },
    };
    let (Some(vow_id), Some(npub), true) = (vow_id, npub, errs.is_empty()) else {
        return Err(Problem::invalid(errs));
    };
    let vow = find_vow(app, &vow_id).await?;
    let text = bind_message(
        &app.cfg.public_url,
        &vow.vow_id,
        &npub,
        &utc_date(service_now()),
    );
    Ok(bytes_response(
        StatusCode::OK,
        "text/plain; charset=utf-8",
        text.into_bytes(),
    ))
}

/// `POST /nostr/bind` `{vow_id, npub, wallet_signature, nostr_signature}`: 201 and the signed
/// `conduct.npub-binding/v1` record.
pub async fn bind(app: &Arc<App>, body: Bytes) -> Result<WarpResponse, Problem> {
    let req: BindBody = parse_json(&body).map_err(|e| Problem::invalid(vec![e]))?;
    let (npub, pk) = check_npub(&req.npub).map_err(|e| {
        Problem::invalid(vec![FieldError::at("/npub", format!("not an npub: {e}"))])
    })?;
    let (vow, wallet) = signed_vow(app, &req.vow_id).await?;
    let now = service_now();
    let text = bind_message(&app.cfg.public_url, &vow.vow_id, &npub, &utc_date(now));

    // The vow's wallet (EIP-191).
    let Some(wsig) = req.wallet_signature.filter(|s| !s.is_empty()) else {
        return Err(wallet_signature(
            "wallet_signature is missing: the vow's wallet signs the text of GET \
             /nostr/bind/message (EIP-191 personal_sign)"
                .into(),
        ));
    };
    let addr = owner::recover(Kind::BindNpub, &text, &wsig)
        .map_err(|e| wallet_signature(format!("wallet_signature does not verify: {e}")))?;
    if format!("0x{}", hex::encode(addr)) != wallet {
        return Err(wallet_signature(format!(
            "wallet_signature recovers to {}, not the vow's wallet; sign the exact text of GET \
             /nostr/bind/message (it names the vow, the npub and today's UTC date) with the \
             vow's wallet",
            checksum_address(&addr)
        )));
    }

    // The npub's key (BIP-340 over sha256 of the text).
    let Some(nsig) = req.nostr_signature.filter(|s| !s.is_empty()) else {
        return Err(nostr_signature(
            "nostr_signature is missing: the npub's key signs sha256 of the UTF-8 text of GET \
             /nostr/bind/message with BIP-340"
                .into(),
        ));
    };
    verify_text(&pk, &text, &nsig).map_err(|e| {
        nostr_signature(format!(
            "nostr_signature: {e}; sign the 32 bytes sha256(text) of the exact text of GET \
             /nostr/bind/message with the npub's key (BIP-340, no further hashing)"
        ))
    })?;

    let rec = Binding {
        origin: app.cfg.public_url.clone(),
        vow_id: vow.vow_id.clone(),
        wallet: checksum_address(&addr),
        npub: npub.clone(),
        pubkey: hex::encode(pk),
        // One spelling per signature (a re-spelled replay is the same replay).
        wallet_signature: eip191::canonical(&wsig).unwrap_or_else(|_| wsig.to_ascii_lowercase()),
        nostr_signature: nsig.to_ascii_lowercase(),
        at: now,
    };
    let appended = app
        .seq
        .submit_job(binding_job(app.key.clone(), rec))
        .await
        .map_err(ledger_problem)?;
    let leaf = appended.leaf.unwrap_or_default();
    // Committed: the answer is its acknowledgement. The vow's cards (the npub's among them)
    // and the npub's /who record; a failed render is retried by the render thread.
    let cards = app.site.render(VOWS, &vow.vow_id, true).await;
    let who = app.site.render(REGISTRY, &who_key(&npub), false).await;
    let pending = cards.err().or(who.err()).map(|e| e.0);
    let location = format!("/card?key={npub}");
    Ok(with_render_state(created(leaf, &location), pending))
}

#[cfg(test)]
mod tests {
    use super::*;
    use conduct_indexer::ledger::Refusal;

    #[test]
    fn npubs_are_checked_and_made_canonical() {
        let npub = "npub10elfcs4fr0l0r8af98jlmgdh9c8tcxjvz9qkw038js35mp4dma8qzvjptg";
        assert_eq!(check_npub(npub).unwrap().0, npub);
        assert_eq!(check_npub(&npub.to_ascii_uppercase()).unwrap().0, npub);
        assert!(check_npub("npub1xyz").is_err());
        let off_curve = npub_encode(&[0xff; 32]);
        assert!(check_npub(&off_curve).unwrap_err().contains("secp256k1"));
    }

    #[test]
    fn refusals_name_their_field() {
        assert_eq!(
            wallet_signature(String::new()).errors[0].pointer,
            "/wallet_signature"
        );
        assert_eq!(
            nostr_signature(String::new()).errors[0].pointer,
            "/nostr_signature"
        );
        assert_eq!(sandbox_vow("x").status, StatusCode::FORBIDDEN);
        let replay = Problem::from(Refusal::NostrBindReplayed);
        assert_eq!(
            (replay.status, replay.kind),
            (StatusCode::CONFLICT, "nostr-bind-replayed")
        );
    }
}
