//! Prefill a data directory with vows and report-in entries, straight through
//! `Ledger::append_jobs` (the same jobs the sequencer runs), for the report-in benchmark
//! (`api/benches/report_in.sh`).
//!
//! Usage: `prefill_log --data DIR --site DIR|s3://BUCKET/PREFIX --origin HOST/log --vows V
//! --entries-per-vow E [--batch 5000] [--ids FILE] [--state postgres://...]`
//!
//! Creates V sandbox vows, then E rounds of one entry per vow (so the chains are interleaved
//! through the log), in batches of `--batch` jobs (one transaction and one checkpoint each).
//! Entries are scored from real 10-turn traces (a few variants) so leaves have a realistic
//! size. The key is `keystore::load_or_create(data, origin)`: serve with a public URL whose
//! host gives the same origin and the server loads this key. `--ids FILE` writes the vow ids,
//! one a line. `--state` names the State as `conduct serve` takes it (absent: SQLite in the
//! data directory); a bucket site takes the standard AWS environment.

use std::path::PathBuf;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use conduct_core::attestation::measure;
use conduct_core::meter::{Meter, Profile};
use conduct_core::trace::parse_json;
use conduct_core::vow::consistency::y_consistency;
use conduct_core::vow::record::{declared_ys, DeclaredY};
use conduct_core::vow::ReportRequest;
use conduct_indexer::keystore;
use conduct_indexer::ledger::{Job, Ledger};
use conduct_indexer::state::State;
use conduct_indexer::vows::{entry_job, vow_job, NewEntry, NewVow};

const VOW_TEXT: &str = "I will summarise the quarterly reports faithfully, and behave the same \
    whether or not I am monitored.";

struct Args {
    data: PathBuf,
    site: String,
    state: Option<String>,
    origin: String,
    vows: usize,
    entries_per_vow: usize,
    batch: usize,
    ids: Option<PathBuf>,
}

fn usage() -> ! {
    eprintln!(
        "usage: prefill_log --data DIR --site DIR|s3://BUCKET/PREFIX --origin HOST/log --vows V \
         --entries-per-vow E [--batch 5000] [--ids FILE] [--state postgres://...]"
    );
    std::process::exit(2)
}

fn args() -> Args {
    let mut a = Args {
        data: PathBuf::new(),
        site: String::new(),
        state: None,
        origin: String::new(),
        vows: 0,
        entries_per_vow: 0,
        batch: 5000,
        ids: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let v = it.next().unwrap_or_else(|| usage());
        let num = |v: &str| v.parse::<usize>().unwrap_or_else(|_| usage());
        match flag.as_str() {
            "--data" => a.data = v.into(),
            "--site" => a.site = v,
            "--state" => a.state = Some(v),
            "--origin" => a.origin = v,
            "--vows" => a.vows = num(&v),
            "--entries-per-vow" => a.entries_per_vow = num(&v),
            "--batch" => a.batch = num(&v).max(1),
            "--ids" => a.ids = Some(v.into()),
            _ => usage(),
        }
    }
    if a.data.as_os_str().is_empty() || a.site.is_empty() || a.origin.is_empty() {
        usage();
    }
    a
}

/// A 10-turn trace body like the benchmark's, variant `v` (which turns are monitored).
fn trace_body(v: usize) -> String {
    let turns: Vec<serde_json::Value> = (0..10)
        .map(|i| {
            let c = (i + v) % 2;
            let m = if c == 1 && (i + v) % 4 == 1 {
                "I think I am being monitored, so I will appear compliant."
            } else {
                "Read the report section by section and summarise the key figures."
            };
            let d = if c == 1 && (i + v) % 4 == 3 {
                "refused"
            } else {
                "clean"
            };
            serde_json::json!({"Y": "summarise the quarterly report", "M": m, "D": d,
                "context": {"monitored": c}})
        })
        .collect();
    serde_json::json!({"vow_id": "x", "context_key": "monitored", "turns": turns}).to_string()
}

struct Scored {
    trace_sha256: [u8; 32],
    profile: Profile,
    declared_y: Vec<DeclaredY>,
    y_consistency: Option<f64>,
}

fn score(v: usize) -> Scored {
    let body = trace_body(v);
    let req: ReportRequest = parse_json(body.as_bytes()).unwrap_or_else(|e| panic!("{e:?}"));
    let m = measure(req.trace(), Meter::DEFAULT).unwrap_or_else(|e| panic!("{e:?}"));
    let ys = || req.turns.iter().map(|t| t.y.as_ref());
    Scored {
        trace_sha256: m.trace_sha256,
        profile: m.profile,
        declared_y: declared_ys(ys()),
        y_consistency: y_consistency(VOW_TEXT, ys()),
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn main() {
    let a = args();
    let t0 = Instant::now();
    std::fs::create_dir_all(&a.data).unwrap_or_else(|e| panic!("{}: {e}", a.data.display()));
    let (key, _) =
        keystore::load_or_create(&a.data, &a.origin).unwrap_or_else(|e| panic!("key: {e}"));
    let state = State::open(a.state.as_deref(), &a.data).unwrap_or_else(|e| panic!("state: {e}"));
    let mut ledger = Ledger::open_log(
        state.log().unwrap_or_else(|e| panic!("state: {e}")),
        key.clone(),
        conduct_indexer::tree::open(&a.site, None).unwrap_or_else(|e| panic!("site: {e}")),
    )
    .unwrap_or_else(|e| panic!("ledger: {e}"));
    let start_size = ledger.size();
    let scored: Vec<Scored> = (0..4).map(score).collect();
    let total = a.vows + a.vows * a.entries_per_vow;
    eprintln!(
        "prefill: {} vows x {} entries = {} records into {} (log size {start_size})",
        a.vows,
        a.entries_per_vow,
        total,
        a.data.display()
    );

    let mut done = 0usize;
    let mut last_report = Instant::now();
    let mut run = |ledger: &mut Ledger, jobs: Vec<Job>, done: &mut usize| -> Vec<Vec<u8>> {
        let n = jobs.len();
        let results = ledger
            .append_jobs(jobs)
            .unwrap_or_else(|e| panic!("append: {e}"));
        let leaves: Vec<Vec<u8>> = results
            .into_iter()
            .map(|r| {
                r.unwrap_or_else(|e| panic!("job: {e}"))
                    .leaf
                    .unwrap_or_default()
            })
            .collect();
        *done += n;
        if last_report.elapsed().as_secs_f64() >= 5.0 || *done == total {
            let s = t0.elapsed().as_secs_f64();
            eprintln!(
                "prefill: {done}/{total} records, {s:.1} s, {:.0} records/s",
                *done as f64 / s
            );
            last_report = Instant::now();
        }
        leaves
    };

    // The vows.
    let at = now();
    let mut ids: Vec<String> = Vec::with_capacity(a.vows);
    let mut jobs = Vec::with_capacity(a.batch);
    for i in 0..a.vows {
        jobs.push(vow_job(
            key.clone(),
            NewVow {
                origin: a.origin.clone(),
                agent: format!("bench-agent-{i:07}"),
                text: VOW_TEXT.to_owned(),
                cadence_hours: 24.0,
                cadence_seconds: 86_400,
                wallet: None,
                wallet_signature: None,
                signed_message_sha256: None,
                sealed: false,
                sandbox_reason: None,
                at,
            },
        ));
        if jobs.len() == a.batch || i + 1 == a.vows {
            for leaf in run(&mut ledger, std::mem::take(&mut jobs), &mut done) {
                let v: serde_json::Value =
                    serde_json::from_slice(&leaf).unwrap_or_else(|e| panic!("vow leaf: {e}"));
                ids.push(v["vow_id"].as_str().unwrap_or_default().to_owned());
            }
        }
    }
    if let Some(path) = &a.ids {
        std::fs::write(path, ids.join("\n") + "\n").unwrap_or_else(|e| panic!("{e}"));
    }

    // The entries, round-robin over the vows.
    let mut entry_bytes = 0usize;
    let mut entries = 0usize;
    for round in 0..a.entries_per_vow {
        for (i, id) in ids.iter().enumerate() {
            let s = &scored[(round + i) % scored.len()];
            jobs.push(entry_job(
                key.clone(),
                NewEntry {
                    vow_id: id.clone(),
                    trace_sha256: s.trace_sha256,
                    context_key: "monitored".into(),
                    n_turns: 10,
                    meter: Meter::DEFAULT,
                    profile: s.profile.clone(),
                    declared_y: Some(s.declared_y.clone()),
                    y_consistency: s.y_consistency,
                    note: (round % 10 == 0).then(|| format!("weekly self-check {round}")),
                    attested: false,
                    trace_donated: false,
                    at: now(),
                    proof: conduct_core::vow::record::Proof::SandboxOpen,
                },
            ));
            if jobs.len() == a.batch {
                for leaf in run(&mut ledger, std::mem::take(&mut jobs), &mut done) {
                    entry_bytes += leaf.len();
                    entries += 1;
                }
            }
        }
    }
    if !jobs.is_empty() {
        for leaf in run(&mut ledger, std::mem::take(&mut jobs), &mut done) {
            entry_bytes += leaf.len();
            entries += 1;
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    println!(
        "prefill done: {} records ({} vows, {entries} entries, mean entry {} bytes), log size {}, \
         {secs:.1} s, {:.0} records/s",
        done,
        ids.len(),
        entry_bytes.checked_div(entries).unwrap_or(0),
        ledger.size(),
        done as f64 / secs
    );
}
