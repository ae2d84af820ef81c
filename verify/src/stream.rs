//! The hash tiles of a log rebuilt leaf by leaf, in constant memory: each full tile is handed
//! out as soon as its last hash is known, the partial ones at the end, and the root (of the log
//! or of any prefix) comes from the right edge of the tree. What it holds is one tile per level
//! and the edge, whatever the size of the log (library/MIRRORS.md, "Checking a mirror").

use conduct_core::tlog::edge::{edge_root, push_edge};
use conduct_core::tlog::tiles::{Tile, TILE_WIDTH};
use conduct_core::tlog::Hash;

/// Tiles and root of the leaves pushed so far.
#[derive(Debug, Default)]
pub(crate) struct TileStream {
    size: u64,
    edge: Vec<(u32, Hash)>,
    /// Per level: the stored hashes of its current (not yet full) tile, concatenated.
    open: Vec<Vec<u8>>,
    /// Per level: stored hashes seen.
    counts: Vec<u64>,
    /// Scratch for [`push_edge`].
    nodes: Vec<(u8, u64, Hash)>,
}

impl TileStream {
    /// Leaves pushed so far.
    pub(crate) fn size(&self) -> u64 {
        self.size
    }

    /// The RFC 6962 root of the leaves pushed so far.
    pub(crate) fn root(&self) -> Hash {
        edge_root(&self.edge)
    }

    /// Push the next leaf's hash; `full` is called with every tile this leaf completes (at
    /// most one a level), with its bytes.
    pub(crate) fn push<E>(
        &mut self,
        leaf: Hash,
        mut full: impl FnMut(Tile, &[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        self.nodes.clear();
        push_edge(&mut self.edge, self.size, leaf, &mut self.nodes);
        self.size += 1;
        self.store(0, &leaf, &mut full)?;
        for i in 0..self.nodes.len() {
            let (level, _, hash) = self.nodes[i];
            self.store(level, &hash, &mut full)?;
        }
        Ok(())
    }

    fn store<E>(
        &mut self,
        level: u8,
        hash: &Hash,
        full: &mut impl FnMut(Tile, &[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        let l = usize::from(level);
        if self.open.len() <= l {
            self.open.resize_with(l + 1, Vec::new);
            self.counts.resize(l + 1, 0);
        }
        self.open[l].extend_from_slice(hash);
        self.counts[l] += 1;
        let width = u64::from(TILE_WIDTH);
        if self.counts[l].is_multiple_of(width) {
            let tile = Tile {
                level,
                index: self.counts[l] / width - 1,
                width: TILE_WIDTH,
            };
            full(tile, &self.open[l])?;
            self.open[l].clear();
        }
        Ok(())
    }

    /// The partial tiles of the log as it stands (one per level whose hash count is not a
    /// multiple of 256), lowest level first, with their bytes.
    pub(crate) fn partial(&self) -> impl Iterator<Item = (Tile, &[u8])> {
        let width = u64::from(TILE_WIDTH);
        self.counts
            .iter()
            .zip(&self.open)
            .enumerate()
            .filter(move |(_, (count, _))| !count.is_multiple_of(width))
            .map(move |(level, (count, bytes))| {
                let tile = Tile {
                    level: level as u8,
                    index: count / width,
                    width: (count % width) as u16,
                };
                (tile, bytes.as_slice())
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use conduct_core::tlog::tiles::build_tiles;
    use conduct_core::tlog::{leaf_hash, root};

    /// Every tile and root, against `build_tiles` and `root` over all the hashes at once.
    #[test]
    fn the_stream_gives_the_tiles_and_roots_of_the_whole_tree() {
        let sizes = (0..300u64).chain([511, 512, 513, 65_535, 65_536, 65_537, 70_000]);
        for n in sizes {
            let hashes: Vec<Hash> = (0..n).map(|i| leaf_hash(&i.to_be_bytes())).collect();
            let mut s = TileStream::default();
            let mut got: Vec<(Tile, Vec<u8>)> = Vec::new();
            for (i, h) in hashes.iter().enumerate() {
                s.push(*h, |t, b| {
                    got.push((t, b.to_vec()));
                    Ok::<(), ()>(())
                })
                .expect("push");
                // A prefix root is the root of the leaves so far.
                if n < 300 || i % 4099 == 0 {
                    assert_eq!(s.root(), root(&hashes[..=i]), "prefix {}", i + 1);
                }
            }
            got.extend(s.partial().map(|(t, b)| (t, b.to_vec())));
            let mut want = build_tiles(&hashes);
            want.sort_by_key(|(t, _)| (t.level, t.index));
            got.sort_by_key(|(t, _)| (t.level, t.index));
            assert_eq!(got, want, "size {n}");
            assert_eq!(s.root(), root(&hashes), "size {n}");
            assert_eq!(s.size(), n);
        }
    }

    #[test]
    fn the_stream_keeps_one_open_tile_a_level() {
        let mut s = TileStream::default();
        for i in 0..200_000u64 {
            s.push(leaf_hash(&i.to_be_bytes()), |_, _| Ok::<(), ()>(()))
                .expect("push");
        }
        assert_eq!(s.open.len(), 3);
        assert!(s.open.iter().all(|b| b.len() < 256 * 32));
        assert!(s.edge.len() <= 64);
    }
}
