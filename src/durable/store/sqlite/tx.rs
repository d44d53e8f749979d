//! The verbs that run in the caller's own transaction (a
//! `rusqlite::Transaction`, or a `rusqlite::Connection` for autocommit) on
//! the backend's file: an order row and its timeout commit or roll back
//! together. The typed forms are `DurableQueue::put_in` and
//! `DurablePool::schedule_in` and their kin, through `InTransaction`.
//!
//! Invariants:
//!
//! - Each verb is one step of `steps.rs` on the caller's connection:
//!   nothing is visible to another connection until the caller commits,
//!   and a rollback leaves no trace (and wakes nobody: waiters see a
//!   commit through `data_version`, and only a commit changes it).
//! - The caller's connection must be on the backend's file (its path is
//!   compared); a connection on another file is refused with
//!   `DurableError::Config`, before anything is written.
//! - These verbs are not retried: the caller owns the transaction. Open
//!   it with `TransactionBehavior::Immediate`: a deferred transaction that
//!   read before another process wrote cannot take the write lock
//!   afterwards (`SQLITE_BUSY`, `Unavailable`) and must be rolled back.

use rusqlite::Connection;

use super::backend::SqliteBackend;
use super::steps;
use crate::durable::store::backend::{Cancelled, DurableBackend, Put, PutMode, When};
use crate::durable::store::error::DurableError;
use crate::durable::store::tx::impl_in_transaction;

impl SqliteBackend {
    /// The SQLite backend behind `store`, else a `Config` error naming
    /// `verb` and the client (`with`) it was called with.
    pub(super) fn of<'a>(
        store: &'a dyn DurableBackend,
        verb: &str,
        with: &str,
    ) -> Result<&'a SqliteBackend, DurableError> {
        store
            .as_any()
            .and_then(|any| any.downcast_ref::<SqliteBackend>())
            .ok_or_else(|| {
                DurableError::Config(
                    format!("{verb} with {with} needs a SqliteBackend; this queue has {store:?}")
                        .into(),
                )
            })
    }

    /// `Ok` when `same` (the caller's connection, on `file`, is on this
    /// backend's file), else the `Config` error naming `verb`.
    pub(super) fn check_file(
        &self,
        same: bool,
        file: Option<&str>,
        verb: &str,
    ) -> Result<(), DurableError> {
        if same {
            return Ok(());
        }
        Err(DurableError::Config(
            format!(
                "{verb}: the transaction's connection is on {file:?}, not on the queue's file {}",
                self.path().display()
            )
            .into(),
        ))
    }

    /// The SQLite backend behind `store`, if `conn` is on its file; else a
    /// `Config` error naming `verb`.
    fn of_on<'a>(
        store: &'a dyn DurableBackend,
        conn: &Connection,
        verb: &str,
    ) -> Result<&'a SqliteBackend, DurableError> {
        let backend = Self::of(store, verb, "a rusqlite transaction")?;
        let same = conn
            .path()
            .filter(|p| !p.is_empty())
            .and_then(|p| std::fs::canonicalize(p).ok())
            .is_some_and(|p| p == backend.path());
        backend.check_file(same, conn.path(), verb)?;
        Ok(backend)
    }

    /// Puts `envelope` under `id` in the caller's transaction `conn`.
    fn put_on(
        &self,
        conn: &Connection,
        id: &str,
        envelope: &[u8],
        when: When,
        mode: PutMode,
    ) -> Result<Put, DurableError> {
        steps::put(
            conn,
            self.queue_name(),
            id,
            envelope,
            when,
            mode,
            self.now(),
        )
        .map(|(put, _)| put)
    }
}

fn put(
    conn: &Connection,
    store: &dyn DurableBackend,
    verb: &str,
    id: &str,
    envelope: &[u8],
    when: When,
    mode: PutMode,
) -> Result<Put, DurableError> {
    SqliteBackend::of_on(store, conn, verb)?.put_on(conn, id, envelope, when, mode)
}

fn cancel(
    conn: &Connection,
    store: &dyn DurableBackend,
    verb: &str,
    id: &str,
) -> Result<Cancelled, DurableError> {
    let backend = SqliteBackend::of_on(store, conn, verb)?;
    steps::cancel(conn, backend.queue_name(), id)
}

impl_in_transaction!(put, cancel; Connection, rusqlite::Transaction<'_>);
