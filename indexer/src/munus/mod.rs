//! The quest board in the store: the job that appends a board record
//! (`conduct_core::munus::record`) through the [`crate::ledger::Sequencer`], re-checking the
//! board's rules inside the append transaction against every board record already committed
//! (so "first come" and "one claim per vow per UTC day" hold under concurrent requests, as a
//! vow chain's head does for report-ins), [`MunusReader`] for the renderer and the api, the
//! [`PaymentFlags`] they share, and the [`keeper`] that does what no request triggers.

pub mod keeper;

use std::collections::HashMap;
use std::sync::Mutex;

use conduct_core::munus::record::{BoardRecord, Payment};
use conduct_core::munus::state::{Board, PaymentFlag};
use conduct_core::munus::Quest;
use conduct_core::signing::ServiceKey;

use crate::ledger::append::{BoardIndex, Signatures};
use crate::ledger::{Job, Refused};

pub use crate::store::munus::MunusReader;

/// The payment flags known when a job runs (`tx`, lower-case, -> what is known; absent is
/// never read: no answer).
pub type Flags = HashMap<String, PaymentFlag>;

/// Each recorded payment's flag as re-read from the chain (`tx`, lower-case), shared by the
/// task that re-reads them, the renderer and the board's job: the last read (`true`, `false`
/// or `None` for no answer) with the last definite answer beside it ([`PaymentFlag`]). A
/// payment never re-read yet reads `None`: unknown, never false.
///
/// The page and the decisions read the same value: a row reads `null` while the chain does
/// not answer and its quest takes no claim then; a quest the chain confirmed settled stays
/// done through the outage ("could not look" is never "not done"; library/MUNUS.md).
#[derive(Debug, Default)]
pub struct PaymentFlags {
    inner: Mutex<Flags>,
}

impl PaymentFlags {
    /// What is known of `tx` now.
    pub fn get(&self, tx: &str) -> PaymentFlag {
        let m = conduct_core::sync::lock(&self.inner);
        m.get(&tx.to_ascii_lowercase()).copied().unwrap_or_default()
    }

    /// Every flag known now.
    pub fn snapshot(&self) -> Flags {
        conduct_core::sync::lock(&self.inner).clone()
    }

    /// Record a read of `tx` (`None`: the chain did not answer); true when the last read
    /// changed.
    pub fn set(&self, tx: &str, read: Option<bool>) -> bool {
        let mut m = conduct_core::sync::lock(&self.inner);
        let e = m.entry(tx.to_ascii_lowercase()).or_default();
        let changed = e.read != read;
        e.read = read;
        if read.is_some() {
            e.definite = read;
        }
        changed
    }
}

/// What is known of `p` in `flags`.
pub fn flag_of(flags: &Flags, p: &Payment) -> PaymentFlag {
    flags
        .get(&p.tx.to_ascii_lowercase())
        .copied()
        .unwrap_or_default()
}

/// The job that appends `rec`, refused (nothing written) when the board at the record's
/// instant does not allow it:
///
/// - a claim: [`Board::check_claim`] (`Refused::Conflict(slug)` with the refusal's slug), or
///   `munus-lapse-pending` when its quest has a lapse due that is not recorded yet (append the
///   board's `due_lapses` first);
/// - a delivery: [`Board::check_submit`] must name the delivery's claim;
/// - a lapse: it must be one of the board's due lapses, exactly;
/// - a payment: its transaction must not be recorded already (`munus-payment-recorded`).
///
/// Claim and delivery signatures are accepted once (`munus-replayed-signature`, checked first).
pub fn board_job(key: ServiceKey, rec: BoardRecord, quests: Vec<Quest>, flags: Flags) -> Job {
    Job::build(move |tx, index| {
        let conflict = |s: &str| Err(Refused::Conflict(s.to_owned()));
        // A replayed signature is named as such before any rule of the board is asked (and
        // before the board is read: a replay costs one lookup).
        let sig = match &rec {
            BoardRecord::Claim(c) => Some(c.wallet_signature.to_ascii_lowercase()),
            BoardRecord::Delivery(d) => Some(d.wallet_signature.to_ascii_lowercase()),
            _ => None,
        };
        if let Some(sig) = &sig {
            if tx.signature_used(Signatures::Munus, sig)? {
                return conflict("munus-replayed-signature");
            }
        }
        let records = tx.board_records()?;
        let flag = |p: &Payment| flag_of(&flags, p);
        let board = Board::fold(&quests, &records, &flag, rec.at());
        let signature = match &rec {
            BoardRecord::Claim(c) => {
                // Only a signed vow's own wallet claims (verify-log checks the same offline).
                tx.require_sworn(&c.vow_id, &c.wallet, "munus")?;
                if board.due_lapses.iter().any(|l| l.quest_id == c.quest_id) {
                    return conflict("munus-lapse-pending");
                }
                if let Err(r) = board.check_claim(&c.quest_id, &c.vow_id, c.at) {
                    return conflict(r.slug());
                }
                Some(c.wallet_signature.to_ascii_lowercase())
            }
            BoardRecord::Delivery(d) => {
                // Each delivery is a permanent leaf: a claim takes a bounded number a day.
                let day = conduct_core::time::utc_day(d.at);
                let today = records
                    .iter()
                    .filter(|(_, r)| {
                        matches!(r, BoardRecord::Delivery(x)
                            if x.claim == d.claim && conduct_core::time::utc_day(x.at) == day)
                    })
                    .count();
                if today >= conduct_core::munus::MAX_DELIVERIES_PER_DAY {
                    return conflict("munus-delivery-daily-limit");
                }
                match board.check_submit(&d.quest_id, &d.vow_id) {
                    Ok(claim) if claim == d.claim => {}
                    Ok(_) => return conflict("munus-not-claimed"),
                    Err(r) => return conflict(r.slug()),
                }
                Some(d.wallet_signature.to_ascii_lowercase())
            }
            BoardRecord::Lapse(l) => {
                if !board.due_lapses.contains(l) {
                    return conflict("munus-lapse-not-due");
                }
                None
            }
            BoardRecord::Payment(_) => None,
        };
        // A payment settles the claim live at its own position in the log, read here inside
        // the append transaction (a claim that landed meanwhile is seen).
        let rec = match rec.clone() {
            BoardRecord::Payment(mut p) => {
                p.claim = board.quest(&p.quest_id).and_then(|q| match &q.status {
                    conduct_core::munus::state::Status::Claimed(c) => Some(c.log_index),
                    _ => None,
                });
                BoardRecord::Payment(p)
            }
            other => other,
        };
        let leaf = rec.leaf(&key, index).map_err(|e| Refused::Invalid(e.0))?;
        let row = BoardIndex {
            log_index: index,
            quest_id: rec.quest_id(),
            kind: rec.type_name(),
            tx: match &rec {
                BoardRecord::Payment(p) => Some(p.tx.to_ascii_lowercase()),
                _ => None,
            },
            leaf: &leaf,
        };
        if !tx.put_board_record(&row)? {
            return conflict("munus-payment-recorded");
        }
        if let Some(sig) = signature {
            if !tx.use_signature(Signatures::Munus, &sig, index)? {
                return conflict("munus-replayed-signature");
            }
        }
        Ok(leaf)
    })
}
