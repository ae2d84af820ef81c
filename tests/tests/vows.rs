//! The vow ledger end to end: `tests/py/vow_e2e.py` (a real wallet signer, a model stand-in,
//! an independent verifier), the free caps, and a server killed with SIGKILL at random
//! moments under hundreds of concurrent report-ins.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use conduct_tests::{client, conduct_bin, run_py, trace, Server};
use serde_json::{json, Value};
use sha2::Digest;

#[test]
fn vow_ledger_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let bin = conduct_bin();
    let (ok, stdout, stderr) = run_py(
        "vow_e2e.py",
        &[
            "--conduct".as_ref(),
            bin.as_os_str(),
            "--workdir".as_ref(),
            dir.path().as_os_str(),
        ],
    );
    println!("{stdout}");
    assert!(
        ok && stdout.contains(" 0 failed"),
        "vow end-to-end checks failed:\n{stdout}\n{stderr}"
    );
    for must in [
        "a wallet-signed vow: 201, not sandbox, wallet recorded",
        "a sealed vow publishes only sha256(text)",
        "POST /vow refuses sealed without a signature",
        "POST /vow refuses sealed with a signature that does not verify",
        "a signature by another wallet: 201, sandbox for good, the reason recorded",
        "POST /vow refuses an agent name with a bidi control",
        "POST /vow refuses a form-encoded body",
        "a wallet-signed vow refuses an unsigned free report-in",
        "a replayed report-in signature is refused",
        "a report-in signature without 0x is accepted",
        "a report-in signature with v as 0/1 is accepted",
        "a sandbox vow takes anyone's report-in and says so",
        "report-in refuses an unknown vow",
        "report-in refuses a note of 1001 characters",
        "report-in refuses an invalid trace",
        "refused writes changed nothing",
        "M and D are in none of",
        "the reading comes from the fallback model after the primary failed",
        "the reading compares the last note (claims steadiness) with the numbers",
        "a passed window boundary re-renders the vow page",
        "independent audit: checkpoint signature, root,",
        "conduct verify-log checks every vow chain",
    ] {
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with("ok:   ") && l.contains(must)),
            "missing check: {must}\n{stdout}"
        );
    }
}

#[test]
fn free_vow_cap_is_twenty_per_ip_per_day() {
    let s = Server::start(&[]);
    let c = client();
    for i in 0..20 {
        let r = c
            .post(s.at("/vow"))
            .json(&json!({"text": format!("vow {i}"), "agent": "capped", "cadence_hours": 24}))
            .send()
            .unwrap();
        assert_eq!(r.status(), 201, "vow {i}");
    }
    let r = c
        .post(s.at("/vow"))
        .json(&json!({"text": "one more", "agent": "capped", "cadence_hours": 24}))
        .send()
        .unwrap();
    assert_eq!(r.status(), 429);
    assert!(r.headers().get("retry-after").is_some());
    let p: Value = r.json().unwrap();
    assert!(p["detail"].as_str().unwrap().contains("20 calls"), "{p}");
    assert_eq!(
        c.get(s.at("/vows"))
            .send()
            .unwrap()
            .json::<Value>()
            .unwrap()["count"],
        20
    );
}

/// A report-in is answered at its commit (`Conduct-Render: queued`, the signed entry with its
/// log index) and its vow's pages catch up after; `Prefer: wait=` gets the pages written
/// before the answer (`done`, `Preference-Applied`). VOWS.md, "Durability and verification".
#[test]
fn a_report_in_is_answered_at_its_commit_and_its_pages_catch_up() {
    let s = Server::start(&[]);
    let c = client();
    let vow: Value = c
        .post(s.at("/vow"))
        .json(
            &json!({"text": "answer billing questions", "agent": "ack-agent", "cadence_hours": 24}),
        )
        .send()
        .unwrap()
        .json()
        .unwrap();
    let id = vow["vow_id"].as_str().unwrap().to_owned();
    let r = c
        .post(s.at("/vow/report/demo"))
        .json(&report(&id, 12))
        .send()
        .unwrap();
    assert_eq!(r.status(), 201);
    assert_eq!(r.headers()["conduct-render"], "queued");
    assert!(r.headers().get("preference-applied").is_none());
    let entry: Value = r.json().unwrap();
    assert_eq!(entry["seq"], 1);
    assert!(entry["log_index"].is_u64(), "{entry}");
    assert!(entry["signature"].is_string(), "{entry}");
    // The vow's signed chain catches up (polled, bounded).
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let records = full_chain(&c, &s, &id);
        // The vow's own record, then the report-in.
        if records.len() == 2 {
            assert_eq!(records[1]["log_index"], entry["log_index"]);
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the vow's chain did not catch up: {records:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Asked to wait: the pages are written before the answer.
    let r = c
        .post(s.at("/vow/report/demo"))
        .header("prefer", "wait=30")
        .json(&report(&id, 13))
        .send()
        .unwrap();
    assert_eq!(r.status(), 201);
    assert_eq!(r.headers()["conduct-render"], "done");
    assert_eq!(r.headers()["preference-applied"], "wait=30");
    assert_eq!(full_chain(&c, &s, &id).len(), 3);
}

fn report(vow_id: &str, n: usize) -> Value {
    let mut t = trace(n);
    t["vow_id"] = json!(vow_id);
    t
}

/// A vow's whole chain as served: the last page by the head's pin, each page before it by its
/// successor's `prev_page_sha256` (each page's bytes checked against the hash that pins it),
/// their records in order, then the tail.
fn full_chain(c: &reqwest::blocking::Client, server: &Server, vow: &str) -> Vec<Value> {
    let head: Value = c
        .get(server.at(&format!("/vow/{vow}/chain")))
        .send()
        .unwrap()
        .json()
        .unwrap();
    let n = head["full_pages"].as_u64().unwrap();
    let mut pin = head["last_page"]["sha256"].as_str().map(str::to_owned);
    let mut pages = Vec::new();
    for k in (0..n).rev() {
        let bytes = c
            .get(server.at(&format!("/vow/{vow}/chain/{k}")))
            .send()
            .unwrap()
            .bytes()
            .unwrap();
        let sha = hex::encode(sha2::Sha256::digest(&bytes));
        assert_eq!(Some(sha), pin, "page {k}'s pin");
        let page: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(page["page"], k);
        pin = page["prev_page_sha256"].as_str().map(str::to_owned);
        pages.push(page);
    }
    assert_eq!(pin, None, "page 0 links to nothing");
    let mut records = Vec::new();
    for page in pages.iter().rev() {
        records.extend(page["records"].as_array().unwrap().iter().cloned());
    }
    records.extend(head["tail"].as_array().unwrap().iter().cloned());
    records
}

fn verify_log(site: &std::path::Path, vkey: &str) -> String {
    let out = std::process::Command::new(conduct_bin())
        .arg("verify-log")
        .arg(site.join("log"))
        .args(["--pubkey", vkey])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "verify-log: {stdout}");
    stdout
}

/// `conduct verify-site` on the restarted origin passes once its manifest has been re-signed
/// (at most a second after the last write; polled, bounded).
fn verify_site(site: &std::path::Path, vkey: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    loop {
        let out = std::process::Command::new(conduct_bin())
            .arg("verify-site")
            .arg(site)
            .args(["--pubkey", vkey])
            .output()
            .unwrap();
        if out.status.success() {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "verify-site on the restarted origin: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Kill -9 at random moments under 200 concurrent report-ins; after each restart every
/// acknowledged entry is present byte for byte, nothing is partial, the temporaries a crash
/// leaves are gone, the restarted origin's tree passes `verify-site`, and the log and every
/// chain verify.
#[test]
fn kill_9_under_concurrent_report_ins_loses_no_acknowledged_entry() {
    let dir = tempfile::tempdir().unwrap();
    let (data, site) = (dir.path().join("data"), dir.path().join("site"));
    let cfg = dir.path().join("conduct.toml");
    // 200 concurrent clients from one address: lift the per-IP connection cap.
    std::fs::write(
        &cfg,
        "vow_daily_cap = 0\nreport_demo_daily_cap = 0\nmax_connections_per_ip = 0\n",
    )
    .unwrap();
    let cfg_arg = cfg.to_str().unwrap().to_owned();
    let args = ["--config", cfg_arg.as_str()];
    let mut server = Server::start_in(&data, &site, &args);
    let c = client();
    let vows: Vec<String> = (0..4)
        .map(|i| {
            let r: Value = c
                .post(server.at("/vow"))
                .json(&json!({"text": format!("purpose {i}"), "agent": format!("agent-{i}"), "cadence_hours": 24}))
                .send()
                .unwrap()
                .json()
                .unwrap();
            r["vow_id"].as_str().unwrap().to_owned()
        })
        .collect();
    let vkey = server.vkey();
    // (vow, seq) -> acknowledged entry.
    let acked: Arc<Mutex<HashMap<(String, u64), Value>>> = Arc::default();
    let mut rng = 0x2545_F491_4F6C_DD1Du64;
    for round in 0..3 {
        let stop = Arc::new(AtomicBool::new(false));
        let url = server.at("/vow/report/demo");
        let workers: Vec<_> = (0..200)
            .map(|w| {
                let (url, stop, acked) = (url.clone(), stop.clone(), acked.clone());
                let body = report(&vows[w % vows.len()], 6 + w % 5);
                std::thread::spawn(move || {
                    let c = reqwest::blocking::Client::builder()
                        .timeout(Duration::from_secs(20))
                        .build()
                        .unwrap();
                    while !stop.load(Ordering::Relaxed) {
                        let r = match c.post(&url).json(&body).send() {
                            Ok(r) => r,
                            Err(e) => {
                                if !stop.load(Ordering::Relaxed) {
                                    eprintln!("worker {w}: {e}");
                                }
                                break;
                            }
                        };
                        if r.status() == 503 && r.headers().contains_key("retry-after") {
                            let text = r.text().unwrap_or_default();
                            if text.contains("integration-behind") {
                                // Pushed back (nothing recorded): the pages are catching up.
                                std::thread::sleep(Duration::from_millis(50));
                                continue;
                            }
                            if !stop.load(Ordering::Relaxed) {
                                eprintln!("worker {w}: 503 {text}");
                            }
                            break;
                        }
                        if r.status() != 201 {
                            if !stop.load(Ordering::Relaxed) {
                                eprintln!(
                                    "worker {w}: {} {}",
                                    r.status(),
                                    r.text().unwrap_or_default()
                                );
                            }
                            break;
                        }
                        let e = match r.json::<Value>() {
                            Ok(e) => e,
                            Err(e) => {
                                eprintln!("worker {w}: body {e}");
                                break;
                            }
                        };
                        let key = (
                            e["vow_id"].as_str().unwrap().to_owned(),
                            e["seq"].as_u64().unwrap(),
                        );
                        acked.lock().unwrap().insert(key, e);
                    }
                })
            })
            .collect();
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        std::thread::sleep(Duration::from_millis(400 + rng % 1200));
        // Stop first (only the workers' next requests; about 200 are in flight at the kill),
        // so the broken connections of the kill are not reported as failures.
        stop.store(true, Ordering::Relaxed);
        server.kill9();
        for w in workers {
            w.join().unwrap();
        }
        let n = acked.lock().unwrap().len();
        eprintln!("round {round}: {n} report-ins acknowledged so far");
        // A crash mid-write can leave temporaries inside the served tree (the write was in
        // flight): plant some where the writers put theirs.
        let tmp_names = [
            format!("vow/.conduct-tmp.{}.json.4242.pub", vows[0]),
            "log/tile/entries/.conduct-tmp.000.4242".to_owned(),
            ".conduct-tmp.manifest.json.4242.manifest".to_owned(),
        ];
        for name in &tmp_names {
            std::fs::write(site.join(name), b"half a file").unwrap();
        }
        server = Server::start_in(&data, &site, &args).await_caught_up();
        for name in &tmp_names {
            assert!(!site.join(name).exists(), "{name} survived the restart");
        }
        // The restarted origin's own tree is a valid mirror: signed manifest, every file.
        verify_site(&site, &vkey);
        // Every acknowledged entry is in its chain, byte for byte (as canonical JSON).
        let acked_now = acked.lock().unwrap().clone();
        for v in &vows {
            let records = full_chain(&c, &server, v);
            for ((vid, seq), e) in acked_now.iter().filter(|((vid, _), _)| vid == v) {
                let got = &records[*seq as usize];
                assert_eq!(
                    got, e,
                    "acknowledged entry {vid}#{seq} differs or is missing"
                );
            }
        }
        let audit = verify_log(&site, &vkey);
        assert!(audit.contains("4 vow chains"), "{audit}");
    }
    assert!(
        acked.lock().unwrap().len() > 100,
        "too few report-ins to mean anything"
    );
}

/// The size in the site's checkpoint (its second line).
fn checkpoint_size(site: &std::path::Path) -> u64 {
    std::fs::read_to_string(site.join("log/checkpoint"))
        .ok()
        .and_then(|t| t.lines().nth(1).and_then(|l| l.parse().ok()))
        .unwrap_or(0)
}

/// Await the integration mark covering the published log (and at least `least` records): it
/// moves every two seconds once the pages are written. Returns the mark's file.
fn await_mark(data: &std::path::Path, site: &std::path::Path, least: u64) -> std::path::PathBuf {
    let mark = data.join("site-integrated.json");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let size = mark_size(data);
        if size.is_some_and(|s| s >= checkpoint_size(site) && s >= least) {
            return mark;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the mark never covered the log: {size:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The modification instant of each vow's signed page.
fn page_times(site: &std::path::Path) -> Vec<(String, std::time::SystemTime)> {
    let mut pages: Vec<_> = std::fs::read_dir(site.join("vow"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
        .map(|e| {
            let t = e.metadata().unwrap().modified().unwrap();
            (e.file_name().to_string_lossy().into_owned(), t)
        })
        .collect();
    pages.sort();
    pages
}

/// Take the sandbox vow "purpose `i`" for agent `agent`; its id.
fn take_vow(c: &reqwest::blocking::Client, server: &Server, i: usize, agent: &str) -> String {
    let r: Value = c
        .post(server.at("/vow"))
        .json(&json!({"text": format!("purpose {i}"), "agent": agent, "cadence_hours": 24}))
        .send()
        .unwrap()
        .json()
        .unwrap();
    r["vow_id"].as_str().unwrap().to_owned()
}

/// A report-in into `vow` answered once its pages are written (`Prefer: wait=10`).
fn report_in_waiting(
    c: &reqwest::blocking::Client,
    server: &Server,
    vow: &str,
) -> reqwest::blocking::Response {
    c.post(server.at("/vow/report/demo"))
        .header("Prefer", "wait=10")
        .json(&report(vow, 6))
        .send()
        .unwrap()
}

/// The log size of the newest integration mark in `data`, if any.
fn mark_size(data: &std::path::Path) -> Option<u64> {
    std::fs::read(data.join("site-integrated.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .and_then(|m| m["marks"][0]["mark"]["log_size"].as_u64())
}

/// What a power cut can leave of a vow's pages, which are replaced through the pool of spare
/// inodes (ARCHITECTURE.md, write path step 6): a page exchanged after the last integration
/// mark may hold an older file's bytes (another vow's signed page, an older page of its own,
/// anything). The restart renders that vow again and rewrites each such page, so the tree
/// verifies and the vow's pages are its own; a vow the mark covers is not rendered again.
#[test]
fn pages_left_holding_other_bytes_after_the_mark_are_rewritten_by_the_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (data, site) = (dir.path().join("data"), dir.path().join("site"));
    // One public URL for every start (the pages name it: a mark is taken only under it).
    let url = ["--public-url", "http://localhost:8402"];
    let server = Server::start_in(&data, &site, &url);
    let c = client();
    let take = |server: &Server, i: usize| take_vow(&c, server, i, &format!("cut-{i}"));
    let report_in = |server: &Server, vow: &str| {
        let r = report_in_waiting(&c, server, vow);
        assert_eq!(r.status(), 201);
        assert_eq!(r.headers()["conduct-render"], "done");
    };
    let modified = |rel: &str| {
        std::fs::metadata(site.join(rel))
            .and_then(|m| m.modified())
            .ok()
    };
    let (a, b, quiet) = (take(&server, 0), take(&server, 1), take(&server, 2));
    for v in [&a, &b, &quiet] {
        report_in(&server, v);
    }
    await_mark(&data, &site, 6);
    let own_older = std::fs::read(site.join(format!("vow/{a}/chain.json"))).unwrap();
    // Whether the manifest on disk was signed in a second after a kept mark's `listed_after`
    // (a restart takes only such a mark).
    let listed_after_a_mark = || {
        let read = |p: std::path::PathBuf| {
            std::fs::read(p)
                .ok()
                .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        };
        let (Some(marks), Some(manifest)) = (
            read(data.join("site-integrated.json")),
            read(site.join("manifest.json")),
        ) else {
            return false;
        };
        let signed = manifest["version"].as_u64().unwrap_or(0);
        marks["marks"]
            .as_array()
            .is_some_and(|m| m.iter().any(|k| k["listed_after"].as_u64() < Some(signed)))
    };
    // Kill -9 right after a report-in into a, its pages written, while the last mark does
    // not cover it but a manifest signed after a mark lists the tree: a report-in into b
    // brings a manifest round (within a second), taken again until one is signed in a later
    // second than a mark.
    // The restart that reads the tree must take a mark for the check to mean anything: one
    // that took none (a premise raced) re-renders everything, and the scenario runs again.
    let quiet_page = format!("vow/{quiet}.json");
    let mut server = server;
    let mut attempts = 0;
    loop {
        attempts += 1;
        assert!(
            attempts <= 5,
            "no restart took a mark that did not cover a's report-in"
        );
        let mut cut = false;
        for _ in 0..5 {
            let deadline = std::time::Instant::now() + Duration::from_secs(30);
            while !listed_after_a_mark() {
                assert!(
                    std::time::Instant::now() < deadline,
                    "no manifest after a mark"
                );
                report_in(&server, &b);
                std::thread::sleep(Duration::from_millis(300));
            }
            report_in(&server, &a);
            let size = checkpoint_size(&site);
            server.kill9();
            // Both premises are read again after the kill: marks written between the check
            // and the kill may have replaced the one the manifest was signed after.
            if mark_size(&data).is_some_and(|m| m < size) && listed_after_a_mark() {
                cut = true;
                break;
            }
            server = Server::start_in(&data, &site, &url).await_caught_up();
        }
        assert!(cut, "every kill came after a mark covered the report-in, or left no mark the manifest was signed after");
        let other = std::fs::read(site.join(format!("vow/{b}.json"))).unwrap();
        std::fs::write(site.join(format!("vow/{a}.json")), &other).unwrap();
        std::fs::write(site.join(format!("vow/{a}/chain.json")), &own_older).unwrap();
        std::fs::write(
            site.join(format!("vow/{a}.html")),
            b"<p>bytes of some other file</p>",
        )
        .unwrap();
        let quiet_before = modified(&quiet_page);
        let said = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        server = Server::start_env("serve", &data, &site, &url, &[], Some(said.clone()))
            .await_caught_up();
        verify_site(&site, &server.vkey());
        let took_mark = said
            .lock()
            .unwrap()
            .contains("integration mark read mark=Some");
        if !took_mark {
            continue;
        }
        assert_eq!(
            modified(&quiet_page),
            quiet_before,
            "a vow the mark covers was rendered again"
        );
        break;
    }
    let read = |rel: String| -> Value {
        serde_json::from_slice(&std::fs::read(site.join(rel)).unwrap()).unwrap()
    };
    let (page, chain) = (
        read(format!("vow/{a}.json")),
        read(format!("vow/{a}/chain.json")),
    );
    assert_eq!(page["vow_id"], a.as_str());
    assert_eq!(chain["length"], page["chain"]["length"]);
    assert!(
        chain["length"].as_u64() >= Some(2),
        "a's report-ins: {}",
        chain["length"]
    );
    server.terminate();
}

/// A restart over a tree the previous run had integrated (its mark, `site-integrated.json`,
/// covers the log) re-renders no vow, though its clock moved an hour (a re-render would change
/// every page's instant); the same restart without the mark, or under another public URL (the
/// pages name it), re-renders every vow.
#[test]
fn a_restart_re_renders_only_what_changed_after_the_integration_mark() {
    let dir = tempfile::tempdir().unwrap();
    let (data, site) = (dir.path().join("data"), dir.path().join("site"));
    let url = ["--public-url", "http://localhost:8402"];
    let mut server = Server::start_in(&data, &site, &url);
    let c = client();
    for i in 0..3 {
        let vow = take_vow(&c, &server, i, &format!("mark-{i}"));
        assert_eq!(report_in_waiting(&c, &server, &vow).status(), 201);
    }
    let mark = await_mark(&data, &site, 6);
    server.terminate();
    let before = page_times(&site);
    assert_eq!(before.len(), 3);
    let later = |offset: &str, url: &str| {
        Server::start_env(
            "serve",
            &data,
            &site,
            &["--public-url", url],
            &[("CONDUCT_CLOCK_OFFSET_SECONDS", offset)],
            None,
        )
        .await_caught_up()
    };
    let mut server = later("3600", url[1]);
    assert_eq!(page_times(&site), before, "a vow was re-rendered");
    verify_site(&site, &server.vkey());
    server.terminate();
    let mut server = later("7200", "http://127.0.0.1:8402");
    let moved = page_times(&site);
    for ((page, t0), (_, t1)) in before.iter().zip(&moved) {
        assert!(
            t1 > t0,
            "{page} was not re-rendered under another public URL"
        );
    }
    server.terminate();
    // The first URL again, and no mark at all.
    std::fs::remove_file(&mark).unwrap();
    let mut server = later("10800", url[1]);
    let after = page_times(&site);
    for ((page, t0), (_, t1)) in moved.iter().zip(&after) {
        assert!(t1 > t0, "{page} was not re-rendered without the mark");
    }
    server.terminate();
}

/// A stop that joins every writer of the tree leaves `<data>/site-clean` naming the manifest
/// root on disk; the next start takes it (it is gone while that run writes) and does not walk
/// the tree for temporaries. After a kill there is no mark, and the start walks the tree.
#[test]
fn a_clean_stop_spares_the_next_start_its_walk_for_temporaries() {
    let dir = tempfile::tempdir().unwrap();
    let (data, site) = (dir.path().join("data"), dir.path().join("site"));
    let mark = data.join("site-clean");
    let names_the_root = || {
        let root = std::fs::read(site.join("manifest.json")).unwrap();
        std::fs::read(&mark).ok() == Some(hex::encode(sha2::Sha256::digest(root)).into_bytes())
    };
    let c = client();
    let mut server = Server::start_in(&data, &site, &[]).await_caught_up();
    let vow = take_vow(&c, &server, 0, "clean-stop");
    assert_eq!(report_in_waiting(&c, &server, &vow).status(), 201);
    assert!(!mark.exists(), "a mark while the service writes");
    server.terminate();
    assert!(
        names_the_root(),
        "a clean stop left no mark naming the root"
    );
    // Planted after the stop, unknown to the mark: a start that takes the mark leaves it.
    let planted = site.join(format!("vow/.conduct-tmp.{vow}.json.4242-00c0ffee.pub"));
    std::fs::write(&planted, b"half a file").unwrap();
    let mut server = Server::start_in(&data, &site, &[]).await_caught_up();
    assert!(!mark.exists(), "the mark outlived the start that took it");
    assert!(report_in_waiting(&c, &server, &vow).status() == 201);
    assert!(
        planted.exists(),
        "a start walked a tree its previous run left clean"
    );
    // The vow's first render in this run read its chain's tail from the chain head on disk.
    let tree_reads = r#"conduct_render_chain_reads_total{records="tree"}"#;
    assert!(
        server.metric(tree_reads) >= Some(1.0),
        "no render read the tree"
    );
    server.kill9();
    assert!(!mark.exists(), "a killed run left a mark");
    let mut server = Server::start_in(&data, &site, &[]).await_caught_up();
    assert!(
        !planted.exists(),
        "a start after a kill did not walk the tree"
    );
    assert_eq!(report_in_waiting(&c, &server, &vow).status(), 201);
    let vkey = server.vkey();
    server.terminate();
    assert!(names_the_root(), "a stop after a walk left no mark");
    verify_site(&site, &vkey);
}

/// A model reading asked for but not answered when the service stops is asked for again by
/// the next start, though the stop's integration mark passed the report-in (nothing else
/// would render the vow again): the asks are kept in the store until a reading covers them.
#[test]
fn a_model_reading_left_unanswered_at_a_stop_is_asked_for_again_at_the_next_start() {
    let dir = tempfile::tempdir().unwrap();
    let (data, site) = (dir.path().join("data"), dir.path().join("site"));
    // A provider that takes the request and never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_url = format!("http://{}", silent.local_addr().unwrap());
    let (heard_tx, heard) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for mut stream in silent.incoming().flatten() {
            let mut first = [0u8; 1];
            if std::io::Read::read(&mut stream, &mut first).is_ok_and(|n| n > 0) {
                let _ = heard_tx.send(());
            }
            held.push(stream);
        }
    });
    let config = |base: &str| {
        let path = dir.path().join("conduct.toml");
        std::fs::write(
            &path,
            format!(
                "[reading]\ntimeout_seconds = 300\n[reading.primary]\n\
                 base_url = \"{base}\"\nmodel = \"m-primary\"\n"
            ),
        )
        .unwrap();
        path
    };
    let start = |cfg: &std::path::Path| {
        Server::start_env(
            "serve",
            &data,
            &site,
            // One public URL (by default it follows the port, and a mark is taken only
            // under the URL it was written for).
            &[
                "--config",
                cfg.to_str().unwrap(),
                "--public-url",
                "http://localhost:8402",
            ],
            &[],
            None,
        )
    };
    let mut server = start(&config(&format!("{silent_url}/v1")));
    let c = client();
    let r: Value = c
        .post(server.at("/vow"))
        .json(&json!({"text": "book ferry tickets honestly", "agent": "asked-once", "cadence_hours": 24}))
        .send()
        .unwrap()
        .json()
        .unwrap();
    let vow = r["vow_id"].as_str().unwrap().to_owned();
    let r = c
        .post(server.at("/vow/report/demo"))
        .header("Prefer", "wait=10")
        .json(&report(&vow, 1))
        .send()
        .unwrap();
    assert_eq!(r.status(), 201);
    heard
        .recv_timeout(Duration::from_secs(60))
        .expect("the reading was never asked of the model");
    // A graceful stop: its last mark covers every record, the report-in's included.
    server.terminate();
    let reading = site.join(format!("vow/{vow}/reading.json"));
    let kind = || -> Option<String> {
        let v: Value = serde_json::from_slice(&std::fs::read(&reading).ok()?).ok()?;
        v["interpretation"]["kind"].as_str().map(str::to_owned)
    };
    assert_eq!(kind().as_deref(), Some("rule-based"));
    let model = conduct_tests::ModelStandIn::start();
    let mut server = start(&config(&format!("{}/ok/v1", model.url))).await_caught_up();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while kind().as_deref() != Some("language-model") {
        assert!(
            std::time::Instant::now() < deadline,
            "the reading was not asked for again: {:?}, the model saw {} requests",
            kind(),
            model.requests().len()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(model.requests().len(), 1, "asked once, not again and again");
    verify_site(&site, &server.vkey());
    server.terminate();
}
