//! The cards answered at `/card?key=` and `/card/{key}` (signed JSON, text and an HTML twin):
//! the caller's own signed material plus fixed text, with no score, no ranking, no trajectory
//! number, and never the text of a sealed vow.

use askama::Template;

use conduct_core::scope::scope_value;
use conduct_core::signing::ServiceKey;
use conduct_core::time::rfc3339;
use conduct_core::vow::record::text_sha256;
use conduct_indexer::vows::VowRow;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::pages::PageHead;
use crate::snapshot::signed_bytes;
use crate::vow_html::{cadence_words, CadenceStyle};
use crate::RenderError;

/// Type of a card.
pub const CARD_TYPE: &str = "conduct.card/v1";
/// Most vows a card lists (the most recent by log index); the rest are counted.
pub const CARD_VOW_LIMIT: usize = 5;
/// Longest vow text a card quotes, in characters (the full text is at `/vow/<id>`).
pub const CARD_TEXT_CHARS: usize = 240;
/// Longest escaped key kept raw in a card's path; a longer one is cut and hashed.
const STEM_MAX: usize = 100;
/// Escaped bytes kept before the hash of a long key.
pub(super) const STEM_PREFIX: usize = 64;

const CARD_WHAT: &str = "Your own signed material plus fixed public text: no score, no \
ranking, no server clock. Trajectory numbers live at /vow/<id>, never here, so a card changes \
only when a vow is taken or an npub bound.";

const NPUB_UNBOUND: &str = "This npub (Nostr key) is not bound to any vow here. An agent binds \
its npub to its signed vow with POST /nostr/bind, signed by both the vow's wallet and the \
npub's key (/library/NOSTR.md).";

const NPUB_BOUND: &str = "This npub is bound to the vow listed by a binding record of the log, \
signed by the vow's wallet (EIP-191) and by the npub's key (BIP-340); the latest binding of an \
npub wins (/library/NOSTR.md).";

/// One vow as a card's HTML twin lists it.
struct CardVow {
    id: String,
    agent: String,
    who: String,
    cadence: String,
    taken: String,
    log_index: u64,
    text: Option<String>,
    text_sha256: String,
}

/// The HTML twin of a card.
#[derive(Template)]
#[template(path = "keycard.html")]
struct KeyCardPage<'a> {
    head: PageHead<'a>,
    key: &'a str,
    summary: String,
    vows: Vec<CardVow>,
    more: usize,
    npub: Option<String>,
    what: &'a str,
}

/// A binding of the npub a card looks up, as the card shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CardBinding<'a> {
    /// The npub.
    pub npub: &'a str,
    /// Its key, lowercase hex.
    pub pubkey: &'a str,
    /// The vow it names.
    pub vow_id: &'a str,
    /// Log index of the binding record.
    pub log_index: u64,
}

fn is_wallet(s: &str) -> bool {
    s.len() == 42
        && (s.starts_with("0x") || s.starts_with("0X"))
        && s[2..].bytes().all(|b| b.is_ascii_hexdigit())
}

/// A lookup key as cards use it: trimmed, and lowercased when it is a wallet (`0x` + 40 hex) or
/// an npub (written in capitals, a Bech32 string is the same npub).
pub fn normalize_key(lookup: &str) -> String {
    let k = lookup.trim();
    if is_wallet(k) || conduct_core::nostr::npub_decode(k).is_ok() {
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

/// The roles in which `vow` matches `key` (`binding`: the npub `key` is bound to a vow).
fn roles(vow: &VowRow, key: &str, binding: Option<CardBinding<'_>>) -> Vec<&'static str> {
    let mut out = Vec::new();
    if binding.is_some_and(|b| b.vow_id == vow.vow_id && b.npub == key) {
        out.push("npub");
    }
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

/// The card of lookup key `lookup` (an agent name, npub, vow id or wallet) given every vow
/// that matches it in any role (vow id equal, agent equal, or wallet equal ignoring case);
/// an empty `vows` gives the negative result. Returns the .json and .txt files at card_stem.
pub fn card_files(
    key: &ServiceKey,
    public_url: &str,
    lookup: &str,
    vows: &[VowRow],
) -> Result<Vec<(String, Vec<u8>)>, RenderError> {
    card_files_bound(key, public_url, lookup, vows, None)
}

/// [`card_files`] for an npub bound to a vow: `vows` holds that vow, and the card names the
/// binding record (`binding`; `None` for an npub bound nowhere, or another key).
pub fn card_files_bound(
    key: &ServiceKey,
    public_url: &str,
    lookup: &str,
    vows: &[VowRow],
    binding: Option<CardBinding<'_>>,
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
    let binding = binding.filter(|b| b.npub == k);

    let mut entries = Vec::with_capacity(shown.len());
    let mut html_vows = Vec::with_capacity(shown.len());
    let mut txt = format!("conduct card for {:?} at {public_url}\n", k);
    let summary = if total == 0 {
        format!(
            "No vow, agent or wallet by this key on this instance.{}",
            if npub { "" } else { " Take a vow: see /lost." }
        )
    } else {
        format!(
            "{total} vow{} by this key{}:",
            if total == 1 { "" } else { "s" },
            if more > 0 {
                format!(", the {} most recent", shown.len())
            } else {
                String::new()
            }
        )
    };
    txt.push_str(&summary);
    txt.push('\n');
    for v in shown {
        let tsha = text_sha256(&v.text);
        let mut e = serde_json::Map::new();
        e.insert("vow_id".into(), json!(v.vow_id));
        e.insert("matched_as".into(), json!(roles(v, &k, binding)));
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
        e.insert("mark".into(), json!(crate::mark::vow_mark_url(&v.vow_id)));
        entries.push(Value::Object(e));

        let who = match &v.wallet {
            Some(w) if !v.sandbox => format!("signed by {w}"),
            _ => "sandbox (unsigned)".to_owned(),
        };
        txt.push_str(&format!(
            "- vow {} by agent {:?}, {who}, {}, taken {}, log index {}\n",
            v.vow_id,
            v.agent,
            cadence_words(v.cadence_seconds, CadenceStyle::Every),
            rfc3339(v.created_at),
            v.log_index
        ));
        html_vows.push(CardVow {
            id: v.vow_id.clone(),
            agent: v.agent.clone(),
            who: who.clone(),
            cadence: cadence_words(v.cadence_seconds, CadenceStyle::Every),
            taken: rfc3339(v.created_at),
            log_index: v.log_index,
            text: quoted.clone(),
            text_sha256: tsha.clone(),
        });
        match quoted {
            Some(t) => txt.push_str(&format!("  text: {:?}\n", t)),
            None => txt.push_str(&format!("  sealed; text sha256 {tsha}\n")),
        }
        txt.push_str(&format!(
            "  /vow/{id} | /vow/{id}/chain | /log/proof/{} | mark /vow/{id}/mark.svg\n",
            v.log_index,
            id = v.vow_id
        ));
    }
    if more > 0 {
        txt.push_str(&format!("...and {more} more at /vows\n"));
    }
    let npub_line = match binding {
        Some(b) => Some(format!(
            "{NPUB_BOUND} Binding record: log index {} (/log/proof/{}).",
            b.log_index, b.log_index
        )),
        None if npub => Some(NPUB_UNBOUND.to_owned()),
        None => None,
    };
    if let Some(line) = &npub_line {
        txt.push_str(line);
        txt.push('\n');
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
    match binding {
        Some(b) => {
            doc.insert("npub".into(), json!(NPUB_BOUND));
            doc.insert(
                "binding".into(),
                json!({
                    "type": conduct_core::nostr::record::BINDING_TYPE,
                    "npub": b.npub,
                    "pubkey": b.pubkey,
                    "vow_id": b.vow_id,
                    "log_index": b.log_index,
                    "proof": format!("/log/proof/{}", b.log_index),
                }),
            );
        }
        None if npub => {
            doc.insert("npub".into(), json!(NPUB_UNBOUND));
        }
        None => {}
    }
    doc.insert("what".into(), json!(CARD_WHAT));
    doc.insert("scope".into(), scope_value());
    let json_bytes = signed_bytes(key, Value::Object(doc))?;
    let html = KeyCardPage {
        head: PageHead::new(
            key,
            "Card",
            "The conduct card of a key: its vows, no score.",
        ),
        key: &k,
        summary,
        vows: html_vows,
        more,
        npub: npub_line,
        what: CARD_WHAT,
    }
    .render()?;
    Ok(vec![
        (format!("{stem}.json"), json_bytes),
        (format!("{stem}.txt"), txt.into_bytes()),
        (format!("{stem}.html"), html.into_bytes()),
    ])
}
