//! Incremental publishing into the site directory: writes only files whose bytes changed,
//! keeps the hash and length of every file for the signed manifest, and re-signs the manifest
//! on demand. One `Publisher` is the only writer of the tree outside `log/`.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use conduct_core::signing::ServiceKey;
use conduct_indexer::durable::replace_atomic;
use sha2::{Digest, Sha256};

use crate::site::{manifest_files, manifest_from};
use crate::snapshot::signed_bytes;
use crate::tree::Tree;
use crate::RenderError;

/// The site directory and what the manifest says about it.
#[derive(Debug)]
pub struct Publisher {
    root: PathBuf,
    files: BTreeMap<String, (String, u64)>,
    dirty: bool,
}

impl Publisher {
    /// A publisher for `root` whose files are exactly `tree` (just written by
    /// [`Tree::write_to`]).
    pub fn from_tree(root: &Path, tree: &Tree) -> Self {
        Publisher {
            root: root.to_path_buf(),
            files: manifest_files(tree),
            dirty: false,
        }
    }

    /// Write `bytes` at `rel` if they differ from what is there. Returns whether it wrote.
    /// A file this publisher has not written yet is compared with the bytes on disk.
    pub fn put(&mut self, rel: &str, bytes: &[u8]) -> io::Result<bool> {
        let sha = hex::encode(Sha256::digest(bytes));
        let len = bytes.len() as u64;
        let same = match self.files.get(rel) {
            Some((h, l)) => *h == sha && *l == len,
            None => {
                let path = self.root.join(rel);
                std::fs::metadata(&path).is_ok_and(|m| m.len() == len)
                    && std::fs::read(&path).is_ok_and(|old| old == bytes)
            }
        };
        if same {
            if !self.files.contains_key(rel) {
                self.files.insert(rel.to_owned(), (sha, len));
                self.dirty = true;
            }
            return Ok(false);
        }
        replace_atomic(&self.root.join(rel), bytes, 0o644, "pub")?;
        self.files.insert(rel.to_owned(), (sha, bytes.len() as u64));
        self.dirty = true;
        Ok(true)
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

    /// Sign and write the manifest for the current files.
    pub fn write_manifest(
        &mut self,
        key: &ServiceKey,
        as_of: u64,
        ttl: u64,
    ) -> Result<(), RenderError> {
        let bytes = signed_bytes(key, manifest_from(&self.files, as_of, ttl))?;
        replace_atomic(&self.root.join("manifest.json"), &bytes, 0o644, "pub")
            .map_err(|e| RenderError::Input(format!("writing the manifest: {e}")))?;
        self.dirty = false;
        Ok(())
    }
}
