//! `AsyncClient`'s verbs in the caller's own transaction, from async code
//! (features `tokio` + `postgres`, with sqlx's PostgreSQL driver under
//! `sqlx`; `sqlx-sqlite`): "insert the order and its timeout" commits or
//! rolls back as one. An impl block of `AsyncClient`'s; the statements are
//! the store's (`store/postgres/async_tx.rs`, `store/sqlite/async_tx.rs`),
//! reached through the caller's [`AsyncInTransaction`].

use std::time::Duration;

use super::async_client::AsyncClient;
use crate::durable::store::async_tx::AsyncInTransaction;
use crate::durable::store::backend::{Cancelled, DurableError, Put, PutMode, When};
use crate::durable::store::envelope::Payload;

// ===== impl AsyncClient (features tokio + postgres, or sqlx-sqlite) =====

#[cfg_attr(
    docsrs,
    doc(cfg(all(feature = "tokio", any(feature = "postgres", feature = "sqlx-sqlite"))))
)]
impl AsyncClient {
    /// [`schedule`](Self::schedule) in the caller's transaction `tx` (see
    /// [`AsyncInTransaction`]): a `sqlx::Transaction<'_, Postgres>` or
    /// `&mut PgConnection` (feature `sqlx`), a `tokio_postgres::Transaction`
    /// or `Client` (feature `postgres`), for a pool on PostgreSQL; a
    /// `sqlx::Transaction<'_, Sqlite>` or `&mut SqliteConnection` on the
    /// pool's file (feature `sqlx-sqlite`), for a pool on SQLite. It
    /// commits or rolls back with `tx`: a rolled-back schedule is never
    /// delivered; a committed one is delivered no earlier than its
    /// deadline, `delay` after the store's clock at this statement
    /// (PostgreSQL: the server's; SQLite: the backend's, read with the
    /// file's write lock held).
    ///
    /// On SQLite, open `tx` with `begin_with("BEGIN IMMEDIATE")` (or write
    /// before calling this): a deferred transaction that only read cannot
    /// take the write lock once another connection wrote, and fails with
    /// [`DurableError::Unavailable`].
    ///
    /// Cancel-safe as far as a transaction is: dropped mid-way, the
    /// statements either ran in `tx` or did not, and `tx`'s commit or
    /// rollback decides; a rollback leaves nothing. (A statement cut off
    /// mid-reply may leave the connection unusable for the next one: roll
    /// `tx` back.)
    ///
    /// # Errors
    ///
    /// As [`schedule`](Self::schedule); the store's error (which on
    /// PostgreSQL aborts `tx`); [`DurableError::Config`] when `tx` is not
    /// on the pool's store (a PostgreSQL connection for a pool on SQLite, a
    /// SQLite connection on another file), before anything is written.
    ///
    /// # Examples
    ///
    /// On SQLite through sqlx (feature `sqlx-sqlite`): the order and its
    /// timeout in one transaction.
    ///
    #[cfg_attr(feature = "sqlx-sqlite", doc = "```")]
    #[cfg_attr(not(feature = "sqlx-sqlite"), doc = "```ignore")]
    /// use std::time::Duration;
    /// use schedpool::durable::{DurablePool, SqliteBackend};
    /// use sqlx::sqlite::{SqliteConnectOptions, SqlitePool};
    ///
    /// let dir = std::env::temp_dir().join(format!("schedpool-doc-in-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let file = dir.join("shop.db");
    /// let pool = DurablePool::builder(SqliteBackend::open(&file, "orders")?)
    ///     .threads(0) // a producer: the consumer is another process
    ///     .handler("close-order", |_order: &u64, _job| Ok(()))
    ///     .build()?;
    /// let client = pool.async_client();
    /// let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    /// runtime.block_on(async {
    ///     let db = SqlitePool::connect_with(SqliteConnectOptions::new().filename(&file)).await?;
    ///     sqlx::query("CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY, state TEXT)")
    ///         .execute(&db)
    ///         .await?;
    ///     let mut tx = db.begin_with("BEGIN IMMEDIATE").await?;
    ///     sqlx::query("INSERT INTO orders (id, state) VALUES (42, 'unpaid')")
    ///         .execute(&mut *tx)
    ///         .await?;
    ///     client.schedule_in(&mut tx, "close-order", "order-42", &42u64, Duration::from_secs(1800)).await?;
    ///     tx.commit().await?; // the order and its timeout, or neither
    ///     assert!(client.get("order-42").await?.is_some());
    ///     Ok::<_, Box<dyn std::error::Error>>(())
    /// })?;
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// On PostgreSQL through sqlx (feature `sqlx`; `no_run`: it needs a
    /// server):
    ///
    #[cfg_attr(feature = "sqlx", doc = "```no_run")]
    #[cfg_attr(not(feature = "sqlx"), doc = "```ignore")]
    /// # #[allow(dead_code)]
    /// # async fn checkout(client: &schedpool::durable::AsyncClient, db: &sqlx::PgPool) -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    ///
    /// let mut tx = db.begin().await?;
    /// sqlx::query("INSERT INTO orders (id, state) VALUES ($1, 'unpaid')")
    ///     .bind(42i64)
    ///     .execute(&mut *tx)
    ///     .await?;
    /// client.schedule_in(&mut tx, "close-order", "order-42", &42u64, Duration::from_secs(1800)).await?;
    /// tx.commit().await?; // the order and its timeout, or neither
    /// # Ok(())
    /// # }
    /// ```
    pub async fn schedule_in<C: AsyncInTransaction + ?Sized, T: Payload>(
        &self,
        tx: &mut C,
        kind: &str,
        id: &str,
        value: &T,
        delay: Duration,
    ) -> Result<Put, DurableError> {
        self.put_in_tx(tx, kind, id, value, delay, PutMode::Replace, "schedule_in")
            .await
    }

    /// [`schedule_if_absent`](Self::schedule_if_absent) in the caller's
    /// transaction, as [`schedule_in`](Self::schedule_in): leaves a
    /// pending or in-flight `id` untouched ([`Put::Exists`]).
    ///
    /// Cancel-safe as [`schedule_in`](Self::schedule_in).
    ///
    /// # Errors
    ///
    /// As [`schedule_in`](Self::schedule_in).
    ///
    /// # Examples
    ///
    /// See [`schedule_in`](Self::schedule_in); this one answers
    /// [`Put::Exists`] for an id already stored.
    pub async fn schedule_if_absent_in<C: AsyncInTransaction + ?Sized, T: Payload>(
        &self,
        tx: &mut C,
        kind: &str,
        id: &str,
        value: &T,
        delay: Duration,
    ) -> Result<Put, DurableError> {
        let verb = "schedule_if_absent_in";
        self.put_in_tx(tx, kind, id, value, delay, PutMode::IfAbsent, verb)
            .await
    }

    /// The two schedules in the caller's transaction, by `mode`.
    #[allow(clippy::too_many_arguments)]
    async fn put_in_tx<C: AsyncInTransaction + ?Sized, T: Payload>(
        &self,
        tx: &mut C,
        kind: &str,
        id: &str,
        value: &T,
        delay: Duration,
        mode: PutMode,
        verb: &str,
    ) -> Result<Put, DurableError> {
        let sealed = self.inner.seal(kind, id, value, None)?;
        let store = &*self.inner.store;
        tx.put_envelope(store, verb, id, &sealed, When::After(delay), mode)
            .await
    }

    /// [`cancel`](Self::cancel) in the caller's transaction: `true` when
    /// the id existed. Undone if `tx` rolls back (the item stays, and still
    /// runs at its time).
    ///
    /// Cancel-safe as [`schedule_in`](Self::schedule_in).
    ///
    /// # Errors
    ///
    /// As [`schedule_in`](Self::schedule_in).
    ///
    /// # Examples
    ///
    /// The payment and the timeout's cancel in one transaction (feature
    /// `sqlx-sqlite`; on PostgreSQL the same with a `PgPool`):
    ///
    #[cfg_attr(feature = "sqlx-sqlite", doc = "```")]
    #[cfg_attr(not(feature = "sqlx-sqlite"), doc = "```ignore")]
    /// use std::time::Duration;
    /// use schedpool::durable::{DurablePool, SqliteBackend};
    /// use sqlx::sqlite::{SqliteConnectOptions, SqlitePool};
    ///
    /// let dir = std::env::temp_dir().join(format!("schedpool-doc-cancel-in-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let file = dir.join("shop.db");
    /// let pool = DurablePool::builder(SqliteBackend::open(&file, "orders")?)
    ///     .threads(0)
    ///     .handler("close-order", |_order: &u64, _job| Ok(()))
    ///     .build()?;
    /// let client = pool.async_client();
    /// let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    /// runtime.block_on(async {
    ///     client.schedule("close-order", "order-42", &42u64, Duration::from_secs(1800)).await?;
    ///     let db = SqlitePool::connect_with(SqliteConnectOptions::new().filename(&file)).await?;
    ///     let mut tx = db.begin_with("BEGIN IMMEDIATE").await?;
    ///     // ... record the payment in `tx` ...
    ///     assert!(client.cancel_in(&mut tx, "order-42").await?, "it was pending");
    ///     tx.commit().await?; // paid, and never closed
    ///     assert!(client.get("order-42").await?.is_none());
    ///     Ok::<_, Box<dyn std::error::Error>>(())
    /// })?;
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn cancel_in<C: AsyncInTransaction + ?Sized>(
        &self,
        tx: &mut C,
        id: &str,
    ) -> Result<bool, DurableError> {
        let found = tx.cancel_id(&*self.inner.store, "cancel_in", id).await?;
        Ok(found != Cancelled::NotFound)
    }
}
