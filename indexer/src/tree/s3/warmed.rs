//! What a bucket's [`crate::tree::Tree::warm`] fetched for the reads that follow: the bytes
//! and time (or the absence) of each path, fetched many at once, answering its heads until
//! the first read of its bytes takes it, never after, within a byte budget.
//!
//! Only the process's own writes change the tree, and each put or delete of a path drops its
//! entry; a put that lands while a warming is in flight also keeps that warming from keeping
//! what it fetched of the path (it may predate the put). So a read answered from here answers
//! what a read of the bucket would.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::SystemTime;

use conduct_core::sync::lock;

/// Bytes of fetched objects kept at most.
const BUDGET: usize = 32 << 20;

/// An object as fetched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Fetched {
    /// Its bytes.
    pub(super) bytes: Vec<u8>,
    /// When it was last written.
    pub(super) modified: SystemTime,
}

fn cost(path: &str, f: &Option<Fetched>) -> usize {
    path.len() + f.as_ref().map_or(0, |f| f.bytes.len())
}

/// The fetched entries.
#[derive(Debug, Default)]
pub(super) struct Warmed {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Path -> the object, `None` for none.
    entries: HashMap<String, Option<Fetched>>,
    bytes: usize,
    /// Warmings in flight.
    warming: usize,
    /// Paths written while a warming was in flight: what it fetched of them is not kept.
    written: HashSet<String>,
}

impl Warmed {
    /// A warming starts: writes from now on are noted until it [`Warmed::keep`]s.
    pub(super) fn start(&self) {
        lock(&self.inner).warming += 1;
    }

    /// A warming ends with what it fetched (`None`: no object; failed fetches are left out):
    /// keep each entry no write overtook, within the budget. How many were kept.
    pub(super) fn keep(&self, fetched: Vec<(String, Option<Fetched>)>) -> usize {
        let mut g = lock(&self.inner);
        let mut kept = 0;
        for (path, object) in fetched {
            let len = cost(&path, &object);
            if g.written.contains(&path) || g.bytes + len > BUDGET {
                continue;
            }
            if let Some(old) = g.entries.insert(path.clone(), object) {
                g.bytes -= cost(&path, &old);
            }
            g.bytes += len;
            kept += 1;
        }
        g.warming -= 1;
        if g.warming == 0 {
            g.written.clear();
        }
        kept
    }

    /// The fetched bytes of `path`, taken (a second read goes to the bucket).
    pub(super) fn take(&self, path: &str) -> Option<Option<Vec<u8>>> {
        let mut g = lock(&self.inner);
        let taken = g.entries.remove(path)?;
        g.bytes -= cost(path, &taken);
        Some(taken.map(|f| f.bytes))
    }

    /// The fetched length and time of `path`, left for a read of its bytes.
    pub(super) fn peek(&self, path: &str) -> Option<Option<(u64, SystemTime)>> {
        let g = lock(&self.inner);
        let f = g.entries.get(path)?;
        Some(f.as_ref().map(|f| (f.bytes.len() as u64, f.modified)))
    }

    /// `path` is being written (put or deleted): its entry goes, and a warming in flight does
    /// not keep what it fetched of it.
    pub(super) fn written(&self, path: &str) {
        let mut g = lock(&self.inner);
        if let Some(old) = g.entries.remove(path) {
            g.bytes -= cost(path, &old);
        }
        if g.warming > 0 {
            g.written.insert(path.to_owned());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(b: &[u8]) -> Option<Fetched> {
        Some(Fetched {
            bytes: b.to_vec(),
            modified: SystemTime::UNIX_EPOCH,
        })
    }

    #[test]
    fn an_entry_is_taken_once_and_a_write_drops_or_overtakes_it() {
        let w = Warmed::default();
        w.start();
        assert_eq!(w.keep(vec![("a".into(), at(b"1")), ("b".into(), None)]), 2);
        assert_eq!(w.peek("a"), Some(Some((1, SystemTime::UNIX_EPOCH))));
        assert_eq!(
            w.peek("a"),
            Some(Some((1, SystemTime::UNIX_EPOCH))),
            "a head leaves it"
        );
        assert_eq!(w.take("a"), Some(Some(b"1".to_vec())));
        assert_eq!(w.peek("a"), None);
        assert_eq!(w.take("a"), None, "taken once");
        assert_eq!(w.take("b"), Some(None), "an absence is kept too");
        // A put drops a kept entry.
        w.start();
        w.keep(vec![("c".into(), at(b"old"))]);
        w.written("c");
        assert_eq!(w.take("c"), None);
        // A put during a warming keeps that warming from keeping the path.
        w.start();
        w.written("d");
        assert_eq!(
            w.keep(vec![("d".into(), at(b"stale")), ("e".into(), at(b"5"))]),
            1
        );
        assert_eq!(w.take("d"), None);
        assert_eq!(w.take("e"), Some(Some(b"5".to_vec())));
        // Once no warming is in flight, later fetches of the path are kept again.
        w.start();
        assert_eq!(w.keep(vec![("d".into(), at(b"new"))]), 1);
        assert_eq!(lock(&w.inner).bytes, "d".len() + 3);
    }

    #[test]
    fn the_budget_bounds_what_is_kept() {
        let w = Warmed::default();
        w.start();
        let big = at(&vec![0u8; BUDGET / 2]);
        let kept = w.keep(vec![
            ("x".into(), big.clone()),
            ("y".into(), big.clone()),
            ("z".into(), big),
        ]);
        assert_eq!(kept, 1);
        assert!(lock(&w.inner).bytes <= BUDGET);
    }
}
