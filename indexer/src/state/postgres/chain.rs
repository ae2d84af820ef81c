//! The chain index on PostgreSQL (tables `chain_meta`, `chain_cursor`, `chain_anchor`,
//! `registry_event`, `registry_check`, `reputation_event`; [`crate::state::chain`] states the
//! contract): its SQLite twin's statements, each write in one transaction.

use std::collections::{BTreeSet, HashMap};

use tokio_postgres::Row;

use super::{i64_of, u64_of, Conn, Postgres};
use crate::chain::registry::{EventKind, RegistryEvent};
use crate::chain::reputation::{RepKind, ReputationEvent};
use crate::state::chain::{scored_wallet, ChainIndex, Check, Cursor, Touched, ANCHORS_KEPT};
use crate::state::StoreError;

/// The chain index of one chain in a PostgreSQL database.
#[derive(Debug, Clone)]
pub struct PgChain {
    state: Postgres,
}

impl Postgres {
    /// The chain index for the chain and contracts named by `identity`; an index written for
    /// another identity is emptied first (in one transaction, the table locked against another
    /// node opening it at once).
    pub fn chain(&self, identity: &str) -> Result<PgChain, StoreError> {
        self.in_transaction("BEGIN", |c| {
            c.batch("LOCK TABLE chain_meta IN EXCLUSIVE MODE")?;
            let known = c
                .query_opt("SELECT identity FROM chain_meta WHERE id = 1", &[])?
                .map(|r| r.try_get::<_, String>(0))
                .transpose()?;
            if known.as_deref() != Some(identity) {
                if known.is_some() {
                    tracing::warn!(
                        "the chain configuration changed; the chain index starts over for {identity}"
                    );
                }
                c.batch(
                    "DELETE FROM chain_cursor; DELETE FROM chain_anchor; DELETE FROM registry_event;
                     DELETE FROM registry_check; DELETE FROM reputation_event;",
                )?;
                c.execute(
                    "INSERT INTO chain_meta (id, identity) VALUES (1, $1)
                     ON CONFLICT (id) DO UPDATE SET identity = excluded.identity",
                    &[&identity],
                )?;
            }
            Ok(())
        })?;
        Ok(PgChain {
            state: self.clone(),
        })
    }
}

/// Put the cursor at `number` (`hash`, synced at `now`).
fn put_cursor(c: &Conn, number: u64, hash: &str, now: u64) -> Result<(), StoreError> {
    c.execute(
        "INSERT INTO chain_cursor (id, number, hash, synced_at) VALUES (1, $1, $2, $3)
         ON CONFLICT (id) DO UPDATE SET number = excluded.number, hash = excluded.hash,
         synced_at = excluded.synced_at",
        &[&i64_of(number)?, &hash, &i64_of(now)?],
    )?;
    Ok(())
}

fn event_row(r: &Row) -> Result<Option<RegistryEvent>, StoreError> {
    let kind = EventKind::from_columns(
        &r.try_get::<_, String>(5)?,
        r.try_get(6)?,
        r.try_get(7)?,
        r.try_get(8)?,
        r.try_get(9)?,
    );
    let Some(kind) = kind else {
        return Ok(None);
    };
    Ok(Some(RegistryEvent {
        block_number: u64_of(r.try_get(0)?, "block number")?,
        block_hash: r.try_get(1)?,
        log_index: u64_of(r.try_get(2)?, "log index")?,
        tx_hash: r.try_get(3)?,
        tool_id: u64_of(r.try_get(4)?, "tool id")?,
        kind,
    }))
}

fn check_row(r: &Row) -> Result<Check, StoreError> {
    Ok(Check {
        uri: r.try_get(0)?,
        hash: r.try_get(1)?,
        status: r.try_get(2)?,
        computed: r.try_get(3)?,
        detail: r.try_get(4)?,
        claims: r.try_get(5)?,
        checked_at: u64_of(r.try_get(6)?, "checked_at")?,
        reason: r.try_get(7)?,
    })
}

fn registry_events(rows: Vec<Row>) -> Result<Vec<RegistryEvent>, StoreError> {
    let events = rows.iter().map(event_row).collect::<Result<Vec<_>, _>>()?;
    Ok(events.into_iter().flatten().collect())
}

impl ChainIndex for PgChain {
    fn cursor(&self) -> Result<Option<Cursor>, StoreError> {
        self.state.with(|c| {
            c.query_opt(
                "SELECT number, hash, synced_at FROM chain_cursor WHERE id = 1",
                &[],
            )?
            .map(|r| {
                Ok(Cursor {
                    number: u64_of(r.try_get(0)?, "cursor")?,
                    hash: r.try_get(1)?,
                    synced_at: u64_of(r.try_get(2)?, "synced_at")?,
                })
            })
            .transpose()
        })
    }

    fn apply_all(
        &self,
        events: &[RegistryEvent],
        rep: &[ReputationEvent],
        to: u64,
        hash: &str,
        now: u64,
    ) -> Result<Touched, StoreError> {
        self.state.in_transaction("BEGIN", |c| {
            let mut wallets = BTreeSet::new();
            for e in rep {
                let [who, actor, amount, value, reason] = e.kind.columns();
                wallets.extend(scored_wallet(e).map(str::to_owned));
                c.execute(
                    "INSERT INTO reputation_event
                     (block_number, block_hash, log_index, tx_hash, kind, who, actor, amount,
                      value, reason)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
                     ON CONFLICT (block_number, log_index) DO UPDATE SET
                       block_hash = excluded.block_hash, tx_hash = excluded.tx_hash,
                       kind = excluded.kind, who = excluded.who, actor = excluded.actor,
                       amount = excluded.amount, value = excluded.value,
                       reason = excluded.reason",
                    &[
                        &i64_of(e.block_number)?,
                        &e.block_hash,
                        &i64_of(e.log_index)?,
                        &e.tx_hash,
                        &e.kind.name(),
                        &who,
                        &actor,
                        &amount,
                        &value,
                        &reason,
                    ],
                )?;
            }
            let mut touched = BTreeSet::new();
            for e in events {
                let (creator, uri, mhash, predicate) = e.kind.columns();
                c.execute(
                    "INSERT INTO registry_event
                     (block_number, block_hash, log_index, tx_hash, tool_id, kind, creator, uri,
                      hash, predicate)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
                     ON CONFLICT (block_number, log_index) DO UPDATE SET
                       block_hash = excluded.block_hash, tx_hash = excluded.tx_hash,
                       tool_id = excluded.tool_id, kind = excluded.kind,
                       creator = excluded.creator, uri = excluded.uri, hash = excluded.hash,
                       predicate = excluded.predicate",
                    &[
                        &i64_of(e.block_number)?,
                        &e.block_hash,
                        &i64_of(e.log_index)?,
                        &e.tx_hash,
                        &i64_of(e.tool_id)?,
                        &e.kind.name(),
                        &creator,
                        &uri,
                        &mhash,
                        &predicate,
                    ],
                )?;
                touched.insert(e.tool_id);
            }
            put_cursor(c, to, hash, now)?;
            c.execute(
                "INSERT INTO chain_anchor (number, hash) VALUES ($1, $2)
                 ON CONFLICT (number) DO UPDATE SET hash = excluded.hash",
                &[&i64_of(to)?, &hash],
            )?;
            c.execute(
                "DELETE FROM chain_anchor WHERE number < (SELECT number FROM chain_anchor
                 ORDER BY number DESC LIMIT 1 OFFSET $1)",
                &[&i64_of(ANCHORS_KEPT - 1)?],
            )?;
            Ok((touched, wallets))
        })
    }

    fn synced(&self, now: u64) -> Result<(), StoreError> {
        self.state.with(|c| {
            c.execute(
                "UPDATE chain_cursor SET synced_at = $1 WHERE id = 1",
                &[&i64_of(now)?],
            )?;
            Ok(())
        })
    }

    fn anchors(&self) -> Result<Vec<(u64, String)>, StoreError> {
        self.state.with(|c| {
            c.query(
                "SELECT number, hash FROM chain_anchor
                 UNION SELECT DISTINCT block_number, block_hash FROM registry_event
                 UNION SELECT DISTINCT block_number, block_hash FROM reputation_event
                 ORDER BY 1 DESC",
                &[],
            )?
            .iter()
            .map(|r| Ok((u64_of(r.try_get(0)?, "anchor")?, r.try_get(1)?)))
            .collect()
        })
    }

    fn rewind(&self, ancestor: Option<(u64, String)>, now: u64) -> Result<Touched, StoreError> {
        let above = match &ancestor {
            Some((n, _)) => i64_of(*n)?,
            None => -1,
        };
        self.state.in_transaction("BEGIN", |c| {
            let touched = c
                .query(
                    "SELECT DISTINCT tool_id FROM registry_event WHERE block_number > $1",
                    &[&above],
                )?
                .iter()
                .map(|r| u64_of(r.try_get(0)?, "tool id"))
                .collect::<Result<BTreeSet<_>, _>>()?;
            let wallets = c
                .query(
                    "SELECT DISTINCT who FROM reputation_event
                     WHERE block_number > $1 AND kind IN ('credited', 'slashed')",
                    &[&above],
                )?
                .iter()
                .map(|r| r.try_get::<_, String>(0))
                .collect::<Result<BTreeSet<_>, _>>()?;
            c.execute(
                "DELETE FROM registry_event WHERE block_number > $1",
                &[&above],
            )?;
            c.execute(
                "DELETE FROM reputation_event WHERE block_number > $1",
                &[&above],
            )?;
            c.execute("DELETE FROM chain_anchor WHERE number > $1", &[&above])?;
            match &ancestor {
                Some((n, h)) => put_cursor(c, *n, h, now)?,
                None => {
                    c.execute("DELETE FROM chain_cursor", &[])?;
                }
            }
            Ok((touched, wallets))
        })
    }

    fn reputation_events(&self) -> Result<Vec<ReputationEvent>, StoreError> {
        self.state.with(|c| {
            let rows = c.query(
                "SELECT block_number, block_hash, log_index, tx_hash, kind, who, actor, amount,
                        value, reason
                 FROM reputation_event ORDER BY block_number, log_index",
                &[],
            )?;
            let mut events = Vec::with_capacity(rows.len());
            for r in &rows {
                let cols = [
                    r.try_get(5)?,
                    r.try_get(6)?,
                    r.try_get(7)?,
                    r.try_get(8)?,
                    r.try_get(9)?,
                ];
                if let Some(kind) = RepKind::from_columns(&r.try_get::<_, String>(4)?, cols) {
                    events.push(ReputationEvent {
                        block_number: u64_of(r.try_get(0)?, "block number")?,
                        block_hash: r.try_get(1)?,
                        log_index: u64_of(r.try_get(2)?, "log index")?,
                        tx_hash: r.try_get(3)?,
                        kind,
                    });
                }
            }
            Ok(events)
        })
    }

    fn events_of(&self, id: u64) -> Result<Vec<RegistryEvent>, StoreError> {
        let id = i64_of(id)?;
        self.state.with(|c| {
            registry_events(c.query(
                "SELECT block_number, block_hash, log_index, tx_hash, tool_id, kind, creator, uri,
                        hash, predicate
                 FROM registry_event WHERE tool_id = $1 ORDER BY block_number, log_index",
                &[&id],
            )?)
        })
    }

    fn events(&self) -> Result<Vec<RegistryEvent>, StoreError> {
        self.state.with(|c| {
            registry_events(c.query(
                "SELECT block_number, block_hash, log_index, tx_hash, tool_id, kind, creator, uri,
                        hash, predicate
                 FROM registry_event ORDER BY block_number, log_index",
                &[],
            )?)
        })
    }

    fn check(&self, id: u64) -> Result<Option<Check>, StoreError> {
        let id = i64_of(id)?;
        self.state.with(|c| {
            c.query_opt(
                "SELECT uri, hash, status, computed, detail, claims, checked_at, reason
                 FROM registry_check WHERE tool_id = $1",
                &[&id],
            )?
            .as_ref()
            .map(check_row)
            .transpose()
        })
    }

    fn checks(&self) -> Result<HashMap<u64, Check>, StoreError> {
        self.state.with(|c| {
            c.query(
                "SELECT uri, hash, status, computed, detail, claims, checked_at, reason, tool_id
                 FROM registry_check",
                &[],
            )?
            .iter()
            .map(|r| Ok((u64_of(r.try_get(8)?, "tool id")?, check_row(r)?)))
            .collect()
        })
    }

    fn put_check(&self, id: u64, c: &Check) -> Result<(), StoreError> {
        let (id, at) = (i64_of(id)?, i64_of(c.checked_at)?);
        self.state.with(|conn| {
            conn.execute(
                "INSERT INTO registry_check
                 (tool_id, uri, hash, status, computed, detail, claims, checked_at, reason)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
                 ON CONFLICT (tool_id) DO UPDATE SET uri = excluded.uri, hash = excluded.hash,
                   status = excluded.status, computed = excluded.computed,
                   detail = excluded.detail, claims = excluded.claims,
                   checked_at = excluded.checked_at, reason = excluded.reason",
                &[
                    &id,
                    &c.uri,
                    &c.hash,
                    &c.status,
                    &c.computed,
                    &c.detail,
                    &c.claims,
                    &at,
                    &c.reason,
                ],
            )?;
            Ok(())
        })
    }
}
