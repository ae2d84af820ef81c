//! The SSRF-safe HTTPS fetcher of ERC-8257 tool manifests (library/REGISTRY.md, step 1; the ERC's
//! creator self-attestation: fetch `metadataURI`, https only, no redirects, 1 MiB, 5 s).
//!
//! A manifest URL is chosen by whoever registers a tool, so fetching it means fetching a
//! stranger's URL from inside our network. [`Fetcher::fetch`] therefore:
//!
//! - accepts `https://` only; any other scheme, a URL that does not parse, or one carrying
//!   credentials is refused before any network traffic;
//! - resolves the host itself (or takes the literal IP of the URL) and refuses the fetch when
//!   ANY resolved address is not a public unicast address ([`allowed`]: loopback, private,
//!   link-local, CGNAT, multicast, documentation and benchmarking, reserved; an IPv6 address
//!   embedding an IPv4 one, IPv4-mapped, IPv4-compatible, NAT64 or 6to4, is judged by it);
//! - connects to exactly the addresses it checked: the client is built per fetch, with
//!   `resolve_to_addrs` pinning the host to them and a resolver that refuses every other
//!   lookup, so a second DNS answer (rebinding) is never used;
//! - follows no redirect (a 3xx is a failure naming its status), uses no proxy, sends no
//!   cookie or referer and asks for no compression;
//! - caps the body while it streams (a larger `Content-Length` is refused before reading), and
//!   bounds the whole fetch (resolve, connect, TLS, headers, body) by one deadline.
//!
//! The answer is a [`FetchOutcome`], a statement about what happened rather than an error to
//! propagate. Its detail is short and human readable and never carries response bytes.
//! [`FetchPolicy::allow_loopback`] (tests, `conduct dev`) admits 127.0.0.0/8 and `::1`, never
//! a private range. Whether the bytes are a valid manifest with the registered hash is the
//! caller's question; a fetch says nothing about safety.

use std::error::Error as StdError;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use reqwest::dns::{Name, Resolve, Resolving};
use reqwest::header::{HeaderValue, ACCEPT};
use reqwest::redirect::Policy;
use reqwest::{Certificate, Url};

/// The production body limit: 1 MiB (ERC-8257 section 7).
pub const DEFAULT_MAX_BYTES: usize = 1 << 20;

/// The production deadline for a whole fetch: 5 s.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// What a [`Fetcher`] may do. `Default` is the production policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchPolicy {
    /// Admit loopback addresses (127.0.0.0/8, `::1`) only: for tests and `conduct dev`. Private
    /// and every other refused range stay refused.
    pub allow_loopback: bool,
    /// PEM certificates (each may hold several) trusted as roots in addition to the webpki
    /// roots: for tests and dev.
    pub extra_roots: Vec<Vec<u8>>,
    /// The largest body accepted, in bytes.
    pub max_bytes: usize,
    /// The deadline of a whole fetch: resolve, connect, TLS, headers and body.
    pub timeout: Duration,
    /// The `User-Agent` sent.
    pub user_agent: String,
}

impl Default for FetchPolicy {
    fn default() -> Self {
        FetchPolicy {
            allow_loopback: false,
            extra_roots: Vec::new(),
            max_bytes: DEFAULT_MAX_BYTES,
            timeout: DEFAULT_TIMEOUT,
            user_agent: concat!(
                "conduct/",
                env!("CARGO_PKG_VERSION"),
                " (erc-8257 manifest)"
            )
            .to_owned(),
        }
    }
}

/// A policy a [`Fetcher`] cannot be built with.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// An entry of [`FetchPolicy::extra_roots`] holds no usable certificate.
    #[error("extra root certificate {index}: {reason}")]
    Root {
        /// Its position in `extra_roots`.
        index: usize,
        /// Why it was refused.
        reason: String,
    },
    /// The HTTPS client could not be built (for example an invalid user agent).
    #[error("building the HTTPS client: {0}")]
    Client(#[source] reqwest::Error),
}

/// Why a fetch failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailKind {
    /// Refused by policy before any connection: the URL (scheme, syntax, credentials) or an
    /// address the host resolves to.
    Refused,
    /// The server answered with a redirect (3xx), which is never followed.
    Redirect,
    /// The server answered with this non-2xx, non-3xx status.
    Http(u16),
    /// The body is larger than [`FetchPolicy::max_bytes`].
    TooLarge,
    /// The whole fetch did not finish within [`FetchPolicy::timeout`].
    Timeout,
    /// DNS failure, connection refused or reset, TLS failure (an untrusted certificate), or a
    /// malformed answer.
    Network,
}

/// The result of one fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FetchOutcome {
    /// A 2xx answer and its whole body (at most [`FetchPolicy::max_bytes`]).
    Fetched {
        /// The body as received (no decompression is asked for or done).
        bytes: Vec<u8>,
        /// The HTTP status, 200..=299.
        status: u16,
    },
    /// No usable answer.
    Failed {
        /// Short and human readable; never holds response bytes.
        detail: String,
        /// The class of failure.
        kind: FailKind,
    },
}

impl FetchOutcome {
    fn failed(kind: FailKind, detail: impl Into<String>) -> Self {
        FetchOutcome::Failed {
            detail: detail.into(),
            kind,
        }
    }
}

/// Fetches manifests under one [`FetchPolicy`]. Cheap to share; every fetch builds its own
/// client, pinned to the addresses it checked.
#[derive(Debug)]
pub struct Fetcher {
    policy: FetchPolicy,
    roots: Vec<Certificate>,
}

impl Fetcher {
    /// Checks the policy (every extra root parses as a trust anchor, the user agent is a valid
    /// header) and keeps it.
    pub fn new(policy: FetchPolicy) -> Result<Fetcher, FetchError> {
        let mut roots = Vec::new();
        for (index, pem) in policy.extra_roots.iter().enumerate() {
            let root_error = |reason: String| FetchError::Root { index, reason };
            let certs = Certificate::from_pem_bundle(pem).map_err(|e| root_error(e.to_string()))?;
            if certs.is_empty() {
                return Err(root_error("no CERTIFICATE block in the PEM".to_owned()));
            }
            // Building a client without the built-in roots parses these as trust anchors.
            let mut probe = reqwest::Client::builder().tls_built_in_root_certs(false);
            for cert in &certs {
                probe = probe.add_root_certificate(cert.clone());
            }
            probe.build().map_err(|e| root_error(cause(&e)))?;
            roots.extend(certs);
        }
        let fetcher = Fetcher { policy, roots };
        fetcher.client(None).map_err(FetchError::Client)?;
        Ok(fetcher)
    }

    /// The policy this fetcher applies.
    pub fn policy(&self) -> &FetchPolicy {
        &self.policy
    }

    /// Fetches `url` under the policy. Never panics and never returns an error: every failure
    /// is a [`FetchOutcome::Failed`].
    pub async fn fetch(&self, url: &str) -> FetchOutcome {
        let url = match check_url(url) {
            Ok(url) => url,
            Err(outcome) => return outcome,
        };
        match tokio::time::timeout(self.policy.timeout, self.fetch_checked(url)).await {
            Ok(outcome) => outcome,
            Err(_) => FetchOutcome::failed(
                FailKind::Timeout,
                format!(
                    "timed out after {} ms",
                    self.policy.timeout.as_millis().max(1)
                ),
            ),
        }
    }

    async fn fetch_checked(&self, url: Url) -> FetchOutcome {
        let port = url.port_or_known_default().unwrap_or(443);
        let Some(host) = url.host_str() else {
            return FetchOutcome::failed(FailKind::Refused, "refused: the URL has no host");
        };
        let (domain, addrs) = match literal_ip(host) {
            Some(ip) => (None, vec![SocketAddr::new(ip, port)]),
            None => match resolve(host, port).await {
                Ok(addrs) => (Some(host), addrs),
                Err(outcome) => return outcome,
            },
        };
        for addr in &addrs {
            if let Err(reason) = allowed(addr.ip(), self.policy.allow_loopback) {
                let detail = match domain {
                    Some(domain) => format!(
                        "refused: {domain} resolves to {}, a {reason} address",
                        addr.ip()
                    ),
                    None => format!("refused: {} is a {reason} address", addr.ip()),
                };
                return FetchOutcome::failed(FailKind::Refused, detail);
            }
        }
        let client = match self.client(domain.map(|d| (d, addrs.as_slice()))) {
            Ok(client) => client,
            Err(e) => {
                return FetchOutcome::failed(
                    FailKind::Network,
                    format!("building the client: {}", cause(&e)),
                )
            }
        };
        let request = client
            .get(url)
            .header(ACCEPT, HeaderValue::from_static("application/json"));
        let mut response = match request.send().await {
            Ok(response) => response,
            Err(e) => return request_failed(&e),
        };
        let status = response.status().as_u16();
        if response.status().is_redirection() {
            return FetchOutcome::failed(
                FailKind::Redirect,
                format!("HTTP {status} redirect refused (redirects are not followed)"),
            );
        }
        if !response.status().is_success() {
            return FetchOutcome::failed(FailKind::Http(status), format!("HTTP {status}"));
        }
        let max = self.policy.max_bytes;
        let declared = response.content_length();
        if let Some(length) = declared {
            if length > max as u64 {
                return FetchOutcome::failed(
                    FailKind::TooLarge,
                    format!("body of {length} bytes (Content-Length) exceeds the {max} byte limit"),
                );
            }
        }
        let capacity = declared.map_or(0, |l| usize::try_from(l).unwrap_or(max).min(max));
        let mut bytes = Vec::with_capacity(capacity);
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    if chunk.len() > max - bytes.len() {
                        return FetchOutcome::failed(
                            FailKind::TooLarge,
                            format!("body exceeds the {max} byte limit"),
                        );
                    }
                    bytes.extend_from_slice(&chunk);
                }
                Ok(None) => break,
                Err(e) => return request_failed(&e),
            }
        }
        FetchOutcome::Fetched { bytes, status }
    }

    /// A client for one fetch: `pin` is the checked host and the only addresses it may reach.
    fn client(&self, pin: Option<(&str, &[SocketAddr])>) -> reqwest::Result<reqwest::Client> {
        let mut builder = reqwest::Client::builder()
            .https_only(true)
            .redirect(Policy::none())
            .no_proxy()
            .referer(false)
            .user_agent(self.policy.user_agent.as_str())
            .pool_max_idle_per_host(0)
            .dns_resolver(Arc::new(NoLookup));
        for root in &self.roots {
            builder = builder.add_root_certificate(root.clone());
        }
        if let Some((host, addrs)) = pin {
            builder = builder.resolve_to_addrs(host, addrs);
        }
        builder.build()
    }
}

/// Parses `url` and refuses, without traffic, anything but an `https` URL with a host and no
/// credentials.
fn check_url(url: &str) -> Result<Url, FetchOutcome> {
    let refused = |detail: String| FetchOutcome::failed(FailKind::Refused, detail);
    let url = Url::parse(url).map_err(|e| refused(format!("refused: not a valid URL ({e})")))?;
    if url.scheme() != "https" {
        let scheme: String = url.scheme().chars().take(16).collect();
        return Err(refused(format!(
            "refused: scheme {scheme:?} (only https is fetched)"
        )));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(refused("refused: credentials in the URL".to_owned()));
    }
    if url.host().is_none() {
        return Err(refused("refused: the URL has no host".to_owned()));
    }
    Ok(url)
}

/// The IP address of a URL's host when it is a literal (the URL parser has already rewritten
/// every IPv4 spelling, such as `0x7f.1` or `2130706433`, to dotted decimal; IPv6 comes
/// bracketed).
fn literal_ip(host: &str) -> Option<IpAddr> {
    match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Some(v6) => v6.parse::<Ipv6Addr>().ok().map(IpAddr::V6),
        None => host.parse::<Ipv4Addr>().ok().map(IpAddr::V4),
    }
}

/// Every address `domain` resolves to, deduplicated, in the resolver's order.
async fn resolve(domain: &str, port: u16) -> Result<Vec<SocketAddr>, FetchOutcome> {
    let found = tokio::net::lookup_host((domain, port)).await.map_err(|e| {
        FetchOutcome::failed(
            FailKind::Network,
            format!("DNS lookup of {domain} failed: {e}"),
        )
    })?;
    let mut addrs: Vec<SocketAddr> = Vec::new();
    for addr in found {
        if !addrs.contains(&addr) {
            addrs.push(addr);
        }
    }
    if addrs.is_empty() {
        return Err(FetchOutcome::failed(
            FailKind::Network,
            format!("DNS lookup of {domain} found no address"),
        ));
    }
    Ok(addrs)
}

/// The resolver behind the pinned addresses: any lookup reaching it is refused, so the client
/// can never connect to an address that was not checked.
struct NoLookup;

impl Resolve for NoLookup {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            Err(format!("lookup of {host} refused: only checked addresses are used").into())
        })
    }
}

/// The outcome of a request or body read that failed.
fn request_failed(e: &reqwest::Error) -> FetchOutcome {
    if e.is_timeout() {
        return FetchOutcome::failed(FailKind::Timeout, "timed out");
    }
    let what = if e.is_connect() {
        "connection failed"
    } else if e.is_body() || e.is_decode() {
        "reading the body failed"
    } else {
        "request failed"
    };
    FetchOutcome::failed(FailKind::Network, format!("{what}: {}", cause(e)))
}

/// The innermost cause of `e` (reqwest's own text names the URL; the cause says what broke).
fn cause(e: &reqwest::Error) -> String {
    let mut inner: Option<&(dyn StdError + 'static)> = e.source();
    let mut last = None;
    while let Some(source) = inner {
        last = Some(source);
        inner = source.source();
    }
    let text = match last {
        Some(source) => source.to_string(),
        None => e.to_string(),
    };
    shorten(text)
}

/// At most [`DETAIL_CAUSE_CHARS`] characters of `text`: a cause may quote the peer (the
/// names of its certificate), and a detail stays short.
fn shorten(text: String) -> String {
    match text.char_indices().nth(DETAIL_CAUSE_CHARS) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text,
    }
}

/// The longest cause quoted in a detail, in characters.
const DETAIL_CAUSE_CHARS: usize = 160;

/// Whether the fetcher may connect to `ip`, and if not, why (the reason names the range).
///
/// Only public unicast addresses are allowed. Refused: unspecified, loopback (unless
/// `allow_loopback`), 0/8, private (10/8, 172.16/12, 192.168/16), CGNAT 100.64/10, link-local
/// (169.254/16, fe80::/10), IETF protocol assignments (192.0.0/24, 2001::/23 with Teredo),
/// documentation (192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32, 3fff::/20),
/// benchmarking 198.18/15, the 6to4 relay anycast 192.88.99/24, multicast, 240/4 and
/// broadcast, unique local fc00::/7, site-local fec0::/10, discard-only 100::/64, local-use
/// NAT64 64:ff9b:1::/48, SRv6 5f00::/16, and every IPv6 address outside 2000::/3 not named
/// below.
///
/// An IPv4-mapped address (`::ffff:a.b.c.d`) reaches the IPv4 address itself and gets its
/// verdict, `allow_loopback` included. IPv4-compatible (`::a.b.c.d`), NAT64 (`64:ff9b::/96`)
/// and 6to4 (`2002::/16`) addresses are judged by their embedded IPv4 address as if
/// `allow_loopback` were false: they are never loopback themselves, so loopback is admitted
/// only as 127.0.0.0/8 or `::1`.
pub fn allowed(ip: IpAddr, allow_loopback: bool) -> Result<(), &'static str> {
    match ip {
        IpAddr::V4(ip) => allowed_v4(ip, allow_loopback),
        IpAddr::V6(ip) => allowed_v6(ip, allow_loopback),
    }
}

/// Refused IPv4 ranges, most specific first where they nest.
const REFUSED_V4: &[(Ipv4Addr, u32, &str)] = &[
    (Ipv4Addr::new(0, 0, 0, 0), 8, "\"this network\" (0.0.0.0/8)"),
    (Ipv4Addr::new(10, 0, 0, 0), 8, "private (10.0.0.0/8)"),
    (
        Ipv4Addr::new(100, 64, 0, 0),
        10,
        "shared CGNAT (100.64.0.0/10)",
    ),
    (
        Ipv4Addr::new(169, 254, 0, 0),
        16,
        "link-local (169.254.0.0/16)",
    ),
    (Ipv4Addr::new(172, 16, 0, 0), 12, "private (172.16.0.0/12)"),
    (
        Ipv4Addr::new(192, 0, 0, 0),
        24,
        "IETF protocol (192.0.0.0/24)",
    ),
    (
        Ipv4Addr::new(192, 0, 2, 0),
        24,
        "documentation (192.0.2.0/24)",
    ),
    (
        Ipv4Addr::new(192, 88, 99, 0),
        24,
        "6to4 relay (192.88.99.0/24)",
    ),
    (
        Ipv4Addr::new(192, 168, 0, 0),
        16,
        "private (192.168.0.0/16)",
    ),
    (
        Ipv4Addr::new(198, 18, 0, 0),
        15,
        "benchmarking (198.18.0.0/15)",
    ),
    (
        Ipv4Addr::new(198, 51, 100, 0),
        24,
        "documentation (198.51.100.0/24)",
    ),
    (
        Ipv4Addr::new(203, 0, 113, 0),
        24,
        "documentation (203.0.113.0/24)",
    ),
    (Ipv4Addr::new(224, 0, 0, 0), 4, "multicast (224.0.0.0/4)"),
    (
        Ipv4Addr::new(255, 255, 255, 255),
        32,
        "broadcast (255.255.255.255)",
    ),
    (Ipv4Addr::new(240, 0, 0, 0), 4, "reserved (240.0.0.0/4)"),
];

/// Refused IPv6 ranges, most specific first where they nest (the embedding ranges are handled
/// before this table).
const REFUSED_V6: &[(Ipv6Addr, u32, &str)] = &[
    (
        Ipv6Addr::new(0x64, 0xff9b, 1, 0, 0, 0, 0, 0),
        48,
        "local-use NAT64 (64:ff9b:1::/48)",
    ),
    (
        Ipv6Addr::new(0x100, 0, 0, 0, 0, 0, 0, 0),
        64,
        "discard-only (100::/64)",
    ),
    (
        Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0),
        32,
        "Teredo (2001::/32)",
    ),
    (
        Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0),
        23,
        "IETF protocol (2001::/23)",
    ),
    (
        Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0),
        32,
        "documentation (2001:db8::/32)",
    ),
    (
        Ipv6Addr::new(0x3fff, 0, 0, 0, 0, 0, 0, 0),
        20,
        "documentation (3fff::/20)",
    ),
    (
        Ipv6Addr::new(0x5f00, 0, 0, 0, 0, 0, 0, 0),
        16,
        "SRv6 (5f00::/16)",
    ),
    (
        Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, 0),
        7,
        "unique local (fc00::/7)",
    ),
    (
        Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0),
        10,
        "link-local (fe80::/10)",
    ),
    (
        Ipv6Addr::new(0xfec0, 0, 0, 0, 0, 0, 0, 0),
        10,
        "site-local (fec0::/10)",
    ),
    (
        Ipv6Addr::new(0xff00, 0, 0, 0, 0, 0, 0, 0),
        8,
        "multicast (ff00::/8)",
    ),
];

fn in_v4(ip: Ipv4Addr, net: Ipv4Addr, bits: u32) -> bool {
    let mask = u32::MAX.checked_shl(32 - bits).unwrap_or(0);
    u32::from(ip) & mask == u32::from(net) & mask
}

fn in_v6(ip: Ipv6Addr, net: Ipv6Addr, bits: u32) -> bool {
    let mask = u128::MAX.checked_shl(128 - bits).unwrap_or(0);
    u128::from(ip) & mask == u128::from(net) & mask
}

fn allowed_v4(ip: Ipv4Addr, allow_loopback: bool) -> Result<(), &'static str> {
    if ip.is_unspecified() {
        return Err("unspecified (0.0.0.0)");
    }
    if ip.is_loopback() {
        return if allow_loopback {
            Ok(())
        } else {
            Err("loopback (127.0.0.0/8)")
        };
    }
    match REFUSED_V4
        .iter()
        .find(|(net, bits, _)| in_v4(ip, *net, *bits))
    {
        Some((_, _, reason)) => Err(reason),
        None => Ok(()),
    }
}

fn allowed_v6(ip: Ipv6Addr, allow_loopback: bool) -> Result<(), &'static str> {
    if ip.is_unspecified() {
        return Err("unspecified (::)");
    }
    if ip.is_loopback() {
        return if allow_loopback {
            Ok(())
        } else {
            Err("loopback (::1)")
        };
    }
    if let Some(v4) = ip.to_ipv4_mapped() {
        return allowed_v4(v4, allow_loopback);
    }
    let bits = u128::from(ip);
    // The low 32 bits of IPv4-compatible ::/96 and NAT64 64:ff9b::/96 addresses.
    let compatible = in_v6(ip, Ipv6Addr::UNSPECIFIED, 96);
    let nat64 = in_v6(ip, Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, 0, 0), 96);
    if compatible || nat64 {
        return allowed_v4(Ipv4Addr::from(bits as u32), false);
    }
    // 6to4: 2002:AABB:CCDD::/48 carries AA.BB.CC.DD.
    if in_v6(ip, Ipv6Addr::new(0x2002, 0, 0, 0, 0, 0, 0, 0), 16) {
        return allowed_v4(Ipv4Addr::from((bits >> 80) as u32), false);
    }
    if let Some((_, _, reason)) = REFUSED_V6.iter().find(|(net, b, _)| in_v6(ip, *net, *b)) {
        return Err(reason);
    }
    if !in_v6(ip, Ipv6Addr::new(0x2000, 0, 0, 0, 0, 0, 0, 0), 3) {
        return Err("reserved IPv6 (outside 2000::/3)");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("test address")
    }

    fn verdict(s: &str, allow_loopback: bool) -> Result<(), &'static str> {
        allowed(ip(s), allow_loopback)
    }

    #[test]
    fn public_addresses_are_allowed() {
        for s in [
            "1.1.1.1",
            "8.8.8.8",
            "9.255.255.255",
            "11.0.0.0",
            "93.184.215.14",
            "100.63.255.255",
            "100.128.0.0",
            "172.15.255.255",
            "172.32.0.0",
            "192.0.1.255",
            "192.0.3.0",
            "192.167.255.255",
            "192.169.0.0",
            "198.17.255.255",
            "198.20.0.0",
            "223.255.255.255",
            "2606:4700:4700::1111",
            "2001:4860:4860::8888",
            "2a00:1450:4001:80b::200e",
            "2001:200::1",
            "3ffe::1",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::1",
            "::8.8.8.8",
        ] {
            assert_eq!(verdict(s, false), Ok(()), "{s}");
            assert_eq!(verdict(s, true), Ok(()), "{s} with loopback allowed");
        }
    }

    #[test]
    fn every_special_range_is_refused_at_both_edges() {
        for (s, reason) in [
            ("0.0.0.0", "unspecified"),
            ("0.1.2.3", "this network"),
            ("0.255.255.255", "this network"),
            ("10.0.0.0", "private"),
            ("10.255.255.255", "private"),
            ("100.64.0.0", "CGNAT"),
            ("100.127.255.255", "CGNAT"),
            ("169.254.0.0", "link-local"),
            ("169.254.169.254", "link-local"),
            ("169.254.255.255", "link-local"),
            ("172.16.0.0", "private"),
            ("172.31.255.255", "private"),
            ("192.0.0.0", "IETF"),
            ("192.0.0.255", "IETF"),
            ("192.0.2.0", "documentation"),
            ("192.0.2.255", "documentation"),
            ("192.88.99.1", "6to4 relay"),
            ("192.168.0.0", "private"),
            ("192.168.255.255", "private"),
            ("198.18.0.0", "benchmarking"),
            ("198.19.255.255", "benchmarking"),
            ("198.51.100.7", "documentation"),
            ("203.0.113.255", "documentation"),
            ("224.0.0.0", "multicast"),
            ("239.255.255.255", "multicast"),
            ("240.0.0.0", "reserved"),
            ("254.255.255.255", "reserved"),
            ("255.255.255.255", "broadcast"),
            ("::", "unspecified"),
            ("::2", "this network"),
            ("::10.0.0.1", "private"),
            ("::ffff:0.0.0.0", "unspecified"),
            ("::ffff:10.0.0.1", "private"),
            ("::ffff:169.254.169.254", "link-local"),
            ("::ffff:192.168.1.1", "private"),
            ("64:ff9b::a00:1", "private"),
            ("64:ff9b::7f00:1", "loopback"),
            ("64:ff9b:1::8.8.8.8", "local-use NAT64"),
            ("100::1", "discard-only"),
            ("2001::1", "Teredo"),
            ("2001:1ff:ffff::1", "IETF"),
            ("2001:db8::1", "documentation"),
            ("2002:a00:1::", "private"),
            ("2002:7f00:1::", "loopback"),
            ("2002:c0a8:101::1", "private"),
            ("3fff::1", "documentation"),
            ("3fff:fff:ffff::1", "documentation"),
            ("5f00::1", "SRv6"),
            ("fc00::", "unique local"),
            ("fd12:3456::1", "unique local"),
            ("fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "unique local"),
            ("fe80::1", "link-local"),
            ("febf:ffff::1", "link-local"),
            ("fec0::1", "site-local"),
            ("ff02::1", "multicast"),
            ("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "multicast"),
            ("4000::1", "outside 2000::/3"),
            ("1::1", "outside 2000::/3"),
            ("e000::1", "outside 2000::/3"),
        ] {
            for allow_loopback in [false, true] {
                match verdict(s, allow_loopback) {
                    Err(why) => assert!(why.contains(reason), "{s}: {why:?} lacks {reason:?}"),
                    Ok(()) => panic!("{s} allowed (allow_loopback {allow_loopback})"),
                }
            }
        }
    }

    #[test]
    fn loopback_is_refused_unless_allowed_and_only_loopback_is_allowed() {
        for s in [
            "127.0.0.1",
            "127.0.0.0",
            "127.255.255.255",
            "127.1.2.3",
            "::1",
            "::ffff:127.0.0.1",
        ] {
            let refused = verdict(s, false).expect_err(s);
            assert!(refused.contains("loopback"), "{s}: {refused}");
            assert_eq!(verdict(s, true), Ok(()), "{s}");
        }
        // Loopback embedded in a translated address does not reach loopback: refused always.
        for s in ["64:ff9b::127.0.0.1", "2002:7f00:1::1", "::127.0.0.1"] {
            assert!(verdict(s, true).is_err(), "{s}");
        }
    }

    /// The stable classifiers of std: none of what they flag may be allowed.
    fn std_says_special(ip: IpAddr) -> bool {
        match ip {
            IpAddr::V4(v4) => {
                v4.is_private()
                    || v4.is_loopback()
                    || v4.is_link_local()
                    || v4.is_multicast()
                    || v4.is_broadcast()
                    || v4.is_documentation()
                    || v4.is_unspecified()
            }
            IpAddr::V6(v6) => {
                v6.is_loopback()
                    || v6.is_multicast()
                    || v6.is_unspecified()
                    || v6.is_unique_local()
                    || v6.is_unicast_link_local()
                    || v6
                        .to_ipv4_mapped()
                        .is_some_and(|v4| std_says_special(IpAddr::V4(v4)))
            }
        }
    }

    fn any_v6() -> impl Strategy<Value = Ipv6Addr> {
        prop_oneof![
            any::<u128>().prop_map(Ipv6Addr::from),
            // Bias towards the interesting prefixes.
            (
                prop::sample::select(vec![
                    0u16, 0x64, 0x100, 0x2001, 0x2002, 0x3fff, 0x5f00, 0xfc00, 0xfd00, 0xfe80,
                    0xfec0, 0xff00, 0x2600
                ]),
                any::<u128>()
            )
                .prop_map(|(top, rest)| Ipv6Addr::from((u128::from(top) << 112) | (rest >> 16))),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        #[test]
        fn an_ipv4_mapped_address_gets_the_verdict_of_its_ipv4(v4 in any::<u32>(), lo in any::<bool>()) {
            let v4 = Ipv4Addr::from(v4);
            prop_assert_eq!(
                allowed(IpAddr::V6(v4.to_ipv6_mapped()), lo),
                allowed(IpAddr::V4(v4), lo)
            );
        }

        #[test]
        fn translated_addresses_get_the_verdict_of_their_ipv4_without_loopback(
            v4 in any::<u32>(),
            lo in any::<bool>(),
            tail in any::<u64>(),
        ) {
            let ipv4 = Ipv4Addr::from(v4);
            let expected = allowed(IpAddr::V4(ipv4), false);
            let nat64 = Ipv6Addr::from((0x0064_ff9b_u128 << 96) | u128::from(v4));
            prop_assert_eq!(allowed(IpAddr::V6(nat64), lo), expected);
            let six_to_four =
                Ipv6Addr::from((0x2002_u128 << 112) | (u128::from(v4) << 80) | u128::from(tail));
            prop_assert_eq!(allowed(IpAddr::V6(six_to_four), lo), expected);
            if v4 > 1 {
                let compatible = Ipv6Addr::from(u128::from(v4));
                prop_assert_eq!(allowed(IpAddr::V6(compatible), lo), expected);
            }
        }

        #[test]
        fn private_ranges_are_refused_even_with_loopback(host in any::<u32>(), lo in any::<bool>()) {
            for (net, bits) in [
                ([10, 0, 0, 0], 8),
                ([172, 16, 0, 0], 12),
                ([192, 168, 0, 0], 16),
                ([169, 254, 0, 0], 16),
                ([100, 64, 0, 0], 10),
                ([0, 0, 0, 0], 8),
                ([240, 0, 0, 0], 4),
                ([224, 0, 0, 0], 4),
                ([198, 18, 0, 0], 15),
            ] {
                let ip = Ipv4Addr::from(u32::from(Ipv4Addr::from(net)) | (host >> bits));
                prop_assert!(allowed(IpAddr::V4(ip), lo).is_err(), "{} allowed", ip);
                prop_assert!(allowed(IpAddr::V6(ip.to_ipv6_mapped()), lo).is_err(), "{} allowed", ip);
            }
        }

        #[test]
        fn allowed_v4_is_never_special_to_std(v4 in any::<u32>(), lo in any::<bool>()) {
            let ip = IpAddr::V4(Ipv4Addr::from(v4));
            if allowed(ip, lo).is_ok() && !(lo && ip.is_loopback()) {
                prop_assert!(!std_says_special(ip), "{} allowed", ip);
            }
        }

        #[test]
        fn allowed_v6_is_global_unicast(v6 in any_v6(), lo in any::<bool>()) {
            let ip = IpAddr::V6(v6);
            let loopback = v6.is_loopback()
                || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback());
            if allowed(ip, lo).is_ok() && !(lo && loopback) {
                prop_assert!(!std_says_special(ip), "{} allowed", ip);
                let top = v6.segments()[0];
                let global_unicast = top & 0xe000 == 0x2000;
                let embeds_v4 = v6.to_ipv4_mapped().is_some()
                    || u128::from(v6) >> 32 == 0
                    || u128::from(v6) >> 32 == 0x0064_ff9b_0000_0000_0000_0000;
                prop_assert!(global_unicast || embeds_v4, "{} allowed", ip);
            }
        }

        #[test]
        fn allow_loopback_changes_the_verdict_of_loopback_only(v6 in any_v6(), v4 in any::<u32>()) {
            for ip in [IpAddr::V6(v6), IpAddr::V4(Ipv4Addr::from(v4))] {
                if allowed(ip, false) != allowed(ip, true) {
                    let loopback = match ip {
                        IpAddr::V4(v4) => v4.is_loopback(),
                        IpAddr::V6(v6) => v6.is_loopback()
                            || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()),
                    };
                    prop_assert!(loopback, "{} changed", ip);
                    prop_assert_eq!(allowed(ip, true), Ok(()));
                }
            }
        }
    }

    #[test]
    fn urls_other_than_https_are_refused_without_a_lookup() {
        for url in [
            "http://example.com/x.json",
            "ftp://example.com/x.json",
            "file:///etc/passwd",
            "data:application/json,{}",
            "gopher://127.0.0.1:6379/_",
            "not a url",
            "https://user:pass@example.com/x.json",
            "https://user@example.com/x.json",
        ] {
            match check_url(url) {
                Err(FetchOutcome::Failed {
                    kind: FailKind::Refused,
                    detail,
                }) => assert!(detail.starts_with("refused"), "{url}: {detail}"),
                other => panic!("{url}: {other:?}"),
            }
        }
        assert!(check_url("https://example.com/.well-known/ai-tool/x.json").is_ok());
    }

    #[test]
    fn literal_hosts_in_any_spelling_are_ip_addresses() {
        for (url, expected) in [
            ("https://127.0.0.1/", "127.0.0.1"),
            ("https://0x7f.1/", "127.0.0.1"),
            ("https://2130706433/", "127.0.0.1"),
            ("https://0177.0.0.1/", "127.0.0.1"),
            ("https://010.0.0.1/", "8.0.0.1"),
            ("https://[::ffff:10.0.0.1]/", "::ffff:10.0.0.1"),
            ("https://[0:0:0:0:0:0:0:1]:8443/", "::1"),
        ] {
            let url = check_url(url).expect(url);
            let host = url.host_str().expect("host");
            assert_eq!(literal_ip(host), Some(ip(expected)), "{url}");
        }
        for host in [
            "example.com",
            "localhost",
            "1.2.3.4.example",
            "xn--bcher-kva.example",
        ] {
            assert_eq!(literal_ip(host), None, "{host}");
        }
    }

    #[test]
    fn a_long_cause_is_shortened() {
        assert_eq!(shorten("short".to_owned()), "short");
        let long = "é".repeat(1000);
        let short = shorten(long);
        assert_eq!(short.chars().count(), DETAIL_CAUSE_CHARS + 3);
        assert!(short.ends_with("..."));
    }

    #[tokio::test]
    async fn the_client_looks_up_no_name_and_uses_the_pinned_addresses() {
        let fetcher = Fetcher::new(FetchPolicy::default()).expect("fetcher");
        // Unpinned: the lookup is refused, whatever the name.
        let client = fetcher.client(None).expect("client");
        let e = client
            .get("https://localhost:9/")
            .send()
            .await
            .expect_err("no lookup");
        assert!(cause(&e).contains("lookup of localhost refused"), "{e:?}");
        // Pinned: the name reaches the pinned address (a closed port) without any DNS.
        let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = closed.local_addr().expect("address");
        drop(closed);
        let client = fetcher
            .client(Some(("manifests.invalid", &[addr])))
            .expect("client");
        let url = format!("https://manifests.invalid:{}/", addr.port());
        let e = client.get(url).send().await.expect_err("closed port");
        assert!(e.is_connect(), "{e:?}");
        assert!(cause(&e).contains("refused"), "{e:?}");
        assert!(!cause(&e).contains("lookup"), "{e:?}");
    }

    #[test]
    fn the_default_policy_is_production() {
        let policy = FetchPolicy::default();
        assert!(!policy.allow_loopback);
        assert!(policy.extra_roots.is_empty());
        assert_eq!(policy.max_bytes, 1024 * 1024);
        assert_eq!(policy.timeout, Duration::from_secs(5));
        assert!(policy.user_agent.starts_with("conduct/"));
    }

    #[test]
    fn a_bad_extra_root_is_refused_at_construction() {
        for (pem, why) in [
            (b"not a pem".to_vec(), "no CERTIFICATE"),
            (
                b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n".to_vec(),
                "",
            ),
        ] {
            let policy = FetchPolicy {
                extra_roots: vec![pem],
                ..FetchPolicy::default()
            };
            match Fetcher::new(policy) {
                Err(FetchError::Root { index: 0, reason }) => {
                    assert!(reason.contains(why), "{reason}")
                }
                other => panic!("{other:?}"),
            }
        }
        let policy = FetchPolicy {
            user_agent: "bad\nagent".to_owned(),
            ..FetchPolicy::default()
        };
        assert!(matches!(Fetcher::new(policy), Err(FetchError::Client(_))));
    }
}
