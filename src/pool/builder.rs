//! [`Builder`]: configures and builds a [`ScheduledThreadPool`].

use crate::base::error::BuildError;
use std::time::Duration;

use std::sync::Arc;

use crate::base::clock::{Clock, ManualClock};
use crate::pool::config::Config;
use crate::pool::executor::ScheduledThreadPool;
use crate::pool::hooks::{Hooks, RunInfo, TaskFailure};
use crate::pool::shared::Shared;
use crate::pool::worker;
use crate::wait::slice::{MAX_SLICE, MIN_SLICE};

/// How long an idle worker spins by default (see [`Builder::idle_spin`]).
const DEFAULT_IDLE_SPIN: Duration = Duration::from_micros(20);
/// The longest idle spin [`Builder::idle_spin`] accepts.
const MAX_IDLE_SPIN: Duration = Duration::from_secs(1);

/// The workers' default timer slack (see [`Builder::timer_slack`]).
const DEFAULT_TIMER_SLACK: Duration = Duration::from_micros(1);
/// The largest timer slack [`Builder::timer_slack`] accepts: 200 times
/// Linux's default, and a tenth of the default starvation threshold.
const MAX_TIMER_SLACK: Duration = Duration::from_millis(10);

/// The workers' default scheduling slice (see [`Builder::sched_slice`]).
const DEFAULT_SCHED_SLICE: Duration = MIN_SLICE;

/// The most worker threads a pool may be configured with.
pub(super) const MAX_THREADS: usize = 32_768;

/// Configures a [`ScheduledThreadPool`] (rayon's `ThreadPoolBuilder`, Java's
/// constructor arguments and policy setters).
///
/// # Examples
///
/// ```
/// use schedpool::ScheduledThreadPool;
///
/// let pool = ScheduledThreadPool::builder()
///     .core_threads(2)
///     .thread_name("timeouts")
///     .build()?;
/// let name = pool.submit(|| std::thread::current().name().map(str::to_owned)).unwrap().join()?;
/// assert_eq!(name.as_deref(), Some("timeouts-0"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Builder {
    core_threads: usize,
    thread_name: String,
    remove_on_cancel: bool,
    continue_periodic_after_shutdown: bool,
    execute_delayed_after_shutdown: bool,
    clock: Clock,
    starvation_threshold: Duration,
    timer_slack: Option<Duration>,
    sched_slice: Option<Duration>,
    idle_spin: Duration,
    hooks: Hooks,
    #[cfg(feature = "metrics")]
    metrics_interval: Duration,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            core_threads: num_cpus::get(),
            thread_name: "schedpool".to_string(),
            remove_on_cancel: true,
            continue_periodic_after_shutdown: false,
            execute_delayed_after_shutdown: true,
            clock: Clock::Real,
            starvation_threshold: Duration::from_millis(100),
            timer_slack: Some(DEFAULT_TIMER_SLACK),
            sched_slice: Some(DEFAULT_SCHED_SLICE),
            idle_spin: DEFAULT_IDLE_SPIN,
            hooks: Hooks::default(),
            #[cfg(feature = "metrics")]
            metrics_interval: crate::pool::metrics::DEFAULT_INTERVAL,
        }
    }
}

impl Builder {
    /// A builder with the defaults: one core thread per CPU, threads named
    /// `schedpool-0`, `schedpool-1`, ..., cancelled tasks' nodes reclaimed,
    /// Java's shutdown policies, the real clock.
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::Builder;
    ///
    /// let pool = Builder::new().core_threads(2).build()?;
    /// assert_eq!(pool.core_threads(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// The number of worker threads. They start lazily, one per submission,
    /// until there are this many. `0` is allowed (as in Java): the pool then
    /// runs one worker while anything is queued and lets it go after 10 ms
    /// of an empty queue. At most 32,768: [`build`](Self::build) refuses
    /// more ([`ScheduledThreadPool::new`] clamps instead).
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::ScheduledThreadPool;
    ///
    /// // No thread at rest: one worker comes while tasks are queued.
    /// let on_demand = ScheduledThreadPool::builder().core_threads(0).build()?;
    /// assert_eq!(on_demand.submit(|| 1)?.join()?, 1);
    /// assert!(ScheduledThreadPool::builder().core_threads(1 << 20).build().is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn core_threads(mut self, n: usize) -> Self {
        self.core_threads = n;
        self
    }

    /// The worker threads' name prefix: threads are named `"{prefix}-0"`,
    /// `"{prefix}-1"`, ...
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let pool = ScheduledThreadPool::builder().core_threads(1).thread_name("reaper").build()?;
    /// let name = pool.submit(|| std::thread::current().name().map(str::to_owned))?.join()?;
    /// assert_eq!(name.as_deref(), Some("reaper-0"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn thread_name(mut self, prefix: impl Into<String>) -> Self {
        self.thread_name = prefix.into();
        self
    }

    /// Whether a cancelled task's queue node leaves the queue (default
    /// `true`): reclaimed by the workers within the bound
    /// [`ScheduledHandle::cancel`](crate::ScheduledHandle::cancel) states.
    /// With `false` (Java's default) the node stays until its deadline, and
    /// counts in `queue_len()` until then, as in Java; the closure is dropped
    /// at once either way.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let java_like = ScheduledThreadPool::builder().remove_on_cancel(false).build()?;
    /// let h = java_like.schedule(|| (), Duration::from_secs(3600))?;
    /// h.cancel();
    /// assert_eq!(java_like.queue_len(), 1, "kept until its deadline, as in Java");
    ///
    /// let pool = ScheduledThreadPool::builder().build()?; // the default
    /// let h = pool.schedule(|| (), Duration::from_secs(3600))?;
    /// h.cancel();
    /// assert_eq!(pool.queue_len(), 0, "uncounted at once");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn remove_on_cancel(mut self, yes: bool) -> Self {
        self.remove_on_cancel = yes;
        self
    }

    /// Whether periodic tasks keep running after [`shutdown`]
    /// (default `false`, as Java).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let pool = ScheduledThreadPool::builder().continue_periodic_after_shutdown(true).build()?;
    /// let flush = pool.schedule_at_fixed_rate(|| (), Duration::ZERO, Duration::from_millis(1))?;
    /// pool.shutdown();
    /// assert!(!flush.wait_timeout(Duration::from_millis(20)), "still flushing");
    /// drop(pool.shutdown_now()); // this one stops it
    /// assert!(flush.wait_timeout(Duration::from_secs(5)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// [`shutdown`]: ScheduledThreadPool::shutdown
    pub fn continue_periodic_after_shutdown(mut self, yes: bool) -> Self {
        self.continue_periodic_after_shutdown = yes;
        self
    }

    /// Whether delayed one-shot tasks still run after [`shutdown`]
    /// (default `true`, as Java). When `false`, shutdown cancels the ones
    /// not yet due; due ones still run.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let pool = ScheduledThreadPool::builder().execute_delayed_after_shutdown(false).build()?;
    /// let reminder = pool.schedule(|| (), Duration::from_secs(3600))?;
    /// pool.shutdown();
    /// assert!(reminder.join().unwrap_err().is_cancelled());
    /// assert!(pool.await_termination(Duration::from_secs(5)), "nothing left to wait for");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// [`shutdown`]: ScheduledThreadPool::shutdown
    pub fn execute_delayed_after_shutdown(mut self, yes: bool) -> Self {
        self.execute_delayed_after_shutdown = yes;
        self
    }

    /// Reads every deadline from `clock` instead of the real clock: virtual
    /// time for tests. See [`ManualClock`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::{ManualClock, ScheduledThreadPool};
    ///
    /// let clock = ManualClock::new();
    /// let pool = ScheduledThreadPool::builder().core_threads(1).clock(clock.clone()).build()?;
    /// let timeout = pool.schedule(|| "order closed", Duration::from_secs(30 * 60))?;
    /// clock.advance(Duration::from_secs(30 * 60)); // no waiting
    /// assert_eq!(timeout.join()?, "order closed");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn clock(mut self, clock: ManualClock) -> Self {
        self.clock = Clock::Manual(clock);
        self
    }

    /// Called with every failed run: a panic caught in a task (with its
    /// payload), or an `Err` a periodic or `execute` body returned (with its
    /// text), whatever the task's [`OnFailure`](crate::OnFailure) policy;
    /// [`TaskFailure::is_panic`] tells them apart. Runs on the worker thread;
    /// a panic inside it is contained.
    ///
    /// It runs after the run's handle completes (as Java's `afterExecute`
    /// runs after the future is done): a `join` or `.await` that saw the
    /// failure may return before the handler has run. To see its effects,
    /// wait for the worker: [`wait_idle`](crate::ScheduledThreadPool::wait_idle)
    /// or, at the end, `await_termination`.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let seen = Arc::new(Mutex::new(Vec::new()));
    /// let s = seen.clone();
    /// let pool = ScheduledThreadPool::builder()
    ///     .core_threads(1)
    ///     .failure_handler(move |f| s.lock().unwrap().push((f.is_panic(), f.message().to_owned())))
    ///     .build()?;
    /// let h = pool.submit(|| panic!("boom"))?;
    /// assert!(h.join().is_err());
    /// let h = pool.at_fixed_rate(Duration::from_millis(1)).start(|| Err("no route"))?;
    /// assert!(h.join().is_err());
    /// pool.shutdown().await_termination(Duration::from_secs(5));
    /// assert_eq!(
    ///     *seen.lock().unwrap(),
    ///     vec![(true, "boom".to_owned()), (false, "no route".to_owned())]
    /// );
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn failure_handler(
        mut self,
        handler: impl Fn(TaskFailure) + Send + Sync + 'static,
    ) -> Self {
        self.hooks.panic = Some(Arc::new(handler));
        self
    }

    /// Called on the worker thread just before each run (Java's
    /// `beforeExecute`). A panic inside it is contained.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let late_runs = Arc::new(AtomicU64::new(0));
    /// let late = late_runs.clone();
    /// let pool = ScheduledThreadPool::builder()
    ///     .core_threads(1)
    ///     .before_execute(move |run| {
    ///         if run.lateness() > Duration::from_secs(1) {
    ///             late.fetch_add(1, Ordering::Relaxed);
    ///         }
    ///     })
    ///     .build()?;
    /// pool.submit(|| ())?.join()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn before_execute(mut self, hook: impl Fn(&RunInfo) + Send + Sync + 'static) -> Self {
        self.hooks.before = Some(Arc::new(hook));
        self
    }

    /// Called on the worker thread just after each run, with the failure's
    /// message if the run failed: it panicked, or its periodic or `execute`
    /// body returned `Err` (Java's `afterExecute`). A panic inside
    /// it is contained. As in Java, it runs after the run's handle has
    /// completed, so a `join` may return first (see
    /// [`failure_handler`](Self::failure_handler)).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let log = Arc::new(Mutex::new(Vec::new()));
    /// let l = log.clone();
    /// let pool = ScheduledThreadPool::builder()
    ///     .core_threads(1)
    ///     .after_execute(move |run, failure| {
    ///         l.lock().unwrap().push((run.kind(), failure.map(str::to_owned)));
    ///     })
    ///     .build()?;
    /// pool.submit(|| ())?.join()?;
    /// pool.execute(|| Err::<(), _>("disk full"))?;
    /// assert!(pool.wait_idle(Duration::from_secs(5)));
    /// assert_eq!(
    ///     *log.lock().unwrap(),
    ///     [("once", None), ("once", Some("disk full".to_owned()))]
    /// );
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn after_execute(
        mut self,
        hook: impl Fn(&RunInfo, Option<&str>) + Send + Sync + 'static,
    ) -> Self {
        self.hooks.after = Some(Arc::new(hook));
        self
    }

    /// A run that starts later than this after its due time (because every
    /// worker was busy) logs a `WARN` event (pool starvation), at most once
    /// a second. Default 100 ms; `Duration::MAX` turns it off.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// // Batch jobs: only a run a minute late is worth a warning.
    /// let pool = ScheduledThreadPool::builder()
    ///     .starvation_threshold(Duration::from_secs(60))
    ///     .build()?;
    /// # drop(pool);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn starvation_threshold(mut self, threshold: Duration) -> Self {
        self.starvation_threshold = threshold;
        self
    }

    /// How late the OS may fire the workers' timed waits, to batch wake-ups
    /// (Linux's "timer slack", 50 µs by default). The pool sets it to 1 µs
    /// on its worker threads, so a task due at `t` starts close to `t`;
    /// `None` keeps the OS default (fewer wake-ups, later starts). Values
    /// above 10 ms are clamped to 10 ms: the slack is added to every timed
    /// wait, so an hour would let a task due in 20 ms start an hour late.
    /// Best effort: where it cannot be set (not Linux, no `/proc`) it is
    /// ignored. On a busy host (a timer over 1 ms late while more threads
    /// are runnable than there are CPUs; Linux) the workers raise it to at
    /// least 50 µs while the loaded spell lasts (10 s after the last such
    /// timer; each worker switches at its next due task), so the OS batches
    /// their wake-ups; see the guide, "Tuning precision against CPU".
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// // Timeouts measured in seconds: let the OS batch wake-ups.
    /// let relaxed = ScheduledThreadPool::builder().timer_slack(Some(Duration::from_millis(5))).build()?;
    /// // Keep whatever the OS does by default.
    /// let os_default = ScheduledThreadPool::builder().timer_slack(None).build()?;
    /// # drop((relaxed, os_default));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn timer_slack(mut self, slack: Option<Duration>) -> Self {
        self.timer_slack = slack.map(|slack| slack.min(MAX_TIMER_SLACK));
        self
    }

    /// The scheduling slice a worker asks the OS for while its pool is in
    /// a loaded spell (Linux 6.12 and later: EEVDF's custom slice,
    /// `sched_setattr`'s `sched_runtime`); 0.1 ms by default, the shortest
    /// Linux accepts. A spell starts when a worker's timer fires more than
    /// 1 ms late while more threads are runnable than there are CPUs, and
    /// ends 10 s after the last such timer (see
    /// [`timer_slack`](Self::timer_slack)); outside one, workers keep the
    /// OS's slice.
    ///
    /// The slice decides whether a worker whose timer fires takes a CPU
    /// from a busy thread at once: a woken thread preempts the running one
    /// only if its slice ends first. With the OS's slice (about 1.5 ms on 2
    /// CPUs) a task's lateness on a host whose CPUs were all busy had a
    /// 99th percentile over 200 µs in 11 of 20 measured runs, most of
    /// those 1–3 ms; with 0.1 ms in a spell, in 1 of 20
    /// (`docs/performance-log.md`, "W4L with a short EEVDF slice"). It
    /// does not change the workers' share of CPU; while it is on, the OS
    /// switches between competing threads more often, a long-running task
    /// body's included. `None` never changes the workers' slice. Values
    /// are clamped to 0.1–100 ms, the range Linux accepts. Best effort: on
    /// other systems, older kernels (which ignore it), a manual clock, and
    /// real-time or idle threads it has no effect.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// // Long CPU-bound jobs on a shared host: keep the OS's slice.
    /// let batch = ScheduledThreadPool::builder().sched_slice(None).build()?;
    /// // A middle ground.
    /// let one_ms = ScheduledThreadPool::builder().sched_slice(Some(Duration::from_millis(1))).build()?;
    /// # drop((batch, one_ms));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn sched_slice(mut self, slice: Option<Duration>) -> Self {
        self.sched_slice = slice.map(|slice| slice.clamp(MIN_SLICE, MAX_SLICE));
        self
    }

    /// How long a worker that finds the queue empty spins, watching for a
    /// submission, before it sleeps. One worker at a time spins; a task
    /// submitted meanwhile reaches it without a system call on either side,
    /// which is what lets one thread feed the pool zero-delay tasks faster
    /// than it could wake a sleeping worker for each. The price is up to
    /// this much CPU each time the queue runs dry. Default 20 µs;
    /// `Duration::ZERO` never spins, neither this spin nor the leader's
    /// spin to a deadline (the leader then sleeps to each deadline with the
    /// OS's timer); values above one second are clamped to one second.
    /// Either spin also stops by itself for 200 ms whenever the cores are
    /// seen taken (a spin descheduled, or a timer 2 ms late), and for 10 s
    /// after a timer over 1 ms late while more threads are runnable than
    /// there are CPUs.
    ///
    /// ```
    /// use std::time::Duration;
    /// // A pool that never spins: its workers sleep as soon as they are idle.
    /// let pool = schedpool::Builder::new().idle_spin(Duration::ZERO).build()?;
    /// let h = pool.schedule(|| "ran", Duration::ZERO)?;
    /// assert_eq!(h.join()?, "ran");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn idle_spin(mut self, spin: Duration) -> Self {
        self.idle_spin = spin.min(MAX_IDLE_SPIN);
        self
    }

    /// How often the pool publishes its metrics' counters and gauges
    /// (feature `metrics`; the metrics are listed in the crate docs,
    /// "Metrics"). Default 1 s; values under 1 ms are raised to 1 ms. The
    /// histograms record every run as it happens, whatever this is. The
    /// pool's [`thread_name`](Self::thread_name) is its metrics' `pool`
    /// label.
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// // Install the recorder (an exporter) first: the pool registers its
    /// // metrics with the recorder installed when it is built.
    /// let pool = ScheduledThreadPool::builder()
    ///     .thread_name("timeouts") // published as pool="timeouts"
    ///     .metrics_interval(Duration::from_millis(250))
    ///     .build()?;
    /// assert_eq!(pool.submit(|| 1)?.join()?, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(feature = "metrics")]
    #[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
    pub fn metrics_interval(mut self, interval: Duration) -> Self {
        self.metrics_interval = interval;
        self
    }

    /// Builds the pool. No worker thread starts until the first submission
    /// (with the `metrics` feature, the pool's metrics sampler thread,
    /// `"{thread_name}-metrics"`, starts here and exits when the pool
    /// terminates).
    ///
    /// # Errors
    ///
    /// A [`BuildError`] if the thread name contains a NUL byte (the OS could
    /// not name the threads), or if more than 32,768 core threads are asked
    /// for (no OS would start them; the pool would fail at its first tasks).
    /// It converts into `std::io::Error` (kind `InvalidInput`), so `?` in a
    /// function returning `io::Result` still works.
    ///
    /// ```
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let err = ScheduledThreadPool::builder().thread_name("bad\0name").build().unwrap_err();
    /// assert!(err.is_invalid_thread_name());
    /// let io: std::io::Error = err.into();
    /// assert_eq!(io.kind(), std::io::ErrorKind::InvalidInput);
    /// ```
    pub fn build(self) -> Result<ScheduledThreadPool, BuildError> {
        if self.thread_name.contains('\0') {
            return Err(BuildError::thread_name());
        }
        if self.core_threads > MAX_THREADS {
            return Err(BuildError::too_many_threads(self.core_threads, MAX_THREADS));
        }
        let config = Config {
            core_threads: self.core_threads,
            thread_name: self.thread_name,
            remove_on_cancel: self.remove_on_cancel,
            continue_periodic_after_shutdown: self.continue_periodic_after_shutdown,
            execute_delayed_after_shutdown: self.execute_delayed_after_shutdown,
            keep_alive: Duration::from_millis(10),
            starvation_threshold: self.starvation_threshold,
            timer_slack: self.timer_slack,
            sched_slice: self.sched_slice,
            idle_spin: self.idle_spin,
            hooks: self.hooks,
        };
        let shared = Shared::new(config, self.clock, worker::run);
        #[cfg(feature = "metrics")]
        crate::pool::sampler::start(&shared, self.metrics_interval);
        Ok(ScheduledThreadPool::from_shared(shared))
    }
}

/// Construction (here, beside the [`Builder`] it uses, so that the pool
/// itself need not know its builder).
impl ScheduledThreadPool {
    /// A pool with `core_threads` worker threads (started lazily) and the
    /// default settings of [`Builder`]. Never panics: more than 32,768
    /// threads (which no OS would start) are clamped to 32,768. For an
    /// error instead, use
    /// `ScheduledThreadPool::builder().core_threads(n).build()`.
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let pool = ScheduledThreadPool::new(4);
    /// assert_eq!(pool.core_threads(), 4);
    /// assert_eq!(pool.pool_size(), 0, "threads start with the first tasks");
    /// ```
    pub fn new(core_threads: usize) -> Self {
        Builder::new()
            .core_threads(core_threads.min(MAX_THREADS))
            .build()
            .expect("the default settings with at most MAX_THREADS threads are valid")
    }

    /// A [`Builder`] to configure a pool.
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let pool = ScheduledThreadPool::builder().core_threads(2).thread_name("sms").build()?;
    /// # drop(pool);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn builder() -> Builder {
        Builder::new()
    }
}
