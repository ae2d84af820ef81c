//! Merkle inclusion and consistency proofs (RFC 9162 sections 2.1.3 and 2.1.4).
//!
//! Generation works from the leaf hashes of the whole tree (or, through
//! [`crate::tlog::TileHashReader`], from tiles). Verification is total: malformed input of any
//! kind (out-of-range index or sizes, wrong proof length) yields `false`, never a panic.

use super::hash::{empty_root, node_hash, root, split_point, Hash};

/// Why a proof could not be generated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ProofError {
    /// The leaf index is not below the tree size.
    #[error("index {index} is out of range for a tree of size {size}")]
    IndexOutOfRange {
        /// The requested leaf index.
        index: u64,
        /// The tree size.
        size: u64,
    },
    /// The old tree size is larger than the new one.
    #[error("old size {old} is larger than new size {new}")]
    SizeOutOfRange {
        /// The old (smaller) tree size.
        old: u64,
        /// The new (larger) tree size.
        new: u64,
    },
}

/// Inclusion proof (audit path) for leaf `index` in the tree made of `leaf_hashes`.
///
/// The hashes run from the leaf's sibling up to the root's child, as RFC 6962 section 2.1.1
/// orders them.
pub fn inclusion_proof(index: u64, leaf_hashes: &[Hash]) -> Result<Vec<Hash>, ProofError> {
    let size = leaf_hashes.len() as u64;
    if index >= size {
        return Err(ProofError::IndexOutOfRange { index, size });
    }
    let mut mth = slice_mth(leaf_hashes);
    let Ok(path) = inclusion_path_with::<std::convert::Infallible>(index, size, &mut mth);
    Ok(path)
}

/// Consistency proof from the tree of the first `old_size` leaves to the tree made of all of
/// `leaf_hashes`. It is empty when `old_size` is 0 or equals the new size.
pub fn consistency_proof(old_size: u64, leaf_hashes: &[Hash]) -> Result<Vec<Hash>, ProofError> {
    let new_size = leaf_hashes.len() as u64;
    if old_size > new_size {
        return Err(ProofError::SizeOutOfRange {
            old: old_size,
            new: new_size,
        });
    }
    let mut mth = slice_mth(leaf_hashes);
    let Ok(path) = consistency_path_with::<std::convert::Infallible>(old_size, new_size, &mut mth);
    Ok(path)
}

fn slice_mth(
    leaf_hashes: &[Hash],
) -> impl FnMut(u64, u64) -> Result<Hash, std::convert::Infallible> + '_ {
    |start, end| Ok(root(&leaf_hashes[start as usize..end as usize]))
}

/// Inclusion path for `index < size`, asking `mth(start, end)` for the hash of `D[start..end]`.
///
/// Every range asked for is a valid subtree: `start` is a multiple of the smallest power of two
/// not below `end - start`.
pub(crate) fn inclusion_path_with<E>(
    index: u64,
    size: u64,
    mth: &mut dyn FnMut(u64, u64) -> Result<Hash, E>,
) -> Result<Vec<Hash>, E> {
    debug_assert!(index < size);
    let mut path = Vec::new();
    let (mut lo, mut hi) = (0u64, size);
    while hi - lo > 1 {
        let k = split_point(hi - lo);
        if index < lo + k {
            path.push(mth(lo + k, hi)?);
            hi = lo + k;
        } else {
            path.push(mth(lo, lo + k)?);
            lo += k;
        }
    }
    path.reverse();
    Ok(path)
}

/// Consistency path for `old <= new` (RFC 9162 `SUBPROOF`), asking `mth` for subtree hashes.
pub(crate) fn consistency_path_with<E>(
    old: u64,
    new: u64,
    mth: &mut dyn FnMut(u64, u64) -> Result<Hash, E>,
) -> Result<Vec<Hash>, E> {
    debug_assert!(old <= new);
    let mut path = Vec::new();
    if old == 0 || old == new {
        return Ok(path);
    }
    // SUBPROOF(m, D[lo..hi], b), unrolled; `m` is relative to `lo`.
    let (mut m, mut lo, mut hi, mut b) = (old, 0u64, new, true);
    loop {
        let n = hi - lo;
        if m == n {
            if !b {
                path.push(mth(lo, hi)?);
            }
            break;
        }
        let k = split_point(n);
        if m <= k {
            path.push(mth(lo + k, hi)?);
            hi = lo + k;
        } else {
            path.push(mth(lo, lo + k)?);
            m -= k;
            lo += k;
            b = false;
        }
    }
    path.reverse();
    Ok(path)
}

/// The root that an inclusion proof implies for `leaf_hash` at `index` in a tree of `size`
/// leaves (RFC 9162 section 2.1.3.2), or `None` if the proof has the wrong shape.
pub fn root_from_inclusion_proof(
    index: u64,
    size: u64,
    leaf_hash: &Hash,
    proof: &[Hash],
) -> Option<Hash> {
    if index >= size {
        return None;
    }
    let (mut fn_, mut sn) = (index, size - 1);
    let mut r = *leaf_hash;
    for p in proof {
        if sn == 0 {
            return None;
        }
        if fn_ & 1 == 1 || fn_ == sn {
            r = node_hash(p, &r);
            while fn_ & 1 == 0 && fn_ != 0 {
                fn_ >>= 1;
                sn >>= 1;
            }
        } else {
            r = node_hash(&r, p);
        }
        fn_ >>= 1;
        sn >>= 1;
    }
    (sn == 0).then_some(r)
}

/// Whether `proof` shows that `leaf_hash` is leaf `index` of the tree of `size` leaves with
/// root `root` (RFC 9162 section 2.1.3.2).
pub fn verify_inclusion(
    index: u64,
    size: u64,
    leaf_hash: &Hash,
    proof: &[Hash],
    root: &Hash,
) -> bool {
    root_from_inclusion_proof(index, size, leaf_hash, proof).is_some_and(|r| r == *root)
}

/// Whether `proof` shows that the tree of `old_size` leaves with root `old_root` is a prefix of
/// the tree of `new_size` leaves with root `new_root` (RFC 9162 section 2.1.4.2).
///
/// Equal sizes need an empty proof and equal roots. An old size of 0 needs an empty proof and
/// `old_root` equal to [`empty_root`]; it says nothing about `new_root`.
pub fn verify_consistency(
    old_size: u64,
    new_size: u64,
    proof: &[Hash],
    old_root: &Hash,
    new_root: &Hash,
) -> bool {
    if old_size > new_size {
        return false;
    }
    if old_size == new_size {
        return proof.is_empty() && old_root == new_root;
    }
    if old_size == 0 {
        return proof.is_empty() && *old_root == empty_root();
    }
    let (first, rest) = if old_size.is_power_of_two() {
        (*old_root, proof)
    } else {
        match proof.split_first() {
            Some((first, rest)) => (*first, rest),
            None => return false,
        }
    };
    if proof.is_empty() {
        return false;
    }
    let (mut fn_, mut sn) = (old_size - 1, new_size - 1);
    while fn_ & 1 == 1 {
        fn_ >>= 1;
        sn >>= 1;
    }
    let (mut fr, mut sr) = (first, first);
    for c in rest {
        if sn == 0 {
            return false;
        }
        if fn_ & 1 == 1 || fn_ == sn {
            fr = node_hash(c, &fr);
            sr = node_hash(c, &sr);
            while fn_ & 1 == 0 && fn_ != 0 {
                fn_ >>= 1;
                sn >>= 1;
            }
        } else {
            sr = node_hash(&sr, c);
        }
        fn_ >>= 1;
        sn >>= 1;
    }
    sn == 0 && fr == *old_root && sr == *new_root
}
