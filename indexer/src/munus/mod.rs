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
use conduct_core::munus::state::{Board, PaymentFlag, SubmitRefusal};
use conduct_core::munus::Quest;
use conduct_core::signing::ServiceKey;

use crate::ledger::append::{BoardIndex, OwnerRecord, Signatures};
use crate::ledger::{Job, Refusal};

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
/// - a claim: its vow must be sworn with the claim's wallet ([`crate::ledger::append::Append::require_sworn`]),
///   [`Board::check_claim`] must allow it ([`Refusal::MunusClaim`]), and its quest may have no
///   lapse due that is not recorded yet ([`Refusal::MunusLapsePending`]: append the board's
///   `due_lapses` first);
/// - a delivery: [`Board::check_submit`] must name the delivery's claim
///   ([`Refusal::MunusSubmit`]), within [`conduct_core::munus::MAX_DELIVERIES_PER_DAY`] a day
///   ([`Refusal::MunusDeliveryDailyLimit`]);
/// - a lapse: it must be one of the board's due lapses, exactly ([`Refusal::MunusLapseNotDue`]);
/// - a payment: its transaction must not be recorded already ([`Refusal::MunusPaymentRecorded`]).
///
/// Claim and delivery signatures are accepted once ([`Refusal::MunusReplayedSignature`],
/// checked first).
pub fn board_job(key: ServiceKey, rec: BoardRecord, quests: Vec<Quest>, flags: Flags) -> Job {
    Job::build(move |tx, index| {
        // A replayed signature is named as such before any rule of the board is asked (and
        // before the board is read: a replay costs one lookup).
        let sig = match &rec {
            BoardRecord::Claim(c) => Some(c.wallet_signature.to_ascii_lowercase()),
            BoardRecord::Delivery(d) => Some(d.wallet_signature.to_ascii_lowercase()),
            _ => None,
        };
        if let Some(sig) = &sig {
            if tx.signature_used(Signatures::Munus, sig)? {
                return Err(Refusal::MunusReplayedSignature);
            }
        }
        let records = tx.board_records()?;
        let flag = |p: &Payment| flag_of(&flags, p);
        let board = Board::fold(&quests, &records, &flag, rec.at());
        let signature = match &rec {
            BoardRecord::Claim(c) => {
                // Only a signed vow's own wallet claims (verify-log checks the same offline).
                tx.require_sworn(&c.vow_id, &c.wallet, OwnerRecord::Munus)?;
                if board.due_lapses.iter().any(|l| l.quest_id == c.quest_id) {
                    return Err(Refusal::MunusLapsePending);
                }
                board
                    .check_claim(&c.quest_id, &c.vow_id, c.at)
                    .map_err(Refusal::MunusClaim)?;
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
                    return Err(Refusal::MunusDeliveryDailyLimit);
                }
                match board.check_submit(&d.quest_id, &d.vow_id) {
                    Ok(claim) if claim == d.claim => {}
                    Ok(_) => return Err(Refusal::MunusSubmit(SubmitRefusal::NotClaimed)),
                    Err(r) => return Err(Refusal::MunusSubmit(r)),
                }
                Some(d.wallet_signature.to_ascii_lowercase())
            }
            BoardRecord::Lapse(l) => {
                if !board.due_lapses.contains(l) {
                    return Err(Refusal::MunusLapseNotDue);
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
        let leaf = rec.leaf(&key, index).map_err(|e| Refusal::Invalid(e.0))?;
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
            return Err(Refusal::MunusPaymentRecorded);
        }
        if let Some(sig) = signature {
            if !tx.use_signature(Signatures::Munus, &sig, index)? {
                return Err(Refusal::MunusReplayedSignature);
            }
        }
        Ok(leaf)
    })
}
