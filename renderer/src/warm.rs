//! Bringing the files a round is about to touch into the page cache together (ARCHITECTURE.md,
//! "The write path of a report-in", steps 5 and 6): the vows' files before their render, the
//! manifest's leaf bins before the signer replaces them. A vow's render reads and replaces
//! its files one at a time, so when they are not cached every lookup, inode and page
//! waits for the disk on its own, one request in flight per render thread. Warmed first from
//! many threads at once, the same reads reach the disk together and its queue stays full: a
//! virtual disk that answers one 4 KiB read in about 70 µs answers 16 at once in about 290.

use std::time::{Duration, Instant};

use conduct_indexer::tree::Tree;
pub use conduct_indexer::tree::Warm;

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
    /// Warm ([`Tree::warm`]) the paths `paths()` names, unless a recent warming found everything cached
    /// (then `paths` is not called: a skipped round builds no list): how many were there,
    /// `None` when skipped.
    pub fn warm(
        &mut self,
        tree: &dyn Tree,
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
        let found = tree.warm(&paths);
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
        let tree = conduct_indexer::tree::Dir::open(dir.path()).unwrap();
        let paths = || vec![("a".to_owned(), Warm::Bytes), ("b".to_owned(), Warm::Inode)];
        let mut w = Warmer::default();
        assert_eq!(w.warm(&tree, Vec::new), Some(0));
        assert_eq!(w.warm(&tree, paths), Some(1));
        // After a warming that found everything cached, the next ones are skipped, then one
        // is tried again.
        w.skip = SKIP_WHEN_CACHED;
        for _ in 0..SKIP_WHEN_CACHED {
            assert_eq!(w.warm(&tree, paths), None);
        }
        assert_eq!(w.warm(&tree, paths), Some(1));
    }
}
