//! The x402 extensions end to end (library/PAYMENTS.md: "Payment identifiers", "Settlement
//! pending", "Discovery"): one anvil chain and one `conduct serve` with both rails, a stand-in
//! facilitator speaking the facilitator wire protocol (it answers `settlement_pending` while
//! anvil's mining is paused; the Permit2 rail, settled in-process, answers the same while its
//! receipt is not seen), and the stock PyPI `x402` and npm `@x402/fetch` clients,
//! orchestrated by `tests/py/x402_extensions_e2e.py`. Needs `ANVIL_BIN`, exported by
//! `tests/tools.sh`.

use conduct_tests::{assert_checks_passed, run_chain_script};

#[test]
fn payment_identifier_settlement_pending_and_bazaar_with_the_stock_clients() {
    let stdout = run_chain_script("x402_extensions_e2e.py", "x402 extensions checks");
    assert!(stdout.contains(" 0 failed"), "{stdout}");
    let checks = [
        // payment-identifier
        "the 402 declares payment-identifier (optional, with its schema)",
        "PyPI x402 client pays /profile with a payment identifier: 200, settled, charged once",
        "the stock client's payload carries the identifier",
        "the same identifier and payload again: the same bytes and receipt, Idempotent-Replayed, not charged",
        "after a restart the same identifier and payload replay the same bytes (the store, not memory)",
        "a new payload under the same identifier: 409 payment-identifier-reused naming the field, not charged",
        "the same payload and identifier with another trace: 409 payment-identifier-reused, not charged",
        "a malformed identifier: 400 bad-payment-identifier naming the field, not charged",
        "npm @x402/fetch client pays with a payment identifier; its header resent: the same answer, not charged",
        "10 concurrent calls with one payment and identifier: all 200 with the same bytes, one transfer",
        "a new payment under a served Idempotency-Key replays uncharged, and its identifier keeps that answer",
        // settlement pending
        "settlement pending: 202, Retry-After, the pending receipt with its transaction, the identifier, not charged yet",
        "the same payment while still pending: 202 again, the same transaction, not broadcast again",
        "a paid report-in (settled before its handler) pending: 202, nothing appended",
        "npm @x402/fetch client with mining paused: 202 settlement_pending, never a fresh 402",
        "concurrent retries of a pending payment share its one settlement: the same answer, broadcast once",
        "once mined, the same payment: 200 with the settled receipt of that transaction, charged once, broadcast once",
        "that payment again: the kept answer replayed byte for byte",
        "once mined, the same report-in payment appends one entry (201), and again replays it",
        "pending without an identifier: the same payment resumes once mined (200), then is spent (402)",
        "the npm client's pending payment, its header sent again once mined: 200 settled",
        "Permit2 rail, receipt not seen in time: 202 settlement_pending with its transaction, sent once, not charged yet",
        "Permit2 rail: the same payment while still pending: 202, the same transaction, nothing sent again",
        "Permit2 rail once mined: the same payment served (200, the settled receipt of that transaction), one transfer on chain, charged once, never sent again",
        "Permit2 rail: one transfer on chain, the payer charged once, the settler sent once, the answer replayed",
        "every pending payment above was charged exactly once and broadcast once",
        // bazaar
        "the 402's bazaar extension passes the stock x402 bazaar validation (info against schema, spec rules)",
        "the bazaar body and output schemas are the ones /openapi.json publishes",
        "/openapi.json documents the pending 202 of paid routes",
        "/.well-known/x402.json carries each paid route's bazaar extension, the same as its 402",
    ];
    assert_checks_passed(&stdout, &checks);
}
