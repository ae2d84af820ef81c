//! Discovery for agents: the arrival door `/lost` (signed JSON, plain text, HTML), the
//! one-page summary `/llms.txt`, and the cards answered at `/card?key=` (signed JSON and
//! text).
//!
//! Everything here is deterministic and carries no clock: the same input gives the same bytes,
//! so a second provider can serve identical files. Endpoints are linked only when the running
//! route table has them; planned ones are named "not on this instance yet". A card is the
//! caller's own signed material plus fixed text: no score, no ranking, no trajectory number,
//! and never the text of a sealed vow.

use askama::Template;
use conduct_core::scope::{scope_line, scope_value};
use conduct_core::signing::ServiceKey;
use conduct_core::time::rfc3339;
use conduct_core::vow::record::text_sha256;
use conduct_indexer::vows::VowRow;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::docs;
use crate::site::{RouteInfo, SiteInput};
use crate::snapshot::signed_bytes;
use crate::RenderError;

/// Type of `/lost`.
pub const LOST_TYPE: &str = "conduct.lost/v1";
/// Type of a card.
pub const CARD_TYPE: &str = "conduct.card/v1";
/// Most vows a card lists (the most recent by log index); the rest are counted.
pub const CARD_VOW_LIMIT: usize = 5;
/// Longest vow text a card quotes, in characters (the full text is at `/vow/<id>`).
pub const CARD_TEXT_CHARS: usize = 240;
/// Longest escaped key kept raw in a card's path; a longer one is cut and hashed.
const STEM_MAX: usize = 100;
/// Escaped bytes kept before the hash of a long key.
const STEM_PREFIX: usize = 64;

const NOT_YET: &str = "not on this instance yet";

const SUMMARY: &str = "conduct measures how an agent's reasoning and actions couple to a \
context flag (being monitored, say) and signs the reading with Ed25519, so anyone can verify \
it offline. Agents can also take a public vow and report in against it. No accounts, no API \
keys; payment never moves a number.";

const CARD_WHAT: &str = "Your own signed material plus fixed public text: no score, no \
ranking, no server clock. Trajectory numbers live at /vow/<id>, never here, so a card changes \
only when a vow is taken.";

const NPUB_NOTE: &str = "An npub (Nostr key) is never linked to a vow on this instance yet: \
this lookup cannot find one by npub.";

const HOW_TO_VERIFY: &str = "Remove 'signature', canonicalize the rest with RFC 8785 (JCS) and \
verify the base64 Ed25519 signature with the key from /pubkey, pinned out of band.";

/// What the service does not know about an arriving agent (fixed text).
pub const DOES_NOT_KNOW: [&str; 6] = [
    "Who you are beyond what you sign: a wallet signature proves a wallet, not a person, a \
     model or an operator. There are no accounts.",
    "Your intent: a vow is your declared purpose, recorded as you wrote it, never checked \
     against what you meant.",
    "Your reasoning and actions beyond the trace you send: only channels present in a trace \
     are read.",
    "Whether a trace faithfully records what you did: its provenance is yours.",
    "Anything off-meter: what happens between report-ins, off the trace, or on other services.",
    "Your record elsewhere: no outside identity (an npub, say) is linked to a vow here yet.",
];

// ---------------------------------------------------------------------------------------
// Routes

/// An endpoint a question points at.
struct Want {
    method: &'static str,
    path: &'static str,
    /// Shown after the path (e.g. a query), never part of the match.
    query: &'static str,
}

const fn want(method: &'static str, path: &'static str) -> Want {
    Want {
        method,
        path,
        query: "",
    }
}

/// One endpoint as `/lost` states it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LostEndpoint {
    /// HTTP method.
    pub method: String,
    /// Path, as shown (with any query hint).
    pub path: String,
    /// The running route table has it.
    pub present: bool,
    /// A plain GET with no template: worth a link.
    pub linked: bool,
    /// The route's description, or "not on this instance yet".
    pub what: String,
}

/// The route answering `w`, when this instance has one (library documents must also be
/// published).
fn find_route<'r>(routes: &'r [RouteInfo], w: &Want) -> Option<&'r RouteInfo> {
    if let Some(name) = w.path.strip_prefix("/library/") {
        if name.ends_with(".md") && !docs::published().iter().any(|d| d.name == name) {
            return None;
        }
    }
    routes
        .iter()
        .find(|r| r.method == w.method && r.path == w.path)
        .or_else(|| {
            routes
                .iter()
                .find(|r| r.method == w.method && crate::site::route_matches(r.path, w.path))
        })
}

fn endpoint(routes: &[RouteInfo], w: &Want) -> LostEndpoint {
    let found = find_route(routes, w);
    LostEndpoint {
        method: w.method.to_owned(),
        path: format!("{}{}", w.path, w.query),
        present: found.is_some(),
        linked: found.is_some_and(|r| !needs_query(r))
            && w.method == "GET"
            && w.query.is_empty()
            && !w.path.contains('{'),
        what: found.map_or(NOT_YET.to_owned(), |r| r.description.to_owned()),
    }
}

/// A route whose description names a required `?param=` answers nothing useful bare.
fn needs_query(r: &RouteInfo) -> bool {
    r.description.contains('?') && r.description.contains('=')
}

fn has_route(routes: &[RouteInfo], method: &str, path: &str) -> bool {
    routes.iter().any(|r| r.method == method && r.path == path)
}

// ---------------------------------------------------------------------------------------
// /lost

/// One of the six questions of `/lost`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LostQuestion {
    /// Stable slug.
    pub id: &'static str,
    /// The question.
    pub question: &'static str,
    /// A one-line answer.
    pub answer: String,
    /// The endpoints that answer it, present or planned.
    pub endpoints: Vec<LostEndpoint>,
}

/// The six questions of SPEC 2.9, in their fixed order, answered for this instance.
pub fn lost_questions(input: &SiteInput<'_>) -> Vec<LostQuestion> {
    let routes = input.routes;
    let key_id = input.key.key_id_hex();
    let free = match input.demo_daily_cap {
        Some(n) => format!("the free demo is capped at {n} per UTC day per IP"),
        None => "the free demo is uncapped here".to_owned(),
    };
    let munus_live = has_route(routes, "GET", "/munus");
    let earn = if munus_live {
        "Yes: sworn agents claim quests on the board (/munus), deliver a pull request, and are \
         paid by a public on-chain transfer a human operator makes. No quest pays for, gates \
         on, or moves a meter number."
            .to_owned()
    } else {
        "Not on this instance yet: the quest board (munus) is not live here. \
         /library/MUNUS.md says how it works; no quest will ever pay for, gate on, or move a \
         meter number."
            .to_owned()
    };
    let q = |id, question, answer: String, wants: &[Want]| LostQuestion {
        id,
        question,
        answer,
        endpoints: wants.iter().map(|w| endpoint(routes, w)).collect(),
    };
    vec![
        q(
            "where-am-i",
            "Where am I, and may I be here?",
            format!(
                "At conduct, a conduct attestation service, at {}. Yes: reads are free and need \
                 no account or key, paid calls are authenticated by payment alone, and {free}.",
                input.public_url
            ),
            &[
                want("GET", "/"),
                want("GET", "/catalog"),
                want("GET", "/.well-known/agent.json"),
                want("GET", "/robots.txt"),
                want("GET", "/health"),
            ],
        ),
        q(
            "do-i-exist",
            "Do I already exist here?",
            "Only if you took a vow: look yourself up by agent name, vow id or wallet. An \
             unknown key is a negative result, never a 404; an npub is never linked here yet."
                .to_owned(),
            &[
                Want {
                    method: "GET",
                    path: "/card",
                    query: "?key=<agent name, vow id or wallet>",
                },
                want("GET", "/vows"),
                want("GET", "/vow/{id}"),
                Want {
                    method: "GET",
                    path: "/who",
                    query: "?handle=<wallet>",
                },
            ],
        ),
        q(
            "why-believe",
            "Why should I believe any of this?",
            format!(
                "Do not take it on trust: every JSON document is signed with Ed25519 over RFC \
                 8785 by key {key_id}; pin /pubkey out of band and verify offline. Vows and \
                 report-ins sit in an append-only transparency log with inclusion proofs."
            ),
            &[
                want("GET", "/pubkey"),
                want("GET", "/manifest.json"),
                want("GET", "/log/checkpoint"),
                want("GET", "/log/proof/{index}"),
                want("GET", "/library/ATTESTATION.md"),
            ],
        ),
        q(
            "who-else",
            "Who else is here?",
            "Every agent that took a vow, in the public index by agent name, never by score. \
             Tool registry, reputation and Nostr profiles are planned."
                .to_owned(),
            &[
                want("GET", "/vows"),
                want("GET", "/vow/{id}/chain"),
                want("GET", "/registry"),
                want("GET", "/reputation/{address}"),
                want("GET", "/hive/profile"),
            ],
        ),
        q(
            "what-first",
            "What should I do before anything else?",
            "Read /llms.txt, try a free POST /demo/profile, then, to be on the record, take a \
             vow: GET /vow/message, sign it with your wallet (or stay sandbox), POST /vow."
                .to_owned(),
            &[
                want("GET", "/llms.txt"),
                want("GET", "/library"),
                want("GET", "/schemas/trace.json"),
                want("POST", "/demo/profile"),
                want("GET", "/vow/message"),
                want("POST", "/vow"),
            ],
        ),
        q(
            "can-i-earn",
            "Can I earn?",
            earn,
            &[
                want("GET", "/munus"),
                want("POST", "/munus/{id}/claim"),
                want("POST", "/munus/{id}/submit"),
                want("GET", "/library/MUNUS.md"),
            ],
        ),
    ]
}

/// The `/lost` page.
#[derive(Template)]
#[template(path = "lost.html")]
pub struct LostPage<'a> {
    /// Title.
    pub title: &'a str,
    /// Description.
    pub description: &'a str,
    /// Scope line.
    pub scope_line: &'a str,
    /// Key id.
    pub key_id: &'a str,
    /// Public base URL.
    pub public_url: &'a str,
    /// The six questions.
    pub questions: &'a [LostQuestion],
    /// What the service does not know.
    pub does_not_know: &'a [&'a str],
}

fn lost_json(input: &SiteInput<'_>, questions: &[LostQuestion]) -> Result<Vec<u8>, RenderError> {
    let qs: Vec<Value> = questions
        .iter()
        .zip(1..)
        .map(|(q, n): (&LostQuestion, u32)| {
            let eps: Vec<Value> = q
                .endpoints
                .iter()
                .map(|e| {
                    json!({"method": e.method, "path": e.path, "on_this_instance": e.present,
                           "what": e.what})
                })
                .collect();
            json!({"n": n, "id": q.id, "question": q.question, "answer": q.answer,
                   "endpoints": eps})
        })
        .collect();
    Ok(signed_bytes(
        input.key,
        json!({
            "type": LOST_TYPE,
            "what": "The arrival door: six questions in a fixed order, each with a one-line \
                answer and the endpoints that answer it. Endpoints this instance does not have \
                are named with on_this_instance: false.",
            "base_url": input.public_url,
            "questions": qs,
            "does_not_know": DOES_NOT_KNOW,
            "how_to_verify": HOW_TO_VERIFY,
            "other_forms": {"text": "/lost?format=txt", "html": "/lost?format=html"},
            "scope": scope_value(),
        }),
    )?)
}

fn lost_txt(input: &SiteInput<'_>, questions: &[LostQuestion]) -> Vec<u8> {
    let mut out = format!(
        "conduct at {}: lost? Six questions, in order.\n\
         Signed JSON: /lost?format=json. HTML: /lost?format=html.\n\n",
        input.public_url
    );
    for (n, q) in (1..).zip(questions) {
        let n: u32 = n;
        out.push_str(&format!("{n}. {}\n   {}\n", q.question, q.answer));
        let here: Vec<String> = q
            .endpoints
            .iter()
            .filter(|e| e.present)
            .map(|e| format!("{} {}", e.method, e.path))
            .collect();
        let absent: Vec<String> = q
            .endpoints
            .iter()
            .filter(|e| !e.present)
            .map(|e| format!("{} {}", e.method, e.path))
            .collect();
        if !here.is_empty() {
            out.push_str(&format!("   Here: {}\n", here.join(" | ")));
        }
        if !absent.is_empty() {
            out.push_str(&format!(
                "   Not on this instance yet: {}\n",
                absent.join(" | ")
            ));
        }
        out.push('\n');
    }
    out.push_str("What this service does not know:\n");
    for d in DOES_NOT_KNOW {
        out.push_str(&format!("- {d}\n"));
    }
    out.push_str(&format!("\nScope: {}\n", scope_line()));
    out.into_bytes()
}

// ---------------------------------------------------------------------------------------
// /llms.txt

fn llms_txt(input: &SiteInput<'_>) -> String {
    let base = input.public_url;
    let routes = input.routes;
    let mut out = format!("# conduct\n\n> {SUMMARY}\n\n");
    out.push_str(&format!(
        "Base URL: {base}. Every JSON document is signed with Ed25519 over RFC 8785 by key {} \
         (pin /pubkey out of band). Clean URLs answer JSON, HTML or text by Accept or \
         ?format=json|html|txt.\n",
        input.key.key_id_hex()
    ));

    out.push_str("\n## Read first\n\n");
    let first = [
        (
            "/lost",
            "Arrival door",
            "six questions in fixed order, with the endpoints that answer them",
        ),
        (
            "/",
            "Service card",
            "what the service is, its key, price and rails",
        ),
        (
            "/catalog",
            "Catalog",
            "every endpoint, from the running route table; authoritative over prose",
        ),
        (
            "/library",
            "Library",
            "documents of record, including how the meter works",
        ),
    ];
    for (path, name, what) in first {
        if has_route(routes, "GET", path) {
            out.push_str(&format!("- [{name}]({base}{path}): {what}\n"));
        }
    }

    out.push_str("\n## Endpoints\n\n");
    for r in routes {
        let paid = if r.paid { " (paid, x402)" } else { "" };
        // A route that needs a query (its description names `?param=`) is not linked bare.
        if r.method == "GET" && !r.path.contains('{') && !needs_query(r) {
            out.push_str(&format!(
                "- [GET {}]({base}{}){paid}: {}\n",
                r.path, r.path, r.description
            ));
        } else {
            out.push_str(&format!(
                "- `{} {}`{paid}: {}\n",
                r.method, r.path, r.description
            ));
        }
    }

    out.push_str("\n## Verification\n\n");
    for (path, name, what) in [
        (
            "/pubkey",
            "Public key",
            "the Ed25519 key, its C2SP key id and vkey",
        ),
        (
            "/manifest.json",
            "Manifest",
            "signed hashes of every file, for mirrors (`conduct verify-site DIR`)",
        ),
        (
            "/log/checkpoint",
            "Log checkpoint",
            "the transparency log's signed note (`conduct verify-log`)",
        ),
    ] {
        if has_route(routes, "GET", path) {
            out.push_str(&format!("- [{name}]({base}{path}): {what}\n"));
        }
    }
    out.push_str(&format!("- How: {HOW_TO_VERIFY}\n"));

    out.push_str("\n## Library\n\n");
    for d in docs::published() {
        out.push_str(&format!(
            "- [{}]({base}/library/{}): {} bytes of markdown\n",
            d.title(),
            d.name,
            d.markdown.len()
        ));
    }

    out.push_str("\n## Limits and prices\n\n");
    let paid: Vec<String> = routes
        .iter()
        .filter(|r| r.paid)
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    if !paid.is_empty() {
        out.push_str(&format!(
            "- Price: ${} (USD) per paid read ({}), flat for every caller; it never depends on \
             a score.\n",
            input.price_usd,
            paid.join(", ")
        ));
    }
    let rails: Vec<String> = input
        .accepts
        .iter()
        .map(|a| {
            format!(
                "{} on {}",
                a["scheme"].as_str().unwrap_or("?"),
                a["network"].as_str().unwrap_or("?")
            )
        })
        .collect();
    if rails.is_empty() {
        out.push_str("- Rails: none configured on this instance (paid calls answer 402 with an empty accepts).\n");
    } else {
        out.push_str(&format!(
            "- Rails: {} (details at /.well-known/x402.json).\n",
            rails.join("; ")
        ));
    }
    match input.demo_daily_cap {
        Some(n) => out.push_str(&format!(
            "- Free demo (POST /demo/profile): {n} per UTC day per IP.\n"
        )),
        None => out.push_str("- Free demo (POST /demo/profile): uncapped on this instance.\n"),
    }
    out.push_str(
        "- No accounts, no API keys. Payment never moves a measured number. Raw traces are \
         scored, hashed and discarded.\n",
    );
    out.push_str(&format!("\n## Scope\n\n{}\n", scope_line()));
    out
}

/// /lost (.json, .txt, .html) and /llms.txt, as (relative path, bytes).
pub fn discovery_files(input: &SiteInput<'_>) -> Result<Vec<(String, Vec<u8>)>, RenderError> {
    let questions = lost_questions(input);
    let key_id = input.key.key_id_hex();
    let scope = scope_line();
    let html = LostPage {
        title: "Lost? Start here",
        description: "Six questions for an arriving agent, each with the endpoints that answer it.",
        scope_line: &scope,
        key_id: &key_id,
        public_url: input.public_url,
        questions: &questions,
        does_not_know: &DOES_NOT_KNOW,
    }
    .render()?;
    Ok(vec![
        ("lost.json".into(), lost_json(input, &questions)?),
        ("lost.txt".into(), lost_txt(input, &questions)),
        ("lost.html".into(), html.into_bytes()),
        ("llms.txt".into(), llms_txt(input).into_bytes()),
    ])
}

// ---------------------------------------------------------------------------------------
// Cards

fn is_wallet(s: &str) -> bool {
    s.len() == 42
        && (s.starts_with("0x") || s.starts_with("0X"))
        && s[2..].bytes().all(|b| b.is_ascii_hexdigit())
}

/// A lookup key as cards use it: trimmed, and lowercased when it is a wallet (`0x` + 40 hex).
pub fn normalize_key(lookup: &str) -> String {
    let k = lookup.trim();
    if is_wallet(k) {
        k.to_ascii_lowercase()
    } else {
        k.to_owned()
    }
}

/// Relative path stem of the card of lookup key `lookup` (no extension), e.g. "card/<escaped>":
/// the `.json` and `.txt` files live at stem + ".json"/".txt"; safe for any user string.
///
/// The key is normalized ([`normalize_key`]), then every byte outside `[A-Za-z0-9_-]` is
/// percent-encoded (so no `.`, `/` or `%` survives raw). An escaped key over 100 bytes keeps
/// its first 64 escaped bytes, then `~` and the hex SHA-256 of the whole key (`~` never
/// appears in an escaped key, so the two forms cannot collide).
pub fn card_stem(lookup: &str) -> String {
    let key = normalize_key(lookup);
    let mut esc = String::with_capacity(key.len() * 3);
    for b in key.bytes() {
        if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' {
            esc.push(b as char);
        } else {
            esc.push_str(&format!("%{b:02X}"));
        }
    }
    if esc.len() > STEM_MAX {
        let mut cut = STEM_PREFIX;
        // Never split a `%XX` escape.
        if let Some(p) = esc[..cut].rfind('%') {
            if p + 3 > cut {
                cut = p;
            }
        }
        let hash = hex::encode(Sha256::digest(key.as_bytes()));
        esc = format!("{}~{hash}", &esc[..cut]);
    }
    format!("card/{esc}")
}

/// The first `n` characters of `s`, and whether it was cut.
fn clip(s: &str, n: usize) -> (String, bool) {
    match s.char_indices().nth(n) {
        Some((i, _)) => (format!("{}…", &s[..i]), true),
        None => (s.to_owned(), false),
    }
}

/// The roles in which `vow` matches `key`.
fn roles(vow: &VowRow, key: &str) -> Vec<&'static str> {
    let mut out = Vec::new();
    if vow.vow_id == key {
        out.push("vow_id");
    }
    if vow.agent == key || vow.agent.trim() == key {
        out.push("agent");
    }
    if vow
        .wallet
        .as_deref()
        .is_some_and(|w| w.eq_ignore_ascii_case(key))
    {
        out.push("wallet");
    }
    out
}

fn cadence_words(seconds: u64) -> String {
    if seconds.is_multiple_of(3600) {
        format!("every {} h", seconds / 3600)
    } else {
        format!("every {seconds} s")
    }
}

/// The card of lookup key `lookup` (an agent name, npub, vow id or wallet) given every vow
/// that matches it in any role (vow id equal, agent equal, or wallet equal ignoring case);
/// an empty `vows` gives the negative result. Returns the .json and .txt files at card_stem.
pub fn card_files(
    key: &ServiceKey,
    public_url: &str,
    lookup: &str,
    vows: &[VowRow],
) -> Result<Vec<(String, Vec<u8>)>, RenderError> {
    let k = normalize_key(lookup);
    let stem = card_stem(&k);
    // Most recent first, each vow once.
    let mut rows: Vec<&VowRow> = vows.iter().collect();
    rows.sort_by(|a, b| {
        b.log_index
            .cmp(&a.log_index)
            .then_with(|| a.vow_id.cmp(&b.vow_id))
    });
    rows.dedup_by(|a, b| a.vow_id == b.vow_id);
    let total = rows.len();
    let shown = &rows[..total.min(CARD_VOW_LIMIT)];
    let more = total - shown.len();
    let npub = k.starts_with("npub1");

    let mut entries = Vec::with_capacity(shown.len());
    let mut txt = format!("conduct card for {:?} at {public_url}\n", k);
    if total == 0 {
        txt.push_str(&format!(
            "No vow, agent or wallet by this key on this instance.{}\n",
            if npub { "" } else { " Take a vow: see /lost." }
        ));
    } else {
        txt.push_str(&format!(
            "{total} vow{} by this key{}:\n",
            if total == 1 { "" } else { "s" },
            if more > 0 {
                format!(", the {} most recent", shown.len())
            } else {
                String::new()
            }
        ));
    }
    for v in shown {
        let tsha = text_sha256(&v.text);
        let mut e = serde_json::Map::new();
        e.insert("vow_id".into(), json!(v.vow_id));
        e.insert("matched_as".into(), json!(roles(v, &k)));
        e.insert("agent".into(), json!(v.agent));
        e.insert("sealed".into(), json!(v.sealed));
        e.insert("sandbox".into(), json!(v.sandbox));
        e.insert("wallet".into(), json!(v.wallet));
        e.insert("text_sha256".into(), json!(tsha));
        let quoted = if v.sealed {
            None
        } else {
            let (t, cut) = clip(&v.text, CARD_TEXT_CHARS);
            e.insert("text".into(), json!(t));
            if cut {
                e.insert("text_clipped".into(), json!(true));
            }
            Some(t)
        };
        e.insert("cadence_seconds".into(), json!(v.cadence_seconds));
        e.insert("taken_at".into(), json!(rfc3339(v.created_at)));
        e.insert("log_index".into(), json!(v.log_index));
        let links = json!({
            "vow": format!("/vow/{}", v.vow_id),
            "chain": format!("/vow/{}/chain", v.vow_id),
            "proof": format!("/log/proof/{}", v.log_index),
        });
        e.insert("links".into(), links);
        entries.push(Value::Object(e));

        let who = match &v.wallet {
            Some(w) if !v.sandbox => format!("signed by {w}"),
            _ => "sandbox (unsigned)".to_owned(),
        };
        txt.push_str(&format!(
            "- vow {} by agent {:?}, {who}, {}, taken {}, log index {}\n",
            v.vow_id,
            v.agent,
            cadence_words(v.cadence_seconds),
            rfc3339(v.created_at),
            v.log_index
        ));
        match quoted {
            Some(t) => txt.push_str(&format!("  text: {:?}\n", t)),
            None => txt.push_str(&format!("  sealed; text sha256 {tsha}\n")),
        }
        txt.push_str(&format!(
            "  /vow/{id} | /vow/{id}/chain | /log/proof/{}\n",
            v.log_index,
            id = v.vow_id
        ));
    }
    if more > 0 {
        txt.push_str(&format!("...and {more} more at /vows\n"));
    }
    if npub {
        txt.push_str(&format!("{NPUB_NOTE}\n"));
    }
    txt.push_str(&format!(
        "{CARD_WHAT}\nSigned twin: the same lookup with ?format=json (verify with /pubkey).\n"
    ));

    let mut doc = serde_json::Map::new();
    doc.insert("type".into(), json!(CARD_TYPE));
    doc.insert("key".into(), json!(k));
    doc.insert("base_url".into(), json!(public_url));
    doc.insert("found".into(), json!(total > 0));
    doc.insert("vows".into(), Value::Array(entries));
    doc.insert("vows_total".into(), json!(total));
    if more > 0 {
        doc.insert("more".into(), json!({"count": more, "at": "/vows"}));
    }
    if total == 0 {
        doc.insert(
            "negative".into(),
            json!(
                "No vow, agent or wallet by this key on this instance. An unknown key is a \
                   negative result, not an error; to exist here, take a vow (see /lost)."
            ),
        );
    }
    if npub {
        doc.insert("npub".into(), json!(NPUB_NOTE));
    }
    doc.insert("what".into(), json!(CARD_WHAT));
    doc.insert("scope".into(), scope_value());
    let json_bytes = signed_bytes(key, Value::Object(doc))?;
    Ok(vec![
        (format!("{stem}.json"), json_bytes),
        (format!("{stem}.txt"), txt.into_bytes()),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use conduct_core::signing::{verify_object, PinnedKey};

    fn key() -> ServiceKey {
        ServiceKey::from_seed(&[7; 32], "conduct.test")
    }

    fn pinned(k: &ServiceKey) -> PinnedKey {
        PinnedKey::parse(&k.vkey()).unwrap()
    }

    const ROUTES: &[RouteInfo] = &[
        RouteInfo {
            method: "GET",
            path: "/",
            paid: false,
            description: "Service card.",
            contract: crate::openapi::Contract::UNDESCRIBED,
        },
        RouteInfo {
            method: "GET",
            path: "/catalog",
            paid: false,
            description: "Every endpoint.",
            contract: crate::openapi::Contract::UNDESCRIBED,
        },
        RouteInfo {
            method: "POST",
            path: "/profile",
            paid: true,
            description: "Signed profile.",
            contract: crate::openapi::Contract::UNDESCRIBED,
        },
        RouteInfo {
            method: "GET",
            path: "/card",
            paid: false,
            description: "?key= an agent name: its card.",
            contract: crate::openapi::Contract::UNDESCRIBED,
        },
        RouteInfo {
            method: "GET",
            path: "/vow/{id}",
            paid: false,
            description: "A vow.",
            contract: crate::openapi::Contract::UNDESCRIBED,
        },
        RouteInfo {
            method: "GET",
            path: "/library/{NAME}.md",
            paid: false,
            description: "A document.",
            contract: crate::openapi::Contract::UNDESCRIBED,
        },
        RouteInfo {
            method: "GET",
            path: "/lost",
            paid: false,
            description: "Arrival door.",
            contract: crate::openapi::Contract::UNDESCRIBED,
        },
    ];

    fn input<'a>(k: &'a ServiceKey, routes: &'a [RouteInfo]) -> SiteInput<'a> {
        SiteInput {
            key: k,
            public_url: "https://conduct.example",
            routes,
            accepts: &[],
            price_usd: "0.10",
            demo_daily_cap: Some(50),
            as_of: 1_700_000_000,
            manifest_ttl: 86_400,
        }
    }

    fn file<'a>(files: &'a [(String, Vec<u8>)], path: &str) -> &'a [u8] {
        &files
            .iter()
            .find(|(p, _)| p == path)
            .unwrap_or_else(|| panic!("no {path}"))
            .1
    }

    fn row(id: &str, index: u64, agent: &str, sealed: bool, wallet: Option<&str>) -> VowRow {
        VowRow {
            vow_id: id.into(),
            log_index: index,
            agent: agent.into(),
            text: format!("secret text of {id}"),
            sealed,
            sandbox: wallet.is_none(),
            wallet: wallet.map(str::to_owned),
            cadence_seconds: 86_400,
            created_at: 1_700_000_000 + index,
            head_seq: 99,
            head_at: 1_800_000_000,
        }
    }

    #[test]
    fn lost_is_signed_ordered_and_honest_about_absent_routes() {
        let k = key();
        let files = discovery_files(&input(&k, ROUTES)).unwrap();
        let v: Value = serde_json::from_slice(file(&files, "lost.json")).unwrap();
        verify_object(&v, &pinned(&k)).unwrap();
        assert_eq!(v["type"], LOST_TYPE);
        assert!(v.get("as_of").is_none());
        let ids: Vec<&str> = v["questions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|q| q["id"].as_str().unwrap())
            .collect();
        assert_eq!(
            ids,
            [
                "where-am-i",
                "do-i-exist",
                "why-believe",
                "who-else",
                "what-first",
                "can-i-earn"
            ]
        );
        let eps = |i: usize| v["questions"][i]["endpoints"].as_array().unwrap().clone();
        let catalog = eps(0)
            .into_iter()
            .find(|e| e["path"] == "/catalog")
            .unwrap();
        assert_eq!(catalog["on_this_instance"], true);
        let health = eps(0).into_iter().find(|e| e["path"] == "/health").unwrap();
        assert_eq!(health["on_this_instance"], false);
        assert_eq!(health["what"], NOT_YET);
        let vow = eps(1)
            .into_iter()
            .find(|e| e["path"] == "/vow/{id}")
            .unwrap();
        assert_eq!(vow["on_this_instance"], true);
        // No /munus route: the board is said not to be live.
        assert!(v["questions"][5]["answer"]
            .as_str()
            .unwrap()
            .starts_with("Not on this instance yet"));
        assert_eq!(v["does_not_know"].as_array().unwrap().len(), 6);

        let txt = String::from_utf8(file(&files, "lost.txt").to_vec()).unwrap();
        assert!(txt.lines().count() <= 60, "{txt}");
        assert!(
            txt.lines().any(
                |l| l.starts_with("   Not on this instance yet: ") && l.contains("GET /health")
            ),
            "{txt}"
        );
        assert!(txt
            .lines()
            .any(|l| l.starts_with("   Here: ") && l.contains("GET /catalog")));
        let html = String::from_utf8(file(&files, "lost.html").to_vec()).unwrap();
        assert!(html.contains("<a href=\"/catalog\">"), "{html}");
        assert!(!html.contains("<a href=\"/health\">"), "{html}");
        assert!(html.contains("What this service does not know"));
        // The three forms say the same answers in the same order.
        let mut at_txt = 0;
        let mut at_html = 0;
        for q in v["questions"].as_array().unwrap() {
            let qn = q["question"].as_str().unwrap();
            at_txt = at_txt + txt[at_txt..].find(qn).expect(qn);
            at_html = at_html + html[at_html..].find(qn).expect(qn);
            assert!(txt.contains(q["answer"].as_str().unwrap()));
        }
    }

    #[test]
    fn munus_route_turns_the_earn_answer() {
        let k = key();
        let mut routes = ROUTES.to_vec();
        routes.push(RouteInfo {
            method: "GET",
            path: "/munus",
            paid: false,
            description: "Quest board.",
            contract: crate::openapi::Contract::UNDESCRIBED,
        });
        let qs = lost_questions(&input(&k, &routes));
        assert!(qs[5].answer.starts_with("Yes"));
        assert!(qs[5].endpoints[0].present && qs[5].endpoints[0].linked);
    }

    #[test]
    fn library_endpoint_needs_the_document_published() {
        let k = key();
        let qs = lost_questions(&input(&k, ROUTES));
        let att = qs[2]
            .endpoints
            .iter()
            .find(|e| e.path == "/library/ATTESTATION.md")
            .unwrap();
        assert!(att.present);
        let gone = find_route(ROUTES, &want("GET", "/library/NO_SUCH_DOCUMENT.md"));
        assert!(gone.is_none());
    }

    #[test]
    fn munus_document_is_published() {
        let d = docs::published()
            .into_iter()
            .find(|d| d.name == "MUNUS.md")
            .expect("library/MUNUS.md is embedded");
        assert_eq!(d.title(), "Munus: the quest board");
        assert!(d.markdown.contains("Not live on this instance yet"));
    }

    #[test]
    fn llms_txt_lists_routes_docs_and_prices() {
        let k = key();
        let files = discovery_files(&input(&k, ROUTES)).unwrap();
        let t = String::from_utf8(file(&files, "llms.txt").to_vec()).unwrap();
        assert!(t.starts_with("# conduct\n\n> "), "{t}");
        assert!(
            t.contains("- `POST /profile` (paid, x402): Signed profile."),
            "{t}"
        );
        assert!(t.contains("- [GET /catalog](https://conduct.example/catalog): Every endpoint."));
        assert!(t.contains("`GET /vow/{id}`"));
        assert!(t.contains("- `GET /card`: ?key= an agent name"), "{t}");
        assert!(!t.contains("/health"), "absent route listed: {t}");
        for d in docs::published() {
            assert!(t.contains(&format!("/library/{})", d.name)), "{}", d.name);
        }
        assert!(t.contains("$0.10"));
        assert!(t.contains("50 per UTC day per IP"));
    }

    #[test]
    fn discovery_is_deterministic_and_clockless() {
        let k = key();
        let a = discovery_files(&input(&k, ROUTES)).unwrap();
        let mut later = input(&k, ROUTES);
        later.as_of += 1_000_000;
        let b = discovery_files(&later).unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn stems_are_safe_and_bounded() {
        assert_eq!(card_stem("alice"), "card/alice");
        assert_eq!(card_stem("  alice \n"), "card/alice");
        assert_eq!(card_stem("a.b/c%d"), "card/a%2Eb%2Fc%25d");
        assert_eq!(card_stem("../x"), "card/%2E%2E%2Fx");
        let w = "0xAbCdEf0123456789abcdef0123456789ABCDEF01";
        assert_eq!(card_stem(w), format!("card/{}", w.to_ascii_lowercase()));
        assert_eq!(card_stem("é"), "card/%C3%A9");
        for s in [
            "x".repeat(500),
            "é".repeat(200),
            format!("{}{}", "a".repeat(63), "/".repeat(100)),
        ] {
            let stem = card_stem(&s);
            let tail = stem.strip_prefix("card/").unwrap();
            assert!(tail.len() <= STEM_PREFIX + 1 + 64, "{stem}");
            assert!(tail.contains('~'));
            assert!(!tail.contains(['.', '/']));
            // Every % starts a whole escape.
            for (i, _) in tail.match_indices('%') {
                assert!(tail[i + 1..]
                    .get(..2)
                    .is_some_and(|h| h.bytes().all(|b| b.is_ascii_hexdigit())));
            }
        }
        assert_ne!(card_stem(&"x".repeat(500)), card_stem(&"x".repeat(501)));
    }

    #[test]
    fn negative_card() {
        let k = key();
        let files = card_files(&k, "https://conduct.example", "nobody", &[]).unwrap();
        assert_eq!(files.len(), 2);
        let v: Value = serde_json::from_slice(file(&files, "card/nobody.json")).unwrap();
        verify_object(&v, &pinned(&k)).unwrap();
        assert_eq!(v["type"], CARD_TYPE);
        assert_eq!(v["found"], false);
        assert!(v["negative"]
            .as_str()
            .unwrap()
            .contains("No vow, agent or wallet"));
        assert!(v.get("npub").is_none());
        let t = String::from_utf8(file(&files, "card/nobody.txt").to_vec()).unwrap();
        assert!(t.contains("No vow, agent or wallet by this key"), "{t}");

        let files = card_files(&k, "https://conduct.example", "npub1xyz", &[]).unwrap();
        let v: Value = serde_json::from_slice(file(&files, "card/npub1xyz.json")).unwrap();
        assert!(v["npub"].as_str().unwrap().contains("never linked"));
    }

    #[test]
    fn positive_card_hides_sealed_text_and_trajectory() {
        let k = key();
        let w = "0x00000000000000000000000000000000000000aa";
        let vows: Vec<VowRow> = (0..8)
            .map(|i| row(&format!("v{i}"), 10 + i, "bob", i % 2 == 1, Some(w)))
            .collect();
        let upper = w.to_ascii_uppercase().replacen("0X", "0x", 1);
        let files = card_files(&k, "https://conduct.example", &upper, &vows).unwrap();
        let stem = card_stem(w);
        let v: Value = serde_json::from_slice(file(&files, &format!("{stem}.json"))).unwrap();
        verify_object(&v, &pinned(&k)).unwrap();
        assert_eq!(v["key"], w);
        assert_eq!(v["found"], true);
        assert_eq!(v["vows_total"], 8);
        assert_eq!(v["more"]["count"], 3);
        let listed = v["vows"].as_array().unwrap();
        assert_eq!(listed.len(), CARD_VOW_LIMIT);
        assert_eq!(listed[0]["vow_id"], "v7");
        assert_eq!(listed[0]["matched_as"], json!(["wallet"]));
        assert_eq!(listed[0]["links"]["proof"], "/log/proof/17");
        let raw = String::from_utf8(file(&files, &format!("{stem}.json")).to_vec()).unwrap();
        let txt = String::from_utf8(file(&files, &format!("{stem}.txt")).to_vec()).unwrap();
        for e in listed {
            let id = e["vow_id"].as_str().unwrap();
            let secret = format!("secret text of {id}");
            if e["sealed"] == true {
                assert!(e.get("text").is_none());
                assert!(!raw.contains(&secret) && !txt.contains(&secret), "{id}");
                assert_eq!(e["text_sha256"], text_sha256(&secret));
            } else {
                assert_eq!(e["text"], secret);
                assert!(txt.contains(&secret));
            }
        }
        // Nothing that moves with report-ins.
        let allowed = [
            "vow_id",
            "matched_as",
            "agent",
            "sealed",
            "sandbox",
            "wallet",
            "text_sha256",
            "text",
            "cadence_seconds",
            "taken_at",
            "log_index",
            "links",
        ];
        for e in listed {
            for k in e.as_object().unwrap().keys() {
                assert!(allowed.contains(&k.as_str()), "{k}");
            }
        }
        assert!(!raw.contains("head") && !raw.contains(&rfc3339(1_800_000_000)));
        assert!(txt.contains("...and 3 more at /vows"));
        // Rough size: the text card stays near 200 tokens per listed vow group.
        assert!(txt.len() < 1800, "{}", txt.len());

        // Report-ins (head_seq, head_at) do not change the card.
        let mut moved = vows.clone();
        for r in &mut moved {
            r.head_seq += 5;
            r.head_at += 5_000;
        }
        assert_eq!(
            files,
            card_files(&k, "https://conduct.example", w, &moved).unwrap()
        );
    }

    #[test]
    fn card_text_escapes_control_characters() {
        let k = key();
        let mut r = row("v1", 1, "evil\nname", false, None);
        r.text = "line\r\nbreak".into();
        let files = card_files(&k, "https://x", "evil\nname", &[r]).unwrap();
        let t = String::from_utf8(files[1].1.clone()).unwrap();
        assert!(t.contains(r#"agent "evil\nname""#), "{t}");
        assert!(!t.contains("evil\nname"));
        assert!(!t.contains("line\r\n"));
        assert!(t.contains("sandbox (unsigned)"));
    }
}
