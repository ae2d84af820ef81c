//! Donated raw traces on SQLite, in a database file of their own (`donated.sqlite3`), apart
//! from the store ([`crate::state::kept`] states the contract).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::{params, Connection};

use super::StoreError;
use crate::state::kept::DonatedTraces;

/// Donated raw traces, in a database file of their own (`donated.sqlite3`), apart from the
/// store and never rendered: the only place a trace's reasoning and actions are ever kept.
pub struct SqliteDonated {
    conn: Mutex<Connection>,
    path: PathBuf,
}

impl std::fmt::Debug for SqliteDonated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteDonated")
            .field("path", &self.path)
            .finish()
    }
}

impl SqliteDonated {
    /// Open (creating) `<data_dir>/donated.sqlite3`.
    pub fn open(data_dir: &Path) -> Result<SqliteDonated, StoreError> {
        super::private_dir(data_dir)?;
        let path = data_dir.join("donated.sqlite3");
        let conn = super::open_private(&path)?;
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
        Ok(SqliteDonated {
            conn: Mutex::new(conn),
            path,
        })
    }
}

impl DonatedTraces for SqliteDonated {
    /// Keep a donated trace (its canonical bytes), durably, before the entry naming it is
    /// appended. A trace donated twice for the same vow is kept once.
    fn put(
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
    fn count(&self) -> Result<u64, StoreError> {
        let g = conduct_core::sync::lock(&self.conn);
        Ok(g.query_row("SELECT COUNT(*) FROM donated", [], |r| r.get::<_, i64>(0))? as u64)
    }
}
