//! What several handlers share, naming none of them: a blocking read off the runtime, a vow
//! looked up (404 `unknown-vow` naming `/vow_id`), and the answer to a committed write (201,
//! the signed record, its `Location`, whether its pages were rendered).

use std::sync::Arc;

use conduct_indexer::vows::{VowReader, VowRow};
use warp::http::{header, HeaderValue, StatusCode};
use warp::reply::Response as WarpResponse;

use crate::error::unavailable;
use crate::http::reply::{json_response, Problem};

/// Run `f` off the runtime; its failure (or the task's) is 503 `store-unavailable` naming
/// `what`.
pub(crate) async fn blocking<T: Send + 'static>(
    what: &'static str,
    f: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, Problem> {
    match tokio::task::spawn_blocking(f).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(unavailable(what, e)),
        Err(e) => Err(unavailable(what, e)),
    }
}

/// Look a vow up in `vows`, or 404 naming `/vow_id`.
pub(crate) async fn find_vow(vows: &Arc<VowReader>, id: &str) -> Result<VowRow, Problem> {
    let (reader, key) = (vows.clone(), id.to_owned());
    let row = blocking("reading the vow", move || {
        reader.vow(&key).map_err(|e| e.to_string())
    })
    .await?;
    row.ok_or_else(|| unknown_vow(id))
}

/// 404 `unknown-vow`: the store holds no vow `id` (naming `/vow_id`).
pub(crate) fn unknown_vow(id: &str) -> Problem {
    Problem::new(
        StatusCode::NOT_FOUND,
        "unknown-vow",
        "No such vow",
        format!("there is no vow {id:?}; see /vows"),
    )
    .at("/vow_id", format!("no vow {id:?}"))
}

/// 201 with the signed record `bytes` and its `Location`.
pub(crate) fn created(bytes: Vec<u8>, location: &str) -> WarpResponse {
    let mut resp = json_response(bytes);
    *resp.status_mut() = StatusCode::CREATED;
    if let Ok(v) = HeaderValue::from_str(location) {
        resp.headers_mut().insert(header::LOCATION, v);
    }
    resp
}

/// Mark a committed write's response with the state of its pages: `Conduct-Render: done`, or
/// `pending` (with the reason) when rendering failed and will be retried.
pub(crate) fn with_render_state(mut resp: WarpResponse, error: Option<String>) -> WarpResponse {
    let value = match error {
        None => "done".to_owned(),
        Some(e) => {
            tracing::warn!(error = %e, "a committed write's pages are pending; retried");
            format!("pending; reason=\"{}\"", e.replace(['"', '\\'], "'"))
        }
    };
    if let Ok(v) = HeaderValue::from_str(&value) {
        resp.headers_mut().insert("conduct-render", v);
    }
    resp
}
