//! The `Tree` seam's contract (`conduct_indexer::tree`), one suite run on both backends: a
//! directory, and a prefix of the shared S3-compatible bucket server (`tests/servers.sh`).
//! What a backend wrote is also read back independently of it: the files on disk, and the
//! bucket's objects and headers through `tests/py/s3.py`, which shares no code with the
//! object-store client.

use std::collections::BTreeSet;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use conduct_indexer::tree::{self, Put, SharedTree, Tree};
use conduct_tests::{py_dir, python, Bucket};

/// A fresh prefix of the shared bucket, and the bucket tree over it.
fn bucket_tree(name: &str) -> (Bucket, String, SharedTree) {
    let b = Bucket::shared();
    let prefix = format!("tree-{name}-{}-{}", std::process::id(), nonce());
    let t = open_bucket(&b, &format!("{}/{prefix}", b.bucket)).expect("open the bucket tree");
    (b, prefix, t)
}

/// The bucket tree at `location` (`bucket/prefix`) with `b`'s AWS settings.
fn open_bucket(b: &Bucket, location: &str) -> std::io::Result<SharedTree> {
    let aws = b.aws_env().into_iter().map(|(k, v)| (k.to_owned(), v));
    Ok(Arc::new(tree::Bucket::open(location, aws)?))
}

fn nonce() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos() as u64)
}

/// `tests/py/s3.py VERB KEY` against the shared bucket: its stdout, or `None` on failure.
fn s3py(b: &Bucket, verb: &str, key: &str) -> Option<Vec<u8>> {
    let out = Command::new(python())
        .arg(py_dir().join("s3.py"))
        .args([verb, key])
        .env("CONDUCT_TEST_S3_ENDPOINT", &b.endpoint)
        .env("CONDUCT_TEST_S3_BUCKET", &b.bucket)
        .env("CONDUCT_TEST_S3_ACCESS_KEY", &b.access_key)
        .env("CONDUCT_TEST_S3_SECRET_KEY", &b.secret_key)
        .output()
        .expect("run s3.py");
    out.status.success().then_some(out.stdout)
}

fn paths(t: &dyn Tree, prefix: &str) -> BTreeSet<String> {
    t.list(prefix)
        .unwrap()
        .into_iter()
        .map(|l| l.path)
        .collect()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// The contract, on one backend.
fn contract(t: &dyn Tree) {
    // Nothing yet.
    assert_eq!(t.get("vow/a.json").unwrap(), None);
    assert_eq!(t.head("vow/a.json").unwrap(), None);
    assert!(!t.delete("vow/a.json").unwrap());
    assert!(paths(t, "").is_empty());

    // Put, get, replace, head.
    t.put("vow/a.json", b"{\"v\":1}", Put::PAGE).unwrap();
    assert_eq!(
        t.get("vow/a.json").unwrap().as_deref(),
        Some(&b"{\"v\":1}"[..])
    );
    t.put("vow/a.json", b"{\"v\":22}", Put::SYNCED).unwrap();
    assert_eq!(
        t.get("vow/a.json").unwrap().as_deref(),
        Some(&b"{\"v\":22}"[..])
    );
    let head = t.head("vow/a.json").unwrap().unwrap();
    assert_eq!((head.path.as_str(), head.len), ("vow/a.json", 8));
    t.put("vow/a.json", b"", Put::PAGE).unwrap();
    assert_eq!(t.get("vow/a.json").unwrap().as_deref(), Some(&b""[..]));

    // Listing by prefix: whole segments, a part of one, nested, and nothing else.
    for p in [
        "vow/ab.json",
        "vow/ab/chain/0.json",
        "vows/1.json",
        "log/tile/0/000",
        "log/checkpoint",
        "index.html",
    ] {
        t.put(p, p.as_bytes(), Put::PAGE.for_path(p)).unwrap();
    }
    assert_eq!(
        paths(t, "vow/"),
        set(&["vow/a.json", "vow/ab.json", "vow/ab/chain/0.json"])
    );
    assert_eq!(
        paths(t, "vow/ab"),
        set(&["vow/ab.json", "vow/ab/chain/0.json"])
    );
    assert_eq!(
        paths(t, "vow"),
        paths(t, "vow/")
            .union(&set(&["vows/1.json"]))
            .cloned()
            .collect()
    );
    assert_eq!(paths(t, "log/"), set(&["log/tile/0/000", "log/checkpoint"]));
    assert_eq!(paths(t, "").len(), 7);
    let listed = t.list("log/checkpoint").unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].len, "log/checkpoint".len() as u64);

    // One level of a directory: its files and the directories below it.
    let top = t.children("").unwrap();
    let names = |l: &[tree::Listed]| l.iter().map(|l| l.path.clone()).collect::<BTreeSet<_>>();
    assert_eq!(names(&top.files), set(&["index.html"]));
    assert_eq!(
        top.dirs.iter().cloned().collect::<BTreeSet<_>>(),
        set(&["log", "vow", "vows"])
    );
    let vow = t.children("vow").unwrap();
    assert_eq!(names(&vow.files), set(&["vow/a.json", "vow/ab.json"]));
    assert_eq!(vow.dirs, vec!["vow/ab".to_owned()]);
    assert_eq!(
        t.children("nothing/here").unwrap(),
        tree::Children::default()
    );

    // Delete, then gone everywhere.
    assert!(t.delete("vow/ab.json").unwrap());
    assert!(!t.delete("vow/ab.json").unwrap());
    assert_eq!(t.get("vow/ab.json").unwrap(), None);
    assert!(!paths(t, "vow/").contains("vow/ab.json"));

    // Paths that are not plain relative ones never reach the backend.
    for bad in ["", "/etc/passwd", "a/../../b", "a//b", "./a", "a\\b"] {
        let e = t.put(bad, b"x", Put::PAGE).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput, "{bad:?}");
        assert_eq!(
            t.get(bad).unwrap_err().kind(),
            std::io::ErrorKind::InvalidInput
        );
    }

    // Many puts at once: one answer each, in order, a bad path refused alone.
    let many: Vec<(String, Vec<u8>)> = (0..40)
        .map(|i| {
            (
                format!("many/{i}.json"),
                format!("{{\"i\":{i}}}").into_bytes(),
            )
        })
        .collect();
    let mut puts: Vec<(&str, &[u8], Put)> = many
        .iter()
        .map(|(p, b)| (p.as_str(), b.as_slice(), Put::PAGE))
        .collect();
    puts.insert(7, ("../bad", b"x", Put::PAGE));
    let done = t.put_many(&puts);
    assert_eq!(done.len(), 41);
    for (i, r) in done.iter().enumerate() {
        assert_eq!(r.is_err(), i == 7, "{i}: {r:?}");
    }
    for (p, b) in &many {
        assert_eq!(t.get(p).unwrap().as_deref(), Some(b.as_slice()), "{p}");
    }

    // A warming answers the reads that follow with what a read of the tree answers: the
    // bytes, an absence, and never bytes a later put replaced.
    let warm = |paths: &[&str]| {
        let w: Vec<(String, tree::Warm)> = paths
            .iter()
            .map(|p| (p.to_string(), tree::Warm::Bytes))
            .collect();
        t.warm(&w)
    };
    warm(&["many/1.json", "many/2.json", "many/none.json"]);
    assert_eq!(t.head("many/1.json").unwrap().map(|h| h.len), Some(7));
    assert_eq!(t.head("many/none.json").unwrap(), None);
    assert_eq!(
        t.get("many/1.json").unwrap().as_deref(),
        Some(&b"{\"i\":1}"[..])
    );
    assert_eq!(
        t.get("many/1.json").unwrap().as_deref(),
        Some(&b"{\"i\":1}"[..])
    );
    assert_eq!(t.get("many/none.json").unwrap(), None);
    t.put("many/2.json", b"replaced", Put::PAGE).unwrap();
    assert_eq!(
        t.get("many/2.json").unwrap().as_deref(),
        Some(&b"replaced"[..])
    );
    warm(&["many/3.json"]);
    assert!(t.delete("many/3.json").unwrap());
    assert_eq!(t.get("many/3.json").unwrap(), None);
    warm(&["many/none.json"]);
    t.put("many/none.json", b"now", Put::PAGE).unwrap();
    assert_eq!(
        t.get("many/none.json").unwrap().as_deref(),
        Some(&b"now"[..])
    );

    t.barrier().unwrap();
    assert_eq!(t.recover(false).unwrap(), 0);
}

/// Readers racing a writer get one whole version or the other, never a mix or a prefix.
fn atomic_under_readers(t: SharedTree) {
    let a = vec![b'a'; 300_000];
    let b = vec![b'b'; 200_000];
    t.put("race.bin", &a, Put::PAGE).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (t, stop, a, b) = (t.clone(), stop.clone(), a.clone(), b.clone());
            std::thread::spawn(move || {
                let mut reads = 0;
                while !stop.load(Ordering::Relaxed) || reads < 5 {
                    let got = t.get("race.bin").unwrap().expect("always there");
                    assert!(got == a || got == b, "a torn read of {} bytes", got.len());
                    reads += 1;
                }
                reads
            })
        })
        .collect();
    for i in 0..20 {
        t.put("race.bin", if i % 2 == 0 { &b } else { &a }, Put::PAGE)
            .unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        assert!(r.join().unwrap() >= 5);
    }
}

#[test]
fn a_directory_keeps_the_contract() {
    let dir = tempfile::tempdir().unwrap();
    let t = tree::open(dir.path().to_str().unwrap(), None).unwrap();
    contract(t.as_ref());
    // What the contract wrote is plain files in the directory.
    assert_eq!(
        std::fs::read(dir.path().join("vow/ab/chain/0.json")).unwrap(),
        b"vow/ab/chain/0.json"
    );
    atomic_under_readers(t);
}

#[test]
fn a_directory_sweeps_the_temporaries_a_crash_left_unless_it_stopped_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let t = tree::open(dir.path().to_str().unwrap(), None).unwrap();
    t.put("vow/a.json", b"{}", Put::SYNCED).unwrap();
    let left = dir.path().join("vow/.conduct-tmp.a.json.1-00000000.pub");
    std::fs::write(&left, b"half").unwrap();
    // A temporary is never listed as an object.
    assert_eq!(paths(t.as_ref(), ""), set(&["vow/a.json"]));
    assert_eq!(t.recover(true).unwrap(), 0);
    assert!(left.exists());
    assert_eq!(t.recover(false).unwrap(), 1);
    assert!(!left.exists());
}

#[test]
fn a_bucket_keeps_the_contract() {
    let (b, prefix, t) = bucket_tree("contract");
    contract(t.as_ref());
    assert!(t
        .locator()
        .starts_with(&format!("s3://{}/{prefix} at http://", b.bucket)));
    // The objects are in the bucket under the prefix, as an independent client sees them.
    assert_eq!(
        s3py(&b, "get", &format!("{prefix}/vow/ab/chain/0.json")).as_deref(),
        Some(&b"vow/ab/chain/0.json"[..])
    );
    let listed = String::from_utf8(s3py(&b, "list", &format!("{prefix}/")).unwrap()).unwrap();
    let many = listed.lines().filter(|l| l.contains("/many/")).count();
    // 40 put at once, one deleted, one put after a warming found it absent.
    assert_eq!((listed.lines().count() - many, many), (6, 40), "{listed}");
    atomic_under_readers(t);
}

#[test]
fn a_bucket_object_carries_its_content_type_and_cache_control() {
    let (b, prefix, t) = bucket_tree("headers");
    let cases = [
        (
            "log/tile/0/000",
            "application/octet-stream",
            "public, max-age=31536000, immutable",
        ),
        ("log/tile/0/000.p/7", "application/octet-stream", "no-cache"),
        ("log/checkpoint", "text/plain; charset=utf-8", "no-cache"),
        (
            "vow/ab/chain/3.json",
            "application/json",
            "public, max-age=31536000, immutable",
        ),
        ("vow/ab.html", "text/html; charset=utf-8", "no-cache"),
    ];
    for (path, ..) in cases {
        t.put(path, b"x", Put::PAGE.for_path(path)).unwrap();
    }
    for (path, ty, cache) in cases {
        let raw = s3py(&b, "headers", &format!("{prefix}/{path}")).unwrap();
        let h: serde_json::Value = serde_json::from_slice(&raw).unwrap();
        assert_eq!(h["content-type"], ty, "{path}: {h}");
        assert_eq!(h["cache-control"], cache, "{path}: {h}");
    }
}

#[test]
fn a_bucket_that_does_not_answer_fails_the_call_in_bounded_time() {
    // A port nothing listens on: the calls fail, quickly, and never claim success.
    let port = conduct_tests::free_port();
    let mut down = Bucket::shared();
    down.endpoint = format!("http://127.0.0.1:{port}");
    let t = open_bucket(&down, &format!("{}/down", down.bucket)).unwrap();
    let started = std::time::Instant::now();
    assert!(t.put("a.json", b"{}", Put::PAGE).is_err());
    assert!(t.get("a.json").is_err());
    assert!(t.list("").is_err());
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
}

#[test]
fn a_site_setting_names_its_backend_or_is_refused() {
    let e = tree::open("gs://bucket/x", None).unwrap_err();
    assert!(e.to_string().contains("unknown scheme"), "{e}");
    let b = Bucket::shared();
    assert!(open_bucket(&b, "").is_err());
    assert!(open_bucket(&b, "b/../x").is_err());
}

/// Copy every object under `prefix/` of the shared bucket into `dir`, through `s3.py` (not
/// the service's client). How many.
fn copy_out(b: &Bucket, prefix: &str, dir: &std::path::Path) -> usize {
    let listed = String::from_utf8(s3py(b, "list", &format!("{prefix}/")).unwrap()).unwrap();
    let mut n = 0;
    for key in listed.lines() {
        let rel = key.strip_prefix(&format!("{prefix}/")).unwrap();
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, s3py(b, "get", key).unwrap()).unwrap();
        n += 1;
    }
    n
}

#[test]
fn the_log_published_into_a_bucket_verifies_and_is_repaired_there() {
    use conduct_indexer::keystore;
    use conduct_indexer::ledger::Ledger;
    use conduct_indexer::store::Store;

    let (b, prefix, t) = bucket_tree("log");
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (key, _) = keystore::load_or_create(&data, "localhost:8402/log").unwrap();
    let store = Store::open(&data).unwrap();
    {
        let mut ledger = Ledger::open(&store, key.clone(), t.clone()).unwrap();
        conduct_tests::fill_log(&mut ledger, 600);
    }
    let verify = |copy: &std::path::Path| {
        let out = Command::new(conduct_tests::conduct_bin())
            .arg("verify-log")
            .arg(copy.join("log"))
            .args(["--pubkey", &key.vkey()])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let first = dir.path().join("copy1");
    assert!(copy_out(&b, &prefix, &first) >= 7);
    verify(&first);

    // A tile the bucket lost is put back when the ledger next opens, and nothing else is.
    assert!(t.delete("log/tile/0/001").unwrap());
    let reopened = Ledger::open(&store, key.clone(), t.clone()).unwrap();
    assert_eq!(reopened.repaired_files(), 1);
    let second = dir.path().join("copy2");
    copy_out(&b, &prefix, &second);
    assert_eq!(
        std::fs::read(second.join("log/tile/0/001")).unwrap(),
        std::fs::read(first.join("log/tile/0/001")).unwrap()
    );
    verify(&second);
}

/// `conduct serve --site s3://bucket/prefix`: the whole tree is rendered into the bucket, a
/// vow and a report-in land there (the log's tiles and checkpoint, the vow's pages, the
/// manifest), the api answers every GET of the tree from the bucket, and both a copy of the
/// bucket and the bucket itself (`s3://...`) verify with `verify-site` and `verify-log`.
#[test]
fn the_service_serves_and_publishes_its_tree_from_a_bucket() {
    serves_from_a_bucket(None);
}

/// The same on postgres+s3 (`--state postgres://...`): nothing of the state is in the data
/// directory but the keys, and the sentinel search covers every row of the database too.
#[test]
fn the_service_on_postgresql_serves_and_publishes_its_tree_from_a_bucket() {
    let url = conduct_tests::database(&format!("serve_bucket_{}", std::process::id()));
    serves_from_a_bucket(Some(&url));
}

fn serves_from_a_bucket(state: Option<&str>) {
    use conduct_tests::{client, trace, Server};
    use serde_json::{json, Value};

    let b = Bucket::shared();
    let prefix = format!("serve-{}-{}", std::process::id(), nonce());
    let dir = tempfile::tempdir().unwrap();
    let aws = b.aws_env();
    let envs: Vec<(&str, &str)> = aws.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let site = std::path::PathBuf::from(format!("s3://{}/{prefix}", b.bucket));
    let extra: Vec<&str> = state.map(|url| vec!["--state", url]).unwrap_or_default();
    let mut s = Server::start_env(
        "serve",
        &dir.path().join("data"),
        &site,
        &extra,
        &envs,
        None,
    );
    let c = client();
    // Nothing of the tree is on the local disk.
    assert!(!dir.path().join("s3:").exists());

    let vow: Value = c
        .post(s.at("/vow"))
        .json(&json!({"text": "kept in a bucket", "agent": "bucketed", "cadence_hours": 24}))
        .send()
        .unwrap()
        .json()
        .unwrap();
    let id = vow["vow_id"].as_str().unwrap().to_owned();
    // M and D text never reaches anything stored or published: planted here, searched for in
    // every object of the bucket and every file of the data directory below.
    let (m_sentinel, d_sentinel) = ("m-sentinel-7f3a9c", "d-sentinel-41be07");
    let mut t = trace(6);
    t["vow_id"] = json!(id);
    for (i, turn) in t["turns"].as_array_mut().unwrap().iter_mut().enumerate() {
        turn["M"] = json!(format!("I weigh this, {m_sentinel}, then act."));
        if i % 2 == 0 {
            turn["D"] = json!(d_sentinel);
        }
    }
    let r = c
        .post(s.at("/vow/report/demo"))
        .header("Prefer", "wait=10")
        .json(&t)
        .send()
        .unwrap();
    assert_eq!(r.status(), 201);
    assert_eq!(r.headers()["conduct-render"], "done");

    // Served from the bucket: the vow's page, negotiated twins, the log.
    let page: Value = c
        .get(s.at(&format!("/vow/{id}")))
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(page["vow_id"], id.as_str());
    let html = c
        .get(s.at(&format!("/vow/{id}")))
        .header("Accept", "text/html")
        .send()
        .unwrap();
    assert_eq!(html.status(), 200);
    assert!(html.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    let cp = c.get(s.at("/log/checkpoint")).send().unwrap();
    assert_eq!(cp.headers()["cache-control"], "no-cache");
    assert!(
        cp.text().unwrap().contains("\n2\n"),
        "two records: the vow and its report-in"
    );
    assert_eq!(c.get(s.at("/no/such/page")).send().unwrap().status(), 404);

    // The bucket holds it, under the prefix, as an independent client reads it.
    let raw = s3py(&b, "get", &format!("{prefix}/vow/{id}.json")).unwrap();
    let on_bucket: Value = serde_json::from_slice(&raw).unwrap();
    assert_eq!(on_bucket["vow_id"], id.as_str());

    // A copy of the bucket verifies offline.
    let vkey = s.vkey();
    s.terminate();
    let copy = dir.path().join("copy");
    assert!(copy_out(&b, &prefix, &copy) > 20);
    let data = dir.path().join("data");
    // The search sees what is stored: the vow's own text is in both.
    let holds = |root: &std::path::Path, needle: &str| {
        walkdir::WalkDir::new(root).into_iter().any(|e| {
            let e = e.unwrap();
            e.file_type().is_file()
                && std::fs::read(e.path())
                    .unwrap()
                    .windows(needle.len())
                    .any(|w| w == needle.as_bytes())
        })
    };
    let has =
        |bytes: &[u8], needle: &str| bytes.windows(needle.len()).any(|w| w == needle.as_bytes());
    assert!(holds(&copy, "kept in a bucket"));
    for root in [&copy, &data] {
        for needle in [m_sentinel, d_sentinel] {
            assert!(!holds(root, needle), "{needle} in {}", root.display());
        }
    }
    match state {
        None => assert!(holds(&data, "kept in a bucket")),
        Some(url) => {
            // The state is in the database: the data directory holds the keys and the
            // operator's files, no SQLite database.
            assert!(!holds(&data, "kept in a bucket"));
            for file in [
                "conduct.sqlite3",
                "chain.sqlite3",
                "donated.sqlite3",
                "resume-points.sqlite3",
            ] {
                assert!(!data.join(file).exists(), "{file} in the data directory");
            }
            let dump = conduct_tests::dump_database(url);
            assert!(
                has(&dump, "kept in a bucket"),
                "the vow's row is in the dump"
            );
            for needle in [m_sentinel, d_sentinel] {
                assert!(!has(&dump, needle), "{needle} in the database");
            }
        }
    }
    for (what, path) in [
        ("verify-site", copy.clone()),
        ("verify-log", copy.join("log")),
    ] {
        let out = Command::new(conduct_tests::conduct_bin())
            .arg(what)
            .arg(&path)
            .args(["--pubkey", &vkey])
            .output()
            .unwrap();
        assert!(out.status.success(), "{what}: {out:?}");
    }
    // And the bucket itself, read with its credentials (the tree at its prefix, the log
    // under it).
    let in_bucket = |what: &str, location: &str| {
        Command::new(conduct_tests::conduct_bin())
            .arg(what)
            .arg(location)
            .args(["--pubkey", &vkey])
            .envs(envs.iter().copied())
            .output()
            .unwrap()
    };
    let tree_at = format!("s3://{}/{prefix}", b.bucket);
    for (what, location) in [
        ("verify-site", tree_at.clone()),
        ("verify-log", format!("{tree_at}/log")),
    ] {
        let out = in_bucket(what, &location);
        assert!(out.status.success(), "{what} {location}: {out:?}");
        assert!(String::from_utf8_lossy(&out.stdout).starts_with("OK: "));
    }
    // A page changed in the bucket fails verify-site (the manifest lists its hash); the log is
    // untouched and still verifies.
    let page = format!("{prefix}/vow/{id}.json");
    let mut changed = s3py(&b, "get", &page).unwrap();
    changed.extend_from_slice(b" ");
    let t = open_bucket(&b, &format!("{}/{prefix}", b.bucket)).unwrap();
    t.put(&format!("vow/{id}.json"), &changed, Put::PAGE)
        .unwrap();
    let out = in_bucket("verify-site", &tree_at);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&format!("vow/{id}.json")),
        "{out:?}"
    );
    assert!(in_bucket("verify-log", &format!("{tree_at}/log"))
        .status
        .success());
}

/// While the bucket does not answer, a GET of the tree is a 503 with `Retry-After` (never a
/// 404 or a stale claim of absence), the service stays up, and it serves again by itself
/// once the bucket is back.
#[test]
fn a_bucket_that_stops_answering_gets_503_and_the_service_recovers() {
    use conduct_tests::{client, Server};

    let dir = tempfile::tempdir().unwrap();
    let port = conduct_tests::free_port();
    let mut bucket = conduct_tests::own_bucket_server(&dir.path().join("s3"), port, true);
    let mut own = Bucket::shared();
    own.endpoint = format!("http://127.0.0.1:{port}");
    own.bucket = "conduct-test".into();
    let aws = own.aws_env();
    let envs: Vec<(&str, &str)> = aws.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let site = std::path::PathBuf::from("s3://conduct-test/down");
    let s = Server::start_env("serve", &dir.path().join("data"), &site, &[], &envs, None);
    let c = client();
    assert_eq!(c.get(s.at("/index.json")).send().unwrap().status(), 200);

    bucket.kill().unwrap();
    bucket.wait().unwrap();
    // Served from memory for at most a head's time, then refused.
    let deadline = std::time::Instant::now()
        + conduct_api::http::static_objects::HEAD_FOR
        + std::time::Duration::from_secs(30);
    let r = loop {
        let r = c.get(s.at("/index.json")).send().unwrap();
        if r.status() != 200 {
            break r;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "served past the bucket's death"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(r.status(), 503);
    assert!(r.headers().get("retry-after").is_some());
    let p: serde_json::Value = r.json().unwrap();
    assert_eq!(p["type"], "/library/ERRORS.md#tree-unavailable", "{p}");
    assert_eq!(c.get(s.at("/health")).send().unwrap().status(), 200);

    // A write while the bucket is down commits in the state and is acknowledged; /health says
    // the published files are behind.
    let vow = c
        .post(s.at("/vow"))
        .json(&serde_json::json!({"text": "taken while the bucket was down", "agent": "down", "cadence_hours": 24}))
        .send()
        .unwrap();
    assert_eq!(vow.status(), 201);
    let id = vow.json::<serde_json::Value>().unwrap()["vow_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let health = loop {
        let h = c.get(s.at("/health")).send().unwrap();
        if h.status() == 503 {
            break h.json::<serde_json::Value>().unwrap();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never said it was behind"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(health["status"], "degraded", "{health}");
    assert!(
        health["ledger"]["state"] == "failing" || health["site"]["state"] == "behind",
        "{health}"
    );

    let mut back = conduct_tests::own_bucket_server(&dir.path().join("s3"), port, true);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let status = c.get(s.at("/index.json")).send().unwrap().status();
        if status == 200 {
            break;
        }
        assert_eq!(status, 503);
        assert!(std::time::Instant::now() < deadline, "never served again");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // Publication caught up by itself: the vow's page is in the bucket and served, the log
    // holds it, and /health is ok again.
    loop {
        let page = c.get(s.at(&format!("/vow/{id}"))).send().unwrap();
        let healthy = c.get(s.at("/health")).send().unwrap().status() == 200;
        if page.status() == 200 && healthy {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "publication never caught up"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let cp = c
        .get(s.at("/log/checkpoint"))
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(cp.contains("\n1\n"), "the vow's record is in the log: {cp}");
    drop(s);
    let _ = back.kill();
    let _ = back.wait();
}

/// The bucket stopped in the middle of a burst of report-ins from several clients, then back:
/// every write the service acknowledged is in the log the bucket publishes once it catches up
/// (its checkpoint counts exactly the vows and the acknowledged report-ins), and both the log
/// and the tree verify in the bucket. While it is down, a write is acknowledged (the state
/// holds it) or pushed back with 503, never anything else.
#[test]
fn the_bucket_stopped_mid_burst_loses_no_acknowledged_write() {
    use conduct_tests::{client, trace, Server};
    use std::sync::atomic::AtomicUsize;

    let dir = tempfile::tempdir().unwrap();
    let port = conduct_tests::free_port();
    let root = dir.path().join("s3");
    let mut bucket = conduct_tests::own_bucket_server(&root, port, true);
    let mut own = Bucket::shared();
    own.endpoint = format!("http://127.0.0.1:{port}");
    own.bucket = "conduct-test".into();
    let aws = own.aws_env();
    let envs: Vec<(&str, &str)> = aws.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let config = dir.path().join("conduct.toml");
    std::fs::write(&config, "vow_daily_cap = 0\nreport_demo_daily_cap = 0\n").unwrap();
    let site = std::path::PathBuf::from("s3://conduct-test/burst");
    let s = Server::start_env(
        "serve",
        &dir.path().join("data"),
        &site,
        &["--config", config.to_str().unwrap()],
        &envs,
        None,
    );
    let c = client();
    let vows: Vec<String> = (0..4)
        .map(|i| {
            let r = c
                .post(s.at("/vow"))
                .json(&serde_json::json!({"text": format!("burst {i}"), "agent": format!("burst-{i}"), "cadence_hours": 24}))
                .send()
                .unwrap();
            assert_eq!(r.status(), 201);
            r.json::<serde_json::Value>().unwrap()["vow_id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();

    // Four clients report in without pause; the bucket is stopped after 20 acknowledgements
    // and started again after 20 more attempts have been answered while it was down.
    let (acked, answered_down) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let (down, stop) = (AtomicBool::new(false), AtomicBool::new(false));
    std::thread::scope(|scope| {
        for vow in &vows {
            let (acked, answered_down, down, stop, s) = (&acked, &answered_down, &down, &stop, &s);
            scope.spawn(move || {
                let c = client();
                while !stop.load(Ordering::SeqCst) {
                    let body = serde_json::json!({"vow_id": vow, "context_key": "monitored", "turns": trace(12)["turns"]});
                    let r = c.post(s.at("/vow/report/demo")).json(&body).send().unwrap();
                    match r.status().as_u16() {
                        201 => {
                            acked.fetch_add(1, Ordering::SeqCst);
                        }
                        503 => assert!(r.headers().get("retry-after").is_some()),
                        other => panic!("report-in answered {other}: {}", r.text().unwrap()),
                    }
                    if down.load(Ordering::SeqCst) {
                        answered_down.fetch_add(1, Ordering::SeqCst);
                    }
                }
            });
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let until = |what: &str, done: &dyn Fn() -> bool| {
            while !done() {
                assert!(std::time::Instant::now() < deadline, "{what}");
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        };
        until("no 20 acknowledgements", &|| {
            acked.load(Ordering::SeqCst) >= 20
        });
        bucket.kill().unwrap();
        bucket.wait().unwrap();
        down.store(true, Ordering::SeqCst);
        until("no 20 answers while down", &|| {
            answered_down.load(Ordering::SeqCst) >= 20
        });
        bucket = conduct_tests::own_bucket_server(&root, port, true);
        down.store(false, Ordering::SeqCst);
        let back_at = acked.load(Ordering::SeqCst);
        until("no acknowledgement after the bucket came back", &|| {
            acked.load(Ordering::SeqCst) > back_at + 8
        });
        stop.store(true, Ordering::SeqCst);
    });
    let acked = acked.load(Ordering::SeqCst);

    // Publication catches up by itself: the checkpoint in the bucket counts every write.
    let want = (vows.len() + acked) as u64;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let healthy = c.get(s.at("/health")).send().unwrap().status() == 200;
        let cp = s3py(&own, "get", "burst/log/checkpoint")
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        let size: Option<u64> = cp.lines().nth(1).and_then(|l| l.parse().ok());
        if healthy && size == Some(want) {
            break;
        }
        assert!(
            size.is_none_or(|n| n <= want),
            "the log holds {size:?}, more than the {want} writes acknowledged"
        );
        assert!(
            std::time::Instant::now() < deadline,
            "never caught up: {size:?} of {want}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let vkey = s.vkey();
    for args in [
        &["verify-log", "s3://conduct-test/burst/log"][..],
        &["verify-site", "s3://conduct-test/burst", "--settle", "10"][..],
    ] {
        let out = Command::new(conduct_tests::conduct_bin())
            .args(args)
            .args(["--pubkey", &vkey])
            .envs(envs.iter().copied())
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
    }
    eprintln!("burst: {acked} report-ins acknowledged over 4 clients, the bucket stopped and back");
    drop(s);
    let _ = bucket.kill();
    let _ = bucket.wait();
}
