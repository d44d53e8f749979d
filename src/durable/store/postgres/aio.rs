//! The async PostgreSQL client (features `postgres` + `tokio`): the
//! producer verbs (put, cancel, get, counts, the dead-letter verbs) over
//! tokio-postgres, with the same SQL, options, retry policy and replies as
//! the sync backend.
//!
//! Invariants:
//!
//! - Every verb is one statement (one transaction), so a future dropped
//!   mid-way leaves the store as before the call or as after it, never
//!   between: a statement already sent runs to its end on the server
//!   whether or not its reply is read.
//! - Idempotent verbs (all of them) are retried on connection failures, a
//!   server starting or stopping, serialization failures and deadlocks,
//!   until `op_timeout`, with async sleeps between attempts. A retried
//!   cancel, requeue or purge that finds nothing reports `Unavailable`.
//! - One connection with its prepared statements, made on first use (its
//!   connection task on the current tokio runtime) and replaced after a
//!   transport error; concurrent calls pipeline on it. Nothing here blocks
//!   a thread.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_postgres::{Client, Statement};

use super::backend::PostgresBackend;
use super::client::{counts_sql, dead_sql, get_sql, PostgresOptions};
use super::dead::{purge_sql, requeue_sql};
use super::error::{classify, map_err, Kind};
use super::reply::{
    acted_reply, buried_rows, cancel_reply, counts_reply, get_reply, put_reply, when_args,
};
use super::schema;
use super::tls::{async_config, Connector};
use crate::base::sync::Mutex;
use crate::durable::store::backend::{
    Buried, Cancelled, Counts, DurableError, Put, PutMode, Stored, When,
};

/// One connection and its statements.
struct Conn {
    client: Client,
    put: Statement,
    cancel: Statement,
    get: Statement,
    counts: Statement,
    dead: Statement,
    requeue: Statement,
    purge: Statement,
}

type Attempt<'a, R> = Pin<Box<dyn Future<Output = Result<R, postgres::Error>> + Send + 'a>>;

/// The async client of one PostgreSQL queue.
pub(crate) struct PgAio {
    config: tokio_postgres::Config,
    tls: Connector,
    /// The schema, quoted for SQL, and as named.
    s: String,
    schema: String,
    queue: String,
    opts: PostgresOptions,
    conn: Mutex<Option<Arc<Conn>>>,
}

impl PgAio {
    /// The async client of `backend`'s queue: its connection settings,
    /// TLS, schema and options. Connects on first use.
    pub(crate) fn of(backend: &PostgresBackend) -> Self {
        let pg = &backend.pg;
        PgAio {
            config: async_config(&pg.config),
            tls: pg.tls.clone(),
            s: pg.s.clone(),
            schema: pg.opts.schema.clone(),
            queue: pg.queue.clone(),
            opts: pg.opts.clone(),
            conn: Mutex::new(None),
        }
    }

    async fn connect(&self) -> Result<Arc<Conn>, postgres::Error> {
        let client = self.tls.connect_async(&self.config).await?;
        // As the sync backend's connections: a row lock held by another
        // transaction fails the statement at op_timeout.
        client
            .batch_execute(&format!(
                "SET lock_timeout = {}",
                self.opts
                    .server
                    .op_timeout
                    .as_millis()
                    .clamp(1, i32::MAX as u128)
            ))
            .await?;
        let s = &self.s;
        let conn = Conn {
            put: client.prepare(&schema::put_sql(s, &self.schema)).await?,
            cancel: client.prepare(&schema::cancel_sql(s)).await?,
            get: client.prepare(&get_sql(s)).await?,
            counts: client.prepare(&counts_sql(s)).await?,
            dead: client.prepare(&dead_sql(s)).await?,
            requeue: client.prepare(&requeue_sql(s)).await?,
            purge: client.prepare(&purge_sql(s)).await?,
            client,
        };
        Ok(Arc::new(conn))
    }

    async fn connection(&self) -> Result<Arc<Conn>, postgres::Error> {
        if let Some(conn) = self.conn.lock().clone() {
            if !conn.client.is_closed() {
                return Ok(conn);
            }
        }
        let conn = self.connect().await?;
        *self.conn.lock() = Some(conn.clone());
        Ok(conn)
    }

    /// Runs `attempt` until it succeeds, fails for good, or `op_timeout`
    /// is spent; returns whether it was sent more than once.
    async fn run<'a, R>(
        &self,
        mut attempt: impl FnMut(Arc<Conn>) -> Attempt<'a, R>,
    ) -> Result<(R, bool), DurableError> {
        let op_timeout = self.opts.server.op_timeout;
        let limit = Instant::now()
            .checked_add(op_timeout)
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(365 * 24 * 3600));
        let mut backoff = Duration::from_millis(10);
        let mut sent = 0u32;
        loop {
            let left = limit
                .checked_duration_since(Instant::now())
                .filter(|l| !l.is_zero())
                .unwrap_or(Duration::from_millis(1));
            let err = match tokio::time::timeout(left, self.connection()).await {
                Ok(Ok(conn)) => {
                    sent += 1;
                    match tokio::time::timeout(left, attempt(conn)).await {
                        Ok(Ok(r)) => return Ok((r, sent > 1)),
                        Ok(Err(err)) => match classify(&err) {
                            Kind::RolledBack | Kind::Starting => map_err(err),
                            Kind::Broken => {
                                *self.conn.lock() = None;
                                map_err(err)
                            }
                            _ => return Err(map_err(err)),
                        },
                        Err(_) => {
                            // The connection may be stuck mid-reply.
                            *self.conn.lock() = None;
                            DurableError::Unavailable(
                                format!("no reply within {op_timeout:?}").into(),
                            )
                        }
                    }
                }
                Ok(Err(err)) => match classify(&err) {
                    Kind::Broken | Kind::Starting => map_err(err),
                    _ => return Err(map_err(err)),
                },
                Err(_) => DurableError::Unavailable(
                    format!("could not connect within {op_timeout:?}").into(),
                ),
            };
            if Instant::now() + backoff >= limit {
                return Err(err);
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_millis(200));
        }
    }

    pub(crate) async fn put(
        &self,
        id: &str,
        envelope: &[u8],
        when: When,
        mode: PutMode,
    ) -> Result<Put, DurableError> {
        let (delay, at) = when_args(when);
        let if_absent = mode == PutMode::IfAbsent;
        let q = &self.queue;
        let (row, _) = self
            .run(|c| {
                Box::pin(async move {
                    c.client
                        .query_one(&c.put, &[q, &id, &envelope, &delay, &at, &if_absent])
                        .await
                })
            })
            .await?;
        put_reply(&row)
    }

    pub(crate) async fn cancel(&self, id: &str) -> Result<Cancelled, DurableError> {
        let q = &self.queue;
        let (row, retried) = self
            .run(|c| Box::pin(async move { c.client.query_one(&c.cancel, &[q, &id]).await }))
            .await?;
        let found = cancel_reply(&row)?;
        if found == Cancelled::NotFound && retried {
            return Err(DurableError::Unavailable(format!(
                "cancel of {id:?}: the reply was lost and the item is gone; it may have been this cancel"
            ).into()));
        }
        Ok(found)
    }

    pub(crate) async fn get(&self, id: &str) -> Result<Option<Stored>, DurableError> {
        let q = &self.queue;
        let (rows, _) = self
            .run(|c| Box::pin(async move { c.client.query(&c.get, &[q, &id]).await }))
            .await?;
        get_reply(rows.first())
    }

    pub(crate) async fn counts(&self) -> Result<Counts, DurableError> {
        let q = &self.queue;
        let (rows, _) = self
            .run(|c| Box::pin(async move { c.client.query(&c.counts, &[q]).await }))
            .await?;
        counts_reply(&rows)
    }

    pub(crate) async fn dead_letters(&self, max: usize) -> Result<Vec<Buried>, DurableError> {
        let q = &self.queue;
        let max = i64::try_from(max).unwrap_or(i64::MAX);
        let (rows, _) = self
            .run(|c| Box::pin(async move { c.client.query(&c.dead, &[q, &max]).await }))
            .await?;
        buried_rows(&rows)
    }

    pub(crate) async fn requeue(&self, id: &str) -> Result<bool, DurableError> {
        let q = &self.queue;
        let (row, retried) = self
            .run(|c| Box::pin(async move { c.client.query_one(&c.requeue, &[q, &id]).await }))
            .await?;
        acted_reply(&row, retried, "requeue", id)
    }

    pub(crate) async fn purge(&self, id: &str) -> Result<bool, DurableError> {
        let q = &self.queue;
        let (row, retried) = self
            .run(|c| Box::pin(async move { c.client.query_one(&c.purge, &[q, &id]).await }))
            .await?;
        acted_reply(&row, retried, "purge", id)
    }
}
