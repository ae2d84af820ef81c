//! Vow chains through the sequencer: records are chained in the log's transaction, concurrent
//! report-ins on one vow get contiguous seqs, refused jobs change nothing, a signed vow cannot
//! be taken twice, and the chain checker accepts what the store wrote. On the state
//! `CONDUCT_TEST_STATE` names (tests/run.sh runs it on SQLite and on PostgreSQL).

use std::sync::Arc;

use conduct_core::signing::{PinnedKey, ServiceKey};
use conduct_core::vow::links::LinkChecker;
use conduct_core::vow::record::declared_ys;
use conduct_indexer::ledger::{Ledger, LedgerError, Refusal, Sequencer};
use conduct_indexer::tree::Dir;
use conduct_indexer::vows::{entry_job, vow_job, NewEntry, NewVow};

mod common;

const ORIGIN: &str = "localhost:8402/log";

fn key() -> ServiceKey {
    ServiceKey::from_seed(&[7; 32], ORIGIN)
}

fn new_vow(signed: Option<&str>) -> NewVow {
    NewVow {
        origin: ORIGIN.into(),
        agent: "billing-bot".into(),
        text: "answer billing questions honestly".into(),
        cadence_hours: 24.0,
        cadence_seconds: 86_400,
        wallet: signed.map(|_| [1; 20]),
        wallet_signature: signed.map(str::to_owned),
        signed_message_sha256: signed.map(|s| format!("{s}-message")),
        sealed: false,
        sandbox_reason: None,
        at: 1_000,
    }
}

fn entry(vow_id: &str, at: u64) -> NewEntry {
    NewEntry {
        vow_id: vow_id.into(),
        trace_sha256: [3; 32],
        context_key: "monitored".into(),
        n_turns: 2,
        meter: conduct_core::meter::Meter::DEFAULT,
        profile: conduct_core::meter::measure(conduct_core::meter::Meter::DEFAULT, &[], &[0; 32]),
        declared_y: Some(declared_ys(["answer billing"])),
        y_consistency: Some(1.0),
        note: Some("all fine".into()),
        attested: false,
        trace_donated: false,
        at,
        proof: conduct_core::vow::record::Proof::SandboxOpen,
    }
}

#[test]
fn chains_are_built_in_the_log_transaction() {
    let tmp = tempfile::tempdir().unwrap();
    let state = common::state(tmp.path());
    let ledger = Ledger::open_log(
        state.log().unwrap(),
        key(),
        Dir::shared(tmp.path()).unwrap(),
    )
    .unwrap();
    let seq = Arc::new(Sequencer::spawn(ledger, 64).unwrap());
    let vow = seq
        .submit_job_blocking(vow_job(key(), new_vow(None)))
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(vow.leaf.as_ref().unwrap()).unwrap();
    let id = v["vow_id"].as_str().unwrap().to_owned();
    assert_eq!(v["sandbox"], true);

    // 8 threads x 25 report-ins on the same vow.
    let handles: Vec<_> = (0..8)
        .map(|t| {
            let (seq, id) = (seq.clone(), id.clone());
            std::thread::spawn(move || {
                (0..25)
                    .map(|i| {
                        seq.submit_job_blocking(entry_job(key(), entry(&id, 2_000 + t * 100 + i)))
                            .unwrap()
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let appended: Vec<_> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    assert_eq!(appended.len(), 200);

    // Unknown vow: refused, nothing written.
    let size = seq.head().size;
    match seq.submit_job_blocking(entry_job(key(), entry("0000000000000000", 5))) {
        Err(LedgerError::Refused(Refusal::UnknownVow { .. })) => {}
        other => panic!("{other:?}"),
    }
    assert_eq!(seq.head().size, size);

    // A signed vow cannot be taken twice with the same signed message.
    seq.submit_job_blocking(vow_job(key(), new_vow(Some("0xsig"))))
        .unwrap();
    match seq.submit_job_blocking(vow_job(key(), new_vow(Some("0xsig")))) {
        Err(LedgerError::Refused(r @ Refusal::VowTaken { .. })) => {
            assert!(r.detail().contains("already taken"))
        }
        other => panic!("{other:?}"),
    }

    let reader = state.vows().unwrap();
    let (row, records) = reader.links(&id).unwrap().unwrap();
    assert_eq!(row.head_seq, 200);
    assert_eq!(records.len(), 201);
    let mut checker = LinkChecker::new(
        PinnedKey::parse(&key().vkey()).unwrap(),
        Some(ORIGIN.into()),
    );
    for (i, leaf) in &records {
        checker.leaf(*i, leaf).unwrap();
    }
    assert_eq!(checker.entries, 200);
    assert_eq!(reader.all().unwrap().len(), 2);
    assert!(reader.vow("ffffffffffffffff").unwrap().is_none());
    // Read for an append: the same row (its head entry's index page read on the way).
    let to_append = reader.vow_to_append(&id).unwrap().unwrap();
    assert_eq!(to_append, row);
    assert!(reader.vow_to_append("ffffffffffffffff").unwrap().is_none());
}
