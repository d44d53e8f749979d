//! A periodic task's body and its next-run arithmetic: [`Control`] (the
//! period, options, grid point and counters) and [`PeriodicTask`].
//!
//! # Invariants
//!
//! - `nominal` is the grid point of the next run, without jitter; the
//!   header's deadline is `nominal + jitter`. Fixed-rate grids advance from
//!   `nominal`, so jitter never accumulates.
//! - Only the runner (the thread that won `SCHEDULED -> RUNNING`) or a
//!   holder of the pool lock while the task is out of the heap (pause,
//!   resume, reschedule) writes `nominal` and the deadline.
//! - A run leaves the task `RUNNING`; the worker applies the computed next
//!   run (`pending`) in [`Job::end_run`] under the pool lock, right before
//!   the push.
//! - A run that ends the task (limit reached, `Next::Stop`, `until` passed,
//!   a panic under [`OnPanic::Stop`]) completes the handle with `Ok(())` or
//!   the panic; never both.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use crate::clock::{after, delay_nanos, Clock, Nanos};
use crate::completion::Completion;
use crate::error::{drop_quietly, TaskError};
use crate::periodic::{MissedTicks, Next, OnPanic, Options, RunOutcome};
use crate::sync::{AtomicU64, Mutex, Ordering};
use crate::task::{give_cell, Caught, EndOfRun, Header, Job, Kind, Ran};

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
    pub(crate) fn new(period: Nanos, options: Options, nominal: Nanos, seq: u64) -> Self {
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
    pub(crate) fn jitter(&self) -> Nanos {
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

    /// For a task waiting in the queue (or paused) after a period change:
    /// re-bases its pending run on the new period, one new period after the
    /// previous grid point, and returns the new deadline. The grid keeps its
    /// anchor: a re-based point already past stays the grid point (so the
    /// missed-tick policy sees a late run, and `Burst` catches up the new
    /// grid's passed points); only the deadline is clamped to now.
    pub(crate) fn rebase(&self, old: Nanos, new: Nanos, now: Nanos) -> Nanos {
        let nominal = self.nominal.load(Ordering::Acquire);
        let next = if self.runs() == 0 {
            nominal // still waiting out the initial delay, which is not a period
        } else {
            nominal.saturating_sub(old).saturating_add(new)
        };
        self.schedule_at(next).max(now)
    }

    /// Where a resumed task's next run goes: missed runs are not replayed.
    /// Fixed rate: the next grid point at or after now. Fixed delay: now,
    /// whatever its old next run was; the delay then counts from that run.
    pub(crate) fn resume_at(&self, kind: Kind, now: Nanos) -> Nanos {
        let nominal = self.nominal.load(Ordering::Acquire);
        let period = self.period();
        let next = match kind {
            Kind::FixedRate if nominal < now => {
                // The next grid point at or after now.
                nominal.saturating_add((now - nominal).div_ceil(period).saturating_mul(period))
            }
            Kind::FixedRate => nominal,
            _ => now,
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
#[repr(C)]
pub(crate) struct PeriodicTask<F> {
    header: Header,
    body: Mutex<Option<F>>,
    /// Shared with handles (periodic tasks are few: the cell is eager).
    completion: Arc<Completion<()>>,
    control: Control,
}

impl<F> PeriodicTask<F> {
    pub(crate) fn new(header: Header, body: F, control: Control) -> Self {
        PeriodicTask {
            header,
            body: Mutex::new(Some(body)),
            completion: Arc::new(Completion::new()),
            control,
        }
    }
}

impl<F, R> Job for PeriodicTask<F>
where
    F: FnMut() -> R + Send + 'static,
    R: RunOutcome + 'static,
{
    fn header(&self) -> &Header {
        &self.header
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn result_cell(&self, out: &mut dyn std::any::Any) {
        give_cell(out, || Arc::clone(&self.completion));
    }

    fn control(&self) -> Option<&Control> {
        Some(&self.control)
    }

    fn runs(&self) -> u64 {
        self.control.runs()
    }

    fn run(&self, clock: &Clock, started: Nanos, _watched: bool) -> Ran {
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
                    Next::Continue => {
                        (Some(c.next_nominal(self.header.kind(), started, now)), None)
                    }
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
                    OnPanic::Continue => Some(c.next_nominal(self.header.kind(), started, now)),
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
