//! The vows' tables (`vow`, `vow_entry`, `report_signature`, `reading`) and the donated-trace
//! store: their statements inside the append transaction (for [`super::append`]) and
//! [`VowReader`], the reads of the committed vows for the renderer and the api.

use std::sync::Mutex;

use rusqlite::{params, Connection, ErrorCode, OptionalExtension};

use super::{Store, StoreError};
use crate::ledger::append::{PutVow, Sworn, VowHead, VowIndex};
use crate::state::vows::{BindingRow, FamiliarRow, PledgeRow, VowReads};
pub use crate::state::vows::{ChainHead, Records, VowClock, VowReader, VowRow};
use conduct_core::munus::record::BoardRecord;

pub(super) fn is_constraint(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(f, _) if f.code == ErrorCode::ConstraintViolation)
}

pub(super) fn put_vow(conn: &Connection, vow: &VowIndex<'_>) -> Result<PutVow, StoreError> {
    let inserted = conn.execute(
        "INSERT INTO vow (vow_id, log_index, agent, text, sealed, sandbox, wallet,
            signed_message, cadence_seconds, created_at, head_seq, head_hash, head_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 0, ?11, ?10)",
        params![
            vow.vow_id,
            vow.log_index as i64,
            vow.agent,
            vow.text,
            vow.sealed,
            vow.sandbox,
            vow.wallet,
            vow.signed_message,
            vow.cadence_seconds as i64,
            vow.at as i64,
            vow.head_hash,
        ],
    );
    match inserted {
        Ok(_) => Ok(PutVow::Indexed),
        Err(e) if is_constraint(&e) => {
            let existing: Option<String> = conn
                .query_row(
                    "SELECT vow_id FROM vow WHERE signed_message = ?1",
                    params![vow.signed_message],
                    |r| r.get(0),
                )
                .optional()?;
            Ok(existing.map_or(PutVow::Collision, PutVow::TakenAs))
        }
        Err(e) => Err(e.into()),
    }
}

pub(super) fn vow_head(conn: &Connection, vow_id: &str) -> Result<Option<VowHead>, StoreError> {
    Ok(conn
        .query_row(
            "SELECT head_seq, head_hash, head_at FROM vow WHERE vow_id = ?1",
            params![vow_id],
            |r| {
                Ok(VowHead {
                    seq: r.get::<_, i64>(0)? as u64,
                    hash: r.get(1)?,
                    at: r.get::<_, i64>(2)? as u64,
                })
            },
        )
        .optional()?)
}

pub(super) fn move_head(
    conn: &Connection,
    vow_id: &str,
    head: &VowHead,
    log_index: u64,
) -> Result<(), StoreError> {
    conn.execute(
        "UPDATE vow SET head_seq = ?2, head_hash = ?3, head_at = ?4 WHERE vow_id = ?1",
        params![vow_id, head.seq as i64, head.hash, head.at as i64],
    )?;
    conn.execute(
        "INSERT INTO vow_entry (vow_id, seq, log_index, at) VALUES (?1, ?2, ?3, ?4)",
        params![vow_id, head.seq as i64, log_index as i64, head.at as i64],
    )?;
    Ok(())
}

pub(super) fn use_report_signature(
    conn: &Connection,
    signature: &str,
    vow_id: &str,
    seq: u64,
) -> Result<Option<u64>, StoreError> {
    let used = conn.execute(
        "INSERT INTO report_signature (signature, vow_id, seq) VALUES (?1, ?2, ?3)",
        params![signature, vow_id, seq as i64],
    );
    match used {
        Ok(_) => Ok(None),
        Err(e) if is_constraint(&e) => {
            let first: Option<i64> = conn
                .query_row(
                    "SELECT seq FROM report_signature WHERE signature = ?1",
                    params![signature],
                    |r| r.get(0),
                )
                .optional()?;
            Ok(Some(first.unwrap_or(0) as u64))
        }
        Err(e) => Err(e.into()),
    }
}

pub(super) fn sworn(conn: &Connection, vow_id: &str) -> Result<Option<Sworn>, StoreError> {
    Ok(conn
        .query_row(
            "SELECT sandbox, wallet FROM vow WHERE vow_id = ?1",
            params![vow_id],
            |r| {
                Ok(Sworn {
                    sandbox: r.get(0)?,
                    wallet: r.get(1)?,
                })
            },
        )
        .optional()?)
}

/// A vow row as the unit tests of the jobs set it up: sworn (or sandbox) with `wallet`,
/// at log index `log_index`, no entries.
#[cfg(test)]
pub(crate) fn put_test_vow(
    store: &Store,
    vow_id: &str,
    log_index: u64,
    sandbox: bool,
    wallet: &str,
) {
    store
        .connection()
        .unwrap()
        .execute(
            "INSERT INTO vow (vow_id, log_index, agent, text, sealed, sandbox, wallet,
                signed_message, cadence_seconds, created_at, head_seq, head_hash, head_at)
             VALUES (?1, ?2, 'a', 't', 0, ?3, ?4, NULL, 3600, 0, 0, '', 0)",
            params![vow_id, log_index as i64, sandbox, wallet],
        )
        .unwrap();
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

/// Vow `vow_id`'s row, if there is one.
fn vow_by_id(c: &Connection, vow_id: &str) -> rusqlite::Result<Option<VowRow>> {
    c.prepare_cached(&format!("SELECT {VOW_COLUMNS} FROM vow WHERE vow_id = ?1"))?
        .query_row(params![vow_id], vow_row)
        .optional()
}

/// The page cache of the reader connections together, KiB, shared out evenly (SQLite's default
/// is 2 MiB each). A render reads a vow's records by index from anywhere in the file; with the
/// default, most of those reads went to the kernel (`pread`, 8% of the CPU of a random-vow
/// report-in at 20,000 vows; BENCHMARKS.md, section 14).
const READER_CACHE_KIB: i64 = 128 * 1024;

/// [`VowReads`] on SQLite: reads of the committed vows (and of the records that name them:
/// npub bindings, pledges, familiars) over a few connections of their own (so renders of
/// different vows on different threads do not wait for each other).
pub struct SqliteVows {
    conns: Vec<Mutex<Connection>>,
}

impl std::fmt::Debug for SqliteVows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteVows")
            .field("connections", &self.conns.len())
            .finish_non_exhaustive()
    }
}

/// The row of a vow's entry `seq`, read through the index a new entry's row is written into.
const ENTRY_AT_HEAD: &str = "SELECT seq FROM vow_entry WHERE vow_id = ?1 AND seq = ?2";

impl VowReader {
    /// A reader of the SQLite store `store`.
    pub fn open(store: &Store) -> Result<VowReader, StoreError> {
        Ok(VowReader::new(Box::new(SqliteVows::open(store)?)))
    }
}

impl SqliteVows {
    /// A reader over new connections to `store`, one per available core.
    pub fn open(store: &Store) -> Result<SqliteVows, StoreError> {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
        let conns = (0..n)
            .map(|_| {
                let c = store.connection()?;
                c.pragma_update(None, "cache_size", -READER_CACHE_KIB / n as i64)?;
                Ok::<_, StoreError>(Mutex::new(c))
            })
            .collect::<Result<_, _>>()?;
        Ok(SqliteVows { conns })
    }

    pub(super) fn with<T>(
        &self,
        f: impl FnOnce(&mut Connection) -> rusqlite::Result<T>,
    ) -> Result<T, StoreError> {
        Ok(f(&mut self.pick())?)
    }

    /// A free connection, or the first one once it is free.
    fn pick(&self) -> std::sync::MutexGuard<'_, Connection> {
        let free = self.conns.iter().find_map(|c| c.try_lock().ok());
        match free {
            Some(g) => g,
            None => conduct_core::sync::lock(&self.conns[0]),
        }
    }
}

impl VowReads for SqliteVows {
    /// One vow.
    fn vow(&self, vow_id: &str) -> Result<Option<VowRow>, StoreError> {
        self.with(|c| vow_by_id(c, vow_id))
    }

    /// One vow about to take an entry: [`VowReader::vow`], with the page of its index of
    /// entries that the entry's row goes into read on the way (the row of its head entry). The
    /// sequencer commits batches one vow after another; a page it finds in the page cache
    /// costs no disk read while the whole batch waits (at a million vows that page is rarely
    /// cached: BENCHMARKS.md section 19).
    fn vow_to_append(&self, vow_id: &str) -> Result<Option<VowRow>, StoreError> {
        self.with(|c| {
            let row = vow_by_id(c, vow_id)?;
            if let Some(row) = &row {
                c.prepare_cached(ENTRY_AT_HEAD)?
                    .query_row(params![vow_id, row.head_seq as i64], |_| Ok(()))
                    .optional()?;
            }
            Ok(row)
        })
    }

    /// Every vow, by agent name then id.
    fn all(&self) -> Result<Vec<VowRow>, StoreError> {
        self.with(|c| {
            let mut st = c.prepare(&format!(
                "SELECT {VOW_COLUMNS} FROM vow ORDER BY agent, vow_id"
            ))?;
            let rows = st.query_map([], vow_row)?;
            rows.collect()
        })
    }

    /// At most `limit` vows taken after the one at log index `after` (from the first when
    /// `None`), in the order they were taken: the signed index's pages and tail
    /// (library/VOWS.md).
    fn taken_after(&self, after: Option<u64>, limit: usize) -> Result<Vec<VowRow>, StoreError> {
        let after = after.map_or(-1, |i| i as i64);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.with(|c| {
            let mut st = c.prepare_cached(&format!(
                "SELECT {VOW_COLUMNS} FROM vow WHERE log_index > ?1 ORDER BY log_index LIMIT ?2"
            ))?;
            let rows = st.query_map(params![after, limit], vow_row)?;
            rows.collect()
        })
    }

    /// The size of the committed log: every record below it is committed (the leaves, the
    /// chain heads and the checkpoint move in one transaction).
    fn log_size(&self) -> Result<u64, StoreError> {
        self.with(|c| {
            c.prepare_cached("SELECT coalesce(max(idx) + 1, 0) FROM leaf")?
                .query_row([], |r| Ok(r.get::<_, i64>(0)? as u64))
        })
    }

    /// At most `limit` records at log index `from` or later that change a vow's pages, as
    /// (vow id, log index), by log index: vow records, entries and npub bindings (a pledge is on
    /// no page). What a restart re-renders after the tree's integration mark
    /// (`crate::integrated`), and what the mark is checked against.
    fn touched_since(&self, from: u64, limit: usize) -> Result<Vec<(String, u64)>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.with(|c| {
            let mut st = c.prepare_cached(
                "SELECT vow_id, log_index FROM (
                   SELECT vow_id, log_index FROM vow WHERE log_index >= ?1
                   UNION ALL SELECT vow_id, log_index FROM vow_entry WHERE log_index >= ?1
                   UNION ALL SELECT vow_id, log_index FROM npub_binding WHERE log_index >= ?1)
                 ORDER BY log_index LIMIT ?2",
            )?;
            let rows = st.query_map(params![from as i64, limit], |r| {
                Ok((r.get(0)?, r.get::<_, i64>(1)? as u64))
            })?;
            rows.collect()
        })
    }

    /// The vows whose model interpretation was kept at or after `at` (service clock), by id:
    /// their readings change outside the log.
    fn interpreted_since(&self, at: u64) -> Result<Vec<String>, StoreError> {
        self.with(|c| {
            let mut st =
                c.prepare_cached("SELECT vow_id FROM reading WHERE at >= ?1 ORDER BY vow_id")?;
            let rows = st.query_map(params![at as i64], |r| r.get(0))?;
            rows.collect()
        })
    }

    /// The vows whose model reading was asked for and not yet kept
    /// (`Store::put_readings_asked`), by id.
    fn readings_asked(&self) -> Result<Vec<String>, StoreError> {
        self.with(|c| {
            let mut st = c.prepare_cached("SELECT vow_id FROM reading_ask ORDER BY vow_id")?;
            let rows = st.query_map([], |r| r.get(0))?;
            rows.collect()
        })
    }

    /// At most `limit` vows' window clocks after the vow id `after` (from the first when
    /// empty), by id: what schedules their window boundaries without rendering them.
    fn clocks_after(&self, after: &str, limit: usize) -> Result<Vec<VowClock>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.with(|c| {
            let mut st = c.prepare_cached(
                "SELECT vow_id, created_at, cadence_seconds FROM vow WHERE vow_id > ?1
                 ORDER BY vow_id LIMIT ?2",
            )?;
            let rows = st.query_map(params![after, limit], |r| {
                Ok(VowClock {
                    vow_id: r.get(0)?,
                    start: r.get::<_, i64>(1)? as u64,
                    cadence: r.get::<_, i64>(2)? as u64,
                })
            })?;
            rows.collect()
        })
    }

    /// Every vow a lookup key names in any role: its vow id, its agent name, or its wallet
    /// (compared in lowercase), oldest first.
    fn matching(&self, lookup: &str) -> Result<Vec<VowRow>, StoreError> {
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
    fn links(&self, vow_id: &str) -> Result<Option<(VowRow, Records)>, StoreError> {
        self.with(|c| {
            let tx = c.transaction()?;
            let Some(row) = vow_by_id(&tx, vow_id)? else {
                return Ok(None);
            };
            let records = records_from(&tx, vow_id, row.log_index, row.head_seq, 0)?;
            Ok(Some((row, records)))
        })
    }

    /// The kept model interpretation of a vow's reading (JSON text) and the chain position it
    /// covers, if any.
    fn reading(&self, vow_id: &str) -> Result<Option<(u64, String)>, StoreError> {
        self.with(|c| {
            c.query_row(
                "SELECT covers_seq, interpretation FROM reading WHERE vow_id = ?1",
                params![vow_id],
                |r| Ok((r.get::<_, i64>(0)? as u64, r.get(1)?)),
            )
            .optional()
        })
    }

    /// A vow's chain head and its records from chain position `from` on (position 0 is the
    /// vow record, position n is entry seq n), from one snapshot; `None` when there is no
    /// such vow.
    fn links_from(
        &self,
        vow_id: &str,
        from: u64,
    ) -> Result<Option<(ChainHead, Records)>, StoreError> {
        self.with(|c| {
            let tx = c.transaction()?;
            let Some((log_index, head)) = tx
                .prepare_cached("SELECT log_index, head_seq, head_hash FROM vow WHERE vow_id = ?1")?
                .query_row(params![vow_id], |r| {
                    Ok((
                        r.get::<_, i64>(0)? as u64,
                        ChainHead {
                            seq: r.get::<_, i64>(1)? as u64,
                            hash: r.get(2)?,
                        },
                    ))
                })
                .optional()?
            else {
                return Ok(None);
            };
            let records = records_from(&tx, vow_id, log_index, head.seq, from)?;
            Ok(Some((head, records)))
        })
    }

    fn binding(&self, npub: &str) -> Result<Option<BindingRow>, StoreError> {
        SqliteVows::binding(self, npub)
    }

    fn npubs_of(&self, vow_id: &str) -> Result<Vec<BindingRow>, StoreError> {
        SqliteVows::npubs_of(self, vow_id)
    }

    fn bindings(&self) -> Result<Vec<BindingRow>, StoreError> {
        SqliteVows::bindings(self)
    }

    fn npubs_bound_since(&self, from: u64) -> Result<Vec<String>, StoreError> {
        SqliteVows::npubs_bound_since(self, from)
    }

    fn npubs_ever_of(&self, vow_id: &str) -> Result<Vec<String>, StoreError> {
        SqliteVows::npubs_ever_of(self, vow_id)
    }

    fn pledge(&self, vow_id: &str) -> Result<Option<PledgeRow>, StoreError> {
        SqliteVows::pledge(self, vow_id)
    }

    fn familiar(&self, id: &str) -> Result<Option<FamiliarRow>, StoreError> {
        SqliteVows::familiar(self, id)
    }

    fn familiars(&self) -> Result<Vec<FamiliarRow>, StoreError> {
        SqliteVows::familiars(self)
    }

    fn board_records(&self) -> Result<Vec<(u64, BoardRecord)>, StoreError> {
        board_records(&self.pick())
    }
}

/// Every board record committed (and written by the earlier jobs of this transaction), in log
/// order.
pub(super) fn board_records(conn: &Connection) -> Result<Vec<(u64, BoardRecord)>, StoreError> {
    let mut st = conn.prepare_cached(
        // Not joined with `leaf`: a batch's earlier jobs are visible here before its leaves are.
        "SELECT log_index, data FROM munus_record ORDER BY log_index",
    )?;
    let rows = st.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, Vec<u8>>(1)?)))?;
    let mut out = Vec::new();
    for row in rows {
        let (i, data) = row?;
        out.extend(crate::state::board_row(i, &data));
    }
    Ok(out)
}

/// Vow `vow_id`'s records (its own at log index `vow_index`, then its entries up to seq
/// `head_seq`) from chain position `from` on, read in transaction `tx`.
fn records_from(
    tx: &rusqlite::Transaction<'_>,
    vow_id: &str,
    vow_index: u64,
    head_seq: u64,
    from: u64,
) -> Result<Records, rusqlite::Error> {
    let mut records = Vec::with_capacity((head_seq + 1).saturating_sub(from) as usize);
    if from == 0 {
        let leaf: Vec<u8> = tx
            .prepare_cached("SELECT data FROM leaf WHERE idx = ?1")?
            .query_row(params![vow_index as i64], |r| r.get(0))?;
        records.push((vow_index, leaf));
    }
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
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `vow_to_append` reads on the way is the leaf of the index of entries where
    /// `(vow_id, head_seq + 1)` goes: a search of that index, covering (no table row read).
    #[test]
    fn the_entry_at_the_head_is_read_through_the_index_an_append_writes() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let conn = store.connection().unwrap();
        let plan = crate::store::query_plan(&conn, ENTRY_AT_HEAD, params!["v", 1]);
        // The index of the primary key `(vow_id, seq)`: every new entry's row is put there.
        let pk: String = conn
            .query_row(
                "SELECT name FROM pragma_index_list('vow_entry') WHERE origin = 'pk'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(
            plan,
            [format!(
                "SEARCH vow_entry USING COVERING INDEX {pk} (vow_id=? AND seq=?)"
            )]
        );
    }
}
