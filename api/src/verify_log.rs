//! `conduct verify-log DIR|URL`: audit a copy of the transparency log from its files alone,
//! read from a directory or fetched from a log URL (`https://host/log`).
//!
//! It checks, in order:
//!
//! - the checkpoint's signature, against the pinned vkey;
//! - every entry bundle, each decoding and covering exactly the checkpoint's size;
//! - the root recomputed from the entries' leaf hashes, against the signed root;
//! - every hash tile the log must serve, byte for byte against the tiles rebuilt from the entries;
//! - the root read back through the tiles alone, against the signed root;
//! - every vow chain in the entries: each `conduct.vow/v1` and `conduct.entry/v1` record is
//!   canonical, signed by the pinned key, names its own log index, and links to the previous
//!   record of its vow by `seq` and `prev` (see `conduct_core::vow::chain`).
//!
//! Any changed byte in any file fails one of these checks.

use std::path::Path;

use conduct_core::tlog::checkpoint::open_checkpoint;
use conduct_core::tlog::note::Verifier;
use conduct_core::tlog::tiles::{build_tiles, decode_bundle, entries_path, root_from_tiles};
use conduct_core::tlog::{leaf_hash, root};

/// What a successful audit found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogAudit {
    /// Log origin.
    pub origin: String,
    /// Number of entries.
    pub size: u64,
    /// Base64 root.
    pub root: String,
    /// Files checked.
    pub files: usize,
    /// Vow records whose chains verified.
    pub vows: u64,
    /// Report-in entries that verified.
    pub entries: u64,
    /// Leaves that are not vow-chain records (not checked as chains).
    pub other: u64,
}

/// Where the log's files come from.
pub trait LogFiles {
    /// The bytes of the file at `rel` (e.g. `checkpoint`, `tile/0/000`).
    fn read(&self, rel: &str) -> Result<Vec<u8>, String>;
}

impl LogFiles for Path {
    fn read(&self, rel: &str) -> Result<Vec<u8>, String> {
        std::fs::read(self.join(rel)).map_err(|e| format!("{rel}: {e}"))
    }
}

/// A log served over HTTP(S) at a base URL; redirects are not followed.
pub struct LogUrl {
    base: String,
    http: reqwest::blocking::Client,
}

impl LogUrl {
    /// A reader for the log at `base` (e.g. `http://localhost:8402/log`).
    pub fn new(base: &str) -> Result<Self, String> {
        let http = reqwest::blocking::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(std::time::Duration::from_secs(30))
            .build()
            .map_err(|e| format!("http client: {e}"))?;
        Ok(LogUrl {
            base: base.trim_end_matches('/').to_owned(),
            http,
        })
    }
}

impl LogFiles for LogUrl {
    fn read(&self, rel: &str) -> Result<Vec<u8>, String> {
        let url = format!("{}/{rel}", self.base);
        let resp = self
            .http
            .get(&url)
            .send()
            .map_err(|e| format!("{url}: {e}"))?;
        if !resp.status().is_success() {
            return Err(format!("{url}: HTTP {}", resp.status()));
        }
        resp.bytes()
            .map(|b| b.to_vec())
            .map_err(|e| format!("{url}: {e}"))
    }
}

/// Audit a log given as a directory path or an `http(s)://` URL.
pub fn verify_log_at(location: &str, vkey: &str) -> Result<LogAudit, String> {
    if location.starts_with("http://") || location.starts_with("https://") {
        verify_log(&LogUrl::new(location)?, vkey)
    } else {
        verify_log(Path::new(location), vkey)
    }
}

/// Audit the log whose files `files` yields against `vkey`.
pub fn verify_log<F: LogFiles + ?Sized>(files: &F, vkey: &str) -> Result<LogAudit, String> {
    use base64::Engine;
    let verifier = Verifier::parse(vkey).map_err(|e| format!("--pubkey: {e}"))?;
    let text = String::from_utf8(files.read("checkpoint")?)
        .map_err(|_| "checkpoint: not UTF-8".to_string())?;
    let signed = open_checkpoint(&text, &[verifier]).map_err(|e| format!("checkpoint: {e}"))?;
    let cp = signed.checkpoint;
    let mut checked = 1usize;

    // Entries, bundle by bundle.
    let mut hashes = Vec::with_capacity(cp.size as usize);
    let pinned =
        conduct_core::signing::PinnedKey::parse(vkey).map_err(|e| format!("--pubkey: {e}"))?;
    let mut chains = conduct_core::vow::chain::ChainChecker::new(pinned, Some(cp.origin.clone()));
    let mut n = 0u64;
    while (n * 256) < cp.size {
        let width = (cp.size - n * 256).min(256) as u16;
        let rel = entries_path(n, width);
        let bytes = files.read(&rel)?;
        let entries = decode_bundle(&bytes).map_err(|e| format!("{rel}: {e}"))?;
        if entries.len() != width as usize {
            return Err(format!(
                "{rel}: holds {} entries, the checkpoint needs {width}",
                entries.len()
            ));
        }
        for (i, e) in entries.iter().enumerate() {
            chains
                .leaf(n * 256 + i as u64, e)
                .map_err(|e| format!("vow chain: {e}"))?;
        }
        hashes.extend(entries.iter().map(|e| leaf_hash(e)));
        checked += 1;
        n += 1;
    }
    if root(&hashes) != cp.root {
        return Err("the entries do not hash to the signed root".into());
    }

    // Every tile, byte for byte.
    for (tile, want) in build_tiles(&hashes) {
        let rel = tile.path();
        let got = files.read(&rel)?;
        if got != want {
            return Err(format!(
                "{rel}: differs from the tile rebuilt from the entries"
            ));
        }
        checked += 1;
    }

    // And the root through the tiles alone, as a tile-reading client sees it.
    let via_tiles = root_from_tiles(cp.size, |t| files.read(&t.path()))
        .map_err(|e| format!("reading tiles: {e}"))?;
    if via_tiles != cp.root {
        return Err("the tiles do not hash to the signed root".into());
    }
    Ok(LogAudit {
        origin: cp.origin,
        size: cp.size,
        root: base64::engine::general_purpose::STANDARD.encode(cp.root),
        files: checked,
        vows: chains.vows,
        entries: chains.entries,
        other: chains.other,
    })
}
