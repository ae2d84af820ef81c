//! Nothing lost, nothing stuck, nothing leaked (issue 10), against the real binary:
//!
//! - a full data disk (a small tmpfs this test mounts): writes fail with 503 while `/health`
//!   says so, then resume by themselves once space is back, every acknowledged entry present;
//! - a full site disk: a committed report-in is acknowledged (201, `Conduct-Render: pending`),
//!   never a 503 that invites a duplicate; the pages catch up and the tree verifies;
//! - free caps survive a restart, and refused requests spend nothing;
//! - owner-only data files, the bound on distinct D symbols, the JSON-only content type, and
//!   a note or Y that XML cannot carry never breaking a feed.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use conduct_tests::{client, conduct_bin, trace, Server};
use serde_json::{json, Value};

/// A tmpfs mounted for the test, unmounted when dropped. `None` when this process may not
/// mount (not root): the caller says so and skips.
struct Tmpfs {
    path: PathBuf,
}

impl Tmpfs {
    fn mount(path: &Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(path).unwrap();
        let ok = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0755"),
                "tmpfs",
            ])
            .arg(path)
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Tmpfs {
            path: path.to_path_buf(),
        })
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.path).status();
    }
}

/// Fill the file system holding `dir` with a ballast file until it refuses more.
fn fill(dir: &Path) -> PathBuf {
    let path = dir.join("ballast");
    let mut f = std::fs::File::create(&path).unwrap();
    let chunk = vec![0u8; 64 * 1024];
    while f.write_all(&chunk).is_ok() {}
    // Fill the last partial block too.
    while f.write_all(&[0u8; 512]).is_ok() {}
    let _ = f.sync_all();
    path
}

fn config(dir: &Path, extra: &str) -> PathBuf {
    let cfg = dir.join("conduct.toml");
    std::fs::write(
        &cfg,
        format!("vow_daily_cap = 0\nreport_demo_daily_cap = 0\n{extra}"),
    )
    .unwrap();
    cfg
}

fn take_vow(c: &reqwest::blocking::Client, s: &Server, agent: &str) -> String {
    let r: Value = c
        .post(s.at("/vow"))
        .json(&json!({"text": "answer billing questions", "agent": agent, "cadence_hours": 24}))
        .send()
        .unwrap()
        .json()
        .unwrap();
    r["vow_id"].as_str().unwrap().to_owned()
}

fn report(
    c: &reqwest::blocking::Client,
    s: &Server,
    vow: &str,
    n: usize,
) -> reqwest::blocking::Response {
    let mut t = trace(n);
    t["vow_id"] = json!(vow);
    c.post(s.at("/vow/report/demo"))
        .header("prefer", "wait=30")
        .json(&t)
        .send()
        .unwrap()
}

fn health(c: &reqwest::blocking::Client, s: &Server) -> (u16, Value) {
    let r = c.get(s.at("/health")).send().unwrap();
    (r.status().as_u16(), r.json().unwrap())
}

/// Poll `/health` until it answers `code` (bounded).
fn await_health(c: &reqwest::blocking::Client, s: &Server, code: u16, within: Duration) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let (got, body) = health(c, s);
        if got == code {
            return body;
        }
        assert!(Instant::now() < deadline, "/health stayed {got}: {body}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn verify(what: &str, target: &Path, vkey: &str) -> String {
    let out = Command::new(conduct_bin())
        .arg(what)
        .arg(target)
        .args(["--pubkey", vkey])
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{what}: {text}");
    text
}

/// `verify-site` over a live tree, until it passes (10 s at most): the manifest follows the
/// pages within its debounce, so a tree read mid-write may be a second behind (MIRRORS.md).
fn verify_site_settled(site: &Path, key: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let out = Command::new(conduct_bin())
            .arg("verify-site")
            .arg(site)
            .args(["--pubkey", key])
            .output()
            .unwrap();
        if out.status.success() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "verify-site never passed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Chain length of a vow as its page says.
fn chain_length(c: &reqwest::blocking::Client, s: &Server, vow: &str) -> u64 {
    let v: Value = c
        .get(s.at(&format!("/vow/{vow}")))
        .send()
        .unwrap()
        .json()
        .unwrap();
    v["chain"]["length"].as_u64().unwrap()
}

fn am_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

#[test]
fn a_full_data_disk_fails_writes_honestly_and_they_resume_by_themselves() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let Some(_fs) = Tmpfs::mount(&data, "24m") else {
        assert!(!am_root(), "root could not mount a tmpfs");
        eprintln!("SKIPPED: mounting a tmpfs needs root");
        return;
    };
    let site = dir.path().join("site");
    let cfg = config(dir.path(), "");
    let args = ["--config", cfg.to_str().unwrap()];
    let mut s = Server::start_in(&data, &site, &args);
    let c = client();
    let vow = take_vow(&c, &s, "disk-full-bot");
    let mut acked = 0u64;
    for _ in 0..3 {
        assert_eq!(report(&c, &s, &vow, 10).status(), 201);
        acked += 1;
    }
    assert_eq!(health(&c, &s).0, 200);

    let ballast = fill(&data);
    // Writes now fail (the write-ahead log may still hold room for a few).
    let mut refused = None;
    for _ in 0..400 {
        let r = report(&c, &s, &vow, 10);
        match r.status().as_u16() {
            201 => acked += 1,
            503 => {
                refused = Some(r.json::<Value>().unwrap());
                break;
            }
            other => panic!(
                "a report-in on a full disk answered {other}: {}",
                r.text().unwrap()
            ),
        }
    }
    let refused = refused.expect("a full disk never refused a write");
    assert!(
        refused["detail"].as_str().unwrap().contains("full"),
        "{refused}"
    );
    let (code, h) = health(&c, &s);
    assert_eq!(code, 503, "{h}");
    assert_eq!(h["status"], "degraded", "{h}");
    assert_ne!(h["ledger"]["state"], "ok", "{h}");
    assert!(
        h["ledger"]["error"].as_str().unwrap().contains("full"),
        "{h}"
    );

    // Space comes back: the writer recovers by itself, with no write to prompt it.
    std::fs::remove_file(&ballast).unwrap();
    let h = await_health(&c, &s, 200, Duration::from_secs(15));
    assert_eq!(h["ledger"]["state"], "ok", "{h}");
    for _ in 0..3 {
        assert_eq!(report(&c, &s, &vow, 10).status(), 201);
        acked += 1;
    }
    // Every acknowledged entry is there, and nothing a 503 refused.
    let wait = Instant::now() + Duration::from_secs(10);
    while chain_length(&c, &s, &vow) != acked && Instant::now() < wait {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(chain_length(&c, &s, &vow), acked);
    let key = s.vkey();
    let _ = s.terminate();
    s = Server::start_in(&data, &site, &args).await_caught_up();
    assert_eq!(chain_length(&c, &s, &vow), acked);
    let audit = verify("verify-log", &site.join("log"), &key);
    assert!(audit.contains(&format!("{acked} entries")), "{audit}");
    // A restart on another port re-renders what names the public URL; the manifest follows
    // within its debounce.
    verify_site_settled(&site, &key);
}

#[test]
fn a_full_site_disk_still_acknowledges_committed_entries_and_the_pages_catch_up() {
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path().join("site");
    let Some(_fs) = Tmpfs::mount(&site, "48m") else {
        assert!(!am_root(), "root could not mount a tmpfs");
        eprintln!("SKIPPED: mounting a tmpfs needs root");
        return;
    };
    let data = dir.path().join("data");
    let cfg = config(dir.path(), "");
    let s = Server::start_in(&data, &site, &["--config", cfg.to_str().unwrap()]);
    let c = client();
    let vow = take_vow(&c, &s, "site-full-bot");
    assert_eq!(report(&c, &s, &vow, 10).status(), 201);
    let key = s.vkey();

    let ballast = fill(&site);
    let mut acked = 1u64;
    let mut pending = 0;
    for _ in 0..5 {
        let r = report(&c, &s, &vow, 10);
        assert_eq!(
            r.status(),
            201,
            "a committed entry must be acknowledged: {}",
            r.text().unwrap()
        );
        acked += 1;
        let state = r.headers()["conduct-render"].to_str().unwrap().to_owned();
        pending += usize::from(state.starts_with("pending"));
        let e: Value = r.json().unwrap();
        assert_eq!(e["seq"], acked, "{e}");
    }
    assert!(
        pending > 0,
        "the site disk was full, yet every render succeeded"
    );
    let (code, h) = health(&c, &s);
    assert_eq!(code, 503, "{h}");
    assert_eq!(h["site"]["state"], "behind", "{h}");

    std::fs::remove_file(&ballast).unwrap();
    let h = await_health(&c, &s, 200, Duration::from_secs(45));
    assert_eq!(h["site"]["state"], "ok", "{h}");
    assert_eq!(chain_length(&c, &s, &vow), acked);
    // The manifest follows the pages within its debounce; then the origin verifies as a
    // mirror would, with no temporary left behind by the failed writes.
    verify_site_settled(&site, &key);
    let audit = verify("verify-log", &site.join("log"), &key);
    assert!(audit.contains(&format!("{acked} entries")), "{audit}");
}

/// The resume points (ARCHITECTURE.md, "The write path of a report-in") are derived: when
/// their file cannot be opened the service still starts, and a report-in still gets its pages.
#[test]
fn a_resume_point_file_that_cannot_be_opened_does_not_stop_the_service() {
    let dir = tempfile::tempdir().unwrap();
    let (data, site) = (dir.path().join("data"), dir.path().join("site"));
    std::fs::create_dir_all(data.join("resume-points.sqlite3")).unwrap();
    let cfg = config(dir.path(), "");
    let s = Server::start_in(&data, &site, &["--config", cfg.to_str().unwrap()]);
    let c = client();
    let vow = take_vow(&c, &s, "no-points-bot");
    let r = report(&c, &s, &vow, 6);
    assert_eq!(r.status(), 201);
    assert_eq!(r.headers()["conduct-render"], "done");
    assert_eq!(chain_length(&c, &s, &vow), 1);
}

#[test]
fn free_caps_survive_a_restart_and_refused_calls_spend_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (data, site) = (dir.path().join("data"), dir.path().join("site"));
    let args = ["--demo-daily-cap", "2"];
    let mut s = Server::start_in(&data, &site, &args);
    let c = client();
    let demo = |s: &Server, body: &Value| {
        c.post(s.at("/demo/profile"))
            .json(body)
            .send()
            .unwrap()
            .status()
            .as_u16()
    };
    // Refused requests (bad input) are not counted.
    for _ in 0..5 {
        assert_eq!(
            demo(&s, &json!({"context_key": "monitored", "turns": []})),
            422
        );
    }
    assert_eq!(demo(&s, &trace(10)), 200);
    // Killed hard after the counters' flush (every second): the count survives.
    std::thread::sleep(Duration::from_millis(1500));
    s.kill9();
    s = Server::start_in(&data, &site, &args);
    assert_eq!(demo(&s, &trace(10)), 200);
    assert_eq!(demo(&s, &trace(10)), 429);
    // A graceful restart keeps it too, to the last call.
    let _ = s.terminate();
    let s = Server::start_in(&data, &site, &args);
    assert_eq!(demo(&s, &trace(10)), 429);
}

#[test]
fn small_ones_modes_symbols_content_types_and_xml() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), "");
    let mut s = Server::start_in(
        &dir.path().join("data"),
        &dir.path().join("site"),
        &["--config", cfg.to_str().unwrap(), "--demo-daily-cap", "0"],
    );
    let c = client();

    // Owner-only data: the directory and every database file.
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&s.data), 0o700);
    let vow = take_vow(&c, &s, "xml-bot");
    let mut donated = trace(6);
    donated["vow_id"] = json!(vow);
    donated["donate_trace"] = json!(true);
    assert_eq!(
        c.post(s.at("/vow/report/demo"))
            .header("prefer", "wait=30")
            .json(&donated)
            .send()
            .unwrap()
            .status(),
        201
    );
    for entry in std::fs::read_dir(&s.data).unwrap() {
        let p = entry.unwrap().path();
        if p.to_string_lossy().contains(".sqlite3") {
            assert_eq!(mode(&p), 0o600, "{}", p.display());
        }
    }
    assert_eq!(mode(&s.data.join("keys/ed25519.seed")), 0o600);

    // The work one request can cost is bounded: 10,000 distinct actions are refused at once.
    let mut t = trace(10_000);
    for (i, turn) in t["turns"].as_array_mut().unwrap().iter_mut().enumerate() {
        turn["D"] = json!(format!("action {i}"));
    }
    let started = Instant::now();
    let r = c.post(s.at("/demo/profile")).json(&t).send().unwrap();
    assert_eq!(r.status(), 422);
    let p: Value = r.json().unwrap();
    assert_eq!(p["errors"][0]["pointer"], "/turns/256/D", "{p}");
    assert!(
        p["errors"][0]["detail"].as_str().unwrap().contains("256"),
        "{p}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );

    // Only JSON bodies: a cross-site form cannot post to the free routes.
    for ct in [
        "application/x-www-form-urlencoded",
        "text/plain",
        "multipart/form-data; boundary=x",
    ] {
        let r = c
            .post(s.at("/vow"))
            .header("content-type", ct)
            .body(r#"{"text":"x","agent":"a","cadence_hours":24}"#)
            .send()
            .unwrap();
        assert_eq!(r.status(), 415, "{ct}");
        assert_eq!(
            r.headers()["content-type"].to_str().unwrap(),
            "application/problem+json"
        );
    }

    // A note XML cannot carry is refused; a declared Y with such characters never breaks the
    // vow's Atom feed.
    let mut bad_note = trace(6);
    bad_note["vow_id"] = json!(vow);
    bad_note["note"] = json!("fine\u{FFFF}");
    let r = c
        .post(s.at("/vow/report/demo"))
        .header("prefer", "wait=30")
        .json(&bad_note)
        .send()
        .unwrap();
    assert_eq!(r.status(), 422);
    let mut odd_y = trace(6);
    odd_y["vow_id"] = json!(vow);
    for turn in odd_y["turns"].as_array_mut().unwrap() {
        turn["Y"] = json!("answer \u{FFFE}billing\u{1} questions");
    }
    assert_eq!(
        c.post(s.at("/vow/report/demo"))
            .header("prefer", "wait=30")
            .json(&odd_y)
            .send()
            .unwrap()
            .status(),
        201
    );
    let feed = c
        .get(s.at(&format!("/vow/{vow}/feed.atom")))
        .send()
        .unwrap()
        .text()
        .unwrap();
    let feed_file = dir.path().join("feed.atom");
    std::fs::write(&feed_file, &feed).unwrap();
    let parsed = Command::new(conduct_tests::python())
        .args([
            "-c",
            "import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1]); print('well-formed')",
        ])
        .arg(&feed_file)
        .output()
        .unwrap();
    assert!(
        parsed.status.success(),
        "the feed is not well-formed XML: {}",
        String::from_utf8_lossy(&parsed.stderr)
    );

    // After a clean stop (its marks written), everything the data directory holds is
    // owner-only: every directory and every file, marks included. The spares are tree files
    // in waiting (public bytes, with the tree's 0644 they keep once exchanged into it); their
    // owner-only directory is what keeps them from others.
    s.terminate();
    let mut dirs = vec![s.data.clone()];
    let mut files = 0;
    while let Some(d) = dirs.pop() {
        assert_eq!(mode(&d) & 0o077, 0, "{}", d.display());
        for entry in std::fs::read_dir(&d).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.parent() != Some(&s.data.join("spares")) {
                assert_eq!(mode(&p) & 0o077, 0, "{} is not owner-only", p.display());
                files += 1;
            }
        }
    }
    assert!(s.data.join("site-clean").exists() && s.data.join("manifest-closed").exists());
    assert!(files >= 8, "{files} files checked");
}
