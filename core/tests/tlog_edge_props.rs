//! Property tests for the right edge of the tree (`tlog::edge`): the incremental root against
//! the batch root computation, the tile-level hashes it completes, and the span arithmetic
//! that rebuilds an edge from stored hashes.
//!
//! SHA-256 is slow in debug builds, so case counts and tree sizes are bounded.

use std::collections::HashMap;

use conduct_core::tlog::{
    edge_root, edge_spans, leaf_hash, push_edge, root, Hash, TILE_HEIGHT, TILE_WIDTH,
};
use proptest::prelude::*;

/// Leaf hashes of `n` distinct leaves, varied by `salt`.
fn leaf_hashes(n: usize, salt: u8) -> Vec<Hash> {
    (0..n as u64)
        .map(|i| {
            let mut d = i.to_be_bytes().to_vec();
            d.push(salt);
            leaf_hash(&d)
        })
        .collect()
}

/// The edge and completed stored hashes after pushing `leaves` one by one from `first`,
/// starting from `edge`.
fn push_all(
    mut edge: Vec<(u32, Hash)>,
    first: u64,
    leaves: &[Hash],
    nodes: &mut Vec<(u8, u64, Hash)>,
) -> Vec<(u32, Hash)> {
    for (i, h) in leaves.iter().enumerate() {
        push_edge(&mut edge, first + i as u64, *h, nodes);
    }
    edge
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Pushing leaves in any split of batches gives the root `root` computes from all the
    /// leaf hashes, and the same edge as pushing them in one go.
    #[test]
    fn edge_root_matches_root(n in 0usize..600, cut in 0usize..600, salt in any::<u8>()) {
        let leaves = leaf_hashes(n, salt);
        let cut = cut.min(n);
        let mut nodes = Vec::new();
        let whole = push_all(Vec::new(), 0, &leaves, &mut nodes);
        prop_assert_eq!(edge_root(&whole), root(&leaves));
        let mut split_nodes = Vec::new();
        let head = push_all(Vec::new(), 0, &leaves[..cut], &mut split_nodes);
        prop_assert_eq!(edge_root(&head), root(&leaves[..cut]));
        let tail = push_all(head, cut as u64, &leaves[cut..], &mut split_nodes);
        prop_assert_eq!(&tail, &whole);
        prop_assert_eq!(split_nodes, nodes);
    }

    /// The stored hashes a push completes are exactly the full level-1 tiles' roots.
    #[test]
    fn completed_nodes_are_full_subtrees(n in 0usize..800, salt in any::<u8>()) {
        let leaves = leaf_hashes(n, salt);
        let mut nodes = Vec::new();
        push_all(Vec::new(), 0, &leaves, &mut nodes);
        let width = usize::from(TILE_WIDTH);
        let expected: Vec<(u8, u64, Hash)> = leaves
            .chunks_exact(width)
            .enumerate()
            .map(|(i, c)| (1, i as u64, root(c)))
            .collect();
        prop_assert_eq!(nodes, expected);
    }

    /// An edge rebuilt from its spans over the stored hashes (leaf hashes and the completed
    /// tile-level hashes) is the edge the pushes built.
    #[test]
    fn spans_rebuild_the_edge(n in 0usize..800, salt in any::<u8>()) {
        let leaves = leaf_hashes(n, salt);
        let mut nodes = Vec::new();
        let edge = push_all(Vec::new(), 0, &leaves, &mut nodes);
        let stored: HashMap<(u8, u64), Hash> = leaves
            .iter()
            .enumerate()
            .map(|(i, h)| ((0, i as u64), *h))
            .chain(nodes.iter().map(|&(l, i, h)| ((l, i), h)))
            .collect();
        let rebuilt: Vec<(u32, Hash)> = edge_spans(n as u64)
            .iter()
            .map(|s| {
                let hashes: Vec<Hash> = (s.first..s.first + s.count)
                    .map(|i| stored[&(s.level, i)])
                    .collect();
                (s.height, root(&hashes))
            })
            .collect();
        prop_assert_eq!(rebuilt, edge);
    }
}

proptest! {
    /// For any size, the spans are the set bits of the size, largest first, laid end to end
    /// from leaf 0, each addressing whole stored hashes of its own tile level.
    #[test]
    fn spans_tile_the_tree(size in any::<u64>()) {
        let spans = edge_spans(size);
        prop_assert_eq!(spans.len() as u32, size.count_ones());
        let mut start = 0u64;
        let mut last = u32::MAX;
        for s in &spans {
            prop_assert!(s.height < last);
            last = s.height;
            prop_assert_eq!(u32::from(s.level), s.height / TILE_HEIGHT);
            prop_assert_eq!(s.count, 1u64 << (s.height % TILE_HEIGHT));
            let shift = u32::from(s.level) * TILE_HEIGHT;
            prop_assert_eq!(s.first << shift, start);
            prop_assert_eq!(s.count << shift, 1u64 << s.height);
            start = start.wrapping_add(1u64 << s.height);
        }
        prop_assert_eq!(start, size);
    }
}
