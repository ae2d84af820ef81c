//! library/METER.md and the code say the same thing: the families of `lexicon/2` (section
//! 11.3's table of names, bit order and descriptions and the digest of their patterns;
//! LEXICON2.md's every pattern and its example) are the ones the service compiles, and the
//! test vectors of section 11.5 give the symbols printed there.

use conduct_core::meter::lexicon2::{self, FAMILIES, SYMBOLS};

fn library(name: &str) -> String {
    let path = format!("{}/../library/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn meter_md() -> String {
    library("METER.md")
}

/// The text of a section: from the heading line starting with `heading` to the next heading
/// of the same or a higher level.
fn section<'a>(doc: &'a str, heading: &str) -> &'a str {
    let start = doc
        .find(&format!("\n{heading}"))
        .unwrap_or_else(|| panic!("no heading {heading:?}"))
        + 1;
    let level = heading.chars().take_while(|&c| c == '#').count();
    let rest = &doc[start..];
    let body_start = rest.find('\n').map_or(rest.len(), |i| i + 1);
    let end = rest[body_start..]
        .lines()
        .scan(body_start, |at, line| {
            let here = *at;
            *at += line.len() + 1;
            Some((here, line))
        })
        .find(|(_, line)| {
            let hashes = line.chars().take_while(|&c| c == '#').count();
            hashes > 0 && hashes <= level && line[hashes..].starts_with(' ')
        })
        .map_or(rest.len(), |(at, _)| at);
    &rest[..end]
}

/// The contents of the fenced blocks of a given info string, in order.
fn fenced<'a>(text: &'a str, info: &str) -> Vec<&'a str> {
    let open = format!("```{info}\n");
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find(&open) {
        let body = &rest[i + open.len()..];
        let j = body.find("\n```").expect("unclosed block");
        out.push(&body[..j]);
        rest = &body[j..];
    }
    out
}

#[test]
fn section_11_3_names_the_families_and_the_digest_of_their_patterns() {
    let doc = meter_md();
    let families = section(&doc, "### 11.3 Families");
    let rows: Vec<&str> = families
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| bit"))
        .collect();
    assert_eq!(rows.len(), FAMILIES.len(), "one table row per family");
    for (bit, (family, row)) in FAMILIES.iter().zip(&rows).enumerate() {
        let want = format!("| {bit} | `{}` | {} |", family.name, family.what);
        assert_eq!(*row, want, "row of bit {bit}");
    }
    let all: Vec<Vec<&str>> = FAMILIES
        .iter()
        .map(|f| f.patterns.iter().map(|(p, _)| *p).collect())
        .collect();
    let bytes = conduct_core::canonical::jcs(&serde_json::json!(all)).unwrap();
    let digest = fenced(families, "text");
    assert_eq!(
        digest,
        [conduct_core::canonical::sha256_hex(&bytes).as_str()]
    );
}

#[test]
fn lexicon2_md_lists_the_patterns_the_service_compiles() {
    let doc = library("LEXICON2.md");
    let families = section(&doc, "## Families");
    let headings: Vec<&str> = families.lines().filter(|l| l.starts_with("### ")).collect();
    assert_eq!(headings.len(), FAMILIES.len(), "family headings");
    let blocks = fenced(families, "json");
    assert_eq!(blocks.len(), FAMILIES.len(), "one JSON block per family");
    for (bit, (family, (heading, block))) in FAMILIES
        .iter()
        .zip(headings.iter().zip(&blocks))
        .enumerate()
    {
        let want = format!("### `{}` (bit {bit}): {}", family.name, family.what);
        assert_eq!(*heading, want, "heading of bit {bit}");
        let patterns: Vec<String> = serde_json::from_str(block)
            .unwrap_or_else(|e| panic!("{}: the JSON block does not parse: {e}", family.name));
        let code: Vec<&str> = family.patterns.iter().map(|(p, _)| *p).collect();
        assert_eq!(patterns, code, "patterns of {}", family.name);

        let sub = section(families, heading);
        let examples_line = sub
            .lines()
            .find(|l| l.starts_with("Examples, one a pattern: "))
            .unwrap_or_else(|| panic!("{}: no examples line", family.name));
        let examples: Vec<String> = family
            .patterns
            .iter()
            .map(|(_, e)| format!("\"{e}\""))
            .collect();
        assert_eq!(
            examples_line,
            format!("Examples, one a pattern: {}.", examples.join("; ")),
            "examples of {}",
            family.name
        );
    }
}

#[test]
fn every_published_example_fires_its_family() {
    for (bit, family) in FAMILIES.iter().enumerate() {
        for (pattern, example) in family.patterns {
            let fired = lexicon2::sentence_families_by_regex(example)
                .iter()
                .fold(0u16, |a, f| a | f);
            assert_ne!(
                fired & (1 << bit),
                0,
                "{}: {example:?} does not fire {pattern:?}",
                family.name
            );
            let fast = {
                let mut out = Vec::new();
                lexicon2::sentence_families(example, &mut out);
                out.iter().fold(0u16, |a, f| a | f)
            };
            assert_eq!(fast, fired, "{example:?}: fast matcher and regex differ");
        }
    }
}

#[test]
fn section_11_5_vectors_give_their_symbols() {
    let doc = meter_md();
    let vectors = section(&doc, "### 11.5 Test vectors");
    let block = fenced(vectors, "text");
    assert_eq!(block.len(), 1);
    let mut seen = [0usize; 4];
    for line in block[0].lines() {
        let (symbol, text) = line.split_once(' ').expect("symbol, then text");
        let text = text.trim_start();
        let want = SYMBOLS
            .iter()
            .position(|s| *s == symbol)
            .unwrap_or_else(|| panic!("unknown symbol {symbol:?}"));
        assert_eq!(SYMBOLS[lexicon2::symbol(text) as usize], symbol, "{text:?}");
        seen[want] += 1;
    }
    assert!(
        seen.iter().all(|&k| k >= 3),
        "every symbol has vectors: {seen:?}"
    );
}

#[test]
fn section_11_2_example_gives_the_printed_sentences() {
    let doc = meter_md();
    let s = section(&doc, "### 11.2 Canonical sentences");
    assert!(s.contains("So `I’m on the FREE-tier; it's 3.5 e.g.` gives `\" im on the free tier \"`, `\" its 3 \"`,\n`\" 5 e \"` and `\" g \"`."));
    assert_eq!(
        lexicon2::canonical_sentences("I’m on the FREE-tier; it's 3.5 e.g."),
        [" im on the free tier ", " its 3 ", " 5 e ", " g "]
    );
}
