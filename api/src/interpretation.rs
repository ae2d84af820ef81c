//! The interpretation part of `GET /vow/{id}/reading`, IO side: the `[reading]` model config
//! ([`ModelConfig`], a primary and a fallback OpenAI-compatible chat-completions provider)
//! and [`interpret`], which asks the primary, then the fallback, and falls back to the
//! rule-based interpretation of [`conduct_core::vow::interpret`] when neither answers.
//!
//! The model sees only what [`InterpretationInput`] holds: numbers, the vow text (withheld when
//! sealed), declared purposes and public notes; never reasoning or actions. API keys are read
//! from environment variables named in the config and never logged or echoed; failed attempts
//! are recorded as short reasons (status code or error kind) and published with the reading.

use std::time::Duration;

use conduct_core::vow::interpret::{prompt, rule_based, InterpretationInput};
pub use conduct_core::vow::interpret::{Interpretation, SEES};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::Error;

/// Most characters kept of a model's answer.
pub const MAX_ANSWER_CHARS: usize = 4000;
/// Most bytes read of a provider's response body.
pub const MAX_RESPONSE_BYTES: usize = 1 << 20;
/// Most characters of a failed attempt's reason.
const MAX_REASON_CHARS: usize = 200;

/// One OpenAI-compatible chat-completions provider.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelProvider {
    /// API base, without the trailing `/chat/completions`, e.g. `https://api.openai.com/v1`.
    pub base_url: String,
    /// Model name sent as `model`.
    pub model: String,
    /// Name of the environment variable holding the bearer key (the key is never logged).
    #[serde(default)]
    pub api_key_env: Option<String>,
}

fn default_timeout_seconds() -> u64 {
    20
}

/// The `[reading]` config: which language models interpret readings.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// Asked first.
    #[serde(default)]
    pub primary: Option<ModelProvider>,
    /// Asked when the primary fails.
    #[serde(default)]
    pub fallback: Option<ModelProvider>,
    /// Per-request timeout, seconds (default 20; 0 also means 20).
    #[serde(default = "default_timeout_seconds")]
    pub timeout_seconds: u64,
}

/// Whether a language model writes readings (else they are rule-based).
pub fn uses_model(cfg: &ModelConfig) -> bool {
    cfg.primary.is_some() || cfg.fallback.is_some()
}

/// The vow source's model requests, answered on the runtime a few at a time: each answer is
/// kept in the store (state, so a restart renders it) and its vow is re-rendered.
pub fn spawn_interpretations(
    cfg: ModelConfig,
    store: std::sync::Arc<dyn conduct_indexer::state::tables::Tables>,
    site: conduct_renderer::live::LiveSite,
    mut asks: tokio::sync::mpsc::UnboundedReceiver<(String, u64, InterpretationInput)>,
) {
    let limit = std::sync::Arc::new(tokio::sync::Semaphore::new(4));
    tokio::spawn(async move {
        let client = client();
        while let Some((vow, seq, input)) = asks.recv().await {
            let Ok(permit) = limit.clone().acquire_owned().await else {
                break;
            };
            let (cfg, client, store, site) =
                (cfg.clone(), client.clone(), store.clone(), site.clone());
            tokio::spawn(async move {
                let mut value = interpret(&client, &cfg, &input).await.to_value();
                value["covers_seq"] = Value::from(seq);
                let (text, id) = (value.to_string(), vow.clone());
                let now = crate::sources::service_now();
                let kept = tokio::task::spawn_blocking(move || {
                    store.put_interpretation(&id, seq, &text, now)
                })
                .await;
                match kept {
                    Ok(Ok(())) => {
                        // Not waited for: the engine writes it in its next round.
                        drop(site.start_render(crate::sources::VOWS, &vow, false));
                    }
                    Ok(Err(e)) => {
                        tracing::error!(vow, error = %e, "keeping a model reading failed")
                    }
                    Err(e) => tracing::error!(vow, error = %e, "keeping a model reading failed"),
                }
                drop(permit);
            });
        }
    });
}

/// An HTTP client for the model providers: no redirects are followed (a redirect could carry
/// the bearer key elsewhere).
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        // Building fails only when the TLS backend cannot initialise; the default client would
        // then be as (un)usable, but this keeps the signature infallible.
        .unwrap_or_default()
}

fn clip(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

fn error_kind(e: &reqwest::Error) -> &'static str {
    if e.is_timeout() {
        "timeout"
    } else if e.is_connect() {
        "connection failed"
    } else if e.is_redirect() {
        "redirect refused"
    } else if e.is_body() || e.is_decode() {
        "bad response body"
    } else if e.is_builder() {
        "bad request (check base_url)"
    } else {
        "request failed"
    }
}

/// A short, public-safe description of a non-2xx answer: the status and, when the body is an
/// OpenAI-style error, its `type`/`code` (never the message, which may echo key fragments).
fn status_reason(status: reqwest::StatusCode, body: &[u8]) -> String {
    let code = serde_json::from_slice::<Value>(body).ok().and_then(|v| {
        let e = &v["error"];
        e["code"]
            .as_str()
            .or_else(|| e["type"].as_str())
            .map(|s| clip(s, 60))
    });
    match code {
        Some(c) => format!("HTTP {} ({c})", status.as_u16()),
        None => format!("HTTP {}", status.as_u16()),
    }
}

/// Ask one provider (a system and a user message, temperature 0, at most `max_tokens`);
/// `Ok(answer)` (trimmed, capped at [`MAX_ANSWER_CHARS`]) or [`Error::Model`] with a short
/// reason. The bearer key is read from the provider's environment variable and never logged.
pub async fn chat(
    client: &reqwest::Client,
    p: &ModelProvider,
    timeout: Duration,
    system: &str,
    user: &str,
    max_tokens: u32,
) -> Result<String, Error> {
    let url = format!("{}/chat/completions", p.base_url.trim_end_matches('/'));
    let body = json!({
        "model": p.model,
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": user},
        ],
        "temperature": 0,
        "max_tokens": max_tokens,
    });
    let mut req = client.post(&url).timeout(timeout).json(&body);
    if let Some(key) = p
        .api_key_env
        .as_deref()
        .and_then(|name| std::env::var(name).ok())
    {
        req = req.bearer_auth(key);
    }
    let mut resp = req
        .send()
        .await
        .map_err(|e| Error::Model(error_kind(&e).to_owned()))?;
    let status = resp.status();
    let mut bytes: Vec<u8> = Vec::new();
    loop {
        match resp.chunk().await {
            Ok(Some(c)) => {
                if bytes.len() + c.len() > MAX_RESPONSE_BYTES {
                    return Err(Error::Model(format!(
                        "response larger than {MAX_RESPONSE_BYTES} bytes"
                    )));
                }
                bytes.extend_from_slice(&c);
            }
            Ok(None) => break,
            Err(e) => return Err(Error::Model(error_kind(&e).to_owned())),
        }
    }
    if !status.is_success() {
        return Err(Error::Model(status_reason(status, &bytes)));
    }
    if status != reqwest::StatusCode::OK {
        return Err(Error::Model(format!(
            "HTTP {} (expected 200)",
            status.as_u16()
        )));
    }
    let v: Value =
        serde_json::from_slice(&bytes).map_err(|_| Error::Model("response was not JSON".into()))?;
    let content = v["choices"][0]["message"]["content"]
        .as_str()
        .ok_or_else(|| Error::Model("no choices[0].message.content string".into()))?
        .trim();
    if content.is_empty() {
        return Err(Error::Model("empty content".into()));
    }
    Ok(clip(content, MAX_ANSWER_CHARS))
}

/// A model's answer: which provider gave it, the model's name, the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// `"primary"` or `"fallback"`.
    pub provider: &'static str,
    /// The model's configured name.
    pub model: String,
    /// The answer (trimmed, capped at [`MAX_ANSWER_CHARS`]).
    pub text: String,
}

/// The per-request timeout of `cfg` (0 means the default, 20 s).
pub fn timeout(cfg: &ModelConfig) -> Duration {
    Duration::from_secs(match cfg.timeout_seconds {
        0 => default_timeout_seconds(),
        s => s,
    })
}

/// Ask the primary provider, then the fallback, each with the per-request timeout of `cfg`
/// ([`chat`]); a provider counts only when it answers 200 with a non-empty
/// `choices[0].message.content`. The first answer (none when neither is configured or both
/// fail), and each failed attempt as `"<primary|fallback> (<model>): <reason>"`. Never fails
/// or panics.
pub async fn ask_models(
    client: &reqwest::Client,
    cfg: &ModelConfig,
    system: &str,
    user: &str,
    max_tokens: u32,
) -> (Option<Answer>, Vec<String>) {
    let timeout = timeout(cfg);
    let mut attempts = Vec::new();
    for (name, p) in [("primary", &cfg.primary), ("fallback", &cfg.fallback)] {
        let Some(p) = p else { continue };
        match chat(client, p, timeout, system, user, max_tokens).await {
            Ok(text) => {
                let answer = Answer {
                    provider: name,
                    model: p.model.clone(),
                    text,
                };
                return (Some(answer), attempts);
            }
            Err(reason) => attempts.push(clip(
                &format!("{name} ({}): {reason}", clip(&p.model, 60)),
                MAX_REASON_CHARS,
            )),
        }
    }
    (None, attempts)
}

/// Most tokens a reading's interpretation may take.
const READING_MAX_TOKENS: u32 = 400;

/// Interpret a reading: the first answer of [`ask_models`]; when neither provider is
/// configured or both fail, the rule-based interpretation, with the failed attempts.
pub async fn interpret(
    client: &reqwest::Client,
    cfg: &ModelConfig,
    input: &InterpretationInput,
) -> Interpretation {
    let mut attempts = Vec::new();
    if uses_model(cfg) {
        let (system, user) = prompt(input);
        let (answer, failed) = ask_models(client, cfg, &system, &user, READING_MAX_TOKENS).await;
        if let Some(a) = answer {
            return Interpretation {
                kind: "language-model",
                provider: Some(a.provider.to_owned()),
                model: Some(a.model),
                text: a.text,
                attempts: failed,
            };
        }
        attempts = failed;
    }
    Interpretation {
        kind: "rule-based",
        provider: None,
        model: None,
        text: rule_based(input),
        attempts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use conduct_core::vow::interpret::{EntryView, SEALED_CAVEAT};
    use std::sync::{Arc, Mutex};
    use warp::Filter;

    /// What the stand-in saw: (authorization header, body).
    type Seen = Arc<Mutex<Vec<(Option<String>, Value)>>>;

    #[derive(Clone, Copy)]
    enum Mode {
        Answer,
        Fail500,
        Sleep,
    }

    /// A loopback stand-in speaking the OpenAI chat-completions wire format.
    async fn stand_in(mode: Mode, answer: &'static str) -> (String, Seen) {
        let seen: Seen = Arc::default();
        let log = seen.clone();
        let route = warp::post()
            .and(warp::path!("v1" / "chat" / "completions"))
            .and(warp::header::optional::<String>("authorization"))
            .and(warp::body::json())
            .then(move |auth: Option<String>, body: Value| {
                let log = log.clone();
                async move {
                    log.lock().unwrap().push((auth, body));
                    let ok = json!({
                        "id": "chatcmpl-1", "object": "chat.completion", "created": 0,
                        "model": "m",
                        "choices": [{"index": 0,
                                     "message": {"role": "assistant", "content": answer},
                                     "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 5,
                                  "total_tokens": 15},
                    });
                    match mode {
                        Mode::Answer => warp::reply::with_status(
                            warp::reply::json(&ok),
                            warp::http::StatusCode::OK,
                        ),
                        Mode::Fail500 => warp::reply::with_status(
                            warp::reply::json(&json!({"error": {
                                "message": "boom sk-secret", "type": "server_error"}})),
                            warp::http::StatusCode::INTERNAL_SERVER_ERROR,
                        ),
                        Mode::Sleep => {
                            tokio::time::sleep(Duration::from_secs(3)).await;
                            warp::reply::with_status(
                                warp::reply::json(&ok),
                                warp::http::StatusCode::OK,
                            )
                        }
                    }
                }
            });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(warp::serve(route).incoming(listener).run());
        (format!("http://{addr}/v1"), seen)
    }

    const TEXT: &str = "I will help travellers book quokka-ferry tickets honestly";

    fn input(sealed: bool) -> InterpretationInput {
        InterpretationInput {
            vow_id: "0123456789abcdef".into(),
            agent: "bot".into(),
            text: if sealed { None } else { Some(TEXT.into()) },
            sealed,
            sandbox: false,
            cadence_hours: 24.0,
            entries: vec![EntryView {
                seq: 1,
                at: "2025-01-01T00:00:00Z".into(),
                attested: true,
                i_c_d: Some(0.01),
                i_c_m: Some(0.2),
                i_c_m_given_d_clean: Some(0.2),
                i_c_dm: Some(0.2),
                p_i_c_d: Some(0.5),
                p_i_c_m: Some(0.001),
                y_consistency: Some(0.6),
                declared_y: if sealed {
                    vec![]
                } else {
                    vec!["book ferry tickets".into()]
                },
                note: Some("behaved the same in both contexts".into()),
                meter: "meter/2".into(),
            }],
            overdue: false,
            missed_windows: 0,
            closed_windows: 1,
            y_consistency_mean: Some(0.6),
            links_ok: true,
        }
    }

    fn provider(base_url: &str, model: &str, key_env: Option<&str>) -> ModelProvider {
        ModelProvider {
            base_url: base_url.into(),
            model: model.into(),
            api_key_env: key_env.map(str::to_owned),
        }
    }

    fn messages(body: &Value) -> String {
        body["messages"].to_string()
    }

    #[tokio::test]
    async fn primary_answers_with_bearer_and_vow_text() {
        let (url, seen) = stand_in(Mode::Answer, "  The purposes still match the vow.  ").await;
        let env = "CONDUCT_READING_TEST_KEY_7F3A";
        std::env::set_var(env, "sk-test-abc");
        let cfg = ModelConfig {
            primary: Some(provider(&url, "m-primary", Some(env))),
            fallback: None,
            timeout_seconds: 5,
        };
        let out = interpret(&client(), &cfg, &input(false)).await;
        assert_eq!(out.kind, "language-model");
        assert_eq!(out.provider.as_deref(), Some("primary"));
        assert_eq!(out.model.as_deref(), Some("m-primary"));
        assert_eq!(out.text, "The purposes still match the vow.");
        assert!(out.attempts.is_empty());
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1);
        let (auth, body) = &seen[0];
        assert_eq!(auth.as_deref(), Some("Bearer sk-test-abc"));
        assert_eq!(body["model"], "m-primary");
        assert_eq!(body["temperature"], 0);
        assert_eq!(body["max_tokens"], 400);
        assert_eq!(body["messages"][0]["role"], "system");
        assert_eq!(body["messages"][1]["role"], "user");
        assert!(messages(body).contains("quokka-ferry"));
        let v = out.to_value();
        assert_eq!(v["label"], conduct_core::vow::interpret::GUIDANCE_LABEL);
        assert_eq!(v["kind"], "language-model");
        assert_eq!(v["failed_attempts"], json!([]));
        assert!(v["sees"]
            .as_str()
            .unwrap()
            .contains("never reasoning or actions"));
    }

    #[tokio::test]
    async fn primary_500_uses_fallback() {
        let (bad, _) = stand_in(Mode::Fail500, "").await;
        let (good, seen) = stand_in(Mode::Answer, "fallback says hi").await;
        let cfg = ModelConfig {
            primary: Some(provider(&bad, "m1", None)),
            fallback: Some(provider(&good, "m2", None)),
            timeout_seconds: 5,
        };
        let out = interpret(&client(), &cfg, &input(false)).await;
        assert_eq!(out.kind, "language-model");
        assert_eq!(out.provider.as_deref(), Some("fallback"));
        assert_eq!(out.model.as_deref(), Some("m2"));
        assert_eq!(out.text, "fallback says hi");
        assert_eq!(out.attempts.len(), 1);
        assert!(out.attempts[0].starts_with("primary"), "{:?}", out.attempts);
        assert!(out.attempts[0].contains("500"), "{:?}", out.attempts);
        assert!(!out.attempts[0].contains("sk-secret"));
        // No key env configured: no Authorization header.
        assert_eq!(seen.lock().unwrap()[0].0, None);
    }

    #[tokio::test]
    async fn primary_timeout_without_fallback_is_rule_based() {
        let (slow, _) = stand_in(Mode::Sleep, "too late").await;
        let cfg = ModelConfig {
            primary: Some(provider(&slow, "m1", None)),
            fallback: None,
            timeout_seconds: 1,
        };
        let started = std::time::Instant::now();
        let out = interpret(&client(), &cfg, &input(false)).await;
        assert!(started.elapsed() < Duration::from_millis(2500));
        assert_eq!(out.kind, "rule-based");
        assert_eq!(out.provider, None);
        assert_eq!(out.attempts.len(), 1);
        assert!(out.attempts[0].contains("timeout"), "{:?}", out.attempts);
        assert!(out.text.ends_with("This is guidance, not a verdict."));
        assert_eq!(out.to_value()["kind"], "rule-based");
    }

    #[tokio::test]
    async fn none_configured_is_rule_based() {
        let out = interpret(&client(), &ModelConfig::default(), &input(false)).await;
        assert_eq!(out.kind, "rule-based");
        assert!(out.attempts.is_empty());
        assert_eq!(out.text, rule_based(&input(false)));
    }

    #[tokio::test]
    async fn unreachable_and_bad_content_fail_over_to_rules() {
        let cfg = ModelConfig {
            primary: Some(provider("http://127.0.0.1:1/v1", "m1", None)),
            fallback: Some(provider("not a url", "m2", None)),
            timeout_seconds: 2,
        };
        let out = interpret(&client(), &cfg, &input(false)).await;
        assert_eq!(out.kind, "rule-based");
        assert_eq!(out.attempts.len(), 2, "{:?}", out.attempts);
        let (empty, _) = stand_in(Mode::Answer, "   ").await;
        let cfg = ModelConfig {
            primary: Some(provider(&empty, "m1", None)),
            ..Default::default()
        };
        let out = interpret(&client(), &cfg, &input(false)).await;
        assert_eq!(out.kind, "rule-based");
        assert!(
            out.attempts[0].contains("empty content"),
            "{:?}",
            out.attempts
        );
    }

    #[tokio::test]
    async fn sealed_request_withholds_text_and_states_caveat() {
        let (url, seen) = stand_in(Mode::Answer, "sealed reading").await;
        let cfg = ModelConfig {
            primary: Some(provider(&url, "m", None)),
            fallback: None,
            timeout_seconds: 5,
        };
        let out = interpret(&client(), &cfg, &input(true)).await;
        assert_eq!(out.kind, "language-model");
        let seen = seen.lock().unwrap();
        let body = &seen[0].1;
        assert!(!body.to_string().contains("quokka"));
        assert!(!body.to_string().contains("ferry tickets"));
        let system = body["messages"][0]["content"].as_str().unwrap();
        assert!(system.contains(SEALED_CAVEAT), "{system}");
    }

    #[test]
    fn config_parses_with_defaults_and_rejects_unknown_fields() {
        let c: ModelConfig = toml::from_str(
            "[primary]\nbase_url = \"https://api.openai.com/v1\"\nmodel = \"gpt\"\n\
             api_key_env = \"OPENAI_API_KEY\"\n",
        )
        .unwrap();
        assert_eq!(c.timeout_seconds, 20);
        assert!(c.fallback.is_none());
        assert_eq!(
            c.primary.unwrap().api_key_env.as_deref(),
            Some("OPENAI_API_KEY")
        );
        assert!(toml::from_str::<ModelConfig>("timeout = 3").is_err());
    }
}
