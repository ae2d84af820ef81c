//! The witness and familiars end to end (issue 16; library/WITNESS.md, library/FAMILIARS.md):
//! one anvil with TestUSD, both payment rails (the PyPI x402 reference facilitator and the
//! self-hosted Permit2 rail), one `conduct serve` whose chain RPC can be cut, wallets signed
//! with PyPI eth-account and paid with the stock PyPI x402 client. A pledge of limits, a paid
//! reading with no breach while the limits hold, a breach on anvil flagged with the transfer
//! that caused it, the refusals (sandbox vow, another wallet, a replayed signature), a cut chain
//! answered 503 and not charged; a familiar summon answered 402 with the labor price (not the
//! read price), then paid and recorded with `wallet: null` and `faucet_cap: "0"` on a public
//! page, a bad owner signature refused without a charge; the same summon sent again answered
//! with the same record and its `Location`, nothing charged, and the signature reused for another
//! order refused; the stock npm client (`contracts/clients/pay-fetch.mjs`) paying a summon once
//! its spend cap is raised to the labor price. Orchestrated by
//! `tests/py/witness_e2e.py`; needs `ANVIL_BIN` (tests/tools.sh) and `CONDUCT_TEST_PYTHON`
//! (tests/run.sh).

use std::path::Path;
use std::process::Command;

use conduct_core::familiar::record::{Familiar, FAMILIAR_TYPE};
use conduct_core::record::{Logged, OwnerSigned};
use conduct_core::witness::record::PLEDGE_TYPE;
use conduct_tests::{conduct_bin, py_dir, python};
use serde_json::Value;

#[test]
fn pledges_readings_and_familiars_on_a_real_chain() {
    let anvil = std::env::var("ANVIL_BIN")
        .expect("ANVIL_BIN is not set: run the project's test command (tests/run.sh)");
    let dir = tempfile::tempdir().unwrap();
    let contracts = Path::new(env!("CARGO_MANIFEST_DIR")).join("../contracts");
    let out = Command::new(python())
        .arg(py_dir().join("witness_e2e.py"))
        .args(["--anvil", &anvil])
        .arg("--conduct")
        .arg(conduct_bin())
        .arg("--contracts")
        .arg(&contracts)
        .arg("--workdir")
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    assert!(
        out.status.success(),
        "witness end-to-end checks failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains(" 0 failed"), "{stdout}");
    let must = [
        "POST /witness/pledge: 201, the signed conduct.witness-pledge/v1 record",
        "the same pledge signature again: 409 witness-pledge-replayed",
        "another wallet's signature: 403 witness-pledge-signature naming /signature",
        "a sandbox vow: 403 witness-sandbox-vow",
        "paid reading within the limits: 200, settled, the read price moved once",
        "within the limits: held, breaches []",
        "over the daily outflow: held false, one max_outflow_per_day breach of 140 against 100",
        "the breach names the transfer that caused it (tx, block, amount)",
        "chain down: 503 chain-unreachable with Retry-After, never \"no breach\"",
        "chain down: nothing charged (balances unchanged)",
        "unpaid summon: 402, empty body, the labor price on every rail",
        "the labor price is not the read price",
        "a wrong owner signature: 403 familiar-owner-signature, nothing charged",
        "paid summon (x402 client, Permit2 rail): 201, settled, the labor price moved once",
        "the record: conduct.familiar/v1, wallet null, faucet_cap \"0\", status summoned, the owner and order",
        "the public page shows the record; /familiars lists it with wallet null and faucet cap 0",
        "the same summon again (x402 client): 200 Idempotent-Replayed, the same record, its Location, no payment asked for",
        "the same summon under another Idempotency-Key with a payment offered: the same record, the payment not settled",
        "the signature reused for another order or owner: 409 familiar-replayed, nothing charged",
        "the refused call's payment was never claimed: it buys a wallet-owned familiar",
        "pay-fetch.mjs with its default cap declines the labor price: nothing paid",
        "pay-fetch.mjs with MAX_AMOUNT at the labor price pays a summon: 201, settled, the labor price moved once",
        "conduct verify-log: the log verifies and counts 1 pledge and 3 familiars",
    ];
    for m in must {
        assert!(
            stdout.contains(&format!("ok:   {m}")),
            "missing check: {m}\n{stdout}"
        );
    }

    // The Rust verifier over the same log, and core's parser over every familiar in it.
    let pubkey: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("pubkey.json")).unwrap()).unwrap();
    let vkey = pubkey["vkey"].as_str().unwrap();
    let log = dir.path().join("site").join("log");
    let audit = conduct_verify::verify_log_at(log.to_str().unwrap(), vkey).expect("verify-log");
    assert_eq!((audit.pledges, audit.familiars), (1, 3), "{audit}");
    let list: Value = serde_json::from_slice(
        &std::fs::read(dir.path().join("site").join("familiars.json")).unwrap(),
    )
    .unwrap();
    let pinned = conduct_verify::pinned_key(vkey).unwrap();
    for f in list["familiars"].as_array().unwrap() {
        let id = f["familiar_id"].as_str().unwrap();
        let page: Value = serde_json::from_slice(
            &std::fs::read(dir.path().join("site").join(format!("familiar/{id}.json"))).unwrap(),
        )
        .unwrap();
        let rec = &page["familiar"];
        assert_eq!(rec["type"], FAMILIAR_TYPE);
        conduct_verify::verify_signed(rec.to_string().as_bytes(), &pinned)
            .expect("the record verifies with conduct-verify");
        let (_, parsed) = Familiar::parse(rec).unwrap().unwrap();
        parsed
            .check_wallet()
            .expect("the owner's EIP-191 signature recovers");
        assert!(rec["wallet"].is_null());
        assert_eq!(rec["faucet_cap"], "0");
    }
    assert_ne!(PLEDGE_TYPE, FAMILIAR_TYPE);
}
