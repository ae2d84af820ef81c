use proptest::prelude::*;
use serde_json::{json, Value};

use super::record::*;
use super::state::*;
use super::*;
use crate::signing::ServiceKey;
use crate::time::parse_rfc3339;

fn quest(id: &str) -> Value {
    json!({"id": id, "title": "Fix the feed", "rung": "R2", "what": "the Atom feed drops notes",
           "deliverable": "a pull request with a test", "check": "review"})
}

fn quests(list: Vec<Value>) -> Vec<u8> {
    serde_json::to_vec(&json!({ "quests": list })).unwrap()
}

#[test]
fn a_malformed_entry_is_named_and_the_rest_kept() {
    let mut bad = quest("bad-one");
    bad["check"] = json!("vibes");
    let mut extra = quest("extra");
    extra["reward_yield"] = json!("10%");
    let bytes = quests(vec![
        quest("a"),
        bad,
        json!(7),
        quest("b"),
        extra,
        quest("a"),
        quest("Not_An_Id"),
    ]);
    let p = parse_quests(&bytes);
    let ids: Vec<&str> = p.items.iter().map(|q| q.id.as_str()).collect();
    assert_eq!(ids, ["a", "b"]);
    assert_eq!(p.errors.len(), 5, "{:?}", p.errors);
    let e = p.error().unwrap();
    assert!(e.contains("quests[1] (\"bad-one\")"), "{e}");
    assert!(e.contains("quests[2]"), "{e}");
    assert!(
        e.contains("quests[4] (\"extra\")") && e.contains("reward_yield"),
        "{e}"
    );
    assert!(e.contains("quests[5] (\"a\"): a duplicate"), "{e}");
    assert!(e.contains("quests[6]"), "{e}");
    assert_eq!(p.items[0].check, Check::Review);
}

#[test]
fn an_unreadable_file_gives_an_empty_board_and_its_reason() {
    for bytes in [&b"{not json"[..], b"[]", b"{\"quest\": []}", b""] {
        let p = parse_quests(bytes);
        assert!(p.items.is_empty());
        assert!(p.error().unwrap().starts_with("quests.json: "));
    }
    assert_eq!(parse_quests(&quests(vec![])).error(), None);
}

#[test]
fn paid_rows_are_checked_one_by_one() {
    let good = json!({"quest": "a", "to": format!("0x{}", "ab".repeat(20)), "amount_scry": "1500000",
                      "token": format!("0x{}", "cd".repeat(20)), "tx": format!("0x{}", "ef".repeat(32))});
    let mut float = good.clone();
    float["amount_scry"] = json!(1.5);
    float["tx"] = json!(format!("0x{}", "01".repeat(32)));
    let mut zero = good.clone();
    zero["amount_scry"] = json!("0");
    zero["tx"] = json!(format!("0x{}", "02".repeat(32)));
    let mut same_tx = good.clone();
    same_tx["tx"] = json!(format!("0x{}", "EF".repeat(32)));
    let bytes = serde_json::to_vec(&json!({"paid": [good, float, zero, same_tx]})).unwrap();
    let p = parse_paid(&bytes);
    assert_eq!(p.items.len(), 1);
    assert_eq!(p.errors.len(), 3, "{:?}", p.errors);
    assert!(p.errors[2].contains("duplicate"));
    assert!(p.error().unwrap().starts_with("paid.json: paid[1]"));
}

#[test]
fn links_are_https_bounded_and_plain() {
    assert!(check_link("https://github.com/o/r/pull/1").is_ok());
    assert!(check_link("http://github.com/o/r/pull/1").is_err());
    assert!(check_link("https:///pull/1").is_err());
    assert!(check_link("https://u:p@github.com/").is_err());
    assert!(check_link("https://github.com/a b").is_err());
    assert!(check_link("https://github.com/\u{202e}x").is_err());
    assert!(check_link("https://github.com/o/r/pull/1\u{7f}").is_err());
    assert!(check_link(&format!("https://x.org/{}", "a".repeat(MAX_LINK))).is_err());
    let said = |l: &str| check_link(l).unwrap_err().to_string();
    assert_eq!(
        said(&"a".repeat(MAX_LINK + 1)),
        "the link is longer than 512 characters"
    );
    assert_eq!(said("http://x.org/"), "the link must start with https://");
    assert_eq!(
        said("https://x.org/a b"),
        "the link holds whitespace, a control or a non-ASCII character (percent-encode it)"
    );
    assert_eq!(
        said("https://u@x.org/"),
        "the link has no host (or carries credentials)"
    );
}

const ORIGIN: &str = "example.org";
const VOW: &str = "0123456789abcdef";

#[test]
fn play_messages_name_origin_action_quest_vow_date_and_link() {
    let now = parse_rfc3339("2026-11-24T23:59:59Z").unwrap();
    let c = play_message(ORIGIN, Action::Claim, "fix-the-feed", VOW, now);
    for part in [
        "Origin: example.org",
        "Action: claim_quest",
        "Quest: fix-the-feed",
        "Vow: 0123456789abcdef",
        "Date (UTC): 2026-11-24",
    ] {
        assert!(c.contains(part), "{c}");
    }
    assert_ne!(
        c,
        play_message(ORIGIN, Action::Claim, "fix-the-feed", VOW, now + 1)
    );
    let link = "https://github.com/o/r/pull/7";
    let s = play_message(ORIGIN, Action::Submit { link }, "fix-the-feed", VOW, now);
    assert!(
        s.contains("Action: submit_delivery")
            && s.ends_with("Delivery: https://github.com/o/r/pull/7")
    );
    assert_ne!(
        s,
        play_message(
            ORIGIN,
            Action::Submit {
                link: "https://github.com/o/r/pull/8"
            },
            "fix-the-feed",
            VOW,
            now
        )
    );
}

/// Signed with PyPI eth-account 0.14.0 over the exact claim text:
/// `Account.from_key("0x" + "11"*32).sign_message(encode_defunct(text=m))`.
#[test]
#[cfg(feature = "wallet")]
fn an_eth_account_signature_over_the_claim_text_recovers() {
    let now = parse_rfc3339("2026-11-24T12:00:00Z").unwrap();
    let m = play_message(ORIGIN, Action::Claim, "fix-the-feed", VOW, now);
    let sig = "0x4c901ae60a1af53175cfb37f243564584469ca347f96a047f82f6f34bb75bc835166046632f5a7f20a00107df90e7b9a467516985c4645fd61fc6ed982e827af1c";
    let addr = crate::owner::recover(crate::owner::Kind::ClaimQuest, &m, sig).unwrap();
    assert_eq!(
        hex::encode(addr),
        "19e7e376e7c213b7e7e7e46cc70a5dd086daff2a"
    );
    let other_day = play_message(ORIGIN, Action::Claim, "fix-the-feed", VOW, now + 86_400);
    assert_ne!(
        crate::owner::recover(crate::owner::Kind::ClaimQuest, &other_day, sig).ok(),
        Some(addr)
    );
}

const T0: u64 = 1_795_262_400; // 2026-11-22T12:00:00Z

fn claim(q: &str, vow: &str, at: u64) -> BoardRecord {
    BoardRecord::Claim(Claim {
        quest_id: q.into(),
        vow_id: vow.into(),
        wallet: format!("0x{}", "Ab".repeat(20)),
        wallet_signature: format!("0x{}", "11".repeat(65)),
        at,
    })
}

fn delivery(q: &str, vow: &str, claim: u64, at: u64) -> BoardRecord {
    BoardRecord::Delivery(Delivery {
        quest_id: q.into(),
        vow_id: vow.into(),
        claim,
        link: "https://github.com/o/r/pull/1".into(),
        wallet_signature: format!("0x{}", "22".repeat(65)),
        at,
    })
}

fn payment(q: &str, claim: Option<u64>, tx: u8, at: u64) -> BoardRecord {
    BoardRecord::Payment(Payment {
        quest_id: q.into(),
        claim,
        to: format!("0x{}", "ab".repeat(20)),
        amount_scry: "1000000".into(),
        token: format!("0x{}", "cd".repeat(20)),
        chain_id: 31337,
        tx: format!("0x{}", hex::encode([tx; 32])),
        at,
    })
}

#[test]
fn every_record_round_trips_signed_and_exact() {
    let key = ServiceKey::from_seed(&[7; 32], "example.org/log");
    let recs = [
        claim("a", VOW, T0),
        delivery("a", VOW, 3, T0 + 60),
        BoardRecord::Lapse(Lapse {
            quest_id: "a".into(),
            vow_id: VOW.into(),
            claim: 3,
            idle_since: T0 + 60,
            at: T0 + 60 + LAPSE_SECONDS,
        }),
        payment("a", Some(3), 9, T0 + 120),
        payment("a", None, 8, T0 + 120),
    ];
    for (i, r) in recs.iter().enumerate() {
        let leaf = r.leaf(&key, 10 + i as u64).unwrap();
        let v: Value = serde_json::from_slice(&leaf).unwrap();
        assert_eq!(crate::canonical::jcs(&v).unwrap(), leaf);
        assert!(crate::signing::verify_object(
            &v,
            &crate::signing::PinnedKey::parse(&key.vkey()).unwrap()
        )
        .is_ok());
        assert_eq!(v["type"], r.type_name());
        let (idx, back) = BoardRecord::parse(&v).unwrap().unwrap();
        assert_eq!((idx, &back), (10 + i as u64, r));
        let mut tampered = v.clone();
        tampered["extra"] = json!(1);
        assert!(BoardRecord::parse(&tampered).is_err());
        let mut dropped = v.clone();
        dropped.as_object_mut().unwrap().remove("quest_id");
        assert!(BoardRecord::parse(&dropped).is_err());
    }
    assert_eq!(
        BoardRecord::parse(&json!({"type": "conduct.vow/v1"})),
        Ok(None)
    );
}

fn defs(ids: &[&str]) -> Vec<Quest> {
    parse_quests(&quests(ids.iter().map(|i| quest(i)).collect())).items
}

fn no_chain(_: &Payment) -> Option<bool> {
    None
}

#[test]
fn first_come_one_claim_a_day_and_a_claimed_quest_refuses() {
    let qs = defs(&["a", "b"]);
    let mut log = vec![];
    let b = Board::fold(&qs, &log, &no_chain, T0);
    assert_eq!(b.check_claim("a", VOW, T0), Ok(()));
    assert_eq!(
        b.check_claim("zzz", VOW, T0),
        Err(ClaimRefusal::UnknownQuest)
    );
    log.push((0, claim("a", VOW, T0)));
    let b = Board::fold(&qs, &log, &no_chain, T0 + 1);
    assert_eq!(
        b.check_claim("a", "fedcba9876543210", T0 + 1),
        Err(ClaimRefusal::AlreadyClaimed)
    );
    assert_eq!(
        b.check_claim("b", VOW, T0 + 1),
        Err(ClaimRefusal::VowClaimedToday)
    );
    assert_eq!(b.check_claim("b", "fedcba9876543210", T0 + 1), Ok(()));
    // The next UTC day (T0 is noon): the vow may claim again.
    let next_day = T0 + 12 * 3600;
    let b = Board::fold(&qs, &log, &no_chain, next_day);
    assert_eq!(b.check_claim("b", VOW, next_day), Ok(()));
    assert_eq!(b.check_submit("a", VOW), Ok(0));
    assert_eq!(
        b.check_submit("a", "fedcba9876543210"),
        Err(SubmitRefusal::NotClaimant)
    );
    assert_eq!(b.check_submit("b", VOW), Err(SubmitRefusal::NotClaimed));
    let c = b.counts();
    assert_eq!((c.open, c.claimed), (1, 1));
    assert_eq!(b.quest("a").unwrap().status.as_str(), "open");
    assert!(b.anomalies.is_empty());
}

#[test]
fn a_claim_lapses_at_exactly_fourteen_idle_days() {
    let qs = defs(&["a"]);
    let mut log = vec![
        (0, claim("a", VOW, T0)),
        (1, delivery("a", VOW, 0, T0 + 100)),
    ];
    let due = T0 + 100 + LAPSE_SECONDS;
    let b = Board::fold(&qs, &log, &no_chain, due - 1);
    assert!(matches!(b.quest("a").unwrap().status, Status::Claimed(_)));
    assert_eq!(b.next_lapse(), Some(due));
    assert!(b.due_lapses.is_empty());
    assert_eq!(b.counts().delivered_by_a_worker, 1);
    let b = Board::fold(&qs, &log, &no_chain, due);
    assert_eq!(b.quest("a").unwrap().status, Status::Open);
    assert_eq!(b.due_lapses.len(), 1);
    let l = b.due_lapses[0].clone();
    assert_eq!((l.at, l.idle_since, l.claim), (due, T0 + 100, 0));
    assert_eq!(b.check_submit("a", VOW), Err(SubmitRefusal::NotClaimed));
    // Written late, the lapse still says the instant it fell due; then it is no longer due.
    log.push((2, BoardRecord::Lapse(l)));
    let b = Board::fold(&qs, &log, &no_chain, due + 5 * 86_400);
    assert!(b.due_lapses.is_empty() && b.anomalies.is_empty());
    assert_eq!(
        b.check_claim("a", "fedcba9876543210", due + 5 * 86_400),
        Ok(())
    );
    // A lapse that does not match its claim is an anomaly.
    let bad = vec![
        (0, claim("a", VOW, T0)),
        (
            1,
            BoardRecord::Lapse(Lapse {
                quest_id: "a".into(),
                vow_id: VOW.into(),
                claim: 0,
                idle_since: T0,
                at: T0 + 1,
            }),
        ),
    ];
    assert_eq!(Board::fold(&qs, &bad, &no_chain, T0 + 2).anomalies.len(), 1);
}

#[test]
fn a_claim_with_a_payment_recorded_never_lapses_whatever_the_chain_says() {
    let qs = defs(&["a"]);
    let log = vec![
        (0, claim("a", VOW, T0)),
        (1, delivery("a", VOW, 0, T0 + 100)),
        (2, payment("a", Some(0), 7, T0 + 200)),
    ];
    let late = T0 + 100 * 86_400;
    for flag in [Some(false), None] {
        let b = Board::fold(&qs, &log, &|_| flag, late);
        let Status::Claimed(c) = &b.quest("a").unwrap().status else {
            panic!("still claimed with flag {flag:?}");
        };
        assert_eq!((c.lapses_at(), c.paid), (None, Some(2)));
        assert!(b.due_lapses.is_empty() && b.next_lapse().is_none());
        assert!(b.anomalies.is_empty());
        // A later delivery on it is still the claimant's.
        let mut more = log.clone();
        more.push((3, delivery("a", VOW, 0, late)));
        assert!(Board::fold(&qs, &more, &|_| flag, late)
            .anomalies
            .is_empty());
    }
    // While the payment reads null the quest may be settled: a claim is refused as such,
    // before "already claimed".
    let b = Board::fold(&qs, &log, &no_chain, late);
    assert_eq!(
        b.check_claim("a", "fedcba9876543210", late),
        Err(ClaimRefusal::PaymentUncheckable)
    );
    // A payment on another (no) claim leaves the clock running.
    let other = vec![(0, payment("a", None, 8, T0)), (1, claim("a", VOW, T0 + 1))];
    let b = Board::fold(&qs, &other, &|_| Some(false), T0 + 1 + LAPSE_SECONDS);
    assert_eq!(b.due_lapses.len(), 1);
}

#[test]
fn a_payment_the_chain_confirms_settles_and_flags_are_counted_apart() {
    let mut qs = defs(&["a", "b", "c", "h"]);
    qs[3].delivered_in_house = Some("https://github.com/o/r/pull/2".into());
    let log = vec![
        (0, claim("a", VOW, T0)),
        (1, delivery("a", VOW, 0, T0 + 10)),
        (2, payment("a", Some(0), 1, T0 + 20)), // true
        (3, payment("b", None, 2, T0 + 30)),    // false: wrong amount
        (4, payment("c", None, 3, T0 + 40)),    // null: the chain did not answer
    ];
    let flag = |p: &Payment| match p.tx.as_bytes()[3] {
        b'1' => Some(true),
        b'2' => Some(false),
        _ => None,
    };
    let b = Board::fold(&qs, &log, &flag, T0 + 50);
    assert!(matches!(
        b.quest("a").unwrap().status,
        Status::Settled { payment: 2, .. }
    ));
    assert_eq!(b.quest("a").unwrap().status.as_str(), "done");
    assert_eq!(b.quest("b").unwrap().status, Status::Open);
    assert_eq!(b.quest("h").unwrap().status.as_str(), "done");
    let c = b.counts();
    assert_eq!(
        c,
        Counts {
            open: 2,
            claimed: 0,
            delivered_in_house: 1,
            delivered_by_a_worker: 1,
            settled_to_a_worker: 1,
            unverified: 1,
            uncheckable_right_now: 1,
        }
    );
    assert_eq!(
        b.check_claim("a", "fedcba9876543210", T0 + 50),
        Err(ClaimRefusal::Done)
    );
    assert_eq!(
        b.check_claim("h", "fedcba9876543210", T0 + 50),
        Err(ClaimRefusal::Done)
    );
    assert_eq!(b.check_claim("b", "fedcba9876543210", T0 + 50), Ok(()));
    assert_eq!(
        b.check_claim("c", "fedcba9876543210", T0 + 50),
        Err(ClaimRefusal::PaymentUncheckable)
    );
    // The same log with the chain down everywhere: nothing settles, nothing reads as false.
    let b = Board::fold(&qs, &log, &no_chain, T0 + 50);
    let c = b.counts();
    assert_eq!(
        (c.settled_to_a_worker, c.unverified, c.uncheckable_right_now),
        (0, 0, 3)
    );
}

#[test]
fn in_an_outage_the_rows_and_the_claims_read_the_same_flags() {
    let qs = defs(&["a", "b"]);
    let log = vec![
        (0, payment("a", None, 1, T0)), // last definite: true (settles the open quest)
        (1, payment("b", None, 2, T0 + 1)), // last definite: false
    ];
    let silent = |p: &Payment| PaymentFlag {
        read: None,
        definite: Some(p.tx.as_bytes()[3] == b'1'),
    };
    let b = Board::fold(&qs, &log, &silent, T0 + 50);
    // Every row reads null, as the page shows it.
    assert!(b.paid.iter().all(|r| r.verified.is_none()), "{:?}", b.paid);
    assert_eq!(b.counts().uncheckable_right_now, 2);
    // The confirmed quest stays done; the other takes no claim while its row reads null.
    assert_eq!(b.quest("a").unwrap().status.as_str(), "done");
    assert_eq!(b.check_claim("a", VOW, T0 + 50), Err(ClaimRefusal::Done));
    assert_eq!(
        b.check_claim("b", VOW, T0 + 50),
        Err(ClaimRefusal::PaymentUncheckable)
    );
    // Once the chain answers false again, b takes a claim.
    let back = |p: &Payment| PaymentFlag::read(Some(p.tx.as_bytes()[3] == b'1'));
    let b = Board::fold(&qs, &log, &back, T0 + 50);
    assert_eq!(b.check_claim("b", VOW, T0 + 50), Ok(()));
}

#[test]
fn retired_quests_are_not_listed_and_refuse_claims() {
    let mut qs = defs(&["a", "b"]);
    qs[1].retired = true;
    let b = Board::fold(&qs, &[], &no_chain, T0);
    assert_eq!(b.quests.len(), 1);
    assert_eq!(b.check_claim("b", VOW, T0), Err(ClaimRefusal::Retired));
}

#[derive(Debug, Clone)]
enum Op {
    Claim(usize, usize),
    Submit(usize, usize),
    Wait(u64),
    Pay(usize, Option<bool>),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0..3usize, 0..3usize).prop_map(|(q, v)| Op::Claim(q, v)),
        (0..3usize, 0..3usize).prop_map(|(q, v)| Op::Submit(q, v)),
        (0..20 * 86_400u64).prop_map(Op::Wait),
        (
            0..3usize,
            prop_oneof![Just(Some(true)), Just(Some(false)), Just(None)]
        )
            .prop_map(|(q, f)| Op::Pay(q, f)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Whatever bytes the operator's files hold, parsing returns (never panics), and every
    /// entry kept passes the checks.
    #[test]
    fn operator_files_never_fail_wholesale(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let p = parse_quests(&bytes);
        prop_assert!(p.items.iter().all(|q| is_quest_id(&q.id)));
        if serde_json::from_slice::<Value>(&bytes).is_err() {
            prop_assert!(p.items.is_empty() && p.error().is_some());
        }
        let _ = parse_paid(&bytes);
    }

    /// Good and bad entries in any order: exactly the good ones are kept, in order, and each
    /// bad one is named by its position.
    #[test]
    fn exactly_the_good_entries_are_kept(good in proptest::collection::vec(any::<bool>(), 0..12)) {
        let list: Vec<Value> = good.iter().enumerate().map(|(i, g)| {
            let mut q = quest(&format!("q{i}"));
            if !g { q["check"] = json!(i); }
            q
        }).collect();
        let p = parse_quests(&quests(list));
        let want: Vec<String> = good.iter().enumerate().filter(|(_, g)| **g).map(|(i, _)| format!("q{i}")).collect();
        prop_assert_eq!(p.items.iter().map(|q| q.id.clone()).collect::<Vec<_>>(), want);
        prop_assert_eq!(p.errors.len(), good.iter().filter(|g| !**g).count());
    }

    /// Driving the board as the service will (check, then append the record; due lapses
    /// appended first): the log never holds an anomaly, no vow claims twice in a UTC day, a
    /// quest has at most one live claim, and the counts add up.
    #[test]
    fn the_service_loop_keeps_the_rules(ops in proptest::collection::vec(op(), 0..40)) {
        let qs = defs(&["q0", "q1", "q2"]);
        let vows = ["000000000000000a", "000000000000000b", "000000000000000c"];
        let mut log: Vec<(u64, BoardRecord)> = vec![];
        let mut flags: std::collections::HashMap<String, Option<bool>> = Default::default();
        let mut now = T0;
        let mut tx = 0u8;
        for o in ops {
            let fl = flags.clone();
            let flag = move |p: &Payment| fl.get(&p.tx).copied().flatten();
            let b = Board::fold(&qs, &log, &flag, now);
            for l in b.due_lapses.clone() {
                let i = log.len() as u64;
                log.push((i, BoardRecord::Lapse(l)));
            }
            let b = Board::fold(&qs, &log, &flag, now);
            prop_assert!(b.due_lapses.is_empty());
            let i = log.len() as u64;
            match o {
                Op::Wait(s) => now += s,
                Op::Claim(q, v) => {
                    let id = format!("q{q}");
                    if b.check_claim(&id, vows[v], now).is_ok() {
                        log.push((i, claim(&id, vows[v], now)));
                    }
                }
                Op::Submit(q, v) => {
                    let id = format!("q{q}");
                    if let Ok(c) = b.check_submit(&id, vows[v]) {
                        log.push((i, delivery(&id, vows[v], c, now)));
                    }
                }
                Op::Pay(q, f) => {
                    tx += 1;
                    let BoardRecord::Payment(p) = payment(&format!("q{q}"), None, tx, now) else { unreachable!() };
                    flags.insert(p.tx.clone(), f);
                    log.push((i, BoardRecord::Payment(p)));
                }
            }
        }
        let fl = flags.clone();
        let flag = move |p: &Payment| fl.get(&p.tx).copied().flatten();
        let b = Board::fold(&qs, &log, &flag, now);
        prop_assert!(b.anomalies.is_empty(), "{:?}", b.anomalies);
        let mut per_day = std::collections::HashSet::new();
        for (_, r) in &log {
            if let BoardRecord::Claim(c) = r {
                prop_assert!(per_day.insert((c.vow_id.clone(), crate::time::utc_day(c.at))));
            }
        }
        let c = b.counts();
        let done = b.quests.iter().filter(|q| q.status.as_str() == "done").count() as u64;
        prop_assert_eq!(c.open + c.claimed + done, 3);
        prop_assert_eq!(c.settled_to_a_worker + c.unverified + c.uncheckable_right_now, b.paid.len() as u64);
        if let Some(t) = b.next_lapse() { prop_assert!(t > now); }
    }
}
