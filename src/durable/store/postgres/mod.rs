//! The PostgreSQL backend (feature `postgres`), in four layers:
//!
//! 1. `schema.rs`: the versioned migration: tables, the one index, and the
//!    SQL functions that are the backend's atomic steps (with their
//!    invariants in its header);
//! 2. `client.rs`: the pool of connections, prepared statements and the
//!    retry policy ([`PostgresOptions`]), over `conn.rs`, one connection
//!    whose every call (its connect and startup exchange too) is bounded in
//!    time, `error.rs`, the error mapping, and `tls.rs`, plain or TLS
//!    connections; `reply.rs`: arguments to SQL and replies back;
//! 3. `backend.rs`: [`PostgresBackend`], the `DurableBackend` over the two,
//!    and `LISTEN`/`NOTIFY` wake-ups; its dead-letter verbs (bury, requeue,
//!    purge, the listing) are `dead.rs`, beside it, and its checks at
//!    connect (clock skew, settings that can lose writes) `checks.rs`;
//! 4. `tx.rs`: the verbs that run in the caller's own transaction, on the
//!    backend and, typed, on `DurableQueue` and `DurablePool`.
//!
//! Nothing here is reachable from the rest of `durable/` except those two
//! public types (and the `*_in` methods).

#[cfg(feature = "tokio")]
pub(crate) mod aio;
#[cfg(feature = "tokio")]
pub(crate) mod async_tx;
mod backend;
mod checks;
mod client;
mod conn;
mod dead;
mod error;
mod ops;
mod reply;
mod schema;
mod schema_v2;
mod tls;
mod tx;

#[cfg(feature = "tokio")]
pub use async_tx::AsyncPgTx;
pub use backend::PostgresBackend;
pub use client::PostgresOptions;
