//! `GET /card?key=`: look up the card of an agent name, npub, vow id or wallet. (Being built.)

use std::sync::Arc;

use warp::reply::Response as WarpResponse;

use crate::app::App;
use crate::reply::Problem;

/// Answer a card lookup.
pub async fn card(app: &Arc<App>, query: &str, accept: Option<&str>) -> Result<WarpResponse, Problem> {
    let _ = (app, query, accept);
    Err(Problem::new(warp::http::StatusCode::NOT_IMPLEMENTED, "not-implemented", "Not implemented", "card lookups are being built"))
}
