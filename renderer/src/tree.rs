//! An in-memory static tree (relative path -> bytes) and writing it to disk.
//!
//! Writing is incremental: a file is rewritten only when its bytes changed (so mirrors and
//! rsync see untouched mtimes), each write is atomic and durable, and files that the tree no
//! longer holds are removed (outside the paths other writers own, such as `log/`).

use std::collections::BTreeMap;
use std::io;

use conduct_indexer::tree::{Put, Warm};

/// Files [`Tree::write_to`] warms, compares and writes at once.
const WRITE_CHUNK: usize = 512;

/// Paths under these prefixes belong to other writers and are never removed by a render: the
/// log (the ledger's), the vow pages, vow index, cards, the registry view, `/who` records,
/// `/rh`, `/opensea`, the quest board (`/munus` and its quest pages), the Nostr profile and
/// mark (`hive/`, written at startup from the indexer's key), the familiars (`/familiars` and
/// `/familiar/<id>`), the sitemap (`sitemap.xml` and `sitemap/`) and the manifest and its bins (the publisher's).
pub const FOREIGN_PREFIXES: &[&str] = &[
    "log/",
    "vow/",
    "vows.json",
    "vows.html",
    "vows/",
    "card/",
    "registry.",
    "registry/",
    "who/",
    "rh.",
    "opensea.",
    "munus.",
    "munus/",
    "reputation.",
    "reputation/",
    "hive/",
    "familiars.",
    "familiar/",
    "sitemap.xml",
    "sitemap/",
    "manifest.json",
    "manifest/",
];

/// Whether the directory `rel` (relative, forward slashes) is one that others own, whole.
fn is_foreign_dir(rel: &str) -> bool {
    let dir = format!("{rel}/");
    FOREIGN_PREFIXES
        .iter()
        .any(|p| p.ends_with('/') && dir.starts_with(p))
}

/// A rendered static tree.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Tree {
    /// Relative path (forward slashes, no leading slash) -> file bytes.
    pub files: BTreeMap<String, Vec<u8>>,
}

/// What a write changed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct WriteReport {
    /// Files written because they were new or different.
    pub written: Vec<String>,
    /// Files removed because the tree no longer holds them.
    pub removed: Vec<String>,
    /// Files left as they were.
    pub unchanged: usize,
}

impl Tree {
    /// Add or replace a file.
    pub fn put(&mut self, path: impl Into<String>, bytes: Vec<u8>) {
        self.files.insert(path.into(), bytes);
    }

    /// Write the tree into `site`: each changed file durably ([`Put::SYNCED`]), and the
    /// files it no longer holds removed, outside the directories others own (never walked:
    /// at a million vows they hold most of the tree's files).
    pub fn write_to(&self, site: &dyn conduct_indexer::tree::Tree) -> io::Result<WriteReport> {
        let mut report = WriteReport::default();
        let files: Vec<(&String, &Vec<u8>)> = self.files.iter().collect();
        // A chunk at a time: its files warmed together, then compared, then the changed ones
        // put together (a bucket has many of each in flight).
        for chunk in files.chunks(WRITE_CHUNK) {
            let warm: Vec<(String, Warm)> = chunk
                .iter()
                .map(|(rel, _)| ((*rel).clone(), Warm::Bytes))
                .collect();
            site.warm(&warm);
            let mut changed: Vec<(&str, &[u8], Put)> = Vec::new();
            for (rel, bytes) in chunk {
                match site.get(rel)? {
                    Some(old) if &old == *bytes => report.unchanged += 1,
                    _ => changed.push((rel.as_str(), bytes.as_slice(), Put::SYNCED.for_path(rel))),
                }
            }
            for ((rel, ..), done) in changed.iter().zip(site.put_many(&changed)) {
                done?;
                conduct_indexer::metrics::count_tree_write(rel);
                report.written.push((*rel).to_owned());
            }
        }
        let mut dirs = vec![String::new()];
        while let Some(dir) = dirs.pop() {
            let level = site.children(&dir)?;
            dirs.extend(level.dirs.into_iter().filter(|d| !is_foreign_dir(d)));
            for f in level.files {
                let rel = f.path;
                if FOREIGN_PREFIXES.iter().any(|p| rel.starts_with(p))
                    || self.files.contains_key(&rel)
                {
                    continue;
                }
                site.delete(&rel)?;
                report.removed.push(rel);
            }
        }
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_only_changes_and_prunes_stale_files() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = Tree::default();
        t.put("a.json", b"1".to_vec());
        t.put("sub/b.html", b"2".to_vec());
        let r = t
            .write_to(&conduct_indexer::tree::Dir::open(dir.path()).unwrap())
            .unwrap();
        assert_eq!(r.written.len(), 2);
        std::fs::create_dir_all(dir.path().join("log")).unwrap();
        std::fs::write(dir.path().join("log/checkpoint"), b"x").unwrap();
        std::fs::write(dir.path().join("stale.txt"), b"x").unwrap();
        t.put("a.json", b"3".to_vec());
        let r = t
            .write_to(&conduct_indexer::tree::Dir::open(dir.path()).unwrap())
            .unwrap();
        assert_eq!(r.written, vec!["a.json".to_string()]);
        assert_eq!(r.removed, vec!["stale.txt".to_string()]);
        assert_eq!(r.unchanged, 1);
        assert!(dir.path().join("log/checkpoint").exists());
    }

    #[test]
    fn only_directories_others_own_whole_are_not_walked() {
        for d in [
            "vow",
            "vow/0123456789abcdef/chain",
            "vows",
            "card",
            "log/tile",
            "sitemap",
        ] {
            assert!(is_foreign_dir(d), "{d}");
        }
        for d in [
            "vowel",
            "library",
            "schemas",
            "sub",
            "registry.d",
            "manifests",
        ] {
            assert!(!is_foreign_dir(d), "{d}");
        }
    }
}
