//! A small log and tree built the way the service writes them, for the tests.

#![allow(dead_code)]

use std::path::Path;

use conduct_core::signing::ServiceKey;
use conduct_core::tlog::checkpoint::Checkpoint;
use conduct_core::tlog::tiles::{encode_bundle, entries_path, new_tiles, tile_data};
use conduct_core::tlog::{leaf_hash, root};
use conduct_core::vow::fixture::{example_chain, EXAMPLE_ORIGIN};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

/// The log's origin (and the key's name).
pub const ORIGIN: &str = EXAMPLE_ORIGIN;

/// The service key of the tests.
pub fn key() -> ServiceKey {
    ServiceKey::from_seed(&[7u8; 32], ORIGIN)
}

/// A vow with `entries` report-ins (log indexes 0..=entries), then `other` leaves that are not
/// vow-chain records.
pub fn leaves(key: &ServiceKey, entries: u64, other: usize) -> Vec<Vec<u8>> {
    let mut out = example_chain(key, entries, false).1;
    out.extend((0..other).map(|i| format!("{{\"type\":\"test/v1\",\"i\":{i}}}").into_bytes()));
    out
}

fn write(path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, bytes).expect("write");
}

/// Append `leaves` to a log in `dir` `batch` at a time, publishing as the service does after
/// each batch: the new tiles and bundles (older partial ones stay), then the signed checkpoint.
/// Returns the checkpoint of every batch.
pub fn write_log(dir: &Path, key: &ServiceKey, leaves: &[Vec<u8>], batch: usize) -> Vec<String> {
    let mut hashes = Vec::new();
    let mut checkpoints = Vec::new();
    for chunk in leaves.chunks(batch) {
        let old = hashes.len() as u64;
        hashes.extend(chunk.iter().map(|l| leaf_hash(l)));
        let size = hashes.len() as u64;
        for tile in new_tiles(old, size) {
            write(
                &dir.join(tile.path()),
                &tile_data(tile, &hashes).expect("tile"),
            );
            if tile.level == 0 {
                let start = tile.index as usize * 256;
                let bundle = &leaves[start..start + usize::from(tile.width)];
                write(
                    &dir.join(entries_path(tile.index, tile.width)),
                    &encode_bundle(bundle).expect("bundle"),
                );
            }
        }
        let cp = Checkpoint::new(ORIGIN, size, root(&hashes))
            .expect("checkpoint")
            .sign(key)
            .expect("sign");
        write(&dir.join("checkpoint"), cp.as_bytes());
        checkpoints.push(cp);
    }
    checkpoints
}

/// `v` with the scope statement, signed by `key`, as bytes.
pub fn signed(key: &ServiceKey, v: Value) -> Vec<u8> {
    let Value::Object(mut m) = v else {
        panic!("an object")
    };
    m.insert("scope".into(), conduct_core::scope::scope_value());
    key.sign_object(&mut m).expect("sign");
    serde_json::to_vec(&Value::Object(m)).expect("bytes")
}

/// A small mirror in `dir`: two signed snapshots and a page under a manifest valid from
/// `now - 1h` to `now + 1h`, and the log of `leaves` under `log/`.
pub fn write_site(dir: &Path, key: &ServiceKey, leaves: &[Vec<u8>], now: u64) {
    let files = [
        (
            "index.json",
            signed(key, json!({"type": "conduct.index/v1"})),
        ),
        ("index.html", b"<p>hi</p>".to_vec()),
        (
            ".well-known/x402.json",
            signed(key, json!({"type": "conduct.x402/v1"})),
        ),
    ];
    let mut listed = Listing::new();
    for (p, b) in &files {
        write(&dir.join(p), b);
        listed.insert(
            (*p).to_owned(),
            (hex::encode(Sha256::digest(b)), b.len() as u64),
        );
    }
    write_manifest(dir, key, listed, now, 256);
    write_log(&dir.join("log"), key, leaves, 70);
}

/// A manifest's listing: path -> (hex SHA-256, length).
pub type Listing = std::collections::BTreeMap<String, (String, u64)>;

/// Write the manifest of `files` into `dir` as the service does (library/MIRRORS.md, "The
/// manifest"): bins keyed by the SHA-256 of each file's unit, leaves split above `split` files
/// of more than one key, each bin signed by `key`, the root valid from `now - 1h` to
/// `now + 1h`.
pub fn write_manifest(dir: &Path, key: &ServiceKey, files: Listing, now: u64, split: usize) {
    let bins = children(dir, key, "", files, split);
    let root = json!({
        "type": conduct_core::manifest::MANIFEST_TYPE,
        "version": now,
        "as_of": conduct_core::time::rfc3339(now - 3600),
        "expires": conduct_core::time::rfc3339(now + 3600),
        "bins": bins,
    });
    write(&dir.join("manifest.json"), &signed(key, root));
}

/// The children of the bin `prefix` holding `files`, written; what it says of them.
fn children(dir: &Path, key: &ServiceKey, prefix: &str, files: Listing, split: usize) -> Value {
    use conduct_core::manifest::{bin_path, key as file_key, BIN_TYPE};
    let mut parts: std::collections::BTreeMap<u8, Listing> = Default::default();
    for (p, e) in files {
        parts
            .entry(file_key(&p).as_bytes()[prefix.len()])
            .or_default()
            .insert(p, e);
    }
    let mut out = Map::new();
    for (d, part) in parts {
        let child = format!("{prefix}{}", d as char);
        let n = part.len();
        let keys: std::collections::BTreeSet<String> = part.keys().map(|p| file_key(p)).collect();
        let doc = if n > split && keys.len() > 1 {
            json!({"type": BIN_TYPE, "prefix": child,
                   "bins": children(dir, key, &child, part, split)})
        } else {
            let listed: Map<String, Value> = part
                .into_iter()
                .map(|(p, (sha, len))| (p, json!({"len": len, "sha256": sha})))
                .collect();
            json!({"type": BIN_TYPE, "prefix": child, "files": listed})
        };
        let bytes = signed(key, doc);
        write(&dir.join(bin_path(&child)), &bytes);
        out.insert(
            bin_path(&child),
            json!({"files": n, "len": bytes.len(), "sha256": hex::encode(Sha256::digest(&bytes))}),
        );
    }
    Value::Object(out)
}
