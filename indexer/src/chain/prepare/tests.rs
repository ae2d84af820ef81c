//! The catalogue, the argument checks and the calldata, without a chain.

use alloy::primitives::keccak256;

use super::*;

fn given(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

const FROM: &str = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8";
const HASH: &str = "0x1111111111111111111111111111111111111111111111111111111111111111";

fn selector(signature: &str) -> String {
    alloy::hex::encode_prefixed(&keccak256(signature.as_bytes())[..4])
}

/// The canonical signature (types only) of a catalogue entry's `function`.
fn canonical(function: &str) -> String {
    let (name, rest) = function.split_once('(').unwrap();
    let inner = rest.trim_end_matches(')');
    let types: Vec<&str> = inner
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|p| p.split_whitespace().next().unwrap())
        .collect();
    format!("{name}({})", types.join(","))
}

fn run(action: &str, pairs: &[(&str, &str)]) -> Prepared {
    let a = super::action(action).unwrap();
    let args = parse_args(a, &given(pairs)).unwrap();
    let env = Env {
        chain: None,
        quest_token: None,
        rpc: None,
    };
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(prepare(&env, a, &args))
        .unwrap()
}

#[test]
fn names_are_unique_and_every_action_starts_with_from() {
    let mut names: Vec<&str> = ACTIONS.iter().map(|a| a.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), ACTIONS.len());
    for a in ACTIONS {
        assert_eq!(a.params[0].name, "from", "{}", a.name);
        assert!(a.params.iter().all(|p| !args::is_secret_name(p.name)));
    }
}

#[test]
fn secrets_unknown_names_repeats_and_bad_values_are_each_named() {
    let a = action("register_tool").unwrap();
    let errs = parse_args(
        a,
        &given(&[
            ("from", "0x12"),
            ("private_key", "0xabc"),
            ("Mnemonic", "a b c"),
            ("seed", "x"),
            ("colour", "red"),
            ("manifest_hash", "0x00"),
            ("manifest_hash", HASH),
        ]),
    )
    .unwrap_err();
    let names: Vec<(&str, bool)> = errs.iter().map(|e| (e.name.as_str(), e.secret)).collect();
    assert_eq!(
        names,
        vec![
            ("from", false),
            ("private_key", true),
            ("Mnemonic", true),
            ("seed", true),
            ("colour", false),
            ("manifest_hash", false),
            ("manifest_hash", false),
            ("metadata_uri", false),
        ]
    );
    assert!(
        errs[4].detail.contains("metadata_uri"),
        "{}",
        errs[4].detail
    );
}

#[test]
fn kinds_are_checked() {
    let u = Kind::Uint {
        nonzero: false,
        max: Some(100),
        abi: "uint8",
    };
    assert!(args::check(u, "100").is_ok());
    for bad in ["101", "-1", "01", "", "1e3", " 1", "0x10"] {
        assert!(args::check(u, bad).is_err(), "{bad:?}");
    }
    let big = Kind::Uint {
        nonzero: true,
        max: None,
        abi: "uint256",
    };
    let max = "115792089237316195423570985008687907853269984665640564039457584007913129639935";
    assert!(args::check(big, max).is_ok());
    assert!(args::check(big, &format!("{max}0")).is_err());
    assert!(args::check(big, "0").is_err());
    let addr = Kind::Address { nonzero: true };
    assert!(args::check(addr, "0x0000000000000000000000000000000000000000").is_err());
    assert!(args::check(addr, &FROM.to_ascii_uppercase().replace("0X", "0x")).is_ok());
    assert!(args::check(addr, "70997970c51812dc3a010c7d01b50e0d17dc79c8").is_err());
    let text = Kind::Text { min: 1, max: 4 };
    assert!(args::check(text, "abcd").is_ok());
    assert!(args::check(text, "abcde").is_err());
    assert!(args::check(text, "").is_err());
    assert!(args::check(text, "a\u{7}").is_err());
    let h = Kind::Bytes32 { nonzero: true };
    assert!(args::check(h, HASH).is_ok());
    assert!(args::check(h, &format!("0x{}", "0".repeat(64))).is_err());
    assert!(args::check(h, &HASH[2..]).is_err());
}

#[test]
fn without_a_chain_every_address_is_unset_and_the_calldata_is_exact() {
    let p = run(
        "register_tool",
        &[
            ("from", FROM),
            (
                "metadata_uri",
                "https://example.org/.well-known/ai-tool/x.json",
            ),
            ("manifest_hash", HASH),
        ],
    );
    assert_eq!(p.txs.len(), 1);
    let tx = &p.txs[0];
    assert_eq!(tx.to, None);
    assert_eq!(tx.chain_id, None);
    let data = tx.data.clone().unwrap();
    assert!(data.starts_with(&selector("registerTool(string,bytes32,address)")));
    let want = super::super::registry::register_tool_calldata(
        "https://example.org/.well-known/ai-tool/x.json",
        [0x11; 32],
        alloy::primitives::Address::ZERO,
    );
    assert_eq!(data, alloy::hex::encode_prefixed(want));
    assert_eq!(p.preconditions[0].what, "chain");
    assert_eq!(p.preconditions[0].status, Status::Unset);
    assert!(p
        .preconditions
        .iter()
        .any(|c| c.what.ends_with("address") && c.status == Status::Unset));
    assert!(p
        .preconditions
        .iter()
        .any(|c| c.what == "gas balance of from" && c.status == Status::Assumed));
    assert_eq!(p.read_at.reachable, None);
}

#[test]
fn every_actions_last_transaction_calls_its_function() {
    let cases: &[(&str, &[(&str, &str)])] = &[
        (
            "register_tool",
            &[("metadata_uri", "u"), ("manifest_hash", HASH)],
        ),
        (
            "update_tool_metadata",
            &[
                ("tool_id", "1"),
                ("metadata_uri", "u"),
                ("manifest_hash", HASH),
            ],
        ),
        (
            "set_access_predicate",
            &[("tool_id", "1"), ("access_predicate", FROM)],
        ),
        ("deregister_tool", &[("tool_id", "1")]),
        (
            "buy_ticket",
            &[("game", "1"), ("price", "5"), ("token", FROM)],
        ),
        ("transfer_ticket", &[("game", "1"), ("to", FROM)]),
        (
            "validation_request",
            &[
                ("validator", FROM),
                ("agent_id", "7"),
                ("request_uri", "u"),
                ("request_hash", HASH),
            ],
        ),
        (
            "validation_response",
            &[("request_hash", HASH), ("response", "100")],
        ),
        ("quest_payment", &[("to", FROM), ("amount", "3")]),
    ];
    assert_eq!(cases.len(), ACTIONS.len());
    for (name, rest) in cases {
        let mut pairs = vec![("from", FROM)];
        pairs.extend_from_slice(rest);
        let p = run(name, &pairs);
        let a = action(name).unwrap();
        let last = p.txs.last().unwrap();
        assert_eq!(last.function, a.function);
        let data = last.data.clone().unwrap();
        assert!(
            data.starts_with(&selector(&canonical(a.function))),
            "{name}: {data} does not call {}",
            canonical(a.function)
        );
        assert_eq!(p.txs.len(), if a.pulls_erc20 { 2 } else { 1 }, "{name}");
        for (i, t) in p.txs.iter().enumerate() {
            assert_eq!(t.step, i + 1);
            assert_eq!(t.value, "0");
            assert_eq!(t.from, FROM);
        }
    }
}

#[test]
fn a_ticket_without_its_contract_still_answers_with_the_buy_exact() {
    let p = run(
        "buy_ticket",
        &[
            ("from", FROM),
            ("game", "2"),
            ("amount", "3"),
            ("price", "5"),
        ],
    );
    let (approve, buy) = (&p.txs[0], &p.txs[1]);
    assert_eq!(approve.function, "approve(address spender, uint256 amount)");
    assert_eq!(approve.data, None, "the spender is the unset contract");
    let skip = approve.skip_if.as_ref().unwrap();
    assert_eq!(skip.amount.as_deref(), Some("15"));
    assert_eq!(skip.holds, None);
    assert_eq!(buy.to, None);
    let mut want = selector("buy(uint256,uint256)");
    want.push_str(&format!("{:064x}{:064x}", 2, 3));
    assert_eq!(buy.data.as_deref(), Some(want.as_str()));
}

#[test]
fn a_ticket_without_a_chain_or_a_price_says_the_amount_is_unknown() {
    let p = run(
        "buy_ticket",
        &[
            ("from", FROM),
            ("game", "2"),
            ("amount", "3"),
            ("token", FROM),
        ],
    );
    let v = serde_json::to_value(&p).unwrap();
    let skip = &v["txs"][0]["skip_if"];
    assert_eq!(skip["amount"], serde_json::Value::Null, "{skip:#}");
    assert_eq!(skip["holds"], serde_json::Value::Null, "{skip:#}");
    let price = v["preconditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["what"] == "price per copy")
        .unwrap();
    assert_eq!(price["status"], "unset", "{price:#}");
    assert_eq!(price["value"], serde_json::Value::Null, "{price:#}");
    let words = price["detail"].as_str().unwrap();
    assert!(
        words.contains("no price was stated") && words.contains("?price"),
        "{words}"
    );
    assert!(!words.contains("as is"), "{words}");
    // Nothing unknown is written as a placeholder: each text says what is unknown.
    let text = v.to_string();
    assert!(
        !text.contains(" ? ") && !text.contains(" ?\"") && !text.contains("the ? "),
        "{v:#}"
    );
    for t in v["txs"].as_array().unwrap() {
        let d = t["description"].as_str().unwrap();
        assert!(d.contains("price per copy is unknown"), "{d}");
    }
}
