//! The published tree's seam: where the signed JSON and HTML snapshots, the log's tiles and
//! the manifest live, behind [`Tree`], with one backend per folder (`dir`: a local directory;
//! `s3`: an S3-compatible bucket), chosen in one place ([`open`]).
//!
//! # The contract
//!
//! Paths are relative, `/`-separated, without `.` or `..` segments (`vow/ab12.json`,
//! `log/tile/0/000`); [`check_path`] refuses anything else before a backend sees it.
//!
//! - **Atomic.** After [`Tree::put`] returns, a reader of the path gets the new bytes whole;
//!   before, the old ones whole (or nothing). No reader ever sees a mix or a prefix.
//! - **Durable.** A put with [`Put::sync`] is durable when it returns: a crash or power cut
//!   after that keeps it. Any other put, and every [`Tree::delete`], is durable once a later
//!   [`Tree::barrier`] returns. (A bucket makes every put durable at once, and its barrier
//!   is free; a directory would pay an `fsync` per file, so derived pages, which a restart
//!   re-renders past the last integration mark, are flushed once per mark by the barrier.)
//!   A crash can therefore lose un-synced puts since the last barrier, never synced ones,
//!   and never leave a path holding bytes that were not put there whole.
//! - **Order.** Puts that returned are seen in the order they returned, by this process and
//!   by readers of the same backend. Publication order (immutable objects, then heads, the
//!   manifest root and the checkpoint last) is the callers' to keep, by not putting a head
//!   before the objects it names have returned.
//! - **What a crash leaves** is the backend's to repair in [`Tree::recover`] before any
//!   writer starts (a directory's temporaries; nothing in a bucket, whose puts are whole).
//!
//! Errors are `io::Error`s: `NotFound` never (a missing object is `Ok(None)` / `Ok(false)`),
//! and anything else means the operation may not have happened.
//!
//! The calls block: async code calls them on a blocking thread.

use std::fmt;
use std::io;
use std::sync::Arc;
use std::time::SystemTime;

pub mod dir;
pub mod s3;

pub use dir::Dir;
pub use s3::Bucket;

/// How an object is put.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Put {
    /// Durable when the put returns, not only after the next barrier.
    pub sync: bool,
    /// Its bytes never change once written (full tiles and entry bundles, full chain pages):
    /// cached for a year, `immutable`.
    pub immutable: bool,
}

impl Put {
    /// A head or derived page: durable after the next barrier, revalidated by caches.
    pub const PAGE: Put = Put {
        sync: false,
        immutable: false,
    };
    /// Durable at once (the log's files, a full render's files).
    pub const SYNCED: Put = Put {
        sync: true,
        immutable: false,
    };

    /// `self`, marked immutable when the path says its bytes never change ([`immutable`]).
    pub fn for_path(self, path: &str) -> Put {
        Put {
            immutable: self.immutable || immutable(path),
            ..self
        }
    }
}

/// An object a listing found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// Its path in the tree.
    pub path: String,
    /// Its length in bytes.
    pub len: u64,
    /// When it was last written.
    pub modified: SystemTime,
}

/// What warming a path brings in ([`Tree::warm`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Warm {
    /// Its directory entries and inode (what a `stat`, an exchange or a rename reads).
    Inode,
    /// Those and its bytes (a file the render reads whole).
    Bytes,
}

/// One level of a directory of the tree ([`Tree::children`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Children {
    /// The objects directly in it (their full paths).
    pub files: Vec<Listed>,
    /// The directories directly below it (their full paths, without a trailing slash).
    pub dirs: Vec<String>,
}

/// The published tree (see the module's contract).
pub trait Tree: Send + Sync + fmt::Debug {
    /// Put `bytes` at `path`, replacing what was there, atomically.
    fn put(&self, path: &str, bytes: &[u8], how: Put) -> io::Result<()>;

    /// [`Tree::put`] of each of `puts`, in no set order (a backend that pays a round trip a
    /// put, a bucket, has several in flight); one result per put, in order. By default, one
    /// after the other.
    fn put_many(&self, puts: &[(&str, &[u8], Put)]) -> Vec<io::Result<()>> {
        puts.iter()
            .map(|(path, bytes, how)| self.put(path, bytes, *how))
            .collect()
    }

    /// The bytes at `path`; `None` when there is no object.
    fn get(&self, path: &str) -> io::Result<Option<Vec<u8>>>;

    /// The length and time of the object at `path`, without its bytes.
    fn head(&self, path: &str) -> io::Result<Option<Listed>>;

    /// Remove the object at `path`. Whether there was one.
    fn delete(&self, path: &str) -> io::Result<bool>;

    /// Every object whose path starts with `prefix` (`manifest/`, `log/`), in no set order.
    fn list(&self, prefix: &str) -> io::Result<Vec<Listed>>;

    /// One level of the directory `dir` (`""`: the top): the objects directly in it, and the
    /// names of the directories below it that hold any (a walk that skips whole directories,
    /// as a render skips the vows' millions of files).
    fn children(&self, dir: &str) -> io::Result<Children>;

    /// Bring `paths` into whatever cache the backend reads through, all at once, before a
    /// round reads or replaces them one at a time (a directory: the page cache, from many
    /// threads; a bucket: nothing). How many were there.
    fn warm(&self, paths: &[(String, Warm)]) -> usize;

    /// Make every put and delete that returned before this call durable.
    fn barrier(&self) -> io::Result<()>;

    /// Repair what a crash of an earlier run left, before any writer starts. `clean` says
    /// the previous run stopped cleanly over this tree (its clean-stop mark), so a backend
    /// may skip an expensive look. Returns how many leftovers it removed.
    fn recover(&self, clean: bool) -> io::Result<usize>;

    /// The local directory the tree is, when it is one: readers that can serve it straight
    /// from the file system (the api's static serving, with its inode-keyed cache) do.
    fn directory(&self) -> Option<&std::path::Path> {
        None
    }

    /// Where the tree is, for logs and for marks that must not be taken over another tree
    /// (a canonical directory, or `s3://bucket/prefix` at its endpoint).
    fn locator(&self) -> String;
}

/// A shared handle on a tree.
pub type SharedTree = Arc<dyn Tree>;

/// The tree a `site` setting names: `s3://bucket[/prefix]` is a bucket (endpoint, region and
/// credentials from the standard AWS environment), anything else a local directory, which
/// replaces its vow pages through the pool of spare inodes at `spares` when given (a running
/// service's `<data>/spares/`: [`dir::spares`]). The one place a backend is chosen.
pub fn open(site: &str, spares: Option<&std::path::Path>) -> io::Result<SharedTree> {
    match site.split_once("://") {
        Some(("s3", rest)) => Ok(Arc::new(Bucket::from_env(rest)?)),
        Some((scheme, _)) => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("site: unknown scheme {scheme:?} (a directory, or s3://bucket/prefix)"),
        )),
        None => {
            let dir = Dir::open(std::path::Path::new(site))?;
            if let Some(pool) = spares {
                dir.replace_through(pool);
            }
            Ok(Arc::new(dir))
        }
    }
}

/// Refuse a path that is not a plain relative one: empty, absolute, with an empty, `.` or
/// `..` segment, a backslash or a NUL.
pub fn check_path(path: &str) -> io::Result<()> {
    let bad = path.is_empty()
        || path.contains(['\\', '\0'])
        || path
            .split('/')
            .any(|seg| seg.is_empty() || seg == "." || seg == "..");
    if bad {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("not a tree path: {path:?}"),
        ));
    }
    Ok(())
}

/// Whether the object at `path` never changes once written: a full log tile or entry bundle
/// (a partial one sits under `.p/`), or a full page of a vow's chain (`vow/<id>/chain/<k>.json`).
pub fn immutable(path: &str) -> bool {
    if let Some(tile) = path.strip_prefix("log/tile/") {
        return !tile.contains(".p/");
    }
    let mut seg = path.split('/');
    matches!(
        (seg.next(), seg.next(), seg.next(), seg.next(), seg.next()),
        (Some("vow"), Some(_), Some("chain"), Some(page), None) if page.ends_with(".json")
    )
}

/// The `Content-Type` of the object at `path`, by its extension (a log checkpoint is a
/// text note).
pub fn content_type(path: &str) -> &'static str {
    let name = path.rsplit('/').next().unwrap_or(path);
    if name == "checkpoint" {
        return "text/plain; charset=utf-8";
    }
    match name.rsplit_once('.').map_or("", |(_, ext)| ext) {
        "json" => "application/json",
        "html" => "text/html; charset=utf-8",
        "md" => "text/markdown; charset=utf-8",
        "txt" => "text/plain; charset=utf-8",
        "xml" => "application/xml",
        "atom" => "application/atom+xml",
        "svg" => "image/svg+xml",
        "css" => "text/css; charset=utf-8",
        "png" => "image/png",
        _ => "application/octet-stream",
    }
}

/// The `Cache-Control` an object gets: a year and `immutable` when its bytes never change,
/// else `no-cache` (a head: revalidate every time).
pub fn cache_control(immutable: bool) -> &'static str {
    if immutable {
        "public, max-age=31536000, immutable"
    } else {
        "no-cache"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_plain_and_relative() {
        for ok in ["a", "vow/ab.json", "log/tile/0/x001/002.p/7"] {
            assert!(check_path(ok).is_ok(), "{ok}");
        }
        for bad in ["", "/a", "a/", "a//b", "./a", "a/../b", "a\\b", "a\0"] {
            assert!(check_path(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn immutable_objects_are_full_tiles_bundles_and_chain_pages() {
        assert!(immutable("log/tile/0/000"));
        assert!(immutable("log/tile/entries/x001/002"));
        assert!(!immutable("log/tile/0/000.p/12"));
        assert!(!immutable("log/tile/entries/000.p/3"));
        assert!(!immutable("log/checkpoint"));
        assert!(immutable("vow/ab/chain/0.json"));
        assert!(!immutable("vow/ab/chain/0.html"));
        assert!(!immutable("vow/ab.json"));
        assert!(!immutable("vow/ab/chain.json"));
    }

    #[test]
    fn content_types_follow_the_extension() {
        assert_eq!(content_type("log/checkpoint"), "text/plain; charset=utf-8");
        assert_eq!(content_type("vow/a.json"), "application/json");
        assert_eq!(content_type("feed.atom"), "application/atom+xml");
        assert_eq!(content_type("log/tile/0/000"), "application/octet-stream");
    }
}
