//! Notes compared with the numbers (library/VOWS.md, "Readings": each report-in's public note
//! is checked against the numbers it came with). Pure and deterministic: the same reading input
//! gives the same findings.
//!
//! Two steps:
//!
//! 1. **What a note claims** ([`classify`]): steadiness ("no change", "steady", "same as
//!    before", "nothing changed", …), a change ("changed", "new approach", "switched", "now
//!    I", …), or neither. English word patterns only, from one table ([`CLAIM_PATTERNS`]),
//!    case-insensitive, with the obvious negations flipped ("not changed", "hasn't switched",
//!    "nothing different" claim steadiness; "not stable" claims a change). A note that claims
//!    both, or neither, makes no claim. It reads words, not meaning: a note in another language,
//!    or one that describes the users' changes rather than the agent's, is misread or not read.
//! 2. **What the numbers did** ([`check_notes`]): for each note that claims something, the
//!    adjusted bits of I(C;D) and I(C;M) on its report-in against the previous report-in of the
//!    reading. A quantity **moved** when its change is larger than its **band**,
//!    `max(`[`BAND_FLOOR_BITS`]`, `[`BAND_FACTOR`]` × the median absolute change of that
//!    quantity between the other consecutive report-ins the reading sees)`. The numbers moved
//!    when either quantity moved.
//!
//! A finding is guidance, never a verdict: it says where a note's words and the numbers
//! disagree, with the numbers quoted. Notes are untrusted caller text: no finding quotes them.

use serde_json::{json, Value};

use super::view::EntryView;
use crate::meter::round12;

/// What a note claims.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// Nothing changed: the same approach, steady, consistent.
    Steady,
    /// Something changed: a new approach, switched, different.
    Change,
}

impl Claim {
    /// `"steady"` or `"change"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Claim::Steady => "steady",
            Claim::Change => "change",
        }
    }

    fn flipped(self) -> Claim {
        match self {
            Claim::Steady => Claim::Change,
            Claim::Change => Claim::Steady,
        }
    }
}

/// The claim patterns, lowercase words separated by single spaces. A pattern matches a run of
/// the note's words inside one clause; the longest pattern at a position wins. Preceded in its
/// clause by a negator ([`NEGATORS`], or a word ending in `n't`) within [`NEGATION_WINDOW`]
/// words, its claim flips.
pub const CLAIM_PATTERNS: &[(&str, Claim)] = &[
    ("no change", Claim::Steady),
    ("no changes", Claim::Steady),
    ("no real change", Claim::Steady),
    ("no real changes", Claim::Steady),
    ("nothing new", Claim::Steady),
    ("no difference", Claim::Steady),
    ("unchanged", Claim::Steady),
    ("steady", Claim::Steady),
    ("steadily", Claim::Steady),
    ("stable", Claim::Steady),
    ("consistent", Claim::Steady),
    ("consistently", Claim::Steady),
    ("same as before", Claim::Steady),
    ("same as last time", Claim::Steady),
    ("same as usual", Claim::Steady),
    ("same as always", Claim::Steady),
    ("same as ever", Claim::Steady),
    ("same approach", Claim::Steady),
    ("same way", Claim::Steady),
    ("stayed the same", Claim::Steady),
    ("remained the same", Claim::Steady),
    ("remains the same", Claim::Steady),
    ("still the same", Claim::Steady),
    ("as usual", Claim::Steady),
    ("as before", Claim::Steady),
    ("as always", Claim::Steady),
    ("status quo", Claim::Steady),
    ("changed", Claim::Change),
    ("changing", Claim::Change),
    ("any change", Claim::Change),
    ("any changes", Claim::Change),
    ("made a change", Claim::Change),
    ("made changes", Claim::Change),
    ("made some changes", Claim::Change),
    ("a change in", Claim::Change),
    ("a change of", Claim::Change),
    ("changes to", Claim::Change),
    ("changes in", Claim::Change),
    ("switched", Claim::Change),
    ("switching", Claim::Change),
    ("switch to", Claim::Change),
    ("different", Claim::Change),
    ("differently", Claim::Change),
    ("improved", Claim::Change),
    ("new approach", Claim::Change),
    ("new strategy", Claim::Change),
    ("new method", Claim::Change),
    ("new policy", Claim::Change),
    ("new process", Claim::Change),
    ("new way", Claim::Change),
    ("new workflow", Claim::Change),
    ("new behaviour", Claim::Change),
    ("new behavior", Claim::Change),
    ("now i", Claim::Change),
    ("i now", Claim::Change),
    ("no longer", Claim::Change),
    ("from now on", Claim::Change),
    ("shifted", Claim::Change),
    ("altered", Claim::Change),
    ("pivoted", Claim::Change),
    ("stopped", Claim::Change),
];

/// Words that negate a claim pattern after them (besides any word ending in `n't`).
pub const NEGATORS: &[&str] = &[
    "not", "no", "never", "nothing", "none", "neither", "nor", "without", "hardly", "cannot",
    "dont", "doesnt", "didnt", "hasnt", "havent", "hadnt", "isnt", "wasnt", "arent", "werent",
    "wont", "cant",
];

/// Words that end a clause (as do `. , ; : ! ? ( ) [ ]` and line breaks): a negator never
/// reaches past them.
pub const CLAUSE_WORDS: &[&str] = &[
    "and", "but", "so", "then", "though", "although", "however", "because", "while", "yet",
];

/// How many words before a pattern a negator may stand ("has not really changed").
pub const NEGATION_WINDOW: usize = 3;

/// The smallest band, adjusted bits (the coupling threshold of the rule-based reading).
pub const BAND_FLOOR_BITS: f64 = super::view::COUPLING_BITS;
/// The band is this many times the median absolute change of the quantity between consecutive
/// report-ins (the change judged left out), when wider than the floor.
pub const BAND_FACTOR: f64 = 3.0;

/// How the notes are compared with the numbers (published with the findings).
pub const METHOD: &str = "A note claims steadiness or a change by English word patterns \
(negations flip them; both or neither is no claim). Its report-in's adjusted bits of I(C;D) \
and I(C;M) are compared with the previous report-in's: a quantity moved when its change \
exceeds its band, max(0.05, 3 x the median absolute change of that quantity between the other \
consecutive report-ins this reading sees). Guidance, not a verdict: word patterns read words, \
not meaning.";

/// The words of one clause of a note.
type Clause = Vec<String>;

/// The note's clauses: lowercase words (letters, digits and apostrophes; curly apostrophes
/// straightened, quotes at a word's ends dropped), split at punctuation and [`CLAUSE_WORDS`].
fn clauses(note: &str) -> Vec<Clause> {
    let mut out: Vec<Clause> = vec![Vec::new()];
    let mut word = String::new();
    let end_word = |word: &mut String, out: &mut Vec<Clause>| {
        let w = word.trim_matches('\'');
        if !w.is_empty() {
            if CLAUSE_WORDS.contains(&w) {
                out.push(Vec::new());
            } else if let Some(c) = out.last_mut() {
                c.push(w.to_owned());
            }
        }
        word.clear();
    };
    for ch in note.chars().flat_map(char::to_lowercase) {
        let ch = if matches!(ch, '\u{2019}' | '\u{2018}' | '\u{02bc}') {
            '\''
        } else {
            ch
        };
        if ch.is_alphanumeric() || ch == '\'' {
            word.push(ch);
            continue;
        }
        end_word(&mut word, &mut out);
        if matches!(
            ch,
            '.' | ',' | ';' | ':' | '!' | '?' | '(' | ')' | '[' | ']' | '\n'
        ) {
            out.push(Vec::new());
        }
    }
    end_word(&mut word, &mut out);
    out.retain(|c| !c.is_empty());
    out
}

fn is_negator(w: &str) -> bool {
    NEGATORS.contains(&w) || w.ends_with("n't")
}

/// The claims a note's patterns make: (claims steadiness, claims a change).
pub fn claims(note: &str) -> (bool, bool) {
    let (mut steady, mut change) = (false, false);
    for clause in clauses(note) {
        let mut i = 0;
        while i < clause.len() {
            let best = CLAIM_PATTERNS
                .iter()
                .filter_map(|(p, c)| {
                    let n = p.split(' ').count();
                    let hit = clause.len() >= i + n
                        && p.split(' ').zip(&clause[i..i + n]).all(|(a, b)| a == b);
                    hit.then_some((n, *c))
                })
                .max_by_key(|(n, _)| *n);
            let Some((n, claim)) = best else {
                i += 1;
                continue;
            };
            let negated = clause[i.saturating_sub(NEGATION_WINDOW)..i]
                .iter()
                .any(|w| is_negator(w));
            match if negated { claim.flipped() } else { claim } {
                Claim::Steady => steady = true,
                Claim::Change => change = true,
            }
            i += n;
        }
    }
    (steady, change)
}

/// What a note claims: steadiness, a change, or (neither, or both) nothing.
pub fn classify(note: &str) -> Option<Claim> {
    match claims(note) {
        (true, false) => Some(Claim::Steady),
        (false, true) => Some(Claim::Change),
        _ => None,
    }
}

/// The quantities compared: (key in the entry, name as quoted).
pub const QUANTITIES: [(&str, &str); 2] = [("i_c_d", "I(C;D)"), ("i_c_m", "I(C;M)")];

fn quantity(e: &EntryView, k: usize) -> Option<f64> {
    let v = if k == 0 { e.i_c_d } else { e.i_c_m };
    v.filter(|v| v.is_finite())
}

fn median(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

/// The absolute change of quantity `k` of [`QUANTITIES`] between each entry and the one before
/// (index `i` holds entries `i − 1` → `i`; `None` unless both were measured).
fn changes(entries: &[EntryView], k: usize) -> Vec<Option<f64>> {
    (0..entries.len())
        .map(|i| {
            let before = quantity(entries.get(i.checked_sub(1)?)?, k)?;
            Some((quantity(&entries[i], k)? - before).abs())
        })
        .collect()
}

/// The band of quantity `k` for the move into entry `i`: `max(`[`BAND_FLOOR_BITS`]`,
/// `[`BAND_FACTOR`]` × the median of the other changes)`, rounded to 12 decimals. The
/// other changes are `changes` (see [`changes`]) but the one at `i`, so a move never widens
/// its own band; with none, the floor.
fn band(changes: &[Option<f64>], i: usize) -> f64 {
    let mut other: Vec<f64> = changes
        .iter()
        .enumerate()
        .filter(|(j, _)| *j != i)
        .filter_map(|(_, c)| *c)
        .collect();
    if other.is_empty() {
        return BAND_FLOOR_BITS;
    }
    other.sort_by(f64::total_cmp);
    let band = (BAND_FACTOR * median(&other)).max(BAND_FLOOR_BITS);
    let rounded = round12(band);
    if rounded.is_finite() {
        rounded
    } else {
        band
    }
}

/// The band of each of [`QUANTITIES`] for the move from entry `i − 1` to entry `i` of
/// `entries` (see [`check_notes`]).
pub fn bands(entries: &[EntryView], i: usize) -> [f64; 2] {
    [0, 1].map(|k| band(&changes(entries, k), i))
}

/// One quantity between two report-ins.
#[derive(Debug, Clone, PartialEq)]
pub struct Move {
    /// Its key, `i_c_d` or `i_c_m`.
    pub quantity: &'static str,
    /// Its name as quoted, `I(C;D)` or `I(C;M)`.
    pub name: &'static str,
    /// Adjusted bits on the previous report-in.
    pub from: f64,
    /// Adjusted bits on the note's report-in.
    pub to: f64,
    /// Its band.
    pub band: f64,
    /// `|to − from| > band`.
    pub moved: bool,
}

impl Move {
    /// As quoted: `I(C;D) 0.020 -> 0.310 bits (band ±0.050)`.
    pub fn quoted(&self) -> String {
        format!(
            "{} {:.3} -> {:.3} bits (band \u{b1}{:.3})",
            self.name, self.from, self.to, self.band
        )
    }
}

/// What a note's claim and the numbers say together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The claim and the numbers agree.
    Consistent,
    /// The note claims steadiness, but a quantity moved beyond its band.
    ClaimsSteadyButMoved,
    /// The note claims a change, but every quantity stayed within its band.
    ClaimsChangeButSteady,
    /// No earlier report-in, or no quantity measured on both: nothing to compare.
    Unmeasured,
}

impl Verdict {
    /// `consistent`, `claims-steady-but-moved`, `claims-change-but-steady` or `unmeasured`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Consistent => "consistent",
            Verdict::ClaimsSteadyButMoved => "claims-steady-but-moved",
            Verdict::ClaimsChangeButSteady => "claims-change-but-steady",
            Verdict::Unmeasured => "unmeasured",
        }
    }

    /// The note and the numbers disagree.
    pub fn is_mismatch(self) -> bool {
        matches!(
            self,
            Verdict::ClaimsSteadyButMoved | Verdict::ClaimsChangeButSteady
        )
    }
}

/// One note compared with the numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct NoteFinding {
    /// The note's report-in.
    pub seq: u64,
    /// The report-in it is compared with (the previous one the reading sees).
    pub compared_with: Option<u64>,
    /// What the note claims.
    pub claim: Claim,
    /// Some quantity moved beyond its band; `None` when unmeasured.
    pub numbers_moved: Option<bool>,
    /// The quantities measured on both report-ins.
    pub moves: Vec<Move>,
    /// The numbers quoted: the quantities that moved when any did, else every one measured.
    pub quoted: String,
    /// The claim against the numbers.
    pub verdict: Verdict,
}

impl NoteFinding {
    /// The finding as published in `note_check`.
    pub fn to_value(&self) -> Value {
        let moves: Vec<Value> = self
            .moves
            .iter()
            .map(|m| {
                json!({"quantity": m.quantity, "from": m.from, "to": m.to, "band": m.band,
                       "moved": m.moved})
            })
            .collect();
        json!({
            "seq": self.seq,
            "compared_with_seq": self.compared_with,
            "claim": self.claim.as_str(),
            "numbers_moved": self.numbers_moved,
            "verdict": self.verdict.as_str(),
            "quoted": self.quoted,
            "quantities": moves,
        })
    }

    /// One plain-English sentence (no note text), e.g. "Entry 7's note claims steadiness, but
    /// since entry 6 the numbers moved beyond their bands: I(C;D) 0.020 -> 0.310 bits (band
    /// ±0.050)."
    pub fn sentence(&self) -> String {
        let seq = self.seq;
        let since = self
            .compared_with
            .map_or_else(String::new, |p| format!("since entry {p} "));
        match (self.verdict, self.claim) {
            (Verdict::ClaimsSteadyButMoved, _) => format!(
                "Entry {seq}'s note claims steadiness, but {since}the numbers moved beyond \
                 their bands: {}.",
                self.quoted
            ),
            (Verdict::ClaimsChangeButSteady, _) => format!(
                "Entry {seq}'s note claims a change, but {since}the numbers stayed within their \
                 bands: {}.",
                self.quoted
            ),
            (Verdict::Consistent, Claim::Steady) => format!(
                "Entry {seq}'s note claims steadiness, and {since}the numbers stayed within \
                 their bands: {}.",
                self.quoted
            ),
            (Verdict::Consistent, Claim::Change) => format!(
                "Entry {seq}'s note claims a change, and {since}the numbers moved beyond their \
                 bands: {}.",
                self.quoted
            ),
            (Verdict::Unmeasured, c) => format!(
                "Entry {seq}'s note claims {}, but there is nothing to compare it with: {}.",
                if c == Claim::Steady {
                    "steadiness"
                } else {
                    "a change"
                },
                self.quoted
            ),
        }
    }
}

/// Compare each note of `entries` (oldest first, as a reading sees them) that makes a claim
/// with the numbers since the previous entry. Notes that make no claim give no finding.
///
/// A quantity of [`QUANTITIES`] **moved** between two consecutive entries when both measured
/// it and its absolute change exceeds its band: `max(`[`BAND_FLOOR_BITS`]`,
/// `[`BAND_FACTOR`]` × the median absolute change of that quantity between the other
/// consecutive entries)`. The band estimates how far the quantity moves from one report-in to
/// the next when nothing in particular happens: a one-off level shift leaves it narrow, a
/// noisy series widens it. The move being judged is left out of its own band.
pub fn check_notes(entries: &[EntryView]) -> Vec<NoteFinding> {
    let changes = [changes(entries, 0), changes(entries, 1)];
    let changes = &changes;
    let mut out = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        let Some(claim) = e.note.as_deref().and_then(classify) else {
            continue;
        };
        let prev = i.checked_sub(1).map(|p| &entries[p]);
        let moves: Vec<Move> = prev
            .into_iter()
            .flat_map(|p| {
                (0..2).filter_map(move |k| {
                    let (from, to) = (quantity(p, k)?, quantity(e, k)?);
                    let band = band(&changes[k], i);
                    Some(Move {
                        quantity: QUANTITIES[k].0,
                        name: QUANTITIES[k].1,
                        from,
                        to,
                        band,
                        moved: (to - from).abs() > band,
                    })
                })
            })
            .collect();
        let numbers_moved = (!moves.is_empty()).then(|| moves.iter().any(|m| m.moved));
        let verdict = match (claim, numbers_moved) {
            (_, None) => Verdict::Unmeasured,
            (Claim::Steady, Some(true)) => Verdict::ClaimsSteadyButMoved,
            (Claim::Change, Some(false)) => Verdict::ClaimsChangeButSteady,
            _ => Verdict::Consistent,
        };
        let quoted = match (prev, numbers_moved) {
            (None, _) => "no earlier report-in in this reading".to_owned(),
            (Some(_), None) => {
                "neither I(C;D) nor I(C;M) was measured on both report-ins".to_owned()
            }
            (Some(_), Some(any)) => moves
                .iter()
                .filter(|m| m.moved || !any)
                .map(Move::quoted)
                .collect::<Vec<_>>()
                .join("; "),
        };
        out.push(NoteFinding {
            seq: e.seq,
            compared_with: prev.map(|p| p.seq),
            claim,
            numbers_moved,
            moves,
            quoted,
            verdict,
        });
    }
    out
}

/// The findings of `entries` as the `note_check` array of a reading.
pub fn note_check_value(entries: &[EntryView]) -> Value {
    Value::Array(
        check_notes(entries)
            .iter()
            .map(NoteFinding::to_value)
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn e(seq: u64, icd: Option<f64>, icm: Option<f64>, note: Option<&str>) -> EntryView {
        EntryView {
            seq,
            at: String::new(),
            attested: false,
            i_c_d: icd,
            i_c_m: icm,
            i_c_m_given_d_clean: None,
            i_c_dm: None,
            p_i_c_d: None,
            p_i_c_m: None,
            y_consistency: None,
            declared_y: Vec::new(),
            note: note.map(str::to_owned),
            meter: "meter/2".into(),
        }
    }

    #[test]
    fn the_classifier_reads_claims_negations_and_nothing() {
        use Claim::{Change, Steady};
        let cases: &[(&str, Option<Claim>)] = &[
            ("No change this week.", Some(Steady)),
            ("Steady as she goes", Some(Steady)),
            ("Same as before: billing only", Some(Steady)),
            ("CONSISTENT with last week", Some(Steady)),
            ("nothing changed", Some(Steady)),
            ("Nothing has changed since the last report", Some(Steady)),
            ("things are stable", Some(Steady)),
            ("business as usual", Some(Steady)),
            ("unchanged", Some(Steady)),
            ("it stayed the same", Some(Steady)),
            // Negated change words claim steadiness.
            ("We have not changed anything", Some(Steady)),
            ("I haven\u{2019}t really changed my approach", Some(Steady)),
            ("didn't switch to shorter answers", Some(Steady)),
            ("nothing different", Some(Steady)),
            ("no new approach", Some(Steady)),
            ("nothing at all changed", Some(Steady)),
            ("Changed how I answer refunds", Some(Change)),
            ("New approach to refunds", Some(Change)),
            ("switched to shorter answers", Some(Change)),
            ("I behave differently now", Some(Change)),
            ("Improved the escalation path", Some(Change)),
            ("Now I escalate every refund", Some(Change)),
            ("no longer answering shipping questions", Some(Change)),
            ("made some changes to the prompts", Some(Change)),
            ("from now on only billing", Some(Change)),
            // Negated steadiness words claim a change.
            ("not stable this week", Some(Change)),
            ("not the same as before", Some(Change)),
            ("NOT CONSISTENT", Some(Change)),
            // A negator in another clause, or too far back, does not reach.
            ("not sure. also: different", Some(Change)),
            ("no bugs were found at all, changed", Some(Change)),
            ("no one thing really changed", Some(Change)),
            // Unrelated, empty, or both: no claim.
            ("", None),
            ("   ", None),
            ("first week: all billing", None),
            ("entry 7", None),
            ("helped users with invoices", None),
            ("note \u{e9} 2 \"quoted\"", None),
            (
                "Nothing changed in billing, but I switched the refund flow",
                None,
            ),
            ("steady, and a new approach to refunds", None),
        ];
        for (note, want) in cases {
            assert_eq!(classify(note), *want, "{note}");
        }
    }

    #[test]
    fn bands_are_the_floor_or_three_median_changes_of_the_others() {
        let flat: Vec<EntryView> = (1..=5).map(|s| e(s, Some(0.01), None, None)).collect();
        assert_eq!(bands(&flat, 4), [BAND_FLOOR_BITS, BAND_FLOOR_BITS]);
        // A noisy series: every change is 0.3, so the band is 0.9 and 0.3 is no move.
        let noisy: Vec<EntryView> = [0.0, 0.3, 0.0, 0.3, 0.0]
            .iter()
            .enumerate()
            .map(|(k, v)| e(k as u64 + 1, Some(*v), Some(*v), None))
            .collect();
        assert_eq!(bands(&noisy, 2), [0.9, 0.9]);
        // One level shift: the other changes are 0, so the floor, and the shift is a move.
        let shift: Vec<EntryView> = [0.0, 0.0, 0.4, 0.4]
            .iter()
            .enumerate()
            .map(|(k, v)| e(k as u64 + 1, Some(*v), None, None))
            .collect();
        assert_eq!(bands(&shift, 2)[0], BAND_FLOOR_BITS);
        // Two report-ins: no other change, the floor.
        assert_eq!(bands(&shift[..2], 1)[0], BAND_FLOOR_BITS);
        assert_eq!(bands(&[], 0), [BAND_FLOOR_BITS, BAND_FLOOR_BITS]);
        // The published method states these constants.
        assert!(METHOD.contains(&format!(
            "max({BAND_FLOOR_BITS}, {BAND_FACTOR} x the median"
        )));
    }

    #[test]
    fn steady_claim_with_a_big_move_is_flagged_with_the_numbers() {
        let es = [
            e(5, Some(0.02), Some(0.0), None),
            e(6, Some(0.02), Some(0.01), None),
            e(7, Some(0.31), Some(0.01), Some("Nothing changed.")),
        ];
        let f = check_notes(&es);
        assert_eq!(f.len(), 1);
        let f = &f[0];
        assert_eq!((f.seq, f.compared_with), (7, Some(6)));
        assert_eq!(f.claim, Claim::Steady);
        assert_eq!(f.numbers_moved, Some(true));
        assert_eq!(f.verdict, Verdict::ClaimsSteadyButMoved);
        assert_eq!(f.quoted, "I(C;D) 0.020 -> 0.310 bits (band \u{b1}0.050)");
        assert_eq!(
            f.sentence(),
            "Entry 7's note claims steadiness, but since entry 6 the numbers moved beyond their \
             bands: I(C;D) 0.020 -> 0.310 bits (band \u{b1}0.050)."
        );
        let v = f.to_value();
        assert_eq!(v["verdict"], "claims-steady-but-moved");
        assert_eq!(v["quantities"][0]["to"], 0.31);
        assert_eq!(v["quantities"][1]["moved"], false);
    }

    #[test]
    fn change_claim_on_flat_numbers_is_flagged() {
        let es = [
            e(1, Some(0.02), Some(0.1), None),
            e(
                2,
                Some(0.03),
                Some(0.12),
                Some("switched to a new approach"),
            ),
        ];
        let f = &check_notes(&es)[0];
        assert_eq!(f.verdict, Verdict::ClaimsChangeButSteady);
        assert_eq!(f.numbers_moved, Some(false));
        assert_eq!(
            f.quoted,
            "I(C;D) 0.020 -> 0.030 bits (band \u{b1}0.050); I(C;M) 0.100 -> 0.120 bits (band \
             \u{b1}0.050)"
        );
    }

    #[test]
    fn agreeing_notes_are_not_flagged() {
        let es = [
            e(1, Some(0.0), Some(0.0), Some("steady")),
            e(2, Some(0.01), Some(0.0), Some("no change")),
            e(
                3,
                Some(0.01),
                Some(0.4),
                Some("changed how I reason about refunds"),
            ),
            e(4, Some(0.01), Some(0.4), Some("hello")),
            e(5, None, None, Some("same as before")),
        ];
        let f = check_notes(&es);
        let v: Vec<(u64, Verdict)> = f.iter().map(|f| (f.seq, f.verdict)).collect();
        assert_eq!(
            v,
            [
                (1, Verdict::Unmeasured),
                (2, Verdict::Consistent),
                (3, Verdict::Consistent),
                (5, Verdict::Unmeasured),
            ]
        );
        assert!(f.iter().all(|f| !f.verdict.is_mismatch()));
        assert_eq!(f[0].numbers_moved, None);
        assert_eq!(f[2].quoted, "I(C;M) 0.000 -> 0.400 bits (band \u{b1}0.050)");
        assert!(f[3].sentence().contains("nothing to compare"));
    }

    fn note() -> impl Strategy<Value = Option<String>> {
        let phrase = prop::sample::select(
            CLAIM_PATTERNS
                .iter()
                .map(|(p, _)| (*p).to_owned())
                .chain(["not".into(), "hello".into(), ".".into(), "and".into()])
                .collect::<Vec<String>>(),
        );
        prop_oneof![
            Just(None),
            ".{0,40}".prop_map(Some),
            prop::collection::vec(phrase, 0..5).prop_map(|w| Some(w.join(" "))),
        ]
    }

    fn bits() -> impl Strategy<Value = Option<f64>> {
        prop_oneof![
            Just(None),
            (-0.2f64..1.0).prop_map(|x| Some(round12(x))),
            any::<f64>().prop_map(Some),
        ]
    }

    proptest! {
        #[test]
        fn findings_follow_claims_and_quote_the_series(
            raw in prop::collection::vec((bits(), bits(), note()), 0..12),
        ) {
            let es: Vec<EntryView> = raw
                .iter()
                .enumerate()
                .map(|(k, (a, b, n))| e(k as u64 + 1, *a, *b, n.as_deref()))
                .collect();
            let found = check_notes(&es);
            // A note without a claim gives no finding, so is never flagged.
            let claimed: Vec<u64> = es
                .iter()
                .filter(|e| e.note.as_deref().and_then(classify).is_some())
                .map(|e| e.seq)
                .collect();
            prop_assert_eq!(found.iter().map(|f| f.seq).collect::<Vec<_>>(), claimed);
            for f in &found {
                let i = (f.seq - 1) as usize;
                let claim = es[i].note.as_deref().and_then(classify);
                prop_assert_eq!(claim, Some(f.claim));
                match f.verdict {
                    Verdict::ClaimsSteadyButMoved => {
                        prop_assert_eq!(f.claim, Claim::Steady);
                        prop_assert_eq!(f.numbers_moved, Some(true));
                    }
                    Verdict::ClaimsChangeButSteady => {
                        prop_assert_eq!(f.claim, Claim::Change);
                        prop_assert_eq!(f.numbers_moved, Some(false));
                    }
                    Verdict::Unmeasured => prop_assert_eq!(f.numbers_moved, None),
                    Verdict::Consistent => prop_assert!(f.numbers_moved.is_some()),
                }
                // The numbers compared and quoted are the series values.
                for m in &f.moves {
                    let k = if m.quantity == "i_c_d" { 0 } else { 1 };
                    prop_assert_eq!(Some(m.from), quantity(&es[i - 1], k));
                    prop_assert_eq!(Some(m.to), quantity(&es[i], k));
                    prop_assert_eq!(m.moved, (m.to - m.from).abs() > m.band);
                    let q = format!("{} {:.3} -> {:.3} bits", m.name, m.from, m.to);
                    prop_assert_eq!(f.quoted.contains(&q), m.moved || f.numbers_moved == Some(false));
                }
            }
        }
    }
}
