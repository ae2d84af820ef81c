//! Durable file writes: temp file -> fsync -> rename -> directory fsync.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

#[cfg(unix)]
use std::os::unix::fs::OpenOptionsExt;

/// Write `bytes` to a temp file beside `path` (creating parent directories), optionally
/// fsynced, then rename it over `path`. Returns the directory, for a caller that syncs it.
fn write_then_rename<'p>(
    path: &'p Path,
    bytes: &[u8],
    mode: u32,
    tag: &str,
    sync: bool,
) -> io::Result<&'p Path> {
    let dir = path
        .parent()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no parent"))?;
    fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no file name"))?;
    let tmp = dir.join(format!(
        ".{}.tmp.{}{tag}",
        name.to_string_lossy(),
        std::process::id()
    ));
    {
        let mut opts = OpenOptions::new();
        opts.write(true).create(true).truncate(true);
        #[cfg(unix)]
        opts.mode(mode);
        let mut f = opts.open(&tmp)?;
        f.write_all(bytes)?;
        if sync {
            f.sync_all()?;
        }
    }
    #[cfg(not(unix))]
    let _ = mode;
    fs::rename(&tmp, path)?;
    Ok(dir)
}

/// Write `bytes` to `path` atomically and durably, creating parent directories.
///
/// `mode` sets the Unix permission bits of the new file (e.g. `0o600` for secrets).
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    sync_dir(write_then_rename(path, bytes, mode, "", true)?)
}

/// fsync a directory so a rename inside it is durable.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

/// Replace `path` atomically (temp file -> rename) without syncing: for derived files that
/// are re-derived from the store after a crash. Readers see the old or the new bytes, never
/// a mix. `tag` keeps concurrent writers' temp files apart.
pub fn replace_atomic(path: &Path, bytes: &[u8], mode: u32, tag: &str) -> io::Result<()> {
    write_then_rename(path, bytes, mode, &format!(".{tag}"), false).map(|_| ())
}
