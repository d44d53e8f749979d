//! The verbs that run in the caller's own transaction from async code
//! (feature `sqlx-sqlite`): a `sqlx::Transaction<'_, Sqlite>` or a
//! `sqlx::SqliteConnection` (autocommit) on the backend's file, so an
//! order row and its timeout commit or roll back together. The typed forms
//! are `AsyncClient::schedule_in` and its kin, through
//! [`AsyncInTransaction`].
//!
//! Invariants (those of the sync verbs, `tx.rs`):
//!
//! - Each verb is the sync step's statements (`steps::STATE_SQL`,
//!   `TOKENS_SQL`, `UPSERT_SQL`, `CANCEL_SQL`) on the caller's
//!   connection, in order: nothing is visible to another connection until
//!   the caller commits, and a rollback leaves no trace (and wakes nobody:
//!   the backend's waiters see a commit through `data_version`).
//! - "Now" (the backend's clock) is read after the token is drawn, so with
//!   the file's write lock held: a committed item is due no earlier than
//!   `delay` after a moment inside its transaction.
//! - The caller's connection must be on the backend's file (SQLite's own
//!   name for it, `pragma_database_list`, is compared with the backend's
//!   canonical path); another file is refused with `DurableError::Config`
//!   before anything is written.
//! - Nothing blocks the caller's thread: sqlx runs each statement on the
//!   connection's worker thread; resolving a symlinked name (rare: SQLite
//!   names the file by its resolved path) runs on the blocking pool.
//! - Not retried: the caller owns the transaction. Open it with
//!   `begin_with("BEGIN IMMEDIATE")`: a deferred transaction that read
//!   before another connection wrote cannot take the write lock afterwards
//!   (`SQLITE_BUSY` at once, `Unavailable`) and must be rolled back.

use std::path::{Path, PathBuf};

use rusqlite::ffi;
use sqlx::{Sqlite, SqliteConnection, Transaction};

use super::backend::SqliteBackend;
use super::error::{kind_of, Kind};
use super::steps::{self, CANCEL_SQL, STATE_SQL, TOKENS_SQL, UPSERT_SQL};
use crate::durable::store::async_tx::{AsyncInTransaction, TxFuture};
use crate::durable::store::backend::{
    check_id, Cancelled, DurableBackend, Put, PutMode, StoredState, When,
};
use crate::durable::store::error::{DurableError, ErrorDetail};
use crate::durable::store::ops_read::stored_kind;

/// What the refusals call the caller's client.
const WITH: &str = "a sqlx SQLite transaction";

/// A sqlx error in the durable kinds (SQLite's codes as `error.rs` maps
/// them), its text prefixed with the verb.
fn map(verb: &str, err: sqlx::Error) -> DurableError {
    let (kind, why): (Kind, &str) = match &err {
        sqlx::Error::Database(db) => {
            let code = db
                .code()
                .and_then(|c| c.parse().ok())
                .unwrap_or(ffi::SQLITE_ERROR);
            kind_of(Some(ffi::Error::new(code).code))
        }
        sqlx::Error::Io(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => (DurableError::Unavailable, "the connection failed"),
        sqlx::Error::RowNotFound
        | sqlx::Error::ColumnDecode { .. }
        | sqlx::Error::ColumnNotFound(_)
        | sqlx::Error::Decode(_) => kind_of(None),
        _ => (DurableError::Config, "sqlx refused the call"),
    };
    kind(ErrorDetail::with_source(
        format!("{verb}: {why}: {err}"),
        err,
    ))
}

/// The SQLite backend behind `store`, if `conn` is on its file.
async fn backend_on<'a>(
    conn: &mut SqliteConnection,
    store: &'a dyn DurableBackend,
    verb: &str,
) -> Result<&'a SqliteBackend, DurableError> {
    let backend = SqliteBackend::of(store, verb, WITH)?;
    let file: Option<String> =
        sqlx::query_scalar("SELECT file FROM pragma_database_list WHERE name = 'main'")
            .fetch_optional(&mut *conn)
            .await
            .map_err(|e| map(verb, e))?;
    let file = file.filter(|f| !f.is_empty());
    let same = match file.as_deref() {
        None => false,
        Some(f) if Path::new(f) == backend.path() => true,
        Some(f) => {
            let (f, want) = (PathBuf::from(f), backend.path().to_path_buf());
            tokio::task::spawn_blocking(move || std::fs::canonicalize(f).is_ok_and(|p| p == want))
                .await
                .unwrap_or(false)
        }
    };
    backend.check_file(same, file.as_deref(), verb)?;
    Ok(backend)
}

async fn put(
    conn: &mut SqliteConnection,
    store: &dyn DurableBackend,
    verb: &str,
    id: &str,
    envelope: &[u8],
    when: When,
    mode: PutMode,
) -> Result<Put, DurableError> {
    check_id(id)?;
    let backend = backend_on(conn, store, verb).await?;
    let q = backend.queue_name();
    let old: Option<i64> = sqlx::query_scalar(STATE_SQL)
        .bind(q)
        .bind(id)
        .fetch_optional(&mut *conn)
        .await
        .map_err(|e| map(verb, e))?;
    let live = matches!(old, Some(0 | 1));
    if live && mode == PutMode::IfAbsent {
        return Ok(Put::Exists);
    }
    let token: i64 = sqlx::query_scalar(TOKENS_SQL)
        .bind(1i64)
        .fetch_one(&mut *conn)
        .await
        .map_err(|e| map(verb, e))?;
    let deadline = steps::deadline_of(when, backend.now());
    sqlx::query(UPSERT_SQL)
        .bind(q)
        .bind(id)
        .bind(deadline)
        .bind(token)
        .bind(envelope)
        .bind(stored_kind(StoredState::Pending, envelope))
        .execute(&mut *conn)
        .await
        .map_err(|e| map(verb, e))?;
    Ok(steps::put_answer(live, deadline))
}

async fn cancel(
    conn: &mut SqliteConnection,
    store: &dyn DurableBackend,
    verb: &str,
    id: &str,
) -> Result<Cancelled, DurableError> {
    let backend = backend_on(conn, store, verb).await?;
    let row: Option<(i64, Vec<u8>)> = sqlx::query_as(CANCEL_SQL)
        .bind(backend.queue_name())
        .bind(id)
        .fetch_optional(&mut *conn)
        .await
        .map_err(|e| map(verb, e))?;
    Ok(steps::cancelled(row))
}

/// `AsyncInTransaction` for sqlx's SQLite connection and transaction.
macro_rules! sqlx_sqlite_tx {
    ($($ty:ty),*) => {$(
        impl AsyncInTransaction for $ty {
            fn put_envelope<'a>(
                &'a mut self,
                store: &'a dyn DurableBackend,
                verb: &'a str,
                id: &'a str,
                envelope: &'a [u8],
                when: When,
                mode: PutMode,
            ) -> TxFuture<'a, Put> {
                Box::pin(put(self, store, verb, id, envelope, when, mode))
            }

            fn cancel_id<'a>(
                &'a mut self,
                store: &'a dyn DurableBackend,
                verb: &'a str,
                id: &'a str,
            ) -> TxFuture<'a, Cancelled> {
                Box::pin(cancel(self, store, verb, id))
            }
        }
    )*};
}

sqlx_sqlite_tx!(SqliteConnection, Transaction<'_, Sqlite>);
