//! Hosted familiars (library/FAMILIARS.md): `GET /familiar/message` (the exact text an owner's
//! wallet signs) and `POST /familiar/summon` (paid at the posted labor price, a price of its
//! own, through the one payment gate: its 402 challenge carries the labor price on every rail).
//! The familiar's page `/familiar/<id>` and the list `/familiars` are static files the live
//! site keeps current (source [`crate::sources::FAMILIARS`]).
//!
//! Everything that needs no money is checked first (the body, the order, the owner, the owner's
//! EIP-191 signature over the exact text, the signature not used before): a bad signature is
//! refused without a 402 and without a charge. A signature that summoned a familiar already is
//! that summon sent again, answered 200 with the same record, its `Location` and
//! `Idempotent-Replayed: true`, with no payment asked for or settled (within 24 hours, the same
//! owner and order: [`Familiar::resent_by`]), or else refused 409 `familiar-replayed`. The
//! payment then settles before the record is appended (a summoned familiar exists only for a
//! settled payment); the append job re-checks the signature's single use and a vow owner's vow
//! ([`conduct_indexer::familiar::familiar_job`]). One summon per signature is in progress at a
//! time, so the same summon sent twice at once is never paid twice.
//! The familiar holds no wallet (`wallet: null`) and has a faucet cap of `0` (library/FAMILIARS.md; PREPARE.md rule 6).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use conduct_core::familiar::record::Familiar;
use conduct_core::familiar::{familiar_id, familiar_message, parse_order, Order, Owner};
use conduct_core::munus::utc_date;
use conduct_core::owner::Kind;
use conduct_core::record::Logged;
use conduct_core::schema;
use conduct_core::trace::{parse_json, FieldError};
use conduct_core::vow::eip191;
use conduct_core::witness::address;
use conduct_indexer::familiar::{familiar_job, FamiliarRow};
use conduct_indexer::vows::VowReader;
use conduct_renderer::live::familiar::familiar_key;
use schemars::JsonSchema;
use serde::Deserialize;
use warp::http::{header, HeaderValue, StatusCode};
use warp::reply::Response as WarpResponse;

use crate::handlers::common::{blocking, find_vow};
use crate::handlers::owner::{
    append, commit, sworn_wallet, verify, Ack, Party, Refuse, Signer, Words,
};
use crate::handlers::views::{Ledger, Signing};
use crate::http::reply::{json_response, text_response, Problem};
use crate::http::request::query_param;
use crate::payment::gate::{gate, Charge, Payments, Served};
use crate::sources::{service_now, FAMILIARS};

/// What the familiar endpoints read of the running service.
#[derive(Clone, Copy)]
pub struct Familiars<'a> {
    /// The signing key and public URL.
    pub sign: Signing<'a>,
    /// The log, the vows and their pages.
    pub ledger: Ledger<'a>,
    /// The posted labor price (`[familiar] labor_price_usd`).
    pub labor_price_usd: &'a str,
    /// What the payment gate charges with (and the summons in progress).
    pub pay: Payments<'a>,
}

/// The owner of a summon body: exactly one of the two.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(inline, description = "", transform = schema::exactly_one)]
#[serde(deny_unknown_fields)]
struct OwnerBody {
    #[schemars(required, pattern(schema::vow_id()))]
    vow_id: Option<String>,
    #[schemars(required, pattern(schema::ADDRESS))]
    wallet: Option<String>,
}

// The body of `POST /familiar/summon`. The signature is optional here so that a missing one
// is refused as what it is (403 naming it), not as a malformed body; the schema says it is
// required. The order is read by [`parse_order`], whose table its schema is built from.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(rename = "FamiliarRequest", title = "POST /familiar/summon body")]
#[serde(deny_unknown_fields)]
pub(crate) struct SummonBody {
    owner: OwnerBody,
    #[schemars(with = "conduct_core::familiar::Order")]
    order: serde_json::Value,
    #[schemars(required, pattern(schema::EIP191))]
    signature: Option<String>,
}

/// How a summon's owner signature and owner vow are refused (library/ERRORS.md); each says
/// nothing was charged.
pub(crate) const WORDS: Words = Words {
    kind: Kind::SummonFamiliar,
    party: Party::Owner,
    sandbox: (
        "familiar-sandbox-vow",
        "A sandbox vow cannot own a familiar",
        "no wallet can sign for it",
    ),
    signature: (
        "familiar-owner-signature",
        "The owner's wallet did not sign this summon",
    ),
    member: "signature",
    names: "the owner, the order's sha256",
};

/// 409 `familiar-replayed`: the signature summoned another familiar.
pub(crate) fn replayed() -> Problem {
    Problem::new(
        StatusCode::CONFLICT,
        "familiar-replayed",
        "This summon's signature was used already",
        "an owner signature summons one familiar, and this one summoned a familiar for \
         another owner or order, or more than 24 hours ago (the same summon within 24 hours \
         is answered with its record); to summon another, fetch GET /familiar/message and \
         sign it anew (the text names the UTC date); nothing was charged",
    )
    .at("/signature", "used by an earlier familiar")
}

/// Marks a summon's owner signature as in progress until dropped (in the service's set of paid
/// calls in progress, under a key of its own): while one summon with a signature is paying,
/// another with the same signature (whatever its `Idempotency-Key`) is refused 409 `in-flight`
/// before anything is asked or charged, and its retry is answered with the record.
struct Summoning<'a> {
    set: &'a Mutex<HashSet<String>>,
    key: String,
}

impl<'a> Summoning<'a> {
    fn enter(set: &'a Mutex<HashSet<String>>, signature: &str) -> Result<Self, Problem> {
        let key = format!("familiar-signature\0{signature}");
        if crate::lock(set).insert(key.clone()) {
            return Ok(Summoning { set, key });
        }
        Err(Problem::new(
            StatusCode::CONFLICT,
            "in-flight",
            "The same summon is being paid for right now",
            "a summon with this owner signature is in progress; retry shortly and its record is \
             returned without a second charge",
        )
        .with_header(header::RETRY_AFTER, "1"))
    }
}

impl Drop for Summoning<'_> {
    fn drop(&mut self) {
        crate::lock(self.set).remove(&self.key);
    }
}

/// The answer to a summon sent again: 200, the record's bytes as first served, its
/// `Location` and `Idempotent-Replayed: true` (as a paid route's idempotent replay,
/// library/PAYMENTS.md); nothing is asked for or charged.
fn resent(row: FamiliarRow) -> WarpResponse {
    let mut resp = json_response(row.leaf);
    let h = resp.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&format!("/familiar/{}", row.familiar_id)) {
        h.insert(header::LOCATION, v);
    }
    h.insert("idempotent-replayed", HeaderValue::from_static("true"));
    resp
}

/// The owner named by `vow_id` (of `vows`) or `wallet` (exactly one), with the wallet that
/// signs for it; `base` is the pointer of the owner (`/owner` in a body, `?` in a query).
async fn owner_of(
    vows: &Arc<VowReader>,
    vow_id: Option<String>,
    wallet: Option<String>,
    base: &str,
) -> Result<Owner, Problem> {
    match (vow_id, wallet) {
        (Some(id), None) => {
            let row = find_vow(vows, &id).await.map_err(|mut p| {
                if let Some(e) = p.errors.first_mut() {
                    e.pointer = format!("{base}vow_id");
                }
                p
            })?;
            match sworn_wallet(&row) {
                Some(wallet) => Ok(Owner::Vow {
                    vow_id: row.vow_id,
                    wallet,
                }),
                None => Err(WORDS.sandbox(&id)),
            }
        }
        (None, Some(w)) => address(&w)
            .map(|wallet| Owner::Wallet { wallet })
            .map_err(|e| {
                Problem::invalid(vec![FieldError::at(format!("{base}wallet"), e.to_string())])
            }),
        _ => Err(Problem::invalid(vec![FieldError::at(
            if base.is_empty() { "/owner" } else { base },
            "name the owner by exactly one of vow_id (a signed vow) and wallet",
        )])),
    }
}

/// `GET /familiar/message?vow_id=|wallet=&order=<order_sha256>`: the exact text the owner's
/// wallet signs (`text/plain`).
pub async fn message(ctx: Familiars<'_>, query: &str) -> Result<WarpResponse, Problem> {
    let order = query_param(query, "order")
        .filter(|o| o.len() == 64 && o.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
        .ok_or_else(|| {
            Problem::invalid(vec![FieldError::at(
                "?order",
                "order is the labor order's SHA-256 (64 lowercase hex digits of sha256 of its \
                 RFC 8785 bytes)",
            )])
        })?;
    let owner = owner_of(
        ctx.ledger.vows,
        query_param(query, "vow_id"),
        query_param(query, "wallet"),
        "?",
    )
    .await?;
    let text = familiar_message(
        ctx.sign.public_url,
        &owner.named(),
        &order,
        &utc_date(service_now()),
    );
    Ok(text_response(text))
}

/// A summon's body, read: the order, the owner and the signature as sent and in its one
/// canonical spelling (a re-spelled signature is the same signature, and the same id).
struct Summon {
    owner: Owner,
    order: Order,
    sent: String,
    signature: String,
}

async fn read(vows: &Arc<VowReader>, body: Bytes) -> Result<Summon, Problem> {
    let req: SummonBody = parse_json(&body).map_err(|e| Problem::invalid(vec![e]))?;
    let order = parse_order(&req.order, "/order").map_err(Problem::invalid)?;
    let owner = owner_of(vows, req.owner.vow_id, req.owner.wallet, "/owner/").await?;
    let Some(sent) = req.signature.filter(|s| !s.is_empty()) else {
        return Err(WORDS.absent());
    };
    let signature = eip191::canonical(&sent).map_err(|e| WORDS.unreadable(e.to_string()))?;
    Ok(Summon {
        owner,
        order,
        sent,
        signature,
    })
}

/// The familiar this summon's signature summoned already, if any: `Ok(Some)` when this is that
/// summon sent again within 24 hours ([`Familiar::resent_by`]), 409 `familiar-replayed` for any
/// other summon with the signature. Checked before the signature is checked against today's
/// text (the record's text may name yesterday) and before any payment is asked for.
async fn earlier(ctx: &Familiars<'_>, s: &Summon) -> Result<Option<FamiliarRow>, Problem> {
    let (reader, id) = (ctx.ledger.vows.clone(), familiar_id(&s.signature));
    let seen = blocking("reading the familiars", move || {
        reader.familiar(&id).map_err(|e| e.to_string())
    })
    .await?;
    let Some(row) = seen else {
        return Ok(None);
    };
    let rec = serde_json::from_slice(&row.leaf)
        .ok()
        .and_then(|v| Familiar::parse(&v).ok().flatten());
    match rec {
        Some((_, rec))
            if rec.resent_by(
                ctx.sign.public_url,
                &s.owner,
                &s.order,
                &s.signature,
                service_now(),
            ) =>
        {
            Ok(Some(row))
        }
        _ => Err(replayed()),
    }
}

/// `POST /familiar/summon` `{owner: {vow_id} | {wallet}, order, signature}`: check, take payment
/// at the posted labor price (settled first), append the record, render its page: 201 and the
/// signed `conduct.familiar/v1` record. The same summon within 24 hours (the same signature,
/// owner and order, whatever its `Idempotency-Key`) is answered 200 with the same record and
/// its `Location`, asks for no payment and settles none offered.
pub async fn summon(
    ctx: Familiars<'_>,
    body: Bytes,
    charge: Charge<'_>,
) -> Result<WarpResponse, Problem> {
    let s = read(ctx.ledger.vows, body).await?;
    // Held until the answer: the look-up below and the append cannot be raced by the same
    // signature under another idempotency key.
    let _summoning = Summoning::enter(ctx.pay.inflight, &s.signature)?;
    if let Some(row) = earlier(&ctx, &s).await? {
        return Ok(resent(row));
    }
    // The owner's signature over today's text (a signature not used before).
    let Summon {
        owner, order, sent, ..
    } = s;
    let signer = Signer {
        wallet: owner.wallet().to_owned(),
        refuse: &WORDS,
    };
    let rec = verify(
        ctx.sign.public_url,
        &signer,
        Some(&sent),
        |owner_signature| Familiar {
            origin: ctx.sign.public_url.to_owned(),
            owner,
            owner_signature,
            order,
            labor_price_usd: ctx.labor_price_usd.to_owned(),
            at: service_now(),
        },
    )?;
    let parts = ctx.pay.gate_parts(charge.pay.price, service_now());
    // The signature names the owner, the order and the day.
    let request = format!("familiar|{}", rec.owner_signature);
    let handler = || async move {
        let id = rec.id();
        let ack = Ack::at(format!("/familiar/{id}")).page(FAMILIARS, familiar_key(&id), true);
        let job = familiar_job(ctx.sign.key.clone(), rec);
        commit(ctx.ledger.site, ack, |ask| append(ctx.ledger.seq, job, ask))
            .await
            .map(Served::from)
    };
    gate(parts, &charge, request, Ok, |_| Ok(()), handler).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_name_their_field_and_say_nothing_was_charged() {
        let p = WORDS.refused("x".into());
        assert_eq!(
            (p.status, p.kind, p.errors[0].pointer.as_str()),
            (
                StatusCode::FORBIDDEN,
                "familiar-owner-signature",
                "/signature"
            )
        );
        assert!(p.detail.contains("nothing was charged"));
        assert_eq!(replayed().status, StatusCode::CONFLICT);
        assert_eq!(WORDS.sandbox("x").errors[0].pointer, "/owner/vow_id");
    }

    #[test]
    fn a_resent_summon_is_answered_with_its_record_and_location() {
        let resp = resent(FamiliarRow {
            familiar_id: "00000000000000ab".into(),
            log_index: 3,
            at: 0,
            leaf: b"{}".to_vec(),
        });
        assert_eq!(resp.status(), StatusCode::OK);
        let h = resp.headers();
        assert_eq!(h[header::LOCATION], "/familiar/00000000000000ab");
        assert_eq!(h["idempotent-replayed"], "true");
    }

    #[test]
    fn one_summon_per_signature_at_a_time() {
        let set = Mutex::new(HashSet::new());
        let first = Summoning::enter(&set, "0xab").unwrap();
        let p = Summoning::enter(&set, "0xab").err().unwrap();
        assert_eq!((p.status, p.kind), (StatusCode::CONFLICT, "in-flight"));
        assert!(Summoning::enter(&set, "0xcd").is_ok());
        drop(first);
        assert!(Summoning::enter(&set, "0xab").is_ok());
    }
}
