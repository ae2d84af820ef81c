//! The quest board's pure logic (munus; library/MUNUS.md): the operator's
//! quest and payment files and their forgiving parsers, the exact EIP-191 texts of
//! `GET /play/message` for a claim and a submit, the signed log records of the board
//! (`conduct.munus-claim/v1`, `-delivery/v1`, `-lapse/v1`, `-payment/v1`), and the quest
//! state machine folded from those records at an injected instant, with the list's counts.
//!
//! Nothing here reads a meter number or moves one (wall `labor_never_a_reading`).

pub mod edit;
pub mod list;
pub mod record;
pub mod state;
pub mod verify;

use serde::Deserialize;
use serde_json::Value;

/// Seconds a claim may sit idle (no claim or delivery by its claimant) before it lapses
/// (library/MUNUS.md: 14 days).
pub const LAPSE_SECONDS: u64 = 14 * 86_400;
/// Most characters in a quest id (`[a-z0-9-]`, starting with a letter or digit).
pub const MAX_QUEST_ID: usize = 64;
/// Most characters in a quest's title.
pub const MAX_TITLE: usize = 200;
/// Most characters in a quest's `rung`, `what` or `deliverable`.
pub const MAX_QUEST_TEXT: usize = 4000;
/// Most characters in a delivery link.
pub const MAX_LINK: usize = 512;
/// Deliveries one claim may put on the record per UTC day (each is a permanent log leaf).
pub const MAX_DELIVERIES_PER_DAY: usize = crate::owner::MAX_DELIVERIES_PER_DAY as usize;
/// Most decimal digits in an amount (a uint256 has at most 78).
pub const MAX_AMOUNT_DIGITS: usize = 78;

/// Name of the operator's quest file in the data directory.
pub const QUESTS_FILE: &str = "quests.json";
/// Name of the operator's payment file in the data directory.
pub const PAID_FILE: &str = "paid.json";

/// How a delivery is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Check {
    /// A person reads it.
    Review,
    /// A check run elsewhere decides (never run by the service: wall `no_shell_here`).
    Machine,
}

impl Check {
    /// The wire form.
    pub fn as_str(self) -> &'static str {
        match self {
            Check::Review => "review",
            Check::Machine => "machine",
        }
    }
}

/// One quest of the operator's file (the fields of library/MUNUS.md the operator writes; `status` and
/// the claim are derived from the log, never written).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Quest {
    /// Quest identifier, `[a-z0-9-]{1,64}`.
    pub id: String,
    /// Short title.
    pub title: String,
    /// Which design-document rung the quest belongs to.
    pub rung: String,
    /// Description of the work.
    pub what: String,
    /// What must be delivered.
    pub deliverable: String,
    /// `review` or `machine`.
    pub check: Check,
    /// Retired by the operator: listed no more, refuses claims (its records stay in the log).
    #[serde(default)]
    pub retired: bool,
    /// The house delivered it itself (a link to the merged change): done, counted under
    /// `delivered_in_house`, settled to no one, never claimable.
    #[serde(default)]
    pub delivered_in_house: Option<String>,
}

/// One payment row of the operator's file: a public on-chain transfer the operator made.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PaidRow {
    /// The quest it pays for.
    pub quest: String,
    /// The worker's wallet (0x + 40 hex).
    pub to: String,
    /// Amount in the token's base units, a decimal integer string (no float ever).
    pub amount_scry: String,
    /// The ERC-20 token transferred (0x + 40 hex).
    pub token: String,
    /// The transaction hash (0x + 64 hex).
    pub tx: String,
}

/// What could be read of an operator file: the good entries, and one message per entry (or for
/// the whole file) that could not be read. A malformed file never takes the board down.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed<T> {
    /// Entries that parsed and passed their checks, in file order.
    pub items: Vec<T>,
    /// Why an entry (named by position and id when it has one) or the file was not read.
    pub errors: Vec<String>,
}

impl<T> Parsed<T> {
    /// The list's `claims_file_error` / `paid_file_error`: `None`, or every reason, joined.
    pub fn error(&self) -> Option<String> {
        (!self.errors.is_empty()).then(|| self.errors.join("; "))
    }
}

/// True when `s` is a quest id: `[a-z0-9-]`, 1 to 64 characters, not starting with `-`.
pub fn is_quest_id(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= MAX_QUEST_ID
        && !s.starts_with('-')
        && s.bytes()
            .all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'-'))
}

/// True when `s` is `0x` and 40 hex digits.
pub fn is_address(s: &str) -> bool {
    is_hex_of(s, 40)
}

/// True when `s` is `0x` and 64 hex digits.
pub fn is_tx_hash(s: &str) -> bool {
    is_hex_of(s, 64)
}

fn is_hex_of(s: &str, n: usize) -> bool {
    s.strip_prefix("0x")
        .is_some_and(|h| h.len() == n && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// True when `s` is a positive decimal integer without leading zeros, at most 78 digits.
pub fn is_amount(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= MAX_AMOUNT_DIGITS
        && s.bytes().all(|b| b.is_ascii_digit())
        && !s.starts_with('0')
}

/// Why a delivery link was refused ([`check_link`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DeliveryLinkError {
    /// More than [`MAX_LINK`] characters.
    #[error("the link is longer than {} characters", MAX_LINK)]
    TooLong,
    /// Not `https://`.
    #[error("the link must start with https://")]
    NotHttps,
    /// A character outside printable ASCII.
    #[error("the link holds whitespace, a control or a non-ASCII character (percent-encode it)")]
    Character,
    /// No host, or user information before it.
    #[error("the link has no host (or carries credentials)")]
    NoHost,
}

/// Check a delivery link: `https://`, a host, at most [`MAX_LINK`] characters, printable ASCII
/// only (percent-encode the rest: no invisible or look-alike character reaches the board). The service never fetches or runs it (wall `no_shell_here`).
pub fn check_link(link: &str) -> Result<(), DeliveryLinkError> {
    if link.chars().count() > MAX_LINK {
        return Err(DeliveryLinkError::TooLong);
    }
    let Some(rest) = link.strip_prefix("https://") else {
        return Err(DeliveryLinkError::NotHttps);
    };
    if !link.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(DeliveryLinkError::Character);
    }
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if host.is_empty() || host.contains('@') {
        return Err(DeliveryLinkError::NoHost);
    }
    Ok(())
}

fn check_text(field: &str, s: &str, max: usize) -> Result<(), String> {
    if s.trim().is_empty() {
        return Err(format!("`{field}` is empty"));
    }
    if s.chars().count() > max {
        return Err(format!("`{field}` is longer than {max} characters"));
    }
    if crate::vow::has_control(s, true) {
        return Err(format!("`{field}` holds a control character"));
    }
    Ok(())
}

fn check_quest(q: &Quest) -> Result<(), String> {
    if !is_quest_id(&q.id) {
        return Err("`id` must be 1 to 64 of a-z, 0-9 and -, not starting with -".into());
    }
    check_text("title", &q.title, MAX_TITLE)?;
    if q.title.contains('\n') {
        return Err("`title` holds a line break".into());
    }
    check_text("rung", &q.rung, MAX_QUEST_TEXT)?;
    check_text("what", &q.what, MAX_QUEST_TEXT)?;
    check_text("deliverable", &q.deliverable, MAX_QUEST_TEXT)?;
    if let Some(link) = &q.delivered_in_house {
        check_link(link).map_err(|e| format!("`delivered_in_house`: {e}"))?;
    }
    Ok(())
}

fn check_paid(p: &PaidRow) -> Result<(), String> {
    if !is_quest_id(&p.quest) {
        return Err("`quest` is not a quest id".into());
    }
    if !is_address(&p.to) {
        return Err("`to` must be 0x and 40 hex digits".into());
    }
    if !is_amount(&p.amount_scry) {
        return Err("`amount_scry` must be a positive decimal integer string (base units)".into());
    }
    if !is_address(&p.token) {
        return Err("`token` must be 0x and 40 hex digits".into());
    }
    if !is_tx_hash(&p.tx) {
        return Err("`tx` must be 0x and 64 hex digits".into());
    }
    Ok(())
}

/// Parse an operator file `{"<key>": [entry, ...]}` entry by entry: a bad entry is named and
/// skipped, the rest kept; `dup` gives the key two entries may not share.
fn parse_entries<T, F, D>(file: &str, bytes: &[u8], key: &str, check: F, dup: D) -> Parsed<T>
where
    T: for<'de> Deserialize<'de>,
    F: Fn(&T) -> Result<(), String>,
    D: Fn(&T) -> String,
{
    let mut out = Parsed {
        items: Vec::new(),
        errors: Vec::new(),
    };
    let root: Value = match serde_json::from_slice(bytes) {
        Ok(v) => v,
        Err(e) => {
            out.errors.push(format!("{file}: not JSON: {e}"));
            return out;
        }
    };
    let Some(list) = root.get(key).and_then(Value::as_array) else {
        out.errors
            .push(format!("{file}: expected an object with an array `{key}`"));
        return out;
    };
    if let Some(obj) = root.as_object() {
        for k in obj.keys().filter(|k| k.as_str() != key) {
            out.errors
                .push(format!("{file}: unknown top-level member `{k}` (ignored)"));
        }
    }
    let mut seen = std::collections::HashSet::new();
    for (i, entry) in list.iter().enumerate() {
        let name = entry
            .get("id")
            .or_else(|| entry.get("tx"))
            .and_then(Value::as_str)
            .map(|s| format!(" ({:?})", s.chars().take(40).collect::<String>()))
            .unwrap_or_default();
        let parsed = T::deserialize(entry)
            .map_err(|e| e.to_string())
            .and_then(|t| check(&t).map(|()| t));
        match parsed {
            Ok(t) => {
                if seen.insert(dup(&t)) {
                    out.items.push(t);
                } else {
                    out.errors.push(format!(
                        "{file}: {key}[{i}]{name}: a duplicate of an earlier entry (skipped)"
                    ));
                }
            }
            Err(e) => out
                .errors
                .push(format!("{file}: {key}[{i}]{name}: {e} (skipped)")),
        }
    }
    out
}

/// Parse the operator's quest file (`<data>/quests.json`, `{"quests": [...]}`). Never fails
/// wholesale: its errors become the list's `claims_file_error`.
pub fn parse_quests(bytes: &[u8]) -> Parsed<Quest> {
    parse_entries(QUESTS_FILE, bytes, "quests", check_quest, |q| q.id.clone())
}

/// Parse the operator's payment file (`<data>/paid.json`, `{"paid": [...]}`). Never fails
/// wholesale: its errors become the list's `paid_file_error`. A transaction pays one row.
pub fn parse_paid(bytes: &[u8]) -> Parsed<PaidRow> {
    parse_entries(PAID_FILE, bytes, "paid", check_paid, |p| {
        p.tx.to_ascii_lowercase()
    })
}

/// The UTC date `YYYY-MM-DD` of unix seconds (the date a board message names).
pub fn utc_date(unix: u64) -> String {
    crate::time::utc_date(unix)
}

/// A game action of `GET /play/message`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action<'a> {
    /// `POST /munus/{id}/claim`.
    Claim,
    /// `POST /munus/{id}/submit` with its delivery link.
    Submit {
        /// The delivery link.
        link: &'a str,
    },
}

/// The exact text a vow's wallet signs with EIP-191 `personal_sign` to claim a quest or submit
/// a delivery (`GET /play/message`): it names the origin, the action, the quest, the vow, the
/// UTC date (a signature is good on that day only, and accepted once) and for a submit the
/// delivery link, so it proves this one act.
pub fn play_message(
    origin: &str,
    action: Action<'_>,
    quest_id: &str,
    vow_id: &str,
    now: u64,
) -> String {
    use crate::owner::{Kind, OwnerText};
    let date = utc_date(now);
    let params = vec![("Quest", quest_id.to_owned()), ("Vow", vow_id.to_owned())];
    let (kind, effect, after) = match action {
        Action::Claim => (
            Kind::ClaimQuest,
            "Signing puts this vow's claim on the quest on the public record. It moves no funds \
             and no measured number.",
            Vec::new(),
        ),
        Action::Submit { link } => (
            Kind::SubmitDelivery,
            "Signing puts this delivery link on the public record. It moves no funds and no \
             measured number.",
            vec![("Delivery", link.to_owned())],
        ),
    };
    OwnerText {
        kind,
        effect,
        origin,
        params,
        date: &date,
        after,
        block: None,
    }
    .render()
}

#[cfg(test)]
mod tests;
