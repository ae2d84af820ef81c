//! The log's tables on PostgreSQL ([`PgLog`]): [`LogState`] over a connection of its own (the
//! contract heads [`crate::state`]). A batch is one `READ COMMITTED` transaction whose
//! checkpoint moves by compare-and-swap (`append.rs`); a snapshot is a `REPEATABLE READ READ
//! ONLY` transaction, so all its reads see one committed state.

use conduct_core::tlog::Hash;

use super::append::PgBatch;
use super::{i64_of, u64_of, Conn, Postgres};
use crate::state::{LogBatch, LogRead, LogState, StoreError, StoredCheckpoint};

/// The log over its own connection.
pub struct PgLog {
    state: Postgres,
    conn: Conn,
}

impl std::fmt::Debug for PgLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgLog")
            .field("at", &self.state.locator())
            .finish_non_exhaustive()
    }
}

impl PgLog {
    pub(super) fn new(state: Postgres, conn: Conn) -> PgLog {
        PgLog { state, conn }
    }
}

/// The reads, on the log's connection inside a transaction or not.
fn checkpoint(conn: &Conn) -> Result<Option<StoredCheckpoint>, StoreError> {
    let Some(row) = conn.query_opt("SELECT size, root, note FROM checkpoint WHERE id = 1", &[])?
    else {
        return Ok(None);
    };
    Ok(Some(StoredCheckpoint {
        size: u64_of(row.try_get(0)?, "size")?,
        root: row.try_get(1)?,
        note: row.try_get(2)?,
    }))
}

fn leaf_span(conn: &Conn) -> Result<Option<(u64, u64)>, StoreError> {
    // Two subqueries, each answered from the primary key's index.
    let row = conn
        .query_opt(
            "SELECT (SELECT MIN(idx) FROM leaf), (SELECT MAX(idx) FROM leaf)",
            &[],
        )?
        .ok_or_else(|| StoreError::Corrupt("no row from the leaf span".into()))?;
    let (min, max): (Option<i64>, Option<i64>) = (row.try_get(0)?, row.try_get(1)?);
    match (min, max) {
        (Some(min), Some(max)) => Ok(Some((u64_of(min, "index")?, u64_of(max, "index")?))),
        _ => Ok(None),
    }
}

fn span(first: u64, count: u64) -> Result<(i64, i64), StoreError> {
    Ok((i64_of(first)?, i64_of(first.saturating_add(count))?))
}

fn hashes(conn: &Conn, level: u8, first: u64, count: u64) -> Result<Vec<Vec<u8>>, StoreError> {
    let (lo, hi) = span(first, count)?;
    let rows = if level == 0 {
        conn.query(
            "SELECT hash FROM leaf WHERE idx >= $1 AND idx < $2 ORDER BY idx",
            &[&lo, &hi],
        )?
    } else {
        conn.query(
            "SELECT hash FROM node WHERE level = $3 AND idx >= $1 AND idx < $2 ORDER BY idx",
            &[&lo, &hi, &i64::from(level)],
        )?
    };
    rows.iter().map(|r| Ok(r.try_get(0)?)).collect()
}

fn entries(conn: &Conn, first: u64, count: u64) -> Result<Vec<Vec<u8>>, StoreError> {
    let (lo, hi) = span(first, count)?;
    let rows = conn.query(
        "SELECT data FROM leaf WHERE idx >= $1 AND idx < $2 ORDER BY idx",
        &[&lo, &hi],
    )?;
    rows.iter().map(|r| Ok(r.try_get(0)?)).collect()
}

fn bundle_len(conn: &Conn, first: u64, count: u64) -> Result<u64, StoreError> {
    let (lo, hi) = span(first, count)?;
    let row = conn
        .query_opt(
            "SELECT COALESCE(SUM(octet_length(data)) + 2 * COUNT(*), 0)::BIGINT
             FROM leaf WHERE idx >= $1 AND idx < $2",
            &[&lo, &hi],
        )?
        .ok_or_else(|| StoreError::Corrupt("no row from a bundle's length".into()))?;
    u64_of(row.try_get(0)?, "length")
}

/// [`LogRead`] by the functions above.
macro_rules! log_reads {
    ($ty:ty) => {
        impl LogRead for $ty {
            fn checkpoint(&self) -> Result<Option<StoredCheckpoint>, StoreError> {
                checkpoint(self.conn())
            }
            fn leaf_span(&self) -> Result<Option<(u64, u64)>, StoreError> {
                leaf_span(self.conn())
            }
            fn hashes(
                &self,
                level: u8,
                first: u64,
                count: u64,
            ) -> Result<Vec<Vec<u8>>, StoreError> {
                hashes(self.conn(), level, first, count)
            }
            fn entries(&self, first: u64, count: u64) -> Result<Vec<Vec<u8>>, StoreError> {
                entries(self.conn(), first, count)
            }
            fn bundle_len(&self, first: u64, count: u64) -> Result<u64, StoreError> {
                bundle_len(self.conn(), first, count)
            }
        }
    };
}

/// A read transaction of the log's connection, ended when dropped.
struct PgSnapshot<'c>(&'c Conn);

impl PgLog {
    fn conn(&self) -> &Conn {
        &self.conn
    }
}

impl PgSnapshot<'_> {
    fn conn(&self) -> &Conn {
        self.0
    }
}

impl Drop for PgSnapshot<'_> {
    fn drop(&mut self) {
        if let Err(e) = self.0.end("COMMIT") {
            tracing::warn!(error = %e, "ending a read of the log failed");
        }
    }
}

log_reads!(PgLog);
log_reads!(PgSnapshot<'_>);

impl LogState for PgLog {
    fn create_checkpoint(&mut self, root: &Hash, note: &str) -> Result<(), StoreError> {
        self.conn.execute(
            "INSERT INTO checkpoint (id, size, root, note) VALUES (1, 0, $1, $2)
             ON CONFLICT (id) DO NOTHING",
            &[&&root[..], &note],
        )?;
        Ok(())
    }

    fn begin(&mut self) -> Result<Box<dyn LogBatch + '_>, StoreError> {
        self.conn.begin("BEGIN ISOLATION LEVEL READ COMMITTED")?;
        Ok(Box::new(PgBatch::new(&self.conn)))
    }

    fn snapshot(&self) -> Result<Box<dyn LogRead + '_>, StoreError> {
        self.conn
            .begin("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")?;
        Ok(Box::new(PgSnapshot(&self.conn)))
    }

    fn probe_write(&mut self) -> Result<(), StoreError> {
        self.conn.in_transaction("BEGIN", |c| {
            c.execute("UPDATE checkpoint SET note = note WHERE id = 1", &[])
                .map(drop)
        })
    }

    fn reopen(&mut self) -> Result<(), StoreError> {
        self.conn.replace();
        Ok(())
    }

    fn locator(&self) -> String {
        self.state.locator().to_owned()
    }
}
