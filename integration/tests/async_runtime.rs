//! Async task bodies (feature `tokio`) and their runtime: no runtime
//! thread blocks (a one-worker runtime keeps running while the pool is
//! busy; a current-thread runtime runs the futures it awaits), no runtime
//! is a clear error, and a runtime that shuts down or is gone fails the
//! run instead of hanging it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use schedpool::{OnFailure, ScheduledThreadPool};

/// Generous: this machine is shared.
const EVENTUALLY: Duration = Duration::from_secs(20);

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
