//! Donated traces and resume points on PostgreSQL (tables `donated` and `resume_point`;
//! [`crate::state::kept`] states the contract): their SQLite twins' statements.

use super::{i64_of, u64_of, Postgres};
use crate::state::kept::{taken, DonatedTraces, ResumePoint, ResumePoints};
use crate::state::StoreError;
use conduct_core::canonical::sha256_hex;

/// Donated traces in a PostgreSQL database.
#[derive(Debug, Clone)]
pub struct PgDonated {
    state: Postgres,
}

/// Resume points in a PostgreSQL database.
#[derive(Debug, Clone)]
pub struct PgResumePoints {
    state: Postgres,
}

impl Postgres {
    /// The donated traces of this database.
    pub fn donated(&self) -> PgDonated {
        PgDonated {
            state: self.clone(),
        }
    }

    /// The resume points of this database.
    pub fn resume_points(&self) -> PgResumePoints {
        PgResumePoints {
            state: self.clone(),
        }
    }
}

impl DonatedTraces for PgDonated {
    fn put(
        &self,
        vow_id: &str,
        trace_sha256: &str,
        trace: &[u8],
        at: u64,
    ) -> Result<(), StoreError> {
        let at = i64_of(at)?;
        self.state.with(|c| {
            c.execute(
                "INSERT INTO donated (vow_id, trace_sha256, trace, donated_at)
                 VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
                &[&vow_id, &trace_sha256, &trace, &at],
            )?;
            Ok(())
        })
    }

    fn count(&self) -> Result<u64, StoreError> {
        self.state.with(|c| {
            let row = c.query_opt("SELECT COUNT(*) FROM donated", &[])?;
            u64_of(
                row.map(|r| r.try_get::<_, i64>(0))
                    .transpose()?
                    .unwrap_or(0),
                "donated count",
            )
        })
    }
}

impl ResumePoints for PgResumePoints {
    fn get(&self, vow_id: &str, render: &str) -> Result<Option<ResumePoint>, StoreError> {
        self.state.with(|c| {
            let row = c.query_opt(
                "SELECT records, sha256, state FROM resume_point
                 WHERE vow_id = $1 AND render = $2",
                &[&vow_id, &render],
            )?;
            Ok(match row {
                None => None,
                Some(r) => taken(
                    vow_id,
                    r.try_get(0)?,
                    &r.try_get::<_, String>(1)?,
                    r.try_get(2)?,
                ),
            })
        })
    }

    fn put_many(&self, render: &str, points: &[(String, ResumePoint)]) -> Result<(), StoreError> {
        if points.is_empty() {
            return Ok(());
        }
        self.state.in_transaction("BEGIN", |c| {
            for (vow_id, p) in points {
                c.execute(
                    "INSERT INTO resume_point (vow_id, render, records, sha256, state)
                     VALUES ($1, $2, $3, $4, $5)
                     ON CONFLICT (vow_id) DO UPDATE SET render = excluded.render,
                       records = excluded.records, sha256 = excluded.sha256,
                       state = excluded.state",
                    &[
                        vow_id,
                        &render,
                        &i64_of(p.records)?,
                        &sha256_hex(&p.state),
                        &p.state,
                    ],
                )?;
            }
            Ok(())
        })
    }
}
