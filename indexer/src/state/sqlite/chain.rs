//! The chain index on SQLite, in a database file of its own, `<data>/chain.sqlite3` (WAL,
//! `synchronous=FULL`); [`crate::state::chain`] states the contract.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::sync::Mutex;

use conduct_core::sync::lock;
use rusqlite::{params, Connection, OptionalExtension};

use super::StoreError;
use crate::chain::registry::{EventKind, RegistryEvent};
use crate::chain::reputation::{RepKind, ReputationEvent};
use crate::state::chain::{scored_wallet, ChainIndex, Check, Cursor, Touched, ANCHORS_KEPT};

const MIGRATIONS: &[&str] = &[
    // 1: what the chain said, where the follower is, and what the manifests gave.
    "CREATE TABLE meta (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        identity TEXT NOT NULL
    ) STRICT;
    CREATE TABLE cursor (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        number INTEGER NOT NULL,
        hash TEXT NOT NULL,
        synced_at INTEGER NOT NULL
    ) STRICT;
    CREATE TABLE anchor (
        number INTEGER PRIMARY KEY,
        hash TEXT NOT NULL
    ) STRICT;
    CREATE TABLE registry_event (
        block_number INTEGER NOT NULL,
        block_hash TEXT NOT NULL,
        log_index INTEGER NOT NULL,
        tx_hash TEXT NOT NULL,
        tool_id INTEGER NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('registered', 'metadata', 'predicate', 'deregistered')),
        creator TEXT,
        uri TEXT,
        hash TEXT,
        predicate TEXT,
        PRIMARY KEY (block_number, log_index)
    ) STRICT;
    CREATE INDEX registry_event_tool ON registry_event (tool_id, block_number, log_index);
    CREATE TABLE registry_check (
        tool_id INTEGER PRIMARY KEY,
        uri TEXT NOT NULL,
        hash TEXT NOT NULL,
        status TEXT NOT NULL,
        reason TEXT,
        computed TEXT,
        detail TEXT,
        claims TEXT NOT NULL,
        checked_at INTEGER NOT NULL
    ) STRICT;",
    // 2: the reputation record's events (columns as `RepKind::columns`).
    "CREATE TABLE reputation_event (
        block_number INTEGER NOT NULL,
        block_hash TEXT NOT NULL,
        log_index INTEGER NOT NULL,
        tx_hash TEXT NOT NULL,
        kind TEXT NOT NULL,
        who TEXT,
        actor TEXT,
        amount TEXT,
        value TEXT,
        reason TEXT,
        PRIMARY KEY (block_number, log_index)
    ) STRICT;
    CREATE INDEX reputation_event_who ON reputation_event (who);",
];

/// The chain index in `<data>/chain.sqlite3`.
#[derive(Debug)]
pub struct SqliteChain {
    conn: Mutex<Connection>,
}

impl SqliteChain {
    /// Open (or create) `<data>/chain.sqlite3` for the chain and contracts named by
    /// `identity` (chain id, addresses, start blocks). When the file was written for another
    /// identity, its chain data is dropped: that cursor means nothing for this chain.
    pub fn open(data_dir: &Path, identity: &str) -> Result<SqliteChain, StoreError> {
        super::private_dir(data_dir)?;
        let mut conn = super::open_private(&data_dir.join("chain.sqlite3"))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        super::apply_migrations(&mut conn, MIGRATIONS)?;
        let known: Option<String> = conn
            .query_row("SELECT identity FROM meta WHERE id = 1", [], |r| r.get(0))
            .optional()?;
        if known.as_deref() != Some(identity) {
            if known.is_some() {
                tracing::warn!(
                    "the chain configuration changed; the chain index starts over for {identity}"
                );
            }
            let tx = conn.transaction()?;
            tx.execute_batch(
                "DELETE FROM cursor; DELETE FROM anchor; DELETE FROM registry_event;
                 DELETE FROM registry_check; DELETE FROM reputation_event;",
            )?;
            tx.execute(
                "INSERT INTO meta (id, identity) VALUES (1, ?1)
                 ON CONFLICT (id) DO UPDATE SET identity = excluded.identity",
                params![identity],
            )?;
            tx.commit()?;
        }
        Ok(SqliteChain {
            conn: Mutex::new(conn),
        })
    }
}

impl ChainIndex for SqliteChain {
    fn cursor(&self) -> Result<Option<Cursor>, StoreError> {
        Ok(lock(&self.conn)
            .query_row(
                "SELECT number, hash, synced_at FROM cursor WHERE id = 1",
                [],
                |r| {
                    Ok(Cursor {
                        number: r.get::<_, i64>(0)? as u64,
                        hash: r.get(1)?,
                        synced_at: r.get::<_, i64>(2)? as u64,
                    })
                },
            )
            .optional()?)
    }

    fn apply_all(
        &self,
        events: &[RegistryEvent],
        rep: &[ReputationEvent],
        to: u64,
        hash: &str,
        now: u64,
    ) -> Result<Touched, StoreError> {
        let mut conn = lock(&self.conn);
        let tx = conn.transaction()?;
        let mut touched = BTreeSet::new();
        let mut wallets = BTreeSet::new();
        {
            let mut ins = tx.prepare_cached(
                "INSERT OR REPLACE INTO reputation_event
                 (block_number, block_hash, log_index, tx_hash, kind, who, actor, amount, value,
                  reason)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            )?;
            for e in rep {
                let [who, actor, amount, value, reason] = e.kind.columns();
                wallets.extend(scored_wallet(e).map(str::to_owned));
                ins.execute(params![
                    e.block_number as i64,
                    e.block_hash,
                    e.log_index as i64,
                    e.tx_hash,
                    e.kind.name(),
                    who,
                    actor,
                    amount,
                    value,
                    reason,
                ])?;
            }
        }
        {
            let mut ins = tx.prepare_cached(
                "INSERT OR REPLACE INTO registry_event
                 (block_number, block_hash, log_index, tx_hash, tool_id, kind, creator, uri,
                  hash, predicate)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            )?;
            for e in events {
                let (creator, uri, mhash, predicate) = e.kind.columns();
                ins.execute(params![
                    e.block_number as i64,
                    e.block_hash,
                    e.log_index as i64,
                    e.tx_hash,
                    e.tool_id as i64,
                    e.kind.name(),
                    creator,
                    uri,
                    mhash,
                    predicate,
                ])?;
                touched.insert(e.tool_id);
            }
        }
        tx.execute(
            "INSERT INTO cursor (id, number, hash, synced_at) VALUES (1, ?1, ?2, ?3)
             ON CONFLICT (id) DO UPDATE SET number = excluded.number, hash = excluded.hash,
             synced_at = excluded.synced_at",
            params![to as i64, hash, now as i64],
        )?;
        tx.execute(
            "INSERT OR REPLACE INTO anchor (number, hash) VALUES (?1, ?2)",
            params![to as i64, hash],
        )?;
        tx.execute(
            "DELETE FROM anchor WHERE number < (SELECT number FROM anchor ORDER BY number DESC
             LIMIT 1 OFFSET ?1)",
            params![ANCHORS_KEPT as i64 - 1],
        )?;
        tx.commit()?;
        Ok((touched, wallets))
    }

    fn synced(&self, now: u64) -> Result<(), StoreError> {
        lock(&self.conn).execute(
            "UPDATE cursor SET synced_at = ?1 WHERE id = 1",
            params![now as i64],
        )?;
        Ok(())
    }

    fn anchors(&self) -> Result<Vec<(u64, String)>, StoreError> {
        let conn = lock(&self.conn);
        let mut stmt = conn.prepare(
            "SELECT number, hash FROM anchor
             UNION SELECT DISTINCT block_number, block_hash FROM registry_event
             UNION SELECT DISTINCT block_number, block_hash FROM reputation_event
             ORDER BY 1 DESC",
        )?;
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, i64>(0)? as u64, r.get(1)?)))?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    fn rewind(&self, ancestor: Option<(u64, String)>, now: u64) -> Result<Touched, StoreError> {
        let mut conn = lock(&self.conn);
        let tx = conn.transaction()?;
        let above = ancestor.as_ref().map_or(-1, |(n, _)| *n as i64);
        let touched = {
            let mut stmt =
                tx.prepare("SELECT DISTINCT tool_id FROM registry_event WHERE block_number > ?1")?;
            let rows = stmt
                .query_map(params![above], |r| Ok(r.get::<_, i64>(0)? as u64))?
                .collect::<Result<BTreeSet<_>, _>>()?;
            rows
        };
        let wallets = {
            let mut stmt = tx.prepare(
                "SELECT DISTINCT who FROM reputation_event
                 WHERE block_number > ?1 AND kind IN ('credited', 'slashed')",
            )?;
            let rows = stmt
                .query_map(params![above], |r| r.get::<_, String>(0))?
                .collect::<Result<BTreeSet<_>, _>>()?;
            rows
        };
        tx.execute(
            "DELETE FROM registry_event WHERE block_number > ?1",
            params![above],
        )?;
        tx.execute(
            "DELETE FROM reputation_event WHERE block_number > ?1",
            params![above],
        )?;
        tx.execute("DELETE FROM anchor WHERE number > ?1", params![above])?;
        match ancestor {
            Some((n, h)) => {
                tx.execute(
                    "INSERT INTO cursor (id, number, hash, synced_at) VALUES (1, ?1, ?2, ?3)
                     ON CONFLICT (id) DO UPDATE SET number = excluded.number,
                     hash = excluded.hash, synced_at = excluded.synced_at",
                    params![n as i64, h, now as i64],
                )?;
            }
            None => {
                tx.execute("DELETE FROM cursor", [])?;
            }
        }
        tx.commit()?;
        Ok((touched, wallets))
    }

    fn reputation_events(&self) -> Result<Vec<ReputationEvent>, StoreError> {
        let conn = lock(&self.conn);
        let mut stmt = conn.prepare_cached(
            "SELECT block_number, block_hash, log_index, tx_hash, kind, who, actor, amount,
                    value, reason
             FROM reputation_event ORDER BY block_number, log_index",
        )?;
        let rows = stmt
            .query_map([], |r| {
                let kind: String = r.get(4)?;
                let cols = [r.get(5)?, r.get(6)?, r.get(7)?, r.get(8)?, r.get(9)?];
                let (block_number, block_hash, log_index, tx_hash) = (
                    r.get::<_, i64>(0)? as u64,
                    r.get(1)?,
                    r.get::<_, i64>(2)? as u64,
                    r.get(3)?,
                );
                Ok(
                    RepKind::from_columns(&kind, cols).map(|kind| ReputationEvent {
                        block_number,
                        block_hash,
                        log_index,
                        tx_hash,
                        kind,
                    }),
                )
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows.into_iter().flatten().collect())
    }

    fn events_of(&self, id: u64) -> Result<Vec<RegistryEvent>, StoreError> {
        let conn = lock(&self.conn);
        let mut stmt = conn.prepare_cached(
            "SELECT block_number, block_hash, log_index, tx_hash, tool_id, kind, creator, uri,
                    hash, predicate
             FROM registry_event WHERE tool_id = ?1 ORDER BY block_number, log_index",
        )?;
        let rows = stmt
            .query_map(params![id as i64], event_row)?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows.into_iter().flatten().collect())
    }

    fn events(&self) -> Result<Vec<RegistryEvent>, StoreError> {
        let conn = lock(&self.conn);
        let mut stmt = conn.prepare(
            "SELECT block_number, block_hash, log_index, tx_hash, tool_id, kind, creator, uri,
                    hash, predicate
             FROM registry_event ORDER BY block_number, log_index",
        )?;
        let rows = stmt
            .query_map([], event_row)?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows.into_iter().flatten().collect())
    }

    fn check(&self, id: u64) -> Result<Option<Check>, StoreError> {
        Ok(lock(&self.conn)
            .query_row(
                "SELECT uri, hash, status, computed, detail, claims, checked_at, reason
                 FROM registry_check WHERE tool_id = ?1",
                params![id as i64],
                check_row,
            )
            .optional()?)
    }

    fn checks(&self) -> Result<HashMap<u64, Check>, StoreError> {
        let conn = lock(&self.conn);
        let mut stmt = conn.prepare(
            "SELECT uri, hash, status, computed, detail, claims, checked_at, reason, tool_id
             FROM registry_check",
        )?;
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, i64>(8)? as u64, check_row(r)?)))?
            .collect::<Result<_, _>>()?;
        Ok(rows)
    }

    fn put_check(&self, id: u64, c: &Check) -> Result<(), StoreError> {
        lock(&self.conn).execute(
            "INSERT OR REPLACE INTO registry_check
             (tool_id, uri, hash, status, computed, detail, claims, checked_at, reason)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![
                id as i64,
                c.uri,
                c.hash,
                c.status,
                c.computed,
                c.detail,
                c.claims,
                c.checked_at as i64,
                c.reason
            ],
        )?;
        Ok(())
    }
}

fn event_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Option<RegistryEvent>> {
    let kind: String = r.get(5)?;
    let creator: Option<String> = r.get(6)?;
    let uri: Option<String> = r.get(7)?;
    let hash: Option<String> = r.get(8)?;
    let predicate: Option<String> = r.get(9)?;
    let kind = EventKind::from_columns(&kind, creator, uri, hash, predicate);
    let Some(kind) = kind else {
        return Ok(None);
    };
    Ok(Some(RegistryEvent {
        block_number: r.get::<_, i64>(0)? as u64,
        block_hash: r.get(1)?,
        log_index: r.get::<_, i64>(2)? as u64,
        tx_hash: r.get(3)?,
        tool_id: r.get::<_, i64>(4)? as u64,
        kind,
    }))
}

fn check_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Check> {
    Ok(Check {
        uri: r.get(0)?,
        hash: r.get(1)?,
        status: r.get(2)?,
        computed: r.get(3)?,
        detail: r.get(4)?,
        claims: r.get(5)?,
        checked_at: r.get::<_, i64>(6)? as u64,
        reason: r.get(7)?,
    })
}
