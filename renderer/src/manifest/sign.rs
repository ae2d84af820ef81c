//! The signer's side of the manifest: each interior bin's children (read from disk as first
//! needed), and a round: the changed leaves written, then each ancestor, deepest first, then
//! the root, so a bin is on disk before any bin that names it.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use conduct_core::manifest::{bin_path, bin_prefix, BIN_DIR, DIGITS};
use conduct_core::signing::{PinnedKey, ServiceKey};
use conduct_indexer::durable::{sync_dir, write_in_place};
use conduct_indexer::tree::{Put, SharedTree};
use sha2::{Digest, Sha256};

use super::{interior_bytes, leaf_bytes, parse_bin, root_bytes, BinRef, Body, Children, Listing};
use crate::warm::{Warm, Warmer};
use crate::RenderError;

/// What one round signs.
#[derive(Debug, Default)]
pub struct Round {
    /// Changed leaves and their listings.
    pub leaves: BTreeMap<String, Arc<Listing>>,
    /// Prefixes whose bins were replaced (split: `true`; rebuilt as a leaf: `false`), in order.
    pub fresh: Vec<(String, bool)>,
    /// Sign the root as of `.0`, valid `.1` seconds; `None`: write the bins only (a publisher
    /// freeing memory in the middle of a long render).
    pub root: Option<(u64, u64)>,
}

impl Round {
    /// Fold a later round into this one.
    pub fn merge(&mut self, later: Round) {
        for (f, _) in &later.fresh {
            // A replaced prefix's earlier leaves are in the later round's new bins.
            self.leaves.retain(|p, _| !p.starts_with(f.as_str()));
        }
        self.fresh.extend(later.fresh);
        self.leaves.extend(later.leaves);
        if later.root.is_some() {
            self.root = later.root;
        }
    }
}

/// What a round wrote.
#[derive(Debug, Default, Clone, Copy)]
pub struct Written {
    /// Bins written, the root included.
    pub bins: usize,
    /// Their bytes.
    pub bytes: u64,
}

/// The interior bins as the signer knows them.
#[derive(Debug)]
pub struct SignState {
    site: SharedTree,
    key: ServiceKey,
    pinned: PinnedKey,
    /// Interior bins read or written so far (the root is `""`): their children.
    interiors: HashMap<String, Children>,
    /// Interior bins to re-sign in the next round (a child on disk differs from what they say).
    pending: BTreeSet<String>,
    /// Prefixes under which bins that nothing names are removed once the next root is written.
    sweep: Vec<String>,
    /// The round mark ([`SignState::mark_rounds_at`]), when kept.
    mark: Option<PathBuf>,
    /// The round mark is known absent (removed, durably, since the last root).
    open: bool,
    /// Warms a round's leaf bins before they are replaced.
    warmer: Warmer,
}

impl SignState {
    /// The signer of a manifest built from nothing: once its first root is written, every
    /// other bin file under `manifest/` is removed.
    pub fn fresh(site: SharedTree, key: &ServiceKey) -> Result<SignState, RenderError> {
        let mut interiors = HashMap::new();
        interiors.insert(String::new(), Children::new());
        Ok(SignState {
            site,
            key: key.clone(),
            pinned: pinned(key)?,
            interiors,
            pending: BTreeSet::new(),
            sweep: vec![String::new()],
            mark: None,
            open: false,
            warmer: Warmer::default(),
        })
    }

    /// Keep the round mark at `path` from now on: a file holding the SHA-256 of the root
    /// written last, written once that root is and its round is swept, and removed (durably)
    /// before the next round writes its first bin. While it names the root on disk, no round
    /// was cut after that root, so a restart need not look for bins newer than the root: with
    /// a million vows, a stat of each of 440,000 bins (BENCHMARKS.md, section 15).
    pub fn mark_rounds_at(&mut self, path: PathBuf) {
        self.mark = Some(path);
        self.open = false;
    }

    /// Whether the round mark at `mark` names the root `root` (its bytes): the last round
    /// closed with that root, and no bin was written after it.
    pub fn closed_at(mark: &Path, root: &[u8]) -> bool {
        std::fs::read(mark).is_ok_and(|m| m == hex::encode(Sha256::digest(root)).as_bytes())
    }

    /// Remove the round mark, durably, before a round's first bin is written.
    fn open_round(&mut self) -> Result<(), RenderError> {
        let Some(mark) = self.mark.as_ref().filter(|_| !self.open) else {
            return Ok(());
        };
        let failed = |e: std::io::Error| {
            RenderError::Input(format!("removing the round mark {}: {e}", mark.display()))
        };
        match std::fs::remove_file(mark) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(failed(e)),
        }
        if let Some(dir) = mark.parent() {
            sync_dir(dir).map_err(failed)?;
        }
        self.open = true;
        Ok(())
    }

    /// Write the round mark for the root `root` just written: in place, neither renamed nor
    /// synced (a mark that a crash lost or cut short names no root, and only costs the next
    /// restart its look for newer bins; nor is a temporary left in the state directory).
    fn close_round(&mut self, root: &[u8]) {
        let Some(mark) = &self.mark else {
            return;
        };
        match write_in_place(mark, hex::encode(Sha256::digest(root)).as_bytes(), 0o600) {
            Ok(_) => self.open = false,
            Err(e) => tracing::warn!(mark = %mark.display(), error = %e, "round mark not written"),
        }
    }

    /// The signer of the manifest on disk whose root lists `children`.
    pub fn seeded(
        site: SharedTree,
        key: &ServiceKey,
        children: Children,
    ) -> Result<SignState, RenderError> {
        let mut s = SignState::fresh(site, key)?;
        s.interiors.insert(String::new(), children);
        s.sweep.clear();
        Ok(s)
    }

    /// Reconcile the bins `suspects` (written after the root on disk: a round that a crash
    /// cut before its root) with what their parents say: a bin that no parent names is
    /// removed; a parent that names another version of it is re-signed in the next round.
    /// Returns the named bins that do not verify (for the publisher to rebuild).
    pub fn repair(&mut self, mut suspects: Vec<String>) -> Vec<String> {
        suspects.sort_by_key(String::len);
        let mut lost = Vec::new();
        for s in suspects {
            let (parent, d) = s.split_at(s.len() - 1);
            let d = d.as_bytes()[0];
            let named = match self.try_load(parent) {
                Ok(true) => self.interiors.get(parent).and_then(|c| c.get(&d)).copied(),
                Ok(false) => None,
                Err(e) => {
                    tracing::warn!(bin = %bin_path(parent), error = %e, "manifest bin unreadable");
                    continue;
                }
            };
            let Some(named) = named else {
                let _ = self.site.delete(&bin_path(&s));
                continue;
            };
            match self.read(&s) {
                Ok((bytes, body)) => {
                    let actual = BinRef::of(&bytes, body.files());
                    if actual != named {
                        self.set_child(parent, d, actual);
                    }
                }
                Err(_) => lost.push(s),
            }
        }
        lost
    }

    fn set_child(&mut self, parent: &str, d: u8, r: BinRef) {
        if let Some(c) = self.interiors.get_mut(parent) {
            c.insert(d, r);
            self.pending.insert(parent.to_owned());
        }
    }

    fn read(&self, prefix: &str) -> Result<(Vec<u8>, Body), String> {
        let path = bin_path(prefix);
        let bytes = match self.site.get(&path) {
            Ok(Some(b)) => b,
            Ok(None) => return Err(format!("{path}: not in the tree")),
            Err(e) => return Err(format!("{path}: {e}")),
        };
        let body = parse_bin(&bytes, prefix, &self.pinned)?;
        Ok((bytes, body))
    }

    /// Read the interior bin `q` and its ancestors, each checked against what its parent
    /// says (a newer bin a crash left is taken, and its parent re-signed). `Ok(false)` when
    /// `q` is not an interior bin of the trie (its parent does not name it, or it is a leaf).
    fn try_load(&mut self, q: &str) -> Result<bool, String> {
        for depth in 1..=q.len() {
            let r = &q[..depth];
            if self.interiors.contains_key(r) {
                continue;
            }
            let (parent, d) = r.split_at(depth - 1);
            let d = d.as_bytes()[0];
            let Some(named) = self.interiors.get(parent).and_then(|c| c.get(&d)).copied() else {
                return Ok(false);
            };
            let (bytes, body) = self.read(r)?;
            let Body::Bins(children) = body else {
                return Ok(false);
            };
            let actual = BinRef::of(&bytes, children.values().map(|c| c.files).sum());
            if actual != named {
                self.set_child(parent, d, actual);
            }
            self.interiors.insert(r.to_owned(), children);
        }
        Ok(self.interiors.contains_key(q))
    }

    fn write(&self, prefix: &str, bytes: &[u8], w: &mut Written) -> Result<(), RenderError> {
        self.write_all(&[(prefix.to_owned(), bytes.to_vec())], w)
    }

    /// Write the bins `bins` (prefix, bytes) together (`Tree::put_many`: a bucket has many in
    /// flight); the first that failed is the error.
    fn write_all(&self, bins: &[(String, Vec<u8>)], w: &mut Written) -> Result<(), RenderError> {
        let paths: Vec<String> = bins.iter().map(|(p, _)| bin_path(p)).collect();
        let puts: Vec<(&str, &[u8], Put)> = paths
            .iter()
            .zip(bins)
            .map(|(path, (_, bytes))| (path.as_str(), bytes.as_slice(), Put::PAGE))
            .collect();
        let done = self.site.put_many(&puts);
        let mut failed = None;
        for ((path, bytes, _), r) in puts.iter().zip(done) {
            match r {
                Ok(()) => {
                    conduct_indexer::metrics::count_tree_write(path);
                    w.bins += 1;
                    w.bytes += bytes.len() as u64;
                }
                Err(e) => {
                    failed.get_or_insert_with(|| format!("writing {path}: {e}"));
                }
            }
        }
        failed.map_or(Ok(()), |e| Err(RenderError::Input(e)))
    }

    /// Sign and write `round`: its leaves, every ancestor of a changed bin (deepest first),
    /// then the root when asked. A failed round can be run again (merged with later ones).
    pub fn process(&mut self, round: &Round) -> Result<Written, RenderError> {
        for (f, interior) in &round.fresh {
            self.interiors.retain(|k, _| !k.starts_with(f.as_str()));
            self.pending.retain(|k| !k.starts_with(f.as_str()));
            if *interior {
                self.interiors.insert(f.clone(), Children::new());
            }
            self.sweep.push(f.clone());
        }
        self.open_round()?;
        // Each leaf replaces its bin: a lookup in a directory of every bin and the old
        // bin's inode, one leaf after another. Warmed first, all at once.
        self.warmer.warm(self.site.as_ref(), || {
            let leaves = round.leaves.keys();
            leaves.map(|p| (bin_path(p), Warm::Inode)).collect()
        });
        let mut w = Written::default();
        let mut changed: HashMap<String, BinRef> = HashMap::new();
        let mut todo: BTreeMap<usize, BTreeSet<String>> = BTreeMap::new();
        // The leaves together, then each level of their ancestors together, deepest first,
        // then the root: a bin is written only after every bin it names.
        let mut leaves = Vec::with_capacity(round.leaves.len());
        for (p, files) in &round.leaves {
            let bytes = leaf_bytes(&self.key, p, files)?;
            changed.insert(p.clone(), BinRef::of(&bytes, files.len() as u64));
            todo.entry(p.len() - 1)
                .or_default()
                .insert(p[..p.len() - 1].to_owned());
            leaves.push((p.clone(), bytes));
        }
        self.write_all(&leaves, &mut w)?;
        for q in &self.pending {
            todo.entry(q.len()).or_default().insert(q.clone());
        }
        while let Some((depth, qs)) = todo.pop_last() {
            let mut level = Vec::new();
            for q in qs {
                if !self.try_load(&q).map_err(RenderError::Input)? {
                    return Err(RenderError::Input(format!(
                        "{}: not an interior bin of the manifest",
                        bin_path(&q)
                    )));
                }
                let Some(children) = self.interiors.get_mut(&q) else {
                    continue;
                };
                for &d in DIGITS {
                    if let Some(r) = changed.get(&format!("{q}{}", d as char)) {
                        children.insert(d, *r);
                    }
                }
                if depth == 0 {
                    continue; // The root, below.
                }
                let bytes = interior_bytes(&self.key, &q, children)?;
                let files = children.values().map(|r| r.files).sum();
                changed.insert(q.clone(), BinRef::of(&bytes, files));
                todo.entry(depth - 1)
                    .or_default()
                    .insert(q[..depth - 1].to_owned());
                level.push((q, bytes));
            }
            self.write_all(&level, &mut w)?;
        }
        self.pending.clear();
        if let Some((as_of, ttl)) = round.root {
            let children = self.interiors.entry(String::new()).or_default();
            let bytes = root_bytes(&self.key, children, as_of, ttl)?;
            self.write("", &bytes, &mut w)?;
            let sweep = std::mem::take(&mut self.sweep);
            self.sweep_orphans(&sweep);
            self.close_round(&bytes);
        }
        Ok(w)
    }

    /// Remove the bin files under the prefixes `sweep` (each one whose every bin this signer
    /// wrote) that nothing names, in one pass over `manifest/` however many prefixes a round
    /// replaced: a render from nothing replaces every interior bin (about 28,000 at a million
    /// vows), and a pass each made that render quadratic in its bins (BENCHMARKS.md, section 15).
    fn sweep_orphans(&self, sweep: &[String]) {
        if sweep.is_empty() {
            return;
        }
        let swept: HashSet<&str> = sweep.iter().map(String::as_str).collect();
        let Ok(dir) = self.site.children(BIN_DIR) else {
            return;
        };
        for f in dir.files {
            let Some(p) = bin_prefix(&f.path) else {
                continue;
            };
            // The shortest swept prefix above the bin: the one that checks the most levels.
            let Some(from) = (0..p.len()).find(|&n| swept.contains(&p[..n])) else {
                continue;
            };
            let named = (from..p.len()).all(|n| {
                self.interiors
                    .get(&p[..n])
                    .is_some_and(|c| c.contains_key(&p.as_bytes()[n]))
            });
            if !named {
                let _ = self.site.delete(&f.path);
            }
        }
    }
}

fn pinned(key: &ServiceKey) -> Result<PinnedKey, RenderError> {
    PinnedKey::parse(&key.vkey()).map_err(|e| RenderError::Input(format!("the key: {e}")))
}

/// A thread that owns the [`SignState`] and runs rounds as they are sent. Rounds that queue
/// up while it signs are merged into one; a round whose write failed (a full disk) is retried
/// every second, merged with whatever came since. It stops when its sender is dropped.
#[derive(Debug)]
pub struct SignerThread {
    tx: mpsc::Sender<(u64, Round)>,
    thread: std::thread::JoinHandle<()>,
    done: Arc<AtomicU64>,
}

impl SignerThread {
    /// Start the thread over `state`.
    pub fn spawn(mut state: SignState) -> std::io::Result<SignerThread> {
        let (tx, rx) = mpsc::channel::<(u64, Round)>();
        let done = Arc::new(AtomicU64::new(0));
        let finished = done.clone();
        let thread = std::thread::Builder::new()
            .name("manifest-sign".into())
            .spawn(move || {
                let mut failed: Option<(u64, Round)> = None;
                loop {
                    let first = match failed {
                        None => match rx.recv() {
                            Ok(m) => Some(m),
                            Err(_) => break,
                        },
                        Some(_) => match rx.recv_timeout(Duration::from_secs(1)) {
                            Ok(m) => Some(m),
                            Err(mpsc::RecvTimeoutError::Timeout) => None,
                            Err(mpsc::RecvTimeoutError::Disconnected) => break,
                        },
                    };
                    let mut work = failed.take();
                    for (no, r) in first.into_iter().chain(rx.try_iter()) {
                        match &mut work {
                            None => work = Some((no, r)),
                            Some((n, w)) => {
                                *n = no;
                                w.merge(r);
                            }
                        }
                    }
                    let Some((no, round)) = work else {
                        continue;
                    };
                    let started = Instant::now();
                    match state.process(&round) {
                        Ok(w) => {
                            finished.store(no, Ordering::Release);
                            tracing::debug!(
                                bins = w.bins,
                                bytes = w.bytes,
                                leaves = round.leaves.len(),
                                micros = started.elapsed().as_micros() as u64,
                                "manifest signed"
                            );
                        }
                        Err(e) => {
                            tracing::error!(error = %e, "signing the manifest failed; retried every second");
                            failed = Some((no, round));
                        }
                    }
                }
            })?;
        Ok(SignerThread { tx, thread, done })
    }

    /// Ask for round `no`.
    pub fn send(&self, no: u64, round: Round) -> Result<(), RenderError> {
        self.tx
            .send((no, round))
            .map_err(|_| RenderError::Input("the manifest signer stopped".into()))
    }

    /// The last round written.
    pub fn done(&self) -> u64 {
        self.done.load(Ordering::Acquire)
    }

    /// Wait for every round sent to be signed (or to fail), and stop.
    pub fn stop(self) {
        drop(self.tx);
        let _ = self.thread.join();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The round mark is gone, durably, before a round writes its first bin, and back only once
    /// a root is written: a round cut before its root (here, one that writes none) never
    /// leaves a mark a restart would take for a closed round.
    #[test]
    fn the_round_mark_names_the_last_root_and_is_gone_while_a_round_is_open() {
        let site = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        let mark = state.path().join("manifest-closed");
        let key = ServiceKey::from_seed(&[7; 32], "example.org/log");
        std::fs::write(&mark, "a mark of an earlier root").unwrap();
        let mut s = SignState::fresh(
            conduct_indexer::tree::Dir::shared(site.path()).unwrap(),
            &key,
        )
        .unwrap();
        s.mark_rounds_at(mark.clone());
        s.process(&Round::default()).unwrap();
        assert!(!mark.exists(), "a round with no root left the mark");
        s.process(&Round {
            root: Some((1_700_000_000, 3600)),
            ..Round::default()
        })
        .unwrap();
        let root = std::fs::read(site.path().join(conduct_core::manifest::ROOT_PATH)).unwrap();
        assert!(SignState::closed_at(&mark, &root));
        assert!(!SignState::closed_at(&mark, b"another root"));
        s.process(&Round::default()).unwrap();
        assert!(
            !mark.exists(),
            "the next round opened with the mark in place"
        );
    }
}
