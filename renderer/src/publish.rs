//! Incremental publishing into the site directory: writes only files whose bytes changed,
//! keeps the signed manifest (a trie of bins, [`crate::manifest`]; library/MIRRORS.md) in step
//! with them, and re-signs it on demand. One `Publisher` is the only writer of the tree
//! outside `log/`.
//!
//! Memory is the manifest's shape and a bounded cache of bin listings, never the file list: a
//! changed file marks its leaf bin, and a round re-signs the marked leaves, their ancestors and
//! the root. A running service signs rounds on a thread of its own, never holding up a render.

use std::io;
use std::path::PathBuf;
use std::sync::Mutex;

use conduct_core::manifest::{bin_path, bin_prefix, is_manifest_path, BIN_DIR, ROOT_PATH};
use conduct_core::signing::{verify_snapshot, PinnedKey, ServiceKey};
use conduct_core::sync::lock;
use conduct_indexer::tree::{Put, SharedTree};
use sha2::{Digest, Sha256};

use crate::manifest::{parse_bin, Body, Round, Sha, SignState, SignerThread, Trie, SPLIT_AT};
use crate::parallel::map_on_every_core;
use crate::tree::Tree;
use crate::RenderError;

/// Most entries of leaf listings kept in memory once written (about 130 bytes each).
const CACHE_ENTRIES: usize = 1 << 18;

/// Changed entries after which a long render writes its bins before the manifest is asked for
/// (the root follows with the next [`Publisher::write_manifest`]), so its memory stays bounded.
const FLUSH_ENTRIES: usize = 1 << 19;

/// Where rounds are signed.
#[derive(Debug)]
enum Signing {
    /// On the caller's thread; `state` once a key is known, `failed` a round to retry.
    Inline {
        state: Option<Box<SignState>>,
        failed: Option<Round>,
        done: u64,
    },
    /// On a [`SignerThread`].
    Thread(SignerThread),
}

/// The published tree and what the manifest says about it.
#[derive(Debug)]
pub struct Publisher {
    site: SharedTree,
    trie: Mutex<Trie>,
    signing: Signing,
    /// The last round taken.
    round: u64,
    key: Option<ServiceKey>,
    writes: usize,
    /// The round mark, when kept ([`Publisher::mark_rounds_at`]).
    round_mark: Option<PathBuf>,
}

/// Put the file `rel` into `site` (un-synced: the integration mark's barrier makes it
/// durable) and count it.
fn put_object(site: &SharedTree, rel: &str, bytes: &[u8]) -> io::Result<()> {
    site.put(rel, bytes, Put::PAGE.for_path(rel))?;
    conduct_indexer::metrics::count_tree_write(rel);
    Ok(())
}

impl Publisher {
    /// A publisher for `site` whose files are exactly `tree` (just written by
    /// [`Tree::write_to`]).
    pub fn from_tree(site: SharedTree, tree: &Tree) -> Self {
        Self::from_tree_split_at(site, tree, SPLIT_AT)
    }

    /// [`Self::from_tree`] with leaves that split above `split_at` files (tests).
    pub fn from_tree_split_at(site: SharedTree, tree: &Tree, split_at: usize) -> Self {
        let mut trie = Trie::new(site.clone(), split_at);
        for (path, bytes) in &tree.files {
            if !is_manifest_path(path) && !path.starts_with("log/") {
                trie.insert(path, Sha256::digest(bytes).into(), bytes.len() as u64);
            }
        }
        Publisher {
            site,
            trie: Mutex::new(trie),
            signing: Signing::Inline {
                state: None,
                failed: None,
                done: 0,
            },
            round: 0,
            key: None,
            writes: 0,
            round_mark: None,
        }
    }

    /// Keep the manifest's round mark at `path` (outside the tree: `<data>/manifest-closed`),
    /// so a restart over a manifest whose last round closed reads only its root
    /// ([`SignState::mark_rounds_at`]). Call it before any bin is written.
    pub fn mark_rounds_at(&mut self, path: PathBuf) {
        if let Signing::Inline { state: Some(s), .. } = &mut self.signing {
            s.mark_rounds_at(path.clone());
        }
        self.round_mark = Some(path);
    }

    /// A signer over the manifest on disk whose root lists `children` (from nothing when
    /// `None`), keeping this publisher's round mark.
    fn sign_state(
        &self,
        key: &ServiceKey,
        children: Option<crate::manifest::Children>,
    ) -> Result<SignState, RenderError> {
        let mut s = match children {
            Some(c) => SignState::seeded(self.site.clone(), key, c)?,
            None => SignState::fresh(self.site.clone(), key)?,
        };
        if let Some(m) = &self.round_mark {
            s.mark_rounds_at(m.clone());
        }
        Ok(s)
    }

    /// The published tree.
    pub fn site(&self) -> &SharedTree {
        &self.site
    }

    fn trie(&mut self) -> &mut Trie {
        self.trie.get_mut().unwrap_or_else(|e| e.into_inner())
    }

    /// Sign with `key` from now on: a long render then writes its bins as it goes instead of
    /// holding every changed listing until [`Self::write_manifest`].
    pub fn sign_with(&mut self, key: &ServiceKey) -> Result<(), RenderError> {
        if let Signing::Inline { state: None, .. } = self.signing {
            let fresh = self.sign_state(key, None)?;
            if let Signing::Inline { state, .. } = &mut self.signing {
                *state = Some(Box::new(fresh));
            }
        }
        let pinned = PinnedKey::parse(&key.vkey())
            .map_err(|e| RenderError::Input(format!("the key: {e}")))?;
        self.trie().set_pinned(pinned);
        self.key = Some(key.clone());
        Ok(())
    }

    /// Whether `rel` already holds `bytes` (SHA-256 `sha`): the listing says so and the disk
    /// agrees. A file the listing does not name is compared with the disk, and listed when
    /// equal; a listed file is still compared with the disk (the listing may be a previous
    /// run's word).
    fn holds(trie: &mut Trie, site: &SharedTree, rel: &str, bytes: &[u8], sha: &Sha) -> bool {
        let len = bytes.len() as u64;
        if !conduct_core::manifest::listed(rel) {
            // A chain page: a v2 manifest's listing of it is dropped, so only the disk decides
            // (and `Trie::insert` does not list it again).
            trie.remove(rel);
        }
        let listed = trie.get(rel);
        if listed.is_some_and(|l| l != (*sha, len)) {
            return false;
        }
        let on_disk = site
            .head(rel)
            .is_ok_and(|h| h.is_some_and(|h| h.len == len))
            && site.get(rel).is_ok_and(|old| old.as_deref() == Some(bytes));
        if on_disk && listed.is_none() {
            trie.insert(rel, *sha, len);
        }
        on_disk
    }

    /// Take the manifest on disk (its root's signature checked against `key`) as this
    /// publisher's listing, so a restarted service can re-sign a manifest that covers the
    /// whole tree before it has re-rendered every file: the root is read now, each bin when a
    /// file under it is first put or looked up, and every listed file is still compared with
    /// the disk before a write is skipped. Bins a crash left newer than the root are
    /// reconciled first. A `conduct.manifest/v1` manifest (one file listing everything) is
    /// taken once, entry by entry where the length on disk matches, and replaced by the trie
    /// at the next signing. Files put before this call stay listed. Returns how many files
    /// are listed; none when the manifest is missing or does not verify.
    pub fn seed_from_manifest(&mut self, key: &ServiceKey) -> usize {
        if self.round > 0 {
            tracing::warn!("the manifest was signed already; not seeded from the disk");
            return 0;
        }
        let Ok(Some(bytes)) = self.site.get(ROOT_PATH) else {
            return 0;
        };
        let Ok(pinned) = PinnedKey::parse(&key.vkey()) else {
            return 0;
        };
        if let Ok(Body::Bins(children)) = parse_bin(&bytes, "", &pinned) {
            return self.seed_trie(key, pinned, children, &bytes);
        }
        self.seed_v1(key, &bytes, &pinned)
    }

    fn seed_trie(
        &mut self,
        key: &ServiceKey,
        pinned: PinnedKey,
        children: crate::manifest::Children,
        root: &[u8],
    ) -> usize {
        let Ok(mut state) = self.sign_state(key, Some(children.clone())) else {
            return 0;
        };
        let before = self.trie().entries();
        let split_at = self.trie().split_at();
        let mut trie = Trie::seeded(self.site.clone(), split_at, &children, pinned);
        let closed = (self.round_mark.as_deref()).is_some_and(|m| SignState::closed_at(m, root));
        let suspects = if closed {
            Vec::new()
        } else {
            newer_bins(&self.site)
        };
        for lost in state.repair(suspects) {
            trie.touch(&lost);
        }
        for (path, sha, len) in before {
            trie.insert(&path, sha, len);
        }
        let total = trie.total() as usize;
        *self.trie() = trie;
        self.signing = Signing::Inline {
            state: Some(Box::new(state)),
            failed: None,
            done: 0,
        };
        self.key = Some(key.clone());
        total
    }

    fn seed_v1(&mut self, key: &ServiceKey, bytes: &[u8], pinned: &PinnedKey) -> usize {
        let Ok(doc) = serde_json::from_slice::<serde_json::Value>(bytes) else {
            return 0;
        };
        if doc["type"] != conduct_core::manifest::V1_TYPE || verify_snapshot(&doc, pinned).is_err()
        {
            return 0;
        }
        let Some(files) = doc["files"].as_object() else {
            return 0;
        };
        let site = self.site.clone();
        let mut taken = 0;
        for (rel, f) in files {
            let (Some(sha), Some(len)) = (f["sha256"].as_str(), f["len"].as_u64()) else {
                continue;
            };
            let mut s = [0u8; 32];
            if hex::decode_to_slice(sha, &mut s).is_err() || self.trie().get(rel).is_some() {
                continue;
            }
            if site
                .head(rel)
                .is_ok_and(|h| h.is_some_and(|h| h.len == len))
            {
                self.trie().insert(rel, s, len);
                taken += 1;
            }
        }
        if self.sign_with(key).is_err() {
            return 0;
        }
        taken
    }

    /// Write `bytes` at `rel` if they differ from what is there. Returns whether it wrote.
    pub fn put(&mut self, rel: &str, bytes: &[u8]) -> io::Result<bool> {
        let sha: Sha = Sha256::digest(bytes).into();
        let site = self.site.clone();
        if Self::holds(self.trie(), &site, rel, bytes, &sha) {
            return Ok(false);
        }
        put_object(&site, rel, bytes)?;
        self.trie().insert(rel, sha, bytes.len() as u64);
        self.writes += 1;
        self.after_puts();
        Ok(true)
    }

    /// Remove the file at `rel` (a page of an old layout) and stop listing it. Returns whether
    /// there was one.
    pub fn remove(&mut self, rel: &str) -> io::Result<bool> {
        let listed = self.trie().remove(rel);
        if self.site.delete(rel)? {
            self.writes += 1;
            return Ok(true);
        }
        Ok(listed)
    }

    /// Remove every file directly under the directory `dir` that `keep` (given its path) does
    /// not keep: the pages of an earlier layout. Returns how many it removed.
    pub fn prune(&mut self, dir: &str, keep: impl Fn(&str) -> bool) -> io::Result<usize> {
        let gone: Vec<String> = (self.site.children(dir)?.files.into_iter())
            .map(|f| f.path)
            .filter(|rel| !keep(rel))
            .collect();
        for rel in &gone {
            self.remove(rel)?;
        }
        Ok(gone.len())
    }

    /// [`Self::put`] for many files at once, writing the changed ones in parallel (a report-in
    /// changes several files of its vow; each write is a file creation and a rename). Returns
    /// how many were written.
    pub fn put_many(&mut self, files: Vec<(String, Vec<u8>)>) -> io::Result<usize> {
        let staged = self.stage(files);
        let written = staged.write();
        self.list_written(staged, written)
    }

    /// The files of `files` whose bytes are not published yet, to write without holding the
    /// publisher ([`put_many_shared`]).
    fn stage(&mut self, files: Vec<(String, Vec<u8>)>) -> Staged {
        let site = self.site.clone();
        let trie = self.trie();
        trie.preload(files.iter().map(|(rel, _)| rel.as_str()));
        let changed = files
            .into_iter()
            .filter_map(|(rel, bytes)| {
                let sha: Sha = Sha256::digest(&bytes).into();
                (!Self::holds(trie, &site, &rel, &bytes, &sha)).then_some((rel, bytes, sha))
            })
            .collect();
        Staged { site, changed }
    }

    /// List the files of `staged` that were written (`written`, one result each).
    fn list_written(&mut self, staged: Staged, written: Vec<io::Result<()>>) -> io::Result<usize> {
        let mut n = 0;
        let mut first_error = None;
        for ((rel, bytes, sha), result) in staged.changed.into_iter().zip(written) {
            match result {
                Ok(()) => {
                    self.trie().insert(&rel, sha, bytes.len() as u64);
                    self.writes += 1;
                    n += 1;
                }
                Err(e) => {
                    first_error.get_or_insert(io::Error::new(e.kind(), format!("{rel}: {e}")));
                }
            }
        }
        self.after_puts();
        first_error.map_or(Ok(n), Err)
    }

    /// Keep memory bounded: write the bins of a long render's changes once they are many
    /// (when a key is known), and forget listings already on disk beyond the cache.
    fn after_puts(&mut self) {
        if self.trie().dirty_entries() > FLUSH_ENTRIES && self.key.is_some() {
            if let Err(e) = self.send_round(None) {
                tracing::warn!(error = %e, "writing manifest bins failed; kept in memory");
            }
        }
        let done = self.done();
        self.trie().evict(done, CACHE_ENTRIES);
    }

    /// The last round on disk.
    fn done(&self) -> u64 {
        match &self.signing {
            Signing::Inline { done, .. } => *done,
            Signing::Thread(t) => t.done(),
        }
    }

    /// Take the changes into a new round and sign it (root: as of, ttl), here or on the
    /// signer thread.
    fn send_round(&mut self, root: Option<(u64, u64)>) -> Result<(), RenderError> {
        self.round += 1;
        let no = self.round;
        let (leaves, fresh) = self.trie().take_round(no);
        let round = Round {
            leaves: leaves.into_iter().collect(),
            fresh,
            root,
        };
        match &mut self.signing {
            Signing::Thread(t) => t.send(no, round),
            Signing::Inline {
                state,
                failed,
                done,
            } => {
                let Some(state) = state else {
                    return Err(RenderError::Input("no key to sign the manifest".into()));
                };
                let round = match failed.take() {
                    Some(mut earlier) => {
                        earlier.merge(round);
                        earlier
                    }
                    None => round,
                };
                match state.process(&round) {
                    Ok(_) => {
                        *done = no;
                        Ok(())
                    }
                    Err(e) => {
                        *failed = Some(round);
                        Err(e)
                    }
                }
            }
        }
    }

    /// From now on sign the manifest on a thread of its own ([`SignerThread`]):
    /// [`Self::write_manifest`] then only asks for it. (`ttl` is given with each request.)
    pub fn sign_off_thread(&mut self, key: &ServiceKey, _ttl: u64) -> io::Result<()> {
        if matches!(self.signing, Signing::Thread(_)) {
            return Ok(());
        }
        self.sign_with(key).map_err(io::Error::other)?;
        let Signing::Inline {
            state,
            failed,
            done,
        } = std::mem::replace(
            &mut self.signing,
            Signing::Inline {
                state: None,
                failed: None,
                done: 0,
            },
        )
        else {
            return Ok(());
        };
        let Some(state) = state else {
            return Err(io::Error::other("no manifest signer state"));
        };
        let thread = SignerThread::spawn(*state)?;
        if let Some(r) = failed {
            // Retried first, on the thread.
            thread.send(done, r).map_err(io::Error::other)?;
        }
        self.signing = Signing::Thread(thread);
        Ok(())
    }

    /// Files written so far (new or changed bytes), the manifest aside.
    pub fn writes(&self) -> usize {
        self.writes
    }

    /// Count `n` files written by someone else on this publisher's behalf (the static tree).
    pub fn count_writes(&mut self, n: usize) {
        self.writes += n;
    }

    /// The SHA-256 (hex) of the file at `rel` as the manifest lists it, if it does.
    pub fn sha256_of(&self, rel: &str) -> Option<String> {
        lock(&self.trie).get(rel).map(|(sha, _)| hex::encode(sha))
    }

    /// True when files changed since the manifest was last signed.
    pub fn dirty(&self) -> bool {
        lock(&self.trie).is_dirty()
    }

    /// Files the manifest covers.
    pub fn len(&self) -> usize {
        lock(&self.trie).total() as usize
    }

    /// True when no file is published.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Wait for the signer thread (if any) to sign what it was asked to, and sign on this
    /// thread from now on (over the manifest on disk).
    pub fn stop_signing_off_thread(&mut self) {
        if let Signing::Thread(_) = self.signing {
            let Signing::Thread(t) = std::mem::replace(
                &mut self.signing,
                Signing::Inline {
                    state: None,
                    failed: None,
                    done: 0,
                },
            ) else {
                return;
            };
            let done = t.done();
            t.stop();
            // The thread owned the interiors; a later round reads them back from the disk.
            let state = self.key.as_ref().and_then(|key| {
                let pinned = PinnedKey::parse(&key.vkey()).ok()?;
                let bytes = self.site.get(ROOT_PATH).ok()??;
                match parse_bin(&bytes, "", &pinned).ok()? {
                    Body::Bins(children) => self.sign_state(key, Some(children)).ok(),
                    Body::Files(_) => None,
                }
            });
            self.signing = Signing::Inline {
                state: state.map(Box::new),
                failed: None,
                done: self.round.max(done),
            };
        }
    }

    /// Sign and write the manifest for the current files (on the signer's thread when there
    /// is one, which signs every change made before this call).
    pub fn write_manifest(
        &mut self,
        key: &ServiceKey,
        as_of: u64,
        ttl: u64,
    ) -> Result<(), RenderError> {
        if self.key.is_none() {
            self.sign_with(key)?;
        }
        self.send_round(Some((as_of, ttl)))?;
        let done = self.done();
        self.trie().evict(done, CACHE_ENTRIES);
        Ok(())
    }
}

/// Changed files of a batch, decided under the publisher's lock and written outside it.
struct Staged {
    site: SharedTree,
    changed: Vec<(String, Vec<u8>, Sha)>,
}

impl Staged {
    /// Put the changed files `run` names, counting each one written.
    fn put_run(&self, run: &[usize]) -> Vec<io::Result<()>> {
        let puts: Vec<(&str, &[u8], Put)> = run
            .iter()
            .map(|&i| {
                let (rel, bytes, _) = &self.changed[i];
                (rel.as_str(), bytes.as_slice(), Put::PAGE.for_path(rel))
            })
            .collect();
        let done = self.site.put_many(&puts);
        for ((rel, ..), r) in puts.iter().zip(&done) {
            if r.is_ok() {
                conduct_indexer::metrics::count_tree_write(rel);
            }
        }
        done
    }

    /// Write every changed file, in parallel; one result per file, in order. The immutable
    /// ones (full chain pages) go first, and the heads that may name them only once they are
    /// all written: a mirror or CDN never sees a head naming an object not yet there. A head
    /// whose batch lost an immutable file is not written (it is retried with the batch).
    fn write(&self) -> Vec<io::Result<()>> {
        // A run of puts a core, each run through the tree's `put_many` (a bucket keeps several
        // of a run in flight).
        let put_all = |which: Vec<usize>| {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            let runs: Vec<Vec<usize>> = which
                .chunks(which.len().div_ceil(cores).max(1))
                .map(<[usize]>::to_vec)
                .collect();
            let done = map_on_every_core(
                runs.clone(),
                |run| self.put_run(&run),
                || vec![Err(io::Error::other("a writer thread panicked"))],
            );
            let mut out = Vec::with_capacity(which.len());
            for (run, results) in runs.into_iter().zip(done) {
                let mut results = results.into_iter();
                for i in run {
                    let r = results
                        .next()
                        .unwrap_or_else(|| Err(io::Error::other("not written")));
                    out.push((i, r));
                }
            }
            out
        };
        let (first, heads): (Vec<usize>, Vec<usize>) = (0..self.changed.len())
            .partition(|&i| conduct_indexer::tree::immutable(&self.changed[i].0));
        let mut results: Vec<Option<io::Result<()>>> = self.changed.iter().map(|_| None).collect();
        let mut lost = false;
        for (i, r) in put_all(first) {
            lost |= r.is_err();
            results[i] = Some(r);
        }
        if lost {
            for i in heads {
                results[i] = Some(Err(io::Error::other(
                    "not written: an immutable file of its batch was not",
                )));
            }
        } else {
            for (i, r) in put_all(heads) {
                results[i] = Some(r);
            }
        }
        results
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Err(io::Error::other("not written"))))
            .collect()
    }
}

/// [`Publisher::put_many`] on a publisher several threads share (the render thread writes the
/// signed snapshots, the derived writer their HTML twins and feeds): the lock is held to
/// decide what changed and to list what was written, not while the files are written, so
/// neither writer waits for the other's disk. The callers write disjoint paths (the render
/// thread's `write_new_derived` in `live/mod.rs`): a file written outside the lock is never
/// written by another thread meanwhile.
pub fn put_many_shared(
    publisher: &Mutex<Publisher>,
    files: Vec<(String, Vec<u8>)>,
) -> io::Result<usize> {
    let staged = lock(publisher).stage(files);
    let written = staged.write();
    lock(publisher).list_written(staged, written)
}

/// The bins under `manifest/` written after the root (a round a crash cut before its root),
/// or in the same tick of the tree's clock (a bin that is not newer is reconciled as a no-op,
/// so ties are taken).
fn newer_bins(site: &SharedTree) -> Vec<String> {
    let Ok(Some(root)) = site.head(ROOT_PATH) else {
        return Vec::new();
    };
    let Ok(dir) = site.children(BIN_DIR) else {
        return Vec::new();
    };
    dir.files
        .into_iter()
        .filter_map(|f| {
            let p = bin_prefix(&f.path)?.to_owned();
            (f.modified >= root.modified && bin_path(&p) == f.path).then_some(p)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use conduct_indexer::tree::{Children, Dir, Listed, Tree as Site, Warm};

    use super::*;

    /// A directory tree that notes the order of its puts.
    #[derive(Debug)]
    struct Noting {
        dir: Dir,
        puts: Mutex<Vec<String>>,
    }

    impl Site for Noting {
        fn put(&self, path: &str, bytes: &[u8], how: Put) -> io::Result<()> {
            lock(&self.puts).push(path.to_owned());
            self.dir.put(path, bytes, how)
        }
        fn get(&self, path: &str) -> io::Result<Option<Vec<u8>>> {
            self.dir.get(path)
        }
        fn head(&self, path: &str) -> io::Result<Option<Listed>> {
            self.dir.head(path)
        }
        fn delete(&self, path: &str) -> io::Result<bool> {
            self.dir.delete(path)
        }
        fn list(&self, prefix: &str) -> io::Result<Vec<Listed>> {
            self.dir.list(prefix)
        }
        fn children(&self, dir: &str) -> io::Result<Children> {
            self.dir.children(dir)
        }
        fn warm(&self, paths: &[(String, Warm)]) -> usize {
            self.dir.warm(paths)
        }
        fn barrier(&self) -> io::Result<()> {
            self.dir.barrier()
        }
        fn recover(&self, clean: bool) -> io::Result<usize> {
            self.dir.recover(clean)
        }
        fn locator(&self) -> String {
            self.dir.locator()
        }
    }

    #[test]
    fn a_batch_writes_its_immutable_files_before_the_heads_that_name_them() {
        let tmp = tempfile::tempdir().unwrap();
        let noting = Arc::new(Noting {
            dir: Dir::open(tmp.path()).unwrap(),
            puts: Mutex::new(Vec::new()),
        });
        let mut p = Publisher::from_tree(noting.clone(), &Tree::default());
        let mut files = vec![("vow/a/chain.json".to_owned(), b"head".to_vec())];
        for k in 0..20 {
            files.push((
                format!("vow/a/chain/{k}.json"),
                format!("page {k}").into_bytes(),
            ));
            files.push((format!("vow/b{k}.json"), b"page".to_vec()));
        }
        assert_eq!(p.put_many(files).unwrap(), 41);
        let puts = lock(&noting.puts).clone();
        let last_immutable = puts.iter().rposition(|p| p.contains("/chain/")).unwrap();
        let first_head = puts.iter().position(|p| !p.contains("/chain/")).unwrap();
        assert!(last_immutable < first_head, "{puts:?}");
    }
}
