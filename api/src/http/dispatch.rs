//! Dispatch: one request of the accept loop ([`crate::http::server`]) or of an MCP tool call
//! to its route, by its row of the route table ([`crate::routes`]): the row's free cap is
//! taken, its JSON body read when it says so, its handler called with the [`Call`], and the
//! call counted when it was served. A path no dynamic route answers is a file of the rendered
//! tree ([`crate::http::static_site`]), or a problem. The dispatcher names no handler.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use bytes::{Buf, Bytes};
use futures_util::future::BoxFuture;
use futures_util::Stream;
use warp::http::{header, Method, StatusCode};
use warp::reply::Response as WarpResponse;

use crate::http::body::{read_body, BoxError};
use crate::http::call::Call;
use crate::http::caps::{self, client_ip, counted};
use crate::http::reply::{finish, preflight, Problem};
use crate::http::request::{query_param, Request, ToolBody};
use crate::http::static_site::{self, Found, Variant};
use crate::routes::{self, Answer, Dynamic};
use crate::sources::service_now;
use crate::state::App;
use conduct_indexer::metrics::{metrics, Counter, Histogram};

/// Answer one request. Never panics on input; every refusal is problem+json.
pub async fn dispatch<S, B, E>(app: Arc<App>, req: Request<S>) -> WarpResponse
where
    S: Stream<Item = Result<B, E>> + Send + 'static,
    B: Buf + Send + 'static,
    E: Into<BoxError> + Send + 'static,
{
    let path = req.path.clone();
    let method = req.method.clone();
    let started = Instant::now();
    // The pattern of a dynamic route's row, found once for its free cap, its `Call` and here.
    let mut pattern = None;
    let resp = match route(&app, req, &mut pattern).await {
        Ok(r) => r,
        Err(p) => p.into_response(&path),
    };
    let pattern = pattern.unwrap_or_else(|| routes::pattern(method.as_str(), &path));
    record(pattern, &method, resp.status(), started);
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

/// Count the request and its time under its route's pattern (library/METRICS.md).
///
/// The series of a (pattern, method, status) are looked up in the registry (a read lock and
/// a hash of the label strings) once per worker thread, then kept: the same series, created
/// on first use as before.
fn record(pattern: &'static str, method: &Method, status: StatusCode, started: Instant) {
    let method = metric_method(method);
    let key = (
        pattern.as_ptr() as usize,
        pattern.len(),
        method,
        status.as_u16(),
    );
    SERIES.with(|cache| {
        let mut cache = cache.borrow_mut();
        let series = cache.entry(key).or_insert_with(|| {
            let (pattern, method) = (Cow::Borrowed(pattern), Cow::Borrowed(method));
            let m = metrics();
            Series {
                duration: m.http_duration.with([pattern.clone(), method.clone()]),
                requests: m.http_requests.with([
                    pattern,
                    method,
                    Cow::Owned(status.as_str().to_owned()),
                ]),
            }
        });
        series.duration.observe_duration(started.elapsed());
        series.requests.inc();
    });
}

/// The series one request is counted in.
struct Series {
    duration: Arc<Histogram>,
    requests: Arc<Counter>,
}

/// A (pattern as address and length, method, status) key.
type SeriesKey = (usize, usize, &'static str, u16);

thread_local! {
    /// This thread's series, by the label values of [`record`] (bounded: route patterns,
    /// methods and statuses).
    static SERIES: RefCell<HashMap<SeriesKey, Series>> = RefCell::new(HashMap::new());
}

/// A method as a metric's label: one of the methods the service answers, else `other`.
fn metric_method(m: &Method) -> &'static str {
    match *m {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

/// [`dispatch`] as a plain function, for the MCP tools' requests ([`Call::tools`]).
fn again(app: Arc<App>, req: Request<ToolBody>) -> BoxFuture<'static, WarpResponse> {
    Box::pin(dispatch(app, req))
}

async fn route<S, B, E>(
    app: &Arc<App>,
    req: Request<S>,
    pattern: &mut Option<&'static str>,
) -> Result<WarpResponse, Problem>
where
    S: Stream<Item = Result<B, E>> + Send + 'static,
    B: Buf + Send + 'static,
    E: Into<BoxError> + Send + 'static,
{
    if req.method == Method::OPTIONS {
        return Ok(preflight());
    }
    if let Some(row) = routes::find(req.method.as_str(), &req.path) {
        return answer(app, row, req, pattern).await;
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
    let found = crate::http::static_objects::lookup(&app.tree, &req.path, accept, format).await;
    let dynamic = routes::dynamic_methods(&req.path);
    match (found, is_get) {
        (Found::File(file), true) => Ok(static_site::file_response(
            file,
            req.method == Method::HEAD,
        )),
        (Found::NotAcceptable, true) => Err(Problem::new(
            StatusCode::NOT_ACCEPTABLE,
            "not-acceptable",
            "No acceptable representation",
            "this path is served as application/json, text/html or text/plain; use ?format= or Accept",
        )),
        (Found::File(..) | Found::NotAcceptable, false) => Err(method_not_allowed(&["GET", "HEAD"])),
        (Found::Unavailable, _) => Err(static_site::unavailable()),
        (Found::Missing, _) if !dynamic.is_empty() => Err(method_not_allowed(&dynamic)),
        (Found::Missing, _) => Err(routes::missing(app, &req.path)
            .await
            .unwrap_or_else(|| not_found(&req.path))),
    }
}

/// Answer a request of a dynamic route by its row: take the free cap, read the body when the
/// row says so, call the handler (with the row's terms when it is paid), count a served call.
async fn answer<S, B, E>(
    app: &Arc<App>,
    row: &'static Dynamic,
    req: Request<S>,
    seen: &mut Option<&'static str>,
) -> Result<WarpResponse, Problem>
where
    S: Stream<Item = Result<B, E>> + Send + 'static,
    B: Buf + Send + 'static,
    E: Into<BoxError> + Send + 'static,
{
    let Request {
        method,
        path,
        query,
        headers,
        remote,
        body,
    } = req;
    let pattern = routes::pattern(method.as_str(), &path);
    *seen = Some(pattern);
    let ticket = match &row.cap {
        Some(cap) => {
            let ip = client_ip(&app.cfg, &headers, remote);
            let taken = caps::take(&app.caps, cap, ip, service_now());
            if taken.is_err() {
                metrics().cap_refusals.with([Cow::Borrowed(pattern)]).inc();
            }
            Some(taken?)
        }
        None => None,
    };
    // A body the row does not read is kept, unread, until the route has answered.
    let (body, _unread) = if row.body {
        (read_body(&headers, body).await?, None)
    } else {
        (Bytes::new(), Some(body))
    };
    let call = Call {
        app: app.clone(),
        method,
        path,
        query,
        headers,
        remote,
        pattern,
        body,
        again,
    };
    let answered = match &row.answer {
        Answer::Free(handle) => handle(&call).await,
        Answer::Paid(pay, handle) => handle(&call, call.charge(pay, routes::bazaar(pattern))).await,
    };
    match ticket {
        Some(ticket) => counted(ticket, answered),
        None => answered,
    }
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
