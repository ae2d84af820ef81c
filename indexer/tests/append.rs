//! The append seam's contract (`conduct_indexer::ledger::append`), the same checks on the
//! state `CONDUCT_TEST_STATE` names (SQLite, or PostgreSQL: tests/run.sh runs both): every
//! method of `Append` through jobs of real batches, single-use values answered once and never
//! raised, a refused job's writes rolled back while the batch goes on, a later job seeing an
//! earlier job's writes, and every write kept across a reopen.

use std::path::Path;

use conduct_core::signing::ServiceKey;
use conduct_indexer::ledger::append::{
    Append, BindingIndex, BoardIndex, Daily, FamiliarIndex, OwnerRecord, PledgeIndex, PutVow,
    Refusal, Signatures, VowHead, VowIndex,
};
use conduct_indexer::ledger::{Appended, Job, Ledger, LedgerError};
use conduct_indexer::tree::Dir;

mod common;
use common::state;

/// Noon UTC.
const T0: u64 = 1_795_262_400;

fn open(dir: &Path) -> Ledger {
    let key = ServiceKey::from_seed(&[5; 32], "localhost:8402/log");
    let tree = Dir::holding_log(&dir.join("site/log")).unwrap();
    Ledger::open_log(state(&dir.join("data")).log().unwrap(), key, tree).unwrap()
}

fn vow<'a>(vow_id: &'a str, log_index: u64, message: Option<&'a str>) -> VowIndex<'a> {
    VowIndex {
        vow_id,
        log_index,
        agent: "agent",
        text: "",
        sealed: false,
        sandbox: message.is_none(),
        wallet: message.map(|_| "0x00000000000000000000000000000000000000aa".to_owned()),
        signed_message: message,
        cadence_seconds: 86_400,
        at: T0,
        head_hash: format!("head-of-{vow_id}"),
    }
}

type Step = Box<dyn FnOnce(&mut dyn Append, u64) -> Result<Vec<u8>, Refusal> + Send>;

/// Run `steps` as the jobs of one batch; each job's leaf is its position.
fn batch(ledger: &mut Ledger, steps: Vec<Step>) -> Vec<Result<Appended, LedgerError>> {
    let jobs = steps
        .into_iter()
        .enumerate()
        .map(|(i, step)| {
            Job::build(move |a, idx| {
                step(a, idx)?;
                Ok(format!("job {i}").into_bytes())
            })
        })
        .collect();
    ledger.append_jobs(jobs).unwrap()
}

fn step(f: impl FnOnce(&mut dyn Append, u64) -> Result<Vec<u8>, Refusal> + Send + 'static) -> Step {
    Box::new(f)
}

#[test]
fn vows_and_their_heads_are_indexed_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut ledger = open(dir.path());
    let results = batch(
        &mut ledger,
        vec![
            step(|a, idx| {
                assert_eq!(a.put_vow(&vow("v1", idx, Some("m1")))?, PutVow::Indexed);
                assert_eq!(a.vow_head("v1")?.map(|h| h.seq), Some(0));
                Ok(vec![])
            }),
            // The same batch sees v1: its signed message is taken, its id and index too.
            step(|a, idx| {
                assert_eq!(
                    a.put_vow(&vow("v2", idx, Some("m1")))?,
                    PutVow::TakenAs("v1".into())
                );
                assert_eq!(a.put_vow(&vow("v1", idx, Some("m9")))?, PutVow::Collision);
                assert_eq!(a.put_vow(&vow("v3", 0, None))?, PutVow::Collision);
                assert!(a.vow_head("v2")?.is_none());
                Ok(vec![])
            }),
            step(|a, idx| {
                assert_eq!(a.put_vow(&vow("sandbox", idx, None))?, PutVow::Indexed);
                Ok(vec![])
            }),
        ],
    );
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    drop(ledger);
    let mut ledger = open(dir.path());
    let results = batch(
        &mut ledger,
        vec![step(|a, idx| {
            let head = a.vow_head("v1")?.expect("v1 kept");
            assert_eq!(
                (head.seq, head.hash.as_str(), head.at),
                (0, "head-of-v1", T0)
            );
            let next = VowHead {
                seq: 1,
                hash: "h1".into(),
                at: T0 + 60,
            };
            a.move_head("v1", &next, idx)?;
            assert_eq!(a.vow_head("v1")?, Some(next));
            assert_eq!(a.use_report_signature("0xsig", "v1", 1)?, None);
            assert_eq!(a.use_report_signature("0xsig", "v1", 2)?, Some(1));
            assert!(a.vow_head("nobody")?.is_none());
            Ok(vec![])
        })],
    );
    assert!(results[0].is_ok(), "{results:?}");
    drop(ledger);
    let mut ledger = open(dir.path());
    batch(
        &mut ledger,
        vec![step(|a, _| {
            assert_eq!(a.vow_head("v1")?.map(|h| h.seq), Some(1));
            assert_eq!(a.use_report_signature("0xsig", "v1", 5)?, Some(1));
            Ok(vec![])
        })],
    )
    .into_iter()
    .for_each(|r| assert!(r.is_ok(), "{r:?}"));
}

#[test]
fn a_refused_job_keeps_nothing_and_the_batch_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let mut ledger = open(dir.path());
    let results = batch(
        &mut ledger,
        vec![
            step(|a, idx| {
                assert!(a.use_signature(Signatures::Munus, "kept", idx)?);
                Ok(vec![])
            }),
            step(|a, idx| {
                assert!(a.use_signature(Signatures::Munus, "refused", idx)?);
                assert_eq!(
                    a.put_vow(&vow("gone", idx, Some("m-gone")))?,
                    PutVow::Indexed
                );
                Err(Refusal::MunusLapsePending)
            }),
            step(|a, idx| {
                // The refused job's writes are gone; the first job's are here.
                assert!(!a.signature_used(Signatures::Munus, "refused")?);
                assert!(a.signature_used(Signatures::Munus, "kept")?);
                assert!(a.vow_head("gone")?.is_none());
                assert!(!a.use_signature(Signatures::Munus, "kept", idx)?);
                Ok(vec![])
            }),
        ],
    );
    assert!(results[0].is_ok());
    assert!(matches!(
        results[1],
        Err(LedgerError::Refused(Refusal::MunusLapsePending))
    ));
    assert!(results[2].is_ok(), "{results:?}");
    // The refused job took no index.
    assert_eq!(ledger.size(), 2);
    // An oversized leaf is refused the same way, its writes rolled back.
    let big = ledger
        .append_jobs(vec![Job::build(|a, idx| {
            a.use_signature(Signatures::Npub, "big", idx)?;
            Ok(vec![0; 70_000])
        })])
        .unwrap();
    assert!(matches!(big[0], Err(LedgerError::EntryTooLarge { .. })));
    batch(
        &mut ledger,
        vec![step(|a, _| {
            assert!(!a.signature_used(Signatures::Npub, "big")?);
            Ok(vec![])
        })],
    );
    assert_eq!(ledger.size(), 3);
}

#[test]
fn every_set_of_signatures_is_its_own_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let mut ledger = open(dir.path());
    let sets = [
        Signatures::Munus,
        Signatures::Npub,
        Signatures::Witness,
        Signatures::Familiar,
    ];
    batch(
        &mut ledger,
        vec![step(move |a, idx| {
            for (i, set) in sets.into_iter().enumerate() {
                let own = format!("sig-{i}");
                assert!(a.use_signature(set, &own, idx)?);
                for (j, other) in sets.into_iter().enumerate() {
                    assert_eq!(a.signature_used(other, &own)?, i == j, "{set:?} {other:?}");
                }
            }
            Ok(vec![])
        })],
    );
    drop(ledger);
    let mut ledger = open(dir.path());
    batch(
        &mut ledger,
        vec![step(move |a, idx| {
            for (i, set) in sets.into_iter().enumerate() {
                assert!(!a.use_signature(set, &format!("sig-{i}"), idx)?);
            }
            Ok(vec![])
        })],
    );
}

#[test]
fn owner_records_check_their_vow_and_count_by_day() {
    let dir = tempfile::tempdir().unwrap();
    let mut ledger = open(dir.path());
    let wallet = "0x00000000000000000000000000000000000000AA";
    let results = batch(
        &mut ledger,
        vec![
            step(|a, idx| {
                a.put_vow(&vow("signed", idx, Some("m")))?;
                a.put_vow(&vow("sandbox", idx + 1_000, None))?;
                Ok(vec![])
            }),
            step(move |a, _| {
                a.require_sworn("signed", wallet, OwnerRecord::Munus)?;
                let sandbox = a.require_sworn("sandbox", wallet, OwnerRecord::Munus);
                assert!(matches!(sandbox, Err(Refusal::SandboxVow { .. })));
                let other = a.require_sworn("signed", "0xbb", OwnerRecord::Munus);
                assert!(matches!(other, Err(Refusal::WrongWallet { .. })));
                let unknown = a.require_sworn("nobody", wallet, OwnerRecord::Munus);
                assert!(matches!(unknown, Err(Refusal::UnknownVow { .. })));
                let sworn = a.sworn("signed")?.unwrap();
                assert!(!sworn.sandbox);
                assert_eq!(sworn.wallet.as_deref(), Some(&*wallet.to_lowercase()));
                Ok(vec![])
            }),
            step(|a, idx| {
                for (n, at) in [T0, T0 + 10, T0 + 86_400].into_iter().enumerate() {
                    let npub = format!("npub{n}");
                    a.put_binding(&BindingIndex {
                        log_index: idx * 10 + n as u64,
                        npub: &npub,
                        pubkey: "ab",
                        vow_id: "signed",
                        at,
                    })?;
                    a.put_pledge(&PledgeIndex {
                        log_index: idx * 10 + n as u64,
                        vow_id: "signed",
                        wallet: "0xaa".into(),
                        at,
                        leaf: b"{}",
                    })?;
                }
                Ok(vec![])
            }),
        ],
    );
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    drop(ledger);
    let mut ledger = open(dir.path());
    batch(
        &mut ledger,
        vec![step(|a, _| {
            for daily in [Daily::Bindings, Daily::Pledges] {
                assert_eq!(a.count_on_day(daily, "signed", T0 + 3_600)?, 2, "{daily:?}");
                assert_eq!(a.count_on_day(daily, "signed", T0 + 86_400)?, 1);
                assert_eq!(a.count_on_day(daily, "other", T0)?, 0);
            }
            Ok(vec![])
        })],
    );
}

#[test]
fn board_payments_and_familiars_are_kept_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut ledger = open(dir.path());
    let results = batch(
        &mut ledger,
        vec![step(|a, idx| {
            let row = |log_index, tx: Option<&str>| BoardIndex {
                log_index,
                quest_id: "q",
                kind: "conduct.munus-payment/v1",
                tx: tx.map(str::to_owned),
                leaf: b"not a board record",
            };
            assert!(a.put_board_record(&row(idx, Some("0xt1")))?);
            assert!(!a.put_board_record(&row(idx + 1, Some("0xt1")))?, "tx once");
            assert!(a.put_board_record(&row(idx + 2, None))?);
            assert!(!a.put_board_record(&row(idx + 2, None))?, "index once");
            // Rows that name no board record are skipped, never an error.
            assert!(a.board_records()?.is_empty());
            let familiar = |id, log_index| FamiliarIndex {
                familiar_id: id,
                log_index,
                owner_wallet: "0xaa",
                owner_vow: Some("v"),
                at: T0,
                leaf: b"{}",
            };
            assert!(a.put_familiar(&familiar("f1", idx))?);
            assert!(!a.put_familiar(&familiar("f1", idx + 1))?);
            assert!(!a.put_familiar(&familiar("f2", idx))?);
            Ok(vec![])
        })],
    );
    assert!(results[0].is_ok(), "{results:?}");
}
