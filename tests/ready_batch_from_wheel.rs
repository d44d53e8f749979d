//! The ready batch filled from the near-future wheel (`src/ready.rs`,
//! `WorkQueue::fill_ready`): such tasks move without a look at their headers
//! and keep the wheel's mark, so these tests check, through the public API,
//! that every removal still finds them in the batch and that the counts and
//! the order hold (a review's tests of that change).
//!
//! Each test holds the pool's one worker inside a first task due at 1 ms,
//! with the other tasks one wheel slot (16.4 µs) apart behind it, so each
//! is pushed into the wheel; advancing the manual clock past them lets the
//! worker fill the batch from the wheel's run when it takes the first.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use schedpool::{internals, ManualClock, ScheduledHandle, ScheduledThreadPool, TaskError};

/// The mark a task moved from the wheel keeps (`crate::wheel::IN_WHEEL`).
const IN_WHEEL: usize = usize::MAX - 4;

const LONG: Duration = Duration::from_secs(10);
const NEAR: Duration = Duration::from_millis(1);

/// The pool, its held first task and what the others record.
struct Held {
    pool: ScheduledThreadPool,
    first: ScheduledHandle<()>,
    release: mpsc::Sender<()>,
    order: Arc<Mutex<Vec<usize>>>,
    handles: Vec<ScheduledHandle<()>>,
}

/// `tasks` near tasks behind a first one that blocks until `release`;
/// those in `cancel_before` are cancelled before the clock moves (so
/// before the fill).
fn held(tasks: usize, remove_on_cancel: bool, cancel_before: &[usize]) -> Held {
    let clock = ManualClock::new();
    let pool = ScheduledThreadPool::builder()
        .core_threads(1)
        .remove_on_cancel(remove_on_cancel)
        .clock(clock.clone())
        .build()
        .unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let (started_tx, started) = mpsc::channel();
    let (release, release_rx) = mpsc::channel::<()>();
    let first = pool
        .schedule(
            move || {
                started_tx.send(()).unwrap();
                release_rx.recv().unwrap();
            },
            NEAR,
        )
        .unwrap();
    let handles: Vec<_> = (0..tasks)
        .map(|i| {
            let order = order.clone();
            pool.schedule(
                move || order.lock().unwrap().push(i),
                NEAR + Duration::from_micros(20 * (i as u64 + 1)),
            )
            .unwrap()
        })
        .collect();
    for &i in cancel_before {
        assert!(handles[i].cancel());
    }
    clock.advance(2 * NEAR);
    started.recv_timeout(LONG).expect("the first task started");
    Held {
        pool,
        first,
        release,
        order,
        handles,
    }
}

/// Cancel, pause, trigger and resume of tasks in the batch: each finds its
/// task, `queue_len` and the invariants hold at every step, and the runs
/// come in order.
#[test]
fn wheel_batch_cancel_pause_trigger_resume() {
    let h = held(5, true, &[]);
    assert_eq!(h.pool.queue_len(), 5);
    internals::check_pool(&h.first).unwrap();
    assert_eq!(
        internals::pool_heap_index(&h.handles[4]),
        Some(IN_WHEEL),
        "unmarked in the batch"
    );
    assert!(h.handles[1].cancel());
    assert_eq!(h.pool.queue_len(), 4);
    assert_eq!(internals::pool_heap_index(&h.handles[1]), None);
    assert!(h.handles[2].pause());
    assert_eq!(h.pool.queue_len(), 3);
    internals::check_pool(&h.first).unwrap();
    assert!(h.handles[3].trigger());
    assert_eq!(h.pool.queue_len(), 3);
    internals::check_pool(&h.first).unwrap();
    assert!(h.handles[2].resume());
    assert_eq!(h.pool.queue_len(), 4);
    internals::check_pool(&h.first).unwrap();
    h.release.send(()).unwrap();
    assert!(h.pool.wait_idle(LONG));
    assert_eq!(*h.order.lock().unwrap(), [0, 2, 3, 4]);
    assert_eq!(h.pool.completed_task_count(), 5);
    assert_eq!(h.pool.queue_len(), 0);
    internals::check_pool(&h.first).unwrap();
    assert_eq!(h.handles[1].state(), schedpool::TaskState::Cancelled);
}

/// With `remove_on_cancel(false)`, a task cancelled before the fill enters
/// the batch (nothing removes it) and counts as a no-op run, as Java's.
#[test]
fn wheel_batch_keeps_cancelled_when_not_removed() {
    let h = held(4, false, &[1]);
    // Cancelled before the fill, kept: it counts, as Java's queue keeps it.
    assert_eq!(h.pool.queue_len(), 4);
    internals::check_pool(&h.first).unwrap();
    assert!(h.handles[2].cancel());
    assert_eq!(h.pool.queue_len(), 4);
    h.release.send(()).unwrap();
    assert!(h.pool.wait_idle(LONG));
    assert_eq!(*h.order.lock().unwrap(), [0, 3]);
    assert_eq!(h.pool.completed_task_count(), 5, "two no-op runs");
    assert_eq!(h.pool.queue_len(), 0);
}

/// Shutdown purges the cancelled task from the batch; `shutdown_now` hands
/// back the rest, in order.
#[test]
fn wheel_batch_shutdown_and_shutdown_now() {
    let h = held(4, false, &[1]);
    h.pool.shutdown();
    assert_eq!(h.pool.queue_len(), 3, "the cancelled one purged");
    let pending = h.pool.shutdown_now();
    let ids: Vec<u64> = pending.iter().map(|p| p.id()).collect();
    let want: Vec<u64> = [0, 2, 3].iter().map(|&i| h.handles[i].id()).collect();
    assert_eq!(ids, want);
    drop(pending);
    h.release.send(()).unwrap();
    assert!(h.pool.await_termination(LONG));
    assert!(h.first.join().is_ok());
    let mut hs = h.handles.into_iter();
    assert_eq!(hs.next().unwrap().join(), Err(TaskError::Cancelled));
}

/// Cancels of batch tasks remove them at once, the first and the last.
#[test]
fn wheel_batch_cancel_removes_at_once() {
    let h = held(4, true, &[]);
    internals::check_pool(&h.first).unwrap();
    assert!(h.handles[0].cancel());
    assert!(h.handles[3].cancel());
    assert_eq!(h.pool.queue_len(), 2);
    h.release.send(()).unwrap();
    assert!(h.pool.wait_idle(LONG));
    assert_eq!(*h.order.lock().unwrap(), [1, 2]);
    assert_eq!(h.pool.completed_task_count(), 3);
}
