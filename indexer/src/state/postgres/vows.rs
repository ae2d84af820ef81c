//! The vows' reads on PostgreSQL ([`PgVows`]): [`VowReads`] over connections of the pool, one
//! per call; a chain and its head are read in one `REPEATABLE READ READ ONLY` transaction. Each
//! query is the twin of one in `state/sqlite` (the contract heads [`crate::state::vows`]).

use super::{i64_of, u64_of, Conn, Postgres};
use conduct_core::munus::record::BoardRecord;
use tokio_postgres::Row;

use crate::state::board_row;
use crate::state::vows::{
    pledge_row, BindingRow, ChainHead, FamiliarRow, PledgeRow, Records, VowClock, VowReads, VowRow,
};
use crate::state::StoreError;

/// The columns of a [`VowRow`], in its order.
macro_rules! vow_columns {
    () => {
        "vow_id, log_index, agent, text, sealed, sandbox, wallet, cadence_seconds, created_at, \
         head_seq, head_at"
    };
}

/// The current binding of each npub: its latest record.
macro_rules! current_bindings {
    () => {
        "SELECT npub, pubkey, vow_id, log_index, at FROM npub_binding b
         WHERE log_index = (SELECT MAX(log_index) FROM npub_binding c WHERE c.npub = b.npub)"
    };
}

/// How a chain and its head are read together.
const SNAPSHOT: &str = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY";

/// The vows' reads of one database.
#[derive(Debug, Clone)]
pub struct PgVows {
    state: Postgres,
}

impl Postgres {
    /// The vows' reads of this database.
    pub fn vows(&self) -> PgVows {
        PgVows {
            state: self.clone(),
        }
    }
}

fn vow_row(r: &Row) -> Result<VowRow, StoreError> {
    Ok(VowRow {
        vow_id: r.try_get(0)?,
        log_index: u64_of(r.try_get(1)?, "index")?,
        agent: r.try_get(2)?,
        text: r.try_get(3)?,
        sealed: r.try_get(4)?,
        sandbox: r.try_get(5)?,
        wallet: r.try_get(6)?,
        cadence_seconds: u64_of(r.try_get(7)?, "cadence")?,
        created_at: u64_of(r.try_get(8)?, "instant")?,
        head_seq: u64_of(r.try_get(9)?, "seq")?,
        head_at: u64_of(r.try_get(10)?, "instant")?,
    })
}

fn binding_row(r: &Row) -> Result<BindingRow, StoreError> {
    Ok(BindingRow {
        npub: r.try_get(0)?,
        pubkey: r.try_get(1)?,
        vow_id: r.try_get(2)?,
        log_index: u64_of(r.try_get(3)?, "index")?,
        at: u64_of(r.try_get(4)?, "instant")?,
    })
}

fn familiar_row(r: &Row) -> Result<FamiliarRow, StoreError> {
    Ok(FamiliarRow {
        familiar_id: r.try_get(0)?,
        log_index: u64_of(r.try_get(1)?, "index")?,
        at: u64_of(r.try_get(2)?, "instant")?,
        leaf: r.try_get(3)?,
    })
}

fn rows<T>(rows: Vec<Row>, f: fn(&Row) -> Result<T, StoreError>) -> Result<Vec<T>, StoreError> {
    rows.iter().map(f).collect()
}

fn texts(rows: Vec<Row>) -> Result<Vec<String>, StoreError> {
    rows.iter().map(|r| Ok(r.try_get(0)?)).collect()
}

fn limit_of(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

fn vow_by_id(c: &Conn, vow_id: &str) -> Result<Option<VowRow>, StoreError> {
    c.query_opt(
        concat!("SELECT ", vow_columns!(), " FROM vow WHERE vow_id = $1"),
        &[&vow_id],
    )?
    .as_ref()
    .map(vow_row)
    .transpose()
}

/// Vow `vow_id`'s records (its own at log index `vow_index`, then its entries up to its head)
/// from chain position `from` on.
fn records_from(c: &Conn, vow_id: &str, vow_index: u64, from: u64) -> Result<Records, StoreError> {
    let mut records = Vec::new();
    if from == 0 {
        let row = c
            .query_opt(
                "SELECT data FROM leaf WHERE idx = $1",
                &[&i64_of(vow_index)?],
            )?
            .ok_or_else(|| StoreError::Corrupt(format!("vow {vow_id}: no leaf {vow_index}")))?;
        records.push((vow_index, row.try_get(0)?));
    }
    let entries = c.query(
        "SELECT e.log_index, l.data FROM vow_entry e JOIN leaf l ON l.idx = e.log_index
         WHERE e.vow_id = $1 AND e.seq >= $2 ORDER BY e.seq",
        &[&vow_id, &i64_of(from.max(1))?],
    )?;
    for r in &entries {
        records.push((u64_of(r.try_get(0)?, "index")?, r.try_get(1)?));
    }
    Ok(records)
}

impl VowReads for PgVows {
    fn vow(&self, vow_id: &str) -> Result<Option<VowRow>, StoreError> {
        self.state.with(|c| vow_by_id(c, vow_id))
    }

    fn vow_to_append(&self, vow_id: &str) -> Result<Option<VowRow>, StoreError> {
        // The server's buffer cache is its own concern: nothing to warm from here.
        self.vow(vow_id)
    }

    fn all(&self) -> Result<Vec<VowRow>, StoreError> {
        self.state.with(|c| {
            let found = c.query(
                concat!(
                    "SELECT ",
                    vow_columns!(),
                    " FROM vow ORDER BY agent, vow_id"
                ),
                &[],
            )?;
            rows(found, vow_row)
        })
    }

    fn taken_after(&self, after: Option<u64>, limit: usize) -> Result<Vec<VowRow>, StoreError> {
        let after = after.map_or(Ok(-1), i64_of)?;
        self.state.with(|c| {
            let found = c.query(
                concat!(
                    "SELECT ",
                    vow_columns!(),
                    " FROM vow WHERE log_index > $1 ORDER BY log_index LIMIT $2"
                ),
                &[&after, &limit_of(limit)],
            )?;
            rows(found, vow_row)
        })
    }

    fn log_size(&self) -> Result<u64, StoreError> {
        self.state.with(|c| {
            let row = c
                .query_opt("SELECT COALESCE(MAX(idx) + 1, 0) FROM leaf", &[])?
                .ok_or_else(|| StoreError::Corrupt("no row from the log's size".into()))?;
            u64_of(row.try_get(0)?, "size")
        })
    }

    fn touched_since(&self, from: u64, limit: usize) -> Result<Vec<(String, u64)>, StoreError> {
        self.state.with(|c| {
            let found = c.query(
                "SELECT vow_id, log_index FROM (
                   SELECT vow_id, log_index FROM vow WHERE log_index >= $1
                   UNION ALL SELECT vow_id, log_index FROM vow_entry WHERE log_index >= $1
                   UNION ALL SELECT vow_id, log_index FROM npub_binding WHERE log_index >= $1
                 ) touched ORDER BY log_index LIMIT $2",
                &[&i64_of(from)?, &limit_of(limit)],
            )?;
            found
                .iter()
                .map(|r| Ok((r.try_get(0)?, u64_of(r.try_get(1)?, "index")?)))
                .collect()
        })
    }

    fn interpreted_since(&self, at: u64) -> Result<Vec<String>, StoreError> {
        self.state.with(|c| {
            texts(c.query(
                "SELECT vow_id FROM reading WHERE at >= $1 ORDER BY vow_id",
                &[&i64_of(at)?],
            )?)
        })
    }

    fn readings_asked(&self) -> Result<Vec<String>, StoreError> {
        self.state
            .with(|c| texts(c.query("SELECT vow_id FROM reading_ask ORDER BY vow_id", &[])?))
    }

    fn clocks_after(&self, after: &str, limit: usize) -> Result<Vec<VowClock>, StoreError> {
        self.state.with(|c| {
            let found = c.query(
                "SELECT vow_id, created_at, cadence_seconds FROM vow WHERE vow_id > $1
                 ORDER BY vow_id LIMIT $2",
                &[&after, &limit_of(limit)],
            )?;
            found
                .iter()
                .map(|r| {
                    Ok(VowClock {
                        vow_id: r.try_get(0)?,
                        start: u64_of(r.try_get(1)?, "instant")?,
                        cadence: u64_of(r.try_get(2)?, "cadence")?,
                    })
                })
                .collect()
        })
    }

    fn matching(&self, lookup: &str) -> Result<Vec<VowRow>, StoreError> {
        self.state.with(|c| {
            let found = c.query(
                concat!(
                    "SELECT ",
                    vow_columns!(),
                    " FROM vow WHERE vow_id = $1 OR agent = $1 OR wallet = lower($1)
                     ORDER BY log_index"
                ),
                &[&lookup],
            )?;
            rows(found, vow_row)
        })
    }

    fn links(&self, vow_id: &str) -> Result<Option<(VowRow, Records)>, StoreError> {
        self.state.in_transaction(SNAPSHOT, |c| {
            let Some(row) = vow_by_id(c, vow_id)? else {
                return Ok(None);
            };
            let records = records_from(c, vow_id, row.log_index, 0)?;
            Ok(Some((row, records)))
        })
    }

    fn reading(&self, vow_id: &str) -> Result<Option<(u64, String)>, StoreError> {
        self.state.with(|c| {
            let row = c.query_opt(
                "SELECT covers_seq, interpretation FROM reading WHERE vow_id = $1",
                &[&vow_id],
            )?;
            row.map(|r| Ok((u64_of(r.try_get(0)?, "seq")?, r.try_get(1)?)))
                .transpose()
        })
    }

    fn links_from(
        &self,
        vow_id: &str,
        from: u64,
    ) -> Result<Option<(ChainHead, Records)>, StoreError> {
        self.state.in_transaction(SNAPSHOT, |c| {
            let Some(row) = c.query_opt(
                "SELECT log_index, head_seq, head_hash FROM vow WHERE vow_id = $1",
                &[&vow_id],
            )?
            else {
                return Ok(None);
            };
            let log_index = u64_of(row.try_get(0)?, "index")?;
            let head = ChainHead {
                seq: u64_of(row.try_get(1)?, "seq")?,
                hash: row.try_get(2)?,
            };
            let records = records_from(c, vow_id, log_index, from)?;
            Ok(Some((head, records)))
        })
    }

    fn binding(&self, npub: &str) -> Result<Option<BindingRow>, StoreError> {
        self.state.with(|c| {
            c.query_opt(
                "SELECT npub, pubkey, vow_id, log_index, at FROM npub_binding WHERE npub = $1
                 ORDER BY log_index DESC LIMIT 1",
                &[&npub],
            )?
            .as_ref()
            .map(binding_row)
            .transpose()
        })
    }

    fn npubs_of(&self, vow_id: &str) -> Result<Vec<BindingRow>, StoreError> {
        self.state.with(|c| {
            let found = c.query(
                concat!(current_bindings!(), " AND vow_id = $1 ORDER BY log_index"),
                &[&vow_id],
            )?;
            rows(found, binding_row)
        })
    }

    fn bindings(&self) -> Result<Vec<BindingRow>, StoreError> {
        self.state.with(|c| {
            let found = c.query(concat!(current_bindings!(), " ORDER BY npub"), &[])?;
            rows(found, binding_row)
        })
    }

    fn npubs_bound_since(&self, from: u64) -> Result<Vec<String>, StoreError> {
        self.state.with(|c| {
            texts(c.query(
                "SELECT DISTINCT npub FROM npub_binding WHERE log_index >= $1 ORDER BY npub",
                &[&i64_of(from)?],
            )?)
        })
    }

    fn npubs_ever_of(&self, vow_id: &str) -> Result<Vec<String>, StoreError> {
        self.state.with(|c| {
            texts(c.query(
                "SELECT DISTINCT npub FROM npub_binding WHERE vow_id = $1 ORDER BY npub",
                &[&vow_id],
            )?)
        })
    }

    fn pledge(&self, vow_id: &str) -> Result<Option<PledgeRow>, StoreError> {
        let row = self.state.with(|c| {
            c.query_opt(
                "SELECT log_index, data FROM witness_pledge WHERE vow_id = $1
                 ORDER BY log_index DESC LIMIT 1",
                &[&vow_id],
            )
        })?;
        let Some(row) = row else {
            return Ok(None);
        };
        Ok(pledge_row(row.try_get(0)?, row.try_get(1)?))
    }

    fn familiar(&self, id: &str) -> Result<Option<FamiliarRow>, StoreError> {
        self.state.with(|c| {
            c.query_opt(
                "SELECT familiar_id, log_index, at, data FROM familiar WHERE familiar_id = $1",
                &[&id],
            )?
            .as_ref()
            .map(familiar_row)
            .transpose()
        })
    }

    fn familiars(&self) -> Result<Vec<FamiliarRow>, StoreError> {
        self.state.with(|c| {
            let found = c.query(
                "SELECT familiar_id, log_index, at, data FROM familiar ORDER BY log_index",
                &[],
            )?;
            rows(found, familiar_row)
        })
    }

    fn board_records(&self) -> Result<Vec<(u64, BoardRecord)>, StoreError> {
        self.state.with(|c| {
            let found = c.query(
                "SELECT log_index, data FROM munus_record ORDER BY log_index",
                &[],
            )?;
            let mut out = Vec::with_capacity(found.len());
            for r in &found {
                let (index, data): (i64, Vec<u8>) = (r.try_get(0)?, r.try_get(1)?);
                out.extend(board_row(index, &data));
            }
            Ok(out)
        })
    }
}
