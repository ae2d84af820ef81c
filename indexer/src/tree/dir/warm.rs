//! Bringing a directory tree's files into the page cache together, from many threads
//! ([`crate::tree::Tree::warm`]; why, in the renderer's `warm.rs`).

use std::io::Read;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::tree::Warm;

/// Threads that warm at once: the disk's queue depth this aims for.
pub const WARMERS: usize = 16;

/// Paths a warming thread is started for at the least (a thread costs about as much to start
/// as a few cached lookups).
const PATHS_A_THREAD: usize = 4;

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
