//! The tree's integration mark: how far a run had brought the published tree, durably, so a
//! restart re-renders only what changed after it instead of every document
//! (ARCHITECTURE.md, "The write path of a report-in"; library/VOWS.md, "Durability and
//! verification").
//!
//! The mark says: every log record below `log_size` is on the tree's files, and every window
//! boundary up to `as_of` (service clock) is too. It is written to `<data>/site-integrated.json`
//! only after the site's file system has been flushed (`syncfs`), so a power cut cannot leave a
//! mark that claims files the disk lost; a crash loses at most the mark's last advance, which
//! only makes the next restart re-render more.

use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// The mark's file name in the data directory.
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

/// The mark in `data`, if there is a readable one (`None`: a restart re-renders everything).
pub fn read(data: &Path) -> Option<Integrated> {
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

/// Flush the file system holding `site` (every file written there so far reaches the disk),
/// then write `mark` durably into `data`.
pub fn write(data: &Path, site: &Path, mark: Integrated) -> io::Result<()> {
    sync_file_system(site)?;
    let bytes = serde_json::to_vec(&mark).map_err(io::Error::other)?;
    crate::durable::write_atomic(&data.join(FILE), &bytes, 0o600)
}

/// Remove the mark (the tree is about to be replaced): the next restart re-renders everything.
pub fn clear(data: &Path) -> io::Result<()> {
    match std::fs::remove_file(data.join(FILE)) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => crate::durable::sync_dir(data),
    }
}

#[cfg(target_os = "linux")]
fn sync_file_system(dir: &Path) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(dir)?;
    // SAFETY: `f` is an open file descriptor for the duration of the call; syncfs(2) only
    // reads it.
    if unsafe { libc::syncfs(f.as_raw_fd()) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
fn sync_file_system(_dir: &Path) -> io::Result<()> {
    // sync(2) flushes every file system: slower, as safe.
    std::process::Command::new("sync").status().map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mark_round_trips_and_a_bad_one_is_none() {
        let data = tempfile::tempdir().unwrap();
        let site = tempfile::tempdir().unwrap();
        assert_eq!(read(data.path()), None);
        let mark = Integrated {
            log_size: 42,
            as_of: 1_800_000_000,
        };
        write(data.path(), site.path(), mark).unwrap();
        assert_eq!(read(data.path()), Some(mark));
        std::fs::write(data.path().join(FILE), b"{\"log_size\": 1}").unwrap();
        assert_eq!(read(data.path()), None, "a member missing");
        clear(data.path()).unwrap();
        assert_eq!(read(data.path()), None);
        clear(data.path()).unwrap();
    }
}
