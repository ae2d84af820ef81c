//! Check a mirror of the signed tree (an rsync copy, or a base URL serving it) offline against
//! the pinned service key (`conduct verify-site DIR|URL`; library/MIRRORS.md).
//!
//! [`verify_site_at`] checks, in order, and stops at the first failure, naming the path:
//!
//! 1. `manifest.json`, the root of the manifest's trie of bins, verifies under the pinned key,
//!    has type `conduct.manifest/v2` and has not expired;
//! 2. every bin, depth first, is exactly the one its parent names (length and SHA-256),
//!    verifies, has type `conduct.manifest-bin/v1` and the prefix its path names, lists as many
//!    files as its parent says, and lists either files whose key starts with its prefix or its
//!    children, one hex digit longer; every listed file is there with exactly the listed `len`
//!    and `sha256`;
//! 3. (directory only; HTTP offers no listing) the files outside `log/` and the manifest are
//!    exactly as many as the trie lists (each listed one was found, and a path is listed at most
//!    once, so none is unlisted; when the counts differ, the file at fault is found and named),
//!    every file of the manifest is a bin the trie names, and there are no dotfiles but under
//!    `.well-known/`;
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
//! Memory stays bounded whatever the size of the tree: one path of bins is held at a time (each
//! read as `crate::manifest` reads it), never the file listing; each file is hashed as it is
//! read (a JSON file is held while its signature is checked); completeness is counted; and the
//! log is audited as [`crate::verify_log`] does. On a terminal, each step shows its progress on
//! standard error (the root says how many files the trie lists, so the files step has a total).

use std::path::Path;
use std::time::Instant;

use conduct_core::manifest::{bin_path, bin_prefix, is_manifest_path, BIN_DIR, BIN_TYPE, DIGITS};
use conduct_core::signing::{PinnedKey, VerifyError};
use conduct_core::time::parse_rfc3339;
use conduct_core::tlog::tiles::{
    decode_bundle, entries_path, parse_entries_path, parse_tile_path, stored_hash_count, tile_path,
    TILE_WIDTH,
};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::error::{BinProblem, ManifestError, MirrorProblem};
use crate::files::{is_url, Files};
use crate::hashed::{read_hashed, signed_json};
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
    /// The manifest's bins, the root included, each the one its parent names.
    pub bins: usize,
    /// Signed JSON snapshots that verified, the manifest's bins included.
    pub signed: usize,
    /// Vow chain pages the listed chain heads reach, each checked through its head (the
    /// manifest does not list them).
    pub chain_pages: usize,
    /// Files found by walking the directory (outside `log/`, the manifest's included); `None`
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
            "manifest of {} (expires {}): {} listed files in {} bins match; {} vow chain \
             pages hold; {} signed JSON snapshots verify; ",
            t.as_of, t.expires, t.listed, t.bins, t.chain_pages, t.signed
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
            throughput((t.listed + t.bins) as u64, "files", t.run.elapsed),
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
    let manifest = || {
        crate::files::open(base)
            .ok()
            .and_then(|f| manifest_sha256(f.as_ref()))
    };
    settled(&manifest, &|| verify_site_at(base, pubkey), settle)
}

/// Check a tree read through `site`, with its log read through `log`, as of the current time:
/// steps 1, 2, 4 and 5 (a [`Files`] offers no listing for steps 3 and 6), allowing for a tree
/// being written while it is read as [`verify_site_settled`] does. For a tree in a store of
/// your own (a bucket read with its credentials, say).
pub fn verify_site_files<S: Files + ?Sized, L: Files + ?Sized>(
    site: &S,
    log: &L,
    pubkey: &str,
    settle: std::time::Duration,
) -> Result<SiteAudit, Error> {
    let check = || audit_files(site, log, pubkey, now()?);
    settled(&|| manifest_sha256(site), &check, settle)
}

/// Steps 1, 2, 4 and 5 over `site` and its log `log` at `now` (unix seconds).
fn audit_files<S: Files + ?Sized, L: Files + ?Sized>(
    site: &S,
    log: &L,
    pubkey: &str,
    now: u64,
) -> Result<SiteAudit, Error> {
    let start = Instant::now();
    let tree = verify_tree(site, None, pubkey, now)?;
    let log = verify_log(log, pubkey).map_err(|e| Error::Log(Box::new(e)))?;
    Ok(SiteAudit {
        tree,
        log,
        older_partials: None,
        run: Run::since(start),
    })
}

/// The SHA-256 of `manifest.json` in `files`, read as a stream (a manifest may be large).
fn manifest_sha256<F: Files + ?Sized>(files: &F) -> Option<[u8; 32]> {
    let mut reader = files.reader("manifest.json").ok()?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut reader, &mut hasher).ok()?;
    Some(hasher.finalize().into())
}

/// `check`, and after a failure, up to [`MAX_SETTLES`] times, `check` again once `manifest`
/// (the manifest's hash) changes within `settle`.
fn settled(
    manifest: &dyn Fn() -> Option<[u8; 32]>,
    check: &dyn Fn() -> Result<SiteAudit, Error>,
    settle: std::time::Duration,
) -> Result<SiteAudit, Error> {
    let mut settles = 0;
    loop {
        let before = manifest();
        let err = match check() {
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
    let base = base.trim_end_matches('/');
    audit_files(
        &HttpFiles::new(base),
        &HttpFiles::new(&format!("{base}/log")),
        pubkey,
        now,
    )
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
    let mut progress = Progress::start("older tiles", "files", None);
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
///
/// The manifest is a trie of bins (library/MIRRORS.md, "The manifest"): the root is read
/// first, then each bin depth first, each checked against what its parent says before what it
/// lists is trusted, and each listed file as its leaf comes. One path of bins is held at a
/// time, never the listing; completeness is proven by counting (step 3).
pub fn verify_tree<F: Files + ?Sized>(
    files: &F,
    walk: Option<&Path>,
    pubkey: &str,
    now: u64,
) -> Result<TreeAudit, Error> {
    let start = Instant::now();
    let pinned = pinned_key(pubkey)?;
    let mut buf = vec![0u8; 1 << 16];

    // 1. The root: signed, of this format, not expired.
    let root = read_bin(files, "", None, &pinned, &mut buf)?;
    let (as_of, expires) = root_times(&root.members, now).map_err(Error::Manifest)?;
    let Body::Bins(children) = body("", root)? else {
        return Err(bin_error("", BinProblem::NoListing));
    };
    let total: u64 = children.iter().map(|(_, n)| n.files).sum();

    // 2. Every bin, depth first, and every file a leaf lists, by length and hash. The signature
    // of each listed JSON file (step 4) is checked from the same read; its failure is reported
    // after step 3.
    let mut progress = Progress::start("hashing", "files", Some(total));
    let mut stack = children;
    stack.reverse();
    let (mut listed, mut bins, mut signed) = (0u64, 1u64, 1usize);
    // Chain pages listed (a tree mid-upgrade), and reached from the listed heads.
    let (mut listed_pages, mut reached) = (0u64, 0u64);
    let mut unsigned: Option<Error> = None;
    while let Some((prefix, named)) = stack.pop() {
        let bin = read_bin(files, &prefix, Some(&named), &pinned, &mut buf)?;
        bins += 1;
        signed += 1;
        match body(&prefix, bin)? {
            Body::Files(rows) => {
                count(&prefix, rows.len() as u64, named.files)?;
                for (path, sha256, len) in rows {
                    let key = conduct_core::manifest::key(&path);
                    if !key.starts_with(prefix.as_str()) {
                        return Err(bin_error(&prefix, BinProblem::WrongBin { path, key }));
                    }
                    match check_file(files, &path, sha256, len, &pinned, &mut buf)? {
                        Ok(true) => signed += 1,
                        Ok(false) => {}
                        Err(e) => {
                            unsigned.get_or_insert(e);
                        }
                    }
                    if let Some(id) = conduct_core::manifest::chain_head(&path) {
                        let n = crate::chain_pages::walk(files, &path, id, &pinned, &mut buf)?;
                        reached += n;
                        signed += n as usize;
                    }
                    listed_pages += u64::from(!conduct_core::manifest::listed(&path));
                    listed += 1;
                    progress.add(1);
                }
            }
            Body::Bins(kids) => {
                count(
                    &prefix,
                    kids.iter().map(|(_, n)| n.files).sum(),
                    named.files,
                )?;
                stack.extend(kids.into_iter().rev());
            }
        }
    }
    drop(progress);

    // 3. Nothing unlisted (a directory only).
    let walked = match walk {
        Some(dir) => Some(check_listing(
            dir,
            Counts {
                listed: listed - listed_pages,
                bins,
                pages: reached,
            },
        )?),
        None => None,
    };

    // 4. Every JSON file is signed: after step 3, every JSON file outside `log/` is listed.
    if let Some(e) = unsigned {
        return Err(e);
    }
    Ok(TreeAudit {
        as_of,
        expires,
        listed: listed as usize,
        bins: bins as usize,
        signed,
        chain_pages: reached as usize,
        walked,
        run: Run::since(start),
    })
}

/// What a parent says of a child bin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Named {
    files: u64,
    len: u64,
    sha256: [u8; 32],
}

/// What a bin lists: files as (path, SHA-256, length), or children as (prefix, what it says).
enum Body {
    Files(Vec<(String, [u8; 32], u64)>),
    Bins(Vec<(String, Named)>),
}

fn bin_error(prefix: &str, problem: BinProblem) -> Error {
    Error::Bin {
        path: bin_path(prefix),
        problem,
    }
}

/// A bin lists as many files as its parent says.
fn count(prefix: &str, found: u64, named: u64) -> Result<(), Error> {
    if found != named {
        return Err(bin_error(prefix, BinProblem::Count { found, named }));
    }
    Ok(())
}

/// The largest root read (it names at most 16 children).
const ROOT_MAX: u64 = 1 << 20;

/// Read the bin with `prefix` (`""`: the root): exactly the bytes its parent names (`named`),
/// then its signature under `pinned`, its type and its prefix.
fn read_bin<F: Files + ?Sized>(
    files: &F,
    prefix: &str,
    named: Option<&Named>,
    pinned: &PinnedKey,
    buf: &mut [u8],
) -> Result<Streamed, Error> {
    let path = bin_path(prefix);
    let (len, sha256, bytes) =
        read_hashed(files, &path, Some(named.map_or(ROOT_MAX, |n| n.len)), buf)?;
    match named {
        Some(n) if len != n.len => {
            return Err(Error::Length {
                path,
                len,
                listed: n.len,
            })
        }
        Some(n) if sha256 != n.sha256 => {
            return Err(Error::Hash {
                path,
                sha256: hex::encode(sha256),
                listed: hex::encode(n.sha256),
            })
        }
        None if len > ROOT_MAX => {
            return Err(Error::Length {
                path,
                len,
                listed: ROOT_MAX,
            })
        }
        _ => {}
    }
    let mut quiet = Progress::to(None, "bin", "files", None);
    let streamed = manifest::read(&bytes[..], &mut quiet).map_err(|e| match e {
        ReadError::Json(source) => Error::NotJson {
            path: path.clone(),
            source,
        },
        ReadError::NotAnObject => Error::Signature {
            path: path.clone(),
            source: VerifyError::NotAnObject,
        },
    })?;
    manifest::verify(&streamed, pinned).map_err(|source| Error::Signature {
        path: path.clone(),
        source,
    })?;
    if !prefix.is_empty() {
        let m = &streamed.members;
        let ty = m.get("type").and_then(Value::as_str);
        if ty != Some(BIN_TYPE) {
            return Err(bin_error(prefix, BinProblem::Type(ty.map(str::to_owned))));
        }
        let found = m.get("prefix").and_then(Value::as_str);
        if found != Some(prefix) {
            return Err(bin_error(
                prefix,
                BinProblem::Prefix {
                    found: found.map(str::to_owned),
                    expected: prefix.to_owned(),
                },
            ));
        }
    }
    Ok(streamed)
}

/// What the verified bin with `prefix` lists: exactly one of `files` (each entry
/// `{len, sha256}`, each path one a mirror may hold) and `bins` (each child one hex digit
/// longer, with `{files, len, sha256}`); the root lists `bins`.
fn body(prefix: &str, bin: Streamed) -> Result<Body, Error> {
    let fail = |problem| bin_error(prefix, problem);
    match (bin.files, bin.members.get("bins"), bin.members.get("files")) {
        (Some(rows), None, None) if !prefix.is_empty() => {
            let mut out = Vec::with_capacity(rows.len());
            for (path, entry) in rows {
                let path = path.into_string();
                if !is_tree_path(&path) {
                    return Err(fail(BinProblem::BadPath(path)));
                }
                let (sha, len) = match entry {
                    Entry::Compact { sha256, len } => (sha256, len),
                    Entry::Odd(v) => match (
                        v.get("sha256")
                            .and_then(Value::as_str)
                            .and_then(manifest::sha256_hex),
                        v.get("len").and_then(Value::as_u64),
                    ) {
                        (Some(s), Some(l)) if v.as_object().is_some_and(|o| o.len() == 2) => (s, l),
                        _ => return Err(fail(BinProblem::BadEntry(path))),
                    },
                };
                out.push((path, sha, len));
            }
            Ok(Body::Files(out))
        }
        (None, Some(Value::Object(children)), None) => {
            let mut out = Vec::with_capacity(children.len());
            for (name, v) in children {
                let child = bin_prefix(name)
                    .filter(|c| c.len() == prefix.len() + 1 && c.starts_with(prefix))
                    .ok_or_else(|| fail(BinProblem::NotAChild(name.clone())))?;
                let named = match (
                    v.get("files").and_then(Value::as_u64),
                    v.get("len").and_then(Value::as_u64),
                    v.get("sha256")
                        .and_then(Value::as_str)
                        .and_then(manifest::sha256_hex),
                ) {
                    (Some(files), Some(len), Some(sha256))
                        if v.as_object().is_some_and(|o| o.len() == 3) =>
                    {
                        Named { files, len, sha256 }
                    }
                    _ => return Err(fail(BinProblem::BadChild(name.clone()))),
                };
                out.push((child.to_owned(), named));
            }
            Ok(Body::Bins(out))
        }
        _ => Err(fail(BinProblem::NoListing)),
    }
}

/// Check one listed file: its length and SHA-256 (an error), then, for a JSON file, its
/// signature (or, for the Nostr profile, its event): `Ok(Ok(true))` when it is a signed file
/// that verifies, `Ok(Err(_))` when it does not (reported after step 3).
fn check_file<F: Files + ?Sized>(
    files: &F,
    path: &str,
    sha256: [u8; 32],
    listed: u64,
    pinned: &PinnedKey,
    buf: &mut [u8],
) -> Result<Result<bool, Error>, Error> {
    let json = path == NOSTR_PROFILE || path.ends_with(".json");
    let (len, sha, bytes) = match read_hashed(files, path, json.then_some(listed), buf) {
        Err(Error::Read { path, source }) if source.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::Mirror {
                path,
                problem: MirrorProblem::Missing,
            })
        }
        other => other?,
    };
    if len != listed {
        return Err(Error::Length {
            path: path.to_owned(),
            len,
            listed,
        });
    }
    if sha != sha256 {
        return Err(Error::Hash {
            path: path.to_owned(),
            sha256: hex::encode(sha),
            listed: hex::encode(sha256),
        });
    }
    Ok(if path == NOSTR_PROFILE {
        nostr_profile(path, &bytes).map(|()| true)
    } else if json {
        signed_json(path, &bytes, pinned).map(|_| true)
    } else {
        Ok(false)
    })
}

/// Check the root's type and expiry at `now`; returns its `as_of` and `expires`.
fn root_times(m: &Map<String, Value>, now: u64) -> Result<(String, String), ManifestError> {
    let ty = m.get("type").and_then(Value::as_str);
    if ty != Some(MANIFEST_TYPE) && ty != Some(conduct_core::manifest::V2_TYPE) {
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
    Ok((as_of, expires))
}

/// A listed path must be a plain relative path inside the tree, outside `log/` and the
/// manifest.
fn is_tree_path(path: &str) -> bool {
    !(path.is_empty()
        || is_manifest_path(path)
        || path.starts_with("log/")
        || path
            .split('/')
            .any(|s| s.is_empty() || s == "." || s == ".." || s.contains(['\\', '\0'])))
}

/// A path segment that makes a dotfile (only `.well-known` is allowed, as the server allows).
fn is_dot_segment(seg: &str) -> bool {
    seg.starts_with('.') && seg != ".well-known"
}

/// What step 2 found, for step 3 to count against.
struct Counts {
    /// Files listed, but the chain pages.
    listed: u64,
    /// Bins read, the root included.
    bins: u64,
    /// Chain pages the listed heads reach.
    pages: u64,
}

/// Step 3: walk `dir` outside `log/`. No path may hold a dotfile segment and every file must be
/// a plain file; every file of the manifest must be a bin's path, and they must be exactly as
/// many as the bins step 2 read; the chain pages exactly as many as the heads reach; the other
/// files exactly as many as the trie lists (but the chain pages it lists). Step 2 found every
/// listed file and every reached page, and a path is listed at most once (its key names one
/// leaf) and a page reached once (its head's vow and its number name it), so equal counts leave
/// no file unlisted; when a count differs, the file at fault is found and named. Returns how
/// many files were walked.
fn check_listing(dir: &Path, want: Counts) -> Result<usize, Error> {
    let Counts {
        listed,
        bins,
        pages,
    } = want;
    let mirror = |path: String, problem| Error::Mirror { path, problem };
    let (mut on_disk, mut bin_files, mut walked) = (0u64, 0u64, 0usize);
    let mut pages_on_disk = 0u64;
    let mut progress = Progress::start("walk", "files", Some(listed + bins));
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
        if is_manifest_path(&rel) {
            if bin_prefix(&rel).is_none() {
                return Err(Error::Bin {
                    path: rel,
                    problem: BinProblem::Unnamed,
                });
            }
            bin_files += 1;
        } else if conduct_core::manifest::listed(&rel) {
            on_disk += 1;
        } else {
            pages_on_disk += 1;
        }
    }
    drop(progress);
    if bin_files != bins {
        return Err(unnamed_bin(dir).unwrap_or(Error::Bin {
            path: BIN_DIR.to_owned() + "/",
            problem: BinProblem::Count {
                found: bin_files,
                named: bins,
            },
        }));
    }
    if on_disk != listed {
        return Err(unlisted(dir).unwrap_or(Error::Mirror {
            path: dir.display().to_string(),
            problem: MirrorProblem::Count { on_disk, listed },
        }));
    }
    if pages_on_disk != pages {
        return Err(stray_page(dir).unwrap_or(Error::Mirror {
            path: dir.display().to_string(),
            problem: MirrorProblem::PageCount {
                on_disk: pages_on_disk,
                reached: pages,
            },
        }));
    }
    Ok(walked)
}

/// A chain page on disk that no chain head reaches: its vow has no head, or a head of fewer
/// full pages (step 2 checked every listed head; one head is read at a time).
fn stray_page(dir: &Path) -> Option<Error> {
    let mut head: Option<(String, Option<u64>)> = None;
    let mut stray = None;
    let mut it = walkdir::WalkDir::new(dir.join("vow"))
        .min_depth(1)
        .into_iter();
    while let Some(Ok(entry)) = it.next() {
        let Ok(rel) = relative(dir, entry.path()) else {
            continue;
        };
        let Some((id, k)) = conduct_core::manifest::chain_page(&rel) else {
            continue;
        };
        if head.as_ref().is_none_or(|(v, _)| v != id) {
            let full = std::fs::read(dir.join(format!("vow/{id}/chain.json")))
                .ok()
                .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
                .and_then(|h| {
                    h["full_pages"]
                        .as_u64()
                        .or_else(|| h["pages"].as_array().map(|p| p.len() as u64))
                });
            head = Some((id.to_owned(), full));
        }
        if head
            .as_ref()
            .is_some_and(|(_, full)| full.is_none_or(|n| k >= n))
        {
            stray = Some(rel);
            break;
        }
    }
    stray.map(|path| Error::Mirror {
        path,
        problem: MirrorProblem::StrayPage,
    })
}

/// The bin at `prefix` in the directory `dir`, read again to find a file at fault (step 2
/// verified it); `None` when it cannot be read.
fn reread(dir: &Path, prefix: &str) -> Option<Body> {
    let bytes = std::fs::read(dir.join(bin_path(prefix))).ok()?;
    let mut quiet = Progress::to(None, "bin", "files", None);
    let streamed = manifest::read(&bytes[..], &mut quiet).ok()?;
    body(prefix, streamed).ok()
}

/// A file under `manifest/` that the trie does not name: some prefix of its name is not a
/// child of the bin above it, or is a leaf.
fn unnamed_bin(dir: &Path) -> Option<Error> {
    let mut children: std::collections::HashMap<String, Option<Vec<String>>> =
        std::collections::HashMap::new();
    for e in std::fs::read_dir(dir.join(BIN_DIR)).ok()?.flatten() {
        let rel = format!("{BIN_DIR}/{}", e.file_name().to_string_lossy());
        let Some(p) = bin_prefix(&rel) else {
            continue;
        };
        let named = (0..p.len()).all(|k| {
            if children.len() > 1 << 16 {
                children.clear();
            }
            let kids =
                children
                    .entry(p[..k].to_owned())
                    .or_insert_with(|| match reread(dir, &p[..k]) {
                        Some(Body::Bins(kids)) => Some(kids.into_iter().map(|(c, _)| c).collect()),
                        _ => None,
                    });
            kids.as_ref()
                .is_some_and(|kids| kids.iter().any(|c| c == &p[..k + 1]))
        });
        if !named {
            return Some(Error::Bin {
                path: rel,
                problem: BinProblem::Unnamed,
            });
        }
    }
    None
}

/// Call `f` with the path of every file of the tree in `dir` the manifest lists (outside `log/`
/// and the manifest, but the chain pages), until it says stop.
fn each_file(dir: &Path, mut f: impl FnMut(&str) -> bool) {
    let mut it = walkdir::WalkDir::new(dir).min_depth(1).into_iter();
    while let Some(Ok(entry)) = it.next() {
        let Ok(rel) = relative(dir, entry.path()) else {
            continue;
        };
        if entry.file_type().is_dir() {
            if rel == "log" || rel == BIN_DIR {
                it.skip_current_dir();
            }
            continue;
        }
        if !is_manifest_path(&rel) && conduct_core::manifest::listed(&rel) && !f(&rel) {
            return;
        }
    }
}

/// A file of the tree the trie does not list, found by counting the files on disk under each
/// bin's prefix against what the bin says, from the root down to the leaf they differ in (a
/// walk a level, in bounded memory).
fn unlisted(dir: &Path) -> Option<Error> {
    let found = |rel: String| Error::Mirror {
        path: rel,
        problem: MirrorProblem::Unlisted,
    };
    let mut prefix = String::new();
    loop {
        match reread(dir, &prefix)? {
            Body::Bins(kids) => {
                let mut counts = [0u64; 16];
                each_file(dir, |rel| {
                    let k = conduct_core::manifest::key(rel);
                    if let Some(rest) = k.strip_prefix(prefix.as_str()) {
                        let d = rest.as_bytes()[0];
                        if let Some(i) = DIGITS.iter().position(|&x| x == d) {
                            counts[i] += 1;
                        }
                    }
                    true
                });
                let differs = DIGITS.iter().zip(counts).find(|(d, n)| {
                    let child = format!("{prefix}{}", **d as char);
                    let named = kids.iter().find(|(c, _)| *c == child).map(|(_, n)| n.files);
                    named.unwrap_or(0) != *n
                })?;
                let child = format!("{prefix}{}", *differs.0 as char);
                if kids.iter().all(|(c, _)| *c != child) {
                    // No bin for these keys: each such file is unlisted.
                    let mut first = None;
                    each_file(dir, |rel| {
                        if conduct_core::manifest::key(rel).starts_with(&child) {
                            first = Some(rel.to_owned());
                        }
                        first.is_none()
                    });
                    return first.map(found);
                }
                prefix = child;
            }
            Body::Files(rows) => {
                let names: std::collections::HashSet<String> =
                    rows.into_iter().map(|(p, _, _)| p).collect();
                let mut first = None;
                each_file(dir, |rel| {
                    if conduct_core::manifest::key(rel).starts_with(prefix.as_str())
                        && !names.contains(rel)
                    {
                        first = Some(rel.to_owned());
                    }
                    first.is_none()
                });
                return first.map(found);
            }
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use conduct_core::manifest::key as file_key;
    use conduct_core::signing::ServiceKey;
    use conduct_core::time::rfc3339;
    use serde_json::json;

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

    /// A trie's listing: path -> (hex SHA-256, length).
    type Files = std::collections::BTreeMap<String, (String, u64)>;

    /// Write the bin `prefix` over `files` into `dir` (leaves split above `split` files of
    /// more than one key, as the renderer splits), signed by `k`; its entry for its parent.
    fn bin(dir: &Path, k: &ServiceKey, prefix: &str, files: Files, split: usize) -> Value {
        let n = files.len();
        let keys: std::collections::BTreeSet<String> = files.keys().map(|p| file_key(p)).collect();
        let doc = if n > split && keys.len() > 1 {
            let mut parts: std::collections::BTreeMap<char, Files> = Default::default();
            for (p, e) in files {
                let d = file_key(&p).as_bytes()[prefix.len()] as char;
                parts.entry(d).or_default().insert(p, e);
            }
            let mut bins = Map::new();
            for (d, part) in parts {
                let child = format!("{prefix}{d}");
                bins.insert(bin_path(&child), bin(dir, k, &child, part, split));
            }
            json!({"type": BIN_TYPE, "prefix": prefix, "bins": bins})
        } else {
            let listed: Map<String, Value> = files
                .into_iter()
                .map(|(p, (sha, len))| (p, json!({"len": len, "sha256": sha})))
                .collect();
            json!({"type": BIN_TYPE, "prefix": prefix, "files": listed})
        };
        let bytes = signed(k, doc);
        std::fs::create_dir_all(dir.join(BIN_DIR)).expect("mkdir");
        std::fs::write(dir.join(bin_path(prefix)), &bytes).expect("bin");
        json!({"files": n, "len": bytes.len(), "sha256": hex::encode(Sha256::digest(&bytes))})
    }

    /// Write `files` under `dir` and a manifest trie over them signed by `k`, valid
    /// `as_of..expires`, whose leaves split above `split` files.
    fn tree_split(
        dir: &Path,
        k: &ServiceKey,
        files: &[(&str, Vec<u8>)],
        as_of: u64,
        expires: u64,
        split: usize,
    ) {
        let _ = std::fs::remove_dir_all(dir.join(BIN_DIR));
        let mut parts: std::collections::BTreeMap<char, Files> = Default::default();
        for (p, b) in files {
            let path = dir.join(p);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(&path, b).expect("write");
            let d = file_key(p).as_bytes()[0] as char;
            parts.entry(d).or_default().insert(
                (*p).to_owned(),
                (hex::encode(Sha256::digest(b)), b.len() as u64),
            );
        }
        let mut bins = Map::new();
        for (d, part) in parts {
            let child = d.to_string();
            bins.insert(bin_path(&child), bin(dir, k, &child, part, split));
        }
        let m = json!({
            "type": MANIFEST_TYPE,
            "version": as_of,
            "as_of": rfc3339(as_of),
            "expires": rfc3339(expires),
            "bins": bins,
        });
        std::fs::write(dir.join("manifest.json"), signed(k, m)).expect("manifest");
    }

    /// [`tree_split`] with the renderer's threshold.
    fn tree(dir: &Path, k: &ServiceKey, files: &[(&str, Vec<u8>)], as_of: u64, expires: u64) {
        tree_split(dir, k, files, as_of, expires, 256);
    }

    /// The bin files of the trie in `dir`, by path.
    fn bins_in(dir: &Path) -> Vec<String> {
        let mut out: Vec<String> = std::fs::read_dir(dir.join(BIN_DIR))
            .expect("manifest/")
            .map(|e| {
                format!(
                    "{BIN_DIR}/{}",
                    e.expect("entry").file_name().to_string_lossy()
                )
            })
            .collect();
        out.sort();
        out
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

    /// Vow `v`'s chain of `n` full pages (`v1`: every page pinned by the head; else `v2`,
    /// linked) and one record in the tail: the head and the pages, as (path, bytes).
    fn chain(k: &ServiceKey, v: &str, n: u64, v1: bool) -> (Vec<u8>, Vec<(String, Vec<u8>)>) {
        let (head_type, page_type) = if v1 {
            ("conduct.chain/v1", "conduct.chain_page/v1")
        } else {
            ("conduct.chain/v2", "conduct.chain_page/v2")
        };
        let mut pages: Vec<(String, Vec<u8>)> = Vec::new();
        for p in 0..n {
            let records: Vec<Value> = (0..32).map(|r| json!({"n": p * 32 + r})).collect();
            let mut doc = json!({"type": page_type, "vow_id": v, "page": p,
                                 "from_position": p * 32, "head": format!("/vow/{v}/chain"),
                                 "records": records});
            if !v1 {
                doc["prev_page_sha256"] =
                    json!(pages.last().map(|(_, b)| hex::encode(Sha256::digest(b))));
            }
            pages.push((format!("vow/{v}/chain/{p}.json"), signed(k, doc)));
        }
        let pin = |p: u64, b: &[u8]| {
            json!({"href": format!("/vow/{v}/chain/{p}"), "from_position": p * 32,
                   "records": 32, "sha256": hex::encode(Sha256::digest(b))})
        };
        let mut head = json!({"type": head_type, "vow_id": v, "length": n * 32,
                              "tail_from_position": n * 32, "tail": [{"n": n * 32}]});
        if v1 {
            let pins: Vec<Value> = (0..n).map(|p| pin(p, &pages[p as usize].1)).collect();
            head["pages"] = json!(pins);
        } else {
            head["full_pages"] = json!(n);
            head["last_page"] = match pages.last() {
                Some((_, b)) => pin(n - 1, b),
                None => Value::Null,
            };
        }
        (signed(k, head), pages)
    }

    #[test]
    fn chain_pages_are_proven_by_their_heads_not_listed() {
        let d = tempfile::tempdir().expect("tempdir");
        let k = key();
        let (head3, pages3) = chain(&k, "a", 3, false);
        let (head0, _) = chain(&k, "b", 0, false);
        let listed = vec![
            ("vow/a/chain.json", head3),
            ("vow/b/chain.json", head0),
            ("index.html", b"<p>hi</p>".to_vec()),
        ];
        tree(d.path(), &k, &listed, NOW, NOW + 60);
        std::fs::create_dir_all(d.path().join("vow/a/chain")).expect("mkdir");
        for (p, b) in &pages3 {
            std::fs::write(d.path().join(p), b).expect("page");
        }
        let audit = check(d.path(), &k, NOW).expect("verifies");
        assert_eq!((audit.listed, audit.chain_pages), (3, 3));
        let page = |p: u64| d.path().join(format!("vow/a/chain/{p}.json"));

        // A stray page, beyond the head's pages or of a vow with none, is named.
        std::fs::write(page(3), &pages3[0].1).expect("stray");
        let e = check(d.path(), &k, NOW).expect_err("stray");
        assert!(
            e.contains("vow/a/chain/3.json") && e.contains("no listed chain head"),
            "{e}"
        );
        std::fs::remove_file(page(3)).expect("rm");
        std::fs::create_dir_all(d.path().join("vow/b/chain")).expect("mkdir");
        std::fs::write(d.path().join("vow/b/chain/0.json"), &pages3[0].1).expect("stray");
        let e = check(d.path(), &k, NOW).expect_err("stray");
        assert!(e.contains("vow/b/chain/0.json"), "{e}");
        std::fs::remove_file(d.path().join("vow/b/chain/0.json")).expect("rm");

        // A page changed, or missing: named, whichever the link or pin that catches it.
        for p in [0, 1, 2] {
            std::fs::write(page(p), &pages3[(p as usize + 1) % 3].1).expect("swap");
            let e = check(d.path(), &k, NOW).expect_err("changed");
            assert!(e.contains(&format!("vow/a/chain/{p}.json")), "{e}");
            std::fs::remove_file(page(p)).expect("rm");
            let e = check(d.path(), &k, NOW).expect_err("missing");
            assert!(
                e.contains(&format!("vow/a/chain/{p}.json")) && e.contains("missing"),
                "{e}"
            );
            std::fs::write(page(p), &pages3[p as usize].1).expect("back");
        }
        check(d.path(), &k, NOW).expect("verifies again");

        // Pages signed right but linked wrong: page 1 of another chain of the same vow.
        let (_, other) = chain(&k, "a", 3, true);
        std::fs::write(page(1), &other[1].1).expect("other");
        assert!(check(d.path(), &k, NOW).is_err());
    }

    #[test]
    fn a_tree_mid_upgrade_with_v1_heads_and_listed_pages_verifies() {
        let d = tempfile::tempdir().expect("tempdir");
        let k = key();
        let (head, pages) = chain(&k, "a", 2, true);
        let mut files: Vec<(&str, Vec<u8>)> = vec![("vow/a/chain.json", head)];
        files.extend(pages.iter().map(|(p, b)| (p.as_str(), b.clone())));
        tree(d.path(), &k, &files, NOW, NOW + 60);
        let audit = check(d.path(), &k, NOW).expect("verifies");
        assert_eq!((audit.listed, audit.chain_pages), (3, 2));
        // Its root may still say v2.
        let root = d.path().join("manifest.json");
        let mut doc: Value =
            serde_json::from_slice(&std::fs::read(&root).expect("root")).expect("json");
        doc["type"] = json!(conduct_core::manifest::V2_TYPE);
        let doc = json!(doc
            .as_object()
            .expect("object")
            .iter()
            .filter(|(m, _)| *m != "signature" && *m != "key_id" && *m != "scope")
            .map(|(m, v)| (m.clone(), v.clone()))
            .collect::<Map<String, Value>>());
        std::fs::write(&root, signed(&k, doc)).expect("v2 root");
        check(d.path(), &k, NOW).expect("a v2 root verifies");
    }

    #[test]
    fn a_good_tree_verifies() {
        let d = tempfile::tempdir().expect("tempdir");
        let k = key();
        sample(d.path(), &k);
        let a = check(d.path(), &k, NOW).expect("verifies");
        assert_eq!(a.listed, 4);
        // The root and one leaf a first key digit.
        let bins = bins_in(d.path()).len();
        assert_eq!(a.bins, 1 + bins);
        assert_eq!(a.signed, 3 + 1 + bins); // three listed JSON files, the root, its bins
        assert_eq!(a.walked, Some(4 + 1 + bins));
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
        assert!(e.contains("expected \"conduct.manifest/v3\""), "{e}");
        // The single-file manifest the trie replaced is refused the same way.
        let m = json!({"type": "conduct.manifest/v1", "as_of": rfc3339(NOW),
                       "expires": rfc3339(NOW + 60), "files": {}});
        std::fs::write(d.path().join("manifest.json"), signed(&k, m)).expect("write");
        let e = check(d.path(), &k, NOW).expect_err("v1");
        assert!(
            e.starts_with("manifest.json: type Some(\"conduct.manifest/v1\")"),
            "{e}"
        );
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
        assert!(
            e.starts_with("vow/a.json: listed in the manifest but not"),
            "{e}"
        );
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
        // The profile, the root and its one leaf.
        assert_eq!(check(d.path(), &k, NOW).expect("verifies").signed, 3);
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
            "manifest/0.json",
            "a/./b",
        ] {
            assert!(!is_tree_path(p), "{p}");
        }
        for p in ["index.json", ".well-known/x402.json", "vow/a/chain/0.json"] {
            assert!(is_tree_path(p), "{p}");
        }
    }

    /// 60 vows of five files each (a page, its twin, three chain pages): a trie two levels
    /// deep when leaves split above 16 files.
    fn deep(dir: &Path, k: &ServiceKey) -> Vec<(String, Vec<u8>)> {
        let mut files = Vec::new();
        for v in 0..60 {
            files.push((
                format!("vow/v{v}.json"),
                signed(k, json!({"type": "conduct.vow/v1", "v": v})),
            ));
            files.push((format!("vow/v{v}.html"), format!("<p>{v}</p>").into_bytes()));
            for c in 0..3 {
                files.push((
                    format!("vow/v{v}/chain/{c}.txt"),
                    format!("{v}.{c}").into_bytes(),
                ));
            }
        }
        let refs: Vec<(&str, Vec<u8>)> =
            files.iter().map(|(p, b)| (p.as_str(), b.clone())).collect();
        tree_split(dir, k, &refs, NOW - 60, NOW + 3600, 16);
        files
    }

    #[test]
    fn a_deep_trie_verifies_and_every_bin_is_checked_against_its_parent() {
        let k = key();
        let d = tempfile::tempdir().expect("tempdir");
        let files = deep(d.path(), &k);
        let a = check(d.path(), &k, NOW).expect("verifies");
        assert_eq!(a.listed, 300);
        let bins = bins_in(d.path());
        assert!(
            bins.iter().any(|b| b.len() == "manifest/00.json".len()),
            "{bins:?}"
        );
        assert_eq!(a.bins, bins.len() + 1);

        // A changed byte in any bin is caught at that bin; so is a bin re-signed with other
        // content (its signature verifies, but it is not the bin its parent names).
        for b in &bins {
            let path = d.path().join(b);
            let orig = std::fs::read(&path).expect("read");
            let mut bytes = orig.clone();
            let at = bytes.len() / 2;
            bytes[at] ^= 1;
            std::fs::write(&path, &bytes).expect("write");
            let e = check(d.path(), &k, NOW).expect_err("a tampered bin");
            assert!(e.starts_with(&format!("{b}: sha256 ")), "{b}: {e}");
            let mut doc: Map<String, Value> = serde_json::from_slice(&orig).expect("JSON");
            doc.insert("extra".into(), json!(1));
            std::fs::write(&path, signed(&k, Value::Object(doc))).expect("write");
            let e = check(d.path(), &k, NOW).expect_err("a re-signed bin");
            assert!(e.starts_with(&format!("{b}: ")), "{b}: {e}");
            std::fs::write(&path, orig).expect("restore");
        }
        check(d.path(), &k, NOW).expect("restored");

        // A missing file and an unlisted one deep in the trie are named.
        let (page, bytes) = &files[123];
        std::fs::remove_file(d.path().join(page)).expect("rm");
        let e = check(d.path(), &k, NOW).expect_err("missing");
        assert!(
            e.starts_with(&format!("{page}: listed in the manifest but not")),
            "{e}"
        );
        std::fs::write(d.path().join(page), bytes).expect("restore");
        for extra in ["vow/v7/chain/9.txt", "vow/zz.html", "new.txt"] {
            std::fs::write(d.path().join(extra), b"unsigned").expect("write");
            let e = check(d.path(), &k, NOW).expect_err("unlisted");
            assert!(e.starts_with(&format!("{extra}: not listed")), "{e}");
            std::fs::remove_file(d.path().join(extra)).expect("rm");
        }
        // A bin file nothing names, or a stray file under manifest/.
        let stray = bin_path(&format!("{}f", &bins[0][9..bins[0].len() - 5]));
        std::fs::write(d.path().join(&stray), b"{}").expect("write");
        let e = check(d.path(), &k, NOW).expect_err("unnamed bin");
        assert!(
            e.starts_with(&format!("{stray}: not a bin the manifest names")),
            "{e}"
        );
        std::fs::remove_file(d.path().join(&stray)).expect("rm");
        std::fs::write(d.path().join("manifest/notes.txt"), b"x").expect("write");
        let e = check(d.path(), &k, NOW).expect_err("stray");
        assert!(e.starts_with("manifest/notes.txt: not a bin"), "{e}");
        std::fs::remove_file(d.path().join("manifest/notes.txt")).expect("rm");
        check(d.path(), &k, NOW).expect("clean again");
    }

    #[test]
    fn a_file_in_the_wrong_bin_a_wrong_count_or_prefix_is_refused() {
        let k = key();
        let d = tempfile::tempdir().expect("tempdir");
        let files = vec![
            ("index.html", b"<p>home</p>".to_vec()),
            ("robots.txt", b"x".to_vec()),
        ];
        tree(d.path(), &k, &files, NOW - 60, NOW + 3600);
        check(d.path(), &k, NOW).expect("verifies");
        let ka = file_key("index.html");
        let kb = file_key("robots.txt");
        assert_ne!(ka.as_bytes()[0], kb.as_bytes()[0], "two root children");
        // Move robots.txt's entry into index.html's leaf, every bin re-signed and named
        // consistently: the listing is complete, but in the wrong bin.
        let a = &ka[..1];
        let b = &kb[..1];
        let entry = |bytes: &[u8]| json!({"len": bytes.len(), "sha256": hex::encode(Sha256::digest(bytes))});
        let leaf = signed(
            &k,
            json!({"type": BIN_TYPE, "prefix": a, "files": {
                "index.html": entry(&files[0].1),
                "robots.txt": entry(&files[1].1)}}),
        );
        std::fs::remove_file(d.path().join(bin_path(b))).expect("rm");
        std::fs::write(d.path().join(bin_path(a)), &leaf).expect("write");
        let named = |bytes: &[u8], n: u64| json!({"files": n, "len": bytes.len(), "sha256": hex::encode(Sha256::digest(bytes))});
        let root = |bins: Value| {
            signed(
                &k,
                json!({"type": MANIFEST_TYPE, "version": NOW, "as_of": rfc3339(NOW - 60),
                       "expires": rfc3339(NOW + 3600), "bins": bins}),
            )
        };
        let mut bins = Map::new();
        bins.insert(bin_path(a), named(&leaf, 2));
        std::fs::write(d.path().join("manifest.json"), root(Value::Object(bins))).expect("w");
        let e = check(d.path(), &k, NOW).expect_err("wrong bin");
        assert!(
            e.starts_with(&format!(
                "{}: lists \"robots.txt\", whose key {kb}",
                bin_path(a)
            )),
            "{e}"
        );
        // A parent that says another count.
        let mut bins = Map::new();
        bins.insert(bin_path(a), named(&leaf, 3));
        std::fs::write(d.path().join("manifest.json"), root(Value::Object(bins))).expect("w");
        let e = check(d.path(), &k, NOW).expect_err("count");
        assert!(
            e.starts_with(&format!(
                "{}: lists 2 files, its parent says 3",
                bin_path(a)
            )),
            "{e}"
        );
        // A bin under another prefix than its path names.
        let other = signed(&k, json!({"type": BIN_TYPE, "prefix": b, "files": {}}));
        std::fs::write(d.path().join(bin_path(a)), &other).expect("write");
        let mut bins = Map::new();
        bins.insert(bin_path(a), named(&other, 0));
        std::fs::write(d.path().join("manifest.json"), root(Value::Object(bins))).expect("w");
        let e = check(d.path(), &k, NOW).expect_err("prefix");
        assert!(
            e.starts_with(&format!("{}: prefix Some(\"{b}\")", bin_path(a))),
            "{e}"
        );
        // A root naming a grandchild.
        let mut bins = Map::new();
        bins.insert(bin_path(&format!("{a}0")), named(&other, 0));
        std::fs::write(d.path().join("manifest.json"), root(Value::Object(bins))).expect("w");
        let e = check(d.path(), &k, NOW).expect_err("not a child");
        assert!(e.starts_with("manifest.json: names \"manifest/"), "{e}");
    }
}
