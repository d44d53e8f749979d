//! schedpool under a real tokio runtime: what docs/guide.md's "With tokio"
//! section shows, each piece run for real. The library depends on no
//! runtime; tokio is a dev-dependency of this package only.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use schedpool::durable::{DurableQueue, MemoryBackend};
use schedpool::{ScheduledThreadPool, TaskError, TaskState};
use tokio::sync::{mpsc, oneshot};

/// Generous: this machine is shared.
const EVENTUALLY: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handle_is_awaited() {
    let pool = ScheduledThreadPool::new(1);
    let start = Instant::now();
    let out = pool
        .schedule(|| 6 * 7, Duration::from_millis(20))
        .unwrap()
        .await;
    assert_eq!(out, Ok(42));
    assert!(start.elapsed() >= Duration::from_millis(20), "never early");
    let panicked = pool
        .submit(|| -> u8 { panic!("async boom") })
        .unwrap()
        .await;
    assert_eq!(panicked, Err(TaskError::Panicked("async boom".into())));
}

/// Awaiting a handle does not hold the runtime's thread: on a
/// current-thread runtime, another task keeps ticking meanwhile.
#[tokio::test(flavor = "current_thread")]
async fn awaiting_does_not_block_the_runtime_thread() {
    let pool = ScheduledThreadPool::new(1);
    let ticks = Arc::new(AtomicUsize::new(0));
    let t = ticks.clone();
    let ticker = tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_millis(2)).await;
            t.fetch_add(1, Ordering::Relaxed);
        }
    });
    let h = pool
        .schedule(|| "done", Duration::from_millis(100))
        .unwrap();
    assert_eq!(h.await, Ok("done"));
    ticker.abort();
    assert!(
        ticks.load(Ordering::Relaxed) >= 5,
        "the only runtime thread kept running other tasks while the handle was awaited (ticks: {})",
        ticks.load(Ordering::Relaxed)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_on_a_handle_then_cancel() {
    let pool = ScheduledThreadPool::new(1);
    let mut slow = pool.schedule(|| 1, Duration::from_secs(3600)).unwrap();
    // `&mut handle` is a future too: on timeout the handle is still ours.
    let waited = tokio::time::timeout(Duration::from_millis(20), &mut slow).await;
    assert!(waited.is_err(), "an hour-long task cannot be done in 20 ms");
    assert_eq!(
        slow.state(),
        TaskState::Scheduled,
        "a timeout cancels nothing"
    );
    assert!(slow.cancel(), "its timer is still armed until cancelled");
    assert_eq!(slow.await, Err(TaskError::Cancelled));

    let quick = pool.schedule(|| 2, Duration::from_millis(5)).unwrap();
    let waited = tokio::time::timeout(EVENTUALLY, quick).await;
    assert_eq!(waited.expect("done well within the bound"), Ok(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn select_between_a_reply_and_a_timeout_handle() {
    let pool = ScheduledThreadPool::new(1);
    // A request whose reply comes first: the timeout handle is cancelled.
    let (reply_tx, reply_rx) = oneshot::channel::<&str>();
    let mut timeout = pool
        .schedule(|| "timed out", Duration::from_secs(3600))
        .unwrap();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(5)).await;
        let _ = reply_tx.send("reply");
    });
    let got = tokio::select! {
        reply = reply_rx => reply.unwrap(),
        fired = &mut timeout => fired.unwrap(),
    };
    assert_eq!(got, "reply");
    assert!(
        timeout.cancel(),
        "the losing arm's timer is cancelled by hand"
    );

    // A request with no reply: the timeout wins.
    let (_never_tx, never_rx) = oneshot::channel::<&str>();
    let timeout = pool
        .schedule(|| "timed out", Duration::from_millis(10))
        .unwrap();
    let got = tokio::select! {
        reply = never_rx => reply.unwrap(),
        fired = timeout => fired.unwrap(),
    };
    assert_eq!(got, "timed out");
}

/// A periodic body (a pool thread, not a runtime thread) feeds async code
/// through a tokio channel: `try_send` never blocks the worker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_periodic_body_sends_to_async_code() {
    let pool = ScheduledThreadPool::new(1);
    let (tx, mut rx) = mpsc::channel::<u32>(16);
    let mut n = 0;
    let tick = pool
        .schedule_at_fixed_rate(
            move || {
                n += 1;
                // Full (a slow consumer) drops this tick rather than block.
                let _ = tx.try_send(n);
            },
            Duration::ZERO,
            Duration::from_millis(2),
        )
        .unwrap();
    let mut got = Vec::new();
    while got.len() < 3 {
        got.push(
            tokio::time::timeout(EVENTUALLY, rx.recv())
                .await
                .unwrap()
                .unwrap(),
        );
    }
    assert!(tick.cancel());
    assert_eq!(
        got,
        vec![1, 2, 3],
        "in order, none lost while the channel had room"
    );
}

/// A body hands async work to the runtime with a `Handle`: the body returns
/// at once, the async work runs on the runtime.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_spawns_async_work_on_the_runtime() {
    let pool = ScheduledThreadPool::new(1);
    let runtime = tokio::runtime::Handle::current();
    let (tx, rx) = oneshot::channel();
    let h = pool
        .schedule(
            move || {
                runtime.spawn(async move {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    let _ = tx.send(std::thread::current().name().map(str::to_owned));
                });
                "spawned"
            },
            Duration::from_millis(5),
        )
        .unwrap();
    assert_eq!(
        h.await,
        Ok("spawned"),
        "the body did not wait for the async work"
    );
    let ran_on = tokio::time::timeout(EVENTUALLY, rx).await.unwrap().unwrap();
    assert!(
        !ran_on.as_deref().unwrap_or("").starts_with("schedpool-"),
        "the async part ran on the runtime, not on a pool worker: {ran_on:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_from_async_code() {
    let pool = ScheduledThreadPool::new(2);
    let ran = Arc::new(AtomicUsize::new(0));
    for i in 0..4u64 {
        let r = ran.clone();
        pool.schedule(
            move || r.fetch_add(1, Ordering::SeqCst),
            Duration::from_millis(5 * i),
        )
        .unwrap()
        .detach();
    }
    // Not shut down: terminated() stays pending.
    assert!(
        tokio::time::timeout(Duration::from_millis(30), pool.terminated())
            .await
            .is_err()
    );
    pool.shutdown();
    tokio::time::timeout(EVENTUALLY, pool.terminated())
        .await
        .expect("terminates once the delayed tasks ran");
    assert!(pool.is_terminated());
    assert_eq!(
        ran.load(Ordering::SeqCst),
        4,
        "Java's default: delayed tasks still run"
    );
    // Ready at once now, however often asked.
    pool.terminated().await;
}

/// The guide's service shutdown: stop the pool when a shutdown signal
/// arrives, then await the workers with a bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_on_a_signal_with_a_bound() {
    let pool = ScheduledThreadPool::new(1);
    let long = pool.schedule(|| (), Duration::from_secs(1800)).unwrap();
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let service = {
        let pool = pool.clone();
        tokio::spawn(async move {
            let _ = stop_rx.await;
            // A 30-minute timeout would hold an orderly shutdown for 30
            // minutes: take the pending tasks back instead.
            let pending = pool.shutdown_now();
            let n = pending.len();
            drop(pending); // their handles complete as cancelled
            tokio::time::timeout(Duration::from_secs(10), pool.terminated())
                .await
                .map(|()| n)
        })
    };
    stop_tx.send(()).unwrap();
    assert_eq!(service.await.unwrap(), Ok(1));
    assert_eq!(long.await, Err(TaskError::Cancelled));
}

/// The durable queue's calls block (a store round trip): from async code,
/// they go to `spawn_blocking`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn durable_calls_from_async_code_via_spawn_blocking() {
    let queue: DurableQueue<u64> = DurableQueue::new(MemoryBackend::new());
    let mut puts = Vec::new();
    for i in 0..8u64 {
        let q = queue.clone();
        puts.push(tokio::task::spawn_blocking(move || {
            q.put(&format!("order-{i}"), &i, Duration::ZERO)
        }));
    }
    for put in puts {
        put.await.unwrap().unwrap();
    }
    let q = queue.clone();
    let mut taken = tokio::task::spawn_blocking(move || {
        let mut taken = Vec::new();
        while let Some(d) = q.poll_timeout(Duration::from_millis(100)).unwrap() {
            taken.push(*d.value());
            d.ack().unwrap();
        }
        taken
    })
    .await
    .unwrap();
    taken.sort_unstable();
    assert_eq!(taken, (0..8).collect::<Vec<_>>());
}
