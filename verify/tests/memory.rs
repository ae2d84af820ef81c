//! verify-log and verify-site keep their memory bounded (ARCHITECTURE.md, **verify**): the heap
//! they use at their peak, counted by this binary's allocator, does not grow with the log's
//! entries nor with the tree's files.
//!
//! One test in this binary, so nothing else allocates while it measures.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use conduct_verify::{verify_log, verify_tree};
use sha2::{Digest, Sha256};

/// The system allocator, counting the bytes held now and the most held since the last reset.
struct Counting;

static HELD: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(by: usize) {
    let now = HELD.fetch_add(by, Relaxed) + by;
    PEAK.fetch_max(now, Relaxed);
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        unsafe { System.dealloc(p, layout) };
        HELD.fetch_sub(layout.size(), Relaxed);
    }

    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, layout, new) };
        if !q.is_null() {
            if new >= layout.size() {
                grew(new - layout.size());
            } else {
                HELD.fetch_sub(layout.size() - new, Relaxed);
            }
        }
        q
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// `f`'s result and the most heap it held above what was held when it started.
fn peak_of<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = HELD.load(Relaxed);
    PEAK.store(base, Relaxed);
    let out = f();
    (out, PEAK.load(Relaxed).saturating_sub(base))
}

/// A log of one vow with 20 report-ins and `other` more leaves, in `dir`.
fn log_of(dir: &Path, other: usize) {
    let key = common::key();
    let leaves = common::leaves(&key, 20, other);
    common::write_log(dir, &key, &leaves, leaves.len());
}

/// `files` small files (each its own unit, as a vow's pages are) listed by a signed manifest in
/// `dir`, valid around `now`.
fn tree_of(dir: &Path, files: usize, now: u64) {
    let key = common::key();
    let mut listed = common::Listing::new();
    for i in 0..files {
        let rel = format!("vow/{i:06}.txt");
        let bytes = format!("file {i}").into_bytes();
        let path = dir.join(&rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, &bytes).expect("write");
        listed.insert(
            rel,
            (hex::encode(Sha256::digest(&bytes)), bytes.len() as u64),
        );
    }
    common::write_manifest(dir, &key, listed, now, 256);
}

#[test]
fn audits_hold_no_more_memory_than_their_bounds() {
    let vkey = common::key().vkey();

    // The log: the same peak, within a tile's worth of slack, at 16 and at 128 bundles. What
    // grows with the entries (every leaf hash, every tile at once) would add 32 bytes an
    // entry at least: 1 MiB more for the larger log.
    let mut peaks = Vec::new();
    for other in [4_000, 32_768] {
        let dir = tempfile::tempdir().expect("tempdir");
        log_of(dir.path(), other);
        let (audit, peak) = peak_of(|| verify_log(dir.path(), &vkey));
        let audit = audit.expect("the log verifies");
        assert_eq!(audit.other, other as u64, "{audit}");
        eprintln!("verify-log: {} entries, peak heap {peak} bytes", audit.size);
        peaks.push((audit.size, peak));
    }
    let (small, large) = (peaks[0], peaks[1]);
    assert!(
        large.1 < small.1 + 256 * 1024,
        "verify-log's peak heap grew with the log: {} entries {} bytes, {} entries {} bytes",
        small.0,
        small.1,
        large.0,
        large.1
    );

    // The tree: the same peak, within a few leaves' worth of slack, at 4,000 and at 20,000
    // files. One path of bins is held at a time, never the listing: a compact row a listed
    // file (its path, hash and length, about 100 bytes here) would add 1.6 MB for the larger.
    let now = 1_800_000_000;
    let mut peaks = Vec::new();
    for files in [4_000, 20_000] {
        let dir = tempfile::tempdir().expect("tempdir");
        tree_of(dir.path(), files, now);
        let (audit, peak) = peak_of(|| verify_tree(dir.path(), Some(dir.path()), &vkey, now));
        let audit = audit.expect("the tree verifies");
        assert_eq!(audit.listed, files);
        eprintln!(
            "verify-site (steps 1 to 4): {files} files in {} bins, peak heap {peak} bytes",
            audit.bins
        );
        peaks.push((files, peak));
    }
    let (small, large) = (peaks[0], peaks[1]);
    assert!(
        large.1 < small.1 + 256 * 1024,
        "verify-site's peak heap grew with the tree: {} files {} bytes, {} files {} bytes",
        small.0,
        small.1,
        large.0,
        large.1
    );
}
