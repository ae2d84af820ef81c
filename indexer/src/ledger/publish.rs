//! Publishing the ledger's derived files (hash tiles, entry bundles, then `checkpoint` last)
//! into the tree's `log/` after a commit, and repairing them on open.

use std::collections::HashMap;

use conduct_core::tlog::{entries_path, new_tiles, open_checkpoint, tiles_for_size, Tile};

use super::stored::{bundle_bytes, bundle_len, tile_bytes};
use super::{Ledger, LedgerError, Result};
use crate::tree::Put;

/// Where the log lives in the tree.
const LOG: &str = "log/";

fn io_err(path: &str) -> impl FnOnce(std::io::Error) -> LedgerError + '_ {
    move |source| LedgerError::Io {
        path: path.to_owned(),
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
    fn write_tile(&mut self, tile: Tile) -> Result<()> {
        let bytes = tile_bytes(self.log.as_ref(), tile)?;
        self.write_file(&tile.path(), &bytes)?;
        if tile.level == 0 {
            let path = entries_path(tile.index, tile.width);
            let bytes = bundle_bytes(self.log.as_ref(), tile)?;
            self.write_file(&path, &bytes)?;
        }
        Ok(())
    }

    /// Put `bytes` at `log/<rel>`, durable when this returns (a checkpoint must never name a
    /// tile that a crash could lose).
    fn write_file(&self, rel: &str, bytes: &[u8]) -> Result<()> {
        let path = format!("{LOG}{rel}");
        (self.tree)
            .put(&path, bytes, Put::SYNCED.for_path(&path))
            .map_err(io_err(&path))?;
        crate::metrics::count_tree_write(&path);
        Ok(())
    }

    /// Re-publish every derived file that is missing or has the wrong length, then the
    /// checkpoint if it differs. Returns how many files were written.
    pub(super) fn repair(&mut self) -> Result<usize> {
        let cp_path = format!("{LOG}checkpoint");
        let published = match self.tree.get(&cp_path).map_err(io_err(&cp_path))? {
            Some(bytes) => String::from_utf8(bytes).ok(),
            None => None,
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
        // One listing of the log's objects, not a look per tile (a bucket answers a listing
        // a thousand objects at a time, and a look each).
        let listed: HashMap<String, u64> = (self.tree.list(LOG).map_err(io_err(LOG))?)
            .into_iter()
            .filter_map(|l| Some((l.path.strip_prefix(LOG)?.to_owned(), l.len)))
            .collect();
        let there = |rel: &str| listed.get(rel).is_some_and(|&len| len > 0);
        let len_ok = |rel: &str, expected: u64| listed.get(rel) == Some(&expected);
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
                let bytes = tile_bytes(self.log.as_ref(), tile)?;
                self.write_file(&tile.path(), &bytes)?;
                written += 1;
            }
            if tile.level == 0 {
                let rel = entries_path(tile.index, tile.width);
                let ok = if recent {
                    len_ok(&rel, bundle_len(self.log.as_ref(), tile)?)
                } else {
                    there(&rel)
                };
                if !ok {
                    let bytes = bundle_bytes(self.log.as_ref(), tile)?;
                    self.write_file(&rel, &bytes)?;
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
