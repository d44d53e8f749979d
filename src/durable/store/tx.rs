//! [`InTransaction`]: a caller's open transaction (or connection) that the
//! `*_in` verbs of `DurableQueue` and `DurablePool` write through, so that
//! "insert the order and its 30-minute timeout" commits or rolls back as
//! one. Each store that can join a caller's transaction implements it for
//! its client's types, in its own folder (`postgres/tx.rs`,
//! `sqlite/tx.rs`); the trait is sealed.
//!
//! Invariant: an implementation writes only through the caller's
//! transaction, to the store behind `store` (found by downcasting it), and
//! refuses with [`DurableError::Config`] a queue on another store.

use crate::durable::store::backend::{Cancelled, DurableBackend, Put, PutMode, When};
use crate::durable::store::error::DurableError;

/// Keeps [`InTransaction`] to this crate's implementations.
pub(crate) mod sealed {
    /// Not nameable outside the crate.
    pub trait Sealed {}
}

/// A caller's transaction (or connection, for autocommit) that the `*_in`
/// verbs write through:
///
/// - feature `postgres`: `postgres::Transaction` and `postgres::Client`,
///   for a queue on a [`PostgresBackend`](crate::durable::PostgresBackend);
/// - feature `sqlite`: `rusqlite::Transaction` and `rusqlite::Connection`,
///   on the same file as a queue on a
///   [`SqliteBackend`](crate::durable::SqliteBackend).
///
/// Sealed: only those implement it. Its methods are the crate's; call
/// [`DurableQueue::put_in`](crate::durable::DurableQueue::put_in),
/// [`DurablePool::schedule_in`](crate::durable::DurablePool::schedule_in)
/// and their kin.
pub trait InTransaction: sealed::Sealed {
    /// Puts `envelope` under `id` in this transaction, on the store behind
    /// `store`; `verb` names the caller in a refusal.
    #[doc(hidden)]
    fn put_envelope(
        &mut self,
        store: &dyn DurableBackend,
        verb: &str,
        id: &str,
        envelope: &[u8],
        when: When,
        mode: PutMode,
    ) -> Result<Put, DurableError>;

    /// Cancels `id` in this transaction, on the store behind `store`.
    #[doc(hidden)]
    fn cancel_id(
        &mut self,
        store: &dyn DurableBackend,
        verb: &str,
        id: &str,
    ) -> Result<Cancelled, DurableError>;
}

/// `InTransaction` (and `Sealed`) for a store's client types, by two
/// functions of the store's folder: `$put(client, store, verb, id,
/// envelope, when, mode)` and `$cancel(client, store, verb, id)`.
macro_rules! impl_in_transaction {
    ($put:path, $cancel:path; $($client:ty),* $(,)?) => {$(
        impl crate::durable::store::tx::sealed::Sealed for $client {}

        impl crate::durable::store::tx::InTransaction for $client {
            fn put_envelope(
                &mut self,
                store: &dyn crate::durable::store::backend::DurableBackend,
                verb: &str,
                id: &str,
                envelope: &[u8],
                when: crate::durable::store::backend::When,
                mode: crate::durable::store::backend::PutMode,
            ) -> Result<crate::durable::store::backend::Put, crate::durable::store::error::DurableError> {
                $put(self, store, verb, id, envelope, when, mode)
            }

            fn cancel_id(
                &mut self,
                store: &dyn crate::durable::store::backend::DurableBackend,
                verb: &str,
                id: &str,
            ) -> Result<crate::durable::store::backend::Cancelled, crate::durable::store::error::DurableError> {
                $cancel(self, store, verb, id)
            }
        }
    )*};
}
pub(crate) use impl_in_transaction;
