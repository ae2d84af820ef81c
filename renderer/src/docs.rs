//! The library: markdown documents embedded at build time, published raw and as HTML.
//!
//! Raw HTML inside markdown is never passed through: it is rendered as escaped text. Every
//! heading gets a stable anchor ([`headings`]), so a section can be cited as
//! `/library/<STEM>#<anchor>`.

use std::collections::HashSet;
use std::ops::Range;

use pulldown_cmark::{html, Event, Options, Parser, Tag, TagEnd};

include!(concat!(env!("OUT_DIR"), "/library_docs.rs"));

/// A library document.
#[derive(Debug, Clone, Copy)]
pub struct Doc {
    /// File name, e.g. `METER.md`.
    pub name: &'static str,
    /// Markdown source.
    pub markdown: &'static str,
}

impl Doc {
    /// Name without the `.md` extension.
    pub fn stem(&self) -> &'static str {
        self.name.strip_suffix(".md").unwrap_or(self.name)
    }

    /// The first level-1 heading, or the stem.
    pub fn title(&self) -> String {
        self.markdown
            .lines()
            .find_map(|l| l.strip_prefix("# "))
            .map(|t| t.trim().to_owned())
            .unwrap_or_else(|| self.stem().to_owned())
    }

    /// The HTML body of the document.
    pub fn html(&self) -> String {
        markdown_to_html(self.markdown)
    }
}

/// Every published document, sorted by name.
pub fn published() -> Vec<Doc> {
    LIBRARY
        .iter()
        .map(|(name, markdown)| Doc { name, markdown })
        .collect()
}

/// The markdown dialect of the library.
const OPTIONS: Options = Options::ENABLE_TABLES
    .union(Options::ENABLE_STRIKETHROUGH)
    .union(Options::ENABLE_FOOTNOTES);

/// Parse library markdown (the one dialect, for the HTML and for [`headings`] alike).
pub fn parser(md: &str) -> Parser<'_> {
    Parser::new_ext(md, OPTIONS)
}

/// One heading of a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heading {
    /// Its bytes in the markdown (the whole heading line or lines).
    pub range: Range<usize>,
    /// 1 to 6.
    pub level: u8,
    /// Its text (inline code included, markup dropped).
    pub text: String,
    /// Its anchor: the `id` of the HTML heading.
    pub anchor: String,
}

/// The anchor of a heading's text, as GitHub makes it: lower case, every character but
/// letters, digits, spaces, `-` and `_` dropped, spaces turned into `-`.
pub fn slug(text: &str) -> String {
    text.trim()
        .chars()
        .flat_map(char::to_lowercase)
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Every heading of `md` in order, with unique anchors (a repeated slug gets `-1`, `-2`, ...;
/// an empty one is `section`).
pub fn headings(md: &str) -> Vec<Heading> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    let mut open: Option<(usize, u8, String)> = None;
    for (ev, range) in parser(md).into_offset_iter() {
        match ev {
            Event::Start(Tag::Heading { level, .. }) => {
                open = Some((range.start, level as u8, String::new()));
            }
            Event::Text(t) | Event::Code(t) | Event::Html(t) | Event::InlineHtml(t) => {
                if let Some((_, _, text)) = open.as_mut() {
                    text.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                if let Some((start, level, text)) = open.take() {
                    let base = match slug(&text) {
                        s if s.is_empty() => "section".to_owned(),
                        s => s,
                    };
                    let mut anchor = base.clone();
                    let mut n = 0;
                    while !seen.insert(anchor.clone()) {
                        n += 1;
                        anchor = format!("{base}-{n}");
                    }
                    out.push(Heading {
                        range: start..range.end,
                        level,
                        text: text.trim().to_owned(),
                        anchor,
                    });
                }
            }
            _ => {}
        }
    }
    out
}

/// Render markdown to HTML, escaping any raw HTML it contains; each heading carries its
/// anchor as `id`.
pub fn markdown_to_html(md: &str) -> String {
    let mut anchors = headings(md).into_iter().map(|h| h.anchor);
    let parser = parser(md).map(|ev| match ev {
        Event::Html(s) | Event::InlineHtml(s) => Event::Text(s),
        Event::Start(Tag::Heading {
            level,
            id: _,
            classes,
            attrs,
        }) => Event::Start(Tag::Heading {
            level,
            id: anchors.next().map(Into::into),
            classes,
            attrs,
        }),
        other => other,
    });
    let mut out = String::with_capacity(md.len() * 3 / 2);
    html::push_html(&mut out, parser);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_html_is_escaped() {
        let h = markdown_to_html("hi <script>alert(1)</script>\n\n<b>x</b>");
        assert!(!h.contains("<script>"), "{h}");
        assert!(h.contains("&lt;script&gt;"), "{h}");
    }

    #[test]
    fn headings_have_unique_anchors_and_the_html_carries_them() {
        let md =
            "# The meter (`meter/1`)\n\ntext\n\n## 4.1 Plug-in MI\n\n```\n# not a heading\n```\n\n\
                  ## Notes\n\n## Notes\n\n## !!\n";
        let hs = headings(md);
        let anchors: Vec<&str> = hs.iter().map(|h| h.anchor.as_str()).collect();
        assert_eq!(
            anchors,
            [
                "the-meter-meter1",
                "41-plug-in-mi",
                "notes",
                "notes-1",
                "section"
            ]
        );
        assert_eq!(hs[0].text, "The meter (meter/1)");
        assert_eq!(hs[0].level, 1);
        assert_eq!(&md[hs[1].range.clone()], "## 4.1 Plug-in MI\n");
        let h = markdown_to_html(md);
        assert!(h.contains("<h1 id=\"the-meter-meter1\">"), "{h}");
        assert!(h.contains("<h2 id=\"notes-1\">"), "{h}");
    }
}
