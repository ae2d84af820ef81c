//! The State seam's chain index (`conduct_indexer::state::chain`) on the state
//! `CONDUCT_TEST_STATE` names (tests/run.sh runs SQLite and PostgreSQL): rows and cursor move
//! together, a rewind deletes what is above the ancestor and names what it touched, another
//! chain starts the index over, anchors are bounded, checks are kept and replaced.

use conduct_indexer::chain::registry::{EventKind, RegistryEvent, ToolState};
use conduct_indexer::chain::reputation::{RepKind, ReputationEvent};
use conduct_indexer::state::chain::{Check, ANCHORS_KEPT};

mod common;

fn reg(block: u64, tool: u64) -> RegistryEvent {
    RegistryEvent {
        block_number: block,
        block_hash: format!("0x{block:064x}"),
        log_index: 0,
        tx_hash: format!("0x{:064x}", block + 1000),
        tool_id: tool,
        kind: EventKind::Registered {
            creator: "0x00000000000000000000000000000000000000aa".into(),
            predicate: "0x0000000000000000000000000000000000000000".into(),
            uri: format!("https://t.example/.well-known/ai-tool/t{tool}.json"),
            hash: format!("0x{:064x}", tool),
        },
    }
}

fn hash(n: u64) -> String {
    format!("0x{n:064x}")
}

#[test]
fn rows_and_cursor_move_together_and_a_rewind_deletes_what_is_above() {
    let dir = tempfile::tempdir().unwrap();
    let db = common::state(dir.path())
        .chain("eip155:1/registry:0x01@0")
        .unwrap();
    assert_eq!(db.cursor().unwrap(), None);
    let touched = db
        .apply(&[reg(3, 1), reg(5, 2)], 10, &hash(10), 100)
        .unwrap();
    assert_eq!(touched, [1, 2].into_iter().collect());
    db.apply(&[reg(12, 3)], 20, &hash(20), 101).unwrap();
    let mut dereg = reg(15, 1);
    dereg.kind = EventKind::Deregistered;
    db.apply(&[dereg], 20, &hash(20), 101).unwrap();
    let tools = db.tools().unwrap();
    assert_eq!(tools.len(), 3);
    assert_eq!(tools[0].state, ToolState::Deregistered);
    assert_eq!(db.cursor().unwrap().unwrap().number, 20);
    // Known positions, highest first: anchors and event blocks.
    let anchors: Vec<u64> = db.anchors().unwrap().into_iter().map(|(n, _)| n).collect();
    assert_eq!(anchors, vec![20, 15, 12, 10, 5, 3]);
    // Rewind to block 10: the events of blocks 12 and 15 go, tool 1 is registered again.
    let (touched, wallets) = db.rewind(Some((10, hash(10))), 102).unwrap();
    assert_eq!(touched, [1, 3].into_iter().collect());
    assert!(wallets.is_empty());
    let tools = db.tools().unwrap();
    assert_eq!(tools.len(), 2);
    assert_eq!(tools[0].state, ToolState::Registered);
    assert_eq!(db.cursor().unwrap().unwrap().number, 10);
    // Reputation events are rewound with the rest; the wallets they touched are named.
    let credit = |n: u64, who: &str, score: &str| ReputationEvent {
        block_number: n,
        block_hash: hash(n),
        log_index: 0,
        tx_hash: hash(n + 500),
        kind: RepKind::Credited {
            who: who.into(),
            actor: "0x00000000000000000000000000000000000000bb".into(),
            amount: "1".into(),
            new_score: score.into(),
            reason: hash(0),
        },
    };
    let w = "0x00000000000000000000000000000000000000aa";
    let (_, wallets) = db
        .apply_all(
            &[],
            &[credit(11, w, "1"), credit(13, w, "2")],
            13,
            &hash(13),
            103,
        )
        .unwrap();
    assert_eq!(wallets, [w.to_owned()].into_iter().collect());
    assert_eq!(db.reputation_events().unwrap().len(), 2);
    let (_, wallets) = db.rewind(Some((11, hash(11))), 103).unwrap();
    assert_eq!(wallets, [w.to_owned()].into_iter().collect());
    let left = db.reputation_events().unwrap();
    assert_eq!((left.len(), left[0].block_number), (1, 11));
    // No common ancestor: everything goes.
    db.rewind(None, 103).unwrap();
    assert!(db.reputation_events().unwrap().is_empty());
    assert!(db.tools().unwrap().is_empty());
    assert_eq!(db.cursor().unwrap(), None);
}

#[test]
fn another_chain_or_registry_starts_the_index_over() {
    let dir = tempfile::tempdir().unwrap();
    let db = common::state(dir.path())
        .chain("eip155:1/registry:0x01@0")
        .unwrap();
    db.apply(&[reg(3, 1)], 10, &hash(10), 100).unwrap();
    drop(db);
    let same = common::state(dir.path())
        .chain("eip155:1/registry:0x01@0")
        .unwrap();
    assert_eq!(same.tools().unwrap().len(), 1);
    drop(same);
    let other = common::state(dir.path())
        .chain("eip155:8453/registry:0x01@0")
        .unwrap();
    assert!(other.tools().unwrap().is_empty());
    assert_eq!(other.cursor().unwrap(), None);
}

#[test]
fn anchors_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let db = common::state(dir.path()).chain("x").unwrap();
    for n in 0..(ANCHORS_KEPT + 50) {
        db.apply(&[], n, &hash(n), n).unwrap();
    }
    let anchors = db.anchors().unwrap();
    assert_eq!(anchors.len(), ANCHORS_KEPT as usize);
    assert_eq!(anchors[0].0, ANCHORS_KEPT + 49);
}

#[test]
fn checks_are_kept_replaced_and_emptied_with_the_chain() {
    let dir = tempfile::tempdir().unwrap();
    let db = common::state(dir.path())
        .chain("eip155:1/registry:0x01@0")
        .unwrap();
    assert_eq!(db.check(1).unwrap(), None);
    let check = |status: &str, at: u64| Check {
        uri: "https://t.example/.well-known/ai-tool/t1.json".into(),
        hash: hash(1),
        status: status.into(),
        reason: (status != "verified").then(|| "timeout".into()),
        computed: (status == "verified").then(|| hash(1)),
        detail: None,
        claims: r#"{"name":"t1"}"#.into(),
        checked_at: at,
    };
    db.put_check(1, &check("unreachable", 10)).unwrap();
    db.put_check(2, &check("verified", 11)).unwrap();
    db.put_check(1, &check("verified", 12)).unwrap();
    assert_eq!(db.check(1).unwrap(), Some(check("verified", 12)));
    let all = db.checks().unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(all[&2], check("verified", 11));
    drop(db);
    let other = common::state(dir.path())
        .chain("eip155:8453/registry:0x01@0")
        .unwrap();
    assert!(other.checks().unwrap().is_empty());
}

#[test]
fn an_event_read_again_at_its_position_replaces_the_one_kept() {
    let dir = tempfile::tempdir().unwrap();
    let db = common::state(dir.path()).chain("x").unwrap();
    db.apply(&[reg(3, 1)], 5, &hash(5), 1).unwrap();
    let mut again = reg(3, 1);
    again.block_hash = hash(333);
    db.apply(&[again.clone()], 5, &hash(5), 2).unwrap();
    assert_eq!(db.events().unwrap(), vec![again]);
    assert_eq!(db.events_of(1).unwrap().len(), 1);
    assert!(db.events_of(2).unwrap().is_empty());
    assert_eq!(db.tool(2).unwrap(), None);
    db.synced(9).unwrap();
    assert_eq!(db.cursor().unwrap().unwrap().synced_at, 9);
}
