//! The quest board as a source of change ([`super::Source`]; library/MUNUS.md, ARCHITECTURE.md
//! "Where the next pieces plug in"): the list `/munus` and each quest's page `/munus/<id>`
//! (built by [`crate::munus`]).
//!
//! Each render reads the operator's two files from the data directory (`quests.json`,
//! `paid.json`: a missing file is no quests or no rows, a malformed one gives the list's
//! `claims_file_error` / `paid_file_error`, never a failed render), the board's records from
//! the store, and folds them with each payment's flag as last re-read from the chain, at the
//! `now` the engine passes.
//!
//! Keys: `quest:<id>` (a quest whose claim, delivery, lapse or payment changed); the empty key
//! names the list alone. Every render re-renders the list too (a claim changes the counts).
//! A live claim lapses at an instant of its own (its last activity + 14 days): that quest's
//! key falls due then, so its page and the list flip to `open` with no request arriving.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use conduct_core::munus::state::{Board, Status};
use conduct_core::munus::{is_quest_id, Quest};
use conduct_core::signing::ServiceKey;
use conduct_indexer::munus::keeper::{read_paid, read_quests};
use conduct_indexer::munus::{MunusReader, PaymentFlags};

use super::{Integrated, Known, Source};
use crate::munus::{gone_quest_files, list_doc, list_files, quest_files, quest_stem, MunusInput};
use crate::publish::Publisher;
use crate::vows::Files;
use crate::RenderError;

/// The key of quest `id`'s documents.
pub fn quest_key(id: &str) -> String {
    format!("quest:{id}")
}

/// The quest id a key names, when it names one.
fn quest_of(key: &str) -> Option<&str> {
    key.strip_prefix("quest:").filter(|id| is_quest_id(id))
}

/// What one render reads: the board at `now` and the files' errors.
struct Loaded {
    quests: Vec<Quest>,
    board: Board,
    claims_file_error: Option<String>,
    paid_file_error: Option<String>,
    /// Every quest id the log's board records name.
    recorded: BTreeSet<String>,
}

/// The quest board source.
pub struct MunusSource {
    key: ServiceKey,
    public_url: String,
    data_dir: PathBuf,
    reader: Arc<MunusReader>,
    flags: Arc<PaymentFlags>,
    /// Quest id -> the instant its live claim lapses, as of the last render.
    lapses: BTreeMap<String, u64>,
}

impl MunusSource {
    /// The source's name ([`super::SourceId`]).
    pub const NAME: &'static str = "munus";

    /// The source over the operator's files in `data_dir` ([`conduct_core::munus::QUESTS_FILE`], [`conduct_core::munus::PAID_FILE`]),
    /// the board's records read through `reader`, and the payment flags in `flags` (kept
    /// current by the task that re-reads them from the chain).
    pub fn new(
        key: ServiceKey,
        public_url: &str,
        data_dir: &Path,
        reader: Arc<MunusReader>,
        flags: Arc<PaymentFlags>,
    ) -> MunusSource {
        MunusSource {
            key,
            public_url: public_url.to_owned(),
            data_dir: data_dir.to_owned(),
            reader,
            flags,
            lapses: BTreeMap::new(),
        }
    }

    fn load(&self, now: u64) -> Result<Loaded, RenderError> {
        let quests = read_quests(&self.data_dir);
        let paid = read_paid(&self.data_dir);
        let records = self.reader.records()?;
        let recorded = records
            .iter()
            .map(|(_, r)| r.quest_id().to_owned())
            .collect();
        // The same flags the board's job decides on: rows show the last read (null while
        // the chain does not answer), a settled quest stays done through an outage.
        let flag = |p: &conduct_core::munus::record::Payment| self.flags.get(&p.tx);
        let board = Board::fold(&quests.items, &records, &flag, now);
        Ok(Loaded {
            claims_file_error: quests.error(),
            paid_file_error: paid.error(),
            quests: quests.items,
            board,
            recorded,
        })
    }

    /// The files of `keys` and of the list at `now`; `known` says which files exist already
    /// (a quest that left the file without being retired gets a tombstone only over a page).
    fn render_keys(
        &mut self,
        keys: &BTreeSet<String>,
        now: u64,
        known: &Known<'_>,
    ) -> Result<Files, RenderError> {
        let loaded = self.load(now)?;
        let input = MunusInput {
            key: &self.key,
            public_url: &self.public_url,
            board: &loaded.board,
            claims_file_error: loaded.claims_file_error.as_deref(),
            paid_file_error: loaded.paid_file_error.as_deref(),
            now,
        };
        let list = list_doc(&input);
        let mut files = Vec::new();
        for id in keys.iter().filter_map(|k| quest_of(k)) {
            if let Some(f) = quest_files(&input, &list, id)? {
                files.extend(f);
            } else if loaded.board.retired.iter().any(|r| r == id) {
                files.extend(gone_quest_files(&input, &list, id, true)?);
            } else if known(&format!("{}.json", quest_stem(id))).is_some() {
                files.extend(gone_quest_files(&input, &list, id, false)?);
            }
        }
        files.extend(list_files(&input, &list)?);
        self.lapses = loaded
            .board
            .quests
            .iter()
            .filter_map(|q| match &q.status {
                Status::Claimed(c) => c.lapses_at().map(|at| (q.quest.id.clone(), at)),
                _ => None,
            })
            .collect();
        Ok(files)
    }

    /// The empty key (the list), then every quest the operator's file names (retired ones
    /// included: their pages become tombstones) or the log's records name.
    fn every_key(&self) -> Result<Vec<String>, RenderError> {
        let loaded = self.load(0)?;
        let mut ids: BTreeSet<String> = loaded.quests.iter().map(|q| q.id.clone()).collect();
        ids.extend(loaded.recorded);
        let mut keys = vec![String::new()];
        keys.extend(
            ids.iter()
                .filter(|id| is_quest_id(id))
                .map(|id| quest_key(id)),
        );
        Ok(keys)
    }
}

impl Source for MunusSource {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn render_all(&mut self, publisher: &mut Publisher, now: u64) -> Result<(), RenderError> {
        let keys: BTreeSet<String> = self.every_key()?.into_iter().collect();
        let files = {
            let known = |path: &str| publisher.sha256_of(path);
            self.render_keys(&keys, now, &known)?
        };
        publisher
            .put_many(files)
            .map_err(|e| RenderError::Input(format!("munus: {e}")))?;
        Ok(())
    }

    fn render(
        &mut self,
        keys: &BTreeSet<String>,
        _index: bool,
        now: u64,
        known: &Known<'_>,
    ) -> Result<Files, RenderError> {
        // The list is rendered whatever the keys: every change to a quest changes its counts.
        self.render_keys(keys, now, known)
    }

    fn take_due(&mut self, now: u64, limit: usize) -> Vec<String> {
        let due: Vec<String> = self
            .lapses
            .iter()
            .filter(|(_, at)| **at <= now)
            .take(limit)
            .map(|(id, _)| id.clone())
            .collect();
        for id in &due {
            self.lapses.remove(id);
        }
        due.iter().map(|id| quest_key(id)).collect()
    }

    fn next_due(&self) -> Option<u64> {
        self.lapses.values().min().copied()
    }

    fn forget(&mut self, _keys: &BTreeSet<String>) {}

    fn backlog(&mut self, _since: Option<&Integrated>) -> Result<Vec<String>, RenderError> {
        self.every_key()
    }
}
