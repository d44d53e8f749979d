//! `DurablePoolBuilder::handler_async` (issue 36, item 2): async handlers
//! run on a tokio runtime with a per-kind concurrency limit, their leases
//! heartbeated while the futures await, `job.lease_lost()` a future to
//! select on, a future that outlives its lease fenced as a sync run, and
//! `Err` and panics failures. On the in-memory backend (its real clock);
//! `async_durable.rs` runs them on Redis and PostgreSQL.
#![cfg(feature = "tokio")]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use schedpool::durable::{DurableError, DurablePool, MemoryBackend};

const EVENTUALLY: Duration = Duration::from_secs(30);

/// Waits for the pool to be idle off the runtime's threads.
async fn idle(pool: &Arc<DurablePool>) -> bool {
    let pool = pool.clone();
    tokio::task::spawn_blocking(move || pool.wait_idle(EVENTUALLY))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_worker_runs_many_futures_at_once_up_to_the_kinds_limit() {
    let running = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let (r, m) = (running.clone(), most.clone());
    let pool = Arc::new(
        DurablePool::builder(MemoryBackend::new())
            .threads(1)
            .handler_async("call", move |_: u64, _job| {
                let (r, m) = (r.clone(), m.clone());
                async move {
                    let now = r.fetch_add(1, Ordering::SeqCst) + 1;
                    m.fetch_max(now, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    r.fetch_sub(1, Ordering::SeqCst);
                    Ok(())
                }
            })
            .async_concurrency("call", 10)
            .build()
            .unwrap(),
    );
    for i in 0..30u64 {
        pool.schedule("call", &format!("c{i}"), &i, Duration::ZERO)
            .unwrap();
    }
    assert!(idle(&pool).await);
    let stats = pool.stats();
    assert_eq!(stats.succeeded, 30, "{stats:?}");
    assert_eq!(
        most.load(Ordering::SeqCst),
        10,
        "one worker thread ran the kind's limit of futures at once, and no more"
    );
    pool.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn err_and_panic_are_failures_retried_then_dead_lettered() {
    let pool = Arc::new(
        DurablePool::builder(MemoryBackend::new())
            .threads(1)
            .retry_backoff(Duration::from_millis(1), Duration::from_millis(1))
            .max_attempts(3)
            .handler_async("flaky", |_: (), job| async move {
                tokio::task::yield_now().await;
                match job.attempt {
                    1 => Err("first attempt fails".into()),
                    2 => panic!("second attempt panics"),
                    _ => Ok(()),
                }
            })
            .handler_async("doomed", |_: (), _job| async move {
                Err::<(), _>("always fails".into())
            })
            .build()
            .unwrap(),
    );
    pool.schedule("flaky", "f", &(), Duration::ZERO).unwrap();
    pool.schedule("doomed", "d", &(), Duration::ZERO).unwrap();
    // Idle is "nothing due": a retry 1 ms ahead is not due yet, so wait
    // for the outcomes themselves.
    let deadline = tokio::time::Instant::now() + EVENTUALLY;
    while (pool.stats().succeeded, pool.stats().dead_lettered) != (1, 1)
        && tokio::time::Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(idle(&pool).await);
    let stats = pool.stats();
    assert_eq!(stats.succeeded, 1, "{stats:?}");
    assert_eq!(stats.failed, 2 + 3, "{stats:?}");
    assert_eq!(stats.retried, 2 + 2, "{stats:?}");
    assert_eq!(stats.dead_lettered, 1, "{stats:?}");
    let dead = pool.dead_letters(10).unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].id, "d");
    assert_eq!(dead[0].error.as_deref(), Some("always fails"));
    pool.shutdown();
}

/// A lease of 300 ms, a future that awaits 1.5 s: the heartbeat keeps the
/// lease, nobody else gets the item, and the ack lands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lease_is_heartbeated_while_the_future_awaits() {
    let attempts = Arc::new(Mutex::new(Vec::new()));
    let a = attempts.clone();
    let pool = Arc::new(
        DurablePool::builder(MemoryBackend::new())
            .threads(2)
            .lease(Duration::from_millis(300))
            .handler_async("slow", move |_: (), job| {
                let a = a.clone();
                async move {
                    a.lock().unwrap().push(job.attempt);
                    tokio::time::sleep(Duration::from_millis(1_500)).await;
                    assert!(!job.is_lease_lost());
                    Ok(())
                }
            })
            .build()
            .unwrap(),
    );
    pool.schedule("slow", "s", &(), Duration::ZERO).unwrap();
    assert!(idle(&pool).await);
    assert_eq!(*attempts.lock().unwrap(), [1], "one run, never taken over");
    let stats = pool.stats();
    assert_eq!((stats.succeeded, stats.lease_lost), (1, 0), "{stats:?}");
    pool.shutdown();
}

/// `job.lease_lost()` completes when the item is cancelled under the run,
/// and the run's ack is refused, as a sync run's would be.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lease_lost_completes_when_the_item_is_cancelled_and_the_ack_is_fenced() {
    let (started_tx, started_rx) = tokio::sync::mpsc::unbounded_channel();
    let saw_loss = Arc::new(AtomicUsize::new(0));
    let s = saw_loss.clone();
    let pool = Arc::new(
        DurablePool::builder(MemoryBackend::new())
            .threads(1)
            .lease(Duration::from_millis(300))
            .handler_async("wait", move |_: (), job| {
                let (started, s) = (started_tx.clone(), s.clone());
                async move {
                    let _ = started.send(());
                    tokio::select! {
                        () = job.lease_lost() => { s.fetch_add(1, Ordering::SeqCst); }
                        () = tokio::time::sleep(EVENTUALLY) => {}
                    }
                    Ok(())
                }
            })
            .build()
            .unwrap(),
    );
    pool.schedule("wait", "w", &(), Duration::ZERO).unwrap();
    let mut started_rx = started_rx;
    started_rx.recv().await.unwrap();
    assert!(
        pool.cancel("w").unwrap(),
        "cancelled while its future awaits"
    );
    assert!(idle(&pool).await);
    assert_eq!(saw_loss.load(Ordering::SeqCst), 1, "lease_lost completed");
    let stats = pool.stats();
    assert_eq!(
        (stats.succeeded, stats.lease_lost),
        (0, 1),
        "the stale ack was refused: {stats:?}"
    );
    pool.shutdown();
}

/// A future that outlives its lease because a new put replaced the item:
/// the replacement runs (a new token), and the old run's ack is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_future_that_outlives_its_lease_is_fenced_and_the_replacement_runs() {
    let (started_tx, mut started_rx) = tokio::sync::mpsc::unbounded_channel();
    let pool = Arc::new(
        DurablePool::builder(MemoryBackend::new())
            .threads(2)
            .lease(Duration::from_millis(300))
            .handler_async("job", move |version: u64, job| {
                let started = started_tx.clone();
                async move {
                    let _ = started.send((version, job.token));
                    if version == 1 {
                        // Outlives the lease: returns only once it is lost.
                        job.lease_lost().await;
                    }
                    Ok(())
                }
            })
            .build()
            .unwrap(),
    );
    pool.schedule("job", "x", &1u64, Duration::ZERO).unwrap();
    let (v1, t1) = started_rx.recv().await.unwrap();
    assert_eq!(v1, 1);
    pool.schedule("job", "x", &2u64, Duration::ZERO).unwrap();
    let (v2, t2) = started_rx.recv().await.unwrap();
    assert_eq!(v2, 2);
    assert!(t2 > t1, "the replacement holds a newer token");
    assert!(idle(&pool).await);
    let stats = pool.stats();
    assert_eq!(
        (stats.succeeded, stats.lease_lost),
        (1, 1),
        "the replacement acked, the first run fenced: {stats:?}"
    );
    pool.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_waits_for_running_futures_and_acks_them() {
    let (started_tx, mut started_rx) = tokio::sync::mpsc::unbounded_channel();
    let pool = Arc::new(
        DurablePool::builder(MemoryBackend::new())
            .threads(1)
            .handler_async("slow", move |_: (), _job| {
                let started = started_tx.clone();
                async move {
                    let _ = started.send(());
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    Ok(())
                }
            })
            .build()
            .unwrap(),
    );
    pool.schedule("slow", "s", &(), Duration::ZERO).unwrap();
    started_rx.recv().await.unwrap();
    pool.shutdown();
    assert!(!pool.is_terminated(), "a future is still running");
    let p = pool.clone();
    let done = tokio::task::spawn_blocking(move || p.await_termination(EVENTUALLY))
        .await
        .unwrap();
    assert!(done, "terminated once the future finished and was settled");
    assert_eq!(pool.stats().succeeded, 1);
    assert_eq!(
        pool.counts().unwrap().in_flight,
        0,
        "acked before termination"
    );
}

#[test]
fn an_async_handler_needs_a_runtime_and_limits_are_checked() {
    let build = |b: schedpool::durable::DurablePoolBuilder| b.build().map(drop);
    let pool = || {
        DurablePool::builder(MemoryBackend::new())
            .threads(1)
            .handler_async("a", |_: (), _job| async { Ok(()) })
    };
    let no_runtime = build(pool());
    assert!(
        matches!(&no_runtime, Err(DurableError::Config(m)) if m.to_string().contains("runtime")),
        "{no_runtime:?}"
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let zero = build(
        pool()
            .runtime(rt.handle().clone())
            .async_concurrency("a", 0),
    );
    assert!(matches!(zero, Err(DurableError::Config(_))), "{zero:?}");
    let sync_kind = build(
        pool()
            .runtime(rt.handle().clone())
            .handler("s", |_: &(), _| Ok(()))
            .async_concurrency("s", 4),
    );
    assert!(
        matches!(sync_kind, Err(DurableError::Config(_))),
        "{sync_kind:?}"
    );
    assert!(build(pool().runtime(rt.handle().clone())).is_ok());
}
