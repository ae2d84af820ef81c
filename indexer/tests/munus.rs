//! The quest board through the sequencer: board records are appended only when the board
//! allows them, checked inside the log's transaction (first come under concurrency, one claim
//! per vow per UTC day, a sandbox vow or another wallet refused, signatures once, lapses only
//! when due, a payment's transaction once), and read back in log order. On the state
//! `CONDUCT_TEST_STATE` names (tests/run.sh runs it on SQLite and on PostgreSQL).

use std::sync::Arc;

use conduct_core::munus::record::{BoardRecord, Claim, Delivery, Lapse, Payment};
use conduct_core::munus::{parse_quests, Quest, LAPSE_SECONDS};
use conduct_core::vow::record::checksum_address;
use conduct_indexer::ledger::{Ledger, LedgerError, Sequencer};
use conduct_indexer::munus::{board_job, Flags};
use conduct_indexer::state::State;
use conduct_indexer::tree::Dir;
use conduct_indexer::vows::{vow_job, NewVow};
use serde_json::json;

mod common;

const ORIGIN: &str = "localhost:8402/log";
const T0: u64 = 1_795_262_400; // noon UTC

fn key() -> conduct_core::signing::ServiceKey {
    conduct_core::signing::ServiceKey::from_seed(&[7; 32], ORIGIN)
}

fn quests() -> Vec<Quest> {
    let q = |id: &str| json!({"id": id, "title": "t", "rung": "r", "what": "w", "deliverable": "d", "check": "review"});
    parse_quests(&serde_json::to_vec(&json!({"quests": [q("a"), q("b")]})).unwrap()).items
}

fn vow(seq: &Sequencer, n: u8, signed: bool) -> String {
    let leaf = seq
        .submit_job_blocking(vow_job(
            key(),
            NewVow {
                origin: ORIGIN.into(),
                agent: format!("worker-{n}"),
                text: "improve the service".into(),
                cadence_hours: 24.0,
                cadence_seconds: 86_400,
                wallet: signed.then_some([n; 20]),
                wallet_signature: signed.then(|| format!("0xsig{n}")),
                signed_message_sha256: signed.then(|| format!("m{n}")),
                sealed: false,
                sandbox_reason: None,
                at: 1_000,
            },
        ))
        .unwrap()
        .leaf
        .unwrap();
    serde_json::from_slice::<serde_json::Value>(&leaf).unwrap()["vow_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn claim(q: &str, vow_id: &str, n: u8, sig: &str, at: u64) -> BoardRecord {
    BoardRecord::Claim(Claim {
        quest_id: q.into(),
        vow_id: vow_id.into(),
        wallet: checksum_address(&[n; 20]),
        wallet_signature: sig.into(),
        at,
    })
}

/// The refusal's text: its slug for a conflict, `not found: ...` for an unknown vow.
fn refused(r: Result<conduct_indexer::ledger::Appended, LedgerError>) -> String {
    match r {
        Err(LedgerError::Refused(r)) if r.is_conflict() => r.detail(),
        Err(LedgerError::Refused(r)) => r.to_string(),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn the_board_is_checked_in_the_log_transaction() {
    let tmp = tempfile::tempdir().unwrap();
    let store = common::state(tmp.path());
    let ledger = Ledger::open_log(
        store.log().unwrap(),
        key(),
        Dir::shared(tmp.path()).unwrap(),
    )
    .unwrap();
    let seq = Arc::new(Sequencer::spawn(ledger, 64).unwrap());
    let vows: Vec<String> = (1..=8).map(|n| vow(&seq, n, true)).collect();
    let sandbox = vow(&seq, 9, false);
    let job = |r: BoardRecord| board_job(key(), r, quests(), Flags::new());

    // A sandbox vow, another wallet, an unknown vow: refused, nothing written.
    assert_eq!(
        refused(seq.submit_job_blocking(job(claim("a", &sandbox, 9, "0x01", T0)))),
        "munus-sandbox-vow"
    );
    assert_eq!(
        refused(seq.submit_job_blocking(job(claim("a", &vows[0], 2, "0x01", T0)))),
        "munus-wrong-wallet"
    );
    assert!(
        refused(seq.submit_job_blocking(job(claim("a", "00000000000000ff", 1, "0x01", T0))))
            .starts_with("not found")
    );

    // Eight vows race for quest `a`: exactly one wins.
    let handles: Vec<_> = vows
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let (seq, v) = (seq.clone(), v.clone());
            std::thread::spawn(move || {
                seq.submit_job_blocking(board_job(
                    key(),
                    claim("a", &v, i as u8 + 1, &format!("0xc{i}"), T0),
                    quests(),
                    Flags::new(),
                ))
            })
        })
        .collect();
    let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let wins: Vec<usize> = (0..8).filter(|i| results[*i].is_ok()).collect();
    assert_eq!(wins.len(), 1, "{results:?}");
    for (i, r) in results.into_iter().enumerate() {
        if !wins.contains(&i) {
            assert_eq!(refused(r), "munus-quest-claimed");
        }
    }
    let w = wins[0];
    let winner = &vows[w];
    let claim_index = seq_index(&store, "a");

    // The winner may not claim `b` the same UTC day; another vow may, but not with a
    // replayed signature.
    assert_eq!(
        refused(seq.submit_job_blocking(job(claim("b", winner, w as u8 + 1, "0xfresh", T0 + 60)))),
        "munus-one-claim-a-day"
    );
    let o = (w + 1) % 8;
    assert_eq!(
        refused(seq.submit_job_blocking(job(claim(
            "b",
            &vows[o],
            o as u8 + 1,
            &format!("0xc{w}"),
            T0 + 60
        )))),
        "munus-replayed-signature"
    );

    // A delivery by the claimant on its claim; not yet due to lapse.
    let delivery = BoardRecord::Delivery(Delivery {
        quest_id: "a".into(),
        vow_id: winner.clone(),
        claim: claim_index,
        link: "https://github.com/o/r/pull/1".into(),
        wallet_signature: "0xd1".into(),
        at: T0 + 100,
    });
    seq.submit_job_blocking(job(delivery.clone())).unwrap();
    // At most ten deliveries per claim per UTC day (each is a permanent leaf).
    let more = |n: usize| {
        let mut d = delivery.clone();
        if let BoardRecord::Delivery(x) = &mut d {
            x.wallet_signature = format!("0xd1{n:02}");
        }
        d
    };
    for n in 1..conduct_core::munus::MAX_DELIVERIES_PER_DAY {
        seq.submit_job_blocking(job(more(n))).unwrap();
    }
    assert_eq!(
        refused(seq.submit_job_blocking(job(more(99)))),
        "munus-delivery-daily-limit"
    );
    let lapse = BoardRecord::Lapse(Lapse {
        quest_id: "a".into(),
        vow_id: winner.clone(),
        claim: claim_index,
        idle_since: T0 + 100,
        at: T0 + 100 + LAPSE_SECONDS,
    });
    let mut early = lapse.clone();
    if let BoardRecord::Lapse(l) = &mut early {
        l.at -= 1;
    }
    assert_eq!(
        refused(seq.submit_job_blocking(job(early))),
        "munus-lapse-not-due"
    );
    // Due: a claim on `a` waits for the lapse record, then the lapse is taken once.
    let later = T0 + 100 + LAPSE_SECONDS;
    assert_eq!(
        refused(seq.submit_job_blocking(job(claim("a", &vows[o], o as u8 + 1, "0xlate", later)))),
        "munus-lapse-pending"
    );
    seq.submit_job_blocking(job(lapse.clone())).unwrap();
    assert_eq!(
        refused(seq.submit_job_blocking(job(lapse))),
        "munus-lapse-not-due"
    );
    seq.submit_job_blocking(job(claim("a", &vows[o], o as u8 + 1, "0xlate", later)))
        .unwrap();

    // A payment's transaction is recorded once.
    let pay = BoardRecord::Payment(Payment {
        quest_id: "a".into(),
        claim: None,
        to: checksum_address(&[o as u8 + 1; 20]),
        amount_scry: "1000000".into(),
        token: format!("0x{}", "cd".repeat(20)),
        chain_id: 31337,
        tx: format!("0x{}", "ef".repeat(32)),
        at: later + 10,
    });
    seq.submit_job_blocking(job(pay.clone())).unwrap();
    assert_eq!(
        refused(seq.submit_job_blocking(job(pay))),
        "munus-payment-recorded"
    );

    let records = store.munus().unwrap().records().unwrap();
    let mut kinds: Vec<&str> = records.iter().map(|(_, r)| r.type_name()).collect();
    let deliveries = kinds.iter().filter(|k| k.contains("delivery")).count();
    assert_eq!(deliveries, conduct_core::munus::MAX_DELIVERIES_PER_DAY);
    // The ten deliveries of one day, as one.
    kinds.dedup();
    assert_eq!(
        kinds,
        [
            "conduct.munus-claim/v1",
            "conduct.munus-delivery/v1",
            "conduct.munus-lapse/v1",
            "conduct.munus-claim/v1",
            "conduct.munus-payment/v1"
        ]
    );
}

fn seq_index(store: &State, quest: &str) -> u64 {
    store
        .munus()
        .unwrap()
        .records()
        .unwrap()
        .into_iter()
        .find(|(_, r)| r.quest_id() == quest)
        .unwrap()
        .0
}
