//! What `verify-log` and `verify-site` say while they run and when they end: a progress line on
//! a terminal (items done of the total, items per second, time left), redrawn at most four
//! times a second on standard error and only when standard error is a terminal, and the
//! throughput and peak memory of a finished audit (ARCHITECTURE.md, **verify**).

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// The shortest time between two redraws of the progress line.
pub const REDRAW: Duration = Duration::from_millis(250);

/// Items per second after `done` items in `elapsed`; 0 when no time has passed.
pub fn rate(done: u64, elapsed: Duration) -> f64 {
    let s = elapsed.as_secs_f64();
    if s > 0.0 {
        done as f64 / s
    } else {
        0.0
    }
}

/// The time left to reach `total` items at the rate of the first `done` items in `elapsed`;
/// `None` while nothing is done (no rate yet). Zero once `done` reaches `total`.
pub fn eta(done: u64, total: u64, elapsed: Duration) -> Option<Duration> {
    if done >= total {
        return Some(Duration::ZERO);
    }
    if done == 0 {
        return None;
    }
    let left = (total - done) as f64 * elapsed.as_secs_f64() / done as f64;
    Duration::try_from_secs_f64(left).ok()
}

/// A duration as a person reads it: `4.2 s` below a minute, `3m 05s` below an hour, else
/// `2h 07m`.
pub fn duration_text(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 60.0 {
        return format!("{s:.1} s");
    }
    let whole = d.as_secs();
    if whole < 3600 {
        format!("{}m {:02}s", whole / 60, whole % 60)
    } else {
        format!("{}h {:02}m", whole / 3600, whole % 3600 / 60)
    }
}

/// The progress line: `verify-log: 51200/100000 entries (51%), 31250 entries/s, ETA 1.6 s`;
/// without a total, the count and the rate alone.
pub fn line(label: &str, unit: &str, done: u64, total: Option<u64>, elapsed: Duration) -> String {
    let per_s = rate(done, elapsed);
    match total {
        Some(total) => {
            let pct = (done.min(total) * 100).checked_div(total).unwrap_or(100);
            let left = eta(done, total, elapsed).map_or_else(|| "?".to_owned(), duration_text);
            format!("{label}: {done}/{total} {unit} ({pct}%), {per_s:.0} {unit}/s, ETA {left}")
        }
        None => format!("{label}: {done} {unit}, {per_s:.0} {unit}/s"),
    }
}

/// How many `unit`s in how long: `100000 entries in 3.2 s (31250 entries/s)`.
pub fn throughput(count: u64, unit: &str, elapsed: Duration) -> String {
    format!(
        "{count} {unit} in {} ({:.0} {unit}/s)",
        duration_text(elapsed),
        rate(count, elapsed)
    )
}

/// The peak resident set size of this process so far, in bytes (`VmHWM` of
/// `/proc/self/status`); `None` where there is no such file (not Linux).
pub fn peak_memory() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line
        .trim_start_matches("VmHWM:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// How long an audit took, and the process's peak resident memory when it ended (bytes; Linux
/// only). A measurement of the run, not a finding: it takes no part in comparing audits (any
/// two are equal), so two audits of the same files are equal however long each took.
#[derive(Debug, Clone, Copy, Default)]
pub struct Run {
    /// Wall time.
    pub elapsed: Duration,
    /// Peak resident set size ([`peak_memory`]) at the end.
    pub peak_memory: Option<u64>,
}

impl Run {
    /// The run that started at `start` and ends now.
    pub fn since(start: Instant) -> Run {
        Run {
            elapsed: start.elapsed(),
            peak_memory: peak_memory(),
        }
    }
}

impl PartialEq for Run {
    fn eq(&self, _: &Run) -> bool {
        true
    }
}

impl Eq for Run {}

/// `, peak memory 42 MiB` for a known peak, else nothing.
pub fn peak_text(peak: Option<u64>) -> String {
    match peak {
        Some(b) => format!(", peak memory {} MiB", b.div_ceil(1 << 20)),
        None => String::new(),
    }
}

/// A progress line for one phase of an audit, drawn on standard error when it is a terminal
/// (never when it is a file or a pipe: tests and CI see nothing of it), or on a writer given.
/// The line is cleared when the phase ends, whether it passed or failed.
pub(crate) struct Progress {
    label: &'static str,
    unit: &'static str,
    total: Option<u64>,
    done: u64,
    start: Instant,
    next: Instant,
    out: Option<Box<dyn Write>>,
    drawn: bool,
}

impl Progress {
    /// A phase counting `unit`s towards `total`, shown on standard error if it is a terminal.
    pub(crate) fn start(label: &'static str, unit: &'static str, total: Option<u64>) -> Self {
        let out: Option<Box<dyn Write>> = if std::io::stderr().is_terminal() {
            Some(Box::new(std::io::stderr()))
        } else {
            None
        };
        Self::to(out, label, unit, total)
    }

    /// The same, drawn on `out` (`None`: nowhere).
    pub(crate) fn to(
        out: Option<Box<dyn Write>>,
        label: &'static str,
        unit: &'static str,
        total: Option<u64>,
    ) -> Self {
        let start = Instant::now();
        Progress {
            label,
            unit,
            total,
            done: 0,
            start,
            next: start + REDRAW,
            out,
            drawn: false,
        }
    }

    /// `n` more items done; redraws when the last draw is [`REDRAW`] old.
    pub(crate) fn add(&mut self, n: u64) {
        self.done += n;
        if self.out.is_none() {
            return;
        }
        let now = Instant::now();
        if now >= self.next {
            self.next = now + REDRAW;
            self.draw(now);
        }
    }

    fn draw(&mut self, now: Instant) {
        let text = line(
            self.label,
            self.unit,
            self.done,
            self.total,
            now - self.start,
        );
        if let Some(out) = self.out.as_mut() {
            // `\r` and erase-to-end-of-line: one line, rewritten in place.
            let _ = write!(out, "\r{text}\x1b[K");
            let _ = out.flush();
            self.drawn = true;
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let (true, Some(out)) = (self.drawn, self.out.as_mut()) {
            let _ = write!(out, "\r\x1b[K");
            let _ = out.flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[test]
    fn rate_and_eta_arithmetic() {
        let s = Duration::from_secs;
        assert_eq!(rate(100_000, Duration::from_millis(3200)), 31_250.0);
        assert_eq!(rate(5, Duration::ZERO), 0.0);
        // 25,000 of 100,000 in 2 s: 12,500/s, 75,000 left: 6 s.
        assert_eq!(eta(25_000, 100_000, s(2)), Some(s(6)));
        assert_eq!(eta(1, 3, s(1)), Some(s(2)));
        assert_eq!(eta(0, 10, s(1)), None);
        assert_eq!(eta(10, 10, s(1)), Some(Duration::ZERO));
        assert_eq!(eta(12, 10, s(1)), Some(Duration::ZERO));
        assert_eq!(
            line("verify-log", "entries", 25_000, Some(100_000), s(2)),
            "verify-log: 25000/100000 entries (25%), 12500 entries/s, ETA 6.0 s"
        );
        assert_eq!(
            line("walk", "files", 0, Some(7), s(1)),
            "walk: 0/7 files (0%), 0 files/s, ETA ?"
        );
        assert_eq!(
            line("walk", "files", 300, None, s(2)),
            "walk: 300 files, 150 files/s"
        );
        assert_eq!(
            throughput(100_000, "entries", Duration::from_millis(3200)),
            "100000 entries in 3.2 s (31250 entries/s)"
        );
        assert_eq!(duration_text(s(185)), "3m 05s");
        assert_eq!(duration_text(s(7_620)), "2h 07m");
        assert_eq!(peak_text(Some(3 << 20)), ", peak memory 3 MiB");
        assert_eq!(peak_text(None), "");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn peak_memory_is_read_on_linux() {
        let peak = peak_memory().expect("VmHWM");
        assert!(peak > 1 << 20, "{peak}");
    }

    /// A writer the test can read back.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("lock").extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn the_line_is_redrawn_at_most_four_times_a_second_and_cleared() {
        let out = Shared::default();
        {
            let mut p = Progress::to(Some(Box::new(out.clone())), "files", "files", Some(10));
            // Many items at once: not drawn before REDRAW has passed.
            for _ in 0..1000 {
                p.add(0);
            }
            assert!(out.0.lock().expect("lock").is_empty());
            p.next = Instant::now();
            p.add(5);
            let drawn = String::from_utf8(out.0.lock().expect("lock").clone()).expect("utf-8");
            assert!(
                drawn.starts_with("\rfiles: 5/10 files (50%), "),
                "{drawn:?}"
            );
            assert!(drawn.ends_with("\x1b[K"), "{drawn:?}");
            p.add(1); // within REDRAW of the last draw: not drawn
            assert_eq!(out.0.lock().expect("lock").len(), drawn.len());
        }
        let all = String::from_utf8(out.0.lock().expect("lock").clone()).expect("utf-8");
        assert!(all.ends_with("\r\x1b[K"), "cleared at the end: {all:?}");
        // Nothing drawn, nothing cleared; no writer, nothing at all.
        let quiet = Shared::default();
        drop(Progress::to(Some(Box::new(quiet.clone())), "x", "x", None));
        assert!(quiet.0.lock().expect("lock").is_empty());
        let mut none = Progress::to(None, "x", "x", None);
        none.next = Instant::now();
        none.add(1);
        assert_eq!(none.done, 1);
    }
}
