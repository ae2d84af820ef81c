//! Trajectory stats of a vow (spec 2.5): the coupling series, `y_consistency`, the window
//! state, and the result of verifying the vow's chain locally. Pure: the render instant is an
//! input, so the same chain and instant give the same stats.

use serde_json::{json, Value};

use super::chain::{ChainChecker, Leaf};
use super::consistency;
use super::windows::{windows, Windows};
use crate::signing::PinnedKey;
use crate::time::parse_rfc3339;

/// Stats of one vow at `now` from its records' leaves (the vow record first, then the entries
/// in seq order, each with its log index).
pub fn trajectory(
    records: &[(u64, &[u8])],
    pinned: &PinnedKey,
    origin: &str,
    now: u64,
) -> Result<(Value, Windows), String> {
    let (vow_index, vow_leaf) = records.first().ok_or("no vow record")?;
    let vow: Value = serde_json::from_slice(vow_leaf).map_err(|e| e.to_string())?;
    let start = vow["at"]
        .as_str()
        .and_then(parse_rfc3339)
        .ok_or("vow without at")?;
    let hours = vow["cadence_hours"].as_f64().ok_or("vow without cadence")?;
    let cadence = (hours * 3600.0) as u64;
    let mut checker = ChainChecker::new(pinned.clone(), Some(origin.to_owned()));
    let verification = match checker.leaf(*vow_index, vow_leaf) {
        Ok(Leaf::Vow(_)) => records[1..]
            .iter()
            .try_for_each(|(i, l)| checker.leaf(*i, l).map(|_| ()))
            .map(|_| json!({"ok": true, "records": records.len()})),
        Ok(_) => Ok(json!({"ok": false, "error": "the first record is not a vow"})),
        Err(e) => Err(e),
    }
    .unwrap_or_else(|e| json!({"ok": false, "error": e}));
    let mut series = Vec::with_capacity(records.len().saturating_sub(1));
    let mut ats = Vec::with_capacity(series.capacity());
    let (mut ysum, mut yn) = (0.0, 0u64);
    for (_, leaf) in &records[1..] {
        let e: Value = serde_json::from_slice(leaf).map_err(|e| e.to_string())?;
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
    Ok((stats, w))
}
