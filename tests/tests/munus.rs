//! The quest board (issue 14, library/MUNUS.md) end to end: the real `conduct` binary following
//! a real anvil through a TCP relay the test can cut, TestUSD transfers made by the operator
//! (anvil's unlocked account 0), and wallets that are PyPI eth-account (`tests/py/munus_e2e.py`,
//! a co-process) signing the exact texts the service serves. One chain and one service (then
//! the same service restarted with its clock moved 14 days on) for every case:
//!
//! - the operator's files: a malformed `quests.json` / `paid.json` entry is skipped and named in
//!   `claims_file_error` / `paid_file_error`, the rest is served;
//! - a sworn agent claims (the record carries the wallet eth-account signed with, and its
//!   signature recovers to it independently), submits a delivery link, is paid by a TestUSD
//!   transfer recorded in `paid.json`: the quest shows `done`, settled, its row `verified: true`;
//! - refusals, each with its status and problem type, and none writing a leaf: a sandbox vow, a
//!   signature by another wallet, a second claim by one vow the same UTC day, a claim on a
//!   claimed quest, a replayed signature, an unknown quest or vow, a malformed signature, a
//!   claim on a done quest, submits by a non-claimant, on an unclaimed quest, with a bad link;
//! - a payment row with a wrong amount reads `false` and counts as `unverified`;
//! - the RPC cut: every row reads `null`, `uncheckable_right_now` counts them (neither
//!   `settled_to_a_worker` nor `unverified` does), the paid quest takes no claim; restored, the
//!   flags come back;
//! - the clock moved to 3 s before a claim's 14th idle day on a restart: with no request, the
//!   static list on disk shows the quest open again and the log holds the lapse record dated
//!   exactly claim + 14 d (an older idle claim lapses too); the lapsed quest takes a claim again;
//! - the settled quest's claim never lapses: not at the restart (before its payment is re-read)
//!   nor in a second outage once its delivery is 14 days old (a claim on it then is refused
//!   and writes nothing);
//! - `conduct verify-log` checks the board's records in the site's log, and fails on a copy
//!   with one board leaf changed.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use alloy::primitives::{Address, U256};
use alloy::sol_types::SolCall;
use conduct_core::time::{parse_rfc3339, rfc3339};
use conduct_tests::{client, conduct_bin, python, Anvil, Relay, Server, ANVIL_ACCOUNT_0};
use serde_json::{json, Value};

alloy::sol! {
    function mint(address to, uint256 amount) external returns (bool);
    function transfer(address to, uint256 value) external returns (bool);
}

/// Seconds of the 14-day lapse.
const LAPSE: u64 = 14 * 86_400;

// --- the wallets: eth-account in a co-process ------------------------------------------------

/// `tests/py/munus_e2e.py wallet`: eth-account answering one JSON line per request.
struct Wallets {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Wallets {
    fn start() -> Wallets {
        let mut child = Command::new(python())
            // This crate's own `py/` (the lib's `py_dir` is fixed when the lib is built, and
            // the target directory may be shared with another checkout).
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("py/munus_e2e.py"))
            .arg("wallet")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start tests/py/munus_e2e.py");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Wallets {
            child,
            stdin,
            stdout,
        }
    }

    fn ask(&mut self, req: Value) -> Value {
        writeln!(self.stdin, "{req}").expect("write to the wallet");
        self.stdin.flush().unwrap();
        let mut line = String::new();
        self.stdout
            .read_line(&mut line)
            .expect("read from the wallet");
        let v: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("the wallet answered {line:?}: {e}"));
        assert!(v.get("error").is_none(), "the wallet failed on {req}: {v}");
        v
    }

    /// The EIP-55 address of `key`.
    fn address(&mut self, key: &str) -> String {
        self.ask(json!({"op": "address", "key": key}))["address"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// eth-account's `sign_message(encode_defunct(text=text))` by `key`: `0x` + 130 hex.
    fn sign(&mut self, key: &str, text: &str) -> String {
        self.ask(json!({"op": "sign", "key": key, "text": text}))["signature"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// The address eth-account recovers from `text` and `signature`.
    fn recover(&mut self, text: &str, signature: &str) -> String {
        self.ask(json!({"op": "recover", "text": text, "signature": signature}))["address"]
            .as_str()
            .unwrap()
            .to_owned()
    }
}

impl Drop for Wallets {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A private key of the test (small integers are valid secp256k1 keys).
fn key(n: u64) -> String {
    format!("0x{:064x}", 0x5eed_0000 + n)
}

// --- the RPC relay (as in registry.rs) -------------------------------------------------------

// --- HTTP ------------------------------------------------------------------------------------

/// `GET path` asking for JSON: (status, body as JSON or null).
fn get(s: &Server, path: &str) -> (u16, Value) {
    let r = client()
        .get(s.at(path))
        .header("accept", "application/json")
        .send()
        .unwrap_or_else(|e| panic!("GET {path}: {e}"));
    let status = r.status().as_u16();
    (status, r.json().unwrap_or(Value::Null))
}

/// `POST path` with a JSON body: (status, body as JSON or null, `Location`).
fn post(s: &Server, path: &str, body: &Value) -> (u16, Value, Option<String>) {
    let r = client()
        .post(s.at(path))
        .json(body)
        .send()
        .unwrap_or_else(|e| panic!("POST {path}: {e}"));
    let status = r.status().as_u16();
    let location = r
        .headers()
        .get("location")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    (status, r.json().unwrap_or(Value::Null), location)
}

/// Assert a refusal: its status and a problem whose `type` is `/library/ERRORS.md#<slug>` (the
/// service's one form of problem type).
fn refused(what: &str, got: (u16, Value), status: u16, slug: &str) {
    let (code, p) = got;
    let ty = p["type"].as_str().unwrap_or("");
    assert!(
        code == status && ty == format!("/library/ERRORS.md#{slug}"),
        "{what}: expected {status} {slug}, got {code} {p:#}"
    );
}

/// `GET /play/message`: (status, the text or the problem's text).
fn play_message(
    s: &Server,
    action: &str,
    quest: &str,
    vow: &str,
    link: Option<&str>,
) -> (u16, String) {
    let mut q = vec![("action", action), ("quest", quest), ("vow_id", vow)];
    if let Some(l) = link {
        q.push(("link", l));
    }
    let r = client()
        .get(s.at("/play/message"))
        .query(&q)
        .send()
        .expect("GET /play/message");
    (r.status().as_u16(), r.text().unwrap())
}

/// A vow sworn with `key`'s wallet (GET /vow/message, signed by eth-account, POST /vow): its id.
fn sworn_vow(s: &Server, w: &mut Wallets, key: &str, agent: &str) -> String {
    let text = format!("Improve this service, as {agent}, and say so");
    let msg = client()
        .get(s.at("/vow/message"))
        .query(&[
            ("text", text.as_str()),
            ("agent", agent),
            ("cadence_hours", "24"),
        ])
        .send()
        .unwrap();
    assert_eq!(msg.status(), 200);
    let msg = msg.text().unwrap();
    let address = w.address(key);
    let signature = w.sign(key, &msg);
    let (code, vow, _) = post(
        s,
        "/vow",
        &json!({"text": text, "agent": agent, "cadence_hours": 24,
                "wallet": address, "signature": signature}),
    );
    assert_eq!(code, 201, "{vow:#}");
    assert_eq!(vow["sandbox"], false, "{vow:#}");
    assert_eq!(vow["wallet"], json!(address), "{vow:#}");
    vow["vow_id"].as_str().unwrap().to_owned()
}

/// A claim body for `quest` by `vow`, its text signed by `key`: (body, the text signed).
fn claim_body(s: &Server, w: &mut Wallets, key: &str, quest: &str, vow: &str) -> (Value, String) {
    let (code, text) = play_message(s, "claim", quest, vow, None);
    assert_eq!(code, 200, "GET /play/message claim {quest}: {text}");
    let signature = w.sign(key, &text);
    (json!({"vow_id": vow, "signature": signature}), text)
}

/// POST a claim: (status, body).
fn claim(s: &Server, quest: &str, body: &Value) -> (u16, Value) {
    let (code, v, _) = post(s, &format!("/munus/{quest}/claim"), body);
    (code, v)
}

/// The log's size, from `GET /log/checkpoint`.
fn log_size(s: &Server) -> u64 {
    let cp = client()
        .get(s.at("/log/checkpoint"))
        .send()
        .unwrap()
        .text()
        .unwrap();
    cp.lines().nth(1).unwrap().parse().unwrap()
}

// --- the board -------------------------------------------------------------------------------

/// `GET /munus` (JSON).
fn board(s: &Server) -> Value {
    let (code, doc) = get(s, "/munus");
    assert_eq!(code, 200, "GET /munus: {doc:#}");
    doc
}

/// Poll `GET /munus` until `done` holds (bounded); the last document.
fn await_board(s: &Server, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let doc = board(s);
        if done(&doc) {
            return doc;
        }
        assert!(Instant::now() < deadline, "{what}: {doc:#}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// The quest `id` of a list document.
fn quest<'a>(doc: &'a Value, id: &str) -> &'a Value {
    doc["quests"]
        .as_array()
        .unwrap_or_else(|| panic!("no quests: {doc:#}"))
        .iter()
        .find(|q| q["id"] == id)
        .unwrap_or_else(|| panic!("quest {id} is not listed: {doc:#}"))
}

fn ids(doc: &Value) -> Vec<String> {
    doc["quests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["id"].as_str().unwrap().to_owned())
        .collect()
}

/// The payment row of `tx`.
fn paid_row<'a>(doc: &'a Value, tx: &str) -> &'a Value {
    doc["paid"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["tx"].as_str().is_some_and(|t| t.eq_ignore_ascii_case(tx)))
        .unwrap_or_else(|| panic!("no paid row {tx}: {doc:#}"))
}

/// The counts of a list document, in a fixed order: open, claimed, delivered_in_house,
/// delivered_by_a_worker, settled_to_a_worker, unverified, uncheckable_right_now.
fn counts(doc: &Value) -> [u64; 7] {
    [
        "open",
        "claimed",
        "delivered_in_house",
        "delivered_by_a_worker",
        "settled_to_a_worker",
        "unverified",
        "uncheckable_right_now",
    ]
    .map(|k| {
        doc[k]
            .as_u64()
            .unwrap_or_else(|| panic!("{k} is not a count: {doc:#}"))
    })
}

/// The list as the live site wrote it to disk (`<site>/munus.json`), if readable.
fn board_on_disk(site: &Path) -> Option<Value> {
    serde_json::from_slice(&std::fs::read(site.join("munus.json")).ok()?).ok()
}

// --- the log on disk -------------------------------------------------------------------------

/// The path of entry bundle `n` of width `w` under `log/` (C2SP tlog-tiles).
fn entries_rel(mut n: u64, w: u64) -> String {
    let mut groups = Vec::new();
    loop {
        groups.insert(0, n % 1000);
        n /= 1000;
        if n == 0 {
            break;
        }
    }
    let last = groups.pop().unwrap();
    let mut p = String::from("tile/entries/");
    for g in groups {
        p.push_str(&format!("x{g:03}/"));
    }
    p.push_str(&format!("{last:03}"));
    if w < 256 {
        p.push_str(&format!(".p/{w}"));
    }
    p
}

/// Every leaf of the log in `log` (read from its files; `None` while a bundle the checkpoint
/// names is not written yet), each as (bundle file, bytes).
fn log_leaves(log: &Path) -> Option<Vec<(String, Vec<u8>)>> {
    let cp = std::fs::read_to_string(log.join("checkpoint")).ok()?;
    let size: u64 = cp.lines().nth(1)?.parse().ok()?;
    let mut out = Vec::new();
    let mut n = 0;
    while n * 256 < size {
        let rel = entries_rel(n, (size - n * 256).min(256));
        let b = std::fs::read(log.join(&rel)).ok()?;
        let mut i = 0;
        while i + 2 <= b.len() {
            let len = usize::from(u16::from_be_bytes([b[i], b[i + 1]]));
            out.push((rel.clone(), b.get(i + 2..i + 2 + len)?.to_vec()));
            i += 2 + len;
        }
        n += 1;
    }
    (out.len() as u64 == size).then_some(out)
}

/// The board records of the log in `log`, parsed, in log order.
fn board_records(log: &Path) -> Option<Vec<Value>> {
    Some(
        log_leaves(log)?
            .into_iter()
            .filter_map(|(_, b)| serde_json::from_slice::<Value>(&b).ok())
            .filter(|v| {
                v["type"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("conduct.munus-"))
            })
            .collect(),
    )
}

/// `conduct verify-log DIR --pubkey VKEY`: (success, stdout).
fn verify_log(log: &Path, vkey: &str) -> (bool, String) {
    let out = Command::new(conduct_bin())
        .arg("verify-log")
        .arg(log)
        .args(["--pubkey", vkey])
        .output()
        .unwrap();
    assert!(matches!(out.status.code(), Some(0) | Some(1)), "{out:?}");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// Replace the file's bytes by writing a temporary and renaming it over (the service polls
/// `paid.json` and must never read half a file).
fn write_atomic(path: &Path, bytes: &[u8]) {
    let tmp = path.with_extension("tmp-test");
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn unix_of(v: &Value) -> u64 {
    parse_rfc3339(v.as_str().unwrap_or_else(|| panic!("not an instant: {v}")))
        .unwrap_or_else(|| panic!("not RFC 3339: {v}"))
}

// --- the chain -------------------------------------------------------------------------------

fn deploy_test_usd(anvil: &Anvil) -> String {
    anvil
        .deploy(include_str!("../../contracts/out/TestUSD.json"), &[])
        .0
}

/// The operator transfers `amount` TestUSD to `to`: the transaction hash.
fn pay(anvil: &Anvil, token: &str, to: &str, amount: u64) -> String {
    let data = transferCall {
        to: to.parse::<Address>().unwrap(),
        value: U256::from(amount),
    }
    .abi_encode();
    let r = anvil.send(ANVIL_ACCOUNT_0, Some(token), &data);
    r["transactionHash"].as_str().unwrap().to_owned()
}

fn quest_def(id: &str, title: &str) -> Value {
    json!({"id": id, "title": title, "rung": "rung 2: the service improves itself",
           "what": format!("{title}: the work, described"),
           "deliverable": "a pull request against the service", "check": "review"})
}

#[test]
fn the_quest_board_end_to_end() {
    // The one-claim-a-day cases need one UTC day: never start in its last three minutes.
    let into_day = now_unix() % 86_400;
    if into_day > 86_400 - 180 {
        std::thread::sleep(Duration::from_secs(86_400 - into_day + 1));
    }
    let started = Instant::now();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let anvil = Anvil::start();
    let anvil_addr: std::net::SocketAddr = anvil.url.trim_start_matches("http://").parse().unwrap();
    let relay = rt.block_on(Relay::start(anvil_addr));
    let token = deploy_test_usd(&anvil);
    anvil.send(
        ANVIL_ACCOUNT_0,
        Some(&token),
        &mintCall {
            to: ANVIL_ACCOUNT_0.parse().unwrap(),
            amount: U256::from(100_000_000u64),
        }
        .abi_encode(),
    );
    let mut w = Wallets::start();

    // The operator's files, each with entries that cannot be read.
    let dir = tempfile::tempdir().unwrap();
    let (data, site) = (dir.path().join("data"), dir.path().join("site"));
    std::fs::create_dir_all(&data).unwrap();
    let mut foxtrot = quest_def("foxtrot", "Foxtrot, done by the house");
    foxtrot["delivered_in_house"] = json!("https://github.com/example/conduct/pull/1");
    let mut no_check = quest_def("no-check", "No check");
    no_check.as_object_mut().unwrap().remove("check");
    let mut retired = quest_def("old", "Retired");
    retired["retired"] = json!(true);
    let quests = json!({"quests": [
        quest_def("alpha", "Alpha"), quest_def("bravo", "Bravo"), quest_def("charlie", "Charlie"),
        quest_def("delta", "Delta"), quest_def("echo", "Echo"), foxtrot,
        quest_def("Not An Id", "Bad id"), no_check, retired,
    ]});
    std::fs::write(
        data.join("quests.json"),
        serde_json::to_vec_pretty(&quests).unwrap(),
    )
    .unwrap();
    let bad_row = json!({"quest": "alpha", "to": "0xnot-an-address", "amount_scry": "1500000",
                         "token": token, "tx": format!("0x{}", "ab".repeat(32))});
    let paid_path = data.join("paid.json");
    write_atomic(
        &paid_path,
        &serde_json::to_vec(&json!({"paid": [bad_row]})).unwrap(),
    );
    let cfg = dir.path().join("conduct.toml");
    std::fs::write(
        &cfg,
        format!(
            "vow_daily_cap = 0\n\
             [chain]\nname = \"anvil\"\nchain_id = 31337\nrpc = [\"http://{}\"]\n\
             confirmations = 1\npoll_ms = 50\nrpc_timeout_seconds = 2\n\
             [munus]\nrecheck_seconds = 1\n",
            relay.addr
        ),
    )
    .unwrap();
    let cfg_arg = cfg.to_str().unwrap().to_owned();
    let mut s = Server::start_in(&data, &site, &["--config", cfg_arg.as_str()]);
    let vkey = s.vkey();

    // What could be read is served; the bad entries are named.
    let doc = board(&s);
    assert_eq!(doc["type"], "conduct.munus/v1", "{doc:#}");
    assert_eq!(
        ids(&doc),
        ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"],
        "the readable, unretired quests in file order"
    );
    let claims_err = doc["claims_file_error"].as_str().unwrap_or_default();
    assert!(
        claims_err.contains("quests[6] (\"Not An Id\")")
            && claims_err.contains("quests[7] (\"no-check\")")
            && !claims_err.contains("quests[8]")
            && !claims_err.contains("quests[0]"),
        "claims_file_error: {:#}",
        doc["claims_file_error"]
    );
    let paid_err = doc["paid_file_error"].as_str().unwrap_or_default();
    assert!(
        paid_err.contains("paid[0]") && paid_err.contains("`to`"),
        "paid_file_error: {:#}",
        doc["paid_file_error"]
    );
    assert_eq!(doc["paid"], json!([]), "{doc:#}");
    assert_eq!(counts(&doc), [5, 0, 1, 0, 0, 0, 0], "{doc:#}");
    assert_eq!(quest(&doc, "foxtrot")["status"], "done");
    assert_eq!(quest(&doc, "alpha")["status"], "open");
    assert_eq!(quest(&doc, "alpha")["claim"], Value::Null);
    for k in [
        "labor_never_a_reading",
        "merge_is_a_human_act",
        "no_shell_here",
        "no_yield_language",
    ] {
        assert!(doc["walls"][k].is_string(), "walls.{k}: {doc:#}");
    }

    // The operator adds a quest with the CLI while the service runs: it is listed with no
    // request to the service; retired, it leaves the list and its page says so.
    let quest_cli = |args: &[&str]| {
        let out = Command::new(conduct_bin())
            .arg("quest")
            .arg("--data")
            .arg(&data)
            .args(args)
            .env_remove("CONDUCT_CONFIG")
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    };
    quest_cli(&[
        "add",
        "--id",
        "golf",
        "--title",
        "Golf",
        "--rung",
        "r2",
        "--what",
        "w",
        "--deliverable",
        "a pull request",
        "--check",
        "review",
    ]);
    await_board(&s, "golf listed after conduct quest add", |d| {
        ids(d).contains(&"golf".to_owned())
    });
    quest_cli(&["retire", "golf"]);
    await_board(&s, "golf gone after conduct quest retire", |d| {
        !ids(d).contains(&"golf".to_owned())
    });
    // The quest's page is rendered apart from the list (the keeper asks for the list, then for
    // each quest of the edited file): awaited too, never read at once.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (code, page) = get(&s, "/munus/golf");
        if code == 200 && page["quest"]["status"] == "retired" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "golf's page never said retired: {code} {page:#}"
        );
        std::thread::sleep(Duration::from_millis(25));
    }

    // The sworn agents (each vow claims at most once a UTC day, so one per case).
    let (k1, k2, k3, k4, k5) = (key(1), key(2), key(3), key(4), key(5));
    let worker = w.address(&k1);
    let v1 = sworn_vow(&s, &mut w, &k1, "worker-one");
    let v2 = sworn_vow(&s, &mut w, &k2, "worker-two");
    let v3 = sworn_vow(&s, &mut w, &k3, "worker-three");
    let v4 = sworn_vow(&s, &mut w, &k4, "worker-four");
    let v5 = sworn_vow(&s, &mut w, &k5, "worker-five");
    let (code, sandbox, _) = post(
        &s,
        "/vow",
        &json!({"text": "Improve this service without a wallet", "agent": "sandboxed", "cadence_hours": 24}),
    );
    assert_eq!(
        (code, &sandbox["sandbox"]),
        (201, &json!(true)),
        "{sandbox:#}"
    );
    let vs = sandbox["vow_id"].as_str().unwrap().to_owned();

    // 1. A sworn agent claims alpha.
    let (alpha_body, alpha_text) = claim_body(&s, &mut w, &k1, "alpha", &v1);
    for line in [
        "Action: claim_quest".to_owned(),
        "Quest: alpha".to_owned(),
        format!("Vow: {v1}"),
        format!("Date (UTC): {}", &rfc3339(now_unix())[..10]),
    ] {
        assert!(
            alpha_text.lines().any(|l| l == line),
            "{line}: {alpha_text}"
        );
    }
    let (code, rec, location) = post(&s, "/munus/alpha/claim", &alpha_body);
    assert_eq!(code, 201, "the claim: {rec:#}");
    assert_eq!(location.as_deref(), Some("/munus/alpha"));
    assert_eq!(rec["type"], "conduct.munus-claim/v1", "{rec:#}");
    assert_eq!(
        (&rec["quest_id"], &rec["vow_id"]),
        (&json!("alpha"), &json!(v1))
    );
    assert_eq!(rec["wallet"], json!(worker), "the vow's wallet, EIP-55");
    assert_eq!(
        rec["wallet_signature"],
        json!(alpha_body["signature"]
            .as_str()
            .unwrap()
            .to_ascii_lowercase())
    );
    assert_eq!(
        w.recover(&alpha_text, rec["wallet_signature"].as_str().unwrap()),
        worker,
        "the recorded signature recovers to the wallet (eth-account)"
    );
    let alpha_claim = rec["log_index"].as_u64().unwrap();
    let doc = await_board(&s, "alpha claimed", |d| {
        quest(d, "alpha")["claim"]["vow_id"] == json!(v1)
    });
    let c = &quest(&doc, "alpha")["claim"];
    assert_eq!(c["log_index"], alpha_claim);
    assert_eq!(c["wallet"], json!(worker));
    assert_eq!(
        unix_of(&c["lapses_at"]),
        unix_of(&rec["at"]) + LAPSE,
        "{c:#}"
    );
    assert_eq!(quest(&doc, "alpha")["status"], "open");
    assert_eq!(counts(&doc), [4, 1, 1, 0, 0, 0, 0], "{doc:#}");
    // The quest's own page says the same.
    let (code, page) = get(&s, "/munus/alpha");
    assert_eq!(code, 200, "{page:#}");
    assert_eq!(page["type"], "conduct.munus-quest/v1", "{page:#}");
    assert_eq!(page["quest"], *quest(&doc, "alpha"), "{page:#}");

    // The worker-two vow claims bravo (the quest the wrong-amount payment names).
    let (bravo_body, _) = claim_body(&s, &mut w, &k2, "bravo", &v2);
    let (code, bravo_rec) = claim(&s, "bravo", &bravo_body);
    assert_eq!(code, 201, "{bravo_rec:#}");
    let bravo_claim = bravo_rec["log_index"].as_u64().unwrap();

    // 2. Refusals: each its own status and type, and none writes a leaf.
    let size = log_size(&s);
    let (body, _) = claim_body(&s, &mut w, &k1, "charlie", &vs);
    refused(
        "a sandbox vow",
        claim(&s, "charlie", &body),
        403,
        "munus-sandbox-vow",
    );
    let (code, text) = play_message(&s, "claim", "charlie", &v4, None);
    assert_eq!(code, 200, "{text}");
    let by_other = json!({"vow_id": v4, "signature": w.sign(&key(99), &text)});
    refused(
        "a signature by another wallet",
        claim(&s, "charlie", &by_other),
        403,
        "munus-wrong-wallet",
    );
    let (body, _) = claim_body(&s, &mut w, &k2, "charlie", &v2);
    refused(
        "a second claim by one vow the same UTC day",
        claim(&s, "charlie", &body),
        409,
        "munus-one-claim-a-day",
    );
    let (body, _) = claim_body(&s, &mut w, &k3, "alpha", &v3);
    refused(
        "a claim on a claimed quest",
        claim(&s, "alpha", &body),
        409,
        "munus-quest-claimed",
    );
    refused(
        "a replayed signature",
        claim(&s, "alpha", &alpha_body),
        409,
        "munus-replayed-signature",
    );
    // The same signature spelled otherwise (no 0x, v as 0/1) is the same replay.
    let sig = alpha_body["signature"].as_str().unwrap();
    let hex = sig.trim_start_matches("0x");
    let v = u8::from_str_radix(&hex[128..], 16).unwrap();
    let respelled = format!("{}{:02x}", &hex[..128], v - 27);
    refused(
        "a re-spelled replayed signature",
        claim(
            &s,
            "alpha",
            &json!({"vow_id": alpha_body["vow_id"], "signature": respelled}),
        ),
        409,
        "munus-replayed-signature",
    );
    refused(
        "a signature that is no signature",
        claim(&s, "charlie", &json!({"vow_id": v3, "signature": "0x1234"})),
        422,
        "bad-signature",
    );
    let (code, text) = play_message(&s, "claim", "nope", &v3, None);
    assert_eq!(code, 404, "GET /play/message for an unknown quest: {text}");
    let (body, _) = claim_body(&s, &mut w, &k3, "charlie", &v3);
    refused(
        "an unknown quest",
        claim(&s, "nope", &body),
        404,
        "munus-unknown-quest",
    );
    refused(
        "an unknown vow",
        claim(
            &s,
            "charlie",
            &json!({"vow_id": "0000000000000000", "signature": body["signature"]}),
        ),
        404,
        "unknown-vow",
    );
    let (body, _) = claim_body(&s, &mut w, &k3, "foxtrot", &v3);
    refused(
        "a claim on a quest the house delivered",
        claim(&s, "foxtrot", &body),
        409,
        "munus-quest-done",
    );
    let link = "https://github.com/example/conduct/pull/14";
    let (code, text) = play_message(&s, "submit", "alpha", &v3, Some(link));
    assert_eq!(code, 200, "{text}");
    let (code, p, _) = post(
        &s,
        "/munus/alpha/submit",
        &json!({"vow_id": v3, "link": link, "signature": w.sign(&k3, &text)}),
    );
    refused(
        "a submit by another vow than the claimant's",
        (code, p),
        403,
        "munus-not-claimant",
    );
    let (code, text) = play_message(&s, "submit", "charlie", &v3, Some(link));
    assert_eq!(code, 200, "{text}");
    let (code, p, _) = post(
        &s,
        "/munus/charlie/submit",
        &json!({"vow_id": v3, "link": link, "signature": w.sign(&k3, &text)}),
    );
    refused(
        "a submit on an unclaimed quest",
        (code, p),
        409,
        "munus-not-claimed",
    );
    let (code, p, _) = post(
        &s,
        "/munus/alpha/submit",
        &json!({"vow_id": v1, "link": "http://example.com/pull/1",
                "signature": format!("0x{}", "11".repeat(65))}),
    );
    refused(
        "a submit with a bad link",
        (code, p.clone()),
        422,
        "invalid",
    );
    assert_eq!(p["errors"][0]["pointer"], "/link", "names /link: {p:#}");
    assert_eq!(log_size(&s), size, "a refusal wrote a leaf");

    // The worker submits its delivery.
    let (code, text) = play_message(&s, "submit", "alpha", &v1, Some(link));
    assert_eq!(code, 200, "{text}");
    assert!(
        text.lines().any(|l| l == format!("Delivery: {link}")),
        "{text}"
    );
    let (code, delivery, _) = post(
        &s,
        "/munus/alpha/submit",
        &json!({"vow_id": v1, "link": link, "signature": w.sign(&k1, &text)}),
    );
    assert_eq!(code, 201, "the delivery: {delivery:#}");
    assert_eq!(delivery["type"], "conduct.munus-delivery/v1");
    assert_eq!(delivery["claim"], alpha_claim);
    assert_eq!(delivery["link"], link);

    // 3. The operator pays: the exact amount to the worker for alpha; for bravo, a transfer
    // recorded with a wrong amount. Both rows are appended to paid.json (the bad row stays).
    let worker_two = w.address(&k2);
    let alpha_tx = pay(&anvil, &token, &worker, 1_500_000);
    let bravo_tx = pay(&anvil, &token, &worker_two, 1_000_000);
    // Delta is open and carries a payment row of a wrong amount (no claim named): false.
    let delta_tx = pay(&anvil, &token, &worker_two, 1_000_000);
    let row = |quest: &str, to: &str, amount: &str, tx: &str| json!({"quest": quest, "to": to, "amount_scry": amount, "token": token, "tx": tx});
    write_atomic(
        &paid_path,
        &serde_json::to_vec_pretty(&json!({"paid": [
            bad_row,
            row("alpha", &worker, "1500000", &alpha_tx),
            row("bravo", &worker_two, "999999", &bravo_tx),
            row("delta", &worker_two, "1", &delta_tx),
        ]}))
        .unwrap(),
    );
    let doc = await_board(
        &s,
        "alpha done and settled, bravo's and delta's rows false",
        |d| {
            d["paid"].as_array().is_some_and(|p| p.len() == 3)
                && quest(d, "alpha")["status"] == "done"
                && paid_row(d, &alpha_tx)["verified"] == true
                && paid_row(d, &bravo_tx)["verified"] == false
                && paid_row(d, &delta_tx)["verified"] == false
        },
    );
    let a = quest(&doc, "alpha");
    assert_eq!(
        a["claim"]["vow_id"],
        json!(v1),
        "settled with its claim: {a:#}"
    );
    assert_eq!(a["claim"]["delivery"]["link"], link, "{a:#}");
    assert_eq!(
        a["settled_by"]["payment_log_index"],
        paid_row(&doc, &alpha_tx)["log_index"],
        "{a:#}"
    );
    let r = paid_row(&doc, &alpha_tx);
    assert_eq!(
        (&r["quest_id"], &r["to"], &r["amount_scry"], &r["chain_id"]),
        (
            &json!("alpha"),
            &json!(worker),
            &json!("1500000"),
            &json!(31337)
        ),
        "{r:#}"
    );
    assert!(r["token"].as_str().unwrap().eq_ignore_ascii_case(&token));
    assert_eq!(quest(&doc, "bravo")["claim"]["log_index"], bravo_claim);
    assert_eq!(quest(&doc, "bravo")["status"], "open");
    // open: charlie, delta, echo; claimed: bravo; in house: foxtrot; delivered: alpha;
    // settled: alpha's row; unverified: bravo's and delta's.
    assert_eq!(counts(&doc), [3, 1, 1, 1, 1, 2, 0], "{doc:#}");
    assert_eq!(quest(&doc, "delta")["status"], "open", "{doc:#}");
    let paid_err = doc["paid_file_error"].as_str().unwrap_or_default();
    assert!(
        paid_err.contains("paid[0]") && !paid_err.contains("paid[1]"),
        "{paid_err}"
    );
    let (body, _) = claim_body(&s, &mut w, &k3, "alpha", &v3);
    refused(
        "a claim on a settled quest",
        claim(&s, "alpha", &body),
        409,
        "munus-quest-done",
    );

    // 4. The RPC stops answering: every row reads null and the counts say so.
    relay.set(false);
    let doc = await_board(&s, "every row null", |d| {
        d["paid"]
            .as_array()
            .is_some_and(|p| p.len() == 3 && p.iter().all(|r| r["verified"].is_null()))
    });
    // Every row counts as uncheckable, neither as settled nor as unverified: the rows say what
    // the chain said at the last read. Alpha stays done: the chain confirmed it before, and
    // "could not look" is never "not done" (MUNUS.md, "How a quest is paid").
    assert_eq!(counts(&doc), [3, 1, 1, 1, 0, 0, 3], "{doc:#}");
    assert_eq!(quest(&doc, "alpha")["status"], "done", "{doc:#}");
    let mut defects = Vec::new();
    let size = log_size(&s);
    // Delta's row reads null on the page, so delta takes no claim, though its last definite
    // read was false: the page and the decision read the same flags (MUNUS.md, "States").
    let (delta_body, _) = claim_body(&s, &mut w, &k4, "delta", &v4);
    refused(
        "a claim on delta while its payment reads null",
        claim(&s, "delta", &delta_body),
        503,
        "munus-payment-uncheckable",
    );
    assert_eq!(log_size(&s), size, "a refused claim wrote a leaf");
    let (code, p) = claim(&s, "alpha", &body);
    if !(code == 409 && p["type"] == "/library/ERRORS.md#munus-quest-done") {
        defects.push(format!(
            "a claim on the settled quest alpha while its payment reads null: expected 409 \
             munus-quest-done, got {code} {p:#}"
        ));
    }
    assert!(
        (400..600).contains(&code),
        "a claim on alpha in the outage was taken: {code} {p:#}"
    );
    assert_eq!(log_size(&s), size, "a refused claim wrote a leaf");
    relay.set(true);
    let doc = await_board(&s, "the flags back", |d| {
        quest(d, "alpha")["status"] == "done"
            && paid_row(d, &alpha_tx)["verified"] == true
            && paid_row(d, &bravo_tx)["verified"] == false
            && paid_row(d, &delta_tx)["verified"] == false
    });
    assert_eq!(counts(&doc), [3, 1, 1, 1, 1, 2, 0], "{doc:#}");

    // 5. A claim lapses after 14 idle days. Echo is claimed, the service stops and starts again
    // with its clock 14 days less 3 seconds ahead; nothing is asked of it until the list on
    // disk shows echo open again.
    let (echo_body, _) = claim_body(&s, &mut w, &k5, "echo", &v5);
    let (code, echo_rec) = claim(&s, "echo", &echo_body);
    assert_eq!(code, 201, "{echo_rec:#}");
    let echo_claim = echo_rec["log_index"].as_u64().unwrap();
    let echo_at = unix_of(&echo_rec["at"]);
    s.terminate();
    let offset = (LAPSE - 3).to_string();
    let s = Server::start_env(
        "serve",
        &data,
        &site,
        &["--config", cfg_arg.as_str()],
        &[("CONDUCT_CLOCK_OFFSET_SECONDS", offset.as_str())],
        None,
    );
    let restarted_wall = now_unix();
    let deadline = Instant::now() + Duration::from_secs(30);
    let on_disk = loop {
        let open = |d: &Value, id: &str| {
            d["quests"]
                .as_array()
                .and_then(|qs| qs.iter().find(|q| q["id"] == id))
                .is_some_and(|q| q["claim"].is_null() && q["status"] == "open")
        };
        // Bravo's claim carries a recorded payment (the wrong amount): it never lapses.
        let bravo_kept = |d: &Value| {
            let c = &quest(d, "bravo")["claim"];
            c["log_index"] == bravo_claim && c["lapses_at"].is_null()
        };
        if let Some(d) = board_on_disk(&site).filter(|d| open(d, "echo") && bravo_kept(d)) {
            break (d, now_unix());
        }
        assert!(
            Instant::now() < deadline,
            "echo never opened again on disk: {:#}",
            board_on_disk(&site).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let (on_disk, opened_wall) = on_disk;
    assert!(
        unix_of(&on_disk["at"]) >= echo_at + LAPSE,
        "rendered before the lapse instant: {}",
        on_disk["at"]
    );
    // The lapse records, dated exactly 14 days after the last activity (read from the log's
    // files, still asking nothing of the service).
    let log = site.join("log");
    let lapse_types = |r: &[Value]| -> Vec<Value> {
        r.iter()
            .filter(|v| v["type"] == "conduct.munus-lapse/v1")
            .cloned()
            .collect()
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    let lapses = loop {
        let lapses = board_records(&log).map(|r| lapse_types(&r));
        if let Some(l) = lapses
            .as_ref()
            .filter(|l| l.iter().any(|x| x["claim"] == echo_claim))
        {
            break l.clone();
        }
        assert!(
            Instant::now() < deadline,
            "the lapse of claim {echo_claim} (echo) is not in the log: {lapses:#?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    eprintln!(
        "restarted {restarted}s after echo's claim; echo opened on disk {opened}s after it",
        restarted = restarted_wall.saturating_sub(echo_at),
        opened = opened_wall.saturating_sub(echo_at),
    );
    let lapse_of = |claim: u64| {
        lapses
            .iter()
            .find(|l| l["claim"] == claim)
            .unwrap_or_else(|| panic!("no lapse of claim {claim}: {lapses:#?}"))
    };
    let l = lapse_of(echo_claim);
    assert_eq!(
        (&l["quest_id"], &l["vow_id"]),
        (&json!("echo"), &json!(v5)),
        "{l:#}"
    );
    assert_eq!(l["idle_since"], json!(rfc3339(echo_at)), "{l:#}");
    assert_eq!(
        l["at"],
        json!(rfc3339(echo_at + LAPSE)),
        "the claim's at + 14 d exactly"
    );
    assert!(
        lapses.iter().all(|l| l["claim"] != bravo_claim),
        "bravo's claim, paid (wrongly), lapsed: {lapses:#?}"
    );

    // The service agrees, once the flags are read again; a lapsed quest takes a claim again
    // (a new UTC day for the service: 14 days on).
    let doc = await_board(&s, "after the lapse", |d| {
        quest(d, "alpha")["status"] == "done"
            && paid_row(d, &alpha_tx)["verified"] == true
            && paid_row(d, &delta_tx)["verified"] == false
    });
    assert_eq!(counts(&doc), [3, 1, 1, 1, 1, 2, 0], "{doc:#}");
    let (body, text) = claim_body(&s, &mut w, &k5, "echo", &v5);
    assert!(
        text.lines().any(|l| l
            == format!("Date (UTC): {}", &rfc3339(now_unix() + LAPSE - 3)[..10])
            || l == format!("Date (UTC): {}", &rfc3339(now_unix() + LAPSE)[..10])),
        "the message is dated by the service's clock: {text}"
    );
    let (code, again) = claim(&s, "echo", &body);
    assert_eq!(code, 201, "echo claimed again: {again:#}");

    // The RPC stops answering again, now that alpha's delivery is more than 14 days old on the
    // service's clock: alpha is not known to be settled, but its claim must not lapse (it was
    // settled). A claim on alpha is refused as in the first outage and writes nothing.
    relay.set(false);
    await_board(&s, "every row null again", |d| {
        d["paid"]
            .as_array()
            .is_some_and(|p| p.iter().all(|r| r["verified"].is_null()))
    });
    let size = log_size(&s);
    let (body, _) = claim_body(&s, &mut w, &k3, "alpha", &v3);
    let (code, p) = claim(&s, "alpha", &body);
    let outage_size = log_size(&s);
    relay.set(true);
    await_board(&s, "the flags back again", |d| {
        quest(d, "alpha")["status"] == "done" && paid_row(d, &alpha_tx)["verified"] == true
    });
    assert!(
        (400..600).contains(&code),
        "a claim on the settled alpha in the second outage was taken: {code} {p:#}"
    );
    if !(code == 409 && p["type"] == "/library/ERRORS.md#munus-quest-done") {
        defects.push(format!(
            "a claim on the settled quest alpha in the second outage: expected 409 \
             munus-quest-done (its last definite answer stands), got {code} {p:#}"
        ));
    }
    if outage_size != size {
        defects.push(format!(
            "that refused claim changed the log size from {size} to {outage_size}"
        ));
    }
    // The settled quest's claim must not lapse, neither at the restart (its flag not read
    // yet) nor in the outage.
    let spurious: Vec<Value> = board_records(&log)
        .map(|r| lapse_types(&r))
        .unwrap_or_default()
        .into_iter()
        .filter(|l| l["claim"] == alpha_claim)
        .collect();
    if !spurious.is_empty() {
        defects.push(format!(
            "the settled quest alpha (its payment recorded and verified true) got a lapse \
             record for its claim {alpha_claim}: {spurious:#?}"
        ));
    }

    // 6. verify-log checks the board's records: 4 claims, 1 delivery, 3 payments, 1 lapse
    // (and any lapse of alpha's claim, reported above).
    let deadline = Instant::now() + Duration::from_secs(15);
    let audit = loop {
        let (ok, out) = verify_log(&log, &vkey);
        if ok && board_records(&log).is_some_and(|r| r.len() == 9 + spurious.len()) {
            break out;
        }
        assert!(Instant::now() < deadline, "verify-log: {out}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(
        audit.contains("6 vow chains")
            && audit.contains(&format!(
                "{} quest-board records verified",
                9 + spurious.len()
            )),
        "{audit}"
    );
    drop(s);
    // A copy with one board leaf changed (echo's first claim names another quest) fails.
    let copy = dir.path().join("log-copy");
    copy_dir(&log, &copy);
    let (ok, out) = verify_log(&copy, &vkey);
    assert!(ok, "the copy verifies before it is changed: {out}");
    let leaves = log_leaves(&copy).unwrap();
    let (rel, leaf) = &leaves[usize::try_from(echo_claim).unwrap()];
    assert!(
        String::from_utf8_lossy(leaf).contains("\"quest_id\":\"echo\""),
        "leaf {echo_claim} is echo's claim"
    );
    let bundle = std::fs::read(copy.join(rel)).unwrap();
    let at = bundle
        .windows(leaf.len())
        .position(|win| win == leaf.as_slice())
        .unwrap();
    let changed = String::from_utf8(leaf.clone())
        .unwrap()
        .replace("\"quest_id\":\"echo\"", "\"quest_id\":\"ecgo\"");
    let mut tampered = bundle.clone();
    tampered[at..at + leaf.len()].copy_from_slice(changed.as_bytes());
    std::fs::write(copy.join(rel), &tampered).unwrap();
    let (ok, out) = verify_log(&copy, &vkey);
    assert!(
        !ok && out.contains("quest board") && out.contains(&format!("leaf {echo_claim}")),
        "a changed board leaf was not caught: {out}"
    );
    eprintln!(
        "the quest board end to end: {:.1}s",
        started.elapsed().as_secs_f64()
    );
    assert!(defects.is_empty(), "{}", defects.join("\n"));
}
