//! Regression tests from a focused correctness review of `src/`: each test
//! reproduced a bug the review confirmed (all fixed now: the lane's
//! deadline bump on a frozen manual clock, paused tasks left uncompleted at
//! shutdown, a panicking `RunOutcome`, `trigger` on idle timers, a tracing
//! subscriber called under the pool lock), plus a few checks of things the
//! review found sound. A second review, of the idle spin, the early leader
//! and the waited mark, found two more (an overflowing idle spin, and a
//! core-0 worker outliving its keep-alive after a cancel); they are at the
//! end. A third, of the lazily created result cell, found `last_failure`
//! empty just after `is_done`. A fourth, of the thin tasks, found a
//! `PendingTask` that could let a result's panicking `Drop` out of `run`
//! (the last test; it predates the thin tasks).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use schedpool::{ManualClock, Next, RunOutcome, ScheduledThreadPool, TaskState};

fn manual_pool(core: usize) -> (ManualClock, ScheduledThreadPool) {
    let clock = ManualClock::new();
    let pool = ScheduledThreadPool::builder()
        .core_threads(core)
        .clock(clock.clone())
        .build()
        .unwrap();
    (clock, pool)
}

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

/// `trigger()` "makes a task due now". On a frozen manual clock, a trigger
/// whose (now, seq) is not after the due lane's back is bumped to now + 1 ns
/// by `WorkQueue::push` and never comes due until the clock moves.
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

/// Same root cause through `resume()` of a fixed-delay task: it is resumed
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
/// bumped deadline above, `wait_idle` reports idle although the triggered
/// run is pending.
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

struct Exploding;

impl RunOutcome for Exploding {
    fn into_next(self) -> Next {
        panic!("into_next exploded");
    }
}

/// `RunOutcome` is a public, unsealed trait; `into_next` is user code that
/// `PeriodicTask::run` calls outside `catch_unwind`. Its panic escapes into
/// the worker: the task stays RUNNING forever and its handle never completes.
#[test]
fn a_panicking_run_outcome_completes_the_handle() {
    let pool = ScheduledThreadPool::new(1);
    let h = pool
        .with_fixed_delay(Duration::from_millis(1))
        .start_dynamic(|| Exploding)
        .unwrap();
    let done = h.wait_timeout(Duration::from_secs(2));
    let state = h.state();
    assert!(
        done,
        "the handle never completed; the task is stuck in {state:?}"
    );
    assert_ne!(state, TaskState::Running);
}

/// A task paused when the pool shuts down is neither run, cancelled nor
/// returned by `shutdown_now`: its `join` hangs after termination.
#[test]
fn a_paused_task_completes_when_the_pool_terminates() {
    let pool = ScheduledThreadPool::new(1);
    let h = pool
        .schedule_at_fixed_rate(|| {}, Duration::from_secs(3600), Duration::from_secs(3600))
        .unwrap();
    assert!(h.pause());
    let pending = pool.shutdown_now();
    assert!(pending.is_empty());
    assert!(pool.await_termination(Duration::from_secs(5)));
    assert!(
        h.wait_timeout(Duration::from_secs(1)),
        "pool terminated but the paused task's handle is still {:?}: join() would hang",
        h.state()
    );
}

/// Same with `shutdown()` (default policies drop periodic tasks).
#[test]
fn a_paused_task_completes_on_shutdown() {
    let pool = ScheduledThreadPool::new(1);
    let h = pool.schedule(|| 1, Duration::from_secs(3600)).unwrap();
    // One-shots can be paused too (pause is on every handle).
    let paused = h.pause();
    pool.shutdown();
    assert!(pool.await_termination(Duration::from_secs(5)));
    if paused {
        assert!(
            h.wait_timeout(Duration::from_secs(1)),
            "pool terminated but the paused one-shot is still {:?}",
            h.state()
        );
    }
}

// ---------- Checked and found sound (kept as regression tests) ----------

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
fn shutdown_and_last_drop_from_inside_a_task() {
    let pool = ScheduledThreadPool::builder()
        .core_threads(0)
        .build()
        .unwrap();
    let inner = pool.clone();
    let h = pool
        .submit(move || {
            inner.shutdown();
            assert!(!inner.await_termination(Duration::from_secs(1)));
            drop(inner);
            7
        })
        .unwrap();
    drop(pool);
    assert_eq!(h.join().unwrap(), 7);
}

/// `trigger()` on an idle timer's handle used to return true ("runs the task
/// now") while the worker's `rearm` silently pushed it back to its old
/// deadline. An idle timer fires on idleness only: `trigger` now says so by
/// returning false, and the timer is left exactly as it was.
#[test]
fn trigger_of_an_idle_timer_is_refused_and_changes_nothing() {
    let (clock, pool) = manual_pool(1);
    let timer = pool
        .idle_timer(Duration::from_secs(3600), || "fired")
        .unwrap();
    assert!(
        !timer.handle().trigger(),
        "an idle timer cannot be triggered"
    );
    assert!(pool.wait_idle(Duration::from_secs(2)));
    assert!(!timer.handle().is_done());
    assert_eq!(timer.handle().delay(), Duration::from_secs(3600));
    clock.advance(Duration::from_secs(3600));
    assert_eq!(timer.into_handle().join(), Ok("fired"));
}

/// The most basic form of the lane bump: zero-delay submissions racing on a
/// frozen manual clock. A submitter that took its seq before a racer but
/// pushes after it gets `now + 1 ns` and never runs until the clock moves.
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

/// A `tracing` subscriber is user code. `try_terminate` emits its
/// "pool terminated" INFO event while holding the pool lock
/// (shared.rs, `try_terminate`), so a subscriber that reads the pool it
/// observes (a metrics layer calling `queue_len()`) self-deadlocks.
#[test]
fn a_subscriber_reading_the_pool_on_its_events_does_not_deadlock() {
    use std::sync::OnceLock;
    use tracing::{Event, Subscriber};
    use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

    struct ReadsPool(Arc<OnceLock<ScheduledThreadPool>>);
    impl<S: Subscriber> Layer<S> for ReadsPool {
        fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
            if event.metadata().target().starts_with("schedpool") {
                if let Some(pool) = self.0.get() {
                    let _ = pool.queue_len();
                }
            }
        }
    }

    let cell = Arc::new(OnceLock::new());
    let pool = ScheduledThreadPool::new(1);
    cell.set(pool.clone()).ok().unwrap();
    let (tx, rx) = mpsc::channel();
    let layer_cell = cell.clone();
    std::thread::spawn(move || {
        let subscriber = tracing_subscriber::registry().with(ReadsPool(layer_cell));
        tracing::subscriber::with_default(subscriber, || {
            // No worker was ever started: shutdown terminates the pool
            // itself, under its lock, on this thread.
            pool.shutdown();
        });
        tx.send(()).unwrap();
    });
    assert!(
        rx.recv_timeout(Duration::from_secs(3)).is_ok(),
        "shutdown() deadlocked: the subscriber ran under the pool lock"
    );
}

// ===== a second review (the idle spin, the early leader, the waited mark) =====

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

/// A core-0 pool's worker leaves after its 10 ms keep-alive with nothing
/// queued. Before, the limit was computed once, before the wait: a worker
/// timing a far task that was then cancelled stayed (as leader of nothing)
/// until the cancelled task's old deadline, an hour here.
#[test]
fn a_core0_worker_leaves_after_a_cancel_empties_the_queue() {
    let pool = ScheduledThreadPool::new(0);
    let far = pool.schedule(|| (), Duration::from_secs(3600)).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(pool.pool_size(), 1, "one worker waits for the far task");
    assert!(far.cancel());
    let t0 = std::time::Instant::now();
    while pool.pool_size() != 0 {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the worker outlived its keep-alive by far"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // It comes back for new work.
    assert_eq!(pool.submit(|| 7).unwrap().join().unwrap(), 7);
}

/// A one-shot task is `DONE` a moment before its panic message is written
/// into its result cell: `last_failure` right after `is_done` returned
/// `None` in 15–22% of tries (review of the lazy result cell; the race
/// predates it). It now waits for the outcome of a finished task.
#[test]
fn last_failure_is_there_as_soon_as_the_handle_is_done() {
    let pool = ScheduledThreadPool::new(1);
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    for i in 0..500u32 {
        let h = pool
            .schedule(move || -> u32 { panic!("boom {i}") }, Duration::ZERO)
            .unwrap();
        while !h.is_done() {
            std::hint::spin_loop();
        }
        assert_eq!(h.last_failure(), Some(format!("boom {i}")), "try {i}");
        assert_eq!(h.failure_count(), 1);
    }
    std::panic::set_hook(previous);
    assert!(pool.shutdown().await_termination(Duration::from_secs(10)));
}

/// `PendingTask::run` whose handle is dropped during the run: the run kept
/// the result for the handle, and the `PendingTask`'s drop, then the last
/// reference, drops it. A panic from that `Drop` stays inside (as the
/// worker's `drop_quietly` does).
#[test]
fn a_pending_task_swallows_a_panicking_result_dropped_after_its_run() {
    struct PanicOnDrop;
    impl Drop for PanicOnDrop {
        fn drop(&mut self) {
            panic!("result dropped");
        }
    }
    let pool = ScheduledThreadPool::new(1);
    let (started_tx, started_rx) = mpsc::channel::<()>();
    let (dropped_tx, dropped_rx) = mpsc::channel::<()>();
    let handle = pool
        .schedule(
            move || {
                started_tx.send(()).unwrap();
                dropped_rx.recv().unwrap();
                PanicOnDrop
            },
            Duration::from_secs(3600),
        )
        .unwrap();
    let mut pending = pool.shutdown_now();
    assert_eq!(pending.len(), 1);
    let dropper = std::thread::spawn(move || {
        started_rx.recv().unwrap();
        drop(handle);
        dropped_tx.send(()).unwrap();
    });
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let task = pending.pop().unwrap();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || task.run()));
    std::panic::set_hook(previous);
    dropper.join().unwrap();
    assert!(
        outcome.is_ok(),
        "the result's Drop panic escaped PendingTask::run"
    );
}
