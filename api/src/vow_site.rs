//! Keeping the vow pages of the tree current: one render thread owns the [`Publisher`] and
//! re-renders a vow's page, chain and reading after each write to its chain (coalescing
//! concurrent requests), re-renders pages whose window state changes when a window boundary
//! passes, re-signs the manifest at most once a second, and publishes language-model readings
//! as they arrive.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use conduct_core::signing::ServiceKey;
use conduct_core::vow::interpret::{rule_based, ReadingInput};
use conduct_indexer::vows::{VowReader, VowRow};
use conduct_renderer::discovery::card_files;
use conduct_renderer::parallel::map_on_every_core;
use conduct_renderer::publish::Publisher;
use conduct_renderer::vow_html::{sitemap, vows_html};
use conduct_renderer::vows::{vows_index, Files, VowDocs};
use conduct_renderer::RenderError;
use serde_json::Value;

use crate::app::now_unix;
use crate::reading::{interpret, Interpretation, ReadingConfig};

/// Per vow, from a full render: its next window boundary, its id, and how many of its records
/// verified.
pub type Rendered = Vec<(u64, String, usize)>;

/// Most vows re-rendered for a passed window boundary per round of the render thread (the
/// rest follow in the next rounds, each also serving the report-ins that arrived meanwhile).
const BOUNDARY_SLICE: usize = 2;

/// Longest a changed tree waits for its manifest to be re-signed.
const MANIFEST_DELAY: Duration = Duration::from_secs(1);

enum Msg {
    Render {
        vow: String,
        index: bool,
        done: Option<tokio::sync::oneshot::Sender<Result<(), String>>>,
    },
    Reading {
        vow: String,
        covers_seq: u64,
        interpretation: Value,
    },
    Manifest,
}

/// Handle to the render thread.
#[derive(Debug, Clone)]
pub struct VowSite {
    tx: mpsc::Sender<Msg>,
    behind: Arc<Mutex<Option<Behind>>>,
}

/// Why the site is behind the ledger: vows whose files could not be written (say, a full
/// disk), retried with backoff until they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Behind {
    /// The last error.
    pub error: String,
    /// Vows waiting for a retry.
    pub vows: usize,
    /// Unix seconds of the first failure of this episode.
    pub since: u64,
}

/// Longest wait between retries of a failed render.
const RETRY_MAX: Duration = Duration::from_secs(30);

/// What the render thread needs.
pub struct Context {
    /// Signs every snapshot.
    pub key: ServiceKey,
    /// Reads chains.
    pub reader: Arc<VowReader>,
    /// The only writer of the tree.
    pub publisher: Arc<Mutex<Publisher>>,
    /// Model providers (none: rule-based readings).
    pub reading: ReadingConfig,
    /// Manifest validity, seconds.
    pub manifest_ttl: u64,
    /// From the full render: each vow's next window boundary and how many of its records
    /// were verified.
    pub boundaries: Rendered,
    /// Runtime for model calls.
    pub runtime: tokio::runtime::Handle,
    /// The store (model readings are kept there).
    pub store: Arc<conduct_indexer::store::Store>,
    /// Public base URL (absolute links in feeds and the sitemap).
    pub public_url: String,
}

fn uses_model(cfg: &ReadingConfig) -> bool {
    cfg.primary.is_some() || cfg.fallback.is_some()
}

/// The rule-based interpretation of a reading input, as published.
pub fn rule_based_value(input: &ReadingInput, pending_model: bool) -> Value {
    let mut v = Interpretation {
        kind: "rule-based",
        provider: None,
        model: None,
        text: rule_based(input),
        attempts: Vec::new(),
    }
    .to_value();
    if pending_model {
        v["model_pending"] = Value::Bool(true);
    }
    v
}

/// One vow rendered.
struct RenderedVow {
    head: u64,
    /// Its model interpretation (if any) covers fewer entries than the chain has.
    stale: bool,
    files: Files,
    next: u64,
    input: ReadingInput,
    verified: usize,
}

/// Bring `docs` (a vow's kept state; `None` to start over) up to date with the store and
/// render vow `id` at `now`. Only the chain's tail is read when `docs` holds the rest. `kept`
/// is its last model interpretation and that one's seq; the first `trusted` records were
/// verified by this process before; `known` gives the SHA-256 of an already published file.
/// `None` when there is no such vow.
#[allow(clippy::too_many_arguments)]
fn render_stored(
    key: &ServiceKey,
    public_url: &str,
    reader: &VowReader,
    known: &(dyn Fn(&str) -> Option<String> + Sync),
    id: &str,
    docs: Option<VowDocs>,
    kept: Option<&(u64, Value)>,
    model: bool,
    now: u64,
    trusted: usize,
) -> Result<Option<(VowDocs, RenderedVow)>, String> {
    let from = docs.as_ref().map_or(0, VowDocs::tail_from);
    let Some((_, read)) = reader
        .chain_from(id, from as u64)
        .map_err(|e| e.to_string())?
    else {
        return Ok(None);
    };
    let fail = |e: RenderError| format!("vow {id}: {e}");
    let mut docs = match docs {
        Some(d) => d,
        None => {
            let (index, leaf) = read
                .first()
                .ok_or_else(|| format!("vow {id}: no vow record"))?;
            VowDocs::new(key, id, (*index, leaf), trusted > 0).map_err(fail)?
        }
    };
    let mut files = docs
        .extend(key, &read, from, trusted, known)
        .map_err(fail)?;
    let interpretation = |input: &ReadingInput| {
        kept.map_or_else(|| rule_based_value(input, model), |(_, v)| v.clone())
    };
    let r = docs
        .render(key, public_url, &read, from, now, interpretation)
        .map_err(fail)?;
    files.extend(r.files);
    let head = docs.head_seq();
    let rendered = RenderedVow {
        head,
        stale: kept.is_none_or(|(s, _)| *s < head),
        files,
        next: r.windows.next_boundary,
        input: r.input,
        verified: docs.verified(),
    };
    Ok(Some((docs, rendered)))
}

/// The model interpretation kept in the store for vow `vow` and the chain position it covers
/// (state, never read back from the published site).
pub fn kept_interpretation(reader: &VowReader, vow: &str) -> Option<(u64, Value)> {
    let (seq, text) = reader.reading(vow).ok()??;
    Some((seq, serde_json::from_str(&text).ok()?))
}

/// The cards (`/card?key=`) of every lookup key that names one of `vows`: its vow id, its agent
/// name and its wallet, each listing every vow that key names.
pub fn card_files_for(
    key: &ServiceKey,
    public_url: &str,
    reader: &VowReader,
    vows: &[VowRow],
) -> Result<Files, String> {
    let mut lookups = BTreeSet::new();
    for v in vows {
        lookups.insert(v.vow_id.clone());
        lookups.insert(v.agent.clone());
        if let Some(w) = &v.wallet {
            lookups.insert(w.to_ascii_lowercase());
        }
    }
    let mut files = Vec::new();
    for lookup in lookups {
        let matching = reader.matching(&lookup).map_err(|e| e.to_string())?;
        files.extend(
            card_files(key, public_url, &lookup, &matching)
                .map_err(|e| format!("card {lookup:?}: {e}"))?,
        );
    }
    Ok(files)
}

/// The files that change when a vow is taken: the signed index `/vows`, its HTML pages, and
/// `sitemap.xml`.
pub fn index_files(key: &ServiceKey, public_url: &str, rows: &[VowRow]) -> Result<Files, String> {
    let mut files = vec![vows_index(key, rows).map_err(|e| e.to_string())?];
    files.extend(vows_html(key, rows).map_err(|e| e.to_string())?);
    let mut fixed: Vec<String> = ["/", "/catalog", "/library", "/lost", "/vows"]
        .iter()
        .map(|p| (*p).to_owned())
        .collect();
    fixed.extend(
        conduct_renderer::docs::published()
            .iter()
            .map(|d| format!("/library/{}", d.stem())),
    );
    files.push(("sitemap.xml".into(), sitemap(public_url, &fixed, rows)));
    Ok(files)
}

/// Render every vow's files at `now` through `publisher` (which skips files whose bytes are
/// already there), the vows spread over every core; returns each vow's next window boundary
/// and how many of its records verified.
pub fn render_all_vows(
    key: &ServiceKey,
    public_url: &str,
    reader: &VowReader,
    reading: &ReadingConfig,
    publisher: &mut Publisher,
    now: u64,
) -> Result<Rendered, String> {
    let rows = reader.all().map_err(|e| e.to_string())?;
    let mut fixed = index_files(key, public_url, &rows)?;
    fixed.extend(card_files_for(key, public_url, reader, &rows)?);
    for (path, bytes) in fixed {
        publisher
            .put(&path, &bytes)
            .map_err(|e| format!("{path}: {e}"))?;
    }
    let model = uses_model(reading);
    let none = |_: &str| None;
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let out = Mutex::new((publisher, Vec::with_capacity(rows.len()), None::<String>));
    let lock = || match out.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    let render_one = |row: &VowRow| -> Result<(), String> {
        let kept = model
            .then(|| kept_interpretation(reader, &row.vow_id))
            .flatten();
        let id = &row.vow_id;
        let Some((_, r)) = render_stored(
            key,
            public_url,
            reader,
            &none,
            id,
            None,
            kept.as_ref(),
            model,
            now,
            0,
        )?
        else {
            return Ok(());
        };
        let mut g = lock();
        for (p, b) in r.files {
            g.0.put(&p, &b).map_err(|e| format!("{p}: {e}"))?;
        }
        g.1.push((r.next, id.clone(), r.verified));
        Ok(())
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                while !failed.load(Ordering::Relaxed) {
                    let Some(row) = rows.get(next.fetch_add(1, Ordering::Relaxed)) else {
                        break;
                    };
                    if let Err(e) = render_one(row) {
                        failed.store(true, Ordering::Relaxed);
                        lock().2.get_or_insert(e);
                    }
                }
            });
        }
    });
    let (_, boundaries, error) = out.into_inner().unwrap_or_else(|p| p.into_inner());
    error.map_or(Ok(boundaries), Err)
}

impl VowSite {
    /// Start the render thread (and, when a model is configured, its reading tasks).
    pub fn spawn(ctx: Context) -> Result<VowSite, String> {
        let (tx, rx) = mpsc::channel();
        let back = tx.clone();
        let behind = Arc::new(Mutex::new(None));
        let shared = behind.clone();
        std::thread::Builder::new()
            .name("vow-render".into())
            .spawn(move || run(ctx, rx, back, shared))
            .map_err(|e| format!("render thread: {e}"))?;
        Ok(VowSite { tx, behind })
    }

    /// `None` when every committed write is rendered; else why the site is behind.
    pub fn behind(&self) -> Option<Behind> {
        match self.behind.lock() {
            Ok(g) => g.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }

    /// Re-render `vow` (and the index when `index`), resolving once its files are written.
    pub async fn render(&self, vow: &str, index: bool) -> Result<(), String> {
        self.start_render(vow, index)
            .await
            .map_err(|_| "the render thread stopped".to_owned())?
    }

    /// Ask for a re-render of `vow` (and the index when `index`) without waiting; the
    /// receiver resolves once its files are written (or fails when the render thread is gone).
    pub fn start_render(
        &self,
        vow: &str,
        index: bool,
    ) -> tokio::sync::oneshot::Receiver<Result<(), String>> {
        let (done, rx) = tokio::sync::oneshot::channel();
        // When the thread is gone, `done` is dropped with the message and `rx` says so.
        let _ = self.tx.send(Msg::Render {
            vow: vow.to_owned(),
            index,
            done: Some(done),
        });
        rx
    }

    /// Re-sign the manifest now (the periodic refresh).
    pub fn refresh_manifest(&self) {
        let _ = self.tx.send(Msg::Manifest);
    }
}

struct State {
    ctx: Context,
    boundaries: BTreeSet<(u64, String)>,
    next_of: HashMap<String, u64>,
    interps: HashMap<String, (u64, Value)>,
    asked: HashMap<String, u64>,
    verified: HashMap<String, usize>,
    cache: DocsCache,
    models: Option<tokio::sync::mpsc::UnboundedSender<(String, u64, ReadingInput)>>,
    /// The derived-file writer (HTML twins, feeds), off the acknowledgement path.
    derived: Option<mpsc::Sender<Files>>,
    /// Derived files were handed over since the manifest was last scheduled.
    handed_over: bool,
}

/// Write derived files (HTML twins, feeds) on a thread of their own, merging what queued up.
/// (The render thread schedules a manifest whenever it hands some over; they take
/// milliseconds, the manifest waits [`MANIFEST_DELAY`].)
fn spawn_derived_writer(
    publisher: Arc<Mutex<Publisher>>,
) -> Option<(mpsc::Sender<Files>, std::thread::JoinHandle<()>)> {
    let (tx, rx) = mpsc::channel::<Files>();
    let thread = std::thread::Builder::new()
        .name("derived-write".into())
        .spawn(move || {
            while let Ok(first) = rx.recv() {
                let mut files: HashMap<String, Vec<u8>> = first.into_iter().collect();
                for more in rx.try_iter() {
                    files.extend(more);
                }
                let mut p = match publisher.lock() {
                    Ok(p) => p,
                    Err(p) => p.into_inner(),
                };
                if let Err(e) = p.put_many(files.into_iter().collect()) {
                    eprintln!("conduct: writing derived pages failed: {e}");
                }
            }
        })
        .ok()?;
    Some((tx, thread))
}

/// Vows whose render failed, retried with a doubling delay (up to [`RETRY_MAX`]).
#[derive(Default)]
struct Retry {
    vows: BTreeSet<String>,
    index: bool,
    due: Option<Instant>,
    delay: Duration,
    since: u64,
}

fn run(
    ctx: Context,
    rx: mpsc::Receiver<Msg>,
    back: mpsc::Sender<Msg>,
    behind: Arc<Mutex<Option<Behind>>>,
) {
    let mut retry = Retry::default();
    {
        let mut p = match ctx.publisher.lock() {
            Ok(p) => p,
            Err(p) => p.into_inner(),
        };
        if let Err(e) = p.sign_off_thread(&ctx.key, ctx.manifest_ttl) {
            eprintln!("conduct: no manifest signer thread ({e}); signing on the render thread");
        }
    }
    let derived = spawn_derived_writer(ctx.publisher.clone());
    let models = uses_model(&ctx.reading).then(|| spawn_model_tasks(&ctx, back));
    let mut st = State {
        boundaries: ctx
            .boundaries
            .iter()
            .map(|(t, v, _)| (*t, v.clone()))
            .collect(),
        next_of: ctx
            .boundaries
            .iter()
            .map(|(t, v, _)| (v.clone(), *t))
            .collect(),
        interps: HashMap::new(),
        asked: HashMap::new(),
        verified: ctx
            .boundaries
            .iter()
            .map(|(_, v, n)| (v.clone(), *n))
            .collect(),
        models,
        cache: DocsCache::default(),
        derived: derived.as_ref().map(|(tx, _)| tx.clone()),
        handed_over: false,
        ctx,
    };
    let mut manifest_due: Option<Instant> = None;
    loop {
        let now = now_unix();
        let until_boundary = st
            .boundaries
            .first()
            .map(|(t, _)| Duration::from_secs(t.saturating_sub(now)))
            .unwrap_or(Duration::from_secs(3600));
        let until_manifest = manifest_due
            .map(|d| d.saturating_duration_since(Instant::now()))
            .unwrap_or(Duration::from_secs(3600));
        let until_retry = retry
            .due
            .map(|d| d.saturating_duration_since(Instant::now()))
            .unwrap_or(Duration::from_secs(3600));
        let mut batch = Vec::new();
        match rx.recv_timeout(until_boundary.min(until_manifest).min(until_retry)) {
            Ok(m) => batch.push(m),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        while let Ok(m) = rx.try_recv() {
            batch.push(m);
        }
        let mut vows = BTreeSet::new();
        let mut index = false;
        let mut waiters = Vec::new();
        let mut manifest_now = false;
        for m in batch {
            match m {
                Msg::Render {
                    vow,
                    index: i,
                    done,
                } => {
                    vows.insert(vow);
                    index |= i;
                    waiters.extend(done);
                }
                Msg::Reading {
                    vow,
                    covers_seq,
                    interpretation,
                } => {
                    // Kept in the store first: a restart renders it from state.
                    let text = interpretation.to_string();
                    if let Err(e) = st
                        .ctx
                        .store
                        .put_reading(&vow, covers_seq, &text, now_unix())
                    {
                        eprintln!("conduct: keeping the reading of vow {vow} failed: {e}");
                    }
                    st.interps.insert(vow.clone(), (covers_seq, interpretation));
                    vows.insert(vow);
                }
                Msg::Manifest => manifest_now = true,
            }
        }
        let now = now_unix();
        // Vows whose window boundary passed, a few per round: many vows can share a boundary,
        // and report-ins waiting in the queue must not wait for all of them.
        let mut slice = 0;
        while let Some((t, _)) = st.boundaries.first() {
            if *t > now || slice == BOUNDARY_SLICE {
                break;
            }
            slice += 1;
            if let Some((_, v)) = st.boundaries.pop_first() {
                st.next_of.remove(&v);
                vows.insert(v);
            }
        }
        let retrying = retry.due.is_some_and(|d| d <= Instant::now());
        if retrying {
            vows.extend(std::mem::take(&mut retry.vows));
            index |= std::mem::take(&mut retry.index);
            retry.due = None;
        }
        let result = st.render(&vows, index, now, waiters);
        match &result {
            Err(e) => {
                eprintln!("conduct: rendering vows failed (retrying): {e}");
                // Start these vows over on the next try: their kept state may be ahead of
                // the files that were written.
                for v in &vows {
                    let _ = st.cache.take(v);
                }
                if retry.vows.is_empty() && !retry.index {
                    retry.since = now;
                    retry.delay = Duration::from_millis(500);
                } else {
                    retry.delay = (retry.delay * 2).min(RETRY_MAX);
                }
                retry.vows.extend(vows.iter().cloned());
                retry.index |= index;
                retry.due = Some(Instant::now() + retry.delay);
                set_behind(
                    &behind,
                    Some(Behind {
                        error: e.clone(),
                        vows: retry.vows.len(),
                        since: retry.since,
                    }),
                );
            }
            Ok(()) if retry.vows.is_empty() && !retry.index => set_behind(&behind, None),
            Ok(()) => {}
        }
        let dirty = match st.ctx.publisher.lock() {
            Ok(p) => p.dirty(),
            Err(p) => p.into_inner().dirty(),
        };
        let dirty = dirty || std::mem::take(&mut st.handed_over);
        if dirty && manifest_due.is_none() {
            manifest_due = Some(Instant::now() + MANIFEST_DELAY);
        }
        if manifest_now || manifest_due.is_some_and(|d| d <= Instant::now()) {
            st.write_manifest();
            manifest_due = None;
        }
    }
    // Let the derived writer finish before the last manifest.
    st.derived = None;
    if let Some((tx, thread)) = derived {
        drop(tx);
        let _ = thread.join();
    }
    st.write_manifest();
    let mut p = match st.ctx.publisher.lock() {
        Ok(p) => p,
        Err(p) => p.into_inner(),
    };
    p.stop_signing_off_thread();
}

fn set_behind(shared: &Mutex<Option<Behind>>, value: Option<Behind>) {
    match shared.lock() {
        Ok(mut g) => *g = value,
        Err(p) => *p.into_inner() = value,
    }
}

impl State {
    fn write_manifest(&self) {
        let mut p = match self.ctx.publisher.lock() {
            Ok(p) => p,
            Err(p) => p.into_inner(),
        };
        if let Err(e) = p.write_manifest(&self.ctx.key, now_unix(), self.ctx.manifest_ttl) {
            eprintln!("conduct: writing the manifest failed: {e}");
        }
    }

    /// Render `vows` (and the index when `index`) at `now`. The signed JSON snapshots, the
    /// files of record, are written first and `waiters` are answered then; the derived files
    /// (HTML twins, feeds) are written right after, in the same round.
    fn render(
        &mut self,
        vows: &BTreeSet<String>,
        index: bool,
        now: u64,
        waiters: Vec<tokio::sync::oneshot::Sender<Result<(), String>>>,
    ) -> Result<(), String> {
        let mut waiters = Some(waiters);
        let result = self.render_inner(vows, index, now, &mut waiters);
        // A failure before the snapshots were written still answers everyone waiting.
        for w in waiters.into_iter().flatten() {
            let _ = w.send(result.clone());
        }
        result
    }

    fn render_inner(
        &mut self,
        vows: &BTreeSet<String>,
        index: bool,
        now: u64,
        waiters: &mut Option<Vec<tokio::sync::oneshot::Sender<Result<(), String>>>>,
    ) -> Result<(), String> {
        let model = self.models.is_some();
        // What each render needs from the state, gathered first.
        let mut jobs = Vec::with_capacity(vows.len());
        for id in vows {
            if model && !self.interps.contains_key(id) {
                if let Some(kept) = kept_interpretation(&self.ctx.reader, id) {
                    self.interps.insert(id.clone(), kept);
                }
            }
            let kept = self.interps.get(id).cloned();
            let trusted = self.verified.get(id).copied().unwrap_or(0);
            jobs.push(Job {
                id: id.clone(),
                docs: self.cache.take(id),
                kept,
                trusted,
            });
        }
        // The vows of a batch are independent: render them on every core.
        let (key, reader, publisher) = (&self.ctx.key, &self.ctx.reader, &self.ctx.publisher);
        let public_url = self.ctx.public_url.as_str();
        let known = |path: &str| match publisher.lock() {
            Ok(p) => p.sha256_of(path),
            Err(p) => p.into_inner().sha256_of(path),
        };
        let render_one = |job: Job| {
            let r = render_stored(
                key,
                public_url,
                reader,
                &known,
                &job.id,
                job.docs,
                job.kept.as_ref(),
                model,
                now,
                job.trusted,
            );
            (job.id, r)
        };
        let rendered = map_on_every_core(jobs, render_one, || {
            (String::new(), Err("a render thread panicked".to_owned()))
        });
        let mut files = Vec::new();
        let mut failed = None;
        for (id, r) in rendered {
            let (docs, r) = match r {
                Ok(Some(x)) => x,
                Ok(None) => continue,
                Err(e) => {
                    failed.get_or_insert(e);
                    continue;
                }
            };
            self.cache.put(id.clone(), docs);
            self.verified.insert(id.clone(), r.verified);
            files.extend(r.files);
            if let Some(old) = self.next_of.insert(id.clone(), r.next) {
                self.boundaries.remove(&(old, id.clone()));
            }
            self.boundaries.insert((r.next, id.clone()));
            if model && r.stale && self.asked.get(&id) != Some(&r.head) {
                if let Some(tx) = &self.models {
                    self.asked.insert(id.clone(), r.head);
                    let _ = tx.send((id, r.head, r.input));
                }
            }
        }
        if index {
            let rows = self.ctx.reader.all().map_err(|e| e.to_string())?;
            files.extend(index_files(&self.ctx.key, &self.ctx.public_url, &rows)?);
            let batch: Vec<VowRow> = rows
                .into_iter()
                .filter(|r| vows.contains(&r.vow_id))
                .collect();
            files.extend(card_files_for(
                &self.ctx.key,
                &self.ctx.public_url,
                &self.ctx.reader,
                &batch,
            )?);
        }
        let mut p = match self.ctx.publisher.lock() {
            Ok(p) => p,
            Err(p) => p.into_inner(),
        };
        let (records, derived): (Files, Files) = files
            .into_iter()
            .partition(|(path, _)| path.ends_with(".json"));
        let written = p
            .put_many(records)
            .map(|_| ())
            .map_err(|e| e.to_string())
            .and_then(|()| failed.clone().map_or(Ok(()), Err));
        for w in waiters.take().into_iter().flatten() {
            let _ = w.send(written.clone());
        }
        written?;
        match &self.derived {
            Some(tx) if !derived.is_empty() => match tx.send(derived) {
                Ok(()) => self.handed_over = true,
                Err(mpsc::SendError(files)) => {
                    p.put_many(files).map_err(|e| e.to_string())?;
                }
            },
            _ => {
                p.put_many(derived).map_err(|e| e.to_string())?;
            }
        }
        Ok(())
    }
}

/// One vow to render: its kept state (if cached), model interpretation and trusted count.
struct Job {
    id: String,
    docs: Option<VowDocs>,
    kept: Option<(u64, Value)>,
    trusted: usize,
}

/// Most bytes of vow state the render thread keeps between renders.
const CACHE_BYTES: usize = 64 << 20;

/// Vows' kept state, least recently rendered evicted first. A vow not here is read whole
/// from the store on its next render.
#[derive(Default)]
struct DocsCache {
    docs: HashMap<String, (VowDocs, u64, usize)>,
    weight: usize,
    tick: u64,
}

impl DocsCache {
    fn take(&mut self, id: &str) -> Option<VowDocs> {
        let (docs, _, w) = self.docs.remove(id)?;
        self.weight -= w;
        Some(docs)
    }

    fn put(&mut self, id: String, docs: VowDocs) {
        self.tick += 1;
        let w = docs.weight();
        self.weight += w;
        if let Some((_, _, old)) = self.docs.insert(id, (docs, self.tick, w)) {
            self.weight -= old;
        }
        while self.weight > CACHE_BYTES {
            let Some(oldest) = self
                .docs
                .iter()
                .min_by_key(|(_, (_, t, _))| *t)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            let _ = self.take(&oldest);
        }
    }
}

/// Model calls run on the runtime, a few at a time; each answer goes back to the render
/// thread as a [`Msg::Reading`].
fn spawn_model_tasks(
    ctx: &Context,
    back: mpsc::Sender<Msg>,
) -> tokio::sync::mpsc::UnboundedSender<(String, u64, ReadingInput)> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(String, u64, ReadingInput)>();
    let cfg = ctx.reading.clone();
    let limit = Arc::new(tokio::sync::Semaphore::new(4));
    ctx.runtime.spawn(async move {
        let client = crate::reading::client();
        while let Some((vow, seq, input)) = rx.recv().await {
            let Ok(permit) = limit.clone().acquire_owned().await else {
                break;
            };
            let (cfg, client, back) = (cfg.clone(), client.clone(), back.clone());
            tokio::spawn(async move {
                let interp = interpret(&client, &cfg, &input).await;
                let mut value = interp.to_value();
                value["covers_seq"] = Value::from(seq);
                let _ = back.send(Msg::Reading {
                    vow,
                    covers_seq: seq,
                    interpretation: value,
                });
                drop(permit);
            });
        }
    });
    tx
}
