//! [`AsyncInTransaction`]: a caller's async transaction (or connection)
//! that `AsyncClient::schedule_in`, `schedule_if_absent_in` and
//! `cancel_in` write through, so that "insert the order and its timeout"
//! commits or rolls back as one from async code. The async twin of
//! [`InTransaction`](super::tx::InTransaction): each store implements it
//! for its async clients' types in its own folder
//! (`postgres/async_tx.rs`: tokio-postgres and sqlx; `sqlite/async_tx.rs`:
//! sqlx).
//!
//! Invariant: an implementation writes only through the caller's
//! transaction, to the store behind `store` (found by downcasting it), and
//! refuses with [`DurableError::Config`] a pool on another store, before
//! anything is written.

use std::future::Future;
use std::pin::Pin;

use super::backend::{Cancelled, DurableBackend, Put, PutMode, When};
use super::error::DurableError;

/// A boxed future borrowing the connection.
#[doc(hidden)]
#[allow(unreachable_pub)] // named by the traits' hidden methods only
pub type TxFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, DurableError>> + Send + 'a>>;

/// A caller's async transaction (or connection, for autocommit) that
/// [`AsyncClient::schedule_in`](crate::durable::AsyncClient::schedule_in)
/// and its kin write through:
///
/// - features `tokio` + `postgres`: every
///   [`AsyncPgTx`](crate::durable::AsyncPgTx) (a `tokio_postgres`
///   transaction or client; with feature `sqlx`, a
///   `sqlx::Transaction<'_, Postgres>` or `sqlx::PgConnection`), for a
///   pool on a [`PostgresBackend`](crate::durable::PostgresBackend);
/// - feature `sqlx-sqlite`: a `sqlx::Transaction<'_, Sqlite>` or
///   `sqlx::SqliteConnection` on the file of a pool on a
///   [`SqliteBackend`](crate::durable::SqliteBackend).
///
/// Implemented here only; its methods are the crate's.
///
/// # Examples
///
/// A helper of your own that schedules in whichever transaction it is
/// given:
///
/// ```
/// use std::time::Duration;
/// use schedpool::durable::{AsyncClient, AsyncInTransaction, DurableError};
///
/// # #[allow(dead_code)]
/// async fn close_later<C: AsyncInTransaction + ?Sized>(
///     client: &AsyncClient,
///     tx: &mut C,
///     order: u64,
/// ) -> Result<(), DurableError> {
///     let id = format!("order-{order}");
///     client.schedule_in(tx, "close-order", &id, &order, Duration::from_secs(1800)).await?;
///     Ok(())
/// }
/// ```
pub trait AsyncInTransaction: Send {
    /// Puts `envelope` under `id` in this transaction, on the store behind
    /// `store`; `verb` names the caller in a refusal.
    #[doc(hidden)]
    fn put_envelope<'a>(
        &'a mut self,
        store: &'a dyn DurableBackend,
        verb: &'a str,
        id: &'a str,
        envelope: &'a [u8],
        when: When,
        mode: PutMode,
    ) -> TxFuture<'a, Put>;

    /// Cancels `id` in this transaction, on the store behind `store`.
    #[doc(hidden)]
    fn cancel_id<'a>(
        &'a mut self,
        store: &'a dyn DurableBackend,
        verb: &'a str,
        id: &'a str,
    ) -> TxFuture<'a, Cancelled>;
}
