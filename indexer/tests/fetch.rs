//! The manifest fetcher over real HTTPS on loopback: a throwaway certificate authority
//! (rcgen), a small HTTP/1.1 server over tokio-rustls whose answers are chosen by path, and the
//! fetcher's real reqwest client. No mock of the client.
//!
//! "No connection was made" is proven, not slept on: after the fetch, a probe connects to the
//! server and must be the first connection the server accepts (a connection the fetcher had
//! made would sit in the accept queue before it).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use conduct_indexer::fetch::{FailKind, FetchOutcome, FetchPolicy, Fetcher};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::rustls::{self, ServerConfig};
use tokio_rustls::TlsAcceptor;

const MANIFEST: &[u8] =
    br#"{"type":"https://ercs.ethereum.org/ERCS/erc-8257#tool-manifest-v1","name":"t"}"#;
const TWO_MIB: usize = 2 << 20;
/// Sent in error bodies: it must never reach a detail.
const SECRET: &str = "error-body-must-not-leak";
/// The deadline of the timeout tests.
const SHORT: Duration = Duration::from_millis(500);

/// A certificate authority and a server identity it signed.
struct Pki {
    ca_pem: Vec<u8>,
    server: Arc<ServerConfig>,
}

impl Pki {
    /// A CA named `name` and a server certificate for localhost, 127.0.0.1 and ::1.
    fn new(name: &str) -> Pki {
        Pki::with_names(name, &["localhost", "127.0.0.1", "::1"])
    }

    fn with_names(name: &str, names: &[&str]) -> Pki {
        let ca_key = KeyPair::generate().expect("CA key");
        let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(DnType::CommonName, format!("conduct {name} test CA"));
        ca.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca_cert = ca.self_signed(&ca_key).expect("CA certificate");
        let issuer = Issuer::new(ca, ca_key);

        let leaf_key = KeyPair::generate().expect("leaf key");
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let mut leaf = CertificateParams::new(names).expect("leaf params");
        leaf.distinguished_name
            .push(DnType::CommonName, "localhost");
        leaf.extended_key_usages
            .push(ExtendedKeyUsagePurpose::ServerAuth);
        let leaf_cert = leaf
            .signed_by(&leaf_key, &issuer)
            .expect("leaf certificate");

        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let server = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_no_client_auth()
            .with_single_cert(
                vec![leaf_cert.der().clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der())),
            )
            .expect("server config");
        Pki {
            ca_pem: ca_cert.pem().into_bytes(),
            server: Arc::new(server),
        }
    }

    /// The policy of `conduct dev`: loopback allowed, this CA trusted.
    fn dev_policy(&self) -> FetchPolicy {
        FetchPolicy {
            allow_loopback: true,
            extra_roots: vec![self.ca_pem.clone()],
            ..FetchPolicy::default()
        }
    }

    fn dev_fetcher(&self) -> Fetcher {
        Fetcher::new(self.dev_policy()).expect("fetcher")
    }
}

/// An HTTPS server on loopback whose answer depends on the path (see `answer`).
struct Server {
    addr: SocketAddr,
    /// The peer of every accepted TCP connection, in accept order.
    accepted: mpsc::UnboundedReceiver<SocketAddr>,
    /// The head of every request read, in order.
    requests: Arc<Mutex<Vec<String>>>,
}

impl Server {
    async fn start(pki: &Pki) -> Server {
        Server::start_on("127.0.0.1:0", pki)
            .await
            .expect("listen on 127.0.0.1")
    }

    async fn start_on(bind: &str, pki: &Pki) -> std::io::Result<Server> {
        let listener = TcpListener::bind(bind).await?;
        let addr = listener.local_addr()?;
        let (tx, accepted) = mpsc::unbounded_channel();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let acceptor = TlsAcceptor::from(pki.server.clone());
        let seen = requests.clone();
        tokio::spawn(async move {
            while let Ok((tcp, peer)) = listener.accept().await {
                let _ = tx.send(peer);
                let acceptor = acceptor.clone();
                let seen = seen.clone();
                tokio::spawn(async move {
                    if let Ok(tls) = acceptor.accept(tcp).await {
                        serve(tls, addr, seen).await;
                    }
                });
            }
        });
        Ok(Server {
            addr,
            accepted,
            requests,
        })
    }

    /// `https://<ip>:<port><path>`.
    fn url(&self, path: &str) -> String {
        format!("https://{}{path}", self.addr)
    }

    /// `https://localhost:<port><path>`: the fetcher resolves the name itself.
    fn localhost_url(&self, path: &str) -> String {
        format!("https://localhost:{}{path}", self.addr.port())
    }

    fn paths(&self) -> Vec<String> {
        let requests = self.requests.lock().expect("requests");
        requests
            .iter()
            .map(|head| head.split(' ').nth(1).unwrap_or_default().to_owned())
            .collect()
    }

    /// Proves the server has accepted no connection so far: a probe made now is the first.
    async fn assert_no_connection_yet(&mut self) {
        let probe = TcpStream::connect(self.addr).await.expect("probe connects");
        let first = self.accepted.recv().await.expect("accept loop runs");
        assert_eq!(
            first,
            probe.local_addr().expect("probe address"),
            "the server was contacted before the probe"
        );
    }
}

/// Reads one request head (up to 16 KiB) and answers it by path.
async fn serve<S>(mut stream: S, addr: SocketAddr, seen: Arc<Mutex<Vec<String>>>)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
        if head.len() > 16 * 1024 {
            return;
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let path = head.split(' ').nth(1).unwrap_or_default().to_owned();
    seen.lock().expect("requests").push(head);

    let body_of = |n: usize| vec![b'x'; n];
    let sized = |n: usize| {
        path.rsplit('/')
            .next()
            .and_then(|s| s.parse().ok())
            .unwrap_or(n)
    };
    let _written = match path.as_str() {
        "/manifest.json" => write(&mut stream, "200 OK", &[], MANIFEST).await,
        "/moved" => {
            let headers = ["Location: /manifest.json".to_owned()];
            write(&mut stream, "301 Moved Permanently", &headers, b"").await
        }
        "/found" => {
            let headers = [format!("Location: https://{addr}/manifest.json")];
            write(&mut stream, "302 Found", &headers, b"").await
        }
        "/missing" => write(&mut stream, "404 Not Found", &[], SECRET.as_bytes()).await,
        "/broken" => write(&mut stream, "500 Oops", &[], SECRET.as_bytes()).await,
        "/big" => write(&mut stream, "200 OK", &[], &body_of(TWO_MIB)).await,
        "/big-chunked" => chunked(&mut stream, TWO_MIB).await,
        "/big-close" => close_delimited(&mut stream, TWO_MIB).await,
        p if p.starts_with("/bytes/") => {
            write(&mut stream, "200 OK", &[], &body_of(sized(0))).await
        }
        p if p.starts_with("/chunked/") => chunked(&mut stream, sized(0)).await,
        "/stall-body" => {
            let head = "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n0123456789";
            let _ = stream.write_all(head.as_bytes()).await;
            let _ = stream.flush().await;
            std::future::pending::<()>().await;
            Ok(())
        }
        "/stall-headers" => {
            std::future::pending::<()>().await;
            Ok(())
        }
        _ => write(&mut stream, "404 Not Found", &[], b"").await,
    };
}

async fn write<S: AsyncWrite + Unpin>(
    stream: &mut S,
    status: &str,
    headers: &[String],
    body: &[u8],
) -> std::io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nContent-Type: application/json\r\nConnection: close\r\n",
        body.len()
    );
    for header in headers {
        head.push_str(header);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body).await?;
    stream.shutdown().await
}

async fn chunked<S: AsyncWrite + Unpin>(stream: &mut S, size: usize) -> std::io::Result<()> {
    let head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
    stream.write_all(head.as_bytes()).await?;
    let mut left = size;
    while left > 0 {
        let n = left.min(64 * 1024);
        stream.write_all(format!("{n:x}\r\n").as_bytes()).await?;
        stream.write_all(&vec![b'x'; n]).await?;
        stream.write_all(b"\r\n").await?;
        left -= n;
    }
    stream.write_all(b"0\r\n\r\n").await?;
    stream.shutdown().await
}

async fn close_delimited<S: AsyncWrite + Unpin>(
    stream: &mut S,
    size: usize,
) -> std::io::Result<()> {
    let head = "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n";
    stream.write_all(head.as_bytes()).await?;
    for _ in 0..size / 1024 {
        stream.write_all(&[b'x'; 1024]).await?;
    }
    stream.shutdown().await
}

#[track_caller]
fn failed(outcome: &FetchOutcome) -> (FailKind, &str) {
    match outcome {
        FetchOutcome::Failed { detail, kind } => (*kind, detail.as_str()),
        FetchOutcome::Fetched { bytes, status } => {
            panic!("fetched {} bytes with status {status}", bytes.len())
        }
    }
}

#[tokio::test]
async fn a_served_manifest_is_fetched() {
    let pki = Pki::new("good");
    let server = Server::start(&pki).await;
    let fetcher = pki.dev_fetcher();
    for url in [
        server.url("/manifest.json"),
        server.localhost_url("/manifest.json"),
    ] {
        let started = Instant::now();
        let outcome = fetcher.fetch(&url).await;
        eprintln!("{url}: {:?}", started.elapsed());
        assert_eq!(
            outcome,
            FetchOutcome::Fetched {
                bytes: MANIFEST.to_vec(),
                status: 200
            },
            "{url}"
        );
    }
    assert_eq!(server.paths(), ["/manifest.json", "/manifest.json"]);
    let requests = server.requests.lock().expect("requests").clone();
    for head in &requests {
        let lower = head.to_ascii_lowercase();
        assert!(lower.contains("\r\nuser-agent: conduct/"), "{head}");
        assert!(lower.contains("\r\naccept: application/json"), "{head}");
        assert!(!lower.contains("accept-encoding"), "{head}");
        assert!(!lower.contains("referer"), "{head}");
    }
    let port = server.addr.port();
    assert!(requests[1]
        .to_ascii_lowercase()
        .contains(&format!("\r\nhost: localhost:{port}\r\n")));
}

#[tokio::test]
async fn the_default_policy_refuses_loopback_before_connecting() {
    let pki = Pki::new("good");
    let mut server = Server::start(&pki).await;
    let port = server.addr.port();
    // The CA is trusted, so only the address check can stop these fetches.
    let trusting = Fetcher::new(FetchPolicy {
        extra_roots: vec![pki.ca_pem.clone()],
        ..FetchPolicy::default()
    })
    .expect("fetcher");
    let production = Fetcher::new(FetchPolicy::default()).expect("fetcher");
    for fetcher in [&trusting, &production] {
        for url in [
            server.url("/manifest.json"),
            server.localhost_url("/manifest.json"),
            format!("https://[::ffff:127.0.0.1]:{port}/manifest.json"),
            format!("https://0x7f.1:{port}/manifest.json"),
            format!("https://2130706433:{port}/manifest.json"),
            format!("https://0.0.0.0:{port}/manifest.json"),
        ] {
            let outcome = fetcher.fetch(&url).await;
            let (kind, detail) = failed(&outcome);
            assert_eq!(kind, FailKind::Refused, "{url}: {detail}");
            assert!(
                detail.contains("loopback") || detail.contains("unspecified"),
                "{url}: {detail}"
            );
        }
    }
    let outcome = trusting.fetch(&server.localhost_url("/x")).await;
    eprintln!("localhost under the default policy: {outcome:?}");
    server.assert_no_connection_yet().await;
    assert!(server.paths().is_empty());
}

#[tokio::test]
async fn a_redirect_is_a_failure_and_is_not_followed() {
    let pki = Pki::new("good");
    let server = Server::start(&pki).await;
    let fetcher = pki.dev_fetcher();
    for (path, status) in [("/moved", "301"), ("/found", "302")] {
        let outcome = fetcher.fetch(&server.url(path)).await;
        let (kind, detail) = failed(&outcome);
        assert_eq!(kind, FailKind::Redirect, "{path}: {detail}");
        assert!(detail.contains(status), "{path}: {detail}");
    }
    assert_eq!(
        server.paths(),
        ["/moved", "/found"],
        "a Location was requested"
    );
}

#[tokio::test]
async fn a_non_2xx_status_is_an_http_failure_without_the_body() {
    let pki = Pki::new("good");
    let server = Server::start(&pki).await;
    let fetcher = pki.dev_fetcher();
    for (path, status) in [("/missing", 404), ("/broken", 500)] {
        let outcome = fetcher.fetch(&server.url(path)).await;
        let (kind, detail) = failed(&outcome);
        assert_eq!(kind, FailKind::Http(status), "{path}: {detail}");
        assert!(detail.contains(&status.to_string()), "{path}: {detail}");
        assert!(!detail.contains(SECRET), "{path}: {detail}");
    }
}

#[tokio::test]
async fn a_body_over_the_limit_is_too_large_with_or_without_a_length() {
    let pki = Pki::new("good");
    let server = Server::start(&pki).await;
    let fetcher = pki.dev_fetcher();
    for path in ["/big", "/big-chunked", "/big-close"] {
        let started = Instant::now();
        let outcome = fetcher.fetch(&server.url(path)).await;
        let (kind, detail) = failed(&outcome);
        eprintln!("{path}: {detail} ({:?})", started.elapsed());
        assert_eq!(kind, FailKind::TooLarge, "{path}: {detail}");
        assert!(detail.contains("1048576"), "{path}: {detail}");
        assert!(!detail.contains("xxx"), "{path}: {detail}");
        assert_eq!(
            detail.contains("Content-Length"),
            path == "/big",
            "{detail}"
        );
    }

    // The limit is exact, whether the body is announced or streamed.
    let small = Fetcher::new(FetchPolicy {
        max_bytes: 1000,
        ..pki.dev_policy()
    })
    .expect("fetcher");
    for kind in ["bytes", "chunked"] {
        let outcome = small.fetch(&server.url(&format!("/{kind}/1000"))).await;
        assert_eq!(
            outcome,
            FetchOutcome::Fetched {
                bytes: vec![b'x'; 1000],
                status: 200
            },
            "{kind}"
        );
        let outcome = small.fetch(&server.url(&format!("/{kind}/1001"))).await;
        assert_eq!(failed(&outcome).0, FailKind::TooLarge, "{kind}");
    }
    let outcome = small.fetch(&server.url("/bytes/0")).await;
    assert_eq!(
        outcome,
        FetchOutcome::Fetched {
            bytes: Vec::new(),
            status: 200
        }
    );
}

#[tokio::test]
async fn a_stalled_server_times_out_at_the_deadline() {
    let pki = Pki::new("good");
    let server = Server::start(&pki).await;
    // A listener that accepts and never answers: the TLS handshake stalls.
    let silent = TcpListener::bind("127.0.0.1:0").await.expect("listen");
    let silent_addr = silent.local_addr().expect("address");
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((tcp, _)) = silent.accept().await {
            held.push(tcp);
        }
    });
    let fetcher = Fetcher::new(FetchPolicy {
        timeout: SHORT,
        ..pki.dev_policy()
    })
    .expect("fetcher");
    for url in [
        server.url("/stall-body"),
        server.url("/stall-headers"),
        format!("https://{silent_addr}/manifest.json"),
    ] {
        let started = Instant::now();
        let outcome = fetcher.fetch(&url).await;
        let elapsed = started.elapsed();
        let (kind, detail) = failed(&outcome);
        eprintln!("{url}: {detail} after {elapsed:?}");
        assert_eq!(kind, FailKind::Timeout, "{url}: {detail}");
        assert!(elapsed >= SHORT, "{url}: {elapsed:?}");
        assert!(
            elapsed < SHORT + Duration::from_millis(1500),
            "{url}: {elapsed:?}"
        );
        assert!(detail.contains("500 ms"), "{detail}");
    }
    assert_eq!(server.paths(), ["/stall-body", "/stall-headers"]);
}

#[tokio::test]
async fn an_untrusted_or_misnamed_certificate_is_a_network_failure() {
    let trusted = Pki::new("good");
    let rogue = Pki::new("rogue");
    let server = Server::start(&rogue).await;
    let no_extra_roots = Fetcher::new(FetchPolicy {
        allow_loopback: true,
        ..FetchPolicy::default()
    })
    .expect("fetcher");
    for fetcher in [trusted.dev_fetcher(), no_extra_roots] {
        let outcome = fetcher.fetch(&server.url("/manifest.json")).await;
        let (kind, detail) = failed(&outcome);
        eprintln!("untrusted: {detail}");
        assert_eq!(kind, FailKind::Network, "{detail}");
        assert!(
            detail.to_ascii_lowercase().contains("certificate"),
            "{detail}"
        );
    }
    assert!(
        server.paths().is_empty(),
        "a request went over an untrusted TLS session"
    );

    // Signed by the trusted CA, but for another name.
    let elsewhere = Pki::with_names("good", &["manifests.example"]);
    let server = Server::start(&elsewhere).await;
    let outcome = elsewhere
        .dev_fetcher()
        .fetch(&server.url("/manifest.json"))
        .await;
    let (kind, detail) = failed(&outcome);
    eprintln!("misnamed: {detail}");
    assert_eq!(kind, FailKind::Network, "{detail}");
    assert!(
        detail.to_ascii_lowercase().contains("certificate"),
        "{detail}"
    );
}

#[tokio::test]
async fn a_refused_connection_is_a_network_failure() {
    let pki = Pki::new("good");
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("listen");
    let addr = listener.local_addr().expect("address");
    drop(listener);
    let outcome = pki
        .dev_fetcher()
        .fetch(&format!("https://{addr}/manifest.json"))
        .await;
    let (kind, detail) = failed(&outcome);
    eprintln!("refused connection: {detail}");
    assert_eq!(kind, FailKind::Network, "{detail}");
}

#[tokio::test]
async fn other_schemes_are_refused_without_traffic() {
    let pki = Pki::new("good");
    let mut server = Server::start(&pki).await;
    let fetcher = pki.dev_fetcher();
    let hostport = server.addr.to_string();
    for url in [
        format!("http://{hostport}/manifest.json"),
        format!("HTTP://{hostport}/manifest.json"),
        format!("ftp://{hostport}/manifest.json"),
        format!("ws://{hostport}/manifest.json"),
        format!("https://user:secret@{hostport}/manifest.json"),
        "file:///etc/passwd".to_owned(),
        "manifest.json".to_owned(),
    ] {
        let outcome = fetcher.fetch(&url).await;
        let (kind, detail) = failed(&outcome);
        assert_eq!(kind, FailKind::Refused, "{url}: {detail}");
        assert!(!detail.contains("secret"), "{detail}");
    }
    server.assert_no_connection_yet().await;
}

#[tokio::test]
async fn a_literal_private_address_is_refused_at_once() {
    let pki = Pki::new("good");
    let production = Fetcher::new(FetchPolicy::default()).expect("fetcher");
    for fetcher in [&production, &pki.dev_fetcher()] {
        for url in [
            "https://10.0.0.1/.well-known/ai-tool/x.json",
            "https://172.16.5.4/",
            "https://192.168.1.1/",
            "https://169.254.169.254/latest/meta-data/",
            "https://100.64.0.1/",
            "https://198.18.0.1/",
            "https://224.0.0.1/",
            "https://255.255.255.255/",
            "https://[fd00::1]/",
            "https://[fe80::1]/",
            "https://[::ffff:10.0.0.1]/",
            "https://[64:ff9b::a9fe:a9fe]/",
            "https://[2002:a00:1::1]/",
            "https://0x0a.0.0.1/",
        ] {
            let started = Instant::now();
            let outcome = fetcher.fetch(url).await;
            let elapsed = started.elapsed();
            let (kind, detail) = failed(&outcome);
            assert_eq!(kind, FailKind::Refused, "{url}: {detail}");
            assert!(detail.starts_with("refused: "), "{url}: {detail}");
            assert!(elapsed < Duration::from_millis(200), "{url}: {elapsed:?}");
        }
    }
}

#[tokio::test]
async fn ipv6_loopback_is_fetched_only_when_allowed() {
    let pki = Pki::new("good");
    let mut server = match Server::start_on("[::1]:0", &pki).await {
        Ok(server) => server,
        Err(e) => {
            eprintln!("skipped: no IPv6 loopback here ({e})");
            return;
        }
    };
    let url = server.url("/manifest.json");
    assert!(url.starts_with("https://[::1]:"), "{url}");
    let production = Fetcher::new(FetchPolicy {
        extra_roots: vec![pki.ca_pem.clone()],
        ..FetchPolicy::default()
    })
    .expect("fetcher");
    let outcome = production.fetch(&url).await;
    let (kind, detail) = failed(&outcome);
    assert_eq!(kind, FailKind::Refused, "{detail}");
    assert!(detail.contains("loopback"), "{detail}");
    server.assert_no_connection_yet().await;

    let outcome = pki.dev_fetcher().fetch(&url).await;
    assert_eq!(
        outcome,
        FetchOutcome::Fetched {
            bytes: MANIFEST.to_vec(),
            status: 200
        }
    );
}
