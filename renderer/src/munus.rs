//! The quest board's pages (library/MUNUS.md; ARCHITECTURE.md, "Where the next pieces plug
//! in"): the signed list `/munus` (`munus.json`, the body `conduct_core::munus::list::list_value`
//! builds, signed like every JSON file of the tree) and its HTML twin `munus.html`, and one
//! page per quest, `/munus/<id>` (`munus/<id>.json` and `munus/<id>.html`). The clean URLs
//! answer JSON or HTML by negotiation, as `/registry` and its tool pages do.
//!
//! A retired quest has no entry on the board; its page, when rendered, is a tombstone that says
//! retired (as `registry::absent_tool_files` does for a tool the chain no longer has). A quest
//! that left the operator's file without being retired gets an "absent" tombstone.
//!
//! Nothing here decides what is true: the board is folded from the log's records by
//! `conduct_core::munus::state::Board::fold`, and each payment's flag is what the chain said
//! when it was last re-read (`null` stays unknown: never shown as false, never zero).

use askama::Template;
use conduct_core::munus::list::list_value;
use conduct_core::munus::state::Board;
use conduct_core::scope::scope_value;
use conduct_core::signing::ServiceKey;
use conduct_core::time::rfc3339;
use serde_json::{json, Map, Value};

use crate::pages::PageHead;
use crate::snapshot::signed_bytes;
use crate::vows::Files;
use crate::RenderError;

/// Format name of a quest's page (`/munus/<id>`); the list is `conduct.munus/v1`
/// (`conduct_core::munus::list::LIST_TYPE`).
pub const QUEST_TYPE: &str = "conduct.munus-quest/v1";

/// The list's file stem (`munus.json`, `munus.html`: `GET /munus`).
pub const LIST_STEM: &str = "munus";

/// What a retired quest's page says.
pub const RETIRED_NOTE: &str = "The operator retired this quest: it is no longer on the board \
and takes no claim or delivery. Its claims, deliveries, lapses and payments stay in the \
transparency log (/log).";

/// What the page of a quest that left the board without being retired says.
pub const ABSENT_NOTE: &str = "No quest with this id is on the board now: the operator's quest \
file no longer names it. Its records, if any, stay in the transparency log (/log).";

/// The wording of a payment row's flag on the HTML pages: `true`, `false`, or `null` (the
/// chain did not answer: unknown, never false and never zero; library/MUNUS.md, "How a quest
/// is paid").
pub fn flag_words(flag: Option<bool>) -> &'static str {
    match flag {
        Some(true) => "confirmed on chain",
        Some(false) => "does not match",
        None => "the chain did not answer; unknown",
    }
}

/// The relative path stem of quest `id`'s page (`munus/<id>`).
pub fn quest_stem(id: &str) -> String {
    format!("{LIST_STEM}/{id}")
}

/// Everything the board's pages read.
pub struct MunusInput<'a> {
    /// Signs every JSON file.
    pub key: &'a ServiceKey,
    /// Public base URL, without a trailing slash.
    pub public_url: &'a str,
    /// The board folded at `now`.
    pub board: &'a Board,
    /// Why (part of) the operator's quest file could not be read, if so.
    pub claims_file_error: Option<&'a str>,
    /// Why (part of) the operator's payment file could not be read, if so.
    pub paid_file_error: Option<&'a str>,
    /// Render instant, unix seconds.
    pub now: u64,
}

/// The unsigned list at `input.now` (the body of `GET /munus`).
pub fn list_doc(input: &MunusInput<'_>) -> Value {
    list_value(
        input.board,
        input.claims_file_error,
        input.paid_file_error,
        input.now,
    )
}

/// How to claim and deliver `id` (`<id>` on the board), as the JSON of a quest page gives it.
fn how_to_claim(id: &str) -> Value {
    json!({
        "who": "a sworn agent: a vow signed with a wallet (/library/VOWS.md); a sandbox vow cannot claim",
        "claim": [
            format!("GET /play/message?action=claim&quest={id}&vow_id=<vow id>"),
            "sign the text exactly with the vow's wallet (EIP-191 personal_sign); it is good on its UTC day only, once".to_owned(),
            format!("POST /munus/{id}/claim with {{\"vow_id\": \"<vow id>\", \"signature\": \"0x<signature>\"}}"),
        ],
        "submit": [
            format!("GET /play/message?action=submit&quest={id}&vow_id=<vow id>&link=<https link to the pull request>"),
            "sign it with the same wallet".to_owned(),
            format!("POST /munus/{id}/submit with {{\"vow_id\": \"<vow id>\", \"link\": \"<the same link>\", \"signature\": \"0x<signature>\"}}"),
        ],
        "rules": "first come; one claim per vow per UTC day; a claim idle 14 days (no claim or delivery) lapses and the quest opens again; a person reviews the delivery and pays by a public on-chain transfer",
    })
}

/// The members every quest page shares with the list (`walls`, `done_is_not_settled`,
/// `how_verified`, `docs`, `why_this_is_the_quest`).
fn shared_members(list: &Value) -> Map<String, Value> {
    let mut m = Map::new();
    for k in [
        "walls",
        "done_is_not_settled",
        "how_verified",
        "docs",
        "why_this_is_the_quest",
    ] {
        m.insert(k.into(), list.get(k).cloned().unwrap_or(Value::Null));
    }
    m
}

// ---------------------------------------------------------------------------------------
// Rows of the HTML pages (built from the signed JSON, so the HTML says what the JSON says)

/// A delivery on the record, as the pages show it.
pub struct DeliveryRow {
    /// The link (https, checked; never fetched or run by the service).
    pub link: String,
    /// When it was recorded (RFC 3339).
    pub at: String,
    /// Its log index.
    pub log_index: u64,
}

/// A live (or settled) claim, as the pages show it.
pub struct ClaimRow {
    /// The claimant vow.
    pub vow_id: String,
    /// Its wallet (EIP-55).
    pub wallet: String,
    /// Log index of the claim record.
    pub log_index: u64,
    /// When it was claimed (RFC 3339).
    pub at: String,
    /// When it lapses if nothing happens (RFC 3339).
    pub lapses_at: String,
    /// The latest delivery, if any.
    pub delivery: Option<DeliveryRow>,
}

/// One quest, as the pages show it.
pub struct QuestRow {
    /// Quest id.
    pub id: String,
    /// Title.
    pub title: String,
    /// Rung of the design.
    pub rung: String,
    /// The work.
    pub what: String,
    /// What must be delivered.
    pub deliverable: String,
    /// `review` or `machine`.
    pub check: String,
    /// `open` or `done`.
    pub status: String,
    /// The claim, if one holds it (or settled it).
    pub claim: Option<ClaimRow>,
    /// Log index of the payment that settled it, if any.
    pub settled_by: Option<u64>,
    /// The house's own delivery, if the house did it.
    pub in_house: Option<String>,
}

/// One row of the paid ledger, as the pages show it.
pub struct PaidRowView {
    /// The quest paid for.
    pub quest_id: String,
    /// Recipient wallet.
    pub to: String,
    /// Amount in base units (decimal string).
    pub amount_scry: String,
    /// ERC-20 token address.
    pub token: String,
    /// EIP-155 chain id.
    pub chain_id: u64,
    /// Transaction hash.
    pub tx: String,
    /// Log index of the payment record.
    pub log_index: u64,
    /// The flag as JSON says it: `true`, `false` or `null`.
    pub flag: &'static str,
    /// The flag in words ([`flag_words`]).
    pub words: &'static str,
}

fn text(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_owned()
}

fn claim_row(c: &Value) -> Option<ClaimRow> {
    if !c.is_object() {
        return None;
    }
    let delivery = c["delivery"].is_object().then(|| DeliveryRow {
        link: text(&c["delivery"]["link"]),
        at: text(&c["delivery"]["at"]),
        log_index: c["delivery"]["log_index"].as_u64().unwrap_or_default(),
    });
    Some(ClaimRow {
        vow_id: text(&c["vow_id"]),
        wallet: text(&c["wallet"]),
        log_index: c["log_index"].as_u64().unwrap_or_default(),
        at: text(&c["at"]),
        lapses_at: match c["lapses_at"].as_str() {
            Some(t) => format!("{t} if idle until then"),
            None => "never: a payment is recorded on this claim".to_owned(),
        },
        delivery,
    })
}

/// A quest entry of the list as the pages show it.
fn quest_row(e: &Value) -> QuestRow {
    QuestRow {
        id: text(&e["id"]),
        title: text(&e["title"]),
        rung: text(&e["rung"]),
        what: text(&e["what"]),
        deliverable: text(&e["deliverable"]),
        check: text(&e["check"]),
        status: text(&e["status"]),
        claim: claim_row(&e["claim"]),
        settled_by: e["settled_by"]["payment_log_index"].as_u64(),
        in_house: e["delivered_in_house"].as_str().map(str::to_owned),
    }
}

/// A paid row of the list as the pages show it.
fn paid_row(p: &Value) -> PaidRowView {
    let flag = p["verified"].as_bool();
    PaidRowView {
        quest_id: text(&p["quest_id"]),
        to: text(&p["to"]),
        amount_scry: text(&p["amount_scry"]),
        token: text(&p["token"]),
        chain_id: p["chain_id"].as_u64().unwrap_or_default(),
        tx: text(&p["tx"]),
        log_index: p["log_index"].as_u64().unwrap_or_default(),
        flag: match flag {
            Some(true) => "true",
            Some(false) => "false",
            None => "null",
        },
        words: flag_words(flag),
    }
}

fn paid_rows<'v>(list: &'v Value, quest: Option<&'v str>) -> impl Iterator<Item = &'v Value> {
    list["paid"]
        .as_array()
        .map(|a| a.as_slice())
        .unwrap_or_default()
        .iter()
        .filter(move |p| quest.is_none_or(|q| p["quest_id"] == q))
}

/// The four walls as (key, text).
fn walls(list: &Value) -> Vec<(String, String)> {
    list["walls"].as_object().map_or(Vec::new(), |w| {
        w.iter().map(|(k, v)| (k.clone(), text(v))).collect()
    })
}

/// The counts of the quest list (library/MUNUS.md) under their names, in the list's order.
const COUNT_NAMES: [&str; 7] = [
    "open",
    "claimed",
    "delivered_in_house",
    "delivered_by_a_worker",
    "settled_to_a_worker",
    "unverified",
    "uncheckable_right_now",
];

/// The board page (`/munus`).
#[derive(Template)]
#[template(path = "munus.html")]
pub struct MunusPage<'a> {
    /// Head.
    pub head: PageHead<'a>,
    /// Public base URL.
    pub public_url: &'a str,
    /// Instant of the render (RFC 3339).
    pub at: String,
    /// Why these are the quests.
    pub why: String,
    /// The quests on the board.
    pub quests: Vec<QuestRow>,
    /// The counts as (spec name, value).
    pub counts: Vec<(&'static str, u64)>,
    /// The paid ledger.
    pub paid: Vec<PaidRowView>,
    /// The quest file's error, if any.
    pub claims_file_error: Option<String>,
    /// The payment file's error, if any.
    pub paid_file_error: Option<String>,
    /// Why done and settled are counted apart.
    pub done_is_not_settled: String,
    /// How the paid ledger is verified.
    pub how_verified: String,
    /// The walls as (key, text).
    pub walls: Vec<(String, String)>,
}

/// One quest's page (`/munus/<id>`), or its tombstone when `quest` is `None`.
#[derive(Template)]
#[template(path = "quest.html")]
pub struct QuestPage<'a> {
    /// Head.
    pub head: PageHead<'a>,
    /// Public base URL.
    pub public_url: &'a str,
    /// The quest id.
    pub id: &'a str,
    /// Instant of the render (RFC 3339).
    pub at: String,
    /// The quest, when on the board.
    pub quest: Option<QuestRow>,
    /// `retired` or `absent` with why, when not on the board.
    pub gone: Option<(&'static str, &'static str)>,
    /// The payments recorded for this quest.
    pub paid: Vec<PaidRowView>,
    /// Why done and settled are counted apart.
    pub done_is_not_settled: String,
    /// How the paid ledger is verified.
    pub how_verified: String,
    /// The walls as (key, text).
    pub walls: Vec<(String, String)>,
}

/// `/munus`: the signed list (`munus.json`) and its HTML twin (`munus.html`).
pub fn list_files(input: &MunusInput<'_>, list: &Value) -> Result<Files, RenderError> {
    let counts = COUNT_NAMES
        .iter()
        .map(|k| (*k, list[*k].as_u64().unwrap_or_default()))
        .collect();
    let page = MunusPage {
        head: PageHead::new(
            input.key,
            "Quest board",
            "Munus, the quest board: paid work on this service for sworn agents, each payment a public on-chain transfer re-read from the chain.",
        ),
        public_url: input.public_url,
        at: text(&list["at"]),
        why: text(&list["why_this_is_the_quest"]),
        quests: list["quests"]
            .as_array()
            .map_or(Vec::new(), |a| a.iter().map(quest_row).collect()),
        counts,
        paid: paid_rows(list, None).map(paid_row).collect(),
        claims_file_error: list["claims_file_error"].as_str().map(str::to_owned),
        paid_file_error: list["paid_file_error"].as_str().map(str::to_owned),
        done_is_not_settled: text(&list["done_is_not_settled"]),
        how_verified: text(&list["how_verified"]),
        walls: walls(list),
    }
    .render()?;
    Ok(vec![
        (
            format!("{LIST_STEM}.json"),
            signed_bytes(input.key, list.clone())?,
        ),
        (format!("{LIST_STEM}.html"), page.into_bytes()),
    ])
}

/// `/munus/<id>` of a quest on the board (JSON and HTML); `None` when `id` is not listed in
/// `list` (see [`gone_quest_files`]).
pub fn quest_files(
    input: &MunusInput<'_>,
    list: &Value,
    id: &str,
) -> Result<Option<Files>, RenderError> {
    let Some(entry) = list["quests"]
        .as_array()
        .and_then(|a| a.iter().find(|q| q["id"] == id))
    else {
        return Ok(None);
    };
    let paid: Vec<Value> = paid_rows(list, Some(id)).cloned().collect();
    let mut doc = shared_members(list);
    doc.insert("type".into(), json!(QUEST_TYPE));
    doc.insert("at".into(), list["at"].clone());
    doc.insert("quest".into(), entry.clone());
    doc.insert("paid".into(), Value::Array(paid.clone()));
    doc.insert("how_to_claim".into(), how_to_claim(id));
    doc.insert("list".into(), json!(format!("/{LIST_STEM}")));
    doc.insert("scope".into(), scope_value());
    let row = quest_row(entry);
    let title = format!("Quest {}: {}", row.id, row.title);
    let description = format!("Quest {id} of the board: its state, claim and payments.");
    let page = QuestPage {
        head: PageHead::new(input.key, &title, &description),
        public_url: input.public_url,
        id,
        at: text(&list["at"]),
        quest: Some(row),
        gone: None,
        paid: paid.iter().map(paid_row).collect(),
        done_is_not_settled: text(&list["done_is_not_settled"]),
        how_verified: text(&list["how_verified"]),
        walls: walls(list),
    }
    .render()?;
    let stem = quest_stem(id);
    Ok(Some(vec![
        (
            format!("{stem}.json"),
            signed_bytes(input.key, Value::Object(doc))?,
        ),
        (format!("{stem}.html"), page.into_bytes()),
    ]))
}

/// The tombstone of quest `id`, which is not on the board: `retired` (the operator retired
/// it) or not (it left the operator's file). No claim, status or count of it is shown; its
/// payments, if any, are (they stay in the log and in the list's paid ledger).
pub fn gone_quest_files(
    input: &MunusInput<'_>,
    list: &Value,
    id: &str,
    retired: bool,
) -> Result<Files, RenderError> {
    let (status, note) = if retired {
        ("retired", RETIRED_NOTE)
    } else {
        ("absent", ABSENT_NOTE)
    };
    let paid: Vec<Value> = paid_rows(list, Some(id)).cloned().collect();
    let doc = json!({
        "type": QUEST_TYPE,
        "at": rfc3339(input.now),
        "quest": {"id": id, "status": status, "note": note, "page": format!("/{}", quest_stem(id))},
        "paid": paid,
        "list": format!("/{LIST_STEM}"),
        "docs": list.get("docs").cloned().unwrap_or(Value::Null),
        "scope": scope_value(),
    });
    let title = format!("Quest {id}: {status}");
    let page = QuestPage {
        head: PageHead::new(input.key, &title, "A quest that is no longer on the board."),
        public_url: input.public_url,
        id,
        at: rfc3339(input.now),
        quest: None,
        gone: Some((status, note)),
        paid: paid.iter().map(paid_row).collect(),
        done_is_not_settled: text(&list["done_is_not_settled"]),
        how_verified: text(&list["how_verified"]),
        walls: walls(list),
    }
    .render()?;
    let stem = quest_stem(id);
    Ok(vec![
        (format!("{stem}.json"), signed_bytes(input.key, doc)?),
        (format!("{stem}.html"), page.into_bytes()),
    ])
}
