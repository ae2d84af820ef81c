//! Report-in windows, missed windows and the overdue flag.
//!
//! A vow taken at instant `start` with a cadence of `c` seconds owes one report-in per window:
//! window `k` is `[start + k·c, start + (k+1)·c)`. A window is *closed* once its end has
//! passed; a closed window without a report-in whose `at` falls inside it is *missed*. The vow
//! is *overdue* when the most recently closed window was missed. Both change only when `now`
//! crosses a window end, which is why pages showing them are re-rendered at those instants.

use serde_json::{json, Value};

use crate::time::rfc3339;

/// Most runs of missed windows listed individually (older runs are summarised).
pub const MAX_RUNS_LISTED: usize = 100;

/// The window state of a vow at one instant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Windows {
    /// Vow start, unix seconds.
    pub start: u64,
    /// Cadence, seconds.
    pub cadence: u64,
    /// Windows that have closed.
    pub closed: u64,
    /// Closed windows with at least one report-in.
    pub reported: u64,
    /// Runs of consecutive missed windows, `[first, last]` window indexes, oldest first.
    pub missed_runs: Vec<[u64; 2]>,
    /// The most recently closed window was missed.
    pub overdue: bool,
    /// When the current window ends (the next instant this state can change).
    pub next_boundary: u64,
}

impl Windows {
    /// Missed windows in total.
    pub fn missed(&self) -> u64 {
        self.missed_runs.iter().map(|[a, b]| b - a + 1).sum()
    }

    /// As published in trajectory stats.
    pub fn to_value(&self) -> Value {
        let skip = self.missed_runs.len().saturating_sub(MAX_RUNS_LISTED);
        let runs: Vec<Value> = self.missed_runs[skip..]
            .iter()
            .map(|&[a, b]| {
                json!({
                    "from": rfc3339(self.start + a * self.cadence),
                    "to": rfc3339(self.start + (b + 1) * self.cadence),
                    "first_window": a,
                    "windows": b - a + 1,
                })
            })
            .collect();
        json!({
            "start": rfc3339(self.start),
            "cadence_seconds": self.cadence,
            "closed": self.closed,
            "reported": self.reported,
            "missed": self.missed(),
            "missed_runs": runs,
            "missed_runs_not_listed": skip,
            "overdue": self.overdue,
            "current_window_ends": rfc3339(self.next_boundary),
            "definition": "window k is [start + k*cadence, start + (k+1)*cadence); a closed \
                window with no report-in is missed; overdue means the last closed window was \
                missed",
        })
    }
}

/// The end of the window `now` falls in, for a vow started at `start` with cadence `cadence`
/// seconds: the next instant its window state changes by itself.
pub fn next_boundary(start: u64, cadence: u64, now: u64) -> u64 {
    let cadence = cadence.max(1);
    let closed = now.saturating_sub(start) / cadence;
    start.saturating_add((closed + 1).saturating_mul(cadence))
}

/// Window state at `now` for a vow started at `start` with cadence `cadence` seconds (> 0),
/// given the `at` instants of its report-ins (any order).
pub fn windows(start: u64, cadence: u64, ats: &[u64], now: u64) -> Windows {
    let cadence = cadence.max(1);
    let closed = now.saturating_sub(start) / cadence;
    let mut hit: Vec<u64> = ats
        .iter()
        .filter(|&&t| t >= start)
        .map(|&t| (t - start) / cadence)
        .filter(|&k| k < closed)
        .collect();
    hit.sort_unstable();
    hit.dedup();
    let mut runs = Vec::new();
    let mut next = 0u64;
    for &k in hit.iter().chain(std::iter::once(&closed)) {
        if k > next {
            runs.push([next, k - 1]);
        }
        next = k + 1;
    }
    let overdue = closed > 0 && runs.last().is_some_and(|r| r[1] == closed - 1);
    Windows {
        start,
        cadence,
        closed,
        reported: hit.len() as u64,
        missed_runs: runs,
        overdue,
        next_boundary: next_boundary(start, cadence, now),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn counts_missed_and_overdue() {
        let h = 3600;
        // Before the first window closes nothing is missed.
        let w = windows(0, h, &[], h - 1);
        assert_eq!(
            (w.closed, w.missed(), w.overdue, w.next_boundary),
            (0, 0, false, h)
        );
        // Reported in window 0 and 2, now in window 4: windows 1 and 3 missed, overdue.
        let w = windows(0, h, &[10, 2 * h + 5], 4 * h + 1);
        assert_eq!(w.closed, 4);
        assert_eq!(w.missed_runs, vec![[1, 1], [3, 3]]);
        assert!(w.overdue);
        // A report-in in the current window does not clear a missed one.
        let w = windows(0, h, &[10, 2 * h + 5, 4 * h + 2], 4 * h + 3);
        assert!(w.overdue);
        // Reporting in window 3 clears overdue.
        let w = windows(0, h, &[3 * h], 4 * h);
        assert_eq!(w.missed_runs, vec![[0, 2]]);
        assert!(!w.overdue);
        assert_eq!(w.to_value()["missed"], 3);
    }

    proptest! {
        #[test]
        fn missed_plus_reported_is_closed(start in 0u64..1_000_000, cadence in 1u64..100_000,
                                          ats in proptest::collection::vec(0u64..10_000_000, 0..50),
                                          now in 0u64..10_000_000) {
            let w = windows(start, cadence, &ats, now);
            prop_assert_eq!(w.missed() + w.reported, w.closed);
            prop_assert!(w.next_boundary > now);
            // Runs are ordered and disjoint.
            for pair in w.missed_runs.windows(2) {
                prop_assert!(pair[0][1] + 1 < pair[1][0]);
            }
        }
    }
}
