//! The quest state machine (library/MUNUS.md "States") as a pure fold over the
//! board's log records at an injected instant `now`, with the payment flags re-read from the
//! chain passed in. Open -> claimed (first come; one claim per vow per UTC day) -> a delivery
//! on the record (still claimed) -> done and settled when a payment row the chain confirms
//! (`true`) names the quest. A claim with no activity (the claim or a delivery) for 14 days
//! lapses at exactly that instant, whether or not its lapse record is written yet.

use std::collections::{BTreeMap, HashMap};

use super::record::{BoardRecord, Payment};
use super::{Quest, LAPSE_SECONDS};
use crate::time::utc_day;

/// A live claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveClaim {
    /// Log index of the claim record.
    pub log_index: u64,
    /// The claimant vow.
    pub vow_id: String,
    /// Its wallet (EIP-55).
    pub wallet: String,
    /// Instant of the claim.
    pub at: u64,
    /// Last activity by the claimant (the claim or its latest delivery).
    pub last_activity: u64,
    /// The latest delivery: (log index, link, instant).
    pub delivery: Option<(u64, String, u64)>,
    /// Log index of a payment the operator recorded on this claim: from then on the claim
    /// never lapses (the operator acted; a payment the chain confirms settles the quest, one
    /// that does not match is the operator's to correct, never the worker's loss).
    pub paid: Option<u64>,
}

impl LiveClaim {
    /// The instant it lapses if nothing happens (last activity + 14 days), `None` once a
    /// payment is recorded on it.
    pub fn lapses_at(&self) -> Option<u64> {
        match self.paid {
            Some(_) => None,
            None => Some(self.last_activity.saturating_add(LAPSE_SECONDS)),
        }
    }
}

/// Where a quest stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// Nobody holds it.
    Open,
    /// A vow holds it (with or without a delivery on the record).
    Claimed(LiveClaim),
    /// Closed by a payment the chain confirms: done and settled to a worker.
    Settled {
        /// The claim it settled, when one was live.
        claim: Option<LiveClaim>,
        /// Log index of the payment record.
        payment: u64,
    },
    /// Delivered by the house: done, settled to no one.
    InHouse {
        /// The link to the house's change.
        link: String,
    },
}

impl Status {
    /// The listed `status` (library/MUNUS.md): `open` (a claimed quest is still `open`,
    /// counted under `claimed`) or `done`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Status::Open | Status::Claimed(_) => "open",
            Status::Settled { .. } | Status::InHouse { .. } => "done",
        }
    }
}

/// One quest of the board.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuestState {
    /// Its definition (the operator's file).
    pub quest: Quest,
    /// Where it stands at `now`.
    pub status: Status,
}

/// Why a claim is refused (each its own problem+json type).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimRefusal {
    /// No such quest on the board.
    UnknownQuest,
    /// The operator retired it.
    Retired,
    /// Done (settled, or delivered by the house).
    Done,
    /// Another claim holds it (first come).
    AlreadyClaimed,
    /// This vow already claimed a quest this UTC day.
    VowClaimedToday,
    /// A payment for this quest is recorded and the chain cannot be read right now: it may be
    /// settled, so it takes no claim until the chain answers.
    PaymentUncheckable,
}

/// Why a submit is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubmitRefusal {
    /// No such quest on the board.
    UnknownQuest,
    /// Done already.
    Done,
    /// Nobody holds it (never claimed, or the claim lapsed).
    NotClaimed,
    /// Another vow holds it.
    NotClaimant,
}

impl ClaimRefusal {
    /// The problem type's slug (`/problems/<slug>`).
    pub fn slug(self) -> &'static str {
        match self {
            ClaimRefusal::UnknownQuest => "munus-unknown-quest",
            ClaimRefusal::Retired => "munus-quest-retired",
            ClaimRefusal::Done => "munus-quest-done",
            ClaimRefusal::AlreadyClaimed => "munus-quest-claimed",
            ClaimRefusal::VowClaimedToday => "munus-one-claim-a-day",
            ClaimRefusal::PaymentUncheckable => "munus-payment-uncheckable",
        }
    }

    /// One sentence for the problem's `detail`.
    pub fn detail(self) -> &'static str {
        match self {
            ClaimRefusal::UnknownQuest => "no quest with this id is on the board",
            ClaimRefusal::Retired => "the operator retired this quest; it takes no claim",
            ClaimRefusal::Done => "this quest is done; it takes no claim",
            ClaimRefusal::AlreadyClaimed => {
                "this quest is already claimed (first come); it opens again if the claim lapses after 14 idle days"
            }
            ClaimRefusal::VowClaimedToday => {
                "this vow already claimed a quest this UTC day (one claim per vow per UTC day)"
            }
            ClaimRefusal::PaymentUncheckable => {
                "a payment for this quest is recorded and the chain did not answer; try again later"
            }
        }
    }
}

impl SubmitRefusal {
    /// The problem type's slug (`/problems/<slug>`).
    pub fn slug(self) -> &'static str {
        match self {
            SubmitRefusal::UnknownQuest => "munus-unknown-quest",
            SubmitRefusal::Done => "munus-quest-done",
            SubmitRefusal::NotClaimed => "munus-not-claimed",
            SubmitRefusal::NotClaimant => "munus-not-claimant",
        }
    }

    /// One sentence for the problem's `detail`.
    pub fn detail(self) -> &'static str {
        match self {
            SubmitRefusal::UnknownQuest => "no quest with this id is on the board",
            SubmitRefusal::Done => "this quest is done; it takes no delivery",
            SubmitRefusal::NotClaimed => {
                "nobody holds this quest (never claimed, or the claim lapsed): claim it first"
            }
            SubmitRefusal::NotClaimant => "another vow holds this quest",
        }
    }
}

/// The counts of the quest list (library/MUNUS.md).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Listed quests nobody holds.
    pub open: u64,
    /// Listed quests a vow holds.
    pub claimed: u64,
    /// Quests the house delivered itself (settled to no one).
    pub delivered_in_house: u64,
    /// Listed quests whose (live or settled) claim has a delivery on the record.
    pub delivered_by_a_worker: u64,
    /// Payment rows the chain confirms (`true`).
    pub settled_to_a_worker: u64,
    /// Payment rows the chain resolved and that do not match (`false`).
    pub unverified: u64,
    /// Payment rows the chain did not answer for (`null`): never counted as false or zero.
    pub uncheckable_right_now: u64,
}

/// What is known of a payment's transfer on chain: the last read and the last definite
/// answer. The page and every decision read this one value (library/MUNUS.md, "Payments").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PaymentFlag {
    /// What the chain said at the last read: `None` while it does not answer.
    pub read: Option<bool>,
    /// The last definite answer it ever gave (`None`: never answered).
    pub definite: Option<bool>,
}

impl PaymentFlag {
    /// A flag read now, with no older answer to fall back on.
    pub fn read(read: Option<bool>) -> PaymentFlag {
        PaymentFlag {
            read,
            definite: read,
        }
    }

    /// Whether the transfer settles the quest: the last read, or through an outage the last
    /// definite answer (a settled quest stays done while the chain is silent).
    pub fn settles(&self) -> bool {
        self.read.or(self.definite) == Some(true)
    }
}

impl From<Option<bool>> for PaymentFlag {
    fn from(read: Option<bool>) -> PaymentFlag {
        PaymentFlag::read(read)
    }
}

/// A payment row as the list shows it: the record and its flag re-read from the chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaidView {
    /// Log index of the payment record.
    pub log_index: u64,
    /// The record.
    pub payment: Payment,
    /// `Some(true)` matches, `Some(false)` resolved and does not match, `None` unanswered.
    pub verified: Option<bool>,
}

/// The board at one instant.
#[derive(Debug, Clone, Default)]
pub struct Board {
    /// Every quest of the file that is not retired, in file order.
    pub quests: Vec<QuestState>,
    /// Retired quests (they refuse claims; not listed).
    pub retired: Vec<String>,
    /// The payment rows, in log order, with their flags.
    pub paid: Vec<PaidView>,
    /// Lapses due at `now` whose record is not in the log yet (append them).
    pub due_lapses: Vec<super::record::Lapse>,
    /// Claims per (vow, UTC day), from every claim record.
    claims_per_day: HashMap<(String, u64), u64>,
    /// Quests with a recorded payment the chain does not answer for now (the row reads
    /// `null`): whatever it said before, it may have settled the quest since, so the quest
    /// takes no claim until the chain answers.
    pub uncheckable: std::collections::BTreeSet<String>,
    /// Records that break the rules (verify-log reports them; the fold skips them).
    pub anomalies: Vec<String>,
}

/// Apply an implicit lapse to `status` when its claim's due instant is at or before `t`;
/// returns the lapse it applied.
fn lapse_if_due(id: &str, status: &mut Status, t: u64) -> Option<super::record::Lapse> {
    if let Status::Claimed(c) = status {
        let at = c.lapses_at()?;
        if at <= t {
            let l = super::record::Lapse {
                quest_id: id.to_owned(),
                vow_id: c.vow_id.clone(),
                claim: c.log_index,
                idle_since: c.last_activity,
                at,
            };
            *status = Status::Open;
            return Some(l);
        }
    }
    None
}

impl Board {
    /// Fold the board's records (`(log_index, record)` in log order) over the operator's
    /// quests at `now`; `flag` is what is known of a payment on chain ([`PaymentFlag`], or
    /// an `Option<bool>` read with nothing older: `None` is no answer).
    pub fn fold<F: Into<PaymentFlag>>(
        quests: &[Quest],
        records: &[(u64, BoardRecord)],
        flag: &dyn Fn(&Payment) -> F,
        now: u64,
    ) -> Board {
        let mut b = Board::default();
        let mut st: BTreeMap<String, Status> = BTreeMap::new();
        for q in quests {
            let s = match &q.delivered_in_house {
                Some(link) => Status::InHouse { link: link.clone() },
                None => Status::Open,
            };
            st.insert(q.id.clone(), s);
        }
        for (i, rec) in records {
            let (i, id) = (*i, rec.quest_id().to_owned());
            // A quest the file no longer names keeps its history (open unless the log says
            // otherwise), so the records still check.
            let s = st.entry(id.clone()).or_insert(Status::Open);
            match rec {
                BoardRecord::Claim(c) => {
                    let n = b
                        .claims_per_day
                        .entry((c.vow_id.clone(), utc_day(c.at)))
                        .or_default();
                    *n += 1;
                    if *n > 1 {
                        b.anomalies.push(format!(
                            "log index {i}: vow {} already claimed a quest that UTC day",
                            c.vow_id
                        ));
                    }
                    if lapse_if_due(&id, s, c.at).is_some() {
                        b.anomalies.push(format!(
                            "log index {i}: claim on {id:?} before the previous claim's lapse was recorded"
                        ));
                    }
                    match s {
                        Status::Open => {
                            *s = Status::Claimed(LiveClaim {
                                log_index: i,
                                vow_id: c.vow_id.clone(),
                                wallet: c.wallet.clone(),
                                at: c.at,
                                last_activity: c.at,
                                delivery: None,
                                paid: None,
                            })
                        }
                        _ => b.anomalies.push(format!(
                            "log index {i}: claim on {id:?}, which was not open"
                        )),
                    }
                }
                BoardRecord::Delivery(d) => match s {
                    Status::Claimed(c)
                        if c.log_index == d.claim
                            && c.vow_id == d.vow_id
                            && c.lapses_at().is_none_or(|l| d.at < l) =>
                    {
                        c.last_activity = d.at;
                        c.delivery = Some((i, d.link.clone(), d.at));
                    }
                    _ => b.anomalies.push(format!(
                        "log index {i}: delivery on {id:?} names no live claim of its vow"
                    )),
                },
                BoardRecord::Lapse(l) => {
                    let ok = matches!(&*s, Status::Claimed(c)
                        if c.log_index == l.claim
                            && c.vow_id == l.vow_id
                            && c.last_activity == l.idle_since
                            && c.lapses_at() == Some(l.at));
                    if ok {
                        *s = Status::Open;
                    } else {
                        b.anomalies.push(format!(
                            "log index {i}: lapse of {id:?} does not match its live claim"
                        ));
                    }
                }
                BoardRecord::Payment(p) => {
                    let known: PaymentFlag = flag(p).into();
                    let verified = known.read;
                    if verified.is_none() {
                        b.uncheckable.insert(id.clone());
                    }
                    if let Status::Claimed(c) = &mut *s {
                        if p.claim == Some(c.log_index) {
                            c.paid = Some(i);
                        }
                    }
                    b.paid.push(PaidView {
                        log_index: i,
                        payment: p.clone(),
                        verified,
                    });
                    if known.settles() {
                        // It settles the claim it names (the one live where it was recorded),
                        // or an open quest when it names none; never a claim made after it.
                        let settles = match &*s {
                            Status::Claimed(c) => p.claim == Some(c.log_index),
                            Status::Open => p.claim.is_none(),
                            Status::InHouse { .. } | Status::Settled { .. } => false,
                        };
                        if settles {
                            let claim = match &*s {
                                Status::Claimed(c) => Some(c.clone()),
                                _ => None,
                            };
                            *s = Status::Settled { claim, payment: i };
                        }
                    }
                }
            }
        }
        for q in quests {
            let mut s = st.remove(&q.id).unwrap_or(Status::Open);
            if let Some(l) = lapse_if_due(&q.id, &mut s, now) {
                b.due_lapses.push(l);
            }
            if q.retired {
                b.retired.push(q.id.clone());
            } else {
                b.quests.push(QuestState {
                    quest: q.clone(),
                    status: s,
                });
            }
        }
        // Quests no longer in the file can still have a claim to lapse (its record keeps the
        // log's history whole).
        for (id, mut s) in st {
            if let Some(l) = lapse_if_due(&id, &mut s, now) {
                b.due_lapses.push(l);
            }
        }
        b.due_lapses.sort_by_key(|l| (l.at, l.claim));
        b
    }

    /// The earliest instant a live claim lapses (a key that falls due), if any.
    pub fn next_lapse(&self) -> Option<u64> {
        self.quests
            .iter()
            .filter_map(|q| match &q.status {
                Status::Claimed(c) => c.lapses_at(),
                _ => None,
            })
            .min()
    }

    /// The quest `id`, when listed.
    pub fn quest(&self, id: &str) -> Option<&QuestState> {
        self.quests.iter().find(|q| q.quest.id == id)
    }

    /// May `vow_id` claim `quest_id` at `now` (the board folded at `now`)? The caller checks
    /// before: the vow is signed (not sandbox) and the signature is its wallet's, over the
    /// claim text of today, and not a replay.
    pub fn check_claim(&self, quest_id: &str, vow_id: &str, now: u64) -> Result<(), ClaimRefusal> {
        if self.retired.iter().any(|r| r == quest_id) {
            return Err(ClaimRefusal::Retired);
        }
        let q = self.quest(quest_id).ok_or(ClaimRefusal::UnknownQuest)?;
        if let Status::Settled { .. } | Status::InHouse { .. } = q.status {
            return Err(ClaimRefusal::Done);
        }
        // Before "claimed": the quest may be settled, which the chain must say first.
        if self.uncheckable.contains(quest_id) {
            return Err(ClaimRefusal::PaymentUncheckable);
        }
        if let Status::Claimed(_) = q.status {
            return Err(ClaimRefusal::AlreadyClaimed);
        }
        if self.claims_on_day(vow_id, now) > 0 {
            return Err(ClaimRefusal::VowClaimedToday);
        }
        Ok(())
    }

    /// May `vow_id` submit a delivery on `quest_id` at `now`? The claim's log index.
    pub fn check_submit(&self, quest_id: &str, vow_id: &str) -> Result<u64, SubmitRefusal> {
        let q = self.quest(quest_id).ok_or(SubmitRefusal::UnknownQuest)?;
        match &q.status {
            Status::Open => Err(SubmitRefusal::NotClaimed),
            Status::Claimed(c) if c.vow_id == vow_id => Ok(c.log_index),
            Status::Claimed(_) => Err(SubmitRefusal::NotClaimant),
            Status::Settled { .. } | Status::InHouse { .. } => Err(SubmitRefusal::Done),
        }
    }

    /// Claim records by `vow_id` on the UTC day of `now`.
    pub fn claims_on_day(&self, vow_id: &str, now: u64) -> u64 {
        self.claims_per_day
            .get(&(vow_id.to_owned(), utc_day(now)))
            .copied()
            .unwrap_or(0)
    }

    /// The counts of the quest list (library/MUNUS.md).
    pub fn counts(&self) -> Counts {
        let mut c = Counts::default();
        for q in &self.quests {
            match &q.status {
                Status::Open => c.open += 1,
                Status::Claimed(cl) => {
                    c.claimed += 1;
                    c.delivered_by_a_worker += u64::from(cl.delivery.is_some());
                }
                Status::Settled { claim, .. } => {
                    c.delivered_by_a_worker +=
                        u64::from(claim.as_ref().is_some_and(|cl| cl.delivery.is_some()));
                }
                Status::InHouse { .. } => c.delivered_in_house += 1,
            }
        }
        for p in &self.paid {
            match p.verified {
                Some(true) => c.settled_to_a_worker += 1,
                Some(false) => c.unverified += 1,
                None => c.uncheckable_right_now += 1,
            }
        }
        c
    }
}
