//! Report-in windows, missed windows and the overdue flag.
//!
//! A vow taken at instant `start` with a cadence of `c` seconds owes one report-in per window:
//! window `k` is `[start + k·c, start + (k+1)·c)`. A window is *closed* once its end has
//! passed; a closed window without a report-in whose `at` falls inside it is *missed*. The vow
//! is *overdue* when the most recently closed window was missed. Both change only when `now`
//! crosses a window end, which is why pages showing them are re-rendered at those instants.

use serde::{Deserialize, Serialize};
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

/// The windows a vow's report-ins fell in, as sorted, disjoint runs of consecutive window
/// indexes: its size grows with the gaps between report-ins (the missed runs), never with
/// their number, so a vow's kept state does not grow with its chain (library/VOWS.md,
/// "Report-in windows").
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hits {
    runs: Vec<[u64; 2]>,
}

impl Hits {
    /// Count a report-in at instant `at` of a vow started at `start` with cadence `cadence`
    /// seconds (an instant before `start` falls in no window).
    pub fn add(&mut self, start: u64, cadence: u64, at: u64) {
        if at < start {
            return;
        }
        let k = (at - start) / cadence.max(1);
        // The first run that ends at or after k - 1 (report-ins come in time order, so this
        // is nearly always the last run).
        let i = self.runs.partition_point(|r| r[1].saturating_add(1) < k);
        match self.runs.get(i).copied() {
            Some([a, b]) if a <= k && k <= b => {}
            Some([a, b]) if k + 1 == a || k == b + 1 => {
                let (a, mut b) = (a.min(k), b.max(k));
                // Filling the one-window gap to the next run joins them.
                if let Some(&[c, d]) = self.runs.get(i + 1) {
                    if c == b + 1 {
                        b = d;
                        self.runs.remove(i + 1);
                    }
                }
                self.runs[i] = [a, b];
            }
            _ => self.runs.insert(i, [k, k]),
        }
    }

    /// Bytes held.
    pub fn weight(&self) -> usize {
        self.runs.capacity() * 16
    }
}

/// Window state at `now` for a vow started at `start` with cadence `cadence` seconds (> 0),
/// given the `at` instants of its report-ins (any order).
pub fn windows(start: u64, cadence: u64, ats: &[u64], now: u64) -> Windows {
    let mut hits = Hits::default();
    for &t in ats {
        hits.add(start, cadence, t);
    }
    windows_of(start, cadence, &hits, now)
}

/// Window state at `now` for a vow started at `start` with cadence `cadence` seconds (> 0)
/// whose report-ins fell in the windows `hits`.
pub fn windows_of(start: u64, cadence: u64, hits: &Hits, now: u64) -> Windows {
    let cadence = cadence.max(1);
    let closed = now.saturating_sub(start) / cadence;
    let mut runs = Vec::new();
    let mut reported = 0;
    let mut next = 0u64;
    for &[a, b] in &hits.runs {
        if a >= closed {
            break;
        }
        if a > next {
            runs.push([next, a - 1]);
        }
        let b = b.min(closed - 1);
        reported += b - a + 1;
        next = b + 1;
    }
    if closed > next {
        runs.push([next, closed - 1]);
    }
    let overdue = closed > 0 && runs.last().is_some_and(|r| r[1] == closed - 1);
    Windows {
        start,
        cadence,
        closed,
        reported,
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

    /// The first form of [`windows`]: sort every window hit, then walk them.
    fn windows_by_sorting(start: u64, cadence: u64, ats: &[u64], now: u64) -> Windows {
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

    proptest! {
        #[test]
        fn runs_of_hits_give_what_sorting_every_hit_gives(
            start in 0u64..1_000, cadence in 1u64..50,
            ats in proptest::collection::vec(0u64..3_000, 0..80), now in 0u64..4_000) {
            let w = windows(start, cadence, &ats, now);
            prop_assert_eq!(&w, &windows_by_sorting(start, cadence, &ats, now));
            // The runs stay sorted, disjoint and apart, in whatever order the instants came.
            let mut hits = Hits::default();
            for &t in &ats {
                hits.add(start, cadence, t);
            }
            for pair in hits.runs.windows(2) {
                prop_assert!(pair[0][1] + 1 < pair[1][0]);
            }
        }

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
