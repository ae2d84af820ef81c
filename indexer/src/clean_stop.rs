//! The tree's clean-stop mark: `<data>/site-clean`, written by a run that stopped with every
//! writer of the tree joined, so the next start may skip its walk for the temporaries a crash
//! leaves (ARCHITECTURE.md, "Restarts"; at a million vows the walk visits 16 million files).
//!
//! The mark holds the hex SHA-256 of the manifest root (`manifest.json`) on disk at the stop:
//! a start over another tree (restored, copied, re-rendered elsewhere) does not take it. It is
//! written only after the site's file system is flushed (`syncfs`), so a power cut cannot keep
//! the mark while losing a rename that took a temporary's name away. A start takes it before
//! any writer touches the tree and removes it durably first, so a crash of that run, which may
//! leave temporaries, is followed by a walk. A mark cut short or lost names no root: the next
//! start walks the tree, as without it.

use std::io;
use std::path::Path;

use crate::tree::Tree;

/// The mark's file name in the data directory.
pub const FILE: &str = "site-clean";

/// The hex SHA-256 of the manifest root of the tree `site`; `None` without one.
fn root_sha(site: &dyn Tree) -> Option<String> {
    let root = site.get(conduct_core::manifest::ROOT_PATH).ok()??;
    Some(conduct_core::canonical::sha256_hex(&root))
}

/// Take the mark in `data`: whether the previous run stopped cleanly over the tree now at
/// `site` (no temporary of its writes is left there). The mark is gone, durably, when this
/// returns `Ok`, whatever it said; an error (the mark could not be removed) must be treated
/// as `false` by a caller that goes on.
pub fn take(data: &Path, site: &dyn Tree) -> io::Result<bool> {
    let path = data.join(FILE);
    let said = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    std::fs::remove_file(&path)?;
    crate::durable::sync_dir(data)?;
    Ok(root_sha(site).is_some_and(|sha| said == sha.as_bytes()))
}

/// Write the mark in `data` for the tree at `site`, after a stop that joined every writer of
/// the tree and whose walk for temporaries (if it had one) finished: every put into `site` is
/// made durable first ([`Tree::barrier`]). A tree without a manifest root gets no mark.
pub fn write(data: &Path, site: &dyn Tree) -> io::Result<()> {
    site.barrier()?;
    let Some(sha) = root_sha(site) else {
        return Ok(());
    };
    let path = data.join(FILE);
    // In place, never through a temporary: nothing sweeps the data directory, and a mark cut
    // short names no root.
    crate::durable::write_in_place(&path, sha.as_bytes(), 0o600)?.sync_all()?;
    crate::durable::sync_dir(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let (data, site) = (dir.path().join("data"), dir.path().join("site"));
        std::fs::create_dir_all(&data).unwrap();
        std::fs::create_dir_all(&site).unwrap();
        std::fs::write(site.join(conduct_core::manifest::ROOT_PATH), b"root one").unwrap();
        (dir, data, site)
    }

    #[test]
    fn a_mark_is_taken_once_and_only_over_the_tree_it_names() {
        let (_dir, data, site) = tree();
        let tree = crate::tree::Dir::open(&site).unwrap();
        // No mark: the start walks.
        assert!(!take(&data, &tree).unwrap());
        write(&data, &tree).unwrap();
        assert!(take(&data, &tree).unwrap());
        // Taken: gone, so a crash of this run is followed by a walk.
        assert!(!data.join(FILE).exists());
        assert!(!take(&data, &tree).unwrap());
        // Another tree (its root changed since the stop): not taken, and removed.
        write(&data, &tree).unwrap();
        std::fs::write(site.join(conduct_core::manifest::ROOT_PATH), b"root two").unwrap();
        assert!(!take(&data, &tree).unwrap());
        assert!(!data.join(FILE).exists());
    }

    #[test]
    fn a_mark_cut_short_or_without_a_root_is_not_taken() {
        let (_dir, data, site) = tree();
        let tree = crate::tree::Dir::open(&site).unwrap();
        write(&data, &tree).unwrap();
        let full = std::fs::read(data.join(FILE)).unwrap();
        std::fs::write(data.join(FILE), &full[..20]).unwrap();
        assert!(!take(&data, &tree).unwrap());
        // No manifest root: no mark is written, and none would be taken.
        std::fs::remove_file(site.join(conduct_core::manifest::ROOT_PATH)).unwrap();
        write(&data, &tree).unwrap();
        assert!(!data.join(FILE).exists());
        std::fs::write(data.join(FILE), &full).unwrap();
        assert!(!take(&data, &tree).unwrap());
    }
}
