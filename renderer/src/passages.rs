//! Retrieval over the library: every published document cut into passages at its headings
//! (a long section further at its top-level blocks), indexed once with BM25 (the `bm25`
//! crate: its English tokenizer folds case and accents, drops stop words and stems), and
//! searched for the passages nearest a question. What `POST /oracle/ask` grounds its answers
//! in, and what it returns verbatim when no model answers.
//!
//! Pure and deterministic: the library is compiled in, and ties in score are broken by
//! passage order (document name, then position).

use std::ops::Range;

use bm25::{Document, Language, SearchEngine, SearchEngineBuilder};
use pulldown_cmark::Event;

use crate::docs::{headings, parser, Doc};

/// Most characters of a question (`POST /oracle/ask`; the OpenAPI schema says the same).
pub const MAX_QUESTION_CHARS: usize = 2000;

/// A section longer than this many characters is cut at its top-level blocks (a block longer
/// than this stays whole; readers clip it).
pub const MAX_PASSAGE_CHARS: usize = 1500;

/// One passage of a library document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Passage {
    /// The document's file name, e.g. `METER.md`.
    pub doc: &'static str,
    /// The document's stem, e.g. `METER`.
    pub stem: &'static str,
    /// The heading of the section it belongs to (the document's title before any heading).
    pub section: String,
    /// The section heading's anchor in the HTML page (`/library/<stem>#<anchor>`).
    pub anchor: String,
    /// The markdown of the passage, verbatim (the heading line is not part of it).
    pub text: &'static str,
}

impl Passage {
    /// Where the passage is read: `/library/<stem>#<anchor>`.
    pub fn path(&self) -> String {
        format!("/library/{}#{}", self.stem, self.anchor)
    }
}

/// A passage found for a query, with its BM25 score (higher is nearer).
#[derive(Debug, Clone, Copy)]
pub struct Hit<'a> {
    /// The passage.
    pub passage: &'a Passage,
    /// Its score for the query (above 0).
    pub score: f32,
}

/// The library's passages and their index.
pub struct LibraryIndex {
    passages: Vec<Passage>,
    engine: SearchEngine<u32>,
}

impl std::fmt::Debug for LibraryIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LibraryIndex")
            .field("passages", &self.passages.len())
            .finish()
    }
}

/// The top-level blocks of `md` (paragraphs, lists, code blocks, tables, headings...) as byte
/// ranges, in order.
fn blocks(md: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (ev, range) in parser(md).into_offset_iter() {
        match ev {
            Event::Start(_) => {
                if depth == 0 {
                    start = range.start;
                }
                depth += 1;
            }
            Event::End(_) => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    out.push(start..range.end);
                }
            }
            _ if depth == 0 => out.push(range),
            _ => {}
        }
    }
    out
}

/// Cut the blocks of one section into runs of at most [`MAX_PASSAGE_CHARS`] characters.
fn chunks(md: &str, blocks: &[Range<usize>]) -> Vec<Range<usize>> {
    let mut out: Vec<Range<usize>> = Vec::new();
    for b in blocks {
        match out.last_mut() {
            Some(last) if md[last.start..b.end].chars().count() <= MAX_PASSAGE_CHARS => {
                last.end = b.end;
            }
            _ => out.push(b.clone()),
        }
    }
    out
}

/// The passages of one document, in order.
pub fn passages(doc: &Doc) -> Vec<Passage> {
    let md = doc.markdown;
    let hs = headings(md);
    let all = blocks(md);
    let mut out = Vec::new();
    // The part before the first heading belongs to the title; then one section per heading,
    // up to the next heading of any level.
    let mut cuts: Vec<(String, String, Range<usize>)> = Vec::with_capacity(hs.len() + 1);
    let first = hs.first().map_or(md.len(), |h| h.range.start);
    cuts.push((doc.title(), String::new(), 0..first));
    for (i, h) in hs.iter().enumerate() {
        let end = hs.get(i + 1).map_or(md.len(), |n| n.range.start);
        cuts.push((h.text.clone(), h.anchor.clone(), h.range.end..end));
    }
    for (section, anchor, span) in cuts {
        let inside: Vec<Range<usize>> = all
            .iter()
            .filter(|b| b.start >= span.start && b.end <= span.end)
            .cloned()
            .collect();
        for c in chunks(md, &inside) {
            let text = md[c].trim();
            if text.is_empty() {
                continue;
            }
            out.push(Passage {
                doc: doc.name,
                stem: doc.stem(),
                section: section.clone(),
                anchor: anchor.clone(),
                text,
            });
        }
    }
    out
}

impl LibraryIndex {
    /// Index the passages of `docs`.
    pub fn build(docs: &[Doc]) -> LibraryIndex {
        let passages: Vec<Passage> = docs.iter().flat_map(passages).collect();
        let titles: Vec<String> = docs.iter().map(Doc::title).collect();
        let documents: Vec<Document<u32>> = passages
            .iter()
            .zip(0u32..)
            .map(|(p, id)| {
                let title = docs
                    .iter()
                    .position(|d| d.name == p.doc)
                    .and_then(|i| titles.get(i))
                    .map_or("", String::as_str);
                // The document's title and the section's heading are searched with its text.
                Document::new(id, format!("{title}\n{}\n{}", p.section, p.text))
            })
            .collect();
        let engine =
            SearchEngineBuilder::<u32>::with_documents(Language::English, documents).build();
        LibraryIndex { passages, engine }
    }

    /// Every passage, in document and position order.
    pub fn passages(&self) -> &[Passage] {
        &self.passages
    }

    /// The at most `k` passages nearest `query`, nearest first; only passages sharing a term
    /// with the query (score above 0).
    pub fn search(&self, query: &str, k: usize) -> Vec<Hit<'_>> {
        let mut found: Vec<(u32, f32)> = self
            .engine
            .search(query, None)
            .into_iter()
            .filter(|r| r.score > 0.0 && r.score.is_finite())
            .map(|r| (r.document.id, r.score))
            .collect();
        found.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        found
            .into_iter()
            .filter_map(|(id, score)| {
                let passage = self.passages.get(usize::try_from(id).ok()?)?;
                Some(Hit { passage, score })
            })
            .take(k)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::docs::published;

    #[test]
    fn every_document_is_cut_into_bounded_passages_with_real_anchors() {
        let docs = published();
        let index = LibraryIndex::build(&docs);
        assert!(index.passages().len() > docs.len());
        for d in &docs {
            let anchors: Vec<String> = headings(d.markdown).into_iter().map(|h| h.anchor).collect();
            let html = d.html();
            for p in index.passages().iter().filter(|p| p.doc == d.name) {
                assert!(!p.text.is_empty());
                assert!(d.markdown.contains(p.text), "verbatim");
                if !p.anchor.is_empty() {
                    assert!(anchors.contains(&p.anchor), "{}", p.path());
                    assert!(
                        html.contains(&format!("id=\"{}\"", p.anchor)),
                        "{}",
                        p.path()
                    );
                }
            }
        }
        // No code block is mistaken for a heading: MIRRORS.md's shell comments stay text.
        assert!(!index
            .passages()
            .iter()
            .any(|p| p.doc == "MIRRORS.md" && p.section.starts_with("1. Immutable")));
        // Long sections are cut at block boundaries: a passage over the bound is one block.
        for p in index.passages() {
            if p.text.chars().count() > MAX_PASSAGE_CHARS {
                assert_eq!(blocks(p.text).len(), 1, "{}", p.path());
            }
        }
    }

    #[test]
    fn search_finds_the_section_that_answers_and_is_deterministic() {
        let index = LibraryIndex::build(&published());
        let hits = index.search("How do I mirror the tree with rsync?", 4);
        assert!(!hits.is_empty());
        assert_eq!(hits[0].passage.doc, "MIRRORS.md", "{:?}", hits[0].passage);
        assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
        let again = index.search("How do I mirror the tree with rsync?", 4);
        let key = |h: &[Hit<'_>]| -> Vec<(String, String)> {
            h.iter()
                .map(|h| (h.passage.path(), h.passage.text.to_owned()))
                .collect()
        };
        assert_eq!(key(&hits), key(&again));
        let paid = index.search("what does a paid read cost with x402", 4);
        assert!(
            paid.iter().any(|h| h.passage.doc == "PAYMENTS.md"),
            "{paid:?}"
        );
        assert!(
            index.search("the of and", 4).is_empty(),
            "stop words match nothing"
        );
        assert!(index.search("", 4).is_empty());
        assert_eq!(index.search("vow", 2).len(), 2);
    }
}
