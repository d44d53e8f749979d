//! `DurablePool`: worker threads that run durable items through handlers
//! registered by kind.
//!
//! Closures cannot be persisted, so a durable task is (kind, id, payload):
//! every process registers the handlers of the kinds it runs, at build time.
//!
//! This file is the public face: scheduling, cancel, counters, idleness and
//! shutdown. The builder (and `DurablePool::builder`) is `pool_builder.rs`;
//! calendar schedules, `calendar.rs`; the workers and how a run settles its
//! item, `runner.rs` (with the invariants), and the acks it batches,
//! `acker.rs`; what a handler sees, `job.rs`. Imports go one way:
//! `pool_builder`, `calendar` → `pool` → `runner` → `calendar_fire`,
//! `acker`, `job`.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::calendar_def;
use super::shared::Inner;
use crate::durable::store::backend::{check_id, Counts, DurableError, Put, PutMode, Repeat, When};
use crate::durable::store::contained::Store;
use crate::durable::store::envelope::{self, Payload};

/// Counters of a [`DurablePool`] (this process only).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedpool::durable::{DurablePool, MemoryBackend};
///
/// let pool = DurablePool::builder(MemoryBackend::new())
///     .threads(1)
///     .handler("close-order", |_: &u64, _job| Ok(()))
///     .build()?;
/// pool.schedule("close-order", "order-42", &42u64, Duration::ZERO)?;
/// assert!(pool.wait_idle(Duration::from_secs(5)));
/// let stats = pool.stats();
/// assert_eq!((stats.succeeded, stats.failed, stats.dead_lettered), (1, 0, 0));
/// # Ok::<(), schedpool::durable::DurableError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct DurableStats {
    /// Runs whose handler returned `Ok` and whose ack the store accepted.
    pub succeeded: u64,
    /// Runs whose handler returned `Err` or panicked.
    pub failed: u64,
    /// Failed runs given back for a retry.
    pub retried: u64,
    /// Items this process moved to the dead-letter set.
    pub dead_lettered: u64,
    /// Settles refused because the lease had been lost.
    pub lease_lost: u64,
    /// Items given back unrun because this pool has no handler for their
    /// kind, or (a calendar schedule) did not register their definition;
    /// they are not counted as attempts.
    pub deferred: u64,
    /// Missed fires of calendar schedules this process dropped: by
    /// [`Misfire::skip`](crate::durable::Misfire::skip), by the cap of
    /// [`Misfire::run_all`](crate::durable::Misfire::run_all), or for being later
    /// than [`Misfire::max_lateness`](crate::durable::Misfire::max_lateness).
    pub fires_skipped: u64,
    /// Missed fires of calendar schedules this process folded into one
    /// later run ([`Misfire::run_once`](crate::durable::Misfire::run_once)).
    pub fires_coalesced: u64,
}

/// A pool of worker threads running durable items: handlers by kind,
/// retries with backoff, a dead-letter set, durable periodic chains.
///
/// Closures cannot be stored, so a durable task is a *kind* (the name of a
/// handler every process registers at build), an *id* (the business key:
/// re-scheduling it replaces it, cancelling it removes it) and a payload.
/// See also the [module docs](crate::durable).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedpool::ManualClock;
/// use schedpool::durable::{DurablePool, MemoryBackend};
///
/// // MemoryBackend for tests; RedisBackend or PostgresBackend for a fleet.
/// let clock = ManualClock::new();
/// let pool = DurablePool::builder(MemoryBackend::with_clock(clock.clone()))
///     .threads(2)
///     .handler("close-order", |order: &u64, job| {
///         println!("closing order {order} (attempt {})", job.attempt);
///         Ok(())
///     })
///     .build()?;
/// pool.schedule("close-order", "order-42", &42u64, Duration::from_secs(1800))?;
/// pool.schedule("close-order", "order-43", &43u64, Duration::from_secs(1800))?;
/// assert!(pool.cancel("order-43")?, "paid in time");
///
/// clock.advance(Duration::from_secs(1800));
/// assert!(pool.wait_idle(Duration::from_secs(5)));
/// assert_eq!(pool.stats().succeeded, 1);
/// pool.shutdown();
/// assert!(pool.await_termination(Duration::from_secs(5)));
/// # Ok::<(), schedpool::durable::DurableError>(())
/// ```
pub struct DurablePool {
    pub(super) inner: Arc<Inner>,
}

impl DurablePool {
    /// Schedules a one-shot run of `kind` on `value` under `id`, `delay`
    /// after the store's now; re-scheduling an id replaces it (and fences a
    /// current holder).
    ///
    /// So a repeated `schedule` is idempotent only while the item is
    /// pending: if a worker is running it, the repeat replaces it, that
    /// run's ack fails ([`DurableStats::lease_lost`]) and the handler runs
    /// again. To retry after [`DurableError::Unavailable`], or to schedule
    /// at every start-up, use
    /// [`schedule_if_absent`](Self::schedule_if_absent).
    ///
    /// # Errors
    ///
    /// [`DurableError::Config`] for a kind with no handler in this pool
    /// (unless it is producer-only), or an id that is empty or over 1,024
    /// bytes; [`DurableError::Closed`] once shut down; the store's error
    /// otherwise.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ManualClock;
    /// use schedpool::durable::{DurablePool, MemoryBackend};
    ///
    /// let clock = ManualClock::new();
    /// let pool = DurablePool::builder(MemoryBackend::with_clock(clock.clone()))
    ///     .threads(1)
    ///     .handler("send-reminder", |_email: &String, _job| Ok(()))
    ///     .build()?;
    /// let to = "ann@example.com".to_string();
    /// pool.schedule("send-reminder", "cart-17", &to, Duration::from_secs(3600))?;
    /// // The cart changed: re-scheduling the id replaces the reminder.
    /// pool.schedule("send-reminder", "cart-17", &to, Duration::from_secs(7200))?;
    /// assert_eq!(pool.counts()?.pending, 1);
    /// assert!(pool.schedule("no-such-kind", "x", &to, Duration::ZERO).unwrap_err().is_config());
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn schedule<T: Payload>(
        &self,
        kind: &str,
        id: &str,
        value: &T,
        delay: Duration,
    ) -> Result<Put, DurableError> {
        self.put(kind, id, value, None, When::After(delay), PutMode::Replace)
    }

    /// As [`schedule`](Self::schedule), but leaves an existing pending or
    /// in-flight `id` untouched and returns [`Put::Exists`]: the safe retry
    /// of a `schedule` that returned [`DurableError::Unavailable`], and the
    /// way to schedule jobs at every start-up. An id that was acked,
    /// cancelled or dead-lettered is absent: it is scheduled again.
    ///
    /// # Errors
    ///
    /// As for [`schedule`](Self::schedule).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurablePool, MemoryBackend};
    ///
    /// let pool = DurablePool::builder(MemoryBackend::new())
    ///     .threads(1)
    ///     .handler("expire-trial", |_: &(), _job| Ok(()))
    ///     .build()?;
    /// let trial = Duration::from_secs(14 * 24 * 3600);
    /// let first = pool.schedule_if_absent("expire-trial", "account-9", &(), trial)?;
    /// // A retry, or a second process: the first one stands.
    /// let again = pool.schedule_if_absent("expire-trial", "account-9", &(), trial)?;
    /// assert!(first.deadline_ms().is_some());
    /// assert_eq!(again, schedpool::durable::Put::Exists);
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn schedule_if_absent<T: Payload>(
        &self,
        kind: &str,
        id: &str,
        value: &T,
        delay: Duration,
    ) -> Result<Put, DurableError> {
        self.put(kind, id, value, None, When::After(delay), PutMode::IfAbsent)
    }

    /// Starts a durable fixed-rate chain under `id`: runs at initial delay,
    /// then every `period` after each *scheduled* time (a late run is
    /// followed by catch-up runs, as in Java). Each run's ack and the next
    /// occurrence are one atomic step in the store, so a crash neither loses
    /// nor doubles the chain. If the chain exists already (another process,
    /// or an earlier start), it is left as it is and [`Put::Exists`] is
    /// returned: call this at every start-up.
    ///
    /// # Errors
    ///
    /// As for [`schedule`](Self::schedule), and [`DurableError::Config`] for
    /// a zero period.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ManualClock;
    /// use schedpool::durable::{DurablePool, MemoryBackend};
    ///
    /// let clock = ManualClock::new();
    /// let pool = DurablePool::builder(MemoryBackend::with_clock(clock.clone()))
    ///     .threads(1)
    ///     .handler("sync-prices", |_: &(), _job| Ok(()))
    ///     .build()?;
    /// // Every process calls this at start-up: the chain is made once.
    /// let minute = Duration::from_secs(60);
    /// pool.schedule_at_fixed_rate("sync-prices", "prices", &(), minute, minute)?;
    /// for _ in 0..3 {
    ///     clock.advance(minute);
    ///     assert!(pool.wait_idle(Duration::from_secs(5)));
    /// }
    /// assert_eq!(pool.stats().succeeded, 3);
    /// assert_eq!(pool.counts()?.pending, 1, "the next run waits");
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn schedule_at_fixed_rate<T: Payload>(
        &self,
        kind: &str,
        id: &str,
        value: &T,
        initial_delay: Duration,
        period: Duration,
    ) -> Result<Put, DurableError> {
        let repeat = Repeat::FixedRate(period);
        self.put(
            kind,
            id,
            value,
            Some(repeat),
            When::After(initial_delay),
            PutMode::IfAbsent,
        )
    }

    /// As [`schedule_at_fixed_rate`](Self::schedule_at_fixed_rate), but each
    /// next run is `delay` after the previous run *finished* (by the store's
    /// clock).
    ///
    /// # Errors
    ///
    /// As for [`schedule_at_fixed_rate`](Self::schedule_at_fixed_rate).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ManualClock;
    /// use schedpool::durable::{DurablePool, MemoryBackend};
    ///
    /// let clock = ManualClock::new();
    /// let pool = DurablePool::builder(MemoryBackend::with_clock(clock.clone()))
    ///     .threads(1)
    ///     .handler("vacuum", |_: &(), _job| Ok(()))
    ///     .build()?;
    /// let hour = Duration::from_secs(3600);
    /// pool.schedule_with_fixed_delay("vacuum", "vacuum", &(), Duration::ZERO, hour)?;
    /// assert!(pool.wait_idle(Duration::from_secs(5)));
    /// assert_eq!(pool.stats().succeeded, 1);
    /// assert!(pool.cancel("vacuum")?, "cancelling the id stops the chain");
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn schedule_with_fixed_delay<T: Payload>(
        &self,
        kind: &str,
        id: &str,
        value: &T,
        initial_delay: Duration,
        delay: Duration,
    ) -> Result<Put, DurableError> {
        let repeat = Repeat::FixedDelay(delay);
        self.put(
            kind,
            id,
            value,
            Some(repeat),
            When::After(initial_delay),
            PutMode::IfAbsent,
        )
    }

    fn put<T: Payload>(
        &self,
        kind: &str,
        id: &str,
        value: &T,
        repeat: Option<Repeat>,
        when: When,
        mode: PutMode,
    ) -> Result<Put, DurableError> {
        let sealed = self.seal(kind, id, value, repeat)?;
        self.inner.store.put(id, &sealed, when, mode)
    }

    /// The stored bytes of a run of `kind` on `value` under `id`, after the
    /// checks every schedule makes.
    pub(super) fn seal<T: Payload>(
        &self,
        kind: &str,
        id: &str,
        value: &T,
        repeat: Option<Repeat>,
    ) -> Result<Vec<u8>, DurableError> {
        self.inner.seal(kind, id, value, repeat)
    }

    /// Cancels `id` (one-shot or chain) wherever it is: `true` when it
    /// existed. A run in progress finishes, but its ack is refused, so a
    /// chain does not continue.
    ///
    /// # Errors
    ///
    /// The store's error.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurablePool, MemoryBackend};
    ///
    /// let pool = DurablePool::builder(MemoryBackend::new())
    ///     .threads(1)
    ///     .handler("close-order", |_: &u64, _job| Ok(()))
    ///     .build()?;
    /// pool.schedule("close-order", "order-42", &42u64, Duration::from_secs(1800))?;
    /// // The customer paid:
    /// assert!(pool.cancel("order-42")?);
    /// assert!(!pool.cancel("order-42")?, "gone already");
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn cancel(&self, id: &str) -> Result<bool, DurableError> {
        use crate::durable::store::backend::Cancelled;
        Ok(!matches!(self.inner.store.cancel(id)?, Cancelled::NotFound))
    }

    /// Counts of pending, in-flight and dead items in the store (all
    /// processes).
    ///
    /// # Errors
    ///
    /// The store's error.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurablePool, MemoryBackend};
    ///
    /// let pool = DurablePool::builder(MemoryBackend::new())
    ///     .threads(1)
    ///     .handler("close-order", |_: &u64, _job| Ok(()))
    ///     .build()?;
    /// pool.schedule("close-order", "order-1", &1u64, Duration::from_secs(60))?;
    /// pool.schedule("close-order", "order-2", &2u64, Duration::from_secs(60))?;
    /// let counts = pool.counts()?;
    /// assert_eq!((counts.pending, counts.in_flight, counts.dead), (2, 0, 0));
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn counts(&self) -> Result<Counts, DurableError> {
        self.inner.store.counts()
    }

    /// This process's counters.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ManualClock;
    /// use schedpool::durable::{DurablePool, MemoryBackend};
    ///
    /// let clock = ManualClock::new();
    /// let pool = DurablePool::builder(MemoryBackend::with_clock(clock.clone()))
    ///     .threads(1)
    ///     .max_attempts(2)
    ///     .retry_backoff(Duration::from_secs(1), Duration::from_secs(60))
    ///     .handler("charge", |cents: &u64, _job| {
    ///         if *cents > 0 { Ok(()) } else { Err("nothing to charge".into()) }
    ///     })
    ///     .build()?;
    /// pool.schedule("charge", "ok", &100u64, Duration::ZERO)?;
    /// pool.schedule("charge", "bad", &0u64, Duration::ZERO)?;
    /// assert!(pool.wait_idle(Duration::from_secs(5)));
    /// let stats = pool.stats();
    /// assert_eq!((stats.succeeded, stats.failed, stats.retried), (1, 1, 1), "retry in 1 s");
    /// clock.advance(Duration::from_secs(1));
    /// assert!(pool.wait_idle(Duration::from_secs(5)));
    /// let stats = pool.stats();
    /// assert_eq!((stats.failed, stats.dead_lettered), (2, 1), "2 attempts, then dead");
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn stats(&self) -> DurableStats {
        let c = &self.inner.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        DurableStats {
            succeeded: get(&c.succeeded),
            failed: get(&c.failed),
            retried: get(&c.retried),
            dead_lettered: get(&c.dead_lettered),
            lease_lost: get(&c.lease_lost),
            deferred: get(&c.deferred),
            fires_skipped: get(&c.fires_skipped),
            fires_coalesced: get(&c.fires_coalesced),
        }
    }

    /// Waits until nothing is due in the store, nothing is in flight, and
    /// no worker of this pool is busy: `false` if `timeout` (real time)
    /// passed first. With a [`ManualClock`](crate::ManualClock) backend this
    /// is "everything that the last `advance` made due has run".
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ManualClock;
    /// use schedpool::durable::{DurablePool, MemoryBackend};
    ///
    /// let clock = ManualClock::new();
    /// let pool = DurablePool::builder(MemoryBackend::with_clock(clock.clone()))
    ///     .threads(1)
    ///     .handler("close-order", |_: &u64, _job| Ok(()))
    ///     .build()?;
    /// pool.schedule("close-order", "order-42", &42u64, Duration::from_secs(1800))?;
    /// clock.advance(Duration::from_secs(1800)); // 30 minutes in no time
    /// assert!(pool.wait_idle(Duration::from_secs(5)));
    /// assert_eq!(pool.stats().succeeded, 1);
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn wait_idle(&self, timeout: Duration) -> bool {
        let limit = Instant::now().checked_add(timeout);
        loop {
            if self.is_idle() {
                return true;
            }
            if limit.is_some_and(|l| Instant::now() >= l) {
                return false;
            }
            let mut s = self.inner.state.lock();
            self.inner
                .cv
                .wait_until(&mut s, Instant::now() + Duration::from_millis(2));
        }
    }

    fn is_idle(&self) -> bool {
        // In the order items move: due head, then in flight, then busy,
        // then the acker's outstanding acks. An item claimed after the head
        // read is in flight at the counts read, or (settled since) its
        // worker is still counted busy, or its ack outstanding (a worker
        // hands the ack over before it stops counting as busy, and the
        // acker counts it until its outcome is in the stats).
        let backend = &self.inner.store;
        let (Ok(head), Ok(now)) = (backend.peek_deadline_ms(), backend.server_time_ms()) else {
            return false;
        };
        if head.is_some_and(|at| at <= now) {
            return false;
        }
        match backend.counts() {
            Ok(counts) if counts.in_flight == 0 => {}
            _ => return false,
        }
        {
            let s = self.inner.state.lock();
            if s.busy > 0 {
                return false;
            }
            #[cfg(feature = "tokio")]
            if s.async_busy > 0 {
                return false;
            }
        }
        self.inner.acker.outstanding() == 0
    }

    /// Stops claiming: workers finish the runs in progress, then exit;
    /// items claimed but not started are released to other processes at
    /// once, on this thread (a store call each; with the store down, the
    /// first waits out the backend's operation timeout and the rest are
    /// not tried: they are left to their leases). Stored items are
    /// untouched. Returns without waiting for the runs: the runs' acks go
    /// out from the pool's acker thread, a few at a time, so a process
    /// that exits right after `shutdown` (or drops the pool) may leave
    /// acks unsent, and those items run again after their lease (at least
    /// once, as after a crash). Call
    /// [`await_termination`](Self::await_termination) before exiting.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurablePool, MemoryBackend};
    ///
    /// let pool = DurablePool::builder(MemoryBackend::new())
    ///     .threads(1)
    ///     .handler("close-order", |_: &u64, _job| Ok(()))
    ///     .build()?;
    /// pool.schedule("close-order", "order-42", &42u64, Duration::from_secs(1800))?;
    /// pool.shutdown();
    /// assert!(pool.await_termination(Duration::from_secs(5)));
    /// assert_eq!(pool.counts()?.pending, 1, "the store keeps it for the next process");
    /// assert!(pool.schedule("close-order", "o", &1u64, Duration::ZERO).unwrap_err().is_closed());
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn shutdown(&self) {
        self.inner.state.lock().shutdown = true;
        #[cfg(feature = "metrics")]
        self.inner.sampler.notify_all();
        self.inner.taker.close();
    }

    /// As [`shutdown`](Self::shutdown), and returns the ids of the items it
    /// had claimed but not started: released, or left to their leases where
    /// the release failed. Runs in progress still finish (a
    /// thread cannot be stopped safely); await them with
    /// [`await_termination`](Self::await_termination).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurablePool, MemoryBackend};
    ///
    /// let pool = DurablePool::builder(MemoryBackend::new())
    ///     .threads(1)
    ///     .handler("close-order", |_: &u64, _job| Ok(()))
    ///     .build()?;
    /// let released = pool.shutdown_now();
    /// assert!(released.is_empty(), "nothing was claimed");
    /// assert!(pool.await_termination(Duration::from_secs(5)));
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn shutdown_now(&self) -> Vec<String> {
        self.inner.state.lock().shutdown = true;
        #[cfg(feature = "metrics")]
        self.inner.sampler.notify_all();
        self.inner.taker.close_and_list()
    }

    /// The pool's store, for the dead-letter verbs (`dead_letters.rs`).
    pub(crate) fn store(&self) -> &Store {
        &self.inner.store
    }

    /// True after `shutdown` or `shutdown_now`.
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::durable::{DurablePool, MemoryBackend};
    ///
    /// let pool = DurablePool::builder(MemoryBackend::new())
    ///     .threads(1)
    ///     .handler("noop", |_: &(), _job| Ok(()))
    ///     .build()?;
    /// assert!(!pool.is_shutdown());
    /// pool.shutdown();
    /// assert!(pool.is_shutdown());
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn is_shutdown(&self) -> bool {
        self.inner.state.lock().shutdown
    }

    /// True once shut down and every worker has exited.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurablePool, MemoryBackend};
    ///
    /// let pool = DurablePool::builder(MemoryBackend::new())
    ///     .threads(1)
    ///     .handler("noop", |_: &(), _job| Ok(()))
    ///     .build()?;
    /// pool.shutdown();
    /// assert!(pool.await_termination(Duration::from_secs(5)));
    /// assert!(pool.is_terminated());
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn is_terminated(&self) -> bool {
        let s = self.inner.state.lock();
        s.shutdown && s.running == 0
    }

    /// Waits up to `timeout` for the workers to exit after a shutdown, and
    /// for the acker thread to send their last acks: `true` if they did.
    /// Leases of runs in progress keep being extended until those runs
    /// settle.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurablePool, MemoryBackend};
    ///
    /// let (started, running) = std::sync::mpsc::channel();
    /// let pool = DurablePool::builder(MemoryBackend::new())
    ///     .threads(1)
    ///     .handler("slow", move |_: &(), _job| {
    ///         let _ = started.send(());
    ///         std::thread::sleep(Duration::from_millis(20));
    ///         Ok(())
    ///     })
    ///     .build()?;
    /// pool.schedule("slow", "job-1", &(), Duration::ZERO)?;
    /// running.recv_timeout(Duration::from_secs(5)).expect("the run started");
    /// pool.shutdown();
    /// // Before exiting: let the run in progress finish and its ack go out.
    /// assert!(pool.await_termination(Duration::from_secs(5)));
    /// assert_eq!(pool.stats().succeeded, 1);
    /// assert_eq!(pool.counts()?.in_flight, 0, "acked, not left to its lease");
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn await_termination(&self, timeout: Duration) -> bool {
        let limit = Instant::now().checked_add(timeout);
        let mut s = self.inner.state.lock();
        while s.running > 0 {
            match limit {
                Some(limit) if Instant::now() >= limit => return false,
                Some(limit) => {
                    self.inner.cv.wait_until(&mut s, limit);
                }
                None => self.inner.cv.wait(&mut s),
            }
        }
        true
    }
}

impl Drop for DurablePool {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl fmt::Debug for DurablePool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.inner.state.lock();
        f.debug_struct("DurablePool")
            .field("running", &s.running)
            .field("busy", &s.busy)
            .field("shutdown", &s.shutdown)
            .finish()
    }
}

// The checks and sealing every schedule makes, on `Inner` so that the
// async client (`async_client.rs`), which holds no `DurablePool`, makes
// them too.
impl Inner {
    /// The stored bytes of a run of `kind` on `value` under `id`, after the
    /// checks every schedule makes.
    pub(super) fn seal<T: Payload>(
        &self,
        kind: &str,
        id: &str,
        value: &T,
        repeat: Option<Repeat>,
    ) -> Result<Vec<u8>, DurableError> {
        self.check_kind_and_id(kind, id)?;
        if let Some(Repeat::FixedRate(p) | Repeat::FixedDelay(p)) = repeat {
            if p < Duration::from_millis(1) {
                return Err(DurableError::Config(
                    "a period must be at least 1 ms".into(),
                ));
            }
        }
        envelope::seal(kind, repeat, value)
    }

    /// The checks every schedule makes of its kind and id.
    pub(super) fn check_kind_and_id(&self, kind: &str, id: &str) -> Result<(), DurableError> {
        if self.state.lock().shutdown {
            return Err(DurableError::Closed);
        }
        if kind == calendar_def::KIND {
            return Err(DurableError::Config(
                format!("the kind {kind:?} is reserved for calendar schedules").into(),
            ));
        }
        if kind.len() > 255 {
            return Err(DurableError::Config(
                format!("kind longer than 255 bytes: {kind:?}").into(),
            ));
        }
        if !self.producer_only && !self.handlers.contains_key(kind) {
            return Err(DurableError::Config(
                format!("no handler for kind {kind:?}").into(),
            ));
        }
        check_id(id)
    }
}
