//! The running service: request dispatch over the route table, and the dynamic handlers
//! (profile, demo profile, health). The shared state is [`crate::state`]; what handlers share
//! with the dispatcher is in [`crate::http::request`] and [`crate::sources`] (re-exported here).
//! Static reads go to [`crate::http::static_site`].

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Instant;

use bytes::Buf;
use futures_util::Stream;
use warp::http::{header, HeaderMap, Method, StatusCode};
use warp::reply::Response as WarpResponse;

use crate::handlers::profile;
use crate::http::body::read_body;
use crate::http::caps::{client_ip, DailyCap, Take, Ticket};
use crate::http::reply::{finish, preflight, Problem};
use crate::http::request::{query_param, Request};
use crate::http::static_site::{self, Found, Variant};
use crate::routes::{self, Dynamic};
use crate::sources::service_now;
use crate::state::App;

/// Reserve one call from a free daily cap, or refuse with 429 and `Retry-After`. The call
/// counts only if the ticket is kept (the request was served).
fn take_cap<'c>(
    cap: &'c DailyCap,
    limit: Option<u32>,
    ip: IpAddr,
    what: &str,
    instead: &str,
) -> Result<Ticket<'c>, Problem> {
    match cap.take(ip, service_now()) {
        Take::Allowed(_, ticket) => Ok(ticket),
        Take::Refused(retry) => Err(Problem::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate-limited",
            "Free daily cap reached",
            format!(
                "the free {what} cap of {} calls per IP per UTC day is used up; it resets at \
                 UTC midnight{instead}",
                limit.unwrap_or(0)
            ),
        )
        .with_header(header::RETRY_AFTER, retry.to_string())),
    }
}

/// Reserve one owner-signed write (claims, deliveries, bindings, pledges) of the caller's IP.
fn owner_cap<'a>(
    app: &'a App,
    headers: &HeaderMap,
    remote: Option<SocketAddr>,
    what: &str,
) -> Result<Ticket<'a>, Problem> {
    let ip = client_ip(&app.cfg, headers, remote);
    take_cap(&app.caps.owner, app.cfg.owner_daily_cap, ip, what, "")
}

/// Reserve one live chain read (prepared calldata, tickets, reputation lookups) of the
/// caller's IP.
fn lookup_cap<'a>(
    app: &'a App,
    headers: &HeaderMap,
    remote: Option<SocketAddr>,
    what: &str,
) -> Result<Ticket<'a>, Problem> {
    let ip = client_ip(&app.cfg, headers, remote);
    take_cap(&app.caps.lookup, app.cfg.lookup_daily_cap, ip, what, "")
}

/// Count a capped call only when it was served.
fn counted(ticket: Ticket<'_>, r: Result<WarpResponse, Problem>) -> Result<WarpResponse, Problem> {
    if r.as_ref().is_ok_and(|resp| resp.status().is_success()) {
        ticket.keep();
    }
    r
}

/// Answer one request. Never panics on input; every refusal is problem+json.
pub async fn dispatch<S, B>(app: Arc<App>, req: Request<S>) -> WarpResponse
where
    S: Stream<Item = Result<B, warp::Error>> + Send + 'static,
    B: Buf + Send + 'static,
{
    let path = req.path.clone();
    let method = req.method.clone();
    let started = Instant::now();
    let resp = match route(&app, req).await {
        Ok(r) => r,
        Err(p) => p.into_response(&path),
    };
    // One line per request at debug level: method, path (never the query, a body or a
    // payment header), status and time.
    tracing::debug!(
        method = %method,
        path = %path,
        status = resp.status().as_u16(),
        ms = started.elapsed().as_secs_f64() * 1e3,
        "request"
    );
    finish(resp)
}

async fn route<S, B>(app: &Arc<App>, req: Request<S>) -> Result<WarpResponse, Problem>
where
    S: Stream<Item = Result<B, warp::Error>> + Send + 'static,
    B: Buf + Send + 'static,
{
    let method = req.method.as_str();
    if req.method == Method::OPTIONS {
        return Ok(preflight());
    }
    if let Some(handler) = routes::find(method, &req.path) {
        return match handler {
            Dynamic::Profile => {
                let body = read_body(&req.headers, req.body).await?;
                profile::paid(app, body, &req.headers, &req.path).await
            }
            Dynamic::Erc8004Validation => {
                let body = read_body(&req.headers, req.body).await?;
                crate::handlers::erc8004::paid(app, body, &req.headers, &req.path).await
            }
            Dynamic::PledgeMessage => crate::handlers::witness::message(app, &req.query).await,
            Dynamic::Pledge => {
                let ticket = owner_cap(app, &req.headers, req.remote, "POST /witness/pledge")?;
                let body = read_body(&req.headers, req.body).await?;
                counted(ticket, crate::handlers::witness::pledge(app, body).await)
            }
            Dynamic::WitnessReading => {
                let body = read_body(&req.headers, req.body).await?;
                crate::handlers::witness::reading(app, body, &req.headers, &req.path).await
            }
            Dynamic::FamiliarMessage => crate::handlers::familiar::message(app, &req.query).await,
            Dynamic::FamiliarSummon => {
                let body = read_body(&req.headers, req.body).await?;
                crate::handlers::familiar::summon(app, body, &req.headers, &req.path).await
            }
            Dynamic::DemoProfile => {
                let ip = client_ip(&app.cfg, &req.headers, req.remote);
                let ticket = take_cap(
                    &app.caps.demo,
                    app.cfg.demo_daily_cap,
                    ip,
                    "/demo/profile",
                    ", or pay for POST /profile",
                )?;
                let body = read_body(&req.headers, req.body).await?;
                counted(ticket, profile::demo(body, &req.headers).await)
            }
            Dynamic::VowMessage => crate::handlers::vows::message(app, &req.query),
            Dynamic::ReportMessage => crate::handlers::vows::report_message(app, &req.query).await,
            Dynamic::TakeVow => {
                let ip = client_ip(&app.cfg, &req.headers, req.remote);
                let ticket = take_cap(&app.caps.vow, app.cfg.vow_daily_cap, ip, "POST /vow", "")?;
                let body = read_body(&req.headers, req.body).await?;
                counted(ticket, crate::handlers::vows::take(app, body).await)
            }
            Dynamic::ReportDemo => {
                let ip = client_ip(&app.cfg, &req.headers, req.remote);
                let ticket = take_cap(
                    &app.caps.report_demo,
                    app.cfg.report_demo_daily_cap,
                    ip,
                    "/vow/report/demo",
                    ", or pay for POST /vow/report",
                )?;
                let body = read_body(&req.headers, req.body).await?;
                counted(ticket, crate::handlers::vows::report_demo(app, body).await)
            }
            Dynamic::Report => {
                let body = read_body(&req.headers, req.body).await?;
                crate::handlers::vows::report_paid(app, body, &req.headers, &req.path).await
            }
            Dynamic::VerifyText => {
                crate::handlers::vows::verify_text(app, &req.path, &req.query).await
            }
            Dynamic::Health => Ok(crate::handlers::health::health(app).await),
            Dynamic::LogProof => crate::handlers::log_proof::log_proof(app, &req.path).await,
            Dynamic::Card => {
                let accept = req
                    .headers
                    .get(warp::http::header::ACCEPT)
                    .and_then(|v| v.to_str().ok());
                crate::handlers::card::card(app, &req.query, accept).await
            }
            Dynamic::CardPath => {
                let accept = req
                    .headers
                    .get(warp::http::header::ACCEPT)
                    .and_then(|v| v.to_str().ok());
                crate::handlers::card::card_at(app, &req.path, &req.query, accept).await
            }
            Dynamic::OracleAsk => {
                let ip = client_ip(&app.cfg, &req.headers, req.remote);
                let cap = &app.caps.oracle;
                let ticket = take_cap(cap, app.cfg.oracle_daily_cap, ip, "/oracle/ask", "")?;
                let body = read_body(&req.headers, req.body).await?;
                counted(ticket, crate::handlers::oracle::ask(app, body).await)
            }
            Dynamic::Mcp => {
                let body = read_body(&req.headers, req.body).await?;
                crate::handlers::mcp::serve(
                    &app.mcp,
                    tool_dispatch(app),
                    &req.path,
                    req.headers,
                    req.remote,
                    body,
                )
                .await
            }
            Dynamic::ReputationHolders => {
                let accept = req
                    .headers
                    .get(header::ACCEPT)
                    .and_then(|v| v.to_str().ok());
                crate::handlers::reputation::holders(app, &req.query, accept).await
            }
            Dynamic::ReputationScore => {
                let ticket = lookup_cap(app, &req.headers, req.remote, "/reputation/{address}")?;
                counted(
                    ticket,
                    crate::handlers::reputation::score(app, &req.path).await,
                )
            }
            Dynamic::PrepareIndex => crate::handlers::prepare::index(app),
            Dynamic::Prepare => {
                let ticket = lookup_cap(app, &req.headers, req.remote, "/prepare/{action}")?;
                let body = if req.method == Method::POST {
                    Some(read_body(&req.headers, req.body).await?)
                } else {
                    None
                };
                counted(
                    ticket,
                    crate::handlers::prepare::action(app, &req.path, &req.query, body).await,
                )
            }
            Dynamic::TicketPrepare => {
                let ticket = lookup_cap(app, &req.headers, req.remote, "/ticket/{game}/prepare")?;
                counted(
                    ticket,
                    crate::handlers::ticket::prepare(app, &req.path, &req.query).await,
                )
            }
            Dynamic::TicketMessage => {
                crate::handlers::ticket::message(app, &req.path, &req.query).await
            }
            Dynamic::TicketEntitle => {
                let ticket = lookup_cap(app, &req.headers, req.remote, "/ticket/{game}/entitle")?;
                let body = read_body(&req.headers, req.body).await?;
                counted(
                    ticket,
                    crate::handlers::ticket::entitle(app, &req.path, body).await,
                )
            }
            Dynamic::PrepareSign => crate::handlers::sign_index::serve(app),
            Dynamic::PlayMessage => crate::handlers::munus::message(app, &req.query).await,
            Dynamic::BindMessage => crate::handlers::nostr::message(app, &req.query).await,
            Dynamic::Bind => {
                let ticket = owner_cap(app, &req.headers, req.remote, "POST /nostr/bind")?;
                let body = read_body(&req.headers, req.body).await?;
                counted(ticket, crate::handlers::nostr::bind(app, body).await)
            }
            Dynamic::Claim => {
                let ticket = owner_cap(app, &req.headers, req.remote, "POST /munus/{id}/claim")?;
                let body = read_body(&req.headers, req.body).await?;
                counted(
                    ticket,
                    crate::handlers::munus::claim(app, &req.path, body).await,
                )
            }
            Dynamic::Submit => {
                let ticket = owner_cap(app, &req.headers, req.remote, "POST /munus/{id}/submit")?;
                let body = read_body(&req.headers, req.body).await?;
                counted(
                    ticket,
                    crate::handlers::munus::submit(app, &req.path, body).await,
                )
            }
            Dynamic::Who => {
                let accept = req
                    .headers
                    .get(warp::http::header::ACCEPT)
                    .and_then(|v| v.to_str().ok());
                crate::handlers::who::who(app, &req.query, accept).await
            }
        };
    }
    let is_get = req.method == Method::GET || req.method == Method::HEAD;
    let format = query_param(&req.query, "format");
    let format = match format.as_deref() {
        None => None,
        Some(f) => Some(Variant::from_format(f).ok_or_else(|| {
            Problem::new(
                StatusCode::BAD_REQUEST,
                "bad-format",
                "Unknown format",
                format!("format={f:?} is not one of json, html, txt"),
            )
        })?),
    };
    let accept = req
        .headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok());
    let found = static_site::lookup(&app.cfg.site, &req.path, accept, format).await;
    let dynamic = routes::dynamic_methods(&req.path);
    match (found, is_get) {
        (Found::File(p, negotiated), true) => {
            static_site::file_response(&p, negotiated, req.method == Method::HEAD)
                .await
                .ok_or_else(|| not_found(&req.path))
        }
        (Found::NotAcceptable, true) => Err(Problem::new(
            StatusCode::NOT_ACCEPTABLE,
            "not-acceptable",
            "No acceptable representation",
            "this path is served as application/json, text/html or text/plain; use ?format= or Accept",
        )),
        (Found::File(..) | Found::NotAcceptable, false) => Err(method_not_allowed(&["GET", "HEAD"])),
        (Found::Missing, _) if !dynamic.is_empty() => Err(method_not_allowed(&dynamic)),
        (Found::Missing, _) => Err(missing(app, &req.path).await),
    }
}

/// The problem for a path the tree does not hold: `unknown-vow` under `/vow/<id>` when the
/// store has no such vow (as the write routes and MCP tools say it; library/MCP.md), else
/// the generic `not-found`.
async fn missing(app: &Arc<App>, path: &str) -> Problem {
    let rest = path.strip_prefix("/vow/").unwrap_or("");
    let id = rest.get(..conduct_core::vow::VOW_ID_LEN).unwrap_or("");
    let tail = rest.get(conduct_core::vow::VOW_ID_LEN..).unwrap_or("");
    let vow_path = tail.is_empty() || tail.starts_with('/') || tail.starts_with('.');
    if vow_path && conduct_core::vow::is_vow_id(id) {
        if let Err(p) = crate::handlers::vows::find_vow(app, id).await {
            if p.kind == "unknown-vow" {
                return p;
            }
        }
    }
    not_found(path)
}

/// What the MCP tools dispatch their requests through: [`dispatch`] over this service.
fn tool_dispatch(app: &Arc<App>) -> crate::handlers::mcp::Dispatch {
    let app = app.clone();
    Arc::new(move |req: Request<crate::handlers::mcp::ToolBody>| {
        Box::pin(dispatch(app.clone(), req))
    })
}

fn not_found(path: &str) -> Problem {
    Problem::new(
        StatusCode::NOT_FOUND,
        "not-found",
        "Not found",
        format!("nothing is served at {path}; see /catalog for every endpoint"),
    )
}

fn method_not_allowed(allowed: &[&str]) -> Problem {
    let mut allow: Vec<&str> = allowed.to_vec();
    allow.push("OPTIONS");
    Problem::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method-not-allowed",
        "Method not allowed",
        format!("this path answers {}", allow.join(", ")),
    )
    .with_header(header::ALLOW, allow.join(", "))
}
