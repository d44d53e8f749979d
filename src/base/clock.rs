//! The one clock seam: every reading of "now" and every timed wait in the
//! crate goes through [`Clock`].
//!
//! # Invariants
//!
//! - Times are [`Nanos`]: nanoseconds since a process-wide epoch taken once
//!   (a century before the first use where the platform's `Instant` reaches
//!   that far back, so past `Instant`s keep their order: an element due
//!   three days ago still comes out before one due two days ago). They are plain `u64`s compared with `<`; nothing is near
//!   `u64::MAX` because every delay is capped at [`MAX_DELAY`] (Java's
//!   JDK 24+ cap, about 146 years), so no `Duration` can overflow a
//!   deadline, `Duration::MAX` included.
//! - Deadlines follow the clock; caller timeouts (`poll_timeout`,
//!   `wait_timeout`, `await_termination`, `wait_idle`) are always real time,
//!   so a test never hangs on a frozen manual clock.
//! - A [`ManualClock`] moves only on [`ManualClock::advance`], which wakes
//!   one waiter of every queue and pool that uses it (their leader role is
//!   cleared, exactly like a new earlier head).

use std::fmt;
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use crate::base::sync::{AtomicU64, Condvar, Mutex, MutexGuard, Ordering};

/// Nanoseconds since the process-wide epoch.
pub(crate) type Nanos = u64;

/// The longest delay honoured, in nanoseconds: `2^62 - 2` (about 146 years),
/// the constant cap of JDK 24+ (JDK-8338765). Longer delays are clamped.
pub(crate) const MAX_DELAY: Nanos = (1 << 62) - 2;

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(|| {
        let now = Instant::now();
        // 100 years, 1 year, 1 day: the farthest the platform allows. Even
        // 100 years back leaves room for the 146-year cap within u64::MAX / 2.
        [100 * 365, 365, 1]
            .into_iter()
            .find_map(|days| now.checked_sub(Duration::from_secs(days * 86_400)))
            .unwrap_or(now)
    })
}

/// A delay in nanoseconds, clamped to [`MAX_DELAY`].
pub(crate) fn delay_nanos(delay: Duration) -> Nanos {
    delay.as_nanos().min(u128::from(MAX_DELAY)) as Nanos
}

/// An `Instant` as [`Nanos`]; instants before the epoch become 0 (long due).
pub(crate) fn to_nanos(at: Instant) -> Nanos {
    let since = at.saturating_duration_since(epoch()).as_nanos();
    since.min(u128::from(u64::MAX / 2)) as Nanos
}

/// [`Nanos`] back to an `Instant` (saturating far in the future).
pub(crate) fn to_instant(at: Nanos) -> Instant {
    let base = epoch();
    base.checked_add(Duration::from_nanos(at))
        .or_else(|| base.checked_add(Duration::from_nanos(MAX_DELAY)))
        .unwrap_or(base)
}

/// `now + delay`, saturating: the deadline of something due `delay` from now.
pub(crate) fn after(now: Nanos, delay: Duration) -> Nanos {
    now.saturating_add(delay_nanos(delay))
}

/// Notified by a [`ManualClock`] when it moves.
pub(crate) trait ClockListener: Send + Sync {
    /// Time moved: re-evaluate what is due (clear the leader, wake one).
    fn clock_advanced(&self);
}

/// The clock of a queue or pool: the real monotonic clock, or a manual one.
#[derive(Clone, Default)]
pub(crate) enum Clock {
    /// `Instant::now()`.
    #[default]
    Real,
    /// A [`ManualClock`]'s time.
    Manual(ManualClock),
}

impl Clock {
    /// The current time.
    #[inline]
    pub(crate) fn now(&self) -> Nanos {
        match self {
            Clock::Real => to_nanos(Instant::now()),
            Clock::Manual(m) => m.now_nanos(),
        }
    }

    /// Registers a queue or pool to be woken when a manual clock moves.
    pub(crate) fn subscribe(&self, listener: Weak<dyn ClockListener>) {
        if let Clock::Manual(m) = self {
            let mut listeners = m.inner.listeners.lock();
            // Forget queues and pools that are gone, so a clock that makes
            // many of them does not keep their entries until it next moves.
            listeners.retain(|l| l.strong_count() > 0);
            listeners.push(listener);
        }
    }

    /// Waits on `cv` until signalled, until the clock reaches `until` (if
    /// given), or until the real-time `limit` (if given), whichever is first.
    /// Spurious returns are possible; callers loop. True if it returned
    /// because the real clock reached `until` (a timeout, not a signal).
    pub(crate) fn wait<T>(
        &self,
        cv: &Condvar,
        guard: &mut MutexGuard<'_, T>,
        until: Option<Nanos>,
        limit: Option<Instant>,
    ) -> bool {
        let real_until = match self {
            Clock::Real => until.map(to_instant),
            // A manual clock's deadlines are reached only by `advance`, which signals.
            Clock::Manual(_) => None,
        };
        let wake_at = match (real_until, limit) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        match wake_at {
            Some(at) => cv.wait_until(guard, at) && real_until == Some(at),
            None => {
                cv.wait(guard);
                false
            }
        }
    }

    /// True when deadlines are real time, so a caller's real-time limit can
    /// be compared with them.
    pub(crate) fn is_real(&self) -> bool {
        matches!(self, Clock::Real)
    }
}

impl fmt::Debug for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Clock::Real => f.write_str("Real"),
            Clock::Manual(m) => fmt::Debug::fmt(m, f),
        }
    }
}

/// A clock that moves only when told to: virtual time for tests.
///
/// A pool built with [`Builder::clock`](crate::Builder::clock) or a queue made
/// with [`DelayQueue::with_clock`](crate::DelayQueue::with_clock) reads every
/// deadline from this clock. [`advance`](ManualClock::advance) wakes their
/// workers and takers, which then run or return whatever has become due. The
/// timeouts you pass to blocking calls stay real time, so a test never hangs.
///
/// Clones share one time.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedpool::{ManualClock, ScheduledThreadPool};
///
/// let clock = ManualClock::new();
/// let pool = ScheduledThreadPool::builder().core_threads(2).clock(clock.clone()).build()?;
/// let h = pool.schedule(|| "closed", Duration::from_secs(1800))?;
/// clock.advance(Duration::from_secs(1799));
/// assert!(pool.wait_idle(Duration::from_secs(5)));
/// assert!(!h.is_done());
/// clock.advance(Duration::from_secs(1));
/// assert_eq!(h.join()?, "closed");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct ManualClock {
    inner: Arc<ManualInner>,
}

struct ManualInner {
    /// The clock's reading when it was made.
    base: Nanos,
    /// Nanoseconds advanced since.
    offset: AtomicU64,
    /// Queues and pools to wake on `advance`.
    listeners: Mutex<Vec<Weak<dyn ClockListener>>>,
}

impl ManualClock {
    /// A clock frozen at the `Instant` it was made.
    pub fn new() -> Self {
        ManualClock {
            inner: Arc::new(ManualInner {
                base: to_nanos(Instant::now()),
                offset: AtomicU64::new(0),
                listeners: Mutex::new(Vec::new()),
            }),
        }
    }

    /// The clock's time: its start plus everything advanced.
    pub fn now(&self) -> Instant {
        to_instant(self.now_nanos())
    }

    /// The total time advanced so far.
    pub fn elapsed(&self) -> Duration {
        Duration::from_nanos(self.inner.offset.load(Ordering::Acquire))
    }

    /// Moves the clock forward by `by` (saturating at about 146 years) and
    /// wakes every pool and queue that uses it, so what became due runs.
    pub fn advance(&self, by: Duration) {
        let by = delay_nanos(by);
        let mut current = self.inner.offset.load(Ordering::Acquire);
        loop {
            let next = current.saturating_add(by).min(MAX_DELAY);
            match self.inner.offset.compare_exchange_weak(
                current,
                next,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => break,
                Err(actual) => current = actual,
            }
        }
        let live: Vec<Arc<dyn ClockListener>> = {
            let mut listeners = self.inner.listeners.lock();
            listeners.retain(|l| l.strong_count() > 0);
            listeners.iter().filter_map(Weak::upgrade).collect()
        };
        for listener in live {
            listener.clock_advanced();
        }
    }

    pub(super) fn now_nanos(&self) -> Nanos {
        self.inner.base + self.inner.offset.load(Ordering::Acquire)
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        ManualClock::new()
    }
}

impl fmt::Debug for ManualClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ManualClock")
            .field("elapsed", &self.elapsed())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn huge_delays_saturate() {
        assert_eq!(delay_nanos(Duration::MAX), MAX_DELAY);
        let now = Clock::Real.now();
        assert!(after(now, Duration::MAX) > now);
        assert_eq!(after(u64::MAX - 1, Duration::MAX), u64::MAX);
        let _ = to_instant(after(now, Duration::MAX));
    }

    #[test]
    fn instants_round_trip() {
        let now = Instant::now();
        let back = to_instant(to_nanos(now));
        assert_eq!(back, now);
    }

    #[test]
    fn manual_clock_moves_only_on_advance() {
        let c = ManualClock::new();
        let t0 = c.now();
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(c.now(), t0);
        c.advance(Duration::from_secs(5));
        assert_eq!(c.now(), t0 + Duration::from_secs(5));
        assert_eq!(c.elapsed(), Duration::from_secs(5));
        c.advance(Duration::MAX);
        assert!(c.now() > t0);
    }
}
