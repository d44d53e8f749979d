//! Every sleeper that is owed a wake-up gets it. The crate's condvar skips
//! the notify system call while it counts no sleeper (`base::sync`); that
//! is sound only because a waiter counts itself under the lock before it
//! sleeps and every notify follows a change made under that lock. These
//! ping-pongs sleep untimed on every round, so one lost wake-up hangs them,
//! and the watchdog turns the hang into a failure:
//!
//! - two `DelayQueue`s passing one item back and forth (`take` sleeps on
//!   the queue's condvar; `put` of a new head notifies under the lock);
//! - a pool task joined from another thread (`join` sleeps on the task's
//!   completion latch; the worker notifies after releasing its lock).
//!
//! A condvar that never counted its sleepers (so never notified) hangs the
//! first round. The same count is kept under loom (`base::sync`), where
//! every model that sleeps on a condvar checks the skip in all
//! interleavings; this test checks the shipped std side on real threads.

use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use schedpool::{DelayItem, DelayQueue, ScheduledThreadPool};

/// Long enough for a loaded 2-core machine, short of the harness's limits.
const WATCHDOG: Duration = Duration::from_secs(120);

fn within_watchdog(what: &str, f: impl FnOnce() + Send + 'static) {
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || {
        f();
        let _ = done.send(());
    });
    finished
        .recv_timeout(WATCHDOG)
        .unwrap_or_else(|_| panic!("{what}: a wake-up was lost (no progress in {WATCHDOG:?})"));
}

#[test]
fn a_delay_queue_ping_pong_never_loses_a_wake_up() {
    within_watchdog("DelayQueue ping-pong", || {
        const ROUNDS: u32 = 5_000;
        let (ping, pong) = (Arc::new(DelayQueue::new()), Arc::new(DelayQueue::new()));
        let echo = {
            let (ping, pong) = (Arc::clone(&ping), Arc::clone(&pong));
            std::thread::spawn(move || {
                for _ in 0..ROUNDS {
                    let item: DelayItem<u32> = ping.take().expect("open");
                    pong.put(DelayItem::new(item.into_inner() + 1, Duration::ZERO));
                }
            })
        };
        let mut n = 0;
        for _ in 0..ROUNDS {
            ping.put(DelayItem::new(n, Duration::ZERO));
            n = pong.take().expect("open").into_inner();
        }
        echo.join().expect("the echo thread");
        assert_eq!(n, ROUNDS, "every round came back");
    });
}

#[test]
fn joining_task_after_task_never_loses_a_wake_up() {
    within_watchdog("submit and join", || {
        const ROUNDS: u64 = 5_000;
        let pool = ScheduledThreadPool::new(2);
        let mut sum = 0;
        for i in 0..ROUNDS {
            sum += pool
                .submit(move || i)
                .expect("the pool takes it")
                .join()
                .expect("the task ran");
        }
        assert_eq!(sum, ROUNDS * (ROUNDS - 1) / 2);
        assert!(pool.shutdown().await_termination(Duration::from_secs(20)));
    });
}
