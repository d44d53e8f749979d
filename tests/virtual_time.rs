//! ManualClock with several workers: exact counts, no real waiting, and
//! caller timeouts that stay real.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{PoolGuard, EVENTUALLY};
use schedpool::{DelayItem, DelayQueue, ManualClock, ScheduledThreadPool};

#[test]
fn thirty_minutes_in_no_time_with_four_workers() {
    let clock = ManualClock::new();
    let pool = PoolGuard(
        ScheduledThreadPool::builder()
            .core_threads(4)
            .clock(clock.clone())
            .build()
            .unwrap(),
    );
    let closed = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let handles: Vec<_> = (0..1000u64)
        .map(|i| {
            let c = closed.clone();
            pool.schedule(
                move || c.fetch_add(1, Ordering::SeqCst),
                Duration::from_secs(1800 + i % 60),
            )
            .unwrap()
        })
        .collect();
    clock.advance(Duration::from_secs(1799));
    assert!(pool.wait_idle(EVENTUALLY));
    assert_eq!(closed.load(Ordering::SeqCst), 0, "nothing early");
    clock.advance(Duration::from_secs(30));
    assert!(pool.wait_idle(EVENTUALLY));
    assert_eq!(
        closed.load(Ordering::SeqCst),
        510,
        "exactly the ones due by 1829 s (i % 60 <= 29)"
    );
    clock.advance(Duration::from_secs(30));
    for h in handles {
        h.join().unwrap();
    }
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "virtual time, not real time"
    );
}

#[test]
fn fixed_rate_runs_exactly_once_per_elapsed_period_on_many_workers() {
    let clock = ManualClock::new();
    let pool = PoolGuard(
        ScheduledThreadPool::builder()
            .core_threads(3)
            .clock(clock.clone())
            .build()
            .unwrap(),
    );
    let counts: Vec<Arc<AtomicUsize>> = (0..10).map(|_| Arc::new(AtomicUsize::new(0))).collect();
    for (i, c) in counts.iter().enumerate() {
        let c = c.clone();
        pool.schedule_at_fixed_rate(
            move || {
                c.fetch_add(1, Ordering::SeqCst);
            },
            Duration::from_millis(i as u64 + 1),
            Duration::from_millis(10),
        )
        .unwrap();
    }
    clock.advance(Duration::from_millis(100));
    assert!(pool.wait_idle(EVENTUALLY));
    for (i, c) in counts.iter().enumerate() {
        // First at i+1 ms, then every 10 ms up to 100 ms: 10 runs each.
        assert_eq!(c.load(Ordering::SeqCst), 10, "task {i}");
    }
}

#[test]
fn caller_timeouts_stay_real_on_a_frozen_clock() {
    let clock = ManualClock::new();
    let pool = PoolGuard(
        ScheduledThreadPool::builder()
            .core_threads(1)
            .clock(clock.clone())
            .build()
            .unwrap(),
    );
    let h = pool.schedule(|| (), Duration::from_secs(60)).unwrap();
    let start = Instant::now();
    assert!(!h.wait_timeout(Duration::from_millis(30)));
    assert!(start.elapsed() >= Duration::from_millis(30));
    assert_eq!(
        h.delay(),
        Duration::from_secs(60),
        "delay reads the manual clock"
    );
    let q: DelayQueue<DelayItem<()>> = DelayQueue::with_clock(clock.clone());
    q.put(DelayItem::at((), clock.now() + Duration::from_secs(1)));
    let start = Instant::now();
    assert!(q.poll_timeout(Duration::from_millis(30)).is_none());
    assert!(start.elapsed() >= Duration::from_millis(30));
    assert_eq!(
        q.peek_deadline(),
        Some(clock.now() + Duration::from_secs(1))
    );
    pool.shutdown();
    assert!(
        !pool.await_termination(Duration::from_millis(20)),
        "the delayed task keeps it alive"
    );
    clock.advance(Duration::from_secs(60));
    assert!(pool.await_termination(EVENTUALLY));
}

#[test]
fn wait_idle_times_out_while_a_task_runs() {
    let clock = ManualClock::new();
    let pool = PoolGuard(
        ScheduledThreadPool::builder()
            .core_threads(1)
            .clock(clock.clone())
            .build()
            .unwrap(),
    );
    let gate = common::Gate::new();
    let g = gate.clone();
    pool.execute(move || g.wait()).unwrap();
    assert!(!pool.wait_idle(Duration::from_millis(30)));
    gate.open();
    assert!(pool.wait_idle(EVENTUALLY));
}
