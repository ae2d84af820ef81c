//! The manifest as a trie of bins (library/MIRRORS.md, "The manifest"): one changed file
//! rewrites a bounded number of manifest bytes however large the tree, a leaf splits when it
//! grows, the trie a publisher grows is the one built at once, and a restart takes the trie on
//! disk back (reconciling a round a crash cut before its root).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, SystemTime};

use conduct_core::manifest::{bin_path, is_manifest_path};
use conduct_core::signing::{PinnedKey, ServiceKey};
use conduct_renderer::manifest::{build, parse_bin, BinRef, Body};
use conduct_renderer::publish::Publisher;
use conduct_renderer::snapshot::signed_bytes;
use conduct_renderer::Tree;
use serde_json::json;
use sha2::{Digest, Sha256};

const AS_OF: u64 = 1_800_000_000;

fn key() -> ServiceKey {
    ServiceKey::from_seed(&[7; 32], "example.org/log")
}

/// `vows` vows of ten files each (a signed page, its HTML, a chain head and seven chain pages):
/// one unit each.
fn vow_files(vows: usize, tag: &str) -> Vec<(String, Vec<u8>)> {
    let key = key();
    let mut out = Vec::with_capacity(vows * 10);
    for v in 0..vows {
        let id = format!("{:016x}", (v as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let page = signed_bytes(&key, json!({"type": "test.vow/v1", "v": v, "t": tag})).unwrap();
        out.push((format!("vow/{id}.json"), page));
        out.push((
            format!("vow/{id}.html"),
            format!("<p>{v} {tag}</p>").into_bytes(),
        ));
        out.push((format!("vow/{id}/chain.txt"), format!("c{v}").into_bytes()));
        for k in 0..7 {
            out.push((
                format!("vow/{id}/chain/{k}.txt"),
                format!("p{k}").into_bytes(),
            ));
        }
    }
    out
}

/// `files` put into a publisher of the tree in `dir` (leaves split above `split_at` files) and
/// its manifest signed at `AS_OF`, the publisher then dropped.
fn published(dir: &Path, key: &ServiceKey, files: Vec<(String, Vec<u8>)>, split_at: usize) {
    let mut p = Publisher::from_tree_split_at(
        conduct_indexer::tree::Dir::shared(dir).unwrap(),
        &Tree::default(),
        split_at,
    );
    p.put_many(files).unwrap();
    p.write_manifest(key, AS_OF, 3600).unwrap();
}

/// A round a crash cut before its root, made after the fact: the earlier root `root` put back
/// (with an earlier modification time), the round's bins left on disk.
fn cut_round(dir: &Path, root: &[u8]) {
    std::fs::write(dir.join("manifest.json"), root).unwrap();
    std::fs::File::options()
        .write(true)
        .open(dir.join("manifest.json"))
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(60))
        .unwrap();
}

/// Every bin from the root down, each checked against what its parent says and the key: the
/// listed files (path -> (hex SHA-256, length)), each present on disk with those bytes, and
/// nothing else on disk outside `log/` and the manifest. A short text names what is wrong.
fn walk(dir: &Path, key: &ServiceKey) -> Result<BTreeMap<String, (String, u64)>, String> {
    let pinned = PinnedKey::parse(&key.vkey()).unwrap();
    let mut listed = BTreeMap::new();
    let mut bins = 0usize;
    let mut stack: Vec<(String, Option<BinRef>)> = vec![(String::new(), None)];
    while let Some((prefix, want)) = stack.pop() {
        let path = bin_path(&prefix);
        let bytes = std::fs::read(dir.join(&path)).map_err(|e| format!("{path}: {e}"))?;
        let body = parse_bin(&bytes, &prefix, &pinned).map_err(|e| format!("{path}: {e}"))?;
        bins += 1;
        if let Some(want) = want {
            if BinRef::of(&bytes, body.files()) != want {
                return Err(format!("{path}: not the bin its parent names"));
            }
        }
        match body {
            Body::Files(files) => {
                for (p, (sha, len)) in files {
                    let b = std::fs::read(dir.join(&p)).map_err(|e| format!("{p}: {e}"))?;
                    if <[u8; 32]>::from(Sha256::digest(&b)) != sha || b.len() as u64 != len {
                        return Err(format!("{p}: not the listed bytes"));
                    }
                    listed.insert(p, (hex::encode(sha), len));
                }
            }
            Body::Bins(children) => {
                for (d, r) in children {
                    stack.push((format!("{prefix}{}", d as char), Some(r)));
                }
            }
        }
    }
    let mut on_disk = 0usize;
    let mut bin_files = 0usize;
    for e in walkdir::WalkDir::new(dir).min_depth(1) {
        let e = e.unwrap();
        if !e.file_type().is_file() {
            continue;
        }
        let rel = e
            .path()
            .strip_prefix(dir)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if rel.starts_with("log/") {
            continue;
        }
        if is_manifest_path(&rel) {
            bin_files += 1;
        } else {
            on_disk += 1;
            if !listed.contains_key(&rel) {
                return Err(format!("{rel}: not listed"));
            }
        }
    }
    if bin_files != bins {
        return Err(format!("{bin_files} manifest files on disk, {bins} named"));
    }
    assert_eq!(on_disk, listed.len());
    Ok(listed)
}

/// `conduct verify-site`'s check of the tree in `dir` (steps 1 to 4) agrees with [`walk`].
fn verify(dir: &Path, key: &ServiceKey) {
    let listed = walk(dir, key).unwrap();
    let audit = conduct_verify::verify_tree(dir, Some(dir), &key.vkey(), AS_OF + 100)
        .unwrap_or_else(|e| panic!("verify-site: {e}"));
    assert_eq!(audit.listed, listed.len());
}

/// The manifest's files on disk: path -> bytes.
fn manifest_snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for e in walkdir::WalkDir::new(dir).min_depth(1) {
        let e = e.unwrap();
        let rel = e
            .path()
            .strip_prefix(dir)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if e.file_type().is_file() && (rel == "manifest.json" || rel.starts_with("manifest/")) {
            out.insert(rel, std::fs::read(e.path()).unwrap());
        }
    }
    out
}

/// Bytes of the manifest files that are new or changed from `before` to `after`.
fn rewritten(before: &BTreeMap<String, Vec<u8>>, after: &BTreeMap<String, Vec<u8>>) -> usize {
    after
        .iter()
        .filter(|(p, b)| before.get(*p) != Some(*b))
        .map(|(_, b)| b.len())
        .sum()
}

#[test]
fn one_changed_file_in_a_large_tree_rewrites_a_bounded_part_of_the_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let key = key();
    let mut p = Publisher::from_tree(
        conduct_indexer::tree::Dir::shared(dir.path()).unwrap(),
        &Tree::default(),
    );
    let files = vow_files(5_000, "a");
    p.put_many(files.clone()).unwrap();
    p.write_manifest(&key, AS_OF, 3600).unwrap();
    assert_eq!(p.len(), 50_000);
    let before = manifest_snapshot(dir.path());
    let total: usize = before.values().map(Vec::len).sum();
    assert!(
        total > 5_000_000,
        "the manifest lists 50,000 files: {total} bytes"
    );

    // One report-in: the vow's page changes.
    let (path, _) = &files[10 * 1234];
    let page = signed_bytes(&key, json!({"type": "test.vow/v1", "v": 1234, "t": "b"})).unwrap();
    p.put(path, &page).unwrap();
    p.write_manifest(&key, AS_OF + 1, 3600).unwrap();
    let after = manifest_snapshot(dir.path());
    let bytes = rewritten(&before, &after);
    assert!(
        bytes <= 256 * 1024,
        "one changed file rewrote {bytes} bytes of a {total}-byte manifest"
    );
    let listed = walk(dir.path(), &key).unwrap();
    assert_eq!(listed.len(), 50_000);
    assert_eq!(listed[path.as_str()].0, hex::encode(Sha256::digest(&page)));

    // A refresh before expiry re-signs the root alone.
    let before = after;
    p.write_manifest(&key, AS_OF + 2, 3600).unwrap();
    let after = manifest_snapshot(dir.path());
    let changed: Vec<&String> = after
        .keys()
        .filter(|k| before.get(*k) != after.get(*k))
        .collect();
    assert_eq!(changed, vec!["manifest.json"]);
}

#[test]
fn a_growing_leaf_splits_and_the_grown_trie_is_the_one_built_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let key = key();
    let mut p = Publisher::from_tree_split_at(
        conduct_indexer::tree::Dir::shared(dir.path()).unwrap(),
        &Tree::default(),
        16,
    );
    let files = vow_files(30, "a");
    // One file at a time, signed after each, so every split happens on a signed trie.
    for (path, bytes) in &files {
        p.put(path, bytes).unwrap();
        p.write_manifest(&key, AS_OF, 3600).unwrap();
        walk(dir.path(), &key).unwrap_or_else(|e| panic!("after {path}: {e}"));
    }
    let on_disk = manifest_snapshot(dir.path());
    // 300 files in 30 units: the root's children split once they hold more than 16 files.
    let interior: Vec<&String> = on_disk
        .iter()
        .filter(|(p, b)| p.len() == "manifest/0.json".len() && b.starts_with(b"{\"bins\""))
        .map(|(p, _)| p)
        .collect();
    assert!(!interior.is_empty(), "no bin split: {:?}", on_disk.keys());
    assert!(on_disk.keys().any(|p| p.len() == "manifest/00.json".len()));
    // Built at once from the same files, the trie is byte for byte the same.
    let listing: BTreeMap<String, (String, u64)> = files
        .iter()
        .map(|(p, b)| (p.clone(), (hex::encode(Sha256::digest(b)), b.len() as u64)))
        .collect();
    let built: BTreeMap<String, Vec<u8>> = build(&key, &listing, AS_OF, 3600, 16)
        .unwrap()
        .into_iter()
        .collect();
    assert_eq!(built, on_disk);
    // A unit never parts: 40 files of one unit stay in one leaf, however full.
    let dir = tempfile::tempdir().unwrap();
    let mut p = Publisher::from_tree_split_at(
        conduct_indexer::tree::Dir::shared(dir.path()).unwrap(),
        &Tree::default(),
        16,
    );
    let one: Vec<(String, Vec<u8>)> = (0..40)
        .map(|i| (format!("registry/tool/{i}.html"), vec![b'x'; i + 1]))
        .collect();
    p.put_many(one).unwrap();
    p.write_manifest(&key, AS_OF, 3600).unwrap();
    let on_disk = manifest_snapshot(dir.path());
    assert_eq!(on_disk.len(), 2, "{:?}", on_disk.keys());
    assert_eq!(walk(dir.path(), &key).unwrap().len(), 40);
    verify(dir.path(), &key);
}

#[test]
fn a_restart_takes_the_trie_on_disk_back_and_signs_only_what_changes() {
    let dir = tempfile::tempdir().unwrap();
    let key = key();
    let files = vow_files(400, "a");
    published(dir.path(), &key, files.clone(), 64);
    walk(dir.path(), &key).unwrap();
    let before = manifest_snapshot(dir.path());

    // Restarted: the static pages are put first, then the manifest on disk is taken back.
    let mut statics = Tree::default();
    statics.put("index.html", b"<p>home</p>".to_vec());
    statics
        .write_to(&conduct_indexer::tree::Dir::open(dir.path()).unwrap())
        .unwrap();
    // The round mark kept beside the state (the service's `<data>/manifest-closed`).
    let state = tempfile::tempdir().unwrap();
    let mark = state.path().join("manifest-closed");
    let mut p = Publisher::from_tree_split_at(
        conduct_indexer::tree::Dir::shared(dir.path()).unwrap(),
        &statics,
        64,
    );
    p.mark_rounds_at(mark.clone());
    assert_eq!(p.seed_from_manifest(&key), 4_001);
    assert_eq!(p.len(), 4_001);
    let (path, bytes) = &files[123];
    assert_eq!(p.sha256_of(path), Some(hex::encode(Sha256::digest(bytes))));
    // Re-putting the same bytes writes nothing.
    assert!(!p.put(path, bytes).unwrap());
    p.write_manifest(&key, AS_OF + 10, 3600).unwrap();
    let after = manifest_snapshot(dir.path());
    assert!(rewritten(&before, &after) < 64 * 1024);
    let listed = walk(dir.path(), &key).unwrap();
    assert_eq!(listed.len(), 4_001);
    assert!(listed.contains_key("index.html"));

    // A file changed on disk behind the listing's back is rewritten, not trusted.
    let (path, bytes) = &files[3_000];
    std::fs::write(dir.path().join(path), b"tampered").unwrap();
    assert!(p.put(path, bytes).unwrap());
    p.write_manifest(&key, AS_OF + 11, 3600).unwrap();
    walk(dir.path(), &key).unwrap();

    // A round a crash cut before its root: its bins are on disk, the root is the old one (not
    // the one the round mark names).
    let root_before = std::fs::read(dir.path().join("manifest.json")).unwrap();
    let (path, _) = &files[777];
    let changed = signed_bytes(&key, json!({"type": "test.vow/v1", "changed": true})).unwrap();
    p.put(path, &changed).unwrap();
    p.write_manifest(&key, AS_OF + 12, 3600).unwrap();
    drop(p);
    cut_round(dir.path(), &root_before);
    let e = walk(dir.path(), &key).expect_err("the cut round leaves bins the root does not name");
    assert!(e.contains("not the bin its parent names"), "{e}");
    let mut p = Publisher::from_tree_split_at(
        conduct_indexer::tree::Dir::shared(dir.path()).unwrap(),
        &Tree::default(),
        64,
    );
    p.mark_rounds_at(mark.clone());
    assert_eq!(p.seed_from_manifest(&key), 4_001);
    p.write_manifest(&key, AS_OF + 13, 3600).unwrap();
    verify(dir.path(), &key);
    let listed = walk(dir.path(), &key).unwrap();
    assert_eq!(
        listed[path.as_str()].0,
        hex::encode(Sha256::digest(&changed))
    );

    // A lost bin is rebuilt from the files on disk when a file under it is next put.
    let leaf = manifest_snapshot(dir.path())
        .into_iter()
        .find(|(_, b)| b.starts_with(b"{\"files\""))
        .map(|(p, _)| p)
        .unwrap();
    std::fs::write(dir.path().join(&leaf), b"{}").unwrap();
    let mut p = Publisher::from_tree_split_at(
        conduct_indexer::tree::Dir::shared(dir.path()).unwrap(),
        &Tree::default(),
        64,
    );
    assert_eq!(p.seed_from_manifest(&key), 4_001);
    let prefix = conduct_core::manifest::bin_prefix(&leaf)
        .unwrap()
        .to_owned();
    let (victim, bytes) = files
        .iter()
        .find(|(f, _)| conduct_core::manifest::key(f).starts_with(&prefix))
        .unwrap();
    assert!(!p.put(victim, bytes).unwrap());
    p.write_manifest(&key, AS_OF + 14, 3600).unwrap();
    assert_eq!(walk(dir.path(), &key).unwrap().len(), 4_001);
    verify(dir.path(), &key);
}

#[test]
fn a_fresh_render_over_an_old_tree_leaves_no_stale_bin() {
    let dir = tempfile::tempdir().unwrap();
    let key = key();
    let mut p = Publisher::from_tree_split_at(
        conduct_indexer::tree::Dir::shared(dir.path()).unwrap(),
        &Tree::default(),
        16,
    );
    p.put_many(vow_files(60, "a")).unwrap();
    p.write_manifest(&key, AS_OF, 3600).unwrap();
    drop(p);
    // Fewer files now (a vow's files gone): a publisher that starts from nothing.
    for (path, _) in vow_files(60, "a").into_iter().skip(100) {
        std::fs::remove_file(dir.path().join(path)).unwrap();
    }
    let mut p = Publisher::from_tree_split_at(
        conduct_indexer::tree::Dir::shared(dir.path()).unwrap(),
        &Tree::default(),
        16,
    );
    p.put_many(vow_files(10, "a")).unwrap();
    p.write_manifest(&key, AS_OF, 3600).unwrap();
    assert_eq!(walk(dir.path(), &key).unwrap().len(), 100);
    verify(dir.path(), &key);
}

#[test]
fn a_restart_over_a_v1_manifest_takes_its_listing_once_and_writes_the_trie() {
    let dir = tempfile::tempdir().unwrap();
    let key = key();
    let files = vow_files(50, "a");
    let mut listed = serde_json::Map::new();
    for (path, bytes) in &files {
        let p = dir.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, bytes).unwrap();
        listed.insert(
            path.clone(),
            json!({"len": bytes.len(), "sha256": hex::encode(Sha256::digest(bytes))}),
        );
    }
    // One listed file changed length on disk since: not taken.
    std::fs::write(dir.path().join(&files[7].0), b"longer than it was").unwrap();
    let v1 = json!({"type": "conduct.manifest/v1", "version": AS_OF,
        "as_of": conduct_core::time::rfc3339(AS_OF),
        "expires": conduct_core::time::rfc3339(AS_OF + 3600), "files": listed,
        "scope": conduct_core::scope::scope_value()});
    std::fs::write(
        dir.path().join("manifest.json"),
        signed_bytes(&key, v1).unwrap(),
    )
    .unwrap();
    let mut p = Publisher::from_tree(
        conduct_indexer::tree::Dir::shared(dir.path()).unwrap(),
        &Tree::default(),
    );
    assert_eq!(p.seed_from_manifest(&key), 499);
    p.put(&files[7].0, &files[7].1).unwrap();
    p.write_manifest(&key, AS_OF + 1, 3600).unwrap();
    assert_eq!(walk(dir.path(), &key).unwrap().len(), 500);
    verify(dir.path(), &key);
    // Another key's v1 manifest is not taken.
    let mut p = Publisher::from_tree(
        conduct_indexer::tree::Dir::shared(dir.path()).unwrap(),
        &Tree::default(),
    );
    let other = ServiceKey::from_seed(&[8; 32], "example.org/log");
    assert_eq!(p.seed_from_manifest(&other), 0);
}

/// Pruning the pages of an earlier layout removes them from the disk and the manifest: the
/// tree still verifies, and the manifest lists exactly what is left (its bins keep the shape
/// they grew to: a leaf does not merge back).
#[test]
fn pruned_files_leave_the_disk_and_the_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let key = key();
    let mut p = Publisher::from_tree_split_at(
        conduct_indexer::tree::Dir::shared(dir.path()).unwrap(),
        &Tree::default(),
        16,
    );
    let mut files = vow_files(10, "a");
    for k in 0..6 {
        files.push((format!("vows/{k}.html"), format!("page {k}").into_bytes()));
    }
    p.put_many(files.clone()).unwrap();
    p.write_manifest(&key, AS_OF, 3600).unwrap();
    verify(dir.path(), &key);
    let keep = |rel: &str| rel != "vows/4.html" && rel != "vows/5.html";
    assert_eq!(p.prune("vows", keep).unwrap(), 2);
    assert_eq!(p.prune("vows", keep).unwrap(), 0, "nothing left to prune");
    assert_eq!(p.prune("no-such-dir", keep).unwrap(), 0);
    p.write_manifest(&key, AS_OF, 3600).unwrap();
    assert!(!dir.path().join("vows/4.html").exists() && p.sha256_of("vows/5.html").is_none());
    verify(dir.path(), &key);
    let listing: BTreeMap<String, (String, u64)> = files
        .iter()
        .filter(|(rel, _)| keep(rel))
        .map(|(p, b)| (p.clone(), (hex::encode(Sha256::digest(b)), b.len() as u64)))
        .collect();
    assert!(
        walk(dir.path(), &key).unwrap() == listing,
        "the listing is what is left"
    );
}

/// A vow's chain as `conduct.chain/v2` files: the head and `pages` linked pages of 32 records,
/// signed by `key`.
fn linked_chain(key: &ServiceKey, id: &str, pages: u64) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = Vec::new();
    let mut prev: Option<String> = None;
    for k in 0..pages {
        let records: Vec<_> = (0..32).map(|r| json!({"n": k * 32 + r})).collect();
        let page = json!({"type": "conduct.chain_page/v2", "vow_id": id, "page": k,
            "from_position": k * 32, "head": format!("/vow/{id}/chain"),
            "prev_page_sha256": prev, "records": records,
            "scope": conduct_core::scope::scope_value()});
        let bytes = signed_bytes(key, page).unwrap();
        prev = Some(hex::encode(Sha256::digest(&bytes)));
        out.push((format!("vow/{id}/chain/{k}.json"), bytes));
    }
    let last = prev.map(|sha| {
        json!({"href": format!("/vow/{id}/chain/{}", pages - 1),
               "from_position": (pages - 1) * 32, "records": 32, "sha256": sha})
    });
    let head = json!({"type": "conduct.chain/v2", "vow_id": id, "length": pages * 32 - 1,
        "full_pages": pages, "last_page": last, "tail_from_position": pages * 32, "tail": [],
        "scope": conduct_core::scope::scope_value()});
    out.push((
        format!("vow/{id}/chain.json"),
        signed_bytes(key, head).unwrap(),
    ));
    out
}

#[test]
fn chain_pages_are_written_but_never_listed_and_a_v2_listing_of_them_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let key = key();
    let chain = linked_chain(&key, "ab12", 3);
    // Put by a publisher: the pages are on disk, not in the manifest.
    {
        let mut p = Publisher::from_tree(
            conduct_indexer::tree::Dir::shared(dir.path()).unwrap(),
            &Tree::default(),
        );
        p.put_many(chain.clone()).unwrap();
        assert_eq!(p.len(), 1);
        assert_eq!(p.sha256_of("vow/ab12/chain/0.json"), None);
        // The same page again writes nothing: it is compared with the disk.
        assert!(!p.put(&chain[0].0, &chain[0].1).unwrap());
        p.write_manifest(&key, AS_OF, 3600).unwrap();
    }
    let audit = conduct_verify::verify_tree(dir.path(), Some(dir.path()), &key.vkey(), AS_OF + 1)
        .unwrap_or_else(|e| panic!("verify-site: {e}"));
    assert_eq!((audit.listed, audit.chain_pages), (1, 3));

    // A tree from before (`conduct.manifest/v2`, every page listed in its vow's leaf).
    let mut listing = conduct_renderer::manifest::Listing::new();
    for (path, bytes) in &chain {
        listing.insert(
            path.clone(),
            (Sha256::digest(bytes).into(), bytes.len() as u64),
        );
    }
    let k = conduct_core::manifest::key("vow/ab12.json");
    let leaf = conduct_renderer::manifest::leaf_bytes(&key, &k[..1], &listing).unwrap();
    std::fs::write(dir.path().join(bin_path(&k[..1])), &leaf).unwrap();
    let children = [(k.as_bytes()[0], BinRef::of(&leaf, 4))]
        .into_iter()
        .collect();
    let root = conduct_renderer::manifest::root_bytes(&key, &children, AS_OF, 3600).unwrap();
    let mut root: serde_json::Value = serde_json::from_slice(&root).unwrap();
    root["type"] = json!(conduct_core::manifest::V2_TYPE);
    let root = root.as_object().unwrap().clone();
    let unsigned: serde_json::Map<_, _> = root
        .into_iter()
        .filter(|(m, _)| m != "signature" && m != "key_id")
        .collect();
    let root = signed_bytes(&key, serde_json::Value::Object(unsigned)).unwrap();
    std::fs::write(dir.path().join("manifest.json"), root).unwrap();
    let audit = conduct_verify::verify_tree(dir.path(), Some(dir.path()), &key.vkey(), AS_OF + 1)
        .unwrap_or_else(|e| panic!("the v2 tree: {e}"));
    assert_eq!((audit.listed, audit.chain_pages), (4, 3));

    // Restarted over it: the listing is taken, and each page put is dropped from it.
    let mut p = Publisher::from_tree(
        conduct_indexer::tree::Dir::shared(dir.path()).unwrap(),
        &Tree::default(),
    );
    assert_eq!(p.seed_from_manifest(&key), 4);
    assert!(p.sha256_of("vow/ab12/chain/1.json").is_some());
    assert_eq!(
        p.put_many(chain.clone()).unwrap(),
        0,
        "the bytes are the same"
    );
    assert_eq!(p.len(), 1);
    p.write_manifest(&key, AS_OF + 2, 3600).unwrap();
    let root: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("manifest.json")).unwrap()).unwrap();
    assert_eq!(root["type"], conduct_core::manifest::MANIFEST_TYPE);
    let audit = conduct_verify::verify_tree(dir.path(), Some(dir.path()), &key.vkey(), AS_OF + 3)
        .unwrap_or_else(|e| panic!("after the upgrade: {e}"));
    assert_eq!((audit.listed, audit.chain_pages), (1, 3));
}

#[test]
fn bins_left_under_several_rebuilt_prefixes_are_swept_in_one_round() {
    let dir = tempfile::tempdir().unwrap();
    let key = key();
    let files = vow_files(200, "a");
    published(dir.path(), &key, files.clone(), 16);
    // Two interior bins one digit deep, each with bins under it.
    let on_disk = manifest_snapshot(dir.path());
    let interiors: Vec<String> = on_disk
        .iter()
        .filter(|(p, b)| p.len() == "manifest/0.json".len() && b.starts_with(b"{\"bins\""))
        .map(|(p, _)| conduct_core::manifest::bin_prefix(p).unwrap().to_owned())
        .take(2)
        .collect();
    assert_eq!(interiors.len(), 2, "{:?}", on_disk.keys());
    // Under each, every vow's files but one leave the disk, and the interior bin is damaged:
    // the next put under it rebuilds it as one small leaf, and the bins below are left over.
    let (mut kept, mut removed) = (Vec::new(), 0);
    for prefix in &interiors {
        let under: Vec<&(String, Vec<u8>)> = files
            .iter()
            .filter(|(f, _)| conduct_core::manifest::key(f).starts_with(prefix.as_str()))
            .collect();
        let first = conduct_core::manifest::unit(&under[0].0).to_owned();
        for (f, _) in &under {
            if conduct_core::manifest::unit(f) != first {
                std::fs::remove_file(dir.path().join(f)).unwrap();
                removed += 1;
            }
        }
        kept.push(under[0].clone());
        std::fs::write(dir.path().join(bin_path(prefix)), b"{}").unwrap();
    }
    let left_over = |dir: &Path| {
        manifest_snapshot(dir)
            .keys()
            .filter(|p| {
                let b = conduct_core::manifest::bin_prefix(p).unwrap();
                interiors
                    .iter()
                    .any(|i| b.len() > i.len() && b.starts_with(i.as_str()))
            })
            .count()
    };
    assert!(left_over(dir.path()) >= 4, "bins under the damaged ones");
    let mut p = Publisher::from_tree_split_at(
        conduct_indexer::tree::Dir::shared(dir.path()).unwrap(),
        &Tree::default(),
        16,
    );
    p.seed_from_manifest(&key);
    for (f, b) in &kept {
        p.put(f, b).unwrap();
    }
    p.write_manifest(&key, AS_OF + 1, 3600).unwrap();
    assert_eq!(
        left_over(dir.path()),
        0,
        "every bin under a rebuilt prefix is swept"
    );
    assert_eq!(walk(dir.path(), &key).unwrap().len(), files.len() - removed);
    verify(dir.path(), &key);
}

/// With a round mark kept beside the state, a restart over a manifest whose last round closed
/// looks at no bin but the root: a stray bin file newer than the root is not even seen, where
/// the look a restart without the mark takes removes it. (A root the mark does not name, a
/// round cut before its root, is reconciled: `a_restart_takes_the_trie_on_disk_back...`.)
#[test]
fn a_restart_over_a_closed_round_reads_only_the_root() {
    let dir = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let mark = state.path().join("manifest-closed");
    let key = key();
    let files = vow_files(400, "a");
    let publisher = |dir: &Path, marked: bool| {
        let mut p = Publisher::from_tree_split_at(
            conduct_indexer::tree::Dir::shared(dir).unwrap(),
            &Tree::default(),
            64,
        );
        if marked {
            p.mark_rounds_at(mark.clone());
        }
        p
    };
    let mut p = publisher(dir.path(), true);
    p.put_many(files.clone()).unwrap();
    p.write_manifest(&key, AS_OF, 3600).unwrap();
    drop(p);
    let root = std::fs::read(dir.path().join("manifest.json")).unwrap();
    assert_eq!(
        std::fs::read_to_string(&mark).unwrap(),
        hex::encode(Sha256::digest(&root))
    );

    // A closed round: the stray bin (nothing names its parent) is not looked at.
    let stray = dir.path().join(bin_path("0123456789abcdef"));
    std::fs::write(&stray, b"{}").unwrap();
    let mut p = publisher(dir.path(), true);
    assert_eq!(p.seed_from_manifest(&key), 4_000);
    assert!(
        stray.exists(),
        "a restart over a closed round read the bins"
    );
    drop(p);
    let mut p = publisher(dir.path(), false);
    assert_eq!(p.seed_from_manifest(&key), 4_000);
    assert!(
        !stray.exists(),
        "a restart without the mark looks at newer bins"
    );
    drop(p);
}

/// A directory tree that notes the manifest bins it is asked for, and those a warming named.
#[derive(Debug)]
struct NotingBins {
    dir: conduct_indexer::tree::Dir,
    /// Bins read (`get`) without a warming having named them first.
    cold: std::sync::Mutex<Vec<String>>,
    warmed: std::sync::Mutex<std::collections::HashSet<String>>,
}

impl conduct_indexer::tree::Tree for NotingBins {
    fn put(
        &self,
        path: &str,
        bytes: &[u8],
        how: conduct_indexer::tree::Put,
    ) -> std::io::Result<()> {
        self.dir.put(path, bytes, how)
    }
    fn get(&self, path: &str) -> std::io::Result<Option<Vec<u8>>> {
        if is_manifest_path(path) && !self.warmed.lock().unwrap().contains(path) {
            self.cold.lock().unwrap().push(path.to_owned());
        }
        self.dir.get(path)
    }
    fn head(&self, path: &str) -> std::io::Result<Option<conduct_indexer::tree::Listed>> {
        self.dir.head(path)
    }
    fn delete(&self, path: &str) -> std::io::Result<bool> {
        self.dir.delete(path)
    }
    fn list(&self, prefix: &str) -> std::io::Result<Vec<conduct_indexer::tree::Listed>> {
        self.dir.list(prefix)
    }
    fn children(&self, dir: &str) -> std::io::Result<conduct_indexer::tree::Children> {
        self.dir.children(dir)
    }
    fn warm(&self, paths: &[(String, conduct_indexer::tree::Warm)]) -> usize {
        let mut w = self.warmed.lock().unwrap();
        w.extend(paths.iter().map(|(p, _)| p.clone()));
        drop(w);
        self.dir.warm(paths)
    }
    fn barrier(&self) -> std::io::Result<()> {
        self.dir.barrier()
    }
    fn recover(&self, clean: bool) -> std::io::Result<usize> {
        self.dir.recover(clean)
    }
    fn locator(&self) -> String {
        self.dir.locator()
    }
}

/// After a restart, a batch of writes across a deep trie reads the bins its lookups need a
/// level at a time, each level warmed together first (a bucket fetches them at once), never a
/// bin at a time as each file's lookup reaches it; the writes and the manifest are as before.
#[test]
fn a_batch_of_writes_reads_the_bins_it_needs_a_level_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let key = key();
    let files = vow_files(2_000, "a");
    published(dir.path(), &key, files.clone(), 8);
    let site = std::sync::Arc::new(NotingBins {
        dir: conduct_indexer::tree::Dir::open(dir.path()).unwrap(),
        cold: Default::default(),
        warmed: Default::default(),
    });
    let mut p = Publisher::from_tree_split_at(site.clone(), &Tree::default(), 8);
    assert_eq!(p.seed_from_manifest(&key), 20_000);
    site.cold.lock().unwrap().clear();
    // A page of every 40th vow changes.
    let changed: Vec<(String, Vec<u8>)> = files
        .iter()
        .filter(|(path, _)| path.ends_with(".html"))
        .step_by(40)
        .map(|(path, _)| (path.clone(), b"<p>changed</p>".to_vec()))
        .collect();
    assert_eq!(p.put_many(changed).unwrap(), 50);
    let cold = site.cold.lock().unwrap().clone();
    assert!(cold.is_empty(), "bins read cold: {cold:?}");
    assert!(
        site.warmed.lock().unwrap().len() > 50,
        "the batch's bins were warmed"
    );
    p.write_manifest(&key, AS_OF + 1, 3600).unwrap();
    verify(dir.path(), &key);
}
