//! The library: markdown documents embedded at build time, published raw and as HTML.
//!
//! Raw HTML inside markdown is never passed through: it is rendered as escaped text.

use pulldown_cmark::{html, Event, Options, Parser};

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

/// Render markdown to HTML, escaping any raw HTML it contains.
pub fn markdown_to_html(md: &str) -> String {
    let opts = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_FOOTNOTES;
    let parser = Parser::new_ext(md, opts).map(|ev| match ev {
        Event::Html(s) | Event::InlineHtml(s) => Event::Text(s),
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
}
