//! The human-readable side of the vow ledger: the HTML twins of `/vow/<id>`, its chain and its
//! reading, each vow's Atom feed (the static answer to "no push interface"), and `robots.txt`
//! (the index of vows and the sitemap are vows_index.rs's).
//!
//! HTML is derived from the signed JSON and trusted for nothing. Every user text is escaped
//! (askama escapes; the chart and the feed escape their own), and no page needs JavaScript.

use askama::Template;
use conduct_core::signing::ServiceKey;
use conduct_core::time::rfc3339;
use conduct_core::vow::notes::{self, NoteFinding};
use conduct_core::vow::record::text_sha256;
use conduct_core::vow::trajectory::{Point, Track};
use conduct_core::vow::windows::Windows;
use conduct_indexer::vows::VowRow;
use serde_json::{json, Value};

use crate::chart::{fmt_bits, trajectory_svg, xml_escape, SERIES};
use crate::pages::{
    EntryRow, InterpretationPage, LinksPage, PageHead, PageRow, RecordRow, VowPage, VowRowView,
};
use crate::RenderError;

/// Entries listed in a vow page's table (the chart shows more; the chain has all).
pub const TABLE_ROWS: usize = 50;
/// Entries in a vow's Atom feed.
pub const FEED_ENTRIES: usize = 50;

/// Path of a vow page's HTML twin.
pub fn vow_html_path(id: &str) -> String {
    format!("vow/{id}.html")
}

/// Path of a vow's Atom feed.
pub fn feed_path(id: &str) -> String {
    format!("vow/{id}/feed.atom")
}

/// How [`cadence_words`] says a cadence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CadenceStyle {
    /// In the largest whole unit, as the pages say it: "day", "2 hours", "36 seconds".
    Unit,
    /// In whole hours, else seconds, as a card's text says it: "every 24 h", "every 90 s".
    Every,
}

/// A cadence of `seconds` in words, in `style`.
pub fn cadence_words(seconds: u64, style: CadenceStyle) -> String {
    match (style, seconds) {
        (CadenceStyle::Every, s) if s.is_multiple_of(3600) => format!("every {} h", s / 3600),
        (CadenceStyle::Every, s) => format!("every {s} s"),
        (CadenceStyle::Unit, s) if s % 86_400 == 0 && s >= 86_400 => plural(s / 86_400, "day"),
        (CadenceStyle::Unit, s) if s % 3600 == 0 && s >= 3600 => plural(s / 3600, "hour"),
        (CadenceStyle::Unit, s) if s % 60 == 0 && s >= 60 => plural(s / 60, "minute"),
        (CadenceStyle::Unit, s) => plural(s, "second"),
    }
}

fn plural(n: u64, unit: &str) -> String {
    if n == 1 {
        unit.to_string()
    } else {
        format!("{n} {unit}s")
    }
}

fn badges(vow: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if vow["sealed"] == true {
        out.push("sealed".to_owned());
    }
    if vow["sandbox"] == true {
        out.push("sandbox (no wallet)".to_owned());
    } else if let Some(w) = vow["wallet"].as_str() {
        out.push(format!("signed by {w}"));
    }
    out
}

/// JSON text safe inside a `<script>` element.
fn script_json(v: &Value) -> String {
    v.to_string()
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

/// The HTML twin of `/vow/<id>` at `as_of`, with window state `w`.
pub fn vow_html(
    key: &ServiceKey,
    public_url: &str,
    id: &str,
    track: &Track,
    w: &Windows,
    as_of: u64,
) -> Result<Vec<u8>, RenderError> {
    let vow = track.vow();
    let agent = vow["agent"].as_str().unwrap_or("");
    let sealed = vow["sealed"] == true;
    let text = if sealed { None } else { vow["text"].as_str() };
    let points: Vec<&Point> = track.points().iter().collect();
    let title = format!("Vow of {agent}");
    let label = format!("Trajectory of the vow of {agent}");
    let chart = trajectory_svg(&points, w, &label);
    let mut status = vec![format!(
        "{} report-ins ({} paid, attested); {} of {} closed windows missed.",
        track.entries(),
        track.attested_entries(),
        w.missed(),
        w.closed
    )];
    status.push(format!(
        "The current window ends {}.",
        rfc3339(w.next_boundary)
    ));
    if let Some(y) = track.y_consistency_mean() {
        status.push(format!(
            "Declared purposes share on average {:.0}% of their words with the vow text (a \
             word match, not a judgement of meaning).",
            y * 100.0
        ));
    }
    status.push(match track.failure() {
        None => format!(
            "Chain verified locally: {} records, signatures and hash links.",
            track.records()
        ),
        Some(e) => format!("The chain did NOT verify locally: {e}"),
    });
    let rows: Vec<EntryRow> = points
        .iter()
        .rev()
        .take(TABLE_ROWS)
        .map(|p| EntryRow {
            seq: p.seq,
            at: rfc3339(p.at),
            tier: if p.attested { "paid" } else { "free" },
            bits: p.bits.map(fmt_bits),
            y: p.y.map_or_else(|| "n/a".to_owned(), |y| format!("{y:.2}")),
            note: p.note.clone(),
            log_index: p.log_index,
        })
        .collect();
    let older = track.entries().saturating_sub(rows.len() as u64);
    let url = format!("{public_url}/vow/{id}");
    let json_ld = script_json(&json!({
        "@context": "https://schema.org",
        "@type": "Dataset",
        "name": title,
        "identifier": id,
        "url": url,
        "description": "A public vow and its hash-chained report-ins, each scored by the conduct meter and signed.",
        "creator": {"@type": "Organization", "name": "conduct"},
        "distribution": [
            {"@type": "DataDownload", "encodingFormat": "application/json", "contentUrl": format!("{url}?format=json")},
            {"@type": "DataDownload", "encodingFormat": "application/json", "contentUrl": format!("{url}/chain")},
            {"@type": "DataDownload", "encodingFormat": "application/atom+xml", "contentUrl": format!("{url}/feed.atom")},
        ],
    }));
    let description = format!("The vow of {agent}: its trajectory, missed windows and report-ins.");
    let as_of_text = rfc3339(as_of);
    Ok(VowPage {
        head: PageHead::new(key, &title, &description),
        vow_id: id,
        agent,
        text,
        text_sha256: vow["text_sha256"].as_str().unwrap_or(""),
        badges: badges(vow),
        cadence: cadence_words(
            (vow["cadence_hours"].as_f64().unwrap_or(0.0) * 3600.0).round() as u64,
            CadenceStyle::Unit,
        ),
        taken_at: vow["at"].as_str().unwrap_or(""),
        status,
        overdue: w.overdue,
        chart: &chart,
        series: SERIES.map(|(n, ..)| n),
        rows,
        older,
        as_of: &as_of_text,
        json_ld: &json_ld,
    }
    .render()?
    .into_bytes())
}

/// The HTML twin of `/vow/<id>/reading`, with `note_check` (the notes compared with the
/// numbers) in words.
pub fn interpretation_html(
    key: &ServiceKey,
    id: &str,
    track: &Track,
    interpretation: &Value,
    note_check: &[NoteFinding],
    caveats: &[&str],
    as_of: u64,
) -> Result<Vec<u8>, RenderError> {
    let agent = track.vow()["agent"].as_str().unwrap_or("");
    let kind = interpretation["kind"].as_str().unwrap_or("rule-based");
    let source = match (kind, interpretation["model"].as_str()) {
        ("language-model", Some(m)) => format!("Written by a language model ({m}) from the numbers, the vow text (unless sealed), the declared purposes and public notes."),
        _ if interpretation["model_pending"] == true => "Rule-based, from explicit rules over the numbers; a language model's reading is on its way.".to_owned(),
        _ => "Rule-based, from explicit rules over the numbers (no language model).".to_owned(),
    };
    let paragraphs = interpretation["text"]
        .as_str()
        .unwrap_or("")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect();
    let title = format!("Reading of the vow of {agent}");
    let as_of_text = rfc3339(as_of);
    Ok(InterpretationPage {
        head: PageHead::new(
            key,
            &title,
            "A reading of a vow's trajectory: guidance, never a verdict.",
        ),
        vow_id: id,
        agent,
        source,
        paragraphs,
        note_check: note_check.iter().map(NoteFinding::sentence).collect(),
        note_check_method: notes::METHOD,
        caveats: caveats.iter().map(|c| (*c).to_owned()).collect(),
        covers_seq: track.entries(),
        as_of: &as_of_text,
    }
    .render()?
    .into_bytes())
}

/// The HTML twin of `/vow/<id>/chain`: how many full pages, the last one pinned (hex SHA-256
/// `last_page`), and the tail (records from chain position `tail_from`, the first after the
/// full pages).
pub fn links_html(
    key: &ServiceKey,
    id: &str,
    track: &Track,
    full_pages: usize,
    last_page: Option<&str>,
    tail: &[(u64, Vec<u8>)],
    tail_from: usize,
) -> Result<Vec<u8>, RenderError> {
    // Entries come from the kept points (the tail is always among them); only the vow record
    // itself, when it is in the tail, is read from its leaf.
    let points = track.points();
    let first_seq = points.front().map_or(0, |p| p.seq);
    let point = |seq: u64| {
        seq.checked_sub(first_seq)
            .and_then(|k| points.get(k as usize))
            .filter(|p| p.seq == seq)
    };
    let rows = tail
        .iter()
        .enumerate()
        .map(|(k, (index, leaf))| {
            let position = (tail_from + k) as u64;
            match point(position) {
                Some(p) if position > 0 => RecordRow {
                    position,
                    kind: "report-in",
                    at: rfc3339(p.at),
                    log_index: *index,
                    sha256: p.record_sha256.clone(),
                },
                _ => RecordRow {
                    position,
                    kind: if position == 0 { "vow" } else { "report-in" },
                    at: serde_json::from_slice::<Value>(leaf)
                        .ok()
                        .and_then(|v| v["at"].as_str().map(str::to_owned))
                        .unwrap_or_default(),
                    log_index: *index,
                    sha256: conduct_core::vow::record::record_hash(leaf),
                },
            }
        })
        .collect();
    // The last page ends right before the tail; pages are tail_from / full_pages records.
    let page_size = tail_from.checked_div(full_pages).unwrap_or(0);
    let last_row = last_page.map(|sha| {
        let k = full_pages.saturating_sub(1);
        PageRow {
            href: format!("/vow/{id}/chain/{k}"),
            from: (tail_from.saturating_sub(page_size)) as u64,
            to: tail_from.saturating_sub(1) as u64,
            sha256: sha.to_owned(),
        }
    });
    let title = format!("Chain of vow {id}");
    Ok(LinksPage {
        head: PageHead::new(
            key,
            &title,
            "Every signed record of a vow, hash-linked, each a leaf of the public log.",
        ),
        vow_id: id,
        length: track.entries(),
        head_sha256: track.head_sha256(),
        full_pages,
        last_page: last_row,
        tail: rows,
    }
    .render()?
    .into_bytes())
}

/// The Atom feed of a vow's report-ins (the last [`FEED_ENTRIES`], newest first). Its
/// `updated` is the last record's instant, not the clock, so it changes only with a write.
pub fn feed_atom(public_url: &str, id: &str, track: &Track) -> Vec<u8> {
    let vow = track.vow();
    let agent = vow["agent"].as_str().unwrap_or("");
    let base = format!("{public_url}/vow/{id}");
    let updated = track.points().back().map_or_else(
        || vow["at"].as_str().unwrap_or("").to_owned(),
        |p| rfc3339(p.at),
    );
    let mut out = String::with_capacity(2048 + FEED_ENTRIES * 600);
    out.push_str("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<feed xmlns=\"http://www.w3.org/2005/Atom\">\n");
    out.push_str(&format!(
        "<title>Vow of {} (conduct)</title>\n<id>{}</id>\n<link rel=\"self\" href=\"{}/feed.atom\"/>\n\
         <link rel=\"alternate\" type=\"text/html\" href=\"{}\"/>\n<updated>{}</updated>\n\
         <author><name>conduct</name></author>\n<subtitle>Report-ins of vow {}, each scored by the \
         conduct meter, signed, and a leaf of the public log.</subtitle>\n",
        xml_escape(agent),
        xml_escape(&base),
        xml_escape(&base),
        xml_escape(&base),
        xml_escape(&updated),
        xml_escape(id)
    ));
    for p in track.points().iter().rev().take(FEED_ENTRIES) {
        let numbers = SERIES
            .iter()
            .zip(p.bits)
            .map(|((n, ..), b)| format!("{n} {}", fmt_bits(b)))
            .collect::<Vec<_>>()
            .join(", ");
        let note = p
            .note
            .as_deref()
            .map(|n| format!(" Note: {n}"))
            .unwrap_or_default();
        out.push_str(&format!(
            "<entry>\n<title>Report-in {} ({})</title>\n<id>{}#seq-{}</id>\n<updated>{}</updated>\n\
             <link href=\"{}/log/proof/{}\"/>\n<summary>{}{}</summary>\n</entry>\n",
            p.seq,
            if p.attested { "paid" } else { "free" },
            xml_escape(&base),
            p.seq,
            rfc3339(p.at),
            xml_escape(public_url),
            p.log_index,
            xml_escape(&format!("Adjusted bits: {numbers}.")),
            xml_escape(&note)
        ));
    }
    out.push_str("</feed>\n");
    out.into_bytes()
}

/// One vow as the HTML index lists it (`/vows`, `/vows/<k>`; vows_index.rs).
pub fn vow_row_view(r: &VowRow) -> VowRowView {
    let mut b = Vec::new();
    if r.sealed {
        b.push("sealed");
    }
    b.push(if r.sandbox {
        "sandbox"
    } else {
        "wallet-signed"
    });
    VowRowView {
        vow_id: r.vow_id.clone(),
        agent: r.agent.clone(),
        text: if r.sealed {
            format!("(sealed: sha256 {})", text_sha256(&r.text))
        } else {
            r.text.clone()
        },
        classes: format!(
            "{} {}",
            if r.sealed { "sealed" } else { "open" },
            if r.sandbox { "sandbox" } else { "signed" }
        ),
        badges: b.join(", "),
        cadence: cadence_words(r.cadence_seconds, CadenceStyle::Unit),
        taken: rfc3339(r.created_at).chars().take(10).collect(),
    }
}

/// `robots.txt`: everything public may be crawled; the write paths are not pages.
pub fn robots(public_url: &str) -> Vec<u8> {
    format!(
        "# conduct: every page here is public and signed; crawl freely.\nUser-agent: *\n\
         Allow: /\nDisallow: /vow/report\nDisallow: /demo/\nDisallow: /profile\n\
         Disallow: /log/proof/\n\nSitemap: {public_url}/sitemap.xml\n"
    )
    .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cadences_in_words() {
        let unit = |s| cadence_words(s, CadenceStyle::Unit);
        assert_eq!(unit(86_400), "day");
        assert_eq!(unit(2 * 86_400), "2 days");
        assert_eq!(unit(3600), "hour");
        assert_eq!(unit(36), "36 seconds");
        assert_eq!(unit(120), "2 minutes");
        let every = |s| cadence_words(s, CadenceStyle::Every);
        assert_eq!(every(86_400), "every 24 h");
        assert_eq!(every(5400), "every 5400 s");
        assert_eq!(every(36), "every 36 s");
    }

    #[test]
    fn script_json_cannot_close_its_element() {
        let s = script_json(&json!({"a": "</script><b>&"}));
        assert!(!s.contains("</script>") && !s.contains('<') && !s.contains('&'));
    }
}
