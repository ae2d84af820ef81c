//! The api crate's one error for everything that is not the answer to a request: reading the
//! configuration, starting the service, building and using payment rails, the local
//! development chain, language-model calls. A request's answer is a
//! [`crate::reply::Problem`] (RFC 9457), the one conversion to problem+json; a refused or
//! failed append becomes one here too ([`ledger_problem`], `From<Refusal> for Problem`: each
//! typed refusal of the indexer its own problem, no slug matched as a string).

use std::net::SocketAddr;

use conduct_core::munus::state::{ClaimRefusal, SubmitRefusal};
use conduct_core::tlog::MAX_ENTRY_LEN;
use conduct_core::trace::FieldError;
use conduct_indexer::ledger::append::OwnerRecord;
use conduct_indexer::ledger::{LedgerError, Refusal};
use conduct_indexer::nostr::MAX_BINDINGS_PER_DAY;
use conduct_indexer::witness::MAX_PLEDGES_PER_DAY;
use warp::http::{header, StatusCode};

use crate::reply::Problem;

/// Why the api could not do what it was asked (outside a request's answer).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The configuration is unusable (the message names the key or file).
    #[error("{0}")]
    Config(String),
    /// The signing key could not be loaded or created.
    #[error("{0}")]
    Key(#[from] conduct_indexer::keystore::KeyError),
    /// The Nostr key could not be loaded or created, or the profile not signed.
    #[error("{0}")]
    NostrKey(#[from] conduct_indexer::nostr::NostrKeyError),
    /// The listener could not be bound or read.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// The address asked for.
        addr: SocketAddr,
        /// The cause.
        source: std::io::Error,
    },
    /// The store could not be opened or read.
    #[error("store: {0}")]
    Store(#[from] conduct_indexer::store::StoreError),
    /// The transparency log could not be opened.
    #[error("ledger: {0}")]
    Ledger(#[from] conduct_indexer::ledger::LedgerError),
    /// The site could not be rendered.
    #[error("render: {0}")]
    Render(#[from] conduct_renderer::RenderError),
    /// A payment rail could not be built, reached or used (the message names the rail field
    /// or the party that failed).
    #[error("{0}")]
    Rail(String),
    /// The local development chain (`conduct dev`).
    #[error("{0}")]
    Dev(String),
    /// A language-model provider.
    #[error("{0}")]
    Model(String),
    /// The chain follower or the manifest fetcher could not be set up.
    #[error("chain: {0}")]
    Chain(#[from] conduct_indexer::chain::ChainError),
}

/// Results of the api outside a request's answer.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<Error> for crate::reply::Problem {
    /// The one conversion of an api error into a request's answer: the service could not do
    /// its part right now (503), nothing was recorded.
    fn from(e: Error) -> Self {
        let (kind, title) = match &e {
            Error::Rail(_) => (
                "payment-rail-unavailable",
                "The payment rail could not be reached",
            ),
            Error::Store(_) | Error::Ledger(_) => (
                "store-unavailable",
                "The ledger could not be written or read now",
            ),
            _ => ("unavailable", "The service could not do this now"),
        };
        crate::reply::Problem::new(StatusCode::SERVICE_UNAVAILABLE, kind, title, e.to_string())
            .with_header(header::RETRY_AFTER, "5")
    }
}

/// A failed append as a request's answer: a job's refusal (its own problem, through
/// `From<Refusal>`), an entry too large for the log (422 naming `/turns`), or the log not
/// writable now (503 `store-unavailable`).
pub(crate) fn ledger_problem(e: LedgerError) -> Problem {
    match e {
        LedgerError::Refused(r) => r.into(),
        LedgerError::EntryTooLarge { len, .. } => {
            let mut p = Problem::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "entry-too-large",
                "The entry would not fit in the log",
                format!("the signed entry would be {len} bytes; a log entry holds at most {MAX_ENTRY_LEN}"),
            );
            p.errors.push(FieldError::at(
                "/turns",
                "the distinct declared purposes (Y) are too long to record",
            ));
            p
        }
        other => crate::vows::unavailable("appending to the log", other),
    }
}

/// Seconds to the next UTC midnight, when a daily limit resets.
fn to_midnight() -> String {
    (86_400 - crate::app::service_now() % 86_400).to_string()
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
                OwnerRecord::Munus => crate::munus::sandbox_vow(),
                OwnerRecord::NostrBind => crate::nostr::sandbox_vow(&vow_id),
                OwnerRecord::Witness => crate::witness::sandbox_vow(&vow_id),
                OwnerRecord::Familiar => crate::familiar::sandbox_vow(&vow_id),
            },
            Refusal::WrongWallet { record } => match record {
                OwnerRecord::Munus => Problem::new(
                    StatusCode::FORBIDDEN,
                    "munus-wrong-wallet",
                    "Not the vow's wallet",
                    "the claim must be signed by the wallet the vow was signed with",
                ),
                OwnerRecord::NostrBind => crate::nostr::wallet_signature(signer().into()),
                OwnerRecord::Witness => crate::witness::pledge_signature(signer().into()),
                OwnerRecord::Familiar => crate::familiar::owner_signature(signer().into()),
            },
            Refusal::MunusReplayedSignature => Problem::new(
                StatusCode::CONFLICT,
                "munus-replayed-signature",
                "This signature was used already",
                "a claim or delivery signature is accepted once; sign the text of GET /play/message again",
            ),
            Refusal::MunusClaim(c) => crate::munus::claim_problem(c),
            // A delivery to a quest that is gone or done is answered as a claim would be.
            Refusal::MunusSubmit(SubmitRefusal::UnknownQuest) => {
                crate::munus::claim_problem(ClaimRefusal::UnknownQuest)
            }
            Refusal::MunusSubmit(SubmitRefusal::Done) => {
                crate::munus::claim_problem(ClaimRefusal::Done)
            }
            Refusal::MunusSubmit(s) => crate::munus::submit_problem(s),
            Refusal::MunusDeliveryDailyLimit => Problem::new(
                StatusCode::TOO_MANY_REQUESTS,
                "munus-delivery-daily-limit",
                "Too many deliveries today",
                "a claim takes at most 10 deliveries per UTC day (each is a permanent record); send the final link tomorrow",
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
            Refusal::FamiliarReplayed => crate::familiar::replayed(),
            Refusal::Invalid(_) | Refusal::Store(_) => {
                crate::vows::unavailable("appending to the log", r)
            }
        }
    }
}
