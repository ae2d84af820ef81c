//! `POST /oracle/ask {question}`: an answer grounded in the service's published library
//! (library/ORACLE.md).
//!
//! The question is checked, the library's passages nearest it are retrieved
//! ([`conduct_renderer::passages`], BM25 over every published document, indexed once at
//! start), and the `[reading]` model providers are asked, primary then fallback, through
//! [`crate::interpretation::ask_models`]. The model sees the question and the numbered public
//! passages, nothing else. When no model is configured, or both fail, the answer is the
//! passages themselves, verbatim. The reply says which of the three produced it, is plainly
//! labelled, cites the documents and sections, and is not signed (a model's answer varies;
//! there is nothing of record to sign).

use std::sync::LazyLock;

use bytes::Bytes;
use conduct_core::trace::{parse_json, FieldError};
use conduct_renderer::passages::{Hit, LibraryIndex};
use serde_json::{json, Map, Value};
use warp::http::{header, HeaderValue};
use warp::reply::Response as WarpResponse;

use crate::http::reply::{json_response, Problem};
use crate::interpretation::ModelConfig;

pub use conduct_renderer::passages::MAX_QUESTION_CHARS;
/// Passages retrieved for a question.
pub const TOP_K: usize = 4;
/// Most characters of one passage quoted to the model and in the reply.
pub const MAX_QUOTED_CHARS: usize = 2000;
/// Most tokens the model may answer with (its text is capped at
/// [`crate::interpretation::MAX_ANSWER_CHARS`] too).
const MAX_TOKENS: u32 = 800;
/// Model requests in flight at once, all callers together (the others wait their turn).
const MODEL_SLOTS: usize = 4;

/// The label of an answer a model wrote.
pub const MODEL_LABEL: &str =
    "model-generated; guidance grounded in the cited documents, never a verdict";
/// The label of an answer made of passages.
pub const PASSAGES_LABEL: &str =
    "no model answered: these are the best matching passages of the library, verbatim";
/// What the model is shown.
pub const SEES: &str = "the question and the numbered library passages quoted in this reply; \
                        nothing else (not the caller's address or headers, no vow or trace)";
/// Why the reply carries no signature.
pub const UNSIGNED: &str = "not signed: a model's answer varies from one call to the next and \
                            is not a record; the cited documents are the signed, verifiable part \
                            (manifest.json lists them)";

/// The instructions the model is given.
const SYSTEM: &str = "You answer questions about the conduct attestation service. Use only the \
numbered passages of its public library that follow the question; cite each passage you use by \
its number in square brackets, like [2]. If the passages do not answer the question, say so \
plainly: do not guess and do not use outside knowledge. Never judge a particular agent, vow or \
wallet: the answer is guidance, never a verdict. Be brief (at most about 250 words), in plain \
text.";

static INDEX: LazyLock<LibraryIndex> =
    LazyLock::new(|| LibraryIndex::build(&conduct_renderer::docs::published()));
static CLIENT: LazyLock<reqwest::Client> = LazyLock::new(crate::interpretation::client);
static SLOTS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(MODEL_SLOTS);

/// Index the library now (at start) rather than on the first question.
pub fn warm_up() {
    LazyLock::force(&INDEX);
}

/// The question of a request body, checked: a JSON object with exactly one member,
/// `question`, a string of 1 to [`MAX_QUESTION_CHARS`] characters, not blank, without control
/// characters other than newline and tab.
pub fn parse_question(body: &[u8]) -> Result<String, Problem> {
    let mut obj: Map<String, Value> = parse_json(body).map_err(|e| Problem::invalid(vec![e]))?;
    let mut errs: Vec<FieldError> = obj
        .keys()
        .filter(|k| k.as_str() != "question")
        .map(|k| {
            FieldError::at(
                format!("/{}", k.replace('~', "~0").replace('/', "~1")),
                "unknown field: the body is {\"question\": \"...\"}",
            )
        })
        .collect();
    let question = match obj.remove("question") {
        None => Err("required: the body is {\"question\": \"...\"}".to_owned()),
        Some(Value::String(q)) => check_question(&q).map(|()| q),
        Some(_) => Err("must be a string".to_owned()),
    };
    match question {
        Ok(q) if errs.is_empty() => Ok(q),
        Ok(_) => Err(Problem::invalid(errs)),
        Err(why) => {
            errs.insert(0, FieldError::at("/question", why));
            Err(Problem::invalid(errs))
        }
    }
}

fn check_question(q: &str) -> Result<(), String> {
    let n = q.chars().count();
    if q.trim().is_empty() {
        return Err("the question is empty".into());
    }
    if n > MAX_QUESTION_CHARS {
        return Err(format!(
            "the question is {n} characters; at most {MAX_QUESTION_CHARS}"
        ));
    }
    if conduct_core::vow::has_control(q, true) || q.contains('\r') {
        return Err(
            "the question may not contain control characters other than newline and tab".into(),
        );
    }
    Ok(())
}

fn clip(s: &str, n: usize) -> (String, bool) {
    match s.char_indices().nth(n) {
        Some((at, _)) => (format!("{}…", &s[..at]), true),
        None => (s.to_owned(), false),
    }
}

/// The user message: the question, then the numbered passages (the only other thing sent).
pub fn user_message(question: &str, hits: &[Hit<'_>]) -> String {
    let mut out = format!("Question:\n{question}\n\nPassages:");
    for (n, h) in hits.iter().enumerate() {
        let p = h.passage;
        out.push_str(&format!(
            "\n\n[{}] {}, section \"{}\"\n{}",
            n + 1,
            p.doc,
            p.section,
            clip(p.text, MAX_QUOTED_CHARS).0
        ));
    }
    out
}

/// The numbers `[n]` (1 to `count`) an answer cites, in order of first citation.
fn cited(answer: &str, count: usize) -> Vec<usize> {
    let mut out = Vec::new();
    let mut rest = answer;
    while let Some(at) = rest.find('[') {
        rest = &rest[at + 1..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if rest[digits.len()..].starts_with(']') {
            if let Ok(n) = digits.parse::<usize>() {
                if (1..=count).contains(&n) && !out.contains(&n) {
                    out.push(n);
                }
            }
        }
    }
    out
}

/// The answer made of the passages themselves.
fn passages_answer(hits: &[Hit<'_>]) -> String {
    if hits.is_empty() {
        return "No passage of the library matches this question. Every document is listed at \
                /library."
            .to_owned();
    }
    hits.iter()
        .enumerate()
        .map(|(n, h)| {
            format!(
                "[{}] {} ({}, {}):\n{}",
                n + 1,
                h.passage.section,
                h.passage.doc,
                h.passage.path(),
                clip(h.passage.text, MAX_QUOTED_CHARS).0
            )
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

fn citation(n: usize, h: &Hit<'_>) -> Value {
    json!({
        "n": n,
        "doc": h.passage.doc,
        "section": h.passage.section,
        "path": h.passage.path(),
        "score": (f64::from(h.score) * 1000.0).round() / 1000.0,
    })
}

/// Answer a checked question with the `[reading]` models of `cfg` (never fails: a model that
/// does not answer leaves the passages).
pub async fn answer(cfg: &ModelConfig, question: &str) -> Value {
    let hits = INDEX.search(question, TOP_K);
    let (answer, attempts) = if hits.is_empty() || !crate::interpretation::uses_model(cfg) {
        (None, Vec::new())
    } else {
        // The semaphore is never closed; should it be, the call simply goes ahead.
        let _slot = SLOTS.acquire().await.ok();
        let user = user_message(question, &hits);
        crate::interpretation::ask_models(&CLIENT, cfg, SYSTEM, &user, MAX_TOKENS).await
    };
    let passages: Vec<Value> = hits
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let (text, clipped) = clip(h.passage.text, MAX_QUOTED_CHARS);
            let mut v = citation(i + 1, h);
            v["text"] = Value::from(text);
            v["clipped"] = Value::from(clipped);
            v
        })
        .collect();
    let (produced_by, model, label, text, citations) = match answer {
        Some(a) => {
            let used = cited(&a.text, hits.len());
            // An answer citing no number is grounded in everything it was given.
            let used: Vec<usize> = if used.is_empty() {
                (1..=hits.len()).collect()
            } else {
                used
            };
            let citations: Vec<Value> = used
                .iter()
                .filter_map(|&n| hits.get(n - 1).map(|h| citation(n, h)))
                .collect();
            (a.provider, Some(a.model), MODEL_LABEL, a.text, citations)
        }
        None => {
            let citations = hits
                .iter()
                .enumerate()
                .map(|(i, h)| citation(i + 1, h))
                .collect();
            (
                "passages",
                None,
                PASSAGES_LABEL,
                passages_answer(&hits),
                citations,
            )
        }
    };
    json!({
        "type": "conduct.oracle-answer/v1",
        "question": question,
        "answer": text,
        "produced_by": produced_by,
        "model": model,
        "label": label,
        "citations": citations,
        "passages": passages,
        "failed_attempts": attempts,
        "sees": SEES,
        "signed": false,
        "signature_note": UNSIGNED,
        "scope": conduct_core::scope::scope_value(),
    })
}

/// `POST /oracle/ask`: check the body, answer, reply (`Cache-Control: no-store`).
pub async fn ask(cfg: &ModelConfig, body: Bytes) -> Result<WarpResponse, Problem> {
    let question = parse_question(&body)?;
    let value = answer(cfg, &question).await;
    let mut resp = json_response(serde_json::to_vec(&value).unwrap_or_default());
    resp.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(resp)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(body: &str) -> Problem {
        parse_question(body.as_bytes()).expect_err(body)
    }

    #[test]
    fn questions_are_checked_and_errors_name_the_field() {
        assert_eq!(
            parse_question(br#"{"question":"How is a vow chain verified?"}"#).unwrap(),
            "How is a vow chain verified?"
        );
        let long = format!(r#"{{"question":"{}"}}"#, "a".repeat(MAX_QUESTION_CHARS + 1));
        let exact = format!(r#"{{"question":"{}"}}"#, "é".repeat(MAX_QUESTION_CHARS));
        assert!(parse_question(exact.as_bytes()).is_ok());
        for body in [
            "{}",
            r#"{"question":42}"#,
            r#"{"question":null}"#,
            r#"{"question":"   "}"#,
            r#"{"question":"a\u0000b"}"#,
            long.as_str(),
        ] {
            let p = problem(body);
            assert_eq!(p.status.as_u16(), 422, "{body}");
            assert_eq!(p.errors[0].pointer, "/question", "{body}");
        }
        let p = problem(r#"{"question":"ok?","x/y":1}"#);
        assert_eq!(p.status.as_u16(), 422);
        assert_eq!(p.errors[0].pointer, "/x~1y");
        assert_eq!(problem("[1]").status.as_u16(), 422);
        assert_eq!(problem("{").status.as_u16(), 400);
    }

    #[test]
    fn the_prompt_holds_the_question_and_the_numbered_passages_only() {
        let hits = INDEX.search("how do I mirror the tree", TOP_K);
        assert_eq!(hits.len(), TOP_K);
        let user = user_message("how do I mirror the tree", &hits);
        assert!(user.starts_with("Question:\nhow do I mirror the tree\n\nPassages:\n\n[1] "));
        assert!(user.contains(&format!("\n\n[{TOP_K}] ")));
        assert!(!user.contains(&format!("[{}] ", TOP_K + 1)));
    }

    #[test]
    fn citations_are_read_from_the_answer() {
        assert_eq!(
            cited("See [2] and [1], again [2]; not [9] or [x] or [", 4),
            [2, 1]
        );
        assert!(cited("no citation", 4).is_empty());
        assert_eq!(clip("abcdef", 3), ("abc…".to_owned(), true));
        assert_eq!(clip("abc", 3), ("abc".to_owned(), false));
    }
}
