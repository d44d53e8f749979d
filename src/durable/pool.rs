//! `DurablePool`: worker threads that run durable items through handlers
//! registered by kind.
//!
//! Closures cannot be persisted, so a durable task is (kind, id, payload):
//! every process registers the handlers of the kinds it runs, at build time.
//!
//! Invariants:
//!
//! - Every claimed item is settled exactly once by the worker that ran it:
//!   acked (or rescheduled, for a periodic chain) after its handler
//!   returned `Ok`; nacked with backoff after an error or panic; dead-lettered
//!   once `max_attempts` claims failed. A settle the store refuses means the
//!   lease was lost; a settle that cannot reach the store leaves the item to
//!   come back after its lease. Either way nothing is dropped.
//! - `busy` counts workers between a claim and its settle; `running` counts
//!   live worker threads. Both change under `State`'s lock and notify `cv`,
//!   which `wait_idle` and `await_termination` wait on.

use std::collections::HashMap;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use parking_lot::{Condvar, Mutex};

use super::backend::{Claimed, Counts, DurableBackend, DurableError, Put, PutMode, Repeat, When};
use super::delivery::Delivery;
use super::envelope::{self, Payload};
use super::queue::QueueOptions;
use super::taker::Taker;

/// What a handler returns on failure: any error. The item is retried with
/// backoff, then dead-lettered.
pub type HandlerError = Box<dyn std::error::Error + Send + Sync>;

type Handler = Box<dyn Fn(&[u8], &JobInfo) -> Result<(), HandlerError> + Send + Sync>;

/// What a handler knows about the run it is in.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct JobInfo {
    /// The item's id.
    pub id: String,
    /// Its kind (the handler's name).
    pub kind: String,
    /// Which claim this is: 1 on the first run, higher on retries and
    /// redeliveries.
    pub attempt: u32,
    /// The fencing token of this claim: record it with the side effect to
    /// make the effect conditional.
    pub token: u64,
    /// The occurrence's scheduled time by the store's clock (for a periodic
    /// chain, the occurrence this run is for).
    pub deadline_ms: u64,
    /// The store's clock at this claim (ms since the Unix epoch): never
    /// before `deadline_ms`.
    pub claimed_ms: u64,
    /// How late the claim was by the store's clock.
    pub lateness: Duration,
}

impl JobInfo {
    /// [`deadline_ms`](Self::deadline_ms) as a `SystemTime`.
    pub fn deadline(&self) -> SystemTime {
        super::delivery::ms_to_time(self.deadline_ms)
    }
}

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
}

#[derive(Default)]
struct Counters {
    succeeded: AtomicU64,
    failed: AtomicU64,
    retried: AtomicU64,
    dead_lettered: AtomicU64,
    lease_lost: AtomicU64,
}

/// Configures a [`DurablePool`]; from [`DurablePool::builder`].
pub struct DurablePoolBuilder {
    backend: Arc<dyn DurableBackend>,
    threads: usize,
    name: String,
    opts: QueueOptions,
    backoff: (Duration, Duration),
    handlers: HashMap<String, Handler>,
}

impl DurablePoolBuilder {
    /// Worker threads (default: the number of CPUs). Zero makes a
    /// producer-only pool: it schedules and cancels items of any kind (it
    /// cannot check them against handlers it does not have) and runs none.
    pub fn threads(mut self, n: usize) -> Self {
        self.threads = n;
        self
    }

    /// The worker threads' name prefix (default `schedpool-durable`).
    pub fn name(mut self, prefix: impl Into<String>) -> Self {
        self.name = prefix.into();
        self
    }

    /// The lease of each claim (default 30 s); see [`QueueOptions::lease`].
    pub fn lease(mut self, lease: Duration) -> Self {
        self.opts.lease = lease;
        self
    }

    /// The longest sleep without asking the store (default 5 s).
    pub fn max_block(mut self, max_block: Duration) -> Self {
        self.opts.max_block = max_block;
        self
    }

    /// Claims of one item before it is dead-lettered (default 5; 0: retry
    /// forever). Failed runs count, and so do lease expiries (a killed
    /// holder) and releases of items claimed but never started.
    pub fn max_attempts(mut self, n: u32) -> Self {
        self.opts.max_attempts = n;
        self
    }

    /// The retry backoff after a failed run: `base` × 2^(attempt − 1),
    /// capped at `max` (default 1 s and 5 min).
    pub fn retry_backoff(mut self, base: Duration, max: Duration) -> Self {
        self.backoff = (base, max);
        self
    }

    /// Registers the handler of `kind`: it gets the decoded payload and the
    /// run's [`JobInfo`]. Registering a kind again replaces its handler.
    pub fn handler<T, F>(mut self, kind: &str, handler: F) -> Self
    where
        T: Payload + 'static,
        F: Fn(&T, &JobInfo) -> Result<(), HandlerError> + Send + Sync + 'static,
    {
        let run: Handler = Box::new(move |bytes, info| {
            let value = envelope::decode::<T>(&info.id, bytes)?;
            handler(&value, info)
        });
        self.handlers.insert(kind.to_string(), run);
        self
    }

    /// Starts the workers.
    ///
    /// # Errors
    ///
    /// [`DurableError::Config`] for workers without any handler, a kind over
    /// 255 bytes, invalid options, or a worker thread that could not be
    /// spawned.
    pub fn build(self) -> Result<DurablePool, DurableError> {
        if self.threads > 0 && self.handlers.is_empty() {
            return Err(DurableError::Config(
                "a pool with workers needs at least one handler (threads(0) makes a producer-only pool)"
                    .into(),
            ));
        }
        if let Some(kind) = self.handlers.keys().find(|k| k.len() > 255) {
            return Err(DurableError::Config(format!(
                "kind longer than 255 bytes: {kind:?}"
            )));
        }
        self.opts.check()?;
        let inner = Arc::new(Inner {
            producer_only: self.threads == 0,
            taker: Taker::new(self.backend, self.opts),
            handlers: self.handlers,
            backoff: self.backoff,
            state: Mutex::new(State::default()),
            cv: Condvar::new(),
            counters: Counters::default(),
        });
        let pool = DurablePool { inner };
        for i in 0..self.threads {
            let inner = pool.inner.clone();
            inner.state.lock().running += 1;
            let spawned = std::thread::Builder::new()
                .name(format!("{}-{i}", self.name))
                .spawn(move || inner.work());
            if let Err(err) = spawned {
                pool.inner.state.lock().running -= 1;
                pool.shutdown();
                return Err(DurableError::Config(format!(
                    "could not spawn a worker: {err}"
                )));
            }
        }
        Ok(pool)
    }
}

impl fmt::Debug for DurablePoolBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DurablePoolBuilder")
            .field("threads", &self.threads)
            .field("opts", &self.opts)
            .field("kinds", &self.handlers.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// A pool of worker threads running durable items: handlers by kind,
/// retries with backoff, a dead-letter set, durable periodic chains.
///
/// See the [module docs](super) for an example.
pub struct DurablePool {
    inner: Arc<Inner>,
}

struct Inner {
    /// No workers: any kind may be scheduled.
    producer_only: bool,
    taker: Taker,
    handlers: HashMap<String, Handler>,
    backoff: (Duration, Duration),
    state: Mutex<State>,
    cv: Condvar,
    counters: Counters,
}

#[derive(Default)]
struct State {
    running: usize,
    busy: usize,
    shutdown: bool,
}

impl DurablePool {
    /// A builder for a pool on `backend`.
    pub fn builder(backend: impl DurableBackend) -> DurablePoolBuilder {
        DurablePoolBuilder {
            backend: Arc::new(backend),
            threads: num_cpus::get(),
            name: "schedpool-durable".into(),
            opts: QueueOptions {
                max_attempts: 5,
                ..QueueOptions::default()
            },
            backoff: (Duration::from_secs(1), Duration::from_secs(300)),
            handlers: HashMap::new(),
        }
    }

    /// Schedules a one-shot run of `kind` on `value` under `id`, `delay`
    /// after the store's now; re-scheduling an id replaces it (and fences a
    /// current holder).
    ///
    /// # Errors
    ///
    /// [`DurableError::Config`] for a kind with no handler in this pool
    /// (unless it is producer-only) or an empty id; [`DurableError::Closed`]
    /// once shut down; the store's error otherwise.
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
    /// in-flight `id` untouched and returns [`Put::Exists`].
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
        if self.is_shutdown() {
            return Err(DurableError::Closed);
        }
        if kind.len() > 255 {
            return Err(DurableError::Config(format!(
                "kind longer than 255 bytes: {kind:?}"
            )));
        }
        if !self.inner.producer_only && !self.inner.handlers.contains_key(kind) {
            return Err(DurableError::Config(format!(
                "no handler for kind {kind:?}"
            )));
        }
        if id.is_empty() {
            return Err(DurableError::Config("an item id must not be empty".into()));
        }
        if let Some(Repeat::FixedRate(p) | Repeat::FixedDelay(p)) = repeat {
            if p < Duration::from_millis(1) {
                return Err(DurableError::Config(
                    "a period must be at least 1 ms".into(),
                ));
            }
        }
        let sealed = envelope::seal(kind, repeat, value)?;
        self.inner.taker.backend().put(id, &sealed, when, mode)
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

    /// Up to `max` dead-lettered items as (id, kind), oldest first.
    ///
    /// # Errors
    ///
    /// The store's error.
    pub fn dead_letters(&self, max: usize) -> Result<Vec<(String, String)>, DurableError> {
        Ok(self
            .inner
            .taker
            .backend()
            .dead_letters(max)?
            .into_iter()
            .map(|(id, bytes)| {
                let kind = envelope::open(&bytes)
                    .map(|e| e.kind.to_string())
                    .unwrap_or_default();
                (id, kind)
            })
            .collect())
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
            self.inner.cv.wait_for(&mut s, Duration::from_millis(2));
        }
    }

    fn is_idle(&self) -> bool {
        // In the order items move: due head, then in flight, then busy. An
        // item claimed after the head read is in flight at the counts read,
        // or (settled since) its worker is still counted busy.
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
        self.inner.state.lock().busy == 0
    }

    /// Stops claiming: workers finish and ack the runs in progress, then
    /// exit; items claimed but not started are released to other processes
    /// at once. Stored items are untouched.
    pub fn shutdown(&self) {
        self.inner.state.lock().shutdown = true;
        self.inner.taker.close();
    }

    /// As [`shutdown`](Self::shutdown), and returns the ids of the items it
    /// released without running them. Runs in progress still finish (a
    /// thread cannot be stopped safely); await them with
    /// [`await_termination`](Self::await_termination).
    pub fn shutdown_now(&self) -> Vec<String> {
        self.inner.state.lock().shutdown = true;
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

    /// Waits up to `timeout` for the workers to exit after a shutdown:
    /// `true` if they did. Leases of runs in progress keep being extended
    /// until those runs settle.
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

impl Inner {
    fn work(self: Arc<Self>) {
        loop {
            let claimed = match self.taker.take(None) {
                Ok(Some(c)) => c,
                Ok(None) => break,
                // `take(None)` retries store failures itself; an error here
                // means nothing was claimed.
                Err(_) => continue,
            };
            self.state.lock().busy += 1;
            self.run(claimed);
            let mut s = self.state.lock();
            s.busy -= 1;
            self.cv.notify_all();
        }
        let mut s = self.state.lock();
        s.running -= 1;
        self.cv.notify_all();
    }

    fn run(&self, mut claimed: Claimed) {
        let bytes = std::mem::take(&mut claimed.envelope);
        let env = match envelope::open(&bytes) {
            Ok(env) => env,
            Err(err) => {
                tracing::error!(target: "schedpool::durable", id = %claimed.id, error = %err,
                    "undecodable item moved to the dead-letter set");
                let d = Delivery::new(claimed, (), "", None, &self.taker.leases);
                self.count_settle(d.dead_letter(), &self.counters.dead_lettered);
                return;
            }
        };
        let delivery = Delivery::new(claimed, (), env.kind, env.repeat, &self.taker.leases);
        let info = JobInfo {
            id: delivery.id().to_string(),
            kind: env.kind.to_string(),
            attempt: delivery.attempt(),
            token: delivery.token(),
            deadline_ms: delivery.deadline_ms(),
            claimed_ms: delivery.claimed_ms(),
            lateness: delivery.lateness(),
        };
        let span = tracing::info_span!(
            target: "schedpool::durable",
            "task",
            id = %info.id,
            kind = %info.kind,
            attempt = info.attempt,
            token = info.token,
            lateness_ms = info.lateness.as_millis() as u64,
        );
        let _entered = span.enter();
        let outcome = match self.handlers.get(env.kind) {
            Some(handler) => match catch_unwind(AssertUnwindSafe(|| handler(env.payload, &info))) {
                Ok(result) => result.map_err(|e| e.to_string()),
                Err(panic) => Err(format!(
                    "panicked: {}",
                    crate::error::panic_message(&*panic)
                )),
            },
            None => Err(format!(
                "no handler for kind {:?} in this process",
                info.kind
            )),
        };
        match outcome {
            Ok(()) => {
                let settled = match delivery.repeat() {
                    Some(repeat) => delivery.reschedule(repeat).map(drop),
                    None => delivery.ack(),
                };
                self.count_settle(settled, &self.counters.succeeded);
            }
            Err(why) => {
                self.counters.failed.fetch_add(1, Ordering::Relaxed);
                let max = self.taker.opts.max_attempts;
                if max > 0 && info.attempt >= max {
                    tracing::error!(target: "schedpool::durable", error = %why,
                        "run failed; attempts exhausted, moved to the dead-letter set");
                    self.count_settle(delivery.dead_letter(), &self.counters.dead_lettered);
                } else {
                    let backoff = self.backoff(info.attempt);
                    tracing::warn!(target: "schedpool::durable", error = %why,
                        retry_in_ms = backoff.as_millis() as u64, "run failed; will retry");
                    self.count_settle(delivery.nack(backoff), &self.counters.retried);
                }
            }
        }
    }

    fn backoff(&self, attempt: u32) -> Duration {
        let (base, max) = self.backoff;
        let factor = 1u32 << attempt.saturating_sub(1).min(20);
        base.saturating_mul(factor).min(max)
    }

    fn count_settle(&self, settled: Result<(), DurableError>, on_ok: &AtomicU64) {
        match settled {
            Ok(()) => {
                on_ok.fetch_add(1, Ordering::Relaxed);
            }
            Err(DurableError::LeaseLost) => {
                self.counters.lease_lost.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(target: "schedpool::durable",
                    "lease lost before the settle: another holder has the item, or it was cancelled");
            }
            Err(err) => tracing::warn!(target: "schedpool::durable", error = %err,
                "could not settle; the item returns when its lease expires"),
        }
    }
}
