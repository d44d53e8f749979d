//! Async task bodies (feature `tokio`): `schedule_async` and `start_async`
//! on the periodic and calendar builders. The pool keeps the timing (never
//! early, deadline order, every periodic control, a ManualClock); the
//! futures run on a tokio runtime, and no runtime thread blocks.
//!
//! Timing: order and never-early are exact; lateness bounds are generous
//! (the machine is 2 busy cores).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use schedpool::{ManualClock, MissedTicks, OnFailure, ScheduledThreadPool, TaskError, TaskState};

/// Generous: this machine is shared.
const EVENTUALLY: Duration = Duration::from_secs(20);

/// Sets its flag when dropped: tells a future that was dropped (aborted)
/// from one that ran to its end.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn err_and_panic_are_failures_as_a_sync_body_s() {
    let failures = Arc::new(Mutex::new(Vec::new()));
    let seen = failures.clone();
    let pool = ScheduledThreadPool::builder()
        .core_threads(1)
        .failure_handler(move |f| {
            seen.lock()
                .unwrap()
                .push((f.is_panic(), f.message().to_owned()))
        })
        .build()
        .unwrap();

    // Err under the default OnFailure::Stop: the task stops, Failed.
    let h = pool
        .at_fixed_rate(Duration::from_millis(1))
        .start_async(|| async { Err::<(), _>("upstream down") })
        .unwrap();
    let err = tokio::time::timeout(EVENTUALLY, h)
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(err.failure_message(), Some("upstream down"));

    // A panic: Panicked, with its message.
    let h = pool
        .with_fixed_delay(Duration::from_millis(1))
        .start_async::<_, _, ()>(|| async {
            tokio::task::yield_now().await;
            panic!("async boom")
        })
        .unwrap();
    let err = tokio::time::timeout(EVENTUALLY, h)
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(err, TaskError::Panicked("async boom".into()));

    // OnFailure::Continue: counted, and the task goes on.
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let h = pool
        .with_fixed_delay(Duration::from_millis(1))
        .on_failure(OnFailure::Continue)
        .max_runs(3)
        .start_async(move || {
            let n = c.fetch_add(1, Ordering::SeqCst);
            async move {
                if n % 2 == 0 {
                    Err(format!("attempt {n} failed"))
                } else {
                    Ok(())
                }
            }
        })
        .unwrap();
    let handle = h;
    let deadline = Instant::now() + EVENTUALLY;
    while !handle.is_done() {
        assert!(Instant::now() < deadline, "three runs never ended");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert_eq!(handle.run_count(), 3);
    assert_eq!(handle.failure_count(), 2);
    assert_eq!(handle.last_failure().as_deref(), Some("attempt 2 failed"));
    assert_eq!(handle.join(), Ok(()));

    // A one-shot's panic too.
    let h = pool
        .schedule_async(|| async { panic!("one-shot boom") as u8 }, Duration::ZERO)
        .unwrap();
    let err = h.await.unwrap_err();
    assert_eq!(err, TaskError::Panicked("one-shot boom".into()));

    assert!(pool.wait_idle(EVENTUALLY));
    assert_eq!(
        *failures.lock().unwrap(),
        vec![
            (false, "upstream down".to_owned()),
            (true, "async boom".to_owned()),
            (false, "attempt 0 failed".to_owned()),
            (false, "attempt 2 failed".to_owned()),
            (true, "one-shot boom".to_owned()),
        ],
        "the pool's failure handler saw each failure, as a sync body's"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_lets_a_started_future_finish_abort_stops_it() {
    let pool = ScheduledThreadPool::new(1);
    for abort in [false, true] {
        let (started_tx, started_rx) = tokio::sync::oneshot::channel();
        let (finished, dropped) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let (f, d) = (finished.clone(), dropped.clone());
        let h = pool
            .schedule_async(
                move || async move {
                    let _guard = DropFlag(d);
                    let _ = started_tx.send(());
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    f.store(true, Ordering::SeqCst);
                    "answered"
                },
                Duration::ZERO,
            )
            .unwrap();
        started_rx.await.unwrap();
        let stopped_at = Instant::now();
        if abort {
            assert!(h.abort(), "abort stopped a running future");
            assert!(!h.abort(), "only once");
        } else {
            assert!(h.cancel(), "cancel(false) on a running task returns true");
        }
        assert!(
            h.is_cancelled() && h.is_done(),
            "the handle says so at once"
        );
        assert_eq!(h.await, Err(TaskError::Cancelled));
        assert!(pool.wait_idle(EVENTUALLY), "the run ends either way");
        assert!(dropped.load(Ordering::SeqCst));
        if abort {
            assert!(
                !finished.load(Ordering::SeqCst),
                "aborted at its await: the code after it never ran"
            );
            assert!(
                stopped_at.elapsed() < Duration::from_millis(200) + EVENTUALLY,
                "and the worker was freed"
            );
        } else {
            assert!(
                finished.load(Ordering::SeqCst),
                "cancel(false): the started future ran to its end"
            );
            assert!(stopped_at.elapsed() >= Duration::from_millis(150));
        }
    }
    // Abort before the run: the future is never made.
    let made = Arc::new(AtomicBool::new(false));
    let m = made.clone();
    let h = pool
        .schedule_async(
            move || {
                m.store(true, Ordering::SeqCst);
                async {}
            },
            Duration::from_millis(20),
        )
        .unwrap();
    assert!(h.abort());
    assert_eq!(h.await, Err(TaskError::Cancelled));
    tokio::time::sleep(Duration::from_millis(40)).await;
    assert!(!made.load(Ordering::SeqCst));
    assert_eq!(pool.queue_len(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abort_stops_a_periodic_task_mid_run() {
    let pool = ScheduledThreadPool::new(1);
    let runs = Arc::new(AtomicUsize::new(0));
    let (r, dropped) = (runs.clone(), Arc::new(AtomicBool::new(false)));
    let d = dropped.clone();
    let h = pool
        .at_fixed_rate(Duration::from_millis(5))
        .start_async(move || {
            let n = r.fetch_add(1, Ordering::SeqCst);
            let d = d.clone();
            async move {
                if n == 2 {
                    let _guard = DropFlag(d);
                    std::future::pending::<()>().await; // stuck: only abort ends it
                }
            }
        })
        .unwrap();
    let deadline = Instant::now() + EVENTUALLY;
    while runs.load(Ordering::SeqCst) < 3 {
        assert!(Instant::now() < deadline, "the third run never started");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert_eq!(h.state(), TaskState::Running);
    assert!(h.abort());
    assert_eq!(h.await, Err(TaskError::Cancelled));
    assert!(pool.wait_idle(EVENTUALLY), "the stuck run ended");
    assert!(dropped.load(Ordering::SeqCst));
    tokio::time::sleep(Duration::from_millis(30)).await;
    assert_eq!(runs.load(Ordering::SeqCst), 3, "no run after the abort");
}

/// The guide's pattern: the reply's arm decides with
/// `cancel_if_not_started()`, so a request racing its async timeout is
/// answered exactly once (replies and timeouts due at the same
/// millisecond).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_guide_s_async_timeout_pattern_answers_exactly_once() {
    const REQUESTS: usize = 2_000;
    let pool = ScheduledThreadPool::new(4);
    let answers: Arc<Vec<AtomicUsize>> =
        Arc::new((0..REQUESTS).map(|_| AtomicUsize::new(0)).collect());
    let timed_out = Arc::new(AtomicUsize::new(0));
    let mut requests = Vec::new();
    for id in 0..REQUESTS {
        let (pool, answers, timed_out) = (pool.clone(), answers.clone(), timed_out.clone());
        requests.push(tokio::spawn(async move {
            let (a, t) = (answers.clone(), timed_out.clone());
            let mut timeout = pool
                .schedule_async(
                    move || async move {
                        t.fetch_add(1, Ordering::SeqCst);
                        a[id].fetch_add(1, Ordering::SeqCst); // the 504
                    },
                    Duration::from_millis(3),
                )
                .unwrap();
            let reply = tokio::time::sleep(Duration::from_millis(3));
            tokio::select! {
                () = reply => if timeout.cancel_if_not_started() {
                    answers[id].fetch_add(1, Ordering::SeqCst); // the reply
                },
                _ = &mut timeout => {}
            }
        }));
    }
    for request in requests {
        tokio::time::timeout(EVENTUALLY, request)
            .await
            .unwrap()
            .unwrap();
    }
    assert!(pool.wait_idle(EVENTUALLY));
    let twice = answers
        .iter()
        .filter(|n| n.load(Ordering::SeqCst) > 1)
        .count();
    let never = answers
        .iter()
        .filter(|n| n.load(Ordering::SeqCst) == 0)
        .count();
    assert_eq!((twice, never), (0, 0), "answered twice, never");
    println!(
        "{} of {REQUESTS} timed out, the rest replied; none both",
        timed_out.load(Ordering::SeqCst)
    );
}

/// Shutdown treats a running async body as a running sync body:
/// `shutdown_now` does not return it, and termination waits for its future.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_waits_for_a_running_future() {
    let pool = ScheduledThreadPool::new(1);
    let (started_tx, started_rx) = tokio::sync::oneshot::channel();
    let h = pool
        .schedule_async(
            move || async move {
                let _ = started_tx.send(());
                tokio::time::sleep(Duration::from_millis(100)).await;
                "finished"
            },
            Duration::ZERO,
        )
        .unwrap();
    let queued = pool
        .schedule_async(|| async { "queued" }, Duration::from_secs(3600))
        .unwrap();
    started_rx.await.unwrap();
    let stopped = Instant::now();
    let pending = pool.shutdown_now();
    assert_eq!(pending.len(), 1, "only the task that had not started");
    drop(pending);
    assert_eq!(queued.await, Err(TaskError::Cancelled));
    assert!(!pool.is_terminated(), "the running future holds its worker");
    tokio::time::timeout(EVENTUALLY, pool.terminated())
        .await
        .unwrap();
    assert!(stopped.elapsed() >= Duration::from_millis(50));
    assert_eq!(h.await, Ok("finished"));
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

/// A runtime with one worker thread makes progress while the pool is
/// busy with async runs: the pool's workers wait for the futures, the
/// runtime's one thread never does.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_one_thread_runtime_progresses_while_the_pool_is_busy() {
    let pool = ScheduledThreadPool::new(2);
    let ticks = Arc::new(AtomicUsize::new(0));
    let worst_gap = Arc::new(Mutex::new(Duration::ZERO));
    let (t, w) = (ticks.clone(), worst_gap.clone());
    let ticker = tokio::spawn(async move {
        let mut last = Instant::now();
        loop {
            tokio::time::sleep(Duration::from_millis(1)).await;
            let now = Instant::now();
            let mut worst = w.lock().unwrap();
            *worst = (*worst).max(now - last);
            last = now;
            t.fetch_add(1, Ordering::Relaxed);
        }
    });
    // Both pool workers busy for the whole test: each run waits 100 ms on
    // its future, 20 runs queued behind two workers (about a second).
    let busy = Instant::now();
    let handles: Vec<_> = (0..20)
        .map(|i| {
            pool.schedule_async(
                move || async move {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    i
                },
                Duration::ZERO,
            )
            .unwrap()
        })
        .collect();
    let mut outputs = Vec::new();
    for h in handles {
        outputs.push(tokio::time::timeout(EVENTUALLY, h).await.unwrap().unwrap());
    }
    let busy = busy.elapsed();
    ticker.abort();
    assert_eq!(outputs, (0..20).collect::<Vec<_>>());
    assert!(
        busy >= Duration::from_millis(900),
        "two workers, twenty 100 ms runs: at least 1 s, not {busy:?}"
    );
    let ticks = ticks.load(Ordering::Relaxed);
    assert!(
        ticks >= 50,
        "the runtime's one thread ticked only {ticks} times in {busy:?}"
    );
    let worst = *worst_gap.lock().unwrap();
    assert!(
        worst < Duration::from_millis(500),
        "the runtime's one thread stalled for {worst:?}"
    );
}

/// On a current-thread runtime the awaiting thread is the one that runs
/// the futures: awaiting an async handle must not block it.
#[tokio::test(flavor = "current_thread")]
async fn a_current_thread_runtime_runs_the_futures_it_awaits() {
    let pool = ScheduledThreadPool::new(2);
    let h = pool
        .schedule_async(
            || async {
                tokio::time::sleep(Duration::from_millis(10)).await;
                7
            },
            Duration::from_millis(5),
        )
        .unwrap();
    assert_eq!(tokio::time::timeout(EVENTUALLY, h).await.unwrap(), Ok(7));
}

#[test]
fn no_runtime_is_a_clear_error_not_a_panic() {
    let pool = ScheduledThreadPool::new(1);
    let err = pool
        .schedule_async(|| async {}, Duration::ZERO)
        .unwrap_err();
    assert!(err.is_invalid_argument());
    assert!(err.to_string().contains("tokio runtime"), "{err}");
    let err = pool
        .at_fixed_rate(Duration::from_secs(1))
        .start_async(|| async {})
        .unwrap_err();
    assert!(err.is_invalid_argument());
    assert_eq!(pool.queue_len(), 0, "nothing was queued");
}

/// A runtime that shuts down under a running future: the run fails (a
/// periodic task's Failed, a one-shot's Panicked), nothing hangs.
#[test]
fn a_runtime_shut_down_under_a_future_fails_the_run() {
    let pool = ScheduledThreadPool::new(2);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_time()
        .build()
        .unwrap();
    let (started_tx, started_rx) = std::sync::mpsc::channel();
    let s = started_tx.clone();
    let one = pool
        .schedule_async_on(
            runtime.handle(),
            move || async move {
                let _ = s.send(());
                std::future::pending::<u8>().await
            },
            Duration::ZERO,
        )
        .unwrap();
    let periodic = pool
        .with_fixed_delay(Duration::from_secs(1))
        .runtime(runtime.handle().clone())
        .start_async(move || {
            let s = started_tx.clone();
            async move {
                let _ = s.send(());
                std::future::pending::<()>().await
            }
        })
        .unwrap();
    started_rx.recv_timeout(EVENTUALLY).unwrap();
    started_rx.recv_timeout(EVENTUALLY).unwrap();
    runtime.shutdown_background();
    let err = one.join().unwrap_err();
    assert!(
        err.panic_message().is_some_and(|m| m.contains("shut down")),
        "{err:?}"
    );
    let err = periodic.join().unwrap_err();
    assert!(
        err.failure_message()
            .is_some_and(|m| m.contains("shut down")),
        "{err:?}"
    );
}

/// A task due after its runtime was dropped: the run fails at once (spawn
/// on a runtime that is gone), and the task is not lost or stuck.
#[test]
fn a_task_due_after_its_runtime_is_gone_fails_its_run() {
    let pool = ScheduledThreadPool::new(1);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let one = pool
        .schedule_async_on(runtime.handle(), || async { 1 }, Duration::from_millis(20))
        .unwrap();
    let periodic = pool
        .with_fixed_delay(Duration::from_millis(1))
        .initial_delay(Duration::from_millis(20))
        .on_failure(OnFailure::Continue)
        .max_runs(3)
        .runtime(runtime.handle().clone())
        .start_async(|| async {})
        .unwrap();
    drop(runtime);
    let err = one.join().unwrap_err();
    assert!(
        err.panic_message().is_some_and(|m| m.contains("shut down")),
        "{err:?}"
    );
    assert!(periodic.wait_timeout(EVENTUALLY));
    assert_eq!(periodic.failure_count(), 3, "each run failed, none hung");
    assert_eq!(periodic.join(), Ok(()));
}

#[test]
fn an_async_handle_is_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<schedpool::AsyncHandle<String>>();
    send_sync::<schedpool::AsyncHandle<()>>();
}

/// `shutdown_now` hands back an async task unrun; run on a runtime
/// thread, it fails at once instead of blocking that thread.
#[tokio::test(flavor = "current_thread")]
async fn a_pending_async_task_run_on_a_runtime_thread_fails_without_blocking() {
    let pool = ScheduledThreadPool::new(1);
    let h = pool
        .schedule_async(|| async { 1 }, Duration::from_secs(3600))
        .unwrap();
    let pending = pool.shutdown_now();
    assert_eq!(pending.len(), 1);
    for task in pending {
        task.run();
    }
    let err = h.await.unwrap_err();
    assert!(
        err.panic_message()
            .is_some_and(|m| m.contains("runtime thread")),
        "{err:?}"
    );
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
