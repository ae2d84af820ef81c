//! The quest board's payment check (issue 14) against a real chain: anvil, TestUSD minted and
//! transferred from anvil's unlocked accounts, and `conduct_indexer::chain::payment` reading
//! the receipts back: `true` for the exact transfer, `false` for a wrong amount, recipient or
//! token, a reverted transaction or an unknown hash, `null` when the RPC does not answer.

use std::time::Duration;

use alloy::primitives::{Address, B256, U256};
use alloy::sol_types::SolCall;
use conduct_indexer::chain::payment::{check_payment, PaymentQuery};
use conduct_indexer::chain::rpc::Rpc;
use conduct_tests::{Anvil, ANVIL_ACCOUNT_0};

alloy::sol! {
    function mint(address to, uint256 amount) external returns (bool);
    function transfer(address to, uint256 value) external returns (bool);
}

/// anvil's second development account (a public test value).
const WORKER: &str = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8";

fn deploy_test_usd(anvil: &Anvil) -> String {
    anvil
        .deploy(include_str!("../../contracts/out/TestUSD.json"), &[])
        .0
}

fn tx_hash(receipt: &serde_json::Value) -> B256 {
    receipt["transactionHash"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn payments_are_re_read_from_the_chain() {
    let anvil = Anvil::start();
    let token = deploy_test_usd(&anvil);
    let (token_a, worker): (Address, Address) = (token.parse().unwrap(), WORKER.parse().unwrap());
    let operator: Address = ANVIL_ACCOUNT_0.parse().unwrap();
    anvil.send(
        ANVIL_ACCOUNT_0,
        Some(&token),
        &mintCall {
            to: operator,
            amount: U256::from(10_000_000u64),
        }
        .abi_encode(),
    );
    let paid = anvil.send(
        ANVIL_ACCOUNT_0,
        Some(&token),
        &transferCall {
            to: worker,
            value: U256::from(1_500_000u64),
        }
        .abi_encode(),
    );
    // A transfer of more than the operator holds reverts (status 0x0).
    let hash = anvil.rpc(
        "eth_sendTransaction",
        serde_json::json!([{
            "from": ANVIL_ACCOUNT_0, "to": token, "gas": "0x100000",
            "data": format!("0x{}", hex::encode(transferCall { to: worker, value: U256::from(10u64).pow(U256::from(30u64)) }.abi_encode())),
        }]),
    );
    let reverted = loop {
        let r = anvil.rpc("eth_getTransactionReceipt", serde_json::json!([hash]));
        if !r.is_null() {
            break r;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    assert_eq!(reverted["status"], "0x0");

    let rt = tokio::runtime::Runtime::new().unwrap();
    let rpc = Rpc::new(std::slice::from_ref(&anvil.url), Duration::from_secs(5)).unwrap();
    let q = PaymentQuery {
        tx: tx_hash(&paid),
        token: token_a,
        to: worker,
        amount: U256::from(1_500_000u64),
    };
    let check = |q: PaymentQuery| rt.block_on(check_payment(&rpc, &q));
    assert_eq!(check(q), Some(true), "the exact transfer");
    assert_eq!(
        check(PaymentQuery {
            amount: U256::from(1_000_000u64),
            ..q
        }),
        Some(false),
        "a wrong amount"
    );
    assert_eq!(
        check(PaymentQuery { to: operator, ..q }),
        Some(false),
        "another recipient"
    );
    assert_eq!(
        check(PaymentQuery { token: worker, ..q }),
        Some(false),
        "another token"
    );
    assert_eq!(
        check(PaymentQuery {
            tx: tx_hash(&reverted),
            ..q
        }),
        Some(false),
        "a reverted transaction"
    );
    assert_eq!(
        check(PaymentQuery {
            tx: B256::repeat_byte(0x42),
            ..q
        }),
        Some(false),
        "no such transaction"
    );
    // From the record's strings, as the board will call it.
    let from_record = PaymentQuery::parse(
        paid["transactionHash"].as_str().unwrap(),
        &token,
        WORKER,
        "1500000",
    )
    .unwrap();
    assert_eq!(check(from_record), Some(true));

    // The RPC down: no answer is `None`, never `false`.
    let url = anvil.url.clone();
    drop(anvil);
    let down = Rpc::new(&[url], Duration::from_secs(2)).unwrap();
    assert_eq!(rt.block_on(check_payment(&down, &q)), None);
}
