//! The verbs that run in the caller's own transaction: "insert the order
//! and its 30-minute timeout" commits or rolls back as one. These are the
//! backend's, on stored bytes; the typed forms are `DurableQueue`'s
//! (`queue.rs`) and `DurablePool`'s (`pool/tx.rs`), which reach this
//! backend through [`PostgresBackend::of`].
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

use postgres::GenericClient;

use super::backend::PostgresBackend;
use super::error::map_err;
use super::reply::{cancel_reply, put_reply, when_args};
use super::schema;
use crate::durable::store::backend::{
    check_id, Cancelled, DurableBackend, DurableError, Put, PutMode, When,
};
use crate::durable::store::tx::impl_in_transaction;

// ===== impl PostgresBackend =====

impl PostgresBackend {
    /// The PostgreSQL backend behind `backend` (for the typed verbs of
    /// `DurableQueue` and `DurablePool` in the caller's transaction), or a
    /// `Config` error naming the verb that needs it.
    pub(crate) fn of<'a>(
        backend: &'a dyn DurableBackend,
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

    /// Puts `envelope` (the stored bytes; the typed forms are
    /// [`DurableQueue::put_in`](crate::durable::DurableQueue::put_in) and [`DurablePool::schedule_in`](crate::durable::DurablePool::schedule_in)) under `id`
    /// in the caller's transaction `tx`: it is delivered only if `tx`
    /// commits. The deadline is fixed by the server's clock at this
    /// statement.
    ///
    /// # Errors
    ///
    /// The server's error, mapped as for the other verbs; the caller's
    /// transaction is then aborted and must be rolled back.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use schedpool::durable::{PostgresBackend, PutMode, When};
    ///
    /// let params = "host=127.0.0.1 user=app dbname=shop";
    /// let backend = PostgresBackend::connect(params, "orders")?;
    /// let mut db = postgres::Client::connect(params, postgres::NoTls)?;
    /// let mut tx = db.transaction()?;
    /// // Bytes a custom producer sealed itself (the typed verbs seal for you).
    /// let envelope: &[u8] = b"...";
    /// backend.put_in(&mut tx, "order-42", envelope, When::AtServerMs(1_900_000_000_000), PutMode::Replace)?;
    /// tx.commit()?;
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
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
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use schedpool::durable::{Cancelled, PostgresBackend};
    ///
    /// let params = "host=127.0.0.1 user=app dbname=shop";
    /// let backend = PostgresBackend::connect(params, "orders")?;
    /// let mut db = postgres::Client::connect(params, postgres::NoTls)?;
    /// let mut tx = db.transaction()?;
    /// if backend.cancel_in(&mut tx, "order-42")? == Cancelled::NotFound {
    ///     println!("no timeout to cancel");
    /// }
    /// tx.rollback()?; // changed our mind: the item stays
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
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

// ===== impl InTransaction =====

fn put_through<C: GenericClient>(
    client: &mut C,
    store: &dyn DurableBackend,
    verb: &str,
    id: &str,
    envelope: &[u8],
    when: When,
    mode: PutMode,
) -> Result<Put, DurableError> {
    PostgresBackend::of(store, verb)?.put_in(client, id, envelope, when, mode)
}

fn cancel_through<C: GenericClient>(
    client: &mut C,
    store: &dyn DurableBackend,
    verb: &str,
    id: &str,
) -> Result<Cancelled, DurableError> {
    PostgresBackend::of(store, verb)?.cancel_in(client, id)
}

impl_in_transaction!(put_through, cancel_through; postgres::Client, postgres::Transaction<'_>);
