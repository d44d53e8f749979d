//! POLICY
use crate::base::clock::Nanos;
use std::time::Duration;

/// What a fixed-rate task does about runs it missed because it (or the
/// pool) was late. tokio calls these `Burst`, `Skip` and `Delay`.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedpool::{ManualClock, MissedTicks, ScheduledThreadPool};
///
/// let clock = ManualClock::new();
/// let pool = ScheduledThreadPool::builder().core_threads(1).clock(clock.clone()).build()?;
/// let mut runs = Vec::new();
/// for policy in [MissedTicks::Burst, MissedTicks::Skip, MissedTicks::Delay] {
///     let h = pool.at_fixed_rate(Duration::from_secs(10)).initial_delay(Duration::from_secs(10)).missed_ticks(policy).start(|| ())?;
///     runs.push(h);
/// }
/// clock.advance(Duration::from_secs(35)); // 3 ticks late at once
/// assert!(pool.wait_idle(Duration::from_secs(5)));
/// let counts: Vec<u64> = runs.iter().map(|h| h.run_count()).collect();
/// assert_eq!(counts, [3, 1, 1]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MissedTicks {
    /// Run every missed tick, back to back, until caught up (Java's
    /// behaviour, the default): the n-th run is due at `first + n * period`.
    #[default]
    Burst,
    /// Drop the missed ticks: the next run is the next grid point after now.
    Skip,
    /// Shift the grid: the next run is due one period after the late run
    /// started.
    Delay,
}

/// What a periodic task does when a run fails: it panicked, or its body
/// returned `Err`. Whatever the policy, the failure reaches the handle
/// ([`ScheduledHandle::failure_count`](crate::ScheduledHandle::failure_count),
/// [`ScheduledHandle::last_failure`](crate::ScheduledHandle::last_failure)), the pool's failure handler
/// ([`Builder::failure_handler`](crate::Builder::failure_handler)), an `ERROR`
/// event and the pool's failure counter ([`PoolStats::failed`](crate::PoolStats::failed)).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedpool::{OnFailure, ScheduledThreadPool};
///
/// let pool = ScheduledThreadPool::new(1);
/// let sync = pool
///     .at_fixed_rate(Duration::from_secs(60))
///     .on_failure(OnFailure::Backoff { initial: Duration::from_secs(1), max: Duration::from_secs(30) })
///     .start(|| -> Result<(), String> { Ok(()) })?; // retried after 1, 2, 4 ... 30 s while it fails
/// assert_eq!(OnFailure::default(), OnFailure::Stop, "Java's: a failure ends the task");
/// # sync.cancel();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnFailure {
    /// Run no more; the handle completes with the failure
    /// ([`TaskError::Panicked`](crate::TaskError::Panicked) or
    /// [`TaskError::Failed`](crate::TaskError::Failed)). Java's behaviour, the default.
    #[default]
    Stop,
    /// Keep the schedule as if the run had succeeded.
    Continue,
    /// Retry after `initial`, doubling after each consecutive failure up to
    /// `max`; the first successful run returns to the normal schedule.
    Backoff {
        /// The delay after the first failure.
        initial: Duration,
        /// The longest delay.
        max: Duration,
    },
}

/// What a plain periodic body returns ([`Periodic::start`](crate::Periodic::start),
/// [`schedule_at_fixed_rate`](crate::ScheduledThreadPool::schedule_at_fixed_rate),
/// [`schedule_with_fixed_delay`](crate::ScheduledThreadPool::schedule_with_fixed_delay),
/// [`execute`](crate::ScheduledThreadPool::execute)): `()`, or
/// `Result<(), E>` with `E: Display`, whose `Err` is a failed run, seen
/// exactly as a panic is (the task's [`OnFailure`] policy, the handle's
/// `failure_count` and `last_failure`, the failure handler, the `ERROR`
/// event, [`PoolStats::failed`](crate::PoolStats::failed)), with the error's
/// `Display` text as its message. Any `E: Display` works: your error enums,
/// `std::io::Error`, `Box<dyn Error>`, `anyhow::Error`, `String`.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedpool::{OnFailure, ScheduledThreadPool};
///
/// let pool = ScheduledThreadPool::new(1);
/// let h = pool
///     .at_fixed_rate(Duration::from_millis(1))
///     .on_failure(OnFailure::Continue)
///     .max_runs(2)
///     .start(|| -> Result<(), std::io::Error> {
///         Err(std::io::Error::other("health check: connection refused"))
///     })?;
/// assert_eq!(h.join(), Ok(()), "Continue: the run limit ends it normally");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "a periodic or `execute` body returns `()` or `Result<(), E>` with `E: Display`, not `{Self}`",
    label = "this body returns `{Self}`",
    note = "to report a failure, return `Err(e)`; to steer the next run, use `start_dynamic` / `schedule_dynamic`"
)]
pub trait RunResult {
    /// `None` for a run that succeeded; the failure's text otherwise.
    fn into_failure(self) -> Option<String>;
}

impl RunResult for () {
    #[inline]
    fn into_failure(self) -> Option<String> {
        None
    }
}

impl<E: std::fmt::Display> RunResult for Result<(), E> {
    #[inline]
    fn into_failure(self) -> Option<String> {
        self.err().map(|e| e.to_string())
    }
}

/// What a periodic task's body asks for next, with
/// [`Periodic::start_dynamic`](crate::Periodic::start_dynamic). A body may return `()` (always
/// [`Next::Continue`]), `Option<Duration>` (`Some(d)` is [`Next::After`],
/// `None` is [`Next::Stop`]), `Next` itself, or any of these in a
/// `Result<_, E>` with `E: Display`, whose `Err` is a failed run (see
/// [`RunResult`] and [`OnFailure`]).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedpool::{Next, ScheduledThreadPool};
///
/// let pool = ScheduledThreadPool::new(1);
/// let mut attempts = 0;
/// // Poll a job's status: quickly at first, then less often, then give up.
/// let h = pool.with_fixed_delay(Duration::from_millis(1)).start_dynamic(move || {
///     attempts += 1;
///     match attempts {
///         1..=2 => Next::Continue,                        // every 1 ms
///         3..=4 => Next::After(Duration::from_millis(2)), // then every 2 ms
///         _ => Next::Stop,
///     }
/// })?;
/// assert_eq!(h.join(), Ok(()));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Follow the schedule.
    Continue,
    /// Run next this long after this run ended (the dynamic form).
    After(Duration),
    /// Run no more; the handle completes with `Ok(())`.
    Stop,
}

/// A steering body's return value: see [`Next`] and
/// [`Periodic::start_dynamic`](crate::Periodic::start_dynamic).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedpool::ScheduledThreadPool;
///
/// let pool = ScheduledThreadPool::new(1);
/// let mut left = 3;
/// // Option<Duration> is a RunOutcome: Some(d) runs again after d, None stops.
/// let h = pool.schedule_dynamic(move || {
///     left -= 1;
///     (left > 0).then_some(Duration::from_millis(1))
/// }, Duration::ZERO)?;
/// assert_eq!(h.join(), Ok(()));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "a steering body returns `()`, `Option<Duration>`, `Next`, or one of them in a `Result<_, E>` with `E: Display`, not `{Self}`",
    label = "this body returns `{Self}`"
)]
pub trait RunOutcome {
    /// What the task does next; `Err(text)` for a failed run (the text is
    /// its message, as a panic's).
    fn into_next(self) -> Result<Next, String>;
}

impl RunOutcome for () {
    #[inline]
    fn into_next(self) -> Result<Next, String> {
        Ok(Next::Continue)
    }
}

impl RunOutcome for Option<Duration> {
    #[inline]
    fn into_next(self) -> Result<Next, String> {
        Ok(self.map_or(Next::Stop, Next::After))
    }
}

impl RunOutcome for Next {
    #[inline]
    fn into_next(self) -> Result<Next, String> {
        Ok(self)
    }
}

impl<R: RunOutcome, E: std::fmt::Display> RunOutcome for Result<R, E> {
    #[inline]
    fn into_next(self) -> Result<Next, String> {
        match self {
            Ok(next) => next.into_next(),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// The options of a periodic task, fixed at `start`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Options {
    pub(crate) missed: MissedTicks,
    pub(crate) on_failure: OnFailure,
    pub(crate) max_runs: Option<u64>,
    pub(crate) until: Option<Nanos>,
    pub(crate) jitter: Nanos,
}
