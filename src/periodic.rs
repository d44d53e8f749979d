//! Periodic tasks: the [`Periodic`] builder and its options (missed ticks,
//! panic policy, run limits, jitter, dynamic delays), and the task body
//! that computes each next run.
//!
//! # Invariants
//!
//! - `nominal` is the grid point of the next run, without jitter; the
//!   header's deadline is `nominal + jitter`. Fixed-rate grids advance from
//!   `nominal`, so jitter never accumulates.
//! - Only the runner (the thread that won `SCHEDULED -> RUNNING`) or a
//!   holder of the pool lock while the task is out of the heap (pause,
//!   resume, reschedule) writes `nominal` and the deadline.
//! - A run that ends the task (limit reached, `Next::Stop`, `until` passed,
//!   a panic under [`OnPanic::Stop`]) completes the handle with `Ok(())` or
//!   the panic; never both.

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use crate::clock::{after, delay_nanos, to_nanos, Clock, Nanos};
use crate::completion::Completion;
use crate::error::{drop_quietly, Rejected, TaskError};
use crate::handle::ScheduledHandle;
use crate::pool::ScheduledThreadPool;
use crate::sync::{AtomicU64, Mutex, Ordering};
use crate::task::{Caught, EndOfRun, Header, Job, Kind, Ran, TaskRef};

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
        let task = std::sync::Arc::new(PeriodicTask {
            header: Header::new(seq, deadline, self.kind),
            body: Mutex::new(Some(body)),
            completion: Completion::new(),
            control,
        });
        shared.enqueue(task.clone() as std::sync::Arc<dyn Job>, now)?;
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

/// The non-generic state of a periodic task.
pub(crate) struct Control {
    /// The period (fixed rate) or delay (fixed delay), in nanoseconds.
    period: AtomicU64,
    options: Options,
    /// The grid point of the next run (without jitter).
    nominal: AtomicU64,
    /// The next grid point a finished run computed, until `end_run` applies it.
    pending: AtomicU64,
    runs: AtomicU64,
    failures: AtomicU64,
    consecutive_failures: AtomicU64,
    last_failure: Mutex<Option<String>>,
    rng: AtomicU64,
}

impl Control {
    fn new(period: Nanos, options: Options, nominal: Nanos, seq: u64) -> Self {
        Control {
            period: AtomicU64::new(period),
            options,
            nominal: AtomicU64::new(nominal),
            pending: AtomicU64::new(nominal),
            runs: AtomicU64::new(0),
            failures: AtomicU64::new(0),
            consecutive_failures: AtomicU64::new(0),
            last_failure: Mutex::new(None),
            rng: AtomicU64::new((seq ^ nominal).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1),
        }
    }

    pub(crate) fn runs(&self) -> u64 {
        self.runs.load(Ordering::Acquire)
    }

    pub(crate) fn failures(&self) -> u64 {
        self.failures.load(Ordering::Acquire)
    }

    pub(crate) fn last_failure(&self) -> Option<String> {
        self.last_failure.lock().clone()
    }

    pub(crate) fn period(&self) -> Nanos {
        self.period.load(Ordering::Acquire)
    }

    /// A random delay in `[0, jitter)` (xorshift64*).
    fn jitter(&self) -> Nanos {
        if self.options.jitter == 0 {
            return 0;
        }
        let mut x = self.rng.load(Ordering::Relaxed);
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng.store(x, Ordering::Relaxed);
        x.wrapping_mul(0x2545_F491_4F6C_DD1D) % self.options.jitter
    }

    /// Sets the next grid point and returns the deadline (with jitter).
    fn schedule_at(&self, nominal: Nanos) -> Nanos {
        self.nominal.store(nominal, Ordering::Release);
        nominal.saturating_add(self.jitter())
    }

    /// Swaps in a new period; returns the old one. A running task uses it
    /// when its run ends; a paused one when it resumes.
    pub(crate) fn swap_period(&self, period: Nanos) -> Nanos {
        self.period.swap(period, Ordering::AcqRel)
    }

    /// For a task waiting in the queue after a period change: re-bases its
    /// pending run on the new period and returns the new deadline.
    pub(crate) fn rebase(&self, old: Nanos, new: Nanos, now: Nanos) -> Nanos {
        let nominal = self.nominal.load(Ordering::Acquire);
        let next = if self.runs() == 0 {
            nominal // still waiting out the initial delay, which is not a period
        } else {
            nominal.saturating_sub(old).saturating_add(new).max(now)
        };
        self.schedule_at(next)
    }

    /// Where a resumed task's next run goes: missed runs are not replayed.
    pub(crate) fn resume_at(&self, kind: Kind, now: Nanos) -> Nanos {
        let nominal = self.nominal.load(Ordering::Acquire);
        let period = self.period();
        let next = match kind {
            Kind::FixedRate if nominal < now => {
                // The next grid point at or after now.
                nominal.saturating_add((now - nominal).div_ceil(period).saturating_mul(period))
            }
            Kind::FixedRate => nominal,
            _ => nominal.max(now),
        };
        self.schedule_at(next)
    }

    /// The next grid point after a run that started at `started` and ended
    /// at `now`, by the cadence and missed-tick policy.
    fn next_nominal(&self, kind: Kind, started: Nanos, now: impl Fn() -> Nanos) -> Nanos {
        let period = self.period();
        let nominal = self.nominal.load(Ordering::Acquire);
        match kind {
            Kind::FixedRate => {
                let next = nominal.saturating_add(period);
                match self.options.missed {
                    MissedTicks::Burst => next,
                    MissedTicks::Skip => {
                        let now = now();
                        if next <= now {
                            let missed = (now - nominal) / period + 1;
                            nominal.saturating_add(missed.saturating_mul(period))
                        } else {
                            next
                        }
                    }
                    MissedTicks::Delay => next.max(started.saturating_add(period)),
                }
            }
            _ => now().saturating_add(period),
        }
    }

    fn backoff(&self, now: Nanos) -> Option<Nanos> {
        let OnPanic::Backoff { initial, max } = self.options.on_panic else {
            return None;
        };
        let n = self
            .consecutive_failures
            .load(Ordering::Acquire)
            .clamp(1, 63)
            - 1;
        let delay = initial.checked_mul(1 << n.min(31)).unwrap_or(max).min(max);
        Some(now.saturating_add(delay_nanos(delay)))
    }
}

/// A fixed-rate or fixed-delay task.
pub(crate) struct PeriodicTask<F> {
    header: Header,
    body: Mutex<Option<F>>,
    completion: Completion<()>,
    control: Control,
}

impl<F, R> Job for PeriodicTask<F>
where
    F: FnMut() -> R + Send + 'static,
    R: RunOutcome + 'static,
{
    fn header(&self) -> &Header {
        &self.header
    }

    fn control(&self) -> Option<&Control> {
        Some(&self.control)
    }

    fn runs(&self) -> u64 {
        self.control.runs()
    }

    fn run(&self, clock: &Clock, started: Nanos) -> Ran {
        let c = &self.control;
        let body = self.body.lock().take();
        let Some(mut body) = body else {
            return Ran::DONE;
        };
        // `into_next` is user code too (`RunOutcome` is a public trait): it
        // runs inside the same catch, and its panic counts as the run's.
        let result = catch_unwind(AssertUnwindSafe(|| body().into_next()));
        // The end of the run, read only when a policy needs it (fixed rate
        // with Burst, the default, never does).
        let ended = std::cell::OnceCell::new();
        let now = || *ended.get_or_init(|| clock.now());
        let runs = c.runs.fetch_add(1, Ordering::AcqRel) + 1;
        let (next, panic) = match result {
            Ok(next) => {
                c.consecutive_failures.store(0, Ordering::Release);
                match next {
                    Next::Continue => (Some(c.next_nominal(self.header.kind, started, now)), None),
                    Next::After(delay) => (Some(after(now(), delay)), None),
                    Next::Stop => (None, None),
                }
            }
            Err(payload) => {
                let caught = Caught::new(payload);
                c.failures.fetch_add(1, Ordering::AcqRel);
                c.consecutive_failures.fetch_add(1, Ordering::AcqRel);
                *c.last_failure.lock() = Some(caught.message.clone());
                let next = match c.options.on_panic {
                    OnPanic::Stop => None,
                    OnPanic::Continue => Some(c.next_nominal(self.header.kind, started, now)),
                    OnPanic::Backoff { .. } => c.backoff(now()),
                };
                if next.is_none() {
                    drop_quietly(body);
                    if self.header.finish() {
                        self.completion
                            .complete(Err(TaskError::Panicked(caught.message.clone())));
                    }
                    return Ran {
                        again: false,
                        panic: Some(caught),
                    };
                }
                (next, Some(caught))
            }
        };
        let limit_reached = c.options.max_runs.is_some_and(|max| runs >= max);
        let past_until = |n: Nanos| c.options.until.is_some_and(|until| n > until);
        let next = next.filter(|&n| !limit_reached && !past_until(n));
        let Some(next) = next else {
            // The task is over, normally.
            drop_quietly(body);
            if self.header.finish() {
                self.completion.complete(Ok(()));
            }
            return Ran {
                again: false,
                panic,
            };
        };
        // Still RUNNING: the worker ends the run under the pool lock, with
        // the push (`end_run`), so the task is never SCHEDULED outside the
        // queue.
        c.pending.store(next, Ordering::Release);
        *self.body.lock() = Some(body);
        Ran { again: true, panic }
    }

    fn end_run(&self, now: Nanos) -> EndOfRun {
        let c = &self.control;
        let next = c.pending.load(Ordering::Acquire);
        let end = self.header.end_run(|triggered| {
            let deadline = c.schedule_at(next);
            self.header
                .set_deadline(if triggered { now } else { deadline });
        });
        if end == EndOfRun::Paused {
            // Paused at the end of a run: resume continues from the next
            // grid point, not the one that just ran.
            c.nominal.store(next, Ordering::Release);
        }
        end
    }

    fn cancelled(&self) {
        self.completion.complete(Err(TaskError::Cancelled));
        let body = self.body.lock().take();
        drop_quietly(body);
    }
}

impl<F, R> TaskRef<()> for PeriodicTask<F>
where
    F: FnMut() -> R + Send + 'static,
    R: RunOutcome + 'static,
{
    fn completion(&self) -> &Completion<()> {
        &self.completion
    }
}
