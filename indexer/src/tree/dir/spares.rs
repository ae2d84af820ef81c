//! Replacing derived files through a pool of spare inodes (ARCHITECTURE.md, "The write path of
//! a report-in").
//!
//! [`crate::durable::replace_atomic`] writes a temporary and renames it over the file: each
//! replacement creates an inode and frees one, which on ext4 is most of a small write's cost
//! (BENCHMARKS.md section 14: about half the CPU of a random-vow report-in). [`Spares`]
//! instead keeps the inodes that replacements take out of the tree, in a directory of its own
//! (`<data>/spares/`, on the site's file system): the new bytes are written into a spare,
//! which is then exchanged with the file (`renameat2(RENAME_EXCHANGE)`, atomic: a reader
//! that opens the path gets the old bytes or the new, never a mix). The old inode rests in
//! the pool until it is written again, so a replacement allocates and frees nothing.
//!
//! A spare is written again only when
//! - it has rested [`REST`] since it left the tree, so an `open` of its old path that was
//!   resolving at the exchange has finished; and
//! - no one holds it open: a write lease (`F_SETLEASE`) is granted only when no other
//!   descriptor or mapping of the file exists, in any process. A spare someone still reads is
//!   unlinked instead (the reader keeps its bytes, as after a rename) and a new one made.
//!
//! Of the spares that rested, the one that left the tree last is written first: its inode and
//! pages are the likeliest still cached, so the write reads nothing from the disk. The pool's
//! bounds unlink the longest resting ones.
//!
//! What it does not give: after a power cut (not a crash of the process), a file exchanged
//! since the file system was last flushed may hold an older file's bytes, since an
//! overwrite's data is not ordered before the exchange on disk. So it replaces only files
//! that a restart renders again for every change its integration mark does not cover, and
//! compares with the disk ([`crate::integrated`]: the mark is written only after `syncfs`).
//! A file that does not exist yet is created as before, never from a spare.
//!
//! One process holds the pool at a time (an `flock` on `spares/.lock`); another one, and a
//! file system that cannot exchange, replace files as [`crate::durable::replace_atomic`] does.

use std::collections::VecDeque;
use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::durable::replace_atomic;

/// How long a spare rests after it left the tree before it is written again.
pub const REST: Duration = Duration::from_secs(1);

/// Most spares kept: past it, the oldest is unlinked (a replacement then frees an inode, as
/// a rename does). About a second's replacements under load.
pub const MOST_SPARES: usize = 16_384;

/// Most bytes the spares may hold (the former bytes of pages), past which the oldest is
/// unlinked: the pool's disk is bounded whatever the pages' size (a long chain's page is
/// about 185 KB).
pub const MOST_SPARE_BYTES: u64 = 256 << 20;

/// The page size this padding assumes: a page written in part is read from the disk first
/// when it is not cached.
const PAGE: u64 = 4096;

/// How many zeros to write after `len` new bytes over a spare that held `held`: when the new
/// bytes end inside a page the old ones reach into, writing that page in part makes the
/// kernel read it from the disk first, if it is not cached, to keep the rest of it (a spare
/// that rested is often out of the cache: BENCHMARKS.md section 18). Writing the page whole
/// and cutting the file back to `len` reads nothing.
fn block_padding(len: u64, held: u64) -> usize {
    let within = len % PAGE;
    if within == 0 || held <= len - within {
        0
    } else {
        (PAGE - within) as usize
    }
}

/// Write `bytes` then `pad` zeros, the last page (its bytes and the zeros) in one write: a
/// write covers a page whole only within one call.
fn write_padded(file: &mut File, bytes: &[u8], pad: usize) -> io::Result<()> {
    if pad == 0 {
        return file.write_all(bytes);
    }
    let (whole, last) = bytes.split_at(bytes.len() - (PAGE as usize - pad));
    file.write_all(whole)?;
    let mut page = [0u8; PAGE as usize];
    page[..last.len()].copy_from_slice(last);
    file.write_all(&page)
}

/// `fcntl`'s command that names the signal of a lease break (Linux's value on every
/// architecture; the `libc` crate does not export it).
const F_SETSIG: libc::c_int = 10;

/// The name of the pool's lock file in its directory.
const LOCK: &str = ".lock";

/// A pool of spare inodes that replaces files by exchange.
#[derive(Debug)]
pub struct Spares {
    dir: PathBuf,
    pool: Mutex<Pool>,
    /// Set once the file system refused an exchange: every replacement renames from then on.
    off: AtomicBool,
    /// Held while the pool is this process's.
    _lock: File,
}

#[derive(Debug)]
struct Pool {
    /// Spares out of the tree in the order they left it (the longest resting first): their
    /// number, since when, and the length of the bytes they hold.
    resting: VecDeque<(u64, Instant, u64)>,
    /// The bytes the resting spares hold.
    bytes: u64,
    /// Most spares and bytes kept ([`MOST_SPARES`], [`MOST_SPARE_BYTES`]).
    most: (usize, u64),
    /// The next number for a new spare.
    next: u64,
}

/// Where a replacement's spare comes from.
enum Taken {
    /// A resting spare, written again.
    Resting(u64),
    /// A new file.
    New(u64),
}

impl Spares {
    /// The pool in `dir` (created): `None` when another process holds it. The spares an
    /// earlier run left are taken as resting; their bytes are never served, only written over.
    pub fn open(dir: &Path) -> io::Result<Option<Spares>> {
        std::fs::create_dir_all(dir)?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(dir.join(LOCK))?;
        // SAFETY: `lock` is an open descriptor for the duration of the call.
        if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EWOULDBLOCK) => Ok(None),
                _ => Err(e),
            };
        }
        let mut found: Vec<(u64, u64)> = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            match entry.file_name().to_str().and_then(|n| n.parse().ok()) {
                Some(n) if entry.file_type()?.is_file() => found.push((n, entry.metadata()?.len())),
                _ => {}
            }
        }
        found.sort_unstable();
        let rested = Instant::now()
            .checked_sub(REST)
            .unwrap_or_else(Instant::now);
        let next = found.last().map_or(0, |(n, _)| n + 1);
        let mut pool = Pool::new();
        pool.next = next;
        for (n, len) in found {
            pool.resting.push_back((n, rested, len));
            pool.bytes += len;
        }
        let spares = Spares {
            dir: dir.to_path_buf(),
            pool: Mutex::new(Pool::new()),
            off: AtomicBool::new(false),
            _lock: lock,
        };
        spares.unlink(pool.over());
        *conduct_core::sync::lock(&spares.pool) = pool;
        Ok(Some(spares))
    }

    /// Replace the regular file at `path` with `bytes` (permission bits `mode`) through a
    /// spare; a path that is not a regular file yet, or a file system that cannot exchange,
    /// as [`replace_atomic`] does (`tag` names its temporary).
    pub fn replace(&self, path: &Path, bytes: &[u8], mode: u32, tag: &str) -> io::Result<()> {
        let old = std::fs::symlink_metadata(path)
            .ok()
            .filter(|m| m.file_type().is_file());
        let Some(old_len) = old
            .map(|m| m.len())
            .filter(|_| !self.off.load(Ordering::Relaxed))
        else {
            return replace_atomic(path, bytes, mode, tag);
        };
        let Some((n, mut file, held)) = self.writable(mode)? else {
            return replace_atomic(path, bytes, mode, tag);
        };
        let spare = self.dir.join(n.to_string());
        let len = bytes.len() as u64;
        let pad = block_padding(len, held);
        // Cut only what the old bytes held past the new ones (a truncation costs a setattr).
        let written = write_padded(&mut file, bytes, pad).and_then(|()| {
            if held > len || pad > 0 {
                file.set_len(len)
            } else {
                Ok(())
            }
        });
        drop(file);
        if let Err(e) = written {
            let _ = std::fs::remove_file(&spare);
            return Err(e);
        }
        match exchange(&spare, path) {
            Ok(()) => {
                self.rest(n, old_len);
                Ok(())
            }
            // The file went meanwhile (or the spare did): a new file is never a spare.
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let _ = std::fs::remove_file(&spare);
                replace_atomic(path, bytes, mode, tag)
            }
            Err(e) => {
                let _ = std::fs::remove_file(&spare);
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EXDEV | libc::EINVAL | libc::ENOSYS | libc::EOPNOTSUPP)
                ) {
                    tracing::warn!(dir = %self.dir.display(), error = %e,
                        "files cannot be exchanged here; replacing them by rename");
                    self.off.store(true, Ordering::Relaxed);
                    return replace_atomic(path, bytes, mode, tag);
                }
                Err(e)
            }
        }
    }

    /// How many spares rest in the pool, and the bytes they hold.
    pub fn resting(&self) -> (usize, u64) {
        let pool = conduct_core::sync::lock(&self.pool);
        (pool.resting.len(), pool.bytes)
    }

    /// A spare open for writing from its start, with permission bits `mode`, and the length of
    /// the bytes it holds: a resting one no one holds open, else a new one. `None` when
    /// leases cannot be taken here: no spare can be proven free, and the pool turns off.
    fn writable(&self, mode: u32) -> io::Result<Option<(u64, File, u64)>> {
        loop {
            match self.take() {
                Taken::Resting(n) => {
                    let path = self.dir.join(n.to_string());
                    let file = match OpenOptions::new().write(true).open(&path) {
                        Ok(f) => f,
                        Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                        Err(e) => return Err(e),
                    };
                    match held_by_no_one(&file) {
                        Ok(true) => {}
                        Ok(false) => {
                            // Someone still reads its old bytes: they keep them; the pool
                            // forgets it.
                            drop(file);
                            let _ = std::fs::remove_file(&path);
                            count("held");
                            continue;
                        }
                        Err(e) => {
                            tracing::warn!(dir = %self.dir.display(), error = %e,
                                "no lease can be taken on a spare; replacing files by rename");
                            self.off.store(true, Ordering::Relaxed);
                            let _ = std::fs::remove_file(&path);
                            return Ok(None);
                        }
                    }
                    let m = file.metadata()?;
                    if m.permissions().mode() & 0o7777 != mode {
                        file.set_permissions(std::fs::Permissions::from_mode(mode))?;
                    }
                    count("rested");
                    return Ok(Some((n, file, m.len())));
                }
                Taken::New(n) => {
                    let file = OpenOptions::new()
                        .write(true)
                        .create(true)
                        .truncate(true)
                        .mode(mode)
                        .open(self.dir.join(n.to_string()))?;
                    count("new");
                    return Ok(Some((n, file, 0)));
                }
            }
        }
    }

    fn take(&self) -> Taken {
        let mut pool = conduct_core::sync::lock(&self.pool);
        // Of the spares that rested, the one that left the tree last: its inode, directory
        // entry and pages are the likeliest to be in the page cache still, so writing it again
        // reads nothing from the disk (the longest resting one was the likeliest to be
        // evicted: BENCHMARKS.md section 18). The rest wait, oldest first out of the pool.
        let now = Instant::now();
        let rested = pool
            .resting
            .partition_point(|&(_, since, _)| now.saturating_duration_since(since) >= REST);
        match rested.checked_sub(1).and_then(|k| pool.resting.remove(k)) {
            Some((n, _, len)) => {
                pool.bytes -= len;
                Taken::Resting(n)
            }
            None => {
                let n = pool.next;
                pool.next += 1;
                Taken::New(n)
            }
        }
    }

    /// Spare `n` holds a file of `len` bytes the tree let go of: it rests from now.
    fn rest(&self, n: u64, len: u64) {
        let over = {
            let mut pool = conduct_core::sync::lock(&self.pool);
            pool.resting.push_back((n, Instant::now(), len));
            pool.bytes += len;
            pool.over()
        };
        self.unlink(over);
    }

    fn unlink(&self, spares: Vec<u64>) {
        for n in spares {
            let _ = std::fs::remove_file(self.dir.join(n.to_string()));
        }
    }
}

impl Pool {
    fn new() -> Pool {
        Pool {
            resting: VecDeque::new(),
            bytes: 0,
            most: (MOST_SPARES, MOST_SPARE_BYTES),
            next: 0,
        }
    }

    /// Take the oldest spares out while the pool holds more than its most spares or bytes;
    /// their numbers, to unlink.
    fn over(&mut self) -> Vec<u64> {
        let mut out = Vec::new();
        while self.resting.len() > self.most.0 || self.bytes > self.most.1 {
            let Some((n, _, len)) = self.resting.pop_front() else {
                break;
            };
            self.bytes -= len;
            out.push(n);
        }
        out
    }
}

/// Count a spare taken (`conduct_render_spare_writes_total{spare}`, library/METRICS.md).
fn count(spare: &'static str) {
    crate::metrics::metrics()
        .spare_writes
        .with([std::borrow::Cow::Borrowed(spare)])
        .inc();
}

/// Whether no descriptor or mapping of `file`'s inode exists but `file` (opened for writing):
/// a write lease is granted only then (`Ok(false)` when it is refused for that; an error
/// when leases cannot be taken at all). It is released at once; a break in between is
/// signalled with `SIGURG`, whose default action is to ignore it, not with `SIGIO`, which
/// would end the process.
fn held_by_no_one(file: &File) -> io::Result<bool> {
    let fd = file.as_raw_fd();
    let fcntl = |cmd: libc::c_int, arg: libc::c_int| {
        // SAFETY: `fd` is open for the duration of the call; F_SETSIG and F_SETLEASE only
        // read their integer argument.
        if unsafe { libc::fcntl(fd, cmd, arg) } == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    };
    fcntl(F_SETSIG, libc::SIGURG)?;
    match fcntl(libc::F_SETLEASE, libc::F_WRLCK) {
        Ok(()) => fcntl(libc::F_SETLEASE, libc::F_UNLCK).map(|()| true),
        Err(e) if matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::EBUSY)) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Exchange the files at `a` and `b` atomically (`renameat2(RENAME_EXCHANGE)`).
fn exchange(a: &Path, b: &Path) -> io::Result<()> {
    let c = |p: &Path| {
        CString::new(p.as_os_str().as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path holds a NUL"))
    };
    let (a, b) = (c(a)?, c(b)?);
    // SAFETY: both are NUL-terminated strings that outlive the call.
    let r = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn pool(dir: &Path) -> Spares {
        Spares::open(&dir.join("spares")).unwrap().unwrap()
    }

    /// Let every resting spare of `s` have rested [`REST`] already.
    fn rest_all(s: &Spares) {
        let rested = Instant::now().checked_sub(REST).unwrap();
        for r in conduct_core::sync::lock(&s.pool).resting.iter_mut() {
            r.1 = rested;
        }
    }

    #[test]
    fn a_replaced_file_holds_the_new_bytes_and_its_old_inode_rests() {
        let dir = tempfile::tempdir().unwrap();
        let s = pool(dir.path());
        let f = dir.path().join("site/a.json");
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(&f, b"old bytes, longer than the new").unwrap();
        s.replace(&f, b"new", 0o644, "t").unwrap();
        assert_eq!(std::fs::read(&f).unwrap(), b"new");
        assert_eq!(s.resting(), (1, 30));
        // The old inode rests with its old bytes, out of the site.
        let spare = dir.path().join("spares/0");
        assert_eq!(
            std::fs::read(&spare).unwrap(),
            b"old bytes, longer than the new"
        );
        let site: Vec<_> = std::fs::read_dir(dir.path().join("site"))
            .unwrap()
            .collect();
        assert_eq!(site.len(), 1);
    }

    #[test]
    fn a_new_file_is_created_not_taken_from_the_pool() {
        let dir = tempfile::tempdir().unwrap();
        let s = pool(dir.path());
        let f = dir.path().join("site/sub/new.json");
        s.replace(&f, b"first", 0o644, "t").unwrap();
        assert_eq!(std::fs::read(&f).unwrap(), b"first");
        assert_eq!(s.resting(), (0, 0));
        assert!(std::fs::read_dir(dir.path().join("spares"))
            .unwrap()
            .all(|e| e.unwrap().file_name() == LOCK));
    }

    #[test]
    fn a_rested_spare_is_written_again_and_a_reader_keeps_the_bytes_it_opened() {
        let dir = tempfile::tempdir().unwrap();
        let s = pool(dir.path());
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::write(&a, b"a1").unwrap();
        std::fs::write(&b, b"b1 is longer").unwrap();
        // A reader opens a before it is replaced, and holds it.
        let mut held = File::open(&a).unwrap();
        let old_a = std::fs::metadata(&a).unwrap();
        let old_b = std::fs::metadata(&b).unwrap();
        s.replace(&a, b"a2", 0o644, "t").unwrap();
        // Spares that rested: a's old inode is still open, so it is not written again.
        rest_all(&s);
        s.replace(&b, b"b2", 0o644, "t").unwrap();
        assert_eq!(std::fs::read(&b).unwrap(), b"b2");
        let mut got = Vec::new();
        held.read_to_end(&mut got).unwrap();
        assert_eq!(got, b"a1", "the reader's bytes changed under it");
        use std::os::unix::fs::MetadataExt;
        assert_ne!(std::fs::metadata(&b).unwrap().ino(), old_a.ino());
        drop(held);
        // With no reader, a rested spare is written again: no new inode.
        let new_b = std::fs::metadata(&b).unwrap().ino();
        rest_all(&s);
        s.replace(&a, b"a3", 0o600, "t").unwrap();
        let m = std::fs::metadata(&a).unwrap();
        assert_eq!(std::fs::read(&a).unwrap(), b"a3");
        // b's first inode, which left the tree when b was replaced, now holds a.
        assert_eq!(m.ino(), old_b.ino());
        assert_ne!(m.ino(), new_b);
        assert_eq!(m.permissions().mode() & 0o7777, 0o600);
    }

    #[test]
    fn a_spare_rests_before_it_is_written_again() {
        let dir = tempfile::tempdir().unwrap();
        let s = pool(dir.path());
        let a = dir.path().join("a");
        std::fs::write(&a, b"0").unwrap();
        for i in 1..=5u8 {
            s.replace(&a, &[b'0' + i], 0o644, "t").unwrap();
        }
        // Five replacements within a second: five spares, none written twice.
        assert_eq!(s.resting(), (5, 5));
        let mut olds: Vec<Vec<u8>> = (0..5)
            .map(|n| std::fs::read(dir.path().join(format!("spares/{n}"))).unwrap())
            .collect();
        olds.sort();
        assert_eq!(olds, vec![b"0", b"1", b"2", b"3", b"4"]);
    }

    #[test]
    fn of_the_spares_that_rested_the_one_that_left_the_tree_last_is_written_first() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let s = pool(dir.path());
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::write(&a, b"0").unwrap();
        std::fs::write(&b, b"b").unwrap();
        let mut inodes = vec![std::fs::metadata(&a).unwrap().ino()];
        for i in 1..=3u8 {
            s.replace(&a, &[b'0' + i], 0o644, "t").unwrap();
            inodes.push(std::fs::metadata(&a).unwrap().ino());
        }
        // Three spares (a's inodes 0, 1 and 2); the first two rested, 1 the least long.
        {
            let now = Instant::now();
            let mut pool = conduct_core::sync::lock(&s.pool);
            pool.resting[0].1 = now.checked_sub(REST * 3).unwrap();
            pool.resting[1].1 = now.checked_sub(REST * 2).unwrap();
        }
        s.replace(&b, b"b1", 0o644, "t").unwrap();
        assert_eq!(std::fs::metadata(&b).unwrap().ino(), inodes[1]);
        // Then the one that rested longest; the one that has not rested is never taken.
        s.replace(&b, b"b2", 0o644, "t").unwrap();
        assert_eq!(std::fs::metadata(&b).unwrap().ino(), inodes[0]);
        s.replace(&a, b"a4", 0o644, "t").unwrap();
        assert!(!inodes.contains(&std::fs::metadata(&a).unwrap().ino()));
        assert_eq!(std::fs::read(&b).unwrap(), b"b2");
    }

    #[test]
    fn a_page_the_old_bytes_reach_into_is_written_whole_and_cut_back() {
        // Ends inside a page the old bytes reach into: padded to the page's end.
        assert_eq!(block_padding(100, 5000), PAGE as usize - 100);
        assert_eq!(block_padding(100, 101), PAGE as usize - 100);
        assert_eq!(block_padding(4196, 4197), PAGE as usize - 100);
        // Ends on a page boundary, or where the old bytes did not reach: nothing to read.
        assert_eq!(block_padding(4096, 9000), 0);
        assert_eq!(block_padding(100, 0), 0);
        assert_eq!(block_padding(4196, 4096), 0);
        assert_eq!(block_padding(100, 100), PAGE as usize - 100);
        // Whatever the sizes, the file holds exactly the new bytes.
        let dir = tempfile::tempdir().unwrap();
        let s = pool(dir.path());
        let f = dir.path().join("a");
        let mut inodes = std::collections::HashSet::new();
        for (k, n) in [9000usize, 100, 5000, 4096, 4197, 10, 12_000, 0, 300]
            .into_iter()
            .enumerate()
        {
            let bytes: Vec<u8> = (0..n).map(|i| (i * 7 + k) as u8 | 1).collect();
            rest_all(&s);
            if k == 0 {
                std::fs::write(&f, &bytes).unwrap();
            } else {
                s.replace(&f, &bytes, 0o644, "t").unwrap();
            }
            use std::os::unix::fs::MetadataExt;
            inodes.insert(std::fs::metadata(&f).unwrap().ino());
            assert_eq!(std::fs::read(&f).unwrap(), bytes, "{n} bytes");
        }
        // Spares were written again (not a new inode each time).
        assert!(inodes.len() < 9, "{inodes:?}");
    }

    #[test]
    fn the_pool_keeps_at_most_its_bytes_and_unlinks_the_oldest() {
        let dir = tempfile::tempdir().unwrap();
        let s = pool(dir.path());
        conduct_core::sync::lock(&s.pool).most = (MOST_SPARES, 100);
        let a = dir.path().join("a");
        std::fs::write(&a, [b'0'; 60]).unwrap();
        for i in 1..=3u8 {
            s.replace(&a, &[b'0' + i; 60], 0o644, "t").unwrap();
        }
        // Three spares of 60 bytes made; the pool keeps 100 bytes: the newest one.
        assert_eq!(s.resting(), (1, 60));
        let left: Vec<String> = std::fs::read_dir(dir.path().join("spares"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n != LOCK)
            .collect();
        assert_eq!(left, vec!["2"]);
        assert_eq!(
            std::fs::read(dir.path().join("spares/2")).unwrap(),
            [b'2'; 60]
        );
        // A restart counts the bytes of the spares it finds.
        drop(s);
        std::fs::write(dir.path().join("spares/7"), [b'x'; 300 << 20 >> 10]).unwrap();
        let s = pool(dir.path());
        assert_eq!(s.resting(), (2, 60 + (300 << 10)));
    }

    #[test]
    fn a_pool_on_another_file_system_replaces_by_rename() {
        use std::os::unix::fs::MetadataExt;
        let (Ok(shm), dir) = (
            tempfile::tempdir_in("/dev/shm"),
            tempfile::tempdir().unwrap(),
        ) else {
            return; // No second file system here.
        };
        let dev = |p: &Path| std::fs::metadata(p).unwrap().dev();
        if dev(shm.path()) == dev(dir.path()) {
            return;
        }
        let s = pool(shm.path());
        let a = dir.path().join("a");
        std::fs::write(&a, b"old").unwrap();
        s.replace(&a, b"new", 0o644, "t").unwrap();
        assert_eq!(std::fs::read(&a).unwrap(), b"new");
        // The exchange was refused (EXDEV): the pool is off, and nothing rests in it.
        assert!(s.off.load(Ordering::Relaxed));
        assert_eq!(s.resting(), (0, 0));
        s.replace(&a, b"newer", 0o644, "t").unwrap();
        assert_eq!(std::fs::read(&a).unwrap(), b"newer");
        assert!(std::fs::read_dir(shm.path().join("spares"))
            .unwrap()
            .all(|e| e.unwrap().file_name() == LOCK));
    }

    #[test]
    fn one_process_holds_the_pool_and_a_restart_takes_its_spares() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        std::fs::write(&a, b"0").unwrap();
        {
            let s = pool(dir.path());
            assert!(Spares::open(&dir.path().join("spares")).unwrap().is_none());
            s.replace(&a, b"1", 0o644, "t").unwrap();
        }
        let s = pool(dir.path());
        assert_eq!(s.resting(), (1, 1));
        let before = std::fs::metadata(dir.path().join("spares/0")).unwrap();
        s.replace(&a, b"2", 0o644, "t").unwrap();
        use std::os::unix::fs::MetadataExt;
        assert_eq!(std::fs::metadata(&a).unwrap().ino(), before.ino());
        assert_eq!(std::fs::read(&a).unwrap(), b"2");
    }
}
