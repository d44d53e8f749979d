//! POLICY
use crate::base::clock::Nanos;
use std::time::Duration;

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
/// panic reaches the handle ([`ScheduledHandle::failure_count`](crate::ScheduledHandle::failure_count),
/// [`ScheduledHandle::last_failure`](crate::ScheduledHandle::last_failure)), the pool's panic handler, an `ERROR`
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
/// [`Periodic::start_dynamic`](crate::Periodic::start_dynamic). A body may return `()` (always
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
/// [`Periodic::start_dynamic`](crate::Periodic::start_dynamic).
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
