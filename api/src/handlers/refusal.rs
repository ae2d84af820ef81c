//! `From<Refusal> for Problem`: each typed refusal of an append its own problem (library/ERRORS.md).
//! It names the handlers' problems (munus, nostr, witness, familiar), so it lives apart from
//! [`crate::error`], which the handlers import.

use conduct_core::munus::state::{ClaimRefusal, SubmitRefusal};
use conduct_core::munus::MAX_DELIVERIES_PER_DAY;
use conduct_indexer::ledger::append::OwnerRecord;
use conduct_indexer::ledger::Refusal;
use conduct_indexer::nostr::MAX_BINDINGS_PER_DAY;
use conduct_indexer::witness::MAX_PLEDGES_PER_DAY;
use warp::http::{header, StatusCode};

use crate::handlers::owner::Refuse;
use crate::handlers::{familiar, munus, nostr, witness};
use crate::http::reply::Problem;

/// Seconds to the next UTC midnight, when a daily limit resets.
fn to_midnight() -> String {
    (86_400 - conduct_indexer::clock::service_now() % 86_400).to_string()
}

/// How the owner-signed kind of `record` refuses (`handlers::owner`).
fn refuse(record: OwnerRecord) -> &'static dyn Refuse {
    match record {
        OwnerRecord::Munus => &munus::Board,
        OwnerRecord::NostrBind => &nostr::WORDS,
        OwnerRecord::Witness => &witness::WORDS,
        OwnerRecord::Familiar => &familiar::WORDS,
    }
}

impl From<Refusal> for Problem {
    /// The one conversion of a refused append into a request's answer: each refusal its
    /// problem type, status, title, detail and the field it names (library/ERRORS.md).
    fn from(r: Refusal) -> Self {
        match r {
            Refusal::UnknownVow { .. } => Problem::new(
                StatusCode::NOT_FOUND,
                "unknown-vow",
                "No such vow",
                r.detail(),
            ),
            Refusal::VowTaken { .. }
            | Refusal::VowIdCollision
            | Refusal::ReportReplayed { .. }
            | Refusal::MunusLapsePending
            | Refusal::MunusLapseNotDue
            | Refusal::MunusPaymentRecorded => Problem::new(
                StatusCode::CONFLICT,
                "already-recorded",
                "Already recorded",
                r.detail(),
            ),
            Refusal::SandboxVow { record, vow_id } => refuse(record).sandbox(&vow_id),
            Refusal::WrongWallet { record } => refuse(record).wrong_wallet(),
            Refusal::MunusReplayedSignature => Problem::new(
                StatusCode::CONFLICT,
                "munus-replayed-signature",
                "This signature was used already",
                "a claim or delivery signature is accepted once; sign the text of GET /play/message again",
            ),
            Refusal::MunusClaim(c) => munus::claim_problem(c),
            // A delivery to a quest that is gone or done is answered as a claim would be.
            Refusal::MunusSubmit(SubmitRefusal::UnknownQuest) => {
                munus::claim_problem(ClaimRefusal::UnknownQuest)
            }
            Refusal::MunusSubmit(SubmitRefusal::Done) => {
                munus::claim_problem(ClaimRefusal::Done)
            }
            Refusal::MunusSubmit(s) => munus::submit_problem(s),
            Refusal::MunusDeliveryDailyLimit => Problem::new(
                StatusCode::TOO_MANY_REQUESTS,
                "munus-delivery-daily-limit",
                "Too many deliveries today",
                format!(
                    "a claim takes at most {MAX_DELIVERIES_PER_DAY} deliveries per UTC day (each \
                     is a permanent record); send the final link tomorrow"
                ),
            ),
            Refusal::NostrBindReplayed => Problem::new(
                StatusCode::CONFLICT,
                "nostr-bind-replayed",
                "This binding's signature was used already",
                "each wallet and nostr signature binds once; to bind again, fetch GET \
                 /nostr/bind/message and sign it anew (the text names the UTC date)",
            ),
            Refusal::NostrBindDailyLimit => Problem::new(
                StatusCode::TOO_MANY_REQUESTS,
                "nostr-bind-daily-limit",
                "This vow bound its daily share of npubs",
                format!(
                    "a vow binds at most {MAX_BINDINGS_PER_DAY} npubs per UTC day; try again after \
                     midnight UTC"
                ),
            )
            .with_header(header::RETRY_AFTER, to_midnight()),
            Refusal::WitnessPledgeReplayed => Problem::new(
                StatusCode::CONFLICT,
                "witness-pledge-replayed",
                "This pledge's signature was used already",
                "a signature pledges once; to pledge again, fetch GET /witness/pledge/message and \
                 sign it anew (the text names the UTC date)",
            ),
            Refusal::WitnessPledgeDailyLimit => Problem::new(
                StatusCode::TOO_MANY_REQUESTS,
                "witness-pledge-daily-limit",
                "This vow pledged its daily share",
                format!(
                    "a vow pledges at most {MAX_PLEDGES_PER_DAY} times per UTC day; try again after \
                     midnight UTC"
                ),
            )
            .with_header(header::RETRY_AFTER, to_midnight()),
            Refusal::FamiliarReplayed => familiar::replayed(),
            Refusal::Invalid(_) | Refusal::Store(_) => {
                crate::error::unavailable("appending to the log", r)
            }
        }
    }
}
