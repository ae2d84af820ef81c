//! The running service: request dispatch over the route table, and the dynamic handlers
//! (profile, demo profile, health). The shared state is [`crate::state`]; what handlers share
//! with the dispatcher is in [`crate::request`] and [`crate::sources`] (re-exported here).
//! Static reads go to [`crate::static_site`].

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Instant;

use bytes::{Buf, Bytes, BytesMut};
use conduct_core::scope::scope_value;
use futures_util::{Stream, StreamExt};
use serde_json::json;
use warp::http::{header, HeaderMap, Method, StatusCode};
use warp::reply::Response as WarpResponse;

use crate::config::MAX_BODY;
use crate::profile;
use crate::ratelimit::{DailyCap, Take, Ticket};
use crate::reply::{finish, json_response, preflight, Problem};
use crate::routes::{self, Dynamic};
use crate::static_site::{self, Found, Variant};

pub use crate::request::{query_param, Request};
pub use crate::sources::{service_now, FAMILIARS, MUNUS, REGISTRY, REPUTATION, VOWS};
pub use crate::state::{App, Parts};

/// An oversized body is read and discarded up to this many bytes before the 413 is sent.
const DRAIN_LIMIT: usize = 4 * MAX_BODY;

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
    let ip = client_ip(app, headers, remote);
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
    let ip = client_ip(app, headers, remote);
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
                crate::erc8004::paid(app, body, &req.headers, &req.path).await
            }
            Dynamic::PledgeMessage => crate::witness::message(app, &req.query).await,
            Dynamic::Pledge => {
                let ticket = owner_cap(app, &req.headers, req.remote, "POST /witness/pledge")?;
                let body = read_body(&req.headers, req.body).await?;
                counted(ticket, crate::witness::pledge(app, body).await)
            }
            Dynamic::WitnessReading => {
                let body = read_body(&req.headers, req.body).await?;
                crate::witness::reading(app, body, &req.headers, &req.path).await
            }
            Dynamic::FamiliarMessage => crate::familiar::message(app, &req.query).await,
            Dynamic::FamiliarSummon => {
                let body = read_body(&req.headers, req.body).await?;
                crate::familiar::summon(app, body, &req.headers, &req.path).await
            }
            Dynamic::DemoProfile => {
                let ip = client_ip(app, &req.headers, req.remote);
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
            Dynamic::VowMessage => crate::vows::message(app, &req.query),
            Dynamic::ReportMessage => crate::vows::report_message(app, &req.query).await,
            Dynamic::TakeVow => {
                let ip = client_ip(app, &req.headers, req.remote);
                let ticket = take_cap(&app.caps.vow, app.cfg.vow_daily_cap, ip, "POST /vow", "")?;
                let body = read_body(&req.headers, req.body).await?;
                counted(ticket, crate::vows::take(app, body).await)
            }
            Dynamic::ReportDemo => {
                let ip = client_ip(app, &req.headers, req.remote);
                let ticket = take_cap(
                    &app.caps.report_demo,
                    app.cfg.report_demo_daily_cap,
                    ip,
                    "/vow/report/demo",
                    ", or pay for POST /vow/report",
                )?;
                let body = read_body(&req.headers, req.body).await?;
                counted(ticket, crate::vows::report_demo(app, body).await)
            }
            Dynamic::Report => {
                let body = read_body(&req.headers, req.body).await?;
                crate::vows::report_paid(app, body, &req.headers, &req.path).await
            }
            Dynamic::VerifyText => crate::vows::verify_text(app, &req.path, &req.query).await,
            Dynamic::Health => Ok(health(app).await),
            Dynamic::LogProof => log_proof(app, &req.path).await,
            Dynamic::Card => {
                let accept = req
                    .headers
                    .get(warp::http::header::ACCEPT)
                    .and_then(|v| v.to_str().ok());
                crate::card::card(app, &req.query, accept).await
            }
            Dynamic::CardPath => {
                let accept = req
                    .headers
                    .get(warp::http::header::ACCEPT)
                    .and_then(|v| v.to_str().ok());
                crate::card::card_at(app, &req.path, &req.query, accept).await
            }
            Dynamic::OracleAsk => {
                let ip = client_ip(app, &req.headers, req.remote);
                let cap = &app.caps.oracle;
                let ticket = take_cap(cap, app.cfg.oracle_daily_cap, ip, "/oracle/ask", "")?;
                let body = read_body(&req.headers, req.body).await?;
                counted(ticket, crate::oracle::ask(app, body).await)
            }
            Dynamic::Mcp => {
                let body = read_body(&req.headers, req.body).await?;
                crate::mcp::serve(
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
                crate::reputation::holders(app, &req.query, accept).await
            }
            Dynamic::ReputationScore => {
                let ticket = lookup_cap(app, &req.headers, req.remote, "/reputation/{address}")?;
                counted(ticket, crate::reputation::score(app, &req.path).await)
            }
            Dynamic::PrepareIndex => crate::prepare::index(app),
            Dynamic::Prepare => {
                let ticket = lookup_cap(app, &req.headers, req.remote, "/prepare/{action}")?;
                let body = if req.method == Method::POST {
                    Some(read_body(&req.headers, req.body).await?)
                } else {
                    None
                };
                counted(
                    ticket,
                    crate::prepare::action(app, &req.path, &req.query, body).await,
                )
            }
            Dynamic::TicketPrepare => {
                let ticket = lookup_cap(app, &req.headers, req.remote, "/ticket/{game}/prepare")?;
                counted(
                    ticket,
                    crate::ticket::prepare(app, &req.path, &req.query).await,
                )
            }
            Dynamic::TicketMessage => crate::ticket::message(app, &req.path, &req.query).await,
            Dynamic::TicketEntitle => {
                let ticket = lookup_cap(app, &req.headers, req.remote, "/ticket/{game}/entitle")?;
                let body = read_body(&req.headers, req.body).await?;
                counted(ticket, crate::ticket::entitle(app, &req.path, body).await)
            }
            Dynamic::PrepareSign => crate::sign_index::serve(app),
            Dynamic::PlayMessage => crate::munus::message(app, &req.query).await,
            Dynamic::BindMessage => crate::nostr::message(app, &req.query).await,
            Dynamic::Bind => {
                let ticket = owner_cap(app, &req.headers, req.remote, "POST /nostr/bind")?;
                let body = read_body(&req.headers, req.body).await?;
                counted(ticket, crate::nostr::bind(app, body).await)
            }
            Dynamic::Claim => {
                let ticket = owner_cap(app, &req.headers, req.remote, "POST /munus/{id}/claim")?;
                let body = read_body(&req.headers, req.body).await?;
                counted(ticket, crate::munus::claim(app, &req.path, body).await)
            }
            Dynamic::Submit => {
                let ticket = owner_cap(app, &req.headers, req.remote, "POST /munus/{id}/submit")?;
                let body = read_body(&req.headers, req.body).await?;
                counted(ticket, crate::munus::submit(app, &req.path, body).await)
            }
            Dynamic::Who => {
                let accept = req
                    .headers
                    .get(warp::http::header::ACCEPT)
                    .and_then(|v| v.to_str().ok());
                crate::who::who(app, &req.query, accept).await
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
        if let Err(p) = crate::vows::find_vow(app, id).await {
            if p.kind == "unknown-vow" {
                return p;
            }
        }
    }
    not_found(path)
}

/// What the MCP tools dispatch their requests through: [`dispatch`] over this service.
fn tool_dispatch(app: &Arc<App>) -> crate::mcp::Dispatch {
    let app = app.clone();
    Arc::new(move |req: Request<crate::mcp::ToolBody>| Box::pin(dispatch(app.clone(), req)))
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

/// The client address a free cap counts: the TCP peer, or behind `trusted_proxies` proxies
/// of our own (`trust_forwarded_for`), the `X-Forwarded-For` entry that many places from the
/// right (each proxy appends the address it saw; entries further left are the client's own
/// claims and cannot be trusted).
fn client_ip(app: &App, headers: &HeaderMap, remote: Option<SocketAddr>) -> IpAddr {
    let peer = remote
        .map(|r| r.ip())
        .unwrap_or(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED));
    if !app.cfg.trust_forwarded_for {
        return peer;
    }
    forwarded_client(headers, app.cfg.trusted_proxies).unwrap_or(peer)
}

/// The `X-Forwarded-For` entry `hops` places from the right (the leftmost when there are
/// fewer), over every such header in order; `None` when absent or not an address.
fn forwarded_client(headers: &HeaderMap, hops: u32) -> Option<IpAddr> {
    let entries: Vec<&str> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    let hops = usize::try_from(hops.max(1)).unwrap_or(1);
    let at = entries.len().saturating_sub(hops);
    entries.get(at)?.parse().ok()
}

fn too_large() -> Problem {
    Problem::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "too-large",
        "Body too large",
        format!("request bodies are limited to {MAX_BODY} bytes (4 MiB)"),
    )
}

/// Read and drop up to [`DRAIN_LIMIT`] bytes of a refused body, for at most five seconds.
async fn linger<S, B>(body: S)
where
    S: Stream<Item = Result<B, warp::Error>> + Send + 'static,
    B: Buf + Send + 'static,
{
    let drain = async move {
        let mut body = std::pin::pin!(body);
        let mut seen = 0usize;
        while let Some(Ok(chunk)) = body.next().await {
            seen += chunk.remaining();
            if seen > DRAIN_LIMIT {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), drain).await;
}

/// Collect a request body, refusing more than [`MAX_BODY`] bytes and multipart bodies.
async fn read_body<S, B>(headers: &HeaderMap, body: S) -> Result<Bytes, Problem>
where
    S: Stream<Item = Result<B, warp::Error>> + Send + 'static,
    B: Buf + Send + 'static,
{
    if let Some(ct) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    {
        let media = ct
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        // Only JSON is read: a form (urlencoded, multipart) or text/plain body is what a
        // cross-site page can post without a preflight, so it is refused.
        let json = media == "application/json"
            || (media.starts_with("application/") && media.ends_with("+json"));
        if !json {
            // Refused unread: like a 413, the connection closes after the answer (the client
            // must not reuse it with the body unread), once what it sends is read and dropped.
            tokio::spawn(linger(body));
            return Err(Problem::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported-media-type",
                "Send JSON",
                format!(
                    "Content-Type {media:?} is not JSON; send the body as application/json \
                     (curl: -H 'content-type: application/json')"
                ),
            )
            .with_header(
                header::HeaderName::from_static("accept-post"),
                "application/json",
            )
            .with_header(header::CONNECTION, "close"));
        }
    }
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > MAX_BODY as u64) {
        // Refused at once. The connection closes after the answer, but only once what the
        // client is still sending has been read and dropped (bounded in bytes and time, like
        // nginx's lingering close): closing with its bytes unread would reset the connection
        // before the client could read the 413.
        tokio::spawn(linger(body));
        return Err(too_large().with_header(header::CONNECTION, "close"));
    }
    // Only a body without Content-Length (chunked) can turn out too large while it is read.
    let mut over = false;
    let mut seen = 0usize;
    let mut buf = BytesMut::new();
    let mut body = std::pin::pin!(body);
    while let Some(chunk) = body.next().await {
        let mut chunk = chunk.map_err(|e| {
            // The accept loop puts a deadline on every body (`body_timeout_seconds`).
            let timeout =
                std::iter::successors(Some(&e as &(dyn std::error::Error + 'static)), |e| {
                    e.source()
                })
                .find_map(|e| e.downcast_ref::<crate::serve::conn::BodyTimeout>());
            match timeout {
                Some(t) => Problem::new(
                    StatusCode::REQUEST_TIMEOUT,
                    "body-timeout",
                    "Body too slow",
                    format!(
                        "the request body must arrive within {} s of the headers \
                         (body_timeout_seconds)",
                        t.limit.as_secs()
                    ),
                )
                .with_header(header::CONNECTION, "close"),
                None => Problem::new(
                    StatusCode::BAD_REQUEST,
                    "unreadable-body",
                    "Body could not be read",
                    e.to_string(),
                ),
            }
        })?;
        seen += chunk.remaining();
        if seen > MAX_BODY {
            over = true;
        }
        if over {
            // Drain (bounded) so the client is still reading when the 413 arrives.
            if seen > DRAIN_LIMIT {
                break;
            }
            chunk.advance(chunk.remaining());
            continue;
        }
        while chunk.has_remaining() {
            let piece = chunk.chunk();
            let n = piece.len();
            buf.extend_from_slice(piece);
            chunk.advance(n);
        }
    }
    if over {
        return Err(too_large());
    }
    Ok(buf.freeze())
}

/// `GET /log/proof/{index}`: the C2SP tlog-proof of one entry.
async fn log_proof(app: &Arc<App>, path: &str) -> Result<WarpResponse, Problem> {
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
    let log = app.log.clone();
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
            let mut resp = crate::reply::bytes_response(
                StatusCode::OK,
                "text/plain; charset=utf-8",
                p.encode().into_bytes(),
            );
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

async fn health(app: &App) -> WarpResponse {
    let mut rails = Vec::with_capacity(app.rails.rails.len());
    for r in &app.rails.rails {
        let up = r.settler.up(&r.network).await;
        rails.push(json!({
            "rail": r.name,
            "network": r.network,
            "settled_by": r.settler.describe(),
            "up": up,
            "accepts": r.requirements,
        }));
    }
    // The writers' true state: a ledger that cannot commit (or whose files lag), or a site
    // that is behind the ledger, is not "ok", and the status code says so too.
    let head = app.seq.head();
    let ledger = match &head.failing {
        None => json!({"state": "ok", "size": head.size}),
        Some(f) => json!({
            "state": if f.stopped { "stopped" } else { "failing" },
            "files_behind": f.files_behind,
            "size": head.size,
            "error": f.error,
            "since": conduct_core::time::rfc3339(f.since),
            "recovery": "retried every second: the ledger re-opens, verifies and resumes by itself once writes can commit",
        }),
    };
    let catching_up = app.site.catching_up();
    let behind = app.site.behind();
    let healthy = head.failing.is_none() && behind.is_none();
    let site = match behind {
        None if catching_up > 0 => json!({
            "state": "catching-up",
            "keys_left": catching_up,
            "note": "restarted: the tree on disk is served while every vow's files are brought up to date",
        }),
        None => json!({"state": "ok"}),
        Some(b) => json!({
            "state": "behind",
            "error": b.error,
            "waiting": b.waiting,
            "since": conduct_core::time::rfc3339(b.since),
            "recovery": "every committed entry is acknowledged; its pages are re-rendered with backoff until they are written",
        }),
    };
    // The chain is someone else's: a chain that does not answer is reported, never "degraded".
    let chain = app.cfg.chain.as_ref().map(|c| {
        let s = conduct_core::sync::lock(&app.chain).clone();
        json!({
            "name": c.name,
            "chain_id": c.chain_id,
            "reachable": s.reachable,
            "head": s.head,
            "indexed_to": s.indexed_to,
            "caught_up": s.caught_up,
            "synced_at": s.synced_at.map(conduct_core::time::rfc3339),
            "error": s.error,
        })
    });
    let body = json!({
        "type": "conduct.health/v1",
        "status": if healthy { "ok" } else { "degraded" },
        "ledger": ledger,
        "site": site,
        "chain": chain,
        "version": env!("CARGO_PKG_VERSION"),
        "uptime_seconds": app.started.elapsed().as_secs(),
        "key_id": app.key.key_id_hex(),
        "rails": rails,
        "rails_note": if app.rails.rails.is_empty() {
            "no payment rail is configured on this instance: paid calls answer 402 with an empty accepts"
        } else {
            "a facilitator rail is up when its facilitator answers /supported listing exact on its network; a permit2 rail when its RPC answers with its chain id"
        },
        "scope": scope_value(),
    });
    let mut body = body;
    let offset = conduct_indexer::clock::offset();
    if offset != 0 {
        // A shifted clock (tests, `conduct dev`) is never hidden.
        body["clock_offset_seconds"] = json!(offset);
    }
    let mut resp = json_response(serde_json::to_vec(&body).unwrap_or_default());
    if !healthy {
        *resp.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    }
    resp.headers_mut().insert(
        header::CACHE_CONTROL,
        warp::http::HeaderValue::from_static("no-store"),
    );
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    fn xff(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append("x-forwarded-for", v.parse().unwrap());
        }
        h
    }

    #[test]
    fn forwarded_client_is_taken_from_the_right_by_trusted_hops() {
        let h = xff(&["6.6.6.6, 1.2.3.4"]);
        assert_eq!(forwarded_client(&h, 1), Some("1.2.3.4".parse().unwrap()));
        let h = xff(&["6.6.6.6", "1.2.3.4, 10.0.0.1"]);
        assert_eq!(forwarded_client(&h, 2), Some("1.2.3.4".parse().unwrap()));
        assert_eq!(forwarded_client(&h, 9), Some("6.6.6.6".parse().unwrap()));
        assert_eq!(forwarded_client(&xff(&["junk"]), 1), None);
        assert_eq!(forwarded_client(&HeaderMap::new(), 1), None);
    }
}
