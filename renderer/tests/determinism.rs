//! Two renders of the same state and `as_of` are byte-identical; every JSON file is a signed
//! snapshot that verifies (`/openapi.json` under its `x-` members); the manifest's bins cover
//! every other file with its hash and length.

use conduct_core::manifest::bin_path;
use conduct_core::signing::{verify_snapshot, PinnedKey, ServiceKey};
use conduct_renderer::manifest::{parse_bin, BinRef, Body};
use conduct_renderer::{render, RouteInfo, SiteInput};
use serde_json::Value;
use sha2::{Digest, Sha256};

const ROUTES: &[RouteInfo] = &[
    RouteInfo {
        method: "POST",
        path: "/profile",
        paid: true,
        description: "paid <b>read</b>",
        contract: conduct_renderer::openapi::Contract::UNDESCRIBED,
    },
    RouteInfo {
        method: "GET",
        path: "/",
        paid: false,
        description: "card",
        contract: conduct_renderer::openapi::Contract::UNDESCRIBED,
    },
];

fn input(key: &ServiceKey, as_of: u64) -> SiteInput<'_> {
    SiteInput {
        key,
        public_url: "http://localhost:8402",
        routes: ROUTES,
        accepts: &[],
        price_usd: "0.10",
        posted: &[],
        demo_daily_cap: Some(50),
        as_of,
        manifest_ttl: 3600,
    }
}

#[test]
fn same_state_same_bytes() {
    let key = ServiceKey::from_seed(&[3u8; 32], "localhost:8402/log");
    let a = render(&input(&key, 1_795_262_400)).unwrap();
    let b = render(&input(&key, 1_795_262_400)).unwrap();
    assert_eq!(a, b);
    let dir1 = tempfile::tempdir().unwrap();
    let dir2 = tempfile::tempdir().unwrap();
    a.write_to(&conduct_indexer::tree::Dir::open(dir1.path()).unwrap())
        .unwrap();
    b.write_to(&conduct_indexer::tree::Dir::open(dir2.path()).unwrap())
        .unwrap();
    for (path, bytes) in &a.files {
        assert_eq!(
            &std::fs::read(dir2.path().join(path)).unwrap(),
            bytes,
            "{path}"
        );
    }
    // A second write of the same tree changes nothing on disk.
    let again = a
        .write_to(&conduct_indexer::tree::Dir::open(dir1.path()).unwrap())
        .unwrap();
    assert!(again.written.is_empty() && again.removed.is_empty());
}

#[test]
fn every_json_file_is_signed_and_the_manifest_covers_the_tree() {
    let key = ServiceKey::from_seed(&[3u8; 32], "localhost:8402/log");
    let tree = render(&input(&key, 1_795_262_400)).unwrap();
    let pinned = PinnedKey::parse(&key.vkey()).unwrap();
    for (path, bytes) in &tree.files {
        if path.ends_with(".json") {
            let v: Value = serde_json::from_slice(bytes).unwrap();
            verify_snapshot(&v, &pinned).unwrap_or_else(|e| panic!("{path}: {e}"));
        }
    }
    let manifest: Value = serde_json::from_slice(&tree.files["manifest.json"]).unwrap();
    assert_eq!(manifest["type"], "conduct.manifest/v3");
    assert_eq!(manifest["as_of"], "2026-11-21T12:00:00Z");
    assert_eq!(manifest["expires"], "2026-11-21T13:00:00Z");
    // Every file but the manifest's own, once, through the bins from the root down.
    let mut listed = 0;
    let mut bins = 0;
    let mut stack = vec![(String::new(), None::<BinRef>)];
    while let Some((prefix, want)) = stack.pop() {
        let bytes = &tree.files[&bin_path(&prefix)];
        let body = parse_bin(bytes, &prefix, &pinned).unwrap();
        bins += 1;
        if let Some(want) = want {
            assert_eq!(BinRef::of(bytes, body.files()), want, "{prefix}");
        }
        match body {
            Body::Files(files) => {
                for (path, (sha, len)) in files {
                    let bytes = &tree.files[&path];
                    assert_eq!(len, bytes.len() as u64, "{path}");
                    assert_eq!(sha, <[u8; 32]>::from(Sha256::digest(bytes)), "{path}");
                    listed += 1;
                }
            }
            Body::Bins(children) => {
                for (d, r) in children {
                    stack.push((format!("{prefix}{}", d as char), Some(r)));
                }
            }
        }
    }
    // The chain pages are not listed: their chain heads pin them.
    let pages = tree
        .files
        .keys()
        .filter(|p| !conduct_core::manifest::listed(p))
        .count();
    assert_eq!(listed + bins + pages, tree.files.len());
}

#[test]
fn route_text_is_escaped_in_html() {
    let key = ServiceKey::from_seed(&[3u8; 32], "localhost:8402/log");
    let tree = render(&input(&key, 0)).unwrap();
    let html = String::from_utf8(tree.files["catalog.html"].clone()).unwrap();
    assert!(
        html.contains("paid &#60;b&#62;read&#60;/b&#62;") || html.contains("paid &lt;b&gt;read"),
        "{html}"
    );
    assert!(!html.contains("<b>read</b>"));
}
