//! Async task bodies (feature `tokio`), their timing: `schedule_async`
//! and `start_async` on the periodic and calendar builders. The pool keeps
//! the timing (never early, deadline order, fixed delay from the future's
//! completion, no overlap, every periodic control, a ManualClock, calendar
//! fires across DST); the futures run on a tokio runtime. Failures and
//! cancel/abort: `async_cancel.rs`; runtimes: `async_runtime.rs`.
//!
//! Timing: order and never-early are exact; lateness bounds are generous
//! (the machine is 2 busy cores).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use schedpool::{ManualClock, MissedTicks, ScheduledThreadPool};

/// Generous: this machine is shared.
const EVENTUALLY: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_shot_is_never_early_and_gives_its_output() {
    let pool = ScheduledThreadPool::new(1);
    let submitted = Instant::now();
    let h = pool
        .schedule_async(
            || async {
                let started = Instant::now();
                tokio::time::sleep(Duration::from_millis(5)).await;
                started
            },
            Duration::from_millis(30),
        )
        .unwrap();
    let started = tokio::time::timeout(EVENTUALLY, h).await.unwrap().unwrap();
    assert!(
        started - submitted >= Duration::from_millis(30),
        "never early: the future started {:?} after submission",
        started - submitted
    );
    assert!(started - submitted < EVENTUALLY);
    // The run ended with the future: counted when the handle completes.
    assert!(pool.wait_idle(EVENTUALLY));
    assert_eq!(pool.completed_task_count(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_shots_run_in_deadline_order_fifo_among_equals() {
    let pool = ScheduledThreadPool::new(1);
    let order = Arc::new(Mutex::new(Vec::new()));
    // (label, delay in ms): due order c, a, b, d (a and b tie: FIFO).
    let plan = [("a", 40), ("b", 40), ("c", 20), ("d", 60)];
    let mut handles = Vec::new();
    for (label, ms) in plan {
        let order = order.clone();
        let due = Instant::now() + Duration::from_millis(ms);
        handles.push(
            pool.schedule_async(
                move || async move {
                    assert!(Instant::now() >= due, "{label} ran early");
                    order.lock().unwrap().push(label);
                },
                Duration::from_millis(ms),
            )
            .unwrap(),
        );
    }
    for h in handles {
        tokio::time::timeout(EVENTUALLY, h).await.unwrap().unwrap();
    }
    assert_eq!(*order.lock().unwrap(), ["c", "a", "b", "d"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fixed_delay_counts_from_the_future_s_completion() {
    let pool = ScheduledThreadPool::new(2);
    let spans = Arc::new(Mutex::new(Vec::<(Instant, Instant)>::new()));
    let s = spans.clone();
    let h = pool
        .with_fixed_delay(Duration::from_millis(20))
        .max_runs(4)
        .start_async(move || {
            let s = s.clone();
            async move {
                let start = Instant::now();
                tokio::time::sleep(Duration::from_millis(30)).await;
                s.lock().unwrap().push((start, Instant::now()));
            }
        })
        .unwrap();
    tokio::time::timeout(EVENTUALLY, h).await.unwrap().unwrap();
    let spans = spans.lock().unwrap();
    assert_eq!(spans.len(), 4);
    for pair in spans.windows(2) {
        let gap = pair[1].0 - pair[0].1;
        assert!(
            gap >= Duration::from_millis(20),
            "the next run starts 20 ms after the previous future completed, not {gap:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fixed_rate_never_overlaps_runs_of_one_task() {
    // Four workers: nothing but the rule keeps the runs apart.
    let pool = ScheduledThreadPool::new(4);
    let in_flight = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let (f, m) = (in_flight.clone(), most.clone());
    let h = pool
        .at_fixed_rate(Duration::from_millis(2))
        .max_runs(8)
        .start_async(move || {
            let (f, m) = (f.clone(), m.clone());
            async move {
                let now = f.fetch_add(1, Ordering::SeqCst) + 1;
                m.fetch_max(now, Ordering::SeqCst);
                // Much longer than the period: every run is due while the
                // previous future still runs.
                tokio::time::sleep(Duration::from_millis(10)).await;
                f.fetch_sub(1, Ordering::SeqCst);
            }
        })
        .unwrap();
    tokio::time::timeout(EVENTUALLY, h).await.unwrap().unwrap();
    assert_eq!(h_runs(&pool), 8);
    assert_eq!(
        most.load(Ordering::SeqCst),
        1,
        "two futures of one task overlapped"
    );
}

/// Runs counted by the pool once its workers are idle.
fn h_runs(pool: &ScheduledThreadPool) -> u64 {
    assert!(pool.wait_idle(EVENTUALLY));
    pool.completed_task_count()
}

/// Virtual time drives async bodies as sync ones: a 30-minute one-shot, a
/// fixed-rate catch-up, and the periodic controls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manual_clock_drives_async_bodies() {
    let clock = ManualClock::new();
    let pool = ScheduledThreadPool::builder()
        .core_threads(2)
        .clock(clock.clone())
        .build()
        .unwrap();
    let closed = pool
        .schedule_async(|| async { "order 42 closed" }, Duration::from_secs(1800))
        .unwrap();
    clock.advance(Duration::from_secs(1799));
    assert!(pool.wait_idle(EVENTUALLY));
    assert!(!closed.is_done(), "never early, by the manual clock");
    clock.advance(Duration::from_secs(1));
    assert_eq!(closed.await, Ok("order 42 closed"));

    let period = Duration::from_secs(10);
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let h = pool
        .at_fixed_rate(period)
        .initial_delay(period)
        .missed_ticks(MissedTicks::Burst)
        .start_async(move || {
            let r = r.clone();
            async move {
                tokio::task::yield_now().await;
                r.fetch_add(1, Ordering::SeqCst);
            }
        })
        .unwrap();
    assert!(pool.wait_idle(EVENTUALLY));
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    clock.advance(period * 10);
    assert!(
        pool.wait_idle(EVENTUALLY),
        "wait_idle waits for the futures"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 10, "catch-up: exactly 10 runs");
    assert_eq!(h.run_count(), 10);

    // pause, resume, trigger, set_period.
    assert!(h.pause());
    clock.advance(period * 3 + Duration::from_secs(5));
    assert!(pool.wait_idle(EVENTUALLY));
    assert_eq!(runs.load(Ordering::SeqCst), 10, "paused: no run");
    assert!(h.resume());
    assert!(pool.wait_idle(EVENTUALLY));
    assert_eq!(
        runs.load(Ordering::SeqCst),
        10,
        "resumed at the next grid point, 5 s on"
    );
    assert!(h.trigger());
    assert!(pool.wait_idle(EVENTUALLY));
    assert_eq!(runs.load(Ordering::SeqCst), 11, "trigger ran it at once");
    h.set_period(Duration::from_secs(60)).unwrap();
    let next = h.next_run().unwrap();
    assert!(next > clock.now());
    clock.advance(next - clock.now());
    assert!(pool.wait_idle(EVENTUALLY));
    assert_eq!(runs.load(Ordering::SeqCst), 12);
    let next = h.next_run().unwrap();
    assert_eq!(
        next - clock.now(),
        Duration::from_secs(60),
        "the new period"
    );
    assert!(h.cancel());
}

/// Limits and jitter apply to async bodies as to sync ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_and_jitter_apply_to_async_bodies() {
    let clock = ManualClock::new();
    let pool = ScheduledThreadPool::builder()
        .core_threads(1)
        .clock(clock.clone())
        .build()
        .unwrap();
    let period = Duration::from_secs(60);
    let base = clock.now();
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let h = pool
        .at_fixed_rate(period)
        .initial_delay(period)
        .jitter(Duration::from_secs(5))
        .until(clock.now() + period * 3 + Duration::from_secs(30))
        .start_async(move || {
            let r = r.clone();
            async move {
                r.fetch_add(1, Ordering::SeqCst);
            }
        })
        .unwrap();
    for n in 1..=3 {
        let due = h.next_run().unwrap();
        let grid = base + period * n;
        assert!(
            due >= grid && due < grid + Duration::from_secs(5),
            "run {n} jittered within [0, 5 s) of its grid point"
        );
        clock.advance(due - clock.now() - Duration::from_nanos(1));
        assert!(pool.wait_idle(EVENTUALLY));
        assert_eq!(runs.load(Ordering::SeqCst), n as usize - 1, "never early");
        clock.advance(Duration::from_nanos(1));
        assert!(pool.wait_idle(EVENTUALLY));
        assert_eq!(runs.load(Ordering::SeqCst), n as usize);
    }
    // The fourth grid point (240 s) is past `until` (210 s): done.
    assert_eq!(h.await, Ok(()));
}

/// With feature `calendar`: a nightly async job keeps its wall-clock time
/// across a DST change, by a ManualClock.
#[cfg(feature = "calendar")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nightly_async_job_across_a_dst_change() {
    use std::time::{SystemTime, UNIX_EPOCH};

    use schedpool::calendar::Daily;

    // 2026-03-28 12:00 UTC, the day before Europe/Berlin springs forward
    // (2026-03-29 02:00 CET -> 03:00 CEST).
    let start = UNIX_EPOCH + Duration::from_secs(1_774_699_200);
    let clock = ManualClock::new();
    clock.set_wall_time(start);
    let pool = ScheduledThreadPool::builder()
        .core_threads(1)
        .clock(clock.clone())
        .build()
        .unwrap();
    let fired = Arc::new(Mutex::new(Vec::<SystemTime>::new()));
    let f = fired.clone();
    let c = clock.clone();
    let h = pool
        .on_calendar(Daily::at("04:00", "Europe/Berlin").unwrap())
        .start_async(move || {
            let (f, c) = (f.clone(), c.clone());
            async move {
                tokio::task::yield_now().await;
                f.lock().unwrap().push(c.wall_time());
            }
        })
        .unwrap();
    for _ in 0..3 * 24 {
        clock.advance(Duration::from_secs(3600));
        assert!(pool.wait_idle(EVENTUALLY));
    }
    assert!(h.cancel());
    let fired = fired.lock().unwrap();
    let secs: Vec<u64> = fired
        .iter()
        .map(|t| t.duration_since(UNIX_EPOCH).unwrap().as_secs())
        .collect();
    // 04:00 CET on the 29th does not exist as CET: 04:00 CEST = 02:00 UTC.
    // 2026-03-29 02:00 UTC, 2026-03-30 02:00 UTC, 2026-03-31 02:00 UTC
    // (the 28th's 04:00 CET = 03:00 UTC was before the start).
    assert_eq!(
        secs,
        [1_774_749_600, 1_774_836_000, 1_774_922_400],
        "never early, at 04:00 Berlin time each night (hourly steps: within the hour)"
    );
}
