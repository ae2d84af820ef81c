//! Durable file writes: temp file -> fsync -> rename -> directory fsync.
//!
//! Temporary files are named `.conduct-tmp.<name>.<pid>-<random><tag>` ([`TEMP_PREFIX`];
//! the random part tells this run from an earlier one with the same pid) beside their target
//! (a rename must not cross file systems). A crash can leave one behind inside the served tree,
//! so the service removes every temporary but its own ([`sweep_temporaries`]) at a start,
//! and mirrors exclude the prefix while copying (`library/MIRRORS.md`).

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
        "{TEMP_PREFIX}{}.{}{tag}",
        name.to_string_lossy(),
        this_run()
    ));
    let written = (|| {
        let mut opts = OpenOptions::new();
        opts.write(true).create(true).truncate(true);
        #[cfg(unix)]
        opts.mode(mode);
        let mut f = opts.open(&tmp)?;
        f.write_all(bytes)?;
        if sync {
            f.sync_all()?;
        }
        #[cfg(not(unix))]
        let _ = mode;
        fs::rename(&tmp, path)
    })();
    if let Err(e) = written {
        // A failed write (a full disk) leaves no temporary behind in the tree.
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    Ok(dir)
}

/// The name prefix of every temporary file this crate writes.
pub const TEMP_PREFIX: &str = ".conduct-tmp.";

/// What names this process's temporaries apart from those of every other run (a crashed one
/// may have had the same pid, as in a container): `<pid>-<random>`.
fn this_run() -> &'static str {
    static RUN: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    RUN.get_or_init(|| {
        let mut nonce = [0u8; 4];
        // Without randomness the pid alone names the run (as before).
        let _ = getrandom::getrandom(&mut nonce);
        format!("{}-{}", std::process::id(), hex::encode(nonce))
    })
}

/// Whether a file name is one of this process's own temporaries (a write in flight).
fn is_own_temporary(name: &str) -> bool {
    let run = this_run();
    name.starts_with(TEMP_PREFIX)
        && name.match_indices(run).any(|(i, _)| {
            name[..i].ends_with('.')
                && !name[i + run.len()..].starts_with(|c: char| c.is_ascii_alphanumeric())
        })
}

/// Whether a file name is one of our temporaries (also the `.<name>.tmp.<pid>` form of
/// earlier versions).
pub fn is_temporary(name: &str) -> bool {
    name.starts_with(TEMP_PREFIX) || (name.starts_with('.') && name.contains(".tmp."))
}

/// Remove every temporary file a crash left under `root`: every temporary but this process's
/// own, so it may run while this process writes there. Returns how many were removed.
///
/// A directory it cannot read or a file it cannot remove does not stop it: it sweeps the rest
/// and then returns the first such error.
pub fn sweep_temporaries(root: &Path) -> io::Result<usize> {
    let mut removed = 0;
    let mut first_error = None;
    for entry in walkdir::WalkDir::new(root).follow_links(false) {
        let entry = match entry {
            Ok(e) => e,
            Err(e) if e.io_error().map(io::Error::kind) == Some(io::ErrorKind::NotFound) => {
                continue
            }
            Err(e) => {
                first_error.get_or_insert(io::Error::other(e));
                continue;
            }
        };
        let name = entry.file_name().to_string_lossy();
        if entry.file_type().is_file() && is_temporary(&name) && !is_own_temporary(&name) {
            match fs::remove_file(entry.path()) {
                Ok(()) => removed += 1,
                // Gone meanwhile (another sweep).
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(removed),
    }
}

/// Write `bytes` to `path` atomically and durably, creating parent directories.
///
/// `mode` sets the Unix permission bits of the new file (e.g. `0o600` for secrets).
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    sync_dir(write_then_rename(path, bytes, mode, "", true)?)
}

/// Create or truncate `path` and write `bytes` into it in place (no temporary, no rename,
/// no sync: the caller syncs the returned file when it must). Its permission bits are `mode`
/// even when the file already existed with others: for marks in the owner-only state
/// directory, which a crash may leave cut short.
pub fn write_in_place(path: &Path, bytes: &[u8], mode: u32) -> io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, mode);
    let mut f = options.open(path)?;
    // The mode above applies only to a file it creates.
    #[cfg(unix)]
    f.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(mode))?;
    #[cfg(not(unix))]
    let _ = mode;
    io::Write::write_all(&mut f, bytes)?;
    Ok(f)
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
/// are re-derived from the store after a crash (what the last integration mark does not cover:
/// [`crate::integrated`]). Readers see the old or the new bytes, never
/// a mix. `tag` keeps concurrent writers' temp files apart.
pub fn replace_atomic(path: &Path, bytes: &[u8], mode: u32, tag: &str) -> io::Result<()> {
    write_then_rename(path, bytes, mode, &format!(".{tag}"), false).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_file_written_in_place_takes_its_mode_even_when_it_existed() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("mark");
        std::fs::write(&p, b"an older and longer text").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        write_in_place(&p, b"new", 0o600).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    #[test]
    fn temporaries_left_by_a_crash_are_swept_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write_atomic(&root.join("a/b.json"), b"{}", 0o644).unwrap();
        std::fs::write(root.join("a/.conduct-tmp.b.json.77.pub"), b"partial").unwrap();
        std::fs::write(root.join("a/.002.tmp.77"), b"old form").unwrap();
        std::fs::write(root.join("a/.keep"), b"not ours").unwrap();
        // A write of this process in flight stays; one of an earlier run with the same pid
        // goes.
        let pid = std::process::id();
        let own = format!(".conduct-tmp.c.json.{}.pub", this_run());
        std::fs::write(root.join("a").join(&own), b"in flight").unwrap();
        std::fs::write(
            root.join(format!("a/.conduct-tmp.c.json.{pid}-00000000.pub")),
            b"x",
        )
        .unwrap();
        std::fs::write(root.join(format!("a/.conduct-tmp.c.json.{pid}")), b"x").unwrap();
        assert_eq!(sweep_temporaries(root).unwrap(), 4);
        let mut left: Vec<String> = std::fs::read_dir(root.join("a"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, vec![own.as_str(), ".keep", "b.json"]);
    }
}
