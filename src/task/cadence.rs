//! A periodic task's cadence: its period (fixed rate or fixed delay) or a
//! calendar [`Plan`], its options, grid point and counters, and the
//! next-run arithmetic.
//!
//! # Invariants
//!
//! - A fixed-rate or fixed-delay task has a period and no plan; a calendar
//!   task has a plan and a period of zero, never read.
//! - For a calendar task, jitter is added to the wall-clock target by the
//!   plan, so [`Cadence::schedule_at`] adds none of its own.

use crate::base::clock::{delay_nanos, Clock, Nanos};
use crate::base::sync::{AtomicU64, Mutex, Ordering};
use crate::task::calendar::{Plan, Resumed};
use crate::task::kind::Kind;
use crate::task::policy::{MissedTicks, OnFailure, Options};

/// The non-generic state of a periodic task.
pub(crate) struct Cadence {
    /// The period (fixed rate) or delay (fixed delay), in nanoseconds.
    pub(super) period: AtomicU64,
    pub(super) options: Options,
    /// The grid point of the next run (without jitter).
    pub(super) nominal: AtomicU64,
    /// The next grid point a finished run computed, until `end_run` applies it.
    pub(super) pending: AtomicU64,
    pub(super) runs: AtomicU64,
    pub(super) failures: AtomicU64,
    pub(super) consecutive_failures: AtomicU64,
    pub(super) last_failure: Mutex<Option<String>>,
    pub(super) rng: AtomicU64,
    /// A calendar task's schedule and pending fire.
    plan: Option<Box<Plan>>,
}

impl Cadence {
    pub(crate) fn new(period: Nanos, options: Options, nominal: Nanos, seq: u64) -> Self {
        Cadence {
            period: AtomicU64::new(period),
            options,
            nominal: AtomicU64::new(nominal),
            pending: AtomicU64::new(nominal),
            runs: AtomicU64::new(0),
            failures: AtomicU64::new(0),
            consecutive_failures: AtomicU64::new(0),
            last_failure: Mutex::new(None),
            rng: AtomicU64::new((seq ^ nominal).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1),
            plan: None,
        }
    }

    /// The controls of a calendar task; [`Plan::first`] then plans its
    /// first run.
    pub(crate) fn calendar(options: Options, plan: Plan, now: Nanos, seq: u64) -> Self {
        Cadence {
            plan: Some(Box::new(plan)),
            ..Cadence::new(0, options, now, seq)
        }
    }

    /// A calendar task's plan.
    pub(crate) fn plan(&self) -> Option<&Plan> {
        self.plan.as_deref()
    }

    /// The next run starts at its deadline whatever the wall clock says (a
    /// trigger); nothing to do for a fixed-rate or fixed-delay task.
    pub(crate) fn release_wall(&self) {
        if let Some(plan) = self.plan() {
            plan.release();
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

    /// Sets the next grid point and returns the deadline (with jitter; a
    /// calendar task's plan added it already).
    pub(super) fn schedule_at(&self, nominal: Nanos) -> Nanos {
        self.nominal.store(nominal, Ordering::Release);
        if self.plan.is_some() {
            return nominal;
        }
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
    /// Calendar: `calendar`, the schedule's answer asked before the pool
    /// lock (see [`Plan::resume`]).
    pub(crate) fn resume_at(&self, kind: Kind, calendar: Option<Resumed>, now: Nanos) -> Nanos {
        if let (Some(plan), Some(resumed)) = (self.plan(), calendar) {
            let deadline = plan.resume(resumed, now, self.jitter());
            return self.schedule_at(deadline);
        }
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

    /// The next run after one that started at `started` and ended at
    /// `now`: a calendar task's next fire ([`Plan::next`]; `None` when it
    /// has none left), else [`next_nominal`](Self::next_nominal).
    pub(super) fn next_run(
        &self,
        kind: Kind,
        clock: &Clock,
        started: Nanos,
        now: impl Fn() -> Nanos,
    ) -> Option<Nanos> {
        match self.plan() {
            Some(plan) => plan.next(clock.wall_now(), now(), self.jitter()),
            None => Some(self.next_nominal(kind, started, now)),
        }
    }

    /// The next grid point after a run that started at `started` and ended
    /// at `now`, by the cadence and missed-tick policy.
    pub(super) fn next_nominal(
        &self,
        kind: Kind,
        started: Nanos,
        now: impl Fn() -> Nanos,
    ) -> Nanos {
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

    pub(super) fn backoff(&self, now: Nanos) -> Option<Nanos> {
        let OnFailure::Backoff { initial, max } = self.options.on_failure else {
            return None;
        };
        let n = self
            .consecutive_failures
            .load(Ordering::Acquire)
            .clamp(1, 63)
            - 1;
        let delay = initial.checked_mul(1 << n.min(31)).unwrap_or(max).min(max);
        // A calendar task's retry is monotonic time, not a fire.
        self.release_wall();
        Some(now.saturating_add(delay_nanos(delay)))
    }
}
