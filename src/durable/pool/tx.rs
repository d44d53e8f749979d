//! `DurablePool`'s verbs in the caller's own transaction (features
//! `postgres`, `sqlite`): "insert the order and its timeout" commits or
//! rolls back as one. An impl block of `DurablePool`'s; the statements are
//! the store's, reached through the caller's [`InTransaction`].

use std::time::Duration;

use super::durable_pool::DurablePool;
use crate::durable::store::backend::{Cancelled, Put, PutMode, When};
use crate::durable::store::envelope::Payload;
use crate::durable::store::error::DurableError;
use crate::durable::store::tx::InTransaction;

// ===== impl DurablePool (features postgres, sqlite) =====

#[cfg_attr(docsrs, doc(cfg(any(feature = "postgres", feature = "sqlite"))))]
impl DurablePool {
    /// [`schedule`](Self::schedule) in the caller's transaction `tx`
    /// (see [`InTransaction`]): "insert the order and its timeout" commits or
    /// rolls back as one, and a rolled-back schedule never runs.
    ///
    /// # Errors
    ///
    /// As for [`schedule`](Self::schedule); [`DurableError::Config`] when
    /// `tx` is not on the pool's store (a `postgres` transaction for a pool
    /// on PostgreSQL, a `rusqlite` one on the pool's SQLite file).
    ///
    /// # Examples
    ///
    /// On SQLite (feature `sqlite`): the order and its timeout in one
    /// `rusqlite` transaction on the pool's file.
    ///
    #[cfg_attr(feature = "sqlite", doc = "```")]
    #[cfg_attr(not(feature = "sqlite"), doc = "```ignore")]
    /// use std::time::Duration;
    /// use schedpool::durable::{DurablePool, SqliteBackend};
    ///
    /// let dir = std::env::temp_dir().join(format!("schedpool-doc-pool-in-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let file = dir.join("shop.db");
    /// let pool = DurablePool::builder(SqliteBackend::open(&file, "orders")?)
    ///     .threads(0)
    ///     .handler("close-order", |_order: &u64, _job| Ok(()))
    ///     .build()?;
    /// let mut db = rusqlite::Connection::open(&file)?;
    /// db.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, state TEXT)", [])?;
    /// let mut tx = db.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    /// tx.execute("INSERT INTO orders (id, state) VALUES (42, 'unpaid')", [])?;
    /// pool.schedule_in(&mut tx, "close-order", "order-42", &42u64, Duration::from_secs(30 * 60))?;
    /// tx.commit()?; // the order and its timeout, or neither
    /// assert!(pool.get("order-42")?.is_some());
    /// # drop(pool);
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// On PostgreSQL (feature `postgres`; `no_run`: it needs a server):
    ///
    #[cfg_attr(feature = "postgres", doc = "```no_run")]
    #[cfg_attr(not(feature = "postgres"), doc = "```ignore")]
    /// use std::time::Duration;
    /// use schedpool::durable::{DurablePool, PostgresBackend};
    ///
    /// let params = "host=127.0.0.1 user=app dbname=shop";
    /// let pool = DurablePool::builder(PostgresBackend::connect(params, "orders")?)
    ///     .handler("close-order", |_order: &u64, _job| Ok(()))
    ///     .build()?;
    /// let mut db = postgres::Client::connect(params, postgres::NoTls)?;
    /// let mut tx = db.transaction()?;
    /// tx.execute("INSERT INTO orders (id, state) VALUES (42, 'unpaid')", &[])?;
    /// pool.schedule_in(&mut tx, "close-order", "order-42", &42u64, Duration::from_secs(30 * 60))?;
    /// tx.commit()?;
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn schedule_in<T: Payload, C: InTransaction>(
        &self,
        tx: &mut C,
        kind: &str,
        id: &str,
        value: &T,
        delay: Duration,
    ) -> Result<Put, DurableError> {
        self.put_in_tx(tx, kind, id, value, delay, PutMode::Replace, "schedule_in")
    }

    /// [`schedule_if_absent`](Self::schedule_if_absent) in the caller's
    /// transaction.
    ///
    /// # Errors
    ///
    /// As for [`schedule_in`](Self::schedule_in).
    ///
    /// # Examples
    ///
    /// On PostgreSQL (feature `postgres`; `no_run`: it needs a server):
    ///
    #[cfg_attr(feature = "postgres", doc = "```no_run")]
    #[cfg_attr(not(feature = "postgres"), doc = "```ignore")]
    /// use std::time::Duration;
    /// use schedpool::durable::{DurablePool, PostgresBackend};
    ///
    /// let params = "host=127.0.0.1 user=app dbname=shop";
    /// let pool = DurablePool::builder(PostgresBackend::connect(params, "orders")?)
    ///     .handler("close-order", |_order: &u64, _job| Ok(()))
    ///     .build()?;
    /// let mut db = postgres::Client::connect(params, postgres::NoTls)?;
    /// let mut tx = db.transaction()?;
    /// pool.schedule_if_absent_in(&mut tx, "close-order", "order-42", &42u64, Duration::from_secs(1800))?;
    /// tx.commit()?;
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn schedule_if_absent_in<T: Payload, C: InTransaction>(
        &self,
        tx: &mut C,
        kind: &str,
        id: &str,
        value: &T,
        delay: Duration,
    ) -> Result<Put, DurableError> {
        self.put_in_tx(
            tx,
            kind,
            id,
            value,
            delay,
            PutMode::IfAbsent,
            "schedule_if_absent_in",
        )
    }

    /// The two schedules in the caller's transaction, by `mode`; `verb`
    /// names the caller in the error for a pool not on PostgreSQL.
    #[allow(clippy::too_many_arguments)]
    fn put_in_tx<T: Payload, C: InTransaction>(
        &self,
        tx: &mut C,
        kind: &str,
        id: &str,
        value: &T,
        delay: Duration,
        mode: PutMode,
        verb: &'static str,
    ) -> Result<Put, DurableError> {
        let sealed = self.seal(kind, id, value, None)?;
        tx.put_envelope(
            &*self.inner.store,
            verb,
            id,
            &sealed,
            When::After(delay),
            mode,
        )
    }

    /// [`cancel`](Self::cancel) in the caller's transaction: `true` when the
    /// id existed. Undone if `tx` rolls back.
    ///
    /// # Errors
    ///
    /// As for [`schedule_in`](Self::schedule_in).
    ///
    /// # Examples
    ///
    /// On PostgreSQL (feature `postgres`; `no_run`: it needs a server):
    ///
    #[cfg_attr(feature = "postgres", doc = "```no_run")]
    #[cfg_attr(not(feature = "postgres"), doc = "```ignore")]
    /// use schedpool::durable::{DurablePool, PostgresBackend};
    ///
    /// let params = "host=127.0.0.1 user=app dbname=shop";
    /// let pool = DurablePool::builder(PostgresBackend::connect(params, "orders")?)
    ///     .handler("close-order", |_order: &u64, _job| Ok(()))
    ///     .build()?;
    /// let mut db = postgres::Client::connect(params, postgres::NoTls)?;
    /// let mut tx = db.transaction()?;
    /// tx.execute("UPDATE orders SET state = 'paid' WHERE id = 42", &[])?;
    /// pool.cancel_in(&mut tx, "order-42")?;
    /// tx.commit()?;
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn cancel_in<C: InTransaction>(&self, tx: &mut C, id: &str) -> Result<bool, DurableError> {
        let found = tx.cancel_id(&*self.inner.store, "cancel_in", id)?;
        Ok(found != Cancelled::NotFound)
    }
}
