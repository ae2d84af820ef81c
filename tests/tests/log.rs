//! The transparency log as served and as mirrored: checkpoint, tiles, bundles and proofs over
//! HTTP, and `conduct verify-log` auditing a copy offline, catching any changed byte.

use std::path::Path;
use std::process::Command;

use conduct_core::tlog::note::Verifier;
use conduct_core::tlog::tlog_proof::TlogProof;
use conduct_indexer::keystore;
use conduct_indexer::ledger::Ledger;
use conduct_indexer::store::Store;
use conduct_indexer::tree::Dir;
use conduct_tests::{client, conduct_bin, Server};

fn verify_log(dir: &Path, vkey: &str) -> bool {
    let out = Command::new(conduct_bin())
        .arg("verify-log")
        .arg(dir)
        .args(["--pubkey", vkey])
        .output()
        .unwrap();
    assert!(matches!(out.status.code(), Some(0) | Some(1)), "{out:?}");
    out.status.success()
}

fn flip(path: &Path, at: usize) -> Vec<u8> {
    let orig = std::fs::read(path).unwrap();
    let mut b = orig.clone();
    let i = at.min(b.len() - 1);
    b[i] ^= 0x01;
    std::fs::write(path, &b).unwrap();
    orig
}

#[test]
fn log_is_served_proven_and_audited_offline() {
    let dir = tempfile::tempdir().unwrap();
    let (data, site) = (dir.path().join("data"), dir.path().join("site"));
    let (key, _) = keystore::load_or_create(&data, "localhost:8402/log").unwrap();
    let vkey = key.vkey();
    {
        let store = Store::open(&data).unwrap();
        let mut ledger = Ledger::open(&store, key.clone(), Dir::shared(&site).unwrap()).unwrap();
        conduct_tests::fill_log(&mut ledger, 600);
    }
    let log = site.join("log");
    assert!(verify_log(&log, &vkey), "a fresh log verifies");

    let s = Server::start_in(&data, &site, &["--public-url", "http://localhost:8402"]);
    let c = client();
    let cp = c.get(s.at("/log/checkpoint")).send().unwrap();
    assert_eq!(cp.status(), 200);
    assert_eq!(cp.headers()["cache-control"], "no-cache");
    let text = cp.text().unwrap();
    let signed =
        conduct_core::tlog::checkpoint::open_checkpoint(&text, &[Verifier::parse(&vkey).unwrap()])
            .unwrap();
    assert_eq!(signed.checkpoint.size, 600);
    let tile = c.get(s.at("/log/tile/0/001")).send().unwrap();
    assert_eq!(tile.status(), 200);
    assert!(tile.headers()["cache-control"]
        .to_str()
        .unwrap()
        .contains("immutable"));
    assert_eq!(tile.bytes().unwrap().len(), 256 * 32);
    let proof = c.get(s.at("/log/proof/599")).send().unwrap();
    assert_eq!(proof.status(), 200);
    let p = TlogProof::parse(&proof.text().unwrap()).unwrap();
    p.verify(
        b"{\"type\":\"test/v1\",\"i\":599}",
        &[Verifier::parse(&vkey).unwrap()],
    )
    .unwrap();
    assert!(p
        .verify(
            b"{\"type\":\"test/v1\",\"i\":598}",
            &[Verifier::parse(&vkey).unwrap()]
        )
        .is_err());
    assert_eq!(c.get(s.at("/log/proof/600")).send().unwrap().status(), 404);
    assert_eq!(c.get(s.at("/log/proof/01")).send().unwrap().status(), 400);
    // The same audit over HTTP, from the served files.
    let out = Command::new(conduct_bin())
        .args(["verify-log", &s.at("/log"), "--pubkey", &vkey])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("size 600"));
    drop(s);

    // One changed byte in any kind of file is caught.
    for (rel, at) in [
        ("tile/0/001", 4000),
        ("tile/0/002.p/88", 7),
        ("tile/1/000.p/2", 33),
        ("tile/entries/001", 500),
        ("checkpoint", 20),
    ] {
        let path = log.join(rel);
        let orig = flip(&path, at);
        assert!(
            !verify_log(&log, &vkey),
            "a flipped byte in {rel} was not caught"
        );
        std::fs::write(&path, orig).unwrap();
        assert!(verify_log(&log, &vkey));
    }
    // Another key never verifies.
    let other = conduct_core::signing::ServiceKey::from_seed(&[5u8; 32], "localhost:8402/log");
    assert!(!verify_log(&log, &other.vkey()));

    // A deleted tile (a crash before publishing) is rewritten when the service opens the log.
    std::fs::remove_file(log.join("tile/0/000")).unwrap();
    assert!(!verify_log(&log, &vkey));
    let s = Server::start_in(&data, &site, &["--public-url", "http://localhost:8402"]);
    assert!(
        verify_log(&log, &vkey),
        "the service repaired the log on start"
    );
    drop(s);
}
