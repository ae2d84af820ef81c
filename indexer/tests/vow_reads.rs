//! The vows' reads (`conduct_indexer::state::vows::VowReads`) on the state `CONDUCT_TEST_STATE`
//! names: a log of vows, entries, npub bindings (one moved to another vow), a pledge row and
//! familiars is written through real batches, and each of the 22 reads is checked. On
//! PostgreSQL the same log is also written to SQLite, and every read must answer the same on
//! both (tests/run.sh runs this suite both ways).

use std::path::Path;

use conduct_core::signing::ServiceKey;
use conduct_indexer::ledger::append::{
    Append, BindingIndex, FamiliarIndex, PledgeIndex, Refusal, VowHead, VowIndex,
};
use conduct_indexer::ledger::{Job, Ledger};
use conduct_indexer::state::vows::VowReader;
use conduct_indexer::state::State;
use conduct_indexer::tree::Dir;

mod common;

const T0: u64 = 1_795_262_400;
const WALLET: &str = "0x00000000000000000000000000000000000000aa";

type Step = Box<dyn FnOnce(&mut dyn Append, u64) -> Result<(), Refusal> + Send>;

fn step(f: impl FnOnce(&mut dyn Append, u64) -> Result<(), Refusal> + Send + 'static) -> Step {
    Box::new(f)
}

fn vow(vow_id: &'static str, agent: &'static str, idx: u64, signed: bool) -> Step {
    step(move |a, _| {
        a.put_vow(&VowIndex {
            vow_id,
            log_index: idx,
            agent,
            text: "",
            sealed: false,
            sandbox: !signed,
            wallet: signed.then(|| WALLET.to_owned()),
            signed_message: signed.then_some(vow_id),
            cadence_seconds: 3_600,
            at: T0 + idx,
            head_hash: format!("h-{vow_id}-0"),
        })?;
        Ok(())
    })
}

/// The log every backend is given: jobs whose leaves are `leaf <index>`.
fn fill(state: &State, dir: &Path) -> Ledger {
    let key = ServiceKey::from_seed(&[5; 32], "localhost:8402/log");
    let tree = Dir::holding_log(&dir.join("site/log")).unwrap();
    let mut ledger = Ledger::open_log(state.log().unwrap(), key, tree).unwrap();
    let batches: Vec<Vec<Step>> = vec![
        vec![
            vow("v-a", "alpha", 0, true),
            vow("v-b", "alpha", 1, false),
            vow("v-c", "beta", 2, false),
        ],
        (1..=3u64)
            .map(|seq| {
                step(move |a, idx| {
                    let head = VowHead {
                        seq,
                        hash: format!("h-v-a-{seq}"),
                        at: T0 + 100 + seq,
                    };
                    a.move_head("v-a", &head, idx)?;
                    Ok(())
                })
            })
            .collect(),
        vec![
            step(|a, idx| binding(a, idx, "npub1", "v-a")),
            step(|a, idx| binding(a, idx, "npub2", "v-a")),
            step(|a, idx| binding(a, idx, "npub1", "v-b")),
            step(|a, idx| {
                a.put_pledge(&PledgeIndex {
                    log_index: idx,
                    vow_id: "v-a",
                    wallet: WALLET.into(),
                    at: T0,
                    leaf: b"not a pledge",
                })?;
                Ok(())
            }),
            step(|a, idx| familiar(a, idx, "fam-2")),
            step(|a, idx| familiar(a, idx, "fam-1")),
        ],
    ];
    for steps in batches {
        let jobs = steps
            .into_iter()
            .map(|s| {
                Job::build(move |a, idx| {
                    s(a, idx)?;
                    Ok(format!("leaf {idx}").into_bytes())
                })
            })
            .collect();
        for r in ledger.append_jobs(jobs).unwrap() {
            r.unwrap();
        }
    }
    ledger
}

fn binding(a: &mut dyn Append, idx: u64, npub: &str, vow_id: &str) -> Result<(), Refusal> {
    a.put_binding(&BindingIndex {
        log_index: idx,
        npub,
        pubkey: "ab",
        vow_id,
        at: T0 + idx,
    })?;
    Ok(())
}

fn familiar(a: &mut dyn Append, idx: u64, id: &str) -> Result<(), Refusal> {
    a.put_familiar(&FamiliarIndex {
        familiar_id: id,
        log_index: idx,
        owner_wallet: WALLET,
        owner_vow: Some("v-a"),
        at: T0 + idx,
        leaf: format!("familiar {id}").as_bytes(),
    })?;
    Ok(())
}

/// Every read, as text (what two backends must agree on byte for byte).
fn answers(r: &VowReader) -> Vec<String> {
    vec![
        format!("{:?}", r.vow("v-a")),
        format!("{:?}", r.vow("nobody")),
        format!("{:?}", r.vow_to_append("v-a")),
        format!("{:?}", r.all()),
        format!("{:?}", r.taken_after(None, 2)),
        format!("{:?}", r.taken_after(Some(0), 10)),
        format!("{:?}", r.log_size()),
        format!("{:?}", r.touched_since(0, 100)),
        format!("{:?}", r.touched_since(4, 2)),
        format!("{:?}", r.interpreted_since(0)),
        format!("{:?}", r.readings_asked()),
        format!("{:?}", r.clocks_after("", 2)),
        format!("{:?}", r.clocks_after("v-a", 10)),
        format!("{:?}", r.matching("alpha")),
        format!(
            "{:?}",
            r.matching(&WALLET.to_uppercase().replace("0X", "0x"))
        ),
        format!("{:?}", r.links("v-a")),
        format!("{:?}", r.links("nobody")),
        format!("{:?}", r.reading("v-a")),
        format!("{:?}", r.links_from("v-a", 2)),
        format!("{:?}", r.links_from("v-b", 0)),
        format!("{:?}", r.binding("npub1")),
        format!("{:?}", r.npubs_of("v-a")),
        format!("{:?}", r.bindings()),
        format!("{:?}", r.npubs_bound_since(7)),
        format!("{:?}", r.npubs_ever_of("v-a")),
        format!("{:?}", r.pledge("v-a")),
        format!("{:?}", r.familiar("fam-1")),
        format!("{:?}", r.familiars()),
        format!("{:?}", r.board_records()),
    ]
}

#[test]
fn every_read_answers_what_the_log_holds() {
    let dir = tempfile::tempdir().unwrap();
    let state = common::state(&dir.path().join("data"));
    let ledger = fill(&state, dir.path());
    let r = state.vows().unwrap();
    let a = r.vow("v-a").unwrap().unwrap();
    assert_eq!(
        (a.head_seq, a.head_at, a.wallet.as_deref()),
        (3, T0 + 103, Some(WALLET))
    );
    assert_eq!(r.vow_to_append("v-a").unwrap(), Some(a));
    let ids = |rows: Vec<conduct_indexer::state::vows::VowRow>| -> Vec<String> {
        rows.into_iter().map(|v| v.vow_id).collect()
    };
    assert_eq!(ids(r.all().unwrap()), ["v-a", "v-b", "v-c"]);
    assert_eq!(ids(r.taken_after(Some(0), 10).unwrap()), ["v-b", "v-c"]);
    assert_eq!(ids(r.matching("alpha").unwrap()), ["v-a", "v-b"]);
    assert_eq!(
        ids(r
            .matching("0x00000000000000000000000000000000000000AA")
            .unwrap()),
        ["v-a"]
    );
    assert_eq!(r.log_size().unwrap(), ledger.size());
    let touched = r.touched_since(0, 100).unwrap();
    let indexes: Vec<u64> = touched.iter().map(|(_, i)| *i).collect();
    assert_eq!(
        indexes,
        (0..9).collect::<Vec<_>>(),
        "vows, entries, bindings: {touched:?}"
    );
    assert_eq!(r.touched_since(4, 2).unwrap().len(), 2);
    let clocks = r.clocks_after("v-a", 10).unwrap();
    assert_eq!(
        clocks.iter().map(|c| c.vow_id.as_str()).collect::<Vec<_>>(),
        ["v-b", "v-c"]
    );
    assert_eq!((clocks[0].start, clocks[0].cadence), (T0 + 1, 3_600));
    let (row, records) = r.links("v-a").unwrap().unwrap();
    assert_eq!(row.vow_id, "v-a");
    let leaves: Vec<(u64, String)> = records
        .into_iter()
        .map(|(i, l)| (i, String::from_utf8(l).unwrap()))
        .collect();
    assert_eq!(
        leaves,
        [(0, "leaf 0"), (3, "leaf 3"), (4, "leaf 4"), (5, "leaf 5")]
            .map(|(i, l)| (i, l.to_owned()))
    );
    let (head, from_two) = r.links_from("v-a", 2).unwrap().unwrap();
    assert_eq!((head.seq, head.hash.as_str()), (3, "h-v-a-3"));
    assert_eq!(from_two.iter().map(|(i, _)| *i).collect::<Vec<_>>(), [4, 5]);
    assert!(r.links("nobody").unwrap().is_none());
    assert!(r.links_from("nobody", 0).unwrap().is_none());
    // npub1 moved from v-a to v-b; npub2 stays on v-a.
    assert_eq!(r.binding("npub1").unwrap().unwrap().vow_id, "v-b");
    let of_a: Vec<String> = r
        .npubs_of("v-a")
        .unwrap()
        .into_iter()
        .map(|b| b.npub)
        .collect();
    assert_eq!(of_a, ["npub2"]);
    let all: Vec<(String, String)> = r
        .bindings()
        .unwrap()
        .into_iter()
        .map(|b| (b.npub, b.vow_id))
        .collect();
    assert_eq!(
        all,
        [
            ("npub1".into(), "v-b".into()),
            ("npub2".into(), "v-a".into())
        ]
    );
    assert_eq!(r.npubs_bound_since(8).unwrap(), ["npub1"]);
    assert_eq!(r.npubs_ever_of("v-a").unwrap(), ["npub1", "npub2"]);
    // A pledge row whose leaf names no pledge is read as none, never an error.
    assert_eq!(r.pledge("v-a").unwrap(), None);
    assert_eq!(
        r.familiar("fam-1").unwrap().unwrap().leaf,
        b"familiar fam-1"
    );
    let fams: Vec<String> = r
        .familiars()
        .unwrap()
        .into_iter()
        .map(|f| f.familiar_id)
        .collect();
    assert_eq!(fams, ["fam-2", "fam-1"], "in log order");
    assert!(r.interpreted_since(0).unwrap().is_empty());
    assert!(r.readings_asked().unwrap().is_empty());
    assert_eq!(r.reading("v-a").unwrap(), None);

    // The other backend, given the same log, answers every read the same.
    if matches!(state, State::Postgres(_)) {
        let other = tempfile::tempdir().unwrap();
        let sqlite = State::open(None, &other.path().join("data")).unwrap();
        fill(&sqlite, other.path());
        let theirs = sqlite.vows().unwrap();
        for (i, (ours, theirs)) in answers(&r).into_iter().zip(answers(&theirs)).enumerate() {
            assert_eq!(ours, theirs, "read {i}");
        }
    }
}
