//! The tree's integration mark: how far a run had brought the published tree, durably, so a
//! restart re-renders only what changed after it instead of every document
//! (ARCHITECTURE.md, "The write path of a report-in"; library/VOWS.md, "Durability and
//! verification").
//!
//! A mark says: every log record below `log_size` is on the tree's files, and every window
//! boundary up to `as_of` (service clock) is too. It is written to
//! `<data>/site-integrated.json` only after the tree's barrier (`syncfs` for a directory), so
//! a power cut cannot leave a mark that claims files the disk lost. The file keeps the last
//! two marks, each with the site directory it speaks of and the wall-clock
//! instant after which a signed manifest lists every file it claims (`listed_after`): a
//! restart takes the newest mark that the manifest on disk was signed after, since it serves
//! that manifest's listing without re-reading the files. A crash loses at most the marks'
//! last advances, which only makes the next restart re-render more.

use std::io;
use std::path::{Path, PathBuf};

use crate::tree::Tree;

use serde::{Deserialize, Serialize};

/// The marks' file name in the data directory.
pub const FILE: &str = "site-integrated.json";

/// How far the tree was durably integrated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Integrated {
    /// Every log record below this index is on the tree's files.
    pub log_size: u64,
    /// Every window boundary at or before this instant (unix seconds, service clock) is on the
    /// tree's files.
    pub as_of: u64,
}

/// Where marks are kept, and what rendered the files they speak of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// The data directory (the file is [`FILE`] there).
    pub data: PathBuf,
    /// What the rendered bytes depend on besides the state (the binary, the public URL, the
    /// key...): a mark written under another is not taken, so an upgrade or a new public URL
    /// re-renders every page once.
    pub render: String,
}

/// A mark as kept: the site it speaks of, what rendered it, and when a manifest lists its
/// files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Kept {
    /// The tree it speaks of ([`Tree::locator`]: a canonical directory, or a bucket).
    site: String,
    /// [`Place::render`] of the run that wrote it.
    render: String,
    /// A manifest signed after this wall-clock instant (unix seconds) lists every file the
    /// mark claims.
    listed_after: u64,
    mark: Integrated,
}

/// The file: the newest mark first, then the one before it.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Marks {
    marks: Vec<Kept>,
}

fn load(data: &Path) -> Option<Marks> {
    let bytes = match std::fs::read(data.join(FILE)) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return None,
        Err(e) => {
            tracing::warn!(error = %e, "the integration mark could not be read; re-rendering everything");
            return None;
        }
    };
    match serde_json::from_slice(&bytes) {
        Ok(m) => Some(m),
        Err(e) => {
            tracing::warn!(error = %e, "the integration mark is not valid; re-rendering everything");
            None
        }
    }
}

/// The newest mark at `place` for the tree at `site`, rendered as `place` renders, whose files
/// the manifest signed at `manifest_signed_at` (wall clock, unix seconds) lists; `None` (a
/// restart re-renders everything) when there is none.
pub fn read(place: &Place, site: &dyn Tree, manifest_signed_at: u64) -> Option<Integrated> {
    let site = site.locator();
    load(&place.data)?
        .marks
        .into_iter()
        .find(|k| k.site == site && k.render == place.render && k.listed_after < manifest_signed_at)
        .map(|k| k.mark)
}

/// Make every put into `site` so far durable ([`Tree::barrier`]), then write `mark` durably
/// at `place` with the wall-clock instant `listed_after` after which a signed manifest lists
/// its files, keeping the newest mark already there for this site and rendering as the one
/// before it.
pub fn write(
    place: &Place,
    site: &dyn Tree,
    mark: Integrated,
    listed_after: u64,
) -> io::Result<()> {
    site.barrier()?;
    let site = site.locator();
    let before = load(&place.data)
        .unwrap_or_default()
        .marks
        .into_iter()
        .find(|k| k.site == site && k.render == place.render);
    let mut marks = vec![Kept {
        site,
        render: place.render.clone(),
        listed_after,
        mark,
    }];
    marks.extend(before);
    let bytes = serde_json::to_vec(&Marks { marks }).map_err(io::Error::other)?;
    crate::durable::write_atomic(&place.data.join(FILE), &bytes, 0o600)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_mark_a_manifest_lists_for_this_site_is_read() {
        let data = tempfile::tempdir().unwrap();
        let place = Place {
            data: data.path().to_path_buf(),
            render: "binary 1".into(),
        };
        let (site_dir, other_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let site = crate::tree::Dir::open(site_dir.path()).unwrap();
        let other = crate::tree::Dir::open(other_dir.path()).unwrap();
        assert_eq!(read(&place, &site, 100), None);
        let first = Integrated {
            log_size: 42,
            as_of: 1_800_000_000,
        };
        write(&place, &site, first, 50).unwrap();
        let second = Integrated {
            log_size: 50,
            as_of: 1_800_000_002,
        };
        write(&place, &site, second, 52).unwrap();
        assert_eq!(read(&place, &site, 53), Some(second));
        assert_eq!(
            read(&place, &site, 52),
            Some(first),
            "a manifest signed before the newest mark's files were listed"
        );
        assert_eq!(read(&place, &site, 50), None);
        assert_eq!(read(&place, &other, 100), None, "another site");
        let upgraded = Place {
            render: "binary 2".into(),
            ..place.clone()
        };
        assert_eq!(read(&upgraded, &site, 100), None, "another binary");
        // A third mark keeps only the one before it.
        let third = Integrated {
            log_size: 60,
            as_of: 1_800_000_004,
        };
        write(&place, &site, third, 54).unwrap();
        assert_eq!(read(&place, &site, 55), Some(third));
        assert_eq!(read(&place, &site, 53), Some(second));
        assert_eq!(read(&place, &site, 51), None, "two are kept");
        std::fs::write(data.path().join(FILE), b"{\"log_size\": 1}").unwrap();
        assert_eq!(read(&place, &site, 100), None, "not the format");
    }
}
