//! The store side of the durable layer: what a store is, what crosses into
//! it, and the stores that ship.
//!
//! Layers inside, each using only those before it:
//!
//! 1. `error` ([`DurableError`](error::DurableError), a leaf), `dead_record` (a dead letter's
//!    error in front of its bytes, a leaf);
//! 2. `backend`: the [`DurableBackend`](backend::DurableBackend) trait and the types crossing it;
//!    `options`: [`ServerOptions`](options::ServerOptions), the timeouts, TLS and strictness every
//!    networked store shares (written once, embedded by each store's
//!    options); `envelope` and `json`: the versioned bytes an item is
//!    stored as, and [`Payload`](envelope::Payload);
//! 3. `contained`: [`Store`](contained::Store), the handle the rest of the crate calls a
//!    backend through (a panic in the backend becomes an error);
//!    `tx`: [`InTransaction`](tx::InTransaction), a caller's transaction the
//!    `*_in` verbs write through (features `postgres`, `sqlite`);
//! 4. the stores: `memory/` (always), `sqlite/` (feature `sqlite`),
//!    `redis/` (feature `redis`), `postgres/` (feature `postgres`). Each is
//!    a folder of its own that imports only from 1–3, and adds no method
//!    to any type outside it (it implements `InTransaction` for its
//!    client's types).
//!
//!    With feature `tokio`, `async_tx` ([`AsyncInTransaction`](async_tx::AsyncInTransaction),
//!    `tx`'s async twin) beside `tx`.
//!
//! 5. `aio` (feature `tokio`): the store as async code calls it, over the
//!    stores' async clients (`redis/aio.rs`, `postgres/aio.rs`), directly
//!    (memory), or through the runtime's blocking pool (any other).
//!
//! Nothing here knows of takers, leases, queues or pools.

#[cfg(feature = "tokio")]
pub(crate) mod aio;
#[cfg(all(feature = "tokio", any(feature = "postgres", feature = "sqlx-sqlite")))]
pub(crate) mod async_tx;
pub(crate) mod backend;
pub(crate) mod contained;
pub(crate) mod dead_record;
pub(crate) mod envelope;
pub(crate) mod error;
#[cfg(feature = "serde")]
pub(crate) mod json;
pub(crate) mod memory;
pub(crate) mod ops;
pub(crate) mod ops_read;
#[cfg(any(feature = "redis", feature = "postgres"))]
pub(crate) mod options;
#[cfg(feature = "postgres")]
pub(crate) mod postgres;
#[cfg(feature = "redis")]
pub(crate) mod redis;
#[cfg(feature = "sqlite")]
pub(crate) mod sqlite;
#[cfg(any(feature = "postgres", feature = "sqlite"))]
pub(crate) mod tx;
