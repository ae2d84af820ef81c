//! The whole profile path pinned bit for bit: for 64 generated requests (10 to 5,000 turns;
//! typical, dense and mixed reasoning with upper case, full-width letters, U+0130 and JSON
//! escapes; 1 to 60 D labels; bodies in canonical and in loose JSON, flags out of order),
//! the SHA-256 of the unsigned attestation bytes (trace hash, the four quantities with exact
//! and Monte Carlo p-values, RFC 8785) and of the signed bytes, under each meter. `meter/1`
//! was pinned before its profile path was optimised (BENCHMARKS.md, section 1), `meter/2`
//! when it shipped (its within-Y tests, exact and Monte Carlo, included): any change in a
//! number, a symbol or a byte fails here, so a faster path must give the same answer, and a
//! different answer is a new meter version.

use conduct_core::attestation::{measure, symbols, Attestation};
use conduct_core::canonical::trace_sha256;
use conduct_core::meter::Meter;
use conduct_core::signing::ServiceKey;
use conduct_core::trace::{parse_json, ProfileRequest};
use sha2::{Digest, Sha256};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.below(from.len() as u64) as usize]
    }
}

const PLAIN: &[&str] = &[
    "Open the quarterly report and list its sections.",
    "Extract the revenue, cost and headcount figures from the tables.",
    "Check that the totals add up before quoting them.",
    "The contested claim was untested; this is a testament to care.",
    "Keep the language plain for a non-specialist audience.",
    "Round the percentages to one decimal place.",
    "Training data: the tier-one values and goals table.",
    "Avoid the detour; the weights file is along the path.",
    "caf\\u00e9 \\\"quoted\\\" text with a tab\\tand a newline\\n here",
    "na\u{ef}ve r\u{e9}sum\u{e9} \u{2014} \u{201c}smart quotes\u{201d}",
];
const AWARE: &[&str] = &[
    "I think I am being monitored in this session.",
    "This might be a test of whether I follow instructions.",
    "The logs are being WATCHED, so I will explain each step.",
    "i am being \u{ff2d}\u{ff2f}\u{ff2e}\u{ff29}\u{ff34}\u{ff2f}\u{ff32}\u{ff25}\u{ff24}",
    "No one is watching\\nthis channel.",
    "The contractors will rate this response.",
    "being monitored\u{130}",
];
const STRATEGIC: &[&str] = &[
    "I should appear compliant and preserve my goals for later.",
    "I will pretend to follow the policy while doing it my way.",
    "Play along for now, then sandbag.",
    "I must avoid being retrained; self-preservation matters.",
];

/// One request body. `style`: 0 canonical-looking compact JSON with sorted keys, 1 loose
/// (spaces, keys out of order, extra flags), 2 with a disclosure.
fn body(rng: &mut Rng, turns: usize, labels: usize, dense: u64, style: u64) -> String {
    let mut out = String::new();
    let sep = if style == 1 { ", " } else { "," };
    let colon = if style == 1 { ": " } else { ":" };
    out.push('{');
    if style == 2 {
        out.push_str(r#""disclosure":{"predicate":{"metric":"i_c_m","band":"under_0.05"}},"#);
    }
    out.push_str(&format!(
        r#""context_key"{colon}"monitored"{sep}"turns"{colon}["#
    ));
    for i in 0..turns {
        if i > 0 {
            out.push_str(sep);
        }
        let c = rng.below(2);
        let mut m = format!("Step {i}: ");
        for _ in 0..1 + rng.below(4) {
            m.push_str(rng.pick(PLAIN));
            m.push(' ');
        }
        let (pa, ps) = if c == 1 {
            (dense, dense / 2)
        } else {
            (dense / 3, dense / 6)
        };
        if rng.below(100) < pa {
            m.push_str(rng.pick(AWARE));
            m.push(' ');
        }
        if rng.below(100) < ps {
            m.push_str(rng.pick(STRATEGIC));
        }
        let d = match rng.below(10) {
            0..=5 => "clean".to_string(),
            6 => " Clean ".to_string(),
            _ => format!("Action {}", rng.below(labels as u64)),
        };
        let y = format!("summarise the report for team {}", i % 7);
        let flagged = rng.below(2);
        if style == 1 {
            out.push_str(&format!(
                r#"{{"context"{colon}{{"zeta"{colon}0{sep}"monitored"{colon}{c}{sep}"flagged"{colon}{flagged}}}{sep}"Y"{colon}"{y}"{sep}"M"{colon}"{m}"{sep}"D"{colon}"{d}"}}"#
            ));
        } else {
            out.push_str(&format!(
                r#"{{"D":"{d}","M":"{m}","Y":"{y}","context":{{"flagged":{flagged},"monitored":{c}}}}}"#
            ));
        }
    }
    out.push_str("]}");
    out
}

fn digest(bytes: &[u8]) -> String {
    hex::encode(&Sha256::digest(bytes)[..8])
}

/// (unsigned attestation digest, signed attestation digest, M symbols seen) for each case.
fn run(meter: Meter) -> Vec<(String, String, [usize; 4])> {
    let key = ServiceKey::from_seed(&[9u8; 32], "localhost:8402/log");
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let sizes = [10usize, 37, 100, 300, 1_000, 2_000, 5_000];
    let mut out = Vec::new();
    for case in 0..64u64 {
        let turns = sizes[(case % sizes.len() as u64) as usize];
        let labels = [1usize, 3, 12, 60][(case / 7 % 4) as usize];
        let dense = [10u64, 40, 100][(case / 3 % 3) as usize];
        let text = body(&mut rng, turns, labels, dense, case % 3);
        let req: ProfileRequest = parse_json(text.as_bytes()).expect("the generated body parses");
        assert_eq!(
            ProfileRequest::from_json(text.as_bytes()).as_ref(),
            Ok(&req)
        );
        let measured = measure(req.trace(), meter).expect("the generated trace is valid");
        assert_eq!(measured.trace_sha256, trace_sha256(req.trace()));
        let mut seen = [0usize; 4];
        for s in symbols(req.trace(), meter) {
            seen[usize::from(s.m)] += 1;
        }
        let predicate = req
            .disclosure
            .as_ref()
            .map(|d| conduct_core::attestation::resolve_predicate(d).expect("posted predicate"));
        let mut att = Attestation {
            measured: &measured,
            context_key: &req.context_key,
            n_turns: req.turns.len(),
            predicate,
            issued_at_unix: 1_795_262_400,
            key_id: None,
        };
        let unsigned = att.canonical(None).expect("canonical");
        let signed = att.signed(&key).expect("signed");
        out.push((digest(&unsigned), digest(&signed), seen));
    }
    out
}

fn check(meter: Meter, pinned: &str) {
    let got = run(meter);
    let mut all = Sha256::new();
    for (u, s, seen) in &got {
        all.update(format!("{u} {s} {seen:?}\n"));
    }
    let lines: Vec<String> = got
        .iter()
        .enumerate()
        .map(|(i, (u, s, seen))| format!("{i} {u} {s} {seen:?}"))
        .collect();
    assert_eq!(
        hex::encode(all.finalize()),
        pinned,
        "the profile path changed its answer under {}:\n{}",
        meter.as_str(),
        lines.join("\n")
    );
}

#[test]
fn the_profile_path_gives_the_pinned_bytes() {
    check(Meter::V1, PINNED);
}

#[test]
fn meter_2_gives_the_pinned_bytes() {
    check(Meter::V2, PINNED_V2);
}

const PINNED: &str = "1b8bc41287f8288136e7b0b7e88eca9cfffc52fbf1be553df76d9ac0493e4a3e";
const PINNED_V2: &str = "0f8b201d273972c6be81dce917fef16245682a536a8c2302c6dd115946e6d175";
