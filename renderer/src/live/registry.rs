//! The chain as a source of change ([`super::Source`]): the registry view, each tool's page,
//! the `/who` records, `/rh` and `/opensea`.
//!
//! Keys: `tool:<id>` (a tool whose events or check changed: its page and its creator's
//! `/who`), `who:<handle>` (a handle whose vows changed; an npub when it was bound). The index pages are `/registry`,
//! `/rh` and `/opensea`. While a chain is followed the index also falls due every minute, so
//! `cached_seconds_ago` keeps telling the truth when the chain stops answering.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use conduct_core::signing::ServiceKey;
use conduct_core::sync::lock;
use conduct_indexer::chain::db::{ChainDb, Check};
use conduct_indexer::chain::registry::Tool;
use conduct_indexer::chain::{ChainConfig, ChainStatus};
use conduct_indexer::vows::{VowReader, VowRow};

use super::{Known, Source};
use crate::publish::Publisher;
use crate::registry::{
    absent_tool_files, opensea_files, registry_files, rh_files, tool_files, who_files,
    RegistryInput,
};
use crate::vows::Files;
use crate::RenderError;

/// Seconds between re-renders of the index while a chain is followed (its `as_of`,
/// `indexed_to_block` and `cached_seconds_ago` stay current; tool changes render at once).
const HEARTBEAT: u64 = 60;

/// The key of a tool's documents.
pub fn tool_key(id: u64) -> String {
    format!("tool:{id}")
}

/// The key of a handle's `/who` record.
pub fn who_key(handle: &str) -> String {
    format!("who:{handle}")
}

/// The registry source.
pub struct RegistrySource {
    key: ServiceKey,
    public_url: String,
    chain: Option<ChainConfig>,
    db: Option<Arc<ChainDb>>,
    status: Arc<Mutex<ChainStatus>>,
    reader: Arc<VowReader>,
    due: Option<u64>,
}

impl RegistrySource {
    /// The source over `db` (none when no chain is configured), whose follower publishes its
    /// state in `status`; vows are read through `reader` (creator records, `/who`).
    pub fn new(
        key: ServiceKey,
        public_url: &str,
        chain: Option<ChainConfig>,
        db: Option<Arc<ChainDb>>,
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
        // The empty key (see `take_due`) asks for the index.
        let index = index || keys.contains("");
        let (tools, checks) = self.tools()?;
        let status = lock(&self.status).clone();
        let sworn = |w: &str| self.sworn(w);
        let input = RegistryInput {
            key: &self.key,
            public_url: &self.public_url,
            chain: self.chain.as_ref(),
            status: &status,
            tools: &tools,
            checks: &checks,
            sworn: &sworn,
            now,
        };
        let mut files = Vec::new();
        let by_id: HashMap<u64, &Tool> = tools.iter().map(|t| (t.tool_id, t)).collect();
        let mut handles = BTreeSet::new();
        for k in keys {
            if let Some(id) = k.strip_prefix("tool:").and_then(|i| i.parse::<u64>().ok()) {
                match by_id.get(&id) {
                    Some(t) => {
                        files.extend(tool_files(&input, t)?);
                        handles.insert(t.creator.clone());
                    }
                    // Gone from the chain as indexed (a reorganisation, another chain): its
                    // page says so rather than keep a registration that is not there.
                    None => files.extend(absent_tool_files(&input, id)?),
                }
            } else if let Some(h) = k.strip_prefix("who:") {
                handles.insert(h.to_owned());
            }
        }
        for h in handles {
            if keys.contains(&who_key(&h)) {
                // A vow of this handle changed: so may the creator records of its tools.
                for t in tools.iter().filter(|t| t.creator == h) {
                    files.extend(tool_files(&input, t)?);
                }
            }
            files.extend(self.who(&h, &tools, &checks)?);
        }
        if index {
            files.extend(registry_files(&input)?);
            files.extend(rh_files(&self.key, &self.public_url, self.chain.as_ref())?);
            files.extend(opensea_files(&self.key, self.chain.as_ref())?);
            self.due = self.chain.is_some().then_some(now + HEARTBEAT);
        }
        Ok(files)
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
        "registry"
    }

    fn render_all(&mut self, publisher: &mut Publisher, now: u64) -> Result<(), RenderError> {
        let keys: BTreeSet<String> = self.every_key()?.into_iter().collect();
        let files = self.render_keys(&keys, true, now)?;
        publisher
            .put_many(files)
            .map_err(|e| RenderError::Input(format!("registry: {e}")))?;
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

    fn forget(&mut self, _keys: &BTreeSet<String>) {}

    fn backlog(&mut self) -> Result<Vec<String>, RenderError> {
        self.every_key()
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
