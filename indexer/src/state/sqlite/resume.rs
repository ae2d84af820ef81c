//! Resume points of vows' renders on SQLite, in a database file of their own
//! (`resume-points.sqlite3`; [`crate::state::kept`] states the contract): for each vow whose
//! chain has a full page, the renderer's state of that vow at its last page boundary, so that a render after a restart (or after the vow
//! left the renderer's memory) reads only the chain's tail, not the whole chain
//! (ARCHITECTURE.md, "The write path of a report-in").
//!
//! A resume point is derived: losing one (a crash before it was written, a damaged row, a new
//! binary) costs one full read of that vow's chain, never a wrong page. Each row names what
//! rendered it, and a row of another renderer is not taken; each carries its bytes' SHA-256,
//! and a row whose bytes do not hash to it is not taken either.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use conduct_core::canonical::sha256_hex;
use rusqlite::{params, Connection, OptionalExtension};

use super::StoreError;
use crate::state::kept::{taken, ResumePoint, ResumePoints};

/// The file name in the data directory.
pub const FILE: &str = "resume-points.sqlite3";

/// The resume points of one data directory.
pub struct SqliteResumePoints {
    conn: Mutex<Connection>,
    path: PathBuf,
}

impl std::fmt::Debug for SqliteResumePoints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteResumePoints")
            .field("path", &self.path)
            .finish()
    }
}

impl SqliteResumePoints {
    /// Open (creating) `<data_dir>/resume-points.sqlite3`.
    pub fn open(data_dir: &Path) -> Result<SqliteResumePoints, StoreError> {
        super::private_dir(data_dir)?;
        let path = data_dir.join(FILE);
        let conn = super::open_private(&path)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        // Derived data: a crash may lose the last writes, which only costs full reads.
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS resume_point (
                vow_id TEXT PRIMARY KEY,
                render TEXT NOT NULL,
                records INTEGER NOT NULL,
                sha256 TEXT NOT NULL,
                state BLOB NOT NULL
            ) STRICT;",
        )?;
        Ok(SqliteResumePoints {
            conn: Mutex::new(conn),
            path,
        })
    }
}

impl ResumePoints for SqliteResumePoints {
    /// Vow `vow_id`'s resume point, if one written by `render` is kept and intact.
    fn get(&self, vow_id: &str, render: &str) -> Result<Option<ResumePoint>, StoreError> {
        let g = conduct_core::sync::lock(&self.conn);
        let row = g
            .prepare_cached(
                "SELECT records, sha256, state FROM resume_point
                 WHERE vow_id = ?1 AND render = ?2",
            )?
            .query_row(params![vow_id, render], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, Vec<u8>>(2)?,
                ))
            })
            .optional()?;
        Ok(row.and_then(|(records, sha, state)| taken(vow_id, records, &sha, state)))
    }

    /// Keep `points` (vow id and resume point), written by `render`, in one transaction,
    /// each replacing the vow's point before it.
    fn put_many(&self, render: &str, points: &[(String, ResumePoint)]) -> Result<(), StoreError> {
        if points.is_empty() {
            return Ok(());
        }
        let mut g = conduct_core::sync::lock(&self.conn);
        let tx = g.transaction()?;
        {
            let mut st = tx.prepare_cached(
                "INSERT INTO resume_point (vow_id, render, records, sha256, state)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (vow_id) DO UPDATE SET render = excluded.render,
                   records = excluded.records, sha256 = excluded.sha256, state = excluded.state",
            )?;
            for (vow_id, p) in points {
                st.execute(params![
                    vow_id,
                    render,
                    p.records as i64,
                    sha256_hex(&p.state),
                    p.state
                ])?;
            }
        }
        tx.commit()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(records: u64, state: &[u8]) -> ResumePoint {
        ResumePoint {
            records,
            state: state.to_vec(),
        }
    }

    #[test]
    fn points_are_kept_per_renderer_replaced_and_refused_when_damaged() {
        let dir = tempfile::tempdir().unwrap();
        let points = SqliteResumePoints::open(dir.path()).unwrap();
        assert_eq!(points.get("v1", "r").unwrap(), None);
        points
            .put_many(
                "r",
                &[
                    ("v1".into(), point(32, b"a")),
                    ("v2".into(), point(64, b"b")),
                ],
            )
            .unwrap();
        assert_eq!(points.get("v1", "r").unwrap(), Some(point(32, b"a")));
        // Another renderer's point is not taken.
        assert_eq!(points.get("v1", "other").unwrap(), None);
        points
            .put_many("r", &[("v1".into(), point(64, b"c"))])
            .unwrap();
        drop(points);
        // Kept across an open; a damaged row is not taken.
        let points = SqliteResumePoints::open(dir.path()).unwrap();
        assert_eq!(points.get("v1", "r").unwrap(), Some(point(64, b"c")));
        conduct_core::sync::lock(&points.conn)
            .execute(
                "UPDATE resume_point SET state = x'00' WHERE vow_id = 'v2'",
                [],
            )
            .unwrap();
        assert_eq!(points.get("v2", "r").unwrap(), None);
    }
}
