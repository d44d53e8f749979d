//! ManualClock with several workers: exact counts, no real waiting, caller
//! timeouts that stay real, and work that is due now on a frozen clock
//! (zero-delay submissions, `trigger`, `resume`) running without the clock
//! moving.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{manual_pool, PoolGuard, EVENTUALLY};
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
        .unwrap()
        .detach();
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

// ===== due now on a frozen clock =====
//
// Work due "now" on a manual clock that never moves: the work queue must not
// push it to now + 1 ns behind work submitted later (the FIFO lane's order),
// or it never runs until the clock moves.

/// Occupies the pool's only worker until the returned sender is dropped.
fn block_worker(pool: &ScheduledThreadPool) -> mpsc::Sender<()> {
    let (started_tx, started_rx) = mpsc::channel();
    let (gate_tx, gate_rx) = mpsc::channel::<()>();
    pool.execute(move || {
        started_tx.send(()).unwrap();
        let _ = gate_rx.recv();
    })
    .unwrap();
    started_rx.recv_timeout(Duration::from_secs(5)).unwrap();
    gate_tx
}

/// Zero-delay submissions racing on a frozen manual clock: a submitter that
/// took its seq before a racer but pushes after it must still run (not get
/// `now + 1 ns`, never due until the clock moves).
#[test]
fn racing_executes_on_a_frozen_manual_clock_all_run() {
    let (_clock, pool) = manual_pool(1);
    let ran = Arc::new(AtomicUsize::new(0));
    let threads = 4;
    let per_thread = 2_000;
    let barrier = Arc::new(std::sync::Barrier::new(threads));
    let joins: Vec<_> = (0..threads)
        .map(|_| {
            let pool = pool.clone();
            let ran = ran.clone();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                for _ in 0..per_thread {
                    let ran = ran.clone();
                    pool.execute(move || {
                        ran.fetch_add(1, Ordering::Relaxed);
                    })
                    .unwrap();
                }
            })
        })
        .collect();
    for j in joins {
        j.join().unwrap();
    }
    assert!(pool.wait_idle(Duration::from_secs(5)));
    assert_eq!(
        ran.load(Ordering::Relaxed),
        threads * per_thread,
        "{} zero-delay tasks are still queued ({} in queue) on a frozen clock",
        threads * per_thread - ran.load(Ordering::Relaxed),
        pool.queue_len()
    );
}

/// `trigger()` "makes a task due now", also on a frozen manual clock where
/// its (now, seq) is not after the due lane's back: `WorkQueue::push` must
/// not bump it to now + 1 ns, never due until the clock moves.
#[test]
fn trigger_on_a_frozen_manual_clock_runs_the_task() {
    let (_clock, pool) = manual_pool(1);
    let gate = block_worker(&pool);
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let periodic = pool
        .schedule_at_fixed_rate(
            move || {
                r.fetch_add(1, Ordering::SeqCst);
            },
            Duration::from_secs(3600),
            Duration::from_secs(3600),
        )
        .unwrap();
    // Submitted after the periodic task: a higher seq, at the lane's back.
    let later = pool.submit(|| ()).unwrap();
    assert!(periodic.trigger());
    drop(gate);
    later.join().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    while runs.load(Ordering::SeqCst) == 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "the triggered task never ran; it is due in {:?} on a frozen clock",
        periodic.delay()
    );
}

/// The same through `resume()` of a fixed-delay task: it is resumed
/// "at once", i.e. at `now`, into the lane behind a later-submitted task.
#[test]
fn resume_of_fixed_delay_on_a_frozen_manual_clock_runs_the_task() {
    let (clock, pool) = manual_pool(1);
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let periodic = pool
        .schedule_with_fixed_delay(
            move || {
                r.fetch_add(1, Ordering::SeqCst);
            },
            Duration::from_secs(10),
            Duration::from_secs(10),
        )
        .unwrap();
    assert!(periodic.pause());
    clock.advance(Duration::from_secs(20));
    let gate = block_worker(&pool);
    let later = pool.submit(|| ()).unwrap();
    assert!(periodic.resume());
    drop(gate);
    later.join().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    while runs.load(Ordering::SeqCst) == 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "the resumed fixed-delay task never ran; due in {:?} on a frozen clock",
        periodic.delay()
    );
}

/// `wait_idle` must say "not idle" while a task is due and unrun. With the
/// triggered run pending, `wait_idle` must wait for it.
#[test]
fn wait_idle_is_false_while_a_triggered_run_is_pending() {
    let (_clock, pool) = manual_pool(1);
    let gate = block_worker(&pool);
    let periodic = pool
        .schedule_at_fixed_rate(|| {}, Duration::from_secs(3600), Duration::from_secs(3600))
        .unwrap();
    let later = pool.submit(|| ()).unwrap();
    assert!(periodic.trigger());
    drop(gate);
    later.join().unwrap();
    assert!(pool.wait_idle(Duration::from_secs(2)));
    assert_eq!(
        periodic.run_count(),
        1,
        "wait_idle said idle, but the triggered run has not happened"
    );
}
