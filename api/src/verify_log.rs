//! `conduct verify-log DIR`: audit a copy of the transparency log offline, from its files alone.
//!
//! It checks, in order:
//!
//! - the checkpoint's signature, against the pinned vkey;
//! - every entry bundle, each decoding and covering exactly the checkpoint's size;
//! - the root recomputed from the entries' leaf hashes, against the signed root;
//! - every hash tile the log must serve, byte for byte against the tiles rebuilt from the entries;
//! - the root read back through the tiles alone, against the signed root.
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
}

/// Audit the log under `dir` (the directory holding `checkpoint` and `tile/`) against `vkey`.
pub fn verify_log_dir(dir: &Path, vkey: &str) -> Result<LogAudit, String> {
    use base64::Engine;
    let verifier = Verifier::parse(vkey).map_err(|e| format!("--pubkey: {e}"))?;
    let text = std::fs::read_to_string(dir.join("checkpoint"))
        .map_err(|e| format!("{}: {e}", dir.join("checkpoint").display()))?;
    let signed = open_checkpoint(&text, &[verifier]).map_err(|e| format!("checkpoint: {e}"))?;
    let cp = signed.checkpoint;
    let mut files = 1usize;

    // Entries, bundle by bundle.
    let mut hashes = Vec::with_capacity(cp.size as usize);
    let mut n = 0u64;
    while (n * 256) < cp.size {
        let width = (cp.size - n * 256).min(256) as u16;
        let rel = entries_path(n, width);
        let bytes = std::fs::read(dir.join(&rel)).map_err(|e| format!("{rel}: {e}"))?;
        let entries = decode_bundle(&bytes).map_err(|e| format!("{rel}: {e}"))?;
        if entries.len() != width as usize {
            return Err(format!(
                "{rel}: holds {} entries, the checkpoint needs {width}",
                entries.len()
            ));
        }
        hashes.extend(entries.iter().map(|e| leaf_hash(e)));
        files += 1;
        n += 1;
    }
    if root(&hashes) != cp.root {
        return Err("the entries do not hash to the signed root".into());
    }

    // Every tile, byte for byte.
    for (tile, want) in build_tiles(&hashes) {
        let rel = tile.path();
        let got = std::fs::read(dir.join(&rel)).map_err(|e| format!("{rel}: {e}"))?;
        if got != want {
            return Err(format!(
                "{rel}: differs from the tile rebuilt from the entries"
            ));
        }
        files += 1;
    }

    // And the root through the tiles alone, as a tile-reading client sees it.
    let via_tiles = root_from_tiles(cp.size, |t| std::fs::read(dir.join(t.path())))
        .map_err(|e| format!("reading tiles: {e}"))?;
    if via_tiles != cp.root {
        return Err("the tiles do not hash to the signed root".into());
    }
    Ok(LogAudit {
        origin: cp.origin,
        size: cp.size,
        root: base64::engine::general_purpose::STANDARD.encode(cp.root),
        files,
    })
}
