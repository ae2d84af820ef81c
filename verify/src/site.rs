//! Check a mirror of the signed tree (an rsync copy, or a base URL serving it) offline against
//! the pinned service key (`conduct verify-site DIR|URL`; library/MIRRORS.md).
//!
//! [`verify_site_at`] checks, in order, and stops at the first failure, naming the path:
//!
//! 1. `manifest.json` verifies under the pinned key, has type `conduct.manifest/v1` and has not
//!    expired;
//! 2. every file the manifest lists is there with exactly the listed `len` and `sha256`;
//! 3. (directory only; HTTP offers no listing) every file outside `log/` but the manifest is
//!    listed, and there are no dotfiles but under `.well-known/`;
//! 4. every `.json` file outside `log/` is a signed snapshot verifying under the pinned key
//!    (`openapi.json` carries its signature and key id as `x-signature` and `x-key-id`, the
//!    only members an OpenAPI document may add), but `hive/profile.json`, the service's Nostr
//!    profile: a kind-0 event exactly as NIP-01 has it (no member may be added), so it must be
//!    one whose NIP-01 id and BIP-340 signature verify (its bytes are pinned by the manifest
//!    like every file's);
//! 5. the log under `log/` passes [`crate::verify_log`];
//! 6. (directory only) every other file under `log/` is an older partial tile or entry bundle
//!    that is exactly the prefix of the verified current one (a log keeps the partial tiles of
//!    its earlier sizes for clients holding older checkpoints), so no byte of the copy goes
//!    unchecked.
//!
//! Memory stays bounded whatever the size of the tree: the manifest is read as a stream into
//! one compact row per listed file (`crate::manifest`), each file is hashed as it is read (a
//! JSON file is held while its signature is checked), and the log is audited as
//! [`crate::verify_log`] does. On a terminal, each step shows its progress on standard error.

use std::io::Read;
use std::path::Path;
use std::time::Instant;

use conduct_core::canonical::utf16_cmp;
use conduct_core::signing::{verify_snapshot, PinnedKey, VerifyError};
use conduct_core::time::parse_rfc3339;
use conduct_core::tlog::tiles::{
    decode_bundle, entries_path, parse_entries_path, parse_tile_path, stored_hash_count, tile_path,
    TILE_WIDTH,
};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::error::{ManifestError, MirrorProblem};
use crate::files::{is_url, Files};
use crate::log::{verify_log, LogAudit};
use crate::manifest::{self, Entry, ReadError, Streamed};
use crate::progress::{peak_text, throughput, Progress, Run};
use crate::{pinned_key, Error};

/// The `type` a manifest carries (defined in conduct-core, shared with the renderer).
pub use conduct_core::manifest::MANIFEST_TYPE;

/// What a successful check found.
#[derive(Debug, Clone)]
pub struct SiteAudit {
    /// The manifest's part of the check.
    pub tree: TreeAudit,
    /// The log under `log/`.
    pub log: LogAudit,
    /// Older partial tiles and bundles under `log/` found consistent with the current ones;
    /// `None` over HTTP.
    pub older_partials: Option<usize>,
    /// How long the whole check took, and the peak memory.
    pub run: Run,
}

/// What the checks of the tree outside `log/` found (steps 1 to 4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeAudit {
    /// The manifest's `as_of`.
    pub as_of: String,
    /// The manifest's `expires`.
    pub expires: String,
    /// Files the manifest lists, all present with the listed length and hash.
    pub listed: usize,
    /// Signed JSON snapshots that verified, the manifest included.
    pub signed: usize,
    /// Files found by walking the directory (outside `log/`, the manifest included); `None`
    /// over HTTP, where there is no listing to walk.
    pub walked: Option<usize>,
    /// How long steps 1 to 4 took, and the peak memory then.
    pub run: Run,
}

impl std::fmt::Display for SiteAudit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let t = &self.tree;
        write!(
            f,
            "manifest of {} (expires {}): {} listed files match; {} signed JSON snapshots verify; ",
            t.as_of, t.expires, t.listed, t.signed
        )?;
        match t.walked {
            Some(n) => write!(f, "no unlisted files ({n} files walked outside log/); ")?,
            None => write!(
                f,
                "unlisted files NOT checked (HTTP offers no listing; check a copy for that); "
            )?,
        }
        let l = &self.log;
        write!(
            f,
            "log {} size {} root {} ({} files checked; {} vow chains, {} entries verified)",
            l.origin, l.size, l.root, l.files, l.vows, l.entries
        )?;
        if let Some(n) = self.older_partials {
            write!(f, "; {n} older partial tiles consistent")?;
        }
        // The second line: the throughput of each part.
        write!(
            f,
            "\nverified {}, {}; {} in all{}",
            throughput(t.listed as u64 + 1, "files", t.run.elapsed),
            throughput(l.size, "entries", l.run.elapsed),
            crate::progress::duration_text(self.run.elapsed),
            peak_text(self.run.peak_memory)
        )
    }
}

/// The current time, unix seconds.
fn now() -> Result<u64, Error> {
    Ok(std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_err(Error::Clock)?
        .as_secs())
}

/// Check the tree at `location` (a directory or an `http(s)://` base URL) against `pubkey`
/// (a C2SP vkey, or the base64 key: then the log, which needs the vkey, fails), as of the
/// current time.
pub fn verify_site_at(location: &str, pubkey: &str) -> Result<SiteAudit, Error> {
    let now = now()?;
    let base = location.trim_end_matches('/');
    if is_url(base) {
        verify_site_url(base, pubkey, now)
    } else {
        verify_site_dir(Path::new(base), pubkey, now)
    }
}

/// Check the tree at `location` as [`verify_site_at`] does, allowing for a tree that is being
/// written while it is read (a live site directory, or a live origin): after a failure, wait
/// up to `settle` for `manifest.json` to change (the writer re-signs it about a second after
/// a write), and check everything again against the newer manifest; at most `MAX_SETTLES`
/// times. A pass is always one whole check against one manifest; a tree whose manifest stays
/// the same for `settle` gets the failure it has. `settle` zero is [`verify_site_at`].
pub fn verify_site_settled(
    location: &str,
    pubkey: &str,
    settle: std::time::Duration,
) -> Result<SiteAudit, Error> {
    let base = location.trim_end_matches('/');
    // The manifest's SHA-256, read as a stream (a manifest may be large).
    let manifest = || -> Option<[u8; 32]> {
        let files = crate::files::open(base).ok()?;
        let mut reader = files.reader("manifest.json").ok()?;
        let mut hasher = Sha256::new();
        std::io::copy(&mut reader, &mut hasher).ok()?;
        Some(hasher.finalize().into())
    };
    let mut settles = 0;
    loop {
        let before = manifest();
        let err = match verify_site_at(base, pubkey) {
            Ok(a) => return Ok(a),
            Err(e) => e,
        };
        if settles >= MAX_SETTLES || settle.is_zero() {
            return Err(err);
        }
        let deadline = std::time::Instant::now() + settle;
        while manifest() == before {
            if std::time::Instant::now() >= deadline {
                return Err(err);
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        settles += 1;
    }
}

/// How many newer manifests [`verify_site_settled`] checks against before it gives up.
pub const MAX_SETTLES: usize = 5;

/// Check a copy of the tree in the directory `dir` (all six steps) at `now` (unix seconds).
pub fn verify_site_dir(dir: &Path, pubkey: &str, now: u64) -> Result<SiteAudit, Error> {
    let start = Instant::now();
    if !dir.is_dir() {
        return Err(Error::NotADirectory(dir.display().to_string()));
    }
    let tree = verify_tree(dir, Some(dir), pubkey, now)?;
    let log_dir = dir.join("log");
    let log = verify_log(log_dir.as_path(), pubkey).map_err(|e| Error::Log(Box::new(e)))?;
    let older_partials = Some(check_log_dir(&log_dir, log.size)?);
    Ok(SiteAudit {
        tree,
        log,
        older_partials,
        run: Run::since(start),
    })
}

/// Check the tree served at the base URL `base` at `now` (unix seconds): steps 1, 2, 4 and 5
/// (HTTP offers no listing for steps 3 and 6).
#[cfg(feature = "http")]
pub fn verify_site_url(base: &str, pubkey: &str, now: u64) -> Result<SiteAudit, Error> {
    use crate::files::HttpFiles;
    let start = Instant::now();
    let base = base.trim_end_matches('/');
    let tree = verify_tree(&HttpFiles::new(base), None, pubkey, now)?;
    let log = verify_log(&HttpFiles::new(&format!("{base}/log")), pubkey)
        .map_err(|e| Error::Log(Box::new(e)))?;
    Ok(SiteAudit {
        tree,
        log,
        older_partials: None,
        run: Run::since(start),
    })
}

/// Without the `http` feature, a URL cannot be read.
#[cfg(not(feature = "http"))]
pub fn verify_site_url(base: &str, _pubkey: &str, _now: u64) -> Result<SiteAudit, Error> {
    Err(Error::NoHttp {
        url: base.to_owned(),
    })
}

/// Step 6: walk the log directory `log` of a log audited at `size`. Every file must be the
/// checkpoint, a tile or bundle of that size (which the audit read), or an older partial tile
/// or bundle that is a byte prefix of the current one at its position (and, for a bundle,
/// holds exactly its width of entries). Returns how many older partials were checked.
pub fn check_log_dir(log: &Path, size: u64) -> Result<usize, Error> {
    // The width tile `index` of `level` has at `size`, if the log serves it.
    let current = |level: u8, index: u64| -> Option<u16> {
        let count = stored_hash_count(level, size);
        let first = index.checked_mul(u64::from(TILE_WIDTH))?;
        let width = count.saturating_sub(first).min(u64::from(TILE_WIDTH));
        (width > 0).then_some(width as u16)
    };
    let mut older = 0usize;
    let mut progress = Progress::start("log files", "files", None);
    for entry in walkdir::WalkDir::new(log).min_depth(1) {
        progress.add(1);
        let entry = entry.map_err(|e| walk_error(log, e))?;
        let rel = relative(log, entry.path())?;
        let shown = format!("log/{rel}");
        let problem = |problem| Error::Mirror {
            path: shown.clone(),
            problem,
        };
        if rel.split('/').any(|s| s.starts_with('.')) {
            return Err(problem(MirrorProblem::LogDotfile));
        }
        let ft = entry.file_type();
        if ft.is_dir() {
            continue;
        }
        if !ft.is_file() {
            return Err(problem(MirrorProblem::NotRegular));
        }
        if rel == "checkpoint" {
            continue;
        }
        // (current file, entry count when a bundle) of the position `rel` names.
        let (now_rel, width, bundle) = if let Some((index, width)) = parse_entries_path(&rel) {
            let w = current(0, index);
            (w.map(|w| entries_path(index, w)), width, true)
        } else if let Some(t) = parse_tile_path(&rel) {
            let w = current(t.level, t.index);
            (w.map(|w| tile_path(t.level, t.index, w)), t.width, false)
        } else {
            return Err(problem(MirrorProblem::NotALogFile));
        };
        let Some(now_rel) = now_rel else {
            return Err(problem(MirrorProblem::BeyondSize(size)));
        };
        if now_rel == rel {
            continue; // Read and checked by the log audit.
        }
        let stale = std::fs::read(entry.path()).map_err(|source| Error::Read {
            path: shown.clone(),
            source,
        })?;
        let full = std::fs::read(log.join(&now_rel)).map_err(|source| Error::Read {
            path: format!("log/{now_rel}"),
            source,
        })?;
        let fits = if bundle {
            decode_bundle(&stale).is_ok_and(|e| e.len() == usize::from(width))
        } else {
            stale.len() == usize::from(width) * 32
        };
        if !fits || !full.starts_with(&stale) {
            return Err(problem(MirrorProblem::NotAPrefix { current: now_rel }));
        }
        older += 1;
    }
    Ok(older)
}

fn walk_error(dir: &Path, e: impl std::error::Error + Send + Sync + 'static) -> Error {
    Error::Walk {
        dir: dir.display().to_string(),
        source: Box::new(e),
    }
}

/// `path` relative to `root`, with `/` separators; an error when it is not UTF-8.
fn relative(root: &Path, path: &Path) -> Result<String, Error> {
    let rel = path.strip_prefix(root).map_err(|e| walk_error(root, e))?;
    Ok(rel
        .to_str()
        .ok_or_else(|| Error::Mirror {
            path: path.display().to_string(),
            problem: MirrorProblem::NameNotUtf8,
        })?
        .replace(std::path::MAIN_SEPARATOR, "/"))
}

/// Steps 1 to 4 over the files `files` yields; `walk` is the directory to list for step 3
/// (`None` when there is no listing). `now` is unix seconds.
pub fn verify_tree<F: Files + ?Sized>(
    files: &F,
    walk: Option<&Path>,
    pubkey: &str,
    now: u64,
) -> Result<TreeAudit, Error> {
    let start = Instant::now();
    let pinned = pinned_key(pubkey)?;

    // 1. The manifest, read as a stream.
    let manifest = read_streamed(files)?;
    manifest::verify(&manifest, &pinned).map_err(|source| Error::Signature {
        path: "manifest.json".into(),
        source,
    })?;
    let (as_of, expires, listed) = read_manifest(manifest, now).map_err(Error::Manifest)?;

    // 2. Every listed file, by length and hash. The signature of each JSON file (step 4) is
    // checked from the same read; its failure is reported after step 3.
    let mut signed = 1usize;
    let mut unsigned: Option<Error> = None;
    let mut progress = Progress::start("files", "files", Some(listed.len() as u64));
    let mut buf = vec![0u8; 1 << 16];
    for f in &listed {
        let path = &*f.path;
        let json = path == NOSTR_PROFILE || path.ends_with(".json");
        let (len, sha, bytes) = read_hashed(files, path, json.then_some(f.len), &mut buf)?;
        if len != f.len {
            return Err(Error::Length {
                path: path.to_owned(),
                len,
                listed: f.len,
            });
        }
        if sha != f.sha256 {
            return Err(Error::Hash {
                path: path.to_owned(),
                sha256: hex::encode(sha),
                listed: hex::encode(f.sha256),
            });
        }
        let checked = if path == NOSTR_PROFILE {
            nostr_profile(path, &bytes)
        } else if json {
            signed_json(path, &bytes, &pinned).map(|_| ())
        } else {
            Ok(())
        };
        match checked {
            Ok(()) if json => signed += 1,
            Ok(()) => {}
            Err(e) => {
                unsigned.get_or_insert(e);
            }
        }
        progress.add(1);
    }
    drop(progress);

    // 3. Nothing unlisted (a directory only).
    let walked = match walk {
        Some(dir) => Some(check_listing(dir, &listed)?),
        None => None,
    };

    // 4. Every JSON file is signed: after step 3, every JSON file outside `log/` is listed.
    if let Some(e) = unsigned {
        return Err(e);
    }
    Ok(TreeAudit {
        as_of,
        expires,
        listed: listed.len(),
        signed,
        walked,
        run: Run::since(start),
    })
}

/// Read `manifest.json` from `files` as a stream (its listed files counted on a terminal).
fn read_streamed<F: Files + ?Sized>(files: &F) -> Result<Streamed, Error> {
    const PATH: &str = "manifest.json";
    let mut progress = Progress::start("manifest", "files", None);
    let reader = files.reader(PATH)?;
    manifest::read(reader, &mut progress).map_err(|e| match e {
        ReadError::Json(source) if source.is_io() => Error::Read {
            path: PATH.into(),
            source: source.into(),
        },
        ReadError::Json(source) => Error::NotJson {
            path: PATH.into(),
            source,
        },
        ReadError::NotAnObject => Error::Signature {
            path: PATH.into(),
            source: VerifyError::NotAnObject,
        },
    })
}

/// Read the file at `rel` through `buf`, hashing it as it comes: its length, its SHA-256, and,
/// when `keep` gives its listed length, its bytes (those past that length are not kept: the
/// length check fails anyway).
fn read_hashed<F: Files + ?Sized>(
    files: &F,
    rel: &str,
    keep: Option<u64>,
    buf: &mut [u8],
) -> Result<(u64, [u8; 32], Vec<u8>), Error> {
    let fail = |source| Error::Read {
        path: rel.to_owned(),
        source,
    };
    let mut reader = files.reader(rel)?;
    let mut hasher = Sha256::new();
    let cap = keep.map_or(0, |n| usize::try_from(n).unwrap_or(0).min(1 << 24));
    let mut kept = Vec::with_capacity(cap);
    let mut len = 0u64;
    loop {
        let n = match reader.read(buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(fail(e)),
        };
        hasher.update(&buf[..n]);
        len += n as u64;
        if keep.is_some_and(|listed| len <= listed) {
            kept.extend_from_slice(&buf[..n]);
        }
    }
    Ok((len, hasher.finalize().into(), kept))
}

/// One file a manifest lists.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Listed {
    path: Box<str>,
    sha256: [u8; 32],
    len: u64,
}

/// A manifest's file list, sorted by path in RFC 8785 order (UTF-16 code units), one row a
/// path.
type Listing = Vec<Listed>;

/// The row of `path` in `listing`, if listed.
fn position(listing: &Listing, path: &str) -> Option<usize> {
    listing.binary_search_by(|f| utf16_cmp(&f.path, path)).ok()
}

/// The path of the service's Nostr profile, the one JSON file of the tree that is a Nostr event
/// rather than a signed snapshot.
pub const NOSTR_PROFILE: &str = "hive/profile.json";

/// Check `bytes` as the service's Nostr profile: exactly the members of a NIP-01 event, kind 0,
/// its id the hash of its fields and its BIP-340 signature valid (no wallet library needed).
fn nostr_profile(path: &str, bytes: &[u8]) -> Result<(), Error> {
    let fail = |reason: String| Error::NostrEvent {
        path: path.to_owned(),
        reason,
    };
    let ev: conduct_core::nostr::Event =
        serde_json::from_slice(bytes).map_err(|e| fail(e.to_string()))?;
    if ev.kind != conduct_core::nostr::KIND_METADATA {
        return Err(fail(format!("kind {}, not 0", ev.kind)));
    }
    ev.verify().map_err(|e| fail(e.to_string()))
}

/// Parse `bytes` as a JSON object and verify its signature under `pinned` (`x-signature` for
/// the OpenAPI document, see [`verify_snapshot`]).
fn signed_json(path: &str, bytes: &[u8], pinned: &PinnedKey) -> Result<Value, Error> {
    let doc: Value = serde_json::from_slice(bytes).map_err(|source| Error::NotJson {
        path: path.to_owned(),
        source,
    })?;
    verify_snapshot(&doc, pinned).map_err(|source| Error::Signature {
        path: path.to_owned(),
        source,
    })?;
    Ok(doc)
}

/// Check a verified manifest's type and expiry at `now`; returns its `as_of`, `expires` and
/// file list.
fn read_manifest(streamed: Streamed, now: u64) -> Result<(String, String, Listing), ManifestError> {
    let m = &streamed.members;
    let ty = m.get("type").and_then(Value::as_str);
    if ty != Some(MANIFEST_TYPE) {
        return Err(ManifestError::Type(ty.map(str::to_owned)));
    }
    let time = |field: &'static str| -> Result<(String, u64), ManifestError> {
        let s = m
            .get(field)
            .and_then(Value::as_str)
            .ok_or(ManifestError::NoTime(field))?;
        let t = parse_rfc3339(s).ok_or_else(|| ManifestError::BadTime {
            field,
            value: s.to_owned(),
        })?;
        Ok((s.to_owned(), t))
    };
    let (as_of, signed_at) = time("as_of")?;
    let (expires, until) = time("expires")?;
    if now >= until {
        return Err(ManifestError::Expired {
            as_of,
            expires,
            signed_at,
            until,
            now,
        });
    }
    let rows = streamed.files.ok_or(ManifestError::NoFiles)?;
    let mut out = Listing::with_capacity(rows.len());
    for (path, entry) in rows {
        check_path(&path)?;
        let (sha256, len) = match entry {
            Entry::Compact { sha256, len } => (sha256, len),
            Entry::Odd(v) => {
                let sha = v
                    .get("sha256")
                    .and_then(Value::as_str)
                    .and_then(manifest::sha256_hex)
                    .ok_or_else(|| ManifestError::NoSha256(path.to_string()))?;
                let len = v
                    .get("len")
                    .and_then(Value::as_u64)
                    .ok_or_else(|| ManifestError::NoLen(path.to_string()))?;
                (sha, len)
            }
        };
        out.push(Listed { path, sha256, len });
    }
    Ok((as_of, expires, out))
}

/// A listed path must be a plain relative path inside the tree, outside `log/`, and not the
/// manifest itself.
fn check_path(path: &str) -> Result<(), ManifestError> {
    let bad = path.is_empty()
        || path == "manifest.json"
        || path.starts_with("log/")
        || path
            .split('/')
            .any(|s| s.is_empty() || s == "." || s == ".." || s.contains(['\\', '\0']));
    if bad {
        return Err(ManifestError::BadPath(path.to_owned()));
    }
    Ok(())
}

/// A path segment that makes a dotfile (only `.well-known` is allowed, as the server allows).
fn is_dot_segment(seg: &str) -> bool {
    seg.starts_with('.') && seg != ".well-known"
}

/// Walk `dir` outside `log/`: every file but the manifest must be listed, and no path may hold
/// a dotfile segment. Returns how many files were walked.
fn check_listing(dir: &Path, listed: &Listing) -> Result<usize, Error> {
    let mirror = |path: String, problem| Error::Mirror { path, problem };
    // One flag a listed file: walked or not.
    let mut seen = vec![false; listed.len()];
    let mut walked = 0usize;
    let mut progress = Progress::start("walk", "files", Some(listed.len() as u64 + 1));
    let mut it = walkdir::WalkDir::new(dir).min_depth(1).into_iter();
    while let Some(entry) = it.next() {
        let entry = entry.map_err(|e| walk_error(dir, e))?;
        let rel = relative(dir, entry.path())?;
        let ft = entry.file_type();
        if ft.is_dir() {
            if rel == "log" {
                it.skip_current_dir();
            } else if rel.split('/').any(is_dot_segment) {
                return Err(mirror(format!("{rel}/"), MirrorProblem::DotDirectory));
            }
            continue;
        }
        if rel.split('/').any(is_dot_segment) {
            return Err(mirror(rel, MirrorProblem::Dotfile));
        }
        if !ft.is_file() {
            return Err(mirror(rel, MirrorProblem::NotRegular));
        }
        walked += 1;
        progress.add(1);
        if rel == "manifest.json" {
            continue;
        }
        let Some(i) = position(listed, &rel) else {
            return Err(mirror(rel, MirrorProblem::Unlisted));
        };
        seen[i] = true;
    }
    // Step 2 read every listed file; a listed path that is not a plain file is caught here.
    if let Some(i) = seen.iter().position(|s| !s) {
        return Err(mirror(listed[i].path.to_string(), MirrorProblem::Missing));
    }
    Ok(walked)
}

#[cfg(test)]
mod tests {
    use super::*;
    use conduct_core::signing::ServiceKey;
    use conduct_core::time::rfc3339;
    use serde_json::{json, Map};

    const NOW: u64 = 1_800_000_000;

    fn key() -> ServiceKey {
        ServiceKey::from_seed(&[7u8; 32], "example.org/log")
    }

    fn signed(k: &ServiceKey, v: Value) -> Vec<u8> {
        let mut m: Map<String, Value> = match v {
            Value::Object(m) => m,
            _ => panic!("an object"),
        };
        m.insert("scope".into(), conduct_core::scope::scope_value());
        k.sign_object(&mut m).expect("sign");
        serde_json::to_vec(&Value::Object(m)).expect("bytes")
    }

    /// Write `files` under `dir` and a manifest over them signed by `k`, valid `as_of..expires`.
    fn tree(dir: &Path, k: &ServiceKey, files: &[(&str, Vec<u8>)], as_of: u64, expires: u64) {
        let mut listed = Map::new();
        for (p, b) in files {
            let path = dir.join(p);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(&path, b).expect("write");
            listed.insert(
                (*p).to_owned(),
                json!({"sha256": hex::encode(Sha256::digest(b)), "len": b.len()}),
            );
        }
        let m = json!({
            "type": MANIFEST_TYPE,
            "version": as_of,
            "as_of": rfc3339(as_of),
            "expires": rfc3339(expires),
            "files": listed,
        });
        std::fs::write(dir.join("manifest.json"), signed(k, m)).expect("manifest");
    }

    fn sample(dir: &Path, k: &ServiceKey) {
        let files = vec![
            ("index.json", signed(k, json!({"type": "conduct.index/v1"}))),
            ("index.html", b"<p>hi</p>".to_vec()),
            (
                ".well-known/x402.json",
                signed(k, json!({"type": "conduct.x402/v1"})),
            ),
            ("vow/a.json", signed(k, json!({"type": "conduct.vow/v1"}))),
        ];
        tree(dir, k, &files, NOW - 3600, NOW + 3600);
        // Log files are not the manifest's business.
        std::fs::create_dir_all(dir.join("log/tile")).expect("mkdir");
        std::fs::write(dir.join("log/checkpoint"), b"x").expect("write");
    }

    fn check(dir: &Path, k: &ServiceKey, now: u64) -> Result<TreeAudit, String> {
        verify_tree(dir, Some(dir), &k.vkey(), now).map_err(|e| e.to_string())
    }

    #[test]
    fn a_good_tree_verifies() {
        let d = tempfile::tempdir().expect("tempdir");
        let k = key();
        sample(d.path(), &k);
        let a = check(d.path(), &k, NOW).expect("verifies");
        assert_eq!(a.listed, 4);
        assert_eq!(a.signed, 4); // three listed JSON files and the manifest
        assert_eq!(a.walked, Some(5));
        // The base64 key works too, and without a directory step 3 is skipped.
        let b64 = verify_tree(d.path(), None, &k.public_b64(), NOW).expect("verifies");
        assert_eq!(b64.walked, None);
    }

    #[test]
    fn another_key_fails() {
        let d = tempfile::tempdir().expect("tempdir");
        sample(d.path(), &key());
        let other = ServiceKey::from_seed(&[8u8; 32], "example.org/log");
        let e = check(d.path(), &other, NOW).expect_err("wrong key");
        assert!(e.starts_with("manifest.json: "), "{e}");
        let e = verify_tree(d.path(), None, "not a key", NOW).expect_err("bad key");
        assert!(matches!(e, Error::PinnedKey(_)), "{e}");
    }

    #[test]
    fn an_expired_manifest_fails_and_says_how_old() {
        let d = tempfile::tempdir().expect("tempdir");
        let k = key();
        sample(d.path(), &k);
        let e = check(d.path(), &k, NOW + 3 * 86_400).expect_err("expired");
        assert!(e.contains("manifest.json: expired 2d 23h ago"), "{e}");
        assert!(e.contains("signed 3d 1h ago"), "{e}");
        // Exactly at `expires` counts as expired.
        assert!(check(d.path(), &k, NOW + 3600).is_err());
        assert!(check(d.path(), &k, NOW + 3599).is_ok());
    }

    #[test]
    fn a_manifest_of_another_type_fails() {
        let d = tempfile::tempdir().expect("tempdir");
        let k = key();
        let m = json!({"type": "conduct.index/v1", "as_of": rfc3339(NOW),
                       "expires": rfc3339(NOW + 60), "files": {}});
        std::fs::write(d.path().join("manifest.json"), signed(&k, m)).expect("write");
        let e = check(d.path(), &k, NOW).expect_err("type");
        assert!(e.contains("expected \"conduct.manifest/v1\""), "{e}");
    }

    #[test]
    fn a_changed_missing_extra_or_dot_file_fails() {
        let k = key();
        let run = |f: &dyn Fn(&Path)| -> String {
            let d = tempfile::tempdir().expect("tempdir");
            sample(d.path(), &k);
            f(d.path());
            check(d.path(), &k, NOW).expect_err("must fail")
        };
        let e = run(&|d| std::fs::write(d.join("index.html"), b"<p>hI</p>").expect("w"));
        assert!(e.starts_with("index.html: sha256 "), "{e}");
        let e = run(&|d| std::fs::write(d.join("index.html"), b"<p>h</p>").expect("w"));
        assert!(e.starts_with("index.html: 8 bytes"), "{e}");
        let e = run(&|d| std::fs::remove_file(d.join("vow/a.json")).expect("rm"));
        assert!(e.starts_with("vow/a.json: "), "{e}");
        let e = run(&|d| std::fs::write(d.join("vow/b.json"), b"{}").expect("w"));
        assert!(e.starts_with("vow/b.json: not listed"), "{e}");
        let e = run(&|d| std::fs::write(d.join("vow/.tmp"), b"x").expect("w"));
        assert!(e.starts_with("vow/.tmp: a dotfile"), "{e}");
        let e = run(&|d| std::fs::create_dir(d.join(".git")).expect("mkdir"));
        assert!(e.starts_with(".git/: a dot directory"), "{e}");
        // Nothing under log/ is walked (the log audit covers it).
        let d = tempfile::tempdir().expect("tempdir");
        sample(d.path(), &k);
        std::fs::write(d.path().join("log/tile/extra"), b"x").expect("w");
        assert!(check(d.path(), &k, NOW).is_ok());
    }

    #[test]
    fn a_listed_json_file_must_be_signed() {
        let d = tempfile::tempdir().expect("tempdir");
        let k = key();
        let files = vec![("a.json", b"{\"type\":\"x\"}".to_vec())];
        tree(d.path(), &k, &files, NOW, NOW + 60);
        let e = check(d.path(), &k, NOW).expect_err("unsigned");
        assert_eq!(e, "a.json: no signature member");
        // Signed by another key.
        let other = ServiceKey::from_seed(&[9u8; 32], "example.org/log");
        let files = vec![("a.json", signed(&other, json!({"type": "x"})))];
        tree(d.path(), &k, &files, NOW, NOW + 60);
        let e = check(d.path(), &k, NOW).expect_err("other key");
        assert!(e.starts_with("a.json: key_id"), "{e}");
    }

    #[test]
    fn the_nostr_profile_is_checked_as_a_nostr_event() {
        let d = tempfile::tempdir().expect("tempdir");
        let k = key();
        let ev =
            conduct_core::nostr::Event::sign(&[3; 32], 1, 0, Vec::new(), "{}".into(), &[0; 32])
                .expect("sign");
        let good = ev.to_value().to_string().into_bytes();
        tree(d.path(), &k, &[(NOSTR_PROFILE, good)], NOW, NOW + 60);
        assert_eq!(check(d.path(), &k, NOW).expect("verifies").signed, 2);
        // A changed content, another kind, an added member: each refused.
        let mut bad = ev.clone();
        bad.content = "{ }".into();
        let mut other_kind = ev.clone();
        other_kind.kind = 1;
        let mut extra = ev.to_value();
        extra["key_id"] = "x".into();
        for b in [bad.to_value(), other_kind.to_value(), extra] {
            tree(
                d.path(),
                &k,
                &[(NOSTR_PROFILE, b.to_string().into_bytes())],
                NOW,
                NOW + 60,
            );
            let e = check(d.path(), &k, NOW).expect_err("refused");
            assert!(
                e.starts_with("hive/profile.json: not a verified Nostr"),
                "{e}"
            );
        }
        // Anywhere else, an event is an unsigned JSON file.
        let files = vec![("hive/other.json", ev.to_value().to_string().into_bytes())];
        tree(d.path(), &k, &files, NOW, NOW + 60);
        std::fs::remove_file(d.path().join(NOSTR_PROFILE)).expect("rm");
        assert!(check(d.path(), &k, NOW).is_err());
    }

    #[test]
    fn listed_paths_must_stay_inside_the_tree() {
        for p in [
            "../x",
            "/etc/passwd",
            "a//b",
            "log/checkpoint",
            "manifest.json",
            "a/./b",
        ] {
            assert!(check_path(p).is_err(), "{p}");
        }
        for p in ["index.json", ".well-known/x402.json", "vow/a/chain/0.json"] {
            assert!(check_path(p).is_ok(), "{p}");
        }
    }
}
