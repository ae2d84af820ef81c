//! x402 payments on a real local chain: anvil, TestUSD, Permit2 and the x402 Permit2 proxy, the
//! reference x402 facilitator (PyPI), `conduct serve` with both rails (EIP-3009 through the
//! facilitator, Permit2 in-process), and the stock PyPI and npm x402 clients, orchestrated by
//! `tests/py/x402_e2e.py`. Needs `ANVIL_BIN`, exported by `tests/tools.sh`, which the project's
//! test command runs first.

use std::path::Path;
use std::process::Command;

use conduct_tests::{conduct_bin, py_dir, python};

#[test]
fn pays_profile_over_x402_with_the_facilitator_rail() {
    let anvil = std::env::var("ANVIL_BIN")
        .expect("ANVIL_BIN is not set: run the project's test command (tests/run.sh)");
    let dir = tempfile::tempdir().unwrap();
    let artifact = Path::new(env!("CARGO_MANIFEST_DIR")).join("../contracts/out/TestUSD.json");
    let out = Command::new(python())
        .arg(py_dir().join("x402_e2e.py"))
        .args(["--anvil", &anvil])
        .arg("--conduct")
        .arg(conduct_bin())
        .arg("--artifact")
        .arg(&artifact)
        .arg("--workdir")
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    assert!(
        out.status.success(),
        "x402 end-to-end checks failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("0 failed"), "{stdout}");
    for must in [
        "PyPI x402 client pays /profile: 200",
        "npm @x402/fetch client pays /profile: 200 with a settled receipt",
        "settlement failing after the handler ran",
        "PyPI x402 client pays /profile on the Permit2 rail: 200, settled",
        "npm @x402/fetch client pays /profile on the Permit2 rail: 200, settled",
        "Permit2: 20 concurrent replays, exactly one 200 and one transfer",
        "/health reports both rails up",
        "50 concurrent replays: exactly one 200",
        "refused: expired authorization",
        "refused: nonce already used on chain",
        "the price never changes",
        "PyPI x402 client pays /vow/report: 201, attested entry seq 1, settled, price moved",
        "the same paid report-in again: the same entry, nothing charged, no second entry",
        "an unpaid report-in gets the 402 challenge and appends nothing",
    ] {
        assert!(
            stdout.contains(&format!("ok:   {must}")),
            "missing check: {must}\n{stdout}"
        );
    }
}
