//! The service's operational metrics (library/METRICS.md), served in the Prometheus text
//! exposition format (version 0.0.4) on a listener of their own, never in the signed tree.
//!
//! One process-wide registry ([`metrics`]) of counters, gauges and fixed-bucket histograms
//! on atomics: recording is lock-free (a labelled series is found under a read lock, and
//! created once under the write lock). It lives in this, the lowest crate that records
//! (the sequencer and the chain follower); the renderer and the api record into it.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

/// A monotonic count.
#[derive(Debug, Default)]
pub struct Counter(AtomicU64);

impl Counter {
    /// Add one.
    pub fn inc(&self) {
        self.add(1);
    }
    /// Add `n`.
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }
    /// The count.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// A value that goes up and down.
#[derive(Debug, Default)]
pub struct Gauge(AtomicI64);

impl Gauge {
    /// Set it.
    pub fn set(&self, v: i64) {
        self.0.store(v, Ordering::Relaxed);
    }
    /// Add `n` (negative to subtract).
    pub fn add(&self, n: i64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }
    /// The value.
    pub fn get(&self) -> i64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Upper bounds (seconds) of the latency histograms: 0.5 ms to 10 s.
pub const LATENCY: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];
/// Upper bounds of the sequencer's batch sizes (entries per commit).
pub const BATCH: &[f64] = &[
    1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0,
];

/// A histogram over fixed buckets (`le` upper bounds, `+Inf` implied).
#[derive(Debug)]
pub struct Histogram {
    bounds: &'static [f64],
    /// Per bucket (not cumulative), then the `+Inf` one.
    buckets: Box<[AtomicU64]>,
    count: AtomicU64,
    /// The sum's `f64` bits.
    sum: AtomicU64,
}

impl Histogram {
    /// An empty histogram over `bounds` (ascending).
    pub fn new(bounds: &'static [f64]) -> Histogram {
        Histogram {
            bounds,
            buckets: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            count: AtomicU64::new(0),
            sum: AtomicU64::new(0f64.to_bits()),
        }
    }

    /// Record one observation.
    pub fn observe(&self, v: f64) {
        let i = self
            .bounds
            .iter()
            .position(|b| v <= *b)
            .unwrap_or(self.bounds.len());
        if let Some(b) = self.buckets.get(i) {
            b.fetch_add(1, Ordering::Relaxed);
        }
        let _ = self
            .sum
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |s| {
                Some((f64::from_bits(s) + v).to_bits())
            });
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    /// Record a duration, in seconds.
    pub fn observe_duration(&self, d: Duration) {
        self.observe(d.as_secs_f64());
    }

    /// Observations so far.
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    fn write(&self, out: &mut String, name: &str, labels: &str) {
        let mut cumulative = 0;
        let sep = if labels.is_empty() { "" } else { "," };
        for (i, b) in self.buckets.iter().enumerate() {
            cumulative += b.load(Ordering::Relaxed);
            let le = self
                .bounds
                .get(i)
                .map_or_else(|| "+Inf".to_owned(), |b| format_float(*b));
            let _ = writeln!(
                out,
                "{name}_bucket{{{labels}{sep}le=\"{le}\"}} {cumulative}"
            );
        }
        let braces = braced(labels);
        let sum = f64::from_bits(self.sum.load(Ordering::Relaxed));
        let _ = writeln!(out, "{name}_sum{braces} {}", format_float(sum));
        // The count is the buckets' total, so `_count` always equals the `+Inf` bucket.
        let _ = writeln!(out, "{name}_count{braces} {cumulative}");
    }
}

/// A label value: a name from a fixed table (borrowed) or a number or configured name.
pub type Value = Cow<'static, str>;

/// A metric with labels: one series per distinct tuple of `N` label values, created when first
/// recorded. Label values must come from bounded sets (route patterns, rail names, status
/// codes), never from request text.
#[derive(Debug)]
pub struct Family<const N: usize, T> {
    names: [&'static str; N],
    series: RwLock<HashMap<[Value; N], Arc<T>>>,
    make: fn() -> T,
}

impl<const N: usize, T> Family<N, T> {
    fn new(names: [&'static str; N], make: fn() -> T) -> Self {
        Family {
            names,
            series: RwLock::new(HashMap::new()),
            make,
        }
    }

    /// The series of `values`, created on first use.
    pub fn with(&self, values: [Value; N]) -> Arc<T> {
        if let Ok(m) = self.series.read() {
            if let Some(s) = m.get(&values) {
                return s.clone();
            }
        }
        let mut m = match self.series.write() {
            Ok(m) => m,
            Err(poisoned) => poisoned.into_inner(),
        };
        m.entry(values)
            .or_insert_with(|| Arc::new((self.make)()))
            .clone()
    }

    /// Every series, sorted by its label values (so the exposition is stable).
    fn sorted(&self) -> Vec<(String, Arc<T>)> {
        let m = match self.series.read() {
            Ok(m) => m,
            Err(poisoned) => poisoned.into_inner(),
        };
        let mut all: Vec<_> = m
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect::<Vec<_>>();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all.into_iter()
            .map(|(k, v)| {
                let labels = self
                    .names
                    .iter()
                    .zip(k.iter())
                    .map(|(n, v)| format!("{n}=\"{}\"", escape(v)))
                    .collect::<Vec<_>>()
                    .join(",");
                (labels, v)
            })
            .collect()
    }
}

/// Every metric of the service (library/METRICS.md lists each with its meaning).
#[derive(Debug)]
pub struct Metrics {
    /// `conduct_http_requests_total{route,method,code}`.
    pub http_requests: Family<3, Counter>,
    /// `conduct_http_request_duration_seconds{route,method}`.
    pub http_duration: Family<2, Histogram>,
    /// `conduct_free_cap_refusals_total{route}`.
    pub cap_refusals: Family<1, Counter>,
    /// `conduct_payments_total{route,rail,outcome}`.
    pub payments: Family<3, Counter>,
    /// `conduct_sequencer_batch_size`.
    pub batch_size: Histogram,
    /// `conduct_sequencer_commit_duration_seconds`.
    pub commit_duration: Histogram,
    /// `conduct_sequencer_failures_total`.
    pub commit_failures: Counter,
    /// `conduct_render_queue`.
    pub render_queue: Gauge,
    /// `conduct_render_retry_keys`.
    pub render_retry: Gauge,
    /// `conduct_render_restart_backlog`.
    pub render_restart_backlog: Gauge,
    /// `conduct_render_pushback_bound_seconds`, kept in microseconds.
    pub pushback_bound_us: Gauge,
    /// `conduct_render_round_duration_seconds`.
    pub render_round: Histogram,
    /// `conduct_integration_duration_seconds`.
    pub integration: Histogram,
    /// `conduct_render_failures_total`.
    pub render_failures: Counter,
    /// `conduct_render_vow_reads_total{from}`.
    pub vow_reads: Family<1, Counter>,
    /// `conduct_render_chain_reads_total{records}`.
    pub chain_reads: Family<1, Counter>,
    /// `conduct_render_spare_writes_total{spare}`.
    pub spare_writes: Family<1, Counter>,
    /// `conduct_tree_writes_total{kind}` ([`count_tree_write`]).
    pub tree_writes: Family<1, Counter>,
    /// Whether a chain is followed (the chain metrics are shown only then).
    pub chain_configured: AtomicBool,
    /// `conduct_chain_head_block`.
    pub chain_head: Gauge,
    /// `conduct_chain_follower_lag_blocks`.
    pub chain_lag: Gauge,
    /// `conduct_chain_reachable`.
    pub chain_reachable: Gauge,
}

impl Metrics {
    fn new() -> Metrics {
        Metrics {
            http_requests: Family::new(["route", "method", "code"], Counter::default),
            http_duration: Family::new(["route", "method"], || Histogram::new(LATENCY)),
            cap_refusals: Family::new(["route"], Counter::default),
            payments: Family::new(["route", "rail", "outcome"], Counter::default),
            batch_size: Histogram::new(BATCH),
            commit_duration: Histogram::new(LATENCY),
            commit_failures: Counter::default(),
            render_queue: Gauge::default(),
            render_retry: Gauge::default(),
            render_restart_backlog: Gauge::default(),
            pushback_bound_us: Gauge::default(),
            render_round: Histogram::new(LATENCY),
            integration: Histogram::new(LATENCY),
            render_failures: Counter::default(),
            vow_reads: Family::new(["from"], Counter::default),
            chain_reads: Family::new(["records"], Counter::default),
            spare_writes: Family::new(["spare"], Counter::default),
            tree_writes: Family::new(["kind"], Counter::default),
            chain_configured: AtomicBool::new(false),
            chain_head: Gauge::default(),
            chain_lag: Gauge::default(),
            chain_reachable: Gauge::default(),
        }
    }

    /// The whole registry in the Prometheus text exposition format (version 0.0.4).
    pub fn render(&self) -> String {
        let mut out = String::new();
        let head = |out: &mut String, name: &str, kind: &str, help: &str| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        };
        head(
            &mut out,
            "conduct_http_requests_total",
            "counter",
            "Requests answered, by route pattern of the route table (other: a file of the tree no route names, or nothing), method and status code.",
        );
        for (l, c) in self.http_requests.sorted() {
            let _ = writeln!(out, "conduct_http_requests_total{{{l}}} {}", c.get());
        }
        head(
            &mut out,
            "conduct_http_request_duration_seconds",
            "histogram",
            "Time from the request's head to its answer's head, by route pattern and method.",
        );
        for (l, h) in self.http_duration.sorted() {
            h.write(&mut out, "conduct_http_request_duration_seconds", &l);
        }
        head(
            &mut out,
            "conduct_free_cap_refusals_total",
            "counter",
            "Requests refused with 429 because the caller's free daily cap was used up, by route pattern.",
        );
        for (l, c) in self.cap_refusals.sorted() {
            let _ = writeln!(out, "conduct_free_cap_refusals_total{{{l}}} {}", c.get());
        }
        head(
            &mut out,
            "conduct_payments_total",
            "counter",
            "x402 payment outcomes by paid route, rail and outcome (verified, settled, refused).",
        );
        for (l, c) in self.payments.sorted() {
            let _ = writeln!(out, "conduct_payments_total{{{l}}} {}", c.get());
        }
        head(
            &mut out,
            "conduct_sequencer_batch_size",
            "histogram",
            "Entries appended per group commit of the log's sequencer.",
        );
        self.batch_size
            .write(&mut out, "conduct_sequencer_batch_size", "");
        head(
            &mut out,
            "conduct_sequencer_commit_duration_seconds",
            "histogram",
            "Time of one group commit: the SQLite transaction, the signed checkpoint and the log's files.",
        );
        self.commit_duration
            .write(&mut out, "conduct_sequencer_commit_duration_seconds", "");
        head(
            &mut out,
            "conduct_sequencer_failures_total",
            "counter",
            "Group commits that failed (every job of the batch refused; the writer recovers by itself).",
        );
        let _ = writeln!(
            out,
            "conduct_sequencer_failures_total {}",
            self.commit_failures.get()
        );
        let gauge = |out: &mut String, name: &str, help: &str, g: &Gauge| {
            head(out, name, "gauge", help);
            let _ = writeln!(out, "{name} {}", g.get());
        };
        gauge(
            &mut out,
            "conduct_render_queue",
            "Render requests sent to the live site's render thread and not yet rendered.",
            &self.render_queue,
        );
        gauge(
            &mut out,
            "conduct_render_retry_keys",
            "Documents whose render or write failed, waiting for a retry.",
            &self.render_retry,
        );
        gauge(
            &mut out,
            "conduct_render_restart_backlog",
            "Documents a restart still has to bring up to date.",
            &self.render_restart_backlog,
        );
        head(
            &mut out,
            "conduct_render_pushback_bound_seconds",
            "gauge",
            "How long a report-in may expect to wait for its pages before it is pushed back (503).",
        );
        let _ = writeln!(
            out,
            "conduct_render_pushback_bound_seconds {}",
            self.pushback_bound_us.get() as f64 / 1e6
        );
        head(
            &mut out,
            "conduct_render_round_duration_seconds",
            "histogram",
            "Time of one render round of one source (render, then write the signed snapshots).",
        );
        self.render_round
            .write(&mut out, "conduct_render_round_duration_seconds", "");
        head(
            &mut out,
            "conduct_render_failures_total",
            "counter",
            "Render rounds whose files could not be rendered or written (retried with backoff).",
        );
        let _ = writeln!(
            out,
            "conduct_render_failures_total {}",
            self.render_failures.get()
        );
        head(
            &mut out,
            "conduct_render_vow_reads_total",
            "counter",
            "Vow renders by where the vow's state came from: memory, its resume point, or its whole chain read.",
        );
        for (l, c) in self.vow_reads.sorted() {
            let _ = writeln!(out, "conduct_render_vow_reads_total{{{l}}} {}", c.get());
        }
        head(
            &mut out,
            "conduct_render_chain_reads_total",
            "counter",
            "Vow renders by where the chain's tail was read: tree (the published chain head, checked against the store's head), store (the log's records).",
        );
        for (l, c) in self.chain_reads.sorted() {
            let _ = writeln!(out, "conduct_render_chain_reads_total{{{l}}} {}", c.get());
        }
        head(
            &mut out,
            "conduct_render_spare_writes_total",
            "counter",
            "Vow pages replaced through the pool of spare inodes, by the spare taken: rested (written again), new (none had rested), held (a rested one still open elsewhere, let go).",
        );
        for (l, c) in self.spare_writes.sorted() {
            let _ = writeln!(out, "conduct_render_spare_writes_total{{{l}}} {}", c.get());
        }
        head(
            &mut out,
            "conduct_tree_writes_total",
            "counter",
            "Files written into the published tree, by kind (vow pages, chain heads, feeds, readings, manifest bins, log tiles, the checkpoint, ...).",
        );
        for (l, c) in self.tree_writes.sorted() {
            let _ = writeln!(out, "conduct_tree_writes_total{{{l}}} {}", c.get());
        }
        head(
            &mut out,
            "conduct_integration_duration_seconds",
            "histogram",
            "Time from a report-in's commit to its vow's signed snapshot written.",
        );
        self.integration
            .write(&mut out, "conduct_integration_duration_seconds", "");
        if self.chain_configured.load(Ordering::Relaxed) {
            gauge(
                &mut out,
                "conduct_chain_head_block",
                "The chain's head block number, as last read by the follower.",
                &self.chain_head,
            );
            gauge(
                &mut out,
                "conduct_chain_follower_lag_blocks",
                "Blocks between the chain's head and the follower's cursor (the confirmations included).",
                &self.chain_lag,
            );
            gauge(
                &mut out,
                "conduct_chain_reachable",
                "1 when the follower's last step reached the chain, else 0.",
                &self.chain_reachable,
            );
        }
        out
    }
}

/// The kind of the tree file at `rel` (its path in the tree), one of a fixed set: the label
/// of `conduct_tree_writes_total` (library/METRICS.md).
pub fn tree_kind(rel: &str) -> &'static str {
    let (stem, html) = match rel.strip_suffix(".html") {
        Some(s) => (s, true),
        None => (rel.strip_suffix(".json").unwrap_or(rel), false),
    };
    let json_or_html = |json: &'static str, twin: &'static str| if html { twin } else { json };
    if rel == "log/checkpoint" {
        return "checkpoint";
    }
    if rel.starts_with("log/tile/entries/") {
        return "entry_bundle";
    }
    if rel.starts_with("log/tile/") {
        return "tile";
    }
    if rel == "manifest.json" || rel.starts_with("manifest/") {
        return "manifest";
    }
    if let Some(vow) = stem.strip_prefix("vow/") {
        return match vow.split_once('/') {
            None => json_or_html("vow_page", "vow_page_html"),
            Some((_, "chain")) => json_or_html("chain_head", "chain_head_html"),
            Some((_, rest)) if rest.starts_with("chain/") => "chain_page",
            Some((_, "feed.atom")) => "feed",
            Some((_, "reading")) => json_or_html("reading", "reading_html"),
            Some(_) => "vow_other",
        };
    }
    if stem == "vows" || stem.starts_with("vows/") {
        return "vows_index";
    }
    "other"
}

/// Count one file written into the published tree at `rel` (`conduct_tree_writes_total`).
pub fn count_tree_write(rel: &str) {
    metrics()
        .tree_writes
        .with([Cow::Borrowed(tree_kind(rel))])
        .inc();
}

/// The process's registry.
pub fn metrics() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(Metrics::new)
}

/// Prometheus's spelling of a float (`+Inf`, `NaN`, else Rust's shortest round-trip form).
fn format_float(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        format!("{v}")
    }
}

fn braced(labels: &str) -> String {
    if labels.is_empty() {
        String::new()
    } else {
        format!("{{{labels}}}")
    }
}

/// A label value escaped for the exposition format (backslash, quote, newline).
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_files_are_counted_by_kind() {
        for (rel, kind) in [
            ("log/checkpoint", "checkpoint"),
            ("log/tile/0/000.p/3", "tile"),
            ("log/tile/entries/000.p/3", "entry_bundle"),
            ("manifest.json", "manifest"),
            ("manifest/c.json", "manifest"),
            ("vow/841e6cde5516f5f0.json", "vow_page"),
            ("vow/841e6cde5516f5f0.html", "vow_page_html"),
            ("vow/841e6cde5516f5f0/chain.json", "chain_head"),
            ("vow/841e6cde5516f5f0/chain.html", "chain_head_html"),
            ("vow/841e6cde5516f5f0/chain/0.json", "chain_page"),
            ("vow/841e6cde5516f5f0/feed.atom", "feed"),
            ("vow/841e6cde5516f5f0/reading.json", "reading"),
            ("vow/841e6cde5516f5f0/reading.html", "reading_html"),
            ("vows.json", "vows_index"),
            ("vows/3.json", "vows_index"),
            ("index.html", "other"),
        ] {
            assert_eq!(tree_kind(rel), kind, "{rel}");
        }
        let before = metrics().tree_writes.with([Cow::Borrowed("feed")]).get();
        count_tree_write("vow/00/feed.atom");
        assert_eq!(
            metrics().tree_writes.with([Cow::Borrowed("feed")]).get(),
            before + 1
        );
    }

    #[test]
    fn histogram_buckets_are_cumulative_and_count_matches() {
        let h = Histogram::new(&[0.1, 1.0]);
        h.observe(0.05);
        h.observe(0.5);
        h.observe(5.0);
        let mut out = String::new();
        h.write(&mut out, "x", "a=\"b\"");
        assert_eq!(
            out,
            "x_bucket{a=\"b\",le=\"0.1\"} 1\nx_bucket{a=\"b\",le=\"1\"} 2\n\
             x_bucket{a=\"b\",le=\"+Inf\"} 3\nx_sum{a=\"b\"} 5.55\nx_count{a=\"b\"} 3\n"
        );
    }

    #[test]
    fn families_keep_one_series_per_label_tuple_and_escape_values() {
        let f: Family<1, Counter> = Family::new(["route"], Counter::default);
        f.with([Cow::Borrowed("/a")]).inc();
        f.with([Cow::Borrowed("/a")]).inc();
        f.with([Cow::Owned("q\"\\\n".into())]).inc();
        let s = f.sorted();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].0, "route=\"/a\"");
        assert_eq!(s[0].1.get(), 2);
        assert_eq!(s[1].0, "route=\"q\\\"\\\\\\n\"");
    }

    #[test]
    fn chain_metrics_only_when_a_chain_is_followed() {
        let m = Metrics::new();
        assert!(!m.render().contains("conduct_chain_follower_lag_blocks"));
        m.chain_configured.store(true, Ordering::Relaxed);
        m.chain_lag.set(7);
        assert!(m.render().contains("conduct_chain_follower_lag_blocks 7\n"));
    }
}
