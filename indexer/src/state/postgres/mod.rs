//! The State seam on PostgreSQL (`state = "postgres://user@host:port/db"`): a pool of
//! tokio-postgres connections (deadpool-postgres) on a small runtime of this backend's own,
//! the versioned schema (`schema.rs`, created and migrated at open under an advisory lock),
//! the log's tables (`log.rs`) and a batch's transaction (`append.rs`). The contract is the
//! seam's (`crate::state`); what is particular here:
//!
//! - **Commits are durable when they return**: the server's default `synchronous_commit = on`
//!   (an operator who turns it off gives up acknowledged writes, and is told so in
//!   OPERATIONS.md).
//! - **A unique violation aborts a PostgreSQL transaction**, so every single-use insert of a
//!   job says `ON CONFLICT DO NOTHING` and reads the rows it affected.
//! - **A server that is down or restarting** is an error after a bounded wait (connect 5 s,
//!   a pooled connection 5 s, any one call 30 s), never a hang; the pool drops a broken
//!   connection and the next call connects afresh, so the service recovers by itself.
//! - **Calls block the calling thread**: the stores' callers are the sequencer's thread and
//!   the api's blocking pool. Called from inside an async runtime, a call runs on a scoped
//!   thread of its own instead of panicking.

mod append;
mod chain;
mod kept;
mod log;
mod schema;
mod tables;
mod vows;

use std::future::Future;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod};
use tokio_postgres::types::ToSql;
use tokio_postgres::{NoTls, Row};

use super::StoreError;

pub use chain::PgChain;
pub use kept::{PgDonated, PgResumePoints};
pub use log::PgLog;
pub use tables::PgTables;
pub use vows::PgVows;

/// Longest wait for a new connection, and for a pooled one.
const CONNECT_WAIT: Duration = Duration::from_secs(5);
/// Longest any one call may take.
const CALL_WAIT: Duration = Duration::from_secs(30);
/// Connections in the pool, at most.
const POOL_SIZE: usize = 16;

impl From<tokio_postgres::Error> for StoreError {
    fn from(e: tokio_postgres::Error) -> Self {
        let detail = match e.as_db_error() {
            Some(db) => format!("{}: {}", db.code().code(), db.message()),
            None => e.to_string(),
        };
        StoreError::Backend {
            backend: "postgres",
            detail,
        }
    }
}

fn failed(detail: impl std::fmt::Display) -> StoreError {
    StoreError::Backend {
        backend: "postgres",
        detail: detail.to_string(),
    }
}

/// The pool and the runtime its connections live on.
struct Inner {
    pool: Pool,
    runtime: Option<tokio::runtime::Runtime>,
    locator: String,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.pool.close();
        // Shut down in the background: a state may be dropped inside another runtime.
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

impl Inner {
    /// Run `fut` on the backend's runtime, bounded by [`CALL_WAIT`], and wait for it here.
    fn run<T: Send>(
        &self,
        fut: impl Future<Output = Result<T, StoreError>> + Send,
    ) -> Result<T, StoreError> {
        let rt = self
            .runtime
            .as_ref()
            .ok_or_else(|| failed("the backend's runtime is gone"))?;
        let bounded = async {
            tokio::time::timeout(CALL_WAIT, fut)
                .await
                .map_err(|_| failed(format!("no answer in {} s", CALL_WAIT.as_secs())))?
        };
        if tokio::runtime::Handle::try_current().is_err() {
            return rt.block_on(bounded);
        }
        std::thread::scope(|s| {
            std::thread::Builder::new()
                .name("state-postgres".into())
                .spawn_scoped(s, || rt.block_on(bounded))
                .map_err(failed)?
                .join()
                .map_err(|_| failed("a call panicked"))?
        })
    }
}

/// The state on one PostgreSQL database.
#[derive(Clone)]
pub struct Postgres {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Postgres {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Postgres")
            .field("at", &self.inner.locator)
            .finish_non_exhaustive()
    }
}

/// `url` without its password, for messages.
fn locator(config: &tokio_postgres::Config) -> String {
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .zip(config.get_ports().iter().chain(std::iter::repeat(&5432)))
        .map(|(h, p)| match h {
            tokio_postgres::config::Host::Tcp(h) => format!("{h}:{p}"),
            #[cfg(unix)]
            tokio_postgres::config::Host::Unix(path) => path.display().to_string(),
        })
        .collect();
    format!(
        "postgres://{}@{}/{}",
        config.get_user().unwrap_or(""),
        hosts.join(","),
        config.get_dbname().unwrap_or("")
    )
}

impl Postgres {
    /// Connect to the database `url` names (`postgres://user[:password]@host:port/db`) and
    /// create or migrate its schema. Only plain connections: a URL that requires TLS fails
    /// here, naming the reason.
    pub fn open(url: &str) -> Result<Postgres, StoreError> {
        let mut config =
            tokio_postgres::Config::from_str(url).map_err(|e| failed(format!("state: {e}")))?;
        config
            .connect_timeout(CONNECT_WAIT)
            .keepalives(true)
            .keepalives_idle(Duration::from_secs(10))
            .application_name("conduct");
        let locator = locator(&config);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("state-postgres")
            .enable_all()
            .build()
            .map_err(failed)?;
        let manager = Manager::from_config(
            config,
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .wait_timeout(Some(CONNECT_WAIT))
            .create_timeout(Some(CONNECT_WAIT))
            .recycle_timeout(Some(CONNECT_WAIT))
            .build()
            .map_err(failed)?;
        let state = Postgres {
            inner: Arc::new(Inner {
                pool,
                runtime: Some(runtime),
                locator,
            }),
        };
        let conn = state.conn()?;
        schema::migrate(&conn)?;
        Ok(state)
    }

    /// Where the state lives (the URL without its password).
    pub fn locator(&self) -> &str {
        &self.inner.locator
    }

    /// A connection of the pool, held until dropped.
    fn conn(&self) -> Result<Conn, StoreError> {
        let conn = Conn {
            inner: self.inner.clone(),
            slot: Mutex::new(None),
            in_tx: AtomicBool::new(false),
        };
        drop(conn.client()?);
        Ok(conn)
    }

    /// Run `f` on a connection of the pool.
    fn with<T>(&self, f: impl FnOnce(&Conn) -> Result<T, StoreError>) -> Result<T, StoreError> {
        f(&self.conn()?)
    }

    /// Run `f` in one transaction (opened by `begin`) on a connection of the pool.
    fn in_transaction<T>(
        &self,
        begin: &'static str,
        f: impl FnOnce(&Conn) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.conn()?.in_transaction(begin, f)
    }

    /// The log's tables over a connection of their own (the ledger's, or a reader's).
    pub fn log(&self) -> Result<Box<dyn super::LogState>, StoreError> {
        Ok(Box::new(PgLog::new(self.clone(), self.conn()?)))
    }
}

/// One connection held for a long time (the ledger's, a reader's), with blocking calls. When
/// the server closed it (a restart), the next call outside a transaction takes a new one from
/// the pool; inside a transaction it fails, as the transaction is lost.
struct Conn {
    inner: Arc<Inner>,
    slot: Mutex<Option<Object>>,
    /// Between a `BEGIN` and its `COMMIT` or `ROLLBACK`.
    in_tx: AtomicBool,
}

type Params<'a> = &'a [&'a (dyn ToSql + Sync)];

impl Conn {
    /// The open connection, connecting afresh when there is none outside a transaction.
    fn client(&self) -> Result<MutexGuard<'_, Option<Object>>, StoreError> {
        let mut slot = conduct_core::sync::lock(&self.slot);
        if slot.as_ref().is_none_or(|c| c.is_closed()) {
            if self.in_tx.load(Ordering::Relaxed) {
                return Err(failed("the connection closed inside a transaction"));
            }
            let pool = self.inner.pool.clone();
            *slot = None;
            *slot = Some(
                self.inner
                    .run(async move { pool.get().await.map_err(failed) })?,
            );
        }
        Ok(slot)
    }

    /// Run the statements of `sql` (no parameters, no rows).
    fn batch(&self, sql: &'static str) -> Result<(), StoreError> {
        let slot = self.client()?;
        let c = slot.as_ref().ok_or_else(|| failed("no connection"))?;
        self.inner.run(async { Ok(c.batch_execute(sql).await?) })
    }

    /// Open a transaction (`BEGIN ...`).
    fn begin(&self, sql: &'static str) -> Result<(), StoreError> {
        self.batch(sql)?;
        self.in_tx.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// End the transaction (`COMMIT` or `ROLLBACK`): over whatever the answer, as a failed
    /// end leaves it committed, rolled back, or lost with the connection.
    fn end(&self, sql: &'static str) -> Result<(), StoreError> {
        let ended = self.batch(sql);
        self.in_tx.store(false, Ordering::Relaxed);
        ended
    }

    /// Run `f` in one transaction opened by `begin` (`BEGIN ...`) and commit it. When
    /// anything fails the connection is closed, which rolls the transaction back: it is never
    /// used again, nor handed back to the pool, inside a transaction.
    fn in_transaction<T>(
        &self,
        begin: &'static str,
        f: impl FnOnce(&Conn) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.begin(begin)?;
        let done = f(self).and_then(|t| self.end("COMMIT").map(|()| t));
        if done.is_err() {
            self.replace();
        }
        done
    }

    /// Execute one statement; the rows it affected.
    fn execute(&self, sql: &'static str, params: Params<'_>) -> Result<u64, StoreError> {
        let slot = self.client()?;
        let c = slot.as_ref().ok_or_else(|| failed("no connection"))?;
        self.inner.run(async {
            let st = c.prepare_cached(sql).await?;
            Ok(c.execute(&st, params).await?)
        })
    }

    /// The rows of one query.
    fn query(&self, sql: &'static str, params: Params<'_>) -> Result<Vec<Row>, StoreError> {
        let slot = self.client()?;
        let c = slot.as_ref().ok_or_else(|| failed("no connection"))?;
        self.inner.run(async {
            let st = c.prepare_cached(sql).await?;
            Ok(c.query(&st, params).await?)
        })
    }

    /// The one row of a query, if any.
    fn query_opt(&self, sql: &'static str, params: Params<'_>) -> Result<Option<Row>, StoreError> {
        let slot = self.client()?;
        let c = slot.as_ref().ok_or_else(|| failed("no connection"))?;
        self.inner.run(async {
            let st = c.prepare_cached(sql).await?;
            Ok(c.query_opt(&st, params).await?)
        })
    }

    /// Close this connection (its state is unknown); the next call takes a new one.
    fn replace(&self) {
        let mut slot = conduct_core::sync::lock(&self.slot);
        if let Some(old) = slot.take() {
            drop(Object::take(old));
        }
        self.in_tx.store(false, Ordering::Relaxed);
    }
}

/// A stored count or index, which is never negative.
fn u64_of(n: i64, what: &str) -> Result<u64, StoreError> {
    u64::try_from(n).map_err(|_| StoreError::Corrupt(format!("negative {what} {n}")))
}

/// An index or instant as PostgreSQL's `BIGINT`.
fn i64_of(n: u64) -> Result<i64, StoreError> {
    i64::try_from(n).map_err(|_| StoreError::Corrupt(format!("{n} is past BIGINT")))
}
