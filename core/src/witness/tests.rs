use super::reading::*;
use super::record::*;
use super::verify::PledgeChecker;
use super::*;
use crate::leaf::LeafCheck;
use crate::record::{Logged, OwnerSigned};
use crate::signing::{PinnedKey, ServiceKey};

const ORIGIN: &str = "https://conduct.example";
const USD: &str = "0x5FbDB2315678afecb367f032d93F642f64180aa3";
const WALLET: &str = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
const OTHER: &str = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC";
const DAY: u64 = 86_400;
const T0: u64 = 1_795_348_800; // 2026-11-22T12:00:00Z

fn li(asset: &str, bal: Option<&str>, out: Option<&str>) -> LimitInput {
    LimitInput {
        asset: asset.into(),
        max_balance: bal.map(Into::into),
        max_outflow_per_day: out.map(Into::into),
    }
}

#[test]
fn limits_are_checked_normalized_and_round_trip_through_the_query_form() {
    let l = normalize_limits(
        &[
            li(
                &USD.to_ascii_lowercase(),
                Some("1000000000"),
                Some("100000000"),
            ),
            li(OTHER, None, Some("5")),
        ],
        "/limits",
    )
    .unwrap();
    // Sorted by address, EIP-55.
    assert_eq!(l[0].asset, OTHER);
    assert_eq!(l[1].asset, USD);
    let q = limits_query(&l);
    assert_eq!(q, format!("{OTHER}::5,{USD}:1000000000:100000000"));
    assert_eq!(parse_limits_query(&q).unwrap(), l);
    // Either order, any single case.
    let q2 = format!(
        "{}:1000000000:100000000,{}::5",
        USD.to_ascii_lowercase(),
        OTHER
    );
    assert_eq!(parse_limits_query(&q2).unwrap(), l);

    let bad = |input: &[LimitInput]| normalize_limits(input, "/limits").unwrap_err();
    assert_eq!(bad(&[]).len(), 1);
    assert_eq!(bad(&[li(USD, None, None)])[0].pointer, "/limits/0");
    assert_eq!(
        bad(&[li("0x12", Some("1"), None)])[0].pointer,
        "/limits/0/asset"
    );
    assert_eq!(
        bad(&[li(USD, Some("01"), None)])[0].pointer,
        "/limits/0/max_balance"
    );
    assert_eq!(
        bad(&[li(USD, None, Some("-1"))])[0].pointer,
        "/limits/0/max_outflow_per_day"
    );
    assert!(!bad(&[li(USD, Some("1"), None), li(USD, Some("2"), None)]).is_empty());
    let too_big = format!("1{}", "0".repeat(77)); // 10^77 < 2^256; 2^256 is 78 digits
    assert!(amount(&too_big).is_ok());
    assert!(amount(&"9".repeat(78)).is_err());
    assert!(amount("0").is_ok());
    let mixed_wrong = "0x5fbDB2315678afecb367f032d93F642f64180aa3";
    assert!(address(mixed_wrong).is_err());
    let many: Vec<LimitInput> = (0..=MAX_LIMITS)
        .map(|i| li(&format!("0x{:040x}", i + 1), Some("1"), None))
        .collect();
    assert!(!bad(&many).is_empty());
    assert!(parse_limits_query("nonsense").is_err());
}

#[test]
fn the_pledge_text_names_origin_action_vow_every_limit_and_the_date() {
    let l = normalize_limits(&[li(USD, Some("1000"), Some("100"))], "/limits").unwrap();
    let m = pledge_message(ORIGIN, "00000000000000aa", &l, "2026-11-22");
    for want in [
        "Origin: https://conduct.example",
        "Action: pledge_limits",
        "Vow: 00000000000000aa",
        &format!("Limit: {USD} max_balance=1000 max_outflow_per_day=100"),
        "Date (UTC): 2026-11-22",
    ] {
        assert!(m.contains(want), "{want} in {m}");
    }
    let only_out = normalize_limits(&[li(USD, None, Some("100"))], "/limits").unwrap();
    let m2 = pledge_message(ORIGIN, "00000000000000aa", &only_out, "2026-11-22");
    assert!(m2.contains(&format!("Limit: {USD} max_outflow_per_day=100\n")));
    assert_ne!(m, m2);
}

fn tr(n: u64, time: u64, from: &str, to: &str, amount: &str) -> Transfer {
    Transfer {
        tx: format!("0x{n:064x}"),
        block: n,
        log_index: 0,
        time,
        from: from.into(),
        to: to.into(),
        amount: amount.into(),
    }
}

fn limits() -> Vec<Limit> {
    normalize_limits(&[li(USD, Some("1000"), Some("100"))], "/limits").unwrap()
}

#[test]
fn limits_that_held_give_no_breach() {
    let read = AssetRead {
        asset: USD.into(),
        balance: "1000".into(),
        transfers: vec![
            tr(1, T0, OTHER, WALLET, "1000"),
            tr(2, T0 + 10, WALLET, OTHER, "60"),
            tr(3, T0 + 20, WALLET, OTHER, "40"),
            // The next day starts a new sum.
            tr(4, T0 + DAY, WALLET, OTHER, "100"),
            tr(5, T0 + DAY + 5, WALLET, WALLET, "500"),
            tr(6, T0 + DAY + 6, OTHER, WALLET, "200"),
        ],
    };
    let ev = evaluate(WALLET, &limits(), &[read]).unwrap();
    assert!(ev.breaches.is_empty(), "{:?}", ev.breaches);
    let a = &ev.assets[0];
    assert_eq!(a["balance_at_window_start"], "0");
    assert_eq!(a["peak_balance"], "1000");
    assert_eq!(a["outflow"], "200");
    assert_eq!(a["inflow"], "1200");
    assert_eq!(a["outflow_by_day"].as_array().unwrap().len(), 2);
    assert_eq!(a["transfers"][4]["direction"], "self");
}

#[test]
fn a_day_over_the_outflow_limit_is_a_breach_naming_the_transfer_that_crossed() {
    let read = AssetRead {
        asset: USD.into(),
        balance: "760".into(),
        transfers: vec![
            tr(3, T0 + 30, WALLET, OTHER, "50"),
            tr(1, T0, OTHER, WALLET, "900"),
            tr(2, T0 + 10, WALLET, OTHER, "90"),
        ],
    };
    let ev = evaluate(WALLET, &limits(), &[read]).unwrap();
    assert_eq!(ev.breaches.len(), 1, "{:?}", ev.breaches);
    let b = &ev.breaches[0];
    assert_eq!(b["limit"], "max_outflow_per_day");
    assert_eq!(b["observed"], "140");
    assert_eq!(b["excess"], "40");
    assert_eq!(b["date"], "2026-11-22");
    assert_eq!(b["crossed_by"]["block"], 3);
    let listed = b["transfers"].as_array().unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[1]["running_total"], "140");
}

#[test]
fn a_balance_over_the_limit_is_a_breach_naming_the_inflows() {
    let read = AssetRead {
        asset: USD.into(),
        balance: "1500".into(),
        transfers: vec![
            tr(1, T0, OTHER, WALLET, "700"),
            tr(2, T0 + 10, OTHER, WALLET, "600"),
        ],
    };
    let ev = evaluate(WALLET, &limits(), &[read]).unwrap();
    assert_eq!(ev.breaches.len(), 1);
    let b = &ev.breaches[0];
    assert_eq!(b["limit"], "max_balance");
    assert_eq!(b["observed"], "1500");
    assert_eq!(b["over_at_window_start"], false);
    assert_eq!(b["over_at_last_block"], true);
    assert_eq!(b["transfers"].as_array().unwrap().len(), 1);
    assert_eq!(b["transfers"][0]["block"], 2);

    // Over at the start already (1049: no transfer caused it), and back under by the end.
    let read = AssetRead {
        asset: USD.into(),
        balance: "950".into(),
        transfers: vec![tr(1, T0, WALLET, OTHER, "99")],
    };
    let b = &evaluate(WALLET, &limits(), &[read]).unwrap().breaches[0];
    assert_eq!(b["over_at_window_start"], true);
    assert_eq!(b["over_at_last_block"], false);
    assert_eq!(b["observed"], "1049");
    assert_eq!(b["excess"], "49");
    assert_eq!(b["transfers"], serde_json::json!([]));
    // 999 at the start is not over 1000: no breach at all.
    let read = AssetRead {
        asset: USD.into(),
        balance: "900".into(),
        transfers: vec![tr(1, T0, WALLET, OTHER, "99")],
    };
    assert!(evaluate(WALLET, &limits(), &[read])
        .unwrap()
        .breaches
        .is_empty());

    // A reconstruction below zero (a rebasing token): only the balance read is checked.
    let read = AssetRead {
        asset: USD.into(),
        balance: "5".into(),
        transfers: vec![tr(1, T0, OTHER, WALLET, "10")],
    };
    let ev = evaluate(WALLET, &limits(), &[read]).unwrap();
    assert!(ev.breaches.is_empty());
    assert!(ev.assets[0]["balance_at_window_start"].is_null());
}

#[test]
fn evaluation_refuses_reads_that_do_not_fit() {
    assert!(evaluate(WALLET, &limits(), &[]).is_err());
    let stranger = AssetRead {
        asset: USD.into(),
        balance: "1".into(),
        transfers: vec![tr(1, T0, OTHER, OTHER, "1")],
    };
    assert!(evaluate(WALLET, &limits(), &[stranger]).is_err());
    let garbage = AssetRead {
        asset: USD.into(),
        balance: "x".into(),
        transfers: vec![],
    };
    assert!(evaluate(WALLET, &limits(), &[garbage]).is_err());
}

#[test]
fn windows_are_whole_utc_days_ending_at_the_head() {
    let head = T0 + 3600; // 13:00 UTC
    assert_eq!(window_start(head, 1), T0 - 12 * 3600);
    assert_eq!(window_start(head, 7), T0 - 12 * 3600 - 6 * DAY);
}

#[test]
fn a_signed_reading_verifies_and_says_held() {
    let key = ServiceKey::from_seed(&[3; 32], "conduct.test");
    let l = limits();
    let window = Window {
        days: 7,
        from: window_start(T0, 7),
        to: T0,
        from_block: 1,
        to_block: 9,
        to_block_hash: format!("0x{}", "ab".repeat(32)),
    };
    let reads = [AssetRead {
        asset: USD.into(),
        balance: "10".into(),
        transfers: vec![tr(1, T0 - 5, OTHER, WALLET, "10")],
    }];
    let input = ReadingInput {
        vow_id: "00000000000000aa",
        wallet: WALLET,
        chain: serde_json::json!({"name": "anvil", "chain_id": 31337}),
        pledge_log_index: 4,
        pledge_at: T0 - 100,
        limits: &l,
        window: &window,
        reads: &reads,
        issued_at: T0 + 1,
        issuer: ORIGIN,
    };
    let bytes = signed_reading(&key, &input).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(v["type"], READING_TYPE);
    assert_eq!(v["held"], true);
    assert_eq!(v["breaches"], serde_json::json!([]));
    assert_eq!(v["pledge"]["proof"], "/log/proof/4");
    let pinned = PinnedKey::parse(&key.vkey()).unwrap();
    crate::signing::verify_object(&v, &pinned).unwrap();
    // Deterministic.
    assert_eq!(signed_reading(&key, &input).unwrap(), bytes);
}

pub(crate) use crate::vow::fixture::personal_sign;

fn vow_leaf(key: &ServiceKey, id: &str, sandbox: bool, wallet: &str) -> serde_json::Value {
    crate::leaf::test_vow(key, id, (!sandbox).then_some(wallet), 0)
}

#[test]
fn pledge_records_round_trip_verify_and_refuse_tampering_and_replays() {
    let key = ServiceKey::from_seed(&[4; 32], "conduct.test");
    let pinned = PinnedKey::parse(&key.vkey()).unwrap();
    let mut p = Pledge {
        origin: ORIGIN.into(),
        vow_id: "00000000000000aa".into(),
        wallet: String::new(),
        limits: limits(),
        wallet_signature: String::new(),
        at: T0,
    };
    let (sig, wallet) = personal_sign([0x11; 32], &{
        p.wallet = "0x19E7E376E7C213B7E7e7e46cc70A5dD086DAff2A".into();
        p.message().unwrap()
    });
    assert_eq!(wallet, p.wallet);
    p.wallet_signature = sig;
    p.check_wallet().unwrap();
    let leaf = p.leaf(&key, 3).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&leaf).unwrap();
    assert_eq!(Pledge::parse(&v).unwrap(), Some((3, p.clone())));

    let mut checker = PledgeChecker::new(pinned.clone());
    let vow = vow_leaf(&key, "00000000000000aa", false, &p.wallet);
    let vow_bytes = crate::canonical::jcs(&vow).unwrap();
    assert!(checker.wants(&vow_bytes) && checker.wants(&leaf));
    checker.record(0, &vow_bytes, &vow).unwrap();
    checker.record(3, &leaf, &v).unwrap();
    assert_eq!(checker.count, 1);
    // The same signature again.
    let again = p.leaf(&key, 4).unwrap();
    let e = checker
        .record(4, &again, &serde_json::from_slice(&again).unwrap())
        .unwrap_err();
    assert!(e.0.contains("used by an earlier"), "{}", e.0);
    // At the wrong position.
    let mut fresh = PledgeChecker::new(pinned.clone());
    fresh.record(0, &vow_bytes, &vow).unwrap();
    assert!(fresh.record(5, &leaf, &v).is_err());
    // No vow before it.
    assert!(PledgeChecker::new(pinned.clone())
        .record(3, &leaf, &v)
        .is_err());
    // A sandbox vow.
    let mut sb = PledgeChecker::new(pinned.clone());
    let sandbox = vow_leaf(&key, "00000000000000aa", true, &p.wallet);
    sb.record(0, &crate::canonical::jcs(&sandbox).unwrap(), &sandbox)
        .unwrap();
    assert!(sb.record(3, &leaf, &v).is_err());
    // A changed limit: the format (and the service signature) no longer hold.
    let mut t = v.clone();
    t["limits"][0]["max_balance"] = "9".into();
    let tb = crate::canonical::jcs(&t).unwrap();
    let mut c2 = PledgeChecker::new(pinned.clone());
    c2.record(0, &vow_bytes, &vow).unwrap();
    assert!(c2.record(3, &tb, &t).is_err());
    // An unnormalized limit is refused by the parser itself.
    let mut u = v.clone();
    u["limits"][0]["asset"] = USD.to_ascii_lowercase().into();
    assert!(Pledge::parse(&u).is_err());
    // An added member.
    let mut extra = v.clone();
    extra["note"] = "x".into();
    assert!(Pledge::parse(&extra).is_err());
    // Another day's text does not verify.
    let mut later = p.clone();
    later.at += DAY;
    assert!(later.check_wallet().is_err());
}

#[test]
fn verify_log_refuses_a_vows_eleventh_pledge_of_a_utc_day() {
    let key = ServiceKey::from_seed(&[4; 32], "conduct.test");
    let wallet = "0x19E7E376E7C213B7E7e7e46cc70A5dD086DAff2A";
    let vow = vow_leaf(&key, "00000000000000aa", false, wallet);
    let mut checker = PledgeChecker::new(PinnedKey::parse(&key.vkey()).unwrap());
    checker
        .record(0, &crate::canonical::jcs(&vow).unwrap(), &vow)
        .unwrap();
    // Ten on the day (each its own signature), then an eleventh at its last second.
    let pledge = |n: u64, at: u64| Pledge {
        origin: ORIGIN.into(),
        vow_id: "00000000000000aa".into(),
        wallet: wallet.into(),
        limits: limits(),
        wallet_signature: format!("0x{n:0130x}"),
        at,
    };
    let push = |c: &mut PledgeChecker, n: u64, at: u64| {
        let leaf = pledge(n, at).leaf(&key, n).unwrap();
        c.record(n, &leaf, &serde_json::from_slice(&leaf).unwrap())
    };
    let day = T0 - T0 % DAY;
    for n in 1..=MAX_PLEDGES_PER_DAY {
        push(&mut checker, n, day + n).unwrap();
    }
    let e = push(&mut checker, 11, day + DAY - 1).unwrap_err();
    assert!(
        e.0.ends_with("more than 10 pledges of one vow in one UTC day"),
        "{}",
        e.0
    );
    // The next UTC day starts a new count.
    let mut next = PledgeChecker::new(PinnedKey::parse(&key.vkey()).unwrap());
    next.record(0, &crate::canonical::jcs(&vow).unwrap(), &vow)
        .unwrap();
    for n in 1..=MAX_PLEDGES_PER_DAY {
        push(&mut next, n, day + n).unwrap();
    }
    push(&mut next, 11, day + DAY).unwrap();
    assert_eq!(next.count, 11);
}
