//! The quest board's keeper: the work on the board that no request triggers (library/MUNUS.md,
//! "What runs by itself"). It
//!
//! - imports each new row of the operator's `paid.json` as a payment record in the log;
//! - re-reads every recorded payment's flag from the chain ([`crate::chain::payment`]) into the
//!   shared [`PaymentFlags`]: `true`, `false`, or `None` when the chain did not answer, no
//!   chain is configured, or the record names another chain;
//! - appends the lapse record of each claim idle for 14 days, dated the instant it lapsed.
//!
//! Each step returns the quests whose documents changed, for the caller to re-render. The
//! claim and submit handlers use [`Keeper::append_due_lapses`] too, before a claim.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use conduct_core::munus::record::{BoardRecord, Payment};
use conduct_core::munus::state::Board;
use conduct_core::munus::{
    parse_paid, parse_quests, PaidRow, Parsed, Quest, PAID_FILE, QUESTS_FILE,
};
use conduct_core::signing::ServiceKey;

use super::{board_job, MunusReader, PaymentFlags};
use crate::chain::payment::{check_payment, PaymentQuery};
use crate::chain::rpc::Rpc;
use crate::ledger::{LedgerError, Sequencer};
use crate::store::StoreError;

/// A file as last seen: modification time and length (`None`: absent).
type Seen = Option<(Option<SystemTime>, u64)>;

/// The chain payments are re-read from.
pub struct PaymentChain {
    /// The followed chain's EIP-155 id (a record naming another reads `None`).
    pub chain_id: u64,
    /// Its RPC (with failover).
    pub rpc: Rpc,
}

/// Why a keeper step did not finish (it is retried at the next tick).
#[derive(Debug, thiserror::Error)]
pub enum KeeperError {
    /// Reading the board's records failed.
    #[error("reading the board: {0}")]
    Store(#[from] StoreError),
    /// Appending a record failed.
    #[error("appending a board record: {0}")]
    Ledger(#[from] LedgerError),
}

/// The board's keeper (see the module header). One per service.
pub struct Keeper {
    key: ServiceKey,
    data: PathBuf,
    seq: Arc<Sequencer>,
    reader: Arc<MunusReader>,
    flags: Arc<PaymentFlags>,
    chain: Option<PaymentChain>,
    /// `paid.json` as last imported (modification time and length).
    paid_seen: Mutex<Seen>,
    /// `quests.json` as last seen (modification time and length; `None` inside: absent).
    quests_seen: Mutex<Option<Seen>>,
}

/// The operator's quests (`<data>/quests.json`): none when the file is absent.
pub fn read_quests(data: &Path) -> Parsed<Quest> {
    read_file(&data.join(QUESTS_FILE), parse_quests)
}

/// The operator's payment rows (`<data>/paid.json`): none when the file is absent.
pub fn read_paid(data: &Path) -> Parsed<PaidRow> {
    read_file(&data.join(PAID_FILE), parse_paid)
}

fn read_file<T>(path: &Path, parse: fn(&[u8]) -> Parsed<T>) -> Parsed<T> {
    match std::fs::read(path) {
        Ok(bytes) => parse(&bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Parsed {
            items: Vec::new(),
            errors: Vec::new(),
        },
        Err(e) => Parsed {
            items: Vec::new(),
            errors: vec![format!(
                "{}: could not be read: {e}",
                path.file_name().and_then(|n| n.to_str()).unwrap_or("file")
            )],
        },
    }
}

impl Keeper {
    /// A keeper of the board in `data`, appending through `seq`.
    pub fn new(
        key: ServiceKey,
        data: &Path,
        seq: Arc<Sequencer>,
        reader: Arc<MunusReader>,
        flags: Arc<PaymentFlags>,
        chain: Option<PaymentChain>,
    ) -> Keeper {
        Keeper {
            key,
            data: data.to_owned(),
            seq,
            reader,
            flags,
            chain,
            paid_seen: Mutex::new(None),
            quests_seen: Mutex::new(None),
        }
    }

    /// The shared flags.
    pub fn flags(&self) -> &Arc<PaymentFlags> {
        &self.flags
    }

    /// The board at `now` with the flags known now.
    pub fn board(&self, now: u64) -> Result<(Board, Vec<Quest>), StoreError> {
        let quests = read_quests(&self.data).items;
        let records = self.reader.records()?;
        let flags = self.flags.snapshot();
        let flag = |p: &Payment| super::flag_of(&flags, p);
        Ok((Board::fold(&quests, &records, &flag, now), quests))
    }

    /// Append the lapse record of every claim that lapsed at or before `now` (of `quest` only,
    /// when given). Returns the quests that changed. A lapse another caller appended first is
    /// not an error.
    pub async fn append_due_lapses(
        &self,
        now: u64,
        quest: Option<&str>,
    ) -> Result<BTreeSet<String>, KeeperError> {
        let (board, quests) = self.board(now)?;
        let mut changed = BTreeSet::new();
        for lapse in board.due_lapses {
            if quest.is_some_and(|q| q != lapse.quest_id) {
                continue;
            }
            let id = lapse.quest_id.clone();
            let job = board_job(
                self.key.clone(),
                BoardRecord::Lapse(lapse),
                quests.clone(),
                self.flags.snapshot(),
            );
            match self.seq.submit_job(job).await {
                Ok(_) => {
                    changed.insert(id);
                }
                Err(LedgerError::Refused(r)) if r.is_conflict() => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(changed)
    }

    /// The quests of `quests.json` when the file changed (or appeared, or went) since the last
    /// call: every quest it names now, retired ones included (their pages change too);
    /// `None` when it did not change. The first call only takes note of the file (the start
    /// renders every page anyway).
    pub fn quests_changed(&self) -> Option<BTreeSet<String>> {
        let seen = std::fs::metadata(self.data.join(QUESTS_FILE))
            .ok()
            .map(|m| (m.modified().ok(), m.len()));
        let mut last = conduct_core::sync::lock(&self.quests_seen);
        let before = last.replace(seen);
        match before {
            Some(b) if b != seen => Some(
                read_quests(&self.data)
                    .items
                    .into_iter()
                    .map(|q| q.id)
                    .collect(),
            ),
            _ => None,
        }
    }

    /// When the next claim lapses, if one is live.
    pub fn next_lapse(&self, now: u64) -> Result<Option<u64>, StoreError> {
        Ok(self.board(now)?.0.next_lapse())
    }

    /// Import the rows of `paid.json` not recorded yet, when the file changed since the last
    /// import (or at the first call). A row whose transaction is recorded already is skipped.
    /// Returns the quests that changed.
    pub async fn import_paid(&self, now: u64) -> Result<BTreeSet<String>, KeeperError> {
        let path = self.data.join(PAID_FILE);
        let seen = std::fs::metadata(&path)
            .ok()
            .map(|m| (m.modified().ok(), m.len()));
        if seen.is_none() || seen == *conduct_core::sync::lock(&self.paid_seen) {
            return Ok(BTreeSet::new());
        }
        if self.chain.is_none() {
            // A payment no chain can ever re-read would block its quest for good (the log is
            // append-only): rows wait in the file until a [chain] is configured.
            tracing::warn!(
                "paid.json has rows but no [chain] is configured: payments are recorded only \
                 once a chain can re-read them"
            );
            *conduct_core::sync::lock(&self.paid_seen) = seen;
            return Ok(BTreeSet::new());
        }
        let rows = read_paid(&self.data).items;
        let recorded: std::collections::HashSet<String> = self
            .reader
            .records()?
            .into_iter()
            .filter_map(|(_, r)| match r {
                BoardRecord::Payment(p) => Some(p.tx.to_ascii_lowercase()),
                _ => None,
            })
            .collect();
        let mut changed = BTreeSet::new();
        for row in rows {
            if recorded.contains(&row.tx.to_ascii_lowercase()) {
                continue;
            }
            changed.extend(self.record_payment(&row, now).await?);
        }
        *conduct_core::sync::lock(&self.paid_seen) = seen;
        Ok(changed)
    }

    /// Record one payment row (settling the quest's live claim, if any) and read its flag.
    async fn record_payment(&self, row: &PaidRow, now: u64) -> Result<Option<String>, KeeperError> {
        let (board, quests) = self.board(now)?;
        let claim = board.quest(&row.quest).and_then(|q| match &q.status {
            conduct_core::munus::state::Status::Claimed(c) => Some(c.log_index),
            _ => None,
        });
        let payment = Payment {
            quest_id: row.quest.clone(),
            claim,
            to: row.to.clone(),
            amount_scry: row.amount_scry.clone(),
            token: row.token.clone(),
            chain_id: self.chain.as_ref().map_or(0, |c| c.chain_id),
            tx: row.tx.to_ascii_lowercase(),
            at: now,
        };
        let flag = self.read_flag(&payment).await;
        self.flags.set(&payment.tx, flag);
        let job = board_job(
            self.key.clone(),
            BoardRecord::Payment(payment),
            quests,
            self.flags.snapshot(),
        );
        match self.seq.submit_job(job).await {
            Ok(_) => Ok(Some(row.quest.clone())),
            Err(LedgerError::Refused(r)) if r.is_conflict() => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Re-read every recorded payment's flag. Returns the quests whose flag changed.
    pub async fn recheck_flags(&self) -> Result<BTreeSet<String>, KeeperError> {
        let payments: Vec<Payment> = self
            .reader
            .records()?
            .into_iter()
            .filter_map(|(_, r)| match r {
                BoardRecord::Payment(p) => Some(p),
                _ => None,
            })
            .collect();
        let mut changed = BTreeSet::new();
        let mut read: HashMap<String, Option<bool>> = HashMap::new();
        for p in payments {
            let flag = match read.get(&p.tx) {
                Some(f) => *f,
                None => self.read_flag(&p).await,
            };
            read.insert(p.tx.clone(), flag);
            if self.flags.set(&p.tx, flag) {
                changed.insert(p.quest_id.clone());
            }
        }
        Ok(changed)
    }

    /// One payment's flag as the chain says now.
    async fn read_flag(&self, p: &Payment) -> Option<bool> {
        let chain = self.chain.as_ref()?;
        if p.chain_id != chain.chain_id {
            return None;
        }
        let q = PaymentQuery::parse(&p.tx, &p.token, &p.to, &p.amount_scry)?;
        check_payment(&chain.rpc, &q).await
    }
}
