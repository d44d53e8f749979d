//! One-shot tasks: execute, submit, schedule; order, FIFO, counters, threads
//! (lazy, core 0), and tasks that schedule more tasks.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{eventually, named_pool, Gate, Log, PoolGuard, EVENTUALLY};
use schedpool::ScheduledThreadPool;

#[test]
fn schedule_never_runs_early() {
    let pool = PoolGuard(ScheduledThreadPool::new(2));
    let handles: Vec<_> = (0..20u64)
        .map(|i| {
            let delay = Duration::from_millis(i * 3);
            let start = Instant::now();
            (
                delay,
                pool.schedule(move || start.elapsed(), delay).unwrap(),
            )
        })
        .collect();
    for (delay, h) in handles {
        let ran_after = h.join().unwrap();
        assert!(
            ran_after >= delay,
            "ran after {ran_after:?}, due after {delay:?}"
        );
        assert!(ran_after < delay + Duration::from_secs(10), "absurdly late");
    }
}

/// The leader wakes early (by the OS's usual delay) and spins to the
/// deadline, and a new head kicks the spin short. Thousands of sub-millisecond
/// delays, submitted in bursts and gaps so every path is taken: none may run
/// before its deadline. (Lateness is not asserted: this is a shared machine.)
#[test]
fn short_delays_never_run_early_while_the_leader_spins() {
    let pool = PoolGuard(ScheduledThreadPool::new(2));
    let early = Arc::new(AtomicUsize::new(0));
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut handles = Vec::new();
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(1) {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let delay = Duration::from_micros(if seed % 4 == 0 { 0 } else { (seed >> 8) % 400 });
        let due = Instant::now() + delay;
        let early = early.clone();
        handles.push(
            pool.schedule(
                move || {
                    if Instant::now() < due {
                        early.fetch_add(1, Ordering::Relaxed);
                    }
                },
                delay,
            )
            .unwrap(),
        );
        if seed % 3 == 0 {
            std::thread::sleep(Duration::from_micros((seed >> 16) % 300));
        }
    }
    let n = handles.len();
    for h in handles {
        h.join().unwrap();
    }
    assert!(n > 100, "only {n} tasks were submitted");
    assert_eq!(
        early.load(Ordering::Relaxed),
        0,
        "tasks ran before their deadline"
    );
}

#[test]
fn execute_is_fifo_on_one_thread() {
    let pool = PoolGuard(ScheduledThreadPool::new(1));
    let gate = Gate::new();
    let g = gate.clone();
    pool.execute(move || g.wait()).unwrap();
    let log = Log::new();
    for i in 0..1000 {
        let log = log.clone();
        if i % 3 == 0 {
            pool.schedule(move || log.push(i), Duration::ZERO)
                .unwrap()
                .detach();
        } else {
            pool.execute(move || log.push(i)).unwrap();
        }
    }
    gate.open();
    eventually("all ran", || log.len() == 1000);
    assert_eq!(log.get(), (0..1000).collect::<Vec<_>>());
}

#[test]
fn mixed_delays_run_in_deadline_order() {
    let pool = PoolGuard(ScheduledThreadPool::new(1));
    let log = Log::new();
    // 100 ms apart: only a pause that long between two submissions (whose
    // deadlines are read one call at a time) could reorder them.
    let delays = [500u64, 100, 400, 0, 300, 200];
    for d in delays {
        let log = log.clone();
        pool.schedule(move || log.push(d), Duration::from_millis(d))
            .unwrap()
            .detach();
    }
    eventually("all ran", || log.len() == delays.len());
    assert_eq!(log.get(), vec![0, 100, 200, 300, 400, 500]);
}

#[test]
fn submit_returns_the_value() {
    let pool = PoolGuard(ScheduledThreadPool::new(2));
    let h = pool.submit(|| vec![1, 2, 3]).unwrap();
    assert_eq!(h.join().unwrap(), vec![1, 2, 3]);
    let h = pool.submit(|| "x".to_string()).unwrap();
    assert!(h.wait_timeout(common::EVENTUALLY));
    assert!(h.is_done() && !h.is_cancelled());
    assert_eq!(h.delay(), Duration::ZERO);
    assert_eq!(h.join().unwrap(), "x");
}

#[test]
fn threads_start_lazily_one_per_submission_up_to_core() {
    let pool = PoolGuard(
        ScheduledThreadPool::builder()
            .core_threads(3)
            .thread_name("lazy")
            .build()
            .unwrap(),
    );
    assert_eq!(pool.pool_size(), 0, "no thread before the first task");
    let gate = Gate::new();
    let names = Log::new();
    for _ in 0..5 {
        let (g, names) = (gate.clone(), names.clone());
        pool.execute(move || {
            names.push(std::thread::current().name().unwrap().to_string());
            g.wait();
        })
        .unwrap();
    }
    eventually("three running", || pool.active_count() == 3);
    assert_eq!(pool.pool_size(), 3);
    gate.open();
    eventually("all ran", || names.len() == 5);
    let mut distinct = names.get();
    distinct.sort();
    distinct.dedup();
    assert!(
        distinct
            .iter()
            .all(|n| ["lazy-0", "lazy-1", "lazy-2"].contains(&n.as_str())),
        "{distinct:?}"
    );
}

#[test]
fn counters_follow_the_work() {
    let pool = PoolGuard(ScheduledThreadPool::new(1));
    assert_eq!(
        (
            pool.task_count(),
            pool.completed_task_count(),
            pool.queue_len()
        ),
        (0, 0, 0)
    );
    let gate = Gate::new();
    let g = gate.clone();
    pool.execute(move || g.wait()).unwrap();
    eventually("running", || pool.active_count() == 1);
    for _ in 0..3 {
        pool.schedule(|| {}, Duration::from_millis(1))
            .unwrap()
            .detach();
    }
    assert_eq!(pool.task_count(), 4);
    assert_eq!(pool.queue_len(), 3);
    assert_eq!(pool.completed_task_count(), 0);
    gate.open();
    eventually("all completed", || pool.completed_task_count() == 4);
    assert_eq!(pool.queue_len(), 0);
    eventually("idle", || pool.active_count() == 0);
}

#[test]
fn zero_core_threads_still_runs_tasks_with_one_thread() {
    let pool = PoolGuard(ScheduledThreadPool::new(0));
    let ran = Arc::new(AtomicUsize::new(0));
    let r = ran.clone();
    let h = pool
        .schedule(
            move || r.fetch_add(1, Ordering::SeqCst),
            Duration::from_millis(12),
        )
        .unwrap();
    assert_eq!(pool.pool_size(), 1, "exactly one thread even with core 0");
    h.join().unwrap();
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    eventually("the keep-alive lets the worker go", || {
        pool.pool_size() == 0
    });
    // And the pool starts a new one for the next task.
    assert_eq!(pool.submit(|| 5).unwrap().join().unwrap(), 5);
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

#[test]
fn tasks_can_schedule_more_tasks() {
    let pool = PoolGuard(ScheduledThreadPool::new(2));
    let count = Arc::new(AtomicUsize::new(0));
    fn chain(pool: ScheduledThreadPool, count: Arc<AtomicUsize>, left: usize) {
        count.fetch_add(1, Ordering::SeqCst);
        if left > 0 {
            let p = pool.clone();
            pool.execute(move || chain(p, count, left - 1)).unwrap();
        }
    }
    let (p, c) = (pool.0.clone(), count.clone());
    pool.execute(move || chain(p, c, 10_000)).unwrap();
    eventually("10,001 chained tasks ran", || {
        count.load(Ordering::SeqCst) == 10_001
    });
}

#[test]
fn ten_thousand_chained_follow_ups() {
    const N: usize = 10_000;
    let pool = named_pool(2, "chain");
    let seen = Arc::new(Mutex::new(Vec::with_capacity(N)));
    let (done, finished) = mpsc::channel();

    fn link(
        pool: ScheduledThreadPool,
        i: usize,
        seen: Arc<Mutex<Vec<usize>>>,
        done: mpsc::Sender<()>,
    ) {
        seen.lock().unwrap().push(i);
        if i + 1 == N {
            done.send(()).unwrap();
            return;
        }
        let next = pool.clone();
        // Every other link is delayed a little, to mix due and timed paths.
        let delay = if i % 100 == 0 {
            Duration::from_micros(100)
        } else {
            Duration::ZERO
        };
        pool.schedule(move || link(next, i + 1, seen, done), delay)
            .expect("follow-up rejected")
            .detach();
    }

    let (p, s) = (pool.0.clone(), seen.clone());
    pool.execute(move || link(p, 0, s, done)).unwrap();
    finished
        .recv_timeout(EVENTUALLY)
        .expect("chain did not finish");
    assert_eq!(*seen.lock().unwrap(), (0..N).collect::<Vec<_>>());
    assert_eq!(pool.task_count(), N as u64);
    eventually("all counted", || pool.completed_task_count() == N as u64);
}

/// A worker asleep until a far task is woken by a near one submitted next
/// (which goes to the near-future wheel, not the heap): on the real clock,
/// where nothing else would wake it before the far deadline.
#[test]
fn a_near_task_behind_a_far_one_runs_on_time() {
    let pool = PoolGuard(ScheduledThreadPool::new(1));
    let _far = pool.schedule(|| (), Duration::from_secs(5)).unwrap();
    // Give the worker time to start timing the far head.
    std::thread::sleep(Duration::from_millis(50));
    let (tx, rx) = std::sync::mpsc::channel();
    let start = Instant::now();
    let _near = pool
        .schedule(
            move || tx.send(Instant::now()).unwrap(),
            Duration::from_millis(2),
        )
        .unwrap();
    let ran = rx.recv_timeout(EVENTUALLY).expect("the near task ran");
    // A missed wake-up runs it at the far deadline, about 5 s out.
    assert!(
        ran - start < Duration::from_secs(2),
        "ran {:?} after submission",
        ran - start
    );
}

#[test]
fn a_huge_timer_slack_does_not_hold_back_a_timed_task() {
    // The slack is how late the OS may fire a worker's timed wait; unclamped,
    // an hour (or Duration::MAX) let a task due in 20 ms wait that long.
    for slack in [Duration::from_secs(3600), Duration::MAX] {
        let pool = PoolGuard(
            ScheduledThreadPool::builder()
                .core_threads(1)
                .timer_slack(Some(slack))
                .build()
                .unwrap(),
        );
        let start = Instant::now();
        let h = pool
            .schedule(move || start.elapsed(), Duration::from_millis(20))
            .unwrap();
        assert!(
            h.wait_timeout(Duration::from_secs(2)),
            "with timer_slack({slack:?}), a task due in 20 ms had not run after 2 s"
        );
        assert!(
            h.join().unwrap() >= Duration::from_millis(20),
            "never early"
        );
    }
}

#[test]
fn new_with_more_threads_than_the_maximum_clamps_instead_of_panicking() {
    // Threads start lazily, so asking for many starts none until used.
    let pool = PoolGuard(ScheduledThreadPool::new(usize::MAX));
    assert_eq!(pool.core_threads(), 32_768, "clamped to the maximum");
    assert_eq!(pool.submit(|| 7).unwrap().join(), Ok(7));
    assert_eq!(pool.pool_size(), 1, "one submission, one thread");
    let pool = PoolGuard(ScheduledThreadPool::new(32_769));
    assert_eq!(pool.core_threads(), 32_768);
    // The builder stays strict: it says what was wrong.
    let err = ScheduledThreadPool::builder()
        .core_threads(32_769)
        .build()
        .unwrap_err();
    assert!(err.is_too_many_threads());
    assert!(!err.is_invalid_thread_name());
    assert!(err.to_string().contains("32768"), "{err}");
    // Its own type, a std Error, and an io::Error (InvalidInput) for `?`.
    let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(err.clone());
    assert!(boxed.source().is_none());
    let io: std::io::Error = err.clone().into();
    assert_eq!(io.kind(), std::io::ErrorKind::InvalidInput);
    assert_eq!(io.to_string(), err.to_string());
    fn io_code() -> std::io::Result<ScheduledThreadPool> {
        Ok(ScheduledThreadPool::builder().thread_name("a\0b").build()?)
    }
    let io = io_code().map(|_| ()).unwrap_err();
    assert_eq!(io.kind(), std::io::ErrorKind::InvalidInput);
    let inner = io.into_inner().expect("the BuildError inside");
    assert!(inner
        .downcast_ref::<schedpool::BuildError>()
        .is_some_and(schedpool::BuildError::is_invalid_thread_name));
}
