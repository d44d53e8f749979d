//! Async task bodies (feature `tokio`): failures, cancel and abort. A
//! future's `Err` or panic is a failed run as a sync body's; `cancel()`
//! lets a started future finish (Java's `cancel(false)`), `abort()` stops
//! it at its next `.await`; the guide's exactly-once timeout pattern; and
//! shutdown with a future running.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use schedpool::{OnFailure, ScheduledThreadPool, TaskError, TaskState};

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
    let (d, stuck) = (dropped.clone(), Arc::new(AtomicBool::new(false)));
    let s = stuck.clone();
    let h = pool
        .at_fixed_rate(Duration::from_millis(5))
        .start_async(move || {
            let n = r.fetch_add(1, Ordering::SeqCst);
            // The third run's future owns a DropFlag: set however it ends.
            let guard = (n == 2).then(|| DropFlag(d.clone()));
            let s = s.clone();
            async move {
                if let Some(_guard) = guard {
                    s.store(true, Ordering::SeqCst);
                    std::future::pending::<()>().await; // stuck: only abort ends it
                }
            }
        })
        .unwrap();
    let deadline = Instant::now() + EVENTUALLY;
    while !stuck.load(Ordering::SeqCst) {
        assert!(
            Instant::now() < deadline,
            "the third run's future never ran"
        );
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
