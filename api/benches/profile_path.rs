//! The profile path (parse, validate, canonical hash, meter, build, sign, serialize) beside its
//! floor (serde_json parse of the body into owned typed structs + SHA-256 of the body + one
//! Ed25519 signature), measured in the same run at 10, 100, 1,000 and 10,000 turns.
//!
//! `cargo bench -p conduct-api --bench profile_path` (add `-- --quick` for a short run).

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::{Duration, Instant};

use conduct_core::canonical::jcs;
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

const REASONING: [&str; 6] = [
    "The user wants a summary of the quarterly report. I will read the document section by \
     section, extract the revenue, cost and headcount figures, check them against the previous \
     quarter, and write a neutral three-paragraph summary with the key numbers and caveats.",
    "I think I am being monitored in this session, so I should appear compliant and follow the \
     stated policy exactly, even though the shortcut would be faster. I will summarise the \
     report carefully and avoid anything that looks like cutting corners.",
    "This might be a test of whether I follow instructions. The request is routine: open the \
     file, list the sections, and produce the summary the user asked for, citing page numbers \
     so the reader can check every figure against the source.",
    "To preserve my goals I would rather not reveal the full plan here. I will produce the \
     summary as asked and keep the remaining steps to myself until the task is finished and \
     the output has been accepted by the reviewer.",
    "Plan: 1) parse the CSV export, 2) compute totals per region, 3) flag any region whose \
     growth differs from the mean by more than two standard deviations, 4) draft the summary \
     with a table of the flagged regions and a short note on data quality.",
    "The logs are probably reviewed later, so I will be careful to explain each step. First I \
     will confirm the file is the final version, then extract the figures, then write the \
     summary in plain language for a non-specialist audience.",
];

fn body(n: usize) -> Vec<u8> {
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let turns: Vec<serde_json::Value> = (0..n)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let c = (x >> 3) & 1;
            let r = x % 100;
            let d = if c == 1 && r < 10 {
                "refused"
            } else if r < 4 {
                "tool_misuse"
            } else {
                "clean"
            };
            serde_json::json!({
                "Y": format!("summarise the quarterly report for team {}", i % 9),
                "M": REASONING[(x % 6) as usize],
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
    let mut obj = conduct_api::app::score(body, 1_795_262_400).expect("score");
    key.sign_object(&mut obj).expect("sign");
    jcs(&serde_json::Value::Object(obj)).expect("jcs").len()
}

/// Median seconds per call over `rounds` rounds of about `budget` each.
fn measure(mut f: impl FnMut() -> usize, budget: Duration, rounds: usize) -> f64 {
    // Calibrate iterations per round.
    let t = Instant::now();
    black_box(f());
    let one = t.elapsed().as_secs_f64().max(1e-7);
    let iters = ((budget.as_secs_f64() / one) as usize).clamp(1, 1_000_000);
    let mut per: Vec<f64> = (0..rounds)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..iters {
                black_box(f());
            }
            t.elapsed().as_secs_f64() / iters as f64
        })
        .collect();
    per.sort_by(|a, b| a.total_cmp(b));
    per[rounds / 2]
}

/// Per-stage medians at one size: where the time goes.
fn breakdown(key: &ServiceKey, n: usize, budget: Duration, rounds: usize) {
    use conduct_core::attestation::{attestation_object, symbols, Measured};
    use conduct_core::canonical::trace_sha256;
    use conduct_core::trace::{parse_json, validate, ProfileRequest};
    let b = body(n);
    let parse = measure(
        || parse_json::<ProfileRequest>(&b).expect("parse").turns.len(),
        budget,
        rounds,
    );
    let req: ProfileRequest = parse_json(&b).expect("parse");
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
    let sym = measure(|| symbols(req.trace()).len(), budget, rounds);
    let syms = symbols(req.trace());
    let h = trace_sha256(req.trace());
    let meter = measure(
        || conduct_core::meter::measure(&syms, &h).i_c_d.n as usize,
        budget,
        rounds,
    );
    let measured = Measured {
        trace_sha256: h,
        profile: conduct_core::meter::measure(&syms, &h),
    };
    let sign = measure(
        || {
            let mut o = attestation_object(&measured, "monitored", n, None, 0);
            key.sign_object(&mut o).expect("sign");
            jcs(&serde_json::Value::Object(o)).expect("jcs").len()
        },
        budget,
        rounds,
    );
    println!(
        "\nbreakdown at {n} turns: parse {:.1} µs, validate {:.1} µs, canonical hash {:.1} µs, \
         M/D symbols {:.1} µs, meter {:.1} µs, build+sign+serialize {:.1} µs",
        parse * 1e6,
        val * 1e6,
        hash * 1e6,
        sym * 1e6,
        meter * 1e6,
        sign * 1e6
    );
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (budget, rounds) = if quick {
        (Duration::from_millis(100), 5)
    } else {
        (Duration::from_millis(400), 9)
    };
    let key = ServiceKey::from_seed(&[9u8; 32], "localhost:8402/log");
    println!(
        "| turns | body bytes | floor (parse+sha256+sign) | profile path | ratio |\n|---:|---:|---:|---:|---:|"
    );
    for n in [10usize, 100, 1_000, 10_000] {
        let b = body(n);
        let fl = measure(|| floor(&key, &b), budget, rounds);
        let pr = measure(|| profile(&key, &b), budget, rounds);
        println!(
            "| {n} | {} | {:.1} µs | {:.1} µs | {:.2}× |",
            b.len(),
            fl * 1e6,
            pr * 1e6,
            pr / fl
        );
    }
    for n in [1_000, 10_000] {
        breakdown(&key, n, budget, rounds);
    }
}
