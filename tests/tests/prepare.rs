//! Prepared transactions and tickets (issue 16, library/PREPARE.md) end to end: a
//! real anvil running TestUSD, our ToolRegistry, ValidationRegistry and TicketCopies; the real
//! `conduct` binary with every address configured, reading the chain through a TCP relay the
//! test cuts; a second server on the same chain with no address configured. Every prepared
//! transaction is signed by a real wallet library (PyPI eth-account, `tests/py/prepare_sign.py`:
//! `Account.sign_transaction`, nonce, gas and fees from anvil, `eth_sendRawTransaction`) and sent
//! in the given order, and must succeed:
//!
//! - `GET /prepare`: every action, its contract (addresses here, null on the bare server), its
//!   function, selector and arguments; signed;
//! - the registry: registerTool, then updateToolMetadata, then deregisterTool by the creator
//!   (a stranger's update shows `tool creator is from: fails`; after the deregistration
//!   `tool state: fails`, `deregistered`);
//! - a ticket: approve then buy (the allowance read, skip_if false); again with an allowance
//!   already covering the cost: skip_if holds, the signer (reading the check itself) drops the
//!   approve and only buy is sent;
//! - ERC-8004 validationRequest then validationResponse by the named validator (a second
//!   request with the same hash shows `request hash unused: fails`);
//! - the operator's quest payment (an ERC-20 transfer: one transaction, no approve);
//! - the relay cut: preconditions `assumed`, the calldata byte-identical to the answer with the
//!   chain up; a ticket without its price stated is a 503 naming `?price`;
//! - the bare server: `to: null`, an `unset` address precondition, the same calldata; a ticket
//!   without its price stated has `skip_if.amount: null` and says the price is unknown;
//! - entitlement: the holder's EIP-191 signature over `/ticket/{game}/message` (eth-account
//!   `sign_message`) gives a signed `entitled: true`; after `transfer_ticket` (safeTransferFrom,
//!   prepared and signed the same way) the holder's is `entitled: false` (200, a no the chain
//!   gave) and the receiver's `true`; a wrong signer is 403; the chain cut is 503 with
//!   Retry-After, never a no;
//! - never a key: an argument or member named like one is refused (422 `never-a-key`).

use std::time::Instant;

use alloy::primitives::{keccak256, Address, B256, U256};
use alloy::sol_types::{SolCall, SolValue};
use conduct_tests::{client, py_dir, python, Anvil, Relay, Server, ANVIL_ACCOUNT_0};
use serde_json::{json, Value};

alloy::sol! {
    interface Erc20 {
        function mint(address to, uint256 amount) external returns (bool);
        function approve(address spender, uint256 amount) external returns (bool);
        function balanceOf(address who) external view returns (uint256);
        function allowance(address owner, address spender) external view returns (uint256);
    }
    interface Copies {
        function setGame(uint256 id, uint256 price, bool open) external;
        function balanceOf(address account, uint256 id) external view returns (uint256);
    }
    interface Registry {
        function toolCount() external view returns (uint256);
    }
    interface Validation {
        function hasResponse(bytes32 requestHash) external view returns (bool);
        function getValidationStatus(bytes32 requestHash) external view returns (address validatorAddress, uint256 agentId, uint8 response, bytes32 responseHash, string tag, uint256 lastUpdate);
    }
}

/// anvil's development accounts (public test values): (address, private key).
const CREATOR: (&str, &str) = (
    "0x70997970c51812dc3a010c7d01b50e0d17dc79c8",
    "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
);
const BUYER: (&str, &str) = (
    "0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc",
    "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a",
);
const OPERATOR: (&str, &str) = (
    "0x90f79bf6eb2c4f870365e785982e1f101e93b906",
    "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6",
);
const FRIEND: (&str, &str) = (
    "0x15d34aaf54267db7d7c367839aaf71a00a2c6a65",
    "0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a",
);
const VALIDATOR: (&str, &str) = (
    "0x9965507d1a55bcc2695c58ba16fb37d819b0a4dc",
    "0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba",
);
/// Where ticket payments go (no key needed).
const PAYEE: &str = "0x000000000000000000000000000000000000fee5";
/// Game 1's price: 2.5 TestUSD.
const PRICE: u64 = 2_500_000;

fn addr(s: &str) -> Address {
    s.parse().unwrap()
}

fn u(n: u64) -> U256 {
    U256::from(n)
}

fn eth_call(anvil: &Anvil, to: &str, data: Vec<u8>) -> Vec<u8> {
    let out = anvil.rpc(
        "eth_call",
        json!([{"to": to, "data": format!("0x{}", hex::encode(data))}, "latest"]),
    );
    hex::decode(out.as_str().unwrap().trim_start_matches("0x")).unwrap()
}

fn token_balance(anvil: &Anvil, token: &str, who: &str) -> U256 {
    let out = eth_call(
        anvil,
        token,
        Erc20::balanceOfCall { who: addr(who) }.abi_encode(),
    );
    Erc20::balanceOfCall::abi_decode_returns(&out).unwrap()
}

fn copies(anvil: &Anvil, tickets: &str, who: &str, game: u64) -> U256 {
    let out = eth_call(
        anvil,
        tickets,
        Copies::balanceOfCall {
            account: addr(who),
            id: u(game),
        }
        .abi_encode(),
    );
    Copies::balanceOfCall::abi_decode_returns(&out).unwrap()
}

fn get(s: &Server, path: &str) -> (u16, Value) {
    let r = client().get(s.at(path)).send().unwrap();
    let status = r.status().as_u16();
    let text = r.text().unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

fn post(s: &Server, path: &str, body: &Value) -> (u16, Value, reqwest::header::HeaderMap) {
    let r = client().post(s.at(path)).json(body).send().unwrap();
    let status = r.status().as_u16();
    let headers = r.headers().clone();
    (status, r.json().unwrap(), headers)
}

fn ok(s: &Server, path: &str) -> Value {
    let (status, v) = get(s, path);
    assert_eq!(status, 200, "GET {path}: {v:#}");
    v
}

/// The body `path` serves verifies under the service's key.
fn assert_signed(s: &Server, path: &str) {
    let pinned = conduct_verify::pinned_key(&s.vkey()).unwrap();
    let bytes = client().get(s.at(path)).send().unwrap().bytes().unwrap();
    conduct_verify::verify_signed(&bytes, &pinned)
        .unwrap_or_else(|e| panic!("GET {path} does not verify: {e}"));
}

/// The precondition `what` of an answer.
fn pre<'a>(answer: &'a Value, what: &str) -> &'a Value {
    answer["preconditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["what"] == what)
        .unwrap_or_else(|| panic!("no precondition {what:?}: {answer:#}"))
}

fn status_of<'a>(answer: &'a Value, what: &str) -> &'a str {
    pre(answer, what)["status"].as_str().unwrap()
}

/// Sign and send every transaction of `answer` with `key` (eth-account), in order; the
/// signer's report.
fn send(anvil: &Anvil, key: &str, answer: &Value) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("answer.json");
    std::fs::write(&file, answer.to_string()).unwrap();
    let out = std::process::Command::new(python())
        .arg(py_dir().join("prepare_sign.py"))
        .args(["send", "--rpc", &anvil.url, "--key", key, "--answer"])
        .arg(&file)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "prepare_sign.py send failed: {stdout}\n{}\n{answer:#}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_str(stdout.trim()).unwrap();
    let rows = v["sent"].as_array().unwrap().clone();
    assert_eq!(rows.len(), answer["txs"].as_array().unwrap().len());
    for r in &rows {
        assert!(r["skipped"] == true || r["status"] == 1, "{r}");
    }
    rows
}

/// An EIP-191 signature of `text` by `key` (eth-account `sign_message`).
fn sign_message(key: &str, text: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("text.txt");
    std::fs::write(&file, text).unwrap();
    let out = std::process::Command::new(python())
        .arg(py_dir().join("prepare_sign.py"))
        .args(["sign-message", "--key", key, "--text-file"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
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
         confirmations = 1\npoll_ms = 200\nrpc_timeout_seconds = 2\n"
    )
}

/// Each transaction's (to, data): what must not change when the chain does not answer.
fn calldata(answer: &Value) -> Vec<(Value, Value)> {
    answer["txs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["to"].clone(), t["data"].clone()))
        .collect()
}

fn entitle(s: &Server, game: u64, wallet: &str, signature: &str) -> (u16, Value) {
    let (status, v, _) = post(
        s,
        &format!("/ticket/{game}/entitle"),
        &json!({"wallet": wallet, "signature": signature}),
    );
    (status, v)
}

fn holder_signature(s: &Server, game: u64, (wallet, key): (&str, &str)) -> String {
    let (status, text) = get(s, &format!("/ticket/{game}/message?wallet={wallet}"));
    assert_eq!(status, 200, "{text}");
    let text = text.as_str().unwrap().to_owned();
    assert!(text.contains("Action: prove_holder"), "{text}");
    assert!(text.contains(&format!("Game: {game}\n")), "{text}");
    assert!(text.contains(&format!("Wallet: {wallet}\n")), "{text}");
    sign_message(key, &text)
}

#[test]
fn prepared_transactions_are_signed_by_a_wallet_and_succeed_on_chain() {
    let started = Instant::now();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let anvil = Anvil::start();
    let anvil_addr: std::net::SocketAddr = anvil.url.trim_start_matches("http://").parse().unwrap();
    let relay = rt.block_on(Relay::start(anvil_addr));

    // The contracts, from account 0.
    let (usd, _) = anvil.deploy(include_str!("../../contracts/out/TestUSD.json"), &[]);
    let usd = usd.to_ascii_lowercase();
    let (registry, registry_block) = anvil.deploy_registry();
    let registry = registry.to_ascii_lowercase();
    let (validation, _) = anvil.deploy(
        include_str!("../../contracts/out/ValidationRegistry.json"),
        &Address::ZERO.abi_encode(),
    );
    let validation = validation.to_ascii_lowercase();
    let args = (
        addr(&usd),
        addr(PAYEE),
        "https://conduct.example/copies/{id}.json".to_owned(),
    )
        .abi_encode_params();
    let (tickets, _) = anvil.deploy(include_str!("../../contracts/out/TicketCopies.json"), &args);
    let tickets = tickets.to_ascii_lowercase();
    anvil.send(
        ANVIL_ACCOUNT_0,
        Some(&tickets),
        &Copies::setGameCall {
            id: u(1),
            price: u(PRICE),
            open: true,
        }
        .abi_encode(),
    );
    for who in [BUYER.0, OPERATOR.0] {
        anvil.send(
            ANVIL_ACCOUNT_0,
            Some(&usd),
            &Erc20::mintCall {
                to: addr(who),
                amount: u(100_000_000),
            }
            .abi_encode(),
        );
    }

    let dir = tempfile::tempdir().unwrap();
    let s = config(
        dir.path(),
        "main",
        &format!(
            "{}[chain.registry]\naddress = \"{registry}\"\nstart_block = {registry_block}\n\
             [chain.tickets]\naddress = \"{tickets}\"\n\
             [chain.validation]\naddress = \"{validation}\"\n\
             [munus]\ntoken = \"{usd}\"\n",
            chain_section(&format!("http://{}", relay.addr))
        ),
    );
    let bare = config(dir.path(), "bare", &chain_section(&anvil.url));

    // ---- The index.
    let index = ok(&s, "/prepare");
    assert_eq!(index["type"], "conduct.prepare-index/v1");
    assert_signed(&s, "/prepare");
    let names: Vec<&str> = index["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    for name in [
        "register_tool",
        "update_tool_metadata",
        "deregister_tool",
        "buy_ticket",
        "validation_request",
        "quest_payment",
    ] {
        assert!(names.contains(&name), "{name} missing: {names:?}");
    }
    let action = |doc: &Value, name: &str| -> Value {
        doc["actions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["name"] == name)
            .cloned()
            .unwrap()
    };
    let reg = action(&index, "register_tool");
    assert_eq!(reg["contract"]["address"], registry.as_str());
    assert_eq!(
        reg["selector"],
        format!(
            "0x{}",
            hex::encode(&keccak256(b"registerTool(string,bytes32,address)")[..4])
        )
    );
    let params: Vec<(&str, &str)> = reg["params"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["name"].as_str().unwrap(), p["type"].as_str().unwrap()))
        .collect();
    assert_eq!(
        params,
        [
            ("from", "address"),
            ("metadata_uri", "string"),
            ("manifest_hash", "bytes32"),
            ("access_predicate", "address")
        ]
    );
    assert_eq!(action(&index, "buy_ticket")["pulls_erc20"], true);
    assert_eq!(
        action(&index, "quest_payment")["contract"]["address"],
        usd.as_str()
    );
    let bare_index = ok(&bare, "/prepare");
    for a in bare_index["actions"].as_array().unwrap() {
        assert_eq!(a["contract"]["address"], Value::Null, "{a:#}");
    }

    // ---- The registry: register, update, deregister, each by the creator.
    let uri = "https://tools.example/.well-known/ai-tool/sample.json";
    let hash = format!("0x{}", hex::encode(keccak256(b"manifest one")));
    let register_body = json!({"from": CREATOR.0, "metadata_uri": uri, "manifest_hash": hash});
    let (status, register, _) = post(&s, "/prepare/register_tool", &register_body);
    assert_eq!(status, 200, "{register:#}");
    assert_eq!(register["type"], "conduct.prepared/v1");
    assert_eq!(register["txs"].as_array().unwrap().len(), 1);
    let tx = &register["txs"][0];
    assert_eq!(tx["to"], registry.as_str());
    assert_eq!(tx["chain_id"], 31337);
    assert_eq!(tx["value"], "0");
    assert_eq!(tx["from"], CREATOR.0);
    assert_eq!(status_of(&register, "ERC-8257 tool registry address"), "ok");
    assert_eq!(status_of(&register, "ERC-8257 tool registry code"), "ok");
    assert_eq!(status_of(&register, "gas balance of from"), "ok");
    assert!(register["read_at"]["block"].is_u64(), "{register:#}");
    assert_eq!(register["read_at"]["reachable"], true);
    // GET with the same arguments is the same calldata.
    let register_path = format!(
        "/prepare/register_tool?from={}&metadata_uri={}&manifest_hash={hash}",
        CREATOR.0, uri
    );
    assert_eq!(calldata(&ok(&s, &register_path)), calldata(&register));
    assert_signed(&s, &register_path);
    send(&anvil, CREATOR.1, &register);
    let count = eth_call(&anvil, &registry, Registry::toolCountCall {}.abi_encode());
    assert_eq!(
        Registry::toolCountCall::abi_decode_returns(&count).unwrap(),
        u(1)
    );

    let hash2 = format!("0x{}", hex::encode(keccak256(b"manifest two")));
    let update_args = format!("tool_id=1&metadata_uri={uri}&manifest_hash={hash2}");
    let stranger = ok(
        &s,
        &format!(
            "/prepare/update_tool_metadata?from={}&{update_args}",
            BUYER.0
        ),
    );
    assert_eq!(status_of(&stranger, "tool state"), "ok", "{stranger:#}");
    assert_eq!(status_of(&stranger, "tool creator is from"), "fails");
    assert_eq!(pre(&stranger, "tool creator is from")["value"], CREATOR.0);
    let update = ok(
        &s,
        &format!(
            "/prepare/update_tool_metadata?from={}&{update_args}",
            CREATOR.0
        ),
    );
    assert_eq!(
        status_of(&update, "tool creator is from"),
        "ok",
        "{update:#}"
    );
    send(&anvil, CREATOR.1, &update);
    let deregister = ok(
        &s,
        &format!("/prepare/deregister_tool?from={}&tool_id=1", CREATOR.0),
    );
    assert_eq!(status_of(&deregister, "tool state"), "ok");
    send(&anvil, CREATOR.1, &deregister);
    let after = ok(
        &s,
        &format!(
            "/prepare/update_tool_metadata?from={}&{update_args}",
            CREATOR.0
        ),
    );
    assert_eq!(status_of(&after, "tool state"), "fails", "{after:#}");
    assert_eq!(pre(&after, "tool state")["value"], "deregistered");
    let unknown = ok(
        &s,
        &format!("/prepare/deregister_tool?from={}&tool_id=9", CREATOR.0),
    );
    assert_eq!(pre(&unknown, "tool state")["value"], "not-registered");

    // ---- A ticket: approve, then buy.
    let buy = ok(&s, &format!("/ticket/1/prepare?from={}&amount=2", BUYER.0));
    assert_signed(&s, &format!("/ticket/1/prepare?from={}&amount=2", BUYER.0));
    let txs = buy["txs"].as_array().unwrap();
    assert_eq!(txs.len(), 2, "{buy:#}");
    assert_eq!(
        txs[0]["to"],
        usd.as_str(),
        "the approve is on the token sold"
    );
    assert_eq!(
        txs[0]["data"],
        format!(
            "0x{}",
            hex::encode(
                Erc20::approveCall {
                    spender: addr(&tickets),
                    amount: u(2 * PRICE)
                }
                .abi_encode()
            )
        )
    );
    assert_eq!(txs[1]["to"], tickets.as_str(), "the action is last");
    let skip = &txs[0]["skip_if"];
    assert_eq!(skip["amount"], (2 * PRICE).to_string());
    assert_eq!(skip["allowance"], "0");
    assert_eq!(skip["holds"], false);
    assert!(txs[1].get("skip_if").is_none());
    for what in [
        "game open",
        "price per copy",
        "payment token",
        "token balance of from",
        "allowance of from to the ticket contract",
    ] {
        assert_eq!(status_of(&buy, what), "ok", "{what}: {buy:#}");
    }
    assert_eq!(pre(&buy, "price per copy")["value"], PRICE.to_string());
    let sent = send(&anvil, BUYER.1, &buy);
    assert_eq!(sent[0]["skipped"], false);
    assert_eq!(sent[0]["holds_read"], false);
    assert_eq!(copies(&anvil, &tickets, BUYER.0, 1), u(2));
    assert_eq!(token_balance(&anvil, &usd, PAYEE), u(2 * PRICE));
    // /prepare/buy_ticket is the same action.
    let same = ok(
        &s,
        &format!("/prepare/buy_ticket?from={}&game=1&amount=2", BUYER.0),
    );
    assert_eq!(calldata(&same), calldata(&buy));

    // An allowance already in place: skip_if holds and only buy is sent.
    anvil.send(
        BUYER.0,
        Some(&usd),
        &Erc20::approveCall {
            spender: addr(&tickets),
            amount: u(10 * PRICE),
        }
        .abi_encode(),
    );
    let again = ok(&s, &format!("/ticket/1/prepare?from={}", BUYER.0));
    assert_eq!(again["txs"][0]["skip_if"]["holds"], true, "{again:#}");
    assert_eq!(
        again["txs"][0]["skip_if"]["allowance"],
        (10 * PRICE).to_string()
    );
    let sent = send(&anvil, BUYER.1, &again);
    assert_eq!(sent[0]["skipped"], true, "{sent:?}");
    assert_eq!(sent[0]["holds_read"], true);
    assert_eq!(sent[1]["status"], 1);
    assert_eq!(copies(&anvil, &tickets, BUYER.0, 1), u(3));
    let allowance = eth_call(
        &anvil,
        &usd,
        Erc20::allowanceCall {
            owner: addr(BUYER.0),
            spender: addr(&tickets),
        }
        .abi_encode(),
    );
    assert_eq!(
        Erc20::allowanceCall::abi_decode_returns(&allowance).unwrap(),
        u(9 * PRICE)
    );
    // A closed game and a price that is not the contract's are said so.
    let wrong = ok(&s, &format!("/ticket/2/prepare?from={}&price=1", BUYER.0));
    assert_eq!(status_of(&wrong, "game open"), "fails", "{wrong:#}");
    assert_eq!(status_of(&wrong, "price per copy"), "fails");

    // ---- ERC-8004: a validation request, then the validator's response.
    let request_hash = format!("0x{}", hex::encode(keccak256(b"a credential")));
    let request_body = json!({
        "from": CREATOR.0,
        "validator": VALIDATOR.0,
        "agent_id": "7",
        "request_uri": "https://agent.example/credential.json",
        "request_hash": request_hash,
    });
    let (status, request, _) = post(&s, "/prepare/validation_request", &request_body);
    assert_eq!(status, 200, "{request:#}");
    assert_eq!(status_of(&request, "request hash unused"), "ok");
    assert_eq!(status_of(&request, "identity registry"), "ok");
    assert_eq!(
        status_of(&request, "from is the agent's owner or operator"),
        "ok"
    );
    send(&anvil, CREATOR.1, &request);
    let (_, twice, _) = post(&s, "/prepare/validation_request", &request_body);
    assert_eq!(
        status_of(&twice, "request hash unused"),
        "fails",
        "{twice:#}"
    );
    let response_path = format!(
        "/prepare/validation_response?from={}&request_hash={request_hash}&response=100&tag=conduct.erc8004-validation/v1",
        VALIDATOR.0
    );
    let response = ok(&s, &response_path);
    assert_eq!(status_of(&response, "request exists"), "ok");
    assert_eq!(
        status_of(&response, "from is the request's validator"),
        "ok"
    );
    send(&anvil, VALIDATOR.1, &response);
    let rh: B256 = request_hash.parse().unwrap();
    let status_bytes = eth_call(
        &anvil,
        &validation,
        Validation::getValidationStatusCall { requestHash: rh }.abi_encode(),
    );
    let st = Validation::getValidationStatusCall::abi_decode_returns(&status_bytes).unwrap();
    assert_eq!(st.validatorAddress, addr(VALIDATOR.0));
    assert_eq!(st.agentId, u(7));
    assert_eq!(st.response, 100);
    assert_eq!(st.tag, "conduct.erc8004-validation/v1");
    let not_validator = ok(&s, &response_path.replace(VALIDATOR.0, CREATOR.0));
    assert_eq!(
        status_of(&not_validator, "from is the request's validator"),
        "fails"
    );

    // ---- The operator's quest payment: one transfer, no approve.
    let pay_path = format!(
        "/prepare/quest_payment?from={}&to={}&amount=1234567",
        OPERATOR.0, FRIEND.0
    );
    let pay = ok(&s, &pay_path);
    assert_eq!(pay["txs"].as_array().unwrap().len(), 1, "{pay:#}");
    assert_eq!(pay["txs"][0]["to"], usd.as_str());
    assert_eq!(status_of(&pay, "token balance of from"), "ok");
    send(&anvil, OPERATOR.1, &pay);
    assert_eq!(token_balance(&anvil, &usd, FRIEND.0), u(1_234_567));

    // ---- The chain cut: assumed, never zero, and the calldata unchanged.
    let buy_stated = format!(
        "/ticket/1/prepare?from={}&price={PRICE}&token={usd}",
        BUYER.0
    );
    let up: Vec<(String, Value)> = [register_path.clone(), buy_stated.clone(), pay_path.clone()]
        .into_iter()
        .map(|p| {
            let v = ok(&s, &p);
            (p, v)
        })
        .collect();
    let holder_sig = holder_signature(&s, 1, BUYER);
    relay.set(false);
    // Open connections are cut within the relay's 20 ms poll.
    std::thread::sleep(std::time::Duration::from_millis(200));
    for (path, was) in &up {
        let down = ok(&s, path);
        assert_eq!(
            calldata(&down),
            calldata(was),
            "{path}: the calldata changed"
        );
        assert_eq!(down["read_at"]["reachable"], false, "{path}: {down:#}");
        let statuses: Vec<&str> = down["preconditions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["status"].as_str().unwrap())
            .collect();
        assert!(statuses.contains(&"assumed"), "{path}: {down:#}");
        for p in down["preconditions"].as_array().unwrap() {
            if p["status"] == "assumed" {
                assert!(
                    p["value"].is_null()
                        || p["what"] == "payment token"
                        || p["what"] == "price per copy",
                    "{path}: an assumed value is not a reading: {p}"
                );
                assert!(p["detail"].as_str().unwrap().contains("never zero"), "{p}");
            }
        }
        assert_eq!(status_of(&down, "gas balance of from"), "assumed");
    }
    let down_buy = ok(&s, &buy_stated);
    assert_eq!(down_buy["txs"][0]["skip_if"]["holds"], Value::Null);
    assert_eq!(
        status_of(&down_buy, "allowance of from to the ticket contract"),
        "assumed"
    );
    // Without its price and token stated, a ticket needs the chain: 503 naming them.
    let (status, problem) = get(&s, &format!("/ticket/1/prepare?from={}", BUYER.0));
    assert_eq!(status, 503, "{problem:#}");
    assert_eq!(problem["type"], "/library/ERRORS.md#chain-unreachable");
    let pointers: Vec<&str> = problem["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["pointer"].as_str().unwrap())
        .collect();
    assert_eq!(pointers, ["?price", "?token"]);
    // An entitlement is never a no while the chain is down.
    let (status, v, headers) = post(
        &s,
        "/ticket/1/entitle",
        &json!({"wallet": BUYER.0, "signature": holder_sig}),
    );
    assert_eq!(status, 503, "{v:#}");
    assert_eq!(v["type"], "/library/ERRORS.md#chain-unreachable");
    assert!(headers.contains_key("retry-after"));
    relay.set(true);

    // ---- Not deployed here: to null, the address unset, the same calldata.
    let bare_register = ok(&bare, &register_path);
    assert_eq!(bare_register["txs"][0]["to"], Value::Null);
    assert_eq!(calldata(&bare_register)[0].1, calldata(&register)[0].1);
    let unset = pre(&bare_register, "ERC-8257 tool registry address");
    assert_eq!(unset["status"], "unset", "{bare_register:#}");
    assert_eq!(unset["value"], Value::Null);
    let (_, bare_request, _) = post(&bare, "/prepare/validation_request", &request_body);
    assert_eq!(bare_request["txs"][0]["to"], Value::Null);
    assert_eq!(calldata(&bare_request)[0].1, calldata(&request)[0].1);
    assert_eq!(
        status_of(&bare_request, "ERC-8004 validation registry address"),
        "unset"
    );
    let bare_buy = ok(
        &bare,
        &format!("/ticket/1/prepare?from={}&price={PRICE}", BUYER.0),
    );
    assert_eq!(bare_buy["txs"][1]["to"], Value::Null);
    assert_eq!(
        bare_buy["txs"][1]["data"],
        buy["txs"][1]["data"]
            .as_str()
            .unwrap()
            .replace(&format!("{:064x}", 2), &format!("{:064x}", 1))
    );
    assert_eq!(
        status_of(&bare_buy, "ERC-1155 ticket copies (TicketCopies) address"),
        "unset"
    );
    // No price stated and no ticket contract: the amount is unknown, so it is null, and the
    // words say what is unknown (never a placeholder, never "the price stated").
    let unpriced = ok(&bare, &format!("/ticket/1/prepare?from={}", BUYER.0));
    assert_eq!(
        unpriced["txs"][0]["skip_if"]["amount"],
        Value::Null,
        "{unpriced:#}"
    );
    // The allowance read names the ticket contract, which is not set: its calldata is
    // unknown too (null, never an empty placeholder).
    assert_eq!(
        unpriced["txs"][0]["skip_if"]["check"]["data"],
        Value::Null,
        "{unpriced:#}"
    );
    let price = pre(&unpriced, "price per copy");
    assert_eq!(price["status"], "unset", "{price:#}");
    assert_eq!(price["value"], Value::Null, "{price:#}");
    let words = price["detail"].as_str().unwrap();
    assert!(
        words.contains("no price was stated") && words.contains("?price"),
        "{words}"
    );
    assert!(!unpriced.to_string().contains("as is"), "{unpriced:#}");
    let bare_pay = ok(&bare, &pay_path);
    assert_eq!(bare_pay["txs"][0]["to"], Value::Null);
    assert_eq!(calldata(&bare_pay)[0].1, calldata(&pay)[0].1);
    assert_eq!(
        status_of(&bare_pay, "ERC-20 payment token address"),
        "unset"
    );
    let bare_pay = ok(&bare, &format!("{pay_path}&token={usd}"));
    assert_eq!(bare_pay["txs"][0]["to"], usd.as_str());

    // ---- Entitlement follows the copy.
    let (status, ent) = entitle(&s, 1, BUYER.0, &holder_sig);
    assert_eq!(status, 200, "{ent:#}");
    assert_eq!(ent["type"], "conduct.ticket-entitlement/v1");
    assert_eq!(ent["entitled"], true);
    assert_eq!(ent["balance"], "3");
    assert_eq!(ent["contract"], tickets.as_str());
    assert!(
        ent["block"].is_u64() && ent["block_hash"].is_string(),
        "{ent:#}"
    );
    let pinned = conduct_verify::pinned_key(&s.vkey()).unwrap();
    conduct_verify::verify_signed(ent.to_string().as_bytes(), &pinned).expect("signed");
    // A signature by another wallet: 403.
    let (status, wrong) = entitle(
        &s,
        1,
        BUYER.0,
        &sign_message(FRIEND.1, ent["proof"]["message"].as_str().unwrap()),
    );
    assert_eq!(status, 403, "{wrong:#}");
    assert_eq!(wrong["type"], "/library/ERRORS.md#ticket-wrong-signer");
    // Give the copies away (safeTransferFrom, prepared and signed the same way).
    let give = ok(
        &s,
        &format!(
            "/prepare/transfer_ticket?from={}&to={}&game=1&amount=3",
            BUYER.0, FRIEND.0
        ),
    );
    assert_eq!(status_of(&give, "copies held by from"), "ok", "{give:#}");
    send(&anvil, BUYER.1, &give);
    assert_eq!(copies(&anvil, &tickets, FRIEND.0, 1), u(3));
    let (status, gone) = entitle(&s, 1, BUYER.0, &holder_sig);
    assert_eq!(status, 200, "a no the chain gave is an answer: {gone:#}");
    assert_eq!(gone["entitled"], false);
    assert_eq!(gone["balance"], "0");
    let friend_sig = holder_signature(&s, 1, FRIEND);
    let (status, theirs) = entitle(&s, 1, FRIEND.0, &friend_sig);
    assert_eq!(status, 200, "{theirs:#}");
    assert_eq!(theirs["entitled"], true);
    assert_eq!(theirs["balance"], "3");
    // The bare server has no ticket contract: 404, never a no.
    let (status, none) = entitle(&bare, 1, FRIEND.0, &holder_signature(&bare, 1, FRIEND));
    assert_eq!(status, 404, "{none:#}");
    assert_eq!(none["type"], "/library/ERRORS.md#ticket-contract-unset");

    // ---- Never a key, and every argument checked.
    let (status, v) = get(
        &s,
        &format!(
            "/prepare/register_tool?from={}&private_key=0x{}",
            CREATOR.0,
            "11".repeat(32)
        ),
    );
    assert_eq!(status, 422, "{v:#}");
    assert_eq!(v["type"], "/library/ERRORS.md#never-a-key");
    assert!(v["errors"][0]["pointer"] == "?private_key", "{v:#}");
    let mut with_seed = register_body.clone();
    with_seed["mnemonic"] = json!("test test test");
    let (status, v, _) = post(&s, "/prepare/register_tool", &with_seed);
    assert_eq!(status, 422, "{v:#}");
    assert_eq!(v["type"], "/library/ERRORS.md#never-a-key");
    let (status, v, _) = post(
        &s,
        "/ticket/1/entitle",
        &json!({"wallet": BUYER.0, "signature": holder_sig, "private_key": "0x00"}),
    );
    assert_eq!(status, 422, "{v:#}");
    assert_eq!(v["type"], "/library/ERRORS.md#never-a-key");
    let (status, v) = get(
        &s,
        &format!(
            "/prepare/register_tool?from=0x12&manifest_hash=0x00&colour=red&metadata_uri={uri}"
        ),
    );
    assert_eq!(status, 422, "{v:#}");
    let pointers: Vec<&str> = v["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["pointer"].as_str().unwrap())
        .collect();
    assert_eq!(pointers, ["?from", "?manifest_hash", "?colour"], "{v:#}");
    let (status, v, _) = post(
        &s,
        "/prepare/register_tool",
        &json!({"from": CREATOR.0, "metadata_uri": uri, "manifest_hash": 7}),
    );
    assert_eq!(status, 422, "{v:#}");
    assert_eq!(v["errors"][0]["pointer"], "/manifest_hash");
    let (status, v) = get(&s, "/prepare/swap");
    assert_eq!(status, 404, "{v:#}");
    assert_eq!(v["type"], "/library/ERRORS.md#prepare-unknown-action");
    let (status, _) = get(&s, "/ticket/01/message?wallet=0x12");
    assert_eq!(status, 422);
    let (status, v) = entitle(&s, 1, BUYER.0, "0x1234");
    assert_eq!(status, 422, "{v:#}");
    assert_eq!(v["type"], "/library/ERRORS.md#bad-signature");

    println!(
        "prepare end to end: {:.1}s",
        started.elapsed().as_secs_f64()
    );
}
