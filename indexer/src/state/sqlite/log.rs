//! The log's tables on SQLite ([`SqliteLog`]): [`LogState`] over the ledger's own connection to
//! `<data>/conduct.sqlite3` (the contract heads [`crate::state`]); a batch is `BEGIN
//! IMMEDIATE` ([`super::append::SqliteBatch`]), a snapshot a deferred read transaction.

use std::path::PathBuf;

use conduct_core::tlog::Hash;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use super::append::SqliteBatch;
use super::{configured, StoreError};
use crate::state::{LogBatch, LogRead, LogState, StoredCheckpoint};

/// The first and last leaf's index (-1 when none), each read through the primary key: SQLite
/// answers `MIN` or `MAX` alone from the index, but `MIN(idx), MAX(idx)` in one select scans
/// the whole table (the log's bytes: seconds at a million records).
pub(crate) const FIRST_AND_LAST_LEAF: &str = "SELECT COALESCE((SELECT MIN(idx) FROM leaf), -1), \
     COALESCE((SELECT MAX(idx) FROM leaf), -1)";

/// The log over its own connection.
pub struct SqliteLog {
    conn: Connection,
    path: PathBuf,
}

impl std::fmt::Debug for SqliteLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteLog")
            .field("path", &self.path)
            .finish()
    }
}

impl SqliteLog {
    /// The log in the migrated database at `path`, over a new connection.
    pub(crate) fn open(path: PathBuf) -> Result<SqliteLog, StoreError> {
        Ok(SqliteLog {
            conn: configured(&path)?,
            path,
        })
    }
}

fn i64_of(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn u64_of(n: i64, what: &str) -> Result<u64, StoreError> {
    u64::try_from(n).map_err(|_| StoreError::Corrupt(format!("negative {what} {n}")))
}

/// The reads, on a connection or a transaction of it.
fn checkpoint(conn: &Connection) -> Result<Option<StoredCheckpoint>, StoreError> {
    let row = conn
        .query_row(
            "SELECT size, root, note FROM checkpoint WHERE id = 1",
            [],
            |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, Vec<u8>>(1)?,
                    r.get::<_, String>(2)?,
                ))
            },
        )
        .optional()?;
    row.map(|(size, root, note)| {
        Ok(StoredCheckpoint {
            size: u64_of(size, "size")?,
            root,
            note,
        })
    })
    .transpose()
}

fn leaf_span(conn: &Connection) -> Result<Option<(u64, u64)>, StoreError> {
    let (min, max): (i64, i64) =
        conn.query_row(FIRST_AND_LAST_LEAF, [], |r| Ok((r.get(0)?, r.get(1)?)))?;
    if min < 0 || max < 0 {
        return Ok(None);
    }
    Ok(Some((u64_of(min, "index")?, u64_of(max, "index")?)))
}

fn hashes(
    conn: &Connection,
    level: u8,
    first: u64,
    count: u64,
) -> Result<Vec<Vec<u8>>, StoreError> {
    let (lo, hi) = (i64_of(first), i64_of(first.saturating_add(count)));
    let rows = if level == 0 {
        let mut st =
            conn.prepare_cached("SELECT hash FROM leaf WHERE idx >= ?1 AND idx < ?2 ORDER BY idx")?;
        let rows = st.query_map(params![lo, hi], |r| r.get(0))?;
        rows.collect::<Result<_, _>>()?
    } else {
        let mut st = conn.prepare_cached(
            "SELECT hash FROM node WHERE level = ?3 AND idx >= ?1 AND idx < ?2 ORDER BY idx",
        )?;
        let rows = st.query_map(params![lo, hi, i64::from(level)], |r| r.get(0))?;
        rows.collect::<Result<_, _>>()?
    };
    Ok(rows)
}

fn entries(conn: &Connection, first: u64, count: u64) -> Result<Vec<Vec<u8>>, StoreError> {
    let mut st =
        conn.prepare_cached("SELECT data FROM leaf WHERE idx >= ?1 AND idx < ?2 ORDER BY idx")?;
    let rows = st.query_map(
        params![i64_of(first), i64_of(first.saturating_add(count))],
        |r| r.get(0),
    )?;
    Ok(rows.collect::<Result<_, _>>()?)
}

fn bundle_len(conn: &Connection, first: u64, count: u64) -> Result<u64, StoreError> {
    let len: i64 = conn.query_row(
        "SELECT COALESCE(SUM(length(data)) + 2 * COUNT(*), 0) FROM leaf WHERE idx >= ?1 AND idx < ?2",
        params![i64_of(first), i64_of(first.saturating_add(count))],
        |r| r.get(0),
    )?;
    u64_of(len, "length")
}

/// [`LogRead`] by the functions above, for a connection and for a transaction of it.
macro_rules! log_reads {
    ($ty:ty, $conn:ident => $e:expr) => {
        impl LogRead for $ty {
            fn checkpoint(&self) -> Result<Option<StoredCheckpoint>, StoreError> {
                let $conn = &*self;
                checkpoint($e)
            }
            fn leaf_span(&self) -> Result<Option<(u64, u64)>, StoreError> {
                let $conn = &*self;
                leaf_span($e)
            }
            fn hashes(
                &self,
                level: u8,
                first: u64,
                count: u64,
            ) -> Result<Vec<Vec<u8>>, StoreError> {
                let $conn = &*self;
                hashes($e, level, first, count)
            }
            fn entries(&self, first: u64, count: u64) -> Result<Vec<Vec<u8>>, StoreError> {
                let $conn = &*self;
                entries($e, first, count)
            }
            fn bundle_len(&self, first: u64, count: u64) -> Result<u64, StoreError> {
                let $conn = &*self;
                bundle_len($e, first, count)
            }
        }
    };
}

/// A read transaction of the log's connection.
struct SqliteSnapshot<'c>(rusqlite::Transaction<'c>);

log_reads!(SqliteLog, s => &s.conn);
log_reads!(SqliteSnapshot<'_>, s => &s.0);

impl LogState for SqliteLog {
    fn create_checkpoint(&mut self, root: &Hash, note: &str) -> Result<(), StoreError> {
        self.conn.execute(
            "INSERT INTO checkpoint (id, size, root, note) VALUES (1, 0, ?1, ?2)
             ON CONFLICT (id) DO NOTHING",
            params![&root[..], note],
        )?;
        Ok(())
    }

    fn begin(&mut self) -> Result<Box<dyn LogBatch + '_>, StoreError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        Ok(Box::new(SqliteBatch::new(tx)))
    }

    fn snapshot(&self) -> Result<Box<dyn LogRead + '_>, StoreError> {
        // Deferred: it takes SQLite's read snapshot at its first read, and nothing else uses
        // this connection meanwhile (the ledger's own thread, or a reader's lock).
        Ok(Box::new(SqliteSnapshot(self.conn.unchecked_transaction()?)))
    }

    fn probe_write(&mut self) -> Result<(), StoreError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute("UPDATE checkpoint SET note = note WHERE id = 1", [])?;
        Ok(tx.commit()?)
    }

    fn reopen(&mut self) -> Result<(), StoreError> {
        self.conn = configured(&self.path)?;
        Ok(())
    }

    fn locator(&self) -> String {
        self.path.display().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opening_reads_the_first_and_last_leaf_without_a_scan() {
        let dir = tempfile::tempdir().unwrap();
        let store = super::super::Store::open(dir.path()).unwrap();
        let conn = store.connection().unwrap();
        let plan = super::super::query_plan(&conn, FIRST_AND_LAST_LEAF, []);
        assert!(
            plan.iter().all(|step| !step.starts_with("SCAN leaf")),
            "{plan:?}"
        );
        assert!(
            plan.iter().any(|step| step.starts_with("SEARCH leaf")),
            "{plan:?}"
        );
    }
}
