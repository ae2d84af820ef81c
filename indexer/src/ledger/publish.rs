//! Publishing the ledger's derived files (hash tiles, entry bundles, then `checkpoint` last)
//! after a commit, and repairing them on open.

use std::fs;
use std::path::Path;

use conduct_core::tlog::{entries_path, new_tiles, open_checkpoint, tiles_for_size, Tile};

use super::sql::{bundle_bytes, bundle_len, tile_bytes};
use super::{Ledger, LedgerError, Result};
use crate::durable::write_atomic;

/// Permission bits of published files (they are public).
const FILE_MODE: u32 = 0o644;

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> LedgerError + '_ {
    move |source| LedgerError::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl Ledger {
    /// Write the files the log gained since the last publish, the checkpoint last.
    pub(super) fn publish(&mut self) -> Result<()> {
        for tile in new_tiles(self.published, self.size) {
            self.write_tile(tile)?;
        }
        self.write_file("checkpoint", self.note.as_bytes())?;
        self.published = self.size;
        Ok(())
    }

    /// Write hash tile `tile` and, at level 0, its entry bundle.
    fn write_tile(&self, tile: Tile) -> Result<()> {
        self.write_file(&tile.path(), &tile_bytes(&self.conn, tile)?)?;
        if tile.level == 0 {
            let path = entries_path(tile.index, tile.width);
            self.write_file(&path, &bundle_bytes(&self.conn, tile)?)?;
        }
        Ok(())
    }

    fn write_file(&self, rel: &str, bytes: &[u8]) -> Result<()> {
        let path = self.log_dir.join(rel);
        write_atomic(&path, bytes, FILE_MODE).map_err(io_err(&path))?;
        crate::metrics::count_tree_write(&format!("log/{rel}"));
        Ok(())
    }

    /// Re-publish every derived file that is missing or has the wrong length, then the
    /// checkpoint if it differs. Returns how many files were written.
    pub(super) fn repair(&mut self) -> Result<usize> {
        let cp_path = self.log_dir.join("checkpoint");
        let published = match fs::read_to_string(&cp_path) {
            Ok(text) => Some(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => None,
            Err(e) => return Err(io_err(&cp_path)(e)),
        };
        let checkpoint_ok = published.as_deref() == Some(self.note.as_str());
        if let Some(text) = published.as_deref().filter(|_| !checkpoint_ok) {
            if let Ok(signed) = open_checkpoint(text, std::slice::from_ref(&self.verifier)) {
                let c = signed.checkpoint;
                if c.size > self.size {
                    return Err(LedgerError::PublishedAhead {
                        published: c.size,
                        stored: self.size,
                    });
                }
                if c.size == self.size && c.root != self.root {
                    return Err(LedgerError::Corrupt(format!(
                        "published checkpoint at size {} has a different root",
                        c.size
                    )));
                }
            }
        }
        // Every file is written whole (temp, rename) and a tile's path fixes its content, so a
        // file that is there is the right one: only the newest two level-0 tiles and bundles
        // (the ones a crash can have left behind) are checked by length, the rest for being
        // there, and no scan of the log is needed (`conduct verify-log` audits every byte).
        let there = |rel: &str| {
            fs::metadata(self.log_dir.join(rel)).is_ok_and(|m| m.is_file() && m.len() > 0)
        };
        let len_ok = |rel: &str, expected: u64| {
            fs::metadata(self.log_dir.join(rel)).is_ok_and(|m| m.is_file() && m.len() == expected)
        };
        let last_bundle = self.size.saturating_sub(1) / 256;
        let mut written = 0;
        for tile in tiles_for_size(self.size) {
            let recent = tile.level == 0 && tile.index + 1 >= last_bundle;
            let tile_ok = if recent {
                len_ok(&tile.path(), tile.byte_len() as u64)
            } else {
                there(&tile.path())
            };
            if !tile_ok {
                self.write_file(&tile.path(), &tile_bytes(&self.conn, tile)?)?;
                written += 1;
            }
            if tile.level == 0 {
                let rel = entries_path(tile.index, tile.width);
                let ok = if recent {
                    len_ok(&rel, bundle_len(&self.conn, tile)?)
                } else {
                    there(&rel)
                };
                if !ok {
                    self.write_file(&rel, &bundle_bytes(&self.conn, tile)?)?;
                    written += 1;
                }
            }
        }
        if !checkpoint_ok {
            self.write_file("checkpoint", self.note.as_bytes())?;
            written += 1;
        }
        self.published = self.size;
        Ok(written)
    }

    /// Write the files the log gained since they were last published (a retry after a
    /// publish failure).
    pub fn republish(&mut self) -> Result<()> {
        self.publish()
    }
}
