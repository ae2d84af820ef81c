//! C2SP tlog-tiles: tile coordinates and paths, the tiles a log of a given size serves, entry
//! bundles, and re-deriving roots and proofs from tiles alone.
//!
//! Tiles have height 8: a tile holds up to 256 consecutive *stored hashes* of one level, each
//! 32 bytes. The stored hash `j` at level `l` is `MTH(D[j·256^l .. (j+1)·256^l])`, so a tree of
//! size `s` has `floor(s / 256^l)` stored hashes at level `l`. Tile `n` of level `l` holds stored
//! hashes `256n ..`; it is full with 256 of them, otherwise partial with width `W < 256`.

use std::collections::HashMap;

use super::hash::{empty_root, node_hash, split_point, subtree_root, Hash};
use super::proof::{consistency_path_with, inclusion_path_with, ProofError};

/// Tile height: each tile spans 8 tree levels.
pub const TILE_HEIGHT: u32 = 8;
/// Hashes (or entries, in a bundle) in a full tile.
pub const TILE_WIDTH: u16 = 256;
/// Largest entry an entry bundle can carry (its length is a big-endian `u16`).
pub const MAX_ENTRY_LEN: usize = 65_535;
/// Largest tile level a path may name.
pub const MAX_LEVEL: u8 = 63;

/// Coordinates of a hash tile: level, tile index within the level, and width (1..=256).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Tile {
    /// Tile level; level `l` holds subtree hashes of `256^l` leaves.
    pub level: u8,
    /// Index of the tile within its level.
    pub index: u64,
    /// Number of hashes in the tile, 1..=256; 256 means full.
    pub width: u16,
}

impl Tile {
    /// Whether this is a full tile (256 hashes).
    pub fn is_full(&self) -> bool {
        self.width >= TILE_WIDTH
    }

    /// The tile's path, `tile/<L>/<N>[.p/<W>]`.
    pub fn path(&self) -> String {
        tile_path(self.level, self.index, self.width)
    }

    /// Byte length of the tile: 32 per hash.
    pub fn byte_len(&self) -> usize {
        usize::from(self.width) * 32
    }
}

impl std::fmt::Display for Tile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.path())
    }
}

/// `N` as 3-digit groups, each but the last prefixed with `x`: 1234067 → `x001/x234/067`.
fn index_path(index: u64) -> String {
    let mut groups = Vec::new();
    let mut n = index;
    loop {
        groups.push(n % 1000);
        n /= 1000;
        if n == 0 {
            break;
        }
    }
    let last = groups.len() - 1;
    groups
        .iter()
        .rev()
        .enumerate()
        .map(|(i, g)| {
            if i == last {
                format!("{g:03}")
            } else {
                format!("x{g:03}")
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

fn width_suffix(width: u16) -> String {
    if width >= TILE_WIDTH {
        String::new()
    } else {
        format!(".p/{width}")
    }
}

/// Path of hash tile `index` at `level`: `tile/<L>/<N>`, plus `.p/<W>` when `width < 256`.
///
/// Callers pass a width in 1..=256; 256 (or more) names the full tile.
pub fn tile_path(level: u8, index: u64, width: u16) -> String {
    format!("tile/{level}/{}{}", index_path(index), width_suffix(width))
}

/// Path of entry bundle `index`: `tile/entries/<N>`, plus `.p/<W>` when `width < 256`.
///
/// Callers pass a width in 1..=256; 256 (or more) names the full bundle.
pub fn entries_path(index: u64, width: u16) -> String {
    format!("tile/entries/{}{}", index_path(index), width_suffix(width))
}

/// Parse a canonical decimal with no leading zeros (except `0` itself).
fn parse_decimal(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) || (s.len() > 1 && s.starts_with('0'))
    {
        return None;
    }
    s.parse().ok()
}

/// Parse `<N>[.p/<W>]`, accepting only the canonical spelling.
fn parse_index_width(s: &str) -> Option<(u64, u16)> {
    let (n, width) = match s.split_once(".p/") {
        Some((n, w)) => {
            let w = parse_decimal(w)?;
            if !(1..u64::from(TILE_WIDTH)).contains(&w) {
                return None;
            }
            (n, w as u16)
        }
        None => (s, TILE_WIDTH),
    };
    let segments: Vec<&str> = n.split('/').collect();
    let mut index: u64 = 0;
    for (i, seg) in segments.iter().enumerate() {
        let digits = if i + 1 < segments.len() {
            seg.strip_prefix('x')?
        } else {
            seg
        };
        if digits.len() != 3 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let g: u64 = digits.parse().ok()?;
        index = index.checked_mul(1000)?.checked_add(g)?;
    }
    (index_path(index) == n).then_some((index, width))
}

/// Parse a canonical hash tile path `tile/<L>/<N>[.p/<W>]` (as [`tile_path`] writes it).
pub fn parse_tile_path(path: &str) -> Option<Tile> {
    let rest = path.strip_prefix("tile/")?;
    let (level, rest) = rest.split_once('/')?;
    let level = parse_decimal(level)?;
    if level > u64::from(MAX_LEVEL) {
        return None;
    }
    let (index, width) = parse_index_width(rest)?;
    Some(Tile {
        level: level as u8,
        index,
        width,
    })
}

/// Parse a canonical entry bundle path `tile/entries/<N>[.p/<W>]` into `(index, width)`.
pub fn parse_entries_path(path: &str) -> Option<(u64, u16)> {
    parse_index_width(path.strip_prefix("tile/entries/")?)
}

/// Number of stored hashes at `level` in a tree of `size` leaves: `floor(size / 256^level)`.
pub fn stored_hash_count(level: u8, size: u64) -> u64 {
    let shift = u32::from(level) * TILE_HEIGHT;
    if shift >= 64 {
        0
    } else {
        size >> shift
    }
}

/// Width of tile `index` at `level` for a tree of `size` leaves; 0 if the tile does not exist.
fn tile_width_at(level: u8, index: u64, size: u64) -> u16 {
    let count = stored_hash_count(level, size);
    let first = index.saturating_mul(u64::from(TILE_WIDTH));
    count.saturating_sub(first).min(u64::from(TILE_WIDTH)) as u16
}

/// The tile of `level` holding stored hash `hash_index`, with the width a log of `size` serves.
fn tile_for(level: u8, hash_index: u64, size: u64) -> Tile {
    let index = hash_index / u64::from(TILE_WIDTH);
    Tile {
        level,
        index,
        width: tile_width_at(level, index, size),
    }
}

/// Every hash tile a log of `size` leaves serves: at each level, the full tiles and then the
/// partial tile if there is one, from level 0 upwards.
///
/// Entry bundles follow level 0: bundle `n` exists with the width of level-0 tile `n`.
pub fn tiles_for_size(size: u64) -> Vec<Tile> {
    new_tiles(0, size)
}

/// Tiles a log of `new` leaves serves that a log of `old` leaves did not serve (with that
/// width): what a log must write when it grows from `old` to `new`.
pub fn new_tiles(old: u64, new: u64) -> Vec<Tile> {
    let mut out = Vec::new();
    for level in 0..=MAX_LEVEL {
        let new_count = stored_hash_count(level, new);
        if new_count == 0 {
            break;
        }
        let old_count = stored_hash_count(level, old);
        let first = old_count.min(new_count) / u64::from(TILE_WIDTH);
        let last = (new_count - 1) / u64::from(TILE_WIDTH);
        for index in first..=last {
            let width = tile_width_at(level, index, new);
            if width != tile_width_at(level, index, old) {
                out.push(Tile {
                    level,
                    index,
                    width,
                });
            }
        }
    }
    out
}

/// Every tile (as [`tiles_for_size`] lists them) of the tree made of `leaf_hashes`, with its
/// bytes: the tile's stored hashes concatenated.
pub fn build_tiles(leaf_hashes: &[Hash]) -> Vec<(Tile, Vec<u8>)> {
    let mut out = Vec::new();
    let mut level_hashes: Vec<Hash> = leaf_hashes.to_vec();
    let mut level: u8 = 0;
    while !level_hashes.is_empty() {
        for (i, chunk) in level_hashes.chunks(usize::from(TILE_WIDTH)).enumerate() {
            let tile = Tile {
                level,
                index: i as u64,
                width: chunk.len() as u16,
            };
            out.push((tile, chunk.concat()));
        }
        level_hashes = level_hashes
            .chunks_exact(usize::from(TILE_WIDTH))
            .map(subtree_root)
            .collect();
        level += 1;
    }
    out
}

/// Bytes of `tile` in the tree made of `leaf_hashes`, or `None` if that tree does not have the
/// tile with that width (at any width, the bytes of a tile are a prefix of the full tile's).
pub fn tile_data(tile: Tile, leaf_hashes: &[Hash]) -> Option<Vec<u8>> {
    let size = leaf_hashes.len() as u64;
    if tile.width == 0
        || tile.width > TILE_WIDTH
        || tile_width_at(tile.level, tile.index, size) < tile.width
    {
        return None;
    }
    let span = 1usize << (u32::from(tile.level) * TILE_HEIGHT);
    let first = tile.index as usize * usize::from(TILE_WIDTH);
    let mut bytes = Vec::with_capacity(tile.byte_len());
    for j in first..first + usize::from(tile.width) {
        bytes.extend_from_slice(&subtree_root(&leaf_hashes[j * span..(j + 1) * span]));
    }
    Some(bytes)
}

/// Why hashes could not be read from tiles.
#[derive(Debug, thiserror::Error)]
pub enum TileReadError<E> {
    /// The fetch closure failed.
    #[error("fetching {tile}: {source}")]
    Fetch {
        /// The tile asked for.
        tile: Tile,
        /// The closure's error.
        source: E,
    },
    /// The fetched bytes are not `32 × width` long.
    #[error("{tile} has {len} bytes, expected {expected}")]
    BadLength {
        /// The tile asked for.
        tile: Tile,
        /// Bytes received.
        len: usize,
        /// Bytes expected.
        expected: usize,
    },
    /// The index or sizes asked for do not fit the tree.
    #[error(transparent)]
    Proof(#[from] ProofError),
}

/// Reads the hashes of a tree of a fixed size from its tiles, through a fetch closure, and
/// derives the root and proofs from them. Tiles are fetched at most once.
///
/// The closure receives the tile with the width a log of this size serves and must return
/// exactly `32 × width` bytes (a longer tile of the same level and index can be cut to length).
/// Nothing read is trusted: compare [`TileHashReader::root`] with a verified checkpoint.
pub struct TileHashReader<F> {
    size: u64,
    fetch: F,
    cache: HashMap<(u8, u64), Vec<Hash>>,
}

impl<F, E> TileHashReader<F>
where
    F: FnMut(Tile) -> Result<Vec<u8>, E>,
{
    /// A reader for the tree of `size` leaves.
    pub fn new(size: u64, fetch: F) -> Self {
        TileHashReader {
            size,
            fetch,
            cache: HashMap::new(),
        }
    }

    /// The tree size.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Stored hashes `first .. first + count` at `level`, all inside one tile.
    fn stored(&mut self, level: u8, first: u64, count: u64) -> Result<Vec<Hash>, TileReadError<E>> {
        let tile = tile_for(level, first, self.size);
        let key = (tile.level, tile.index);
        if !self.cache.contains_key(&key) {
            let bytes =
                (self.fetch)(tile).map_err(|source| TileReadError::Fetch { tile, source })?;
            if bytes.len() != tile.byte_len() {
                return Err(TileReadError::BadLength {
                    tile,
                    len: bytes.len(),
                    expected: tile.byte_len(),
                });
            }
            let hashes = bytes
                .chunks_exact(32)
                .map(|c| {
                    let mut h = [0u8; 32];
                    h.copy_from_slice(c);
                    h
                })
                .collect();
            self.cache.insert(key, hashes);
        }
        let hashes = &self.cache[&key];
        let offset = (first % u64::from(TILE_WIDTH)) as usize;
        Ok(hashes[offset..offset + count as usize].to_vec())
    }

    /// Hash of the perfect subtree `D[start .. start + 2^k]`, `start` a multiple of `2^k`.
    fn perfect(&mut self, start: u64, k: u32) -> Result<Hash, TileReadError<E>> {
        let level = (k / TILE_HEIGHT) as u8;
        let first = start >> (u32::from(level) * TILE_HEIGHT);
        let hashes = self.stored(level, first, 1u64 << (k % TILE_HEIGHT))?;
        Ok(subtree_root(&hashes))
    }

    /// `MTH(D[start .. end])` for `start < end <= size`.
    fn range(&mut self, start: u64, end: u64) -> Result<Hash, TileReadError<E>> {
        let n = end - start;
        if n.is_power_of_two() && start.is_multiple_of(n) {
            return self.perfect(start, n.trailing_zeros());
        }
        let k = split_point(n);
        let left = self.range(start, start + k)?;
        let right = self.range(start + k, end)?;
        Ok(node_hash(&left, &right))
    }

    /// The tree's root hash.
    pub fn root(&mut self) -> Result<Hash, TileReadError<E>> {
        if self.size == 0 {
            return Ok(empty_root());
        }
        self.range(0, self.size)
    }

    /// Inclusion proof for leaf `index`.
    pub fn inclusion_proof(&mut self, index: u64) -> Result<Vec<Hash>, TileReadError<E>> {
        if index >= self.size {
            return Err(ProofError::IndexOutOfRange {
                index,
                size: self.size,
            }
            .into());
        }
        let size = self.size;
        inclusion_path_with(index, size, &mut |a, b| self.range(a, b))
    }

    /// Consistency proof from the tree of `old_size` leaves to this tree.
    pub fn consistency_proof(&mut self, old_size: u64) -> Result<Vec<Hash>, TileReadError<E>> {
        if old_size > self.size {
            return Err(ProofError::SizeOutOfRange {
                old: old_size,
                new: self.size,
            }
            .into());
        }
        let size = self.size;
        consistency_path_with(old_size, size, &mut |a, b| self.range(a, b))
    }
}

/// Root of the tree of `size` leaves, computed from tiles alone (see [`TileHashReader`]).
pub fn root_from_tiles<F, E>(size: u64, fetch: F) -> Result<Hash, TileReadError<E>>
where
    F: FnMut(Tile) -> Result<Vec<u8>, E>,
{
    TileHashReader::new(size, fetch).root()
}

/// Why an entry bundle could not be encoded or decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BundleError {
    /// An entry is longer than 65 535 bytes.
    #[error("entry {index} is {len} bytes, more than {MAX_ENTRY_LEN}")]
    EntryTooLong {
        /// Position of the entry in the bundle.
        index: usize,
        /// Its length.
        len: usize,
    },
    /// More than 256 entries.
    #[error("a bundle holds at most 256 entries")]
    TooManyEntries,
    /// The bytes end inside a length prefix or an entry.
    #[error("bundle truncated at byte {offset}")]
    Truncated {
        /// Offset of the record that is cut short.
        offset: usize,
    },
}

/// Encode an entry bundle: each entry as a big-endian `u16` length followed by its bytes.
pub fn encode_bundle<T: AsRef<[u8]>>(entries: &[T]) -> Result<Vec<u8>, BundleError> {
    if entries.len() > usize::from(TILE_WIDTH) {
        return Err(BundleError::TooManyEntries);
    }
    let total = entries.iter().map(|e| 2 + e.as_ref().len()).sum();
    let mut out = Vec::with_capacity(total);
    for (index, e) in entries.iter().enumerate() {
        let e = e.as_ref();
        let len = u16::try_from(e.len()).map_err(|_| BundleError::EntryTooLong {
            index,
            len: e.len(),
        })?;
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(e);
    }
    Ok(out)
}

/// Decode an entry bundle, refusing truncated records and more than 256 entries.
pub fn decode_bundle(bytes: &[u8]) -> Result<Vec<Vec<u8>>, BundleError> {
    let mut out = Vec::new();
    let mut offset = 0;
    while offset < bytes.len() {
        if out.len() == usize::from(TILE_WIDTH) {
            return Err(BundleError::TooManyEntries);
        }
        let Some(prefix) = bytes.get(offset..offset + 2) else {
            return Err(BundleError::Truncated { offset });
        };
        let len = usize::from(u16::from_be_bytes([prefix[0], prefix[1]]));
        let Some(entry) = bytes.get(offset + 2..offset + 2 + len) else {
            return Err(BundleError::Truncated { offset });
        };
        out.push(entry.to_vec());
        offset += 2 + len;
    }
    Ok(out)
}
