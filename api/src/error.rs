//! The api crate's one error for everything that is not the answer to a request: reading the
//! configuration, starting the service, building and using payment rails, the local
//! development chain, language-model calls. A request's answer is a
//! [`crate::http::reply::Problem`] (RFC 9457), the one conversion to problem+json; a refused or
//! failed append becomes one here too ([`ledger_problem`]; `From<Refusal> for Problem`, each
//! typed refusal of the indexer its own problem, no slug matched as a string, is in
//! `crate::handlers::refusal`).

use std::net::SocketAddr;

use conduct_core::tlog::MAX_ENTRY_LEN;
use conduct_core::trace::FieldError;
use conduct_indexer::ledger::LedgerError;
use warp::http::{header, StatusCode};

use crate::http::reply::Problem;

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

impl From<Error> for crate::http::reply::Problem {
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
        crate::http::reply::Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            kind,
            title,
            e.to_string(),
        )
        .with_header(header::RETRY_AFTER, "5")
    }
}

/// 503 `store-unavailable`: the ledger could not be written or read now (`what`: the step).
pub(crate) fn unavailable(what: &str, e: impl std::fmt::Display) -> Problem {
    Problem::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "store-unavailable",
        "The ledger could not be written or read now",
        format!("{what}: {e}"),
    )
    .with_header(header::RETRY_AFTER, "1")
}

/// 503 `integration-behind`: report-ins are acknowledged faster than their vows' pages are
/// written, and a change waits about `wait` for its page (more than the live site's bound in
/// force, `bound`); nothing was recorded (library/ERRORS.md).
pub(crate) fn integration_behind(wait: std::time::Duration, bound: std::time::Duration) -> Problem {
    let retry = wait.as_secs().clamp(1, 30);
    Problem::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "integration-behind",
        "The vows' pages are behind the log",
        format!(
            "report-ins are arriving faster than their vows' pages are written: a change \
             waits about {:.1} s for its page, above the bound of {:.1} s; nothing was \
             recorded, retry after {retry} s",
            wait.as_secs_f64(),
            bound.as_secs_f64()
        ),
    )
    .with_header(header::RETRY_AFTER, retry.to_string())
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
        other => unavailable("appending to the log", other),
    }
}
