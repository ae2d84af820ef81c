//! The publisher's side of the manifest: which bin holds a file (the trie's shape, read from
//! disk as it is first needed) and the listings of the leaves in use. Memory is the shape
//! (a few bytes a bin) plus a bounded cache of listings, never the whole file list.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use conduct_core::manifest::{bin_path, is_manifest_path, key};
use conduct_core::signing::PinnedKey;
use conduct_indexer::tree::{SharedTree, Tree, Warm};
use sha2::{Digest, Sha256};

use super::{digit_index, parse_bin, should_split, split, Body, Listing, Sha};

/// What [`Trie::load`] found.
enum Loaded {
    Leaf,
    Interior,
    /// A bin that did not verify, rebuilt as a leaf.
    Rebuilt,
}

/// Levels of the trie [`Trie::preload`] reads at most (a million vows' tree is four deep).
const MAX_PRELOAD_LEVELS: usize = 8;

/// What the trie knows of one child of an interior bin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// No such bin (no file has a key with its prefix).
    Absent,
    /// Its parent lists it; not read yet.
    Unknown,
    /// A leaf.
    Leaf,
    /// An interior bin.
    Interior,
}

#[derive(Debug, Clone, Copy)]
struct Child {
    state: State,
    /// Files under it.
    files: u64,
}

const ABSENT: Child = Child {
    state: State::Absent,
    files: 0,
};

/// A leaf's listing in the cache.
#[derive(Debug)]
struct Leaf {
    files: Arc<Listing>,
    /// Last use (the trie's clock), for eviction.
    used: u64,
    /// The round that last took it for signing (0: none yet).
    sent: u64,
}

/// The trie's shape and the leaves in use.
#[derive(Debug)]
pub struct Trie {
    site: SharedTree,
    split_at: usize,
    /// Interior bins (the root is `""`): their 16 children.
    interiors: HashMap<String, [Child; 16]>,
    /// Cached leaf listings.
    leaves: HashMap<String, Leaf>,
    /// Entries held by `leaves`.
    cached: usize,
    /// The key bins read from disk must verify under.
    pinned: Option<PinnedKey>,
    /// Leaves changed since the last round, and the entries they hold.
    dirty: BTreeSet<String>,
    dirty_entries: usize,
    /// Prefixes whose bins were replaced since the last round: split into an interior
    /// (`true`), or rebuilt as a leaf from the disk (`false`).
    fresh: Vec<(String, bool)>,
    clock: u64,
}

/// What [`Trie::take_round`] hands to the signer.
pub(crate) type Taken = (Vec<(String, Arc<Listing>)>, Vec<(String, bool)>);

impl Trie {
    /// An empty trie for the tree at `site` (nothing read from disk).
    pub fn new(site: SharedTree, split_at: usize) -> Trie {
        let mut interiors = HashMap::new();
        interiors.insert(String::new(), [ABSENT; 16]);
        Trie {
            site,
            split_at,
            interiors,
            leaves: HashMap::new(),
            cached: 0,
            pinned: None,
            dirty: BTreeSet::new(),
            dirty_entries: 0,
            fresh: Vec::new(),
            clock: 0,
        }
    }

    /// A trie whose root lists `children` (read from `manifest.json`); every bin below is read
    /// when first needed, and must verify under `pinned`.
    pub fn seeded(
        site: SharedTree,
        split_at: usize,
        children: &super::Children,
        pinned: PinnedKey,
    ) -> Trie {
        let mut t = Trie::new(site, split_at);
        t.interiors.insert(String::new(), children_of(children));
        t.pinned = Some(pinned);
        t
    }

    /// Files a leaf holds before it splits.
    pub fn split_at(&self) -> usize {
        self.split_at
    }

    /// Read the bins down to `prefix` (a bin that does not verify is rebuilt from the disk).
    pub fn touch(&mut self, prefix: &str) {
        let mut k = prefix.to_owned();
        while k.len() < conduct_core::manifest::KEY_DIGITS {
            k.push('0');
        }
        let _ = self.leaf_of(&k, false);
    }

    /// The key bins read back must verify under.
    pub fn set_pinned(&mut self, pinned: PinnedKey) {
        self.pinned = Some(pinned);
    }

    /// Files listed.
    pub fn total(&self) -> u64 {
        self.interiors[""].iter().map(|c| c.files).sum()
    }

    /// True when a file changed since the last round.
    pub fn is_dirty(&self) -> bool {
        !self.dirty.is_empty() || !self.fresh.is_empty()
    }

    /// Entries held by changed leaves (memory the next round frees).
    pub fn dirty_entries(&self) -> usize {
        self.dirty_entries
    }

    /// What the listing says of `path`: (SHA-256, length), or `None` when it is not listed.
    pub fn get(&mut self, path: &str) -> Option<(Sha, u64)> {
        let leaf = self.leaf_of(&key(path), false)?;
        self.leaves.get(&leaf)?.files.get(path).copied()
    }

    /// List `path` as (SHA-256, length). Returns whether the listing changed. A path the
    /// manifest does not list (a chain page, [`conduct_core::manifest::listed`]) is not
    /// listed, and a listing of it (from a `conduct.manifest/v2` tree) is dropped.
    pub fn insert(&mut self, path: &str, sha: Sha, len: u64) -> bool {
        if !conduct_core::manifest::listed(path) {
            return self.remove(path);
        }
        let k = key(path);
        let Some(leaf) = self.leaf_of(&k, true) else {
            return false;
        };
        let Some(l) = self.leaves.get_mut(&leaf) else {
            return false;
        };
        if l.files.get(path) == Some(&(sha, len)) {
            return false;
        }
        let files = Arc::make_mut(&mut l.files);
        let new = files.insert(path.to_owned(), (sha, len)).is_none();
        let n = files.len();
        if new {
            self.cached += 1;
            self.count(&leaf, 1);
        }
        if self.dirty.insert(leaf.clone()) {
            self.dirty_entries += n;
        } else if new {
            self.dirty_entries += 1;
        }
        if n > self.split_at {
            self.maybe_split(&leaf);
        }
        true
    }

    /// Stop listing `path`. Returns whether the listing changed.
    pub fn remove(&mut self, path: &str) -> bool {
        let Some(leaf) = self.leaf_of(&key(path), false) else {
            return false;
        };
        let Some(l) = self.leaves.get_mut(&leaf) else {
            return false;
        };
        if !l.files.contains_key(path) {
            return false;
        }
        let files = Arc::make_mut(&mut l.files);
        files.remove(path);
        let n = files.len();
        self.cached -= 1;
        self.count(&leaf, -1);
        if self.dirty.insert(leaf) {
            self.dirty_entries += n;
        }
        true
    }

    /// Add `by` to the file counts of `leaf` and its ancestors.
    fn count(&mut self, leaf: &str, by: i64) {
        for depth in 0..leaf.len() {
            let d = digit_index(leaf.as_bytes()[depth]);
            if let Some(node) = self.interiors.get_mut(&leaf[..depth]) {
                node[d].files = node[d].files.saturating_add_signed(by);
            }
        }
    }

    /// Split the leaf `prefix` if it is over the threshold (and again below, as needed).
    fn maybe_split(&mut self, prefix: &str) {
        let Some(l) = self.leaves.get(prefix) else {
            return;
        };
        if !should_split(prefix, &l.files, self.split_at) {
            return;
        }
        let Some(l) = self.leaves.remove(prefix) else {
            return;
        };
        let files = Arc::unwrap_or_clone(l.files);
        self.cached -= files.len();
        if self.dirty.remove(prefix) {
            self.dirty_entries = self.dirty_entries.saturating_sub(files.len());
        }
        let mut node = [ABSENT; 16];
        let parts = split(prefix, files);
        for (d, part) in &parts {
            node[digit_index(*d)] = Child {
                state: State::Leaf,
                files: part.len() as u64,
            };
        }
        self.interiors.insert(prefix.to_owned(), node);
        self.set_state(prefix, State::Interior);
        self.fresh.push((prefix.to_owned(), true));
        let mut children = Vec::new();
        for (d, part) in parts {
            let child = format!("{prefix}{}", d as char);
            self.cached += part.len();
            self.dirty_entries += part.len();
            self.dirty.insert(child.clone());
            self.clock += 1;
            self.leaves.insert(
                child.clone(),
                Leaf {
                    files: Arc::new(part),
                    used: self.clock,
                    sent: 0,
                },
            );
            children.push(child);
        }
        for c in children {
            self.maybe_split(&c);
        }
    }

    /// Set the state of the bin `prefix` in its parent.
    fn set_state(&mut self, prefix: &str, state: State) {
        let (parent, d) = prefix.split_at(prefix.len() - 1);
        if let Some(node) = self.interiors.get_mut(parent) {
            node[digit_index(d.as_bytes()[0])].state = state;
        }
    }

    /// The leaf whose prefix starts `key`, its listing in the cache (read from disk, or rebuilt
    /// from the files on disk when its bin does not verify). `None` when there is none and
    /// `create` is false.
    fn leaf_of(&mut self, key: &str, create: bool) -> Option<String> {
        let mut p = String::new();
        loop {
            if p.len() >= key.len() {
                return None;
            }
            let d = key.as_bytes()[p.len()];
            let i = digit_index(d);
            let child = self.interiors.get(&p)?[i];
            let c = format!("{p}{}", d as char);
            match child.state {
                State::Interior => {
                    p = c;
                    continue;
                }
                State::Absent => {
                    if !create {
                        return None;
                    }
                    self.interiors.get_mut(&p)?[i].state = State::Leaf;
                    self.clock += 1;
                    self.leaves.insert(
                        c.clone(),
                        Leaf {
                            files: Arc::new(Listing::new()),
                            used: self.clock,
                            sent: 0,
                        },
                    );
                    return Some(c);
                }
                State::Leaf if self.leaves.contains_key(&c) => {
                    self.clock += 1;
                    let now = self.clock;
                    if let Some(l) = self.leaves.get_mut(&c) {
                        l.used = now;
                    }
                    return Some(c);
                }
                State::Leaf | State::Unknown => match self.load(&c) {
                    Loaded::Interior => {
                        p = c;
                        continue;
                    }
                    Loaded::Leaf | Loaded::Rebuilt => return Some(c),
                },
            }
        }
    }

    /// Read the bin `c` (listed by its read parent, not read itself) into the trie: a leaf's
    /// listing into the cache, an interior's children; one that does not verify is rebuilt
    /// from the files on disk.
    fn load(&mut self, c: &str) -> Loaded {
        match self.read(c) {
            Ok(Body::Files(files)) => {
                self.set_state(c, State::Leaf);
                self.cached += files.len();
                self.clock += 1;
                self.leaves.insert(
                    c.to_owned(),
                    Leaf {
                        files: Arc::new(files),
                        used: self.clock,
                        sent: 0,
                    },
                );
                Loaded::Leaf
            }
            Ok(Body::Bins(children)) => {
                self.set_state(c, State::Interior);
                self.interiors.insert(c.to_owned(), children_of(&children));
                Loaded::Interior
            }
            Err(e) => {
                tracing::error!(bin = %bin_path(c), error = %e,
                    "a manifest bin does not verify; rebuilding it from the files on disk");
                self.rebuild(c);
                Loaded::Rebuilt
            }
        }
    }

    /// Read the bins the lookups of `paths` would read one after another, a level of the trie
    /// at a time and each level's bins together (warmed first: a bucket fetches them at once,
    /// where a lookup pays a round trip a bin).
    pub fn preload<'a>(&mut self, paths: impl IntoIterator<Item = &'a str>) {
        let keys: Vec<String> = paths
            .into_iter()
            .filter(|p| conduct_core::manifest::listed(p))
            .map(key)
            .collect();
        for _ in 0..MAX_PRELOAD_LEVELS {
            let unread: BTreeSet<String> =
                keys.iter().filter_map(|k| self.unread_on_way(k)).collect();
            if unread.is_empty() {
                return;
            }
            let warm: Vec<(String, Warm)> =
                unread.iter().map(|c| (bin_path(c), Warm::Bytes)).collect();
            self.site.warm(&warm);
            for c in &unread {
                self.load(c);
            }
        }
    }

    /// The first bin on `key`'s way down from the root that its parent lists and that is not
    /// read yet; `None` when the way is read to its leaf (or ends).
    fn unread_on_way(&self, key: &str) -> Option<String> {
        let mut p = String::new();
        loop {
            if p.len() >= key.len() {
                return None;
            }
            let d = key.as_bytes()[p.len()];
            let child = self.interiors.get(&p)?[digit_index(d)];
            let c = format!("{p}{}", d as char);
            match child.state {
                State::Interior => p = c,
                State::Absent => return None,
                State::Leaf if self.leaves.contains_key(&c) => return None,
                State::Leaf | State::Unknown => return Some(c),
            }
        }
    }

    fn read(&self, prefix: &str) -> Result<Body, String> {
        let pinned = self
            .pinned
            .as_ref()
            .ok_or("no key to check it with".to_owned())?;
        let path = bin_path(prefix);
        let bytes = match self.site.get(&path) {
            Ok(Some(b)) => b,
            Ok(None) => return Err(format!("{path}: not in the tree")),
            Err(e) => return Err(format!("{path}: {e}")),
        };
        parse_bin(&bytes, prefix, pinned)
    }

    /// Replace the bin `prefix` (and whatever was under it) by a leaf listing the files on
    /// disk whose key starts with it: a walk of the whole tree, for a bin lost or damaged.
    pub fn rebuild(&mut self, prefix: &str) {
        let files = files_on_disk(self.site.as_ref(), prefix);
        self.interiors.retain(|k, _| !k.starts_with(prefix));
        let gone: Vec<String> = self
            .leaves
            .keys()
            .filter(|k| k.starts_with(prefix))
            .cloned()
            .collect();
        for g in gone {
            if let Some(l) = self.leaves.remove(&g) {
                self.cached -= l.files.len();
            }
            if self.dirty.remove(&g) {
                self.dirty_entries = self.dirty_entries.saturating_sub(1);
            }
        }
        let (parent, d) = prefix.split_at(prefix.len() - 1);
        let old = self
            .interiors
            .get(parent)
            .map_or(0, |n| n[digit_index(d.as_bytes()[0])].files);
        self.set_state(prefix, State::Leaf);
        self.count(prefix, files.len() as i64 - old as i64);
        self.cached += files.len();
        self.dirty_entries += files.len();
        self.dirty.insert(prefix.to_owned());
        self.fresh.push((prefix.to_owned(), false));
        self.clock += 1;
        self.leaves.insert(
            prefix.to_owned(),
            Leaf {
                files: Arc::new(files),
                used: self.clock,
                sent: 0,
            },
        );
        self.maybe_split(prefix);
    }

    /// Hand the changed leaves (and replaced prefixes) to round `no`.
    pub fn take_round(&mut self, no: u64) -> Taken {
        let mut leaves = Vec::with_capacity(self.dirty.len());
        for p in std::mem::take(&mut self.dirty) {
            if let Some(l) = self.leaves.get_mut(&p) {
                l.sent = no;
                leaves.push((p, l.files.clone()));
            }
        }
        self.dirty_entries = 0;
        (leaves, std::mem::take(&mut self.fresh))
    }

    /// Forget the least recently used listings over `budget` entries, among those written by
    /// round `done` or before (a listing not yet on disk stays).
    pub fn evict(&mut self, done: u64, budget: usize) {
        if self.cached <= budget {
            return;
        }
        let mut old: Vec<(u64, String)> = self
            .leaves
            .iter()
            .filter(|(p, l)| l.sent <= done && !self.dirty.contains(*p))
            .map(|(p, l)| (l.used, p.clone()))
            .collect();
        old.sort_unstable();
        for (_, p) in old {
            if self.cached <= budget / 4 * 3 {
                break;
            }
            if let Some(l) = self.leaves.remove(&p) {
                self.cached -= l.files.len();
            }
        }
    }

    /// Every entry of the cached listings (for a publisher that has not signed yet and is
    /// about to be seeded from the disk: all it has is here).
    pub fn entries(&self) -> Vec<(String, Sha, u64)> {
        self.leaves
            .values()
            .flat_map(|l| l.files.iter().map(|(p, (s, n))| (p.clone(), *s, *n)))
            .collect()
    }
}

fn children_of(children: &super::Children) -> [Child; 16] {
    let mut node = [ABSENT; 16];
    for (d, r) in children {
        node[digit_index(*d)] = Child {
            state: State::Unknown,
            files: r.files,
        };
    }
    node
}

/// The files of `site` the manifest lists (outside `log/` and the manifest, but the chain
/// pages) whose key starts with `prefix`, hashed: a walk of the whole tree, a directory at a
/// time, that skips the log and the manifest.
pub(crate) fn files_on_disk(site: &dyn Tree, prefix: &str) -> Listing {
    let mut out = Listing::new();
    let mut dirs = vec![String::new()];
    while let Some(dir) = dirs.pop() {
        let Ok(level) = site.children(&dir) else {
            continue;
        };
        dirs.extend((level.dirs.into_iter()).filter(|d| d != "log" && !is_manifest_path(d)));
        for f in level.files {
            let rel = f.path;
            if is_manifest_path(&rel)
                || !conduct_core::manifest::listed(&rel)
                || !key(&rel).starts_with(prefix)
            {
                continue;
            }
            if let Ok(Some(bytes)) = site.get(&rel) {
                out.insert(rel, (Sha256::digest(&bytes).into(), bytes.len() as u64));
            }
        }
    }
    out
}
