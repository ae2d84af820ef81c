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

use bytes::Bytes;
use conduct_core::nostr::record::Binding;
use conduct_core::nostr::{bind_message, is_curve_point, npub_decode, npub_encode, verify_text};
use conduct_core::owner::Kind;
use conduct_core::record::OwnerSigned;
use conduct_core::schema;
use conduct_core::trace::{parse_json, FieldError};
use conduct_indexer::nostr::binding_job;
use conduct_renderer::live::registry::who_key;
use schemars::JsonSchema;
use serde::Deserialize;
use warp::http::StatusCode;
use warp::reply::Response as WarpResponse;

use crate::handlers::owner::{self, sworn_vow, Ack, Party, Words};
use crate::handlers::views::{Ledger, Signing};
use crate::http::reply::Problem;
use crate::sources::{service_now, REGISTRY, VOWS};

/// What binding an npub reads of the running service.
#[derive(Clone, Copy)]
pub struct Nostr<'a> {
    /// The signing key and public URL.
    pub sign: Signing<'a>,
    /// The log, the vows and their pages.
    pub ledger: Ledger<'a>,
}

// The body of `POST /nostr/bind`. The signatures are optional here so that a missing one is
// refused as what it is (403 naming it), not as a malformed body; the schema says they are
// required.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(rename = "BindRequest", title = "POST /nostr/bind body")]
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

/// How a binding's wallet signature and vow are refused (library/ERRORS.md).
pub(crate) const WORDS: Words = Words {
    kind: Kind::BindNpub,
    party: Party::Vow,
    sandbox: (
        "nostr-bind-sandbox-vow",
        "A sandbox vow cannot bind an npub",
        "nothing ties it to a key",
    ),
    signature: (
        "nostr-bind-wallet-signature",
        "The vow's wallet did not sign this binding",
    ),
    member: "wallet_signature",
    names: "the vow, the npub",
};

/// The npub's key did not sign the binding (its second signature, BIP-340).
fn nostr_signature(detail: String) -> Problem {
    Problem::new(
        StatusCode::FORBIDDEN,
        "nostr-bind-nostr-signature",
        "The npub's key did not sign this binding",
        detail,
    )
    .at(
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

/// `GET /nostr/bind/message?vow_id=&npub=`: the exact text to sign (`text/plain`), for any
/// vow that exists (as `/play/message`; `POST /nostr/bind` refuses a sandbox vow).
pub async fn message(ctx: Nostr<'_>, query: &str) -> Result<WarpResponse, Problem> {
    let npub = |raw: Option<String>| {
        let raw = raw.ok_or_else(|| vec![FieldError::at("?npub", "missing query parameter")])?;
        check_npub(&raw)
            .map(|(npub, _)| npub)
            .map_err(|e| vec![FieldError::at("?npub", format!("not an npub: {e}"))])
    };
    let (origin, vows) = (ctx.sign.public_url, ctx.ledger.vows);
    owner::vow_message(
        origin,
        vows,
        query,
        "npub",
        npub,
        |origin, vow, npub, date| bind_message(origin, vow, npub, date),
    )
    .await
}

/// `POST /nostr/bind` `{vow_id, npub, wallet_signature, nostr_signature}`: 201 and the signed
/// `conduct.npub-binding/v1` record.
pub async fn bind(ctx: Nostr<'_>, body: Bytes) -> Result<WarpResponse, Problem> {
    let req: BindBody = parse_json(&body).map_err(|e| Problem::invalid(vec![e]))?;
    let (npub, pk) = check_npub(&req.npub).map_err(|e| {
        Problem::invalid(vec![FieldError::at("/npub", format!("not an npub: {e}"))])
    })?;
    let (vow, signer) = sworn_vow(ctx.ledger.vows, &req.vow_id, &WORDS).await?;
    let nsig = req.nostr_signature.unwrap_or_default();
    let at = service_now();
    // The vow's wallet (EIP-191), over the record's text.
    let rec = owner::verify(
        ctx.sign.public_url,
        &signer,
        req.wallet_signature.as_deref(),
        |wallet_signature| Binding {
            origin: ctx.sign.public_url.to_owned(),
            vow_id: vow.vow_id.clone(),
            wallet: signer.wallet.clone(),
            npub: npub.clone(),
            pubkey: hex::encode(pk),
            wallet_signature,
            // One spelling per signature (a re-spelled replay is the same replay).
            nostr_signature: nsig.to_ascii_lowercase(),
            at,
        },
    )?;

    // The npub's key (BIP-340 over sha256 of the same text).
    if nsig.is_empty() {
        return Err(nostr_signature(
            "nostr_signature is missing: the npub's key signs sha256 of the UTF-8 text of GET \
             /nostr/bind/message with BIP-340"
                .into(),
        ));
    }
    verify_text(&pk, &rec.message_at(ctx.sign.public_url), &nsig).map_err(|e| {
        nostr_signature(format!(
            "nostr_signature: {e}; sign the 32 bytes sha256(text) of the exact text of GET \
             /nostr/bind/message with the npub's key (BIP-340, no further hashing)"
        ))
    })?;

    // Committed, the answer is its acknowledgement once the npub's /who record and the vow's
    // cards (the npub's among them) are rendered (a failed render is retried). The vow's
    // pages are asked for last, so the integration mark never passes the binding while the
    // /who record waits (renderer/src/live/mod.rs, `Marks`).
    let ack = Ack::at(format!("/card?key={npub}"))
        .page(REGISTRY, who_key(&npub), false)
        .page(VOWS, vow.vow_id, true);
    let job = binding_job(ctx.sign.key.clone(), rec);
    Ok(owner::commit(ctx.ledger.site, ack, |ask| {
        owner::append(ctx.ledger.seq, job, ask)
    })
    .await?
    .response)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handlers::owner::Refuse;
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
            WORDS.refused(String::new()).errors[0].pointer,
            "/wallet_signature"
        );
        assert_eq!(
            nostr_signature(String::new()).errors[0].pointer,
            "/nostr_signature"
        );
        assert_eq!(WORDS.sandbox("x").status, StatusCode::FORBIDDEN);
        let replay = Problem::from(Refusal::NostrBindReplayed);
        assert_eq!(
            (replay.status, replay.kind),
            (StatusCode::CONFLICT, "nostr-bind-replayed")
        );
    }
}
