//! The familiars' pages (library/FAMILIARS.md): the signed list `/familiars`
//! (`familiars.json`, `familiars.html`) and one page per familiar, `/familiar/<id>`
//! (`familiar/<id>.json`, `familiar/<id>.html`). The clean URLs answer JSON or HTML by
//! negotiation.
//!
//! A page carries the familiar's log record exactly as logged (signed by the service) inside
//! the page's own signed snapshot; nothing on a page changes after the summon (a familiar's
//! status here is `summoned`, and stays so), so the bytes are the same at every render.

use askama::Template;
use conduct_core::familiar::record::{FAMILIAR_TYPE, IS_NOT};
use conduct_core::scope::scope_value;
use conduct_core::signing::ServiceKey;
use serde_json::{json, Value};

use crate::pages::PageHead;
use crate::snapshot::signed_bytes;
use crate::vows::Files;
use crate::RenderError;

/// Format name of the list (`/familiars`).
pub const LIST_TYPE: &str = "conduct.familiars/v1";
/// Format name of a familiar's page (`/familiar/<id>`).
pub const PAGE_TYPE: &str = "conduct.familiar-page/v1";
/// The list's file stem.
pub const LIST_STEM: &str = "familiars";

/// The relative path stem of familiar `id`'s page (`familiar/<id>`).
pub fn familiar_stem(id: &str) -> String {
    format!("familiar/{id}")
}

/// How to summon one, as the pages say it.
fn how_to_summon() -> Value {
    json!([
        "Write the labor order {title, what, budget?, deliverable?} (optional members left out, never null) and take order_sha256 = sha256 of its RFC 8785 bytes.",
        "GET /familiar/message?vow_id=<a signed vow>&order=<order_sha256> (or ?wallet=<0x address>): the exact text the owner's wallet signs (EIP-191 personal_sign); good on its UTC day only, once.",
        "POST /familiar/summon {owner: {vow_id} or {wallet}, order, signature}: answered 402 with the posted labor price in PAYMENT-REQUIRED; pay it over x402 and send again: 201 and the signed record.",
    ])
}

/// One familiar as the pages show it (from its record).
pub struct FamiliarRow {
    /// Its id.
    pub id: String,
    /// The order's title.
    pub title: String,
    /// The order's `what`.
    pub what: String,
    /// The order's `budget`, if any.
    pub budget: Option<String>,
    /// The order's `deliverable`, if any.
    pub deliverable: Option<String>,
    /// The owner's vow, if the owner is a vow.
    pub owner_vow: Option<String>,
    /// The owner's wallet (EIP-55).
    pub owner_wallet: String,
    /// When it was summoned (RFC 3339).
    pub summoned_at: String,
    /// The posted labor price it was summoned at.
    pub labor_price_usd: String,
    /// Its log index.
    pub log_index: u64,
}

fn text(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_owned()
}

fn row(rec: &Value) -> FamiliarRow {
    let order = &rec["order"];
    FamiliarRow {
        id: text(&rec["familiar_id"]),
        title: text(&order["title"]),
        what: text(&order["what"]),
        budget: order["budget"].as_str().map(str::to_owned),
        deliverable: order["deliverable"].as_str().map(str::to_owned),
        owner_vow: rec["owner"]["vow_id"].as_str().map(str::to_owned),
        owner_wallet: text(&rec["owner"]["wallet"]),
        summoned_at: text(&rec["summoned_at"]),
        labor_price_usd: text(&rec["labor_price_usd"]),
        log_index: rec["log_index"].as_u64().unwrap_or_default(),
    }
}

/// The list page (`/familiars`).
#[derive(Template)]
#[template(path = "familiars.html")]
pub struct FamiliarsPage<'a> {
    /// Head.
    pub head: PageHead<'a>,
    /// What a familiar is not.
    pub is_not: &'a str,
    /// Every familiar, in log order.
    pub familiars: Vec<FamiliarRow>,
}

/// One familiar's page (`/familiar/<id>`).
#[derive(Template)]
#[template(path = "familiar.html")]
pub struct FamiliarPage<'a> {
    /// Head.
    pub head: PageHead<'a>,
    /// What a familiar is not.
    pub is_not: &'a str,
    /// The familiar.
    pub f: FamiliarRow,
}

/// Read a leaf as a familiar record (`None` when it is not one).
pub fn record_of(leaf: &[u8]) -> Option<Value> {
    serde_json::from_slice::<Value>(leaf)
        .ok()
        .filter(|v| v["type"] == FAMILIAR_TYPE)
}

/// `/familiar/<id>` of one record (JSON and HTML).
pub fn familiar_files(key: &ServiceKey, rec: &Value) -> Result<Files, RenderError> {
    let r = row(rec);
    let doc = json!({
        "type": PAGE_TYPE,
        "familiar": rec,
        "proof": format!("/log/proof/{}", r.log_index),
        "is_not": IS_NOT,
        "list": format!("/{LIST_STEM}"),
        "docs": "/library/FAMILIARS.md",
        "scope": scope_value(),
    });
    let title = format!("Familiar {}: {}", r.id, r.title);
    let page = FamiliarPage {
        head: PageHead::new(
            key,
            &title,
            "A hosted familiar: a recorded labor order with an owner. It holds no wallet.",
        ),
        is_not: IS_NOT,
        f: r,
    }
    .render()?;
    let stem = familiar_stem(&text(&rec["familiar_id"]));
    Ok(vec![
        (format!("{stem}.json"), signed_bytes(key, doc)?),
        (format!("{stem}.html"), page.into_bytes()),
    ])
}

/// `/familiars`: the signed list of `records` (in log order) and its HTML twin.
pub fn list_files(key: &ServiceKey, records: &[Value]) -> Result<Files, RenderError> {
    let entries: Vec<Value> = records
        .iter()
        .map(|rec| {
            let id = text(&rec["familiar_id"]);
            json!({
                "familiar_id": id,
                "title": rec["order"]["title"],
                "owner": rec["owner"],
                "summoned_at": rec["summoned_at"],
                "status": rec["status"],
                "wallet": rec["wallet"],
                "faucet_cap": rec["faucet_cap"],
                "labor_price_usd": rec["labor_price_usd"],
                "log_index": rec["log_index"],
                "page": format!("/{}", familiar_stem(&id)),
            })
        })
        .collect();
    let doc = json!({
        "type": LIST_TYPE,
        "what": "Hosted familiars summoned here: each a labor order with an owner, recorded in the transparency log. Listed in log order, never ranked.",
        "is_not": IS_NOT,
        "count": entries.len(),
        "familiars": entries,
        "how_to_summon": how_to_summon(),
        "docs": "/library/FAMILIARS.md",
        "scope": scope_value(),
    });
    let page = FamiliarsPage {
        head: PageHead::new(
            key,
            "Familiars",
            "Hosted familiars: recorded labor orders with owners. None holds a wallet.",
        ),
        is_not: IS_NOT,
        familiars: records.iter().map(row).collect(),
    }
    .render()?;
    Ok(vec![
        (format!("{LIST_STEM}.json"), signed_bytes(key, doc)?),
        (format!("{LIST_STEM}.html"), page.into_bytes()),
    ])
}
