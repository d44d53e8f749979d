//! `DurablePool`'s verbs in the caller's own PostgreSQL transaction
//! (feature `postgres`): "insert the order and its timeout" commits or
//! rolls back as one. An impl block of `DurablePool`'s; the statements are
//! the backend's (`store/postgres/tx.rs`), reached through
//! [`PostgresBackend::of`].

use std::time::Duration;

use postgres::GenericClient;

use super::durable_pool::DurablePool;
use crate::durable::store::backend::{Cancelled, Put, PutMode, When};
use crate::durable::store::envelope::Payload;
use crate::durable::store::error::DurableError;
use crate::durable::store::postgres::PostgresBackend;

// ===== impl DurablePool (feature postgres) =====

#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
impl DurablePool {
    /// [`schedule`](Self::schedule) in the caller's transaction `tx`
    /// (feature `postgres`): "insert the order and its timeout" commits or
    /// rolls back as one, and a rolled-back schedule never runs.
    ///
    /// # Errors
    ///
    /// As for [`schedule`](Self::schedule); [`DurableError::Config`] when
    /// the pool is not on a [`PostgresBackend`].
    ///
    /// # Examples
    ///
    /// ```no_run
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
    pub fn schedule_in<T: Payload, C: GenericClient>(
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
    /// ```no_run
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
    pub fn schedule_if_absent_in<T: Payload, C: GenericClient>(
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
    fn put_in_tx<T: Payload, C: GenericClient>(
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
        PostgresBackend::of(&*self.inner.store, verb)?.put_in(
            tx,
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
    /// ```no_run
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
    pub fn cancel_in<C: GenericClient>(&self, tx: &mut C, id: &str) -> Result<bool, DurableError> {
        let found = PostgresBackend::of(&*self.inner.store, "cancel_in")?.cancel_in(tx, id)?;
        Ok(found != Cancelled::NotFound)
    }
}
