//! The integration mark (renderer/src/live/mod.rs, `Marks`) against a real store: the vows
//! source says how far its files show the log only up to the first record a render has not
//! read, and a restart's backlog from a mark is what changed after it.

use std::collections::BTreeSet;
use std::sync::Arc;

use conduct_core::attestation::measure;
use conduct_core::signing::ServiceKey;
use conduct_core::trace::parse_json;
use conduct_core::vow::ReportRequest;
use conduct_indexer::clock::service_now;
use conduct_indexer::ledger::{Job, Ledger};
use conduct_indexer::state::kept::ResumePoints;
use conduct_indexer::store::resume::SqliteResumePoints;
use conduct_indexer::store::Store;
use conduct_indexer::tree::Dir;
use conduct_indexer::vows::{entry_job, vow_job, NewEntry, NewVow, VowReader};
use conduct_renderer::live::vows::VowSource;
use conduct_renderer::live::{Integrated, Source};

struct Log {
    key: ServiceKey,
    ledger: Ledger,
}

impl Log {
    /// The log of `store` signed by `key`, its files under `dir`.
    fn open(store: &Store, key: &ServiceKey, dir: &std::path::Path) -> Log {
        Log {
            key: key.clone(),
            ledger: Ledger::open(store, key.clone(), Dir::holding_log(dir).unwrap()).unwrap(),
        }
    }

    fn append(&mut self, job: Job) -> serde_json::Value {
        let mut results = self.ledger.append_jobs(vec![job]).unwrap();
        let leaf = results.remove(0).unwrap().leaf.unwrap();
        serde_json::from_slice(&leaf).unwrap()
    }

    fn take(&mut self, agent: &str) -> String {
        let v = self.append(vow_job(
            self.key.clone(),
            NewVow {
                origin: "marks.invalid/log".into(),
                agent: agent.into(),
                text: "I will do the same work whether or not I am watched.".into(),
                cadence_hours: 24.0,
                cadence_seconds: 86_400,
                wallet: None,
                wallet_signature: None,
                signed_message_sha256: None,
                sealed: false,
                sandbox_reason: None,
                // Three daily windows ago.
                at: service_now() - 3 * 86_400 - 600,
            },
        ));
        v["vow_id"].as_str().unwrap().to_owned()
    }

    fn report(&mut self, vow: &str) -> u64 {
        let body = serde_json::json!({"vow_id": vow, "context_key": "monitored", "turns": [
            {"Y": "work", "M": "plan", "D": "clean", "context": {"monitored": 1}},
            {"Y": "work", "M": "plan", "D": "clean", "context": {"monitored": 0}},
        ]})
        .to_string();
        let req: ReportRequest = parse_json(body.as_bytes()).unwrap();
        let m = measure(req.trace(), conduct_core::meter::Meter::DEFAULT).unwrap();
        let e = self.append(entry_job(
            self.key.clone(),
            NewEntry {
                vow_id: vow.into(),
                trace_sha256: m.trace_sha256,
                context_key: "monitored".into(),
                n_turns: 2,
                meter: m.meter,
                profile: m.profile,
                declared_y: None,
                y_consistency: None,
                note: None,
                attested: false,
                trace_donated: false,
                at: service_now(),
                proof: conduct_core::vow::record::Proof::SandboxOpen,
            },
        ));
        e["log_index"].as_u64().unwrap()
    }
}

fn render(source: &mut VowSource, vows: &[&str]) {
    let keys: BTreeSet<String> = vows.iter().map(|v| v.to_string()).collect();
    let files = source
        .render(&keys, false, service_now(), &|_| None)
        .unwrap();
    assert!(!files.is_empty());
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

#[test]
fn the_mark_stops_at_the_first_record_no_render_has_read() {
    let dir = tempfile::tempdir().unwrap();
    let key = ServiceKey::from_seed(&[5; 32], "marks.invalid/log");
    let store = Store::open(dir.path()).unwrap();
    let mut log = Log::open(&store, &key, &dir.path().join("site/log"));
    let reader = Arc::new(VowReader::open(&store).unwrap());
    let source = || vow_source(&key, &reader);
    let mut src = source();
    let a = log.take("agent-a"); // log index 0
    let b = log.take("agent-b"); // 1
    assert_eq!(src.integrated(0).unwrap(), Some(0), "nothing rendered yet");
    render(&mut src, &[&a]);
    assert_eq!(src.integrated(0).unwrap(), Some(1), "b's vow record is not");
    render(&mut src, &[&b]);
    assert_eq!(src.integrated(0).unwrap(), Some(2), "the whole log");
    assert_eq!(
        src.integrated(0).unwrap(),
        Some(2),
        "a check the engine did not take forgets nothing"
    );
    src.marked(2);
    assert_eq!(src.integrated(2).unwrap(), Some(2));
    assert_eq!(log.report(&a), 2);
    assert_eq!(
        src.integrated(2).unwrap(),
        Some(2),
        "a's entry is not rendered"
    );
    render(&mut src, &[&a]);
    assert_eq!(src.integrated(2).unwrap(), Some(3));
    // A render that read before a commit does not show it.
    assert_eq!(log.report(&b), 3);
    render(&mut src, &[&b]);
    assert_eq!(log.report(&b), 4);
    assert_eq!(src.integrated(3).unwrap(), Some(4));

    // A restart from the mark: the vows the log changed after it, and no other (no window
    // of a daily cadence has closed since the mark's instant).
    let now = service_now();
    let mark = Integrated {
        log_size: 4,
        as_of: now,
    };
    assert_eq!(source().backlog(Some(&mark)).unwrap(), vec![b.clone()]);
    let all = sorted(vec![a.clone(), b.clone()]);
    assert_eq!(
        sorted(source().backlog(None).unwrap()),
        all,
        "no mark: every vow"
    );
    let whole = Integrated {
        log_size: 5,
        as_of: now,
    };
    assert!(source().backlog(Some(&whole)).unwrap().is_empty());
    // A model reading kept (outside the log) after the mark's instant: its vow too.
    store
        .put_interpretation(&a, 1, "{\"summary\": \"steady\"}", now + 1)
        .unwrap();
    assert_eq!(source().backlog(Some(&whole)).unwrap(), vec![a.clone()]);
    // The mark's instant a day and a half back: a window of each vow closed since.
    let old = Integrated {
        log_size: 5,
        as_of: now - 36 * 3600,
    };
    assert_eq!(sorted(source().backlog(Some(&old)).unwrap()), all);
    // Each vow's next boundary is scheduled without rendering it.
    let mut fresh = source();
    fresh.backlog(None).unwrap();
    let next = fresh.next_due().unwrap();
    assert!(next > now && next <= now + 86_400, "{next} vs {now}");
}

/// A vow's first render in a process trusts the records its published page vouches for: a
/// page signed by the key it verifies with, its chain verified, and the store's record at its
/// head with the page's `head_sha256`. Shown with records another key signed: verified one by
/// one they fail, vouched for they pass, and a page whose head does not match vouches for
/// nothing.
#[test]
fn a_first_render_trusts_what_its_signed_page_vouches_for() {
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path().join("site");
    let signer = ServiceKey::from_seed(&[5; 32], "marks.invalid/log");
    let other = ServiceKey::from_seed(&[6; 32], "marks.invalid/log");
    let store = Store::open(dir.path()).unwrap();
    let mut log = Log::open(&store, &signer, &site.join("log"));
    let reader = Arc::new(VowReader::open(&store).unwrap());
    let source = |key: &ServiceKey| {
        vow_source(key, &reader).with_tree(conduct_indexer::tree::Dir::shared(&site).unwrap())
    };
    let vow = log.take("agent-v");
    for _ in 0..3 {
        log.report(&vow);
    }
    let keys: BTreeSet<String> = [vow.clone()].into();
    let page_of = |files: Vec<(String, Vec<u8>)>| -> serde_json::Value {
        let (_, bytes) = files
            .into_iter()
            .find(|(p, _)| *p == format!("vow/{vow}.json"))
            .unwrap();
        serde_json::from_slice(&bytes).unwrap()
    };
    let verification = |page: &serde_json::Value| page["trajectory"]["chain_verification"].clone();
    let render_as = |key: &ServiceKey| {
        page_of(
            source(key)
                .render(&keys, false, service_now(), &|_| None)
                .unwrap(),
        )
    };
    // Nothing published: every record verified, and under the other key none passes.
    let page = render_as(&signer);
    assert_eq!(verification(&page)["ok"], true);
    assert_eq!(verification(&page)["records"], 4);
    assert_eq!(verification(&render_as(&other))["ok"], false);
    // The page published, as the other key would sign it: it vouches for all four records.
    let publish = |by: &ServiceKey, mut page: serde_json::Value| {
        let obj = page.as_object_mut().unwrap();
        obj.remove("signature");
        obj.remove("key_id");
        let bytes = conduct_renderer::snapshot::signed_bytes(by, page).unwrap();
        std::fs::create_dir_all(site.join("vow")).unwrap();
        std::fs::write(site.join(format!("vow/{vow}.json")), bytes).unwrap();
    };
    publish(&other, page.clone());
    let vouched = render_as(&other);
    assert_eq!(
        verification(&vouched)["ok"],
        true,
        "{}",
        verification(&vouched)
    );
    assert_eq!(verification(&vouched)["records"], 4);
    // A page whose head is not the store's vouches for nothing.
    let mut wrong = page.clone();
    wrong["chain"]["head_sha256"] = serde_json::json!("00".repeat(32));
    publish(&other, wrong);
    assert_eq!(verification(&render_as(&other))["ok"], false);
    // Nor does one signed by a key the source does not verify with.
    publish(&signer, page.clone());
    assert_eq!(verification(&render_as(&other))["ok"], false);
}

/// A vow's render after a restart starts at its resume point (its state at the chain's last
/// page boundary, kept by an earlier render under the same renderer's name, ending below the
/// integration mark) and reads only the records after it: the bytes are those of a whole
/// read. Shown with records another key
/// signed: a whole read fails at the vow record, a resumed one only at the first record after
/// the point, the one it read first.
#[test]
fn a_render_after_a_restart_reads_the_chain_from_its_resume_point() {
    let dir = tempfile::tempdir().unwrap();
    let signer = ServiceKey::from_seed(&[5; 32], "marks.invalid/log");
    let other = ServiceKey::from_seed(&[6; 32], "marks.invalid/log");
    let store = Store::open(dir.path()).unwrap();
    let mut log = Log::open(&store, &signer, &dir.path().join("site/log"));
    let reader = Arc::new(VowReader::open(&store).unwrap());
    let points = Arc::new(SqliteResumePoints::open(dir.path()).unwrap());
    let vow = log.take("agent-r"); // log index 0
    for _ in 0..40 {
        log.report(&vow); // log indexes 1..=40
    }
    let keys: BTreeSet<String> = [vow.clone()].into();
    let now = service_now();
    // A restart from an integration mark at `mark` (0: none).
    let render_at = |key: &ServiceKey, name: &str, mark: u64| {
        let mut src = vow_source(key, &reader).with_resume_points(points.clone(), name);
        if mark > 0 {
            src.backlog(Some(&Integrated {
                log_size: mark,
                as_of: now,
            }))
            .unwrap();
        }
        src.render(&keys, false, now, &|_| None).unwrap()
    };
    let render_as = |key: &ServiceKey, name: &str| render_at(key, name, 41);
    let first = render_as(&signer, "r1");
    let kept = points.get(&vow, "r1").unwrap().unwrap();
    assert_eq!(kept.records, 32);
    // A restart: the same bytes, but for the full page before the point, which a resumed
    // render does not read (nor render again).
    let digest = |files: Vec<(String, Vec<u8>)>| -> Vec<(String, String)> {
        files
            .into_iter()
            .map(|(p, b)| (p, conduct_core::canonical::sha256_hex(&b)))
            .collect()
    };
    let page = format!("vow/{vow}/chain/0.json");
    let mut want = digest(first);
    let before = want.len();
    want.retain(|(p, _)| *p != page);
    assert_eq!(want.len(), before - 1, "the first render wrote page 0");
    assert_eq!(digest(render_as(&signer, "r1")), want);
    let verification = |files: Vec<(String, Vec<u8>)>| {
        let (_, bytes) = files
            .into_iter()
            .find(|(p, _)| *p == format!("vow/{vow}.json"))
            .unwrap();
        let page: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        page["trajectory"]["chain_verification"].clone()
    };
    let resumed = verification(render_as(&other, "r1"));
    assert_eq!(resumed["ok"], false);
    assert!(
        resumed["error"].as_str().unwrap().starts_with("leaf 32 "),
        "{resumed}"
    );
    // A mark that covers the record the point ends with (log index 31) is enough; without
    // one, or with one that does not cover it, the chain pages before the point may not have
    // reached the disk and the whole chain is read. Under another renderer's name the point
    // is not taken either. (Each whole read keeps its point, in place of the vow's point
    // before: the signer's is kept again before each.)
    for (name, mark, first_failure) in [
        ("r1", 32, "leaf 32 "),
        ("r1", 31, "leaf 0 "),
        ("r1", 0, "leaf 0 "),
        ("r2", 41, "leaf 0 "),
    ] {
        render_at(&signer, "r1", 0);
        let got = verification(render_at(&other, name, mark));
        assert!(
            got["error"].as_str().unwrap().starts_with(first_failure),
            "{name} at mark {mark}: {got}"
        );
    }
}

/// A vow not in memory reads its chain's tail from the chain head the tree holds, and from
/// the store only the records after it, when the head's tail is the store's (checked by the
/// hashes against the store's head): shown by removing the tail's records from the store,
/// after which the render still gives the bytes a render from the store gave. A head that is
/// older than the store is taken too (the records after it come from the store); one with a
/// record changed, or of a chain past a page boundary it does not start at, is not: the render
/// reads the store and gives the store's bytes.
#[test]
fn a_cold_render_reads_the_tail_through_the_published_chain_head() {
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path().join("site");
    let key = ServiceKey::from_seed(&[5; 32], "marks.invalid/log");
    let store = Store::open(dir.path()).unwrap();
    let mut log = Log::open(&store, &key, &site.join("log"));
    let reader = Arc::new(VowReader::open(&store).unwrap());
    let points = Arc::new(SqliteResumePoints::open(dir.path()).unwrap());
    let (short, long) = (log.take("agent-short"), log.take("agent-long"));
    let mut indexes = std::collections::BTreeMap::<String, Vec<u64>>::new();
    for k in 0..40 {
        if k < 5 {
            indexes
                .entry(short.clone())
                .or_default()
                .push(log.report(&short));
        }
        indexes
            .entry(long.clone())
            .or_default()
            .push(log.report(&long));
    }
    let now = service_now();
    // A cold render (a new source, as after a restart or an eviction) through the tree or not.
    let render = |vow: &str, tree: bool| -> Vec<(String, Vec<u8>)> {
        let mut src = vow_source(&key, &reader).with_resume_points(points.clone(), "r");
        if tree {
            src = src.with_tree(conduct_indexer::tree::Dir::shared(&site).unwrap());
        }
        src.backlog(Some(&Integrated {
            log_size: 1 << 20,
            as_of: now,
        }))
        .unwrap();
        let keys: BTreeSet<String> = [vow.to_owned()].into();
        let mut files = src.render(&keys, false, now, &|_| None).unwrap();
        files.sort();
        files
    };
    let digest_of = |files: &[(String, Vec<u8>)]| -> Vec<(String, String)> {
        files
            .iter()
            .map(|(p, b)| (p.clone(), conduct_core::canonical::sha256_hex(b)))
            .collect()
    };
    let digest = |vow: &str, tree: bool| digest_of(&render(vow, tree));
    let publish = |files: &[(String, Vec<u8>)]| {
        for (path, bytes) in files {
            let path = site.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, bytes).unwrap();
        }
    };
    let head_path = |vow: &str| site.join(format!("vow/{vow}/chain.json"));
    let db = rusqlite::Connection::open(store.path()).unwrap();
    let forget = |index: u64| {
        let n = db
            .execute("DELETE FROM leaf WHERE idx = ?1", [index as i64])
            .unwrap();
        assert_eq!(n, 1);
    };
    for vow in [&short, &long] {
        let first = render(vow, false);
        publish(&first);
        let older = std::fs::read(head_path(vow)).unwrap();
        // Two more report-ins: the head on disk is now older than the store.
        indexes.get_mut(vow).unwrap().push(log.report(vow));
        indexes.get_mut(vow).unwrap().push(log.report(vow));
        let want = digest(vow, false);
        assert_ne!(want, digest_of(&first));
        // A record of the tail changed: not taken, the store's bytes all the same.
        let text = String::from_utf8(older.clone()).unwrap();
        assert!(text.contains(r#""n_turns":2"#));
        std::fs::write(
            head_path(vow),
            text.replacen(r#""n_turns":2"#, r#""n_turns":3"#, 1),
        )
        .unwrap();
        assert_eq!(digest(vow, true), want);
        // The older head, then its tail's records gone from the store: still the same bytes.
        std::fs::write(head_path(vow), &older).unwrap();
        assert_eq!(digest(vow, true), want);
        let records = indexes[vow].len();
        // The short chain's tail starts at the vow record, the long one's at position 32.
        let tail: Vec<u64> = if vow == &short {
            indexes[vow][..records - 2].to_vec()
        } else {
            indexes[vow][31..records - 2].to_vec()
        };
        for index in &tail {
            forget(*index);
        }
        assert_eq!(digest(vow, true), want, "through the tree");
        // Without the tree the store's read now misses them (the chain shows a break): the
        // records came from the head.
        let page = render(vow, false)
            .into_iter()
            .find(|(p, _)| *p == format!("vow/{vow}.json"))
            .unwrap();
        let page: serde_json::Value = serde_json::from_slice(&page.1).unwrap();
        assert_eq!(page["trajectory"]["chain_verification"]["ok"], false);
    }
}

/// The vows source these tests render with, verifying with `key`.
fn vow_source(key: &ServiceKey, reader: &Arc<VowReader>) -> VowSource {
    VowSource::new(
        key.clone(),
        "http://marks.invalid",
        reader.clone(),
        None,
        Vec::new(),
    )
}

/// A restart renders the index of vows in batches of bounded bytes, each written before the
/// next is rendered, and the batches together are the index a single render gives.
#[test]
fn a_restart_renders_the_index_of_vows_in_bounded_batches() {
    let dir = tempfile::tempdir().unwrap();
    let key = ServiceKey::from_seed(&[9; 32], "marks.invalid/log");
    let store = Store::open(dir.path()).unwrap();
    let mut log = Log::open(&store, &key, &dir.path().join("log"));
    for i in 0..40 {
        log.take(&format!("batch-{i}"));
    }
    let reader = Arc::new(VowReader::open(&store).unwrap());
    let whole = vow_source(&key, &reader)
        .render(&BTreeSet::new(), true, service_now(), &|_| None)
        .unwrap();
    let most = 4096;
    let mut batched = vow_source(&key, &reader).with_index_batch(most);
    let mut batches: Vec<Vec<(String, Vec<u8>)>> = Vec::new();
    batched
        .render_index(service_now(), &|_| None, &mut |files| {
            batches.push(files);
            Ok(())
        })
        .unwrap();
    assert!(batches.len() > 2, "{} batches", batches.len());
    for b in &batches {
        // A batch passes the bound by its last file at most.
        let bytes: usize = b.iter().map(|(_, f)| f.len()).sum();
        let last = b.last().map_or(0, |(_, f)| f.len());
        assert!(bytes - last < most, "a batch of {bytes} bytes");
    }
    let mut got: Vec<_> = batches.into_iter().flatten().collect();
    let mut want = whole;
    got.sort();
    want.sort();
    assert_eq!(got, want);
}
