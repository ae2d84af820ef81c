//! The well-known binding (ERC-8257 §6): `metadataURI` is
//! `https://<origin of endpoint>/.well-known/ai-tool/<slug>.json`, with no query or fragment.
//!
//! A small parser rather than the `url` crate: the ERC wants a U-label host *rejected*, and a
//! WHATWG parser converts it to an A-label (and folds backslashes, percent-decodes the host,
//! drops empty ports) before anyone can look. Here only G1-G3 are applied (lower-case scheme and
//! host, port 443 elided); every other irregularity is a rejection.

use super::{ManifestError, MAX_METADATA_URI_BYTES};

/// The path prefix of a tool's manifest.
const WELL_KNOWN: &str = "/.well-known/ai-tool/";

/// Why a URL was refused ([`parse_url`], [`parse_https`]); the text follows the URL's name
/// ("metadataURI has no scheme").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum UrlError {
    /// Whitespace or a control character.
    #[error("holds the character U+{:04X}", *.0 as u32)]
    Character(char),
    /// No `:`.
    #[error("has no scheme")]
    NoScheme,
    /// A scheme that is not a letter then letters, digits, `+`, `-` or `.`.
    #[error("has no valid scheme")]
    BadScheme,
    /// No `//` after the scheme.
    #[error("has no authority (//host)")]
    NoAuthority,
    /// User information (`@`) in the authority.
    #[error("holds user information (@)")]
    UserInfo,
    /// A port that is not a decimal number up to 65535.
    #[error("has an invalid port {0:?}")]
    Port(String),
    /// `[` without `]`.
    #[error("has an unclosed IPv6 literal")]
    UnclosedIpv6,
    /// Something other than `:port` after `]`.
    #[error("has characters after the IPv6 literal")]
    AfterIpv6,
    /// An empty host.
    #[error("has an empty host")]
    EmptyHost,
    /// A U-label host (G3).
    #[error("host {0:?} is a U-label: it must be given as an A-label (xn--)")]
    ULabel(String),
    /// A bracketed host that is not an IPv6 literal.
    #[error("has an invalid IPv6 literal {0:?}")]
    Ipv6(String),
    /// A host with an empty label or a character a host cannot hold.
    #[error("has an invalid host {0:?}")]
    Host(String),
    /// A scheme other than `https`.
    #[error("scheme is {0:?}, not https")]
    NotHttps(String),
}

/// An absolute URL split into its parts, scheme and host lower-cased (G1), port 443 of `https`
/// elided (G2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Url<'a> {
    pub scheme: String,
    pub host: String,
    pub port: Option<u16>,
    pub path: &'a str,
    pub query: Option<&'a str>,
    pub fragment: Option<&'a str>,
}

impl Url<'_> {
    /// The origin: scheme, host and port, after normalization.
    fn origin(&self) -> (&str, &str, Option<u16>) {
        (&self.scheme, &self.host, self.port)
    }
}

/// Parse an absolute `scheme://host[:port][path][?query][#fragment]` URL. Refused: no `//`
/// authority, user information (`@`), an empty or non-ASCII host (a U-label, G3), characters a
/// host cannot hold, a bad port, whitespace or control characters anywhere.
pub(crate) fn parse_url(s: &str) -> Result<Url<'_>, UrlError> {
    if let Some(c) = s.chars().find(|c| c.is_whitespace() || c.is_control()) {
        return Err(UrlError::Character(c));
    }
    let (scheme, rest) = s.split_once(':').ok_or(UrlError::NoScheme)?;
    let scheme_ok = scheme
        .as_bytes()
        .first()
        .is_some_and(u8::is_ascii_alphabetic)
        && scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'));
    if !scheme_ok {
        return Err(UrlError::BadScheme);
    }
    let scheme = scheme.to_ascii_lowercase();
    let rest = rest.strip_prefix("//").ok_or(UrlError::NoAuthority)?;
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    if authority.contains('@') {
        return Err(UrlError::UserInfo);
    }
    let (host, port) = split_port(authority)?;
    let host = normalize_host(host)?;
    let port = match port {
        None | Some("") => None,
        Some(p) => {
            let bad = || UrlError::Port(p.to_owned());
            if p.len() > 5 || !p.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad());
            }
            let n: u32 = p.parse().map_err(|_| bad())?;
            let n = u16::try_from(n).map_err(|_| bad())?;
            (!(scheme == "https" && n == 443)).then_some(n)
        }
    };
    let (before_fragment, fragment) = match tail.split_once('#') {
        Some((a, f)) => (a, Some(f)),
        None => (tail, None),
    };
    let (path, query) = match before_fragment.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (before_fragment, None),
    };
    Ok(Url {
        scheme,
        host,
        port,
        path,
        query,
        fragment,
    })
}

/// Split `host[:port]`, where host may be a bracketed IPv6 literal.
fn split_port(authority: &str) -> Result<(&str, Option<&str>), UrlError> {
    if authority.starts_with('[') {
        let close = authority.find(']').ok_or(UrlError::UnclosedIpv6)?;
        let (host, after) = authority.split_at(close + 1);
        return match after {
            "" => Ok((host, None)),
            a => a
                .strip_prefix(':')
                .map(|p| (host, Some(p)))
                .ok_or(UrlError::AfterIpv6),
        };
    }
    Ok(match authority.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (authority, None),
    })
}

/// Lower-case an ASCII host (G1); a U-label is refused (G3), as is anything but letters,
/// digits, `-` and `.` in non-empty labels (one trailing dot allowed), or an IPv6 literal.
fn normalize_host(host: &str) -> Result<String, UrlError> {
    if host.is_empty() {
        return Err(UrlError::EmptyHost);
    }
    if !host.is_ascii() {
        return Err(UrlError::ULabel(host.into()));
    }
    if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        let ok = !inner.is_empty()
            && inner
                .bytes()
                .all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.');
        return if ok {
            Ok(host.to_ascii_lowercase())
        } else {
            Err(UrlError::Ipv6(host.into()))
        };
    }
    let labels = host.strip_suffix('.').unwrap_or(host);
    let ok = labels
        .split('.')
        .all(|l| !l.is_empty() && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'));
    if !ok {
        return Err(UrlError::Host(host.into()));
    }
    Ok(host.to_ascii_lowercase())
}

/// Parse an `https` URL (after G1-G3); the reason names what is wrong.
pub(crate) fn parse_https(s: &str) -> Result<Url<'_>, UrlError> {
    let url = parse_url(s)?;
    if url.scheme != "https" {
        return Err(UrlError::NotHttps(url.scheme));
    }
    Ok(url)
}

/// True when `slug` matches `[a-z0-9]([a-z0-9-]*[a-z0-9])?` and has at most `max` characters.
pub(crate) fn is_slug(slug: &str, max: usize) -> bool {
    let b = slug.as_bytes();
    let edge = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    !b.is_empty()
        && b.len() <= max
        && b.first().is_some_and(edge)
        && b.last().is_some_and(edge)
        && b.iter().all(|c| edge(c) || *c == b'-')
}

/// The well-known binding (ERC-8257 §6, §7 check 2): `metadata_uri` is `https`, at most 2,048
/// bytes, has no `?` or `#`, its path is exactly `/.well-known/ai-tool/<slug>.json` (slug
/// `[a-z0-9]([a-z0-9-]*[a-z0-9])?`, 1-64 characters, percent-encoding left as is), and its
/// scheme, host and port equal those of `endpoint` (itself `https`) after normalization: scheme
/// and host lower-cased, port 443 elided, hosts given as A-labels (a U-label is refused).
pub fn check_binding(metadata_uri: &str, endpoint: &str) -> Result<(), ManifestError> {
    let err = ManifestError::binding;
    if metadata_uri.len() > MAX_METADATA_URI_BYTES {
        return Err(err(format!(
            "metadataURI is {} bytes, more than {MAX_METADATA_URI_BYTES}",
            metadata_uri.len()
        )));
    }
    if metadata_uri.contains('?') {
        return Err(ManifestError::binding("metadataURI has a query (?)"));
    }
    if metadata_uri.contains('#') {
        return Err(ManifestError::binding("metadataURI has a fragment (#)"));
    }
    let meta = parse_https(metadata_uri).map_err(|r| err(format!("metadataURI {r}")))?;
    let end = parse_https(endpoint).map_err(|r| err(format!("/endpoint {r}")))?;
    if meta.origin() != end.origin() {
        return Err(err(format!(
            "metadataURI origin {} is not the origin of /endpoint, {}",
            show_origin(&meta),
            show_origin(&end)
        )));
    }
    let slug = meta
        .path
        .strip_prefix(WELL_KNOWN)
        .and_then(|p| p.strip_suffix(".json"))
        .ok_or_else(|| {
            err(format!(
                "metadataURI path {:?} is not {WELL_KNOWN}<slug>.json",
                meta.path
            ))
        })?;
    if !is_slug(slug, 64) {
        return Err(err(format!(
            "slug {slug:?} does not match [a-z0-9]([a-z0-9-]*[a-z0-9])? in 1-64 characters"
        )));
    }
    Ok(())
}

fn show_origin(u: &Url<'_>) -> String {
    match u.port {
        Some(p) => format!("{}://{}:{p}", u.scheme, u.host),
        None => format!("{}://{}", u.scheme, u.host),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EP: &str = "https://tools.example.com/nft-price-oracle";
    const META: &str = "https://tools.example.com/.well-known/ai-tool/nft-price-oracle.json";

    fn reason(meta: &str, ep: &str) -> String {
        match check_binding(meta, ep) {
            Err(ManifestError::Binding { reason }) => reason,
            other => panic!("{meta} / {ep}: {other:?}"),
        }
    }

    #[test]
    fn the_erc_examples_bind() {
        check_binding(META, EP).unwrap();
        check_binding(
            "https://weather-oracle.example.com/.well-known/ai-tool/weather.json",
            "https://weather-oracle.example.com",
        )
        .unwrap();
        check_binding(
            "https://opensea.io/.well-known/ai-tool/search.json",
            "https://opensea.io/api/search?q=1#top",
        )
        .unwrap();
    }

    #[test]
    fn normalization_g1_g2() {
        check_binding(
            "HTTPS://Tools.Example.COM:443/.well-known/ai-tool/x.json",
            "https://tools.example.com/",
        )
        .unwrap();
        check_binding(
            "https://tools.example.com:8443/.well-known/ai-tool/x.json",
            "https://TOOLS.example.com:8443/a",
        )
        .unwrap();
        check_binding(
            "https://xn--caf-dma.example/.well-known/ai-tool/x.json",
            "https://XN--CAF-DMA.example",
        )
        .unwrap();
        check_binding(
            "https://[::1]:9000/.well-known/ai-tool/x.json",
            "https://[::1]:9000/x",
        )
        .unwrap();
    }

    #[test]
    fn mismatches_are_named() {
        assert!(reason(META, "https://other.example.com/x").contains("origin"));
        assert!(reason(META, "https://tools.example.com:8443/x").contains("origin"));
        assert!(reason(&format!("{META}?v=1"), EP).contains("query"));
        assert!(reason(&format!("{META}#x"), EP).contains("fragment"));
        assert!(reason(&META.replace("https", "http"), EP).contains("not https"));
        assert!(reason(META, &EP.replace("https", "http")).contains("/endpoint"));
        let bad_slug = "https://tools.example.com/.well-known/ai-tool/Bad_Slug.json";
        assert!(reason(bad_slug, EP).contains("slug"));
        let dash = "https://tools.example.com/.well-known/ai-tool/-x.json";
        assert!(reason(dash, EP).contains("slug"));
        let long = format!(
            "https://tools.example.com/.well-known/ai-tool/{}.json",
            "a".repeat(65)
        );
        assert!(reason(&long, EP).contains("slug"));
        let ok64 = long.replace(&"a".repeat(65), &"a".repeat(64));
        check_binding(&ok64, EP).unwrap();
        let slash = "https://tools.example.com/.well-known/ai-tool/x.json/";
        assert!(reason(slash, EP).contains("path"));
        let pct = "https://tools.example.com/.well-known/ai-tool/%61.json";
        assert!(reason(pct, EP).contains("slug"));
        let nested = "https://tools.example.com/.well-known/ai-tool/a/b.json";
        assert!(reason(nested, EP).contains("slug"));
        let other_path = "https://tools.example.com/.well-known/ai-tools/x.json";
        assert!(reason(other_path, EP).contains("path"));
    }

    #[test]
    fn irregular_hosts_are_refused() {
        let u_label = "https://café.example/.well-known/ai-tool/x.json";
        assert!(reason(u_label, "https://café.example").contains("U-label"));
        assert!(reason(META, "https://café.example").contains("U-label"));
        let userinfo = "https://tools.example.com@evil.example/.well-known/ai-tool/x.json";
        assert!(reason(userinfo, EP).contains("user information"));
        let backslash = "https://evil.example\\.tools.example.com/.well-known/ai-tool/x.json";
        assert!(reason(backslash, EP).contains("host"));
        assert!(reason("https:///.well-known/ai-tool/x.json", EP).contains("empty host"));
        assert!(reason(META, "https://tools.example.com:99999/").contains("port"));
        assert!(reason(META, "https://tools.example.com:-1/").contains("port"));
        assert!(reason(META, " https://tools.example.com").contains("U+0020"));
        assert!(reason(META, "https:tools.example.com").contains("authority"));
    }

    #[test]
    fn url_refusals_keep_their_words() {
        let said = |s: &str| parse_https(s).unwrap_err().to_string();
        assert_eq!(said(" https://a.example"), "holds the character U+0020");
        assert_eq!(
            said("https://a.example:99999/"),
            "has an invalid port \"99999\""
        );
        assert_eq!(
            said("https://café.example"),
            "host \"café.example\" is a U-label: it must be given as an A-label (xn--)"
        );
        assert_eq!(said("http://a.example"), "scheme is \"http\", not https");
        assert_eq!(said("https://[::1/"), "has an unclosed IPv6 literal");
        assert_eq!(
            said("https://[zz]/"),
            "has an invalid IPv6 literal \"[zz]\""
        );
        assert_eq!(
            said("https://a_b.example/"),
            "has an invalid host \"a_b.example\""
        );
    }

    #[test]
    fn empty_port_and_leading_zeros_are_the_default() {
        check_binding(
            "https://tools.example.com:/.well-known/ai-tool/x.json",
            "https://tools.example.com:0443",
        )
        .unwrap();
    }
}
