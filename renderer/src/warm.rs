//! Bringing the files a round is about to touch into the page cache together (ARCHITECTURE.md,
//! "The write path of a report-in", steps 5 and 6): the vows' files before their render, the
//! manifest's leaf bins before the signer replaces them. A vow's render reads and replaces
//! its files one at a time, so when they are not cached every lookup, inode and page
//! waits for the disk on its own, one request in flight per render thread. Warmed first from
//! many threads at once, the same reads reach the disk together and its queue stays full: a
//! virtual disk that answers one 4 KiB read in about 70 µs answers 16 at once in about 290.

use std::io::Read;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Threads that warm at once: the disk's queue depth this aims for.
pub const WARMERS: usize = 16;

/// Paths a warming thread is started for at the least (a thread costs about as much to start
/// as a few cached lookups).
const PATHS_A_THREAD: usize = 4;

/// Below this wall time a path, a warming found everything cached (a cached lookup takes a
/// microsecond or two; one from this machine's disk, 16 at once, about 20).
const CACHED_A_PATH: Duration = Duration::from_micros(8);

/// Warmings skipped after one that found everything cached: with the cache warm, warming
/// costs lookups and thread starts for nothing, so it is tried again only every so often.
const SKIP_WHEN_CACHED: u32 = 15;

/// Warms paths when warming pays: after a warming that found every path cached (the tree fits
/// the page cache), the next [`SKIP_WHEN_CACHED`] are skipped.
#[derive(Debug, Default)]
pub struct Warmer {
    skip: u32,
}

impl Warmer {
    /// [`warm`] the paths `paths()` names, unless a recent warming found everything cached
    /// (then `paths` is not called: a skipped round builds no list): how many were there,
    /// `None` when skipped.
    pub fn warm(
        &mut self,
        root: &Path,
        paths: impl FnOnce() -> Vec<(String, Warm)>,
    ) -> Option<usize> {
        if self.skip > 0 {
            self.skip -= 1;
            return None;
        }
        let paths = paths();
        if paths.is_empty() {
            return Some(0);
        }
        let started = Instant::now();
        let found = warm(root, &paths);
        self.skip = skips_after(started.elapsed(), paths.len());
        Some(found)
    }
}

/// Warmings to skip after one of `paths` paths that took `took`.
fn skips_after(took: Duration, paths: usize) -> u32 {
    let cached = u32::try_from(paths)
        .ok()
        .and_then(|n| CACHED_A_PATH.checked_mul(n))
        .is_none_or(|bound| took < bound);
    if cached {
        SKIP_WHEN_CACHED
    } else {
        0
    }
}

/// What warming a path brings in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Warm {
    /// Its directory entries and inode (what a `stat`, an exchange or a rename reads).
    Inode,
    /// Those and its bytes (a file the render reads whole).
    Bytes,
}

/// Bring every path (relative to `root`) into the page cache as `Warm` says, from up to
/// [`WARMERS`] threads, returning once all are done: how many were there. Nothing is kept: a
/// path that is missing or unreadable is left to whoever reads it next, who then meets the
/// error.
pub fn warm(root: &Path, paths: &[(String, Warm)]) -> usize {
    let threads = WARMERS.min(paths.len().div_ceil(PATHS_A_THREAD));
    let next = AtomicUsize::new(0);
    let found = AtomicUsize::new(0);
    let one = || {
        let mut buf = Vec::new();
        while let Some((rel, how)) = paths.get(next.fetch_add(1, Ordering::Relaxed)) {
            let path = root.join(rel);
            let there = match how {
                Warm::Inode => std::fs::symlink_metadata(&path).is_ok(),
                Warm::Bytes => std::fs::File::open(&path).is_ok_and(|mut f| {
                    buf.clear();
                    f.read_to_end(&mut buf).is_ok()
                }),
            };
            if there {
                found.fetch_add(1, Ordering::Relaxed);
            }
        }
    };
    std::thread::scope(|scope| {
        for _ in 1..threads {
            scope.spawn(one);
        }
        if threads > 0 {
            one();
        }
    });
    found.into_inner()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warming_is_skipped_for_a_while_after_one_that_found_everything_cached() {
        assert_eq!(
            skips_after(Duration::from_micros(100), 100),
            SKIP_WHEN_CACHED
        );
        assert_eq!(skips_after(Duration::from_millis(2), 100), 0);
        assert_eq!(
            skips_after(Duration::from_micros(799), 100),
            SKIP_WHEN_CACHED
        );
        assert_eq!(skips_after(Duration::from_micros(800), 100), 0);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a"), b"x").unwrap();
        let paths = || vec![("a".to_owned(), Warm::Bytes), ("b".to_owned(), Warm::Inode)];
        let mut w = Warmer::default();
        assert_eq!(w.warm(dir.path(), Vec::new), Some(0));
        assert_eq!(w.warm(dir.path(), paths), Some(1));
        // After a warming that found everything cached, the next ones are skipped, then one
        // is tried again.
        w.skip = SKIP_WHEN_CACHED;
        for _ in 0..SKIP_WHEN_CACHED {
            assert_eq!(w.warm(dir.path(), paths), None);
        }
        assert_eq!(w.warm(dir.path(), paths), Some(1));
    }

    #[test]
    fn every_path_is_visited_and_a_missing_one_is_no_error() {
        let dir = tempfile::tempdir().unwrap();
        let mut paths = Vec::new();
        for i in 0..40 {
            std::fs::write(dir.path().join(format!("{i}.json")), vec![b'x'; i * 100]).unwrap();
            let how = if i % 2 == 0 { Warm::Bytes } else { Warm::Inode };
            paths.push((format!("{i}.json"), how));
        }
        paths.push(("missing/file.json".to_owned(), Warm::Bytes));
        paths.push(("missing.json".to_owned(), Warm::Inode));
        let before = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(warm(dir.path(), &paths), 40);
        assert_eq!(warm(dir.path(), &paths[..3]), 3);
        assert_eq!(warm(dir.path(), &[]), 0);
        // Warming reads; it creates, changes and removes nothing.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), before);
        assert_eq!(
            std::fs::read(dir.path().join("8.json")).unwrap(),
            vec![b'x'; 800]
        );
    }
}
