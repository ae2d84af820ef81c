//! The tree in a local directory (the embedded default, `./site`): every object a file,
//! written to a temporary beside it and renamed over it ([`crate::durable`]); a synced put
//! also `fsync`s the file and its directory, and the barrier flushes the whole file system
//! (`syncfs`) once instead of a file at a time.
//!
//! What a crash leaves: temporaries (`.conduct-tmp.*`) beside their targets, which
//! [`Tree::recover`] sweeps unless the previous run stopped cleanly; never a file with a mix
//! of bytes. After a power cut, un-synced puts since the last barrier may be lost whole.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
#[cfg(target_os = "linux")]
use std::sync::{Arc, OnceLock};

use super::{check_path, Children, Listed, Put, Tree, Warm};
use crate::durable::{replace_atomic, sweep_temporaries, write_atomic};

#[cfg(target_os = "linux")]
pub mod spares;
mod warm;

/// Permission bits of a published file (the tree is public).
const FILE_MODE: u32 = 0o644;

/// The files replaced through the spare pool when there is one: a vow's pages, which a
/// restart renders again for every change its integration mark does not cover and compares
/// with the disk (library/VOWS.md, "Restarts and the integration mark"). Not the manifest's
/// bins: a restart takes a bin on disk that verifies, so a bin must never hold an older
/// file's bytes.
const THROUGH_SPARES: &str = "vow/";

/// A tree in the directory `root`.
#[derive(Debug)]
pub struct Dir {
    root: PathBuf,
    /// Open on `root` from the start, so the barrier reports every write-back error since.
    fd: fs::File,
    /// Where un-synced puts of a vow's pages go, once set ([`Dir::replace_through`]).
    #[cfg(target_os = "linux")]
    spares: OnceLock<Arc<spares::Spares>>,
}

impl Dir {
    /// The tree in `root`, created if missing.
    pub fn open(root: &Path) -> io::Result<Dir> {
        fs::create_dir_all(root)?;
        let root = root.canonicalize()?;
        let fd = fs::File::open(&root)?;
        Ok(Dir {
            root,
            fd,
            #[cfg(target_os = "linux")]
            spares: OnceLock::new(),
        })
    }

    /// [`Self::open`], shared.
    pub fn shared(root: &Path) -> io::Result<super::SharedTree> {
        Ok(std::sync::Arc::new(Dir::open(root)?))
    }

    /// The tree whose `log/` is the directory `log` (its parent: tests and tools that name
    /// the log's directory).
    pub fn holding_log(log: &Path) -> io::Result<super::SharedTree> {
        let root = log.parent().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "the log directory has no parent",
            )
        })?;
        Dir::shared(root)
    }

    /// Replace a vow's pages (un-synced puts under `vow/`) through the pool of spare inodes
    /// in the directory `pool` from now on (a running service's tree; see [`spares`] for what
    /// it saves and what it gives up), or by rename when the pool cannot be had (another
    /// process holds it, or not on Linux). Once: a second pool is ignored.
    pub fn replace_through(&self, pool: &Path) {
        #[cfg(target_os = "linux")]
        match spares::Spares::open(pool) {
            Ok(Some(spares)) => {
                let _ = self.spares.set(Arc::new(spares));
            }
            Ok(None) => {
                tracing::warn!(
                    "another process holds the spare pool: vow pages are replaced by rename"
                )
            }
            Err(e) => tracing::warn!(error = %e, "no spare pool: vow pages are replaced by rename"),
        }
        #[cfg(not(target_os = "linux"))]
        let _ = pool;
    }

    fn file(&self, path: &str) -> io::Result<PathBuf> {
        check_path(path)?;
        Ok(self.root.join(path))
    }
}

/// `Ok(None)` for a missing file, the error for any other failure.
fn found<T>(r: io::Result<T>) -> io::Result<Option<T>> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

impl Tree for Dir {
    fn put(&self, path: &str, bytes: &[u8], how: Put) -> io::Result<()> {
        let file = self.file(path)?;
        if how.sync {
            return write_atomic(&file, bytes, FILE_MODE);
        }
        #[cfg(target_os = "linux")]
        if let Some(s) = self
            .spares
            .get()
            .filter(|_| path.starts_with(THROUGH_SPARES))
        {
            return s.replace(&file, bytes, FILE_MODE, "pub");
        }
        replace_atomic(&file, bytes, FILE_MODE, "pub")
    }

    fn get(&self, path: &str) -> io::Result<Option<Vec<u8>>> {
        found(fs::read(self.file(path)?))
    }

    fn head(&self, path: &str) -> io::Result<Option<Listed>> {
        let meta = match found(fs::metadata(self.file(path)?))? {
            Some(m) if m.is_file() => m,
            _ => return Ok(None),
        };
        Ok(Some(Listed {
            path: path.to_owned(),
            len: meta.len(),
            modified: meta.modified()?,
        }))
    }

    fn delete(&self, path: &str) -> io::Result<bool> {
        Ok(found(fs::remove_file(self.file(path)?))?.is_some())
    }

    fn list(&self, prefix: &str) -> io::Result<Vec<Listed>> {
        // Walk the deepest directory the prefix names whole, and filter by the rest.
        let base = match prefix.rfind('/') {
            Some(i) => &prefix[..i],
            None => "",
        };
        if !base.is_empty() {
            check_path(base)?;
        }
        let start = self.root.join(base);
        let mut out = Vec::new();
        for entry in walkdir::WalkDir::new(&start).follow_links(false) {
            let entry = match entry {
                Ok(e) => e,
                Err(e) if e.io_error().map(io::Error::kind) == Some(io::ErrorKind::NotFound) => {
                    continue
                }
                Err(e) => return Err(io::Error::other(e)),
            };
            if !entry.file_type().is_file()
                || crate::durable::is_temporary(&entry.file_name().to_string_lossy())
            {
                continue;
            }
            let Ok(rel) = entry.path().strip_prefix(&self.root) else {
                continue;
            };
            let rel = rel
                .to_string_lossy()
                .replace(std::path::MAIN_SEPARATOR, "/");
            if !rel.starts_with(prefix) {
                continue;
            }
            let meta = match entry.metadata() {
                Ok(m) => m,
                Err(e) if e.io_error().map(io::Error::kind) == Some(io::ErrorKind::NotFound) => {
                    continue
                }
                Err(e) => return Err(io::Error::other(e)),
            };
            out.push(Listed {
                path: rel,
                len: meta.len(),
                modified: meta.modified()?,
            });
        }
        Ok(out)
    }

    fn children(&self, dir: &str) -> io::Result<Children> {
        let at = if dir.is_empty() {
            self.root.clone()
        } else {
            self.file(dir)?
        };
        let mut out = Children::default();
        let entries = match found(fs::read_dir(&at))? {
            Some(e) => e,
            None => return Ok(out),
        };
        for entry in entries {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = if dir.is_empty() {
                name.clone()
            } else {
                format!("{dir}/{name}")
            };
            let kind = entry.file_type()?;
            if kind.is_dir() {
                out.dirs.push(path);
            } else if kind.is_file() && !crate::durable::is_temporary(&name) {
                // Gone meanwhile: not listed.
                if let Some(meta) = found(entry.metadata())? {
                    out.files.push(Listed {
                        path,
                        len: meta.len(),
                        modified: meta.modified()?,
                    });
                }
            }
        }
        Ok(out)
    }

    fn warm(&self, paths: &[(String, Warm)]) -> usize {
        warm::warm(&self.root, paths)
    }

    fn barrier(&self) -> io::Result<()> {
        sync_file_system(&self.fd)
    }

    fn recover(&self, clean: bool) -> io::Result<usize> {
        if clean {
            return Ok(0);
        }
        sweep_temporaries(&self.root)
    }

    fn directory(&self) -> Option<&Path> {
        Some(&self.root)
    }

    fn locator(&self) -> String {
        self.root.display().to_string()
    }
}

/// Flush the file system holding the open file `f` (`syncfs`).
#[cfg(target_os = "linux")]
fn sync_file_system(f: &std::fs::File) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: `f` is an open file descriptor for the duration of the call; syncfs(2) only
    // reads it.
    if unsafe { libc::syncfs(f.as_raw_fd()) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
fn sync_file_system(_f: &std::fs::File) -> io::Result<()> {
    // sync(2) flushes every file system: slower, as safe.
    std::process::Command::new("sync").status().map(|_| ())
}
