//! The metrics listener: `GET /metrics` (library/METRICS.md) on an address of its own
//! (`metrics_listen`, loopback by default), never on the public port. It answers the
//! registry of [`conduct_indexer::metrics`] in the Prometheus text format and 404 to
//! anything else; a few connections at once, each with a deadline.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use crate::error::Error;

/// The exposition format's media type (version 0.0.4).
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";
/// Connections served at once (a scraper needs one).
const MAX_CONNECTIONS: usize = 8;
/// Time a connection has for its request head, and for its whole life.
const DEADLINE: Duration = Duration::from_secs(10);

/// Bind the metrics listener at `addr`; the bound address (port 0 picks one).
pub async fn bind(addr: SocketAddr) -> Result<(TcpListener, SocketAddr), Error> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| Error::Listen { addr, source })?;
    let local = listener
        .local_addr()
        .map_err(|source| Error::Listen { addr, source })?;
    Ok((listener, local))
}

/// Serve `GET /metrics` on `listener` until the task is dropped.
pub async fn serve(listener: TcpListener) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        // Over the cap, the connection is closed at once.
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            continue;
        };
        tokio::spawn(async move {
            let conn = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(DEADLINE)
                .keep_alive(false)
                .serve_connection(TokioIo::new(stream), hyper::service::service_fn(answer));
            let _ = tokio::time::timeout(DEADLINE, conn).await;
            drop(slot);
        });
    }
}

async fn answer<B>(req: Request<B>) -> Result<Response<Full<Bytes>>, Infallible> {
    let get = req.method() == Method::GET || req.method() == Method::HEAD;
    let (status, body) = if req.uri().path() == "/metrics" && get {
        let text = conduct_indexer::metrics::metrics().render();
        let body = if req.method() == Method::HEAD {
            Bytes::new()
        } else {
            Bytes::from(text)
        };
        (StatusCode::OK, body)
    } else {
        (
            StatusCode::NOT_FOUND,
            Bytes::from_static(b"only GET /metrics\n"),
        )
    };
    let mut resp = Response::new(Full::new(body));
    *resp.status_mut() = status;
    let ct = if status == StatusCode::OK {
        CONTENT_TYPE
    } else {
        "text/plain; charset=utf-8"
    };
    resp.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(ct),
    );
    Ok(resp)
}
