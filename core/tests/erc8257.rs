//! ERC-8257 manifests: the ERC's own vectors (tests/vectors/erc8257), the rejections that must
//! never be repaired, the binding, the whole verification, and properties of the hash and the
//! display claims.

use conduct_core::canonical::jcs;
use conduct_core::erc8257::{
    canonical_bytes, check_binding, claims, is_stripped, manifest_hash, validate_manifest, verify,
    ManifestError, Status, CLAIM_DESCRIPTION_MAX, CLAIM_ENDPOINT_MAX, CLAIM_NAME_MAX,
};
use proptest::prelude::*;
use serde_json::{json, Map, Value};

fn vector(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/tests/vectors/erc8257/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn hex32(s: &str) -> [u8; 32] {
    let mut out = [0u8; 32];
    hex::decode_to_slice(s.trim_start_matches("0x"), &mut out).unwrap();
    out
}

/// (file, JCS length, manifestHash) as printed by the ERC's "Test Cases".
const VECTORS: [(&str, usize, &str); 3] = [
    (
        "free-tool.json",
        768,
        "0x9a0f34405d7907b4c0ceebd23f293d9a1aa31c38e81d5c197e415cb8c16fed5f",
    ),
    (
        "paid-tool.json",
        922,
        "0xa71ef83ee66b702edb44f121510f8969e353df40b1e1587f8288fe6d352b448b",
    ),
    (
        "free-tool-0a3d9cd.json",
        632,
        "0x786620b1a5d903c2ac4eafe964364292ca4b6ed763a13b29423c03ccca905af0",
    ),
];

#[test]
fn the_erc_vectors_reproduce() {
    for (file, len, hash) in VECTORS {
        let bytes = vector(file);
        let canon = canonical_bytes(&bytes).unwrap();
        assert_eq!(canon.len(), len, "{file}");
        assert_eq!(
            format!("0x{}", hex::encode(manifest_hash(&bytes).unwrap())),
            hash,
            "{file}"
        );
        // Core's RFC 8785 writer agrees with the independent canonicalizer on them.
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(
            canon,
            serde_json_canonicalizer::to_vec(&v).unwrap(),
            "{file}"
        );
        // The canonical form hashes to the same value (JCS is idempotent).
        assert_eq!(manifest_hash(&canon).unwrap(), hex32(hash), "{file}");
        let m = validate_manifest(&v).unwrap();
        assert!(m.endpoint.starts_with("https://tools.example.com/"));
    }
    let paid =
        validate_manifest(&serde_json::from_slice(&vector("paid-tool.json")).unwrap()).unwrap();
    assert_eq!(paid.pricing.len(), 2);
    assert_eq!(paid.tags, ["analytics", "portfolio"]);
}

#[test]
fn the_erc_vectors_verify_against_their_tool_configs() {
    let creator = |s: &str| {
        let mut a = [0u8; 20];
        hex::decode_to_slice(&s[2..], &mut a).unwrap();
        a
    };
    let free = creator("0xabcdefabcdef1234567890abcdefabcdef123456");
    let v = verify(
        &vector("free-tool.json"),
        "https://tools.example.com/.well-known/ai-tool/nft-price-oracle.json",
        &hex32(VECTORS[0].2),
        &free,
    );
    assert_eq!(v.status, Status::Verified, "{:?}", v.detail);
    assert_eq!(v.computed, Some(hex32(VECTORS[0].2)));

    let paid = creator("0xabcdef0123456789abcdef0123456789abcdef01");
    let meta = "https://tools.example.com/.well-known/ai-tool/premium-analytics.json";
    let bytes = vector("paid-tool.json");
    let committed = hex32(VECTORS[1].2);
    assert_eq!(
        verify(&bytes, meta, &committed, &paid).status,
        Status::Verified
    );
    // The other tool's creator, an older commitment, another origin.
    assert_eq!(
        verify(&bytes, meta, &committed, &free).status,
        Status::CreatorMismatch
    );
    let stale = verify(&bytes, meta, &hex32(VECTORS[0].2), &paid);
    assert_eq!(stale.status, Status::HashMismatch);
    assert_eq!(stale.computed, Some(committed));
    let elsewhere = "https://mirror.example.com/.well-known/ai-tool/premium-analytics.json";
    assert_eq!(
        verify(&bytes, elsewhere, &committed, &paid).status,
        Status::BindingMismatch
    );
    let mut bom = vec![0xEF, 0xBB, 0xBF];
    bom.extend_from_slice(&bytes);
    let v = verify(&bom, meta, &committed, &paid);
    assert_eq!((v.status, v.computed), (Status::InvalidManifest, None));
    assert_eq!(v.status.as_str(), "invalid-manifest");
}

fn err(bytes: &[u8]) -> ManifestError {
    manifest_hash(bytes).unwrap_err()
}

fn free_tool() -> Value {
    serde_json::from_slice(&vector("free-tool.json")).unwrap()
}

#[test]
fn rejections_are_never_repaired() {
    let bytes = vector("free-tool.json");
    let mut bom = vec![0xEF, 0xBB, 0xBF];
    bom.extend_from_slice(&bytes);
    assert_eq!(err(&bom), ManifestError::Bom);
    assert_eq!(err(&bom).status(), "invalid-manifest");

    let mut nfd = free_tool();
    nfd["name"] = json!("cafe\u{301}-oracle");
    let e = err(&serde_json::to_vec(&nfd).unwrap());
    assert_eq!(
        e,
        ManifestError::NotNfc {
            path: "/name".into()
        }
    );
    assert!(e.to_string().contains("/name"), "{e}");
    let mut nfc = free_tool();
    nfc["name"] = json!("caf\u{e9}-oracle");
    manifest_hash(&serde_json::to_vec(&nfc).unwrap()).unwrap();

    let mut deep = free_tool();
    deep["inputs"]["properties"]["e\u{301}"] = json!({"type": "string"});
    assert_eq!(
        err(&serde_json::to_vec(&deep).unwrap()),
        ManifestError::NotNfc {
            path: "/inputs/properties/e\u{301}".into()
        }
    );

    let mut upper = free_tool();
    upper["creatorAddress"] = json!("0xABCDEFabcdef1234567890abcdefabcdef123456");
    let e = err(&serde_json::to_vec(&upper).unwrap());
    assert_eq!(
        e,
        ManifestError::UppercaseHex {
            path: "/creatorAddress".into()
        }
    );
    assert_eq!(e.status(), "invalid-manifest");

    let mut paid: Value = serde_json::from_slice(&vector("paid-tool.json")).unwrap();
    paid["pricing"][1]["recipient"] = json!("eip155:1:0xABCDEF0123456789abcdef0123456789abcdef01");
    assert_eq!(
        err(&serde_json::to_vec(&paid).unwrap()),
        ManifestError::UppercaseHex {
            path: "/pricing/1/recipient".into()
        }
    );

    // Upper case outside the ERC's hex fields is only text.
    let mut other = free_tool();
    other["description"] = json!("0xABCDEF");
    manifest_hash(&serde_json::to_vec(&other).unwrap()).unwrap();

    assert!(matches!(err(b"{"), ManifestError::InvalidJson { .. }));
    assert!(matches!(
        err(b"{\"a\":\"\xff\"}"),
        ManifestError::InvalidJson { .. }
    ));
    assert!(matches!(
        err(br#"{"a":"\ud800"}"#),
        ManifestError::InvalidJson { .. }
    ));
    assert!(matches!(err(b"[1]"), ManifestError::Invalid { path, .. } if path.is_empty()));
    let big = vec![b' '; (1 << 20) + 1];
    assert!(matches!(err(&big), ManifestError::TooLarge { .. }));
}

#[test]
fn one_changed_byte_changes_the_hash() {
    let bytes = vector("paid-tool.json");
    let h = manifest_hash(&bytes).unwrap();
    let text = String::from_utf8(bytes.clone()).unwrap();
    let changed = text.replacen("\"20000\"", "\"20001\"", 1);
    assert_ne!(manifest_hash(changed.as_bytes()).unwrap(), h);
    // Whitespace outside strings is not part of the canonical form.
    let spaced = text.replace(": ", ":\t");
    assert_eq!(manifest_hash(spaced.as_bytes()).unwrap(), h);
}

#[test]
fn binding_mismatches() {
    let ep = "https://tools.example.com/nft-price-oracle";
    let ok = "https://tools.example.com/.well-known/ai-tool/nft-price-oracle.json";
    check_binding(ok, ep).unwrap();
    for meta in [
        "https://other.example.com/.well-known/ai-tool/nft-price-oracle.json",
        "https://tools.example.com:8443/.well-known/ai-tool/nft-price-oracle.json",
        "https://tools.example.com/.well-known/ai-tool/nft-price-oracle.json?v=2",
        "https://tools.example.com/.well-known/ai-tool/nft-price-oracle.json#x",
        "https://tools.example.com/.well-known/ai-tool/NFT.json",
        "https://tools.example.com/.well-known/ai-tool/.json",
        "https://tools.example.com/.well-known/ai-tool/nft-price-oracle",
        "http://tools.example.com/.well-known/ai-tool/nft-price-oracle.json",
        "https://tööls.example.com/.well-known/ai-tool/nft-price-oracle.json",
    ] {
        let e = check_binding(meta, ep).unwrap_err();
        assert!(matches!(e, ManifestError::Binding { .. }), "{meta}: {e:?}");
        assert_eq!(e.status(), "binding-mismatch");
    }
    assert!(check_binding(ok, "http://tools.example.com/x").is_err());
    assert!(check_binding(ok, "https://tools.example.com:444/x").is_err());
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-1e15f64..1e15).prop_map(Value::from),
        "[a-z\u{e9}\u{1F600} \"\\\\]{0,8}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::vec(("[a-zA-Z\u{e9}\u{1F600}]{1,6}", inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

fn object() -> impl Strategy<Value = Map<String, Value>> {
    proptest::collection::vec(
        ("[a-zA-Z_\u{e9}\u{ff61}\u{1F600}]{1,6}", json_value()),
        0..8,
    )
    .prop_map(|kv| kv.into_iter().collect())
}

/// The object's members written in the given order (a permutation of its keys).
fn write_in_order(map: &Map<String, Value>, order: &[usize]) -> Vec<u8> {
    let keys: Vec<&String> = map.keys().collect();
    let mut out = b"{".to_vec();
    for (n, &i) in order.iter().enumerate() {
        if n > 0 {
            out.extend_from_slice(b", ");
        }
        let k = keys[i];
        out.extend(serde_json::to_vec(k).unwrap());
        out.extend_from_slice(b": ");
        out.extend(serde_json::to_vec_pretty(&map[k]).unwrap());
    }
    out.push(b'}');
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// JCS is idempotent: the canonical bytes are their own canonical form, and hash the same.
    #[test]
    fn jcs_is_idempotent(map in object()) {
        let bytes = serde_json::to_vec_pretty(&Value::Object(map)).unwrap();
        let once = canonical_bytes(&bytes).unwrap();
        let twice = canonical_bytes(&once).unwrap();
        prop_assert_eq!(&once, &twice);
        prop_assert_eq!(manifest_hash(&bytes).unwrap(), manifest_hash(&once).unwrap());
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        prop_assert_eq!(&once, &jcs(&v).unwrap());
        prop_assert_eq!(once, serde_json_canonicalizer::to_vec(&v).unwrap());
    }

    /// Key order and layout do not change the hash.
    #[test]
    fn key_order_does_not_change_the_hash(
        map in object(),
        seed in proptest::collection::vec(any::<u32>(), 8),
    ) {
        let mut order: Vec<usize> = (0..map.len()).collect();
        order.sort_by_key(|&i| seed[i % seed.len()].wrapping_mul(i as u32 + 1));
        let reordered = write_in_order(&map, &order);
        let plain = serde_json::to_vec(&Value::Object(map)).unwrap();
        prop_assert_eq!(manifest_hash(&plain).unwrap(), manifest_hash(&reordered).unwrap());
    }

    /// Claims never carry a stripped character and never exceed their bounds, whatever the
    /// manifest says.
    #[test]
    fn claims_are_stripped_and_bounded(
        name in any::<String>(),
        description in proptest::collection::vec(
            prop_oneof![
                any::<char>(),
                proptest::sample::select(vec![
                    '\u{202e}', '\u{200b}', '\u{2066}', '\u{feff}', '\u{85}', '\u{7f}', '\n',
                    '\u{0}', '\u{200f}', '\u{2069}', '\u{61c}', 'a', '\u{e9}',
                ]),
            ],
            0..1200,
        ),
        endpoint_repeat in 0usize..3000,
    ) {
        let description: String = description.into_iter().collect();
        let endpoint = "\u{202a}x".repeat(endpoint_repeat);
        let c = claims(&json!({"name": name, "description": description, "endpoint": endpoint}));
        for (text, max) in [
            (c.name, CLAIM_NAME_MAX),
            (c.description, CLAIM_DESCRIPTION_MAX),
            (c.endpoint, CLAIM_ENDPOINT_MAX),
        ] {
            let text = text.unwrap();
            prop_assert!(text.chars().count() <= max);
            prop_assert!(!text.chars().any(|c| is_stripped(c) || c.is_control()), "{:?}", text);
        }
    }
}
