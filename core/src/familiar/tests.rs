use serde_json::json;

use super::record::*;
use super::verify::FamiliarChecker;
use super::*;
use crate::leaf::LeafCheck;
use crate::record::{Logged, OwnerSigned};
use crate::signing::{PinnedKey, ServiceKey};
use crate::witness::tests::personal_sign;

const ORIGIN: &str = "https://conduct.example";
const T0: u64 = 1_795_348_800; // 2026-11-22T12:00:00Z

#[test]
fn orders_are_bounded_text_and_hash_as_rfc8785() {
    let o = parse_order(
        &json!({"title": "Sort the inbox", "what": "Label\tand file.\nDaily."}),
        "/order",
    )
    .unwrap();
    assert_eq!(o.title(), "Sort the inbox");
    // sha256 of the RFC 8785 bytes (members sorted, no spaces).
    let bytes = br#"{"title":"Sort the inbox","what":"Label\tand file.\nDaily."}"#;
    use sha2::Digest;
    assert_eq!(order_sha256(&o), hex::encode(sha2::Sha256::digest(bytes)));
    let bad = |v: serde_json::Value| parse_order(&v, "/order").unwrap_err()[0].pointer.clone();
    assert_eq!(bad(json!("x")), "/order");
    assert_eq!(bad(json!({"what": "x"})), "/order/title");
    assert_eq!(
        bad(json!({"title": "t", "what": "x", "budget": null})),
        "/order/budget"
    );
    assert_eq!(
        bad(json!({"title": "t", "what": "x", "wallet": "0x"})),
        "/order/wallet"
    );
    assert_eq!(bad(json!({"title": "a\nb", "what": "x"})), "/order/title");
    assert_eq!(bad(json!({"title": "t", "what": " "})), "/order/what");
    assert_eq!(
        bad(json!({"title": "t\u{202E}", "what": "x"})),
        "/order/title"
    );
    assert_eq!(
        bad(json!({"title": "t", "what": "x".repeat(MAX_WHAT + 1)})),
        "/order/what"
    );
    assert_eq!(bad(json!({"title": "t", "what": 5})), "/order/what");
    assert!(parse_order(
        &json!({"title": "t", "what": "x", "budget": "50 USDC", "deliverable": "a PR"}),
        "/order"
    )
    .is_ok());
}

#[test]
fn the_owner_text_names_origin_action_owner_order_and_date() {
    let m = familiar_message(
        ORIGIN,
        "vow 00000000000000aa",
        &"ab".repeat(32),
        "2026-11-22",
    );
    for want in [
        "Origin: https://conduct.example",
        "Action: summon_familiar",
        "Owner: vow 00000000000000aa",
        &format!("Order (sha256): {}", "ab".repeat(32)),
        "Date (UTC): 2026-11-22",
        "wallet: null",
        "faucet cap of 0",
    ] {
        assert!(m.contains(want), "{want} in {m}");
    }
    assert!(is_familiar_id(&familiar_id("0xAB")));
    assert_eq!(familiar_id("0xAB"), familiar_id("0xab"));
    assert!(!is_familiar_id("XYZ"));
}

fn vow_leaf(key: &ServiceKey, id: &str, sandbox: bool, wallet: &str) -> serde_json::Value {
    crate::leaf::test_vow(key, id, (!sandbox).then_some(wallet), 0)
}

fn summoned(owner: Owner, secret: u8) -> Familiar {
    let mut f = Familiar {
        origin: ORIGIN.into(),
        owner,
        owner_signature: String::new(),
        order: parse_order(&json!({"title": "t", "what": "w"}), "/order").unwrap(),
        labor_price_usd: "1.00".into(),
        at: T0,
    };
    f.owner_signature = personal_sign([secret; 32], &f.message().unwrap()).0;
    f
}

#[test]
fn familiar_records_hold_no_wallet_and_verify() {
    let key = ServiceKey::from_seed(&[6; 32], "conduct.test");
    let pinned = PinnedKey::parse(&key.vkey()).unwrap();
    let wallet = personal_sign([0x11; 32], "x").1;
    let by_vow = summoned(
        Owner::Vow {
            vow_id: "00000000000000aa".into(),
            wallet: wallet.clone(),
        },
        0x11,
    );
    by_vow.check_wallet().unwrap();
    let leaf = by_vow.leaf(&key, 2).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&leaf).unwrap();
    assert_eq!(v["wallet"], serde_json::Value::Null);
    assert_eq!(v["faucet_cap"], "0");
    assert_eq!(v["status"], "summoned");
    assert_eq!(v["familiar_id"], by_vow.id());
    assert_eq!(v["owner"]["form"], "vow");
    assert_eq!(Familiar::parse(&v).unwrap(), Some((2, by_vow.clone())));

    let mut checker = FamiliarChecker::new(pinned.clone());
    let vow = vow_leaf(&key, "00000000000000aa", false, &wallet);
    let vb = crate::canonical::jcs(&vow).unwrap();
    checker.record(0, &vb, &vow).unwrap();
    checker.record(2, &leaf, &v).unwrap();
    // A wallet owner needs no vow.
    let by_wallet = summoned(
        Owner::Wallet {
            wallet: personal_sign([0x22; 32], "x").1,
        },
        0x22,
    );
    by_wallet.check_wallet().unwrap();
    let wl = by_wallet.leaf(&key, 3).unwrap();
    checker
        .record(3, &wl, &serde_json::from_slice(&wl).unwrap())
        .unwrap();
    assert_eq!(checker.count, 2);
    // Replayed signature.
    let again = by_wallet.leaf(&key, 4).unwrap();
    assert!(checker
        .record(4, &again, &serde_json::from_slice(&again).unwrap())
        .is_err());
    // A wallet, a faucet cap or a status slipped in: not the record format.
    for (k, val) in [
        (
            "wallet",
            json!("0x0000000000000000000000000000000000000001"),
        ),
        ("faucet_cap", json!("1000")),
        ("status", json!("active")),
        ("familiar_id", json!("0000000000000000")),
        ("order_sha256", json!("00")),
    ] {
        let mut t = v.clone();
        t[k] = val;
        assert!(Familiar::parse(&t).is_err(), "{k}");
    }
    // A vow owner with no vow before it, or a sandbox one.
    assert!(FamiliarChecker::new(pinned.clone())
        .record(2, &leaf, &v)
        .is_err());
    let mut sb = FamiliarChecker::new(pinned);
    let sandbox = vow_leaf(&key, "00000000000000aa", true, &wallet);
    sb.record(0, &crate::canonical::jcs(&sandbox).unwrap(), &sandbox)
        .unwrap();
    assert!(sb.record(2, &leaf, &v).is_err());
    // Signed by another wallet than the owner's.
    let mut forged = by_vow.clone();
    forged.owner_signature = personal_sign([0x33; 32], &by_vow.message().unwrap()).0;
    assert!(forged.check_wallet().is_err());
}

#[test]
fn the_same_summon_within_24_hours_is_the_records_own_and_nothing_else_is() {
    let wallet = personal_sign([0x44; 32], "x").1;
    let owner = Owner::Vow {
        vow_id: "00000000000000aa".into(),
        wallet: wallet.clone(),
    };
    let f = summoned(owner.clone(), 0x44);
    let sig = f.owner_signature.clone();
    let order = f.order.clone();
    assert!(f.resent_by(ORIGIN, &owner, &order, &sig, T0));
    assert!(f.resent_by(ORIGIN, &owner, &order, &sig.to_ascii_uppercase(), T0 + 3600));
    assert!(f.resent_by(ORIGIN, &owner, &order, &sig, T0 + RESEND_WINDOW - 1));
    // After 24 hours, or another order, owner, origin or signature: not a resend.
    assert!(!f.resent_by(ORIGIN, &owner, &order, &sig, T0 + RESEND_WINDOW));
    let other = parse_order(&json!({"title": "t", "what": "other"}), "/order").unwrap();
    assert!(!f.resent_by(ORIGIN, &owner, &other, &sig, T0));
    let as_wallet = Owner::Wallet { wallet };
    assert!(!f.resent_by(ORIGIN, &as_wallet, &order, &sig, T0));
    assert!(!f.resent_by("https://other.example", &owner, &order, &sig, T0));
    let another = summoned(owner.clone(), 0x55).owner_signature;
    assert!(!f.resent_by(ORIGIN, &owner, &order, &another, T0));
}
