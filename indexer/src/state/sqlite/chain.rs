//! The chain database `<data>/chain.sqlite3` (WAL, `synchronous=FULL`): the registry's and
//! the reputation record's events as read from the chain (block number, block hash, log index),
//! the cursor and recent anchors (block number and hash) moved in the same transaction as the
//! rows, and the manifest checks.
//!
//! Tools and scores are folded from their events on read ([`crate::chain::registry::fold`],
//! [`crate::chain::reputation::fold`]), so a rewind is a delete of the events above the common
//! ancestor and nothing else can go stale.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Mutex;

use conduct_core::sync::lock;
use rusqlite::{params, Connection, OptionalExtension};

use super::StoreError;
use crate::chain::registry::{EventKind, RegistryEvent, Tool};
use crate::chain::reputation::{RepKind, ReputationEvent};

/// Anchors kept for finding the common ancestor after a reorg.
const ANCHORS_KEPT: i64 = 1024;

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

/// The follower's position: the highest block indexed, and its hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    /// Block number.
    pub number: u64,
    /// Block hash (0x + 64 lower-case hex).
    pub hash: String,
    /// Unix seconds of the last poll that succeeded.
    pub synced_at: u64,
}

/// A manifest check as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// The metadataURI checked.
    pub uri: String,
    /// The on-chain manifestHash it was checked against.
    pub hash: String,
    /// `verified`, `unreachable`, `hash-mismatch`, ...
    pub status: String,
    /// A stable reason for anything but `verified` (`redirect`, `http-status`, `refused`,
    /// `timeout`, `bom`, `not-nfc`, ...).
    pub reason: Option<String>,
    /// keccak256 of the canonical manifest, when it was fetched and hashable.
    pub computed: Option<String>,
    /// Why, for anything but `verified`.
    pub detail: Option<String>,
    /// The manifest's claims (JSON object: name, description, endpoint).
    pub claims: String,
    /// Unix seconds.
    pub checked_at: u64,
}

/// The chain database.
#[derive(Debug)]
pub struct ChainDb {
    conn: Mutex<Connection>,
}

impl ChainDb {
    /// Open (or create) `<data>/chain.sqlite3` for the chain and contracts named by
    /// `identity` (chain id, addresses, start blocks). When the file was written for another
    /// identity, its chain data is dropped: that cursor means nothing for this chain.
    pub fn open(data_dir: &Path, identity: &str) -> Result<ChainDb, StoreError> {
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
        Ok(ChainDb {
            conn: Mutex::new(conn),
        })
    }

    /// The cursor, if anything was indexed yet.
    pub fn cursor(&self) -> Result<Option<Cursor>, StoreError> {
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

    /// Append registry `events` (all in blocks up to `to`) and move the cursor to `to` (hash
    /// `hash`), in one transaction. Returns the tools the events touch.
    pub fn apply(
        &self,
        events: &[RegistryEvent],
        to: u64,
        hash: &str,
        now: u64,
    ) -> Result<BTreeSet<u64>, StoreError> {
        Ok(self.apply_all(events, &[], to, hash, now)?.0)
    }

    /// Append registry `events` and reputation events `rep` (all in blocks up to `to`) and
    /// move the cursor to `to`, in one transaction. Returns the tools and the wallets (credited,
    /// slashed) the events touch.
    pub fn apply_all(
        &self,
        events: &[RegistryEvent],
        rep: &[ReputationEvent],
        to: u64,
        hash: &str,
        now: u64,
    ) -> Result<(BTreeSet<u64>, BTreeSet<String>), StoreError> {
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
                if let (Some(w), RepKind::Credited { .. } | RepKind::Slashed { .. }) =
                    (&who, &e.kind)
                {
                    wallets.insert(w.clone());
                }
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
            params![ANCHORS_KEPT - 1],
        )?;
        tx.commit()?;
        Ok((touched, wallets))
    }

    /// Record a successful poll that indexed nothing new.
    pub fn synced(&self, now: u64) -> Result<(), StoreError> {
        lock(&self.conn).execute(
            "UPDATE cursor SET synced_at = ?1 WHERE id = 1",
            params![now as i64],
        )?;
        Ok(())
    }

    /// Known (block number, hash) pairs, highest first: the anchors and the blocks of the
    /// stored events, for finding the common ancestor after a reorg.
    pub fn anchors(&self) -> Result<Vec<(u64, String)>, StoreError> {
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

    /// Forget everything above `ancestor` (all of it when `None`) and put the cursor there,
    /// in one transaction. Returns the tools and the wallets whose events were removed.
    pub fn rewind(
        &self,
        ancestor: Option<(u64, String)>,
        now: u64,
    ) -> Result<(BTreeSet<u64>, BTreeSet<String>), StoreError> {
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

    /// Every reputation event, in chain order.
    pub fn reputation_events(&self) -> Result<Vec<ReputationEvent>, StoreError> {
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

    /// Every event of tool `id`, in chain order.
    pub fn events_of(&self, id: u64) -> Result<Vec<RegistryEvent>, StoreError> {
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

    /// Every event, in chain order.
    pub fn events(&self) -> Result<Vec<RegistryEvent>, StoreError> {
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

    /// The stored check of tool `id`.
    pub fn check(&self, id: u64) -> Result<Option<Check>, StoreError> {
        Ok(lock(&self.conn)
            .query_row(
                "SELECT uri, hash, status, computed, detail, claims, checked_at, reason
                 FROM registry_check WHERE tool_id = ?1",
                params![id as i64],
                check_row,
            )
            .optional()?)
    }

    /// Every stored check, by tool id.
    pub fn checks(&self) -> Result<std::collections::HashMap<u64, Check>, StoreError> {
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

    /// Store the check of tool `id`.
    pub fn put_check(&self, id: u64, c: &Check) -> Result<(), StoreError> {
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

    /// Every tool, folded from its events, by id.
    pub fn tools(&self) -> Result<Vec<Tool>, StoreError> {
        Ok(crate::chain::registry::fold(&self.events()?))
    }

    /// Tool `id`, folded from its events; `None` when the chain (as indexed) has no such tool.
    pub fn tool(&self, id: u64) -> Result<Option<Tool>, StoreError> {
        Ok(crate::chain::registry::fold(&self.events_of(id)?)
            .into_iter()
            .next())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::registry::{EventKind, ToolState};

    fn reg(block: u64, tool: u64) -> RegistryEvent {
        RegistryEvent {
            block_number: block,
            block_hash: format!("0x{block:064x}"),
            log_index: 0,
            tx_hash: format!("0x{:064x}", block + 1000),
            tool_id: tool,
            kind: EventKind::Registered {
                creator: "0x00000000000000000000000000000000000000aa".into(),
                predicate: "0x0000000000000000000000000000000000000000".into(),
                uri: format!("https://t.example/.well-known/ai-tool/t{tool}.json"),
                hash: format!("0x{:064x}", tool),
            },
        }
    }

    fn hash(n: u64) -> String {
        format!("0x{n:064x}")
    }

    #[test]
    fn rows_and_cursor_move_together_and_a_rewind_deletes_what_is_above() {
        let dir = tempfile::tempdir().unwrap();
        let db = ChainDb::open(dir.path(), "eip155:1/registry:0x01@0").unwrap();
        assert_eq!(db.cursor().unwrap(), None);
        let touched = db
            .apply(&[reg(3, 1), reg(5, 2)], 10, &hash(10), 100)
            .unwrap();
        assert_eq!(touched, [1, 2].into_iter().collect());
        db.apply(&[reg(12, 3)], 20, &hash(20), 101).unwrap();
        let mut dereg = reg(15, 1);
        dereg.kind = EventKind::Deregistered;
        db.apply(&[dereg], 20, &hash(20), 101).unwrap();
        let tools = db.tools().unwrap();
        assert_eq!(tools.len(), 3);
        assert_eq!(tools[0].state, ToolState::Deregistered);
        assert_eq!(db.cursor().unwrap().unwrap().number, 20);
        // Known positions, highest first: anchors and event blocks.
        let anchors: Vec<u64> = db.anchors().unwrap().into_iter().map(|(n, _)| n).collect();
        assert_eq!(anchors, vec![20, 15, 12, 10, 5, 3]);
        // Rewind to block 10: the events of blocks 12 and 15 go, tool 1 is registered again.
        let (touched, wallets) = db.rewind(Some((10, hash(10))), 102).unwrap();
        assert_eq!(touched, [1, 3].into_iter().collect());
        assert!(wallets.is_empty());
        let tools = db.tools().unwrap();
        assert_eq!(tools.len(), 2);
        assert_eq!(tools[0].state, ToolState::Registered);
        assert_eq!(db.cursor().unwrap().unwrap().number, 10);
        // Reputation events are rewound with the rest; the wallets they touched are named.
        let credit = |n: u64, who: &str, score: &str| crate::chain::reputation::ReputationEvent {
            block_number: n,
            block_hash: hash(n),
            log_index: 0,
            tx_hash: hash(n + 500),
            kind: RepKind::Credited {
                who: who.into(),
                actor: "0x00000000000000000000000000000000000000bb".into(),
                amount: "1".into(),
                new_score: score.into(),
                reason: hash(0),
            },
        };
        let w = "0x00000000000000000000000000000000000000aa";
        let (_, wallets) = db
            .apply_all(
                &[],
                &[credit(11, w, "1"), credit(13, w, "2")],
                13,
                &hash(13),
                103,
            )
            .unwrap();
        assert_eq!(wallets, [w.to_owned()].into_iter().collect());
        assert_eq!(db.reputation_events().unwrap().len(), 2);
        let (_, wallets) = db.rewind(Some((11, hash(11))), 103).unwrap();
        assert_eq!(wallets, [w.to_owned()].into_iter().collect());
        let left = db.reputation_events().unwrap();
        assert_eq!((left.len(), left[0].block_number), (1, 11));
        // No common ancestor: everything goes.
        db.rewind(None, 103).unwrap();
        assert!(db.reputation_events().unwrap().is_empty());
        assert!(db.tools().unwrap().is_empty());
        assert_eq!(db.cursor().unwrap(), None);
    }

    #[test]
    fn another_chain_or_registry_starts_the_index_over() {
        let dir = tempfile::tempdir().unwrap();
        let db = ChainDb::open(dir.path(), "eip155:1/registry:0x01@0").unwrap();
        db.apply(&[reg(3, 1)], 10, &hash(10), 100).unwrap();
        drop(db);
        let same = ChainDb::open(dir.path(), "eip155:1/registry:0x01@0").unwrap();
        assert_eq!(same.tools().unwrap().len(), 1);
        drop(same);
        let other = ChainDb::open(dir.path(), "eip155:8453/registry:0x01@0").unwrap();
        assert!(other.tools().unwrap().is_empty());
        assert_eq!(other.cursor().unwrap(), None);
    }

    #[test]
    fn anchors_are_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let db = ChainDb::open(dir.path(), "x").unwrap();
        for n in 0..(ANCHORS_KEPT as u64 + 50) {
            db.apply(&[], n, &hash(n), n).unwrap();
        }
        let anchors = db.anchors().unwrap();
        assert_eq!(anchors.len(), ANCHORS_KEPT as usize);
        assert_eq!(anchors[0].0, ANCHORS_KEPT as u64 + 49);
    }
}
