//! Failures: a run that panics or whose body returns `Err`. Workers
//! survive, handles report (at once), periodic tasks stop (or follow their
//! `OnFailure` policy), an `Err` is seen exactly as a panic is, and panics in user code around a body are contained: in the `Drop` of a
//! captured value, a result or a panic payload, in a `RunOutcome`, and in a
//! delay-queue element's `Drop` or `deadline()`.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{eventually, named_pool, PoolGuard, EVENTUALLY};
use schedpool::{DelayQueue, Delayed, Next, RunOutcome, ScheduledThreadPool, TaskError, TaskState};

#[test]
fn a_panicking_task_does_not_kill_its_worker() {
    let pool = PoolGuard(ScheduledThreadPool::new(1));
    let h = pool.submit(|| -> u32 { panic!("boom {}", 42) }).unwrap();
    let err = h.join().unwrap_err();
    assert_eq!(err, TaskError::Panicked("boom 42".into()));
    assert_eq!(err.panic_message(), Some("boom 42"));
    assert!(err.to_string().contains("boom 42"));
    assert_eq!(
        pool.submit(|| 1).unwrap().join(),
        Ok(1),
        "the worker is alive"
    );
    assert_eq!(pool.pool_size(), 1);
}

#[test]
fn a_periodic_task_that_panics_runs_no_more() {
    let pool = PoolGuard(ScheduledThreadPool::new(2));
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let h = pool
        .schedule_at_fixed_rate(
            move || {
                if r.fetch_add(1, Ordering::SeqCst) + 1 == 3 {
                    panic!("third run fails");
                }
            },
            Duration::ZERO,
            Duration::from_millis(1),
        )
        .unwrap();
    assert_eq!(h.join(), Err(TaskError::Panicked("third run fails".into())));
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(runs.load(Ordering::SeqCst), 3, "no 4th run");
    assert_eq!(pool.queue_len(), 0);
}

#[test]
fn non_string_payloads_are_reported() {
    let pool = PoolGuard(ScheduledThreadPool::new(1));
    let h = pool.submit(|| std::panic::panic_any(17u8)).unwrap();
    let err = h.join().unwrap_err();
    assert!(err.is_panic());
    assert!(err.panic_message().unwrap().contains("not a string"));
}

#[test]
fn many_panics_keep_the_pool_healthy() {
    let pool = PoolGuard(ScheduledThreadPool::new(2));
    let handles: Vec<_> = (0..200)
        .map(|i| {
            pool.submit(move || if i % 2 == 0 { panic!("even {i}") } else { i })
                .unwrap()
        })
        .collect();
    let (mut ok, mut failed) = (0, 0);
    for h in handles {
        match h.join() {
            Ok(_) => ok += 1,
            Err(e) => {
                assert!(e.is_panic());
                failed += 1;
            }
        }
    }
    assert_eq!((ok, failed), (100, 100));
    eventually("all counted", || pool.completed_task_count() == 200);
    assert_eq!(pool.pool_size(), 2);
}

/// A one-shot task is `DONE` a moment before its panic message is written
/// into its result cell: `last_failure` right after `is_done` returned
/// `None` in 15–22% of tries. It now waits for the outcome of a finished
/// task.
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

// ===== panics inside Drop =====

/// Panics when dropped (unless already panicking).
struct Bomb(Arc<AtomicUsize>);

impl Drop for Bomb {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
        if !std::thread::panicking() {
            panic!("bomb dropped");
        }
    }
}

#[test]
fn a_panic_inside_a_captured_values_drop_is_contained() {
    struct Bomb;
    impl Drop for Bomb {
        fn drop(&mut self) {
            panic!("drop bomb");
        }
    }
    let pool = PoolGuard(ScheduledThreadPool::new(1));
    // Dropped at the end of the run.
    let bomb = Bomb;
    let h = pool
        .submit(move || {
            let _b = bomb;
            5
        })
        .unwrap();
    // The panic in Drop happens inside the task body: reported as a panic.
    assert!(h.join().unwrap_err().is_panic());
    // Dropped by cancel, on the cancelling thread: swallowed.
    let bomb = Bomb;
    let h = pool
        .schedule(
            move || {
                let _b = &bomb;
            },
            Duration::from_secs(3600),
        )
        .unwrap();
    assert!(h.cancel());
    // A result whose drop panics, discarded because its task was cancelled.
    assert_eq!(pool.submit(|| 1).unwrap().join(), Ok(1), "worker alive");
}

#[test]
fn captured_value_panics_in_drop_after_the_body_ran() {
    let pool = named_pool(1, "bomb-run");
    let drops = Arc::new(AtomicUsize::new(0));
    let bomb = Bomb(drops.clone());
    let h = pool
        .submit(move || {
            let _keep = &bomb; // captured by value, dropped when the call ends
            7
        })
        .unwrap();
    // The call of the closure panicked (in the drop of its capture): the
    // handle reports the panic, nothing escapes into the worker.
    match h.join() {
        // `Panic` derefs to its message, as the `String` it replaced did.
        Err(TaskError::Panicked(msg)) => assert!(msg.contains("bomb dropped"), "{msg}"),
        other => panic!("expected Panicked, got {other:?}"),
    }
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    let first = pool
        .submit(|| std::thread::current().id())
        .unwrap()
        .join()
        .unwrap();
    let again = pool
        .submit(|| std::thread::current().id())
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(first, again, "the worker survived");
    assert_eq!(pool.pool_size(), 1);
}

#[test]
fn captured_value_panics_in_drop_when_cancelled_or_shut_down() {
    let pool = named_pool(1, "bomb-cancel");
    let drops = Arc::new(AtomicUsize::new(0));
    // cancel: the closure is dropped by cancel, its panic swallowed.
    let bomb = Bomb(drops.clone());
    let h = pool
        .schedule(move || drop(bomb), Duration::from_secs(3600))
        .unwrap();
    assert!(h.cancel());
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    assert_eq!(h.join(), Err(TaskError::Cancelled));

    // a periodic task cancelled by shutdown, and a pending task dropped.
    let bomb = Bomb(drops.clone());
    let periodic = pool
        .schedule_at_fixed_rate(
            move || {
                let _ = &bomb;
            },
            Duration::from_secs(3600),
            Duration::from_secs(1),
        )
        .unwrap();
    let bomb = Bomb(drops.clone());
    let later = pool
        .schedule(move || drop(bomb), Duration::from_secs(3600))
        .unwrap();
    let pending = pool.shutdown_now();
    assert_eq!(pending.len(), 2);
    drop(pending);
    assert_eq!(drops.load(Ordering::SeqCst), 3);
    assert_eq!(periodic.join(), Err(TaskError::Cancelled));
    assert_eq!(later.join(), Err(TaskError::Cancelled));
    assert!(pool.await_termination(EVENTUALLY));
}

/// A task's *result* panics when dropped, and nobody holds the handle: the
/// last reference to the result goes away on the worker, after the task's
/// `catch_unwind`. The pool must keep working, and the worker must survive
/// (no task panic kills a worker).
#[test]
fn result_value_panics_in_drop_with_the_handle_gone() {
    let pool = named_pool(1, "bomb-result");
    let drops = Arc::new(AtomicUsize::new(0));
    let d = drops.clone();
    let worker_before = pool
        .submit(|| std::thread::current().id())
        .unwrap()
        .join()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    let h = pool
        .schedule(
            move || {
                rx.recv_timeout(EVENTUALLY).unwrap();
                Bomb(d)
            },
            Duration::ZERO,
        )
        .unwrap();
    drop(h);
    tx.send(()).unwrap();
    eventually("the result was dropped", || {
        drops.load(Ordering::SeqCst) == 1
    });
    // The pool keeps working ...
    assert_eq!(pool.submit(|| 5).unwrap().join(), Ok(5));
    let worker_after = pool
        .submit(|| std::thread::current().id())
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(pool.pool_size(), 1);
    // ... on the same worker thread.
    assert_eq!(
        worker_before, worker_after,
        "a panic in a result's Drop killed the worker thread"
    );
}

/// A task panics with a payload whose own Drop panics: the pool drops the
/// payload without letting the second panic out (or aborting).
#[test]
fn panic_payload_panics_in_drop() {
    let pool = named_pool(1, "bomb-payload");
    let drops = Arc::new(AtomicUsize::new(0));
    let d = drops.clone();
    let worker_before = pool
        .submit(|| std::thread::current().id())
        .unwrap()
        .join()
        .unwrap();
    let h = pool
        .submit(move || -> u32 { std::panic::panic_any(Bomb(d)) })
        .unwrap();
    assert!(matches!(h.join(), Err(TaskError::Panicked(_))));
    // The payload may be dropped just after the handle completes.
    eventually("payload dropped", || drops.load(Ordering::SeqCst) == 1);
    let d = drops.clone();
    let periodic = pool
        .schedule_with_fixed_delay(
            move || -> () { std::panic::panic_any(Bomb(d.clone())) },
            Duration::ZERO,
            Duration::from_millis(1),
        )
        .unwrap();
    assert!(matches!(periodic.join(), Err(TaskError::Panicked(_))));
    eventually("payload dropped", || drops.load(Ordering::SeqCst) == 2);
    let worker_after = pool
        .submit(|| std::thread::current().id())
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(worker_before, worker_after, "the worker died");
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

// ===== a panicking RunOutcome =====

struct Exploding;

impl RunOutcome for Exploding {
    fn into_next(self) -> Result<Next, String> {
        panic!("into_next exploded");
    }
}

/// `RunOutcome` is a public, unsealed trait; `into_next` is user code. Its
/// panic must not escape into the worker (the task would stay RUNNING
/// forever and its handle never complete): the handle completes.
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

// ===== the delay queue's elements =====

/// A queue element whose Drop panics, dropped by `clear`: the panic reaches
/// the caller of `clear` (after the lock is released), every element is
/// dropped once, and the queue stays usable and consistent. A `Delayed`
/// whose `deadline()` panics leaves the queue untouched.
#[test]
fn delay_queue_elements_that_panic() {
    struct Boom(#[allow(dead_code)] Bomb, Instant);
    impl Delayed for Boom {
        fn deadline(&self) -> Instant {
            self.1
        }
    }
    struct BadDeadline;
    impl Delayed for BadDeadline {
        fn deadline(&self) -> Instant {
            panic!("no deadline")
        }
    }
    let drops = Arc::new(AtomicUsize::new(0));
    let q = DelayQueue::new();
    for i in 0..3 {
        q.put(Boom(
            Bomb(drops.clone()),
            Instant::now() + Duration::from_secs(60 + i),
        ));
    }
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| q.clear()));
    assert!(result.is_err(), "the element's panic reaches the caller");
    assert_eq!(
        drops.load(Ordering::SeqCst),
        3,
        "every element dropped once"
    );
    assert!(q.is_empty());
    schedpool::internals::check_delay_queue(&q).unwrap();
    q.put(Boom(Bomb(drops.clone()), Instant::now()));
    let item = q.poll().expect("usable after the panic");
    std::mem::forget(item);

    let q2: DelayQueue<BadDeadline> = DelayQueue::new();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| q2.put(BadDeadline)));
    assert!(result.is_err());
    assert!(q2.is_empty());
    schedpool::internals::check_delay_queue(&q2).unwrap();
    assert!(q2.poll().is_none());
}

// ===== bodies that return Err =====

#[derive(Debug)]
struct HealthError(u32);

impl std::fmt::Display for HealthError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "health check failed: status {}", self.0)
    }
}

/// A fixed-rate body returning `Result<(), E>`: under the default
/// `OnFailure::Stop`, the first `Err` stops it and completes the handle with
/// `TaskError::Failed(text)`; `failure_count`, `last_failure`, the failure
/// handler, the after hook and both counters see it, as a panic.
#[test]
fn an_err_from_a_periodic_body_is_a_failure_seen_as_a_panic_is() {
    use schedpool::{ManualClock, OnFailure};
    let seen: common::Log<(bool, String)> = common::Log::new();
    let after: common::Log<Option<String>> = common::Log::new();
    let (s, a) = (seen.clone(), after.clone());
    let clock = ManualClock::new();
    let pool = PoolGuard(
        ScheduledThreadPool::builder()
            .core_threads(1)
            .clock(clock.clone())
            .failure_handler(move |f| s.push((f.is_panic(), f.message().to_owned())))
            .after_execute(move |_, failure| a.push(failure.map(str::to_owned)))
            .build()
            .unwrap(),
    );
    let mut runs = 0;
    let h = pool
        .schedule_at_fixed_rate(
            move || -> Result<(), HealthError> {
                runs += 1;
                if runs == 3 {
                    Err(HealthError(503))
                } else {
                    Ok(())
                }
            },
            Duration::ZERO,
            Duration::from_secs(1),
        )
        .unwrap();
    clock.advance(Duration::from_secs(10));
    assert_eq!(
        h.join(),
        Err(TaskError::Failed("health check failed: status 503".into()))
    );
    eventually("reported", || seen.len() == 1 && after.len() == 3);
    assert_eq!(
        seen.get(),
        vec![(false, "health check failed: status 503".to_owned())]
    );
    assert_eq!(
        after.get(),
        vec![
            None,
            None,
            Some("health check failed: status 503".to_owned())
        ]
    );
    let stats = pool.stats();
    assert_eq!((stats.failed, stats.panicked), (1, 0));

    // Continue: the schedule goes on; the handle counts and keeps the text.
    let mut n = 0u32;
    let h = pool
        .with_fixed_delay(Duration::from_secs(1))
        .on_failure(OnFailure::Continue)
        .max_runs(4)
        .start(move || -> Result<(), String> {
            n += 1;
            if n % 2 == 0 {
                Err(format!("odd run {n}"))
            } else {
                Ok(())
            }
        })
        .unwrap();
    for _ in 0..4 {
        assert!(pool.wait_idle(EVENTUALLY));
        clock.advance(Duration::from_secs(1));
    }
    assert_eq!(h.join(), Ok(()), "Continue: the run limit ends it");
    assert_eq!(pool.stats().failed, 3);
}

/// The shapes a Rust user writes compile and report: `io::Result`,
/// `Box<dyn Error>` (not `Send`), `&str`; a steering body's `Result<Next, E>`
/// and `Result<Option<Duration>, E>`; and `execute` with an `Err`, which has
/// no handle and would otherwise vanish.
#[test]
fn common_result_shapes_compile_and_fail_the_run() {
    use schedpool::{ManualClock, Next, OnFailure};
    let clock = ManualClock::new();
    let pool = PoolGuard(
        ScheduledThreadPool::builder()
            .core_threads(1)
            .clock(clock.clone())
            .build()
            .unwrap(),
    );
    let io = pool
        .schedule_with_fixed_delay(
            || -> std::io::Result<()> { Err(std::io::Error::other("disk full")) },
            Duration::ZERO,
            Duration::from_secs(1),
        )
        .unwrap();
    let boxed = pool
        .at_fixed_rate(Duration::from_secs(1))
        .start(|| -> Result<(), Box<dyn std::error::Error>> { Err("parse failed".into()) })
        .unwrap();
    let mut polls = 0;
    let steering = pool
        .at_fixed_rate(Duration::from_secs(1))
        .on_failure(OnFailure::Backoff {
            initial: Duration::from_secs(5),
            max: Duration::from_secs(5),
        })
        .start_dynamic(move || -> Result<Next, &'static str> {
            polls += 1;
            match polls {
                1 => Err("upstream down"),
                2 => Ok(Next::Continue),
                _ => Ok(Next::Stop),
            }
        })
        .unwrap();
    let dynamic = pool
        .schedule_dynamic(
            || -> Result<Option<Duration>, HealthError> { Err(HealthError(500)) },
            Duration::ZERO,
        )
        .unwrap();
    pool.execute(|| -> Result<(), HealthError> { Err(HealthError(418)) })
        .unwrap();
    assert!(pool.wait_idle(EVENTUALLY));
    assert_eq!(io.join(), Err(TaskError::Failed("disk full".into())));
    assert_eq!(boxed.join(), Err(TaskError::Failed("parse failed".into())));
    assert_eq!(
        dynamic.join(),
        Err(TaskError::Failed("health check failed: status 500".into()))
    );
    assert_eq!(steering.failure_count(), 1);
    assert_eq!(steering.last_failure().as_deref(), Some("upstream down"));
    assert!(!steering.is_done(), "Backoff: retried in 5 s");
    clock.advance(Duration::from_secs(5));
    assert!(pool.wait_idle(EVENTUALLY));
    clock.advance(Duration::from_secs(1));
    assert_eq!(steering.join(), Ok(()));
    // io, boxed, dynamic, steering's first run and the execute.
    assert_eq!(pool.stats().failed, 5);
    assert_eq!(pool.stats().panicked, 0);
}

/// A one-shot task's `Result` is its value: the handle gives it back, and
/// it is not a failed run.
#[test]
fn a_one_shot_result_is_the_handles_value_not_a_failure() {
    let pool = PoolGuard(ScheduledThreadPool::new(1));
    let h = pool
        .submit(|| -> Result<u32, HealthError> { Err(HealthError(404)) })
        .unwrap();
    let id_failures = h.failure_count();
    assert!(matches!(h.join(), Ok(Err(HealthError(404)))));
    assert_eq!(id_failures, 0);
    assert_eq!(pool.stats().failed, 0);
}

/// `TaskError::Panicked` keeps the payload: `into_panic` gives it back, for
/// `resume_unwind` (a `String` payload as is; a non-string one goes to the
/// failure handler, and the handle's is the message).
#[test]
fn a_panicked_task_error_keeps_its_payload() {
    let pool = PoolGuard(ScheduledThreadPool::new(1));
    let code = std::hint::black_box(7);
    let err = pool
        .submit(move || -> u8 { panic!("code {code}") })
        .unwrap()
        .join()
        .unwrap_err();
    assert!(err.is_panic());
    let payload = err.into_panic();
    assert_eq!(
        payload.downcast_ref::<String>().map(String::as_str),
        Some("code 7")
    );
    let err = pool
        .submit(|| -> u8 { panic!("static") })
        .unwrap()
        .join()
        .unwrap_err();
    assert_eq!(err.into_panic().downcast_ref::<&str>(), Some(&"static"));
    let err = pool
        .submit(|| -> u8 { panic!("re-raised") })
        .unwrap()
        .join()
        .unwrap_err();
    let resumed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        std::panic::resume_unwind(err.into_panic())
    }))
    .unwrap_err();
    assert_eq!(resumed.downcast_ref::<&str>(), Some(&"re-raised"));
    // Not a panic: try_into_panic hands the error back.
    let h = pool.schedule(|| 1u8, Duration::from_secs(60)).unwrap();
    assert!(h.cancel());
    assert_eq!(
        h.join().unwrap_err().try_into_panic().unwrap_err(),
        TaskError::Cancelled
    );
}

/// A payload that is not a string goes, whole, to the pool's failure
/// handler (it is not `Clone`, so only one holder can have it); the handle's
/// `into_panic` then gives the message as a `String`, as `Panic`'s docs say.
#[test]
fn a_payload_of_another_type_goes_whole_to_the_failure_handler() {
    #[derive(Debug, PartialEq)]
    struct Code(u32);
    let (tx, rx) = mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    let pool = PoolGuard(
        ScheduledThreadPool::builder()
            .core_threads(1)
            .failure_handler(move |f| {
                let code = f.payload().downcast_ref::<Code>().map(|c| c.0);
                tx.lock().unwrap().send(code).unwrap();
            })
            .build()
            .unwrap(),
    );
    let err = pool
        .submit(|| -> u8 { std::panic::panic_any(Code(42)) })
        .unwrap()
        .join()
        .unwrap_err();
    assert!(err.is_panic());
    let payload = err.into_panic();
    assert!(payload.downcast_ref::<Code>().is_none());
    assert!(payload.downcast_ref::<String>().is_some(), "the message");
    assert_eq!(rx.recv_timeout(EVENTUALLY).unwrap(), Some(42));
}
