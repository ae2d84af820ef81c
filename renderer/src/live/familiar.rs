//! The familiars as a source of change ([`super::Source`]; library/FAMILIARS.md): the list
//! `/familiars` and each familiar's page `/familiar/<id>` (built by [`crate::familiar`]).
//!
//! Keys: `familiar:<id>` (a familiar just summoned); every render re-renders the list too.
//! Nothing falls due by itself: a familiar's page never changes after its summon.

use std::collections::BTreeSet;
use std::sync::Arc;

use conduct_core::familiar::is_familiar_id;
use conduct_core::signing::ServiceKey;
use conduct_indexer::vows::VowReader;
use serde_json::Value;

use super::{Integrated, Known, Source};
use crate::familiar::{familiar_files, list_files, record_of};
use crate::publish::Publisher;
use crate::vows::Files;
use crate::RenderError;

/// The key of familiar `id`'s page.
pub fn familiar_key(id: &str) -> String {
    format!("familiar:{id}")
}

/// The familiars source.
pub struct FamiliarSource {
    key: ServiceKey,
    reader: Arc<VowReader>,
}

impl FamiliarSource {
    /// The source's name ([`super::SourceId`]).
    pub const NAME: &'static str = "familiars";

    /// The source over the familiars `reader` reads.
    pub fn new(key: ServiceKey, reader: Arc<VowReader>) -> FamiliarSource {
        FamiliarSource { key, reader }
    }

    fn records(&self) -> Result<Vec<Value>, RenderError> {
        Ok(self
            .reader
            .familiars()?
            .iter()
            .filter_map(|r| record_of(&r.leaf))
            .collect())
    }

    /// The pages of `ids` (every one when `None`) and the list.
    fn files(&self, ids: Option<&BTreeSet<&str>>) -> Result<Files, RenderError> {
        let records = self.records()?;
        let mut files = Vec::new();
        for rec in &records {
            let id = rec["familiar_id"].as_str().unwrap_or_default();
            if ids.is_none_or(|s| s.contains(id)) {
                files.extend(familiar_files(&self.key, rec)?);
            }
        }
        files.extend(list_files(&self.key, &records)?);
        Ok(files)
    }
}

impl Source for FamiliarSource {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn render_all(&mut self, publisher: &mut Publisher, _now: u64) -> Result<(), RenderError> {
        let files = self.files(None)?;
        publisher
            .put_many(files)
            .map_err(|e| RenderError::Input(format!("familiars: {e}")))?;
        Ok(())
    }

    fn render(
        &mut self,
        keys: &BTreeSet<String>,
        _index: bool,
        _now: u64,
        _known: &Known<'_>,
    ) -> Result<Files, RenderError> {
        let ids: BTreeSet<&str> = keys
            .iter()
            .filter_map(|k| k.strip_prefix("familiar:"))
            .filter(|id| is_familiar_id(id))
            .collect();
        self.files(Some(&ids))
    }

    fn take_due(&mut self, _now: u64, _limit: usize) -> Vec<String> {
        Vec::new()
    }

    fn next_due(&self) -> Option<u64> {
        None
    }

    fn forget(&mut self, _keys: &BTreeSet<String>) {}

    fn backlog(&mut self, _since: Option<&Integrated>) -> Result<Vec<String>, RenderError> {
        let mut keys = vec![String::new()];
        keys.extend(
            self.reader
                .familiars()?
                .iter()
                .map(|r| familiar_key(&r.familiar_id)),
        );
        Ok(keys)
    }
}
