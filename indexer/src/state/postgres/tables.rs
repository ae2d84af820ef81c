//! The service's own tables on PostgreSQL ([`PgTables`]): [`Tables`] over connections of the
//! pool, one per call, each statement the twin of one in `state/sqlite`; a call of several
//! statements is one transaction (the contract heads [`crate::state::tables`]).

use tokio_postgres::Row;

use super::{i64_of, u64_of, Postgres};
use crate::state::tables::{
    Idempotent, PaymentIdBinding, PaymentIdState, PaymentKey, PaymentStatus, ServedAnswer, Tables,
    IDEMPOTENCY_WINDOW,
};
use crate::state::StoreError;

/// The service's own tables of one database.
#[derive(Debug, Clone)]
pub struct PgTables {
    state: Postgres,
}

impl Postgres {
    /// The service's own tables of this database.
    pub fn tables(&self) -> PgTables {
        PgTables {
            state: self.clone(),
        }
    }
}

macro_rules! payment_id_columns {
    () => {
        "payload, request, network, payer, nonce, state, status, receipt, record, location, tx"
    };
}

fn binding(r: &Row) -> Result<PaymentIdBinding, StoreError> {
    Ok(PaymentIdBinding {
        payload: r.try_get(0)?,
        request: r.try_get(1)?,
        network: r.try_get(2)?,
        payer: r.try_get(3)?,
        nonce: r.try_get(4)?,
        state: PaymentIdState::parse(r.try_get(5)?),
        status: r
            .try_get::<_, Option<i64>>(6)?
            .and_then(|s| u16::try_from(s).ok()),
        receipt: r.try_get(7)?,
        record: r.try_get(8)?,
        location: r.try_get(9)?,
        tx: r.try_get(10)?,
    })
}

fn idempotent(row: Option<Row>, request: &str) -> Result<Idempotent, StoreError> {
    let Some(row) = row else {
        return Ok(Idempotent::Fresh);
    };
    let (body, r): (Vec<u8>, String) = (row.try_get(0)?, row.try_get(1)?);
    Ok(if r == request {
        Idempotent::Cached(body)
    } else {
        Idempotent::Reused
    })
}

impl Tables for PgTables {
    fn claim_payment(
        &self,
        key: &PaymentKey<'_>,
        payload: &str,
        rail: &str,
        resource: &str,
        amount: &str,
        now: u64,
    ) -> Result<bool, StoreError> {
        let now = i64_of(now)?;
        self.state.with(|c| {
            let n = c.execute(
                "INSERT INTO payment (network, payer, nonce, rail, resource, amount, status,
                                      claimed_at, updated_at, payload)
                 VALUES ($1, $2, $3, $4, $5, $6, 'claimed', $7, $7, $8)
                 ON CONFLICT DO NOTHING",
                &[
                    &key.network,
                    &key.payer,
                    &key.nonce,
                    &rail,
                    &resource,
                    &amount,
                    &now,
                    &payload,
                ],
            )?;
            Ok(n == 1)
        })
    }

    fn finish_payment(
        &self,
        key: &PaymentKey<'_>,
        status: PaymentStatus,
        tx: Option<&str>,
        detail: Option<&str>,
        now: u64,
    ) -> Result<(), StoreError> {
        let now = i64_of(now)?;
        self.state.with(|c| {
            c.execute(
                "UPDATE payment SET status = $4, tx = $5, detail = $6, updated_at = $7
                 WHERE network = $1 AND payer = $2 AND nonce = $3",
                &[
                    &key.network,
                    &key.payer,
                    &key.nonce,
                    &status.as_str(),
                    &tx,
                    &detail,
                    &now,
                ],
            )?;
            Ok(())
        })
    }

    fn finish_claimed(
        &self,
        key: &PaymentKey<'_>,
        status: PaymentStatus,
        tx: Option<&str>,
        detail: Option<&str>,
        now: u64,
    ) -> Result<bool, StoreError> {
        let now = i64_of(now)?;
        self.state.with(|c| {
            let n = c.execute(
                "UPDATE payment SET status = $4, tx = $5, detail = $6, updated_at = $7
                 WHERE network = $1 AND payer = $2 AND nonce = $3 AND status = 'claimed'",
                &[
                    &key.network,
                    &key.payer,
                    &key.nonce,
                    &status.as_str(),
                    &tx,
                    &detail,
                    &now,
                ],
            )?;
            Ok(n == 1)
        })
    }

    fn payment_payload(&self, key: &PaymentKey<'_>) -> Result<Option<String>, StoreError> {
        self.state.with(|c| {
            let row = c.query_opt(
                "SELECT payload FROM payment WHERE network = $1 AND payer = $2 AND nonce = $3",
                &[&key.network, &key.payer, &key.nonce],
            )?;
            Ok(match row {
                Some(r) => r.try_get::<_, Option<String>>(0)?,
                None => None,
            })
        })
    }

    fn payment_status(
        &self,
        key: &PaymentKey<'_>,
    ) -> Result<Option<(PaymentStatus, Option<String>)>, StoreError> {
        self.state.with(|c| {
            let row = c.query_opt(
                "SELECT status, tx FROM payment WHERE network = $1 AND payer = $2 AND nonce = $3",
                &[&key.network, &key.payer, &key.nonce],
            )?;
            row.map(|r| Ok((PaymentStatus::parse(r.try_get(0)?), r.try_get(1)?)))
                .transpose()
        })
    }

    fn idempotent_get(
        &self,
        key: &str,
        request: &str,
        not_before: u64,
    ) -> Result<Idempotent, StoreError> {
        let not_before = i64_of(not_before)?;
        self.state.with(|c| {
            let row = c.query_opt(
                "SELECT body, request FROM idempotency WHERE key = $1 AND created_at >= $2",
                &[&key, &not_before],
            )?;
            idempotent(row, request)
        })
    }

    fn idempotent_put(
        &self,
        key: &str,
        request: &str,
        body: &[u8],
        now: u64,
    ) -> Result<Idempotent, StoreError> {
        let (at, expired) = (
            i64_of(now)?,
            i64_of(now.saturating_sub(IDEMPOTENCY_WINDOW))?,
        );
        self.state.with(|c| {
            c.execute(
                "INSERT INTO idempotency (key, body, created_at, request) VALUES ($1, $2, $3, $5)
                 ON CONFLICT (key) DO UPDATE SET body = excluded.body,
                    created_at = excluded.created_at, request = excluded.request
                 WHERE idempotency.created_at < $4",
                &[&key, &body, &at, &expired, &request],
            )?;
            let row = c.query_opt(
                "SELECT body, request FROM idempotency WHERE key = $1",
                &[&key],
            )?;
            match idempotent(row, request)? {
                Idempotent::Fresh => Err(StoreError::Corrupt(format!(
                    "idempotency key {key:?} vanished as it was written"
                ))),
                kept => Ok(kept),
            }
        })
    }

    fn prune_idempotency(&self, now: u64) -> Result<usize, StoreError> {
        let expired = i64_of(now.saturating_sub(IDEMPOTENCY_WINDOW))?;
        self.state.with(|c| {
            let n = c.execute("DELETE FROM idempotency WHERE created_at < $1", &[&expired])?;
            Ok(usize::try_from(n).unwrap_or(usize::MAX))
        })
    }

    fn payment_id(&self, scope: &str, id: &str) -> Result<Option<PaymentIdBinding>, StoreError> {
        self.state.with(|c| {
            c.query_opt(
                concat!(
                    "SELECT ",
                    payment_id_columns!(),
                    " FROM payment_identifier WHERE scope = $1 AND id = $2"
                ),
                &[&scope, &id],
            )?
            .as_ref()
            .map(binding)
            .transpose()
        })
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
        let now = i64_of(now)?;
        self.state.with(|c| {
            c.execute(
                "INSERT INTO payment_identifier (scope, id, payload, request, network, payer,
                                                 nonce, state, created_at, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, 'open', $8, $8)
                 ON CONFLICT DO NOTHING",
                &[
                    &scope,
                    &id,
                    &payload,
                    &request,
                    &key.network,
                    &key.payer,
                    &key.nonce,
                    &now,
                ],
            )?;
            let row = c
                .query_opt(
                    concat!(
                        "SELECT ",
                        payment_id_columns!(),
                        " FROM payment_identifier WHERE scope = $1 AND id = $2"
                    ),
                    &[&scope, &id],
                )?
                .ok_or_else(|| {
                    StoreError::Corrupt(format!(
                        "payment identifier {id:?} vanished as it was bound"
                    ))
                })?;
            binding(&row)
        })
    }

    fn payment_id_pending(
        &self,
        scope: &str,
        id: &str,
        tx: &str,
        record: Option<&[u8]>,
        now: u64,
    ) -> Result<(), StoreError> {
        let now = i64_of(now)?;
        self.state.with(|c| {
            c.execute(
                "UPDATE payment_identifier SET state = $3, tx = $4, record = COALESCE($5, record),
                        updated_at = $6
                 WHERE scope = $1 AND id = $2 AND state != 'served'",
                &[
                    &scope,
                    &id,
                    &PaymentIdState::Pending.as_str(),
                    &tx,
                    &record,
                    &now,
                ],
            )?;
            Ok(())
        })
    }

    fn payment_id_served(
        &self,
        scope: &str,
        id: &str,
        answer: &ServedAnswer<'_>,
        now: u64,
    ) -> Result<(), StoreError> {
        let now = i64_of(now)?;
        self.state.with(|c| {
            c.execute(
                "UPDATE payment_identifier SET state = $3, status = $4, receipt = $5, record = $6,
                        location = $7, tx = $8, updated_at = $9
                 WHERE scope = $1 AND id = $2",
                &[
                    &scope,
                    &id,
                    &PaymentIdState::Served.as_str(),
                    &i64::from(answer.status),
                    &answer.receipt,
                    &answer.record,
                    &answer.location,
                    &answer.tx,
                    &now,
                ],
            )?;
            Ok(())
        })
    }

    fn put_interpretation(
        &self,
        vow_id: &str,
        covers_seq: u64,
        interpretation: &str,
        now: u64,
    ) -> Result<(), StoreError> {
        let (seq, now) = (i64_of(covers_seq)?, i64_of(now)?);
        self.state.in_transaction("BEGIN", |c| {
            c.execute(
                "INSERT INTO reading (vow_id, covers_seq, interpretation, at)
                 VALUES ($1, $2, $3, $4)
                 ON CONFLICT (vow_id) DO UPDATE SET covers_seq = excluded.covers_seq,
                    interpretation = excluded.interpretation, at = excluded.at
                 WHERE reading.covers_seq <= excluded.covers_seq",
                &[&vow_id, &seq, &interpretation, &now],
            )?;
            c.execute(
                "DELETE FROM reading_ask WHERE vow_id = $1 AND seq <= $2",
                &[&vow_id, &seq],
            )?;
            Ok(())
        })
    }

    fn put_readings_asked(&self, asked: &[(String, u64)], now: u64) -> Result<(), StoreError> {
        let now = i64_of(now)?;
        self.state.in_transaction("BEGIN", |c| {
            for (vow_id, seq) in asked {
                c.execute(
                    "INSERT INTO reading_ask (vow_id, seq, at) VALUES ($1, $2, $3)
                     ON CONFLICT (vow_id) DO UPDATE SET seq = excluded.seq, at = excluded.at
                     WHERE reading_ask.seq < excluded.seq",
                    &[vow_id, &i64_of(*seq)?, &now],
                )?;
            }
            Ok(())
        })
    }

    fn free_caps(&self, day: u64) -> Result<Vec<(String, String, u32)>, StoreError> {
        let day = i64_of(day)?;
        self.state.with(|c| {
            let rows = c.query(
                "SELECT counter, bucket, used FROM free_cap WHERE day = $1",
                &[&day],
            )?;
            rows.iter()
                .map(|r| {
                    let used: i64 = r.try_get(2)?;
                    Ok((
                        r.try_get(0)?,
                        r.try_get(1)?,
                        u32::try_from(u64_of(used.max(0), "count")?).unwrap_or(u32::MAX),
                    ))
                })
                .collect()
        })
    }

    fn put_free_caps(&self, day: u64, rows: &[(String, String, u32)]) -> Result<(), StoreError> {
        let day = i64_of(day)?;
        self.state.in_transaction("BEGIN", |c| {
            for (counter, bucket, used) in rows {
                c.execute(
                    "INSERT INTO free_cap (counter, day, bucket, used) VALUES ($1, $2, $3, $4)
                     ON CONFLICT (counter, day, bucket) DO UPDATE SET used = excluded.used",
                    &[counter, &day, bucket, &i64::from(*used)],
                )?;
            }
            c.execute("DELETE FROM free_cap WHERE day < $1", &[&day])?;
            Ok(())
        })
    }
}
