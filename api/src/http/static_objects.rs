//! Reading the tree to serve it, whatever its backend: a directory through `static_site`
//! (with its inode-keyed cache), any other tree (a bucket) object by object through the Tree
//! seam, with what it read kept for a bounded time: a head (there or not, and the bytes of a
//! small object) for [`HEAD_FOR`], an immutable object (full tiles and bundles, full chain
//! pages) for [`IMMUTABLE_FOR`]. So a page the service just replaced is served stale for at
//! most [`HEAD_FOR`], and a bucket that is not answering is a 503, never a wrong answer.
//! The resolution (clean URLs, twins, negotiation) is `static_site`'s.

use std::cell::Cell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use conduct_indexer::tree::{immutable, SharedTree};

use super::static_site::{find, lookup_dir, safe_relative, Found, Read, Variant};

/// How long a mutable object's bytes, or its absence, are served from memory.
pub const HEAD_FOR: Duration = Duration::from_secs(1);

/// How long an immutable object's bytes are kept.
pub const IMMUTABLE_FOR: Duration = Duration::from_secs(3600);

/// Most bytes kept; past it the memory is emptied (a bounded cache, rebuilt by the reads).
const KEPT_BYTES: usize = 32 << 20;

/// Largest object kept.
const KEPT_MAX: usize = 256 << 10;

/// What an entry costs besides its bytes (its path, the entry, the map's slot), so absences
/// count against [`KEPT_BYTES`] too and the map stays bounded whatever paths are asked for.
const ENTRY_COST: usize = 256;

/// What was read of one path, and when.
struct Kept {
    /// Its bytes; `None`: no object there.
    bytes: Option<Bytes>,
    read: Instant,
}

#[derive(Default)]
struct Memory {
    paths: HashMap<String, Kept>,
    total: usize,
}

static MEMORY: LazyLock<Mutex<Memory>> = LazyLock::new(Mutex::default);

/// The bytes at `path` (`None`: not there), from memory while fresh, else from the tree;
/// `Err` when the tree did not answer.
fn read(tree: &SharedTree, path: &str) -> Result<Option<Bytes>, ()> {
    let fresh_for = if immutable(path) {
        IMMUTABLE_FOR
    } else {
        HEAD_FOR
    };
    if let Some(k) = conduct_core::sync::lock(&MEMORY).paths.get(path) {
        if k.read.elapsed() < fresh_for {
            return Ok(k.bytes.clone());
        }
    }
    let bytes = match tree.get(path) {
        Ok(b) => b.map(Bytes::from),
        Err(e) => {
            tracing::warn!(path, error = %e, "the tree did not answer a read");
            return Err(());
        }
    };
    let size = bytes.as_ref().map_or(0, Bytes::len);
    if size <= KEPT_MAX {
        let cost = |path: &str, bytes: &Option<Bytes>| {
            path.len() + ENTRY_COST + bytes.as_ref().map_or(0, Bytes::len)
        };
        let mut m = conduct_core::sync::lock(&MEMORY);
        let added = cost(path, &bytes);
        if m.total + added > KEPT_BYTES {
            m.paths.clear();
            m.total = 0;
        }
        let kept = Kept {
            bytes: bytes.clone(),
            read: Instant::now(),
        };
        if let Some(old) = m.paths.insert(path.to_owned(), kept) {
            m.total -= cost(path, &old.bytes);
        }
        m.total += added;
    }
    Ok(bytes)
}

/// Resolve a request path against the tree, and read the file it resolves to: from the
/// directory when the tree is one, else object by object on a blocking thread.
pub async fn lookup(
    tree: &SharedTree,
    path: &str,
    accept: Option<&str>,
    format: Option<Variant>,
) -> Found {
    if let Some(root) = tree.directory() {
        return lookup_dir(root, path, accept, format).await;
    }
    let Some(rel) = safe_relative(path) else {
        return Found::Missing;
    };
    let (tree, accept) = (tree.clone(), accept.map(str::to_owned));
    tokio::task::spawn_blocking(move || lookup_objects(&tree, &rel, accept.as_deref(), format))
        .await
        .unwrap_or(Found::Missing)
}

/// Resolve the checked relative path `rel` in `tree` as `static_site::find` does, each name
/// read through [`read`]; a read the tree did not answer makes the answer
/// [`Found::Unavailable`] (a 503), never a 404. Blocks: call it on a blocking thread.
fn lookup_objects(
    tree: &SharedTree,
    rel: &str,
    accept: Option<&str>,
    format: Option<Variant>,
) -> Found {
    // A twin that did not answer ends the lookup (the answer is a 503). The exact name does
    // not: some S3-compatible servers that keep objects as files answer 500 (after the
    // client's retries) for a key that is also a "directory" (`vow/<id>` beside
    // `vow/<id>/chain.json`), where a bucket says 404. So a clean URL's twins are asked for
    // first (`find`'s `twins_first`), its exact name only without them, and an exact name
    // that did not answer is a 503 only when no twin was found.
    let (failed, exact_failed) = (Cell::new(false), Cell::new(false));
    let at = |name: &str| {
        if failed.get() {
            return None;
        }
        match read(tree, name) {
            Ok(bytes) => Some((PathBuf::from(format!("/{name}")), bytes?)),
            Err(()) => {
                if name == rel {
                    exact_failed.set(true);
                } else {
                    failed.set(true);
                }
                None
            }
        }
    };
    match find(rel, accept, format, true, at, |_: &Path, bytes| {
        Read::Bytes(bytes)
    }) {
        Some(Found::File(f)) => Found::File(f),
        _ if failed.get() || exact_failed.get() => Found::Unavailable,
        found => found.unwrap_or(Found::Missing),
    }
}
