//! Property tests for the transparency log: roots against a naive MTH and the `ct-merkle`
//! oracle, proofs (and their one-bit corruptions), tiles, entry bundles and signed notes.
//!
//! SHA-256 is slow in debug builds, so case counts and tree sizes are bounded.

use std::collections::HashMap;

use conduct_core::signing::ServiceKey;
use conduct_core::tlog::*;
use ct_merkle::mem_backed_tree::MemoryBackedTree;
use ct_merkle::{ConsistencyProof, InclusionProof, RootHash};
use proptest::prelude::*;
use proptest::sample::Index;
use sha2::{Digest, Sha256};

type Oracle = MemoryBackedTree<sha2_011::Sha256, Vec<u8>>;

/// RFC 6962 MTH written out directly from the definition, sharing no code with the crate.
fn naive_mth(leaves: &[Vec<u8>]) -> [u8; 32] {
    let n = leaves.len();
    if n == 0 {
        return Sha256::digest(b"").into();
    }
    if n == 1 {
        let mut h = Sha256::new();
        h.update([0u8]);
        h.update(&leaves[0]);
        return h.finalize().into();
    }
    let mut k = 1;
    while k * 2 < n {
        k *= 2;
    }
    let mut h = Sha256::new();
    h.update([1u8]);
    h.update(naive_mth(&leaves[..k]));
    h.update(naive_mth(&leaves[k..]));
    h.finalize().into()
}

fn oracle(leaves: &[Vec<u8>]) -> Oracle {
    let mut t = Oracle::new();
    for l in leaves {
        t.push(l.clone());
    }
    t
}

fn oracle_root(hash: &Hash, size: u64) -> RootHash<sha2_011::Sha256> {
    RootHash::new(ct_merkle::array::Array::try_from(&hash[..]).unwrap(), size)
}

/// Leaf data, made unique by an index prefix (so that no two positions hold the same leaf).
fn leaves(max: usize) -> impl Strategy<Value = Vec<Vec<u8>>> {
    prop::collection::vec(prop::collection::vec(any::<u8>(), 0..12), 0..max).prop_map(|v| {
        v.into_iter()
            .enumerate()
            .map(|(i, mut d)| {
                let mut x = (i as u32).to_be_bytes().to_vec();
                x.append(&mut d);
                x
            })
            .collect()
    })
}

fn hashes(leaves: &[Vec<u8>]) -> Vec<Hash> {
    leaves.iter().map(|l| leaf_hash(l)).collect()
}

fn flip(h: &Hash, bit: usize) -> Hash {
    let mut h = *h;
    h[(bit / 8) % 32] ^= 1 << (bit % 8);
    h
}

fn concat(proof: &[Hash]) -> Vec<u8> {
    proof.concat()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn root_matches_naive_mth_and_oracle(data in leaves(300)) {
        let r = root(&hashes(&data));
        prop_assert_eq!(r, naive_mth(&data));
        let theirs = oracle(&data).root();
        prop_assert_eq!(&r[..], theirs.as_bytes().as_slice());
    }

    #[test]
    fn inclusion_proofs_verify_and_one_bit_breaks_them(
        data in leaves(300).prop_filter("non-empty", |d| !d.is_empty()),
        pick in any::<Index>(),
        bit in 0usize..256,
        index_bit in 0u32..64,
    ) {
        let lh = hashes(&data);
        let n = lh.len() as u64;
        let r = root(&lh);
        let i = pick.index(lh.len());
        let proof = inclusion_proof(i as u64, &lh).unwrap();
        prop_assert!(verify_inclusion(i as u64, n, &lh[i], &proof, &r));

        // Same bytes as the oracle's proof; the oracle accepts ours.
        let t = oracle(&data);
        prop_assert_eq!(concat(&proof), t.prove_inclusion(i).as_bytes().to_vec());
        prop_assert!(oracle_root(&r, n)
            .verify_inclusion(&data[i], i as u64, &InclusionProof::from_bytes(concat(&proof)))
            .is_ok());

        for j in 0..proof.len() {
            let mut bad = proof.clone();
            bad[j] = flip(&bad[j], bit);
            prop_assert!(!verify_inclusion(i as u64, n, &lh[i], &bad, &r));
        }
        prop_assert!(!verify_inclusion(i as u64, n, &flip(&lh[i], bit), &proof, &r));
        prop_assert!(!verify_inclusion(i as u64 ^ (1 << index_bit), n, &lh[i], &proof, &r));
        prop_assert!(!verify_inclusion(i as u64, n, &lh[i], &proof, &flip(&r, bit)));
        // A proof one hash short or long fails too.
        if let Some((_, short)) = proof.split_last() {
            prop_assert!(!verify_inclusion(i as u64, n, &lh[i], short, &r));
        }
        let mut long = proof.clone();
        long.push(r);
        prop_assert!(!verify_inclusion(i as u64, n, &lh[i], &long, &r));
    }

    #[test]
    fn consistency_proofs_verify_and_one_bit_breaks_them(
        data in leaves(300),
        pick in any::<Index>(),
        bit in 0usize..256,
    ) {
        let lh = hashes(&data);
        let n = lh.len() as u64;
        let m = pick.index(lh.len() + 1) as u64;
        let old_root = root(&lh[..m as usize]);
        let new_root = root(&lh);
        let proof = consistency_proof(m, &lh).unwrap();
        prop_assert!(verify_consistency(m, n, &proof, &old_root, &new_root));

        if m > 0 {
            let t = oracle(&data);
            let theirs = t.prove_consistency((n - m) as usize);
            prop_assert_eq!(concat(&proof), theirs.as_bytes().to_vec());
            let ours = ConsistencyProof::try_from_bytes(concat(&proof)).unwrap();
            prop_assert!(oracle_root(&new_root, n)
                .verify_consistency(&oracle_root(&old_root, m), &ours)
                .is_ok());
        }

        for j in 0..proof.len() {
            let mut bad = proof.clone();
            bad[j] = flip(&bad[j], bit);
            prop_assert!(!verify_consistency(m, n, &bad, &old_root, &new_root));
        }
        prop_assert!(!verify_consistency(m, n, &proof, &flip(&old_root, bit), &new_root));
        // From the empty tree, the new root is unconstrained.
        if m > 0 {
            prop_assert!(!verify_consistency(m, n, &proof, &old_root, &flip(&new_root, bit)));
        }
        if let Some((_, short)) = proof.split_last() {
            prop_assert!(!verify_consistency(m, n, short, &old_root, &new_root));
        }
        let mut long = proof.clone();
        long.push(new_root);
        prop_assert!(!verify_consistency(m, n, &long, &old_root, &new_root));
    }

    #[test]
    fn roots_and_proofs_from_tiles_match(
        data in leaves(300),
        pick in any::<Index>(),
        old_pick in any::<Index>(),
    ) {
        let lh = hashes(&data);
        let n = lh.len() as u64;
        let built = build_tiles(&lh);
        prop_assert_eq!(built.iter().map(|(t, _)| *t).collect::<Vec<_>>(), tiles_for_size(n));
        for (t, bytes) in &built {
            prop_assert_eq!(Some(bytes.clone()), tile_data(*t, &lh));
            prop_assert_eq!(parse_tile_path(&t.path()), Some(*t));
        }
        let dir: HashMap<String, Vec<u8>> =
            built.into_iter().map(|(t, b)| (t.path(), b)).collect();
        let fetch = |t: Tile| dir.get(&t.path()).cloned().ok_or(t);
        prop_assert_eq!(root_from_tiles(n, fetch).unwrap(), root(&lh));
        let mut reader = TileHashReader::new(n, fetch);
        if n > 0 {
            let i = pick.index(lh.len()) as u64;
            prop_assert_eq!(reader.inclusion_proof(i).unwrap(), inclusion_proof(i, &lh).unwrap());
        }
        let m = old_pick.index(lh.len() + 1) as u64;
        prop_assert_eq!(reader.consistency_proof(m).unwrap(), consistency_proof(m, &lh).unwrap());
    }

    #[test]
    fn new_tiles_are_the_inventory_difference(a in 0u64..200_000, b in 0u64..200_000) {
        let old: std::collections::HashSet<Tile> = tiles_for_size(a).into_iter().collect();
        let want: Vec<Tile> = tiles_for_size(b).into_iter().filter(|t| !old.contains(t)).collect();
        prop_assert_eq!(new_tiles(a, b), want);
    }

    #[test]
    fn entry_bundles_round_trip(
        entries in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..300), 0..=256),
        cut in any::<Index>(),
    ) {
        let bytes = encode_bundle(&entries).unwrap();
        prop_assert_eq!(decode_bundle(&bytes).unwrap(), entries.clone());
        // A cut decodes only at a record boundary, to the entries before it.
        let c = cut.index(bytes.len() + 1);
        let mut boundaries = vec![0usize];
        for e in &entries {
            boundaries.push(boundaries.last().unwrap() + 2 + e.len());
        }
        match boundaries.iter().position(|&b| b == c) {
            Some(k) => prop_assert_eq!(decode_bundle(&bytes[..c]).unwrap(), entries[..k].to_vec()),
            None => {
                let is_truncated = matches!(decode_bundle(&bytes[..c]), Err(BundleError::Truncated { .. }));
                prop_assert!(is_truncated);
            }
        }
    }

    #[test]
    fn tile_paths_round_trip(level in 0u8..=63, index in any::<u64>(), width in 1u16..=256) {
        let t = Tile { level, index, width };
        prop_assert_eq!(parse_tile_path(&t.path()), Some(t));
        prop_assert_eq!(parse_entries_path(&entries_path(index, width)), Some((index, width)));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn a_changed_byte_breaks_a_signed_note(
        text in "[a-zA-Z0-9 .,:\n]{0,60}",
        name in "[a-z]{1,8}\\.example/[a-z0-9]{1,8}",
        seed in any::<[u8; 32]>(),
        pos in any::<Index>(),
        byte in prop_oneof![any::<u8>(), 0x0au8..0x7f],
    ) {
        let text = format!("{text}\n");
        let key = ServiceKey::from_seed(&seed, &name);
        let verifier = Verifier::parse(&key.vkey()).unwrap();
        let signed = sign_note(&text, &key).unwrap();
        let (note, v) = open_note(&signed, std::slice::from_ref(&verifier)).unwrap();
        prop_assert_eq!(note.text(), text.as_str());
        prop_assert_eq!(v.verified.len(), 1);

        let mut bytes = signed.into_bytes();
        let p = pos.index(bytes.len());
        prop_assume!(bytes[p] != byte);
        bytes[p] = byte;
        if let Ok(s) = String::from_utf8(bytes) {
            prop_assert!(open_note(&s, std::slice::from_ref(&verifier)).is_err(), "{:?}", s);
        }
    }

    #[test]
    fn a_changed_byte_breaks_a_checkpoint(
        size in any::<u64>(),
        root_hash in any::<[u8; 32]>(),
        seed in any::<[u8; 32]>(),
        pos in any::<Index>(),
        byte in prop_oneof![any::<u8>(), 0x0au8..0x7f],
    ) {
        let key = ServiceKey::from_seed(&seed, "example.org/ledger");
        let verifier = Verifier::for_key(&key).unwrap();
        let signed = Checkpoint::new("example.org/ledger", size, root_hash).unwrap().sign(&key).unwrap();
        let opened = open_checkpoint(&signed, std::slice::from_ref(&verifier)).unwrap();
        prop_assert_eq!((opened.checkpoint.size, opened.checkpoint.root), (size, root_hash));

        let mut bytes = signed.into_bytes();
        let p = pos.index(bytes.len());
        prop_assume!(bytes[p] != byte);
        bytes[p] = byte;
        if let Ok(s) = String::from_utf8(bytes) {
            prop_assert!(open_checkpoint(&s, std::slice::from_ref(&verifier)).is_err(), "{:?}", s);
        }
    }

    #[test]
    fn verification_and_parsing_are_total(
        index in any::<u64>(),
        size in any::<u64>(),
        small in 0u64..600,
        proof in prop::collection::vec(any::<[u8; 32]>(), 0..70),
        a in any::<[u8; 32]>(),
        b in any::<[u8; 32]>(),
        junk in ".{0,200}",
        raw in prop::collection::vec(any::<u8>(), 0..200),
    ) {
        // Nothing here may panic; random proofs essentially never verify.
        let _ = verify_inclusion(index, size, &a, &proof, &b);
        let _ = verify_inclusion(index % (small + 1), small, &a, &proof, &b);
        let _ = verify_consistency(index, size, &proof, &a, &b);
        let _ = verify_consistency(index % (small + 1), small, &proof, &a, &b);
        let _ = root_from_inclusion_proof(index, size, &a, &proof);
        let _ = Note::parse(&junk);
        let _ = Checkpoint::parse_body(&junk);
        let _ = TlogProof::parse(&junk);
        let _ = Verifier::parse(&junk);
        let _ = parse_tile_path(&junk);
        let _ = decode_bundle(&raw);
        let _ = tiles_for_size(small);
    }
}

/// Roots re-derived from one tile directory (of the largest size) for many smaller sizes,
/// against an incremental compact-range accumulator (a different algorithm from `root`).
#[test]
fn roots_from_tiles_for_many_sizes_across_levels() {
    const N: u64 = 70_000;
    let lh: Vec<Hash> = (0..N).map(|i| leaf_hash(&i.to_be_bytes())).collect();
    let dir: HashMap<(u8, u64), Vec<u8>> = build_tiles(&lh)
        .into_iter()
        .map(|(t, b)| ((t.level, t.index), b))
        .collect();
    let cut = |t: Tile| -> Result<Vec<u8>, Tile> {
        dir.get(&(t.level, t.index))
            .and_then(|b| b.get(..t.byte_len()))
            .map(<[u8]>::to_vec)
            .ok_or(t)
    };
    let mut sizes: Vec<u64> = vec![0, 1, 2, 255, 256, 257, 511, 512, 65_535, 65_536, 65_537, N];
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..60 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        sizes.push(x % (N + 1));
    }
    sizes.sort_unstable();
    sizes.dedup();

    // Compact range: a stack of (height, hash) of perfect subtrees, merged on push.
    let mut stack: Vec<(u32, Hash)> = Vec::new();
    let mut next = sizes.iter().peekable();
    for s in 0..=N {
        if next.peek() == Some(&&s) {
            next.next();
            let want = match stack.split_last() {
                None => empty_root(),
                Some((last, rest)) => rest
                    .iter()
                    .rev()
                    .fold(last.1, |acc, (_, h)| node_hash(h, &acc)),
            };
            assert_eq!(root_from_tiles(s, cut).unwrap(), want, "size {s}");
        }
        if s == N {
            break;
        }
        let mut cur = (0u32, lh[s as usize]);
        while let Some(&(height, h)) = stack.last() {
            if height != cur.0 {
                break;
            }
            stack.pop();
            cur = (height + 1, node_hash(&h, &cur.1));
        }
        stack.push(cur);
    }
    assert_eq!(root_from_tiles(N, cut).unwrap(), root(&lh));
}
