//! RFC 6962 (RFC 9162 section 2.1.1) Merkle tree hashing over SHA-256.
//!
//! Leaves hash as `SHA-256(0x00 ‖ data)`, interior nodes as `SHA-256(0x01 ‖ left ‖ right)`, and
//! the empty tree as `SHA-256("")`. A tree of `n > 1` leaves splits at the largest power of two
//! strictly below `n`.

use sha2::{Digest, Sha256};

/// A SHA-256 tree hash.
pub type Hash = [u8; 32];

/// Hash of a leaf: `SHA-256(0x00 ‖ data)`.
pub fn leaf_hash(data: &[u8]) -> Hash {
    let mut h = Sha256::new();
    h.update([0x00]);
    h.update(data);
    h.finalize().into()
}

/// Hash of an interior node: `SHA-256(0x01 ‖ left ‖ right)`.
pub fn node_hash(left: &Hash, right: &Hash) -> Hash {
    let mut h = Sha256::new();
    h.update([0x01]);
    h.update(left);
    h.update(right);
    h.finalize().into()
}

/// Root of the empty tree: `SHA-256("")`.
pub fn empty_root() -> Hash {
    Sha256::digest(b"").into()
}

/// The largest power of two strictly below `n`; `n` must be at least 2.
pub(crate) fn split_point(n: u64) -> u64 {
    debug_assert!(n >= 2);
    1u64 << (63 - (n - 1).leading_zeros())
}

/// Merkle tree hash (MTH) of a tree whose leaves have the given leaf hashes.
pub fn root(leaf_hashes: &[Hash]) -> Hash {
    match leaf_hashes.len() {
        0 => empty_root(),
        _ => subtree_root(leaf_hashes),
    }
}

/// MTH of a non-empty run of hashes treated as the leaves of a subtree.
pub(crate) fn subtree_root(hashes: &[Hash]) -> Hash {
    match hashes.len() {
        0 => empty_root(),
        1 => hashes[0],
        n => {
            let k = split_point(n as u64) as usize;
            node_hash(&subtree_root(&hashes[..k]), &subtree_root(&hashes[k..]))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_points() {
        for (n, k) in [
            (2, 1),
            (3, 2),
            (4, 2),
            (5, 4),
            (7, 4),
            (8, 4),
            (9, 8),
            (28937, 16384),
        ] {
            assert_eq!(split_point(n), k, "n = {n}");
        }
        assert_eq!(split_point(u64::MAX), 1 << 63);
    }
}
