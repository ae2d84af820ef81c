//! The live-site engine: keeps the published tree current while the service runs.
//!
//! One render thread owns the [`Publisher`] (the only writer of the tree outside `log/`) and
//! serves every *source of change* ([`Source`]): a source says how to render the documents of
//! some keys (a vow's pages today; the chain follower's registry, quest and reputation rows
//! next), and which keys fall due by themselves (a passed window boundary). The engine:
//!
//! - coalesces concurrent requests, renders each source's keys (a source spreads its own work
//!   over every core with [`crate::parallel`]), writes the signed JSON snapshots (the files of
//!   record) and then answers whoever waits, and hands the derived files (HTML, feeds) to a
//!   writer thread of its own;
//! - retries a render whose files could not be written (a full disk) with a growing delay,
//!   starting those keys over, and says the site is [`Behind`] until it caught up;
//! - re-signs the manifest at most once a second after a change, and every half of its
//!   lifetime in any case, so a long-running instance never serves an expired manifest.
//!
//! [`startup`] renders the whole tree before the engine starts. See ARCHITECTURE.md.

pub mod familiar;
pub mod munus;
pub mod registry;
pub mod reputation;
pub mod vows;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use conduct_core::signing::ServiceKey;
use conduct_core::sync::lock;
use conduct_indexer::clock::service_now;
pub use conduct_indexer::integrated::{Integrated, Place};
use conduct_indexer::metrics::metrics;
use conduct_indexer::tree::SharedTree;

use crate::publish::{put_many_shared, Publisher};
use crate::vows::Files;
use crate::{render, RenderError, SiteInput};

/// Longest a changed tree waits for its manifest to be re-signed.
const MANIFEST_DELAY: Duration = Duration::from_secs(1);
/// Longest wait between retries of a failed render.
const RETRY_MAX: Duration = Duration::from_secs(30);
/// First wait before a failed render is retried.
const RETRY_FIRST: Duration = Duration::from_millis(500);
/// Most keys of one source re-rendered per round because they fell due (the rest follow in
/// the next rounds, each also serving the requests that arrived meanwhile).
const DUE_SLICE: usize = 2;

/// The SHA-256 of a file as published, if the publisher knows it.
pub type Known<'a> = dyn Fn(&str) -> Option<String> + Sync + 'a;

/// A source of change: documents kept current by the engine.
pub trait Source: Send {
    /// A short name, for logs.
    fn name(&self) -> &'static str;
    /// Render every document at `now` into `publisher` (at startup, before serving).
    fn render_all(&mut self, publisher: &mut Publisher, now: u64) -> Result<(), RenderError>;
    /// The files of `keys` (and of the source's index pages when `index`) at `now`. `known`
    /// gives the SHA-256 of a file already published. Keys that name nothing are skipped.
    fn render(
        &mut self,
        keys: &BTreeSet<String>,
        index: bool,
        now: u64,
        known: &Known<'_>,
    ) -> Result<Files, RenderError>;
    /// Up to `limit` keys whose documents change by themselves at or before `now` (taken: a
    /// key falls due again only when its next render says so).
    fn take_due(&mut self, now: u64, limit: usize) -> Vec<String>;
    /// When the next key falls due, if ever.
    fn next_due(&self) -> Option<u64>;
    /// Forget what is kept of `keys`, so their next render starts over (their files may be
    /// behind what was kept).
    fn forget(&mut self, keys: &BTreeSet<String>);
    /// Every key to bring up to date after a restart that served the tree already on disk
    /// ([`LiveSite::start_catching_up`]): those that changed after the tree's integration mark
    /// `since` (what the previous run had durably rendered), or every key when there is none.
    fn backlog(&mut self, since: Option<&Integrated>) -> Result<Vec<String>, RenderError> {
        let _ = since;
        Ok(Vec::new())
    }
    /// The log size below which every record that changes this source's files is on them,
    /// checked against the store from `from` (the last mark) on: `None` when the source's
    /// restart backlog does not depend on the mark (it re-renders every key of its own).
    fn integrated(&mut self, from: u64) -> Result<Option<u64>, RenderError> {
        let _ = from;
        Ok(None)
    }
    /// The mark moved to `log_size` (what [`Source::integrated`] kept for its checks below it
    /// may go).
    fn marked(&mut self, log_size: u64) {
        let _ = log_size;
    }
    /// The source's index pages at `now`, as a restart brings them up to date, handed to `put`
    /// in batches (a source whose index grows with its keys bounds them: the index of a
    /// million vows is about a gigabyte). [`Source::render`] of no key, in one batch, by
    /// default.
    fn render_index(
        &mut self,
        now: u64,
        known: &Known<'_>,
        put: &mut dyn FnMut(Files) -> Result<(), RenderError>,
    ) -> Result<(), RenderError> {
        let files = self.render(&BTreeSet::new(), true, now, known)?;
        put(files)
    }
    /// The files of backlog `keys` at `now`: [`Source::render`] by default.
    fn render_backlog(
        &mut self,
        keys: &BTreeSet<String>,
        now: u64,
        known: &Known<'_>,
    ) -> Result<Files, RenderError> {
        self.render(keys, false, now, known)
    }
}

/// Which source a request is for: its [name](Source::name). Sources are wired by name, so
/// the order of [`LiveSite::start`]'s list means nothing to a caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SourceId(pub &'static str);

/// A source's position in the engine's list (what the engine keys its work by).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Slot(usize);

/// Why the site is behind the state: documents whose files could not be written (say, a full
/// disk), retried with backoff until they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Behind {
    /// The last error.
    pub error: String,
    /// Keys waiting for a retry.
    pub waiting: usize,
    /// Unix seconds of the first failure of this episode.
    pub since: u64,
}

/// Why a requested render did not write its files (they are retried; see [`Behind`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NotRendered(pub String);

/// The answer a waiter gets: the files of record are written, or why not.
pub type Done = tokio::sync::oneshot::Sender<Result<(), NotRendered>>;

enum Msg {
    Render {
        source: Slot,
        key: String,
        index: bool,
        done: Option<Done>,
        /// When the change to render was committed (a report-in): the render's integration
        /// latency is measured from it.
        committed: Option<Instant>,
    },
    Manifest,
    /// The derived-file writer wrote a batch: the tree changed since the engine last looked.
    DerivedWritten,
    /// The derived-file writer wrote an integration mark: a manifest signed a second from now
    /// lists its files (a restart takes a mark only then), even if nothing else changed.
    MarkWritten,
    /// Render what is queued, write the last files, manifest and integration mark, then say so
    /// and stop.
    Stop(mpsc::SyncSender<()>),
}

/// Handle to the running engine (cheap to clone). The engine stops once every handle is
/// dropped.
#[derive(Debug, Clone)]
pub struct LiveSite {
    /// The one strong sender: the derived writer holds only a [`Weak`] to it, so dropping
    /// every handle still disconnects the engine's channel.
    tx: Arc<mpsc::Sender<Msg>>,
    behind: Arc<Mutex<Option<Behind>>>,
    left: Arc<AtomicUsize>,
    /// While a restart's sweep of the temporaries a crash left runs (on its own thread).
    sweeping: Arc<AtomicBool>,
    /// Until that sweep ended well, when the tree is not known clean.
    unswept: Arc<AtomicBool>,
    flow: Arc<Flow>,
    /// Each source's name, at its slot.
    names: Arc<[&'static str]>,
}

/// How far behind the engine may fall before report-ins are pushed back, at most: the longer
/// of the age of the oldest committed change whose signed snapshot is not written yet and the
/// expected wait of a change sent now ([`LiveSite::pushback`]). The time from a commit to its
/// snapshot stays near this bound plus one round; when it does not (renders slower than the
/// rate measured, cores taken by other work), the bound in force is lowered
/// ([`Flow::integrated`]).
pub const PUSHBACK_AT: Duration = Duration::from_millis(500);

/// The lowest the pushback bound goes.
const PUSHBACK_FLOOR: Duration = Duration::from_millis(50);

/// The time from a commit to its signed snapshot the pushback bound is steered to keep every
/// round's slowest change under (the target of library/METRICS.md is a p99 of 1 s).
const INTEGRATION_TARGET: Duration = Duration::from_millis(800);

/// How far behind the engine is. As CoDel judges a queue by the age of what waits in it: the
/// oldest committed change in the round being rendered, and the oldest waiting behind it (in
/// the engine's queue, or sent since it last took its channel). And what a change sent now
/// can expect: the documents not yet rendered over the documents a second the engine renders
/// while busy (a moving average of its back-to-back rounds, so idle time does not count).
/// Documents, not requests: requests for one document are rendered once, so a thousand
/// report-ins into one vow wait for one render, and a thousand into a thousand vows for a
/// thousand (counting requests let a burst of random vows in at the rate one busy vow had
/// been rendered at). Instants are microseconds since `base` plus one; 0 is none.
#[derive(Debug)]
struct Flow {
    base: Instant,
    in_round: std::sync::atomic::AtomicU64,
    in_channel: std::sync::atomic::AtomicU64,
    /// Distinct documents in the engine's queue and in the round being rendered, as the
    /// engine last counted them (only the engine writes it).
    waiting: std::sync::atomic::AtomicU64,
    /// The documents asked for since the engine last took its channel, each once (a hash of
    /// its source and key).
    unsorted: Mutex<std::collections::HashSet<u64>>,
    /// Documents a second while busy, `f64` bits; 0 until measured.
    per_second: std::sync::atomic::AtomicU64,
    /// The pushback bound in force, in microseconds: [`PUSHBACK_AT`] until a round's slowest
    /// change overshoots [`INTEGRATION_TARGET`].
    admit_at: std::sync::atomic::AtomicU64,
}

impl Default for Flow {
    fn default() -> Self {
        metrics()
            .pushback_bound_us
            .set(PUSHBACK_AT.as_micros() as i64);
        Flow {
            base: Instant::now(),
            in_round: std::sync::atomic::AtomicU64::new(0),
            in_channel: std::sync::atomic::AtomicU64::new(0),
            waiting: std::sync::atomic::AtomicU64::new(0),
            unsorted: Mutex::new(std::collections::HashSet::new()),
            per_second: std::sync::atomic::AtomicU64::new(0),
            admit_at: std::sync::atomic::AtomicU64::new(PUSHBACK_AT.as_micros() as u64),
        }
    }
}

impl Flow {
    fn mark(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.base).as_micros()).unwrap_or(u64::MAX - 1)
            + 1
    }

    /// A change committed at `at` was sent to the engine.
    fn sent(&self, at: Instant) {
        let _ = self.in_channel.compare_exchange(
            0,
            self.mark(at),
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
    }

    /// A render of `key` of `source` was asked for.
    fn asked(&self, source: Slot, key: &str) {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (source.0, key).hash(&mut h);
        lock(&self.unsorted).insert(h.finish());
    }

    /// The engine took its channel into its queue and a round from the queue: the oldest
    /// committed change left queued is `queued`, the round's oldest is `round`, and `waiting`
    /// distinct documents are in the queue and the round.
    fn taken(&self, queued: Option<Instant>, round: Option<Instant>, waiting: u64) {
        self.in_channel
            .store(queued.map_or(0, |at| self.mark(at)), Ordering::Relaxed);
        self.in_round
            .store(round.map_or(0, |at| self.mark(at)), Ordering::Relaxed);
        self.waiting.store(waiting, Ordering::Relaxed);
        lock(&self.unsorted).clear();
    }

    /// The round's snapshots are written: it rendered `documents`, in `busy` when the engine
    /// went from the previous round straight to this one (`None` when it had waited).
    fn rendered(&self, documents: u64, busy: Option<Duration>) {
        self.in_round.store(0, Ordering::Relaxed);
        let left = self
            .waiting
            .load(Ordering::Relaxed)
            .saturating_sub(documents);
        self.waiting.store(left, Ordering::Relaxed);
        let secs = busy.map_or(0.0, |d| d.as_secs_f64());
        if documents > 0 && secs > 0.0 {
            let now = documents as f64 / secs;
            let before = f64::from_bits(self.per_second.load(Ordering::Relaxed));
            let rate = if before > 0.0 {
                0.5 * before + 0.5 * now
            } else {
                now
            };
            self.per_second.store(rate.to_bits(), Ordering::Relaxed);
        }
    }

    /// A round wrote the snapshots of changes, the slowest `worst` after its commit: steer the
    /// pushback bound by what was measured rather than by what was expected. An overshoot of
    /// [`INTEGRATION_TARGET`] cuts the bound by the share it overshot (at most by half, never
    /// below [`PUSHBACK_FLOOR`]); a round well inside it lets the bound grow back by a
    /// twentieth of the target, up to [`PUSHBACK_AT`] (as TCP's congestion window: cut on a
    /// loss, grown back slowly).
    fn integrated(&self, worst: Duration) {
        let at = Duration::from_micros(self.admit_at.load(Ordering::Relaxed));
        let next = if worst > INTEGRATION_TARGET {
            let share = INTEGRATION_TARGET.as_secs_f64() / worst.as_secs_f64();
            at.mul_f64(share.max(0.5))
        } else if worst < INTEGRATION_TARGET / 2 {
            at + INTEGRATION_TARGET / 20
        } else {
            at
        };
        let next = next.clamp(PUSHBACK_FLOOR, PUSHBACK_AT).as_micros() as u64;
        self.admit_at.store(next, Ordering::Relaxed);
        metrics().pushback_bound_us.set(next as i64);
    }

    /// The pushback bound in force.
    fn admit_at(&self) -> Duration {
        Duration::from_micros(self.admit_at.load(Ordering::Relaxed))
    }

    /// How long a change sent at `now` can expect to wait: the age of the oldest change not
    /// yet rendered, or what is queued at the busy rate, whichever is longer.
    fn wait(&self, now: Instant) -> Duration {
        let oldest = [&self.in_round, &self.in_channel]
            .iter()
            .map(|a| a.load(Ordering::Relaxed))
            .filter(|m| *m > 0)
            .min();
        let age = match oldest {
            Some(m) => now
                .saturating_duration_since(self.base)
                .saturating_sub(Duration::from_micros(m - 1)),
            None => Duration::ZERO,
        };
        let queued = self.waiting.load(Ordering::Relaxed) + lock(&self.unsorted).len() as u64;
        let rate = f64::from_bits(self.per_second.load(Ordering::Relaxed));
        let ahead = if queued > 0 && rate > 0.0 {
            Duration::from_secs_f64((queued as f64 / rate).min(3600.0))
        } else {
            Duration::ZERO
        };
        age.max(ahead)
    }
}

/// Most distinct keys a round renders of what was asked (the rest wait in the engine's queue,
/// oldest first): a round of random vows stays a fraction of a second, so a change waits
/// about the pushback bound plus one short round.
const ROUND_KEYS: usize = 128;

/// One render asked of the engine, waiting in its queue.
struct Asked {
    source: Slot,
    key: String,
    index: bool,
    done: Option<Done>,
    committed: Option<Instant>,
}

/// Longest a restart waits for the index pages and the backlog's listing before it answers.
pub const LIST_WAIT: Duration = Duration::from_secs(2);

/// Keys of the restart backlog rendered per round (between requests, which keep being
/// served while the tree catches up).
const BACKLOG_SLICE: usize = 16;

/// Write the static pages of `input` into `site`; the publisher of the tree from now on,
/// keeping its round mark at `round_mark` when given ([`Publisher::mark_rounds_at`]). Its
/// manifest is not written here. Temporaries a crash left in the tree are removed by
/// [`startup`], or first thing by a restart's engine ([`LiveSite::start_catching_up`]: the
/// walk grows with the tree).
pub fn static_tree(
    input: &SiteInput<'_>,
    site: &SharedTree,
    round_mark: Option<&Path>,
) -> Result<Publisher, RenderError> {
    let mut tree = render(input)?;
    // The manifest, which must cover every source's files too, is the publisher's.
    tree.files
        .retain(|p, _| !conduct_core::manifest::is_manifest_path(p));
    let report = tree
        .write_to(site.as_ref())
        .map_err(|e| RenderError::Input(format!("writing {}: {e}", site.locator())))?;
    let mut publisher = Publisher::from_tree(site.clone(), &tree);
    if let Some(m) = round_mark {
        publisher.mark_rounds_at(m.to_path_buf());
    }
    publisher.sign_with(input.key)?;
    publisher.count_writes(report.written.len());
    Ok(publisher)
}

fn sweep(site: &dyn conduct_indexer::tree::Tree) -> Result<(), RenderError> {
    let swept = site.recover(false).map_err(|e| {
        RenderError::Input(format!(
            "removing what a crash left in {}: {e}",
            site.locator()
        ))
    })?;
    if swept > 0 {
        tracing::info!(
            swept,
            "removed temporary files a crash left in the site tree"
        );
    }
    Ok(())
}

/// Render the whole tree for `input` into `site` as of `input.as_of`: the static pages, then
/// every source's documents, then the signed manifest over all of it. Temporaries a crash left
/// in the tree are removed first, unless the tree is `clean` (the previous run stopped with
/// every writer joined: `conduct_indexer::clean_stop`). Returns the publisher that owns the
/// tree from now on (its round mark at `round_mark` when given).
pub fn startup(
    input: &SiteInput<'_>,
    site: &SharedTree,
    round_mark: Option<&Path>,
    clean: bool,
    sources: &mut [Box<dyn Source>],
) -> Result<Publisher, RenderError> {
    if !clean {
        sweep(site.as_ref())?;
    }
    let mut publisher = static_tree(input, site, round_mark)?;
    for s in sources.iter_mut() {
        s.render_all(&mut publisher, input.as_of)?;
    }
    // The render instant, so two renders of one state at one `as_of` are byte-identical.
    publisher.write_manifest(input.key, input.as_of, input.manifest_ttl)?;
    Ok(publisher)
}

impl LiveSite {
    /// Start the engine over `publisher` with `sources` (their ids are their positions).
    pub fn start(
        publisher: Publisher,
        key: ServiceKey,
        manifest_ttl: u64,
        sources: Vec<Box<dyn Source>>,
    ) -> Result<LiveSite, RenderError> {
        LiveSite::spawn(
            publisher,
            key,
            manifest_ttl,
            sources,
            None,
            None,
            None,
            false,
        )
    }

    /// Start the engine over a tree already on disk that may be behind the state (a
    /// restart): the tree is served as it is while every source's [backlog](Source::backlog)
    /// is re-rendered between requests. `listed` says the publisher lists the whole tree
    /// (seeded from the previous manifest): the manifest is signed before it returns, so the
    /// tree is valid as soon as the service answers; otherwise it is signed only once the
    /// backlog is done, so it stays valid for what it lists.
    ///
    /// The engine's thread first renders each source's index pages and lists the backlog; this
    /// returns once that is done or after [`LIST_WAIT`], whichever is first (the listing grows
    /// with the vows: past that the service answers meanwhile, `/health` saying
    /// `catching-up`).
    ///
    /// With `marks`, the backlog is only what changed after the previous run's integration
    /// mark (when the listing is whole: the mark speaks of the files it lists), and the engine
    /// keeps the mark moving ([`Marks`]).
    ///
    /// Unless the tree is `clean` (the previous run stopped with every writer joined:
    /// `conduct_indexer::clean_stop`), a thread walks it for the temporaries a crash left
    /// meanwhile ([`LiveSite::swept`]).
    pub fn start_catching_up(
        mut publisher: Publisher,
        key: ServiceKey,
        manifest_ttl: u64,
        sources: Vec<Box<dyn Source>>,
        listed: bool,
        marks: Option<Marks>,
        clean: bool,
    ) -> Result<LiveSite, RenderError> {
        let since = marks.as_ref().and_then(|m| m.since).filter(|_| listed);
        if listed {
            let wall = conduct_indexer::clock::wall_now();
            publisher.write_manifest(&key, wall, manifest_ttl)?;
        }
        let marks = marks.map(|m| Marks { since, ..m });
        let (tx, rx) = mpsc::sync_channel(1);
        let site = LiveSite::spawn(
            publisher,
            key,
            manifest_ttl,
            sources,
            Some(listed),
            Some((since, tx)),
            marks,
            clean,
        )?;
        let _ = rx.recv_timeout(LIST_WAIT);
        Ok(site)
    }

    #[allow(clippy::too_many_arguments)]
    fn spawn(
        publisher: Publisher,
        key: ServiceKey,
        manifest_ttl: u64,
        sources: Vec<Box<dyn Source>>,
        catch_up: Option<bool>,
        list: Option<(Option<Integrated>, mpsc::SyncSender<()>)>,
        marks: Option<Marks>,
        clean: bool,
    ) -> Result<LiveSite, RenderError> {
        let names: Arc<[&'static str]> = sources.iter().map(|s| s.name()).collect();
        if let Some(twice) = names
            .iter()
            .enumerate()
            .find(|(i, n)| names[..*i].contains(n))
        {
            return Err(RenderError::Input(format!(
                "two sources are named {}",
                twice.1
            )));
        }
        let (tx, rx) = mpsc::channel();
        let tx = Arc::new(tx);
        let behind = Arc::new(Mutex::new(None));
        // Until the backlog is listed, one key (the listing) is left.
        let left = Arc::new(AtomicUsize::new(usize::from(list.is_some())));
        let sweeping = Arc::new(AtomicBool::new(false));
        // A restart over a tree not known clean may hold another run's temporaries until its
        // walk ends well (from the first moment: a stop before the walk began finds it so).
        let unswept = Arc::new(AtomicBool::new(list.is_some() && !clean));
        let flow = Arc::new(Flow::default());
        let engine = Engine {
            key,
            manifest_ttl,
            publisher: Arc::new(Mutex::new(publisher)),
            sources,
            derived: None,
            wake: Arc::downgrade(&tx),
            retry: BTreeMap::new(),
            behind: behind.clone(),
            backlog: Vec::new(),
            list,
            left: left.clone(),
            sweeping: sweeping.clone(),
            unswept: unswept.clone(),
            catch_up,
            flow: flow.clone(),
            mark: marks.as_ref().and_then(|m| m.since),
            hooked: marks.as_ref().and_then(|m| m.hooked.clone()),
            marks: marks.map(|m| m.place),
        };
        std::thread::Builder::new()
            .name("live-site".into())
            .spawn(move || engine.run(rx))
            .map_err(|e| RenderError::Input(format!("render thread: {e}")))?;
        Ok(LiveSite {
            tx,
            behind,
            left,
            sweeping,
            unswept,
            flow,
            names,
        })
    }

    /// `Some((wait, bound))` while a change sent now would wait `wait`, longer than the
    /// pushback bound in force (`bound`: [`PUSHBACK_AT`] at most, lowered while rounds
    /// overshoot the integration target):
    /// writers that answer before their pages are written (report-ins) refuse new work until
    /// the engine catches up, so the time from a commit to its signed snapshot stays bounded
    /// (library/VOWS.md, "Durability and verification").
    pub fn pushback(&self) -> Option<(Duration, Duration)> {
        let bound = self.flow.admit_at();
        let wait = self.flow.wait(Instant::now());
        (wait > bound).then_some((wait, bound))
    }

    /// Whether no walk for the temporaries a crash left is running or still to run: the tree
    /// holds none but this process's own writes in flight (a stop that joins every writer may
    /// then say the tree is clean: `conduct_indexer::clean_stop`).
    pub fn swept(&self) -> bool {
        !self.unswept.load(Ordering::Acquire)
    }

    /// Keys the restart backlog still has to bring up to date, and one while the sweep of the
    /// temporaries a crash left runs (0 once caught up).
    pub fn catching_up(&self) -> usize {
        self.left.load(Ordering::Relaxed) + usize::from(self.sweeping.load(Ordering::Relaxed))
    }

    /// Ask for a re-render of `key` of `source` (and its index pages when `index`) without
    /// waiting; the receiver resolves once its files of record are written (or fails when
    /// the engine is gone).
    pub fn start_render(
        &self,
        source: SourceId,
        key: &str,
        index: bool,
    ) -> tokio::sync::oneshot::Receiver<Result<(), NotRendered>> {
        self.send_render(source, key, index, None)
    }

    /// [`LiveSite::start_render`] of a change committed at `committed`: the time until its
    /// files of record are written is the integration latency of library/METRICS.md.
    pub fn start_render_committed(
        &self,
        source: SourceId,
        key: &str,
        index: bool,
        committed: Instant,
    ) -> tokio::sync::oneshot::Receiver<Result<(), NotRendered>> {
        self.send_render(source, key, index, Some(committed))
    }

    fn send_render(
        &self,
        source: SourceId,
        key: &str,
        index: bool,
        committed: Option<Instant>,
    ) -> tokio::sync::oneshot::Receiver<Result<(), NotRendered>> {
        let (done, rx) = tokio::sync::oneshot::channel();
        let Some(source) = self.names.iter().position(|n| *n == source.0).map(Slot) else {
            let _ = done.send(Err(NotRendered(format!("no source is named {}", source.0))));
            return rx;
        };
        let queue = &metrics().render_queue;
        queue.add(1);
        self.flow.asked(source, key);
        if let Some(at) = committed {
            self.flow.sent(at);
        }
        // When the thread is gone, `done` is dropped with the message and `rx` says so.
        if self
            .tx
            .send(Msg::Render {
                source,
                key: key.to_owned(),
                index,
                done: Some(done),
                committed,
            })
            .is_err()
        {
            queue.add(-1);
        }
        rx
    }

    /// Re-render and wait until the files of record are written.
    pub async fn render(
        &self,
        source: SourceId,
        key: &str,
        index: bool,
    ) -> Result<(), NotRendered> {
        rendered(self.start_render(source, key, index)).await
    }

    /// Stop the engine (a graceful shutdown): what is queued is rendered, and the last derived
    /// files, manifest and integration mark written, so the next start re-renders nothing
    /// that this run had. Waits at most `wait`; whether it stopped in time.
    pub fn stop(&self, wait: Duration) -> bool {
        let (tx, rx) = mpsc::sync_channel(1);
        self.tx.send(Msg::Stop(tx)).is_ok() && rx.recv_timeout(wait).is_ok()
    }

    /// Re-sign the manifest now.
    pub fn refresh_manifest(&self) {
        let _ = self.tx.send(Msg::Manifest);
    }

    /// `None` when every change is rendered; else why the site is behind.
    pub fn behind(&self) -> Option<Behind> {
        lock(&self.behind).clone()
    }
}

/// The tree's integration mark, kept by the engine: every [`MARK_EVERY`], when no failed render
/// waits for a retry and the restart backlog is done, the engine asks each source how far its
/// files show the log ([`Source::integrated`]) and has the derived writer, once it has written
/// everything handed to it before, flush the file system and write the mark
/// (`conduct_indexer::integrated`). A restart then re-renders only what changed after it.
#[derive(Debug, Clone)]
pub struct Marks {
    /// Where the marks are kept, and what renders (`conduct_indexer::integrated::Place`).
    pub place: Place,
    /// The mark the previous run left, if any.
    pub since: Option<Integrated>,
    /// The log size below which every commit's hook has run (`Sequencer::hooked`): the
    /// mark stops there, and takes the requests those hooks sent before it is checked, so it
    /// never passes a record whose pages (of any source) are still to be asked for or
    /// rendered. `None`: the log is written by no hook of this process.
    pub hooked: Option<Arc<AtomicU64>>,
}

/// How often the integration mark moves.
const MARK_EVERY: Duration = Duration::from_secs(2);

/// Wait for a render asked with [`LiveSite::start_render`]: its files of record written, or
/// why not (the render thread gone included).
pub async fn rendered(
    asked: tokio::sync::oneshot::Receiver<Result<(), NotRendered>>,
) -> Result<(), NotRendered> {
    asked
        .await
        .map_err(|_| NotRendered("the render thread stopped".to_owned()))?
}

/// Keys of one source whose render failed, retried with a doubling delay.
#[derive(Default)]
struct Retry {
    keys: BTreeSet<String>,
    index: bool,
    due: Option<Instant>,
    delay: Duration,
    since: u64,
    /// When the changes waiting were committed (their integration latency counts the
    /// retries).
    committed: Vec<Instant>,
}

/// What one turn of the engine's loop took from its channel besides render requests.
#[derive(Default)]
struct Inbox {
    manifest_now: bool,
    mark_written: bool,
    stopped_by: Option<mpsc::SyncSender<()>>,
}

impl Inbox {
    /// Take `m`: a render request joins `pending`, the rest is noted.
    fn take(&mut self, m: Msg, pending: &mut std::collections::VecDeque<Asked>) {
        match m {
            Msg::Render {
                source,
                key,
                index,
                done,
                committed,
            } => pending.push_back(Asked {
                source,
                key,
                index,
                done,
                committed,
            }),
            Msg::Manifest => self.manifest_now = true,
            // The publisher is dirty now; the loop's check schedules the manifest.
            Msg::DerivedWritten => {}
            Msg::Stop(tx) => self.stopped_by = Some(tx),
            Msg::MarkWritten => self.mark_written = true,
        }
    }
}

struct Engine {
    key: ServiceKey,
    manifest_ttl: u64,
    publisher: Arc<Mutex<Publisher>>,
    sources: Vec<Box<dyn Source>>,
    /// The derived-file writer (HTML twins, feeds, and the integration mark after them), off
    /// the acknowledgement path.
    derived: Option<mpsc::Sender<ToWriter>>,
    /// The engine's own channel, for the derived writer to say it wrote (weak: the handles
    /// own the channel).
    wake: Weak<mpsc::Sender<Msg>>,
    retry: BTreeMap<Slot, Retry>,
    behind: Arc<Mutex<Option<Behind>>>,
    /// The restart backlog, per source.
    backlog: Vec<(Slot, std::collections::VecDeque<String>)>,
    /// Until a restart's backlog is listed: the mark to list it from (`None`: every key), and
    /// whom to tell once it is.
    list: Option<(Option<Integrated>, mpsc::SyncSender<()>)>,
    /// Keys left in the backlog (shared with the handle).
    left: Arc<AtomicUsize>,
    /// While the restart's sweep runs (shared with the handle).
    sweeping: Arc<AtomicBool>,
    /// Until a walk of the tree for temporaries ended well, when the tree is not known clean
    /// (shared with the handle; false: no walk is needed).
    unswept: Arc<AtomicBool>,
    /// `Some(listed)` while a restart catches up: whether the manifest may be re-signed
    /// before the backlog is done.
    catch_up: Option<bool>,
    flow: Arc<Flow>,
    /// Where the integration mark is kept (`None`: no mark is kept).
    marks: Option<Place>,
    /// See [`Marks::hooked`].
    hooked: Option<Arc<AtomicU64>>,
    /// The last mark sent to be written.
    mark: Option<Integrated>,
}

/// What one round asks of one source.
#[derive(Default)]
struct Work {
    keys: BTreeSet<String>,
    index: bool,
    waiters: Vec<Done>,
    /// When the changes asked for were committed (integration latency).
    committed: Vec<Instant>,
}

/// Write the files of record (the signed JSON snapshots) of `files`; the derived rest is
/// returned for the derived-file writer.
fn write_records(publisher: &Mutex<Publisher>, files: Files) -> Result<Files, String> {
    let (records, derived): (Files, Files) =
        files.into_iter().partition(|(p, _)| p.ends_with(".json"));
    put_many_shared(publisher, records)
        .map(|_| derived)
        .map_err(|e| e.to_string())
}

/// Write the derived files that do not exist yet (a new vow's HTML twin and feed) before the
/// waiters are answered, so a client following a 201's `Location` finds every representation;
/// returns the rest (updates of files that exist) for the derived-file writer. A new file that
/// cannot be written fails the round (retried like any render): the derived writer only ever
/// writes files already listed, and this thread only files not listed yet, so the two never
/// write one path at once (`put_many_shared`).
fn write_new_derived(publisher: &Mutex<Publisher>, derived: Files) -> Result<Files, String> {
    let (new, existing): (Files, Files) = {
        let p = lock(publisher);
        derived
            .into_iter()
            .partition(|(path, _)| p.sha256_of(path).is_none())
    };
    if !new.is_empty() {
        put_many_shared(publisher, new).map_err(|e| e.to_string())?;
    }
    Ok(existing)
}

/// What the derived writer is handed, in order.
enum ToWriter {
    /// Derived files to write.
    Files(Files),
    /// The integration mark, to write once everything handed before it is written: where, and
    /// the mark.
    Mark(Place, Integrated),
}

/// Write derived files (HTML twins, feeds) on a thread of their own, merging what queued up,
/// and wake the engine after each batch so the manifest is re-signed over what was written
/// (the files can land after a manifest the engine signed meanwhile). An integration mark
/// handed over is written after the files handed before it.
fn spawn_derived_writer(
    publisher: Arc<Mutex<Publisher>>,
    wake: Weak<mpsc::Sender<Msg>>,
) -> Option<(mpsc::Sender<ToWriter>, std::thread::JoinHandle<()>)> {
    let (tx, rx) = mpsc::channel::<ToWriter>();
    let site = lock(&publisher).site().clone();
    let thread = std::thread::Builder::new()
        .name("derived-write".into())
        .spawn(move || {
            // Once derived files could not be written, no later mark may claim them: the
            // mark stays where it was, and the next restart re-renders from there.
            let mut failed = false;
            while let Ok(first) = rx.recv() {
                let mut files: HashMap<String, Vec<u8>> = HashMap::new();
                let mut mark = None;
                for m in std::iter::once(first).chain(rx.try_iter()) {
                    match m {
                        ToWriter::Files(f) => files.extend(f),
                        ToWriter::Mark(place, m) => mark = Some((place, m)),
                    }
                }
                let written = files.is_empty()
                    || match put_many_shared(&publisher, files.into_iter().collect()) {
                        Ok(_) => true,
                        Err(e) => {
                            tracing::warn!(error = %e, "writing derived pages failed");
                            false
                        }
                    };
                failed |= !written;
                if let (false, Some((place, m))) = (failed, mark) {
                    // A manifest signed after now lists every file written so far.
                    let listed_after = conduct_indexer::clock::wall_now();
                    let written = write_mark(&place, site.as_ref(), m, listed_after);
                    if let (true, Some(tx)) = (written, wake.upgrade()) {
                        let _ = tx.send(Msg::MarkWritten);
                    }
                    failed |= !written;
                }
                if let Some(tx) = wake.upgrade() {
                    let _ = tx.send(Msg::DerivedWritten);
                }
            }
        })
        .ok()?;
    Some((tx, thread))
}

/// Flush the site's file system (through `fd`, open on `site`) and write the integration mark,
/// whose files a manifest signed after `listed_after` lists. Whether it was written (a failure
/// is logged: the previous mark stays, and a restart re-renders more).
fn write_mark(
    place: &Place,
    site: &dyn conduct_indexer::tree::Tree,
    mark: Integrated,
    listed_after: u64,
) -> bool {
    match conduct_indexer::integrated::write(place, site, mark, listed_after) {
        Ok(()) => {
            tracing::debug!(
                log_size = mark.log_size,
                as_of = mark.as_of,
                "integration mark written"
            );
            true
        }
        Err(e) => {
            tracing::warn!(error = %e, "writing the integration mark failed; no later mark is written");
            false
        }
    }
}

impl Engine {
    fn run(mut self, rx: mpsc::Receiver<Msg>) {
        if let Err(e) = lock(&self.publisher).sign_off_thread(&self.key, self.manifest_ttl) {
            tracing::warn!(error = %e, "no manifest signer thread; signing on the render thread");
        }
        let derived = spawn_derived_writer(self.publisher.clone(), self.wake.clone());
        self.derived = derived.as_ref().map(|(tx, _)| tx.clone());
        if let Some((since, listed)) = self.list.take() {
            self.list_backlog(since);
            let _ = listed.send(());
        }
        let refresh_every = Duration::from_secs((self.manifest_ttl / 2).max(60));
        let mut refresh_at = Instant::now() + refresh_every;
        let mut manifest_due: Option<Instant> = None;
        // When a manifest must be signed to cover the last integration mark.
        let mut cover_due: Option<Instant> = None;
        let mut mark_due = Instant::now() + MARK_EVERY;
        let mut stopped_by: Option<mpsc::SyncSender<()>> = None;
        let mut pending: std::collections::VecDeque<Asked> = std::collections::VecDeque::new();
        // When the last round ended with more queued (the next starts at once).
        let mut busy_since: Option<Instant> = None;
        loop {
            let now = service_now();
            let until = |at: Option<Instant>| {
                at.map_or(Duration::from_secs(3600), |d| {
                    d.saturating_duration_since(Instant::now())
                })
            };
            let until_due = self
                .sources
                .iter()
                .filter_map(|s| s.next_due())
                .min()
                .map_or(Duration::from_secs(3600), |t| {
                    Duration::from_secs(t.saturating_sub(now))
                });
            let until_retry = until(self.retry.values().filter_map(|r| r.due).min());
            let wait = if self.backlog.is_empty() && pending.is_empty() {
                until_due
                    .min(until(self.marks.as_ref().map(|_| mark_due)))
                    .min(until(manifest_due))
                    .min(until(cover_due))
                    .min(until_retry)
                    .min(until(Some(refresh_at)))
            } else {
                Duration::ZERO
            };
            let mut inbox = Inbox::default();
            let gone = match rx.recv_timeout(wait) {
                Ok(m) => {
                    inbox.take(m, &mut pending);
                    false
                }
                Err(mpsc::RecvTimeoutError::Timeout) => false,
                Err(mpsc::RecvTimeoutError::Disconnected) => true,
            };
            rx.try_iter().for_each(|m| inbox.take(m, &mut pending));
            stopped_by = stopped_by.or(inbox.stopped_by.take());
            // Every handle is gone, or a stop was asked: render what is still queued, then stop.
            if (gone || stopped_by.is_some()) && pending.is_empty() {
                break;
            }
            // A round takes the oldest requests up to ROUND_KEYS distinct keys (requests for
            // a key already taken join it), so it stays short and what waits behind it is
            // seen waiting (pushback judges by that age).
            let mut work: BTreeMap<Slot, Work> = BTreeMap::new();
            let mut requests = 0;
            let mut keys = 0;
            while let Some(a) = pending.front() {
                let known = work.get(&a.source).is_some_and(|w| w.keys.contains(&a.key));
                if !known && keys >= ROUND_KEYS {
                    break;
                }
                let Some(a) = pending.pop_front() else { break };
                requests += 1;
                keys += usize::from(!known);
                let w = work.entry(a.source).or_default();
                w.keys.insert(a.key);
                w.index |= a.index;
                w.waiters.extend(a.done);
                w.committed.extend(a.committed);
            }
            let now = service_now();
            // Keys that fell due, a few per source per round.
            for (i, s) in self.sources.iter_mut().enumerate() {
                let due = s.take_due(now, DUE_SLICE);
                if !due.is_empty() {
                    work.entry(Slot(i)).or_default().keys.extend(due);
                }
            }
            // Failed renders whose retry is due.
            for (id, r) in self.retry.iter_mut() {
                if r.due.is_some_and(|d| d <= Instant::now()) {
                    let w = work.entry(*id).or_default();
                    w.keys.extend(std::mem::take(&mut r.keys));
                    w.index |= std::mem::take(&mut r.index);
                    w.committed.append(&mut r.committed);
                    r.due = None;
                }
            }
            let documents: usize = work.values().map(|w| w.keys.len()).sum();
            let queued: std::collections::HashSet<(Slot, &str)> =
                pending.iter().map(|a| (a.source, a.key.as_str())).collect();
            self.flow.taken(
                pending.iter().find_map(|a| a.committed),
                work.values()
                    .flat_map(|w| w.committed.iter())
                    .min()
                    .copied(),
                (documents + queued.len()) as u64,
            );
            let started = Instant::now();
            for (id, w) in work {
                self.round(id, w, now);
            }
            // Back to back with the previous round: the time since it ended is what this
            // round's requests took the engine, every overhead included.
            let busy = busy_since.map(|at| at.elapsed());
            self.flow
                .rendered(documents as u64, busy.or(Some(started.elapsed())));
            busy_since = (!pending.is_empty()).then(Instant::now);
            metrics().render_queue.add(-requests);
            if self.backlog_round(now) {
                inbox.manifest_now = true;
            }
            metrics()
                .render_restart_backlog
                .set(i64::try_from(self.left.load(Ordering::Relaxed)).unwrap_or(i64::MAX));
            metrics().render_retry.set(
                i64::try_from(self.retry.values().map(|r| r.keys.len()).sum::<usize>())
                    .unwrap_or(i64::MAX),
            );
            self.publish_behind();
            if lock(&self.publisher).dirty() && manifest_due.is_none() {
                manifest_due = Some(Instant::now() + MANIFEST_DELAY);
            }
            if self.marks.is_some() && Instant::now() >= mark_due {
                // Every request a hook sent below `hooked` is in the channel by now: taken
                // into `pending`, where the mark sees it waiting.
                let hooked = self.hooked.as_ref().map(|h| h.load(Ordering::Acquire));
                rx.try_iter().for_each(|m| inbox.take(m, &mut pending));
                stopped_by = stopped_by.or(inbox.stopped_by.take());
                self.advance_mark(&pending, hooked);
                mark_due = Instant::now() + MARK_EVERY;
            }
            // A manifest signed a second after a mark (its instant a later second) covers it.
            if inbox.mark_written {
                cover_due = Some(Instant::now() + MANIFEST_DELAY);
            }
            let refresh = Instant::now() >= refresh_at;
            // While a restart catches up without a full listing, a manifest would leave out
            // files that are there: the previous one stays until the backlog is done.
            let may_sign = self.catch_up != Some(false);
            let passed = |due: Option<Instant>| due.is_some_and(|d| d <= Instant::now());
            let due = inbox.manifest_now || refresh || passed(manifest_due) || passed(cover_due);
            if may_sign && due {
                if passed(cover_due) {
                    cover_due = None;
                }
                self.write_manifest();
                manifest_due = None;
                refresh_at = Instant::now() + refresh_every;
            }
        }
        // Let the derived writer finish before the last manifest.
        self.derived = None;
        if let Some((tx, thread)) = derived {
            drop(tx);
            let _ = thread.join();
        }
        let signed_from = conduct_indexer::clock::wall_now();
        // While a restart catches up without a full listing, the previous manifest stays
        // (one signed now would leave out files that are there).
        if self.catch_up != Some(false) {
            self.write_manifest();
        }
        lock(&self.publisher).stop_signing_off_thread();
        // Every file is written and the manifest just signed lists them: the last mark.
        if let (Some(place), Some(mark)) = (
            self.marks.clone(),
            self.next_mark(
                &std::collections::VecDeque::new(),
                true,
                self.hooked.as_ref().map(|h| h.load(Ordering::Acquire)),
            ),
        ) {
            self.write_mark_here(&place, mark, signed_from.saturating_sub(1));
        }
        if let Some(tx) = stopped_by {
            let _ = tx.send(());
        }
    }

    /// Move the integration mark ([`Marks`]): the next one is handed to the derived writer,
    /// which writes it after the files handed to it before.
    fn advance_mark(&mut self, pending: &std::collections::VecDeque<Asked>, hooked: Option<u64>) {
        let next = self.next_mark(pending, false, hooked);
        let (Some(place), Some(mark)) = (self.marks.clone(), next) else {
            return;
        };
        match &self.derived {
            Some(tx) => {
                let _ = tx.send(ToWriter::Mark(place, mark));
            }
            // No writer thread: everything handed over was written here already.
            None => self.write_mark_here(&place, mark, conduct_indexer::clock::wall_now()),
        }
    }

    /// Write `mark` on this thread (every file it claims is written already).
    fn write_mark_here(&self, place: &Place, mark: Integrated, listed_after: u64) {
        let site = lock(&self.publisher).site().clone();
        write_mark(place, site.as_ref(), mark, listed_after);
    }

    /// The next integration mark: as far as every source's files show the log. `None` while a
    /// retry or the restart backlog is pending, while a request of a source the mark does not
    /// check waits in `pending`, or (unless `always`) when only its instant moved, by less
    /// than a minute.
    fn next_mark(
        &mut self,
        pending: &std::collections::VecDeque<Asked>,
        always: bool,
        hooked: Option<u64>,
    ) -> Option<Integrated> {
        self.marks.as_ref()?;
        if self.catch_up.is_some() || !self.backlog.is_empty() || !self.retry.is_empty() {
            return None;
        }
        let from = self.mark.map_or(0, |m| m.log_size);
        let now = service_now();
        let mut log_size: Option<u64> = None;
        for (i, s) in self.sources.iter_mut().enumerate() {
            match s.integrated(from) {
                Ok(Some(w)) => log_size = Some(log_size.map_or(w, |l| l.min(w))),
                // Its backlog is whole at a restart; its waiting requests are not checked.
                Ok(None) if pending.iter().any(|a| a.source == Slot(i)) => return None,
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(error = %e, source = s.name(), "the integration mark could not be checked");
                    return None;
                }
            }
        }
        // Not past a record whose hook has yet to ask for its pages.
        let log_size = log_size?.min(hooked.unwrap_or(u64::MAX));
        // Boundaries before the first one not yet taken are rendered.
        let as_of = self
            .sources
            .iter()
            .filter_map(|s| s.next_due())
            .min()
            .map_or(now, |t| now.min(t.saturating_sub(1)));
        // An idle service moves only the instant: once a minute is enough (a restart then
        // re-renders the vows whose window closed in that minute).
        if !always
            && self
                .mark
                .is_some_and(|m| m.log_size == log_size && as_of < m.as_of + 60)
        {
            return None;
        }
        let mark = Integrated { log_size, as_of };
        self.mark = Some(mark);
        for s in self.sources.iter_mut() {
            s.marked(log_size);
        }
        Some(mark)
    }

    fn write_manifest(&self) {
        if let Err(e) = lock(&self.publisher).write_manifest(
            &self.key,
            conduct_indexer::clock::wall_now(),
            self.manifest_ttl,
        ) {
            tracing::error!(error = %e, "writing the manifest failed");
        }
    }

    /// One source's work of a round: render, write the files of record, answer the waiters,
    /// hand over the derived files; on failure, schedule a retry.
    fn round(&mut self, id: Slot, w: Work, now: u64) {
        let Some(source) = self.sources.get_mut(id.0) else {
            for d in w.waiters {
                let _ = d.send(Err(NotRendered(format!("no source {}", id.0))));
            }
            return;
        };
        let publisher = &self.publisher;
        let known = |path: &str| lock(publisher).sha256_of(path);
        let started = Instant::now();
        let result = source
            .render(&w.keys, w.index, now, &known)
            .map_err(|e| format!("{}: {e}", source.name()))
            .and_then(|files| write_records(publisher, files))
            .and_then(|derived| write_new_derived(publisher, derived));
        let m = metrics();
        m.render_round.observe_duration(started.elapsed());
        if result.is_ok() {
            let mut worst = Duration::ZERO;
            for at in &w.committed {
                let took = at.elapsed();
                m.integration.observe_duration(took);
                worst = worst.max(took);
            }
            if !w.committed.is_empty() {
                self.flow.integrated(worst);
            }
        }
        for d in w.waiters {
            let _ = d.send(
                result
                    .as_ref()
                    .map(|_| ())
                    .map_err(|e| NotRendered(e.clone())),
            );
        }
        match result {
            Ok(derived) => {
                self.hand_over(derived);
                if let Some(r) = self.retry.get(&id) {
                    if r.keys.is_empty() && !r.index {
                        self.retry.remove(&id);
                    }
                }
            }
            Err(e) => {
                self.retry
                    .entry(id)
                    .or_default()
                    .committed
                    .extend(w.committed);
                self.fail(id, w.keys, w.index, e, now)
            }
        }
    }

    /// A restart, first thing on this thread (the service already answers, serving the tree on
    /// disk): the temporaries a crash left, each source's index pages, then what each must
    /// bring up to date (from the mark, or every key). A source whose listing fails is retried
    /// until it lists; a failed index render is retried like any render.
    fn list_backlog(&mut self, since: Option<Integrated>) {
        let started = Instant::now();
        // Temporaries a crash left, on a thread of their own: the walk grows with the files
        // (seconds at a million vows) and this process's own writes in flight are spared, so
        // the renders need not wait for it.
        // A tree the previous run left clean has none: no walk.
        if self.unswept.load(Ordering::Acquire) {
            let root = lock(&self.publisher).site().clone();
            self.sweeping.store(true, Ordering::Relaxed);
            let (sweeping, unswept) = (self.sweeping.clone(), self.unswept.clone());
            let sweep_all = move || {
                // A failed sweep leaves the tree not known clean.
                match sweep(root.as_ref()) {
                    Ok(()) => unswept.store(false, Ordering::Release),
                    Err(e) => tracing::warn!(error = %e, "sweeping temporaries failed"),
                }
                sweeping.store(false, Ordering::Relaxed);
            };
            let spawned = std::thread::Builder::new()
                .name("sweep".into())
                .spawn(sweep_all.clone());
            if spawned.is_err() {
                sweep_all();
            }
        }
        let now = service_now();
        let mut delay = RETRY_FIRST;
        for i in 0..self.sources.len() {
            let id = Slot(i);
            // The backlog first: a source may resume its index's state from the mark.
            let keys = loop {
                match self.sources[i].backlog(since.as_ref()) {
                    Ok(keys) => break keys,
                    Err(e) => {
                        tracing::error!(error = %e, source = self.sources[i].name(), "listing the restart backlog failed; retried");
                        std::thread::sleep(delay);
                        delay = (delay * 2).min(RETRY_MAX);
                    }
                }
            };
            // Every index file is put (none skipped by what the previous listing says): the
            // publisher compares each with the disk.
            let known = |_: &str| None;
            // Each batch is written, and its derived files handed over, before the next is
            // rendered: the memory is a batch's, not the whole index's.
            let (publisher, derived_tx) = (self.publisher.clone(), self.derived.clone());
            let rendered = self.sources[i].render_index(now, &known, &mut |files| {
                let derived = write_records(&publisher, files)
                    .and_then(|derived| write_new_derived(&publisher, derived))
                    .map_err(RenderError::Input)?;
                hand_over_to(&publisher, derived_tx.as_ref(), derived);
                Ok(())
            });
            if let Err(e) = rendered {
                self.fail(id, BTreeSet::new(), true, e.to_string(), now);
            }
            tracing::info!(
                source = self.sources[i].name(),
                keys = keys.len(),
                since_mark = since.is_some(),
                "restart backlog"
            );
            if !keys.is_empty() {
                self.backlog.push((id, keys.into()));
            }
        }
        let left = self.backlog.iter().map(|(_, q)| q.len()).sum();
        self.left.store(left, Ordering::Relaxed);
        tracing::info!(
            keys = left,
            ms = started.elapsed().as_millis() as u64,
            "restart backlog listed"
        );
        if self.backlog.is_empty() {
            if self.catch_up == Some(false) {
                self.write_manifest();
            }
            self.catch_up = None;
            tracing::info!("the site has caught up with the state");
        }
    }

    /// One slice of the restart backlog: render it and write its files (failures go to the
    /// retries like any render's). True when this slice finished the backlog.
    fn backlog_round(&mut self, now: u64) -> bool {
        let Some((id, queue)) = self.backlog.first_mut() else {
            return false;
        };
        let id = *id;
        let mut keys = BTreeSet::new();
        while keys.len() < BACKLOG_SLICE {
            match queue.pop_front() {
                Some(k) => {
                    keys.insert(k);
                }
                None => break,
            }
        }
        if queue.is_empty() {
            self.backlog.remove(0);
        }
        let n = keys.len();
        let Some(source) = self.sources.get_mut(id.0) else {
            return false;
        };
        let publisher = &self.publisher;
        let known = |path: &str| lock(publisher).sha256_of(path);
        let result = source
            .render_backlog(&keys, now, &known)
            .map_err(|e| format!("{}: {e}", source.name()))
            .and_then(|files| write_records(publisher, files))
            .and_then(|derived| write_new_derived(publisher, derived));
        match result {
            Ok(derived) => self.hand_over(derived),
            Err(e) => self.fail(id, keys, false, e, now),
        }
        let left = self.left.load(Ordering::Relaxed).saturating_sub(n);
        self.left.store(left, Ordering::Relaxed);
        if self.backlog.is_empty() {
            self.catch_up = None;
            self.left.store(0, Ordering::Relaxed);
            tracing::info!("the site has caught up with the state");
            return true;
        }
        false
    }

    /// Schedule a retry of `keys` of source `id` after a failed render or write.
    fn fail(&mut self, id: Slot, keys: BTreeSet<String>, index: bool, e: String, now: u64) {
        tracing::error!(error = %e, "rendering failed; retried with backoff");
        metrics().render_failures.inc();
        if let Some(source) = self.sources.get_mut(id.0) {
            source.forget(&keys);
        }
        let r = self.retry.entry(id).or_default();
        if r.keys.is_empty() && !r.index && r.due.is_none() {
            r.since = now;
            r.delay = RETRY_FIRST;
        } else {
            r.delay = (r.delay * 2).min(RETRY_MAX);
        }
        r.keys.extend(keys);
        r.index |= index;
        r.due = Some(Instant::now() + r.delay);
        let waiting = self.retry.values().map(|r| r.keys.len()).sum();
        *lock(&self.behind) = Some(Behind {
            error: e,
            waiting,
            since: self.retry.values().map(|r| r.since).min().unwrap_or(now),
        });
    }

    /// Hand derived files (HTML, feeds) to their writer thread (written here if it is gone).
    fn hand_over(&self, derived: Files) {
        hand_over_to(&self.publisher, self.derived.as_ref(), derived);
    }

    /// Clear the behind state once no retry is pending.
    fn publish_behind(&self) {
        if self.retry.is_empty() {
            *lock(&self.behind) = None;
        }
    }
}

/// Hand `derived` files to the derived writer `tx`, or write them through `publisher` when
/// there is none (or it is gone).
fn hand_over_to(publisher: &Mutex<Publisher>, tx: Option<&mpsc::Sender<ToWriter>>, derived: Files) {
    if derived.is_empty() {
        return;
    }
    match tx {
        Some(tx) => {
            if let Err(mpsc::SendError(ToWriter::Files(files))) = tx.send(ToWriter::Files(derived))
            {
                put_derived_to(publisher, files);
            }
        }
        None => put_derived_to(publisher, derived),
    }
}

fn put_derived_to(publisher: &Mutex<Publisher>, files: Files) {
    if let Err(e) = put_many_shared(publisher, files) {
        tracing::warn!(error = %e, "writing derived pages failed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_is_the_age_of_the_oldest_change_not_rendered() {
        let flow = Flow::default();
        let t0 = flow.base + Duration::from_secs(10);
        assert_eq!(flow.wait(t0), Duration::ZERO, "nothing sent");
        flow.sent(t0);
        flow.sent(t0 + Duration::from_millis(100)); // younger: the oldest stays
        assert_eq!(
            flow.wait(t0 + Duration::from_millis(300)),
            Duration::from_millis(300)
        );
        // The engine takes both into a round; one more arrives while it renders.
        flow.taken(None, Some(t0), 2);
        flow.sent(t0 + Duration::from_millis(400));
        let at = t0 + Duration::from_millis(700);
        assert_eq!(
            flow.wait(at),
            Duration::from_millis(700),
            "the round's oldest"
        );
        assert!(flow.wait(at) > PUSHBACK_AT);
        flow.rendered(0, None);
        assert_eq!(
            flow.wait(at),
            Duration::from_millis(300),
            "the channel's oldest"
        );
        // A round that leaves some queued: they are what waits.
        flow.taken(
            Some(t0 + Duration::from_millis(400)),
            Some(t0 + Duration::from_millis(400)),
            1,
        );
        flow.rendered(0, None);
        assert_eq!(
            flow.wait(at),
            Duration::from_millis(300),
            "the queue's oldest"
        );
        flow.taken(None, None, 0);
        flow.rendered(0, None);
        assert_eq!(flow.wait(at), Duration::ZERO, "all rendered");
    }

    #[test]
    fn the_bound_is_cut_by_an_overshoot_and_grows_back_slowly() {
        let flow = Flow::default();
        assert_eq!(flow.admit_at(), PUSHBACK_AT);
        // Inside the target: the bound stays at its most.
        flow.integrated(Duration::from_millis(100));
        assert_eq!(flow.admit_at(), PUSHBACK_AT);
        // 1 s against 0.8 s: cut to 80%.
        flow.integrated(Duration::from_secs(1));
        assert_eq!(flow.admit_at(), Duration::from_millis(400));
        // A far overshoot halves it at most.
        flow.integrated(Duration::from_secs(10));
        assert_eq!(flow.admit_at(), Duration::from_millis(200));
        // Between half the target and the target: held.
        flow.integrated(Duration::from_millis(600));
        assert_eq!(flow.admit_at(), Duration::from_millis(200));
        // Well inside: grows back by 40 ms a round, up to the most.
        flow.integrated(Duration::from_millis(300));
        assert_eq!(flow.admit_at(), Duration::from_millis(240));
        for _ in 0..20 {
            flow.integrated(Duration::ZERO);
        }
        assert_eq!(flow.admit_at(), PUSHBACK_AT);
        // Never below the floor.
        for _ in 0..50 {
            flow.integrated(Duration::from_secs(60));
        }
        assert_eq!(flow.admit_at(), PUSHBACK_FLOOR);
        // The wait is judged against the bound in force.
        let t0 = flow.base + Duration::from_secs(10);
        flow.sent(t0);
        let site_wait = flow.wait(t0 + Duration::from_millis(100));
        assert!(site_wait > flow.admit_at() && site_wait < PUSHBACK_AT);
    }

    #[test]
    fn the_wait_is_also_what_is_queued_at_the_busy_rate() {
        let flow = Flow::default();
        let at = flow.base + Duration::from_secs(5);
        flow.waiting.store(1000, Ordering::Relaxed);
        assert_eq!(flow.wait(at), Duration::ZERO, "no rate yet");
        // 100 requests in 0.25 s of back-to-back rounds: 400 a second, 900 left.
        flow.rendered(100, Some(Duration::from_millis(250)));
        let w = flow.wait(at).as_secs_f64();
        assert!((w - 2.25).abs() < 1e-6, "{w}");
        assert!(flow.wait(at) > PUSHBACK_AT);
        // Halfway to a faster sample: 0.5 * 400 + 0.5 * 800.
        flow.rendered(100, Some(Duration::from_millis(125)));
        let rate = f64::from_bits(flow.per_second.load(Ordering::Relaxed));
        assert!((rate - 600.0).abs() < 1e-6, "{rate}");
        // Nothing queued: no wait, whatever the rate.
        flow.rendered(800, None);
        assert_eq!(flow.wait(at), Duration::ZERO);
    }

    #[test]
    fn requests_for_one_document_wait_for_one_render() {
        let flow = Flow::default();
        let at = flow.base + Duration::from_secs(5);
        // 10 documents a second.
        flow.rendered(10, Some(Duration::from_secs(1)));
        // A thousand report-ins into one vow since the engine last looked: one render.
        for _ in 0..1000 {
            flow.asked(Slot(0), "busy");
        }
        let w = flow.wait(at).as_secs_f64();
        assert!((w - 0.1).abs() < 1e-9, "{w}");
        // The same key of another source is another document; a hundred vows, a hundred.
        flow.asked(Slot(1), "busy");
        for i in 0..100 {
            flow.asked(Slot(0), &format!("vow{i}"));
        }
        let w = flow.wait(at).as_secs_f64();
        assert!((w - 10.2).abs() < 1e-9, "{w}");
        // The engine takes them in: its count replaces what was sent.
        flow.taken(None, None, 3);
        let w = flow.wait(at).as_secs_f64();
        assert!((w - 0.3).abs() < 1e-9, "{w}");
    }
}
