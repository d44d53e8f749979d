//! Durable delay queues: timeouts that survive restarts and are shared by a
//! fleet of processes.
//!
//! A [`DurableQueue`] has the [`DelayQueue`](crate::DelayQueue) verbs over a
//! [`DurableBackend`]: items are stored by business id, come out once due by
//! the *store's* clock, and are handed out as leased [`Delivery`]s to ack.
//! A [`DurablePool`] runs handlers registered by kind on worker threads,
//! retries failures with backoff into a dead-letter set, and keeps durable
//! fixed-rate and fixed-delay chains and calendar schedules that run once
//! per fleet ([`DurablePool::schedule_calendar`], with a [`Misfire`]
//! policy for the fires a fleet missed).
//!
//! Backends:
//!
//! - `SqliteBackend` (feature `sqlite`): one file shared by the processes
//!   of one host, no server: WAL, `BEGIN IMMEDIATE` claims, wake-ups at
//!   once in a process and within milliseconds across processes, puts and
//!   cancels that can join the caller's `rusqlite` transaction.
//! - [`MemoryBackend`]: in this process, on the real clock or a
//!   [`ManualClock`](crate::ManualClock), so "the order closes after 30
//!   minutes" is testable in microseconds without a server.
//! - `RedisBackend` (feature `redis`): one sorted set per state, atomic Lua
//!   scripts with fencing tokens, `BZPOPMIN` wake-ups across processes,
//!   server time only. `RedisDelayQueue` (same feature) is a `DurableQueue`
//!   on it.
//! - `PostgresBackend` (feature `postgres`): one table in a schema of its
//!   own, `FOR UPDATE SKIP LOCKED` claims, `LISTEN`/`NOTIFY` wake-ups,
//!   server time only, and puts and cancels that can join the caller's
//!   transaction (`DurablePool::schedule_in`, `cancel_in`).
//!
//! Guarantees (each tested on SQLite files and against a real
//! `redis-server` and a real PostgreSQL, see `docs/durable.md`): never early by the store's clock; at least once;
//! a killed consumer's items come back after its lease; a stalled holder is
//! fenced (its ack fails with [`DurableError::LeaseLost`]); cancel by id is
//! O(log n).
//!
//! ```
//! use std::time::Duration;
//! use schedpool::ManualClock;
//! use schedpool::durable::{DurablePool, MemoryBackend};
//!
//! let clock = ManualClock::new();
//! let pool = DurablePool::builder(MemoryBackend::with_clock(clock.clone()))
//!     .threads(1)
//!     .handler("close-order", |order: &u64, _info| {
//!         println!("closing order {order}");
//!         Ok(())
//!     })
//!     .build()?;
//! pool.schedule("close-order", "order-42", &42u64, Duration::from_secs(30 * 60))?;
//! clock.advance(Duration::from_secs(30 * 60));
//! assert!(pool.wait_idle(Duration::from_secs(5)));
//! assert_eq!(pool.stats().succeeded, 1);
//! pool.shutdown();
//! assert!(pool.await_termination(Duration::from_secs(5)));
//! # Ok::<(), schedpool::durable::DurableError>(())
//! ```

// Layers, each using only those before it (see `docs/design.md`):
// `store/` (the trait, the stores, the envelope), `take/` (taking and
// settling leases), `queue` (DurableQueue), `pool/` (DurablePool), and
// `dead_letters` (the dead-letter verbs of both), and `operate/` (the
// operator's verbs over all of it).
mod dead_letters;
mod operate;
mod pool;
mod queue;
// crate-visible for `internals::DurableTaker` (the loom models).
pub(crate) mod store;
pub(crate) mod take;

#[cfg(all(feature = "tokio", any(feature = "postgres", feature = "sqlx-sqlite")))]
#[cfg_attr(
    docsrs,
    doc(cfg(all(feature = "tokio", any(feature = "postgres", feature = "sqlx-sqlite"))))
)]
pub use self::store::async_tx::AsyncInTransaction;
#[cfg(all(feature = "postgres", feature = "tokio"))]
#[cfg_attr(docsrs, doc(cfg(all(feature = "postgres", feature = "tokio"))))]
pub use self::store::postgres::AsyncPgTx;
#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub use self::store::postgres::{PostgresBackend, PostgresOptions};
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub use self::store::redis::{RedisBackend, RedisOptions};
#[cfg(feature = "sqlite")]
#[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
pub use self::store::sqlite::{SqliteBackend, SqliteOptions, Synchronous};
#[cfg(any(feature = "postgres", feature = "sqlite"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "postgres", feature = "sqlite"))))]
pub use self::store::tx::InTransaction;
pub use dead_letters::DeadLetter;
pub use operate::bulk::{BulkReport, DeadFilter};
pub use operate::operator::{Operator, Overview};
pub use operate::schedules::ScheduleInfo;
#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
pub use pool::async_client::AsyncClient;
#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
pub use pool::async_job::{AsyncJob, LeaseLost};
pub use pool::builder::DurablePoolBuilder;
#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
pub use pool::builder_async::DEFAULT_ASYNC_CONCURRENCY;
pub use pool::durable_pool::{DurablePool, DurableStats};
pub use pool::item::StoredItem;
pub use pool::job::{HandlerError, JobInfo};
pub use pool::misfire::Misfire;
pub use queue::{DurableQueue, Removed};
pub use store::backend::{
    Buried, Cancelled, ClaimBatch, Claimed, Counts, DurableBackend, Nack, Put, PutMode, Repeat,
    Stored, StoredState, When,
};
pub use store::dead_record::MAX_ERROR_BYTES;
pub use store::envelope::Payload;
pub use store::error::{DurableError, ErrorDetail};
#[cfg(feature = "serde")]
#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
pub use store::json::Json;
pub use store::memory::MemoryBackend;
pub use store::ops::{
    AuditEntry, Cursor, DurableOps, ItemDetail, ItemSummary, KindCounts, ListFilter, Page,
    PausedKind, MAX_PAGE,
};
#[cfg(any(feature = "redis", feature = "postgres"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "redis", feature = "postgres"))))]
pub use store::options::ServerOptions;
pub use take::delivery::Delivery;
pub use take::options::QueueOptions;

/// A [`DurableQueue`] on Redis (feature `redis`).
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use schedpool::durable::RedisDelayQueue;
///
/// let queue: RedisDelayQueue<u64> = RedisDelayQueue::connect("redis://127.0.0.1:6379/0", "orders")?;
/// queue.put("order-42", &42, Duration::from_secs(30 * 60))?;
/// # Ok::<(), schedpool::durable::DurableError>(())
/// ```
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub type RedisDelayQueue<T> = DurableQueue<T>;
