//! `POST /oracle/ask` end to end: the real `conduct serve` configured with a loopback stand-in
//! for a hosted model (chat-completions wire format). The primary answers; the primary fails
//! and the fallback answers; both fail and the passages are the answer; no model is configured.
//! The model receives the question and the numbered passages and nothing else, the bearer key
//! reaches the model and never the service's output, and bad questions and the daily cap are
//! problem+json.

use std::sync::{Arc, Mutex};

use conduct_api::handlers::oracle::{MAX_QUESTION_CHARS, MODEL_LABEL, PASSAGES_LABEL};
use conduct_tests::{client, ModelStandIn, Server};
use serde_json::{json, Value};

const KEY_ENV: &str = "CONDUCT_ORACLE_TEST_KEY";
const KEY: &str = "sk-oracle-test-7d41c9e0b2";
const QUESTION: &str = "How do I mirror the tree with rsync, and in which order?";

/// A service whose `[reading]` providers are `primary` and `fallback` (paths of the stand-in:
/// `ok` or `broken`), with the key in its environment, logging at debug level, its stdout
/// and stderr kept.
struct Oracle {
    _dir: tempfile::TempDir,
    server: Server,
    stderr: Arc<Mutex<String>>,
}

fn start(models: Option<(&ModelStandIn, &str, &str)>, extra: &str) -> Oracle {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut toml = format!("{extra}\n");
    if let Some((m, primary, fallback)) = models {
        toml.push_str(&format!(
            "[reading]\ntimeout_seconds = 5\n\
             [reading.primary]\nbase_url = \"{0}/{primary}/v1\"\nmodel = \"m-primary\"\n\
             api_key_env = \"{KEY_ENV}\"\n\
             [reading.fallback]\nbase_url = \"{0}/{fallback}/v1\"\nmodel = \"m-fallback\"\n\
             api_key_env = \"{KEY_ENV}\"\n",
            m.url
        ));
    }
    let cfg = dir.path().join("conduct.toml");
    std::fs::write(&cfg, toml).expect("write conduct.toml");
    let stderr = Arc::new(Mutex::new(String::new()));
    let server = Server::start_env(
        "serve",
        &dir.path().join("data"),
        &dir.path().join("site"),
        &["--config", cfg.to_str().expect("utf-8")],
        &[(KEY_ENV, KEY), ("RUST_LOG", "debug")],
        Some(stderr.clone()),
    );
    Oracle {
        _dir: dir,
        server,
        stderr,
    }
}

impl Oracle {
    fn ask(&self, body: &Value) -> reqwest::blocking::Response {
        client()
            .post(self.server.at("/oracle/ask"))
            .json(body)
            .send()
            .expect("POST /oracle/ask")
    }

    fn answer(&self, question: &str) -> Value {
        let r = self.ask(&json!({ "question": question }));
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()["content-type"], "application/json");
        assert_eq!(r.headers()["cache-control"], "no-store");
        let text = r.text().expect("body");
        assert!(!text.contains(KEY), "the key is in the reply");
        serde_json::from_str(&text).expect("JSON")
    }

    /// The key appears nowhere in what the service printed.
    fn assert_key_never_printed(&self) {
        // The request's log line is written after its answer: wait for it.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !self.stderr.lock().expect("stderr").contains("/oracle/ask") {
            assert!(
                std::time::Instant::now() < deadline,
                "debug logs were not captured"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let out = self.server.output.lock().expect("stdout").clone();
        let err = self.stderr.lock().expect("stderr").clone();
        assert!(!out.contains(KEY), "the key is on stdout");
        assert!(!err.contains(KEY), "the key is on stderr");
    }
}

/// The user message the model must have been sent: the question, then the passages of the
/// reply, numbered. Nothing else.
fn expected_user_message(question: &str, reply: &Value) -> String {
    let mut out = format!("Question:\n{question}\n\nPassages:");
    for p in reply["passages"].as_array().expect("passages") {
        out.push_str(&format!(
            "\n\n[{}] {}, section \"{}\"\n{}",
            p["n"],
            p["doc"].as_str().expect("doc"),
            p["section"].as_str().expect("section"),
            p["text"].as_str().expect("text"),
        ));
    }
    out
}

/// The request a model received holds the question and the reply's passages only.
fn assert_only_question_and_passages(body: &Value, question: &str, reply: &Value, model: &str) {
    let keys: Vec<&String> = body.as_object().expect("object").keys().collect();
    assert_eq!(keys, ["max_tokens", "messages", "model", "temperature"]);
    assert_eq!(body["model"], model);
    let messages = body["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0]["role"], "system");
    assert_eq!(messages[1]["role"], "user");
    assert_eq!(
        messages[1]["content"].as_str().expect("user"),
        expected_user_message(question, reply)
    );
    // The fixed instructions: no address, port, key or other request data.
    let system = messages[0]["content"].as_str().expect("system");
    assert!(system.contains("Use only the numbered passages"));
    assert!(!system.contains("127.0.0.1") && !system.contains(KEY));
}

fn assert_grounded(reply: &Value) {
    assert_eq!(reply["type"], "conduct.oracle-answer/v1");
    assert_eq!(reply["signed"], false);
    assert!(reply.get("signature").is_none());
    let passages = reply["passages"].as_array().expect("passages");
    assert!(!passages.is_empty() && passages.len() <= 4);
    assert_eq!(passages[0]["doc"], "MIRRORS.md", "{reply}");
    for p in passages
        .iter()
        .chain(reply["citations"].as_array().expect("citations"))
    {
        let path = p["path"].as_str().expect("path");
        let doc = p["doc"].as_str().expect("doc");
        assert!(
            path.starts_with(&format!("/library/{}#", doc.trim_end_matches(".md"))),
            "{path}"
        );
        assert!(p["score"].as_f64().expect("score") > 0.0);
    }
}

/// Ask [`QUESTION`] of a service whose primary and fallback are these paths of a new
/// stand-in; the reply is grounded, and made and labelled by `by`.
fn ask_made_by(primary: &str, fallback: &str, by: &str) -> (ModelStandIn, Oracle, Value) {
    let m = ModelStandIn::start();
    let o = start(Some((&m, primary, fallback)), "");
    let reply = o.answer(QUESTION);
    assert_grounded(&reply);
    assert_eq!(reply["produced_by"], by);
    let (model, label) = match by {
        "passages" => (Value::Null, PASSAGES_LABEL),
        _ => (json!(format!("m-{by}")), MODEL_LABEL),
    };
    assert_eq!(reply["model"], model);
    assert_eq!(reply["label"], label);
    (m, o, reply)
}

#[test]
fn the_primary_answers_from_the_question_and_the_passages_alone() {
    let (m, o, reply) = ask_made_by("ok", "ok", "primary");
    assert_eq!(reply["question"], QUESTION);
    assert!(reply["answer"]
        .as_str()
        .expect("answer")
        .starts_with("m-primary answers"));
    assert_eq!(reply["failed_attempts"], json!([]));
    // The stand-in's answer cites [1] only: the citation is passage 1.
    let citations = reply["citations"].as_array().expect("citations");
    assert_eq!(citations.len(), 1);
    assert_eq!(citations[0]["n"], 1);
    assert_eq!(citations[0]["path"], reply["passages"][0]["path"]);
    // The cited section is a real anchor of the HTML page.
    let path = citations[0]["path"].as_str().expect("path");
    let (page, anchor) = path.split_once('#').expect("anchor");
    let html = client()
        .get(o.server.at(page))
        .header("accept", "text/html")
        .send()
        .expect("GET page")
        .text()
        .expect("HTML");
    assert!(html.contains(&format!("id=\"{anchor}\"")), "{anchor}");

    let seen = m.requests();
    assert_eq!(seen.len(), 1, "one call to the primary");
    assert_eq!(seen[0].path, "/ok/v1/chat/completions");
    assert_eq!(
        seen[0].authorization.as_deref(),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_only_question_and_passages(&seen[0].body, QUESTION, &reply, "m-primary");
    o.assert_key_never_printed();
}

#[test]
fn the_fallback_answers_when_the_primary_fails() {
    let (m, o, reply) = ask_made_by("broken", "ok", "fallback");
    let failed = reply["failed_attempts"].as_array().expect("attempts");
    assert_eq!(failed.len(), 1);
    let failed = failed[0].as_str().expect("reason");
    assert!(
        failed.starts_with("primary (m-primary): HTTP 500"),
        "{failed}"
    );
    assert!(
        !failed.contains("overloaded"),
        "the provider's message is not echoed"
    );
    let seen = m.requests();
    let paths: Vec<&str> = seen.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(
        paths,
        ["/broken/v1/chat/completions", "/ok/v1/chat/completions"]
    );
    for (r, model) in seen.iter().zip(["m-primary", "m-fallback"]) {
        assert_only_question_and_passages(&r.body, QUESTION, &reply, model);
    }
    o.assert_key_never_printed();
}

#[test]
fn the_passages_are_the_answer_when_both_models_fail() {
    let (m, o, reply) = ask_made_by("broken", "broken", "passages");
    assert_eq!(reply["failed_attempts"].as_array().map(Vec::len), Some(2));
    // Every passage is cited and quoted verbatim in the answer.
    let answer = reply["answer"].as_str().expect("answer");
    let passages = reply["passages"].as_array().expect("passages");
    assert_eq!(
        reply["citations"].as_array().map(Vec::len),
        Some(passages.len())
    );
    for p in passages {
        assert!(answer.contains(p["text"].as_str().expect("text")));
    }
    // The markdown on disk is what was quoted.
    let md = client()
        .get(o.server.at("/library/MIRRORS.md"))
        .send()
        .expect("GET markdown")
        .text()
        .expect("markdown");
    assert!(md.contains(passages[0]["text"].as_str().expect("text")));
    assert_eq!(m.requests().len(), 2);
    o.assert_key_never_printed();
}

#[test]
fn without_a_model_the_passages_answer_and_bad_questions_and_the_cap_are_problems() {
    let o = start(None, "oracle_daily_cap = 2");
    let problem = |r: reqwest::blocking::Response, status: u16| -> Value {
        assert_eq!(r.status(), status);
        assert_eq!(r.headers()["content-type"], "application/problem+json");
        r.json().expect("problem JSON")
    };
    // Refused requests spend nothing from the cap.
    let long = "a".repeat(MAX_QUESTION_CHARS + 1);
    for body in [
        json!({"question": long}),
        json!({}),
        json!({"question": 7}),
        json!({"question": "  "}),
    ] {
        let p = problem(o.ask(&body), 422);
        assert_eq!(p["errors"][0]["pointer"], "/question", "{body}");
        assert_eq!(p["type"], "/library/ERRORS.md#invalid");
    }
    let p = problem(
        client()
            .post(o.server.at("/oracle/ask"))
            .header("content-type", "text/plain")
            .body("{\"question\": \"hi\"}")
            .send()
            .expect("POST"),
        415,
    );
    assert_eq!(p["type"], "/library/ERRORS.md#unsupported-media-type");
    let p = problem(
        client()
            .get(o.server.at("/oracle/ask"))
            .send()
            .expect("GET"),
        405,
    );
    assert_eq!(p["type"], "/library/ERRORS.md#method-not-allowed");

    let reply = o.answer(QUESTION);
    assert_grounded(&reply);
    assert_eq!(reply["produced_by"], "passages");
    assert_eq!(reply["failed_attempts"], json!([]));
    // A question at the limit is answered; nothing in the library matches this one.
    let reply = o.answer(&"q".repeat(MAX_QUESTION_CHARS));
    assert_eq!(reply["produced_by"], "passages");
    assert_eq!(reply["passages"], json!([]));
    assert!(reply["answer"]
        .as_str()
        .expect("answer")
        .contains("No passage"));
    // The third served call of the day is over the cap of 2.
    let r = o.ask(&json!({"question": QUESTION}));
    let retry: u64 = r.headers()["retry-after"]
        .to_str()
        .expect("ascii")
        .parse()
        .expect("seconds");
    assert!((1..=86_400).contains(&retry));
    let p = problem(r, 429);
    assert_eq!(p["type"], "/library/ERRORS.md#rate-limited");
    // Listed in the catalog and described in the OpenAPI document.
    let doc: Value = client()
        .get(o.server.at("/openapi.json"))
        .send()
        .expect("GET /openapi.json")
        .json()
        .expect("JSON");
    let op = &doc["paths"]["/oracle/ask"]["post"];
    assert!(op["responses"]["429"].is_object());
    assert_eq!(
        doc["components"]["schemas"]["OracleRequest"]["properties"]["question"]["maxLength"],
        MAX_QUESTION_CHARS
    );
}
