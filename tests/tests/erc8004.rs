//! `POST /erc8004/validation` end to end (issue 15 part 2, library/ERC8004.md): one anvil, one
//! `conduct serve` with an x402 facilitator rail, the stock PyPI x402 client paying a credential
//! for every subject form, the credential checked offline by independent code (PyPI
//! cryptography, rfc8785 and eth-utils, and `conduct verify`), a malformed subject of each form
//! and raw-number requests refused with nothing charged, and the tested ERC-8004 example:
//! `validationRequest` with `credential_hash` as `requestHash` and the validator's
//! `validationResponse` on our own ValidationRegistry, read back with `getValidationStatus`.
//! Orchestrated by `tests/py/erc8004_e2e.py`; needs `ANVIL_BIN` (tests/tools.sh) and
//! `CONDUCT_TEST_PYTHON` (tests/run.sh).

use std::path::Path;
use std::process::Command;

use conduct_core::erc8004::{credential_hash, hash_hex, CREDENTIAL_TYPE};
use conduct_tests::{conduct_bin, py_dir, python};
use serde_json::Value;

#[test]
fn validation_credentials_are_paid_verified_refused_and_used_on_an_erc8004_registry() {
    let anvil = std::env::var("ANVIL_BIN")
        .expect("ANVIL_BIN is not set: run the project's test command (tests/run.sh)");
    let dir = tempfile::tempdir().unwrap();
    let contracts = Path::new(env!("CARGO_MANIFEST_DIR")).join("../contracts");
    let out = Command::new(python())
        .arg(py_dir().join("erc8004_e2e.py"))
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
        "erc8004 end-to-end checks failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains(" 0 failed"), "{stdout}");
    let forms = ["erc8004-agentId", "wallet", "caip10", "vow", "npub", "did"];
    let mut must: Vec<String> = vec![
        "unpaid: 402, empty body, the price in PAYMENT-REQUIRED".into(),
        "conduct verify: the credential verifies, a changed subject does not".into(),
        "the same request within 24 h: identical bytes, Idempotent-Replayed, not charged".into(),
        "that payment was never claimed: it still buys one credential".into(),
        "refused: raw numbers: full: true: 422 predicate-only naming /full, nothing charged".into(),
        "refused: raw numbers: no predicate: 422 predicate-only naming /predicate, nothing charged"
            .into(),
        "validationRequest(validator, agentId, requestURI, credential_hash) from the owner: mined, event".into(),
        "the validator fetches requestURI: the credential verifies and hashes to requestHash".into(),
        "getValidationStatus(credential_hash) reads back what was sent".into(),
    ];
    for f in forms {
        must.push(format!("{f}: paid 200, settled, the price moved once"));
        must.push(format!(
            "{f}: the credential verifies offline with the pinned key"
        ));
        must.push(format!(
            "{f}: credential_hash == keccak256(rfc8785.dumps(credential)) (rfc8785 + eth-utils)"
        ));
        must.push(format!("{f}: the subject in its normal form"));
        must.push(format!(
            "malformed {f} subject: 422 invalid-subject naming /subject/id, nothing charged"
        ));
    }
    for m in &must {
        assert!(
            stdout.contains(&format!("ok:   {m}")),
            "missing check: {m}\n{stdout}"
        );
    }

    // The Rust verifier on the same answer: conduct-verify with the pinned vkey, and core's
    // hash of the parsed credential.
    let read = |name: &str| -> Value {
        serde_json::from_slice(&std::fs::read(dir.path().join(name)).unwrap()).unwrap()
    };
    let (answer, pubkey) = (read("answer.json"), read("pubkey.json"));
    let credential = &answer["credential"];
    assert_eq!(credential["type"], CREDENTIAL_TYPE);
    let pinned = conduct_verify::pinned_key(pubkey["vkey"].as_str().unwrap()).unwrap();
    conduct_verify::verify_signed(credential.to_string().as_bytes(), &pinned)
        .expect("the credential verifies with conduct-verify");
    assert_eq!(
        answer["credential_hash"],
        hash_hex(&credential_hash(credential).unwrap())
    );
}
