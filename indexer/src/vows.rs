//! Vow chains in the store: the jobs that append a vow record or a report-in entry to the
//! log (run by the [`crate::ledger::Sequencer`] inside its transaction, so a chain's head moves
//! in the same commit as its leaf), the donated-trace store kept apart from everything public,
//! and [`VowReader`] for the renderer and the api.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use conduct_core::meter::Profile;
use conduct_core::signing::ServiceKey;
use conduct_core::vow::record::{
    entry_record, record_hash, vow_record, DeclaredY, EntryFields, Proof, VowFields,
};
use rusqlite::{params, Connection, ErrorCode, OptionalExtension};

use crate::ledger::{Job, Refused};
use crate::store::{Store, StoreError};

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
    Job::Build(Box::new(move |conn, index| {
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
        let (id, leaf) = vow_record(&key, &fields, index).map_err(|e| Refused::Invalid(e.0))?;
        let inserted = conn.execute(
            "INSERT INTO vow (vow_id, log_index, agent, text, sealed, sandbox, wallet,
                signed_message, cadence_seconds, created_at, head_seq, head_hash, head_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 0, ?11, ?10)",
            params![
                id,
                index as i64,
                vow.agent,
                vow.text,
                vow.sealed,
                vow.wallet_signature.is_none(),
                vow.wallet.map(|w| format!("0x{}", hex::encode(w))),
                vow.signed_message_sha256,
                vow.cadence_seconds as i64,
                vow.at as i64,
                record_hash(&leaf),
            ],
        );
        match inserted {
            Ok(_) => Ok(leaf),
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == ErrorCode::ConstraintViolation =>
            {
                let existing: Option<String> = conn
                    .query_row(
                        "SELECT vow_id FROM vow WHERE signed_message = ?1",
                        params![vow.signed_message_sha256],
                        |r| r.get(0),
                    )
                    .optional()?;
                Err(Refused::Conflict(match existing {
                    Some(id) => format!("this signed vow was already taken as vow {id}"),
                    None => "vow id collision; retry".into(),
                }))
            }
            Err(e) => Err(e.into()),
        }
    }))
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
        entry_record(key, &self.fields(), u64::MAX, &"f".repeat(64), u64::MAX).map(|l| l.len())
    }
}

/// The job that appends `entry` to its vow's chain: it reads the chain head, signs the entry
/// with the next `seq` and `prev`, and moves the head, in the log's transaction.
pub fn entry_job(key: ServiceKey, entry: NewEntry) -> Job {
    Job::Build(Box::new(move |conn, index| {
        let head: Option<(i64, String, i64)> = conn
            .query_row(
                "SELECT head_seq, head_hash, head_at FROM vow WHERE vow_id = ?1",
                params![entry.vow_id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()?;
        let (seq, prev, head_at) =
            head.ok_or_else(|| Refused::NotFound(format!("no vow {}", entry.vow_id)))?;
        let mut fields = entry.fields();
        // `at` never goes back along a chain, even if the clock does.
        fields.at = fields.at.max(head_at as u64);
        let seq = seq as u64 + 1;
        let leaf =
            entry_record(&key, &fields, seq, &prev, index).map_err(|e| Refused::Invalid(e.0))?;
        conn.execute(
            "UPDATE vow SET head_seq = ?2, head_hash = ?3, head_at = ?4 WHERE vow_id = ?1",
            params![
                entry.vow_id,
                seq as i64,
                record_hash(&leaf),
                fields.at as i64
            ],
        )?;
        conn.execute(
            "INSERT INTO vow_entry (vow_id, seq, log_index, at) VALUES (?1, ?2, ?3, ?4)",
            params![entry.vow_id, seq as i64, index as i64, fields.at as i64],
        )?;
        if let Proof::WalletSignature(sig) = &entry.proof {
            // A signature proves one report-in: a replay is refused.
            let used = conn.execute(
                "INSERT INTO report_signature (signature, vow_id, seq) VALUES (?1, ?2, ?3)",
                params![sig, entry.vow_id, seq as i64],
            );
            if let Err(rusqlite::Error::SqliteFailure(e, _)) = &used {
                if e.code == ErrorCode::ConstraintViolation {
                    let first: Option<i64> = conn
                        .query_row(
                            "SELECT seq FROM report_signature WHERE signature = ?1",
                            params![sig],
                            |r| r.get(0),
                        )
                        .optional()?;
                    return Err(Refused::Conflict(format!(
                        "this signed report-in was already recorded (seq {} of vow {}); sign \
                         the text of the next report-in",
                        first.unwrap_or(0),
                        entry.vow_id
                    )));
                }
            }
            used?;
        }
        Ok(leaf)
    }))
}

/// A chain's records as (log index, leaf bytes): the vow record, then entries in seq order.
pub type Records = Vec<(u64, Vec<u8>)>;

/// A vow as the store indexes it.
#[derive(Debug, Clone, PartialEq)]
pub struct VowRow {
    /// Vow id.
    pub vow_id: String,
    /// Index of its record in the log.
    pub log_index: u64,
    /// Agent name.
    pub agent: String,
    /// The text (private when sealed: never publish it from here).
    pub text: String,
    /// Sealed.
    pub sealed: bool,
    /// Unsigned.
    pub sandbox: bool,
    /// Wallet (lowercase hex) of a signed vow.
    pub wallet: Option<String>,
    /// Cadence, seconds.
    pub cadence_seconds: u64,
    /// Instant taken, unix seconds.
    pub created_at: u64,
    /// Entries in its chain.
    pub head_seq: u64,
    /// Instant of its last record.
    pub head_at: u64,
}

const VOW_COLUMNS: &str = "vow_id, log_index, agent, text, sealed, sandbox, wallet, \
    cadence_seconds, created_at, head_seq, head_at";

fn vow_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<VowRow> {
    Ok(VowRow {
        vow_id: r.get(0)?,
        log_index: r.get::<_, i64>(1)? as u64,
        agent: r.get(2)?,
        text: r.get(3)?,
        sealed: r.get(4)?,
        sandbox: r.get(5)?,
        wallet: r.get(6)?,
        cadence_seconds: r.get::<_, i64>(7)? as u64,
        created_at: r.get::<_, i64>(8)? as u64,
        head_seq: r.get::<_, i64>(9)? as u64,
        head_at: r.get::<_, i64>(10)? as u64,
    })
}

/// Reads of the committed vows over a few connections of their own (so renders of different
/// vows on different threads do not wait for each other).
pub struct VowReader {
    conns: Vec<Mutex<Connection>>,
}

impl std::fmt::Debug for VowReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VowReader")
            .field("connections", &self.conns.len())
            .finish_non_exhaustive()
    }
}

impl VowReader {
    /// A reader over new connections to `store`, one per available core.
    pub fn open(store: &Store) -> Result<VowReader, StoreError> {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
        let conns = (0..n)
            .map(|_| store.connection().map(Mutex::new))
            .collect::<Result<_, _>>()?;
        Ok(VowReader { conns })
    }

    pub(crate) fn with<T>(
        &self,
        f: impl FnOnce(&mut Connection) -> rusqlite::Result<T>,
    ) -> Result<T, StoreError> {
        let free = self.conns.iter().find_map(|c| c.try_lock().ok());
        let mut g = match free {
            Some(g) => g,
            None => conduct_core::sync::lock(&self.conns[0]),
        };
        Ok(f(&mut g)?)
    }

    /// One vow.
    pub fn vow(&self, vow_id: &str) -> Result<Option<VowRow>, StoreError> {
        self.with(|c| {
            c.query_row(
                &format!("SELECT {VOW_COLUMNS} FROM vow WHERE vow_id = ?1"),
                params![vow_id],
                vow_row,
            )
            .optional()
        })
    }

    /// Every vow, by agent name then id.
    pub fn all(&self) -> Result<Vec<VowRow>, StoreError> {
        self.with(|c| {
            let mut st = c.prepare(&format!(
                "SELECT {VOW_COLUMNS} FROM vow ORDER BY agent, vow_id"
            ))?;
            let rows = st.query_map([], vow_row)?;
            rows.collect()
        })
    }

    /// Every vow a lookup key names in any role: its vow id, its agent name, or its wallet
    /// (compared in lowercase), oldest first.
    pub fn matching(&self, lookup: &str) -> Result<Vec<VowRow>, StoreError> {
        self.with(|c| {
            let mut st = c.prepare_cached(&format!(
                "SELECT {VOW_COLUMNS} FROM vow WHERE vow_id = ?1 OR agent = ?1 OR wallet = lower(?1)
                 ORDER BY log_index"
            ))?;
            let rows = st.query_map(params![lookup], vow_row)?;
            rows.collect()
        })
    }

    /// The vow and its chain from one snapshot: the vow row and every record's (log index,
    /// leaf bytes), the vow record first, then the entries in seq order.
    pub fn chain(&self, vow_id: &str) -> Result<Option<(VowRow, Records)>, StoreError> {
        self.chain_from(vow_id, 0)
    }

    /// The kept model interpretation of a vow's reading (JSON text) and the chain position it
    /// covers, if any.
    pub fn reading(&self, vow_id: &str) -> Result<Option<(u64, String)>, StoreError> {
        self.with(|c| {
            c.query_row(
                "SELECT covers_seq, interpretation FROM reading WHERE vow_id = ?1",
                params![vow_id],
                |r| Ok((r.get::<_, i64>(0)? as u64, r.get(1)?)),
            )
            .optional()
        })
    }

    /// Like [`Self::chain`], but only the records from chain position `from` on (position 0
    /// is the vow record, position n is entry seq n).
    pub fn chain_from(
        &self,
        vow_id: &str,
        from: u64,
    ) -> Result<Option<(VowRow, Records)>, StoreError> {
        self.with(|c| {
            let tx = c.transaction()?;
            let Some(row) = tx
                .query_row(
                    &format!("SELECT {VOW_COLUMNS} FROM vow WHERE vow_id = ?1"),
                    params![vow_id],
                    vow_row,
                )
                .optional()?
            else {
                return Ok(None);
            };
            let mut records = Vec::with_capacity((row.head_seq + 1).saturating_sub(from) as usize);
            if from == 0 {
                let leaf: Vec<u8> = tx.query_row(
                    "SELECT data FROM leaf WHERE idx = ?1",
                    params![row.log_index as i64],
                    |r| r.get(0),
                )?;
                records.push((row.log_index, leaf));
            }
            {
                let mut st = tx.prepare_cached(
                    "SELECT e.log_index, l.data FROM vow_entry e JOIN leaf l ON l.idx = e.log_index
                     WHERE e.vow_id = ?1 AND e.seq >= ?2 ORDER BY e.seq",
                )?;
                let rows = st.query_map(params![vow_id, from.max(1) as i64], |r| {
                    Ok((r.get::<_, i64>(0)? as u64, r.get::<_, Vec<u8>>(1)?))
                })?;
                for r in rows {
                    records.push(r?);
                }
            }
            Ok(Some((row, records)))
        })
    }
}

/// Donated raw traces, in a database file of their own (`donated.sqlite3`), apart from the
/// store and never rendered: the only place a trace's reasoning and actions are ever kept.
pub struct DonatedTraces {
    conn: Mutex<Connection>,
    path: PathBuf,
}

impl std::fmt::Debug for DonatedTraces {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DonatedTraces")
            .field("path", &self.path)
            .finish()
    }
}

impl DonatedTraces {
    /// Open (creating) `<data_dir>/donated.sqlite3`.
    pub fn open(data_dir: &Path) -> Result<DonatedTraces, StoreError> {
        crate::store::private_dir(data_dir)?;
        let path = data_dir.join("donated.sqlite3");
        let conn = crate::store::open_private(&path)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS donated (
                vow_id TEXT NOT NULL,
                trace_sha256 TEXT NOT NULL,
                trace BLOB NOT NULL,
                donated_at INTEGER NOT NULL,
                PRIMARY KEY (vow_id, trace_sha256)
            ) STRICT;",
        )?;
        Ok(DonatedTraces {
            conn: Mutex::new(conn),
            path,
        })
    }

    /// Keep a donated trace (its canonical bytes), durably, before the entry naming it is
    /// appended. A trace donated twice for the same vow is kept once.
    pub fn put(
        &self,
        vow_id: &str,
        trace_sha256: &str,
        trace: &[u8],
        at: u64,
    ) -> Result<(), StoreError> {
        let g = conduct_core::sync::lock(&self.conn);
        g.execute(
            "INSERT INTO donated (vow_id, trace_sha256, trace, donated_at) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT DO NOTHING",
            params![vow_id, trace_sha256, trace, at as i64],
        )?;
        Ok(())
    }

    /// How many traces are kept.
    pub fn count(&self) -> Result<u64, StoreError> {
        let g = conduct_core::sync::lock(&self.conn);
        Ok(g.query_row("SELECT COUNT(*) FROM donated", [], |r| r.get::<_, i64>(0))? as u64)
    }
}

/// Inside an append transaction: `vow_id` names a signed (not sandbox) vow whose wallet is
/// `wallet` (any case), or the refusal: `NotFound`, else `Conflict("<prefix>-sandbox-vow")` or
/// `Conflict("<prefix>-wrong-wallet")`. Every owner-signed record that names a vow (quest
/// claims, npub bindings, pledges, familiars) is checked here.
pub(crate) fn require_sworn(
    conn: &Connection,
    vow_id: &str,
    wallet: &str,
    prefix: &str,
) -> Result<(), Refused> {
    let vow: Option<(bool, Option<String>)> = conn
        .query_row(
            "SELECT sandbox, wallet FROM vow WHERE vow_id = ?1",
            params![vow_id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    match vow {
        None => Err(Refused::NotFound(format!("no vow {vow_id}"))),
        Some((true, _)) => Err(Refused::Conflict(format!("{prefix}-sandbox-vow"))),
        Some((false, w)) if w.as_deref() != Some(&wallet.to_ascii_lowercase()) => {
            Err(Refused::Conflict(format!("{prefix}-wrong-wallet")))
        }
        Some(_) => Ok(()),
    }
}
