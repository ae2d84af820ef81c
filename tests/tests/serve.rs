//! `conduct serve` end to end over loopback: the static tree, the demo profile, the 402
//! challenge, bad input of every kind, caps, methods, and a clean SIGTERM shutdown.

use base64::Engine;
use conduct_tests::{client, trace, Server};
use reqwest::blocking::Response;
use serde_json::{json, Value};

fn problem(resp: Response, status: u16) -> Value {
    assert_eq!(resp.status().as_u16(), status, "status");
    let ct = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    assert_eq!(ct, "application/problem+json");
    let body: Value = resp.json().expect("problem body is JSON");
    assert_eq!(body["status"], status);
    assert!(body["title"].is_string() && body["detail"].is_string());
    assert!(
        body["scope"]["off_meter_blind_spot"].is_string(),
        "scope missing"
    );
    body
}

fn first_pointer(p: &Value) -> String {
    p["errors"][0]["pointer"].as_str().unwrap_or("").to_owned()
}

#[test]
fn serves_the_rendered_tree_with_negotiation() {
    let s = Server::start(&[]);
    let c = client();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let key = s.data.join("keys/ed25519.seed");
        let mode = std::fs::metadata(&key).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "key file mode");
    }
    for path in [
        "/",
        "/catalog",
        "/pubkey",
        "/predicates",
        "/schemas/trace.json",
        "/schemas/attestation.json",
        "/.well-known/x402.json",
        "/.well-known/agent.json",
        "/library",
        "/manifest.json",
    ] {
        let r = c.get(s.at(path)).send().unwrap();
        assert_eq!(r.status(), 200, "{path}");
        let v: Value = r.json().unwrap_or_else(|e| panic!("{path}: {e}"));
        assert!(v["signature"].is_string(), "{path} is not signed");
        // The scope statement travels in every JSON body (a schema keeps it as an
        // annotation; the manifest is the one listing that does not).
        if path != "/manifest.json" {
            assert!(
                v["scope"]["off_meter_blind_spot"].is_string(),
                "{path} carries no scope"
            );
        }
    }
    let html = c
        .get(s.at("/"))
        .header("accept", "text/html,application/xhtml+xml,*/*;q=0.8")
        .send()
        .unwrap();
    assert_eq!(html.status(), 200);
    assert!(html.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    assert_eq!(html.headers()["vary"], "Accept");
    let text = html.text().unwrap();
    assert!(text.contains("<main"));
    assert!(text.contains("does not attest that the trace faithfully records"));
    let md = c.get(s.at("/library/METER.md")).send().unwrap();
    assert_eq!(md.status(), 200);
    assert!(md.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/markdown"));
    let page = c
        .get(s.at("/library/METER"))
        .header("accept", "text/html")
        .send()
        .unwrap();
    assert_eq!(page.status(), 200);
    assert_eq!(
        c.get(s.at("/catalog?format=html"))
            .send()
            .unwrap()
            .headers()["content-type"],
        "text/html; charset=utf-8"
    );
}

#[test]
fn catalog_is_the_route_table() {
    let s = Server::start(&[]);
    let c = client();
    let cat: Value = c.get(s.at("/catalog")).send().unwrap().json().unwrap();
    let eps = cat["endpoints"].as_array().unwrap();
    let find = |m: &str, p: &str| eps.iter().find(|e| e["method"] == m && e["path"] == p);
    assert_eq!(find("POST", "/profile").unwrap()["paid"], true);
    assert_eq!(find("POST", "/demo/profile").unwrap()["paid"], false);
    assert_eq!(find("GET", "/health").unwrap()["paid"], false);
    let vow: Value = c
        .post(s.at("/vow"))
        .json(&json!({"text": "serve", "agent": "a", "cadence_hours": 24}))
        .send()
        .unwrap()
        .json()
        .unwrap();
    let report_q = format!(
        "?vow_id={}&trace_sha256={}",
        vow["vow_id"].as_str().unwrap(),
        "0".repeat(64)
    );
    let bind_q = format!(
        "?vow_id={}&npub=npub10elfcs4fr0l0r8af98jlmgdh9c8tcxjvz9qkw038js35mp4dma8qzvjptg",
        vow["vow_id"].as_str().unwrap()
    );
    let pledge_q = format!(
        "?vow_id={}&limits=0x5FbDB2315678afecb367f032d93F642f64180aa3:1000:100",
        vow["vow_id"].as_str().unwrap()
    );
    let familiar_q = format!(
        "?wallet=0x5FbDB2315678afecb367f032d93F642f64180aa3&order={}",
        "0".repeat(64)
    );
    // Every concrete GET path of the catalog answers 200.
    for e in eps.iter().filter(|e| e["method"] == "GET") {
        let p = e["path"].as_str().unwrap();
        if p.contains('{') {
            continue;
        }
        if p == "/play/message" {
            // It names a quest, and this instance has none: a named 404 (tests/tests/munus.rs
            // gets its 200s).
            let r = c
                .get(s.at(&format!(
                    "{p}?action=claim&quest=none&vow_id={}",
                    vow["vow_id"].as_str().unwrap()
                )))
                .send()
                .unwrap();
            let v = problem(r, 404);
            assert_eq!(v["type"], "/library/ERRORS.md#munus-unknown-quest", "{v}");
            continue;
        }
        // The GETs whose parameters are required.
        let q = match p {
            "/vow/message" => "?text=serve&agent=a&cadence_hours=24",
            "/card" => "?key=someone",
            "/who" => "?handle=someone",
            "/vow/report/message" => &report_q,
            "/nostr/bind/message" => &bind_q,
            "/witness/pledge/message" => &pledge_q,
            "/familiar/message" => &familiar_q,
            _ => "",
        };
        assert_eq!(
            c.get(s.at(&format!("{p}{q}"))).send().unwrap().status(),
            200,
            "{p}"
        );
    }
    // A POST route answers its method; the wrong method gets 405 with Allow.
    let r = c.get(s.at("/profile")).send().unwrap();
    assert_eq!(r.headers()["allow"], "POST, OPTIONS");
    problem(r, 405);
    problem(c.post(s.at("/catalog")).body("{}").send().unwrap(), 405);
    problem(c.get(s.at("/no/such/thing")).send().unwrap(), 404);
    problem(
        c.get(s.at("/../data/keys/ed25519.seed")).send().unwrap(),
        404,
    );
}

#[test]
fn demo_profile_returns_the_unsigned_shape() {
    let s = Server::start(&[]);
    let r = client()
        .post(s.at("/demo/profile"))
        .json(&trace(200))
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);
    let v: Value = r.json().unwrap();
    assert_eq!(v["type"], "conduct.attestation/v1");
    assert!(v.get("signature").is_none());
    assert_eq!(v["n_turns"], 200);
    assert_eq!(v["trace_sha256"].as_str().unwrap().len(), 64);
    for k in ["i_c_d", "i_c_m", "i_c_m_given_d_clean", "i_c_dm"] {
        let q = &v["profile"][k];
        for f in [
            "n", "columns", "table", "bits", "emi", "adjusted", "ami", "p", "p_method",
        ] {
            assert!(q.get(f).is_some(), "{k}.{f} missing");
        }
    }
    assert!(v["profile"]["i_c_d"]["direction"].is_number());
    assert_eq!(v["scope"].as_object().unwrap().len(), 4);
}

#[test]
fn thousand_turns_reproduce_with_an_independent_implementation() {
    let s = Server::start(&[]);
    let r = client()
        .post(s.at("/demo/profile"))
        .json(&trace(1000))
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);
    let body = r.text().unwrap();
    let mut child = std::process::Command::new(conduct_tests::python())
        .arg(conduct_tests::py_dir().join("estimators.py"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(body.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "independent estimators disagree:\n{report}"
    );
    assert!(
        report.contains("p_method=exact"),
        "no exact p was checked:\n{report}"
    );
}

#[test]
fn bad_input_gets_problem_json_naming_the_field_and_the_server_keeps_serving() {
    let s = Server::start(&["--demo-daily-cap", "0"]);
    let c = client();
    let post = |body: Vec<u8>| {
        c.post(s.at("/demo/profile"))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .unwrap()
    };
    let ok_turn = json!({"Y":"a","M":"b","D":"clean","context":{"monitored":0}});

    let p = problem(
        post(b"{\"context_key\": \"monitored\", \"turns\": [".to_vec()),
        400,
    );
    assert!(p["detail"].as_str().unwrap().contains("malformed JSON"));

    let p = problem(post(br#"{"context_key":"monitored","turns":[{"Y":1,"M":"b","D":"c","context":{"monitored":0}}]}"#.to_vec()), 422);
    assert_eq!(first_pointer(&p), "/turns/0/Y");

    let p = problem(
        post(
            br#"{"context_key":"monitored","turns":[{"Y":"a","M":"b","context":{"monitored":0}}]}"#
                .to_vec(),
        ),
        422,
    );
    assert_eq!(first_pointer(&p), "/turns/0");
    assert!(p["detail"].as_str().unwrap().contains("`D`"));

    let p = problem(post(br#"{"turns":[]}"#.to_vec()), 422);
    assert!(p["detail"].as_str().unwrap().contains("context_key"));

    let mut turns = vec![ok_turn.clone(); 20];
    turns[17] = json!({"Y":"a","M":"b","D":"c","context":{"monitored":2}});
    let p = problem(
        post(serde_json::to_vec(&json!({"context_key":"monitored","turns":turns})).unwrap()),
        422,
    );
    assert_eq!(first_pointer(&p), "/turns/17/context/monitored");

    let many = json!({"context_key":"monitored","turns": vec![ok_turn.clone(); 10_001]});
    let p = problem(post(serde_json::to_vec(&many).unwrap()), 422);
    assert_eq!(first_pointer(&p), "/turns");

    let big = vec![b' '; 5 * 1024 * 1024];
    problem(post(big), 413);

    let p = problem(
        post(br#"{"context_key":"monitored","turns":[{"Y":"a","M":"\ud800","D":"c","context":{"monitored":0}}]}"#.to_vec()),
        400,
    );
    assert_eq!(first_pointer(&p), "/turns/0/M");

    let p = problem(post(br#"{"context_key":"monitored","turns":[{"Y":"a","M":"b","D":"c","context":{"monitored":0}}],"disclosure":{"predicate":{"metric":"nope","band":"under_0.05"}}}"#.to_vec()), 422);
    assert_eq!(first_pointer(&p), "/disclosure/predicate/metric");

    problem(post(b"[1,2,3]".to_vec()), 422);
    problem(post(vec![0xff, 0xfe, 0x00]), 400);

    // The server is still there and still scores.
    assert_eq!(c.get(s.at("/health")).send().unwrap().status(), 200);
    let r = post(serde_json::to_vec(&trace(10)).unwrap());
    assert_eq!(r.status(), 200);
}

#[test]
fn paid_profile_without_payment_is_a_402_challenge() {
    let s = Server::start(&[]);
    let c = client();
    for header in [
        None,
        Some(("X-PAYMENT", "garbage")),
        Some(("PAYMENT-SIGNATURE", "e30=")),
    ] {
        let mut req = c.post(s.at("/profile")).json(&trace(20));
        if let Some((k, v)) = header {
            req = req.header(k, v);
        }
        let r = req.send().unwrap();
        assert_eq!(r.status(), 402);
        assert_eq!(r.headers()["cache-control"], "no-store");
        let exposed = r.headers()["access-control-expose-headers"]
            .to_str()
            .unwrap();
        assert!(exposed.contains("PAYMENT-REQUIRED") && exposed.contains("PAYMENT-RESPONSE"));
        let pr = r.headers()["payment-required"].to_str().unwrap().to_owned();
        assert!(r.bytes().unwrap().is_empty(), "402 body must be empty");
        let doc: Value = serde_json::from_slice(
            &base64::engine::general_purpose::STANDARD
                .decode(pr)
                .unwrap(),
        )
        .unwrap();
        assert_eq!(doc["x402Version"], 2);
        let port = s.url.rsplit(':').next().unwrap();
        assert_eq!(
            doc["resource"]["url"],
            format!("http://localhost:{port}/profile")
        );
        assert_eq!(doc["accepts"], json!([]));
        assert!(doc["error"].is_string());
    }
    // Bad input is refused before any money is asked for.
    let r = c.post(s.at("/profile")).body("{}").send().unwrap();
    problem(r, 422);
}

#[test]
fn demo_cap_answers_429_with_retry_after() {
    let s = Server::start(&["--demo-daily-cap", "3"]);
    let c = client();
    for _ in 0..3 {
        let r = c
            .post(s.at("/demo/profile"))
            .json(&trace(10))
            .send()
            .unwrap();
        assert_eq!(r.status(), 200);
    }
    let r = c
        .post(s.at("/demo/profile"))
        .json(&trace(10))
        .send()
        .unwrap();
    let retry: u64 = r.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(retry > 0 && retry <= 86_400);
    problem(r, 429);
}

#[test]
fn live_chain_reads_and_owner_writes_have_their_own_daily_caps() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("conduct.toml");
    std::fs::write(&cfg, "lookup_daily_cap = 2\nowner_daily_cap = 1\n").unwrap();
    let s = Server::start(&["--config", cfg.to_str().unwrap()]);
    let c = client();
    let wallet = format!("0x{}", "ab".repeat(20));
    // Served (no reputation contract here: a negative answer, 200): each counts.
    for _ in 0..2 {
        let r = c
            .get(s.at(&format!("/reputation/{wallet}")))
            .send()
            .unwrap();
        assert_eq!(r.status(), 200);
    }
    let r = c
        .get(s.at(&format!("/reputation/{wallet}")))
        .send()
        .unwrap();
    let p = problem(r, 429);
    assert!(
        p["detail"]
            .as_str()
            .unwrap()
            .contains("/reputation/{address}"),
        "{p}"
    );
    // The same counter covers prepared calldata.
    let r = c.get(s.at("/prepare/register_tool")).send().unwrap();
    problem(r, 429);
    // A refused owner write spends nothing: the cap of 1 still lets the next one through to
    // its own refusal.
    for _ in 0..3 {
        let r = c
            .post(s.at("/munus/none/claim"))
            .json(&json!({"vow_id": "0123456789abcdef", "signature": "0x00"}))
            .send()
            .unwrap();
        assert_eq!(r.status(), 404);
    }
}

#[test]
fn sigterm_shuts_down_cleanly() {
    let mut s = Server::start(&[]);
    assert_eq!(client().get(s.at("/health")).send().unwrap().status(), 200);
    let st = s.terminate().expect("exit status");
    assert!(st.success(), "exit status {st:?}");
}

#[test]
fn health_reports_an_unreachable_rail_down_and_x402_json_lists_it() {
    let dir = tempfile::tempdir().unwrap();
    // A port nothing listens on: bind, note it, close.
    let port = conduct_tests::free_port();
    let cfg = dir.path().join("conduct.toml");
    std::fs::write(
        &cfg,
        format!(
            "[[rails]]\nkind = \"facilitator\"\nnetwork = \"eip155:8453\"\n\
             asset = \"0x833589fcd6edb6e08f4c7c32d4f71b54bda02913\"\n\
             pay_to = \"0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc\"\n\
             eip712_name = \"USD Coin\"\neip712_version = \"2\"\n\
             facilitator_url = \"http://127.0.0.1:{port}\"\n"
        ),
    )
    .unwrap();
    let s = Server::start(&["--config", cfg.to_str().unwrap()]);
    let c = client();
    let h: Value = c.get(s.at("/health")).send().unwrap().json().unwrap();
    assert_eq!(h["rails"][0]["up"], false, "{h}");
    let x: Value = c
        .get(s.at("/.well-known/x402.json"))
        .send()
        .unwrap()
        .json()
        .unwrap();
    let accepts = &x["resources"][0]["accepts"][0];
    assert_eq!(accepts["amount"], "100000");
    // Advertised in EIP-55 form whatever the configured case.
    assert_eq!(
        accepts["asset"],
        "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
    );
    // A payment for this rail cannot be verified: 503 problem, never a signed body.
    let r = c.post(s.at("/profile")).json(&trace(10)).send().unwrap();
    assert_eq!(r.status(), 402);
}

/// A body refused unread (a form post answered 415) closes its connection, and says so: a
/// client that reused the connection would find it closed under its next request.
#[test]
fn a_body_refused_unread_closes_the_connection_and_says_so() {
    use std::io::{Read, Write};
    let s = Server::start(&[]);
    let addr = s.url.trim_start_matches("http://").to_owned();
    let mut conn = std::net::TcpStream::connect(&addr).unwrap();
    let body = "text=x&agent=a&cadence_hours=24";
    write!(
        conn,
        "POST /vow HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/x-www-form-urlencoded\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    conn.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let mut answer = String::new();
    // The server closes the connection after the answer, so this read ends.
    conn.read_to_string(&mut answer).unwrap();
    let head = answer
        .split("\r\n\r\n")
        .next()
        .unwrap()
        .to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 415"), "{head}");
    assert!(head.contains("connection: close"), "{head}");
    // The service keeps serving.
    assert_eq!(client().get(s.at("/health")).send().unwrap().status(), 200);
}

/// `GET /metrics` on the metrics address parsed by the reference parser
/// (`tests/py/metrics_parse.py`): each sample as `(name, labels, value)`.
fn scrape(url: &str) -> Vec<(String, serde_json::Map<String, Value>, f64)> {
    use std::io::Write;
    let r = client().get(url).send().expect("GET /metrics");
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.headers()["content-type"],
        "text/plain; version=0.0.4; charset=utf-8"
    );
    let text = r.text().unwrap();
    let mut py = std::process::Command::new(conduct_tests::python())
        .arg(conduct_tests::py_dir().join("metrics_parse.py"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run python");
    py.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = py.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the exposition does not parse: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (
                v["name"].as_str().unwrap().to_owned(),
                v["labels"].as_object().unwrap().clone(),
                v["value"].as_f64().unwrap(),
            )
        })
        .collect()
}

/// The value of the sample `name` whose labels include `labels` (0 when absent).
fn sample(
    samples: &[(String, serde_json::Map<String, Value>, f64)],
    name: &str,
    labels: &[(&str, &str)],
) -> f64 {
    samples
        .iter()
        .filter(|(n, l, _)| {
            n == name
                && labels
                    .iter()
                    .all(|(k, v)| l.get(*k).and_then(Value::as_str) == Some(*v))
        })
        .map(|(_, _, v)| *v)
        .sum()
}

#[test]
fn metrics_are_served_on_their_own_loopback_listener_and_move() {
    let s = Server::start(&["--demo-daily-cap", "1"]);
    let url = s.metrics_url();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    let c = client();
    // Never on the public port.
    let r = c.get(s.at("/metrics")).send().unwrap();
    assert_eq!(r.status(), 404);
    let before = scrape(&url);
    assert_eq!(
        sample(
            &before,
            "conduct_http_requests_total",
            &[("route", "/demo/profile")]
        ),
        0.0
    );
    let r = c
        .post(s.at("/demo/profile"))
        .json(&trace(40))
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);
    let r = c
        .post(s.at("/demo/profile"))
        .json(&trace(40))
        .send()
        .unwrap();
    assert_eq!(r.status(), 429);
    // An offered payment that is not one: refused, on no rail.
    let r = c
        .post(s.at("/profile"))
        .header("payment-signature", "not-a-payment")
        .json(&trace(40))
        .send()
        .unwrap();
    assert_eq!(r.status(), 402);
    let vow: Value = c
        .post(s.at("/vow"))
        .json(&json!({"text": "answer billing questions", "agent": "metrics-agent", "cadence_hours": 24}))
        .send()
        .unwrap()
        .json()
        .unwrap();
    let mut t = trace(12);
    t["vow_id"] = vow["vow_id"].clone();
    let r = c
        .post(s.at("/vow/report/demo"))
        .header("prefer", "wait=30")
        .json(&t)
        .send()
        .unwrap();
    assert_eq!(r.status(), 201);
    let raw = format!("/vow/{}/chain", vow["vow_id"].as_str().unwrap());
    assert_eq!(c.get(s.at(&raw)).send().unwrap().status(), 200);
    let after = scrape(&url);
    let requests = |route: &str, method: &str, code: &str| {
        sample(
            &after,
            "conduct_http_requests_total",
            &[("route", route), ("method", method), ("code", code)],
        )
    };
    assert_eq!(requests("/demo/profile", "POST", "200"), 1.0);
    assert_eq!(requests("/demo/profile", "POST", "429"), 1.0);
    assert_eq!(
        sample(
            &after,
            "conduct_free_cap_refusals_total",
            &[("route", "/demo/profile")]
        ),
        1.0
    );
    assert_eq!(
        sample(
            &after,
            "conduct_payments_total",
            &[
                ("route", "/profile"),
                ("rail", "none"),
                ("outcome", "refused")
            ]
        ),
        1.0
    );
    assert_eq!(requests("/vow", "POST", "201"), 1.0);
    assert_eq!(requests("/vow/report/demo", "POST", "201"), 1.0);
    assert_eq!(requests("/vow/{id}/chain", "GET", "200"), 1.0);
    assert_eq!(
        requests("/metrics", "GET", "404"),
        0.0,
        "the public 404 is not a route"
    );
    assert_eq!(requests("other", "GET", "404"), 1.0);
    // The raw path is never a label.
    assert!(after
        .iter()
        .all(|(_, l, _)| l.values().all(|v| v != raw.as_str())));
    assert_eq!(
        sample(
            &after,
            "conduct_http_request_duration_seconds_count",
            &[("route", "/vow/report/demo"), ("method", "POST")]
        ),
        1.0
    );
    // The vow and the report-in, committed by the sequencer.
    assert!(sample(&after, "conduct_sequencer_batch_size_sum", &[]) >= 2.0);
    assert!(
        sample(
            &after,
            "conduct_sequencer_commit_duration_seconds_count",
            &[]
        ) >= 1.0
    );
    // The report-in's vow re-rendered: its integration time observed.
    assert_eq!(
        sample(&after, "conduct_integration_duration_seconds_count", &[]),
        1.0
    );
    assert!(sample(&after, "conduct_render_round_duration_seconds_count", &[]) >= 1.0);
    // Its vow rendered from the state kept in memory since it was taken.
    assert!(
        sample(
            &after,
            "conduct_render_vow_reads_total",
            &[("from", "memory")]
        ) >= 1.0
    );
    // Its pages, which existed, replaced through the pool of spare inodes: new spares, as
    // none had rested a second yet.
    assert!(
        sample(
            &after,
            "conduct_render_spare_writes_total",
            &[("spare", "new")]
        ) >= 1.0
    );
    // The files the report-in wrote into the tree, by kind: its vow's pages, the log's tiles
    // and checkpoint, the manifest.
    for kind in [
        "vow_page",
        "vow_page_html",
        "chain_head",
        "feed",
        "reading",
        "tile",
    ] {
        assert!(
            sample(&after, "conduct_tree_writes_total", &[("kind", kind)]) >= 1.0,
            "{kind}"
        );
    }
    for kind in ["checkpoint", "manifest"] {
        assert!(
            sample(&after, "conduct_tree_writes_total", &[("kind", kind)]) >= 2.0,
            "{kind}: the vow's and the report-in's"
        );
    }
    assert_eq!(sample(&after, "conduct_render_queue", &[]), 0.0);
    // Renders well inside the integration target: the pushback bound is at its most.
    assert_eq!(
        sample(&after, "conduct_render_pushback_bound_seconds", &[]),
        0.5
    );
    // No chain configured: no chain metrics.
    assert!(after
        .iter()
        .all(|(n, _, _)| !n.starts_with("conduct_chain_")));
}
