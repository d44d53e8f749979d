//! Fixed-rate and fixed-delay tasks: spacing, catch-up, no overlap, rejection.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{eventually, Log, PoolGuard};
use schedpool::{ManualClock, ScheduledThreadPool, TaskError};

#[test]
fn zero_period_is_rejected_not_a_panic() {
    let pool = PoolGuard(ScheduledThreadPool::new(1));
    let e = pool
        .schedule_at_fixed_rate(|| {}, Duration::ZERO, Duration::ZERO)
        .unwrap_err();
    assert!(e.is_invalid_argument() && !e.is_shutdown());
    let e = pool
        .schedule_with_fixed_delay(|| {}, Duration::ZERO, Duration::ZERO)
        .unwrap_err();
    assert!(e.is_invalid_argument());
    assert!(e.to_string().contains("delay"));
    assert_eq!(pool.task_count(), 0, "nothing was accepted");
}

#[test]
fn fixed_rate_runs_on_the_grid_never_early() {
    // The TCK habit: retry with a longer period rather than flake.
    for period_ms in [5u64, 15, 45] {
        let pool = PoolGuard(ScheduledThreadPool::new(1));
        let period = Duration::from_millis(period_ms);
        let starts = Log::new();
        let s = starts.clone();
        let t0 = Instant::now();
        let h = pool
            .schedule_at_fixed_rate(move || s.push(Instant::now()), Duration::ZERO, period)
            .unwrap();
        eventually("8 runs", || starts.len() >= 8);
        h.cancel();
        let starts = starts.get();
        for (n, at) in starts.iter().enumerate().take(8) {
            assert!(*at >= t0 + period * n as u32, "run {n} early");
        }
        // 8 runs took at least 7 periods; "at most 8" is only a soft check.
        if starts[7] - starts[0] <= period * 8 + Duration::from_millis(20) {
            return;
        }
    }
    panic!("fixed-rate runs drifted at every period tried");
}

#[test]
fn fixed_delay_gaps_are_at_least_the_delay() {
    let pool = PoolGuard(ScheduledThreadPool::new(2));
    let delay = Duration::from_millis(10);
    let runs: Arc<Mutex<Vec<(Instant, Instant)>>> = Arc::default();
    let r = runs.clone();
    let h = pool
        .schedule_with_fixed_delay(
            move || {
                let start = Instant::now();
                std::thread::sleep(Duration::from_millis(3));
                r.lock().unwrap().push((start, Instant::now()));
            },
            Duration::ZERO,
            delay,
        )
        .unwrap();
    eventually("6 runs", || runs.lock().unwrap().len() >= 6);
    h.cancel();
    let runs = runs.lock().unwrap().clone();
    for w in runs.windows(2) {
        assert!(
            w[1].0 - w[0].1 >= delay,
            "gap {:?} shorter than the delay",
            w[1].0 - w[0].1
        );
    }
}

#[test]
fn fixed_rate_catches_up_after_a_long_run() {
    // Virtual time makes the count exact: a run that takes 5 periods is
    // followed by the 5 missed runs back to back, then the grid resumes.
    let clock = ManualClock::new();
    let pool = PoolGuard(
        ScheduledThreadPool::builder()
            .core_threads(1)
            .clock(clock.clone())
            .build()
            .unwrap(),
    );
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    let period = Duration::from_millis(10);
    let _h = pool
        .schedule_at_fixed_rate(
            move || {
                c.fetch_add(1, Ordering::SeqCst);
            },
            period,
            period,
        )
        .unwrap();
    assert!(pool.wait_idle(common::EVENTUALLY));
    assert_eq!(count.load(Ordering::SeqCst), 0);
    clock.advance(period * 6);
    assert!(pool.wait_idle(common::EVENTUALLY));
    assert_eq!(
        count.load(Ordering::SeqCst),
        6,
        "one run per elapsed period"
    );
    clock.advance(period / 2);
    assert!(pool.wait_idle(common::EVENTUALLY));
    assert_eq!(count.load(Ordering::SeqCst), 6);
}

#[test]
fn fixed_delay_runs_once_per_advance() {
    let clock = ManualClock::new();
    let pool = PoolGuard(
        ScheduledThreadPool::builder()
            .core_threads(2)
            .clock(clock.clone())
            .build()
            .unwrap(),
    );
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    let d = Duration::from_secs(1);
    let _h = pool
        .schedule_with_fixed_delay(
            move || {
                c.fetch_add(1, Ordering::SeqCst);
            },
            d,
            d,
        )
        .unwrap();
    clock.advance(d * 10);
    assert!(pool.wait_idle(common::EVENTUALLY));
    assert_eq!(
        count.load(Ordering::SeqCst),
        1,
        "fixed delay does not catch up"
    );
}

#[test]
fn a_periodic_task_never_overlaps_itself() {
    let pool = PoolGuard(ScheduledThreadPool::new(4));
    let inside = Arc::new(AtomicBool::new(false));
    let runs = Arc::new(AtomicUsize::new(0));
    let (i, r) = (inside.clone(), runs.clone());
    let h = pool
        .schedule_at_fixed_rate(
            move || {
                assert!(!i.swap(true, Ordering::SeqCst), "overlapping run");
                std::thread::sleep(Duration::from_millis(2));
                i.store(false, Ordering::SeqCst);
                r.fetch_add(1, Ordering::SeqCst);
            },
            Duration::ZERO,
            Duration::from_micros(100),
        )
        .unwrap();
    eventually("20 runs", || runs.load(Ordering::SeqCst) >= 20);
    assert!(h.cancel());
    assert_eq!(
        h.join(),
        Err(TaskError::Cancelled),
        "an overlap would have panicked the task"
    );
}

#[test]
fn a_late_fixed_rate_task_starves_later_zero_delay_work_on_one_thread() {
    // Java behaviour the port reproduces (A7.30): an ever-late fixed-rate
    // task keeps an old timestamp and sorts ahead of new "now" tasks.
    let clock = ManualClock::new();
    let pool = PoolGuard(
        ScheduledThreadPool::builder()
            .core_threads(1)
            .clock(clock.clone())
            .build()
            .unwrap(),
    );
    let order = Log::new();
    let o = order.clone();
    let period = Duration::from_millis(10);
    let _h = pool
        .schedule_at_fixed_rate(move || o.push("tick"), period, period)
        .unwrap();
    clock.advance(period * 3); // three ticks due
    let o = order.clone();
    pool.execute(move || o.push("job")).unwrap();
    assert!(pool.wait_idle(common::EVENTUALLY));
    let got = order.get();
    assert_eq!(got.len(), 4);
    assert_eq!(got.iter().filter(|e| **e == "tick").count(), 3);
    // The job was submitted "now"; it runs after every overdue tick that
    // was due before "now".
    assert_eq!(got.last(), Some(&"job"));
}

#[test]
fn a_periodic_task_keeps_running_while_another_worker_leads_on_a_far_task() {
    // Two workers. One becomes the leader sleeping on a task an hour away;
    // the other runs the periodic task and requeues it as the new, earlier
    // head. That worker must take over timing it (self-handoff): if nobody
    // timed the new head, the periodic task would stall for an hour.
    let pool = PoolGuard(ScheduledThreadPool::new(2));
    let far = pool.schedule(|| (), Duration::from_secs(3600)).unwrap();
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let h = pool
        .schedule_at_fixed_rate(
            move || {
                r.fetch_add(1, Ordering::SeqCst);
            },
            Duration::from_millis(20),
            Duration::from_millis(20),
        )
        .unwrap();
    eventually("the periodic task keeps running", || {
        runs.load(Ordering::SeqCst) >= 5
    });
    h.cancel();
    far.cancel();
}
