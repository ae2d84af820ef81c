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
    let t = tree::open(dir.path().to_str().unwrap()).unwrap();
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
    let t = tree::open(dir.path().to_str().unwrap()).unwrap();
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
    assert_eq!(listed.lines().count(), 6, "{listed}");
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
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
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
    let e = tree::open("gs://bucket/x").unwrap_err();
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
