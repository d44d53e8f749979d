//! Periodic tasks, the public side: the [`Periodic`] builder and its
//! options (missed ticks, panic policy, run limits, jitter, dynamic
//! delays). The task body that computes each next run is in
//! [`crate::periodic_task`].
//!
//! # Invariants
//!
//! - Every option is validated in `start`/`start_dynamic`, before anything
//!   is queued: a bad configuration is a `Rejected`, never a task that
//!   misbehaves later.

use std::fmt;
use std::time::{Duration, Instant};

use crate::clock::{after, delay_nanos, to_nanos, Nanos};
use crate::error::Rejected;
use crate::handle::ScheduledHandle;
use crate::periodic_task::{Control, PeriodicTask};
use crate::pool::ScheduledThreadPool;
use crate::task::{Header, Kind};
use crate::task_ptr::TaskPtr;

/// What a fixed-rate task does about runs it missed because it (or the
/// pool) was late. tokio calls these `Burst`, `Skip` and `Delay`.
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

/// What a periodic task does when a run panics. Whatever the policy, the
/// panic reaches the handle ([`ScheduledHandle::failure_count`],
/// [`ScheduledHandle::last_failure`]), the pool's panic handler, an `ERROR`
/// event and the pool's failure counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnPanic {
    /// Run no more; the handle completes with the panic (Java's behaviour,
    /// the default).
    #[default]
    Stop,
    /// Keep the schedule as if the run had succeeded.
    Continue,
    /// Retry after `initial`, doubling after each consecutive panic up to
    /// `max`; the first successful run returns to the normal schedule.
    Backoff {
        /// The delay after the first panic.
        initial: Duration,
        /// The longest delay.
        max: Duration,
    },
}

/// What a periodic task's body asks for next, with
/// [`Periodic::start_dynamic`]. A body may return `()` (always
/// [`Next::Continue`]), `Option<Duration>` (`Some(d)` is [`Next::After`],
/// `None` is [`Next::Stop`]), or `Next` itself.
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
/// [`Periodic::start_dynamic`].
pub trait RunOutcome {
    /// What the task does next.
    fn into_next(self) -> Next;
}

impl RunOutcome for () {
    fn into_next(self) -> Next {
        Next::Continue
    }
}

impl RunOutcome for Option<Duration> {
    fn into_next(self) -> Next {
        self.map_or(Next::Stop, Next::After)
    }
}

impl RunOutcome for Next {
    fn into_next(self) -> Next {
        self
    }
}

/// The options of a periodic task, fixed at `start`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Options {
    pub(crate) missed: MissedTicks,
    pub(crate) on_panic: OnPanic,
    pub(crate) max_runs: Option<u64>,
    pub(crate) until: Option<Nanos>,
    pub(crate) jitter: Nanos,
}

/// Builds a periodic task: [`ScheduledThreadPool::at_fixed_rate`] or
/// [`ScheduledThreadPool::with_fixed_delay`], then options, then
/// [`start`](Periodic::start).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedpool::{MissedTicks, OnPanic, ScheduledThreadPool};
///
/// let pool = ScheduledThreadPool::new(1);
/// let h = pool
///     .at_fixed_rate(Duration::from_millis(2))
///     .missed_ticks(MissedTicks::Skip)
///     .on_panic(OnPanic::Continue)
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
                on_panic: OnPanic::Stop,
                max_runs: None,
                until: None,
                jitter: 0,
            },
            until: None,
        }
    }

    /// The delay before the first run (default: none).
    pub fn initial_delay(mut self, delay: Duration) -> Self {
        self.initial_delay = delay;
        self
    }

    /// What a fixed-rate task does about missed runs (default
    /// [`MissedTicks::Burst`]). Fixed-delay tasks never miss a run.
    pub fn missed_ticks(mut self, policy: MissedTicks) -> Self {
        self.options.missed = policy;
        self
    }

    /// What happens when a run panics (default [`OnPanic::Stop`]).
    pub fn on_panic(mut self, policy: OnPanic) -> Self {
        self.options.on_panic = policy;
        self
    }

    /// Run at most `n` times, then complete the handle with `Ok(())`.
    pub fn max_runs(mut self, n: u64) -> Self {
        self.options.max_runs = Some(n);
        self
    }

    /// Run no run due after `deadline` (by the pool's clock); the handle then
    /// completes with `Ok(())`.
    pub fn until(mut self, deadline: Instant) -> Self {
        self.until = Some(deadline);
        self
    }

    /// Spread each run (the first included) by a random delay in
    /// `[0, max)`, so many tasks with one period do not fire at one instant.
    /// The grid itself does not drift.
    pub fn jitter(mut self, max: Duration) -> Self {
        self.options.jitter = delay_nanos(max);
        self
    }

    /// Starts the task with a plain body.
    ///
    /// # Errors
    ///
    /// [`Rejected`] for a zero period, `max_runs(0)`, an `until` before the
    /// first run, jitter larger than the period, a backoff with a zero
    /// initial delay or a maximum below it; or once shutdown has begun.
    pub fn start<F>(self, mut body: F) -> Result<ScheduledHandle<()>, Rejected>
    where
        F: FnMut() + Send + 'static,
    {
        self.start_dynamic(move || {
            body();
            Next::Continue
        })
    }

    /// Starts the task with a body that steers it: it returns `()`
    /// (follow the schedule), `Option<Duration>` (`Some(d)`: next run `d`
    /// after this one ends; `None`: stop) or a [`Next`].
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
        if options.max_runs == Some(0) {
            return Err(Rejected::invalid("max_runs must be at least 1"));
        }
        if options.jitter > delay_nanos(self.period) {
            return Err(Rejected::invalid("jitter must not exceed the period"));
        }
        if let OnPanic::Backoff { initial, max } = options.on_panic {
            if initial.is_zero() || max < initial {
                return Err(Rejected::invalid("backoff needs 0 < initial <= max"));
            }
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
        let control = Control::new(delay_nanos(self.period), options, nominal, seq);
        let deadline = nominal.saturating_add(control.jitter());
        let task = TaskPtr::new(PeriodicTask::new(
            Header::new(seq, deadline, self.kind),
            body,
            control,
        ));
        shared.enqueue(task.clone(), now)?;
        Ok(ScheduledHandle::new(task, std::sync::Arc::clone(shared)))
    }
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
