//! Serving the rendered tree: clean URLs (`/vow/X` -> `vow/X.json`), content negotiation
//! between a path's JSON, HTML and text twins (`Accept`, overridden by `?format=`), safe path
//! resolution (no traversal, no dotfiles but `.well-known`), and the small files served
//! recently kept in memory ([`HotFiles`]: a hot path is looked up without a trip to the
//! blocking pool and served without a read while its file is unchanged).

use std::collections::HashMap;
use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, Mutex};

use bytes::Bytes;

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
    /// The tree's backend did not answer: neither the file nor its absence can be told.
    Unavailable,
}

/// The answer while the tree's backend does not answer (library/ERRORS.md,
/// `tree-unavailable`): 503, retry in a few seconds.
pub fn unavailable() -> crate::http::reply::Problem {
    crate::http::reply::Problem::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "tree-unavailable",
        "The tree is not answering",
        "the bucket that holds the published tree did not answer; retry",
    )
    .with_header(header::RETRY_AFTER, "2")
}

/// A file a lookup found and read.
#[derive(Debug)]
pub struct File {
    /// Where it was found (a file's path, or `/<path>` of an object): its content type and
    /// caching follow it.
    path: PathBuf,
    /// Whether the choice depended on `Accept`.
    negotiated: bool,
    bytes: Bytes,
}

/// The file at `p`, if there is one.
fn file_at(p: &Path) -> Option<Metadata> {
    std::fs::metadata(p).ok().filter(Metadata::is_file)
}

/// Most bytes of files kept in memory.
const HOT_BYTES: usize = 32 << 20;
/// Largest file kept in memory.
const HOT_FILE_MAX: u64 = 256 << 10;
/// How long before it is read a file must have last changed (its `ctime`, which no writer
/// can set back) to be kept: a file that changes after the read has a later `ctime`, so an
/// inode number reused within one tick of the kernel's coarse clock, at the same length,
/// cannot pass for the file kept.
const HOT_SETTLED: std::time::Duration = std::time::Duration::from_secs(1);

/// Which file a path names: the publisher replaces a file by renaming a new one over it, so a
/// replacement changes the inode and its birth time, or by exchanging it with a spare inode
/// written again after resting a second out of the tree (`conduct_indexer::tree::dir::spares`), which
/// changes the inode and its modification time (and a write in place the length or times).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Identity {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    born: Option<std::time::SystemTime>,
}

impl Identity {
    fn of(m: &Metadata) -> Identity {
        Identity {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
            born: m.created().ok(),
        }
    }
}

/// Bytes an entry costs besides its file's: the path, the entry, the map's slot.
const HOT_ENTRY_COST: usize = 256;

/// A file kept in memory: its identity when read, its bytes, when it was last served.
struct HotFile {
    id: Identity,
    bytes: Bytes,
    used: u64,
}

/// The small files served recently, by absolute path, for every tree this process serves:
/// at most [`HOT_BYTES`], the least recently served dropped first. An entry is served only
/// while the file at its path has the identity it had when it was read.
#[derive(Default)]
struct HotFiles {
    files: HashMap<PathBuf, HotFile>,
    total: usize,
    clock: u64,
}

static HOT: LazyLock<Mutex<HotFiles>> = LazyLock::new(Mutex::default);

impl HotFiles {
    /// What an entry counts against [`HOT_BYTES`].
    fn cost(path: &Path, bytes: &Bytes) -> usize {
        bytes.len() + path.as_os_str().len() + HOT_ENTRY_COST
    }

    fn holds(&self, path: &Path) -> bool {
        self.files.contains_key(path)
    }

    /// The bytes kept for `path`, if its file is still `id`.
    fn get(&mut self, path: &Path, id: Identity) -> Option<Bytes> {
        self.clock += 1;
        let f = self.files.get_mut(path).filter(|f| f.id == id)?;
        f.used = self.clock;
        Some(f.bytes.clone())
    }

    /// Keep `bytes`, read from `path` while its file was `id`; over the budget, drop the
    /// least recently served down to three quarters of it (so the sort is paid rarely).
    fn put(&mut self, path: PathBuf, id: Identity, bytes: Bytes) {
        if bytes.len() as u64 > HOT_FILE_MAX || id.len != bytes.len() as u64 {
            return;
        }
        self.clock += 1;
        self.total += Self::cost(&path, &bytes);
        let hot = HotFile {
            id,
            bytes,
            used: self.clock,
        };
        if let Some(old) = self.files.insert(path.clone(), hot) {
            self.total -= Self::cost(&path, &old.bytes);
        }
        if self.total > HOT_BYTES {
            let mut by_use: Vec<(u64, PathBuf)> = self
                .files
                .iter()
                .map(|(p, f)| (f.used, p.clone()))
                .collect();
            by_use.sort_unstable();
            for (_, p) in by_use {
                if self.total <= HOT_BYTES / 4 * 3 {
                    break;
                }
                if let Some(f) = self.files.remove(&p) {
                    self.total -= Self::cost(&p, &f.bytes);
                }
            }
        }
    }
}

fn hot() -> std::sync::MutexGuard<'static, HotFiles> {
    conduct_core::sync::lock(&HOT)
}

/// How a lookup reads the file it chose.
pub(crate) enum Read {
    /// The file's bytes.
    Bytes(Bytes),
    /// It went away.
    Gone,
    /// Not kept in memory as it is now (an inline lookup gives up).
    NotHeld,
}

/// Resolve a request path against the directory `root`, and read the file it resolves to
/// (any tree: `static_objects::lookup`).
pub async fn lookup_dir(
    root: &Path,
    path: &str,
    accept: Option<&str>,
    format: Option<Variant>,
) -> Found {
    let Some(rel) = safe_relative(path) else {
        return Found::Missing;
    };
    // A path whose files are kept in memory is looked up here (a few `stat`s of files just
    // served, their directory entries cached) and served without a read while unchanged.
    if holds_any(root, &rel) {
        let held = |path: &Path, m: &Metadata| {
            hot()
                .get(path, Identity::of(m))
                .map_or(Read::NotHeld, Read::Bytes)
        };
        if let Some(found) = find_in_dir(root, &rel, accept, format, held) {
            return found;
        }
    }
    let (root, accept) = (root.to_path_buf(), accept.map(str::to_owned));
    // Every check of the file system and the read in one trip to the blocking pool: a trip
    // each was most of the cost of serving a small file (BENCHMARKS.md section 9).
    tokio::task::spawn_blocking(move || {
        find_in_dir(&root, &rel, accept.as_deref(), format, read_and_keep).unwrap_or(Found::Missing)
    })
    .await
    .unwrap_or(Found::Missing)
}

/// Whether a file `rel` may resolve to is kept in memory.
fn holds_any(root: &Path, rel: &str) -> bool {
    let stem = if rel.is_empty() { "index" } else { rel };
    let h = hot();
    (!rel.is_empty() && h.holds(&root.join(rel)))
        || [Variant::Json, Variant::Html, Variant::Text]
            .iter()
            .any(|v| h.holds(&root.join(format!("{stem}.{}", v.ext()))))
}

/// Read the file at `path` (its identity taken from the open file, so the bytes kept are the
/// file's that identity names) and keep it in memory when small.
fn read_and_keep(path: &Path, _: &Metadata) -> Read {
    use std::io::Read as _;
    let read = std::fs::File::open(path).and_then(|mut f| {
        let m = f.metadata()?;
        let mut bytes = Vec::with_capacity(usize::try_from(m.len()).unwrap_or(0));
        f.read_to_end(&mut bytes)?;
        Ok((Identity::of(&m), Bytes::from(bytes)))
    });
    match read {
        Ok((id, bytes)) => {
            // Whole seconds: a second more than the margin.
            let changed = u64::try_from(id.ctime.0).unwrap_or(u64::MAX);
            let settled = changed.saturating_add(HOT_SETTLED.as_secs() + 1);
            if settled <= conduct_indexer::clock::wall_now() {
                hot().put(path.to_path_buf(), id, bytes.clone());
            }
            Read::Bytes(bytes)
        }
        Err(_) => Read::Gone,
    }
}

/// [`lookup_dir`] of the checked relative path `rel`: `at` says whether a name of the tree
/// (`rel`, or a twin `<stem>.<ext>`) is there (the path to answer with, and what `read`
/// needs), and `read` gives the chosen one's bytes; `None` when `read` does not hold them.
/// The exact name is asked for first, or, with `twins_first` and a name without an extension
/// (a clean URL), only when it has no twin: the same answer for any tree this service writes
/// (never an exact file beside twins), with fewer reads of a bucket.
pub(crate) fn find<M>(
    rel: &str,
    accept: Option<&str>,
    format: Option<Variant>,
    twins_first: bool,
    at: impl Fn(&str) -> Option<(PathBuf, M)>,
    read: impl FnOnce(&Path, M) -> Read,
) -> Option<Found> {
    let found = |path: PathBuf, meta: M, negotiated| match read(&path, meta) {
        Read::Bytes(bytes) => Some(Found::File(File {
            path,
            negotiated,
            bytes,
        })),
        Read::Gone => Some(Found::Missing),
        Read::NotHeld => None,
    };
    // An exact file (e.g. /schemas/trace.json, /library/METER.md) is served as it is.
    let exact = !rel.is_empty() && format.is_none();
    let clean_url = !rel.rsplit('/').next().unwrap_or(rel).contains('.');
    let exact_last = exact && twins_first && clean_url;
    if exact && !exact_last {
        if let Some((path, m)) = at(rel) {
            return found(path, m, false);
        }
    }
    let stem = if rel.is_empty() { "index" } else { rel };
    let mut available: Vec<(Variant, PathBuf, M)> = [Variant::Json, Variant::Html, Variant::Text]
        .into_iter()
        .filter_map(|v| at(&format!("{stem}.{}", v.ext())).map(|(p, m)| (v, p, m)))
        .collect();
    if available.is_empty() {
        if let Some((path, m)) = at(rel).filter(|_| exact_last) {
            return found(path, m, false);
        }
        return Some(Found::Missing);
    }
    let variants: Vec<Variant> = available.iter().map(|(v, ..)| *v).collect();
    let chosen = match format {
        Some(f) => variants.contains(&f).then_some(f),
        None => negotiate(accept, &variants),
    };
    let negotiated = variants.len() > 1;
    match chosen.and_then(|c| available.iter().position(|(v, ..)| *v == c)) {
        Some(i) => {
            let (_, path, m) = available.swap_remove(i);
            found(path, m, negotiated)
        }
        None => Some(Found::NotAcceptable),
    }
}

/// [`find`] in the directory `root`.
fn find_in_dir(
    root: &Path,
    rel: &str,
    accept: Option<&str>,
    format: Option<Variant>,
    read: impl FnOnce(&Path, &Metadata) -> Read,
) -> Option<Found> {
    let at = |name: &str| {
        let path = root.join(name);
        file_at(&path).map(|m| (path, m))
    };
    find(rel, accept, format, false, at, |path, m| read(path, &m))
}

/// A found file as a response (`head`: its headers alone).
pub fn file_response(file: File, head: bool) -> WarpResponse {
    let File {
        path,
        negotiated,
        bytes,
    } = file;
    let len = bytes.len();
    let body = if head { Bytes::new() } else { bytes };
    let mut resp = bytes_response(
        StatusCode::OK,
        conduct_indexer::tree::content_type(&path.to_string_lossy()),
        body,
    );
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

    /// Serve `path` until its file is kept (its `ctime` has settled), at most 10 s.
    async fn settle(root: &Path, path: &str, rel: &str) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !holds_any(root, rel) {
            assert!(std::time::Instant::now() < deadline, "{path} never kept");
            served(root, path, None).await;
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }

    async fn served(root: &Path, path: &str, accept: Option<&str>) -> Option<Vec<u8>> {
        match lookup_dir(root, path, accept, None).await {
            Found::File(f) => Some(f.bytes.to_vec()),
            _ => None,
        }
    }

    /// A file kept in memory is served while it is unchanged, and never after: replaced by a
    /// rename (as the publisher does), rewritten in place, removed, or joined by a twin.
    #[tokio::test]
    async fn a_kept_file_is_served_only_while_it_is_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir(root.join("vow")).unwrap();
        std::fs::write(root.join("vow/a.json"), b"{\"v\":1}").unwrap();
        // A file that changed within the last second is not kept; once settled, it is.
        assert_eq!(served(root, "/vow/a", None).await.unwrap(), b"{\"v\":1}");
        assert!(!holds_any(root, "vow/a"));
        settle(root, "/vow/a", "vow/a").await;
        assert_eq!(served(root, "/vow/a", None).await.unwrap(), b"{\"v\":1}");
        assert_eq!(served(root, "/vow/a", None).await.unwrap(), b"{\"v\":1}");
        // Replaced as the publisher replaces: a new file renamed over it.
        std::fs::write(root.join("vow/.a.tmp"), b"{\"v\":2}").unwrap();
        std::fs::rename(root.join("vow/.a.tmp"), root.join("vow/a.json")).unwrap();
        assert_eq!(served(root, "/vow/a", None).await.unwrap(), b"{\"v\":2}");
        // Rewritten in place, same length, once kept again.
        settle(root, "/vow/a", "vow/a").await;
        assert_eq!(served(root, "/vow/a", None).await.unwrap(), b"{\"v\":2}");
        std::fs::write(root.join("vow/a.json"), b"{\"v\":3}").unwrap();
        assert_eq!(served(root, "/vow/a", None).await.unwrap(), b"{\"v\":3}");
        // A twin appears: a browser gets it, JSON stays JSON.
        std::fs::write(root.join("vow/a.html"), b"<p>3</p>").unwrap();
        assert_eq!(
            served(root, "/vow/a", Some("text/html")).await.unwrap(),
            b"<p>3</p>"
        );
        assert_eq!(served(root, "/vow/a", None).await.unwrap(), b"{\"v\":3}");
        // Removed.
        std::fs::remove_file(root.join("vow/a.json")).unwrap();
        std::fs::remove_file(root.join("vow/a.html")).unwrap();
        assert_eq!(served(root, "/vow/a", None).await, None);
    }

    #[test]
    fn the_files_kept_stay_within_their_budget_least_recently_served_dropped_first() {
        let mut h = HotFiles::default();
        let id = |ino| Identity {
            dev: 1,
            ino,
            len: 64 << 10,
            mtime: (0, 0),
            ctime: (0, 0),
            born: None,
        };
        let n = HOT_BYTES / (64 << 10) + 10;
        for i in 0..n as u64 {
            h.put(
                PathBuf::from(format!("/f/{i}")),
                id(i),
                Bytes::from(vec![0u8; 64 << 10]),
            );
            // The first file stays in use.
            assert!(
                h.get(Path::new("/f/0"), id(0)).is_some(),
                "file 0 dropped at {i}"
            );
        }
        assert!(h.total <= HOT_BYTES);
        let counted: usize = h
            .files
            .iter()
            .map(|(p, f)| HotFiles::cost(p, &f.bytes))
            .sum();
        assert_eq!(h.total, counted);
        // Empty files count against the budget too.
        let mut empty = HotFiles::default();
        let most = HOT_BYTES / HOT_ENTRY_COST;
        for i in 0..2 * most as u64 {
            let none = Identity { len: 0, ..id(i) };
            empty.put(PathBuf::from(format!("/e/{i}")), none, Bytes::new());
            assert!(
                empty.files.len() <= most,
                "{} empty files kept",
                empty.files.len()
            );
        }
        assert!(!h.holds(Path::new("/f/1")));
        assert!(h.holds(Path::new(&format!("/f/{}", n - 1))));
        // Another identity at the same path is not served.
        assert!(h.get(Path::new("/f/0"), id(99)).is_none());
        // Larger than a kept file may be: not kept.
        let big = Identity {
            len: HOT_FILE_MAX + 1,
            ..id(7)
        };
        h.put(PathBuf::from("/big"), big, Bytes::new());
        assert!(!h.holds(Path::new("/big")));
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
