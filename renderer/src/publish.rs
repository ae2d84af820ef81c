//! Incremental publishing into the site directory: writes only files whose bytes changed,
//! keeps the hash and length of every file for the signed manifest, and re-signs the manifest
//! on demand. One `Publisher` is the only writer of the tree outside `log/`.
//!
//! Signing the manifest of a large tree takes tens of milliseconds, so a running service hands
//! it to a [`ManifestSigner`] thread that keeps its own copy of the file list (fed by every
//! change) and signs when asked, never holding up a render.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use conduct_core::signing::ServiceKey;
use conduct_indexer::durable::replace_atomic;
use sha2::{Digest, Sha256};

use crate::parallel::map_on_every_core;
use crate::site::{manifest_bytes, manifest_files};
use crate::tree::Tree;
use crate::RenderError;

/// The site directory and what the manifest says about it.
#[derive(Debug)]
pub struct Publisher {
    root: PathBuf,
    files: BTreeMap<String, (String, u64)>,
    /// Entries taken from the previous signed manifest ([`Publisher::seed_from_manifest`]),
    /// not yet compared with what is on disk.
    seeded: std::collections::BTreeSet<String>,
    dirty: bool,
    signer: Option<ManifestSigner>,
    writes: usize,
}

impl Publisher {
    /// A publisher for `root` whose files are exactly `tree` (just written by
    /// [`Tree::write_to`]).
    pub fn from_tree(root: &Path, tree: &Tree) -> Self {
        Publisher {
            root: root.to_path_buf(),
            files: manifest_files(tree),
            seeded: Default::default(),
            dirty: false,
            signer: None,
            writes: 0,
        }
    }

    /// Whether `rel` already holds `bytes` (SHA-256 `sha`). A file this publisher has not
    /// written yet is compared with the bytes on disk, and recorded when equal.
    fn holds(&mut self, rel: &str, bytes: &[u8], sha: &str) -> bool {
        let len = bytes.len() as u64;
        // A seeded entry is only the previous manifest's word: compare with the disk once.
        let seeded = self.seeded.remove(rel);
        if let Some((h, l)) = self.files.get(rel).filter(|_| !seeded) {
            return h == sha && *l == len;
        }
        let path = self.root.join(rel);
        let on_disk = std::fs::metadata(&path).is_ok_and(|m| m.len() == len)
            && std::fs::read(&path).is_ok_and(|old| old == bytes);
        if on_disk {
            self.record(rel, sha.to_owned(), len);
        }
        on_disk
    }

    /// Take the files the previous signed manifest of this tree lists (its signature checked
    /// against `key`), where their length on disk still matches, as this publisher's listing,
    /// so a restarted service can re-sign a manifest that covers the whole tree before it has
    /// re-rendered every file. Each such entry is compared with the disk the first time its
    /// file is put. Returns how many entries were taken; none when the manifest is missing or
    /// does not verify.
    pub fn seed_from_manifest(&mut self, key: &ServiceKey) -> usize {
        let Ok(bytes) = std::fs::read(self.root.join("manifest.json")) else {
            return 0;
        };
        let Ok(doc) = serde_json::from_slice::<serde_json::Value>(&bytes) else {
            return 0;
        };
        let Ok(pinned) = conduct_core::signing::PinnedKey::parse(&key.vkey()) else {
            return 0;
        };
        if conduct_core::signing::verify_snapshot(&doc, &pinned).is_err() {
            return 0;
        }
        let Some(files) = doc["files"].as_object() else {
            return 0;
        };
        let mut taken = 0;
        for (rel, f) in files {
            if self.files.contains_key(rel) {
                continue;
            }
            let (Some(sha), Some(len)) = (f["sha256"].as_str(), f["len"].as_u64()) else {
                continue;
            };
            if std::fs::metadata(self.root.join(rel)).is_ok_and(|m| m.is_file() && m.len() == len) {
                self.files.insert(rel.clone(), (sha.to_owned(), len));
                self.seeded.insert(rel.clone());
                taken += 1;
            }
        }
        taken
    }

    /// Write `bytes` at `rel` if they differ from what is there. Returns whether it wrote.
    pub fn put(&mut self, rel: &str, bytes: &[u8]) -> io::Result<bool> {
        let sha = hex::encode(Sha256::digest(bytes));
        if self.holds(rel, bytes, &sha) {
            return Ok(false);
        }
        replace_atomic(&self.root.join(rel), bytes, 0o644, "pub")?;
        self.record(rel, sha, bytes.len() as u64);
        self.writes += 1;
        Ok(true)
    }

    /// [`Self::put`] for many files at once, writing the changed ones in parallel (a report-in
    /// changes several files of its vow; each write is a file creation and a rename). Returns
    /// how many were written.
    pub fn put_many(&mut self, files: Vec<(String, Vec<u8>)>) -> io::Result<usize> {
        let mut changed = Vec::with_capacity(files.len());
        for (rel, bytes) in files {
            let sha = hex::encode(Sha256::digest(&bytes));
            if !self.holds(&rel, &bytes, &sha) {
                changed.push((rel, bytes, sha));
            }
        }
        let root = &self.root;
        let written = map_on_every_core(
            changed.iter().collect(),
            |(rel, bytes, _)| replace_atomic(&root.join(rel), bytes, 0o644, "pub"),
            || Err(io::Error::other("a writer thread panicked")),
        );
        let mut n = 0;
        let mut first_error = None;
        for ((rel, bytes, sha), result) in changed.into_iter().zip(written) {
            match result {
                Ok(()) => {
                    self.record(&rel, sha, bytes.len() as u64);
                    self.writes += 1;
                    n += 1;
                }
                Err(e) => {
                    first_error.get_or_insert(io::Error::new(e.kind(), format!("{rel}: {e}")));
                }
            }
        }
        first_error.map_or(Ok(n), Err)
    }

    fn record(&mut self, rel: &str, sha: String, len: u64) {
        if let Some(s) = &self.signer {
            let _ = s.tx.send(SignerMsg::File(rel.to_owned(), sha.clone(), len));
        }
        self.files.insert(rel.to_owned(), (sha, len));
        self.dirty = true;
    }

    /// From now on sign the manifest on a thread of its own ([`ManifestSigner`]):
    /// [`Self::write_manifest`] then only asks for it.
    pub fn sign_off_thread(&mut self, key: &ServiceKey, ttl: u64) -> io::Result<()> {
        self.signer = Some(ManifestSigner::spawn(
            self.root.clone(),
            key.clone(),
            ttl,
            self.files.clone(),
        )?);
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

    /// The SHA-256 (hex) of the file at `rel` as published, if this publisher knows it.
    pub fn sha256_of(&self, rel: &str) -> Option<String> {
        self.files.get(rel).map(|(sha, _)| sha.clone())
    }

    /// True when files changed since the manifest was last signed.
    pub fn dirty(&self) -> bool {
        self.dirty
    }

    /// Files the manifest covers.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// True when no file is published.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Wait for the signer thread (if any) to sign what it was asked to, and sign on this
    /// thread from now on.
    pub fn stop_signing_off_thread(&mut self) {
        if let Some(s) = self.signer.take() {
            drop(s.tx);
            let _ = s.thread.join();
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
        match &self.signer {
            Some(s) => {
                s.tx.send(SignerMsg::Sign(as_of))
                    .map_err(|_| RenderError::Input("the manifest signer stopped".into()))?
            }
            None => write_manifest(&self.root, key, &self.files, as_of, ttl)?,
        }
        self.dirty = false;
        Ok(())
    }
}

fn write_manifest(
    root: &Path,
    key: &ServiceKey,
    files: &BTreeMap<String, (String, u64)>,
    as_of: u64,
    ttl: u64,
) -> Result<(), RenderError> {
    let bytes = manifest_bytes(key, files, as_of, ttl)?;
    replace_atomic(&root.join("manifest.json"), &bytes, 0o644, "manifest")
        .map_err(|e| RenderError::Input(format!("writing the manifest: {e}")))
}

enum SignerMsg {
    File(String, String, u64),
    Sign(u64),
}

/// A thread that owns a copy of the manifest's file list and signs `manifest.json` on request.
/// Requests that queue up while it signs are answered by one signature. It stops when the
/// [`Publisher`] holding it is dropped.
#[derive(Debug)]
pub struct ManifestSigner {
    tx: mpsc::Sender<SignerMsg>,
    thread: std::thread::JoinHandle<()>,
}

impl ManifestSigner {
    fn spawn(
        root: PathBuf,
        key: ServiceKey,
        ttl: u64,
        mut files: BTreeMap<String, (String, u64)>,
    ) -> io::Result<ManifestSigner> {
        let (tx, rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("manifest-sign".into())
            .spawn(move || {
                // A manifest that could not be written (a full disk) is retried every
                // second until it is, with the newest file list.
                let mut pending: Option<u64> = None;
                loop {
                    let first = match pending {
                        None => match rx.recv() {
                            Ok(m) => Some(m),
                            Err(_) => break,
                        },
                        Some(_) => match rx.recv_timeout(std::time::Duration::from_secs(1)) {
                            Ok(m) => Some(m),
                            Err(mpsc::RecvTimeoutError::Timeout) => None,
                            Err(mpsc::RecvTimeoutError::Disconnected) => break,
                        },
                    };
                    let mut sign = pending.take();
                    for m in first.into_iter().chain(rx.try_iter()) {
                        match m {
                            SignerMsg::File(p, sha, len) => {
                                files.insert(p, (sha, len));
                            }
                            SignerMsg::Sign(at) => sign = Some(at),
                        }
                    }
                    if let Some(at) = sign {
                        if let Err(e) = write_manifest(&root, &key, &files, at, ttl) {
                            tracing::error!(error = %e, "signing the manifest failed; retried every second");
                            pending = Some(at);
                        }
                    }
                }
            })?;
        Ok(ManifestSigner { tx, thread })
    }
}
