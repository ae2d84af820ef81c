//! Vow chains in the store: the jobs that append a vow record or a report-in entry to the
//! log (run by the [`crate::ledger::Sequencer`] inside its transaction, so a chain's head moves
//! in the same commit as its leaf), the donated-trace store kept apart from everything public,
//! and [`VowReader`] for the renderer and the api (their statements are the store's,
//! `crate::store::vows`).

use conduct_core::meter::{Meter, Profile};
use conduct_core::signing::ServiceKey;
use conduct_core::vow::record::{
    entry_record, record_hash, vow_record, DeclaredY, EntryFields, Proof, VowFields,
};

use crate::ledger::append::{PutVow, VowHead, VowIndex};
use crate::ledger::{Job, Refusal};

pub use crate::state::kept::DonatedTraces;
pub use crate::store::vows::{ChainHead, Records, VowClock, VowReader, VowRow};

/// A vow about to be taken.
#[derive(Debug, Clone)]
pub struct NewVow {
    /// Log origin (enters the vow id).
    pub origin: String,
    /// Public agent name.
    pub agent: String,
    /// The vow text (kept privately when sealed).
    pub text: String,
    /// Declared cadence, hours.
    pub cadence_hours: f64,
    /// The cadence in seconds.
    pub cadence_seconds: u64,
    /// The wallet whose signature verified.
    pub wallet: Option<[u8; 20]>,
    /// Its EIP-191 signature (lowercase hex).
    pub wallet_signature: Option<String>,
    /// SHA-256 of the signed message: a signed vow can be taken once.
    pub signed_message_sha256: Option<String>,
    /// Sealed (only the text hash is published).
    pub sealed: bool,
    /// Why it is sandbox, when it is (see [`VowFields::sandbox_reason`]).
    pub sandbox_reason: Option<String>,
    /// Instant taken, unix seconds.
    pub at: u64,
}

/// The job that records `vow`; its leaf is the signed `conduct.vow/v1` record.
pub fn vow_job(key: ServiceKey, vow: NewVow) -> Job {
    Job::build(move |tx, index| {
        let fields = VowFields {
            origin: &vow.origin,
            agent: &vow.agent,
            text: &vow.text,
            cadence_hours: vow.cadence_hours,
            wallet: vow.wallet,
            wallet_signature: vow.wallet_signature.as_deref(),
            sealed: vow.sealed,
            sandbox_reason: vow.sandbox_reason.as_deref(),
            at: vow.at,
        };
        let (id, leaf) = vow_record(&key, &fields, index).map_err(|e| Refusal::Invalid(e.0))?;
        let row = VowIndex {
            vow_id: &id,
            log_index: index,
            agent: &vow.agent,
            text: &vow.text,
            sealed: vow.sealed,
            sandbox: vow.wallet_signature.is_none(),
            wallet: vow.wallet.map(|w| format!("0x{}", hex::encode(w))),
            signed_message: vow.signed_message_sha256.as_deref(),
            cadence_seconds: vow.cadence_seconds,
            at: vow.at,
            head_hash: record_hash(&leaf),
        };
        match tx.put_vow(&row)? {
            PutVow::Indexed => Ok(leaf),
            PutVow::TakenAs(vow_id) => Err(Refusal::VowTaken { vow_id }),
            PutVow::Collision => Err(Refusal::VowIdCollision),
        }
    })
}

/// A report-in about to be appended (everything but its chain position).
#[derive(Debug, Clone)]
pub struct NewEntry {
    /// The vow reported on.
    pub vow_id: String,
    /// `sha256(trace)`.
    pub trace_sha256: [u8; 32],
    /// The conditioning flag.
    pub context_key: String,
    /// Turns in the trace.
    pub n_turns: usize,
    /// The meter that measured the profile.
    pub meter: Meter,
    /// The four quantities.
    pub profile: Profile,
    /// Distinct declared purposes (`None` for a sealed vow).
    pub declared_y: Option<Vec<DeclaredY>>,
    /// Declared purposes against the vow text.
    pub y_consistency: Option<f64>,
    /// Public note.
    pub note: Option<String>,
    /// Paid.
    pub attested: bool,
    /// The trace was donated.
    pub trace_donated: bool,
    /// Report-in instant, unix seconds.
    pub at: u64,
    /// What proved the right to write into the chain.
    pub proof: Proof,
}

impl NewEntry {
    fn fields(&self) -> EntryFields<'_> {
        EntryFields {
            vow_id: &self.vow_id,
            trace_sha256: self.trace_sha256,
            context_key: &self.context_key,
            n_turns: self.n_turns,
            meter: self.meter,
            profile: &self.profile,
            declared_y: self.declared_y.clone(),
            y_consistency: self.y_consistency,
            note: self.note.as_deref(),
            attested: self.attested,
            trace_donated: self.trace_donated,
            at: self.at,
            proof: &self.proof,
        }
    }

    /// The signed leaf this entry would be with the largest chain position and index, so a
    /// caller can refuse an entry too large for the log before taking payment for it.
    pub fn worst_case_len(
        &self,
        key: &ServiceKey,
    ) -> Result<usize, conduct_core::canonical::CanonicalError> {
        conduct_core::vow::record::entry_record_len(
            key,
            &self.fields(),
            u64::MAX,
            &"f".repeat(64),
            u64::MAX,
        )
    }
}

/// The job that appends `entry` to its vow's chain: it reads the chain head, signs the entry
/// with the next `seq` and `prev`, and moves the head, in the log's transaction.
pub fn entry_job(key: ServiceKey, entry: NewEntry) -> Job {
    Job::build(move |tx, index| {
        let head = tx
            .vow_head(&entry.vow_id)?
            .ok_or_else(|| Refusal::UnknownVow {
                vow_id: entry.vow_id.clone(),
            })?;
        let mut fields = entry.fields();
        // `at` never goes back along a chain, even if the clock does.
        fields.at = fields.at.max(head.at);
        let seq = head.seq + 1;
        let leaf = entry_record(&key, &fields, seq, &head.hash, index)
            .map_err(|e| Refusal::Invalid(e.0))?;
        let moved = VowHead {
            seq,
            hash: record_hash(&leaf),
            at: fields.at,
        };
        tx.move_head(&entry.vow_id, &moved, index)?;
        if let Proof::WalletSignature(sig) = &entry.proof {
            // A signature proves one report-in: a replay is refused.
            if let Some(first) = tx.use_report_signature(sig, &entry.vow_id, seq)? {
                return Err(Refusal::ReportReplayed {
                    vow_id: entry.vow_id.clone(),
                    seq: first,
                });
            }
        }
        Ok(leaf)
    })
}
