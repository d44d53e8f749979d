//! The SQLite backend (feature `sqlite`): durable timeouts in one file,
//! shared by the processes of one host, with no server. In layers:
//!
//! 1. `options.rs` ([`SqliteOptions`], [`Synchronous`]) and `error.rs`
//!    (SQLite's errors in the durable kinds);
//! 2. `schema.rs`: the tables and the versioned migration;
//! 3. `steps.rs` and `dead.rs`: the atomic steps, each inside a
//!    transaction its caller holds;
//! 4. `wake.rs`: wake-ups, at once in this process and by polling
//!    `PRAGMA data_version` across processes;
//! 5. `backend.rs`: [`SqliteBackend`], the `DurableBackend` over them;
//! 6. `tx.rs`: the steps in the caller's own transaction
//!    (`InTransaction` for `rusqlite::Transaction` and `Connection`);
//!    `async_tx.rs` (feature `sqlx-sqlite`): the same on a sqlx SQLite
//!    transaction or connection (`AsyncInTransaction`).
//!
//! Nothing here is reachable from the rest of `durable/` except those
//! public types and the `InTransaction` (`AsyncInTransaction`) impls.

#[cfg(feature = "sqlx-sqlite")]
mod async_tx;
mod backend;
mod dead;
mod error;
mod ops;
mod options;
mod schema;
mod steps;
mod tx;
mod wake;

pub use backend::SqliteBackend;
pub use options::{SqliteOptions, Synchronous};
