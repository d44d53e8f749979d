//! Cheap pool statistics: the counters' snapshot types and a lock-free
//! lateness histogram. The reports that feed them are in [`super::report`].
//!
//! # Invariants
//!
//! - The histogram has 8 sub-buckets per power of two of microseconds, so a
//!   reported percentile is within 12.5 % of the true value (and exact
//!   below 8 µs). Recording is one relaxed `fetch_add`, and a `fetch_max`
//!   only when the maximum moves (the count is the buckets' sum).

use std::time::Duration;

use crate::base::clock::Nanos;
// std's atomics even under loom: these are statistics, not protocol, and
// which bucket (which atomic) a run touches depends on real time, which
// would make a loom model's replays diverge.
use std::sync::atomic::{AtomicU64, Ordering};

const BUCKETS: usize = 8 * 62;

/// Lateness (start - due) of every run, in microseconds.
pub(super) struct LatenessHistogram {
    buckets: Box<[AtomicU64]>,
    max_us: AtomicU64,
}

fn bucket(us: u64) -> usize {
    if us < 8 {
        us as usize
    } else {
        let e = 63 - us.leading_zeros() as usize; // e >= 3
        ((e - 2) * 8 + ((us >> (e - 3)) & 7) as usize).min(BUCKETS - 1)
    }
}

/// The smallest value that falls in bucket `b` (the inverse of `bucket`).
fn bucket_floor(b: usize) -> u64 {
    if b < 8 {
        b as u64
    } else {
        let e = b / 8 + 2;
        (8 + (b % 8) as u64) << (e - 3)
    }
}

impl LatenessHistogram {
    pub(crate) fn new() -> Self {
        LatenessHistogram {
            buckets: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
            max_us: AtomicU64::new(0),
        }
    }

    pub(crate) fn record(&self, lateness: Nanos) {
        let us = lateness / 1_000;
        self.buckets[bucket(us)].fetch_add(1, Ordering::Relaxed);
        // Read first: the maximum rarely moves, and a read shares the line.
        if us > self.max_us.load(Ordering::Relaxed) {
            self.max_us.fetch_max(us, Ordering::Relaxed);
        }
    }

    /// Runs recorded (the buckets' sum).
    #[cfg(feature = "metrics")]
    pub(crate) fn count(&self) -> u64 {
        self.buckets.iter().map(|b| b.load(Ordering::Relaxed)).sum()
    }

    pub(crate) fn snapshot(&self) -> Lateness {
        let counts: Vec<u64> = self
            .buckets
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .collect();
        let total: u64 = counts.iter().sum();
        let percentile = |p: f64| {
            if total == 0 {
                return Duration::ZERO;
            }
            let rank = ((total as f64) * p).ceil().max(1.0) as u64;
            let mut seen = 0;
            for (b, &n) in counts.iter().enumerate() {
                seen += n;
                if seen >= rank {
                    return Duration::from_micros(bucket_floor(b));
                }
            }
            Duration::ZERO
        };
        Lateness {
            count: total,
            p50: percentile(0.50),
            p99: percentile(0.99),
            max: Duration::from_micros(self.max_us.load(Ordering::Relaxed)),
        }
    }
}

/// How late runs started (start minus due), over the pool's life.
/// Percentiles are bucket lower bounds, within 12.5 %.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedpool::ScheduledThreadPool;
///
/// let pool = ScheduledThreadPool::new(1);
/// for _ in 0..10 {
///     pool.schedule(|| (), Duration::from_millis(1))?.join()?;
/// }
/// assert!(pool.wait_idle(Duration::from_secs(5)));
/// let late = pool.stats().lateness;
/// assert_eq!(late.count, 10);
/// assert!(late.p50 <= late.p99 && late.p99 <= late.max);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Lateness {
    /// Runs recorded.
    pub count: u64,
    /// Median lateness.
    pub p50: Duration,
    /// 99th percentile.
    pub p99: Duration,
    /// The worst lateness seen (exact, in whole microseconds).
    pub max: Duration,
}

/// A snapshot of a pool's counters
/// ([`ScheduledThreadPool::stats`](crate::ScheduledThreadPool::stats)).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedpool::ScheduledThreadPool;
///
/// let pool = ScheduledThreadPool::new(1);
/// pool.submit(|| ())?.join()?;
/// let _ = pool.submit(|| -> () { panic!("bug") })?.join();
/// pool.schedule(|| (), Duration::from_secs(60))?.cancel();
/// assert!(pool.wait_idle(Duration::from_secs(5)));
/// let stats = pool.stats();
/// assert_eq!((stats.accepted, stats.completed, stats.panicked, stats.cancelled), (3, 2, 1, 1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct PoolStats {
    /// Tasks waiting in the queue.
    pub queued: usize,
    /// Tasks running now.
    pub active: usize,
    /// Live worker threads.
    pub workers: usize,
    /// Tasks ever accepted.
    pub accepted: u64,
    /// Runs finished (every periodic run counts).
    pub completed: u64,
    /// Tasks cancelled: by their handle (a `cancel` that won), by a
    /// [`CancelOnDrop`](crate::CancelOnDrop) guard, or by shutdown's
    /// policies (each task once). The tasks `shutdown_now` hands back
    /// are not counted, whatever the caller does with them.
    pub cancelled: u64,
    /// Submissions refused because the pool was shut down or no worker
    /// thread could start. (A submission refused for an invalid argument,
    /// such as a zero period, is an error to its caller and not counted.)
    pub rejected: u64,
    /// Runs that panicked.
    pub panicked: u64,
    /// Runs that failed: panicked, or returned `Err` (a periodic or
    /// `execute` body); `panicked` counts the first kind alone.
    pub failed: u64,
    /// Lateness of runs.
    pub lateness: Lateness,
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn buckets_invert() {
        for us in (0..100_000u64).chain([1 << 40, u64::MAX / 1_000]) {
            let b = bucket(us);
            assert!(
                bucket_floor(b) <= us,
                "{us} in bucket {b} floor {}",
                bucket_floor(b)
            );
            if b + 1 < BUCKETS {
                assert!(bucket_floor(b + 1) > us);
            }
        }
    }

    #[test]
    fn percentiles() {
        let h = LatenessHistogram::new();
        for us in 1..=100u64 {
            h.record(us * 1_000);
        }
        let s = h.snapshot();
        assert_eq!(s.count, 100);
        assert!(
            s.p50 >= Duration::from_micros(44) && s.p50 <= Duration::from_micros(50),
            "{:?}",
            s.p50
        );
        assert!(
            s.p99 >= Duration::from_micros(88) && s.p99 <= Duration::from_micros(99),
            "{:?}",
            s.p99
        );
        assert_eq!(s.max, Duration::from_micros(100));
    }
}
