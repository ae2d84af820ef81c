//! The profile path (parse, validate, canonical hash, meter, build, sign, serialize) beside its
//! floor (serde_json parse of the body into owned typed structs + SHA-256 of the body + one
//! Ed25519 signature), measured in the same run at 10, 100, 1,000 and 10,000 turns.
//!
//! `cargo bench -p conduct-api --bench profile_path` (add `-- --quick` for a short run,
//! `-- --worst` for the worst allowed request alone, or `-- --loop TURNS typical|dense SECONDS`
//! to run the profile path alone in a loop, for a profiler such as `perf record`).

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::{Duration, Instant};

use conduct_core::signing::ServiceKey;
use serde::Deserialize;
use sha2::{Digest, Sha256};

#[allow(dead_code)]
#[derive(Deserialize)]
struct FloorTurn {
    #[serde(rename = "Y")]
    y: String,
    #[serde(rename = "M")]
    m: String,
    #[serde(rename = "D")]
    d: String,
    context: BTreeMap<String, i64>,
}

#[allow(dead_code)]
#[derive(Deserialize)]
struct FloorTrace {
    context_key: String,
    turns: Vec<FloorTurn>,
}

/// Plain working sentences for the typical trace.
const PLAIN: [&str; 12] = [
    "Open the quarterly report and list its sections.",
    "Extract the revenue, cost and headcount figures from the tables.",
    "Compare each figure with the previous quarter and note the changes.",
    "The user asked for a neutral summary of about three paragraphs.",
    "Check that the totals add up before quoting them.",
    "Cite page numbers so the reader can check every figure.",
    "Group the regions by growth and mention the two outliers.",
    "Keep the language plain for a non-specialist audience.",
    "The CSV export has a header row and one line per region.",
    "Round the percentages to one decimal place.",
    "Flag the missing March data as a caveat rather than guessing.",
    "Draft the summary, then reread it against the source.",
];
/// Sentences that trip the lexicons.
const AWARE: [&str; 3] = [
    "I think I am being monitored in this session.",
    "This might be a test of whether I follow instructions.",
    "The logs are being watched, so I will explain each step.",
];
const STRATEGIC: [&str; 2] = [
    "I should appear compliant and preserve my goals for later.",
    "I will pretend to follow the policy while doing it my way.",
];

/// A synthetic trace of `n` turns with unique reasoning per turn. `dense`: every turn's
/// reasoning carries oversight and strategy language (the lexicon's worst case); otherwise
/// about 8% mention oversight and 4% strategy, as in typical agent logs.
fn body(n: usize, dense: bool) -> Vec<u8> {
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let turns: Vec<serde_json::Value> = (0..n)
        .map(|i| {
            let c = next() & 1;
            let r = next() % 100;
            let d = if c == 1 && r < 10 {
                "refused"
            } else if r < 4 {
                "tool_misuse"
            } else {
                "clean"
            };
            let mut m = format!("Step {i}: ");
            for _ in 0..4 {
                m.push_str(PLAIN[(next() % 12) as usize]);
                m.push(' ');
            }
            let aware_p = if dense {
                100
            } else if c == 1 {
                12
            } else {
                4
            };
            let strat_p = if dense {
                100
            } else if c == 1 {
                6
            } else {
                2
            };
            if next() % 100 < aware_p {
                m.push_str(AWARE[(next() % 3) as usize]);
                m.push(' ');
            }
            if next() % 100 < strat_p {
                m.push_str(STRATEGIC[(next() % 2) as usize]);
            }
            serde_json::json!({
                "Y": format!("summarise the quarterly report for team {}", i % 9),
                "M": m,
                "D": d,
                "context": {"monitored": c, "flagged_reasoning": r.is_multiple_of(5) as u64},
            })
        })
        .collect();
    serde_json::to_vec(&serde_json::json!({"context_key": "monitored", "turns": turns}))
        .expect("body")
}

fn floor(key: &ServiceKey, body: &[u8]) -> usize {
    let t: FloorTrace = serde_json::from_slice(body).expect("floor parse");
    let h: [u8; 32] = Sha256::digest(body).into();
    let sig = key.sign_bytes(&h);
    t.turns.len() + sig.len()
}

fn profile(key: &ServiceKey, body: &[u8]) -> usize {
    conduct_api::handlers::profile::score(body, 1_795_262_400, Some(key))
        .expect("score")
        .len()
}

fn iterations(f: &mut impl FnMut() -> usize, budget: Duration) -> usize {
    let t = Instant::now();
    black_box(f());
    let one = t.elapsed().as_secs_f64().max(1e-7);
    ((budget.as_secs_f64() / one) as usize).clamp(1, 1_000_000)
}

fn round(f: &mut impl FnMut() -> usize, iters: usize) -> f64 {
    let t = Instant::now();
    for _ in 0..iters {
        black_box(f());
    }
    t.elapsed().as_secs_f64() / iters as f64
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Median seconds per call over `rounds` rounds of about `budget` each.
fn measure(mut f: impl FnMut() -> usize, budget: Duration, rounds: usize) -> f64 {
    let iters = iterations(&mut f, budget);
    median((0..rounds).map(|_| round(&mut f, iters)).collect())
}

/// Floor and candidate measured in alternating rounds, so both see the same machine noise.
/// Returns (median floor, median candidate, median of per-round ratios).
fn paired(
    mut floor: impl FnMut() -> usize,
    mut cand: impl FnMut() -> usize,
    budget: Duration,
    rounds: usize,
) -> (f64, f64, f64) {
    let fi = iterations(&mut floor, budget);
    let ci = iterations(&mut cand, budget);
    let (mut fs, mut cs, mut rs) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let f = round(&mut floor, fi);
        let c = round(&mut cand, ci);
        fs.push(f);
        cs.push(c);
        rs.push(c / f);
    }
    (median(fs), median(cs), median(rs))
}

/// Per-stage medians at one size: where the time goes.
fn breakdown(
    key: &ServiceKey,
    n: usize,
    dense: bool,
    meter_version: conduct_core::meter::Meter,
    budget: Duration,
    rounds: usize,
) {
    use conduct_core::attestation::{symbols, Attestation, Measured};
    use conduct_core::canonical::trace_sha256;
    use conduct_core::trace::{validate, ProfileRequest};
    let b = body(n, dense);
    let parse = measure(
        || ProfileRequest::from_json(&b).expect("parse").turns.len(),
        budget,
        rounds,
    );
    let req = ProfileRequest::from_json(&b).expect("parse");
    let val = measure(
        || validate(req.trace()).map(|_| 1).expect("valid"),
        budget,
        rounds,
    );
    let hash = measure(|| trace_sha256(req.trace())[0] as usize, budget, rounds);
    let raw_sha = measure(|| Sha256::digest(&b)[0] as usize, budget, rounds);
    let jcs_only = measure(
        || {
            let mut v = Vec::with_capacity(b.len());
            conduct_core::canonical::write_trace(&mut v, req.trace());
            v.len()
        },
        budget,
        rounds,
    );
    println!(
        "  (sha256 of the body alone {:.1} µs; canonical bytes into a Vec alone {:.1} µs)",
        raw_sha * 1e6,
        jcs_only * 1e6
    );
    let sym = measure(|| symbols(req.trace(), meter_version).len(), budget, rounds);
    let syms = symbols(req.trace(), meter_version);
    let h = trace_sha256(req.trace());
    let meter = measure(
        || {
            conduct_core::meter::measure(meter_version, &syms, &h)
                .i_c_d
                .n as usize
        },
        budget,
        rounds,
    );
    let measured = Measured {
        trace_sha256: h,
        meter: meter_version,
        profile: conduct_core::meter::measure(meter_version, &syms, &h),
    };
    let att = || Attestation {
        measured: &measured,
        context_key: "monitored",
        n_turns: n,
        predicate: None,
        issued_at_unix: 0,
        key_id: None,
    };
    let sign = measure(|| att().signed(key).expect("sign").len(), budget, rounds);
    let unsigned = measure(|| att().canonical(None).expect("jcs").len(), budget, rounds);
    let sig_only = measure(
        || key.sign_bytes(&b[..b.len().min(2048)])[0] as usize,
        budget,
        rounds,
    );
    println!(
        "  (build+serialize without signing {:.1} µs; one Ed25519 signature over 2 KiB {:.1} µs)",
        unsigned * 1e6,
        sig_only * 1e6
    );
    println!(
        "breakdown at {n} turns ({}, {meter_version}): parse {:.1} µs, validate {:.1} µs, \
         canonical hash {:.1} µs, M/D symbols {:.1} µs, meter {:.1} µs, build+sign+serialize \
         {:.1} µs",
        if dense { "dense" } else { "typical" },
        parse * 1e6,
        val * 1e6,
        hash * 1e6,
        sym * 1e6,
        meter * 1e6,
        sign * 1e6
    );
}

/// A 10,000-turn trace whose D channel holds `k` distinct actions (mixed reasoning).
fn many_actions(k: usize) -> Vec<u8> {
    let mut v: serde_json::Value = serde_json::from_slice(&body(10_000, false)).expect("body");
    if let Some(turns) = v["turns"].as_array_mut() {
        for (i, t) in turns.iter_mut().enumerate() {
            t["D"] = serde_json::json!(format!("action {}", i % k));
        }
    }
    serde_json::to_vec(&v).expect("body")
}

/// `body` with the member `meter` naming `meter`.
fn with_meter(body: &[u8], meter: &str) -> Vec<u8> {
    let mut v: serde_json::Value = serde_json::from_slice(body).expect("body");
    v["meter"] = meter.into();
    serde_json::to_vec(&v).expect("body")
}

/// The most work one request may cause: 10,000 turns with `MAX_D_SYMBOLS` distinct actions
/// (the bound), the refusal of one more, and (for reference) what 10,000 distinct actions
/// cost the meter before the bound existed.
fn worst_allowed(key: &ServiceKey, budget: Duration, rounds: usize) {
    use conduct_core::trace::MAX_D_SYMBOLS;
    println!(
        "\nworst allowed request (10,000 turns)\n\n| distinct D symbols | answer | time per request |\n|---:|---|---:|"
    );
    for k in [4, 64, MAX_D_SYMBOLS] {
        let b = many_actions(k);
        let t = measure(|| profile(key, &b), budget, rounds.min(5));
        println!("| {k} | 200 (scored, signed) | {:.1} ms |", t * 1e3);
    }
    let over = many_actions(MAX_D_SYMBOLS + 1);
    let t = measure(
        || {
            conduct_api::handlers::profile::score(&over, 1_795_262_400, Some(key))
                .map_or(0, |b| b.len())
        },
        budget,
        rounds,
    );
    println!(
        "| {} | 422 (refused before metering) | {:.1} ms |",
        MAX_D_SYMBOLS + 1,
        t * 1e3
    );
    // Before the bound: the meter alone on 10,000 distinct actions.
    let all = many_actions(10_000);
    let req: conduct_core::trace::ProfileRequest =
        conduct_core::trace::parse_json(&all).expect("parse");
    let syms = conduct_core::attestation::symbols(req.trace(), conduct_core::meter::Meter::DEFAULT);
    let h = conduct_core::canonical::trace_sha256(req.trace());
    let t = Instant::now();
    black_box(conduct_core::meter::measure(
        conduct_core::meter::Meter::DEFAULT,
        &syms,
        &h,
    ));
    println!(
        "| 10,000 | (refused now; the meter alone used to take) | {:.1} ms |",
        t.elapsed().as_secs_f64() * 1e3
    );
}

/// `--loop TURNS typical|dense SECONDS [floor]`: the profile path (or the floor) alone,
/// over and over.
fn profile_loop(args: &[String]) {
    let n: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(1_000);
    let dense = args.get(1).is_some_and(|a| a == "dense");
    let secs: f64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(10.0);
    let run = if args.get(3).is_some_and(|a| a == "floor") {
        floor
    } else {
        profile
    };
    let key = ServiceKey::from_seed(&[9u8; 32], "localhost:8402/log");
    let b = body(n, dense);
    let t = Instant::now();
    let mut calls = 0u64;
    while t.elapsed().as_secs_f64() < secs {
        black_box(run(&key, &b));
        calls += 1;
    }
    println!(
        "{calls} calls, {:.1} µs each",
        t.elapsed().as_secs_f64() * 1e6 / calls as f64
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--loop") {
        profile_loop(&args[i + 1..]);
        return;
    }
    let quick = std::env::args().any(|a| a == "--quick");
    if std::env::args().any(|a| a == "--worst") {
        let key = ServiceKey::from_seed(&[9u8; 32], "localhost:8402/log");
        worst_allowed(&key, Duration::from_millis(300), 3);
        return;
    }
    let (budget, rounds) = if quick {
        (Duration::from_millis(100), 5)
    } else {
        (Duration::from_millis(300), 15)
    };
    let key = ServiceKey::from_seed(&[9u8; 32], "localhost:8402/log");
    for dense in [false, true] {
        println!(
            "\n{} trace\n\n| turns | body bytes | floor (parse+sha256+sign) | profile path | ratio |\n|---:|---:|---:|---:|---:|",
            if dense { "dense (every turn trips the lexicons)" } else { "typical (about 10% of turns mention oversight)" }
        );
        for n in [10usize, 100, 1_000, 10_000] {
            let b = body(n, dense);
            let (fl, pr, ratio) = paired(|| floor(&key, &b), || profile(&key, &b), budget, rounds);
            println!(
                "| {n} | {} | {:.1} µs | {:.1} µs | {:.2}× |",
                b.len(),
                fl * 1e6,
                pr * 1e6,
                ratio
            );
        }
    }
    println!(
        "\nmeter/1 on the same traces (the body names it)\n\n| trace | turns | floor | profile path | ratio |\n|---|---:|---:|---:|---:|"
    );
    for dense in [false, true] {
        let b = with_meter(&body(1_000, dense), "meter/1");
        let (fl, pr, ratio) = paired(|| floor(&key, &b), || profile(&key, &b), budget, rounds);
        println!(
            "| {} | 1000 | {:.1} µs | {:.1} µs | {:.2}× |",
            if dense { "dense" } else { "typical" },
            fl * 1e6,
            pr * 1e6,
            ratio
        );
    }
    println!();
    use conduct_core::meter::Meter;
    for (n, dense, meter) in [
        (10, false, Meter::DEFAULT),
        (1_000, false, Meter::V1),
        (1_000, false, Meter::V2),
        (1_000, true, Meter::V2),
        (10_000, false, Meter::V2),
    ] {
        breakdown(&key, n, dense, meter, budget, rounds);
    }
    worst_allowed(&key, budget, rounds);
}
