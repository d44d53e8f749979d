//! The store as async code calls it (feature `tokio`): the producer verbs
//! (put, cancel, get, counts, the dead-letter verbs) as futures that never
//! block a runtime thread.
//!
//! Invariants:
//!
//! - Redis and PostgreSQL are called natively (`redis/aio.rs`,
//!   `postgres/aio.rs`: the same scripts and SQL as their sync backends);
//!   the in-memory backend directly (a call takes its lock for
//!   microseconds and never waits for I/O); any other backend (SQLite, a
//!   backend of your own) through the runtime's blocking pool
//!   (`spawn_blocking`), contained as every backend call is.
//! - Each verb is one atomic step in the store, so a future dropped
//!   mid-way leaves it before or after that step, never between. On the
//!   blocking pool a dropped future does not stop the call: it completes,
//!   and only its answer is lost.

#[cfg(any(feature = "redis", feature = "postgres"))]
use std::sync::Arc;

use super::backend::{Buried, Cancelled, Counts, DurableError, Put, PutMode, Stored, When};
use super::contained::Store;
use super::memory::MemoryBackend;

/// How async code reaches one store.
#[derive(Clone)]
pub(crate) enum AsyncStore {
    /// The in-memory backend: called directly.
    Direct(Store),
    /// Any backend without an async client: on the blocking pool.
    Blocking(Store),
    #[cfg(feature = "redis")]
    Redis(Arc<super::redis::aio::RedisAio>),
    #[cfg(feature = "postgres")]
    Postgres(Arc<super::postgres::aio::PgAio>),
}

/// One verb, dispatched by store.
macro_rules! dispatch {
    ($self:expr, $store:ident => $sync:expr, $aio:ident => $async:expr) => {
        match $self {
            AsyncStore::Direct($store) => $sync,
            AsyncStore::Blocking($store) => {
                let $store = $store.clone();
                tokio::task::spawn_blocking(move || $sync)
                    .await
                    .map_err(|e| {
                        DurableError::Unavailable(format!("the blocking call failed: {e}").into())
                    })?
            }
            #[cfg(feature = "redis")]
            AsyncStore::Redis($aio) => $async,
            #[cfg(feature = "postgres")]
            AsyncStore::Postgres($aio) => $async,
        }
    };
}

impl AsyncStore {
    /// The async way to `store`: native for the backends that have it.
    pub(crate) fn of(store: &Store) -> Self {
        let any = store.as_any();
        if any.is_some_and(|a| a.is::<MemoryBackend>()) {
            return AsyncStore::Direct(store.clone());
        }
        #[cfg(feature = "redis")]
        if let Some(redis) = any.and_then(|a| a.downcast_ref::<super::redis::RedisBackend>()) {
            return AsyncStore::Redis(Arc::new(super::redis::aio::RedisAio::of(redis)));
        }
        #[cfg(feature = "postgres")]
        if let Some(pg) = any.and_then(|a| a.downcast_ref::<super::postgres::PostgresBackend>()) {
            return AsyncStore::Postgres(Arc::new(super::postgres::aio::PgAio::of(pg)));
        }
        AsyncStore::Blocking(store.clone())
    }

    /// Which way it goes, for `Debug`.
    pub(crate) fn way(&self) -> &'static str {
        match self {
            AsyncStore::Direct(_) => "in memory",
            AsyncStore::Blocking(_) => "blocking pool",
            #[cfg(feature = "redis")]
            AsyncStore::Redis(_) => "redis (tokio)",
            #[cfg(feature = "postgres")]
            AsyncStore::Postgres(_) => "tokio-postgres",
        }
    }

    pub(crate) async fn put(
        &self,
        id: String,
        envelope: Vec<u8>,
        when: When,
        mode: PutMode,
    ) -> Result<Put, DurableError> {
        dispatch!(self, s => s.put(&id, &envelope, when, mode), a => a.put(&id, &envelope, when, mode).await)
    }

    pub(crate) async fn cancel(&self, id: String) -> Result<Cancelled, DurableError> {
        dispatch!(self, s => s.cancel(&id), a => a.cancel(&id).await)
    }

    pub(crate) async fn get(&self, id: String) -> Result<Option<Stored>, DurableError> {
        dispatch!(self, s => s.get(&id), a => a.get(&id).await)
    }

    pub(crate) async fn counts(&self) -> Result<Counts, DurableError> {
        dispatch!(self, s => s.counts(), a => a.counts().await)
    }

    pub(crate) async fn dead_letters(&self, max: usize) -> Result<Vec<Buried>, DurableError> {
        dispatch!(self, s => s.dead_letters(max), a => a.dead_letters(max).await)
    }

    pub(crate) async fn requeue(&self, id: String) -> Result<bool, DurableError> {
        dispatch!(self, s => s.requeue(&id), a => a.requeue(&id).await)
    }

    pub(crate) async fn purge(&self, id: String) -> Result<bool, DurableError> {
        dispatch!(self, s => s.purge(&id), a => a.purge(&id).await)
    }
}
