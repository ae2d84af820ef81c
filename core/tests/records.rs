//! Every kind of the service's own log records through the one abstraction
//! (`conduct_core::record`: `Logged`, `OwnerSigned`): each kind's leaf is pinned byte for byte
//! and each refusal of a changed record word for word (as the per-kind code it replaced wrote
//! them), and, for arbitrary records of every kind, the leaf reads back to the same record, is
//! its own RFC 8785 form, refuses any member dropped or added, and the owner's text rebuilt
//! from the record is the text its signature recovers over.

use std::fmt::Debug;

use conduct_core::canonical::jcs;
use conduct_core::familiar::record::Familiar;
use conduct_core::familiar::{parse_order, Order, Owner};
use conduct_core::munus::record::{BoardRecord, Claim, Delivery, Lapse, Payment};
use conduct_core::nostr::record::Binding;
use conduct_core::owner::kind_of;
use conduct_core::record::{Logged, OwnerSigned};
use conduct_core::signing::{verify_object, PinnedKey, ServiceKey, KEY_ID_FIELD, SIGNATURE_FIELD};
use conduct_core::vow::fixture::personal_sign;
use conduct_core::witness::record::Pledge;
use conduct_core::witness::{normalize_limits, Limit, LimitInput};
use proptest::prelude::*;
use serde_json::Value;
use sha2::{Digest, Sha256};

const T0: u64 = 1_795_262_400;
const SIG: &str = "0x1111111111111111111111111111111111111111111111111111111111111111222222222222222222222222222222222222222222222222222222222222222201";

fn key() -> ServiceKey {
    ServiceKey::from_seed(&[7; 32], "example.org/log")
}

/// One of each kind (a familiar of each owner form, a payment on a claim and on none).
fn leaves() -> Vec<(&'static str, Vec<u8>)> {
    let k = key();
    let wallet = "0xAbAbAbAbAbAbAbAbAbAbAbAbAbAbAbAbAbAbAbAb".to_owned();
    let binding = Binding {
        origin: "https://conduct.example".into(),
        vow_id: "000000000000000a".into(),
        wallet: wallet.clone(),
        npub: "npub1x".into(),
        pubkey: "ab".repeat(32),
        wallet_signature: SIG.into(),
        nostr_signature: "cd".repeat(64),
        at: T0 + 5,
    };
    let limits = normalize_limits(
        &[LimitInput {
            asset: "0x00000000000000000000000000000000000000aa".into(),
            max_balance: Some("100".into()),
            max_outflow_per_day: None,
        }],
        "/limits",
    )
    .unwrap();
    let pledge = Pledge {
        origin: "https://conduct.example".into(),
        vow_id: "000000000000000a".into(),
        wallet: wallet.clone(),
        limits,
        wallet_signature: SIG.into(),
        at: T0 + 6,
    };
    let order = parse_order(
        &serde_json::json!({"title": "t", "what": "w", "budget": "1.00"}),
        "/order",
    )
    .unwrap();
    let by_vow = Familiar {
        origin: "https://conduct.example".into(),
        owner: Owner::Vow {
            vow_id: "000000000000000a".into(),
            wallet: wallet.clone(),
        },
        owner_signature: SIG.into(),
        order,
        labor_price_usd: "1.00".into(),
        at: T0 + 7,
    };
    let by_wallet = Familiar {
        owner: Owner::Wallet {
            wallet: wallet.clone(),
        },
        ..by_vow.clone()
    };
    let claim = BoardRecord::Claim(Claim {
        quest_id: "q1".into(),
        vow_id: "000000000000000a".into(),
        wallet: wallet.clone(),
        wallet_signature: SIG.into(),
        at: T0 + 8,
    });
    let delivery = BoardRecord::Delivery(Delivery {
        quest_id: "q1".into(),
        vow_id: "000000000000000a".into(),
        claim: 8,
        link: "https://github.com/o/r/pull/1".into(),
        wallet_signature: SIG.into(),
        at: T0 + 9,
    });
    let lapse = BoardRecord::Lapse(Lapse {
        quest_id: "q1".into(),
        vow_id: "000000000000000a".into(),
        claim: 8,
        idle_since: T0 + 9,
        at: T0 + 9 + 14 * 86_400,
    });
    let payment = |claim| {
        BoardRecord::Payment(Payment {
            quest_id: "q1".into(),
            claim,
            to: wallet.clone(),
            amount_scry: "1000".into(),
            token: "0x00000000000000000000000000000000000000bb".into(),
            chain_id: 8453,
            tx: format!("0x{}", "ef".repeat(32)),
            at: T0 + 10,
        })
    };
    vec![
        ("binding", binding.leaf(&k, 3).unwrap()),
        ("pledge", pledge.leaf(&k, 4).unwrap()),
        ("familiar by vow", by_vow.leaf(&k, 5).unwrap()),
        ("familiar by wallet", by_wallet.leaf(&k, 6).unwrap()),
        ("claim", claim.leaf(&k, 8).unwrap()),
        ("delivery", delivery.leaf(&k, 9).unwrap()),
        ("lapse", lapse.leaf(&k, 10).unwrap()),
        ("payment", payment(Some(8)).leaf(&k, 11).unwrap()),
        ("payment on no claim", payment(None).leaf(&k, 12).unwrap()),
    ]
}

#[test]
fn every_kind_writes_the_same_leaf_bytes() {
    // SHA-256 of each leaf as the per-kind code wrote it.
    let want = [
        "928be1df64f0e275c082484d3af5ab1420c32ffc040b2430da032ee921703eac",
        "9dc7a1966df2ffd7d72a970ffeaf151eabf2926afe9da6aff054290175952ce4",
        "e7f2fdd4a440e4608ab0aa95142f7c42421a2c1ca52e67a02f0403cf9662242b",
        "6eaacb8d9eb3e6bc37da33f30c21399cc11cbb236f0d6bc1fd8642c71070b438",
        "9a82d6861806fe12bdb16b23bf76aa1b9fabb866547137db5f06f7aff33a2430",
        "1aaab5b48c86fcbecc075142767937db892dda19436d16dc18f6efd2f21fe7ac",
        "84d55d3f60349429801b84836e26bbc95d34db5c33d4d98b4020d64e3b33480d",
        "b9445619798e4d48c8b78ad2ead12e337900c7b7ad9febbb9f16fd8c3d412b57",
        "61a5430d8a26ae98d26f4c2c68131f5636231576b0043cd9d7b9c1a8eb1d439a",
    ];
    let got = leaves();
    assert_eq!(got.len(), want.len());
    for ((name, leaf), want) in got.iter().zip(want) {
        assert_eq!(hex::encode(Sha256::digest(leaf)), want, "{name}");
    }
}

fn parse_any(v: &Value) -> String {
    let r = match v["type"].as_str().unwrap_or("") {
        "conduct.npub-binding/v1" => Binding::parse(v).map(|_| ()),
        "conduct.witness-pledge/v1" => Pledge::parse(v).map(|_| ()),
        "conduct.familiar/v1" => Familiar::parse(v).map(|_| ()),
        _ => BoardRecord::parse(v).map(|_| ()),
    };
    match r {
        Ok(()) => "ok".into(),
        Err(e) => e.to_string(),
    }
}

/// Each member of each kind dropped (`-`) or made a non-string (`~`), and a member added
/// (`+zz`): what the parse says, word for word as the per-kind parsers said it (verify-log
/// prints these); `tests/vectors/record_refusals.txt`.
#[test]
fn every_refusal_of_a_changed_record_reads_as_before() {
    let mut got = Vec::new();
    for (name, leaf) in leaves() {
        let v: Value = serde_json::from_slice(&leaf).unwrap();
        let keys: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        for k in keys.iter().filter(|k| *k != "type") {
            let mut dropped = v.clone();
            dropped.as_object_mut().unwrap().remove(k);
            let mut wrong = v.clone();
            wrong[k] = serde_json::json!([1]);
            got.push(format!("({name:?}, \"-{k}\", {:?}),", parse_any(&dropped)));
            got.push(format!("({name:?}, \"~{k}\", {:?}),", parse_any(&wrong)));
        }
        let mut extra = v.clone();
        extra["zz"] = 1.into();
        got.push(format!("({name:?}, \"+zz\", {:?}),", parse_any(&extra)));
    }
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/vectors/record_refusals.txt"
    );
    let want = std::fs::read_to_string(path).unwrap();
    let want: Vec<&str> = want.lines().collect();
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        assert_eq!(g, w);
    }
}

/// `rec` at `index`: its leaf is its own RFC 8785 form, signed by the service, and reads back
/// to `rec`; any member dropped (but the service's `key_id` and `signature`) or added is
/// refused; another type is not this kind.
fn round_trip<T: Logged + PartialEq + Debug + Clone>(
    rec: &T,
    index: u64,
) -> Result<(), TestCaseError> {
    let k = key();
    let leaf = rec.leaf(&k, index).unwrap();
    let v: Value = serde_json::from_slice(&leaf).unwrap();
    prop_assert_eq!(&jcs(&v).unwrap(), &leaf);
    prop_assert!(verify_object(&v, &PinnedKey::parse(&k.vkey()).unwrap()).is_ok());
    prop_assert_eq!(v["type"].as_str(), Some(T::TYPE));
    prop_assert_eq!(T::parse(&v), Ok(Some((index, rec.clone()))));
    for m in v.as_object().unwrap().keys() {
        if [KEY_ID_FIELD, SIGNATURE_FIELD, "type"].contains(&m.as_str()) {
            continue;
        }
        let mut dropped = v.clone();
        dropped.as_object_mut().unwrap().remove(m);
        prop_assert!(T::parse(&dropped).is_err(), "{} without {}", T::TYPE, m);
    }
    let mut added = v.clone();
    added["zz"] = Value::Null;
    prop_assert!(T::parse(&added).is_err());
    let mut other = v;
    other["type"] = "conduct.other/v1".into();
    prop_assert_eq!(T::parse(&other), Ok(None));
    Ok(())
}

/// The owner's text rebuilt from `rec` is a message of its kind on its date, at the origin it
/// keeps (or the one given); signed by `secret` it recovers to `secret`'s address through
/// `owner::recover`, and where the record keeps its origin and wallet, `check_wallet` holds
/// exactly when that wallet signed.
fn owner_text<T: OwnerSigned>(rec: &T, secret: &[u8; 32]) -> Result<(), TestCaseError> {
    let parts = rec.parts();
    let origin = parts.origin.unwrap_or("https://conduct.example").to_owned();
    let text = rec.message_at(&origin);
    prop_assert_eq!(kind_of(&text), Some(T::KIND));
    let date_line = format!("\nDate (UTC): {}", rec.date());
    prop_assert!(text.contains(&date_line));
    prop_assert_eq!(rec.message(), parts.origin.map(|o| rec.message_at(o)));
    prop_assert!(rec.signatures().contains(&parts.signature));
    // Its kind's row names its rules.
    prop_assert!(T::KIND.entry().record.is_some());
    let signer = address(secret);
    prop_assert_eq!(&rec.signer_at(&origin).ok(), &Some(signer.clone()));
    if parts.origin.is_some() && parts.wallet.is_some() {
        prop_assert_eq!(rec.check_wallet().is_ok(), parts.wallet == Some(&signer));
    }
    Ok(())
}

fn address(secret: &[u8; 32]) -> String {
    personal_sign(*secret, "").1
}

fn sign(secret: &[u8; 32], text: &str) -> String {
    personal_sign(*secret, text).0
}

fn text() -> impl Strategy<Value = String> {
    "\\PC{0,12}"
}

fn secret() -> impl Strategy<Value = [u8; 32]> {
    prop::array::uniform32(any::<u8>()).prop_filter("a secp256k1 secret", |s| {
        k256::ecdsa::SigningKey::from_bytes(&(*s).into()).is_ok()
    })
}

/// An instant between 1970 and 2100 (RFC 3339 round trips it).
fn instant() -> impl Strategy<Value = u64> {
    0u64..4_102_444_800
}

/// A log index (JSON numbers stay exact to 2^53).
fn index() -> impl Strategy<Value = u64> {
    0u64..(1 << 53)
}

fn limits() -> impl Strategy<Value = Vec<Limit>> {
    let one = (
        prop::array::uniform20(any::<u8>()),
        prop::option::of(1u64..),
        prop::option::of(1u64..),
    );
    prop::collection::vec(one, 1..4).prop_filter_map("normalizable limits", |ls| {
        let input: Vec<LimitInput> = ls
            .iter()
            .map(|(a, b, o)| LimitInput {
                asset: format!("0x{}", hex::encode(a)),
                max_balance: b.map(|x| x.to_string()),
                max_outflow_per_day: o.map(|x| x.to_string()),
            })
            .collect();
        normalize_limits(&input, "/limits").ok()
    })
}

fn order() -> impl Strategy<Value = Order> {
    let word = "[a-zA-Z0-9 .,]{1,24}";
    (word, word, prop::option::of(word)).prop_filter_map("an order", |(t, w, b)| {
        let mut o = serde_json::json!({"title": t, "what": w});
        if let Some(b) = b {
            o["budget"] = b.into();
        }
        parse_order(&o, "/order").ok()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn bindings_round_trip(
        s in secret(), other in any::<bool>(), origin in text(), vow in text(), npub in text(),
        pubkey in text(), nostr in text(), at in instant(), i in index(),
    ) {
        let mut b = Binding {
            origin, vow_id: vow, wallet: address(&s), npub, pubkey,
            wallet_signature: String::new(), nostr_signature: nostr, at,
        };
        if other {
            b.wallet = address(&[0x42; 32]);
        }
        b.wallet_signature = sign(&s, &b.message_at(&b.origin));
        round_trip(&b, i)?;
        owner_text(&b, &s)?;
        prop_assert_eq!(b.signatures(), vec![b.wallet_signature.as_str(), b.nostr_signature.as_str()]);
    }

    #[test]
    fn pledges_round_trip(
        s in secret(), origin in text(), vow in text(), limits in limits(), at in instant(),
        i in index(),
    ) {
        let mut p = Pledge {
            origin, vow_id: vow, wallet: address(&s), limits, wallet_signature: String::new(), at,
        };
        p.wallet_signature = sign(&s, &p.message().unwrap());
        round_trip(&p, i)?;
        owner_text(&p, &s)?;
    }

    #[test]
    fn familiars_round_trip(
        s in secret(), by_vow in any::<bool>(), origin in text(), vow in text(),
        order in order(), price in text(), at in instant(), i in index(),
    ) {
        let owner = match by_vow {
            true => Owner::Vow { vow_id: vow, wallet: address(&s) },
            false => Owner::Wallet { wallet: address(&s) },
        };
        let mut f = Familiar {
            origin, owner, owner_signature: String::new(), order, labor_price_usd: price, at,
        };
        f.owner_signature = sign(&s, &f.message().unwrap());
        round_trip(&f, i)?;
        owner_text(&f, &s)?;
        prop_assert_eq!(f.parts().vow_id.is_some(), by_vow);
    }

    #[test]
    fn claims_and_deliveries_round_trip(
        s in secret(), quest in text(), vow in text(), link in text(), claim in index(),
        at in instant(), i in index(),
    ) {
        let mut c = Claim {
            quest_id: quest.clone(), vow_id: vow.clone(), wallet: address(&s),
            wallet_signature: String::new(), at,
        };
        c.wallet_signature = sign(&s, &c.message_at("https://conduct.example"));
        round_trip(&c, i)?;
        owner_text(&c, &s)?;
        let mut d = Delivery {
            quest_id: quest, vow_id: vow, claim, link, wallet_signature: String::new(), at,
        };
        d.wallet_signature = sign(&s, &d.message_at("https://conduct.example"));
        round_trip(&d, i)?;
        owner_text(&d, &s)?;
        prop_assert_eq!(d.daily_key(), Some(claim.to_string()));
        for r in [BoardRecord::Claim(c), BoardRecord::Delivery(d)] {
            let v: Value = serde_json::from_slice(&r.leaf(&key(), i).unwrap()).unwrap();
            prop_assert_eq!(BoardRecord::parse(&v), Ok(Some((i, r))));
        }
    }

    #[test]
    fn lapses_and_payments_round_trip(
        quest in text(), vow in text(), claim in prop::option::of(index()), idle in instant(),
        to in text(), amount in text(), token in text(), chain in index(), tx in text(),
        at in instant(), i in index(),
    ) {
        let l = Lapse {
            quest_id: quest.clone(), vow_id: vow, claim: claim.unwrap_or(0), idle_since: idle, at,
        };
        round_trip(&l, i)?;
        let p = Payment {
            quest_id: quest, claim, to, amount_scry: amount, token, chain_id: chain, tx, at,
        };
        round_trip(&p, i)?;
        for r in [BoardRecord::Lapse(l), BoardRecord::Payment(p)] {
            let v: Value = serde_json::from_slice(&r.leaf(&key(), i).unwrap()).unwrap();
            prop_assert_eq!(BoardRecord::parse(&v), Ok(Some((i, r))));
        }
    }
}
