//! Ledger tests: group commit under concurrency, reopen, published tiles and bundles re-derive
//! the signed checkpoint, crash-between-commit-and-publish repair, oversized entries, forks,
//! and a kill -9 loop (the test binary re-executes itself as the child). The suite runs on the
//! state `CONDUCT_TEST_STATE` names: SQLite (unset), or `postgres`, a database of each test's
//! own on the shared server of `tests/servers.sh` (tests/run.sh runs it both ways).

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use conduct_core::signing::ServiceKey;
use conduct_core::tlog::{
    decode_bundle, empty_root, entries_path, leaf_hash, open_checkpoint, root, root_from_tiles,
    tiles_for_size, Hash, Verifier,
};
use conduct_indexer::ledger::{Ledger, LedgerError, LedgerReader, Sequencer};
use conduct_indexer::tree::Dir;

mod common;
use common::state;

fn key() -> ServiceKey {
    ServiceKey::from_seed(&[7; 32], "localhost:8402/log")
}

struct Env {
    _tmp: tempfile::TempDir,
    data: PathBuf,
    log: PathBuf,
}

fn env() -> Env {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let log = tmp.path().join("site/log");
    Env {
        _tmp: tmp,
        data,
        log,
    }
}

fn open(data: &Path, log: &Path) -> Ledger {
    Ledger::open_log(
        state(data).log().unwrap(),
        key(),
        Dir::holding_log(log).unwrap(),
    )
    .unwrap()
}

/// Verify the published log from its files alone: the checkpoint signature, the root
/// re-derived from the tiles, and the bundles against the root. Returns (size, root, entries).
fn verify_published(log: &Path) -> (u64, Hash, Vec<Vec<u8>>) {
    let text = fs::read_to_string(log.join("checkpoint")).unwrap();
    let signed = open_checkpoint(&text, &[Verifier::for_key(&key()).unwrap()]).unwrap();
    let (size, want) = (signed.checkpoint.size, signed.checkpoint.root);
    let from_tiles =
        root_from_tiles(size, |tile| fs::read(log.join(tile.path()))).expect("tiles readable");
    assert_eq!(from_tiles, want, "tiles re-derive the checkpoint root");
    let mut entries = Vec::new();
    for tile in tiles_for_size(size).into_iter().filter(|t| t.level == 0) {
        let bytes = fs::read(log.join(entries_path(tile.index, tile.width))).unwrap();
        let bundle = decode_bundle(&bytes).unwrap();
        assert_eq!(bundle.len(), usize::from(tile.width));
        entries.extend(bundle);
    }
    assert_eq!(entries.len() as u64, size);
    let hashes: Vec<Hash> = entries.iter().map(|e| leaf_hash(e)).collect();
    assert_eq!(root(&hashes), want, "bundles hash to the checkpoint root");
    (size, want, entries)
}

fn assert_stored_matches(ledger: &Ledger, entries: &[Vec<u8>]) {
    assert_eq!(ledger.size(), entries.len() as u64);
    for (i, e) in entries.iter().enumerate() {
        assert_eq!(&ledger.entry(i as u64).unwrap(), e, "entry {i}");
    }
}

#[test]
fn empty_log_has_a_signed_size_zero_checkpoint() {
    let e = env();
    let ledger = open(&e.data, &e.log);
    assert_eq!(ledger.size(), 0);
    assert_eq!(ledger.root(), empty_root());
    let (size, r, entries) = verify_published(&e.log);
    assert_eq!((size, r), (0, empty_root()));
    assert!(entries.is_empty());
    assert!(matches!(
        ledger.entry(0),
        Err(LedgerError::OutOfRange { index: 0, size: 0 })
    ));
    drop(ledger);
    let again = open(&e.data, &e.log);
    assert_eq!(again.repaired_files(), 0);
}

#[test]
fn concurrent_appends_are_grouped_contiguous_and_survive_reopen() {
    let e = env();
    let seq = Arc::new(Sequencer::spawn(open(&e.data, &e.log), 256).unwrap());
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let seq = seq.clone();
            std::thread::spawn(move || {
                (0..250)
                    .map(|n| {
                        let entry = format!("thread {t} entry {n}").into_bytes();
                        (seq.append_blocking(entry.clone()).unwrap(), entry)
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut acked: Vec<(u64, Vec<u8>)> = threads
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    acked.sort();
    let indices: Vec<u64> = acked.iter().map(|(i, _)| *i).collect();
    assert_eq!(
        indices,
        (0..2000).collect::<Vec<_>>(),
        "unique and contiguous"
    );
    let head = seq.head();
    eprintln!("2000 appends in {} commits", head.commits);
    assert_eq!(head.size, 2000);
    assert!(
        head.commits < 2000,
        "group commit: {} checkpoints for 2000 appends",
        head.commits
    );
    // Under load answers go out at the commit and the files follow, but the last batch (no
    // request waiting behind it) is published before its answers: idle, the files are current.
    assert_eq!(verify_published(&e.log).0, 2000, "files current once idle");
    let seq = Arc::into_inner(seq).unwrap();
    let ledger = seq.shutdown().unwrap();
    let entries: Vec<Vec<u8>> = acked.into_iter().map(|(_, e)| e).collect();
    assert_stored_matches(&ledger, &entries);
    let (size, r) = (ledger.size(), ledger.root());
    assert_eq!(ledger.checkpoint(), head.checkpoint);
    drop(ledger);

    let (psize, proot, published) = verify_published(&e.log);
    assert_eq!((psize, proot), (size, r));
    assert_eq!(published, entries);

    let reopened = open(&e.data, &e.log);
    assert_eq!((reopened.size(), reopened.root()), (size, r));
    assert_eq!(reopened.repaired_files(), 0, "nothing to repair");
    for idx in [0, 1, 255, 256, 1000, 1999] {
        let proof = reopened.inclusion_proof(idx).unwrap();
        proof
            .verify(
                &entries[idx as usize],
                &[Verifier::for_key(&key()).unwrap()],
            )
            .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn async_appends_from_tokio_tasks() {
    let e = env();
    let seq = Arc::new(Sequencer::spawn(open(&e.data, &e.log), 64).unwrap());
    let tasks: Vec<_> = (0..200u32)
        .map(|n| {
            let seq = seq.clone();
            tokio::spawn(async move { seq.append(n.to_be_bytes().to_vec()).await.unwrap() })
        })
        .collect();
    let mut idx = Vec::new();
    for t in tasks {
        idx.push(t.await.unwrap());
    }
    idx.sort();
    assert_eq!(idx, (0..200).collect::<Vec<_>>());
    assert_eq!(seq.head().size, 200);
    drop(seq);
    let (size, _, _) = verify_published(&e.log);
    assert_eq!(size, 200);
}

#[test]
fn large_log_crosses_tile_levels_and_matches_the_reference_root() {
    // 70 000 leaves: full and partial tiles at levels 0 and 1, a partial tile at level 2.
    let e = env();
    let mut ledger = open(&e.data, &e.log);
    let entries: Vec<Vec<u8>> = (0..70_000u32)
        .map(|i| format!("leaf {i}").into_bytes())
        .collect();
    let hashes: Vec<Hash> = entries.iter().map(|e| leaf_hash(e)).collect();
    let mut at = 0;
    for (k, n) in [1usize, 255, 1, 300, 65_000, 4_443].iter().enumerate() {
        assert_eq!(ledger.append(&entries[at..at + n]).unwrap(), at as u64);
        at += n;
        assert_eq!(ledger.root(), root(&hashes[..at]), "batch {k}");
    }
    assert_eq!(at, 70_000);
    let verifiers = [Verifier::for_key(&key()).unwrap()];
    for idx in [0u64, 255, 256, 65_535, 65_536, 69_999] {
        ledger
            .inclusion_proof(idx)
            .unwrap()
            .verify(&entries[idx as usize], &verifiers)
            .unwrap();
    }
    let r = ledger.root();
    drop(ledger);
    let (size, proot, published) = verify_published(&e.log);
    assert_eq!((size, proot), (70_000, r));
    assert_eq!(published, entries);
    let reopened = open(&e.data, &e.log);
    assert_eq!((reopened.size(), reopened.root()), (70_000, r));
    assert_eq!(reopened.repaired_files(), 0);
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).unwrap();
        }
    }
}

#[test]
fn crash_after_commit_before_publish_is_repaired_on_open() {
    let e = env();
    let mut ledger = open(&e.data, &e.log);
    let entries: Vec<Vec<u8>> = (0..600u32).map(|i| vec![i as u8; i as usize]).collect();
    ledger.append(&entries[..300]).unwrap();
    // The files as they were before the next commit: restoring them afterwards is a crash
    // right after the commit, before any file was published.
    let snapshot = e.log.with_file_name("snapshot");
    copy_dir(&e.log, &snapshot);
    ledger.append(&entries[300..]).unwrap();
    let (size, r) = (ledger.size(), ledger.root());
    drop(ledger);
    fs::remove_dir_all(&e.log).unwrap();
    copy_dir(&snapshot, &e.log);
    assert_eq!(verify_published(&e.log).0, 300, "published log is behind");

    let ledger = open(&e.data, &e.log);
    assert_eq!((ledger.size(), ledger.root()), (size, r));
    assert!(ledger.repaired_files() > 0);
    drop(ledger);
    let (psize, proot, published) = verify_published(&e.log);
    assert_eq!((psize, proot), (size, r));
    assert_eq!(published, entries);

    // Lost and torn files: a deleted checkpoint and tile, a truncated bundle.
    fs::remove_file(e.log.join("checkpoint")).unwrap();
    fs::remove_file(e.log.join("tile/0/000")).unwrap();
    let bundle = e.log.join("tile/entries/002.p/88");
    let bytes = fs::read(&bundle).unwrap();
    fs::write(&bundle, &bytes[..bytes.len() / 2]).unwrap();
    let ledger = open(&e.data, &e.log);
    assert_eq!(ledger.repaired_files(), 3);
    drop(ledger);
    let (psize, proot, published) = verify_published(&e.log);
    assert_eq!((psize, proot), (size, r));
    assert_eq!(published, entries);
}

#[test]
fn oversized_entry_is_refused_and_changes_nothing() {
    let e = env();
    let mut ledger = open(&e.data, &e.log);
    ledger.append(&[b"first".to_vec()]).unwrap();
    let before = (
        ledger.size(),
        ledger.root(),
        ledger.checkpoint().to_owned(),
        fs::read(e.log.join("checkpoint")).unwrap(),
    );
    let batch = vec![b"ok".to_vec(), vec![0u8; 65_536]];
    assert!(matches!(
        ledger.append(&batch),
        Err(LedgerError::EntryTooLarge {
            position: 1,
            len: 65_536
        })
    ));
    let after = (
        ledger.size(),
        ledger.root(),
        ledger.checkpoint().to_owned(),
        fs::read(e.log.join("checkpoint")).unwrap(),
    );
    assert_eq!(before, after);
    drop(ledger);
    let ledger = open(&e.data, &e.log);
    assert_eq!((ledger.size(), ledger.root()), (before.0, before.1));

    // Through the sequencer: the big entry fails alone, the largest legal one goes in.
    let seq = Sequencer::spawn(ledger, 256).unwrap();
    assert!(matches!(
        seq.append_blocking(vec![1u8; 65_536]),
        Err(LedgerError::EntryTooLarge { len: 65_536, .. })
    ));
    assert_eq!(seq.append_blocking(vec![2u8; 65_535]).unwrap(), 1);
    drop(seq);
    let (size, _, published) = verify_published(&e.log);
    assert_eq!(size, 2);
    assert_eq!(published[1], vec![2u8; 65_535]);
}

#[test]
fn reader_serves_entries_and_proofs_while_the_sequencer_runs() {
    let e = env();
    let state = state(&e.data);
    let seq = Sequencer::spawn(
        Ledger::open_log(
            state.log().unwrap(),
            key(),
            Dir::holding_log(&e.log).unwrap(),
        )
        .unwrap(),
        256,
    )
    .unwrap();
    let reader = LedgerReader::over(state.log().unwrap());
    let verifiers = [Verifier::for_key(&key()).unwrap()];
    for n in 0..100u32 {
        let entry = format!("record {n}").into_bytes();
        let idx = seq.append_blocking(entry.clone()).unwrap();
        assert_eq!(reader.entry(idx).unwrap(), entry);
        let proof = reader.inclusion_proof(idx).unwrap();
        let text = proof.encode();
        let parsed = conduct_core::tlog::TlogProof::parse(&text).unwrap();
        let signed = parsed.verify(&entry, &verifiers).unwrap();
        assert!(signed.checkpoint.size > idx);
    }
    let (size, note) = reader.checkpoint().unwrap();
    assert_eq!((size, note), (100, seq.head().checkpoint));
    assert!(matches!(
        reader.entry(100),
        Err(LedgerError::OutOfRange {
            index: 100,
            size: 100
        })
    ));
}

#[test]
fn a_second_writer_is_detected_as_a_fork() {
    let e = env();
    let mut a = open(&e.data, &e.log);
    let mut b = open(&e.data, &e.log);
    a.append(&[b"from a".to_vec()]).unwrap();
    assert!(matches!(
        b.append(&[b"from b".to_vec()]),
        Err(LedgerError::Forked { expected: 0 })
    ));
    assert!(matches!(
        b.append(&[b"again".to_vec()]),
        Err(LedgerError::Poisoned)
    ));
    drop((a, b));
    let ledger = open(&e.data, &e.log);
    assert_eq!(ledger.size(), 1);
    assert_eq!(ledger.entry(0).unwrap(), b"from a");
}

const CHILD_ENV: &str = "CONDUCT_LEDGER_KILL9_DIR";

/// The child half of the kill -9 test: does nothing unless re-executed with `CHILD_ENV` set;
/// then appends from 4 threads forever, recording each index only after `append` returned.
#[test]
fn kill9_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    let dir = PathBuf::from(dir);
    let seq = Arc::new(Sequencer::spawn(open(&dir.join("data"), &dir.join("log")), 256).unwrap());
    let acks = Arc::new(Mutex::new(
        fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("acks"))
            .unwrap(),
    ));
    let pid = std::process::id();
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let (seq, acks) = (seq.clone(), acks.clone());
            std::thread::spawn(move || {
                for n in 0u64.. {
                    let pad = "x".repeat((n as usize * 37 + t * 11) % 300);
                    let entry = format!("pid {pid} thread {t} n {n} {pad}");
                    let idx = seq.append_blocking(entry.clone().into_bytes()).unwrap();
                    let line = format!("{idx} {entry}\n");
                    acks.lock().unwrap().write_all(line.as_bytes()).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

#[test]
fn kill9_at_random_moments_loses_no_acknowledged_entry() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut total_acks = 0;
    for round in 0..5u64 {
        let mut child = std::process::Command::new(&exe)
            .args(["kill9_child", "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, tmp.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos() as u64;
        std::thread::sleep(Duration::from_millis(300 + (nanos ^ (round * 7919)) % 500));
        child.kill().unwrap(); // SIGKILL on Unix
        child.wait().unwrap();

        let state = state(&tmp.path().join("data"));
        let ledger = Ledger::open_log(
            state.log().unwrap(),
            key(),
            Dir::shared(tmp.path()).unwrap(),
        )
        .unwrap();
        // Every acknowledged entry is there, at its index.
        // A SIGKILL can land inside the child's `write` of an ack line (Linux stops a write
        // to a regular file at a page boundary when a fatal signal is pending), so the file
        // may end in a torn line. That line was never whole, so it acknowledges nothing; cut
        // it off here, or the next round's child appends its first line onto it.
        let acks_path = tmp.path().join("acks");
        let acks = fs::read_to_string(&acks_path).unwrap_or_default();
        let whole = acks.rfind('\n').map_or(0, |end| end + 1);
        if whole < acks.len() {
            fs::OpenOptions::new()
                .write(true)
                .open(&acks_path)
                .unwrap()
                .set_len(whole as u64)
                .unwrap();
        }
        let complete = &acks[..whole];
        let lines: Vec<&str> = complete.lines().collect();
        for line in &lines {
            let (idx, entry) = line.split_once(' ').unwrap();
            let idx: u64 = idx.parse().unwrap();
            assert_eq!(
                ledger.entry(idx).unwrap(),
                entry.as_bytes(),
                "round {round}"
            );
        }
        total_acks = lines.len();
        eprintln!(
            "round {round}: {total_acks} acknowledged, size {}",
            ledger.size()
        );
        // No partial entry: every stored entry hashes into the signed root.
        let stored: Vec<Hash> = (0..ledger.size())
            .map(|i| leaf_hash(&ledger.entry(i).unwrap()))
            .collect();
        assert_eq!(root(&stored), ledger.root());
        let (size, r) = (ledger.size(), ledger.root());
        drop(ledger);
        let (psize, proot, _) = verify_published(&tmp.path().join("log"));
        assert_eq!((psize, proot), (size, r), "round {round}");
    }
    assert!(total_acks > 0, "the child acknowledged nothing");
}
