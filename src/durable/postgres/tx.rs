//! The verbs that run in the caller's own transaction: "insert the order
//! and its 30-minute timeout" commits or rolls back as one.
//!
//! Invariants:
//!
//! - Each verb is one call of the schema's function on the caller's client
//!   (a `postgres::Transaction`, or a `Client` for autocommit): nothing is
//!   visible to a claimer until the caller commits, and a rollback leaves
//!   no trace. The wake-up NOTIFY is sent at commit, so a rolled-back put
//!   wakes nobody.
//! - The caller's transaction holds the item's row lock until it ends:
//!   claimers skip that row (`SKIP LOCKED`) meanwhile; a heartbeat of an
//!   in-flight item being replaced or cancelled waits for it.
//! - These verbs are not retried: the caller owns the transaction, and a
//!   failed statement aborts it.

use std::time::Duration;

use postgres::GenericClient;

use super::backend::PostgresBackend;
use super::error::map_err;
use super::reply::{cancel_reply, put_reply, when_args};
use super::schema;
use crate::durable::backend::{check_id, Cancelled, DurableError, Put, PutMode, When};
use crate::durable::envelope::Payload;
use crate::durable::pool::DurablePool;
use crate::durable::queue::{DurableQueue, Removed};

/// The PostgreSQL backend behind `backend`, or a `Config` error naming
/// the verb that needs it.
fn pg_of<'a>(
    backend: &'a dyn crate::durable::backend::DurableBackend,
    verb: &str,
) -> Result<&'a PostgresBackend, DurableError> {
    backend
        .as_any()
        .and_then(|any| any.downcast_ref::<PostgresBackend>())
        .ok_or_else(|| {
            DurableError::Config(
                format!("{verb} needs a PostgresBackend; this queue has {backend:?}").into(),
            )
        })
}

// ===== impl PostgresBackend =====

impl PostgresBackend {
    /// Puts `envelope` (the stored bytes; the typed forms are
    /// [`DurableQueue::put_in`] and [`DurablePool::schedule_in`]) under `id`
    /// in the caller's transaction `tx`: it is delivered only if `tx`
    /// commits. The deadline is fixed by the server's clock at this
    /// statement.
    ///
    /// # Errors
    ///
    /// The server's error, mapped as for the other verbs; the caller's
    /// transaction is then aborted and must be rolled back.
    pub fn put_in<C: GenericClient>(
        &self,
        tx: &mut C,
        id: &str,
        envelope: &[u8],
        when: When,
        mode: PutMode,
    ) -> Result<Put, DurableError> {
        check_id(id)?;
        let (delay, at) = when_args(when);
        let if_absent = mode == PutMode::IfAbsent;
        let row = tx
            .query_one(
                schema::put_sql(&self.pg.s, &self.pg.opts.schema).as_str(),
                &[&self.pg.queue, &id, &envelope, &delay, &at, &if_absent],
            )
            .map_err(map_err)?;
        put_reply(&row)
    }

    /// Cancels `id` in the caller's transaction `tx`: undone if `tx` rolls
    /// back.
    ///
    /// # Errors
    ///
    /// As for [`put_in`](Self::put_in).
    pub fn cancel_in<C: GenericClient>(
        &self,
        tx: &mut C,
        id: &str,
    ) -> Result<Cancelled, DurableError> {
        let row = tx
            .query_one(
                schema::cancel_sql(&self.pg.s).as_str(),
                &[&self.pg.queue, &id],
            )
            .map_err(map_err)?;
        cancel_reply(&row)
    }
}

// ===== impl DurableQueue (feature postgres) =====

#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
impl<T: Payload> DurableQueue<T> {
    /// [`put`](Self::put) in the caller's transaction `tx` (feature
    /// `postgres`): the item exists only if `tx` commits.
    ///
    /// # Errors
    ///
    /// [`DurableError::Config`] when this queue is not on a
    /// [`PostgresBackend`]; otherwise as for [`PostgresBackend::put_in`].
    pub fn put_in<C: GenericClient>(
        &self,
        tx: &mut C,
        id: &str,
        value: &T,
        delay: Duration,
    ) -> Result<Put, DurableError> {
        let sealed = Self::seal(id, value)?;
        pg_of(&**self.backend(), "put_in")?.put_in(
            tx,
            id,
            &sealed,
            When::After(delay),
            PutMode::Replace,
        )
    }

    /// [`put_if_absent`](Self::put_if_absent) in the caller's transaction.
    ///
    /// # Errors
    ///
    /// As for [`put_in`](Self::put_in).
    pub fn put_if_absent_in<C: GenericClient>(
        &self,
        tx: &mut C,
        id: &str,
        value: &T,
        delay: Duration,
    ) -> Result<Put, DurableError> {
        let sealed = Self::seal(id, value)?;
        pg_of(&**self.backend(), "put_if_absent_in")?.put_in(
            tx,
            id,
            &sealed,
            When::After(delay),
            PutMode::IfAbsent,
        )
    }

    /// [`remove`](Self::remove) in the caller's transaction.
    ///
    /// # Errors
    ///
    /// As for [`put_in`](Self::put_in), and [`DurableError::Format`] when
    /// the removed value does not decode.
    pub fn remove_in<C: GenericClient>(
        &self,
        tx: &mut C,
        id: &str,
    ) -> Result<Removed<T>, DurableError> {
        let found = pg_of(&**self.backend(), "remove_in")?.cancel_in(tx, id)?;
        Self::removed(id, found)
    }
}

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
        pg_of(&**self.inner.taker.backend(), verb)?.put_in(
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
    pub fn cancel_in<C: GenericClient>(&self, tx: &mut C, id: &str) -> Result<bool, DurableError> {
        let found = pg_of(&**self.inner.taker.backend(), "cancel_in")?.cancel_in(tx, id)?;
        Ok(found != Cancelled::NotFound)
    }
}
