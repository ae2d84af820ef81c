//! Slow and greedy clients over real loopback sockets: the connection caps (global and per IP),
//! the header, body and idle timeouts, and the problem+json answers to an impossible
//! `Content-Length`, an over-long request target, over-large headers and heads the HTTP layer
//! cannot read (hyper's own refusals). The service runs with
//! one-second timeouts and a per-IP cap of 4; slow clients connect from 127.0.0.2 (Linux
//! loopback accepts all of 127/8), normal ones from 127.0.0.1.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use conduct_tests::Server;
use serde_json::Value;

const PER_IP_CAP: usize = 4;

/// A server with one-second timeouts and a per-IP cap of [`PER_IP_CAP`].
fn start() -> (Server, SocketAddr, tempfile::TempDir) {
    start_with("")
}

/// [`start`] with more `conduct.toml` lines.
fn start_with(extra: &str) -> (Server, SocketAddr, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("conduct.toml");
    std::fs::write(
        &cfg,
        format!(
            "header_timeout_seconds = 1\nbody_timeout_seconds = 1\nidle_timeout_seconds = 1\n\
             max_connections_per_ip = {PER_IP_CAP}\n{extra}"
        ),
    )
    .unwrap();
    let s = Server::start(&["--config", cfg.to_str().unwrap()]);
    let addr: SocketAddr = s.url.trim_start_matches("http://").parse().unwrap();
    (s, addr, dir)
}

/// A TCP connection to `to` from the loopback address `from`.
fn connect_from(from: &str, to: SocketAddr) -> TcpStream {
    let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    let local: SocketAddr = format!("{from}:0").parse().unwrap();
    sock.bind(&local.into()).unwrap();
    sock.connect_timeout(&to.into(), Duration::from_secs(5))
        .unwrap();
    let s: TcpStream = sock.into();
    s.set_nodelay(true).unwrap();
    s
}

/// One parsed response.
#[derive(Debug)]
struct Resp {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Resp {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as an RFC 9457 problem of `status`, checked for the members every problem
    /// of this service has.
    fn problem(&self, status: u16) -> Value {
        assert_eq!(self.status, status, "{self:?}");
        assert_eq!(
            self.header("content-type"),
            Some("application/problem+json"),
            "{self:?}"
        );
        let v: Value = serde_json::from_slice(&self.body).unwrap();
        for member in ["type", "title", "status", "detail", "scope"] {
            assert!(v.get(member).is_some(), "no {member} in {v}");
        }
        assert_eq!(v["status"], status, "{v}");
        v
    }
}

/// Read one response (with a Content-Length body) within `within`.
fn read_response(s: &mut TcpStream, within: Duration) -> Resp {
    read_next_response(s, &mut Vec::new(), within)
}

/// Read one response within `within`, starting with the bytes already read into `buf`; what
/// was read past it (a pipelined response) is left in `buf`.
fn read_next_response(s: &mut TcpStream, buf: &mut Vec<u8>, within: Duration) -> Resp {
    let deadline = Instant::now() + within;
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "no response head within {within:?}");
        s.set_read_timeout(Some(left)).unwrap();
        let n = s.read(&mut chunk).expect("read response head");
        assert!(
            n > 0,
            "closed before a response: {:?}",
            String::from_utf8_lossy(buf)
        );
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8(buf[..head_end].to_vec()).unwrap();
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .map(|l| {
            let (k, v) = l.split_once(':').unwrap();
            (k.trim().to_ascii_lowercase(), v.trim().to_owned())
        })
        .collect();
    let len: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .map(|(_, v)| v.parse().unwrap())
        .expect("content-length");
    let mut body = buf.split_off(head_end + 4);
    buf.clear();
    while body.len() < len {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "no response body within {within:?}");
        s.set_read_timeout(Some(left)).unwrap();
        let n = s.read(&mut chunk).expect("read response body");
        assert!(n > 0, "closed mid-body");
        body.extend_from_slice(&chunk[..n]);
    }
    *buf = body.split_off(len);
    Resp {
        status,
        headers,
        body,
    }
}

/// Whether the server has closed `s` (EOF or reset), without waiting.
fn closed_now(s: &mut TcpStream) -> bool {
    s.set_nonblocking(true).unwrap();
    let mut chunk = [0u8; 4096];
    let closed = loop {
        match s.read(&mut chunk) {
            Ok(0) => break true,
            Ok(_) => continue,
            Err(e) if e.kind() == ErrorKind::WouldBlock => break false,
            Err(_) => break true,
        }
    };
    s.set_nonblocking(false).unwrap();
    closed
}

/// Wait until the server closes `s`, within `within`; returns how long that took.
fn wait_closed(s: &mut TcpStream, within: Duration) -> Duration {
    let start = Instant::now();
    let deadline = start + within;
    let mut chunk = [0u8; 4096];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "still open after {within:?}");
        s.set_read_timeout(Some(left)).unwrap();
        match s.read(&mut chunk) {
            Ok(0) => return start.elapsed(),
            Ok(_) => continue,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => continue,
            Err(_) => return start.elapsed(),
        }
    }
}

fn get(path: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n")
}

#[test]
fn slowloris_is_capped_per_ip_and_cut_by_the_header_timeout() {
    let (_s, addr, _dir) = start();
    // Open more trickling connections from 127.0.0.2 than its cap allows; each sends the
    // start of a request line at once.
    let extra = 3;
    let mut conns = Vec::new();
    for _ in 0..PER_IP_CAP + extra {
        let mut c = connect_from("127.0.0.2", addr);
        c.write_all(b"GET /health HTTP/1.1\r\nX-Slow: ").unwrap();
        conns.push((c, Instant::now()));
    }
    // The connections over the cap (accepted in order, so the last ones) are answered 429
    // problem+json at once and closed; they never reach a handler.
    let mut refused = conns.split_off(PER_IP_CAP);
    for (c, _) in &mut refused {
        let r = read_response(c, Duration::from_secs(5));
        let p = r.problem(429);
        assert_eq!(p["type"], "/library/ERRORS.md#connections-per-ip", "{p}");
        assert_eq!(r.header("connection"), Some("close"));
        assert!(r.header("retry-after").is_some());
        wait_closed(c, Duration::from_secs(3));
    }
    // The ones within the cap are held, unanswered.
    for (c, _) in &mut conns {
        assert!(
            !closed_now(c),
            "a connection within the cap was closed early"
        );
    }
    // Meanwhile a normal client is served promptly.
    let t = Instant::now();
    let mut normal = connect_from("127.0.0.1", addr);
    normal.write_all(get("/health").as_bytes()).unwrap();
    let r = read_response(&mut normal, Duration::from_secs(5));
    let took = t.elapsed();
    assert_eq!(r.status, 200, "{r:?}");
    assert!(
        took < Duration::from_millis(500),
        "GET /health took {took:?}"
    );
    eprintln!(
        "held {} of {} slow connections; refused {extra}; GET /health from 127.0.0.1 took \
         {took:?}",
        conns.len(),
        PER_IP_CAP + extra
    );
    // Keep trickling header bytes: the header timeout (1 s, counted from the connection's
    // first byte) still closes every slow connection.
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut open: Vec<(TcpStream, Instant)> = conns;
    let mut lifetimes = Vec::new();
    while !open.is_empty() {
        assert!(
            Instant::now() < deadline,
            "{} slow connections still open",
            open.len()
        );
        std::thread::sleep(Duration::from_millis(50));
        let mut still = Vec::new();
        for (mut c, opened) in open {
            let _ = c.write_all(b"a");
            if closed_now(&mut c) {
                lifetimes.push(opened.elapsed());
            } else {
                still.push((c, opened));
            }
        }
        open = still;
    }
    eprintln!("slow connections closed after {lifetimes:?}");
    for life in &lifetimes {
        assert!(
            *life >= Duration::from_millis(900) && *life < Duration::from_secs(3),
            "closed after {life:?}"
        );
    }
    // Their places are free again: 127.0.0.2 is served once more.
    let mut again = connect_from("127.0.0.2", addr);
    again.write_all(get("/health").as_bytes()).unwrap();
    assert_eq!(
        read_response(&mut again, Duration::from_secs(5)).status,
        200
    );
}

#[test]
fn global_cap_answers_503() {
    let (_s, addr, _dir) = start_with("max_connections = 2\n");
    // Two connections from two addresses fill the service (each within its per-IP cap).
    let mut a = connect_from("127.0.0.1", addr);
    let mut b = connect_from("127.0.0.3", addr);
    a.write_all(get("/health").as_bytes()).unwrap();
    assert_eq!(read_response(&mut a, Duration::from_secs(5)).status, 200);
    b.write_all(get("/health").as_bytes()).unwrap();
    assert_eq!(read_response(&mut b, Duration::from_secs(5)).status, 200);
    // A third, from yet another address, is refused 503 problem+json and closed.
    let mut c = connect_from("127.0.0.4", addr);
    let r = read_response(&mut c, Duration::from_secs(5));
    let p = r.problem(503);
    assert_eq!(p["type"], "/library/ERRORS.md#too-many-connections", "{p}");
    assert_eq!(r.header("connection"), Some("close"));
    assert!(r.header("retry-after").is_some());
    wait_closed(&mut c, Duration::from_secs(3));
    // Once one closes, a new connection is served.
    drop(a);
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let mut d = connect_from("127.0.0.4", addr);
        d.write_all(get("/health").as_bytes()).unwrap();
        let r = read_response(&mut d, Duration::from_secs(5));
        if r.status == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "still refused: {r:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn keep_alive_serves_several_requests_then_idles_out() {
    let (_s, addr, _dir) = start();
    let mut c = connect_from("127.0.0.1", addr);
    // Five requests on one connection, 400 ms apart: longer in all than the idle timeout, so
    // the idle timer restarts with each request.
    for i in 0..5 {
        if i > 0 {
            std::thread::sleep(Duration::from_millis(400));
        }
        c.write_all(get("/health").as_bytes()).unwrap();
        let r = read_response(&mut c, Duration::from_secs(5));
        assert_eq!(r.status, 200, "request {i}: {r:?}");
        assert_ne!(r.header("connection"), Some("close"));
    }
    // Then idle: closed after the idle timeout (1 s).
    let idle = wait_closed(&mut c, Duration::from_secs(5));
    eprintln!("idle keep-alive connection closed after {idle:?}");
    assert!(
        idle >= Duration::from_millis(800) && idle < Duration::from_secs(3),
        "{idle:?}"
    );
}

#[test]
fn trickled_body_is_cut_with_408() {
    let (_s, addr, _dir) = start();
    let mut c = connect_from("127.0.0.1", addr);
    let t = Instant::now();
    c.write_all(
        b"POST /demo/profile HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
          Content-Length: 1000\r\n\r\n{",
    )
    .unwrap();
    // One byte every 100 ms: the 1000 bytes would take 100 s.
    let answered = loop {
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "no answer to a trickled body"
        );
        std::thread::sleep(Duration::from_millis(100));
        c.set_nonblocking(true).unwrap();
        let mut peek = [0u8; 1];
        let ready = match c.peek(&mut peek) {
            Ok(n) => n > 0,
            Err(e) if e.kind() == ErrorKind::WouldBlock => false,
            Err(e) => panic!("connection failed before an answer: {e}"),
        };
        c.set_nonblocking(false).unwrap();
        if ready {
            break t.elapsed();
        }
        c.write_all(b" ").unwrap();
    };
    let r = read_response(&mut c, Duration::from_secs(5));
    let p = r.problem(408);
    assert_eq!(p["type"], "/library/ERRORS.md#body-timeout", "{p}");
    assert_eq!(r.header("connection"), Some("close"));
    eprintln!("trickled body answered 408 after {answered:?}");
    assert!(
        answered >= Duration::from_millis(900) && answered < Duration::from_secs(3),
        "{answered:?}"
    );
    wait_closed(&mut c, Duration::from_secs(3));
}

#[test]
fn impossible_content_length_is_refused_at_once() {
    let (_s, addr, _dir) = start();
    let mut c = connect_from("127.0.0.1", addr);
    let t = Instant::now();
    c.write_all(
        b"POST /demo/profile HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
          Content-Length: 999999999\r\n\r\n",
    )
    .unwrap();
    let r = read_response(&mut c, Duration::from_secs(5));
    let took = t.elapsed();
    let p = r.problem(413);
    assert_eq!(p["type"], "/library/ERRORS.md#too-large", "{p}");
    assert_eq!(r.header("connection"), Some("close"));
    eprintln!("Content-Length: 999999999 answered 413 after {took:?}");
    assert!(took < Duration::from_millis(500), "413 took {took:?}");
    wait_closed(&mut c, Duration::from_secs(2));
}

#[test]
fn long_target_and_large_headers_get_problem_json() {
    let (_s, addr, _dir) = start();
    let mut c = connect_from("127.0.0.1", addr);
    // A 10 KiB request target: 414.
    let path = format!("/{}", "a".repeat(10 * 1024));
    c.write_all(get(&path).as_bytes()).unwrap();
    let r = read_response(&mut c, Duration::from_secs(5));
    let p = r.problem(414);
    assert_eq!(p["type"], "/library/ERRORS.md#uri-too-long", "{p}");
    // 20 KiB of headers: 431 (on the same connection, which stays usable).
    let mut req = String::from("GET /health HTTP/1.1\r\nHost: localhost\r\n");
    for i in 0..20 {
        req.push_str(&format!("X-Pad-{i}: {}\r\n", "b".repeat(1000)));
    }
    req.push_str("\r\n");
    c.write_all(req.as_bytes()).unwrap();
    let r = read_response(&mut c, Duration::from_secs(5));
    let p = r.problem(431);
    assert_eq!(p["type"], "/library/ERRORS.md#headers-too-large", "{p}");
    // More than 100 header fields, small as they are: 431.
    let mut req = String::from("GET /health HTTP/1.1\r\nHost: localhost\r\n");
    for i in 0..120 {
        req.push_str(&format!("X-F-{i}: 1\r\n"));
    }
    req.push_str("\r\n");
    c.write_all(req.as_bytes()).unwrap();
    let r = read_response(&mut c, Duration::from_secs(5));
    r.problem(431);
    // And an ordinary request still gets through.
    c.write_all(get("/health").as_bytes()).unwrap();
    assert_eq!(read_response(&mut c, Duration::from_secs(5)).status, 200);
}

#[test]
fn heads_the_http_layer_cannot_read_get_problem_json() {
    let (_s, addr, _dir) = start();
    // What hyper refuses before the route table sees a request: each answer is a problem with
    // `Connection: close`, and the connection is then closed.
    let many_fields: String = (0..300).map(|i| format!("X-F-{i}: 1\r\n")).collect();
    // Beyond what hyper's 64 KiB buffer can hold, however its reads fall.
    let wide_fields: String = (0..250)
        .map(|i| format!("X-Pad-{i}: {}\r\n", "b".repeat(1000)))
        .collect();
    let cases: Vec<(&str, Vec<u8>, u16, &str)> = vec![
        (
            "a NUL in the target",
            b"GET /a\x00b HTTP/1.1\r\nHost: localhost\r\n\r\n".to_vec(),
            400,
            "bad-request",
        ),
        (
            "a 0xFF byte in the target",
            b"GET /a\xffb HTTP/1.1\r\nHost: localhost\r\n\r\n".to_vec(),
            400,
            "bad-request",
        ),
        (
            "a control byte in a header value",
            b"GET /health HTTP/1.1\r\nHost: localhost\r\nX-A: a\x01b\r\n\r\n".to_vec(),
            400,
            "bad-request",
        ),
        (
            "a Content-Length that is not a number",
            b"POST /vow HTTP/1.1\r\nHost: localhost\r\nContent-Length: ten\r\n\r\n".to_vec(),
            400,
            "bad-request",
        ),
        (
            "an unknown HTTP version",
            b"GET /health HTTP/7.1\r\nHost: localhost\r\n\r\n".to_vec(),
            400,
            "bad-request",
        ),
        (
            "a target over 64 KiB",
            get(&format!("/{}", "a".repeat(65 * 1024))).into_bytes(),
            414,
            "uri-too-long",
        ),
        (
            "more than 256 header fields",
            format!("GET /health HTTP/1.1\r\nHost: localhost\r\n{many_fields}\r\n").into_bytes(),
            431,
            "headers-too-large",
        ),
        (
            "a head of 250 KB",
            format!("GET /health HTTP/1.1\r\nHost: localhost\r\n{wide_fields}\r\n").into_bytes(),
            431,
            "headers-too-large",
        ),
    ];
    for (what, req, status, kind) in cases {
        let mut c = connect_from("127.0.0.1", addr);
        c.write_all(&req).unwrap();
        let r = read_response(&mut c, Duration::from_secs(5));
        let p = r.problem(status);
        assert_eq!(
            p["type"],
            format!("/library/ERRORS.md#{kind}"),
            "{what}: {p}"
        );
        assert_eq!(r.header("connection"), Some("close"), "{what}: {r:?}");
        wait_closed(&mut c, Duration::from_secs(3));
    }
    // Pipelined behind a request that is answered: the answer, then the problem.
    let mut c = connect_from("127.0.0.1", addr);
    let mut req = get("/health").into_bytes();
    req.extend_from_slice(b"GET /\x00 HTTP/1.1\r\nHost: localhost\r\n\r\n");
    c.write_all(&req).unwrap();
    let mut buf = Vec::new();
    let r = read_next_response(&mut c, &mut buf, Duration::from_secs(5));
    assert_eq!(r.status, 200);
    let p = read_next_response(&mut c, &mut buf, Duration::from_secs(5)).problem(400);
    assert_eq!(p["type"], "/library/ERRORS.md#bad-request", "{p}");
    wait_closed(&mut c, Duration::from_secs(3));
    // The service is unharmed.
    let mut c = connect_from("127.0.0.1", addr);
    c.write_all(get("/health").as_bytes()).unwrap();
    assert_eq!(read_response(&mut c, Duration::from_secs(5)).status, 200);
}
