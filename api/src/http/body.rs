//! Reading a request body: JSON only (a form or text body is what a cross-site page can post
//! without a preflight), at most [`MAX_BODY`] bytes, within the accept loop's body deadline;
//! a refused body is drained (bounded) so the client reads the refusal.

use bytes::{Buf, Bytes, BytesMut};
use futures_util::{Stream, StreamExt};
use warp::http::{header, HeaderMap, StatusCode};

use crate::config::MAX_BODY;
use crate::http::reply::Problem;

/// An oversized body is read and discarded up to this many bytes before the 413 is sent.
const DRAIN_LIMIT: usize = 4 * MAX_BODY;

fn too_large() -> Problem {
    Problem::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "too-large",
        "Body too large",
        format!("request bodies are limited to {MAX_BODY} bytes (4 MiB)"),
    )
}

/// Read and drop up to [`DRAIN_LIMIT`] bytes of a refused body, for at most five seconds.
async fn linger<S, B, E>(body: S)
where
    S: Stream<Item = Result<B, E>> + Send + 'static,
    B: Buf + Send + 'static,
    E: Into<BoxError> + Send + 'static,
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
/// What a body stream fails with: a [`BodyTimeout`](crate::http::conn::BodyTimeout) past
/// its deadline, or the connection's error.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Collect a request body, refusing more than [`MAX_BODY`] bytes and multipart bodies.
/// A body of one chunk is taken as it is, not copied.
pub async fn read_body<S, B, E>(headers: &HeaderMap, body: S) -> Result<Bytes, Problem>
where
    S: Stream<Item = Result<B, E>> + Send + 'static,
    B: Buf + Send + 'static,
    E: Into<BoxError> + Send + 'static,
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
    let mut first: Option<Bytes> = None;
    let mut buf = BytesMut::new();
    let mut body = std::pin::pin!(body);
    while let Some(chunk) = body.next().await {
        let mut chunk = chunk.map_err(|e| {
            let e: BoxError = e.into();
            // The accept loop puts a deadline on every body (`body_timeout_seconds`).
            let timeout =
                std::iter::successors(Some(&*e as &(dyn std::error::Error + 'static)), |e| {
                    e.source()
                })
                .find_map(|e| e.downcast_ref::<crate::http::conn::BodyTimeout>());
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
        if first.is_none() && buf.is_empty() {
            // Zero-copy for `Bytes` chunks (what the connection yields).
            first = Some(chunk.copy_to_bytes(chunk.remaining()));
            continue;
        }
        if let Some(f) = first.take() {
            buf.extend_from_slice(&f);
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
    match first {
        Some(f) => Ok(f),
        None => Ok(buf.freeze()),
    }
}
