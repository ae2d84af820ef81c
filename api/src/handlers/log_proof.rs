//! `GET /log/proof/{index}`: the C2SP tlog-proof of one entry of the log (library/VOWS.md, "The log's formats").

use std::sync::Arc;

use conduct_indexer::ledger::LedgerReader;
use warp::http::{header, StatusCode};
use warp::reply::Response as WarpResponse;

use crate::http::reply::{text_response, Problem};

/// `GET /log/proof/{index}`: the C2SP tlog-proof of one entry, read from `log`.
pub async fn log_proof(log: &Arc<LedgerReader>, path: &str) -> Result<WarpResponse, Problem> {
    let raw = path.rsplit('/').next().unwrap_or("");
    let index: u64 = raw
        .parse()
        .ok()
        .filter(|_| !raw.starts_with('+') && (raw == "0" || !raw.starts_with('0')))
        .ok_or_else(|| {
            Problem::new(
                StatusCode::BAD_REQUEST,
                "bad-index",
                "Not a log index",
                format!("{raw:?} is not a decimal log index"),
            )
        })?;
    let log = log.clone();
    let proof = tokio::task::spawn_blocking(move || log.inclusion_proof(index))
        .await
        .map_err(|e| {
            Problem::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "busy",
                "Could not read the log now",
                e.to_string(),
            )
        })?;
    match proof {
        Ok(p) => {
            let mut resp = text_response(p.encode());
            resp.headers_mut().insert(
                header::CACHE_CONTROL,
                warp::http::HeaderValue::from_static("no-cache"),
            );
            Ok(resp)
        }
        Err(conduct_indexer::ledger::LedgerError::OutOfRange { index, size }) => Err(Problem::new(
            StatusCode::NOT_FOUND,
            "not-in-log",
            "No such log entry",
            format!("entry {index} is not in the log (size {size})"),
        )),
        Err(e) => Err(Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "log-unavailable",
            "The log could not be read",
            e.to_string(),
        )),
    }
}
