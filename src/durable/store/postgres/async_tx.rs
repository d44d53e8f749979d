//! The verbs that run in the caller's own transaction, from async code
//! (feature `tokio`; sqlx with feature `sqlx`): [`AsyncPgTx`], the
//! connections and transactions they take, and the backend's put and
//! cancel on one. The typed forms are `AsyncClient::schedule_in` and
//! `cancel_in` (`pool/async_tx.rs`).
//!
//! Invariants (those of the sync verbs, `tx.rs`):
//!
//! - Each verb is the very statement of the sync verb (`schema::put_sql`,
//!   `schema::cancel_sql`), one call of the schema's function on the
//!   caller's connection: nothing is visible to a claimer until the caller
//!   commits, a rollback leaves no trace, and the wake-up NOTIFY goes out
//!   at commit.
//! - The deadline is fixed by the server's clock at the statement, so a
//!   committed item is claimed no earlier than it, by the store's clock.
//! - Not retried: the caller owns the transaction, and a failed statement
//!   aborts it.

use super::backend::PostgresBackend;
use super::reply::{cancel_of, put_of, when_args};
use super::schema;
use crate::durable::store::async_tx::{AsyncInTransaction, TxFuture};
use crate::durable::store::backend::{
    check_id, Cancelled, DurableBackend, DurableError, Put, PutMode, When,
};

/// The arguments of a put, as SQL takes them.
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub struct PutArgs<'a> {
    pub queue: &'a str,
    pub id: &'a str,
    pub envelope: &'a [u8],
    pub delay: Option<i64>,
    pub at: Option<i64>,
    pub if_absent: bool,
}

/// What a put's row holds: (result, deadline).
#[doc(hidden)]
#[allow(unreachable_pub)] // named by AsyncPgTx's hidden methods only
pub type PutRow = (i32, Option<i64>);

/// What a cancel's row holds: (state, envelope).
#[doc(hidden)]
#[allow(unreachable_pub)] // named by AsyncPgTx's hidden methods only
pub type CancelRow = (Option<i16>, Option<Vec<u8>>);

/// An async PostgreSQL connection or transaction that the transactional
/// verbs ([`AsyncClient::schedule_in`](crate::durable::AsyncClient::schedule_in),
/// [`cancel_in`](crate::durable::AsyncClient::cancel_in)) run their
/// statement on: a `tokio_postgres::Transaction` or `Client` (feature
/// `tokio` with `postgres`), and, with feature `sqlx`, a
/// `sqlx::Transaction<'_, Postgres>` or `sqlx::PgConnection` (a pooled
/// connection derefs to one: pass `&mut *conn`).
///
/// Every one is an [`AsyncInTransaction`] for a pool on a
/// [`PostgresBackend`]. Implemented here only; its methods are the
/// crate's.
///
/// # Examples
///
/// The timeout in a tokio-postgres transaction (`no_run`: it needs a
/// server):
///
/// ```no_run
/// use std::time::Duration;
///
/// # #[allow(dead_code)]
/// async fn checkout(
///     client: &schedpool::durable::AsyncClient,
///     db: &mut tokio_postgres::Client,
/// ) -> Result<(), Box<dyn std::error::Error>> {
///     let mut tx = db.transaction().await?;
///     tx.execute("INSERT INTO orders (id, state) VALUES (42, 'unpaid')", &[]).await?;
///     client.schedule_in(&mut tx, "close-order", "order-42", &42u64, Duration::from_secs(1800)).await?;
///     tx.commit().await?;
///     Ok(())
/// }
/// ```
pub trait AsyncPgTx: Send {
    #[doc(hidden)]
    fn put_row<'a>(&'a mut self, sql: &'a str, args: PutArgs<'a>) -> TxFuture<'a, PutRow>;
    #[doc(hidden)]
    fn cancel_row<'a>(
        &'a mut self,
        sql: &'a str,
        queue: &'a str,
        id: &'a str,
    ) -> TxFuture<'a, CancelRow>;
}

/// A tokio-postgres client or transaction.
macro_rules! tokio_postgres_tx {
    ($($ty:ty),*) => {$(
        impl AsyncPgTx for $ty {
            fn put_row<'a>(&'a mut self, sql: &'a str, a: PutArgs<'a>) -> TxFuture<'a, PutRow> {
                Box::pin(async move {
                    let row = self
                        .query_one(sql, &[&a.queue, &a.id, &a.envelope, &a.delay, &a.at, &a.if_absent])
                        .await
                        .map_err(super::error::map_err)?;
                    Ok((
                        row.try_get(0).map_err(super::reply::bad_reply)?,
                        row.try_get(1).map_err(super::reply::bad_reply)?,
                    ))
                })
            }

            fn cancel_row<'a>(&'a mut self, sql: &'a str, queue: &'a str, id: &'a str)
                -> TxFuture<'a, CancelRow>
            {
                Box::pin(async move {
                    let row = self
                        .query_one(sql, &[&queue, &id])
                        .await
                        .map_err(super::error::map_err)?;
                    Ok((
                        row.try_get(0).map_err(super::reply::bad_reply)?,
                        row.try_get(1).map_err(super::reply::bad_reply)?,
                    ))
                })
            }
        }
    )*};
}

tokio_postgres_tx!(tokio_postgres::Transaction<'_>, tokio_postgres::Client);

#[cfg(feature = "sqlx")]
mod with_sqlx {
    use sqlx::Row;

    use super::{AsyncPgTx, CancelRow, PutArgs, PutRow, TxFuture};
    use crate::durable::store::backend::DurableError;
    use crate::durable::store::error::ErrorDetail;

    /// A sqlx error as the durable kinds: a lock or serialization wait
    /// that gave up and a lost connection are `Unavailable`, other
    /// refusals by the server `Refused`, a reply of another shape
    /// `Format`, the rest `Config`.
    fn map(err: sqlx::Error) -> DurableError {
        let text = err.to_string();
        match &err {
            sqlx::Error::Database(db) => match db.code().as_deref() {
                Some("55P03" | "40001" | "40P01" | "57P01" | "57P02" | "57P03") => {
                    DurableError::Unavailable(ErrorDetail::with_source(text, err))
                }
                Some(code) if code.starts_with("42") || code.starts_with("28") => {
                    DurableError::Config(ErrorDetail::with_source(text, err))
                }
                _ => DurableError::Refused(ErrorDetail::with_source(text, err)),
            },
            sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::WorkerCrashed => {
                DurableError::Unavailable(ErrorDetail::with_source(text, err))
            }
            sqlx::Error::RowNotFound
            | sqlx::Error::ColumnDecode { .. }
            | sqlx::Error::ColumnNotFound(_)
            | sqlx::Error::Decode(_) => DurableError::Format(ErrorDetail::with_source(text, err)),
            _ => DurableError::Config(ErrorDetail::with_source(text, err)),
        }
    }

    // The statements are the backend's own (`schema::put_sql`,
    // `cancel_sql`), with the schema name quoted (`schema::ident`) and
    // every value bound: `AssertSqlSafe` says so to sqlx.

    async fn put(
        conn: &mut sqlx::PgConnection,
        sql: &str,
        a: PutArgs<'_>,
    ) -> Result<PutRow, DurableError> {
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(a.queue)
            .bind(a.id)
            .bind(a.envelope)
            .bind(a.delay)
            .bind(a.at)
            .bind(a.if_absent)
            .fetch_one(conn)
            .await
            .map_err(map)?;
        Ok((row.try_get(0).map_err(map)?, row.try_get(1).map_err(map)?))
    }

    async fn cancel(
        conn: &mut sqlx::PgConnection,
        sql: &str,
        queue: &str,
        id: &str,
    ) -> Result<CancelRow, DurableError> {
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(queue)
            .bind(id)
            .fetch_one(conn)
            .await
            .map_err(map)?;
        Ok((row.try_get(0).map_err(map)?, row.try_get(1).map_err(map)?))
    }

    impl AsyncPgTx for sqlx::PgConnection {
        fn put_row<'a>(&'a mut self, sql: &'a str, a: PutArgs<'a>) -> TxFuture<'a, PutRow> {
            Box::pin(put(self, sql, a))
        }

        fn cancel_row<'a>(
            &'a mut self,
            sql: &'a str,
            queue: &'a str,
            id: &'a str,
        ) -> TxFuture<'a, CancelRow> {
            Box::pin(cancel(self, sql, queue, id))
        }
    }

    impl AsyncPgTx for sqlx::Transaction<'_, sqlx::Postgres> {
        fn put_row<'a>(&'a mut self, sql: &'a str, a: PutArgs<'a>) -> TxFuture<'a, PutRow> {
            Box::pin(put(self, sql, a))
        }

        fn cancel_row<'a>(
            &'a mut self,
            sql: &'a str,
            queue: &'a str,
            id: &'a str,
        ) -> TxFuture<'a, CancelRow> {
            Box::pin(cancel(self, sql, queue, id))
        }
    }
}

/// The PostgreSQL connections write through to a pool on a
/// [`PostgresBackend`], refusing any other store.
impl<C: AsyncPgTx + ?Sized> AsyncInTransaction for C {
    fn put_envelope<'a>(
        &'a mut self,
        store: &'a dyn DurableBackend,
        verb: &'a str,
        id: &'a str,
        envelope: &'a [u8],
        when: When,
        mode: PutMode,
    ) -> TxFuture<'a, Put> {
        Box::pin(async move {
            PostgresBackend::of(store, verb)?
                .put_in_async(self, id, envelope, when, mode)
                .await
        })
    }

    fn cancel_id<'a>(
        &'a mut self,
        store: &'a dyn DurableBackend,
        verb: &'a str,
        id: &'a str,
    ) -> TxFuture<'a, Cancelled> {
        Box::pin(async move {
            PostgresBackend::of(store, verb)?
                .cancel_in_async(self, id)
                .await
        })
    }
}

// ===== impl PostgresBackend (feature tokio) =====

impl PostgresBackend {
    /// [`put_in`](Self::put_in) on an async connection or transaction.
    pub(crate) async fn put_in_async<C: AsyncPgTx + ?Sized>(
        &self,
        tx: &mut C,
        id: &str,
        envelope: &[u8],
        when: When,
        mode: PutMode,
    ) -> Result<Put, DurableError> {
        check_id(id)?;
        let (delay, at) = when_args(when);
        let sql = schema::put_sql(&self.pg.s, &self.pg.opts.schema);
        let args = PutArgs {
            queue: &self.pg.queue,
            id,
            envelope,
            delay,
            at,
            if_absent: mode == PutMode::IfAbsent,
        };
        let (result, deadline) = tx.put_row(&sql, args).await?;
        Ok(put_of(result, deadline))
    }

    /// [`cancel_in`](Self::cancel_in) on an async connection or
    /// transaction.
    pub(crate) async fn cancel_in_async<C: AsyncPgTx + ?Sized>(
        &self,
        tx: &mut C,
        id: &str,
    ) -> Result<Cancelled, DurableError> {
        let sql = schema::cancel_sql(&self.pg.s);
        let (state, env) = tx.cancel_row(&sql, &self.pg.queue, id).await?;
        Ok(cancel_of(state, env))
    }
}
