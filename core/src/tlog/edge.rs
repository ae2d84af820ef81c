//! The right edge of a Merkle tree (RFC 6962 shape): its perfect subtrees, largest (leftmost)
//! first, as `(height, hash)`. Enough to compute the root and to append a leaf without the
//! rest of the tree, which is how the ledger keeps its root incrementally.
//!
//! Pure arithmetic: where the edge's subtrees lie among the tile-level stored hashes
//! ([`edge_spans`]) is computed here; reading those hashes is the caller's business.

use super::hash::{empty_root, node_hash, Hash};
use super::tiles::TILE_HEIGHT;

/// Root of the tree whose right edge is `edge`.
pub fn edge_root(edge: &[(u32, Hash)]) -> Hash {
    let mut iter = edge.iter().rev();
    let Some(&(_, mut acc)) = iter.next() else {
        return empty_root();
    };
    for (_, left) in iter {
        acc = node_hash(left, &acc);
    }
    acc
}

/// Add leaf `idx` with hash `leaf` to the right edge, collecting the tile-level stored hashes
/// (level ≥ 1) that become complete as `(level, index, hash)`.
pub fn push_edge(
    edge: &mut Vec<(u32, Hash)>,
    idx: u64,
    leaf: Hash,
    nodes: &mut Vec<(u8, u64, Hash)>,
) {
    let (mut height, mut hash) = (0u32, leaf);
    while let Some(&(h, left)) = edge.last() {
        if h != height {
            break;
        }
        edge.pop();
        height += 1;
        hash = node_hash(&left, &hash);
        if height % TILE_HEIGHT == 0 {
            let level = (height / TILE_HEIGHT) as u8;
            nodes.push((level, ((idx + 1) >> height) - 1, hash));
        }
    }
    edge.push((height, hash));
}

/// Where one perfect subtree of a right edge lies among the stored hashes: its root is the
/// RFC 6962 root of the `count` stored hashes of tile `level` from index `first`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EdgeSpan {
    /// Height of the subtree (it covers `2^height` leaves).
    pub height: u32,
    /// Tile level of the stored hashes (0: leaf hashes).
    pub level: u8,
    /// Index of the first stored hash at that level.
    pub first: u64,
    /// How many stored hashes (`2^(height mod TILE_HEIGHT)`).
    pub count: u64,
}

/// The perfect subtrees of the right edge of the tree of `size` leaves, largest (leftmost)
/// first, as spans of stored hashes.
pub fn edge_spans(size: u64) -> Vec<EdgeSpan> {
    let mut spans = Vec::new();
    let mut start = 0u64;
    for height in (0..64u32).rev() {
        if (size >> height) & 1 == 0 {
            continue;
        }
        let level = height / TILE_HEIGHT;
        spans.push(EdgeSpan {
            height,
            level: level as u8,
            first: start >> (level * TILE_HEIGHT),
            count: 1u64 << (height % TILE_HEIGHT),
        });
        start += 1u64 << height;
    }
    spans
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tlog::hash::{leaf_hash, root};

    fn hashes(n: u64) -> Vec<Hash> {
        (0..n).map(|i| leaf_hash(&i.to_be_bytes())).collect()
    }

    type Edge = Vec<(u32, Hash)>;
    type Nodes = Vec<(u8, u64, Hash)>;

    fn pushed(leaves: &[Hash]) -> (Edge, Nodes) {
        let (mut edge, mut nodes) = (Vec::new(), Vec::new());
        for (i, h) in leaves.iter().enumerate() {
            push_edge(&mut edge, i as u64, *h, &mut nodes);
        }
        (edge, nodes)
    }

    fn span(height: u32, level: u8, first: u64, count: u64) -> EdgeSpan {
        EdgeSpan {
            height,
            level,
            first,
            count,
        }
    }

    #[test]
    fn empty_edge_is_the_empty_root() {
        assert_eq!(edge_root(&[]), empty_root());
        assert!(edge_spans(0).is_empty());
    }

    #[test]
    fn spans_of_known_sizes() {
        assert_eq!(edge_spans(1), vec![span(0, 0, 0, 1)]);
        assert_eq!(edge_spans(3), vec![span(1, 0, 0, 2), span(0, 0, 2, 1)]);
        assert_eq!(edge_spans(256), vec![span(8, 1, 0, 1)]);
        // 300 = 256 + 32 + 8 + 4.
        assert_eq!(
            edge_spans(300),
            vec![
                span(8, 1, 0, 1),
                span(5, 0, 256, 32),
                span(3, 0, 288, 8),
                span(2, 0, 296, 4)
            ]
        );
        // 2^16 + 2^9: one level-2 hash, then two level-1 hashes.
        assert_eq!(
            edge_spans(65_536 + 512),
            vec![span(16, 2, 0, 1), span(9, 1, 256, 2)]
        );
        assert_eq!(edge_spans(u64::MAX).len(), 64);
    }

    #[test]
    fn pushing_leaves_gives_the_root_and_each_edge_shape() {
        let leaves = hashes(300);
        let (mut edge, mut nodes) = (Vec::new(), Vec::new());
        for (i, h) in leaves.iter().enumerate() {
            push_edge(&mut edge, i as u64, *h, &mut nodes);
            let size = i as u64 + 1;
            assert_eq!(edge_root(&edge), root(&leaves[..=i]), "size {size}");
            let heights: Vec<u32> = edge_spans(size).iter().map(|s| s.height).collect();
            let got: Vec<u32> = edge.iter().map(|&(h, _)| h).collect();
            assert_eq!(got, heights, "size {size}");
        }
        assert_eq!(nodes, vec![(1, 0, root(&leaves[..256]))]);
    }

    #[test]
    fn level_two_hash_completes_at_65536_leaves() {
        let leaves = hashes(65_536);
        let (edge, nodes) = pushed(&leaves);
        let full = root(&leaves);
        assert_eq!(edge, vec![(16, full)]);
        assert_eq!(nodes.len(), 256 + 1);
        assert_eq!(nodes.last(), Some(&(2, 0, full)));
        assert_eq!(nodes[255], (1, 255, root(&leaves[255 * 256..])));
    }
}
