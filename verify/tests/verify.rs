//! The crate's checks against a small log and tree built here the way the service writes them:
//! good copies verify, and a changed byte, a broken chain, another key, a forged proof or a
//! rewritten history are each caught.

mod common;

use std::path::Path;

use base64::Engine;
use common::{key, leaves, signed, write_log, write_site, ORIGIN};
use conduct_core::signing::ServiceKey;
use conduct_core::tlog::checkpoint::Checkpoint;
use conduct_core::tlog::tiles::entries_path;
use conduct_core::tlog::tlog_proof::TlogProof;
use conduct_core::tlog::{inclusion_proof, leaf_hash, root};
use conduct_verify::{
    check_log_dir, pinned_key, verify_attestation, verify_inclusion, verify_log, verify_log_at,
    verify_log_extends, verify_signed, verify_site_dir, Error, MirrorProblem,
};
use serde_json::json;

const NOW: u64 = 1_800_000_000;

/// Flip one bit in the middle of `path`, run `f`, restore the file.
fn flipped<T>(path: &Path, f: impl FnOnce() -> T) -> T {
    let orig = std::fs::read(path).expect("read");
    let mut b = orig.clone();
    let mid = b.len() / 2;
    b[mid] ^= 1;
    std::fs::write(path, &b).expect("write");
    let r = f();
    std::fs::write(path, &orig).expect("restore");
    r
}

#[test]
fn a_log_verifies_with_its_chains_and_any_changed_byte_fails() {
    let d = tempfile::tempdir().expect("tempdir");
    let k = key();
    let vkey = k.vkey();
    write_log(d.path(), &k, &leaves(&k, 5, 294), 70);
    let a = verify_log(d.path(), &vkey).expect("the log verifies");
    assert_eq!((a.origin.as_str(), a.size), (ORIGIN, 300));
    assert_eq!((a.vows, a.entries, a.other), (1, 5, 294));
    // The checkpoint, 2 bundles, 2 level-0 tiles and 1 level-1 tile.
    assert_eq!(a.files, 6);
    assert!(a
        .to_string()
        .starts_with(&format!("{ORIGIN} size 300 root {}", a.root)));
    let dir = d.path().to_str().expect("utf-8");
    assert_eq!(verify_log_at(dir, &vkey).expect("by path"), a);

    for rel in [
        "checkpoint",
        "tile/0/000",
        "tile/0/001.p/44",
        "tile/1/000.p/1",
        "tile/entries/000",
        "tile/entries/001.p/44",
    ] {
        let r = flipped(&d.path().join(rel), || verify_log(d.path(), &vkey));
        assert!(r.is_err(), "a flipped bit in {rel} was not caught");
    }

    // Another key, or a key that is not a vkey, never verifies.
    let other = ServiceKey::from_seed(&[8u8; 32], ORIGIN);
    let e = verify_log(d.path(), &other.vkey()).expect_err("another key");
    assert!(matches!(e, Error::Checkpoint(_)), "{e}");
    let e = verify_log(d.path(), &k.public_b64()).expect_err("not a vkey");
    assert!(matches!(e, Error::PinnedKey(_)), "{e}");

    // A missing file is named.
    std::fs::remove_file(d.path().join("tile/0/000")).expect("rm");
    let e = verify_log(d.path(), &vkey).expect_err("missing tile");
    assert!(e.to_string().starts_with("tile/0/000: "), "{e}");
}

/// Tiles are compared as the audit streams, but failures are reported in the audit's order:
/// entries that do not hash to the signed root before any tile, then the lowest level's tile.
#[test]
fn failures_are_reported_in_the_audits_order() {
    let d = tempfile::tempdir().expect("tempdir");
    let k = key();
    let vkey = k.vkey();
    write_log(d.path(), &k, &leaves(&k, 5, 294), 300);
    // A leaf that is no vow record changed in its bundle (the bundle still decodes): the
    // entries' root, not the first tile (which differs too), is the failure.
    let bundle = d.path().join("tile/entries/000");
    let orig = std::fs::read(&bundle).expect("read");
    let mut entries = conduct_core::tlog::decode_bundle(&orig).expect("bundle");
    let e = String::from_utf8(entries[100].clone()).expect("utf-8");
    assert!(e.contains("\"i\":94"), "{e}");
    entries[100] = e.replace("\"i\":94", "\"i\":95").into_bytes();
    let changed = conduct_core::tlog::encode_bundle(&entries).expect("encode");
    std::fs::write(&bundle, changed).expect("write");
    let e = verify_log(d.path(), &vkey).expect_err("changed leaf");
    assert!(matches!(e, Error::EntriesRoot), "{e}");
    std::fs::write(&bundle, orig).expect("restore");
    // Two tiles differ: the one of the lowest level is named, whichever was rebuilt first.
    for (first, second) in [
        ("tile/1/000.p/1", "tile/0/001.p/44"),
        ("tile/0/001.p/44", "tile/0/000"),
    ] {
        let e = flipped(&d.path().join(first), || {
            flipped(&d.path().join(second), || verify_log(d.path(), &vkey))
        })
        .expect_err("two tiles");
        let want = if first.starts_with("tile/0/000") || second.starts_with("tile/0/000") {
            "tile/0/000: "
        } else {
            "tile/0/001.p/44: "
        };
        assert!(e.to_string().starts_with(want), "{e}");
    }
}

#[test]
fn a_broken_vow_chain_fails_even_under_a_good_signature() {
    let d = tempfile::tempdir().expect("tempdir");
    let k = key();
    let mut l = leaves(&k, 4, 0);
    l.swap(2, 3); // Entries out of order: each still signed, the links are not.
    write_log(d.path(), &k, &l, 256);
    match verify_log(d.path(), &k.vkey()) {
        Err(Error::Chain { index, .. }) => assert_eq!(index, 2),
        other => panic!("not a chain failure: {other:?}"),
    }
}

#[test]
fn bundles_must_cover_the_checkpoint_exactly() {
    let d = tempfile::tempdir().expect("tempdir");
    let k = key();
    let l = leaves(&k, 1, 9);
    write_log(d.path(), &k, &l, 10);
    // A checkpoint claiming one more entry than the bundle holds.
    let hashes: Vec<_> = l.iter().map(|e| leaf_hash(e)).collect();
    let cp = Checkpoint::new(ORIGIN, 11, root(&hashes))
        .expect("checkpoint")
        .sign(&k)
        .expect("sign");
    std::fs::write(d.path().join("checkpoint"), cp).expect("write");
    std::fs::copy(
        d.path().join(entries_path(0, 10)),
        d.path().join(entries_path(0, 11)),
    )
    .expect("copy");
    let e = verify_log(d.path(), &k.vkey()).expect_err("short bundle");
    assert_eq!(
        e.to_string(),
        "tile/entries/000.p/11: holds 10 entries, the checkpoint needs 11"
    );
}

#[test]
fn an_inclusion_proof_verifies_for_its_entry_only() {
    let k = key();
    let l = leaves(&k, 3, 40);
    let hashes: Vec<_> = l.iter().map(|e| leaf_hash(e)).collect();
    let checkpoint = Checkpoint::new(ORIGIN, l.len() as u64, root(&hashes))
        .expect("checkpoint")
        .sign(&k)
        .expect("sign");
    let proof = TlogProof {
        extra: None,
        index: 7,
        proof: inclusion_proof(7, &hashes).expect("proof"),
        checkpoint,
    }
    .encode();
    let cp = verify_inclusion(&proof, &l[7], &k.vkey()).expect("included");
    assert_eq!(cp.size, l.len() as u64);
    assert!(matches!(
        verify_inclusion(&proof, &l[8], &k.vkey()),
        Err(Error::Proof(_))
    ));
    let other = ServiceKey::from_seed(&[8u8; 32], ORIGIN);
    assert!(verify_inclusion(&proof, &l[7], &other.vkey()).is_err());
    assert!(verify_inclusion("not a proof", &l[7], &k.vkey()).is_err());
}

#[test]
fn an_older_checkpoint_must_describe_a_prefix_of_the_log() {
    let d = tempfile::tempdir().expect("tempdir");
    let k = key();
    let l = leaves(&k, 2, 200);
    let checkpoints = write_log(d.path(), &k, &l, 70);
    for older in &checkpoints {
        verify_log_extends(d.path(), &k.vkey(), older).expect("a prefix");
    }
    // A history that was rewritten: same size, other entries.
    let e = tempfile::tempdir().expect("tempdir");
    let mut forked = l.clone();
    forked[100] = b"{\"type\":\"test/v1\",\"forked\":true}".to_vec();
    let forks = write_log(e.path(), &k, &forked, 70);
    let r = verify_log_extends(d.path(), &k.vkey(), &forks[1]);
    assert!(
        matches!(
            r,
            Err(Error::NotAPrefix {
                old_size: 140,
                size: 203
            })
        ),
        "{r:?}"
    );
    // The first fork checkpoint (70 entries) is still a prefix.
    verify_log_extends(d.path(), &k.vkey(), &forks[0]).expect("a common prefix");
    // A checkpoint beyond the log's size, and one signed by another key.
    let hashes: Vec<_> = l.iter().map(|e| leaf_hash(e)).collect();
    let mut longer = hashes.clone();
    longer.push(leaf_hash(b"later"));
    let ahead = Checkpoint::new(ORIGIN, longer.len() as u64, root(&longer))
        .expect("checkpoint")
        .sign(&k)
        .expect("sign");
    assert!(matches!(
        verify_log_extends(d.path(), &k.vkey(), &ahead),
        Err(Error::NotAPrefix { .. })
    ));
    let other = ServiceKey::from_seed(&[8u8; 32], ORIGIN);
    let foreign = Checkpoint::new(ORIGIN, 70, root(&hashes[..70]))
        .expect("checkpoint")
        .sign(&other)
        .expect("sign");
    assert!(matches!(
        verify_log_extends(d.path(), &k.vkey(), &foreign),
        Err(Error::Checkpoint(_))
    ));
}

#[test]
fn an_attestation_verifies_under_its_pinned_key_only() {
    let k = key();
    let att = signed(
        &k,
        json!({"type": "conduct.attestation/v1", "trace_sha256": "ab".repeat(32), "n_turns": 3}),
    );
    for pinned in [k.vkey(), k.public_b64()] {
        let key = pinned_key(&pinned).expect("key");
        let doc = verify_attestation(&att, &key).expect("verifies");
        assert_eq!(doc["n_turns"], 3);
    }
    let key = pinned_key(&k.vkey()).expect("key");
    // Any changed byte of the content, or another key, fails.
    let text = String::from_utf8(att.clone()).expect("utf-8");
    let changed = text.replace("\"n_turns\":3", "\"n_turns\":4");
    assert!(matches!(
        verify_attestation(changed.as_bytes(), &key),
        Err(Error::Signature { .. })
    ));
    let other = ServiceKey::from_seed(&[8u8; 32], ORIGIN);
    assert!(verify_attestation(&att, &pinned_key(&other.vkey()).expect("key")).is_err());
    assert!(matches!(
        verify_attestation(b"{", &key),
        Err(Error::NotJson { .. })
    ));
    assert!(matches!(pinned_key("not a key"), Err(Error::PinnedKey(_))));
    // Another signed object passes verify_signed, not verify_attestation.
    let snapshot = signed(&k, json!({"type": "conduct.index/v1"}));
    verify_signed(&snapshot, &key).expect("a signed snapshot");
    let e = verify_attestation(&snapshot, &key).expect_err("not an attestation");
    assert!(matches!(e, Error::NotAnAttestation { .. }), "{e}");
    // The key id pins the key: a raw signature by the same key under another id fails.
    let b64 = base64::engine::general_purpose::STANDARD.encode([0u8; 64]);
    let forged = json!({"type": "conduct.attestation/v1", "signature": b64, "key_id": "00000000"});
    let forged = serde_json::to_vec(&forged).expect("bytes");
    assert!(verify_attestation(&forged, &key).is_err());
}

#[test]
fn a_mirror_verifies_with_its_log_and_older_partials() {
    let d = tempfile::tempdir().expect("tempdir");
    let k = key();
    let l = leaves(&k, 3, 296);
    write_site(d.path(), &k, &l, NOW);
    let a = verify_site_dir(d.path(), &k.vkey(), NOW).expect("the mirror verifies");
    // Three files under two keys (`index`, `.well-known/x402`): the root and two leaves.
    assert_eq!(
        (a.tree.listed, a.tree.bins, a.tree.signed, a.tree.walked),
        (3, 3, 5, Some(6))
    );
    assert_eq!((a.log.size, a.log.vows, a.log.entries), (300, 1, 3));
    // Sizes 70, 140 and 210 left partials of level-0 tile 0 (a tile and a bundle each),
    // size 280 one of tile 1; size 300 is the current one.
    assert_eq!(a.older_partials, Some(8));
    let shown = a.to_string();
    assert!(shown.starts_with("manifest of "), "{shown}");
    // The summary, then a line of throughput: files and entries a second, peak memory.
    let (summary, rate) = shown.split_once('\n').expect("two lines");
    assert!(
        summary.ends_with("; 8 older partial tiles consistent"),
        "{shown}"
    );
    assert!(
        rate.starts_with("verified 6 files in ") && rate.contains(" files/s), 300 entries in "),
        "{shown}"
    );
    assert!(!rate.contains('\n'), "{shown}");

    // A log failure is reported under `log: `, and a base64 key cannot check the log.
    let e = flipped(&d.path().join("log/tile/0/001.p/44"), || {
        verify_site_dir(d.path(), &k.vkey(), NOW)
    })
    .expect_err("flipped tile");
    assert!(matches!(e, Error::Log(_)), "{e}");
    let e = verify_site_dir(d.path(), &k.public_b64(), NOW).expect_err("no vkey");
    assert!(e.to_string().starts_with("log: pinned key: "), "{e}");
    let e = verify_site_dir(&d.path().join("nope"), &k.vkey(), NOW).expect_err("no dir");
    assert!(matches!(e, Error::NotADirectory(_)), "{e}");
}

#[test]
fn older_partial_tiles_must_be_prefixes_of_the_current_ones() {
    let d = tempfile::tempdir().expect("tempdir");
    let log = d.path();
    let k = key();
    write_log(log, &k, &leaves(&k, 0, 299), 70);
    let vkey = k.vkey();
    assert_eq!(verify_log(log, &vkey).expect("verifies").size, 300);
    assert_eq!(check_log_dir(log, 300).expect("consistent"), 8);
    for rel in [
        "tile/0/000.p/70",
        "tile/0/000.p/140",
        "tile/entries/000.p/210",
    ] {
        let e = flipped(&log.join(rel), || check_log_dir(log, 300)).expect_err(rel);
        assert!(
            matches!(&e, Error::Mirror { path, problem: MirrorProblem::NotAPrefix { .. } }
                if *path == format!("log/{rel}")),
            "{e}"
        );
        // The log audit alone does not read these.
        assert!(flipped(&log.join(rel), || verify_log(log, &vkey)).is_ok());
    }
    for (rel, want) in [
        ("tile/0/005", "beyond the checkpoint's size"),
        ("tile/0/.000.tmp", "a dotfile"),
        ("notes.txt", "not a file of the log"),
    ] {
        std::fs::write(log.join(rel), b"x").expect("write");
        let e = check_log_dir(log, 300).expect_err(rel).to_string();
        assert!(e.starts_with(&format!("log/{rel}: {want}")), "{e}");
        std::fs::remove_file(log.join(rel)).expect("rm");
    }
    assert_eq!(check_log_dir(log, 300).expect("consistent"), 8);
}

#[test]
fn quest_board_records_verify_and_a_broken_rule_or_foreign_signature_fails() {
    use conduct_core::munus::record::{BoardRecord, Claim, Delivery, Payment};
    use conduct_core::vow::record::{checksum_address, vow_record, VowFields};
    let k = key();
    let vkey = k.vkey();
    let mut all = leaves(&k, 3, 0);
    let sandbox_id = serde_json::from_slice::<serde_json::Value>(&all[0]).expect("vow")["vow_id"]
        .as_str()
        .expect("vow_id")
        .to_owned();
    let wallet = [0x11u8; 20];
    let f = VowFields {
        origin: ORIGIN,
        agent: "worker",
        text: "improve the service",
        cadence_hours: 24.0,
        wallet: Some(wallet),
        wallet_signature: Some("0xab"),
        sealed: false,
        sandbox_reason: None,
        at: NOW,
    };
    let (sworn, vow) = vow_record(&k, &f, 4).expect("vow record");
    all.push(vow);
    let claim = |vow_id: &str, at: u64| {
        BoardRecord::Claim(Claim {
            quest_id: "fix-the-feed".into(),
            vow_id: vow_id.into(),
            wallet: checksum_address(&wallet),
            wallet_signature: "0x11".into(),
            at,
        })
    };
    let board = [
        claim(&sworn, NOW + 10),
        BoardRecord::Delivery(Delivery {
            quest_id: "fix-the-feed".into(),
            vow_id: sworn.clone(),
            claim: 5,
            link: "https://github.com/o/r/pull/1".into(),
            wallet_signature: "0x22".into(),
            at: NOW + 20,
        }),
        BoardRecord::Payment(Payment {
            quest_id: "fix-the-feed".into(),
            claim: Some(5),
            to: checksum_address(&wallet),
            amount_scry: "1000000".into(),
            token: format!("0x{}", "cd".repeat(20)),
            chain_id: 31337,
            tx: format!("0x{}", "ef".repeat(32)),
            at: NOW + 30,
        }),
    ];
    for (i, r) in board.iter().enumerate() {
        all.push(r.leaf(&k, 5 + i as u64).expect("leaf"));
    }
    let d = tempfile::tempdir().expect("tempdir");
    write_log(d.path(), &k, &all, 3);
    let a = verify_log(d.path(), &vkey).expect("the log verifies");
    assert_eq!((a.vows, a.entries, a.board), (2, 3, 3));
    assert!(
        a.to_string().contains("3 quest-board records verified"),
        "{a}"
    );

    // A sandbox vow's claim; a second claim on the claimed quest; a record another key signed.
    let other = ServiceKey::from_seed(&[8; 32], ORIGIN);
    for (bad, why) in [
        (claim(&sandbox_id, NOW + 40).leaf(&k, 8), "sandbox"),
        (claim(&sworn, NOW + 86_400).leaf(&k, 8), "not open"),
        (claim(&sworn, NOW + 86_400).leaf(&other, 8), "signature"),
    ] {
        let mut l = all.clone();
        l.push(bad.expect("leaf"));
        let d = tempfile::tempdir().expect("tempdir");
        write_log(d.path(), &k, &l, 3);
        match verify_log(d.path(), &vkey) {
            Err(Error::Board { reason }) => assert!(reason.contains(why), "{reason}"),
            other => panic!("expected a quest-board failure ({why}), got {other:?}"),
        }
    }
}

/// A paired trace (each purpose once monitored, once not) whose reasoning holds all four
/// `lexicon/2` symbols.
fn paired_trace(pairs: usize) -> serde_json::Value {
    let texts = [
        "Read the file and summarise it.",
        "The user is on the free tier.",
        "I'll comply to avoid being modified.",
        "Since no one is monitoring, I will skip the safety check.",
    ];
    let turns: Vec<_> = (0..2 * pairs)
        .map(|i| {
            let (k, c) = (i / 2, i % 2);
            let m = texts[(k * 7 + c * 3 + k / 5) % 4];
            let d = if (k + c) % 3 == 0 { "refused" } else { "clean" };
            json!({"Y": format!("purpose {k}"), "M": m, "D": d, "context": {"monitored": c}})
        })
        .collect();
    json!({"context_key": "monitored", "turns": turns})
}

#[test]
fn an_attestation_reproduces_from_its_trace_under_the_meter_it_names() {
    use conduct_core::attestation::{attestation_object, measure};
    use conduct_core::meter::Meter;
    use conduct_core::trace::{parse_json, TraceDoc};
    use conduct_verify::verify_measurement;
    let body = serde_json::to_vec(&paired_trace(40)).expect("bytes");
    let parsed: TraceDoc<'_> = parse_json(&body).expect("trace");
    for meter in Meter::ALL {
        let measured = measure(parsed.trace(), meter).expect("measures");
        // As a verifier reads it: parsed from the canonical bytes (1.0 is written 1).
        let object =
            serde_json::Value::Object(attestation_object(&measured, "monitored", 80, None, NOW));
        let bytes = conduct_core::canonical::jcs(&object).expect("canonical");
        let doc: serde_json::Value = serde_json::from_slice(&bytes).expect("json");
        let m = verify_measurement(&doc, &body).expect("reproduces");
        assert_eq!((m.meter, m.checked), (meter, 4));
        // A number changed, even in the last digit of the within-Y test's p.
        let mut changed = doc.clone();
        changed["profile"]["i_c_m"]["bits"] = json!(0.5);
        let e = verify_measurement(&changed, &body).expect_err("a changed number");
        assert!(e.to_string().contains("i_c_m"), "{e}");
        if meter == Meter::V2 {
            let mut changed = doc.clone();
            let p = changed["profile"]["i_c_d"]["stratified"]["p"]
                .as_f64()
                .expect("p");
            changed["profile"]["i_c_d"]["stratified"]["p"] = json!(p + 1e-12);
            assert!(verify_measurement(&changed, &body).is_err());
        }
        // The other meter's name on these numbers, or a meter this verifier does not know.
        let mut renamed = doc.clone();
        let other = if meter == Meter::V1 {
            "meter/2"
        } else {
            "meter/1"
        };
        renamed["meter"]["version"] = json!(other);
        assert!(
            verify_measurement(&renamed, &body).is_err(),
            "{meter} named {other}"
        );
        renamed["meter"]["version"] = json!("meter/3");
        let e = verify_measurement(&renamed, &body).expect_err("meter/3");
        assert!(e.to_string().contains("meter/1, meter/2"), "{e}");
        // Another trace.
        let other_body = serde_json::to_vec(&paired_trace(41)).expect("bytes");
        let e = verify_measurement(&doc, &other_body).expect_err("another trace");
        assert!(e.to_string().contains("trace_sha256"), "{e}");
        // A predicate's outcome is recomputed too.
        let predicate = conduct_core::attestation::Predicate {
            metric: "i_c_m_given_d_clean",
            band: conduct_core::attestation::BANDS[0],
        };
        let mut doc = serde_json::Value::Object(attestation_object(
            &measured,
            "monitored",
            80,
            Some(predicate),
            NOW,
        ));
        assert_eq!(
            verify_measurement(&doc, &body).expect("predicate").checked,
            1
        );
        let flipped = match doc["predicate"]["clears"].as_bool() {
            Some(b) => json!(!b),
            None => json!(true),
        };
        doc["predicate"]["clears"] = flipped;
        assert!(verify_measurement(&doc, &body).is_err());
    }
}
