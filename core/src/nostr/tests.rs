//! Tests of the Nostr parts: BIP-340's official vectors (both verifiers, and k256 signing),
//! BIP-173's Bech32 vectors, NIP-19's npub example, an event made by npm nostr-tools, the
//! binding text and record, the offline checker, and properties (round trips; a tampered id,
//! text or signature fails; the plain verifier agrees with k256).

use proptest::prelude::*;
use serde_json::Value;

use super::record::{Binding, BINDING_TYPE};
use super::verify::BindingChecker;
use super::*;
use crate::leaf::LeafCheck;
use crate::record::{Logged, OwnerSigned};
use crate::signing::{PinnedKey, ServiceKey};
use crate::vow::fixture::personal_sign;

const VECTORS: &str = include_str!("../../tests/vectors/bip340.csv");

fn h32(s: &str) -> [u8; 32] {
    hex::decode(s).unwrap().try_into().unwrap()
}

fn h64(s: &str) -> [u8; 64] {
    hex::decode(s).unwrap().try_into().unwrap()
}

#[test]
fn bip340_official_vectors() {
    let mut n = 0;
    for line in VECTORS.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let (sk, pk, aux, msg, sig, ok) = (f[1], f[2], f[3], f[4], f[5], f[6] == "TRUE");
        let pk_bytes: Option<[u8; 32]> = hex::decode(pk).ok().and_then(|v| v.try_into().ok());
        let Some(pk_bytes) = pk_bytes else { continue };
        let (m, s) = (h32(msg), h64(sig));
        assert_eq!(
            bip340::verify(&pk_bytes, &m, &s),
            ok,
            "plain, vector {}",
            f[0]
        );
        assert_eq!(
            verify_prehash(&pk_bytes, &m, &s),
            ok,
            "k256, vector {}",
            f[0]
        );
        if !sk.is_empty() {
            // Signing with the vector's aux randomness gives its signature exactly.
            let secret = h32(sk);
            assert_eq!(public_key(&secret).unwrap(), pk_bytes, "vector {}", f[0]);
            let mine = sign_prehash(&secret, &m, &h32(aux)).unwrap();
            assert_eq!(hex::encode_upper(mine), sig, "vector {}", f[0]);
        }
        n += 1;
    }
    assert_eq!(n, 15);
}

#[test]
fn bech32_bip173_vectors() {
    for ok in [
        "A12UEL5L",
        "a12uel5l",
        "an83characterlonghumanreadablepartthatcontainsthenumber1andtheexcludedcharactersbio1tt5tgs",
        "abcdef1qpzry9x8gf2tvdw0s3jn54khce6mua7lmqqqxw",
        "split1checkupstagehandshakeupstreamerranterredcaperred2y9e3w",
        "?1ezyfcl",
    ]
    .into_iter()
    .map(str::to_owned)
    .chain([format!("11{}c8247j", "q".repeat(82))])
    {
        let ok = ok.as_str();
        let (hrp, data) = bech32::decode(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
        assert_eq!(bech32::encode(&hrp, &data), ok.to_ascii_lowercase());
    }
    for bad in [
        "\x201nwldj5",
        "\x7f1axkwrx",
        "\u{80}1eym55h",
        "an84characterslonghumanreadablepartthatcontainsthenumber1andtheexcludedcharactersbio1569pvx",
        "pzry9x0s0muk",
        "1pzry9x0s0muk",
        "x1b4n0q5v",
        "li1dgmt3",
        "de1lg7wt\u{ff}",
        "A1G7SGD8",
        "10a06t8",
        "1qzzfhee",
        "a12UEL5L",
    ] {
        assert!(bech32::decode(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn npub_nip19_example_and_refusals() {
    let pk = h32("7e7e9c42a91bfef19fa929e5fda1b72e0ebc1a4c1141673e2794234d86addf4e");
    let npub = "npub10elfcs4fr0l0r8af98jlmgdh9c8tcxjvz9qkw038js35mp4dma8qzvjptg";
    assert_eq!(npub_encode(&pk), npub);
    assert_eq!(npub.len(), NPUB_LEN);
    assert_eq!(npub_decode(npub).unwrap(), pk);
    assert_eq!(npub_decode(&npub.to_ascii_uppercase()).unwrap(), pk);
    assert!(is_curve_point(&pk));
    // Another prefix, a changed character, a short key.
    let nsec = bech32::encode("nsec", &bech32::convert_bits(&pk, 8, 5, true).unwrap());
    assert!(npub_decode(&nsec).unwrap_err().to_string().contains("nsec"));
    let mut bad = npub.to_owned();
    bad.replace_range(10..11, "q");
    assert!(npub_decode(&bad).is_err());
    let short = bech32::encode(
        "npub",
        &bech32::convert_bits(&pk[..31], 8, 5, true).unwrap(),
    );
    assert!(npub_decode(&short)
        .unwrap_err()
        .to_string()
        .contains("31 bytes"));
    // 2^256 - 1 is not on the curve: such an npub decodes but cannot sign.
    assert!(!is_curve_point(&[0xff; 32]));
}

/// Made by npm nostr-tools 2.25.2 (`finalizeEvent`, secret key 3), with escapes and
/// non-ASCII in the content.
const NOSTR_TOOLS_EVENT: &str = r#"{"kind":0,"created_at":1795262400,"tags":[["t","x"]],"content":"{\"about\":\"a \\\"quoted\\\"\\nline\\tand é / ✓\",\"name\":\"conduct\",\"picture\":\"https://x.example/hive/mark.svg\"}","pubkey":"f9308a019258c31049344f85f89d5229b531c845836f99b08601f113bce036f9","id":"2fcf310e216cf406275ee50ef3e8562552b51ba99b97420cc35c7b3387ec538f","sig":"e87257bc43e6a70f2366153f33e68bab55a123afb040dc6929afba55f2b7499714df9c406fc0b8c753c29b3104474875dcc0c75ca88d8446870a88f2b2ca64a7"}"#;

#[test]
fn an_event_by_nostr_tools_verifies_and_ours_match_its_id() {
    let ev: Event = serde_json::from_str(NOSTR_TOOLS_EVENT).unwrap();
    ev.verify().unwrap();
    assert!(bip340::verify(
        &parse_pubkey(&ev.pubkey).unwrap(),
        &h32(&ev.id),
        &h64(&ev.sig)
    ));
    // Re-signing the same fields with the same key gives the same id (and a valid sig).
    let again = Event::sign(
        &h32("0000000000000000000000000000000000000000000000000000000000000003"),
        ev.created_at,
        ev.kind,
        ev.tags.clone(),
        ev.content.clone(),
        &[7; 32],
    )
    .unwrap();
    assert_eq!(again.id, ev.id);
    again.verify().unwrap();
    // Serialized from the struct, members are in NIP-01's order.
    let text = serde_json::to_string(&again).unwrap();
    assert!(
        text.starts_with("{\"id\":\"") && text.ends_with("\"}"),
        "{text}"
    );
    assert!(text.find("\"pubkey\"") < text.find("\"sig\""));
    let mut tampered = ev.clone();
    tampered.content.push(' ');
    assert!(tampered.verify().unwrap_err().to_string().contains("id"));
    let mut tampered = ev;
    tampered.sig.replace_range(0..2, "00");
    assert!(tampered.verify().unwrap_err().to_string().contains("sig"));
}

#[test]
fn the_binding_text() {
    let t = bind_message(
        "https://conduct.example",
        "0123456789abcdef",
        "npub10elfcs4fr0l0r8af98jlmgdh9c8tcxjvz9qkw038js35mp4dma8qzvjptg",
        "2026-11-21",
    );
    assert!(t.starts_with("conduct: bind a Nostr key\n\n"));
    assert!(t.ends_with(
        "\n\nOrigin: https://conduct.example\nAction: bind_npub\nVow: 0123456789abcdef\n\
         Npub: npub10elfcs4fr0l0r8af98jlmgdh9c8tcxjvz9qkw038js35mp4dma8qzvjptg\n\
         Date (UTC): 2026-11-21"
    ));
    assert!(!t.contains('\r'));
}

const T0: u64 = 1_795_262_400;
const SECRET: [u8; 32] = [0x42; 32];
const WALLET_KEY: [u8; 32] = [0x11; 32];

fn wallet_of(key: &[u8; 32]) -> String {
    personal_sign(*key, "").1
}

fn eip191_sign(key: &[u8; 32], text: &str) -> String {
    personal_sign(*key, text).0
}

fn binding(vow: &str, at: u64, secret: &[u8; 32]) -> Binding {
    let pk = public_key(secret).unwrap();
    let npub = npub_encode(&pk);
    let mut b = Binding {
        origin: "https://conduct.example".into(),
        vow_id: vow.into(),
        wallet: wallet_of(&WALLET_KEY),
        npub,
        pubkey: hex::encode(pk),
        wallet_signature: String::new(),
        nostr_signature: String::new(),
        at,
    };
    let text = b.message().unwrap();
    b.wallet_signature = eip191_sign(&WALLET_KEY, &text);
    let aux = [at as u8; 32];
    b.nostr_signature = hex::encode(sign_prehash(secret, &text_digest(&text), &aux).unwrap());
    b
}

#[test]
fn a_binding_record_round_trips_and_checks() {
    let key = ServiceKey::from_seed(&[7; 32], "example.org/log");
    let b = binding("000000000000000a", T0, &SECRET);
    b.check_nostr().unwrap();
    b.check_wallet().unwrap();
    let leaf = b.leaf(&key, 5).unwrap();
    let v: Value = serde_json::from_slice(&leaf).unwrap();
    assert_eq!(v["type"], BINDING_TYPE);
    assert_eq!(v["date"], "2026-11-21");
    let (i, back) = Binding::parse(&v).unwrap().unwrap();
    assert_eq!((i, &back), (5, &b));
    // A member added or changed is refused.
    let mut extra = v.clone();
    extra["note"] = "x".into();
    assert!(Binding::parse(&extra).is_err());
    let mut other_date = v.clone();
    other_date["date"] = "2026-11-22".into();
    assert!(Binding::parse(&other_date).is_err());
    // Not a binding: None.
    assert!(
        Binding::parse(&serde_json::json!({"type": "conduct.vow/v1"}))
            .unwrap()
            .is_none()
    );
    // One signature wrong or missing: refused.
    let mut wrong = b.clone();
    wrong.nostr_signature = binding("000000000000000a", T0, &[0x43; 32]).nostr_signature;
    assert_eq!(
        wrong.check_nostr().unwrap_err().to_string(),
        "nostr_signature: the BIP-340 signature does not verify under this npub over sha256 of \
         the text"
    );
    let mut missing = b.clone();
    missing.nostr_signature.clear();
    assert!(missing.check_nostr().is_err());
    let mut wrong = b.clone();
    wrong.wallet_signature = eip191_sign(&[0x12; 32], &b.message().unwrap());
    assert_eq!(
        wrong.check_wallet().unwrap_err().to_string(),
        "wallet_signature does not recover to the record's wallet"
    );
    // A signature of another day's text.
    let mut late = b.clone();
    late.at += 86_400;
    assert!(late.check_nostr().is_err() && late.check_wallet().is_err());
    // The npub must be the pubkey's.
    let mut other = b;
    other.pubkey = "00".repeat(32);
    assert_eq!(
        other.check_nostr().unwrap_err().to_string(),
        "pubkey is not the key the npub encodes"
    );
}

fn vow_leaf(key: &ServiceKey, id: &str, sandbox: bool, index: u64) -> Vec<u8> {
    let wallet = wallet_of(&WALLET_KEY);
    let v = crate::leaf::test_vow(key, id, (!sandbox).then_some(wallet.as_str()), index);
    crate::canonical::jcs(&v).unwrap()
}

fn run(key: &ServiceKey, leaves: &[Vec<u8>]) -> Result<BindingChecker, String> {
    let mut c = BindingChecker::new(PinnedKey::parse(&key.vkey()).unwrap());
    for (i, l) in leaves.iter().enumerate() {
        if !c.wants(l) {
            continue;
        }
        let v: Value = serde_json::from_slice(l).unwrap();
        c.record(i as u64, l, &v).map_err(|e| e.0)?;
    }
    Ok(c)
}

#[test]
fn the_checker_accepts_good_bindings_and_refuses_each_fault() {
    let key = ServiceKey::from_seed(&[7; 32], "example.org/log");
    let mut leaves = vec![
        vow_leaf(&key, "000000000000000a", false, 0),
        vow_leaf(&key, "000000000000000b", true, 1),
        vow_leaf(&key, "000000000000000c", false, 2),
    ];
    leaves.push(
        binding("000000000000000a", T0, &SECRET)
            .leaf(&key, 3)
            .unwrap(),
    );
    // Rebound to another vow the next day: both records verify (the latest names the vow).
    leaves.push(
        binding("000000000000000c", T0 + 86_400, &SECRET)
            .leaf(&key, 4)
            .unwrap(),
    );
    let c = run(&key, &leaves).unwrap();
    assert_eq!(c.count, 2);
    let npub = npub_encode(&public_key(&SECRET).unwrap());

    let with = |leaf: Vec<u8>| {
        let mut l = leaves.clone();
        l.push(leaf);
        run(&key, &l).map(|_| ()).unwrap_err()
    };
    let e = with(
        binding("000000000000000b", T0, &[0x44; 32])
            .leaf(&key, 5)
            .unwrap(),
    );
    assert!(e.contains("sandbox"), "{e}");
    let e = with(
        binding("00000000000000ff", T0, &[0x44; 32])
            .leaf(&key, 5)
            .unwrap(),
    );
    assert!(e.contains("no vow"), "{e}");
    let e = with(
        binding("000000000000000a", T0, &[0x44; 32])
            .leaf(&key, 9)
            .unwrap(),
    );
    assert!(e.contains("log_index"), "{e}");
    let other = ServiceKey::from_seed(&[8; 32], "example.org/log");
    let e = with(
        binding("000000000000000a", T0, &[0x44; 32])
            .leaf(&other, 5)
            .unwrap(),
    );
    assert!(e.contains("signature"), "{e}");
    let mut bad = binding("000000000000000a", T0, &[0x44; 32]);
    bad.nostr_signature = binding("000000000000000a", T0, &[0x45; 32]).nostr_signature;
    let e = with(bad.leaf(&key, 5).unwrap());
    assert!(e.contains("nostr_signature"), "{e}");
    let mut replay = binding("000000000000000a", T0, &[0x44; 32]);
    replay.nostr_signature = binding("000000000000000a", T0, &SECRET).nostr_signature;
    replay.npub = npub;
    replay.pubkey = hex::encode(public_key(&SECRET).unwrap());
    let e = with(replay.leaf(&key, 5).unwrap());
    assert!(e.contains("earlier"), "{e}");
    let mut wallet = binding("000000000000000a", T0, &[0x44; 32]);
    wallet.wallet = wallet_of(&[0x12; 32]);
    let e = with(wallet.leaf(&key, 5).unwrap());
    assert!(e.contains("wallet"), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn npub_round_trips(pk in prop::array::uniform32(any::<u8>())) {
        let npub = npub_encode(&pk);
        prop_assert_eq!(npub.len(), NPUB_LEN);
        prop_assert_eq!(npub_decode(&npub).unwrap(), pk);
    }

    #[test]
    fn a_flipped_npub_character_is_refused(
        pk in prop::array::uniform32(any::<u8>()),
        at in 5usize..63,
        to in 0usize..32,
    ) {
        let npub = npub_encode(&pk);
        let c = b"qpzry9x8gf2tvdw0s3jn54khce6mua7l"[to] as char;
        prop_assume!(npub.as_bytes()[at] as char != c);
        let mut bad = npub.clone();
        bad.replace_range(at..at + 1, &c.to_string());
        // Bech32 detects every single-character substitution.
        prop_assert!(npub_decode(&bad).is_err());
    }

    #[test]
    fn signatures_verify_and_tampering_fails_in_both_verifiers(
        secret in prop::array::uniform32(any::<u8>()),
        msg in prop::array::uniform32(any::<u8>()),
        aux in prop::array::uniform32(any::<u8>()),
        flip in 0usize..64,
        bit in 0u8..8,
    ) {
        let Ok(pk) = public_key(&secret) else { return Ok(()) };
        let sig = sign_prehash(&secret, &msg, &aux).unwrap();
        prop_assert!(bip340::verify(&pk, &msg, &sig));
        prop_assert!(verify_prehash(&pk, &msg, &sig));
        let mut bad = sig;
        bad[flip] ^= 1 << bit;
        prop_assert!(!bip340::verify(&pk, &msg, &bad));
        prop_assert!(!verify_prehash(&pk, &msg, &bad));
        let mut other = msg;
        other[flip % 32] ^= 1 << bit;
        prop_assert!(!bip340::verify(&pk, &other, &sig));
        prop_assert!(!verify_prehash(&pk, &other, &sig));
    }

    #[test]
    fn events_round_trip_and_a_tampered_id_fails(
        secret in prop::array::uniform32(1u8..),
        created_at in 0u64..4_000_000_000,
        content in "\\PC{0,80}",
        tag in "[a-z]{0,8}",
    ) {
        let ev = Event::sign(&secret, created_at, 0, vec![vec!["t".into(), tag]], content, &[1; 32]).unwrap();
        prop_assert!(ev.verify().is_ok());
        let back: Event = serde_json::from_value(ev.to_value()).unwrap();
        prop_assert_eq!(&back, &ev);
        let mut bad = ev.clone();
        bad.created_at += 1;
        prop_assert!(bad.verify().is_err());
        let mut bad = ev;
        let last = if bad.id.ends_with('0') { "1" } else { "0" };
        bad.id.replace_range(63..64, last);
        prop_assert!(bad.verify().is_err());
    }

    #[test]
    fn a_text_signature_is_for_that_text_only(
        secret in prop::array::uniform32(1u8..),
        text in "\\PC{0,120}",
        extra in "\\PC{1,4}",
    ) {
        let pk = public_key(&secret).unwrap();
        let sig = hex::encode(sign_prehash(&secret, &text_digest(&text), &[2; 32]).unwrap());
        prop_assert!(verify_text(&pk, &text, &sig).is_ok());
        let longer = format!("{text}{extra}");
        prop_assert!(verify_text(&pk, &longer, &sig).is_err());
    }
}
