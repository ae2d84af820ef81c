//! The connection layer of `conduct serve`: our own accept loop over hyper 1 (HTTP/1.1), in
//! place of warp's, so that no client can hold the service's connections or file descriptors.
//!
//! - A global cap and a per-IP cap (IPv6 per /64) on open connections. A connection over a cap
//!   is answered at once with one `503` (global) or `429` (per IP) problem+json, with
//!   `Connection: close` and `Retry-After`, and closed; it never reaches the route table.
//! - Per connection, a watchdog closes it when the request line and headers take longer than
//!   the header timeout (counted from the connection's first byte, or from the first byte of a
//!   later request), when a keep-alive connection stays idle past the idle timeout, or when a
//!   response write makes no progress for the idle timeout. hyper's own header timer is set to
//!   their sum, as a backstop.
//! - Each request body carries a deadline (the body timeout, from the end of the headers); a
//!   read past it fails with [`BodyTimeout`], which `read_body` answers with `408`.
//! - hyper's parse limits are generous (a 64 KiB head, 256 headers) so that the smaller limits
//!   here (an 8 KiB request target, 16 KiB and 100 headers) are answered by [`check_head`] with
//!   the request in hand.
//! - A head hyper cannot read at all (a byte outside the HTTP grammar, a bad `Content-Length`,
//!   a head over hyper's limits) never reaches a service: hyper answers it itself, with an empty
//!   `400`, `414` or `431`, and closes. The connection's I/O ([`WatchedIo`]) writes the same
//!   status as a problem+json in its place (ERRORS.md: `bad-request`, `uri-too-long`,
//!   `headers-too-large`), then shuts the connection like a refusal over a cap.
//!
//! The TCP peer address is given to each request as a [`Peer`] extension.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use conduct_core::sync::lock;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::time::Instant;
use warp::http::{header, Request, Response, StatusCode};
use warp::reply::Response as WarpResponse;

use crate::config::Config;
use crate::http::reply::{finish, Problem};

/// Longest request target (path and query) answered; longer gets `414`.
pub const MAX_URI: usize = 8 * 1024;
/// Most header bytes (names, values and their separators) answered; more gets `431`.
pub const MAX_HEADER_BYTES: usize = 16 * 1024;
/// Most header fields answered; more gets `431`.
pub const MAX_HEADERS: usize = 100;
/// hyper's read buffer, which bounds the request head it parses (beyond it hyper refuses the
/// head itself: `431`, or `414` for a request target over 64 KiB).
const HYPER_MAX_BUF: usize = 64 * 1024;
/// hyper's own header-count limit (beyond it hyper refuses the head itself with `431`).
const HYPER_MAX_HEADERS: usize = 256;
/// Refusals being written at once; beyond this an over-cap connection is closed unanswered.
const MAX_REFUSING: usize = 64;
/// Time a refusal may take to write, and then to see the client close.
const REFUSAL_GRACE: Duration = Duration::from_secs(1);
/// Bytes read and discarded from a refused connection (over a cap, or answered in place of
/// hyper), so the close does not reset the answer.
const REFUSAL_DRAIN: usize = 64 * 1024;
/// `Retry-After` of a connection refused for a cap, seconds.
const REFUSAL_RETRY_AFTER: &str = "5";

/// The TCP peer of a request, inserted as a request extension by the accept loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peer(pub SocketAddr);

/// The error a request body yields once its deadline has passed.
#[derive(Debug, Clone, Copy)]
pub struct BodyTimeout {
    /// The configured body timeout.
    pub limit: Duration,
}

impl std::fmt::Display for BodyTimeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the request body did not arrive within {} s",
            self.limit.as_secs()
        )
    }
}

impl std::error::Error for BodyTimeout {}

/// The connection limits of a running service, taken from its [`Config`].
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Time to send a request line and headers.
    pub header_timeout: Duration,
    /// Time to send a whole request body.
    pub body_timeout: Duration,
    /// Lifetime of an idle keep-alive connection or a stalled response write.
    pub idle_timeout: Duration,
    /// Open connections at once.
    pub max_connections: usize,
    /// Open connections at once per IP (IPv6: per /64).
    pub max_connections_per_ip: Option<usize>,
}

impl Limits {
    /// The limits configured in `cfg`.
    pub fn from_config(cfg: &Config) -> Self {
        Limits {
            header_timeout: cfg.header_timeout,
            body_timeout: cfg.body_timeout,
            idle_timeout: cfg.idle_timeout,
            max_connections: cfg.max_connections,
            max_connections_per_ip: cfg.max_connections_per_ip,
        }
    }
}

/// The body type of the route table's responses.
type WarpBody = <WarpResponse as HasBody>::Body;

/// Names the body type of a response.
trait HasBody {
    type Body;
}

impl<B> HasBody for Response<B> {
    type Body = B;
}

// ===== connection caps =====

/// Open connections, in all and per IP bucket.
struct Caps {
    total: usize,
    per_ip: Option<usize>,
    open: Mutex<(usize, HashMap<IpAddr, usize>)>,
}

/// Which cap refused a connection.
#[derive(Debug, Clone, Copy)]
enum Over {
    Global,
    PerIp,
}

/// One admitted connection; dropping it frees its place.
struct Slot {
    caps: Arc<Caps>,
    bucket: IpAddr,
}

impl Caps {
    fn admit(self: &Arc<Self>, ip: IpAddr) -> Result<Slot, Over> {
        let bucket = crate::http::caps::bucket(ip);
        let mut open = lock(&self.open);
        if open.0 >= self.total {
            return Err(Over::Global);
        }
        let mine = open.1.get(&bucket).copied().unwrap_or(0);
        if self.per_ip.is_some_and(|cap| mine >= cap) {
            return Err(Over::PerIp);
        }
        open.0 += 1;
        open.1.insert(bucket, mine + 1);
        Ok(Slot {
            caps: self.clone(),
            bucket,
        })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = lock(&self.caps.open);
        open.0 = open.0.saturating_sub(1);
        if let Some(n) = open.1.get_mut(&self.bucket) {
            *n -= 1;
            if *n == 0 {
                open.1.remove(&self.bucket);
            }
        }
    }
}

/// The bytes of a refusal: a whole HTTP/1.1 response carrying a problem+json body, with
/// `Connection: close`.
async fn refusal_bytes(problem: Problem) -> Bytes {
    let resp = finish(
        problem
            .with_header(header::CONNECTION, "close")
            .into_response(""),
    );
    let (parts, body) = resp.into_parts();
    let body = body
        .collect()
        .await
        .map(|c| c.to_bytes())
        .unwrap_or_default();
    let mut out = format!(
        "HTTP/1.1 {} {}\r\n",
        parts.status.as_u16(),
        parts.status.canonical_reason().unwrap_or("")
    )
    .into_bytes();
    for (name, value) in &parts.headers {
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(format!("content-length: {}\r\n\r\n", body.len()).as_bytes());
    out.extend_from_slice(&body);
    Bytes::from(out)
}

/// The prepared refusals: of a connection over a cap, and in place of hyper's own answers to
/// heads it cannot read.
struct Refusals {
    global: Bytes,
    per_ip: Bytes,
    /// Over-cap refusals being written.
    writing: AtomicUsize,
    /// For hyper's `400`: a head outside the HTTP grammar.
    unreadable: Bytes,
    /// For hyper's `414`: a request target over 64 KiB.
    target_too_long: Bytes,
    /// For hyper's `431`: a head over 64 KiB or 256 fields.
    head_too_large: Bytes,
}

impl Refusals {
    async fn new(limits: &Limits) -> Self {
        let global = refusal_bytes(
            Problem::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "too-many-connections",
                "Too many open connections",
                format!(
                    "the service holds at most {} connections at once and all are in use; \
                     retry shortly",
                    limits.max_connections
                ),
            )
            .with_header(header::RETRY_AFTER, REFUSAL_RETRY_AFTER),
        )
        .await;
        let per_ip = refusal_bytes(
            Problem::new(
                StatusCode::TOO_MANY_REQUESTS,
                "connections-per-ip",
                "Too many open connections from this address",
                format!(
                    "at most {} connections at once are held per client IP (per /64 for \
                     IPv6); close one or reuse it with keep-alive",
                    limits.max_connections_per_ip.unwrap_or(0)
                ),
            )
            .with_header(header::RETRY_AFTER, REFUSAL_RETRY_AFTER),
        )
        .await;
        let unreadable = refusal_bytes(Problem::new(
            StatusCode::BAD_REQUEST,
            "bad-request",
            "Bad request",
            "the request line or headers are not HTTP/1.1: a byte outside their grammar (such as \
             NUL, a control character or a byte over 0x7F in the method, the target or a header \
             name), a malformed header line, a Content-Length that is not one number, a \
             Transfer-Encoding other than chunked, or an HTTP version other than 1.0 or 1.1",
        ))
        .await;
        let target_too_long = refusal_bytes(Problem::new(
            StatusCode::URI_TOO_LONG,
            "uri-too-long",
            "Request target too long",
            format!(
                "the request target is over 64 KiB; at most {MAX_URI} bytes of path and query \
                 are answered"
            ),
        ))
        .await;
        let head_too_large = refusal_bytes(Problem::new(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            "headers-too-large",
            "Request headers too large",
            format!(
                "the request line and headers are over {} KiB or over {HYPER_MAX_HEADERS} \
                 fields; at most {MAX_URI} bytes of target and {MAX_HEADERS} header fields in \
                 {MAX_HEADER_BYTES} bytes are answered",
                HYPER_MAX_BUF / 1024
            ),
        ))
        .await;
        Refusals {
            global,
            per_ip,
            writing: AtomicUsize::new(0),
            unreadable,
            target_too_long,
            head_too_large,
        }
    }

    /// Our answer in place of hyper's own, given the first bytes hyper writes (its status
    /// line); `None` for a status hyper does not answer parse errors with.
    fn instead_of(&self, head: &[u8]) -> Option<Bytes> {
        if !head.starts_with(b"HTTP/1.") {
            return None;
        }
        match head.get(9..12)? {
            b"400" => Some(self.unreadable.clone()),
            b"414" => Some(self.target_too_long.clone()),
            b"431" => Some(self.head_too_large.clone()),
            _ => None,
        }
    }
}

/// Answer an over-cap connection with its refusal and close it. The request is not read first;
/// after the answer the write side is shut and whatever the client sent is read and discarded
/// (briefly, bounded), so closing does not reset the connection before the answer is read.
async fn refuse(refusals: Arc<Refusals>, mut stream: TcpStream, over: Over) {
    if refusals.writing.fetch_add(1, Ordering::AcqRel) >= MAX_REFUSING {
        refusals.writing.fetch_sub(1, Ordering::AcqRel);
        return;
    }
    let answer = match over {
        Over::Global => refusals.global.clone(),
        Over::PerIp => refusals.per_ip.clone(),
    };
    let _ = tokio::time::timeout(REFUSAL_GRACE, async {
        stream.write_all(&answer).await?;
        stream.shutdown().await
    })
    .await;
    let _ = tokio::time::timeout(REFUSAL_GRACE, async {
        let mut buf = [0u8; 4096];
        let mut seen = 0;
        while seen < REFUSAL_DRAIN {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => seen += n,
            }
        }
    })
    .await;
    refusals.writing.fetch_sub(1, Ordering::AcqRel);
}

// ===== per-connection watchdog =====

/// Where a connection is in its request cycle.
#[derive(Debug, Clone, Copy)]
enum Phase {
    /// Receiving a request line and headers since this instant.
    Head(Instant),
    /// A request is being answered (its body read, its handler run, its response sent).
    Busy,
    /// Idle since this instant, between keep-alive requests.
    Idle(Instant),
    /// Answered a head hyper could not read, since this instant; closing.
    Closing(Instant),
}

#[derive(Debug)]
struct WatchState {
    phase: Phase,
    /// Requests being answered (more than one only when pipelined).
    active: usize,
    /// Since when a response write has been blocked on the client.
    stalled: Option<Instant>,
    /// Every response begun has been written out (hyper's write buffer was empty since):
    /// with no request being answered, hyper's next write is its own answer to a bad head.
    settled: bool,
    /// When the watchdog wakes next (it is asleep until then, or looking): a change whose
    /// deadline falls before it wakes the watchdog at once, any other waits for it.
    armed: Instant,
}

impl WatchState {
    /// The instant past which the connection is to be closed, if any.
    fn deadline(&self, header_timeout: Duration, idle_timeout: Duration) -> Option<Instant> {
        let phase = match self.phase {
            Phase::Head(t) => Some(t + header_timeout),
            Phase::Idle(t) => Some(t + idle_timeout),
            Phase::Closing(t) => Some(t + REFUSAL_GRACE),
            Phase::Busy => None,
        };
        let stall = self.stalled.map(|t| t + idle_timeout);
        match (phase, stall) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// The state a connection's watchdog watches: kept by its I/O (reads, blocked writes) and its
/// service (requests begun and finished).
///
/// The watchdog is woken only when a change brings a deadline before its next wake-up, which
/// it sets no later than any deadline a later change could bring without waking it (see
/// [`watchdog`]): with the default timeouts a keep-alive request wakes it never.
struct Watch {
    header_timeout: Duration,
    idle_timeout: Duration,
    state: Mutex<WatchState>,
    changed: Notify,
}

impl Watch {
    fn new(limits: &Limits) -> Self {
        let now = Instant::now();
        Watch {
            header_timeout: limits.header_timeout,
            idle_timeout: limits.idle_timeout,
            state: Mutex::new(WatchState {
                phase: Phase::Head(now),
                active: 0,
                stalled: None,
                settled: true,
                armed: now,
            }),
            changed: Notify::new(),
        }
    }

    /// Wake the watchdog if the deadline of `s` falls before its next wake-up.
    fn changed(&self, s: std::sync::MutexGuard<'_, WatchState>) {
        let early = s
            .deadline(self.header_timeout, self.idle_timeout)
            .is_some_and(|d| d < s.armed);
        drop(s);
        if early {
            self.changed.notify_one();
        }
    }

    /// Bytes arrived: a new request has begun if the connection was idle.
    fn on_read(&self) {
        let mut s = lock(&self.state);
        if let Phase::Idle(_) = s.phase {
            s.phase = Phase::Head(Instant::now());
            self.changed(s);
        }
    }

    /// A write could not proceed.
    fn on_write_blocked(&self) {
        let mut s = lock(&self.state);
        if s.stalled.is_none() {
            s.stalled = Some(Instant::now());
            self.changed(s);
        }
    }

    /// A write proceeded.
    fn on_write_done(&self) {
        let mut s = lock(&self.state);
        s.stalled = None;
    }

    /// hyper flushed: its write buffer is empty, so with no request being answered (each
    /// [`RequestGuard`] drops once its response body is buffered) every response is written.
    fn on_flushed(&self) {
        let mut s = lock(&self.state);
        if s.active == 0 {
            s.settled = true;
        }
    }

    /// Whether a write now would begin a response no request asked for: hyper's own answer
    /// to a head it could not read.
    fn settled(&self) -> bool {
        let s = lock(&self.state);
        s.settled && s.active == 0
    }

    /// A write that is not hyper's own answer went out: not settled until the next flush.
    fn unsettle(&self) {
        lock(&self.state).settled = false;
    }

    /// An answer in place of hyper's is being written: close within [`REFUSAL_GRACE`].
    fn closing(&self) {
        let mut s = lock(&self.state);
        s.phase = Phase::Closing(Instant::now());
        self.changed(s);
    }

    /// A request's head has been read: it is being answered until the guard drops (no
    /// deadline meanwhile, so the watchdog need not know yet).
    fn begin(self: &Arc<Self>) -> RequestGuard {
        let mut s = lock(&self.state);
        s.active += 1;
        s.phase = Phase::Busy;
        s.settled = false;
        drop(s);
        RequestGuard {
            watch: self.clone(),
        }
    }

    /// At `now`: `Err(())` once the connection has overrun a deadline; otherwise when the
    /// watchdog is to look again, now recorded as its next wake-up. That is the deadline, and
    /// no later than the earliest deadline a change that does not wake it can bring: a head
    /// after an idle spell (`Idle(t)` to `Head(now)`, due at `now + header_timeout`, never
    /// before `t + header_timeout`); and while busy, a request ending (`Idle(now)`, due at
    /// `now + idle_timeout`), so a busy connection is looked at again within the shorter
    /// timeout.
    fn next_look(&self, now: Instant) -> Result<Instant, ()> {
        let (header, idle) = (self.header_timeout, self.idle_timeout);
        let mut s = lock(&self.state);
        let deadline = s.deadline(header, idle);
        if deadline.is_some_and(|d| d <= now) {
            return Err(());
        }
        let bound = match s.phase {
            Phase::Idle(t) => Some(t + header.min(idle)),
            Phase::Busy => Some(now + header.min(idle)),
            Phase::Head(_) | Phase::Closing(_) => None,
        };
        let at = match (deadline, bound) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b).unwrap_or(now + header.min(idle)),
        };
        s.armed = at;
        Ok(at)
    }
}

/// Resolves once the connection has overrun a deadline.
async fn watchdog(watch: Arc<Watch>) {
    let sleep = tokio::time::sleep_until(Instant::now());
    let mut sleep = std::pin::pin!(sleep);
    loop {
        let Ok(at) = watch.next_look(Instant::now()) else {
            return;
        };
        sleep.as_mut().reset(at);
        tokio::select! {
            _ = sleep.as_mut() => {}
            _ = watch.changed.notified() => {}
        }
    }
}

/// One request being answered; dropped when its response body is done (or abandoned).
struct RequestGuard {
    watch: Arc<Watch>,
}

impl Drop for RequestGuard {
    fn drop(&mut self) {
        let mut s = lock(&self.watch.state);
        s.active = s.active.saturating_sub(1);
        if s.active == 0 {
            s.phase = Phase::Idle(Instant::now());
            self.watch.changed(s);
        }
    }
}

/// What became of hyper's own answer to a head it could not read.
enum Replaced {
    /// Nothing replaced: hyper's writes go out.
    No,
    /// Ours in its place, the part still to write; hyper's writes are discarded.
    Writing(Bytes),
    /// Ours written. On shutdown the write side is shut (`shut`), then what the client still
    /// sends is read and discarded (`drained` bytes so far, at most [`REFUSAL_DRAIN`]), so
    /// that closing does not reset the connection before the client has read the answer.
    Written { shut: bool, drained: usize },
}

/// A TCP stream reporting its progress to the connection's [`Watch`], and writing our
/// problem+json in place of hyper's own answer to a head it could not read: a write that
/// begins while the connection is settled ([`Watch::settled`]) is that answer, since hyper
/// answers requests one at a time and only after its service has been called.
struct WatchedIo {
    io: TcpStream,
    watch: Arc<Watch>,
    refusals: Arc<Refusals>,
    replaced: Replaced,
}

impl WatchedIo {
    /// `stream`, watched under `limits`.
    fn new(stream: TcpStream, limits: &Limits, refusals: Arc<Refusals>) -> Self {
        WatchedIo {
            io: stream,
            watch: Arc::new(Watch::new(limits)),
            refusals,
            replaced: Replaced::No,
        }
    }

    fn wrote(&self, res: &Poll<io::Result<usize>>) {
        match res {
            Poll::Pending => self.watch.on_write_blocked(),
            Poll::Ready(Ok(n)) if *n > 0 => self.watch.on_write_done(),
            Poll::Ready(_) => {}
        }
    }

    /// `Some(len)` when hyper's `bufs` are its own answer to a head it could not read, or
    /// follow it: not written, ours is written instead (and they are reported as written).
    fn replace(&mut self, bufs: &[io::IoSlice<'_>]) -> Option<usize> {
        let len = bufs.iter().map(|b| b.len()).sum();
        if !matches!(self.replaced, Replaced::No) {
            return Some(len);
        }
        if len == 0 || !self.watch.settled() {
            return None;
        }
        let mut head = Vec::with_capacity(12);
        for b in bufs {
            let take = b.len().min(12 - head.len());
            head.extend_from_slice(&b[..take]);
        }
        match self.refusals.instead_of(&head) {
            Some(ours) => {
                self.watch.closing();
                self.replaced = Replaced::Writing(ours);
                Some(len)
            }
            None => {
                self.watch.unsettle();
                None
            }
        }
    }

    /// Write what is left of our answer, if any.
    fn poll_answer(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while let Replaced::Writing(rest) = &mut self.replaced {
            if rest.is_empty() {
                self.replaced = Replaced::Written {
                    shut: false,
                    drained: 0,
                };
                break;
            }
            let n = ready!(Pin::new(&mut self.io).poll_write(cx, rest))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            bytes::Buf::advance(rest, n);
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncRead for WatchedIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let res = Pin::new(&mut self.io).poll_read(cx, buf);
        if matches!(res, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.watch.on_read();
        }
        res
    }
}

impl AsyncWrite for WatchedIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if let Some(n) = self.replace(&[io::IoSlice::new(buf)]) {
            return Poll::Ready(Ok(n));
        }
        let res = Pin::new(&mut self.io).poll_write(cx, buf);
        self.wrote(&res);
        res
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if let Some(n) = self.replace(bufs) {
            return Poll::Ready(Ok(n));
        }
        let res = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.wrote(&res);
        res
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_answer(cx))?;
        let res = Pin::new(&mut self.io).poll_flush(cx);
        if matches!(res, Poll::Ready(Ok(()))) {
            self.watch.on_flushed();
        }
        res
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        ready!(this.poll_answer(cx))?;
        let Replaced::Written { shut, drained } = &mut this.replaced else {
            return Pin::new(&mut this.io).poll_shutdown(cx);
        };
        if !*shut {
            ready!(Pin::new(&mut this.io).poll_shutdown(cx))?;
            *shut = true;
        }
        // The watchdog ends this within REFUSAL_GRACE if the client neither closes nor stops.
        let mut buf = [0u8; 4096];
        while *drained < REFUSAL_DRAIN {
            let mut read = ReadBuf::new(&mut buf);
            match ready!(Pin::new(&mut this.io).poll_read(cx, &mut read)) {
                Ok(()) if read.filled().is_empty() => break,
                Ok(()) => *drained += read.filled().len(),
                Err(_) => break,
            }
        }
        Poll::Ready(Ok(()))
    }
}

// ===== bodies =====

/// A request body with a deadline: a read after it fails with [`BodyTimeout`].
pub struct TimedBody {
    inner: Incoming,
    limit: Duration,
    deadline: Instant,
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl TimedBody {
    fn new(inner: Incoming, limit: Duration) -> Self {
        TimedBody {
            inner,
            limit,
            deadline: Instant::now() + limit,
            sleep: None,
        }
    }

    fn timed_out(&self) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        Poll::Ready(Some(Err(Box::new(BodyTimeout { limit: self.limit }))))
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl Body for TimedBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if Instant::now() >= self.deadline {
            return self.timed_out();
        }
        match Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Ready(frame) => Poll::Ready(frame.map(|f| f.map_err(BoxError::from))),
            Poll::Pending => {
                let deadline = self.deadline;
                let sleep = self
                    .sleep
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
                match sleep.as_mut().poll(cx) {
                    Poll::Ready(()) => self.timed_out(),
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A response body that holds its request's [`RequestGuard`] until hyper is done with it.
struct TrackedBody {
    inner: WarpBody,
    _guard: RequestGuard,
}

impl Body for TrackedBody {
    type Data = Bytes;
    type Error = warp::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

// ===== the per-connection service =====

/// A request the route table would not see: its target or its headers are over our limits.
fn check_head<B>(req: &Request<B>) -> Option<WarpResponse> {
    let target = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str().len())
        .unwrap_or(0);
    if target > MAX_URI {
        return Some(
            Problem::new(
                StatusCode::URI_TOO_LONG,
                "uri-too-long",
                "Request target too long",
                format!(
                    "the path and query are {target} bytes; at most {MAX_URI} bytes are answered"
                ),
            )
            .into_response(""),
        );
    }
    let count = req.headers().len();
    let bytes: usize = req
        .headers()
        .iter()
        .map(|(k, v)| k.as_str().len() + v.len() + 4)
        .sum();
    if count > MAX_HEADERS || bytes > MAX_HEADER_BYTES {
        return Some(
            Problem::new(
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                "headers-too-large",
                "Request headers too large",
                format!(
                    "the request has {count} header fields in {bytes} bytes; at most \
                     {MAX_HEADERS} fields in {MAX_HEADER_BYTES} bytes are answered"
                ),
            )
            .into_response(req.uri().path()),
        );
    }
    None
}

/// Serves one connection's requests: checks each head, tags it with the peer, puts a deadline
/// on its body, and tracks it until its response is sent.
struct ConnService<S> {
    inner: S,
    peer: SocketAddr,
    watch: Arc<Watch>,
    body_timeout: Duration,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S> hyper::service::Service<Request<Incoming>> for ConnService<S>
where
    S: hyper::service::Service<Request<TimedBody>, Response = WarpResponse, Error = Infallible>,
    S::Future: Send + 'static,
{
    type Response = Response<TrackedBody>;
    type Error = Infallible;
    type Future = BoxFuture<Result<Response<TrackedBody>, Infallible>>;

    fn call(&self, mut req: Request<Incoming>) -> Self::Future {
        let guard = self.watch.begin();
        if let Some(refusal) = check_head(&req) {
            let resp = finish(refusal).map(|inner| TrackedBody {
                inner,
                _guard: guard,
            });
            return Box::pin(std::future::ready(Ok(resp)));
        }
        req.extensions_mut().insert(Peer(self.peer));
        let body_timeout = self.body_timeout;
        let fut = self
            .inner
            .call(req.map(|body| TimedBody::new(body, body_timeout)));
        Box::pin(async move {
            let resp = fut.await?;
            Ok(resp.map(|inner| TrackedBody {
                inner,
                _guard: guard,
            }))
        })
    }
}

// ===== the accept loop =====

/// Accept errors that concern one connection only.
fn is_connection_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}

/// Serve `listener` with `service` (the route table as a hyper service) under `limits` until
/// `shutdown` resolves; then stop accepting, let the open connections finish their requests,
/// and return.
pub async fn run<S>(
    listener: TcpListener,
    service: S,
    limits: Limits,
    shutdown: impl Future<Output = ()>,
) where
    S: hyper::service::Service<Request<TimedBody>, Response = WarpResponse, Error = Infallible>
        + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send + 'static,
{
    let caps = Arc::new(Caps {
        total: limits.max_connections,
        per_ip: limits.max_connections_per_ip,
        open: Mutex::new((0, HashMap::new())),
    });
    let refusals = Arc::new(Refusals::new(&limits).await);
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout + limits.idle_timeout)
        .keep_alive(true)
        .max_buf_size(HYPER_MAX_BUF)
        .max_headers(HYPER_MAX_HEADERS);
    let http = Arc::new(http);
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    let mut last_accept_error: Option<Instant> = None;
    loop {
        let accepted = tokio::select! {
            r = listener.accept() => r,
            _ = &mut shutdown => break,
        };
        let (stream, peer) = match accepted {
            Ok(pair) => pair,
            Err(e) if is_connection_error(&e) => continue,
            Err(e) => {
                // Out of descriptors or memory: say so (at most every 10 s) and back off.
                if last_accept_error.is_none_or(|t| t.elapsed() > Duration::from_secs(10)) {
                    tracing::warn!(error = %e, "accept failed");
                    last_accept_error = Some(Instant::now());
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let slot = match caps.admit(peer.ip()) {
            Ok(slot) => slot,
            Err(over) => {
                tokio::spawn(refuse(refusals.clone(), stream, over));
                continue;
            }
        };
        tokio::spawn(connection(
            WatchedIo::new(stream, &limits, refusals.clone()),
            peer,
            slot,
            graceful.watcher(),
            http.clone(),
            service.clone(),
            limits.body_timeout,
        ));
    }
    drop(listener);
    graceful.shutdown().await;
}

/// Serve one admitted connection until it closes, overruns a deadline, or is shut down.
async fn connection<S>(
    io: WatchedIo,
    peer: SocketAddr,
    _slot: Slot,
    watcher: Watcher,
    http: Arc<http1::Builder>,
    service: S,
    body_timeout: Duration,
) where
    S: hyper::service::Service<Request<TimedBody>, Response = WarpResponse, Error = Infallible>
        + Send
        + Sync
        + 'static,
    S::Future: Send + 'static,
{
    let watch = io.watch.clone();
    let service = ConnService {
        inner: service,
        peer,
        watch: watch.clone(),
        body_timeout,
    };
    let conn = watcher.watch(http.serve_connection(TokioIo::new(io), service));
    tokio::select! {
        // Errors here are the client's (a reset, a malformed head, hyper's header timer); a
        // malformed head has had our answer (WatchedIo).
        _ = conn => {}
        // Overran a deadline: dropping the connection closes it.
        _ = watchdog(watch) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_count_per_ip_and_per_64() {
        let caps = Arc::new(Caps {
            total: 3,
            per_ip: Some(2),
            open: Mutex::new((0, HashMap::new())),
        });
        let a: IpAddr = "2001:db8::1".parse().unwrap();
        let b: IpAddr = "2001:db8::2".parse().unwrap();
        let s1 = caps.admit(a).unwrap();
        let _s2 = caps.admit(b).unwrap();
        assert!(matches!(caps.admit(a), Err(Over::PerIp)));
        let _s3 = caps.admit("10.0.0.1".parse().unwrap()).unwrap();
        assert!(matches!(
            caps.admit("10.0.0.2".parse().unwrap()),
            Err(Over::Global)
        ));
        drop(s1);
        let _s4 = caps.admit(a).unwrap();
        assert_eq!(lock(&caps.open).0, 3);
        assert_eq!(
            lock(&caps.open).1.len(),
            2,
            "both IPv6 addresses share one /64 bucket"
        );
    }

    fn limits(header: u64, idle: u64) -> Limits {
        Limits {
            header_timeout: Duration::from_secs(header),
            body_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(idle),
            max_connections: 10,
            max_connections_per_ip: None,
        }
    }

    /// Whether the watchdog was woken since it last looked (the permit is taken).
    fn woken(w: &Watch) -> bool {
        use futures_util::FutureExt;
        w.changed.notified().now_or_never().is_some()
    }

    /// The watchdog's next look is never after the deadline in force.
    fn on_time(w: &Watch) -> bool {
        let s = lock(&w.state);
        s.deadline(w.header_timeout, w.idle_timeout)
            .is_none_or(|d| s.armed <= d)
    }

    #[tokio::test]
    async fn keep_alive_requests_wake_the_watchdog_at_most_once() {
        for (header, idle) in [(10, 30), (1, 1), (30, 10)] {
            let w = Arc::new(Watch::new(&limits(header, idle)));
            // What the watchdog does when woken; whether it was.
            let look = |w: &Arc<Watch>| {
                let woke = woken(w);
                if woke {
                    assert!(w.next_look(Instant::now()).is_ok());
                }
                assert!(on_time(w), "{header}/{idle}: {:?}", lock(&w.state));
                usize::from(woke)
            };
            assert!(w.next_look(Instant::now()).is_ok());
            let mut wakes = 0;
            for _ in 0..5 {
                let guard = w.begin();
                wakes += look(&w);
                drop(guard);
                wakes += look(&w);
                w.on_read();
                wakes += look(&w);
            }
            // Only when the idle timeout is shorter than the header timeout, once: the first
            // answer brings the idle deadline before the head's, where it then stays.
            assert_eq!(wakes, usize::from(idle < header), "{header}/{idle}");
            // A stalled write and a closing connection are on time as well.
            let _guard = w.begin();
            w.on_write_blocked();
            look(&w);
            w.closing();
            look(&w);
        }
    }

    #[tokio::test]
    async fn refusal_is_a_whole_problem_response() {
        let r = refusal_bytes(
            Problem::new(
                StatusCode::TOO_MANY_REQUESTS,
                "connections-per-ip",
                "t",
                "d",
            )
            .with_header(header::RETRY_AFTER, REFUSAL_RETRY_AFTER),
        )
        .await;
        let text = String::from_utf8(r.to_vec()).unwrap();
        assert!(
            text.starts_with("HTTP/1.1 429 Too Many Requests\r\n"),
            "{text}"
        );
        assert!(text.contains("connection: close\r\n"), "{text}");
        assert!(text.contains("retry-after: 5\r\n"), "{text}");
        assert!(text.contains("content-type: application/problem+json\r\n"));
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.contains(&format!("content-length: {}", body.len())));
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(v["status"], 429);
        assert!(v.get("scope").is_some());
    }
}
