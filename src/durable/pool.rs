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

use super::backend::{check_id, Counts, DurableError, Put, PutMode, Repeat, When};
use super::calendar_def;
use super::envelope::{self, Payload};
use super::runner::Inner;

/// Counters of a [`DurablePool`] (this process only).
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
    /// [`Misfire::skip`](super::Misfire::skip), by the cap of
    /// [`Misfire::run_all`](super::Misfire::run_all), or for being later
    /// than [`Misfire::max_lateness`](super::Misfire::max_lateness).
    pub fires_skipped: u64,
    /// Missed fires of calendar schedules this process folded into one
    /// later run ([`Misfire::run_once`](super::Misfire::run_once)).
    pub fires_coalesced: u64,
}

/// A pool of worker threads running durable items: handlers by kind,
/// retries with backoff, a dead-letter set, durable periodic chains.
///
/// See the [module docs](super) for an example.
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
        self.inner.taker.backend().put(id, &sealed, when, mode)
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
        if self.is_shutdown() {
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
        if !self.inner.producer_only && !self.inner.handlers.contains_key(kind) {
            return Err(DurableError::Config(
                format!("no handler for kind {kind:?}").into(),
            ));
        }
        check_id(id)
    }

    /// Cancels `id` (one-shot or chain) wherever it is: `true` when it
    /// existed. A run in progress finishes, but its ack is refused, so a
    /// chain does not continue.
    ///
    /// # Errors
    ///
    /// The store's error.
    pub fn cancel(&self, id: &str) -> Result<bool, DurableError> {
        use super::backend::Cancelled;
        Ok(!matches!(
            self.inner.taker.backend().cancel(id)?,
            Cancelled::NotFound
        ))
    }

    /// Counts of pending, in-flight and dead items in the store (all
    /// processes).
    ///
    /// # Errors
    ///
    /// The store's error.
    pub fn counts(&self) -> Result<Counts, DurableError> {
        self.inner.taker.backend().counts()
    }

    /// This process's counters.
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
        let backend = self.inner.taker.backend();
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
        if self.inner.state.lock().busy > 0 {
            return false;
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
    pub fn shutdown_now(&self) -> Vec<String> {
        self.inner.state.lock().shutdown = true;
        #[cfg(feature = "metrics")]
        self.inner.sampler.notify_all();
        self.inner.taker.close_and_list()
    }

    /// True after `shutdown` or `shutdown_now`.
    pub fn is_shutdown(&self) -> bool {
        self.inner.state.lock().shutdown
    }

    /// True once shut down and every worker has exited.
    pub fn is_terminated(&self) -> bool {
        let s = self.inner.state.lock();
        s.shutdown && s.running == 0
    }

    /// Waits up to `timeout` for the workers to exit after a shutdown, and
    /// for the acker thread to send their last acks: `true` if they did.
    /// Leases of runs in progress keep being extended until those runs
    /// settle.
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
