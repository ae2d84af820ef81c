//! Two renders of the same state and `as_of` are byte-identical; every JSON file is a signed
//! snapshot that verifies (`/openapi.json` under its `x-` members); the manifest covers every
//! other file with its hash and length.

use conduct_core::signing::{verify_snapshot, PinnedKey, ServiceKey};
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
    a.write_to(dir1.path()).unwrap();
    b.write_to(dir2.path()).unwrap();
    for (path, bytes) in &a.files {
        assert_eq!(
            &std::fs::read(dir2.path().join(path)).unwrap(),
            bytes,
            "{path}"
        );
    }
    // A second write of the same tree changes nothing on disk.
    let again = a.write_to(dir1.path()).unwrap();
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
    assert_eq!(manifest["as_of"], "2026-11-21T12:00:00Z");
    assert_eq!(manifest["expires"], "2026-11-21T13:00:00Z");
    let files = manifest["files"].as_object().unwrap();
    assert_eq!(files.len(), tree.files.len() - 1);
    for (path, entry) in files {
        let bytes = &tree.files[path];
        assert_eq!(entry["len"], bytes.len());
        assert_eq!(entry["sha256"], hex::encode(Sha256::digest(bytes)));
    }
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
