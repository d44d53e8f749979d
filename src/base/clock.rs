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
//! - Wall time ([`Clock::wall_now`], a `SystemTime`) is read here too, and
//!   only calendar tasks read it. On the real clock it is `SystemTime::now()`,
//!   which may step (NTP, suspend, an operator); a [`ManualClock`]'s wall
//!   time moves with `advance` and steps on
//!   [`ManualClock::set_wall_time`], which moves no deadline and wakes
//!   nobody, like a real step.

use std::fmt;
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

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

/// A wall-clock time as signed nanoseconds since the Unix epoch (saturating
/// far outside the years -9999..9999, where no calendar goes).
pub(crate) fn wall_nanos(t: SystemTime) -> i128 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(after) => after.as_nanos() as i128,
        Err(before) => -(before.duration().as_nanos() as i128),
    }
}

/// [`wall_nanos`] back to a `SystemTime` (saturating at what the platform
/// can hold).
pub(crate) fn wall_time(nanos: i128) -> SystemTime {
    let abs = nanos.unsigned_abs();
    let secs = u64::try_from(abs / 1_000_000_000).unwrap_or(u64::MAX);
    let magnitude = Duration::new(secs, (abs % 1_000_000_000) as u32);
    let (moved, limit) = if nanos >= 0 {
        (
            UNIX_EPOCH.checked_add(magnitude),
            Duration::from_secs(i64::MAX as u64 / 2),
        )
    } else {
        (UNIX_EPOCH.checked_sub(magnitude), Duration::ZERO)
    };
    moved.unwrap_or_else(|| {
        // Beyond the platform's range: as far as it goes in that direction.
        UNIX_EPOCH.checked_add(limit).unwrap_or(UNIX_EPOCH)
    })
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

    /// The wall-clock time: `SystemTime::now()`, or a manual clock's wall
    /// time. Unlike [`now`](Self::now) it may jump either way.
    pub(crate) fn wall_now(&self) -> SystemTime {
        match self {
            Clock::Real => SystemTime::now(),
            Clock::Manual(m) => m.wall_time(),
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
/// It keeps a wall-clock time too ([`wall_time`](ManualClock::wall_time)),
/// for a pool's calendar tasks: it starts at the system's wall time when the
/// clock is made, moves with [`advance`](ManualClock::advance), and jumps on
/// [`set_wall_time`](ManualClock::set_wall_time) without the monotonic time
/// moving, as a real wall clock does on an NTP step or after a suspend.
/// A durable [`MemoryBackend`](crate::durable::MemoryBackend) on this clock
/// keeps a store clock of its own, which follows `advance` only (see
/// [`MemoryBackend::with_clock`](crate::durable::MemoryBackend::with_clock)).
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
    /// The wall time, in nanoseconds since the Unix epoch, when `offset`
    /// was zero: the wall time is this plus `offset`. A step moves it.
    wall_base: Mutex<i128>,
}

impl ManualClock {
    /// A clock frozen at the `Instant` it was made.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ManualClock;
    ///
    /// let clock = ManualClock::new();
    /// let t0 = clock.now();
    /// std::thread::sleep(Duration::from_millis(2));
    /// assert_eq!(clock.now(), t0, "real time does not move it");
    /// ```
    pub fn new() -> Self {
        ManualClock {
            inner: Arc::new(ManualInner {
                base: to_nanos(Instant::now()),
                offset: AtomicU64::new(0),
                listeners: Mutex::new(Vec::new()),
                wall_base: Mutex::new(wall_nanos(SystemTime::now())),
            }),
        }
    }

    /// The clock's wall-clock time: the system's wall time when the clock
    /// was made, plus everything advanced, plus every step made with
    /// [`set_wall_time`](Self::set_wall_time).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ManualClock;
    ///
    /// let clock = ManualClock::new();
    /// let start = clock.wall_time();
    /// clock.advance(Duration::from_secs(3600));
    /// assert_eq!(clock.wall_time(), start + Duration::from_secs(3600));
    /// ```
    pub fn wall_time(&self) -> SystemTime {
        let base = self.inner.wall_base.lock();
        let advanced = self.inner.offset.load(Ordering::Acquire);
        wall_time(*base + i128::from(advanced))
    }

    /// Steps the wall clock to `time`, forward or back, without moving the
    /// monotonic time: what an NTP step, a suspend or an operator's `date`
    /// does to a real clock. Like a real step it wakes nobody: a pool sees
    /// it the next time it reads the wall clock (a calendar task does at
    /// least once per its
    /// [`wall_clock_check`](crate::OnCalendar::wall_clock_check) of
    /// monotonic time).
    ///
    /// ```
    /// use std::time::{Duration, UNIX_EPOCH};
    /// use schedpool::ManualClock;
    ///
    /// let clock = ManualClock::new();
    /// let t0 = clock.now();
    /// clock.set_wall_time(UNIX_EPOCH + Duration::from_secs(1_700_000_000));
    /// clock.advance(Duration::from_secs(5));
    /// assert_eq!(clock.wall_time(), UNIX_EPOCH + Duration::from_secs(1_700_000_005));
    /// assert_eq!(clock.now(), t0 + Duration::from_secs(5), "the monotonic time did not jump");
    /// ```
    pub fn set_wall_time(&self, time: SystemTime) {
        let mut base = self.inner.wall_base.lock();
        let advanced = self.inner.offset.load(Ordering::Acquire);
        *base = wall_nanos(time) - i128::from(advanced);
    }

    /// The clock's time: its start plus everything advanced.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::{DelayItem, DelayQueue, ManualClock};
    ///
    /// let clock = ManualClock::new();
    /// let q = DelayQueue::with_clock(clock.clone());
    /// // Deadlines for a queue on this clock come from this clock.
    /// q.put(DelayItem::at("retry", clock.now() + Duration::from_secs(5)));
    /// clock.advance(Duration::from_secs(5));
    /// assert!(q.poll().is_some());
    /// ```
    pub fn now(&self) -> Instant {
        to_instant(self.now_nanos())
    }

    /// The total time advanced so far.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ManualClock;
    ///
    /// let clock = ManualClock::new();
    /// clock.advance(Duration::from_secs(90));
    /// clock.advance(Duration::from_secs(30));
    /// assert_eq!(clock.elapsed(), Duration::from_secs(120));
    /// ```
    pub fn elapsed(&self) -> Duration {
        Duration::from_nanos(self.inner.offset.load(Ordering::Acquire))
    }

    /// Moves the clock forward by `by` (saturating at about 146 years) and
    /// wakes every pool and queue that uses it, so what became due runs.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::{ManualClock, ScheduledThreadPool};
    ///
    /// let clock = ManualClock::new();
    /// let pool = ScheduledThreadPool::builder().core_threads(1).clock(clock.clone()).build()?;
    /// let unpaid = pool.schedule(|| "order closed", Duration::from_secs(30 * 60))?;
    /// clock.advance(Duration::from_secs(29 * 60));
    /// assert!(pool.wait_idle(Duration::from_secs(5)));
    /// assert!(!unpaid.is_done(), "never early");
    /// clock.advance(Duration::from_secs(60));
    /// assert_eq!(unpaid.join()?, "order closed");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
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
            .field("wall_time", &self.wall_time())
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
    fn wall_nanos_round_trip_both_sides_of_the_epoch() {
        for t in [
            UNIX_EPOCH,
            UNIX_EPOCH + Duration::new(1_700_000_000, 123),
            UNIX_EPOCH - Duration::new(86_400 * 365, 7),
            UNIX_EPOCH + Duration::new(253_402_300_799, 999_999_999), // 9999-12-31T23:59:59.999999999Z
        ] {
            assert_eq!(wall_time(wall_nanos(t)), t);
        }
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
