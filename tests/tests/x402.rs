//! x402 payments on a real local chain: anvil, TestUSD, Permit2 and the x402 Permit2 proxy, the
//! reference x402 facilitator (PyPI), `conduct serve` with both rails (EIP-3009 through the
//! facilitator, Permit2 in-process), and the stock PyPI and npm x402 clients, orchestrated by
//! `tests/py/x402_e2e.py`. Needs `ANVIL_BIN`, exported by `tests/tools.sh`, which the project's
//! test command runs first.

use conduct_tests::{assert_checks_passed, run_chain_script};

#[test]
fn pays_profile_over_x402_with_the_facilitator_rail() {
    let stdout = run_chain_script("x402_e2e.py", "x402 end-to-end checks");
    assert!(stdout.contains("0 failed"), "{stdout}");
    let checks = [
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
    ];
    assert_checks_passed(&stdout, &checks);
}
