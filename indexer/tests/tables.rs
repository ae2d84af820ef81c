//! The service's own tables (`conduct_indexer::state::tables::Tables`) on the state
//! `CONDUCT_TEST_STATE` names (tests/run.sh runs SQLite and PostgreSQL): a payment
//! authorization claimed once under concurrency, idempotency within its window, payment
//! identifiers bound once, readings and the asks they answer, free caps; all kept across a
//! reopen.

use std::sync::{Arc, Barrier};

use conduct_indexer::state::tables::{
    Idempotent, PaymentIdState, PaymentKey, PaymentStatus, ServedAnswer, IDEMPOTENCY_WINDOW,
};

mod common;

const T0: u64 = 1_795_262_400;

fn key(nonce: &str) -> PaymentKey<'_> {
    PaymentKey {
        network: "eip155:31337",
        payer: "0xabc",
        nonce,
    }
}

#[test]
fn an_authorization_is_claimed_once_under_concurrency() {
    let dir = tempfile::tempdir().unwrap();
    let state = common::state(dir.path());
    let tables = state.tables();
    let start = Arc::new(Barrier::new(16));
    let claims: Vec<_> = (0..16)
        .map(|i| {
            let (tables, start) = (state.tables(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                let payload = format!("payload-{i}");
                tables
                    .claim_payment(&key("n1"), &payload, "rail", "/profile", "0.01", T0)
                    .unwrap()
            })
        })
        .collect();
    let won: Vec<bool> = claims.into_iter().map(|t| t.join().unwrap()).collect();
    assert_eq!(won.iter().filter(|w| **w).count(), 1, "{won:?}");
    let payload = tables.payment_payload(&key("n1")).unwrap().unwrap();
    assert!(payload.starts_with("payload-"));
    assert_eq!(
        tables.payment_status(&key("n1")).unwrap(),
        Some((PaymentStatus::Claimed, None))
    );
    assert_eq!(tables.payment_status(&key("other")).unwrap(), None);
    assert!(tables
        .finish_claimed(
            &key("n1"),
            PaymentStatus::Settled,
            Some("0xt"),
            None,
            T0 + 1
        )
        .unwrap());
    assert!(!tables
        .finish_claimed(
            &key("n1"),
            PaymentStatus::Failed,
            None,
            Some("late"),
            T0 + 2
        )
        .unwrap());
    tables
        .finish_payment(
            &key("n1"),
            PaymentStatus::Unsettled,
            None,
            Some("d"),
            T0 + 3,
        )
        .unwrap();
    drop((tables, state));
    let tables = common::state(dir.path()).tables();
    assert_eq!(
        tables.payment_status(&key("n1")).unwrap(),
        Some((PaymentStatus::Unsettled, None))
    );
    assert!(!tables
        .claim_payment(&key("n1"), "again", "rail", "/profile", "0.01", T0 + 4)
        .unwrap());
}

#[test]
fn idempotency_holds_for_the_window_then_expires() {
    let dir = tempfile::tempdir().unwrap();
    let tables = common::state(dir.path()).tables();
    let window = T0 - IDEMPOTENCY_WINDOW;
    assert_eq!(
        tables.idempotent_get("k", "r", window).unwrap(),
        Idempotent::Fresh
    );
    assert_eq!(
        tables.idempotent_put("k", "r", b"first", T0).unwrap(),
        Idempotent::Cached(b"first".to_vec())
    );
    // The first body within the window wins; another request under the key is refused.
    assert_eq!(
        tables.idempotent_put("k", "r", b"second", T0 + 10).unwrap(),
        Idempotent::Cached(b"first".to_vec())
    );
    assert_eq!(
        tables.idempotent_put("k", "other", b"x", T0 + 10).unwrap(),
        Idempotent::Reused
    );
    assert_eq!(
        tables.idempotent_get("k", "other", window + 10).unwrap(),
        Idempotent::Reused
    );
    // Past the window the key is fresh again and may be taken anew.
    let later = T0 + IDEMPOTENCY_WINDOW + 1;
    assert_eq!(
        tables
            .idempotent_get("k", "r", later - IDEMPOTENCY_WINDOW)
            .unwrap(),
        Idempotent::Fresh
    );
    assert_eq!(
        tables.idempotent_put("k", "new", b"third", later).unwrap(),
        Idempotent::Cached(b"third".to_vec())
    );
    tables.idempotent_put("old", "r", b"o", T0).unwrap();
    assert_eq!(tables.prune_idempotency(later).unwrap(), 1);
    assert_eq!(
        tables.idempotent_get("old", "r", 0).unwrap(),
        Idempotent::Fresh
    );
}

#[test]
fn a_payment_identifier_is_bound_once_and_keeps_what_was_served() {
    let dir = tempfile::tempdir().unwrap();
    let tables = common::state(dir.path()).tables();
    assert_eq!(tables.payment_id("profile", "pay_1").unwrap(), None);
    let start = Arc::new(Barrier::new(8));
    let binds: Vec<_> = (0..8)
        .map(|i| {
            let (tables, start) = (tables.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                let nonce = format!("{i}");
                tables
                    .bind_payment_id("profile", "pay_1", &format!("p{i}"), "r", &key(&nonce), T0)
                    .unwrap()
            })
        })
        .collect();
    let bound: Vec<_> = binds.into_iter().map(|t| t.join().unwrap()).collect();
    assert!(
        bound.iter().all(|b| b == &bound[0]),
        "every call answers the first binding"
    );
    assert_eq!(bound[0].state, PaymentIdState::Open);
    let other = tables
        .bind_payment_id("labor", "pay_1", "q", "r", &key("9"), T0)
        .unwrap();
    assert_eq!(
        other.payload, "q",
        "another route's namespace is another id"
    );
    tables
        .payment_id_pending("profile", "pay_1", "0xtx", Some(b"record"), T0 + 1)
        .unwrap();
    let pending = tables.payment_id("profile", "pay_1").unwrap().unwrap();
    assert_eq!(
        (
            pending.state,
            pending.tx.as_deref(),
            pending.record.as_deref()
        ),
        (PaymentIdState::Pending, Some("0xtx"), Some(&b"record"[..]))
    );
    let answer = ServedAnswer {
        status: 200,
        receipt: "{}",
        record: b"served",
        location: Some("/here"),
        tx: "0xtx",
    };
    tables
        .payment_id_served("profile", "pay_1", &answer, T0 + 2)
        .unwrap();
    // A late pending mark does not undo what was served.
    tables
        .payment_id_pending("profile", "pay_1", "0xlate", None, T0 + 3)
        .unwrap();
    let served = common::state(dir.path())
        .tables()
        .payment_id("profile", "pay_1")
        .unwrap()
        .unwrap();
    assert_eq!(served.state, PaymentIdState::Served);
    assert_eq!(
        (
            served.status,
            served.location.as_deref(),
            served.tx.as_deref()
        ),
        (Some(200), Some("/here"), Some("0xtx"))
    );
    assert_eq!(served.record.as_deref(), Some(&b"served"[..]));
}

#[test]
fn readings_and_free_caps_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let state = common::state(dir.path());
    let tables = state.tables();
    let vows = state.vows().unwrap();
    tables
        .put_readings_asked(&[("v1".into(), 3), ("v2".into(), 1)], T0)
        .unwrap();
    assert_eq!(vows.readings_asked().unwrap(), ["v1", "v2"]);
    // A reading covering seq 2 answers no ask for seq 3; one covering 3 does.
    tables
        .put_interpretation("v1", 2, "{\"a\":2}", T0 + 1)
        .unwrap();
    assert_eq!(vows.readings_asked().unwrap(), ["v1", "v2"]);
    tables
        .put_interpretation("v1", 3, "{\"a\":3}", T0 + 2)
        .unwrap();
    assert_eq!(vows.readings_asked().unwrap(), ["v2"]);
    // An older reading never replaces a newer one.
    tables
        .put_interpretation("v1", 1, "{\"a\":1}", T0 + 3)
        .unwrap();
    assert_eq!(vows.reading("v1").unwrap(), Some((3, "{\"a\":3}".into())));
    assert_eq!(vows.interpreted_since(T0 + 2).unwrap(), ["v1"]);
    assert!(vows.interpreted_since(T0 + 4).unwrap().is_empty());

    let day = T0 / 86_400;
    let rows = vec![
        ("demo".to_owned(), "1.2.3.4".to_owned(), 3),
        ("vow".to_owned(), "1.2.3.4".to_owned(), 1),
    ];
    tables.put_free_caps(day - 1, &rows).unwrap();
    tables.put_free_caps(day, &rows[..1]).unwrap();
    let mut kept = common::state(dir.path()).tables().free_caps(day).unwrap();
    kept.sort();
    assert_eq!(kept, rows[..1]);
    assert!(
        tables.free_caps(day - 1).unwrap().is_empty(),
        "past days dropped"
    );
    tables
        .put_free_caps(day, &[("demo".into(), "1.2.3.4".into(), 7)])
        .unwrap();
    assert_eq!(tables.free_caps(day).unwrap()[0].2, 7);
}
