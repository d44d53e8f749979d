//! [`AsyncClient`] (feature `tokio`): a `DurablePool`'s producer verbs as
//! futures that never block a runtime thread, for async services (an axum
//! handler schedules and cancels without `spawn_blocking`).
//!
//! Invariants:
//!
//! - Each verb makes the pool's own checks and seals the payload before
//!   its future is returned (so the future owns everything and is
//!   `Send + 'static`), then makes one store call through
//!   [`AsyncStore`].
//! - Cancel-safety: each verb is one atomic step in the store. A future
//!   dropped before it is first polled does nothing; dropped later, the
//!   step happened entirely or not at all, and only the answer is lost.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use crate::durable::dead_letters::DeadLetter;
use crate::durable::store::aio::AsyncStore;
use crate::durable::store::backend::{Cancelled, Counts, DurableError, Put, PutMode, Repeat, When};
use crate::durable::store::envelope::Payload;

use super::durable_pool::DurablePool;
use super::item::StoredItem;
use super::shared::Inner;

/// A [`DurablePool`]'s producer verbs as `Send + 'static` futures that
/// never block a runtime thread (feature `tokio`); from
/// [`DurablePool::async_client`]. Cheap to clone: clones share the pool's
/// checks and the store's connection.
///
/// How each store is reached:
///
/// - Redis: natively, on the redis crate's tokio connection (one
///   multiplexed connection, made on first use), with the sync backend's
///   scripts;
/// - PostgreSQL: natively, on tokio-postgres (one connection, pipelined),
///   with the sync backend's SQL;
/// - the in-memory backend: directly (a call holds a lock for
///   microseconds);
/// - any other backend (SQLite, one of your own): each call on the
///   runtime's blocking pool (`spawn_blocking`).
///
/// Retries and timeouts are the backend's options' (`op_timeout`, ...).
/// Each verb is **cancel-safe**: dropping its future mid-way leaves the
/// store as before the call or as after it, never half-done (each verb is
/// one atomic step); its docs say what a drop can leave. On the blocking
/// pool (SQLite), a dropped future does not stop its call: the call
/// completes, and only its answer is lost. The futures need
/// a tokio runtime (the connection tasks and the retries' sleeps are
/// tokio's).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedpool::durable::{DurablePool, MemoryBackend, Put};
///
/// let pool = DurablePool::builder(MemoryBackend::new()).threads(0).build()?;
/// let client = pool.async_client();
/// let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build()?;
/// runtime.block_on(async {
///     let put = client.schedule("close-order", "order-42", &42u64, Duration::from_secs(1800)).await?;
///     assert!(matches!(put, Put::Inserted { .. }));
///     assert_eq!(client.counts().await?.pending, 1);
///     assert!(client.cancel("order-42").await?, "paid: cancelled");
///     Ok::<_, schedpool::durable::DurableError>(())
/// })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct AsyncClient {
    pub(super) inner: Arc<Inner>,
    pub(super) store: AsyncStore,
}

impl DurablePool {
    /// The async client of this pool's store (feature `tokio`): the
    /// producer verbs as futures, with this pool's checks (a kind needs a
    /// handler here unless the pool is producer-only; after
    /// [`shutdown`](Self::shutdown) they return
    /// [`DurableError::Closed`]). Connects on first use, not here; call it
    /// once and clone the client.
    ///
    /// # Examples
    ///
    /// See [`AsyncClient`].
    #[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
    pub fn async_client(&self) -> AsyncClient {
        AsyncClient {
            inner: self.inner.clone(),
            store: AsyncStore::of(&self.inner.store),
        }
    }
}

impl AsyncClient {
    fn put<T: Payload>(
        &self,
        kind: &str,
        id: &str,
        value: &T,
        repeat: Option<Repeat>,
        delay: Duration,
        mode: PutMode,
    ) -> impl Future<Output = Result<Put, DurableError>> + Send + 'static {
        let sealed = self.inner.seal(kind, id, value, repeat);
        let (store, id) = (self.store.clone(), id.to_string());
        async move { store.put(id, sealed?, When::After(delay), mode).await }
    }

    /// [`DurablePool::schedule`], async: a one-shot run of `kind` on
    /// `value` under `id`, `delay` after the store's now; an existing `id`
    /// is replaced (and a current holder fenced).
    ///
    /// Cancel-safe: dropped mid-way, the item is either stored as asked or
    /// untouched; the put is idempotent by id, so call it again to know.
    ///
    /// # Errors
    ///
    /// As [`DurablePool::schedule`].
    pub fn schedule<T: Payload>(
        &self,
        kind: &str,
        id: &str,
        value: &T,
        delay: Duration,
    ) -> impl Future<Output = Result<Put, DurableError>> + Send + 'static {
        self.put(kind, id, value, None, delay, PutMode::Replace)
    }

    /// [`DurablePool::schedule_if_absent`], async: leaves a pending or
    /// in-flight `id` untouched ([`Put::Exists`]).
    ///
    /// Cancel-safe: dropped mid-way, the item is either stored or not; a
    /// repeated call answers [`Put::Exists`] if the first one stored it.
    ///
    /// # Errors
    ///
    /// As [`DurablePool::schedule`].
    pub fn schedule_if_absent<T: Payload>(
        &self,
        kind: &str,
        id: &str,
        value: &T,
        delay: Duration,
    ) -> impl Future<Output = Result<Put, DurableError>> + Send + 'static {
        self.put(kind, id, value, None, delay, PutMode::IfAbsent)
    }

    /// [`DurablePool::schedule_at_fixed_rate`], async: starts a durable
    /// fixed-rate chain unless `id` exists ([`Put::Exists`]).
    ///
    /// Cancel-safe as [`schedule_if_absent`](Self::schedule_if_absent).
    ///
    /// # Errors
    ///
    /// As [`DurablePool::schedule_at_fixed_rate`].
    pub fn schedule_at_fixed_rate<T: Payload>(
        &self,
        kind: &str,
        id: &str,
        value: &T,
        initial_delay: Duration,
        period: Duration,
    ) -> impl Future<Output = Result<Put, DurableError>> + Send + 'static {
        let repeat = Some(Repeat::FixedRate(period));
        self.put(kind, id, value, repeat, initial_delay, PutMode::IfAbsent)
    }

    /// [`DurablePool::schedule_with_fixed_delay`], async.
    ///
    /// Cancel-safe as [`schedule_if_absent`](Self::schedule_if_absent).
    ///
    /// # Errors
    ///
    /// As [`DurablePool::schedule_with_fixed_delay`].
    pub fn schedule_with_fixed_delay<T: Payload>(
        &self,
        kind: &str,
        id: &str,
        value: &T,
        initial_delay: Duration,
        delay: Duration,
    ) -> impl Future<Output = Result<Put, DurableError>> + Send + 'static {
        let repeat = Some(Repeat::FixedDelay(delay));
        self.put(kind, id, value, repeat, initial_delay, PutMode::IfAbsent)
    }

    /// [`DurablePool::cancel`], async: removes `id` wherever it is; `true`
    /// when it existed.
    ///
    /// Cancel-safe: dropped mid-way, the item is either removed or
    /// untouched. Calling again tells which only by its answer: a second
    /// cancel of a removed item returns `false`.
    ///
    /// # Errors
    ///
    /// The store's error (`Unavailable` when a retried attempt found the
    /// item gone: the first may have removed it).
    pub fn cancel(
        &self,
        id: &str,
    ) -> impl Future<Output = Result<bool, DurableError>> + Send + 'static {
        let (store, id) = (self.store.clone(), id.to_string());
        async move { Ok(!matches!(store.cancel(id).await?, Cancelled::NotFound)) }
    }

    /// [`DurablePool::get`], async: the item `id` wherever it is, without
    /// claiming it.
    ///
    /// Cancel-safe: a read; dropping it changes nothing.
    ///
    /// # Errors
    ///
    /// As [`DurablePool::get`].
    pub fn get(
        &self,
        id: &str,
    ) -> impl Future<Output = Result<Option<StoredItem>, DurableError>> + Send + 'static {
        let (store, id) = (self.store.clone(), id.to_string());
        async move {
            let stored = store.get(id.clone()).await?;
            Ok(stored.map(|s| StoredItem::read(&id, s)))
        }
    }

    /// [`DurablePool::counts`], async.
    ///
    /// Cancel-safe: a read; dropping it changes nothing.
    ///
    /// # Errors
    ///
    /// The store's error.
    pub fn counts(&self) -> impl Future<Output = Result<Counts, DurableError>> + Send + 'static {
        let store = self.store.clone();
        async move { store.counts().await }
    }

    /// [`DurablePool::dead_letters`], async: up to `max` dead letters,
    /// oldest death first.
    ///
    /// Cancel-safe: a read; dropping it changes nothing.
    ///
    /// # Errors
    ///
    /// The store's error.
    pub fn dead_letters(
        &self,
        max: usize,
    ) -> impl Future<Output = Result<Vec<DeadLetter<Vec<u8>>>, DurableError>> + Send + 'static {
        let store = self.store.clone();
        async move {
            let buried = store.dead_letters(max).await?;
            Ok(buried
                .into_iter()
                .map(|b| DeadLetter::read(b, |_, payload| Ok(payload.to_vec())))
                .collect())
        }
    }

    /// [`DurablePool::requeue`], async: the dead letter `id` back to
    /// pending, due now; `true` when it was one.
    ///
    /// Cancel-safe: dropped mid-way, it is either requeued or still dead;
    /// a repeated call answers `false` if the first requeued it.
    ///
    /// # Errors
    ///
    /// As [`DurablePool::requeue`].
    pub fn requeue(
        &self,
        id: &str,
    ) -> impl Future<Output = Result<bool, DurableError>> + Send + 'static {
        let (store, id) = (self.store.clone(), id.to_string());
        async move { store.requeue(id).await }
    }

    /// [`DurablePool::purge`], async: deletes the dead letter `id`; `true`
    /// when it was one.
    ///
    /// Cancel-safe: dropped mid-way, it is either deleted or still dead; a
    /// repeated call answers `false` if the first deleted it.
    ///
    /// # Errors
    ///
    /// As [`DurablePool::purge`].
    pub fn purge(
        &self,
        id: &str,
    ) -> impl Future<Output = Result<bool, DurableError>> + Send + 'static {
        let (store, id) = (self.store.clone(), id.to_string());
        async move { store.purge(id).await }
    }
}

impl fmt::Debug for AsyncClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AsyncClient")
            .field("store", &self.inner.store)
            .field("way", &self.store.way())
            .finish()
    }
}
