//! `/mcp` end to end, as a new user meets it: the real `conduct serve` on loopback and the real,
//! pinned MCP clients the test command installs. PyPI `mcp` 2.3.0 in auto mode (it probes the
//! 2026-07-28 revision's `server/discover` first) and 1.30.0 (the initialize handshake), the
//! npm `@modelcontextprotocol/sdk` 1.32.2 client, and the inspector CLI 2.12.0 in its modern
//! era (2026-07-28 only, no fallback) and its auto era: each lists the eight tools, calls every
//! one with valid arguments, and gets results whose `structuredContent` is valid against the
//! tool's `outputSchema`. A vow taken and reported over MCP is in the signed ledger, and
//! `conduct verify-log` passes. Then, with plain HTTP: the discovery documents name the
//! endpoint, the protocol's refusals, Host and Origin behind a real domain, and the free caps
//! shared with the HTTP routes.

use std::path::{Path, PathBuf};
use std::process::Command;

use conduct_core::signing::{verify_object, PinnedKey};
use conduct_tests::{client, conduct_bin, python, trace, Server};
use serde_json::{json, Value};

/// The eight tools (library/MCP.md).
const TOOLS: [&str; 8] = [
    "about",
    "ask",
    "demo_profile",
    "get_reading",
    "list_vows",
    "read_ledger",
    "report_in",
    "take_vow",
];

/// The Accept every MCP POST carries.
const ACCEPT: &str = "application/json, text/event-stream";

fn contracts() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../contracts")
}

/// The Python of the venv with mcp 1.30.0 (tests/.tools/venv-mcp1).
fn python_mcp1() -> PathBuf {
    PathBuf::from(std::env::var("CONDUCT_TEST_PYTHON_MCP1").expect(
        "CONDUCT_TEST_PYTHON_MCP1 is not set: run the project's test command (tests/run.sh), \
         which installs mcp 1.30.0 in tests/.tools/venv-mcp1",
    ))
}

/// Run a client; its report (the last line of stdout, JSON).
fn report_of(what: &str, cmd: &mut Command) -> Value {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{what} failed:\n{stdout}\n{stderr}");
    let line = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{what}: {e}: {stdout}\n{stderr}"))
}

/// A client's report says: the eight tools listed, each with a title; every tool called,
/// answered without error, with structured content valid against its output schema and the
/// same JSON as text. Returns the vow it took.
fn check_report(what: &str, r: &Value) -> String {
    let mut tools: Vec<&str> = r["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{what}: {r}"))
        .iter()
        .filter_map(Value::as_str)
        .collect();
    tools.sort_unstable();
    assert_eq!(tools, TOOLS, "{what} listed");
    for name in TOOLS {
        let c = &r["calls"][name];
        assert_eq!(c["is_error"], false, "{what} {name}: {c}");
        assert_eq!(c["structured"], true, "{what} {name}: {c}");
        assert_eq!(c["schema_errors"], json!([]), "{what} {name}: {c}");
        assert_eq!(c["text_matches"], true, "{what} {name}: {c}");
    }
    assert_eq!(r["calls"]["take_vow"]["type"], "conduct.vow/v1");
    assert_eq!(r["calls"]["report_in"]["type"], "conduct.entry/v1");
    r["vow_id"].as_str().expect("vow_id").to_owned()
}

/// The inspector CLI (`mcp-inspector --cli`) in `era`: one process per method, as a user runs
/// it. Its JSON output.
fn inspector(home: &Path, url: &str, era: &str, args: &[&str]) -> Value {
    let out = Command::new("node")
        .arg(contracts().join("node_modules/.bin/mcp-inspector"))
        .args(["--cli", url, "--protocol-era", era])
        .args(args)
        .args(["--format", "json", "-q"])
        .env("HOME", home)
        .env("MCP_CATALOG_PATH", home.join("mcp.json"))
        .env("npm_config_update_notifier", "false")
        .output()
        .expect("run the inspector (tests/tools.sh installs it)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "inspector {era} {args:?}: {stdout}\n{stderr}"
    );
    let v: Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("inspector {era} {args:?}: {e}: {stdout}"));
    v["result"].clone()
}

/// The inspector in `era`: list, then call every tool; each result is checked here against the
/// output schema it listed. Returns the vow it took.
fn inspector_session(home: &Path, url: &str, era: &str, trace: &Value) -> String {
    let listed = inspector(home, url, era, &["--method", "tools/list"]);
    let tools = listed["tools"].as_array().expect("tools");
    let mut names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, TOOLS, "inspector {era} listed");
    let schema = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .map(|t| t["outputSchema"].clone())
            .expect("listed")
    };
    for t in tools {
        assert!(
            t["title"].is_string() && t["description"].is_string(),
            "{t}"
        );
        assert_eq!(t["inputSchema"]["type"], "object", "{t}");
    }
    let agent = format!("inspector-{era}");
    let call = |name: &str, args: Value| -> Value {
        let r = inspector(
            home,
            url,
            era,
            &[
                "--method",
                "tools/call",
                "--tool-name",
                name,
                "--tool-args-json",
                &args.to_string(),
            ],
        );
        assert_ne!(r["isError"], true, "inspector {era} {name}: {r}");
        let sc = r["structuredContent"].clone();
        let validator = jsonschema::draft202012::new(&schema(name)).expect("output schema");
        let errors: Vec<String> = validator.iter_errors(&sc).map(|e| e.to_string()).collect();
        assert!(
            errors.is_empty(),
            "inspector {era} {name}: {errors:?}\n{sc}"
        );
        let text: Value = serde_json::from_str(r["content"][0]["text"].as_str().expect("text"))
            .expect("the text is JSON");
        assert!(
            same_json(&text, &sc),
            "inspector {era} {name}: text and structured content differ:\n{text}\n{sc}"
        );
        sc
    };
    call("about", json!({}));
    let vow = call(
        "take_vow",
        json!({"text": "Summarise documents faithfully.", "agent": agent, "cadence_hours": 24}),
    );
    let id = vow["vow_id"].as_str().expect("vow_id").to_owned();
    let mut report = trace.clone();
    report["vow_id"] = json!(id);
    call("report_in", report);
    call("read_ledger", json!({"vow_id": id}));
    call("get_reading", json!({"vow_id": id}));
    call("list_vows", json!({}));
    call("demo_profile", trace.clone());
    call("ask", json!({"question": "What does a reading say?"}));
    id
}

/// The same JSON, numbers compared by value (a JavaScript client prints 24.0 as 24).
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_json(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}

/// POST a JSON-RPC message to `/mcp` (`version`: the `MCP-Protocol-Version` header).
fn rpc(s: &Server, body: &Value, version: Option<&str>) -> reqwest::blocking::Response {
    let mut req = client()
        .post(s.at("/mcp"))
        .header("content-type", "application/json")
        .header("accept", ACCEPT);
    if let Some(v) = version {
        req = req.header("mcp-protocol-version", v);
    }
    req.body(body.to_string()).send().expect("POST /mcp")
}

/// `tools/call` over plain HTTP: the JSON-RPC answer.
fn call(s: &Server, name: &str, args: Value) -> Value {
    let r = rpc(
        s,
        &json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                "params": {"name": name, "arguments": args}}),
        Some("2025-11-25"),
    );
    assert_eq!(r.status(), 200);
    assert!(r.headers().get("mcp-session-id").is_none());
    r.json().expect("JSON-RPC")
}

#[test]
fn real_clients_list_and_call_every_tool_and_the_vows_verify() {
    let s = Server::start(&[]);
    let dir = tempfile::tempdir().expect("tempdir");
    let url = s.at("/mcp");
    let t = trace(64);
    let trace_file = dir.path().join("trace.json");
    std::fs::write(&trace_file, t.to_string()).expect("write the trace");
    // ask dispatches POST /oracle/ask: the route is on this instance.
    let catalog: Value = client()
        .get(s.at("/catalog"))
        .send()
        .expect("GET /catalog")
        .json()
        .expect("JSON");
    let listed = |m: &str, p: &str| {
        catalog["endpoints"]
            .as_array()
            .expect("endpoints")
            .iter()
            .any(|e| e["method"] == m && e["path"] == p)
    };
    assert!(listed("POST", "/mcp") && listed("POST", "/oracle/ask"));

    let mut vows = Vec::new();
    let py = |py: PathBuf, agent: &str, mode: &str| {
        let mut c = Command::new(py);
        c.arg(conduct_tests::py_dir().join("mcp_client.py"))
            .arg(&url)
            .arg(&trace_file)
            .args([agent, mode]);
        c
    };
    let r = report_of("mcp 2.3.0", &mut py(python(), "py-mcp2", "auto"));
    assert_eq!(r["sdk"], "mcp 2.3.0");
    // Auto mode probed server/discover and adopted the 2026-07-28 revision: no fallback.
    assert_eq!(r["protocol"], "2026-07-28", "{r}");
    vows.push(check_report("mcp 2.3.0", &r));

    let r = report_of("mcp 1.30.0", &mut py(python_mcp1(), "py-mcp1", "legacy"));
    assert_eq!(r["sdk"], "mcp 1.30.0");
    assert_eq!(r["protocol"], "2025-11-25", "{r}");
    assert!(r["session"].is_null(), "stateless: no session id, {r}");
    vows.push(check_report("mcp 1.30.0", &r));

    let r = report_of(
        "@modelcontextprotocol/sdk",
        Command::new("node")
            .arg(contracts().join("clients/mcp-client.mjs"))
            .arg(&url)
            .arg(&trace_file)
            .arg("ts-sdk"),
    );
    assert_eq!(r["protocol"], "2025-11-25", "{r}");
    assert!(r["session"].is_null(), "stateless: no session id, {r}");
    assert_eq!(
        r["withOutputSchema"].as_array().map(Vec::len),
        Some(8),
        "{r}"
    );
    vows.push(check_report("@modelcontextprotocol/sdk", &r));

    let home = dir.path().join("inspector-home");
    std::fs::create_dir_all(&home).expect("inspector home");
    for era in ["modern", "auto"] {
        vows.push(inspector_session(&home, &url, era, &t));
    }

    // Every vow taken and reported over MCP is in its signed chain: the vow, then the entry.
    let pinned = PinnedKey::parse(&s.vkey()).expect("vkey");
    for id in &vows {
        let chain: Value = client()
            .get(s.at(&format!("/vow/{id}/chain")))
            .send()
            .expect("GET chain")
            .json()
            .expect("JSON");
        assert_eq!(chain["length"], 1, "one report-in: {chain}");
        let tail = chain["tail"].as_array().expect("tail");
        assert_eq!(tail.len(), 2, "{chain}");
        assert_eq!(tail[0]["type"], "conduct.vow/v1");
        assert_eq!(tail[0]["sandbox"], true, "a vow over MCP is sandbox");
        assert_eq!(tail[1]["type"], "conduct.entry/v1");
        assert_eq!(
            tail[1]["attested"], false,
            "a report-in over MCP is the free tier"
        );
        for record in tail {
            verify_object(record, &pinned).expect("the record verifies");
        }
    }
    // The tools answer exactly what the routes answer: the same bytes.
    let id = &vows[0];
    for (tool, args, path) in [
        (
            "read_ledger",
            json!({"vow_id": id}),
            format!("/vow/{id}/chain"),
        ),
        (
            "get_reading",
            json!({"vow_id": id}),
            format!("/vow/{id}/reading"),
        ),
        ("list_vows", json!({}), "/vows".to_owned()),
        ("about", json!({}), "/".to_owned()),
    ] {
        let over_mcp = call(&s, tool, args);
        let over_http = client()
            .get(s.at(&path))
            .header("accept", "application/json")
            .send()
            .expect("GET")
            .text()
            .expect("text");
        assert_eq!(
            over_mcp["result"]["content"][0]["text"], over_http,
            "{tool} answers what GET {path} answers"
        );
        let parsed: Value = serde_json::from_str(&over_http).expect("JSON");
        assert_eq!(over_mcp["result"]["structuredContent"], parsed);
        verify_object(&parsed, &pinned).expect("signed like the route");
    }
    // The log verifies offline, every vow chain in it.
    let out = Command::new(conduct_bin())
        .arg("verify-log")
        .arg(s.site.join("log"))
        .args(["--pubkey", &s.vkey()])
        .output()
        .expect("conduct verify-log");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "verify-log: {stdout}");
}

#[test]
fn the_protocol_refuses_per_the_spec() {
    let s = Server::start(&[]);
    let c = client();
    // A new user finds the endpoint: the agent card, /lost, /llms.txt and the library.
    let get = |path: &str| {
        let r = c.get(s.at(path)).send().expect("GET");
        assert_eq!(r.status(), 200, "{path}");
        r.text().expect("text")
    };
    let card: Value = serde_json::from_str(&get("/.well-known/agent.json")).expect("JSON");
    assert_eq!(
        card["mcp"]["url"],
        format!("{}/mcp", s.url.replace("127.0.0.1", "localhost"))
    );
    assert_eq!(card["mcp"]["tools"].as_array().map(Vec::len), Some(8));
    let lost: Value = serde_json::from_str(&get("/lost?format=json")).expect("JSON");
    assert!(lost["questions"]
        .as_array()
        .expect("questions")
        .iter()
        .flat_map(|q| q["endpoints"].as_array().cloned().unwrap_or_default())
        .any(|e| e["path"] == "/mcp" && e["on_this_instance"] == true));
    assert!(get("/llms.txt").contains("## MCP"));
    assert!(get("/library/MCP.md").contains("\"mcpServers\""));
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    // GET (no listen stream: stateless) and DELETE (no session to end): 405 with Allow.
    for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
        let r = c
            .request(method.clone(), s.at("/mcp"))
            .header("accept", "text/event-stream")
            .send()
            .expect("request");
        assert_eq!(r.status(), 405, "{method}");
        let allow = r.headers()["allow"].to_str().expect("Allow");
        assert!(allow.contains("POST"), "{method}: Allow {allow}");
    }
    // A present, foreign Origin: 403; the service's own origin is fine; no Origin is fine.
    let post = |origin: Option<&str>| {
        let mut r = c
            .post(s.at("/mcp"))
            .header("content-type", "application/json")
            .header("accept", ACCEPT);
        if let Some(o) = origin {
            r = r.header("origin", o);
        }
        r.body(list.to_string()).send().expect("POST")
    };
    let r = post(Some("https://evil.example"));
    assert_eq!(r.status(), 403);
    let p: Value = r.json().expect("problem");
    assert_eq!(p["type"], "/library/ERRORS.md#mcp-forbidden", "{p}");
    let own = s.url.replace("127.0.0.1", "localhost");
    assert_eq!(post(Some(&own)).status(), 200, "{own}");
    assert_eq!(post(None).status(), 200);
    // This machine under any loopback name at the public URL's scheme and port is the same
    // origin; another port or scheme on it is a different site.
    let port = s.url.rsplit(':').next().expect("port");
    for (origin, status) in [
        (format!("http://127.0.0.1:{port}"), 200),
        (format!("http://[::1]:{port}"), 200),
        ("http://localhost:1".to_owned(), 403),
        (format!("https://127.0.0.1:{port}"), 403),
    ] {
        assert_eq!(post(Some(&origin)).status(), status, "Origin {origin}");
    }
    // A Host that is neither the public URL's nor loopback (DNS rebinding): 403.
    let r = c
        .post(s.at("/mcp"))
        .header("host", "rebound.example")
        .header("content-type", "application/json")
        .header("accept", ACCEPT)
        .body(list.to_string())
        .send()
        .expect("POST");
    assert_eq!(r.status(), 403);
    // An unsupported MCP-Protocol-Version: 400.
    let r = rpc(&s, &list, Some("1999-01-01"));
    assert_eq!(r.status(), 400);
    let p: Value = r.json().expect("problem");
    assert_eq!(p["type"], "/library/ERRORS.md#mcp-bad-request", "{p}");
    // Every supported revision lists the tools.
    for v in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
        let r = rpc(&s, &list, Some(v));
        assert_eq!(r.status(), 200, "{v}");
        let a: Value = r.json().expect("JSON-RPC");
        assert_eq!(
            a["result"]["tools"].as_array().map(Vec::len),
            Some(8),
            "{v}: {a}"
        );
    }
    // initialize echoes a supported version and names the server; no session is issued.
    let r = rpc(
        &s,
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "curl", "version": "1"}}}),
        None,
    );
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "application/json");
    assert!(r.headers().get("mcp-session-id").is_none());
    let a: Value = r.json().expect("JSON-RPC");
    assert_eq!(a["id"], 0);
    assert_eq!(a["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(a["result"]["serverInfo"]["name"], "conduct");
    assert!(a["result"]["capabilities"]["tools"].is_object());
    // The 2026-07-28 revision's discovery answers directly.
    let r = c
        .post(s.at("/mcp"))
        .header("content-type", "application/json")
        .header("accept", ACCEPT)
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "server/discover")
        .body(
            json!({"jsonrpc": "2.0", "id": "d", "method": "server/discover", "params": {"_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "curl", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {}}}})
            .to_string(),
        )
        .send()
        .expect("POST");
    assert_eq!(r.status(), 200);
    let a: Value = r.json().expect("JSON-RPC");
    assert_eq!(a["id"], "d");
    let versions = a["result"]["supportedVersions"].to_string();
    assert!(versions.contains("2026-07-28"), "{a}");
    // A notification is accepted without an answer.
    let r = rpc(
        &s,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        Some("2025-11-25"),
    );
    assert_eq!(r.status(), 202);
    assert!(r.bytes().expect("body").is_empty());
    // An unknown method: -32601; an unknown tool: -32602 (a JSON-RPC error, not a result).
    let a: Value = rpc(
        &s,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "resources/nope"}),
        Some("2025-11-25"),
    )
    .json()
    .expect("JSON-RPC");
    assert_eq!(a["error"]["code"], -32601, "{a}");
    let a = call(&s, "transfer_funds", json!({}));
    assert_eq!(a["error"]["code"], -32602, "{a}");
    // Bad arguments: a result with isError, the route's problem as text, no structured content.
    for (tool, args, pointer) in [
        ("take_vow", json!({"agent": "a", "cadence_hours": 24}), ""),
        (
            "read_ledger",
            json!({"vow_id": "../../manifest"}),
            "/vow_id",
        ),
        ("list_vows", json!({"page": "one"}), "/page"),
    ] {
        let a = call(&s, tool, args);
        assert_eq!(a["result"]["isError"], true, "{tool}: {a}");
        assert!(a["result"].get("structuredContent").is_none(), "{a}");
        let p: Value = serde_json::from_str(a["result"]["content"][0]["text"].as_str().unwrap())
            .expect("a problem");
        assert_eq!(p["status"], 422, "{p}");
        assert_eq!(p["errors"][0]["pointer"], pointer, "{p}");
    }
    // Nothing over MCP moves money or binds a wallet: a wallet is not an argument of take_vow.
    let a = call(
        &s,
        "take_vow",
        json!({"text": "t", "agent": "a", "cadence_hours": 24,
               "wallet": "0x0000000000000000000000000000000000000001",
               "signature": format!("0x{}", "11".repeat(65))}),
    );
    assert_eq!(a["result"]["isError"], true, "{a}");
    // A route's refusal is the tool's: an unknown vow is the route's 404 problem, for each
    // of the three tools that name a vow (MCP.md), and over plain HTTP for its pages.
    for (tool, args) in [
        (
            "report_in",
            json!({"vow_id": "0123456789abcdef", "context_key": "monitored",
                   "turns": trace(16)["turns"]}),
        ),
        ("read_ledger", json!({"vow_id": "0123456789abcdef"})),
        ("get_reading", json!({"vow_id": "0123456789abcdef"})),
    ] {
        let a = call(&s, tool, args);
        assert_eq!(a["result"]["isError"], true, "{tool}: {a}");
        let p: Value =
            serde_json::from_str(a["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(p["status"], 404, "{tool}: {p}");
        assert_eq!(p["type"], "/library/ERRORS.md#unknown-vow", "{tool}: {p}");
    }
    for path in [
        "/vow/0123456789abcdef",
        "/vow/0123456789abcdef/chain",
        "/vow/0123456789abcdef/reading",
        "/vow/0123456789abcdef.html",
    ] {
        let r = c.get(s.at(path)).send().unwrap();
        assert_eq!(r.status().as_u16(), 404, "{path}");
        let p: Value = r.json().unwrap();
        assert_eq!(p["type"], "/library/ERRORS.md#unknown-vow", "{path}: {p}");
    }
    // Not JSON: -32700; JSON but no JSON-RPC message (a batch): -32600.
    for (body, code) in [("{\"jsonrpc\": \"2.0\",", -32700), ("[1, 2]", -32600)] {
        let r = c
            .post(s.at("/mcp"))
            .header("content-type", "application/json")
            .header("accept", ACCEPT)
            .body(body)
            .send()
            .expect("POST");
        assert_eq!(r.status(), 400, "{body}");
        let a: Value = r.json().expect("JSON-RPC");
        assert_eq!(a["error"]["code"], code, "{body}: {a}");
        assert!(a["id"].is_null());
    }
    // Without Accept of both JSON and event streams: 406; not JSON: 415.
    let r = c
        .post(s.at("/mcp"))
        .header("content-type", "application/json")
        .body(list.to_string())
        .send()
        .expect("POST");
    assert_eq!(r.status(), 406);
    let r = c
        .post(s.at("/mcp"))
        .header("content-type", "text/plain")
        .header("accept", ACCEPT)
        .body(list.to_string())
        .send()
        .expect("POST");
    assert_eq!(r.status(), 415);
    // A body over 4 MiB: 413, before anything reads it as JSON-RPC.
    let big = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{{\"x\":\"{}\"}}}}",
        "a".repeat(4 * 1024 * 1024)
    );
    let r = c
        .post(s.at("/mcp"))
        .header("content-type", "application/json")
        .header("accept", ACCEPT)
        .body(big)
        .send()
        .expect("POST");
    assert_eq!(r.status(), 413);
    let p: Value = r.json().expect("problem");
    assert_eq!(p["type"], "/library/ERRORS.md#too-large");
}

#[test]
fn calls_over_mcp_count_against_the_http_caps() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = dir.path().join("conduct.toml");
    std::fs::write(&cfg, "vow_daily_cap = 1\ndemo_daily_cap = 1\n").expect("conduct.toml");
    // Behind a real domain: Host and Origin follow public_url.
    let s = Server::start_in(
        &dir.path().join("data"),
        &dir.path().join("site"),
        &[
            "--config",
            cfg.to_str().expect("utf-8"),
            "--public-url",
            "https://conduct.example",
        ],
    );
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    for (host, origin, status) in [
        ("conduct.example", None, 200),
        ("conduct.example", Some("https://conduct.example"), 200),
        ("conduct.example", Some("http://conduct.example"), 403),
        ("conduct.example", Some(s.url.as_str()), 403),
        ("other.example", None, 403),
    ] {
        let mut r = client()
            .post(s.at("/mcp"))
            .header("host", host)
            .header("content-type", "application/json")
            .header("accept", ACCEPT);
        if let Some(o) = origin {
            r = r.header("origin", o);
        }
        let r = r.body(ping.to_string()).send().expect("POST");
        assert_eq!(r.status(), status, "Host {host}, Origin {origin:?}");
    }
    // One vow over MCP, then POST /vow from the same address: the second is 429.
    let a = call(
        &s,
        "take_vow",
        json!({"text": "ship it", "agent": "capped", "cadence_hours": 24}),
    );
    assert_ne!(a["result"]["isError"], true, "{a}");
    let r = client()
        .post(s.at("/vow"))
        .json(&json!({"text": "ship it", "agent": "capped-too", "cadence_hours": 24}))
        .send()
        .expect("POST /vow");
    assert_eq!(r.status(), 429);
    assert!(r.headers().get("retry-after").is_some());
    // One demo over HTTP, then demo_profile over MCP: refused with the route's 429 problem.
    let t = trace(32);
    let r = client()
        .post(s.at("/demo/profile"))
        .json(&t)
        .send()
        .expect("POST /demo/profile");
    assert_eq!(r.status(), 200);
    let a = call(&s, "demo_profile", t);
    assert_eq!(a["result"]["isError"], true, "{a}");
    let p: Value =
        serde_json::from_str(a["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(p["status"], 429, "{p}");
    assert_eq!(p["type"], "/library/ERRORS.md#rate-limited");
    // A refused call spent nothing: reads still answer.
    let a = call(&s, "list_vows", json!({}));
    assert_eq!(a["result"]["structuredContent"]["count"], 1, "{a}");
}
