//! The chain as a source of change ([`super::Source`]): the registry view, each tool's page,
//! the `/who` records, `/rh` and `/opensea`.
//!
//! Keys: `tool:<id>` (a tool whose events or check changed: its page and its creator's
//! `/who`), `who:<handle>` (a handle whose vows changed; an npub when it was bound). The index
//! pages are `/registry`, `/rh` and `/opensea`. While a chain is followed the index also falls
//! due every minute, so `cached_seconds_ago` keeps telling the truth when the chain stops
//! answering.
//!
//! The pages of one chain change are published together: whatever key a render is for, every
//! tool whose events or check differ from what this source last put on its page is rendered
//! too (its page, and the `/who` of its creator, the former one for a tool a reorganisation
//! removed), in the same write as the index. A change asks for several keys in several
//! messages (ARCHITECTURE.md, "The chain path"); the first render that sees it carries all its
//! pages, so `/registry` is never a render ahead of a tool page or a `/who` record (within one
//! write, files are written side by side, not in order).

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use conduct_core::signing::ServiceKey;
use conduct_core::sync::lock;
use conduct_indexer::chain::registry::Tool;
use conduct_indexer::chain::{ChainConfig, ChainStatus};
use conduct_indexer::state::chain::{ChainIndex, Check};
use conduct_indexer::vows::{VowReader, VowRow};

use super::{Integrated, Known, Source};
use crate::parallel::map_on_every_core;
use crate::publish::Publisher;
use crate::registry::{
    absent_tool_files, opensea_files, registry_files, rh_files, tool_files, who_files,
    RegistryInput,
};
use crate::vows::Files;
use crate::RenderError;

/// Vows read at once while listing a restart's backlog.
const BACKLOG_READ: usize = 32_768;

/// Seconds between re-renders of the index while a chain is followed (its `as_of`,
/// `indexed_to_block` and `cached_seconds_ago` stay current; tool changes render at once).
const HEARTBEAT: u64 = 60;

/// The key of a tool's documents.
pub fn tool_key(id: u64) -> String {
    format!("tool:{id}")
}

/// `/who` pages rendered at once by the startup render (bounds the memory of rendered files).
const WHO_CHUNK: usize = 256;

/// The key of a handle's `/who` record.
pub fn who_key(handle: &str) -> String {
    format!("who:{handle}")
}

/// The registry source.
pub struct RegistrySource {
    key: ServiceKey,
    public_url: String,
    chain: Option<ChainConfig>,
    db: Option<Arc<dyn ChainIndex>>,
    status: Arc<Mutex<ChainStatus>>,
    reader: Arc<VowReader>,
    due: Option<u64>,
    /// Per tool, the state its page and its creator's `/who` were last rendered from; `None`
    /// before the first render, which takes the state as published (after a restart the
    /// backlog brings the tree up to date).
    shown: Option<HashMap<u64, Shown>>,
    /// What the last render changed in `shown` (each tool's entry before it), put back by
    /// [`Source::forget`] when its files could not be written.
    last: Vec<(u64, Option<Shown>)>,
}

/// The state a tool's page was rendered from.
#[derive(Debug, Clone, PartialEq)]
struct Shown {
    tool: Tool,
    check: Option<Check>,
}

/// What one render built.
struct Pages<'t> {
    /// Tool pages and `/who` records first, the index last.
    files: Files,
    /// The tools whose pages it rendered.
    rendered: Vec<&'t Tool>,
    /// The ids whose pages it rendered as absent.
    gone: Vec<u64>,
}

/// The state tool `t` is rendered from now.
fn shown_of(t: &Tool, checks: &HashMap<u64, Check>) -> Shown {
    Shown {
        tool: t.clone(),
        check: checks.get(&t.tool_id).cloned(),
    }
}

impl RegistrySource {
    /// The source's name ([`super::SourceId`]).
    pub const NAME: &'static str = "registry";

    /// The source over `db` (none when no chain is configured), whose follower publishes its
    /// state in `status`; vows are read through `reader` (creator records, `/who`).
    pub fn new(
        key: ServiceKey,
        public_url: &str,
        chain: Option<ChainConfig>,
        db: Option<Arc<dyn ChainIndex>>,
        status: Arc<Mutex<ChainStatus>>,
        reader: Arc<VowReader>,
    ) -> RegistrySource {
        RegistrySource {
            key,
            public_url: public_url.to_owned(),
            chain,
            db,
            status,
            reader,
            due: None,
            shown: None,
            last: Vec::new(),
        }
    }

    fn tools(&self) -> Result<(Vec<Tool>, HashMap<u64, Check>), RenderError> {
        match &self.db {
            Some(db) => Ok((db.tools()?, db.checks()?)),
            None => Ok((Vec::new(), HashMap::new())),
        }
    }

    /// Signed vows whose wallet is `wallet`.
    fn sworn(&self, wallet: &str) -> Vec<VowRow> {
        self.reader
            .matching(wallet)
            .unwrap_or_default()
            .into_iter()
            .filter(|v| v.wallet.as_deref().map(str::to_ascii_lowercase).as_deref() == Some(wallet))
            .collect()
    }

    /// The `/who` files of `handle`.
    fn who(
        &self,
        handle: &str,
        tools: &[Tool],
        checks: &HashMap<u64, Check>,
    ) -> Result<Files, RenderError> {
        let h = crate::discovery::normalize_key(handle);
        let mut vows: Vec<VowRow> = self
            .reader
            .matching(&h)?
            .into_iter()
            .filter(|v| {
                v.agent == h
                    || v.wallet.as_deref().map(str::to_ascii_lowercase).as_deref() == Some(&h)
            })
            .collect();
        // An npub names the vow its latest binding names (library/NOSTR.md).
        if let Some(b) = self.reader.binding(&h)? {
            vows.extend(self.reader.vow(&b.vow_id)?);
        }
        let created: Vec<&Tool> = tools.iter().filter(|t| t.creator == h).collect();
        who_files(&self.key, &h, &vows, &created, checks)
    }

    fn render_keys(
        &mut self,
        keys: &BTreeSet<String>,
        index: bool,
        now: u64,
    ) -> Result<Files, RenderError> {
        self.last.clear();
        // The empty key (see `take_due`) asks for the index.
        let index = index || keys.contains("");
        let (tools, checks) = self.tools()?;
        let mut shown = self.shown.take().unwrap_or_else(|| {
            tools
                .iter()
                .map(|t| (t.tool_id, shown_of(t, &checks)))
                .collect()
        });
        let built = self.pages(&shown, keys, index, now, &tools, &checks);
        if let Ok(p) = &built {
            // Every page is built: the state they show is now what was shown.
            for id in &p.gone {
                self.last.push((*id, shown.remove(id)));
            }
            for t in &p.rendered {
                let before = shown.insert(t.tool_id, shown_of(t, &checks));
                self.last.push((t.tool_id, before));
            }
            if index {
                self.due = self.chain.is_some().then_some(now + HEARTBEAT);
            }
        }
        self.shown = Some(shown);
        built.map(|p| p.files)
    }

    /// The files of `keys` (and of the index when `index`), with the page of every tool whose
    /// state differs from `shown` and the `/who` of its creators.
    fn pages<'t>(
        &self,
        shown: &HashMap<u64, Shown>,
        keys: &BTreeSet<String>,
        index: bool,
        now: u64,
        tools: &'t [Tool],
        checks: &HashMap<u64, Check>,
    ) -> Result<Pages<'t>, RenderError> {
        let status = lock(&self.status).clone();
        let by_id: HashMap<u64, &Tool> = tools.iter().map(|t| (t.tool_id, t)).collect();
        // The tools asked for, and every tool whose page is behind the state: a change whose
        // own keys have not arrived yet is published whole with this render.
        let mut ids: BTreeSet<u64> = keys
            .iter()
            .filter_map(|k| k.strip_prefix("tool:").and_then(|i| i.parse::<u64>().ok()))
            .collect();
        for t in tools {
            let same = shown
                .get(&t.tool_id)
                .is_some_and(|s| s.tool == *t && s.check.as_ref() == checks.get(&t.tool_id));
            if !same {
                ids.insert(t.tool_id);
            }
        }
        ids.extend(shown.keys().filter(|id| !by_id.contains_key(id)));
        let mut handles: BTreeSet<String> = keys
            .iter()
            .filter_map(|k| k.strip_prefix("who:"))
            .map(str::to_owned)
            .collect();
        let sworn = |w: &str| self.sworn(w);
        let input = RegistryInput {
            key: &self.key,
            public_url: &self.public_url,
            chain: self.chain.as_ref(),
            status: &status,
            tools,
            checks,
            sworn: &sworn,
            now,
        };
        let mut files = Vec::new();
        let mut rendered: Vec<&Tool> = Vec::new();
        let mut gone = Vec::new();
        for id in &ids {
            // The creator it was shown under: its `/who` no longer lists a tool that is gone.
            if let Some(before) = shown.get(id) {
                handles.insert(before.tool.creator.clone());
            }
            match by_id.get(id) {
                Some(t) => {
                    files.extend(tool_files(&input, t)?);
                    handles.insert(t.creator.clone());
                    rendered.push(*t);
                }
                // Gone from the chain as indexed (a reorganisation, another chain): its
                // page says so rather than keep a registration that is not there.
                None => {
                    files.extend(absent_tool_files(&input, *id)?);
                    gone.push(*id);
                }
            }
        }
        for h in &handles {
            if keys.contains(&who_key(h)) {
                // A vow of this handle changed: so may the creator records of its tools.
                for t in tools.iter().filter(|t| t.creator == *h) {
                    if !ids.contains(&t.tool_id) {
                        files.extend(tool_files(&input, t)?);
                        rendered.push(t);
                    }
                }
            }
        }
        // The records are independent: on every core (a million at a render from nothing).
        let records = map_on_every_core(
            handles.iter().collect(),
            |h| self.who(h, tools, checks),
            || Err(RenderError::Input("a render thread panicked".into())),
        );
        for r in records {
            files.extend(r?);
        }
        if index {
            files.extend(registry_files(&input)?);
            files.extend(rh_files(&self.key, &self.public_url, self.chain.as_ref())?);
            files.extend(opensea_files(&self.key, self.chain.as_ref())?);
        }
        Ok(Pages {
            files,
            rendered,
            gone,
        })
    }

    /// Every tool's key and every vow handle's (agent name, wallet) `/who` key.
    fn every_key(&self) -> Result<Vec<String>, RenderError> {
        let (tools, _) = self.tools()?;
        let mut keys: Vec<String> = tools.iter().map(|t| tool_key(t.tool_id)).collect();
        let mut handles = BTreeSet::new();
        for v in self.reader.all()? {
            handles.insert(v.agent);
            if let Some(w) = v.wallet {
                handles.insert(w.to_ascii_lowercase());
            }
        }
        handles.extend(self.reader.bindings()?.into_iter().map(|b| b.npub));
        keys.extend(handles.iter().map(|h| who_key(h)));
        Ok(keys)
    }
}

impl Source for RegistrySource {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn render_all(&mut self, publisher: &mut Publisher, now: u64) -> Result<(), RenderError> {
        // The tools and the index first, then the `/who` pages a chunk at a time: the memory
        // is a chunk's files, not every agent's (1.3 GB at 100,000 vows when rendered at once).
        let (tools, who): (Vec<String>, Vec<String>) = self
            .every_key()?
            .into_iter()
            .partition(|k| k.starts_with("tool:"));
        let chunks = std::iter::once((tools, true))
            .chain(who.chunks(WHO_CHUNK).map(|c| (c.to_vec(), false)));
        for (keys, index) in chunks {
            let keys: BTreeSet<String> = keys.into_iter().collect();
            let files = self.render_keys(&keys, index, now)?;
            publisher
                .put_many(files)
                .map_err(|e| RenderError::Input(format!("registry: {e}")))?;
        }
        Ok(())
    }

    fn render(
        &mut self,
        keys: &BTreeSet<String>,
        index: bool,
        now: u64,
        _known: &Known<'_>,
    ) -> Result<Files, RenderError> {
        self.render_keys(keys, index, now)
    }

    fn take_due(&mut self, now: u64, _limit: usize) -> Vec<String> {
        match self.due {
            Some(t) if t <= now => {
                self.due = None;
                // The empty key names no document: it asks for the index alone.
                vec![String::new()]
            }
            _ => Vec::new(),
        }
    }

    fn next_due(&self) -> Option<u64> {
        self.due
    }

    /// The last render's files were not written: what it rendered is behind again, so the
    /// next render (the retry) renders it.
    fn forget(&mut self, _keys: &BTreeSet<String>) {
        let last = std::mem::take(&mut self.last);
        if let Some(shown) = &mut self.shown {
            for (id, before) in last {
                match before {
                    Some(b) => shown.insert(id, b),
                    None => shown.remove(&id),
                };
            }
        }
    }

    fn backlog(&mut self, since: Option<&Integrated>) -> Result<Vec<String>, RenderError> {
        let Some(mark) = since else {
            return self.every_key();
        };
        // The chain's part whole (its tools and their creators' pages: the follower's
        // renders are not marked), and the handles the log changed after the mark: the agents
        // and wallets of vows taken since, the npubs bound since.
        let (tools, _) = self.tools()?;
        let mut keys: Vec<String> = tools.iter().map(|t| tool_key(t.tool_id)).collect();
        let mut handles: BTreeSet<String> = tools
            .iter()
            .map(|t| t.creator.to_ascii_lowercase())
            .collect();
        let mut after = mark.log_size.checked_sub(1);
        loop {
            let rows = self.reader.taken_after(after, BACKLOG_READ)?;
            for v in &rows {
                handles.insert(v.agent.clone());
                if let Some(w) = &v.wallet {
                    handles.insert(w.to_ascii_lowercase());
                }
            }
            match rows.last() {
                Some(last) if rows.len() == BACKLOG_READ => after = Some(last.log_index),
                _ => break,
            }
        }
        handles.extend(self.reader.npubs_bound_since(mark.log_size)?);
        keys.extend(handles.iter().map(|h| who_key(h)));
        Ok(keys)
    }

    fn render_backlog(
        &mut self,
        keys: &BTreeSet<String>,
        now: u64,
        _known: &Known<'_>,
    ) -> Result<Files, RenderError> {
        self.render_keys(keys, false, now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use conduct_indexer::chain::registry::{EventKind, RegistryEvent};
    use conduct_indexer::store::Store;
    use serde_json::Value;

    const CREATOR: &str = "0x00000000000000000000000000000000000000aa";

    fn hash(n: u64) -> String {
        format!("0x{n:064x}")
    }

    fn event(block: u64, tool: u64, kind: EventKind) -> RegistryEvent {
        RegistryEvent {
            block_number: block,
            block_hash: hash(block),
            log_index: 0,
            tx_hash: hash(block + 1000),
            tool_id: tool,
            kind,
        }
    }

    fn registered(block: u64, tool: u64) -> RegistryEvent {
        let kind = EventKind::Registered {
            creator: CREATOR.into(),
            predicate: "0x0000000000000000000000000000000000000000".into(),
            uri: format!("https://t.example/.well-known/ai-tool/t{tool}.json"),
            hash: hash(tool),
        };
        event(block, tool, kind)
    }

    /// The paths of `files`, in the order they are written.
    fn paths(files: &Files) -> Vec<&str> {
        files.iter().map(|(p, _)| p.as_str()).collect()
    }

    /// The tool ids the creator's `/who` record in `files` lists, and its position.
    fn who_lists(files: &Files) -> Option<(usize, Vec<u64>)> {
        let path = format!("{}.json", crate::registry::who_stem(CREATOR));
        let at = files.iter().position(|(p, _)| *p == path)?;
        let doc: Value = serde_json::from_slice(&files[at].1).unwrap();
        let ids = doc["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["toolId"].as_u64().unwrap())
            .collect();
        Some((at, ids))
    }

    fn position(files: &Files, path: &str) -> Option<usize> {
        files.iter().position(|(p, _)| p == path)
    }

    /// The follower asks for a change's pages in several messages (each tool's key, then each
    /// removed tool's creator), and the render thread may take the first alone, or fall due
    /// for its index before any: every render that sees a change publishes the tool pages and
    /// the `/who` records of that change with the index, and before it.
    #[test]
    fn the_pages_of_one_chain_change_are_published_together() {
        let dir = tempfile::tempdir().unwrap();
        let db: Arc<dyn ChainIndex> =
            Arc::new(conduct_indexer::store::chain::SqliteChain::open(dir.path(), "test").unwrap());
        let store = Store::open(dir.path()).unwrap();
        let reader = Arc::new(VowReader::open(&store).unwrap());
        let key = ServiceKey::from_seed(&[7; 32], "test");
        let status = Arc::new(Mutex::new(ChainStatus::default()));
        let mut source = RegistrySource::new(
            key,
            "https://conduct.example",
            None,
            Some(db.clone()),
            status,
            reader,
        );
        let known = |_: &str| None;
        let render = |s: &mut RegistrySource, keys: &[&str]| {
            let keys: BTreeSet<String> = keys.iter().map(|k| (*k).to_owned()).collect();
            s.render(&keys, true, 1_000, &known).unwrap()
        };
        db.apply(&[registered(3, 1), registered(12, 2)], 20, &hash(20), 100)
            .unwrap();
        let files = render(&mut source, &["tool:1", "tool:2"]);
        assert_eq!(who_lists(&files).unwrap().1, vec![1, 2]);

        // A reorganisation removes tool 2; its key alone renders its creator's record too.
        db.rewind(Some((10, hash(10))), 101).unwrap();
        let files = render(&mut source, &["tool:2"]);
        let (who_at, listed) = who_lists(&files).expect("the creator's /who with the tool key");
        assert_eq!(listed, vec![1]);
        let index_at = position(&files, "registry.json").expect("the index");
        assert!(who_at < index_at, "{:?}", paths(&files));
        assert!(position(&files, "registry/tool/2.json").unwrap() < index_at);
        // Nothing changed since: a render names only what it is asked for.
        let files = render(&mut source, &[""]);
        assert!(who_lists(&files).is_none(), "{:?}", paths(&files));
        assert!(position(&files, "registry/tool/1.json").is_none());

        // The index falls due before the follower's keys arrive: it carries the change.
        let updated = EventKind::Metadata {
            uri: "https://t.example/.well-known/ai-tool/t1.json".into(),
            hash: hash(77),
        };
        db.apply(
            &[registered(14, 3), event(15, 1, updated)],
            20,
            &hash(21),
            102,
        )
        .unwrap();
        let files = render(&mut source, &[""]);
        let (who_at, listed) = who_lists(&files).expect("the creator's /who with the index");
        assert_eq!(listed, vec![1, 3]);
        let index_at = position(&files, "registry.json").unwrap();
        assert!(who_at < index_at, "{:?}", paths(&files));
        for page in ["registry/tool/1.json", "registry/tool/3.json"] {
            assert!(position(&files, page).unwrap() < index_at, "{page}");
        }
        let page: Value =
            serde_json::from_slice(&files[position(&files, "registry/tool/1.json").unwrap()].1)
                .unwrap();
        assert_eq!(page["tool"]["manifestHash"], hash(77));

        // A render whose files were not written is forgotten: the retry renders them again.
        db.rewind(Some((10, hash(10))), 103).unwrap();
        let files = render(&mut source, &[""]);
        assert_eq!(who_lists(&files).unwrap().1, vec![1]);
        source.forget(&BTreeSet::from([String::new()]));
        let files = render(&mut source, &[""]);
        assert_eq!(who_lists(&files).expect("retried").1, vec![1]);
        assert!(position(&files, "registry/tool/3.json").is_some());
        assert!(position(&files, "registry/tool/1.json").is_some());
    }
}
