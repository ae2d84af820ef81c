//! The soulbound reputation record (issue 15 part 1, library/REPUTATION.md) end to end: a real
//! anvil running our Reputation, two TestMarkets and TestUSD, the real `conduct` binary
//! following it through a TCP relay the test can cut (confirmations 1, polled every 50 ms), and
//! three short extra servers for the honest states. One chain and one main server for every
//! case:
//!
//! - the honest states: an address with no code (`not-deployed`), no `[chain.reputation]` and
//!   no `[chain]` at all (`not-configured`): contract, threshold and score `null`, never zero;
//! - a credit by an authorized market (`TestMarket.settle`) moves the score: the lookup's
//!   `score`, `meets` and `verified: true` (mirror == live `eth_call`), and the holders row;
//! - nothing else moves it, and each attempt is a mined, reverted transaction (or a transfer
//!   that is not a call): a direct `credit` from an EOA and from governance, a second TestMarket
//!   that governance never authorized, a `settle` by someone not the market's owner, ETH sent to
//!   the contract, TestUSD transferred to the contract and to the wallet;
//! - `meets` flips exactly at the threshold governance sets (score below, equal, above);
//! - a slash by the authorized arbiter lowers the score and floors at 0 (a slash by anyone else
//!   reverts);
//! - a credit on a branch that a reorganisation deeper than the confirmation depth replaces
//!   disappears from the mirror, and the score returns;
//! - the holders board: `?q=`, `?sort=score`, `?limit=` (`truncated`), 400s naming `?q`,
//!   `?limit`, `?sort`, HTML by `Accept`;
//! - the chain cut: the lookup's `verified` is `null` (not false) with the mirror's score,
//!   `/reputation` says `unreachable` with `mirror.reachable: false`; restored, `verified: true`;
//! - no reputation document carries a meter number or key;
//! - every link of the two pages resolves, their signed twins (`/reputation.json`,
//!   `/reputation/holders.json`, files of the signed tree) included, and the twins verify.

use std::time::{Duration, Instant};

use alloy::primitives::{keccak256, Address, B256, U256};
use alloy::sol_types::{SolCall, SolError};
use conduct_tests::{client, Anvil, Relay, Server, ANVIL_ACCOUNT_0};
use serde_json::{json, Value};

alloy::sol! {
    function credit(address who, uint256 amount, bytes32 outcome);
    function slash(address who, uint256 amount, bytes32 ruling);
    function setMarket(address market, bool authorized);
    function setArbiter(address arbiter, bool authorized);
    function setThreshold(uint256 threshold_);
    function scoreOf(address who) external view returns (uint256);
    function settle(address winner, uint256 amount, bytes32 outcome);
    function mint(address to, uint256 amount) external returns (bool);
    function transfer(address to, uint256 value) external returns (bool);
    error NotMarket(address caller);
    error NotArbiter(address caller);
    error NotOwner(address caller);
}

/// anvil's development accounts (public test values): governance (and deployer), a stranger,
/// and the arbiter governance authorizes.
const GOV: &str = ANVIL_ACCOUNT_0;
const STRANGER: &str = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8";
const ARBITER: &str = "0x90f79bf6eb2c4f870365e785982e1f101e93b906";

/// The wallets scored (plain addresses: a score needs no key).
const A: &str = "0x1000000000000000000000000000000000000aaa";
const B: &str = "0x2000000000000000000000000000000000000bbb";
const C: &str = "0x3000000000000000000000000000000000000ccc";
/// Never credited.
const D: &str = "0x4000000000000000000000000000000000000ddd";

/// How long any one awaited state may take.
const DEADLINE: Duration = Duration::from_secs(20);

fn addr(s: &str) -> Address {
    s.parse().unwrap()
}

fn outcome(text: &str) -> B256 {
    keccak256(text.as_bytes())
}

/// One ABI word holding an address (a constructor argument).
fn word(a: &str) -> Vec<u8> {
    let mut w = vec![0u8; 12];
    w.extend_from_slice(addr(a).as_slice());
    w
}

fn block_of(receipt: &Value) -> u64 {
    let b = receipt["blockNumber"].as_str().expect("blockNumber");
    u64::from_str_radix(b.trim_start_matches("0x"), 16).unwrap()
}

/// A JSON-RPC call whose whole answer (result or error) is returned.
fn rpc_raw(anvil: &Anvil, method: &str, params: Value) -> Value {
    client()
        .post(&anvil.url)
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        .send()
        .unwrap()
        .json()
        .unwrap()
}

/// A transaction that must revert: `eth_call` answers an error whose revert data is exactly
/// `error` (an ABI-encoded custom error; `None`: a revert without data), and the same
/// transaction, sent and mined, has status 0x0 and no logs. Its block number.
fn reverts(
    anvil: &Anvil,
    from: &str,
    to: &str,
    data: &[u8],
    wei: u128,
    error: Option<Vec<u8>>,
) -> u64 {
    let tx = json!({
        "from": from, "to": to, "data": format!("0x{}", hex::encode(data)),
        "value": format!("0x{wei:x}"), "gas": "0x1000000",
    });
    let call = rpc_raw(anvil, "eth_call", json!([tx, "latest"]));
    let err = call
        .get("error")
        .unwrap_or_else(|| panic!("eth_call did not revert: {call}"));
    let got = err["data"].as_str().unwrap_or("0x");
    let want = format!("0x{}", hex::encode(error.unwrap_or_default()));
    assert_eq!(got, want, "reverted with another error: {err}");
    let hash = anvil.rpc("eth_sendTransaction", json!([tx]));
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = anvil.rpc("eth_getTransactionReceipt", json!([hash]));
        if !r.is_null() {
            assert_eq!(r["status"], "0x0", "a refused transaction succeeded: {r}");
            assert_eq!(r["logs"], json!([]), "{r}");
            return block_of(&r);
        }
        assert!(Instant::now() < deadline, "no receipt for {hash}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn get(s: &Server, path: &str) -> reqwest::blocking::Response {
    client()
        .get(s.at(path))
        .header("accept", "application/json")
        .send()
        .unwrap()
}

fn get_json(s: &Server, path: &str) -> Value {
    let r = get(s, path);
    assert_eq!(r.status(), 200, "GET {path}");
    r.json().unwrap()
}

fn get_html(s: &Server, path: &str) -> String {
    let r = client()
        .get(s.at(path))
        .header("accept", "text/html")
        .send()
        .unwrap();
    assert_eq!(r.status(), 200, "GET {path} as HTML");
    let ct = r.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(ct.starts_with("text/html"), "GET {path}: {ct}");
    r.text().unwrap()
}

/// Poll `path` (JSON) until `done` holds; the last document.
fn await_json(s: &Server, path: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let doc = get_json(s, path);
        if done(&doc) {
            return doc;
        }
        assert!(Instant::now() < deadline, "{what}: GET {path}: {doc:#}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The lookup of `wallet` once the mirror has read block `block`, the live read agreed, and
/// `done` holds.
fn await_score(
    s: &Server,
    wallet: &str,
    block: u64,
    what: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    await_json(s, &format!("/reputation/{wallet}"), what, |d| {
        d["mirror"]["indexed_to_block"]
            .as_u64()
            .is_some_and(|b| b >= block)
            && d["verified"] == true
            && done(d)
    })
}

/// The row of `wallet` on a holders document.
fn row<'a>(doc: &'a Value, wallet: &str) -> Option<&'a Value> {
    doc["holders"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["wallet"] == wallet)
}

/// No key of a meter reading anywhere in `doc` (the scope statement aside, which every
/// `conduct.*` document carries), and no fractional number: a reputation document holds
/// counts, blocks and decimal strings, never a reading.
fn assert_no_meter(doc: &Value, path: &str) {
    fn walk(v: &Value, at: &str, path: &str) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    if k == "scope" && at.is_empty() {
                        continue;
                    }
                    let l = k.to_ascii_lowercase();
                    assert!(
                        !(l.starts_with("i_c")
                            || l.contains("coupling")
                            || l.contains("profile")
                            || l.contains("meter")
                            || l.contains("bits")
                            || l == "ami"
                            || l == "emi"
                            || l == "p_value"),
                        "{path}: a meter key {at}/{k}"
                    );
                    walk(x, &format!("{at}/{k}"), path);
                }
            }
            Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    walk(x, &format!("{at}/{i}"), path);
                }
            }
            Value::Number(n) => assert!(
                n.is_u64() || n.is_i64(),
                "{path}: a fractional number at {at}: {n}"
            ),
            _ => {}
        }
    }
    walk(doc, "", path);
}

/// The page's own content (`<main>`, without the footer's scope line) names no meter reading.
fn assert_no_meter_html(html: &str, path: &str) {
    let main = html
        .split_once("<main")
        .and_then(|(_, rest)| rest.split_once("</main>"))
        .map(|(m, _)| m.to_ascii_lowercase())
        .unwrap_or_else(|| panic!("{path}: no <main>"));
    for bad in ["i_c_d", "i_c_m", "i(c;", "coupling", "profile", "bits"] {
        assert!(!main.contains(bad), "{path}: {bad:?} in the page: {main}");
    }
}

/// Every member the format names is present (`null` where unknown, never missing).
fn assert_members(doc: &Value, keys: &[&str], path: &str) {
    for k in keys {
        assert!(doc.get(*k).is_some(), "{path}: no {k}: {doc:#}");
    }
}

const STATUS_KEYS: &[&str] = &[
    "type",
    "what",
    "soulbound",
    "contract",
    "deployed",
    "verified",
    "verified_means",
    "explorer",
    "chain",
    "threshold",
    "recent_events",
    "mirror",
    "lookup",
    "search",
    "status",
    "note",
    "scope",
    "signature",
];
const MIRROR_KEYS: &[&str] = &[
    "events",
    "holders",
    "indexed_to_block",
    "reachable",
    "cached_seconds_ago",
];
const HOLDERS_KEYS: &[&str] = &[
    "type",
    "status",
    "holders",
    "matched",
    "truncated",
    "query",
    "threshold",
    "scope",
    "signature",
];
const SCORE_KEYS: &[&str] = &[
    "type",
    "wallet",
    "status",
    "score",
    "threshold",
    "meets",
    "verified",
    "live",
    "scope",
    "signature",
];

/// The body `path` serves verifies under the service's key.
fn assert_signed(s: &Server, path: &str) -> Value {
    let pinned = conduct_verify::pinned_key(&s.vkey()).unwrap();
    let bytes = get(s, path).bytes().unwrap();
    conduct_verify::verify_signed(&bytes, &pinned)
        .unwrap_or_else(|e| panic!("GET {path} does not verify: {e}"))
}

fn config(dir: &std::path::Path, name: &str, text: &str) -> Server {
    let cfg = dir.join(format!("{name}.toml"));
    std::fs::write(&cfg, text).unwrap();
    Server::start_in(
        &dir.join(format!("{name}-data")),
        &dir.join(format!("{name}-site")),
        &["--config", cfg.to_str().unwrap()],
    )
}

fn chain_section(rpc: &str) -> String {
    format!(
        "[chain]\nname = \"anvil\"\nchain_id = 31337\nrpc = [\"{rpc}\"]\n\
         confirmations = 1\npoll_ms = 50\nrpc_timeout_seconds = 2\n"
    )
}

#[test]
fn the_reputation_record_moves_only_by_market_outcomes_and_rulings() {
    let started = Instant::now();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let anvil = Anvil::start();
    let anvil_addr: std::net::SocketAddr = anvil.url.trim_start_matches("http://").parse().unwrap();
    let relay = rt.block_on(Relay::start(anvil_addr));

    // The contracts: the record (governance: account 0), the market governance will authorize,
    // a second market it never will, and TestUSD.
    let (rep, rep_block) = anvil.deploy(
        include_str!("../../contracts/out/Reputation.json"),
        &word(GOV),
    );
    let rep = rep.to_ascii_lowercase();
    let market_artifact = include_str!("../../contracts/out/TestMarket.json");
    let (market, _) = anvil.deploy(market_artifact, &word(&rep));
    let (rogue, _) = anvil.deploy(market_artifact, &word(&rep));
    let (usd, _) = anvil.deploy(include_str!("../../contracts/out/TestUSD.json"), &[]);

    let dir = tempfile::tempdir().unwrap();
    let s = config(
        dir.path(),
        "main",
        &format!(
            "{}[chain.reputation]\naddress = \"{rep}\"\nstart_block = {rep_block}\n",
            chain_section(&format!("http://{}", relay.addr))
        ),
    );

    // ---- The honest states, on short extra servers of the same chain.
    {
        let nowhere = "0x000000000000000000000000000000000000dead";
        let undeployed = config(
            dir.path(),
            "undeployed",
            &format!(
                "{}[chain.reputation]\naddress = \"{nowhere}\"\nstart_block = 0\n",
                chain_section(&anvil.url)
            ),
        );
        let unconfigured = config(dir.path(), "unconfigured", &chain_section(&anvil.url));
        let chainless = Server::start(&[]);

        let doc = await_json(&undeployed, "/reputation", "not-deployed", |d| {
            d["status"] == "not-deployed"
        });
        assert_eq!(doc["type"], "conduct.reputation/v1");
        assert_eq!(doc["contract"], Value::Null, "{doc:#}");
        assert_eq!(doc["deployed"], false, "{doc:#}");
        assert_eq!(doc["verified"], false, "{doc:#}");
        assert_eq!(doc["threshold"], Value::Null, "{doc:#}");
        assert_eq!(doc["recent_events"], json!([]), "{doc:#}");
        assert_eq!(doc["soulbound"], true);
        assert!(doc["note"].as_str().unwrap().contains(nowhere), "{doc:#}");
        assert_no_meter(&doc, "undeployed /reputation");
        assert_members(&doc, STATUS_KEYS, "undeployed /reputation");
        let look = get_json(&undeployed, &format!("/reputation/{A}"));
        assert_eq!(look["status"], "not-deployed", "{look:#}");
        assert_eq!(look["score"], Value::Null, "{look:#}");
        assert_eq!(look["meets"], Value::Null, "{look:#}");
        assert_eq!(look["threshold"], Value::Null, "{look:#}");
        assert_eq!(look["verified"], Value::Null, "{look:#}");

        for (name, srv) in [
            ("[chain] without [chain.reputation]", &unconfigured),
            ("no [chain]", &chainless),
        ] {
            let doc = await_json(srv, "/reputation", name, |d| {
                d["status"] == "not-configured"
            });
            assert_eq!(doc["deployed"], false, "{name}: {doc:#}");
            assert_eq!(doc["contract"], Value::Null, "{name}: {doc:#}");
            assert_eq!(doc["threshold"], Value::Null, "{name}: {doc:#}");
            assert_eq!(doc["recent_events"], json!([]), "{name}: {doc:#}");
            assert_no_meter(&doc, "not-configured /reputation");
            assert_members(&doc, STATUS_KEYS, "not-configured /reputation");
            let look = get_json(srv, &format!("/reputation/{A}"));
            assert_eq!(
                (
                    &look["status"],
                    &look["score"],
                    &look["meets"],
                    &look["live"]
                ),
                (
                    &json!("not-configured"),
                    &Value::Null,
                    &Value::Null,
                    &Value::Null
                ),
                "{name}: {look:#}"
            );
            // Nobody read a mirror: its counts are unknown (null), never zero.
            for (what, m) in [("/reputation", &doc["mirror"]), ("lookup", &look["mirror"])] {
                assert_eq!(
                    (&m["events"], &m["holders"]),
                    (&Value::Null, &Value::Null),
                    "{name} {what}: {m:#}"
                );
            }
            let board = get_json(srv, "/reputation/holders");
            assert_eq!(board["status"], "not-configured", "{name}: {board:#}");
            assert_eq!(board["holders"], json!([]), "{name}: {board:#}");
            assert_eq!(board["matched"], Value::Null, "{name}: {board:#}");
            assert_eq!(board["mirror"]["events"], Value::Null, "{name}: {board:#}");
            assert_eq!(board["mirror"]["holders"], Value::Null, "{name}: {board:#}");
            let filtered = get_json(srv, "/reputation/holders?q=ab");
            assert_eq!(filtered["matched"], Value::Null, "{name}: {filtered:#}");
        }
        assert_eq!(
            get_json(&chainless, "/reputation")["chain"],
            Value::Null,
            "no [chain]: no chain named"
        );
    }
    let extras_done = started.elapsed();

    // ---- Live, before anything: our code, threshold 0 (an open gate: even a wallet never
    // credited meets it), the constructor's governance event mirrored.
    let doc = await_json(&s, "/reputation", "the record live", |d| {
        d["status"] == "live" && d["mirror"]["events"] == 1
    });
    assert_eq!(doc["contract"], json!(rep), "{doc:#}");
    assert_eq!(doc["deployed"], true, "{doc:#}");
    assert_eq!(doc["verified"], true, "{doc:#}");
    assert_eq!(doc["threshold"], "0", "{doc:#}");
    assert_eq!(doc["chain"]["chain_id"], 31337);
    assert_eq!(doc["recent_events"][0]["kind"], "governance", "{doc:#}");
    assert_eq!(doc["recent_events"][0]["to"], json!(GOV), "{doc:#}");
    assert_eq!(doc["mirror"]["reachable"], true);
    assert_members(&doc, STATUS_KEYS, "/reputation");
    assert_members(&doc["mirror"], MIRROR_KEYS, "/reputation mirror");
    assert_members(
        &doc["chain"],
        &["name", "chain_id", "rpc", "explorer_api"],
        "/reputation chain",
    );
    assert_eq!(doc["lookup"], "/reputation/{address}");
    let look = await_score(&s, D, rep_block, "an uncredited wallet", |_| true);
    assert_eq!(
        (&look["score"], &look["meets"], &look["live"]),
        (
            &json!("0"),
            &json!(true),
            &json!({"score": "0", "meets": true})
        ),
        "{look:#}"
    );

    // ---- An unauthorized market cannot credit; once governance authorizes it, it can.
    let settle_a = |amount: u64, why: &str| {
        settleCall {
            winner: addr(A),
            amount: U256::from(amount),
            outcome: outcome(why),
        }
        .abi_encode()
    };
    reverts(
        &anvil,
        GOV,
        &market,
        &settle_a(12, "before authorization"),
        0,
        Some(
            NotMarket {
                caller: addr(&market),
            }
            .abi_encode(),
        ),
    );
    let set_market = setMarketCall {
        market: addr(&market),
        authorized: true,
    }
    .abi_encode();
    anvil.send(GOV, Some(&rep), &set_market);
    let r = anvil.send(GOV, Some(&market), &settle_a(12, "market 1: A won"));
    let credited_at = block_of(&r);
    anvil.mine(1);
    let look = await_score(&s, A, credited_at, "the first credit", |d| {
        d["score"] == "12"
    });
    assert_eq!(look["type"], "conduct.reputation-score/v1");
    assert_eq!(look["wallet"], A);
    assert_eq!(look["status"], "live", "{look:#}");
    assert_eq!(look["meets"], true, "{look:#}");
    assert_eq!(look["threshold"], "0", "{look:#}");
    assert_eq!(
        look["live"],
        json!({"score": "12", "meets": true}),
        "{look:#}"
    );
    assert_no_meter(&look, "/reputation/{address}");
    assert_members(&look, SCORE_KEYS, "/reputation/{address}");
    assert_signed(&s, &format!("/reputation/{A}"));
    // An address is looked up whatever its case.
    let upper = format!("0x{}", A[2..].to_ascii_uppercase());
    assert_eq!(get_json(&s, &format!("/reputation/{upper}"))["wallet"], A);
    // The holders board (the published snapshot) has the row.
    let board = await_json(&s, "/reputation/holders", "the holders row", |d| {
        row(d, A).is_some_and(|r| r["score"] == "12")
    });
    assert_eq!(board["type"], "conduct.reputation-holders/v1");
    assert_members(&board, HOLDERS_KEYS, "/reputation/holders");
    assert_signed(&s, "/reputation/holders");
    assert_signed(&s, "/reputation/holders?q=aaa");
    assert_signed(&s, "/reputation");
    assert_eq!(row(&board, A).unwrap()["meets"], true, "{board:#}");
    assert_eq!(board["holders"].as_array().unwrap().len(), 1, "{board:#}");
    // /reputation shows the credit with its market.
    let doc = await_json(&s, "/reputation", "the credit listed", |d| {
        d["recent_events"][0]["kind"] == "credited"
    });
    let e = &doc["recent_events"][0];
    assert_eq!(
        (&e["who"], &e["market"], &e["amount"], &e["new_score"]),
        (
            &json!(A),
            &json!(market.to_ascii_lowercase()),
            &json!("12"),
            &json!("12")
        ),
        "{doc:#}"
    );
    assert_eq!(
        e["outcome"],
        json!(format!("{}", outcome("market 1: A won")))
    );
    let events_before = doc["mirror"]["events"].as_u64().unwrap();

    // ---- Nothing else moves it. Each attempt is mined and reverted, or is not a call at all.
    let direct = creditCall {
        who: addr(A),
        amount: U256::from(5),
        outcome: outcome("no market"),
    }
    .abi_encode();
    reverts(
        &anvil,
        STRANGER,
        &rep,
        &direct,
        0,
        Some(
            NotMarket {
                caller: addr(STRANGER),
            }
            .abi_encode(),
        ),
    );
    reverts(
        &anvil,
        GOV,
        &rep,
        &direct,
        0,
        Some(NotMarket { caller: addr(GOV) }.abi_encode()),
    );
    // A second market, deployed against the record but never authorized by governance.
    reverts(
        &anvil,
        GOV,
        &rogue,
        &settle_a(5, "rogue market"),
        0,
        Some(
            NotMarket {
                caller: addr(&rogue),
            }
            .abi_encode(),
        ),
    );
    // The authorized market, called by someone who is not its owner.
    reverts(
        &anvil,
        STRANGER,
        &market,
        &settle_a(5, "not the owner"),
        0,
        Some(
            NotOwner {
                caller: addr(STRANGER),
            }
            .abi_encode(),
        ),
    );
    // ETH: nothing is payable and there is no receive or fallback.
    reverts(&anvil, STRANGER, &rep, &[], 1_000_000_000_000_000_000, None);
    reverts(
        &anvil,
        STRANGER,
        &rep,
        &scoreOfCall { who: addr(A) }.abi_encode(),
        1,
        None,
    );
    assert_eq!(
        anvil.rpc("eth_getBalance", json!([rep, "latest"])),
        "0x0",
        "the record holds ETH"
    );
    // TestUSD to the record and to the wallet: token transfers, which the record never sees.
    let mint = mintCall {
        to: addr(GOV),
        amount: U256::from(1_000_000u64),
    }
    .abi_encode();
    anvil.send(GOV, Some(&usd), &mint);
    for to in [rep.as_str(), A] {
        let data = transferCall {
            to: addr(to),
            value: U256::from(250_000u64),
        }
        .abi_encode();
        let r = anvil.send(GOV, Some(&usd), &data);
        assert!(
            r["logs"]
                .as_array()
                .unwrap()
                .iter()
                .all(|l| l["address"].as_str().unwrap().eq_ignore_ascii_case(&usd)),
            "a token transfer logged outside the token: {r}"
        );
    }
    let last = anvil.head();
    anvil.mine(1);
    let look = await_score(&s, A, last, "refusals read past", |_| true);
    assert_eq!(
        look["score"], "12",
        "a refused attempt moved the score: {look:#}"
    );
    assert_eq!(look["live"]["score"], "12", "{look:#}");
    assert_eq!(
        look["mirror"]["events"].as_u64(),
        Some(events_before),
        "a refused attempt reached the mirror: {look:#}"
    );
    let all = get_json(&s, "/reputation/holders?limit=1000");
    assert_eq!(all["matched"], 1, "only A was ever credited: {all:#}");
    assert!(
        row(&all, &rep).is_none(),
        "the record itself is listed: {all:#}"
    );

    // ---- meets flips exactly at the threshold: A (12) below 13, equal to 12, above 11.
    for (threshold, meets) in [(13u64, false), (12, true), (11, true)] {
        let r = anvil.send(
            GOV,
            Some(&rep),
            &setThresholdCall {
                threshold_: U256::from(threshold),
            }
            .abi_encode(),
        );
        anvil.mine(1);
        let t = threshold.to_string();
        let look = await_score(&s, A, block_of(&r), &format!("threshold {t}"), |d| {
            d["threshold"] == t.as_str()
        });
        assert_eq!(look["score"], "12", "{look:#}");
        assert_eq!(look["meets"], meets, "score 12, threshold {t}: {look:#}");
        assert_eq!(look["live"]["meets"], meets, "{look:#}");
        let board = await_json(&s, "/reputation/holders", "the board's threshold", |d| {
            d["threshold"] == t.as_str()
        });
        assert_eq!(row(&board, A).unwrap()["meets"], meets, "{board:#}");
        await_json(&s, "/reputation", "the page's threshold", |d| {
            d["threshold"] == t.as_str()
        });
    }

    // ---- Rulings: only the authorized arbiter slashes; a slash floors at 0.
    let slash_a = |amount: u64| {
        slashCall {
            who: addr(A),
            amount: U256::from(amount),
            ruling: outcome("ruling"),
        }
        .abi_encode()
    };
    reverts(
        &anvil,
        ARBITER,
        &rep,
        &slash_a(5),
        0,
        Some(
            NotArbiter {
                caller: addr(ARBITER),
            }
            .abi_encode(),
        ),
    );
    anvil.send(
        GOV,
        Some(&rep),
        &setArbiterCall {
            arbiter: addr(ARBITER),
            authorized: true,
        }
        .abi_encode(),
    );
    reverts(
        &anvil,
        GOV,
        &rep,
        &slash_a(5),
        0,
        Some(NotArbiter { caller: addr(GOV) }.abi_encode()),
    );
    let r = anvil.send(ARBITER, Some(&rep), &slash_a(5));
    anvil.mine(1);
    let look = await_score(&s, A, block_of(&r), "the slash", |d| d["score"] == "7");
    assert_eq!(look["meets"], false, "7 < 11: {look:#}");
    let r = anvil.send(ARBITER, Some(&rep), &slash_a(100));
    anvil.mine(1);
    let look = await_score(&s, A, block_of(&r), "the slash floors at 0", |d| {
        d["score"] == "0"
    });
    assert_eq!(
        look["live"],
        json!({"score": "0", "meets": false}),
        "{look:#}"
    );
    let doc = await_json(&s, "/reputation", "the slash listed", |d| {
        d["recent_events"][0]["kind"] == "slashed" && d["recent_events"][0]["new_score"] == "0"
    });
    let e = &doc["recent_events"][0];
    assert_eq!(
        (&e["who"], &e["arbiter"], &e["amount"]),
        (&json!(A), &json!(ARBITER), &json!("7")),
        "the event carries what was removed: {doc:#}"
    );
    // A slashed-to-zero wallet stays on the board with its 0.
    let board = await_json(&s, "/reputation/holders", "A at 0", |d| {
        row(d, A).is_some_and(|r| r["score"] == "0")
    });
    assert_eq!(row(&board, A).unwrap()["meets"], false, "{board:#}");

    // ---- Two more holders, for the board and the reorganisation.
    let settle = |who: &str, amount: u64| {
        let data = settleCall {
            winner: addr(who),
            amount: U256::from(amount),
            outcome: outcome(who),
        }
        .abi_encode();
        block_of(&anvil.send(GOV, Some(&market), &data))
    };
    settle(B, 50);
    let at = settle(C, 7);
    anvil.mine(1);
    await_score(&s, C, at, "C credited", |d| d["score"] == "7");
    let look = await_score(&s, B, at, "B credited", |d| d["score"] == "50");
    let events_before_reorg = look["mirror"]["events"].as_u64().unwrap();

    // ---- A reorganisation deeper than the confirmation depth (1): a credit mined on a
    // branch, mirrored, then replaced, disappears, and the score returns.
    anvil.mine(3);
    let branch_credit = {
        let data = settleCall {
            winner: addr(B),
            amount: U256::from(1000u64),
            outcome: outcome("on a branch"),
        }
        .abi_encode();
        anvil.send(GOV, Some(&market), &data)
    };
    let at = block_of(&branch_credit);
    anvil.mine(1);
    await_score(&s, B, at, "the branch's credit mirrored", |d| {
        d["score"] == "1050"
    });
    anvil.rpc("anvil_reorg", json!([3, []]));
    anvil.mine(1);
    let head = anvil.head();
    let look = await_json(
        &s,
        &format!("/reputation/{B}"),
        "the branch replaced",
        |d| {
            d["score"] == "50"
                && d["verified"] == true
                && d["mirror"]["indexed_to_block"]
                    .as_u64()
                    .is_some_and(|b| b + 1 >= head)
        },
    );
    assert_eq!(
        anvil.rpc(
            "eth_getTransactionReceipt",
            json!([branch_credit["transactionHash"]])
        ),
        Value::Null,
        "the branch's credit is still on the chain"
    );
    assert_eq!(look["live"]["score"], "50", "{look:#}");
    assert_eq!(
        look["mirror"]["events"].as_u64(),
        Some(events_before_reorg),
        "{look:#}"
    );
    let board = await_json(&s, "/reputation/holders", "the board rewound", |d| {
        row(d, B).is_some_and(|r| r["score"] == "50")
    });
    let doc = await_json(&s, "/reputation", "the page rewound", |d| {
        d["mirror"]["events"].as_u64() == Some(events_before_reorg)
    });
    assert!(
        doc["recent_events"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["new_score"] != "1050"),
        "{doc:#}"
    );

    // ---- The holders board: A 0, B 50, C 7.
    let wallets = |d: &Value| -> Vec<String> {
        d["holders"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["wallet"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        wallets(&board),
        [A, B, C],
        "by wallet by default: {board:#}"
    );
    assert_eq!(board["matched"], 3);
    assert_eq!(board["truncated"], false);
    let q = get_json(&s, "/reputation/holders?q=BBB");
    assert_eq!(wallets(&q), [B], "{q:#}");
    assert_eq!(q["matched"], 1);
    assert_eq!(q["query"]["q"], "bbb", "{q:#}");
    let q = get_json(&s, "/reputation/holders?q=0x3000");
    assert_eq!(wallets(&q), [C], "{q:#}");
    let q = get_json(&s, "/reputation/holders?q=0x5");
    assert_eq!(q["holders"], json!([]), "{q:#}");
    assert_eq!(q["matched"], 0);
    let q = get_json(&s, "/reputation/holders?sort=score");
    assert_eq!(wallets(&q), [B, C, A], "{q:#}");
    let scores: Vec<&str> = q["holders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["score"].as_str().unwrap())
        .collect();
    assert_eq!(scores, ["50", "7", "0"]);
    let meets: Vec<&Value> = q["holders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| &h["meets"])
        .collect();
    assert_eq!(
        meets,
        [&json!(true), &json!(false), &json!(false)],
        "threshold 11: {q:#}"
    );
    let q = get_json(&s, "/reputation/holders?sort=score&limit=2");
    assert_eq!(wallets(&q), [B, C], "{q:#}");
    assert_eq!(
        (&q["matched"], &q["truncated"]),
        (&json!(3), &json!(true)),
        "{q:#}"
    );
    assert_eq!(q["query"]["limit"], 2);
    let q = get_json(&s, "/reputation/holders?limit=1");
    assert_eq!(wallets(&q), [A], "{q:#}");
    assert_eq!(q["truncated"], true);
    for (query, pointer) in [
        ("q=xyz", "?q"),
        ("q=0x12345678901234567890123456789012345678901", "?q"),
        ("limit=0", "?limit"),
        ("limit=many", "?limit"),
        ("limit=1001", "?limit"),
        ("sort=rank", "?sort"),
    ] {
        let r = get(&s, &format!("/reputation/holders?{query}"));
        assert_eq!(r.status(), 400, "?{query}");
        let p: Value = r.json().unwrap();
        assert_eq!(p["errors"][0]["pointer"], pointer, "?{query}: {p:#}");
    }
    let html = get_html(&s, "/reputation/holders");
    for w in [A, B, C] {
        assert!(html.contains(w), "{w} missing from the HTML board");
    }
    let html = get_html(&s, "/reputation/holders?q=ccc");
    assert!(
        html.contains(C) && !html.contains(B),
        "the filtered HTML board"
    );
    assert_no_meter_html(&html, "/reputation/holders?q=ccc");

    // ---- The page never mixes the meter's reading.
    let doc = get_json(&s, "/reputation");
    assert_no_meter(&doc, "/reputation");
    assert_no_meter(&get_json(&s, "/reputation/holders"), "/reputation/holders");
    let html = get_html(&s, "/reputation");
    assert_no_meter_html(&html, "/reputation");
    assert!(html.contains(&rep), "the contract on the page");
    assert_no_meter_html(&get_html(&s, "/reputation/holders"), "/reputation/holders");

    // ---- The chain stops answering: the mirror's score, unverified (null, never false).
    relay.set(false);
    let look = await_json(&s, &format!("/reputation/{B}"), "verified null", |d| {
        d["verified"].is_null() && d["status"] == "unreachable"
    });
    assert_eq!(look["score"], "50", "the mirror's score is kept: {look:#}");
    assert_eq!(look["live"], Value::Null, "{look:#}");
    assert_eq!(look["mirror"]["reachable"], false, "{look:#}");
    let doc = await_json(&s, "/reputation", "unreachable", |d| {
        d["status"] == "unreachable"
    });
    assert_eq!(doc["mirror"]["reachable"], false, "{doc:#}");
    assert!(doc["mirror"]["cached_seconds_ago"].is_u64(), "{doc:#}");
    assert_eq!(doc["mirror"]["holders"], 3, "{doc:#}");
    assert_ne!(
        doc["deployed"], false,
        "an unanswered read is not a missing contract: {doc:#}"
    );
    assert_eq!(doc["contract"], json!(rep), "{doc:#}");
    // Restored: verified again.
    relay.set(true);
    let look = await_json(&s, &format!("/reputation/{B}"), "verified again", |d| {
        d["verified"] == true && d["status"] == "live"
    });
    assert_eq!(look["score"], "50");
    await_json(&s, "/reputation", "live again", |d| {
        d["status"] == "live" && d["mirror"]["reachable"] == true
    });

    // ---- Every link of the two pages resolves, the signed twins included: they are files of
    // the signed tree (listed in manifest.json, copied by mirrors, fetched by verify-site).
    for page in ["/reputation", "/reputation/holders"] {
        let html = get_html(&s, page);
        let links: Vec<&str> = html
            .split("href=\"")
            .skip(1)
            .filter_map(|rest| rest.split('"').next())
            .filter(|l| l.starts_with('/'))
            .collect();
        assert!(
            links.iter().any(|l| l.ends_with(".json")),
            "{page}: no signed twin linked"
        );
        for link in links {
            let r = client().get(s.at(link)).send().unwrap();
            let status = r.status();
            assert_eq!(status, 200, "{page} links {link}: {}", r.text().unwrap());
        }
    }
    for path in ["/reputation.json", "/reputation/holders.json"] {
        let doc = assert_signed(&s, path);
        assert_no_meter(&doc, path);
    }
    assert!(get_html(&s, "/reputation/holders.html").contains(A));

    eprintln!(
        "reputation: extra servers {:.1} s, whole test {:.1} s",
        extras_done.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    drop(s);
}
