//! Keeping the vow pages of the tree current: one render thread owns the [`Publisher`] and
//! re-renders a vow's page, chain and reading after each write to its chain (coalescing
//! concurrent requests), re-renders pages whose window state changes when a window boundary
//! passes, re-signs the manifest at most once a second, and publishes language-model readings
//! as they arrive.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use conduct_core::signing::ServiceKey;
use conduct_core::vow::interpret::{from_stats, rule_based, ReadingInput};
use conduct_indexer::vows::VowReader;
use conduct_renderer::publish::Publisher;
use conduct_renderer::vows::{reading_file, reading_path, vow_files, vows_index, Chain, Files};
use conduct_renderer::RenderError;
use serde_json::Value;

use crate::app::now_unix;
use crate::reading::{interpret, Interpretation, ReadingConfig};

/// Per vow, from a full render: its next window boundary, its id, and how many of its records
/// verified.
pub type Rendered = Vec<(u64, String, usize)>;

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
}

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
    /// The site directory (to pick up published readings).
    pub site: std::path::PathBuf,
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

/// Render one vow's files at `now`: page, chain and reading (rule-based, or `interpretation`).
/// The first `trusted` records were verified by this process before. Returns the files, the
/// vow's next window boundary, the reading input, and how many records are now verified.
pub fn render_vow(
    key: &ServiceKey,
    chain: &Chain,
    interpretation: Option<Value>,
    pending_model: bool,
    now: u64,
    trusted: usize,
) -> Result<(Files, u64, ReadingInput, usize), RenderError> {
    let (mut files, t) = vow_files(key, chain, now, trusted)?;
    let input = from_stats(&t.vow, &t.entries, &t.stats);
    let interp = interpretation.unwrap_or_else(|| rule_based_value(&input, pending_model));
    files.push(reading_file(key, chain, &t.stats, interp, now)?);
    Ok((files, t.windows.next_boundary, input, t.verified))
}

/// One vow rendered from the store.
struct RenderedVow {
    head: u64,
    /// Its model interpretation (if any) covers fewer entries than the chain has.
    stale: bool,
    files: Files,
    next: u64,
    input: ReadingInput,
    verified: usize,
}

/// Read vow `id`'s chain and render it (see [`render_vow`]); `kept` is its last model
/// interpretation and its seq. `None` when there is no such vow.
fn render_stored(
    key: &ServiceKey,
    reader: &VowReader,
    id: &str,
    kept: Option<&(u64, Value)>,
    model: bool,
    now: u64,
    trusted: usize,
) -> Result<Option<RenderedVow>, String> {
    let Some((row, records)) = reader.chain(id).map_err(|e| e.to_string())? else {
        return Ok(None);
    };
    let chain = Chain { row, records };
    let head = chain.row.head_seq;
    let interp = kept.map(|(_, v)| v.clone());
    let (files, next, input, verified) = render_vow(key, &chain, interp, model, now, trusted)
        .map_err(|e| format!("vow {id}: {e}"))?;
    Ok(Some(RenderedVow {
        head,
        stale: kept.is_none_or(|(s, _)| *s < head),
        files,
        next,
        input,
        verified,
    }))
}

/// The interpretation in an already published reading, if any (kept across restarts).
pub fn published_interpretation(site: &Path, vow: &str) -> Option<(u64, Value)> {
    let bytes = std::fs::read(site.join(reading_path(vow))).ok()?;
    let v: Value = serde_json::from_slice(&bytes).ok()?;
    let interp = v.get("interpretation")?.clone();
    (interp.get("kind")? == "language-model").then_some(())?;
    Some((v.get("covers_seq")?.as_u64()?, interp))
}

/// Render every vow's files at `now` through `publisher` (which skips files whose bytes are
/// already there), one vow at a time; returns each vow's next window boundary and how many of
/// its records verified.
pub fn render_all_vows(
    key: &ServiceKey,
    reader: &VowReader,
    site: &Path,
    reading: &ReadingConfig,
    publisher: &mut Publisher,
    now: u64,
) -> Result<Rendered, String> {
    let rows = reader.all().map_err(|e| e.to_string())?;
    let (path, bytes) = vows_index(key, &rows).map_err(|e| e.to_string())?;
    publisher
        .put(&path, &bytes)
        .map_err(|e| format!("{path}: {e}"))?;
    let model = uses_model(reading);
    let mut boundaries = Vec::with_capacity(rows.len());
    for row in rows {
        let kept = model
            .then(|| published_interpretation(site, &row.vow_id))
            .flatten();
        let Some(r) = render_stored(key, reader, &row.vow_id, kept.as_ref(), model, now, 0)? else {
            continue;
        };
        for (p, b) in r.files {
            publisher.put(&p, &b).map_err(|e| format!("{p}: {e}"))?;
        }
        boundaries.push((r.next, row.vow_id, r.verified));
    }
    Ok(boundaries)
}

impl VowSite {
    /// Start the render thread (and, when a model is configured, its reading tasks).
    pub fn spawn(ctx: Context) -> Result<VowSite, String> {
        let (tx, rx) = mpsc::channel();
        let back = tx.clone();
        std::thread::Builder::new()
            .name("vow-render".into())
            .spawn(move || run(ctx, rx, back))
            .map_err(|e| format!("render thread: {e}"))?;
        Ok(VowSite { tx })
    }

    /// Re-render `vow` (and the index when `index`), resolving once its files are written.
    pub async fn render(&self, vow: &str, index: bool) -> Result<(), String> {
        let (done, rx) = tokio::sync::oneshot::channel();
        self.tx
            .send(Msg::Render {
                vow: vow.to_owned(),
                index,
                done: Some(done),
            })
            .map_err(|_| "the render thread stopped".to_owned())?;
        rx.await
            .map_err(|_| "the render thread stopped".to_owned())?
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
    models: Option<tokio::sync::mpsc::UnboundedSender<(String, u64, ReadingInput)>>,
}

fn run(ctx: Context, rx: mpsc::Receiver<Msg>, back: mpsc::Sender<Msg>) {
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
        let mut batch = Vec::new();
        match rx.recv_timeout(until_boundary.min(until_manifest)) {
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
                    st.interps.insert(vow.clone(), (covers_seq, interpretation));
                    vows.insert(vow);
                }
                Msg::Manifest => manifest_now = true,
            }
        }
        let now = now_unix();
        while let Some((t, _)) = st.boundaries.first() {
            if *t > now {
                break;
            }
            if let Some((_, v)) = st.boundaries.pop_first() {
                st.next_of.remove(&v);
                vows.insert(v);
            }
        }
        let result = st.render(&vows, index, now);
        if let Err(e) = &result {
            eprintln!("conduct: rendering vows failed: {e}");
        }
        for w in waiters {
            let _ = w.send(result.clone());
        }
        let dirty = match st.ctx.publisher.lock() {
            Ok(p) => p.dirty(),
            Err(p) => p.into_inner().dirty(),
        };
        if dirty && manifest_due.is_none() {
            manifest_due = Some(Instant::now() + MANIFEST_DELAY);
        }
        if manifest_now || manifest_due.is_some_and(|d| d <= Instant::now()) {
            st.write_manifest();
            manifest_due = None;
        }
    }
    st.write_manifest();
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

    fn render(&mut self, vows: &BTreeSet<String>, index: bool, now: u64) -> Result<(), String> {
        let model = self.models.is_some();
        // What each render needs from the state, gathered first.
        let mut jobs = Vec::with_capacity(vows.len());
        for id in vows {
            if model && !self.interps.contains_key(id) {
                if let Some(kept) = published_interpretation(&self.ctx.site, id) {
                    self.interps.insert(id.clone(), kept);
                }
            }
            let kept = self.interps.get(id).cloned();
            let trusted = self.verified.get(id).copied().unwrap_or(0);
            jobs.push((id.clone(), kept, trusted));
        }
        // The vows of a batch are independent: render them on every core.
        let (key, reader) = (&self.ctx.key, &self.ctx.reader);
        let render_one = |(id, kept, trusted): &(String, Option<(u64, Value)>, usize)| {
            render_stored(key, reader, id, kept.as_ref(), model, now, *trusted)
                .map(|r| r.map(|r| (id.clone(), r)))
        };
        let threads = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .min(jobs.len())
            .max(1);
        let per = jobs.len().div_ceil(threads).max(1);
        let rendered: Vec<Result<_, String>> = if threads == 1 {
            jobs.iter().map(render_one).collect()
        } else {
            std::thread::scope(|scope| {
                let handles: Vec<_> = jobs
                    .chunks(per)
                    .map(|chunk| {
                        scope.spawn(move || chunk.iter().map(render_one).collect::<Vec<_>>())
                    })
                    .collect();
                handles
                    .into_iter()
                    .flat_map(|h| {
                        h.join()
                            .unwrap_or_else(|_| vec![Err("a render thread panicked".to_owned())])
                    })
                    .collect()
            })
        };
        let mut files = Vec::new();
        for r in rendered {
            let Some((id, r)) = r? else {
                continue;
            };
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
            files.push(vows_index(&self.ctx.key, &rows).map_err(|e| e.to_string())?);
        }
        let mut p = match self.ctx.publisher.lock() {
            Ok(p) => p,
            Err(p) => p.into_inner(),
        };
        for (path, bytes) in files {
            p.put(&path, &bytes).map_err(|e| format!("{path}: {e}"))?;
        }
        Ok(())
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
