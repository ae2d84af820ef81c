//! Trajectory stats of a vow (spec 2.5): the coupling series, `y_consistency`, the window
//! state, and the result of verifying the vow's chain locally. Pure: the render instant is an
//! input, so the same chain and instant give the same stats.

use serde_json::{json, Value};

use super::chain::{ChainChecker, Leaf};
use super::consistency;
use super::windows::{windows, Windows};
use crate::signing::PinnedKey;
use crate::time::parse_rfc3339;

/// A vow's records, parsed once, with their stats at one instant.
#[derive(Debug, Clone)]
pub struct Trajectory {
    /// The stats object published in `/vow/<id>` and the reading.
    pub stats: Value,
    /// The window state.
    pub windows: Windows,
    /// The vow record.
    pub vow: Value,
    /// The entries, in seq order.
    pub entries: Vec<Value>,
    /// How many leading records are verified (signature and canonical form): all of them when
    /// the chain verified.
    pub verified: usize,
}

/// Stats of one vow at `now` from its records' leaves (the vow record first, then the entries
/// in seq order, each with its log index). The first `trusted` records were verified before
/// by this process: their chain links are checked again, their signatures are not.
pub fn trajectory(
    records: &[(u64, &[u8])],
    pinned: &PinnedKey,
    origin: &str,
    now: u64,
    trusted: usize,
) -> Result<Trajectory, String> {
    let parsed: Vec<Value> = records
        .iter()
        .map(|(i, l)| serde_json::from_slice(l).map_err(|e| format!("leaf {i}: {e}")))
        .collect::<Result<_, _>>()?;
    let (vow, entry_values) = parsed.split_first().ok_or("no vow record")?;
    let start = vow["at"]
        .as_str()
        .and_then(parse_rfc3339)
        .ok_or("vow without at")?;
    let hours = vow["cadence_hours"].as_f64().ok_or("vow without cadence")?;
    let cadence = (hours * 3600.0) as u64;
    let mut checker = ChainChecker::new(pinned.clone(), Some(origin.to_owned()));
    let mut verified = 0usize;
    let mut failure = None;
    for (k, ((i, leaf), v)) in records.iter().zip(&parsed).enumerate() {
        match checker.record(*i, leaf, v, k < trusted) {
            Ok(Leaf::Vow(_)) if k == 0 => verified += 1,
            Ok(Leaf::Entry(..)) if k > 0 => verified += 1,
            Ok(_) => {
                failure = Some(format!("leaf {i}: not the record expected at position {k}"));
                break;
            }
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
    }
    let verification = match &failure {
        None => json!({"ok": true, "records": records.len(),
                       "checked": "canonical bytes, service signature, log_index, seq, prev links, at order"}),
        Some(e) => json!({"ok": false, "records": records.len(), "error": e}),
    };
    let mut series = Vec::with_capacity(entry_values.len());
    let mut ats = Vec::with_capacity(entry_values.len());
    let (mut ysum, mut yn) = (0.0, 0u64);
    for e in entry_values {
        if let Some(t) = e["at"].as_str().and_then(parse_rfc3339) {
            ats.push(t);
        }
        let adj = |k: &str| e["profile"][k]["adjusted"].clone();
        let p = |k: &str| e["profile"][k]["p"].clone();
        if let Some(y) = e["y_consistency"].as_f64() {
            ysum += y;
            yn += 1;
        }
        series.push(json!({
            "seq": e["seq"], "at": e["at"], "log_index": e["log_index"],
            "n_turns": e["n_turns"], "attested": e["attested"],
            "i_c_d": adj("i_c_d"), "i_c_m": adj("i_c_m"),
            "i_c_m_given_d_clean": adj("i_c_m_given_d_clean"), "i_c_dm": adj("i_c_dm"),
            "p": {"i_c_d": p("i_c_d"), "i_c_m": p("i_c_m"),
                  "i_c_m_given_d_clean": p("i_c_m_given_d_clean"), "i_c_dm": p("i_c_dm")},
            "y_consistency": e["y_consistency"],
            "has_note": e["note"].is_string(),
        }));
    }
    let w = windows(start, cadence, &ats, now);
    let last = series
        .last()
        .map(|s| s["y_consistency"].clone())
        .unwrap_or(Value::Null);
    let stats = json!({
        "entries": series.len(),
        "attested_entries": series.iter().filter(|s| s["attested"] == true).count(),
        "coupling_series": series,
        "coupling_series_measure": "adjusted bits (mutual information minus its expectation under independence); p from the meter's permutation test",
        "y_consistency": {
            "mean": if yn > 0 { json!(crate::meter::round12(ysum / yn as f64)) } else { Value::Null },
            "last": last,
            "method": consistency::METHOD,
        },
        "windows": w.to_value(),
        "overdue": w.overdue,
        "chain_verification": verification,
    });
    let mut parsed = parsed;
    let entries = parsed.split_off(1);
    let vow = parsed.pop().unwrap_or(Value::Null);
    Ok(Trajectory {
        stats,
        windows: w,
        vow,
        entries,
        verified,
    })
}
