//! Huge durations: `Duration::MAX` as a delay, a period, a jitter, a
//! timeout, an idle spin, a clock advance, a lease, a block or an operation
//! timeout. Deadlines saturate at the clock's cap (about 146 years, the cap
//! JDK 24+ uses), nothing overflows or panics, nothing huge comes due, and a
//! manual clock advanced by `Duration::MAX` makes everything due once.
//!
//! The same behaviour as Java's suites state it is checked in
//! `tests/java_conformance/`: `a2_huge_delays_saturate`,
//! `a2_max_timeouts_do_not_overflow` (`executor_scheduling.rs`),
//! `jtreg_delay_overflow` (`jtreg.rs`), `tck_schedule_with_fixed_delay_overflow`
//! (`tck_scheduled_executor.rs`) and `a14_far_tasks_do_not_delay_near_ones`
//! (`executor_races.rs`).

mod common;
mod durable_support;
#[cfg(feature = "redis")]
mod redis_support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{eventually, manual_pool, named_pool, Gate, PoolGuard, EVENTUALLY};
use durable_support::options_ms;
use schedpool::durable::{DurablePool, DurableQueue, MemoryBackend, QueueOptions};
use schedpool::{DelayItem, DelayQueue, ManualClock, ScheduledThreadPool, TaskError};

// ===== the pool =====

#[test]
fn duration_max_everywhere_in_the_pool() {
    let pool = named_pool(2, "max");
    let one = pool.schedule(|| 1, Duration::MAX).unwrap();
    let rate = pool
        .schedule_at_fixed_rate(|| (), Duration::MAX, Duration::MAX)
        .unwrap();
    let delay = pool
        .schedule_with_fixed_delay(|| (), Duration::MAX, Duration::MAX)
        .unwrap();
    let hundred_years = Duration::from_secs(100 * 365 * 86_400);
    for d in [one.delay(), rate.delay(), delay.delay()] {
        assert!(d > hundred_years, "delay {d:?}");
    }
    // Periodic tasks with a due first run and an endless period: run once.
    let (r1, r2) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (c1, c2) = (r1.clone(), r2.clone());
    let rate_now = pool
        .schedule_at_fixed_rate(
            move || {
                c1.fetch_add(1, Ordering::SeqCst);
            },
            Duration::ZERO,
            Duration::MAX,
        )
        .unwrap();
    let delay_now = pool
        .schedule_with_fixed_delay(
            move || {
                c2.fetch_add(1, Ordering::SeqCst);
            },
            Duration::ZERO,
            Duration::MAX,
        )
        .unwrap();
    let quick = pool.submit(|| 2).unwrap();
    assert!(quick.wait_timeout(Duration::MAX));
    assert_eq!(quick.join(), Ok(2));
    eventually("both periodic tasks ran once", || {
        r1.load(Ordering::SeqCst) == 1 && r2.load(Ordering::SeqCst) == 1
    });
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(
        (r1.load(Ordering::SeqCst), r2.load(Ordering::SeqCst)),
        (1, 1)
    );
    for d in [rate_now.delay(), delay_now.delay()] {
        assert!(d > hundred_years, "next run in {d:?}");
    }
    assert!(pool.wait_idle(Duration::MAX));
    assert!(!one.is_done() && !rate.is_done() && !delay.is_done());
    assert!(one.cancel());
    assert_eq!(one.join(), Err(TaskError::Cancelled));
    // shutdown cancels the periodic ones; nothing else keeps the pool alive.
    pool.shutdown();
    assert!(pool.await_termination(Duration::MAX));
    for h in [rate, delay, rate_now, delay_now] {
        assert!(h.wait_timeout(Duration::MAX));
        assert!(h.is_cancelled());
    }
}

#[test]
fn duration_max_everywhere_does_not_panic() {
    let (clock, pool) = manual_pool(1);
    let h = pool.schedule(|| (), Duration::MAX).unwrap();
    assert!(h.delay() > Duration::from_secs(100 * 365 * 86_400));
    let p = pool
        .schedule_at_fixed_rate(|| {}, Duration::ZERO, Duration::MAX)
        .unwrap();
    let d = pool
        .schedule_with_fixed_delay(|| {}, Duration::MAX, Duration::MAX)
        .unwrap();
    let j = pool
        .at_fixed_rate(Duration::MAX)
        .jitter(Duration::MAX)
        .start(|| {})
        .unwrap();
    assert!(pool.wait_idle(Duration::from_secs(5)));
    assert_eq!(p.run_count(), 1);
    p.set_period(Duration::MAX).unwrap();
    d.set_period(Duration::MAX).unwrap();
    assert!(p.pause());
    clock.advance(Duration::MAX);
    clock.advance(Duration::MAX);
    assert!(p.resume());
    assert!(d.trigger());
    assert!(pool.wait_idle(Duration::from_secs(5)));
    // The clock now sits at its 146-year cap: `h` (capped the same way) is due.
    let _ = h.delay();
    drop(j);
    pool.shutdown_now();
    assert!(pool.await_termination(Duration::MAX));
    assert!(pool.wait_idle(Duration::MAX));
    assert!(h.wait_timeout(Duration::MAX));
    let q = schedpool::DelayQueue::new();
    q.put(schedpool::DelayItem::new(1, Duration::MAX));
    assert_eq!(q.poll_timeout(Duration::from_millis(1)), None);
}

#[test]
fn duration_max_with_a_manual_clock() {
    let clock = ManualClock::new();
    let pool = PoolGuard(
        ScheduledThreadPool::builder()
            .core_threads(1)
            .clock(clock.clone())
            .build()
            .unwrap(),
    );
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let rate = pool
        .schedule_at_fixed_rate(
            move || {
                r.fetch_add(1, Ordering::SeqCst);
            },
            Duration::MAX,
            Duration::MAX,
        )
        .unwrap();
    let one = pool.schedule(|| 1, Duration::MAX).unwrap();
    clock.advance(Duration::from_secs(3600));
    assert!(pool.wait_idle(Duration::MAX));
    assert!(!one.is_done());
    // The clock saturates where the deadlines do: both come due, once.
    clock.advance(Duration::MAX);
    clock.advance(Duration::MAX);
    assert!(pool.wait_idle(EVENTUALLY));
    assert_eq!(one.join(), Ok(1));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert!(rate.cancel());
}

#[test]
fn huge_delays_never_come_due_and_never_panic() {
    let pool = PoolGuard(ScheduledThreadPool::new(1));
    let gate = Gate::new();
    let g = gate.clone();
    pool.execute(move || g.wait()).unwrap();
    let due = pool.submit(|| "due").unwrap();
    let never = pool.schedule(|| "never", Duration::MAX).unwrap();
    let never_rate = pool
        .schedule_at_fixed_rate(|| {}, Duration::MAX, Duration::MAX)
        .unwrap();
    let never_delay = pool
        .schedule_with_fixed_delay(|| {}, Duration::MAX, Duration::MAX)
        .unwrap();
    gate.open();
    assert_eq!(due.join().unwrap(), "due");
    assert!(!never.is_done());
    assert!(never.delay() > Duration::from_secs(100 * 365 * 86_400));
    assert!(!never_rate.is_done() && !never_delay.is_done());
}

/// `Builder::idle_spin(Duration::MAX)` made `Instant + spin` overflow in the
/// wait, under the lock: every worker panicked the first time it went idle,
/// and each submission started a thread that died at its next idle moment.
/// The builder now clamps the spin to a second, and the wait adds checked.
#[test]
fn a_huge_idle_spin_does_not_kill_the_workers() {
    let pool = ScheduledThreadPool::builder()
        .core_threads(1)
        .idle_spin(Duration::MAX)
        .build()
        .unwrap();
    for i in 0..3 {
        assert_eq!(pool.submit(move || i).unwrap().join().unwrap(), i);
        std::thread::sleep(Duration::from_millis(30)); // idle: spins (clamped)
        assert_eq!(pool.pool_size(), 1, "the worker died when it went idle");
    }
}

// ===== the delay queue =====

#[test]
fn duration_max_in_the_delay_queue() {
    let q = Arc::new(DelayQueue::new());
    let key = q.put(DelayItem::new("never", Duration::MAX));
    let deadline = q.peek_deadline().unwrap();
    assert!(deadline > Instant::now() + Duration::from_secs(100 * 365 * 86_400));
    assert!(q.poll().is_none());
    assert!(q.drain_expired().is_empty());
    // poll_timeout(MAX) returns as soon as an earlier item is due.
    let putter = {
        let q = q.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            q.put(DelayItem::new("soon", Duration::ZERO));
        })
    };
    let t = Instant::now();
    let got = q.poll_timeout(Duration::MAX).map(DelayItem::into_inner);
    assert_eq!(got, Some("soon"));
    assert!(t.elapsed() < EVENTUALLY);
    putter.join().unwrap();
    assert_eq!(q.remove(key).map(DelayItem::into_inner), Some("never"));

    // A manual clock advanced by MAX makes a MAX item due (both saturate).
    let clock = ManualClock::new();
    let q = DelayQueue::with_clock(clock.clone());
    q.put(DelayItem::at(
        "far",
        clock.now() + Duration::from_secs(3600),
    ));
    clock.advance(Duration::MAX);
    assert_eq!(q.poll().map(DelayItem::into_inner), Some("far"));
}

#[test]
fn huge_deadlines_do_not_overflow() {
    let q = DelayQueue::new();
    q.put(DelayItem::new("never", Duration::MAX));
    q.put(DelayItem::new("now", Duration::ZERO));
    assert_eq!(q.poll().map(DelayItem::into_inner), Some("now"));
    assert!(q.poll().is_none());
    assert!(q.poll_timeout(Duration::from_millis(5)).is_none());
    assert!(q.peek_deadline().unwrap() > Instant::now() + Duration::from_secs(100 * 365 * 86_400));
}

// ===== the durable queue and pool (in-memory backend) =====
//
// A comment below that says how the code goes wrong tells a bug the code
// once had (all fixed): its test rules the bug out.

/// `wait_idle(Duration::MAX)` ("wait as long as it takes") panics on
/// `Instant + Duration` overflow; `await_termination` handles the same
/// input with `checked_add`.
#[test]
fn wait_idle_with_an_unbounded_timeout_does_not_panic() {
    let pool = DurablePool::builder(MemoryBackend::new())
        .threads(1)
        .handler("k", |_: &u64, _| Ok(()))
        .build()
        .unwrap();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        pool.wait_idle(Duration::MAX)
    }));
    pool.shutdown();
    assert!(matches!(r, Ok(true)), "wait_idle(Duration::MAX) panicked");
}

/// A `Duration::MAX` lease: the heartbeat thread (which ticks at
/// `lease / 3`, still an `Instant` on Linux) lives, and the store caps the
/// lease at `MAX_MS`, so a dropped delivery is still released.
#[test]
fn a_huge_lease_still_releases_a_dropped_delivery() {
    let mem = MemoryBackend::new();
    let o = QueueOptions {
        lease: Duration::MAX,
        max_block: Duration::from_millis(50),
        ..QueueOptions::default()
    };
    let a: DurableQueue<u64> = DurableQueue::with_options(mem.clone(), o).unwrap();
    let b: DurableQueue<u64> =
        DurableQueue::with_options(mem.clone(), options_ms(1000, 50)).unwrap();
    a.put("x", &1, Duration::ZERO).unwrap();
    let d = a.take().unwrap().expect("due now");
    std::thread::sleep(Duration::from_millis(50));
    drop(d);
    let back = b.poll_timeout(Duration::from_secs(1)).unwrap();
    assert!(
        back.is_some(),
        "the dropped delivery was never released (heartbeat thread died)"
    );
}

// ===== the durable queue on Redis =====
//
// A comment below that says how the code goes wrong tells a bug the code
// once had (all fixed): its test rules the bug out.

#[cfg(feature = "redis")]
mod on_redis {
    use super::*;
    use crate::redis_support::{watchdog, Redis};
    use schedpool::durable::RedisBackend;

    /// `RedisBackend::wait` computes the blocking connection's read timeout
    /// as `block + 2 s` without overflow care: `max_block = Duration::MAX`
    /// (accepted by `QueueOptions::check`, and handled by the memory
    /// backend) panics inside `take`, with the taker's `leader` flag left
    /// set.
    #[test]
    fn redis_take_with_an_unbounded_max_block_does_not_panic() {
        let redis = Redis::start();
        watchdog(Duration::from_secs(60), || {
            let o = QueueOptions {
                max_block: Duration::MAX,
                ..QueueOptions::default()
            };
            let q: DurableQueue<u64> =
                DurableQueue::with_options(RedisBackend::connect(&redis.url(), "mb").unwrap(), o)
                    .unwrap();
            let q1 = q.clone();
            let t = std::thread::spawn(move || q1.take().map(|d| d.map(|d| *d.value())));
            std::thread::sleep(Duration::from_millis(300));
            q.put("x", &7, Duration::ZERO).unwrap();
            let r = t.join();
            q.close();
            assert!(
                matches!(r, Ok(Ok(Some(7)))),
                "take panicked or failed with max_block = Duration::MAX"
            );
        });
    }

    /// `RedisBackend::run` computes `Instant::now() + op_timeout`: an
    /// unbounded `op_timeout` (`Duration::MAX`) panics at connect instead of
    /// connecting or returning `DurableError::Config`.
    #[test]
    fn redis_connect_with_an_unbounded_op_timeout_does_not_panic() {
        let redis = Redis::start();
        let url = redis.url();
        let r = std::panic::catch_unwind(move || {
            RedisBackend::connect_with(
                &url,
                "opt",
                schedpool::durable::RedisOptions::default().op_timeout(Duration::MAX),
            )
            .map(|_| ())
        });
        assert!(
            r.is_ok(),
            "connect_with(op_timeout = Duration::MAX) panicked"
        );
    }
}
