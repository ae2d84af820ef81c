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

use crate::http::reply::Problem;

/// Seconds to the next UTC midnight, when a daily limit resets.
fn to_midnight() -> String {
    (86_400 - conduct_indexer::clock::service_now() % 86_400).to_string()
}

impl From<Refusal> for Problem {
    /// The one conversion of a refused append into a request's answer: each refusal its
    /// problem type, status, title, detail and the field it names (library/ERRORS.md).
    fn from(r: Refusal) -> Self {
        let signer = || "the vow's wallet is not the one that signed; sign with the vow's wallet";
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
            Refusal::SandboxVow { record, vow_id } => match record {
                OwnerRecord::Munus => crate::handlers::munus::sandbox_vow(),
                OwnerRecord::NostrBind => crate::handlers::nostr::sandbox_vow(&vow_id),
                OwnerRecord::Witness => crate::handlers::witness::sandbox_vow(&vow_id),
                OwnerRecord::Familiar => crate::handlers::familiar::sandbox_vow(&vow_id),
            },
            Refusal::WrongWallet { record } => match record {
                OwnerRecord::Munus => Problem::new(
                    StatusCode::FORBIDDEN,
                    "munus-wrong-wallet",
                    "Not the vow's wallet",
                    "the claim must be signed by the wallet the vow was signed with",
                ),
                OwnerRecord::NostrBind => crate::handlers::nostr::wallet_signature(signer().into()),
                OwnerRecord::Witness => crate::handlers::witness::pledge_signature(signer().into()),
                OwnerRecord::Familiar => crate::handlers::familiar::owner_signature(signer().into()),
            },
            Refusal::MunusReplayedSignature => Problem::new(
                StatusCode::CONFLICT,
                "munus-replayed-signature",
                "This signature was used already",
                "a claim or delivery signature is accepted once; sign the text of GET /play/message again",
            ),
            Refusal::MunusClaim(c) => crate::handlers::munus::claim_problem(c),
            // A delivery to a quest that is gone or done is answered as a claim would be.
            Refusal::MunusSubmit(SubmitRefusal::UnknownQuest) => {
                crate::handlers::munus::claim_problem(ClaimRefusal::UnknownQuest)
            }
            Refusal::MunusSubmit(SubmitRefusal::Done) => {
                crate::handlers::munus::claim_problem(ClaimRefusal::Done)
            }
            Refusal::MunusSubmit(s) => crate::handlers::munus::submit_problem(s),
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
            Refusal::FamiliarReplayed => crate::handlers::familiar::replayed(),
            Refusal::Invalid(_) | Refusal::Store(_) => {
                crate::error::unavailable("appending to the log", r)
            }
        }
    }
}
