//! The vow ledger as a source of change ([`super::Source`]): a vow's page, chain and reading
//! after each write to its chain, the index pages, sitemap and cards when a vow is taken, and
//! the pages whose window state changes when a window boundary passes.
//!
//! Each vow's state ([`VowDocs`]) is kept between renders (least recently rendered evicted
//! first), so a report-in costs one record plus copying bytes. Model interpretations of
//! readings are read from the store (never from the published site); when one is missing or
//! stale the source asks for it through the hook it was given, once per chain position.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use conduct_core::canonical::sha256_hex;
use conduct_core::signing::ServiceKey;
use conduct_core::vow::interpret::{Interpretation, InterpretationInput};
use conduct_core::vow::windows::next_boundary;
use conduct_core::vow::VowKey;
use conduct_indexer::state::kept::{ResumePoint, ResumePoints};
use conduct_indexer::tree::Tree;
use conduct_indexer::vows::{ChainHead, Records, VowReader, VowRow};
use serde_json::Value;

use super::{Integrated, Known, Source};
use crate::discovery::{card_files, card_files_bound, CardBinding};
use crate::parallel::map_on_every_core;
use crate::publish::Publisher;
use crate::vow_html::{feed_path, vow_html_path};
use crate::vows::{
    interpretation_html_path, interpretation_path, links_doc_tail, links_html_path, links_path,
    vow_path, Files, TailRecord, VowDocs,
};
use crate::vows_index::{IndexInput, IndexState};
use crate::warm::{Warm, Warmer};
use crate::RenderError;

/// Asks for language-model interpretations, once per render round: for each, vow `.0`'s
/// reading at chain position `.1`. It keeps the asks before it returns
/// (`Store::put_readings_asked`), so a restart asks again for those a crash left unanswered:
/// the integration mark may pass their renders once the round is written.
/// An error (the asks could not be kept) fails the round, which is retried.
pub type AskInterpretation =
    Box<dyn Fn(Vec<(String, u64, InterpretationInput)>) -> Result<(), String> + Send>;

/// Most bytes of vow state kept between renders.
const CACHE_BYTES: usize = 64 << 20;

/// Vows rendered at once by the startup render (bounds the memory of rendered files).
const STARTUP_CHUNK: usize = 256;

/// Records read at once while checking the integration mark.
const MARK_READ: usize = 4096;

/// How long before an integration mark's instant a kept model reading is still re-rendered at
/// a restart (its render may have been waiting when the mark was written).
const READING_MARGIN: u64 = 600;

/// Vows read at once for the index of vows: a whole number of sitemap files.
const INDEX_READ: usize = 64 * crate::vows_index::SITEMAP_VOWS;

/// Bytes of index files a restart renders before it writes them (the whole index of a million
/// vows is about a gigabyte).
pub const INDEX_BATCH_BYTES: usize = 16 << 20;

/// Write `files` (a startup render's), naming the file that failed.
fn put_all(publisher: &mut Publisher, files: Files) -> Result<(), RenderError> {
    publisher
        .put_many(files)
        .map(|_| ())
        .map_err(|e| RenderError::Input(format!("writing the vows' files: {e}")))
}

/// The vows source.
pub struct VowSource {
    key: ServiceKey,
    public_url: String,
    reader: Arc<VowReader>,
    /// Asks a configured model for readings; `None`: rule-based readings only.
    ask: Option<AskInterpretation>,
    /// The site's fixed HTML pages (from the route table), for the sitemap.
    pages: Vec<String>,
    /// The next window boundary of every vow rendered or listed, in time order (keys, not
    /// strings: with `next_of` and `verified`, 153 bytes a vow in resident memory at a
    /// million vows, against 314 with strings; BENCHMARKS.md section 7).
    boundaries: BTreeSet<(u64, VowKey)>,
    next_of: HashMap<VowKey, u64>,
    asked: HashMap<VowKey, u64>,
    verified: HashMap<VowKey, usize>,
    /// For each vow rendered since the last integration mark, the log size read before that
    /// render: its files show every record of it below that size ([`Source::integrated`]).
    rendered_at: HashMap<VowKey, u64>,
    cache: DocsCache,
    /// Where the index of vows stands (`None`: read every vow on its next render).
    index: Option<IndexState>,
    /// The tree this source renders into, read back at a restart ([`VowSource::with_tree`]).
    site: Option<conduct_indexer::tree::SharedTree>,
    /// The service key as a verifier, for the pages read back.
    pinned: Option<conduct_core::signing::PinnedKey>,
    /// Where vows' resume points are kept, and what this renderer is called there
    /// ([`VowSource::with_resume_points`]).
    resume: Option<(Arc<dyn ResumePoints>, String)>,
    /// The log size of the newest integration mark: every file showing a record below it is
    /// on disk, so only a resume point ending below it is taken.
    durable_below: u64,
    /// Bytes of index files a restart renders before it writes them ([`Source::render_index`]).
    index_batch: usize,
    /// Warms the files of a round's vows not in memory before they render ([`warm_cold`]).
    warmer: Warmer,
}

impl VowSource {
    /// The source's name ([`super::SourceId`]).
    pub const NAME: &'static str = "vows";

    /// The source for the vows `reader` reads; `ask` when a language model writes readings;
    /// `pages` are the site's fixed HTML pages the sitemap lists (from the route table).
    pub fn new(
        key: ServiceKey,
        public_url: &str,
        reader: Arc<VowReader>,
        ask: Option<AskInterpretation>,
        pages: Vec<String>,
    ) -> VowSource {
        VowSource {
            key,
            public_url: public_url.to_owned(),
            reader,
            ask,
            pages,
            boundaries: BTreeSet::new(),
            next_of: HashMap::new(),
            asked: HashMap::new(),
            verified: HashMap::new(),
            rendered_at: HashMap::new(),
            cache: DocsCache::default(),
            index: None,
            site: None,
            pinned: None,
            resume: None,
            durable_below: 0,
            index_batch: INDEX_BATCH_BYTES,
            warmer: Warmer::default(),
        }
    }

    /// Keep each vow's state at its chain's last page boundary in `points`, under the name
    /// `render` (what the rendered bytes depend on besides the state, and the tree they are
    /// written to: a point another renderer kept is not taken), and start a vow's render
    /// there when it is not in memory: after a restart or an eviction, a render reads the
    /// chain's tail, not the whole chain. A point is taken only when the integration mark
    /// says the chain pages before it are on disk (the record it ends with is below the
    /// mark), so a full render, a first start or a crash before the pages reached the disk
    /// reads the whole chain and writes them.
    pub fn with_resume_points(mut self, points: Arc<dyn ResumePoints>, render: &str) -> VowSource {
        self.resume = Some((points, render.to_owned()));
        self
    }

    /// Keep the resume points `rendered` passed. They are derived, so one not kept only costs
    /// a later render the whole chain: a failure is logged, not returned.
    fn keep_resume_points(&self, rendered: Vec<(String, ResumePoint)>) {
        if let Some((points, render)) = &self.resume {
            if let Err(e) = points.put_many(render, &rendered) {
                tracing::warn!(error = %e, "vows' resume points not kept");
            }
        }
    }

    /// Write a restart's index files every `bytes` (about; [`INDEX_BATCH_BYTES`] unless set).
    pub fn with_index_batch(mut self, bytes: usize) -> VowSource {
        self.index_batch = bytes.max(1);
        self
    }

    /// Render into the tree at `site`, and read back what an earlier run published there:
    /// a restart with an integration mark resumes the index of vows from its full pages and
    /// sitemap files ([`IndexState::resume`]) rather than reading every vow and re-signing
    /// every page, and a vow's first render in this process trusts the records its signed
    /// page vouches for ([`vouched`]) rather than verifying each record's signature again.
    pub fn with_tree(mut self, site: conduct_indexer::tree::SharedTree) -> VowSource {
        self.site = Some(site);
        self.pinned = conduct_core::signing::PinnedKey::parse(&self.key.vkey()).ok();
        self
    }

    /// The inputs every vow's render shares, at `now`.
    fn shared(&self, now: u64) -> Shared<'_> {
        Shared {
            key: &self.key,
            public_url: &self.public_url,
            reader: &self.reader,
            model: self.ask.is_some(),
            now,
            tree: self.site.as_deref().zip(self.pinned.as_ref()),
            resume: self.resume.as_ref().map(|(p, r)| (&**p, r.as_str())),
            durable_below: self.durable_below,
        }
    }

    /// Vow `id`'s next window boundary is at `next` (an id that is not a vow's names nothing
    /// to schedule).
    fn schedule(&mut self, id: &str, next: u64) {
        let Some(key) = VowKey::parse(id) else {
            return;
        };
        if let Some(old) = self.next_of.insert(key, next) {
            self.boundaries.remove(&(old, key));
        }
        self.boundaries.insert((next, key));
    }

    /// The files that change when a vow is taken, each given to `keep` unless `known` says it
    /// is published already: the signed index `/vows` (its head, and a page when one fills),
    /// its HTML twins and the sitemap. Reads the vows after the last complete sitemap file,
    /// not every vow; after a start or a failure, every vow once, [`INDEX_READ`] at a time.
    fn index_files(
        &mut self,
        known: &dyn Fn(&str) -> Option<String>,
        keep: &mut dyn FnMut(String, Vec<u8>) -> Result<(), RenderError>,
    ) -> Result<(), RenderError> {
        let mut state = self.index.take().unwrap_or_default();
        let mut fixed = self.pages.clone();
        fixed.extend(
            crate::docs::published()
                .iter()
                .map(|d| format!("/library/{}", d.stem())),
        );
        let input = IndexInput {
            key: &self.key,
            public_url: &self.public_url,
            fixed: &fixed,
        };
        loop {
            let rows = self.reader.taken_after(state.after(), INDEX_READ)?;
            let last = rows.len() < INDEX_READ;
            for (path, bytes) in state.files(&input, &rows)? {
                // Before the last read the head and the sitemap index are not final.
                if (last || !state.is_head(&path))
                    && known(&path).is_none_or(|sha| sha != sha256_hex(&bytes))
                {
                    keep(path, bytes)?;
                }
            }
            if last {
                break;
            }
        }
        self.index = Some(state);
        Ok(())
    }

    /// The cards (`/card?key=`) of every lookup key that names one of `vows`: its vow id, its
    /// agent name and its wallet, each listing every vow that key names, and every npub ever
    /// bound to one of them (each showing the vow its latest binding names).
    fn card_files(&self, vows: &[VowRow]) -> Result<Files, RenderError> {
        let mut lookups = BTreeSet::new();
        let mut npubs = BTreeSet::new();
        for v in vows {
            lookups.insert(v.vow_id.clone());
            lookups.insert(v.agent.clone());
            if let Some(w) = &v.wallet {
                lookups.insert(w.to_ascii_lowercase());
            }
            npubs.extend(self.reader.npubs_ever_of(&v.vow_id)?);
        }
        let mut files = Vec::new();
        // The cards are independent: on every core (six million files at a million vows).
        let (reader, key, url) = (&self.reader, &self.key, self.public_url.as_str());
        let cards = map_on_every_core(
            lookups.into_iter().collect(),
            |lookup| card_files(key, url, &lookup, &reader.matching(&lookup)?),
            || Err(RenderError::Input("a render thread panicked".into())),
        );
        for c in cards {
            files.extend(c?);
        }
        for npub in npubs {
            files.extend(npub_card_files(
                &self.key,
                &self.public_url,
                &self.reader,
                &npub,
            )?);
        }
        Ok(files)
    }
}

/// The card of `npub`: the vow its latest binding names, or the negative card when it is bound
/// nowhere here.
pub fn npub_card_files(
    key: &ServiceKey,
    public_url: &str,
    reader: &VowReader,
    npub: &str,
) -> Result<Files, RenderError> {
    let bound = reader.binding(npub)?;
    let vow = match &bound {
        Some(b) => reader.vow(&b.vow_id)?,
        None => None,
    };
    let binding = bound.as_ref().map(|b| CardBinding {
        npub: &b.npub,
        pubkey: &b.pubkey,
        vow_id: &b.vow_id,
        log_index: b.log_index,
    });
    let vows: Vec<VowRow> = vow.into_iter().collect();
    card_files_bound(key, public_url, npub, &vows, binding)
}

/// The model interpretation kept in the store for vow `vow` and the chain position it covers.
fn kept_interpretation(reader: &VowReader, vow: &str) -> Option<(u64, Value)> {
    let (seq, text) = reader.reading(vow).ok()??;
    Some((seq, serde_json::from_str(&text).ok()?))
}

/// One vow rendered.
struct RenderedVow {
    head: u64,
    /// Its model interpretation (if any) covers fewer entries than the chain has.
    stale: bool,
    files: Files,
    next: u64,
    input: InterpretationInput,
    verified: usize,
    /// The state at the last page boundary this render passed, to keep.
    resume_point: Option<ResumePoint>,
}

/// What one vow's render needs besides the shared inputs.
struct Job {
    id: String,
    docs: Option<VowDocs>,
    trusted: usize,
}

/// The shared inputs of rendering vows.
struct Shared<'a> {
    key: &'a ServiceKey,
    public_url: &'a str,
    reader: &'a VowReader,
    model: bool,
    now: u64,
    /// The tree and the key to read its pages back with.
    tree: Option<(&'a dyn Tree, &'a conduct_core::signing::PinnedKey)>,
    /// Where resume points are kept, and this renderer's name there.
    resume: Option<(&'a dyn ResumePoints, &'a str)>,
    /// A resume point is taken only when the record it ends with is below this log size.
    durable_below: u64,
}

/// How many leading records of vow `id`'s chain (`read`, from chain position `from`) the page
/// an earlier run published at `site` vouches for: signed by the service key (`pinned`), its
/// chain verified, with `length + 1` records, and the store's record at position `length`
/// has the page's `head_sha256`. By their `prev` links (which the render still checks) the
/// records before it are the ones that page's render verified. 0 when anything does not
/// check: every record's signature is verified again.
fn vouched(
    site: &dyn Tree,
    pinned: &conduct_core::signing::PinnedKey,
    id: &str,
    read: &[(u64, Vec<u8>)],
    from: usize,
) -> usize {
    let vouch = || -> Option<usize> {
        let bytes = site.get(&vow_path(id)).ok()??;
        let page: Value = serde_json::from_slice(&bytes).ok()?;
        conduct_core::signing::verify_snapshot(&page, pinned).ok()?;
        let check = &page["trajectory"]["chain_verification"];
        let records = usize::try_from(check["records"].as_u64()?).ok()?;
        let length = usize::try_from(page["chain"]["length"].as_u64()?).ok()?;
        let (_, leaf) = read.get(length.checked_sub(from)?)?;
        let ok = page["vow_id"] == id
            && check["ok"] == true
            && records == length + 1
            && page["chain"]["head_sha256"].as_str() == Some(sha256_hex(leaf).as_str());
        ok.then_some(records)
    };
    vouch().unwrap_or(0)
}

/// Vow `id`'s state at its resume point and the chain from there, when a resume point is
/// kept, the store's record just before it is the one the state ends with, and that record is
/// below the integration mark (the pages it follows are on disk); `None` (read the whole
/// chain) otherwise. The chain comes through the tree's chain head when its tail starts at the
/// point and follows the state ([`chain_through_tree`]; its first record below the mark), and
/// from the store otherwise.
fn resumed(sh: &Shared<'_>, id: &str) -> Option<(VowDocs, usize, Records)> {
    let (points, render) = sh.resume?;
    let point = points
        .get(id, render)
        .map_err(|e| tracing::warn!(vow = id, error = %e, "resume point not read"))
        .ok()??;
    let from = usize::try_from(point.records).ok()?;
    let docs = VowDocs::resume(sh.key, id, &point.state)
        .map_err(|e| tracing::warn!(vow = id, error = %e, "resume point not taken"))
        .ok()?;
    let follows = Follows {
        hash: docs.track_head_sha256(),
        below: sh.durable_below,
    };
    if docs.records() == from {
        if let Ok(Some(read)) = chain_through_tree(sh, id, from, Some(follows)) {
            return Some((docs, from, read));
        }
    }
    let (_, mut read) = sh.reader.links_from(id, point.records - 1).ok()??;
    if read
        .first()
        .is_none_or(|(index, _)| *index >= sh.durable_below)
    {
        return None;
    }
    // The state ends with the record before its point, or it is not this chain's.
    let ends = read.first().map(|(_, leaf)| sha256_hex(leaf));
    if docs.records() != from || ends.as_deref() != Some(docs.track_head_sha256()) {
        tracing::warn!(
            vow = id,
            "a resume point does not end where the chain does; not taken"
        );
        return None;
    }
    read.remove(0);
    count_chain_read("store");
    Some((docs, from, read))
}

/// What the first record of a chain read must follow: the record hashing to `hash`, and it
/// must be below log size `below`.
#[derive(Clone, Copy)]
struct Follows<'a> {
    hash: &'a str,
    below: u64,
}

/// Count a render's chain read by where its records came from.
fn count_chain_read(records: &'static str) {
    conduct_indexer::metrics::metrics()
        .chain_reads
        .with([std::borrow::Cow::Borrowed(records)])
        .inc();
}

/// Vow `id`'s records from chain position `from` to its head: through the tree's chain head
/// when it holds them ([`chain_through_tree`]), from the store otherwise. `None`: no such vow.
fn chain_from(sh: &Shared<'_>, id: &str, from: usize) -> Result<Option<Records>, RenderError> {
    if let Some(read) = chain_through_tree(sh, id, from, None)? {
        return Ok(Some(read));
    }
    count_chain_read("store");
    Ok(sh.reader.links_from(id, from as u64)?.map(|(_, read)| read))
}

/// Vow `id`'s records from chain position `from` to its head, read from the tail of the chain
/// head the tree holds (`vow/<id>/chain.json`, one small file) and the store's records after
/// it. A vow whose records are not in the page cache then costs one file read, where the store
/// costs a random read a record: the log is in log order, a vow's records are scattered
/// through it (BENCHMARKS.md section 18).
///
/// Taken only when the tail starts at `from`, holds a record, and is the store's: the `prev`
/// of each record is the hash of the one before it, and the last one's hash is the store's
/// head hash, or the `prev` of the store's next record, with as many records as the store's
/// chain has. By the hashes, every record is then the store's byte for byte; the file may be
/// older than the store (its records after it come from the store), not the service's, or cut
/// short, and each only costs the store's read (`None`). With `follows`, the first record must
/// also follow that record and be below that log size.
fn chain_through_tree(
    sh: &Shared<'_>,
    id: &str,
    from: usize,
    follows: Option<Follows<'_>>,
) -> Result<Option<Records>, RenderError> {
    let Some((site, _)) = sh.tree else {
        return Ok(None);
    };
    let Ok(Some(bytes)) = site.get(&links_path(id)) else {
        return Ok(None);
    };
    let Some((tail_from, tail)) = links_doc_tail(id, &bytes) else {
        return Ok(None);
    };
    let Some(first) = tail.first() else {
        return Ok(None);
    };
    let follows_ok =
        follows.is_none_or(|f| first.prev.as_deref() == Some(f.hash) && first.log_index < f.below);
    if tail_from != from || !follows_ok {
        return Ok(None);
    }
    let end = from + tail.len();
    let Some((head, after)) = sh.reader.links_from(id, end as u64)? else {
        return Ok(None);
    };
    if !is_store_tail(&tail, &after, &head, end) {
        return Ok(None);
    }
    count_chain_read("tree");
    let mut read = Vec::with_capacity(tail.len() + after.len());
    read.extend(tail.into_iter().map(|r| (r.log_index, r.leaf)));
    read.extend(after);
    Ok(Some(read))
}

/// Whether `tail` (chain positions up to `end`, exclusive) is the store's chain just before
/// `after` (its records from `end` to `head`): the chain has `end + after.len()` records, and
/// from the head back, each record of `tail` hashes to what the record after it names.
fn is_store_tail(tail: &[TailRecord], after: &Records, head: &ChainHead, end: usize) -> bool {
    if end as u64 + after.len() as u64 != head.seq + 1 {
        return false;
    }
    let mut named = match after.first() {
        Some((_, leaf)) => TailRecord::parse(leaf).and_then(|r| r.prev),
        None => Some(head.hash.clone()),
    };
    for record in tail.iter().rev() {
        if named.as_deref() != Some(sha256_hex(&record.leaf).as_str()) {
            return false;
        }
        named.clone_from(&record.prev);
    }
    true
}

/// Warm the tree's files of the vows in `jobs` that are not in memory, all at once
/// ([`crate::warm`]): the chain head each render reads, the page a first render in this
/// process reads back ([`vouched`]), and the inodes of the files a render replaces. A vow in
/// memory is skipped (its last render touched its files), and so is a lone cold vow: its render
/// waits on the same reads either way.
fn warm_cold(warmer: &mut Warmer, site: &dyn Tree, jobs: &[Job]) {
    let cold = || jobs.iter().filter(|j| j.docs.is_none());
    if cold().nth(1).is_none() {
        return;
    }
    warmer.warm(site, || {
        cold()
            .flat_map(|Job { id, trusted, .. }| {
                let page = if *trusted == 0 {
                    Warm::Bytes
                } else {
                    Warm::Inode
                };
                [
                    (links_path(id), Warm::Bytes),
                    (vow_path(id), page),
                    (interpretation_path(id), Warm::Inode),
                    (vow_html_path(id), Warm::Inode),
                    (links_html_path(id), Warm::Inode),
                    (interpretation_html_path(id), Warm::Inode),
                    (feed_path(id), Warm::Inode),
                ]
            })
            .collect()
    });
}

/// Bring `job.docs` (a vow's kept state; `None` to start over, from its resume point when one
/// is kept) up to date with the store and render the vow. Only the chain's tail is read when
/// the kept state holds the rest; the first `job.trusted` records were verified by this
/// process before. `None` when there is no such vow.
fn render_vow(sh: &Shared<'_>, job: Job) -> Result<Option<(VowDocs, RenderedVow)>, RenderError> {
    let Job { id, docs, trusted } = job;
    // A vow's first render in this process: what its published page vouches for.
    let first = docs.is_none() && trusted == 0;
    // Where the state comes from: memory, the resume point, or the whole chain.
    let (docs, from, read, source) = match docs {
        Some(d) => {
            let from = d.tail_from();
            let Some(read) = chain_from(sh, &id, from)? else {
                return Ok(None);
            };
            (Some(d), from, read, "memory")
        }
        None => match resumed(sh, &id) {
            Some((d, from, read)) => (Some(d), from, read, "resume_point"),
            None => {
                let Some(read) = chain_from(sh, &id, 0)? else {
                    return Ok(None);
                };
                (None, 0, read, "whole_chain")
            }
        },
    };
    conduct_indexer::metrics::metrics()
        .vow_reads
        .with([std::borrow::Cow::Borrowed(source)])
        .inc();
    let fail = |e: RenderError| RenderError::Input(format!("vow {id}: {e}"));
    let trusted = match (first, sh.tree) {
        (true, Some((site, pinned))) => vouched(site, pinned, &id, &read, from),
        _ => trusted,
    };
    let mut docs = match docs {
        Some(d) => d,
        None => {
            let (index, leaf) = read
                .first()
                .ok_or_else(|| RenderError::Input(format!("vow {id}: no vow record")))?;
            VowDocs::new(sh.key, &id, (*index, leaf), trusted > 0).map_err(fail)?
        }
    };
    let mut files = docs.extend(sh.key, &read, from, trusted).map_err(fail)?;
    let resume_point = docs
        .take_resume_point()
        .map(|(records, state)| ResumePoint {
            records: records as u64,
            state,
        });
    let kept = sh
        .model
        .then(|| kept_interpretation(sh.reader, &id))
        .flatten();
    let interpretation = |input: &InterpretationInput| {
        kept.as_ref().map_or_else(
            || Interpretation::rule_based_value(input, sh.model),
            |(_, v)| v.clone(),
        )
    };
    let r = docs
        .render(sh.key, sh.public_url, &read, from, sh.now, interpretation)
        .map_err(fail)?;
    files.extend(r.files);
    let head = docs.head_seq();
    let rendered = RenderedVow {
        head,
        stale: kept.is_none_or(|(s, _)| s < head),
        files,
        next: r.windows.next_boundary,
        input: r.input,
        verified: docs.verified(),
        resume_point,
    };
    Ok(Some((docs, rendered)))
}

impl Source for VowSource {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn render_all(&mut self, publisher: &mut Publisher, now: u64) -> Result<(), RenderError> {
        self.index = None;
        // The publisher skips what is on disk already.
        let mut index = Vec::new();
        self.index_files(&|_| None, &mut |path, bytes| {
            index.push((path, bytes));
            if index.len() >= STARTUP_CHUNK {
                put_all(publisher, std::mem::take(&mut index))?;
            }
            Ok(())
        })?;
        put_all(publisher, index)?;
        if let Some(state) = &self.index {
            // The pages of an earlier layout of the index (library/MIRRORS.md, "Upgrading").
            for dir in ["vows", "sitemap"] {
                publisher
                    .prune(dir, |path| state.is_current(path))
                    .map_err(|e| RenderError::Input(format!("pruning {dir}/: {e}")))?;
            }
        }
        let rows = self.reader.all()?;
        for chunk in rows.chunks(STARTUP_CHUNK) {
            put_all(publisher, self.card_files(chunk)?)?;
        }
        let sh = self.shared(now);
        let mut scheduled = Vec::with_capacity(rows.len());
        for chunk in rows.chunks(STARTUP_CHUNK) {
            let jobs: Vec<Job> = chunk
                .iter()
                .map(|r| Job {
                    id: r.vow_id.clone(),
                    docs: None,
                    trusted: 0,
                })
                .collect();
            let rendered = map_on_every_core(
                jobs,
                |job| render_vow(&sh, job).map(|r| r.map(|(_, r)| r)),
                || Err(RenderError::Input("a render thread panicked".into())),
            );
            let mut points = Vec::new();
            // The chunk's files in one put, so they are written on every core too (a put
            // names the file at fault, and so its vow).
            let mut files = Vec::new();
            for (row, r) in chunk.iter().zip(rendered) {
                let Some(r) = r? else { continue };
                files.extend(r.files);
                scheduled.push((row.vow_id.clone(), r.next, r.verified));
                points.extend(r.resume_point.map(|p| (row.vow_id.clone(), p)));
            }
            publisher
                .put_many(files)
                .map_err(|e| RenderError::Input(format!("vows: {e}")))?;
            self.keep_resume_points(points);
        }
        for (id, next, verified) in scheduled {
            if let Some(key) = VowKey::parse(&id) {
                self.verified.insert(key, verified);
            }
            self.schedule(&id, next);
        }
        Ok(())
    }

    fn render(
        &mut self,
        keys: &BTreeSet<String>,
        index: bool,
        now: u64,
        known: &Known<'_>,
    ) -> Result<Files, RenderError> {
        let jobs: Vec<Job> = keys
            .iter()
            .map(|id| Job {
                id: id.clone(),
                docs: self.cache.take(id),
                trusted: VowKey::parse(id)
                    .and_then(|k| self.verified.get(&k).copied())
                    .unwrap_or(0),
            })
            .collect();
        let ids: Vec<String> = jobs.iter().map(|j| j.id.clone()).collect();
        // Read before the vows are: every record below it is in what they read.
        let size = if ids.is_empty() {
            0
        } else {
            self.reader.log_size()?
        };
        if let Some(site) = &self.site {
            warm_cold(&mut self.warmer, site.as_ref(), &jobs);
        }
        let sh = self.shared(now);
        // The vows of a batch are independent: render them on every core.
        let rendered = map_on_every_core(
            jobs,
            |job| render_vow(&sh, job),
            || Err(RenderError::Input("a render thread panicked".into())),
        );
        let mut files = Vec::new();
        let mut failed = None;
        let mut asks = Vec::new();
        let mut points = Vec::new();
        for (id, r) in ids.into_iter().zip(rendered) {
            let (docs, mut r) = match r {
                Ok(Some(x)) => x,
                Ok(None) => continue,
                Err(e) => {
                    failed.get_or_insert(e);
                    continue;
                }
            };
            let w = docs.weight();
            let key = VowKey::parse(&id);
            if let Some(key) = key {
                self.rendered_at.insert(key, size);
                self.verified.insert(key, r.verified);
            }
            points.extend(r.resume_point.take().map(|p| (id.clone(), p)));
            self.cache.put(id.clone(), docs, w);
            files.extend(r.files);
            self.schedule(&id, r.next);
            let asked = key.and_then(|k| self.asked.get(&k));
            if r.stale && self.ask.is_some() && asked != Some(&r.head) {
                if let Some(key) = key {
                    self.asked.insert(key, r.head);
                }
                asks.push((id, r.head, r.input));
            }
        }
        self.keep_resume_points(points);
        if let Some(ask) = self.ask.as_ref().filter(|_| !asks.is_empty()) {
            let ids: Vec<String> = asks.iter().map(|(id, _, _)| id.clone()).collect();
            if let Err(e) = ask(asks) {
                // Not asked: the retry asks again.
                for key in ids.iter().filter_map(|id| VowKey::parse(id)) {
                    self.asked.remove(&key);
                }
                return Err(RenderError::Input(e));
            }
        }
        if let Some(e) = failed {
            return Err(e);
        }
        if index {
            self.index_files(known, &mut |path, bytes| {
                files.push((path, bytes));
                Ok(())
            })?;
            let batch: Vec<VowRow> = keys
                .iter()
                .filter_map(|k| self.reader.vow(k).transpose())
                .collect::<Result<_, _>>()?;
            files.extend(self.card_files(&batch)?);
        }
        Ok(files)
    }

    fn take_due(&mut self, now: u64, limit: usize) -> Vec<String> {
        let mut due = Vec::new();
        while due.len() < limit {
            match self.boundaries.first() {
                Some((t, _)) if *t <= now => {}
                _ => break,
            }
            if let Some((_, v)) = self.boundaries.pop_first() {
                self.next_of.remove(&v);
                due.push(v.to_string());
            }
        }
        due
    }

    fn next_due(&self) -> Option<u64> {
        self.boundaries.first().map(|(t, _)| *t)
    }

    /// The vows the log changed after the mark, and those whose window state changed since
    /// its instant (every vow without a mark). Every vow's next window boundary is scheduled
    /// from its clock, without rendering it.
    fn backlog(&mut self, since: Option<&Integrated>) -> Result<Vec<String>, RenderError> {
        if let Some(mark) = since {
            self.durable_below = self.durable_below.max(mark.log_size);
        }
        let now = conduct_indexer::clock::service_now();
        let mut keys = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let tree = self.site.as_deref().zip(self.pinned.as_ref());
        if let (Some(mark), Some((site, pinned)), None) = (since, tree, &self.index) {
            let reader = &self.reader;
            let log_index_of = |id: &str| reader.vow(id).ok().flatten().map(|v| v.log_index);
            self.index = IndexState::resume(site, pinned, log_index_of, mark.log_size);
            tracing::info!(
                pages = self.index.as_ref().map_or(0, IndexState::pages),
                "index of vows resumed from the tree"
            );
        }
        if let Some(mark) = since {
            // Model readings are kept outside the log: those of the last minutes before the
            // mark too (their render may have been waiting when it was written).
            let mut read = self
                .reader
                .interpreted_since(mark.as_of.saturating_sub(READING_MARGIN))?;
            // And those asked for but not kept: their renders ask again.
            if self.ask.is_some() {
                read.extend(self.reader.readings_asked()?);
            }
            let mut from = mark.log_size;
            loop {
                let touched = self.reader.touched_since(from, INDEX_READ)?;
                let full = touched.len() == INDEX_READ;
                from = touched.last().map_or(from, |(_, at)| at + 1);
                for (id, _) in touched {
                    if seen.insert(id.clone()) {
                        keys.push(id);
                    }
                }
                if !full {
                    break;
                }
            }
            for id in read {
                if seen.insert(id.clone()) {
                    keys.push(id);
                }
            }
        }
        let mut after = String::new();
        loop {
            let clocks = self.reader.clocks_after(&after, INDEX_READ)?;
            for c in &clocks {
                let next = next_boundary(c.start, c.cadence, now);
                let passed =
                    since.is_none_or(|m| next_boundary(c.start, c.cadence, m.as_of) < next);
                if passed && !seen.contains(&c.vow_id) {
                    keys.push(c.vow_id.clone());
                }
                self.schedule(&c.vow_id, next);
            }
            match clocks.last() {
                Some(last) if clocks.len() == INDEX_READ => after = last.vow_id.clone(),
                _ => break,
            }
        }
        Ok(keys)
    }

    /// Checked against the store: the first record from `from` on that changes a vow whose
    /// last render did not read it (or the log's size, when there is none).
    fn integrated(&mut self, from: u64) -> Result<Option<u64>, RenderError> {
        // The size first: every record below it is in the rows read after.
        let size = self.reader.log_size()?;
        let mut from = from;
        while from < size {
            let touched = self.reader.touched_since(from, MARK_READ)?;
            let full = touched.len() == MARK_READ;
            for (id, at) in &touched {
                if *at >= size {
                    return Ok(Some(size));
                }
                let read = VowKey::parse(id).and_then(|k| self.rendered_at.get(&k));
                if read.is_none_or(|read| read <= at) {
                    return Ok(Some(*at));
                }
            }
            match touched.last() {
                Some((_, at)) if full => from = at + 1,
                _ => break,
            }
        }
        Ok(Some(size))
    }

    /// A render that read below the mark shows nothing a later check asks about.
    fn marked(&mut self, log_size: u64) {
        self.rendered_at.retain(|_, read| *read > log_size);
        self.durable_below = self.durable_below.max(log_size);
    }

    fn render_index(
        &mut self,
        _now: u64,
        known: &Known<'_>,
        put: &mut dyn FnMut(Files) -> Result<(), RenderError>,
    ) -> Result<(), RenderError> {
        let (mut batch, mut bytes, most) = (Vec::new(), 0, self.index_batch);
        self.index_files(known, &mut |path, b| {
            bytes += b.len();
            batch.push((path, b));
            if bytes >= most {
                bytes = 0;
                put(std::mem::take(&mut batch))?;
            }
            Ok(())
        })?;
        put(batch)
    }

    fn render_backlog(
        &mut self,
        keys: &BTreeSet<String>,
        now: u64,
        known: &Known<'_>,
    ) -> Result<Files, RenderError> {
        let mut files = self.render(keys, false, now, known)?;
        let rows: Vec<VowRow> = keys
            .iter()
            .filter_map(|k| self.reader.vow(k).ok().flatten())
            .collect();
        files.extend(self.card_files(&rows)?);
        Ok(files)
    }

    fn forget(&mut self, keys: &BTreeSet<String>) {
        // The index's files may be behind what was kept too: read every vow next time.
        self.index = None;
        for k in keys {
            let _ = self.cache.take(k);
        }
    }
}

/// Vows' kept state, least recently rendered evicted first (in O(log n): the ticks are kept
/// in order beside the map). A vow not here is read whole from the store on its next render.
struct DocsCache<D = VowDocs> {
    docs: HashMap<String, (D, u64, usize)>,
    /// The ids of `docs` by the tick they were put at, oldest first.
    by_tick: BTreeMap<u64, String>,
    weight: usize,
    tick: u64,
}

impl<D> Default for DocsCache<D> {
    fn default() -> Self {
        DocsCache {
            docs: HashMap::new(),
            by_tick: BTreeMap::new(),
            weight: 0,
            tick: 0,
        }
    }
}

impl<D> DocsCache<D> {
    fn take(&mut self, id: &str) -> Option<D> {
        let (docs, tick, w) = self.docs.remove(id)?;
        self.by_tick.remove(&tick);
        self.weight -= w;
        Some(docs)
    }

    /// Keep `docs` (weighing `w` bytes) as the most recently rendered.
    fn put(&mut self, id: String, docs: D, w: usize) {
        let _ = self.take(&id);
        self.tick += 1;
        self.weight += w;
        self.by_tick.insert(self.tick, id.clone());
        self.docs.insert(id, (docs, self.tick, w));
        while self.weight > CACHE_BYTES {
            let Some((_, oldest)) = self.by_tick.pop_first() else {
                break;
            };
            if let Some((_, _, w)) = self.docs.remove(&oldest) {
                self.weight -= w;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_evicts_the_least_recently_put_first() {
        let half = CACHE_BYTES / 2;
        let mut c = DocsCache::<u8>::default();
        c.put("a".into(), 1, half);
        c.put("b".into(), 2, half);
        c.put("a".into(), 3, half); // a is now the newest
        c.put("c".into(), 4, half); // over: b (the oldest) goes
        assert_eq!(c.take("b"), None);
        assert_eq!(c.take("a"), Some(3));
        assert_eq!((c.docs.len(), c.by_tick.len(), c.weight), (1, 1, half));
        c.put("d".into(), 5, CACHE_BYTES + 1); // heavier than the cache: nothing is kept
        assert_eq!((c.docs.len(), c.by_tick.len(), c.weight), (0, 0, 0));
    }
}
