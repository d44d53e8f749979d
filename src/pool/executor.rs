//! [`ScheduledThreadPool`]: the public face of the executor. The machinery
//! is in [`shared`](super::shared) (state, submission, shutdown) and
//! [`worker`](super::worker) (the threads).
//!
//! # Invariants
//!
//! - Clones share one pool. The last clone's drop calls `shutdown` (never
//!   blocks, never joins a thread, so it is safe from inside a task).
//! - Every submission validates its arguments first, then is accepted or
//!   rejected atomically with respect to shutdown.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use crate::base::clock::after;
use crate::base::error::Rejected;
use crate::pool::handle::{PendingTask, ScheduledHandle};
use crate::pool::run_state::RunState;
use crate::pool::shared::Shared;
use crate::pool::stats::PoolStats;
use crate::task::new;

/// A pool of worker threads that runs tasks after a delay or periodically:
/// Java's `ScheduledThreadPoolExecutor`.
///
/// - Tasks never run early. Tasks due at the same instant run in submission
///   order (FIFO).
/// - Fixed rate: the n-th run is due at `first + n * period`; late runs are
///   caught up back to back. Fixed delay: each run is due `delay` after the
///   previous one ended. A periodic task never overlaps itself.
/// - A task that panics does not kill its worker; its handle reports the
///   panic. A periodic task that fails (panics, or its body returns `Err`)
///   runs no more under the default [`OnFailure`](crate::OnFailure) policy.
/// - `cancel` never waits on the pool lock: it drops a task's closure and
///   uncounts the task at once, and the workers reclaim its queue node
///   within 10 ms (see [`ScheduledHandle::cancel`] for the exact promise).
///
/// `Clone + Send + Sync`: clones share the pool. Dropping the last clone
/// shuts it down as [`shutdown`](Self::shutdown) does, without blocking.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedpool::ScheduledThreadPool;
///
/// let pool = ScheduledThreadPool::new(2);
/// let h = pool.schedule(|| "closed order 42", Duration::from_millis(10))?;
/// let tick = pool.schedule_at_fixed_rate(|| { /* poll */ }, Duration::ZERO, Duration::from_millis(5))?;
/// assert_eq!(h.join()?, "closed order 42");
/// tick.cancel();
/// assert!(pool.shutdown().await_termination(Duration::from_secs(5)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Implementation
///
/// Java's `DelayedWorkQueue`, as a merge ordered by `(deadline, sequence)`
/// of an array 4-ary heap whose tasks record their own positions, a FIFO lane
/// for tasks due at submission, a wheel of 16.4 µs slots for one-shot tasks
/// due within ~16.8 ms, and a batch of due tasks workers take without the
/// pool lock; and workers that wait on it with the leader/follower protocol:
/// only one sleeps with a timeout. A submission that needs nobody woken (a
/// due task while the workers are awake; a delayed one while a worker is
/// bound to look by its deadline) leaves the task on a list for the workers
/// instead of taking the pool lock; every holder of that lock takes the
/// lists first, so counts and controls see it at once. See `docs/design.md`.
#[derive(Clone)]
pub struct ScheduledThreadPool {
    inner: Arc<Owner>,
}

/// Shuts the pool down when the last user clone goes.
struct Owner {
    shared: Arc<Shared>,
}

impl Drop for Owner {
    fn drop(&mut self) {
        self.shared.shutdown();
    }
}

impl ScheduledThreadPool {
    pub(super) fn from_shared(shared: Arc<Shared>) -> Self {
        ScheduledThreadPool {
            inner: Arc::new(Owner { shared }),
        }
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.inner.shared
    }

    // ===== submission =====

    /// Runs `task` as soon as a worker is free (after the tasks already due).
    ///
    /// There is no handle, so `task` returns `()` or `Result<(), E>`
    /// (`E: Display`): an `Err` is reported as a failed run (the failure
    /// handler, an `ERROR` event, [`PoolStats::failed`](crate::PoolStats::failed)),
    /// exactly as a panic is, instead of vanishing.
    ///
    /// # Errors
    ///
    /// [`Rejected`] once shutdown has begun.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::mpsc;
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// let (tx, rx) = mpsc::channel();
    /// pool.execute(move || tx.send("sent").unwrap())?;
    /// assert_eq!(rx.recv_timeout(Duration::from_secs(5))?, "sent");
    ///
    /// // An Err is a failed run, counted as a panic is.
    /// pool.execute(|| Err::<(), _>("mail server down"))?;
    /// assert!(pool.wait_idle(Duration::from_secs(5)));
    /// assert_eq!(pool.stats().failed, 1);
    ///
    /// pool.shutdown();
    /// assert!(pool.execute(|| ()).unwrap_err().is_shutdown());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn execute<F, R>(&self, task: F) -> Result<(), Rejected>
    where
        F: FnOnce() -> R + Send + 'static,
        R: crate::task::policy::RunResult + 'static,
    {
        // No handle: a task with no completion cell, and the queue holds
        // its only reference.
        let shared = self.shared();
        let now = shared.clock.now();
        shared.enqueue(new::exec(shared.next_seq(), now, task), now)
    }

    /// Runs `task` as soon as a worker is free and returns a handle to its
    /// result.
    ///
    /// A `Result` the task returns is its value, as with `std::thread::spawn`
    /// or `tokio::spawn`: `submit(|| Err(e))` joins as `Ok(Err(e))` and is
    /// not a failed run (only a panic is). The caller who joins decides what
    /// an `Err` means; nothing else could see it apart from the failure
    /// counters, so this keeps a one-shot's value untouched.
    ///
    /// # Errors
    ///
    /// [`Rejected`] once shutdown has begun.
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let pool = ScheduledThreadPool::new(2);
    /// let sum = pool.submit(|| (1..=10).sum::<u32>())?;
    /// assert_eq!(sum.join()?, 55);
    ///
    /// // A Result is the task's value, not a failure.
    /// let parsed = pool.submit(|| "42x".parse::<u32>())?;
    /// assert!(parsed.join()?.is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use = "the handle is how to cancel or join the task; dropping it detaches the task (it still runs)"]
    pub fn submit<F, T>(&self, task: F) -> Result<ScheduledHandle<T>, Rejected>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        self.schedule(task, Duration::ZERO)
    }

    /// Runs `task` once, `delay` from now, and returns a handle to its
    /// result. Any `Duration` is accepted: a delay beyond about 146 years
    /// is clamped, so `Duration::MAX` simply never comes due.
    ///
    /// # Errors
    ///
    /// [`Rejected`] once shutdown has begun.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// let start = Instant::now();
    /// let h = pool.schedule(move || start.elapsed(), Duration::from_millis(20))?;
    /// assert!(h.join()? >= Duration::from_millis(20), "never early");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use = "the handle is how to cancel or join the task; dropping it detaches the task (it still runs)"]
    pub fn schedule<F, T>(&self, task: F, delay: Duration) -> Result<ScheduledHandle<T>, Rejected>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let shared = self.shared();
        let now = shared.clock.now();
        let task = new::once(shared.next_seq(), after(now, delay), task);
        shared.enqueue(task.clone(), now)?;
        Ok(ScheduledHandle::new(task, Arc::clone(shared)))
    }

    // ===== shutdown =====

    /// Begins an orderly shutdown; never blocks. New submissions are
    /// rejected, and paused tasks are cancelled (nobody could resume them).
    /// With the default policies, periodic tasks are cancelled and
    /// delayed one-shot tasks still run at their time (see
    /// [`Builder::continue_periodic_after_shutdown`](crate::Builder::continue_periodic_after_shutdown) and
    /// [`Builder::execute_delayed_after_shutdown`](crate::Builder::execute_delayed_after_shutdown)). Idempotent. Returns
    /// `self`, so `pool.shutdown().await_termination(t)` reads naturally.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// let reminder = pool.schedule(|| "reminder sent", Duration::from_millis(20))?;
    /// let heartbeat = pool.schedule_at_fixed_rate(|| (), Duration::ZERO, Duration::from_millis(5))?;
    ///
    /// pool.shutdown();
    /// assert!(pool.is_shutdown());
    /// assert!(pool.submit(|| ()).unwrap_err().is_shutdown());
    /// // The defaults: a delayed one-shot still runs, a periodic task stops.
    /// assert_eq!(reminder.join()?, "reminder sent");
    /// assert!(heartbeat.join().unwrap_err().is_cancelled());
    /// assert!(pool.await_termination(Duration::from_secs(5)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn shutdown(&self) -> &Self {
        self.shared().shutdown();
        self
    }

    /// Stops at once: rejects new submissions, removes every queued task
    /// that has not started and returns them in deadline order (paused
    /// tasks are cancelled instead: they are not queued). Running
    /// tasks finish their current run; periodic ones run no more. Run or
    /// drop the returned tasks: either completes their handles.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// let close = pool.schedule(|| "order 7 closed", Duration::from_secs(1800))?;
    /// let remind = pool.schedule(|| "reminder", Duration::from_secs(3600))?;
    ///
    /// let pending = pool.shutdown_now();
    /// assert_eq!(pending.len(), 2, "nothing had started");
    /// for task in pending {
    ///     if task.id() == close.id() {
    ///         task.run(); // run this one here and now
    ///     } // the others are dropped: cancelled
    /// }
    /// assert_eq!(close.join()?, "order 7 closed");
    /// assert!(remind.join().unwrap_err().is_cancelled());
    /// assert!(pool.await_termination(Duration::from_secs(5)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn shutdown_now(&self) -> Vec<PendingTask> {
        let shared = self.shared();
        shared
            .shutdown_now()
            .into_iter()
            .map(|task| PendingTask::new(task, Arc::clone(shared)))
            .collect()
    }

    /// Blocks until the pool has terminated (shut down, queue drained, all
    /// workers gone) or `timeout` (real time) has passed; true if
    /// terminated. Called from one of this pool's own threads it returns
    /// false at once instead of waiting for itself.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// pool.execute(|| std::thread::sleep(Duration::from_millis(20)))?;
    /// // Not shut down: a running pool never terminates.
    /// assert!(!pool.await_termination(Duration::from_millis(1)));
    /// assert!(pool.shutdown().await_termination(Duration::from_secs(5)));
    /// assert!(pool.is_terminated());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn await_termination(&self, timeout: Duration) -> bool {
        self.shared().await_termination(timeout)
    }

    /// A future that completes once the pool has terminated: the async
    /// counterpart of [`await_termination`](Self::await_termination), with
    /// no runtime dependency (it is woken by the worker that terminates the
    /// pool). It does not shut the pool down: call
    /// [`shutdown`](Self::shutdown) first, or it waits until someone does.
    /// For a bound, wrap it in your runtime's timeout
    /// (`tokio::time::timeout(d, pool.terminated())`). Holding it does not
    /// keep the pool open (dropping the last clone still shuts it down).
    ///
    /// Awaited on one of this pool's own threads it would wait for itself:
    /// don't (there, [`await_termination`](Self::await_termination) returns
    /// `false` at once instead).
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::ScheduledThreadPool;
    ///
    /// async fn stop(pool: ScheduledThreadPool) {
    ///     pool.shutdown().terminated().await;
    ///     assert!(pool.is_terminated());
    /// }
    /// # let pool = ScheduledThreadPool::new(1);
    /// # let _ = stop(pool);
    /// ```
    pub fn terminated(&self) -> Terminated {
        Terminated {
            shared: Arc::clone(self.shared()),
        }
    }

    /// True once shutdown has begun.
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// assert!(!pool.is_shutdown());
    /// pool.shutdown();
    /// assert!(pool.is_shutdown());
    /// ```
    pub fn is_shutdown(&self) -> bool {
        self.shared().run_state() != RunState::Running
    }

    /// True once the pool has terminated.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// pool.shutdown();
    /// assert!(pool.await_termination(Duration::from_secs(5)));
    /// assert!(pool.is_terminated());
    /// ```
    pub fn is_terminated(&self) -> bool {
        self.shared().run_state() == RunState::Terminated
    }

    /// Blocks until no task is running and none is due, or until `timeout`
    /// (real time) has passed; true if idle. Meant for tests with a
    /// [`ManualClock`](crate::ManualClock): advance, then wait for the
    /// consequences.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use schedpool::{ManualClock, ScheduledThreadPool};
    ///
    /// let clock = ManualClock::new();
    /// let pool = ScheduledThreadPool::builder().core_threads(1).clock(clock.clone()).build()?;
    /// let closed = Arc::new(AtomicUsize::new(0));
    /// let c = closed.clone();
    /// let _timeout = pool.schedule(move || c.fetch_add(1, Ordering::SeqCst), Duration::from_secs(1800))?;
    ///
    /// clock.advance(Duration::from_secs(1800)); // 30 minutes, at once
    /// assert!(pool.wait_idle(Duration::from_secs(5)));
    /// assert_eq!(closed.load(Ordering::SeqCst), 1, "the timeout ran");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_idle(&self, timeout: Duration) -> bool {
        self.shared().wait_idle(timeout)
    }

    // ===== introspection =====

    /// Tasks waiting in the queue (due or not).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// let h = pool.schedule(|| (), Duration::from_secs(60))?;
    /// assert_eq!(pool.queue_len(), 1);
    /// h.cancel();
    /// assert_eq!(pool.queue_len(), 0, "a cancel leaves at once");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn queue_len(&self) -> usize {
        self.shared().lock().queue.len()
    }

    /// Tasks running right now.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::mpsc;
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// let (started, release) = (mpsc::channel(), mpsc::channel::<()>());
    /// let (tell, wait) = (started.0, release.1);
    /// let h = pool.submit(move || { tell.send(()).unwrap(); wait.recv().unwrap() })?;
    /// started.1.recv()?;
    /// assert_eq!(pool.active_count(), 1);
    /// release.0.send(())?;
    /// h.join()?;
    /// assert!(pool.wait_idle(Duration::from_secs(5)));
    /// assert_eq!(pool.active_count(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn active_count(&self) -> usize {
        let shared = self.shared();
        let state = shared.lock();
        shared.ready.running(state.active)
    }

    /// Runs finished so far: every run of a periodic task counts, and so do
    /// runs that panicked. Never decreases.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// let three = pool.at_fixed_rate(Duration::from_millis(1)).max_runs(3).start(|| ())?;
    /// three.join()?;
    /// assert!(pool.wait_idle(Duration::from_secs(5)));
    /// assert_eq!(pool.completed_task_count(), 3, "every run counts");
    /// assert_eq!(pool.task_count(), 1, "one task");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn completed_task_count(&self) -> u64 {
        self.shared().lock().completed
    }

    /// Tasks ever accepted (each periodic task counts once).
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// pool.execute(|| ())?;
    /// pool.submit(|| ())?.join()?;
    /// assert_eq!(pool.task_count(), 2);
    /// pool.shutdown();
    /// assert!(pool.execute(|| ()).is_err());
    /// assert_eq!(pool.task_count(), 2, "a rejected task is not counted");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn task_count(&self) -> u64 {
        self.shared().lock().accepted
    }

    /// Live worker threads; 0 once terminated.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let pool = ScheduledThreadPool::new(2);
    /// assert_eq!(pool.pool_size(), 0, "workers start with the first tasks");
    /// pool.submit(|| ())?.join()?;
    /// assert!(pool.pool_size() >= 1);
    /// assert!(pool.shutdown().await_termination(Duration::from_secs(5)));
    /// assert_eq!(pool.pool_size(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn pool_size(&self) -> usize {
        self.shared().lock().workers
    }

    /// A snapshot of the pool's counters and the lateness of its runs.
    ///
    /// A run is counted (`completed`, `failed`, `panicked`) once its worker
    /// is done with it, after its hooks: that is after its handle
    /// completes, so right after a `join` returns the count may still miss
    /// that run. [`wait_idle`](Self::wait_idle) waits for it.
    ///
    /// ```
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// pool.submit(|| ()).unwrap().join().unwrap();
    /// let stats = pool.stats();
    /// assert_eq!(stats.accepted, 1);
    /// assert!(stats.lateness.count <= 1);
    /// ```
    pub fn stats(&self) -> PoolStats {
        self.shared().stats()
    }

    /// The configured number of core threads.
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::ScheduledThreadPool;
    ///
    /// assert_eq!(ScheduledThreadPool::new(4).core_threads(), 4);
    /// ```
    pub fn core_threads(&self) -> usize {
        self.shared().config.core_threads
    }
}

/// The future of [`ScheduledThreadPool::terminated`]: ready once the pool
/// has terminated (shut down, queue drained, every worker gone). Any
/// executor works; it may be polled again after it is ready (it stays
/// ready).
///
/// # Examples
///
/// ```
/// use schedpool::ScheduledThreadPool;
///
/// async fn stop(pool: ScheduledThreadPool) {
///     pool.shutdown();
///     pool.terminated().await; // with tokio: tokio::time::timeout(d, pool.terminated())
/// }
/// # let pool = ScheduledThreadPool::new(1);
/// # let _ = stop(pool);
/// ```
#[must_use = "a future does nothing unless awaited"]
pub struct Terminated {
    shared: Arc<Shared>,
}

impl Future for Terminated {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let shared = &self.shared;
        shared
            .terminated_wakers
            .poll(cx, || shared.run_state() == RunState::Terminated)
    }
}

impl fmt::Debug for Terminated {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Terminated")
            .field(
                "terminated",
                &(self.shared.run_state() == RunState::Terminated),
            )
            .finish()
    }
}

impl fmt::Debug for ScheduledThreadPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.shared().lock();
        f.debug_struct("ScheduledThreadPool")
            .field("run_state", &state.run_state)
            .field("workers", &state.workers)
            .field("queued", &state.queue.len())
            .field("active", &state.active)
            .field("completed", &state.completed)
            .finish()
    }
}
