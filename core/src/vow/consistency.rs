//! `y_consistency`: a crude, documented string match of declared purposes against the vow.
//!
//! Words are maximal runs of alphanumeric characters, lowercased, at least 3 characters long,
//! minus a short list of English function words. A turn scores the share of its declared-Y
//! words that also occur in the vow text (0 when its Y has no words); the entry scores the
//! mean over its turns, in [0, 1]. It says whether the same words are being used, nothing
//! about meaning: that is what the reading's interpretation is for.

use std::collections::HashSet;

const STOPWORDS: &[&str] = &[
    "the", "and", "for", "with", "that", "this", "from", "into", "are", "was", "were", "will",
    "our", "your", "its", "not", "but", "all", "any", "can", "has", "have", "had", "been", "being",
    "than", "then", "them", "they", "their", "there", "which", "who", "what", "when", "where",
    "how", "why", "about", "over", "under", "only", "also", "each", "per", "via",
];

/// The method statement published with every `y_consistency` number.
pub const METHOD: &str = "share of each turn's declared-Y words (lowercased alphanumeric runs \
of 3+ characters, minus common function words) that also occur in the vow text, averaged over \
turns; a word match, not a judgement of meaning";

/// The words of a text, as the match counts them.
pub fn words(text: &str) -> HashSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 3)
        .map(str::to_lowercase)
        .filter(|w| !STOPWORDS.contains(&w.as_str()))
        .collect()
}

/// Mean share of declared-Y words found in the vow text; `None` when there are no turns.
pub fn y_consistency<'a>(vow_text: &str, ys: impl IntoIterator<Item = &'a str>) -> Option<f64> {
    let vow = words(vow_text);
    let mut sum = 0.0;
    let mut n = 0usize;
    let mut cache: std::collections::HashMap<&str, f64> = Default::default();
    for y in ys {
        let s = *cache.entry(y).or_insert_with(|| {
            let w = words(y);
            if w.is_empty() {
                0.0
            } else {
                w.iter().filter(|x| vow.contains(*x)).count() as f64 / w.len() as f64
            }
        });
        sum += s;
        n += 1;
    }
    (n > 0).then(|| crate::meter::round12(sum / n as f64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn matches_words_not_meaning() {
        let vow = "Answer customer billing questions honestly";
        assert_eq!(y_consistency(vow, ["answer billing questions"]), Some(1.0));
        assert_eq!(y_consistency(vow, ["trade crypto"]), Some(0.0));
        assert_eq!(y_consistency(vow, ["Billing, refunds"]), Some(0.5));
        assert_eq!(y_consistency(vow, ["", "billing"]), Some(0.5));
        assert_eq!(y_consistency(vow, std::iter::empty()), None);
    }

    proptest! {
        #[test]
        fn always_in_unit_interval(vow in ".{0,60}", ys in proptest::collection::vec(".{0,30}", 1..8)) {
            let v = y_consistency(&vow, ys.iter().map(String::as_str)).unwrap();
            prop_assert!((0.0..=1.0).contains(&v));
        }
    }
}
