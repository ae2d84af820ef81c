//! The SQLite store: one file `<data>/conduct.sqlite3`, WAL mode, `synchronous=FULL`, versioned
//! migrations. A write is acknowledged only after its transaction has committed.
//!
//! It holds payment claims (an x402 authorization buys exactly one read: the first claim of a
//! (network, payer, nonce) wins, atomically, even under concurrent replays), the 24-hour
//! idempotency cache of signed responses, the durable free-cap counters, the kept model
//! readings, and the rows that index the log's records. Every statement of the service lives
//! in this module or in [`crate::ledger`]; no feature sees a connection:
//!
//! - `append`: [`crate::ledger::append::Append`] on SQLite, what a job reads and writes inside
//!   the log's transaction (the seam's contract is in [`crate::ledger::append`]);
//! - [`vows`]: vows, chain heads, report-in signatures, [`vows::VowReader`] and the donated-trace
//!   store (`donated.sqlite3`); [`munus`]: the quest board's records and
//!   [`munus::MunusReader`]; [`nostr`], [`witness`], [`familiar`]: npub bindings, pledges and
//!   familiars, read through [`vows::VowReader`];
//! - [`chain`]: the chain follower's own database, `<data>/chain.sqlite3` (its writes never
//!   wait on the log's).

mod append;
pub mod chain;
pub mod donated;
pub mod familiar;
mod log;
pub mod munus;
pub mod nostr;
pub mod payid;
pub mod resume;
pub mod vows;
pub mod witness;

pub use log::SqliteLog;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use rusqlite::{params, Connection, OptionalExtension};

pub use crate::state::tables::{Idempotent, PaymentKey, PaymentStatus, IDEMPOTENCY_WINDOW};
use crate::state::tables::{PaymentIdBinding, ServedAnswer, Tables};
pub use crate::state::StoreError;

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        StoreError::Backend {
            backend: "sqlite",
            detail: e.to_string(),
        }
    }
}

/// Ordered schema migrations; index + 1 is the schema version.
const MIGRATIONS: &[&str] = &[
    // 1: payments and idempotency.
    "CREATE TABLE payment (
        network TEXT NOT NULL,
        payer TEXT NOT NULL,
        nonce TEXT NOT NULL,
        rail TEXT NOT NULL,
        resource TEXT NOT NULL,
        amount TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('claimed', 'settled', 'failed', 'unsettled')),
        tx TEXT,
        detail TEXT,
        claimed_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (network, payer, nonce)
    ) STRICT;
    CREATE TABLE idempotency (
        key TEXT PRIMARY KEY,
        body BLOB NOT NULL,
        created_at INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX idempotency_created ON idempotency (created_at);",
    // 2: the transparency log (see `ledger`): leaves, stored subtree hashes of complete
    // 256^L-leaf subtrees for tile levels L >= 1, and the single latest signed checkpoint.
    "CREATE TABLE leaf (
        idx INTEGER PRIMARY KEY,
        data BLOB NOT NULL,
        hash BLOB NOT NULL
    ) STRICT;
    CREATE TABLE node (
        level INTEGER NOT NULL,
        idx INTEGER NOT NULL,
        hash BLOB NOT NULL,
        PRIMARY KEY (level, idx)
    ) STRICT;
    CREATE TABLE checkpoint (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        size INTEGER NOT NULL,
        root BLOB NOT NULL,
        note TEXT NOT NULL
    ) STRICT;",
    // 3: vows (see `vows`). The records themselves are log leaves; these rows index them and
    // hold each chain's head. `text` of a sealed vow lives here only, never in the log or tree.
    "CREATE TABLE vow (
        vow_id TEXT PRIMARY KEY,
        log_index INTEGER NOT NULL UNIQUE,
        agent TEXT NOT NULL,
        text TEXT NOT NULL,
        sealed INTEGER NOT NULL,
        sandbox INTEGER NOT NULL,
        wallet TEXT,
        signed_message TEXT UNIQUE,
        cadence_seconds INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        head_seq INTEGER NOT NULL,
        head_hash TEXT NOT NULL,
        head_at INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX vow_agent ON vow (agent);
    CREATE INDEX vow_wallet ON vow (wallet);
    CREATE TABLE vow_entry (
        vow_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        log_index INTEGER NOT NULL UNIQUE,
        at INTEGER NOT NULL,
        PRIMARY KEY (vow_id, seq)
    ) STRICT;",
    // 4: the request an idempotency key was first used for (a key reused with another
    // request is refused), the durable free-tier counters (per counter, UTC day, bucket), and
    // the wallet signatures report-ins carried (each proves one report-in, once).
    "ALTER TABLE idempotency ADD COLUMN request TEXT NOT NULL DEFAULT '';
    CREATE TABLE free_cap (
        counter TEXT NOT NULL,
        day INTEGER NOT NULL,
        bucket TEXT NOT NULL,
        used INTEGER NOT NULL,
        PRIMARY KEY (counter, day, bucket)
    ) STRICT;
    CREATE TABLE report_signature (
        signature TEXT PRIMARY KEY,
        vow_id TEXT NOT NULL,
        seq INTEGER NOT NULL
    ) STRICT;",
    // 5: the language-model interpretation of each vow's reading (state, not read back from
    // the published site), with the chain position it covers.
    "CREATE TABLE reading (
        vow_id TEXT PRIMARY KEY,
        covers_seq INTEGER NOT NULL,
        interpretation TEXT NOT NULL,
        at INTEGER NOT NULL
    ) STRICT;",
    // 6: the quest board (see `munus`). Its records are log leaves; these rows keep a copy
    // of each (the jobs of one batch read them before the batch's leaves are written; a
    // payment's transaction is recorded once) and each claim or delivery signature once (a
    // replay is refused).
    "CREATE TABLE munus_record (
        log_index INTEGER PRIMARY KEY,
        quest_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        tx TEXT UNIQUE,
        data BLOB NOT NULL
    ) STRICT;
    CREATE TABLE munus_signature (
        signature TEXT PRIMARY KEY,
        log_index INTEGER NOT NULL
    ) STRICT;",
    // 7: npub bindings (see `nostr`). Their records are log leaves; these rows index them (the
    // latest binding of an npub wins) and keep each wallet and nostr signature once (a replay
    // is refused).
    "CREATE TABLE npub_binding (
        log_index INTEGER PRIMARY KEY,
        npub TEXT NOT NULL,
        pubkey TEXT NOT NULL,
        vow_id TEXT NOT NULL,
        at INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX npub_binding_npub ON npub_binding (npub, log_index);
    CREATE INDEX npub_binding_vow ON npub_binding (vow_id);
    CREATE TABLE npub_signature (
        signature TEXT PRIMARY KEY,
        log_index INTEGER NOT NULL
    ) STRICT;",
    // 8: the witness's pledges and hosted familiars (see `witness`, `familiar`). Their records
    // are log leaves; these rows index them (the latest pledge of a vow is the one read;
    // familiars by id) and keep each owner signature once (a replay is refused).
    "CREATE TABLE witness_pledge (
        log_index INTEGER PRIMARY KEY,
        vow_id TEXT NOT NULL,
        wallet TEXT NOT NULL,
        at INTEGER NOT NULL,
        data BLOB NOT NULL
    ) STRICT;
    CREATE INDEX witness_pledge_vow ON witness_pledge (vow_id, log_index);
    CREATE TABLE witness_signature (
        signature TEXT PRIMARY KEY,
        log_index INTEGER NOT NULL
    ) STRICT;
    CREATE TABLE familiar (
        familiar_id TEXT PRIMARY KEY,
        log_index INTEGER NOT NULL UNIQUE,
        owner_wallet TEXT NOT NULL,
        owner_vow TEXT,
        at INTEGER NOT NULL,
        data BLOB NOT NULL
    ) STRICT;
    CREATE TABLE familiar_signature (
        signature TEXT PRIMARY KEY,
        log_index INTEGER NOT NULL
    ) STRICT;",
    // 9: x402 payment identifiers (see `payid`): each identifier of a route bound to the one
    // payment payload and request it was first used with, and what that payment bought; a
    // claim keeps the SHA-256 of the payload that claimed it (a pending settlement resumes
    // only for that payload).
    "ALTER TABLE payment ADD COLUMN payload TEXT;
    CREATE TABLE payment_identifier (
        scope TEXT NOT NULL,
        id TEXT NOT NULL,
        payload TEXT NOT NULL,
        request TEXT NOT NULL,
        network TEXT NOT NULL,
        payer TEXT NOT NULL,
        nonce TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('open', 'pending', 'served')),
        status INTEGER,
        receipt TEXT,
        record BLOB,
        location TEXT,
        tx TEXT,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (scope, id)
    ) STRICT;",
    // 10: the model readings asked for and not yet kept (see `put_readings_asked`): a
    // restart asks for them again, as no render need come for them.
    "CREATE TABLE reading_ask (
        vow_id TEXT PRIMARY KEY,
        seq INTEGER NOT NULL,
        at INTEGER NOT NULL
    ) STRICT;",
];

/// Make `dir` (created if missing) owner-only: it holds the key, sealed vow texts and
/// donated traces.
pub fn private_dir(dir: &Path) -> Result<(), StoreError> {
    let io = |source| StoreError::Io {
        path: dir.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(io)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(io)?;
    }
    Ok(())
}

/// Open the SQLite database at `path`, created owner-only (mode 0600; SQLite gives its
/// `-wal` and `-shm` files the same mode), and tighten an existing one's files to 0600.
pub(crate) fn open_private(path: &Path) -> Result<Connection, StoreError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        let io = |source| StoreError::Io {
            path: path.to_path_buf(),
            source,
        };
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(path)
            .map_err(io)?;
        for suffix in ["", "-wal", "-shm"] {
            let mut p = path.as_os_str().to_owned();
            p.push(suffix);
            let p = PathBuf::from(p);
            if p.exists() {
                std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).map_err(io)?;
            }
        }
    }
    Ok(Connection::open(path)?)
}

/// A connection to the database at `path` with the store's settings (WAL, `synchronous=FULL`).
pub(crate) fn configured(path: &Path) -> Result<Connection, StoreError> {
    let conn = open_private(path)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    conn.pragma_update(None, "wal_autocheckpoint", 0)?;
    conn.pragma_update(None, "journal_size_limit", 64i64 << 20)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    Ok(conn)
}

/// How often the checkpointer copies the write-ahead log back into the database.
const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_millis(500);

/// Start the checkpointer: a thread of its own that copies the write-ahead log back into the
/// database every `every` (a passive checkpoint, which never blocks a writer or a reader).
/// Connections never checkpoint on commit, so no write waits for one.
fn start_checkpointer(path: &Path, every: std::time::Duration) -> Result<Checkpointer, StoreError> {
    let conn = configured(path)?;
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let thread = std::thread::Builder::new()
        .name("wal-checkpoint".into())
        .spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                std::thread::park_timeout(every);
                if let Err(e) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
                    tracing::warn!(error = %e, "WAL checkpoint failed; retried");
                }
            }
        })
        .map_err(|source| StoreError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    Ok(Checkpointer {
        stop,
        thread: Some(thread),
    })
}

/// The running checkpointer (owned by the [`Store`]); dropping it stops the thread.
#[derive(Debug)]
pub struct Checkpointer {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

/// The durable store.
pub struct Store {
    conn: Mutex<Connection>,
    path: PathBuf,
    _checkpointer: Checkpointer,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

impl Store {
    /// Open (creating and migrating) the store in `data_dir`.
    pub fn open(data_dir: &Path) -> Result<Store, StoreError> {
        private_dir(data_dir)?;
        let path = data_dir.join("conduct.sqlite3");
        let mut conn = configured(&path)?;
        migrate(&mut conn)?;
        let checkpointer = start_checkpointer(&path, CHECKPOINT_EVERY)?;
        Ok(Store {
            conn: Mutex::new(conn),
            path,
            _checkpointer: checkpointer,
        })
    }

    /// Path of the database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The data directory the database file is in (its side databases are there too).
    pub fn data_dir(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("."))
    }

    /// A new connection to the same (already migrated) database, with the same settings, for
    /// a component that owns its connection (the ledger's sequencer thread, the readers).
    pub(crate) fn connection(&self) -> Result<Connection, StoreError> {
        configured(&self.path)
    }

    /// The log's tables over a new connection (the ledger's, or a reader's).
    pub fn log(&self) -> Result<Box<dyn crate::state::LogState>, StoreError> {
        Ok(Box::new(SqliteLog::open(self.path.clone())?))
    }

    fn conn(&self) -> MutexGuard<'_, Connection> {
        conduct_core::sync::lock(&self.conn)
    }

    /// Claim an authorization for one read, by the payload whose SHA-256 is `payload`. Returns
    /// `false` when it was claimed before (a replay): exactly one of any number of concurrent
    /// claims of the same key returns `true`.
    pub fn claim_payment(
        &self,
        key: &PaymentKey<'_>,
        payload: &str,
        rail: &str,
        resource: &str,
        amount: &str,
        now: u64,
    ) -> Result<bool, StoreError> {
        let n = self.conn().execute(
            "INSERT INTO payment (network, payer, nonce, rail, resource, amount, status,
                                  claimed_at, updated_at, payload)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'claimed', ?7, ?7, ?8)
             ON CONFLICT DO NOTHING",
            params![
                key.network,
                key.payer,
                key.nonce,
                rail,
                resource,
                amount,
                now as i64,
                payload
            ],
        )?;
        Ok(n == 1)
    }

    /// Record the outcome of a claimed payment.
    pub fn finish_payment(
        &self,
        key: &PaymentKey<'_>,
        status: PaymentStatus,
        tx: Option<&str>,
        detail: Option<&str>,
        now: u64,
    ) -> Result<(), StoreError> {
        self.conn().execute(
            "UPDATE payment SET status = ?4, tx = ?5, detail = ?6, updated_at = ?7
             WHERE network = ?1 AND payer = ?2 AND nonce = ?3",
            params![
                key.network,
                key.payer,
                key.nonce,
                status.as_str(),
                tx,
                detail,
                now as i64
            ],
        )?;
        Ok(())
    }

    /// Record the outcome of a payment that is still `claimed` (a pending settlement
    /// confirmed or failed); `false` when another call finished it first.
    pub fn finish_claimed(
        &self,
        key: &PaymentKey<'_>,
        status: PaymentStatus,
        tx: Option<&str>,
        detail: Option<&str>,
        now: u64,
    ) -> Result<bool, StoreError> {
        let n = self.conn().execute(
            "UPDATE payment SET status = ?4, tx = ?5, detail = ?6, updated_at = ?7
             WHERE network = ?1 AND payer = ?2 AND nonce = ?3 AND status = 'claimed'",
            params![
                key.network,
                key.payer,
                key.nonce,
                status.as_str(),
                tx,
                detail,
                now as i64
            ],
        )?;
        Ok(n == 1)
    }

    /// The SHA-256 of the payload that claimed a payment, if it is claimed (and was claimed
    /// since payloads are kept).
    pub fn payment_payload(&self, key: &PaymentKey<'_>) -> Result<Option<String>, StoreError> {
        Ok(self
            .conn()
            .query_row(
                "SELECT payload FROM payment WHERE network = ?1 AND payer = ?2 AND nonce = ?3",
                params![key.network, key.payer, key.nonce],
                |r| r.get::<_, Option<String>>(0),
            )
            .optional()?
            .flatten())
    }

    /// The recorded status of a payment, if claimed.
    pub fn payment_status(
        &self,
        key: &PaymentKey<'_>,
    ) -> Result<Option<(PaymentStatus, Option<String>)>, StoreError> {
        let row: Option<(String, Option<String>)> = self
            .conn()
            .query_row(
                "SELECT status, tx FROM payment WHERE network = ?1 AND payer = ?2 AND nonce = ?3",
                params![key.network, key.payer, key.nonce],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        Ok(row.map(|(s, tx)| (PaymentStatus::parse(&s), tx)))
    }

    /// The cached response for idempotency `key` created after `not_before`, if the key was
    /// first used for `request`; [`Idempotent::Reused`] when it was used for another request.
    pub fn idempotent_get(
        &self,
        key: &str,
        request: &str,
        not_before: u64,
    ) -> Result<Idempotent, StoreError> {
        let row: Option<(Vec<u8>, String)> = self
            .conn()
            .query_row(
                "SELECT body, request FROM idempotency WHERE key = ?1 AND created_at >= ?2",
                params![key, not_before as i64],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        Ok(match row {
            None => Idempotent::Fresh,
            Some((body, r)) if r == request => Idempotent::Cached(body),
            Some(_) => Idempotent::Reused,
        })
    }

    /// Remember `body` for `key` and `request` (the first write within the window wins);
    /// returns what is now stored for the key.
    pub fn idempotent_put(
        &self,
        key: &str,
        request: &str,
        body: &[u8],
        now: u64,
    ) -> Result<Idempotent, StoreError> {
        let conn = self.conn();
        conn.execute(
            "INSERT INTO idempotency (key, body, created_at, request) VALUES (?1, ?2, ?3, ?5)
             ON CONFLICT (key) DO UPDATE SET body = excluded.body,
                created_at = excluded.created_at, request = excluded.request
             WHERE idempotency.created_at < ?4",
            params![
                key,
                body,
                now as i64,
                now.saturating_sub(IDEMPOTENCY_WINDOW) as i64,
                request
            ],
        )?;
        let (body, r): (Vec<u8>, String) = conn.query_row(
            "SELECT body, request FROM idempotency WHERE key = ?1",
            params![key],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        Ok(if r == request {
            Idempotent::Cached(body)
        } else {
            Idempotent::Reused
        })
    }

    /// Keep the model interpretation of vow `vow_id`'s reading covering chain position
    /// `covers_seq` (JSON text), unless one covering a later position is already kept.
    /// An ask for it at or before that position is answered.
    pub fn put_interpretation(
        &self,
        vow_id: &str,
        covers_seq: u64,
        interpretation: &str,
        now: u64,
    ) -> Result<(), StoreError> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        tx.execute(
            "INSERT INTO reading (vow_id, covers_seq, interpretation, at) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (vow_id) DO UPDATE SET covers_seq = excluded.covers_seq,
                interpretation = excluded.interpretation, at = excluded.at
             WHERE reading.covers_seq <= excluded.covers_seq",
            params![vow_id, covers_seq as i64, interpretation, now as i64],
        )?;
        tx.execute(
            "DELETE FROM reading_ask WHERE vow_id = ?1 AND seq <= ?2",
            params![vow_id, covers_seq as i64],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// Keep, in one transaction, that a model reading was asked for each `(vow_id, seq)`
    /// (the chain position it is to cover) at `now`, until [`Store::put_interpretation`]
    /// keeps one covering it: the asks themselves live in memory, and a restart asks again
    /// for those left (`VowReader::readings_asked`).
    pub fn put_readings_asked(&self, asked: &[(String, u64)], now: u64) -> Result<(), StoreError> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        {
            let mut st = tx.prepare_cached(
                "INSERT INTO reading_ask (vow_id, seq, at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (vow_id) DO UPDATE SET seq = excluded.seq, at = excluded.at
                 WHERE reading_ask.seq < excluded.seq",
            )?;
            for (vow_id, seq) in asked {
                st.execute(params![vow_id, *seq as i64, now as i64])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Today's (`day`, UTC day number) free-tier counts, by counter and bucket.
    pub fn free_caps(&self, day: u64) -> Result<Vec<(String, String, u32)>, StoreError> {
        let conn = self.conn();
        let mut st = conn.prepare("SELECT counter, bucket, used FROM free_cap WHERE day = ?1")?;
        let rows = st.query_map(params![day as i64], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get::<_, i64>(2)?))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (c, b, n) = row?;
            out.push((c, b, u32::try_from(n.max(0)).unwrap_or(u32::MAX)));
        }
        Ok(out)
    }

    /// Record free-tier counts of `day` (each row's `used` replaces the stored one) and drop
    /// the counts of earlier days, in one transaction.
    pub fn put_free_caps(
        &self,
        day: u64,
        rows: &[(String, String, u32)],
    ) -> Result<(), StoreError> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        {
            let mut st = tx.prepare_cached(
                "INSERT INTO free_cap (counter, day, bucket, used) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (counter, day, bucket) DO UPDATE SET used = excluded.used",
            )?;
            for (c, b, n) in rows {
                st.execute(params![c, day as i64, b, i64::from(*n)])?;
            }
            tx.execute("DELETE FROM free_cap WHERE day < ?1", params![day as i64])?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Drop idempotency entries older than the window.
    pub fn prune_idempotency(&self, now: u64) -> Result<usize, StoreError> {
        Ok(self.conn().execute(
            "DELETE FROM idempotency WHERE created_at < ?1",
            params![now.saturating_sub(IDEMPOTENCY_WINDOW) as i64],
        )?)
    }
}

/// [`Tables`] on SQLite: the statements are [`Store`]'s own methods (here and in `payid.rs`).
impl Tables for Store {
    fn claim_payment(
        &self,
        key: &PaymentKey<'_>,
        payload: &str,
        rail: &str,
        resource: &str,
        amount: &str,
        now: u64,
    ) -> Result<bool, StoreError> {
        Store::claim_payment(self, key, payload, rail, resource, amount, now)
    }

    fn finish_payment(
        &self,
        key: &PaymentKey<'_>,
        status: PaymentStatus,
        tx: Option<&str>,
        detail: Option<&str>,
        now: u64,
    ) -> Result<(), StoreError> {
        Store::finish_payment(self, key, status, tx, detail, now)
    }

    fn finish_claimed(
        &self,
        key: &PaymentKey<'_>,
        status: PaymentStatus,
        tx: Option<&str>,
        detail: Option<&str>,
        now: u64,
    ) -> Result<bool, StoreError> {
        Store::finish_claimed(self, key, status, tx, detail, now)
    }

    fn payment_payload(&self, key: &PaymentKey<'_>) -> Result<Option<String>, StoreError> {
        Store::payment_payload(self, key)
    }

    fn payment_status(
        &self,
        key: &PaymentKey<'_>,
    ) -> Result<Option<(PaymentStatus, Option<String>)>, StoreError> {
        Store::payment_status(self, key)
    }

    fn idempotent_get(
        &self,
        key: &str,
        request: &str,
        not_before: u64,
    ) -> Result<Idempotent, StoreError> {
        Store::idempotent_get(self, key, request, not_before)
    }

    fn idempotent_put(
        &self,
        key: &str,
        request: &str,
        body: &[u8],
        now: u64,
    ) -> Result<Idempotent, StoreError> {
        Store::idempotent_put(self, key, request, body, now)
    }

    fn prune_idempotency(&self, now: u64) -> Result<usize, StoreError> {
        Store::prune_idempotency(self, now)
    }

    fn payment_id(&self, scope: &str, id: &str) -> Result<Option<PaymentIdBinding>, StoreError> {
        Store::payment_id(self, scope, id)
    }

    fn bind_payment_id(
        &self,
        scope: &str,
        id: &str,
        payload: &str,
        request: &str,
        key: &PaymentKey<'_>,
        now: u64,
    ) -> Result<PaymentIdBinding, StoreError> {
        Store::bind_payment_id(self, scope, id, payload, request, key, now)
    }

    fn payment_id_pending(
        &self,
        scope: &str,
        id: &str,
        tx: &str,
        record: Option<&[u8]>,
        now: u64,
    ) -> Result<(), StoreError> {
        Store::payment_id_pending(self, scope, id, tx, record, now)
    }

    fn payment_id_served(
        &self,
        scope: &str,
        id: &str,
        answer: &ServedAnswer<'_>,
        now: u64,
    ) -> Result<(), StoreError> {
        Store::payment_id_served(self, scope, id, answer, now)
    }

    fn put_interpretation(
        &self,
        vow_id: &str,
        covers_seq: u64,
        interpretation: &str,
        now: u64,
    ) -> Result<(), StoreError> {
        Store::put_interpretation(self, vow_id, covers_seq, interpretation, now)
    }

    fn put_readings_asked(&self, asked: &[(String, u64)], now: u64) -> Result<(), StoreError> {
        Store::put_readings_asked(self, asked, now)
    }

    fn free_caps(&self, day: u64) -> Result<Vec<(String, String, u32)>, StoreError> {
        Store::free_caps(self, day)
    }

    fn put_free_caps(&self, day: u64, rows: &[(String, String, u32)]) -> Result<(), StoreError> {
        Store::put_free_caps(self, day, rows)
    }
}

fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    apply_migrations(conn, MIGRATIONS)
}

/// Bring `conn` to the newest of `migrations` (index + 1 is the schema version, kept in
/// `user_version`), each in a transaction of its own; refuse a newer database.
pub(crate) fn apply_migrations(
    conn: &mut Connection,
    migrations: &[&str],
) -> Result<(), StoreError> {
    let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    let known = migrations.len() as i64;
    if version > known {
        return Err(StoreError::TooNew {
            found: version,
            known,
        });
    }
    for (i, sql) in migrations.iter().enumerate().skip(version as usize) {
        let tx = conn.transaction()?;
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", (i + 1) as i64)?;
        tx.commit()?;
    }
    Ok(())
}

/// The steps of SQLite's plan for `sql` with `params` bound (`EXPLAIN QUERY PLAN`), for tests
/// that hold a statement to the index it must search.
#[cfg(test)]
pub(crate) fn query_plan(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
) -> Vec<String> {
    conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
        .and_then(|mut st| {
            st.query_map(params, |r| r.get::<_, String>(3))?
                .collect::<rusqlite::Result<_>>()
        })
        .unwrap_or_else(|e| panic!("the plan of {sql}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn key(nonce: &str) -> PaymentKey<'_> {
        PaymentKey {
            network: "eip155:31337",
            payer: "0xabc",
            nonce,
        }
    }

    #[test]
    fn migrations_apply_once_and_reopen() {
        let dir = tempfile::tempdir().unwrap();
        drop(Store::open(dir.path()).unwrap());
        let s = Store::open(dir.path()).unwrap();
        let v: i64 = s
            .conn()
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(v, MIGRATIONS.len() as i64);
        let mode: String = s
            .conn()
            .pragma_query_value(None, "journal_mode", |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
    }

    #[test]
    fn a_reading_asked_for_is_kept_until_one_covering_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(dir.path()).unwrap();
        let reader = crate::vows::VowReader::open(&s).unwrap();
        s.put_readings_asked(&[("a".into(), 3), ("b".into(), 1)], 10)
            .unwrap();
        // A later position raises the ask; an earlier one does not lower it.
        s.put_readings_asked(&[("a".into(), 5)], 11).unwrap();
        s.put_readings_asked(&[("a".into(), 4)], 12).unwrap();
        assert_eq!(reader.readings_asked().unwrap(), ["a", "b"]);
        // An answer for an earlier position leaves the later ask.
        s.put_interpretation("a", 4, "{}", 13).unwrap();
        s.put_interpretation("b", 1, "{}", 13).unwrap();
        assert_eq!(reader.readings_asked().unwrap(), ["a"]);
        s.put_interpretation("a", 5, "{}", 14).unwrap();
        assert!(reader.readings_asked().unwrap().is_empty());
    }

    #[test]
    fn exactly_one_of_many_concurrent_claims_wins() {
        let dir = tempfile::tempdir().unwrap();
        let s = Arc::new(Store::open(dir.path()).unwrap());
        let wins: usize = (0..50)
            .map(|_| {
                let s = s.clone();
                std::thread::spawn(move || {
                    s.claim_payment(&key("0x01"), "p1", "eip3009", "/profile", "100000", 1)
                        .unwrap()
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|h| h.join().unwrap())
            .filter(|w| *w)
            .count();
        assert_eq!(wins, 1);
        s.finish_payment(&key("0x01"), PaymentStatus::Settled, Some("0xtx"), None, 2)
            .unwrap();
        assert_eq!(
            s.payment_status(&key("0x01")).unwrap(),
            Some((PaymentStatus::Settled, Some("0xtx".into())))
        );
        assert!(s
            .claim_payment(&key("0x02"), "p2", "eip3009", "/profile", "100000", 1)
            .unwrap());
    }

    #[test]
    fn data_files_are_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let s = Store::open(&data).unwrap();
        s.idempotent_put("k", "r", b"x", 1).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&data), 0o700);
        for f in [
            "conduct.sqlite3",
            "conduct.sqlite3-wal",
            "conduct.sqlite3-shm",
        ] {
            assert_eq!(mode(&data.join(f)), 0o600, "{f}");
        }
    }

    #[test]
    fn a_reading_is_kept_unless_a_later_one_is() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(dir.path()).unwrap();
        s.put_interpretation("v", 3, "{\"t\":3}", 1).unwrap();
        s.put_interpretation("v", 2, "{\"t\":2}", 2).unwrap();
        let r = crate::vows::VowReader::open(&s).unwrap();
        assert_eq!(r.reading("v").unwrap(), Some((3, "{\"t\":3}".to_owned())));
        s.put_interpretation("v", 4, "{\"t\":4}", 3).unwrap();
        assert_eq!(r.reading("v").unwrap(), Some((4, "{\"t\":4}".to_owned())));
        assert_eq!(r.reading("w").unwrap(), None);
    }

    #[test]
    fn free_caps_survive_a_reopen_and_drop_past_days() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(dir.path()).unwrap();
        s.put_free_caps(7, &[("demo".into(), "10.0.0.1".into(), 3)])
            .unwrap();
        drop(s);
        let s = Store::open(dir.path()).unwrap();
        assert_eq!(
            s.free_caps(7).unwrap(),
            vec![("demo".into(), "10.0.0.1".into(), 3)]
        );
        s.put_free_caps(8, &[]).unwrap();
        assert!(s.free_caps(7).unwrap().is_empty());
    }

    #[test]
    fn idempotency_holds_for_the_window_then_expires() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(dir.path()).unwrap();
        let t0 = 1_000_000;
        let cached = |b: &[u8]| Idempotent::Cached(b.to_vec());
        assert_eq!(
            s.idempotent_put("k", "r", b"first", t0).unwrap(),
            cached(b"first")
        );
        // A second write inside the window keeps the first body.
        assert_eq!(
            s.idempotent_put("k", "r", b"second", t0 + 1_000).unwrap(),
            cached(b"first")
        );
        assert_eq!(
            s.idempotent_get("k", "r", t0 + 1_000 - IDEMPOTENCY_WINDOW)
                .unwrap(),
            cached(b"first")
        );
        // The same key for another request is refused, read or written.
        assert_eq!(
            s.idempotent_get("k", "other", t0 + 1_000 - IDEMPOTENCY_WINDOW)
                .unwrap(),
            Idempotent::Reused
        );
        assert_eq!(
            s.idempotent_put("k", "other", b"x", t0 + 1_000).unwrap(),
            Idempotent::Reused
        );
        // Past the window the entry is stale and may be replaced.
        let later = t0 + IDEMPOTENCY_WINDOW + 1;
        assert_eq!(
            s.idempotent_get("k", "r", later - IDEMPOTENCY_WINDOW)
                .unwrap(),
            Idempotent::Fresh
        );
        assert_eq!(
            s.idempotent_put("k", "other", b"third", later).unwrap(),
            cached(b"third")
        );
        assert_eq!(
            s.prune_idempotency(later + IDEMPOTENCY_WINDOW + 1).unwrap(),
            1
        );
    }
}
