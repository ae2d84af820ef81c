//! `conduct verify-site`: a mirror of the signed tree (an rsync copy, or the running server's
//! URL) verifies offline against the pinned key, and any changed byte in any file, a deleted or
//! extra file, a dotfile, or an expired manifest is caught.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use conduct_tests::{client, conduct_bin, trace, Server};
use conduct_verify::verify_site_at;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// Run `conduct verify-site LOCATION --pubkey VKEY`: (success, stdout).
fn verify_site_cli(location: &str, vkey: &str) -> (bool, String) {
    let out = Command::new(conduct_bin())
        .args(["verify-site", location, "--pubkey", vkey])
        .output()
        .expect("run conduct verify-site");
    assert!(
        matches!(out.status.code(), Some(0) | Some(1)),
        "verify-site crashed: {out:?}"
    );
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// Every file under `dir`, as paths relative to it with `/` separators, sorted.
fn files_under(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).expect("read_dir") {
            let e = e.expect("dir entry");
            let ft = e.file_type().expect("file type");
            if ft.is_dir() {
                walk(root, &e.path(), out);
            } else {
                let rel = e.path().strip_prefix(root).expect("inside").to_owned();
                out.push(rel.to_str().expect("utf-8").replace('\\', "/"));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// Wait until the served manifest lists each of `paths` with the sha256 the file has on disk.
fn wait_for_manifest(s: &Server, paths: &[String]) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        // Each path's entry, found through the manifest's bins.
        let settled = paths.iter().all(|p| {
            std::fs::read(s.site.join(p)).is_ok_and(|b| {
                s.manifest_entry(p)
                    .is_some_and(|e| e["sha256"].as_str() == Some(&hex::encode(Sha256::digest(&b))))
            })
        });
        if settled {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the manifest did not come to cover {paths:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn rsync(from: &Path, to: &Path) {
    let ok = Command::new("rsync").arg("--version").output();
    assert!(
        ok.is_ok_and(|o| o.status.success()),
        "rsync is not on PATH: run the project's test command (tests/run.sh), which installs it \
         from Debian"
    );
    let st = Command::new("rsync")
        .arg("-a")
        .arg(format!("{}/", from.display()))
        .arg(format!("{}/", to.display()))
        .status()
        .expect("run rsync");
    assert!(st.success(), "rsync failed: {st}");
}

/// Flip one bit of the byte in the middle of `path`; returns the original bytes.
fn flip(path: &Path) -> Vec<u8> {
    let orig = std::fs::read(path).expect("read");
    let mut b = orig.clone();
    let i = b.len() / 2;
    b[i] ^= 0x01;
    std::fs::write(path, &b).expect("write");
    orig
}

#[test]
fn a_mirror_verifies_and_every_change_is_caught() {
    let s = Server::start(&[]);
    let c = client();
    let vkey = c
        .get(s.at("/pubkey"))
        .send()
        .expect("GET /pubkey")
        .json::<Value>()
        .expect("pubkey JSON")["vkey"]
        .as_str()
        .expect("vkey")
        .to_owned();
    let vows: Vec<String> = (0..2)
        .map(|i| {
            let r = c
                .post(s.at("/vow"))
                .json(
                    &json!({"text": format!("keep promise {i}"), "agent": format!("agent-{i}"),
                              "cadence_hours": 24}),
                )
                .send()
                .expect("POST /vow");
            assert_eq!(r.status(), 201, "POST /vow");
            r.json::<Value>().expect("vow JSON")["vow_id"]
                .as_str()
                .expect("vow_id")
                .to_owned()
        })
        .collect();
    for i in 0..40 {
        let mut body = trace(6 + i % 5);
        body["vow_id"] = json!(vows[0]);
        let r = c
            .post(s.at("/vow/report/demo"))
            .header("prefer", "wait=30")
            .json(&body)
            .send()
            .expect("POST /vow/report/demo");
        assert_eq!(r.status(), 201, "report-in {i}: {:?}", r.text());
    }
    let chain_page = format!("vow/{}/chain/0.json", vows[0]);
    let mut settle: Vec<String> = vows.iter().map(|v| format!("vow/{v}.json")).collect();
    // The page is not listed: its chain head, which is, pins it.
    settle.push(format!("vow/{}/chain.json", vows[0]));
    wait_for_manifest(&s, &settle);

    // An rsync copy verifies with the binary.
    let tmp = tempfile::tempdir().expect("tempdir");
    let copy: PathBuf = tmp.path().join("mirror");
    rsync(&s.site, &copy);
    let copy_s = copy.to_str().expect("utf-8").to_owned();
    let (ok, out) = verify_site_cli(&copy_s, &vkey);
    assert!(ok && out.starts_with("OK: "), "{out}");
    assert!(out.contains("no unlisted files"), "{out}");
    let audit = verify_site_at(&copy_s, &vkey).expect("the copy verifies in-process");
    assert!(audit.log.entries >= 40, "{audit}");

    // So does the running server, over HTTP, saying what it could not check.
    let (ok, out) = verify_site_cli(&s.url, &vkey);
    assert!(ok && out.starts_with("OK: "), "{out}");
    assert!(out.contains("unlisted files NOT checked"), "{out}");
    assert!(verify_site_at(&format!("{}/", s.url), &vkey).is_ok());

    // Another key never verifies.
    let other = conduct_core::signing::ServiceKey::from_seed(&[5u8; 32], "localhost:8402/log");
    let (ok, out) = verify_site_cli(&copy_s, &other.vkey());
    assert!(!ok && out.starts_with("FAIL: manifest.json: "), "{out}");

    // One changed byte in any file of the copy is caught.
    let files = files_under(&copy);
    for must in [
        "manifest.json",
        "index.json",
        chain_page.as_str(),
        "log/checkpoint",
        "log/tile/0/000.p/",
        "log/tile/entries/000.p/",
    ] {
        assert!(
            files.iter().any(|f| f.starts_with(must)),
            "the copy has no {must}: {files:?}"
        );
    }
    for rel in &files {
        let path = copy.join(rel);
        if std::fs::metadata(&path).expect("stat").len() == 0 {
            continue; // No byte to change.
        }
        let orig = flip(&path);
        let r = verify_site_at(&copy_s, &vkey);
        std::fs::write(&path, orig).expect("restore");
        let e = match r {
            Ok(a) => panic!("a flipped byte in {rel} was not caught ({a})"),
            Err(e) => e.to_string(),
        };
        if !rel.starts_with("log/") {
            assert!(e.starts_with(&format!("{rel}: ")), "{rel}: {e}");
        }
    }
    let empty: Vec<&String> = files
        .iter()
        .filter(|f| std::fs::metadata(copy.join(f)).is_ok_and(|m| m.len() == 0))
        .collect();
    assert!(empty.is_empty(), "empty files in the tree: {empty:?}");
    verify_site_at(&copy_s, &vkey).expect("the restored copy verifies");

    // A deleted listed file, an extra file and a dotfile are each caught.
    let page = copy.join(&chain_page);
    let orig = std::fs::read(&page).expect("read");
    std::fs::remove_file(&page).expect("rm");
    let e = verify_site_at(&copy_s, &vkey)
        .expect_err("deleted file")
        .to_string();
    assert!(e.starts_with(&format!("{chain_page}: ")), "{e}");
    std::fs::write(&page, orig).expect("restore");
    for (extra, want) in [
        ("vow/extra.html", "vow/extra.html: not listed"),
        ("notes.txt", "notes.txt: not listed"),
        (".DS_Store", ".DS_Store: a dotfile"),
        ("vow/.rsync-tmp", "vow/.rsync-tmp: a dotfile"),
        ("log/.checkpoint.tmp", "log/.checkpoint.tmp: a dotfile"),
    ] {
        let p = copy.join(extra);
        std::fs::write(&p, b"unsigned").expect("write");
        let (ok, out) = verify_site_cli(&copy_s, &vkey);
        std::fs::remove_file(&p).expect("rm");
        assert!(!ok, "{extra} was not caught: {out}");
        assert!(out.starts_with(&format!("FAIL: {want}")), "{out}");
    }
    verify_site_at(&copy_s, &vkey).expect("the cleaned copy verifies");

    // An expired manifest is caught. Re-sign the copy's manifest with the service key (from
    // the data directory); with a future `expires` it verifies, with a past one it does not.
    let (key, created) =
        conduct_indexer::keystore::load_or_create(&s.data, "unused").expect("the service key");
    assert!(!created, "the service key exists");
    let manifest_path = copy.join("manifest.json");
    let resign = |as_of: u64, expires: u64| {
        let mut m: serde_json::Map<String, Value> =
            serde_json::from_slice(&std::fs::read(&manifest_path).expect("read")).expect("JSON");
        m.insert("as_of".into(), json!(conduct_core::time::rfc3339(as_of)));
        m.insert(
            "expires".into(),
            json!(conduct_core::time::rfc3339(expires)),
        );
        key.sign_object(&mut m).expect("sign");
        std::fs::write(&manifest_path, serde_json::to_vec(&m).expect("bytes")).expect("write");
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    resign(now - 3600, now + 3600);
    verify_site_at(&copy_s, &vkey).expect("a re-signed, current manifest verifies");
    resign(now - 10 * 86_400, now - 3 * 86_400);
    let (ok, out) = verify_site_cli(&copy_s, &vkey);
    assert!(!ok, "an expired manifest was not caught: {out}");
    assert!(
        out.starts_with("FAIL: manifest.json: expired 3d 0h ago"),
        "{out}"
    );
    assert!(out.contains("signed 10d 0h ago"), "{out}");
}

/// `verify-site --settle` on the service's own live directory and on its URL right after a
/// burst of report-ins, while the manifest is still a second behind the pages: every run is
/// one whole check against one manifest, and passes (a page newer than its manifest waits for
/// the next manifest instead of failing; README, "Mirror the site").
#[test]
fn a_live_tree_verifies_with_settle_right_after_writes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = dir.path().join("conduct.toml");
    std::fs::write(&cfg, "report_demo_daily_cap = 0\n").expect("conduct.toml");
    let cfg = cfg.to_string_lossy().into_owned();
    let s = Server::start(&["--config", cfg.as_str()]);
    let c = client();
    let vkey = s.vkey();
    let vow: Value = c
        .post(s.at("/vow"))
        .json(&json!({"text": "live", "agent": "live-bot", "cadence_hours": 24}))
        .send()
        .unwrap()
        .json()
        .unwrap();
    let id = vow["vow_id"].as_str().unwrap().to_owned();
    let site = s.site.to_string_lossy().into_owned();
    for (round, location) in [site.as_str(), s.url.as_str(), site.as_str()]
        .into_iter()
        .enumerate()
    {
        for i in 0..10 {
            let mut body = trace(6 + (round * 10 + i) % 5);
            body["vow_id"] = json!(id);
            let r = c
                .post(s.at("/vow/report/demo"))
                .header("prefer", "wait=30")
                .json(&body)
                .send()
                .unwrap();
            assert_eq!(r.status().as_u16(), 201, "{}", r.text().unwrap_or_default());
        }
        let out = Command::new(conduct_bin())
            .args(["verify-site", location, "--pubkey", &vkey, "--settle", "10"])
            .output()
            .expect("run conduct verify-site");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.starts_with("OK: "),
            "verify-site --settle on the live {location} (round {round}): {stdout}"
        );
    }
}
