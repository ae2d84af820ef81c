//! Known-answer tests for the transparency log (shared/reference/tlog.md sections 1 and 3).
//!
//! Sources of the vectors: RFC 6962 hashes from transparency-dev/merkle testonly/constants.go
//! and reference_test.go; tile paths and the size-70 000 inventory from C2SP tlog-tiles; the
//! signed-note example from the C2SP signed-note spec; PeterNeumann/EnochRoot notes from
//! golang.org/x/mod sumdb/note/note_test.go; the checkpoint worked example from tlog.md.

use std::collections::HashMap;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use conduct_core::signing::ServiceKey;
use conduct_core::tlog::*;
use sha2::{Digest, Sha256};

fn h(hex_str: &str) -> Hash {
    hex::decode(hex_str).unwrap().try_into().unwrap()
}

fn b64h(s: &str) -> Hash {
    B64.decode(s).unwrap().try_into().unwrap()
}

// ---------------------------------------------------------------------------------------------
// RFC 6962
// ---------------------------------------------------------------------------------------------

fn rfc_leaves() -> Vec<Hash> {
    [
        "",
        "00",
        "10",
        "2021",
        "3031",
        "40414243",
        "5051525354555657",
        "606162636465666768696a6b6c6d6e6f",
    ]
    .iter()
    .map(|x| leaf_hash(&hex::decode(x).unwrap()))
    .collect()
}

const RFC_ROOTS: [&str; 9] = [
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
];

#[test]
fn rfc6962_roots_for_every_prefix() {
    let leaves = rfc_leaves();
    assert_eq!(empty_root(), h(RFC_ROOTS[0]));
    for (n, want) in RFC_ROOTS.iter().enumerate() {
        assert_eq!(root(&leaves[..n]), h(want), "n = {n}");
    }
    // The prefixes quoted in tlog.md section 3.
    assert!(hex::encode(root(&leaves[..1])).starts_with("6e340b9c"));
    assert!(hex::encode(root(&leaves[..3])).starts_with("aeb6bcfe"));
    assert_eq!(
        hex::encode(root(&leaves)),
        "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328"
    );
}

#[test]
fn rfc6962_node_hash_vectors() {
    let l = rfc_leaves();
    assert_eq!(
        l[1],
        h("96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7")
    );
    assert_eq!(
        node_hash(&l[0], &l[1]),
        h("fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125")
    );
    assert_eq!(
        node_hash(&l[2], &l[3]),
        h("5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e")
    );
}

#[test]
fn rfc6962_inclusion_vectors() {
    let leaves = rfc_leaves();
    let cases: &[(u64, usize, &[&str])] = &[
        (0, 1, &[]),
        (
            0,
            2,
            &["96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7"],
        ),
        (
            1,
            2,
            &["6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d"],
        ),
        (
            2,
            3,
            &["fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"],
        ),
        (
            1,
            5,
            &[
                "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
                "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
                "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
            ],
        ),
        (
            0,
            8,
            &[
                "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
                "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
                "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
            ],
        ),
        (
            5,
            8,
            &[
                "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
                "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
                "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
            ],
        ),
    ];
    for &(index, size, want) in cases {
        let want: Vec<Hash> = want.iter().map(|x| h(x)).collect();
        let got = inclusion_proof(index, &leaves[..size]).unwrap();
        assert_eq!(got, want, "index {index} size {size}");
        let r = root(&leaves[..size]);
        assert!(verify_inclusion(
            index,
            size as u64,
            &leaves[index as usize],
            &got,
            &r
        ));
    }
    // The prefixes quoted in tlog.md for leaf 0 in 8.
    let p = inclusion_proof(0, &leaves).unwrap();
    let prefixes: Vec<String> = p.iter().map(|x| hex::encode(&x[..4])).collect();
    assert_eq!(prefixes, ["96a296d2", "5f083f0a", "6b47aaf2"]);
    assert_eq!(
        inclusion_proof(8, &leaves),
        Err(ProofError::IndexOutOfRange { index: 8, size: 8 })
    );
}

#[test]
fn rfc6962_consistency_vectors() {
    let leaves = rfc_leaves();
    let cases: &[(u64, usize, &[&str])] = &[
        (1, 1, &[]),
        (
            1,
            8,
            &[
                "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
                "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
                "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
            ],
        ),
        (
            2,
            5,
            &[
                "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
                "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
            ],
        ),
        (
            6,
            8,
            &[
                "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
                "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
                "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
            ],
        ),
    ];
    for &(m, n, want) in cases {
        let want: Vec<Hash> = want.iter().map(|x| h(x)).collect();
        let got = consistency_proof(m, &leaves[..n]).unwrap();
        assert_eq!(got, want, "{m} -> {n}");
        assert!(verify_consistency(
            m,
            n as u64,
            &got,
            &h(RFC_ROOTS[m as usize]),
            &h(RFC_ROOTS[n])
        ));
    }
    let p = consistency_proof(6, &leaves).unwrap();
    let prefixes: Vec<String> = p.iter().map(|x| hex::encode(&x[..4])).collect();
    assert_eq!(prefixes, ["0ebc5d34", "ca854ea1", "d37ee418"]);
    assert_eq!(
        consistency_proof(9, &leaves),
        Err(ProofError::SizeOutOfRange { old: 9, new: 8 })
    );
    // The empty tree is consistent with every tree, with an empty proof.
    assert_eq!(consistency_proof(0, &leaves).unwrap(), Vec::<Hash>::new());
    assert!(verify_consistency(
        0,
        8,
        &[],
        &empty_root(),
        &h(RFC_ROOTS[8])
    ));
    assert!(!verify_consistency(
        0,
        8,
        &[],
        &h(RFC_ROOTS[1]),
        &h(RFC_ROOTS[8])
    ));
}

#[test]
fn golang_100_leaf_tree_proofs_verify() {
    // golang.org/x/mod sumdb/tlog TestTree uses leaves "leaf %d". Every proof of every tree of
    // up to 33 leaves, and of the 100-leaf tree, verifies. (SHA-256 is slow in debug builds,
    // and slice-based proofs cost O(n) each, hence the bounds.)
    let leaves: Vec<Hash> = (0..100)
        .map(|i| leaf_hash(format!("leaf {i}").as_bytes()))
        .collect();
    let roots: Vec<Hash> = (0..=100).map(|n| root(&leaves[..n])).collect();
    for n in (1..=33).chain([100]) {
        for i in 0..n as u64 {
            let p = inclusion_proof(i, &leaves[..n]).unwrap();
            assert!(verify_inclusion(
                i,
                n as u64,
                &leaves[i as usize],
                &p,
                &roots[n]
            ));
        }
        for m in 0..=n {
            let p = consistency_proof(m as u64, &leaves[..n]).unwrap();
            assert!(verify_consistency(
                m as u64, n as u64, &p, &roots[m], &roots[n]
            ));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// tlog-tiles
// ---------------------------------------------------------------------------------------------

#[test]
fn tile_paths() {
    assert_eq!(tile_path(0, 1_234_067, 256), "tile/0/x001/x234/067");
    assert_eq!(tile_path(1, 1000, 256), "tile/1/x001/000");
    assert_eq!(tile_path(0, 0, 5), "tile/0/000.p/5");
    assert_eq!(entries_path(0, 5), "tile/entries/000.p/5");
    assert_eq!(entries_path(1_234_067, 256), "tile/entries/x001/x234/067");
    assert_eq!(tile_path(3, 123_456_078, 2), "tile/3/x123/x456/078.p/2");
    assert_eq!(
        tile_path(0, u64::MAX, 256),
        "tile/0/x018/x446/x744/x073/x709/x551/615"
    );
    // A size-5 log serves exactly that tile (and the matching bundle).
    assert_eq!(
        tiles_for_size(5),
        vec![Tile {
            level: 0,
            index: 0,
            width: 5
        }]
    );
    assert_eq!(tiles_for_size(5)[0].path(), "tile/0/000.p/5");
}

#[test]
fn tile_path_parsing_is_canonical() {
    for t in [
        Tile {
            level: 0,
            index: 1_234_067,
            width: 256,
        },
        Tile {
            level: 1,
            index: 1000,
            width: 256,
        },
        Tile {
            level: 0,
            index: 0,
            width: 5,
        },
        Tile {
            level: 63,
            index: u64::MAX,
            width: 255,
        },
    ] {
        assert_eq!(parse_tile_path(&t.path()), Some(t));
    }
    assert_eq!(
        parse_entries_path("tile/entries/x001/000.p/7"),
        Some((1000, 7))
    );
    for bad in [
        "tile/0/1",
        "tile/0/0001",
        "tile/0/x000/001",
        "tile/0/001/002",
        "tile/0/x001",
        "tile/00/001",
        "tile/64/001",
        "tile/0/001.p/0",
        "tile/0/001.p/256",
        "tile/0/001.p/05",
        "tile/0/001.p/",
        "tile/0/x018/x446/x744/x073/x709/x551/616",
        "tile/0/x1000/000",
        "tile/entries/001",
        "tile/0/001/",
        "/tile/0/001",
        "tile/0/-01",
    ] {
        assert_eq!(parse_tile_path(bad), None, "{bad}");
    }
    assert_eq!(parse_entries_path("tile/0/001"), None);
    assert_eq!(parse_entries_path("tile/entries/01"), None);
}

#[test]
fn size_70000_inventory() {
    let tiles = tiles_for_size(70_000);
    let count = |level: u8, full: bool| {
        tiles
            .iter()
            .filter(|t| t.level == level && t.is_full() == full)
            .count()
    };
    let partial = |level: u8| {
        tiles
            .iter()
            .filter(|t| t.level == level && !t.is_full())
            .map(|t| (t.index, t.width))
            .collect::<Vec<_>>()
    };
    assert_eq!(count(0, true), 273);
    assert_eq!(partial(0), vec![(273, 112)]);
    assert_eq!(count(1, true), 1);
    assert_eq!(partial(1), vec![(1, 17)]);
    assert_eq!(count(2, true), 0);
    assert_eq!(partial(2), vec![(0, 1)]);
    assert_eq!(tiles.len(), 273 + 1 + 1 + 1 + 1);
    assert!(tiles.iter().all(|t| t.level <= 2));
    assert!(tiles.contains(&parse_tile_path("tile/0/273.p/112").unwrap()));
    assert!(tiles.contains(&parse_tile_path("tile/1/001.p/17").unwrap()));
    assert!(tiles.contains(&parse_tile_path("tile/2/000.p/1").unwrap()));
    assert!(tiles.contains(&parse_tile_path("tile/1/000").unwrap()));

    // Build them for real, re-derive the root from tiles alone, and prove from tiles.
    let leaves: Vec<Hash> = (0u32..70_000)
        .map(|i| leaf_hash(&i.to_be_bytes()))
        .collect();
    let built = build_tiles(&leaves);
    assert_eq!(built.iter().map(|(t, _)| *t).collect::<Vec<_>>(), tiles);
    for (t, bytes) in &built {
        assert_eq!(bytes.len(), t.byte_len());
    }
    let by_tile: HashMap<Tile, Vec<u8>> = built.into_iter().collect();
    // The level-2 stored hash is the root of the first 65 536 leaves.
    let root_65536 = root(&leaves[..65_536]);
    assert_eq!(
        by_tile[&parse_tile_path("tile/2/000.p/1").unwrap()],
        root_65536.to_vec()
    );
    let l1_partial = parse_tile_path("tile/1/001.p/17").unwrap();
    assert_eq!(
        tile_data(l1_partial, &leaves).unwrap(),
        by_tile[&l1_partial]
    );
    let want = root(&leaves);
    let mut fetched = Vec::new();
    let got = root_from_tiles(70_000, |t| {
        fetched.push(t);
        by_tile.get(&t).cloned().ok_or("missing")
    })
    .unwrap();
    assert_eq!(got, want);
    assert!(fetched.len() <= 4, "fetched {fetched:?}");

    // Older sizes read the same directory, cutting wider tiles to the width they need.
    let by_coord: HashMap<(u8, u64), Vec<u8>> = by_tile
        .iter()
        .map(|(t, b)| ((t.level, t.index), b.clone()))
        .collect();
    let cut = |t: Tile| -> Result<Vec<u8>, &'static str> {
        let b = by_coord.get(&(t.level, t.index)).ok_or("missing")?;
        b.get(..t.byte_len()).map(<[u8]>::to_vec).ok_or("short")
    };
    let mut reader = TileHashReader::new(70_000, cut);
    for i in [0u64, 1, 255, 256, 65_535, 65_536, 69_887, 69_888, 69_999] {
        let p = reader.inclusion_proof(i).unwrap();
        assert!(
            verify_inclusion(i, 70_000, &leaves[i as usize], &p, &want),
            "index {i}"
        );
    }
    assert_eq!(
        reader.inclusion_proof(65_536).unwrap(),
        inclusion_proof(65_536, &leaves).unwrap()
    );
    for m in [1u64, 256, 65_536, 69_999, 70_000] {
        let old_root = root_from_tiles(m, cut).unwrap();
        let p = reader.consistency_proof(m).unwrap();
        assert!(
            verify_consistency(m, 70_000, &p, &old_root, &want),
            "old size {m}"
        );
    }
    assert_eq!(root_from_tiles(65_536, cut).unwrap(), root_65536);
    assert_eq!(
        reader.consistency_proof(69_999).unwrap(),
        consistency_proof(69_999, &leaves).unwrap()
    );
    assert!(matches!(
        reader.inclusion_proof(70_000),
        Err(TileReadError::Proof(ProofError::IndexOutOfRange { .. }))
    ));
    assert!(matches!(
        reader.consistency_proof(70_001),
        Err(TileReadError::Proof(ProofError::SizeOutOfRange { .. }))
    ));
    // Missing or short tiles are errors, not panics.
    assert!(matches!(
        root_from_tiles(70_000, |_| Err::<Vec<u8>, _>("gone")),
        Err(TileReadError::Fetch { source: "gone", .. })
    ));
    assert!(matches!(
        root_from_tiles(70_000, |_| Ok::<_, ()>(vec![0u8; 31])),
        Err(TileReadError::BadLength { .. })
    ));
    assert_eq!(
        root_from_tiles(0, |_| Err::<Vec<u8>, _>("unused")).unwrap(),
        empty_root()
    );
}

#[test]
fn growing_a_log_writes_only_new_tiles() {
    let grown = new_tiles(69_999, 70_000);
    assert_eq!(grown, vec![parse_tile_path("tile/0/273.p/112").unwrap()]);
    let grown = new_tiles(65_535, 65_536);
    let paths: Vec<String> = grown.iter().map(Tile::path).collect();
    assert_eq!(paths, ["tile/0/255", "tile/1/000", "tile/2/000.p/1"]);
    assert_eq!(new_tiles(70_000, 70_000), vec![]);
    assert_eq!(new_tiles(0, 70_000), tiles_for_size(70_000));
}

#[test]
fn entry_bundle_limits() {
    let max = vec![0xabu8; MAX_ENTRY_LEN];
    let b = encode_bundle(&[b"".to_vec(), max.clone(), b"x".to_vec()]).unwrap();
    assert_eq!(&b[..2], &[0, 0]);
    assert_eq!(&b[2..4], &[0xff, 0xff]);
    assert_eq!(
        decode_bundle(&b).unwrap(),
        vec![b"".to_vec(), max, b"x".to_vec()]
    );
    assert_eq!(
        encode_bundle(&[vec![0u8; MAX_ENTRY_LEN + 1]]),
        Err(BundleError::EntryTooLong {
            index: 0,
            len: 65_536
        })
    );
    assert_eq!(
        decode_bundle(&[0, 3, b'a', b'b']),
        Err(BundleError::Truncated { offset: 0 })
    );
    assert_eq!(
        decode_bundle(&[0, 1, b'a', 0]),
        Err(BundleError::Truncated { offset: 3 })
    );
    assert_eq!(
        encode_bundle(&vec![b"e"; 257]),
        Err(BundleError::TooManyEntries)
    );
    let full = encode_bundle(&vec![b"e"; 256]).unwrap();
    assert_eq!(decode_bundle(&full).unwrap().len(), 256);
    let mut over = full.clone();
    over.extend_from_slice(&[0, 0]);
    assert_eq!(decode_bundle(&over), Err(BundleError::TooManyEntries));
}

// ---------------------------------------------------------------------------------------------
// signed-note
// ---------------------------------------------------------------------------------------------

const SPEC_VKEY: &str = "example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k";
const SPEC_NOTE: &str = "This is an example message.\n\n\u{2014} example.com/foo Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n";

#[test]
fn signed_note_spec_example() {
    let v = Verifier::parse(SPEC_VKEY).unwrap();
    assert_eq!(v.name(), "example.com/foo");
    assert_eq!(v.key_id(), [0x53, 0x0d, 0x90, 0x3a]);
    assert_eq!(v.vkey(), SPEC_VKEY);
    let (note, ver) = open_note(SPEC_NOTE, std::slice::from_ref(&v)).unwrap();
    assert_eq!(note.text(), "This is an example message.\n");
    assert_eq!(ver.verified.len(), 1);
    assert_eq!(ver.verified[0].key_id, [0x53, 0x0d, 0x90, 0x3a]);
    assert_eq!(ver.verified[0].signature.len(), 64);
    assert!(ver.unknown.is_empty());
    assert_eq!(note.to_string(), SPEC_NOTE);
    // Another text under the same signature fails.
    let forged = SPEC_NOTE.replace("example message", "example massage");
    assert!(matches!(
        open_note(&forged, &[v]),
        Err(NoteError::BadSignature { .. })
    ));
}

const PETER_SKEY: &str =
    "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz";
const PETER_VKEY: &str = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW";
const ENOCH_VKEY: &str = "EnochRoot+af0cfe78+ATtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop";
const PETER_TEXT: &str = "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n";
const PETER_SIG: &str = "\u{2014} PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n";
const ENOCH_SIG: &str = "\u{2014} EnochRoot rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n2tiOHp+vAF1aGrQ5ovTG01oOTGwnWLox33WWd1RvMc+QQ=\n";

/// The Go secret key format `PRIVATE+KEY+name+id+base64(0x01 ‖ seed)`, for the test only.
fn peter_key() -> ServiceKey {
    let parts: Vec<&str> = PETER_SKEY.splitn(5, '+').collect();
    let raw = B64.decode(parts[4]).unwrap();
    assert_eq!(raw[0], 0x01);
    let seed: [u8; 32] = raw[1..].try_into().unwrap();
    let key = ServiceKey::from_seed(&seed, parts[2]);
    assert_eq!(key.key_id_hex(), parts[3]);
    key
}

#[test]
fn golang_note_sign_is_byte_exact() {
    let key = peter_key();
    assert_eq!(key.vkey(), PETER_VKEY);
    assert_eq!(Verifier::for_key(&key).unwrap().vkey(), PETER_VKEY);
    let signed = sign_note(PETER_TEXT, &key).unwrap();
    assert_eq!(signed, format!("{PETER_TEXT}\n{PETER_SIG}"));
    // Signing again replaces the signature with the same name and id.
    let mut note = Note::parse(&signed).unwrap();
    note.sign(&key).unwrap();
    assert_eq!(note.to_string(), signed);
    // Texts that are not notes.
    assert!(matches!(
        sign_note("abc", &key),
        Err(NoteError::Malformed(_))
    ));
    assert!(matches!(
        sign_note("a\tb\n", &key),
        Err(NoteError::Malformed(_))
    ));
    let bad_name = ServiceKey::from_seed(&[1; 32], "a+b");
    assert!(matches!(
        sign_note(PETER_TEXT, &bad_name),
        Err(NoteError::InvalidKeyName(_))
    ));
}

#[test]
fn golang_note_open() {
    let peter = Verifier::parse(PETER_VKEY).unwrap();
    let enoch = Verifier::parse(ENOCH_VKEY).unwrap();
    let both = format!("{PETER_TEXT}\n{PETER_SIG}{ENOCH_SIG}");

    // One verified, one unknown.
    let (note, v) = open_note(&both, std::slice::from_ref(&peter)).unwrap();
    assert_eq!(note.text(), PETER_TEXT);
    assert_eq!(v.verified.len(), 1);
    assert_eq!(v.verified[0].name, "PeterNeumann");
    assert_eq!(v.verified[0].key_id, [0xc7, 0x4f, 0x20, 0xa3]);
    assert_eq!(v.unknown.len(), 1);
    assert_eq!(v.unknown[0].name, "EnochRoot");
    assert_eq!(v.unknown[0].key_id, [0xaf, 0x0c, 0xfe, 0x78]);

    // Both verified.
    let (_, v) = open_note(&both, &[peter.clone(), enoch.clone()]).unwrap();
    assert_eq!(v.verified.len(), 2);
    assert!(v.unknown.is_empty());

    // None known.
    assert_eq!(open_note(&both, &[]), Err(NoteError::NoVerifiedSignature));

    // Duplicated identical verifiers are fine.
    assert!(open_note(&both, &[enoch.clone(), peter.clone(), enoch.clone()]).is_ok());

    // Too many signatures.
    let many = format!("{PETER_TEXT}\n{}", PETER_SIG.repeat(101));
    assert_eq!(
        open_note(&many, std::slice::from_ref(&peter)),
        Err(NoteError::TooManySignatures)
    );
    // At least 16 (the spec's floor) are accepted; exact duplicates are listed once.
    let sixteen = format!("{PETER_TEXT}\n{}{ENOCH_SIG}", PETER_SIG.repeat(16));
    let (note, v) = open_note(&sixteen, std::slice::from_ref(&peter)).unwrap();
    assert_eq!(note.signatures().len(), 17);
    assert_eq!((v.verified.len(), v.unknown.len()), (1, 1));

    // A known key's bad signature rejects the note.
    let (a, b) = PETER_SIG.split_at(60);
    let bad = format!("{PETER_TEXT}\n{a}ABCD{b}");
    assert!(matches!(
        open_note(&bad, std::slice::from_ref(&peter)),
        Err(NoteError::BadSignature { .. })
    ));

    // Duplicated verified and unverified signatures (golang TestOpen).
    let (ea, eb) = ENOCH_SIG.split_at(60);
    let dup = format!("{PETER_TEXT}\n{PETER_SIG}{PETER_SIG}{ENOCH_SIG}{ENOCH_SIG}{ea}ABCD{eb}");
    let (_, v) = open_note(&dup, std::slice::from_ref(&peter)).unwrap();
    assert_eq!(v.verified.len(), 1);
    assert_eq!(v.unknown.len(), 2);

    // Malformed notes (golang TestOpen badMsgs, plus a few more).
    let bad_msgs = [
        PETER_TEXT.to_string(),
        format!("{PETER_TEXT}\n"),
        format!("{PETER_TEXT}\n{}", &PETER_SIG[..PETER_SIG.len() - 1]),
        format!("\x01{PETER_TEXT}\n{PETER_SIG}"),
        format!("{PETER_TEXT}\n\u{2014} Bad Name x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM="),
        format!("{PETER_TEXT}\n{PETER_SIG}Unexpected line.\n"),
        format!("{PETER_TEXT}\n\u{2014} Bad+Name x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n"),
        format!("{PETER_TEXT}\n- PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n"),
        format!("{PETER_TEXT}\n\u{2014} PeterNeumann x08go\n"),
        format!("{PETER_TEXT}\n\u{2014} PeterNeumann not base64!\n"),
        format!("{PETER_TEXT}\r\n{PETER_SIG}"),
        format!("{PETER_TEXT}\n{PETER_SIG}\n"),
        format!("{PETER_TEXT}\n\u{2014}  x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n"),
    ];
    for msg in &bad_msgs {
        let r = open_note(msg, std::slice::from_ref(&peter));
        assert!(
            matches!(
                r,
                Err(NoteError::Malformed(_)) | Err(NoteError::InvalidKeyName(_))
            ),
            "{msg:?} gave {r:?}"
        );
    }
    // Blank lines inside the text are fine: the text ends at the last blank line.
    let key = peter_key();
    let text = "a\n\nb\n";
    let (note, _) = open_note(
        &sign_note(text, &key).unwrap(),
        std::slice::from_ref(&peter),
    )
    .unwrap();
    assert_eq!(note.text(), text);
}

#[test]
fn same_name_other_key_is_unknown() {
    // Verifiers ignore signatures that share a name but not the key id with a known key.
    let peter = Verifier::parse(PETER_VKEY).unwrap();
    let other = Verifier::for_key(&ServiceKey::from_seed(&[9; 32], "PeterNeumann")).unwrap();
    assert_ne!(other.key_id(), peter.key_id());
    let note = format!("{PETER_TEXT}\n{PETER_SIG}");
    assert_eq!(
        open_note(&note, std::slice::from_ref(&other)),
        Err(NoteError::NoVerifiedSignature)
    );
    let (_, v) = open_note(&note, &[peter, other]).unwrap();
    assert_eq!(v.verified.len(), 1);
}

#[test]
fn verifier_key_manglings_are_refused() {
    // golang TestNewVerifier: every proper substring and every one-byte increment fails.
    assert!(Verifier::parse(PETER_VKEY).is_ok());
    let b = PETER_VKEY.as_bytes();
    for i in 0..=b.len() {
        for j in i + 1..=b.len() {
            if i == 0 && j == b.len() {
                continue;
            }
            let s = std::str::from_utf8(&b[i..j]).unwrap();
            assert!(Verifier::parse(s).is_err(), "{s}");
        }
    }
    for i in 0..b.len() {
        let mut m = b.to_vec();
        m[i] += 1;
        let s = String::from_utf8(m).unwrap();
        assert!(Verifier::parse(&s).is_err(), "{s}");
    }
    for bad in [
        // Wrong key length with an adjusted key hash; unknown algorithm with an adjusted hash.
        "PeterNeumann+cc469956+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TWBADKEY==",
        "PeterNeumann+173116ae+ZRpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",
        // A timestamped cosignature (0x04) key is not an Ed25519 note key.
        "example.org/ledger-clock+02bd0c7b+BHsongY6rAQ6udvrbbqWR0+SRVX/AHicL/ND98OJnKNF",
        "Peter Neumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",
        "",
    ] {
        assert!(Verifier::parse(bad).is_err(), "{bad}");
    }
    assert!(matches!(
        Verifier::parse(
            "example.org/ledger-clock+02bd0c7b+BHsongY6rAQ6udvrbbqWR0+SRVX/AHicL/ND98OJnKNF"
        ),
        Err(NoteError::InvalidVerifierKey(_))
    ));
}

// ---------------------------------------------------------------------------------------------
// tlog-checkpoint: the worked example of tlog.md section 1
// ---------------------------------------------------------------------------------------------

const LOG_VKEY: &str = "example.org/ledger+1efaf554+AcQVHg5Dncbnuu8a9U4chqnDnmBOKhIA5t85zxNudWbN";
const BODY: &str = "example.org/ledger\n3\n1Pksj7uJcg6ztVZ3x9fvrd/rENEaGoSguo8aIzN/qpU=\n";
const LOG_LINE: &str = "\u{2014} example.org/ledger Hvr1VP48/wDp+4Iz6If7yj8mdS+DM5sHvEx2kTGOpwHThqLaaQ2cm90DFfeOjXmluqX7Bm8RM1k91kjY3+W4CyQBew4=\n";
const CLOCK_LINE: &str = "\u{2014} example.org/ledger-clock Ar0MewAAAABpVbkAA8uPIn6XNNYfrQ0mjbwloTcu+DQLnJQ48bkJIKshEqHz+CsQar9KiyQC3BW3MeKwouGufj/RBYfsdPA53gkbDQ==\n";

fn ledger_key() -> ServiceKey {
    let seed: [u8; 32] = Sha256::digest(b"test seed - do not use").into();
    ServiceKey::from_seed(&seed, "example.org/ledger")
}

fn ledger_leaves() -> Vec<Hash> {
    (0..3)
        .map(|i| leaf_hash(format!("leaf {i}").as_bytes()))
        .collect()
}

#[test]
fn checkpoint_worked_example_byte_for_byte() {
    let key = ledger_key();
    assert_eq!(key.vkey(), LOG_VKEY);
    let leaves = ledger_leaves();
    let cp = Checkpoint::new("example.org/ledger", 3, root(&leaves)).unwrap();
    assert_eq!(cp.body(), BODY);
    let signed = cp.sign(&key).unwrap();
    assert_eq!(signed, format!("{BODY}\n{LOG_LINE}"));
    assert_eq!(
        inclusion_proof(2, &leaves).unwrap(),
        vec![b64h("/F9riP+FVPdbsvnm85wxsZNtRLaSdu33sSBalVuXYeM=")]
    );
    // A key named otherwise cannot sign this origin.
    let other = ServiceKey::from_seed(&[1; 32], "example.org/other");
    assert!(matches!(
        cp.sign(&other),
        Err(CheckpointError::OriginMismatch { .. })
    ));
}

#[test]
fn checkpoint_worked_example_two_signatures() {
    let full = format!("{BODY}\n{LOG_LINE}{CLOCK_LINE}");
    let log = Verifier::parse(LOG_VKEY).unwrap();
    let opened = open_checkpoint(&full, &[log]).unwrap();
    assert_eq!(opened.checkpoint.origin, "example.org/ledger");
    assert_eq!(opened.checkpoint.size, 3);
    assert_eq!(opened.checkpoint.root, root(&ledger_leaves()));
    assert!(opened.checkpoint.extensions.is_empty());
    assert_eq!(opened.verification.verified.len(), 1);
    assert_eq!(opened.verification.unknown.len(), 1);
    let clock = &opened.verification.unknown[0];
    assert_eq!(clock.name, "example.org/ledger-clock");
    assert_eq!(hex::encode(clock.key_id), "02bd0c7b");
    // tlog-cosignature: key id ‖ u64 BE timestamp ‖ 64-byte signature.
    assert_eq!(clock.signature.len(), 8 + 64);
    let ts = u64::from_be_bytes(clock.signature[..8].try_into().unwrap());
    assert_eq!(ts, 1_767_225_600);
    assert_eq!(opened.note.to_string(), full);
}

#[test]
fn checkpoint_verification_failures() {
    let log = Verifier::parse(LOG_VKEY).unwrap();
    let full = format!("{BODY}\n{LOG_LINE}{CLOCK_LINE}");
    // No known key.
    assert_eq!(
        open_checkpoint(&full, &[]),
        Err(CheckpointError::Note(NoteError::NoVerifiedSignature))
    );
    // A changed size breaks the log signature.
    let forged = full.replacen("\n3\n", "\n4\n", 1);
    assert!(matches!(
        open_checkpoint(&forged, std::slice::from_ref(&log)),
        Err(CheckpointError::Note(NoteError::BadSignature { .. }))
    ));
    // A note that verifies under a key not named after the origin is not a checkpoint of it.
    let witness = ServiceKey::from_seed(&[5; 32], "witness.example");
    let mut note = Note::new(BODY).unwrap();
    note.sign(&witness).unwrap();
    let w = Verifier::for_key(&witness).unwrap();
    assert_eq!(
        open_checkpoint(&note.to_string(), std::slice::from_ref(&w)),
        Err(CheckpointError::NoLogSignature {
            origin: "example.org/ledger".into()
        })
    );
    // The log signature plus a witness: both verified.
    let mut note = Note::parse(&full).unwrap();
    note.sign(&witness).unwrap();
    let opened = open_checkpoint(&note.to_string(), &[log, w]).unwrap();
    assert_eq!(opened.verification.verified.len(), 2);
}

#[test]
fn checkpoint_body_parsing() {
    // golang.org/x/mod sumdb note_test.go tree note text.
    let cp = Checkpoint::parse_body(
        "go.sum database tree\n123456789012\nTszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBb0=\n",
    )
    .unwrap();
    assert_eq!(cp.origin, "go.sum database tree");
    assert_eq!(cp.size, 123_456_789_012);
    let with_ext = format!("{BODY}ext one\next two\n");
    let cp = Checkpoint::parse_body(&with_ext).unwrap();
    assert_eq!(cp.extensions, ["ext one", "ext two"]);
    assert_eq!(cp.body(), with_ext);
    assert_eq!(
        Checkpoint::parse_body("o\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n")
            .unwrap()
            .root,
        empty_root()
    );
    for bad in [
        "",
        "example.org/ledger\n3\n",
        "example.org/ledger\n3\n1Pksj7uJcg6ztVZ3x9fvrd/rENEaGoSguo8aIzN/qpU=",
        "\n3\n1Pksj7uJcg6ztVZ3x9fvrd/rENEaGoSguo8aIzN/qpU=\n",
        "example.org/ledger\n03\n1Pksj7uJcg6ztVZ3x9fvrd/rENEaGoSguo8aIzN/qpU=\n",
        "example.org/ledger\n+3\n1Pksj7uJcg6ztVZ3x9fvrd/rENEaGoSguo8aIzN/qpU=\n",
        "example.org/ledger\n18446744073709551616\n1Pksj7uJcg6ztVZ3x9fvrd/rENEaGoSguo8aIzN/qpU=\n",
        "example.org/ledger\n3\n1Pksj7uJcg6ztVZ3x9fvrd/rENEaGoSguo8aIzN/qp==\n",
        "example.org/ledger\n3\nAAAA\n",
        "example.org/ledger\n3\n1Pksj7uJcg6ztVZ3x9fvrd/rENEaGoSguo8aIzN/qpU=\n\n",
    ] {
        assert!(Checkpoint::parse_body(bad).is_err(), "{bad:?}");
    }
    assert!(Checkpoint::new("", 0, empty_root()).is_err());
}

// ---------------------------------------------------------------------------------------------
// tlog-proof
// ---------------------------------------------------------------------------------------------

#[test]
fn tlog_proof_for_the_worked_example() {
    let full = format!("{BODY}\n{LOG_LINE}{CLOCK_LINE}");
    let leaves = ledger_leaves();
    let proof = TlogProof {
        extra: None,
        index: 2,
        proof: inclusion_proof(2, &leaves).unwrap(),
        checkpoint: full.clone(),
    };
    let text = proof.encode();
    assert_eq!(
        text,
        format!(
            "c2sp.org/tlog-proof@v1\nindex 2\n/F9riP+FVPdbsvnm85wxsZNtRLaSdu33sSBalVuXYeM=\n\n{full}"
        )
    );
    let parsed = TlogProof::parse(&text).unwrap();
    assert_eq!(parsed, proof);
    let log = Verifier::parse(LOG_VKEY).unwrap();
    let ok = parsed
        .verify(b"leaf 2", std::slice::from_ref(&log))
        .unwrap();
    assert_eq!(ok.checkpoint.size, 3);
    assert_eq!(ok.verification.unknown.len(), 1);

    assert_eq!(
        parsed.verify(b"leaf 1", std::slice::from_ref(&log)),
        Err(TlogProofError::InclusionFailed)
    );
    let mut wrong_index = parsed.clone();
    wrong_index.index = 1;
    assert_eq!(
        wrong_index.verify(b"leaf 2", std::slice::from_ref(&log)),
        Err(TlogProofError::InclusionFailed)
    );
    wrong_index.index = 3;
    assert_eq!(
        wrong_index.verify(b"leaf 2", std::slice::from_ref(&log)),
        Err(TlogProofError::IndexOutOfRange { index: 3, size: 3 })
    );
    assert!(matches!(
        parsed.verify(b"leaf 2", &[]),
        Err(TlogProofError::Checkpoint(_))
    ));

    // With extra data, and for leaf 0 (two hashes).
    let p0 = TlogProof {
        extra: Some(b"context".to_vec()),
        index: 0,
        proof: inclusion_proof(0, &leaves).unwrap(),
        checkpoint: full.clone(),
    };
    let text0 = p0.encode();
    assert!(text0.starts_with("c2sp.org/tlog-proof@v1\nextra Y29udGV4dA==\nindex 0\n"));
    let parsed0 = TlogProof::parse(&text0).unwrap();
    assert_eq!(parsed0, p0);
    assert!(parsed0.verify(b"leaf 0", &[log]).is_ok());
}

#[test]
fn tlog_proof_parse_failures() {
    let full = format!("{BODY}\n{LOG_LINE}");
    let h = "/F9riP+FVPdbsvnm85wxsZNtRLaSdu33sSBalVuXYeM=";
    for bad in [
        String::new(),
        format!("c2sp.org/tlog-proof@v2\nindex 2\n{h}\n\n{full}"),
        format!("c2sp.org/tlog-proof@v1\nindex 02\n{h}\n\n{full}"),
        format!("c2sp.org/tlog-proof@v1\nindex -2\n{h}\n\n{full}"),
        format!("c2sp.org/tlog-proof@v1\nindex\n{h}\n\n{full}"),
        format!("c2sp.org/tlog-proof@v1\nextra !!\nindex 2\n{h}\n\n{full}"),
        format!("c2sp.org/tlog-proof@v1\nindex 2\nAAAA\n\n{full}"),
        format!("c2sp.org/tlog-proof@v1\nindex 2\n{h}\n"),
        format!("c2sp.org/tlog-proof@v1\nindex 2\n{h}\n\n"),
        format!("c2sp.org/tlog-proof@v1\nindex 2\n{h}"),
        format!(
            "c2sp.org/tlog-proof@v1\nindex 2\n{}\n{full}",
            format!("{h}\n").repeat(65)
        ),
    ] {
        assert!(
            matches!(TlogProof::parse(&bad), Err(TlogProofError::Malformed(_))),
            "{bad:?}"
        );
    }
    // An empty proof is valid syntax (a one-leaf tree).
    let p = TlogProof::parse(&format!("c2sp.org/tlog-proof@v1\nindex 0\n\n{full}")).unwrap();
    assert!(p.proof.is_empty());
}
