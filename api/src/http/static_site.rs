//! Serving the rendered tree: clean URLs (`/vow/X` -> `vow/X.json`), content negotiation
//! between a path's JSON, HTML and text twins (`Accept`, overridden by `?format=`), and safe
//! path resolution (no traversal, no dotfiles but `.well-known`).

use std::path::{Path, PathBuf};

use warp::http::{header, HeaderValue, StatusCode};
use warp::reply::Response as WarpResponse;

use crate::http::reply::bytes_response;

/// A representation a clean URL can resolve to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// `.json`
    Json,
    /// `.html`
    Html,
    /// `.txt`
    Text,
}

impl Variant {
    fn ext(self) -> &'static str {
        match self {
            Variant::Json => "json",
            Variant::Html => "html",
            Variant::Text => "txt",
        }
    }

    fn media(self) -> (&'static str, &'static str) {
        match self {
            Variant::Json => ("application", "json"),
            Variant::Html => ("text", "html"),
            Variant::Text => ("text", "plain"),
        }
    }

    /// Parse a `?format=` value.
    pub fn from_format(s: &str) -> Option<Self> {
        match s {
            "json" => Some(Variant::Json),
            "html" => Some(Variant::Html),
            "txt" | "text" => Some(Variant::Text),
            _ => None,
        }
    }
}

/// The quality an `Accept` header gives a media type (0.0 when unacceptable).
fn quality(accept: &str, (ty, sub): (&str, &str)) -> f32 {
    let mut best: Option<(u8, f32)> = None;
    for range in accept.split(',') {
        let mut parts = range.split(';');
        let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
        let q = parts
            .filter_map(|p| p.trim().strip_prefix("q="))
            .find_map(|q| q.trim().parse::<f32>().ok())
            .unwrap_or(1.0);
        let (rt, rs) = media.split_once('/').unwrap_or((media.as_str(), ""));
        let specificity = if rt == ty && rs == sub {
            3
        } else if rt == ty && rs == "*" {
            2
        } else if rt == "*" && rs == "*" {
            1
        } else {
            continue;
        };
        if best.is_none_or(|(s, _)| specificity > s) {
            best = Some((specificity, q));
        }
    }
    best.map(|(_, q)| q).unwrap_or(0.0)
}

/// Choose among available variants. Ties go to JSON, then HTML, then text; no `Accept`
/// header means JSON.
pub fn negotiate(accept: Option<&str>, available: &[Variant]) -> Option<Variant> {
    let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else {
        return available.first().copied();
    };
    let mut best: Option<(Variant, f32)> = None;
    for &v in available {
        let q = quality(accept, v.media());
        if q > 0.0 && best.is_none_or(|(_, bq)| q > bq) {
            best = Some((v, q));
        }
    }
    best.map(|(v, _)| v)
}

/// Content type of a file by extension (a log checkpoint is a text note).
pub fn content_type(path: &Path) -> &'static str {
    if path.file_name().is_some_and(|n| n == "checkpoint") {
        return "text/plain; charset=utf-8";
    }
    match path.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "json" => "application/json",
        "html" => "text/html; charset=utf-8",
        "md" => "text/markdown; charset=utf-8",
        "txt" => "text/plain; charset=utf-8",
        "xml" => "application/xml",
        "atom" => "application/atom+xml",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        _ => "application/octet-stream",
    }
}

/// Decode and check a request path; `None` for anything unsafe.
pub fn safe_relative(path: &str) -> Option<String> {
    let decoded = percent_encoding::percent_decode_str(path)
        .decode_utf8()
        .ok()?;
    let trimmed = decoded.trim_start_matches('/');
    let mut out = Vec::new();
    for seg in trimmed.split('/') {
        if seg.is_empty() {
            continue;
        }
        if seg == "." || seg == ".." || seg.contains(['\\', '\0']) {
            return None;
        }
        if seg.starts_with('.') && seg != ".well-known" {
            return None;
        }
        out.push(seg);
    }
    Some(out.join("/"))
}

/// What a lookup found.
#[derive(Debug)]
pub enum Found {
    /// A file, read.
    File(File),
    /// The path has twins, but none the client accepts.
    NotAcceptable,
    /// Nothing there.
    Missing,
}

/// A file a lookup found and read.
#[derive(Debug)]
pub struct File {
    path: PathBuf,
    /// Whether the choice depended on `Accept`.
    negotiated: bool,
    bytes: Vec<u8>,
}

fn is_file(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file())
}

/// Resolve a request path against the site root, and read the file it resolves to.
pub async fn lookup(
    root: &Path,
    path: &str,
    accept: Option<&str>,
    format: Option<Variant>,
) -> Found {
    let Some(rel) = safe_relative(path) else {
        return Found::Missing;
    };
    let (root, accept) = (root.to_path_buf(), accept.map(str::to_owned));
    // Every check of the file system and the read in one trip to the blocking pool: a trip
    // each was most of the cost of serving a small file (BENCHMARKS.md section 9).
    tokio::task::spawn_blocking(move || find(&root, &rel, accept.as_deref(), format))
        .await
        .unwrap_or(Found::Missing)
}

/// [`lookup`] of the checked relative path `rel`, on the blocking pool.
fn find(root: &Path, rel: &str, accept: Option<&str>, format: Option<Variant>) -> Found {
    let read = |path: PathBuf, negotiated| match std::fs::read(&path) {
        Ok(bytes) => Found::File(File {
            path,
            negotiated,
            bytes,
        }),
        Err(_) => Found::Missing,
    };
    // An exact file (e.g. /schemas/trace.json, /library/METER.md) is served as it is.
    let exact = root.join(rel);
    if !rel.is_empty() && format.is_none() && is_file(&exact) {
        return read(exact, false);
    }
    let stem = if rel.is_empty() { "index" } else { rel };
    let twin = |v: Variant| root.join(format!("{stem}.{}", v.ext()));
    let available: Vec<Variant> = [Variant::Json, Variant::Html, Variant::Text]
        .into_iter()
        .filter(|v| is_file(&twin(*v)))
        .collect();
    if available.is_empty() {
        return Found::Missing;
    }
    let chosen = match format {
        Some(f) => available.contains(&f).then_some(f),
        None => negotiate(accept, &available),
    };
    match chosen {
        Some(v) => read(twin(v), available.len() > 1),
        None => Found::NotAcceptable,
    }
}

/// A found file as a response (`head`: its headers alone).
pub fn file_response(file: File, head: bool) -> WarpResponse {
    let File {
        path,
        negotiated,
        bytes,
    } = file;
    let len = bytes.len();
    let body = if head { Vec::new() } else { bytes };
    let mut resp = bytes_response(StatusCode::OK, content_type(&path), body);
    let h = resp.headers_mut();
    if head {
        h.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    }
    // Log tiles and bundles never change once written; a checkpoint changes on every write.
    let s = path.to_string_lossy();
    let cache = if s.contains("/log/tile/") {
        "public, max-age=31536000, immutable"
    } else if s.ends_with("/log/checkpoint") {
        "no-cache"
    } else {
        "public, max-age=60"
    };
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    if negotiated {
        h.insert(header::VARY, HeaderValue::from_static("Accept"));
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation() {
        let all = [Variant::Json, Variant::Html];
        let browser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
        assert_eq!(negotiate(Some(browser), &all), Some(Variant::Html));
        assert_eq!(negotiate(Some("*/*"), &all), Some(Variant::Json));
        assert_eq!(negotiate(None, &all), Some(Variant::Json));
        assert_eq!(
            negotiate(Some("application/json"), &all),
            Some(Variant::Json)
        );
        assert_eq!(negotiate(Some("image/png"), &all), None);
        assert_eq!(
            negotiate(Some("text/html;q=0.5, application/json;q=0.9"), &all),
            Some(Variant::Json)
        );
    }

    #[test]
    fn unsafe_paths_are_refused() {
        assert_eq!(safe_relative("/../etc/passwd"), None);
        assert_eq!(safe_relative("/%2e%2e/x"), None);
        assert_eq!(safe_relative("/.git/config"), None);
        assert_eq!(
            safe_relative("/.well-known/x402.json").as_deref(),
            Some(".well-known/x402.json")
        );
        assert_eq!(safe_relative("/").as_deref(), Some(""));
    }
}
