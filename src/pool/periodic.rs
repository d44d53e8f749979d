//! Periodic tasks, the public side: the [`Periodic`] builder and its
//! options (missed ticks, failure policy, run limits, jitter, dynamic
//! delays), and the pieces calendar tasks ([`crate::pool::calendar`]) share
//! with it: the option checks, the plain-body wrapper and the submission.
//! The task body that computes each next run is in [`crate::task::periodic`].
//!
//! # Invariants
//!
//! - Every option is validated in `start`/`start_dynamic`, before anything
//!   is queued: a bad configuration is a `Rejected`, never a task that
//!   misbehaves later.

use std::fmt;
use std::time::{Duration, Instant};

use crate::base::clock::{after, delay_nanos, to_nanos};
use crate::base::error::Rejected;
use crate::pool::executor::ScheduledThreadPool;
use crate::pool::handle::ScheduledHandle;
use crate::task::header::Kind;
use crate::task::new;
use crate::task::policy::{MissedTicks, Next, OnFailure, Options, RunOutcome, RunResult};
use crate::task::ptr::TaskPtr;

/// Builds a periodic task: [`ScheduledThreadPool::at_fixed_rate`] or
/// [`ScheduledThreadPool::with_fixed_delay`], then options, then
/// [`start`](Periodic::start).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedpool::{MissedTicks, OnFailure, ScheduledThreadPool};
///
/// let pool = ScheduledThreadPool::new(1);
/// let h = pool
///     .at_fixed_rate(Duration::from_millis(2))
///     .missed_ticks(MissedTicks::Skip)
///     .on_failure(OnFailure::Continue)
///     .jitter(Duration::from_micros(500))
///     .max_runs(3)
///     .start(|| println!("tick"))?;
/// assert_eq!(h.join(), Ok(()), "completes normally after 3 runs");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "a Periodic does nothing until start() is called"]
pub struct Periodic<'a> {
    pool: &'a ScheduledThreadPool,
    kind: Kind,
    period: Duration,
    initial_delay: Duration,
    options: Options,
    until: Option<Instant>,
    /// The runtime of an async body ([`crate::pool::async_tasks`]).
    #[cfg(feature = "tokio")]
    pub(super) runtime: Option<tokio::runtime::Handle>,
}

impl<'a> Periodic<'a> {
    pub(crate) fn new(pool: &'a ScheduledThreadPool, kind: Kind, period: Duration) -> Self {
        Periodic {
            pool,
            kind,
            period,
            initial_delay: Duration::ZERO,
            options: Options {
                missed: MissedTicks::Burst,
                on_failure: OnFailure::Stop,
                max_runs: None,
                until: None,
                jitter: 0,
            },
            until: None,
            #[cfg(feature = "tokio")]
            runtime: None,
        }
    }

    /// The delay before the first run (default: none).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::{ManualClock, ScheduledThreadPool};
    ///
    /// let clock = ManualClock::new();
    /// let pool = ScheduledThreadPool::builder().core_threads(1).clock(clock.clone()).build()?;
    /// let h = pool.at_fixed_rate(Duration::from_secs(60)).initial_delay(Duration::from_secs(5)).start(|| ())?;
    /// assert_eq!(h.next_run(), Some(clock.now() + Duration::from_secs(5)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn initial_delay(mut self, delay: Duration) -> Self {
        self.initial_delay = delay;
        self
    }

    /// What a fixed-rate task does about missed runs (default
    /// [`MissedTicks::Burst`]). Fixed-delay tasks never miss a run.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::{ManualClock, MissedTicks, ScheduledThreadPool};
    ///
    /// let clock = ManualClock::new();
    /// let pool = ScheduledThreadPool::builder().core_threads(1).clock(clock.clone()).build()?;
    /// let h = pool
    ///     .at_fixed_rate(Duration::from_secs(10))
    ///     .initial_delay(Duration::from_secs(10))
    ///     .missed_ticks(MissedTicks::Skip)
    ///     .start(|| ())?;
    /// clock.advance(Duration::from_secs(50)); // a 50 s stall: 5 runs were due
    /// assert!(pool.wait_idle(Duration::from_secs(5)));
    /// assert_eq!(h.run_count(), 1, "Skip runs once; Burst would run 5 times");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn missed_ticks(mut self, policy: MissedTicks) -> Self {
        self.options.missed = policy;
        self
    }

    /// What happens when a run fails: it panics, or the body returns `Err`
    /// (default [`OnFailure::Stop`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::{ManualClock, OnFailure, ScheduledThreadPool};
    ///
    /// let clock = ManualClock::new();
    /// let pool = ScheduledThreadPool::builder().core_threads(1).clock(clock.clone()).build()?;
    /// let h = pool
    ///     .with_fixed_delay(Duration::from_secs(60))
    ///     .on_failure(OnFailure::Continue) // a bad run does not end it
    ///     .start(|| Err::<(), _>("upstream down"))?;
    /// assert!(pool.wait_idle(Duration::from_secs(5)));
    /// assert_eq!(h.failure_count(), 1);
    /// assert!(!h.is_done(), "still scheduled");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn on_failure(mut self, policy: OnFailure) -> Self {
        self.options.on_failure = policy;
        self
    }

    /// Run at most `n` times, then complete the handle with `Ok(())`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// let retry = pool.with_fixed_delay(Duration::from_millis(1)).max_runs(3).start(|| ())?;
    /// retry.join()?;
    /// assert!(pool.wait_idle(Duration::from_secs(5))); // the last run is counted
    /// assert_eq!(pool.completed_task_count(), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn max_runs(mut self, n: u64) -> Self {
        self.options.max_runs = Some(n);
        self
    }

    /// Run no run due after `deadline` (by the pool's clock); the handle then
    /// completes with `Ok(())`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::{ManualClock, ScheduledThreadPool};
    ///
    /// let clock = ManualClock::new();
    /// let pool = ScheduledThreadPool::builder().core_threads(1).clock(clock.clone()).build()?;
    /// let h = pool
    ///     .at_fixed_rate(Duration::from_secs(10))
    ///     .until(clock.now() + Duration::from_secs(25))
    ///     .start(|| ())?;
    /// for _ in 0..3 {
    ///     assert!(pool.wait_idle(Duration::from_secs(5)));
    ///     clock.advance(Duration::from_secs(10));
    /// }
    /// assert_eq!(h.join(), Ok(()), "ran at 0, 10 and 20 s; 30 s is past until");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn until(mut self, deadline: Instant) -> Self {
        self.until = Some(deadline);
        self
    }

    /// Spread each run (the first included) by a random delay in
    /// `[0, max)`, so many tasks with one period do not fire at one instant.
    /// The grid itself does not drift.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::{ManualClock, ScheduledThreadPool};
    ///
    /// let clock = ManualClock::new();
    /// let pool = ScheduledThreadPool::builder().core_threads(1).clock(clock.clone()).build()?;
    /// // 1,000 clients polling every minute do not all start in the same millisecond.
    /// let poll = pool
    ///     .at_fixed_rate(Duration::from_secs(60))
    ///     .initial_delay(Duration::from_secs(60))
    ///     .jitter(Duration::from_secs(5))
    ///     .start(|| ())?;
    /// let first = poll.delay();
    /// assert!(first >= Duration::from_secs(60) && first < Duration::from_secs(65));
    /// assert!(pool.at_fixed_rate(Duration::from_secs(1)).jitter(Duration::from_secs(2)).start(|| ()).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn jitter(mut self, max: Duration) -> Self {
        self.options.jitter = delay_nanos(max);
        self
    }

    /// Starts the task with a plain body, which returns `()` or
    /// `Result<(), E>` with `E: Display`. An `Err` is a failed run, seen
    /// exactly as a panic is (see [`RunResult`] and [`OnFailure`]). A
    /// closure using `?` needs its return type spelled out, as in
    /// `start(|| -> Result<(), MyError> { check()?; Ok(()) })`.
    ///
    /// # Errors
    ///
    /// [`Rejected`] for a zero period, `max_runs(0)`, an `until` before the
    /// first run, jitter larger than the period, a backoff with a zero
    /// initial delay or a maximum below it; or once shutdown has begun.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// #[derive(Debug)]
    /// struct Unreachable;
    /// impl std::fmt::Display for Unreachable {
    ///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    ///         f.write_str("upstream unreachable")
    ///     }
    /// }
    /// fn ping() -> Result<(), Unreachable> { Err(Unreachable) }
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// let h = pool.at_fixed_rate(Duration::from_millis(1)).start(|| -> Result<(), Unreachable> {
    ///     ping()?;
    ///     Ok(())
    /// })?;
    /// // The default OnFailure::Stop ends the task at its first Err.
    /// assert_eq!(h.join().unwrap_err().failure_message(), Some("upstream unreachable"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use = "the handle is how to cancel or join the task; dropping it detaches the task (it still runs)"]
    pub fn start<F, R>(self, body: F) -> Result<ScheduledHandle<()>, Rejected>
    where
        F: FnMut() -> R + Send + 'static,
        R: RunResult + 'static,
    {
        self.start_dynamic(steering(body))
    }

    /// Starts the task with a body that steers it: it returns `()`
    /// (follow the schedule), `Option<Duration>` (`Some(d)`: next run `d`
    /// after this one ends; `None`: stop) or a [`Next`], or one of these in
    /// a `Result<_, E>` (`E: Display`) whose `Err` is a failed run, handled
    /// by the [`OnFailure`] policy.
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::{Next, ScheduledThreadPool};
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// let mut polls = 0;
    /// let h = pool.at_fixed_rate(Duration::from_millis(1)).start_dynamic(move || {
    ///     polls += 1;
    ///     if polls == 3 { Next::Stop } else { Next::Continue }
    /// })?;
    /// assert_eq!(h.join(), Ok(()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use = "the handle is how to cancel or join the task; dropping it detaches the task (it still runs)"]
    pub fn start_dynamic<F, R>(self, body: F) -> Result<ScheduledHandle<()>, Rejected>
    where
        F: FnMut() -> R + Send + 'static,
        R: RunOutcome + 'static,
    {
        if self.period.is_zero() {
            return Err(Rejected::invalid(match self.kind {
                Kind::FixedRate => "period must be greater than zero",
                _ => "fixed delay must be greater than zero",
            }));
        }
        let mut options = self.options;
        check_options(&options)?;
        if options.jitter > delay_nanos(self.period) {
            return Err(Rejected::invalid("jitter must not exceed the period"));
        }
        let shared = self.pool.shared();
        let seq = shared.next_seq();
        let now = shared.clock.now();
        let nominal = after(now, self.initial_delay);
        if let Some(until) = self.until {
            let until = to_nanos(until);
            if until < nominal {
                return Err(Rejected::invalid("until is before the first run"));
            }
            options.until = Some(until);
        }
        let period = delay_nanos(self.period);
        let task = new::periodic(seq, self.kind, period, nominal, options, body);
        submit(shared, task, now)
    }
}

/// The checks every periodic or calendar task's options pass before it is
/// queued: a run limit of at least one, a sane backoff.
pub(super) fn check_options(options: &Options) -> Result<(), Rejected> {
    if options.max_runs == Some(0) {
        return Err(Rejected::invalid("max_runs must be at least 1"));
    }
    if let OnFailure::Backoff { initial, max } = options.on_failure {
        if initial.is_zero() || max < initial {
            return Err(Rejected::invalid("backoff needs 0 < initial <= max"));
        }
    }
    Ok(())
}

/// A plain body (returning `()` or `Result<(), E>`) as a steering one: it
/// follows the schedule, and an `Err` is a failed run.
pub(super) fn steering<F, R>(mut body: F) -> impl FnMut() -> Result<Next, Failure> + Send + 'static
where
    F: FnMut() -> R + Send + 'static,
    R: RunResult + 'static,
{
    move || match body().into_failure() {
        None => Ok(Next::Continue),
        Some(text) => Err(Failure(text)),
    }
}

/// Queues a periodic or calendar task (built by [`crate::task::new`]), due
/// at its header's deadline, and hands back its handle.
pub(super) fn submit(
    shared: &std::sync::Arc<crate::pool::shared::Shared>,
    task: TaskPtr,
    now: crate::base::clock::Nanos,
) -> Result<ScheduledHandle<()>, Rejected> {
    shared.enqueue(task.clone(), now)?;
    Ok(ScheduledHandle::new(task, std::sync::Arc::clone(shared)))
}

impl fmt::Debug for Periodic<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Periodic")
            .field("kind", &self.kind.name())
            .field("period", &self.period)
            .field("initial_delay", &self.initial_delay)
            .field("options", &self.options)
            .finish()
    }
}

/// Periodic tasks (here, beside [`Periodic`], which they build).
impl ScheduledThreadPool {
    /// Runs `task` first after `initial_delay`, then every `period`: the
    /// n-th run is due at `first + n * period`. A run that starts late is
    /// followed at once by the runs that were due (catch-up, as Java); the
    /// task never runs concurrently with itself. For other missed-tick and
    /// panic policies, run limits and jitter, use
    /// [`at_fixed_rate`](Self::at_fixed_rate).
    ///
    /// The handle completes only when the task is cancelled, fails, or is
    /// dropped by a shutdown. The body returns `()` or `Result<(), E>`
    /// (`E: Display`); an `Err` is a failed run, exactly as a panic is: the
    /// task stops (Java's policy; see [`OnFailure`] for others) and the
    /// handle completes with [`TaskError::Failed`](crate::TaskError::Failed).
    ///
    /// # Errors
    ///
    /// [`Rejected`] if `period` is zero, or once shutdown has begun.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU32, Ordering};
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// let ticks = Arc::new(AtomicU32::new(0));
    /// let t = ticks.clone();
    /// let h = pool.schedule_at_fixed_rate(move || { t.fetch_add(1, Ordering::SeqCst); },
    ///                                     Duration::ZERO, Duration::from_millis(1))?;
    /// while ticks.load(Ordering::SeqCst) < 3 { std::thread::yield_now(); }
    /// assert!(h.cancel());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use = "the handle is how to cancel or join the task; dropping it detaches the task (it still runs)"]
    pub fn schedule_at_fixed_rate<F, R>(
        &self,
        task: F,
        initial_delay: Duration,
        period: Duration,
    ) -> Result<ScheduledHandle<()>, Rejected>
    where
        F: FnMut() -> R + Send + 'static,
        R: RunResult + 'static,
    {
        self.at_fixed_rate(period)
            .initial_delay(initial_delay)
            .start(task)
    }

    /// Runs `task` first after `initial_delay`, then again `delay` after
    /// each run ends. The handle completes only when the task is cancelled,
    /// fails (panics or returns `Err`: the task stops, as for
    /// [`schedule_at_fixed_rate`](Self::schedule_at_fixed_rate)), or is
    /// dropped by a shutdown. For more options use
    /// [`with_fixed_delay`](Self::with_fixed_delay).
    ///
    /// # Errors
    ///
    /// [`Rejected`] if `delay` is zero, or once shutdown has begun.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// // Sweep expired sessions; the next sweep starts 30 s after this one ends,
    /// // however long it took.
    /// let sweeper = pool.schedule_with_fixed_delay(|| { /* sweep */ }, Duration::ZERO, Duration::from_secs(30))?;
    /// assert_eq!(sweeper.period(), Some(Duration::from_secs(30)));
    /// assert!(pool.schedule_with_fixed_delay(|| (), Duration::ZERO, Duration::ZERO).unwrap_err().is_invalid_argument());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use = "the handle is how to cancel or join the task; dropping it detaches the task (it still runs)"]
    pub fn schedule_with_fixed_delay<F, R>(
        &self,
        task: F,
        initial_delay: Duration,
        delay: Duration,
    ) -> Result<ScheduledHandle<()>, Rejected>
    where
        F: FnMut() -> R + Send + 'static,
        R: RunResult + 'static,
    {
        self.with_fixed_delay(delay)
            .initial_delay(initial_delay)
            .start(task)
    }

    /// A fixed-rate periodic task with options: see [`Periodic`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// let h = pool.at_fixed_rate(Duration::from_millis(1)).max_runs(2).start(|| ())?;
    /// assert_eq!(h.join(), Ok(()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn at_fixed_rate(&self, period: Duration) -> Periodic<'_> {
        Periodic::new(self, Kind::FixedRate, period)
    }

    /// A fixed-delay periodic task with options: see [`Periodic`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::{OnFailure, ScheduledThreadPool};
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// let h = pool
    ///     .with_fixed_delay(Duration::from_secs(30))
    ///     .initial_delay(Duration::from_secs(1))
    ///     .on_failure(OnFailure::Backoff { initial: Duration::from_secs(1), max: Duration::from_secs(60) })
    ///     .start(|| ())?;
    /// # h.cancel();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_fixed_delay(&self, delay: Duration) -> Periodic<'_> {
        Periodic::new(self, Kind::FixedDelay, delay)
    }

    /// Runs `task` after `initial_delay`, then again after whatever delay
    /// each run returns; `None` stops it (its handle completes with
    /// `Ok(())`). A dynamic-delay task: polling with backoff, retries,
    /// "next check in ...".
    ///
    /// # Errors
    ///
    /// [`Rejected`] once shutdown has begun.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// let mut wait = Duration::from_millis(1);
    /// let h = pool.schedule_dynamic(move || {
    ///     wait *= 2; // exponential backoff
    ///     (wait < Duration::from_millis(16)).then_some(wait)
    /// }, Duration::ZERO)?;
    /// assert_eq!(h.join(), Ok(()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use = "the handle is how to cancel or join the task; dropping it detaches the task (it still runs)"]
    pub fn schedule_dynamic<F, R>(
        &self,
        task: F,
        initial_delay: Duration,
    ) -> Result<ScheduledHandle<()>, Rejected>
    where
        F: FnMut() -> R + Send + 'static,
        R: RunOutcome + 'static,
    {
        let fallback = initial_delay.max(Duration::from_nanos(1));
        self.with_fixed_delay(fallback)
            .initial_delay(initial_delay)
            .start_dynamic(task)
    }
}

/// A plain body's failure text, as a steering outcome (for `start`).
pub(super) struct Failure(String);

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
