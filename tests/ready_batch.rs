//! The ready batch (`src/queue/ready.rs`): due one-shot tasks a worker moves out
//! of the queue together, to take without the pool lock. It must stay
//! invisible: the tasks in it still count as queued, cancel and trigger
//! still find them, and nothing that sorts before them runs after them.
//!
//! Each test holds the pool's one worker inside a first task, so the
//! batch it filled when it took that task stays put while the test looks.
//! The module at the end fills the batch from the near-future wheel.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use schedpool::{internals, ManualClock, ScheduledHandle, ScheduledThreadPool, TaskError};

const LONG: Duration = Duration::from_secs(10);

/// A pool of `workers` threads on a fresh manual clock.
fn manual(workers: usize) -> (ScheduledThreadPool, ManualClock) {
    let clock = ManualClock::new();
    let pool = ScheduledThreadPool::builder()
        .core_threads(workers)
        .clock(clock.clone())
        .build()
        .unwrap();
    (pool, clock)
}

/// A one-worker pool on a manual clock whose first task, due at 1 s, blocks
/// until `release` is sent; `tasks` more one-shot tasks, also due at 1 s,
/// record their index in `order`. The clock is advanced to 1 s and the
/// worker is inside the first task when this returns, with the others in
/// its ready batch. `before` may schedule a task first (`early`).
struct Held {
    pool: ScheduledThreadPool,
    clock: ManualClock,
    first: ScheduledHandle<()>,
    release: mpsc::Sender<()>,
    order: Arc<Mutex<Vec<usize>>>,
    handles: Vec<ScheduledHandle<()>>,
    early: Option<ScheduledHandle<()>>,
}

type Before = fn(&ScheduledThreadPool, &Arc<Mutex<Vec<usize>>>) -> Option<ScheduledHandle<()>>;

fn held(tasks: usize, before: Before) -> Held {
    let (pool, clock) = manual(1);
    let order = Arc::new(Mutex::new(Vec::new()));
    let early = before(&pool, &order);
    let (started_tx, started) = mpsc::channel();
    let (release, release_rx) = mpsc::channel::<()>();
    let first = pool
        .schedule(
            move || {
                started_tx.send(()).unwrap();
                release_rx.recv().unwrap();
            },
            Duration::from_secs(1),
        )
        .unwrap();
    let handles = (0..tasks)
        .map(|i| {
            let order = order.clone();
            pool.schedule(
                move || order.lock().unwrap().push(i),
                Duration::from_secs(1),
            )
            .unwrap()
        })
        .collect();
    clock.advance(Duration::from_secs(1));
    started.recv_timeout(LONG).expect("the first task started");
    Held {
        pool,
        clock,
        first,
        release,
        order,
        handles,
        early,
    }
}

#[test]
fn tasks_in_the_batch_count_as_queued_and_run_in_order() {
    let h = held(5, |_, _| None);
    assert_eq!(h.pool.queue_len(), 5);
    internals::check_pool(&h.first).unwrap();
    h.release.send(()).unwrap();
    assert!(h.pool.wait_idle(LONG));
    assert_eq!(*h.order.lock().unwrap(), [0, 1, 2, 3, 4]);
    assert_eq!(h.pool.queue_len(), 0);
    assert_eq!(h.pool.completed_task_count(), 6);
    assert_eq!(h.pool.active_count(), 0);
}

#[test]
fn cancel_removes_a_task_from_the_batch_at_once() {
    let h = held(3, |_, _| None);
    assert!(h.handles[1].cancel());
    // Removed now, not skipped later: the queue no longer counts it.
    assert_eq!(h.pool.queue_len(), 2);
    assert_eq!(internals::pool_heap_index(&h.handles[1]), None);
    internals::check_pool(&h.first).unwrap();
    h.release.send(()).unwrap();
    assert!(h.pool.wait_idle(LONG));
    assert_eq!(*h.order.lock().unwrap(), [0, 2]);
    // Removed tasks are not runs (Java's remove-on-cancel).
    assert_eq!(h.pool.completed_task_count(), 3);
    let mut handles = h.handles.into_iter();
    assert!(handles.next().unwrap().join().is_ok());
    assert_eq!(handles.next().unwrap().join(), Err(TaskError::Cancelled));
}

/// A task pulled forward to sort before the batch's tasks (a trigger of a
/// task scheduled earlier, whose sequence number is older) runs before
/// them, as it would have from the heap: the batch moves back.
#[test]
fn a_task_that_sorts_first_runs_before_the_batch() {
    let h = held(2, |pool, order| {
        let order = order.clone();
        // Scheduled first, so on a tie of deadlines it comes first.
        Some(
            pool.schedule(
                move || order.lock().unwrap().push(99),
                Duration::from_secs(60),
            )
            .unwrap(),
        )
    });
    // Due now, at the batch's deadline, with the oldest sequence number.
    assert!(h.early.as_ref().unwrap().trigger());
    internals::check_pool(&h.first).unwrap();
    h.release.send(()).unwrap();
    assert!(h.pool.wait_idle(LONG));
    assert_eq!(*h.order.lock().unwrap(), [99, 0, 1]);
    assert_eq!(h.clock.elapsed(), Duration::from_secs(1));
}

#[test]
fn shutdown_now_hands_back_the_batch_in_order() {
    let h = held(3, |_, _| None);
    let pending = h.pool.shutdown_now();
    let ids: Vec<u64> = pending.iter().map(|p| p.id()).collect();
    let want: Vec<u64> = h.handles.iter().map(|h| h.id()).collect();
    assert_eq!(ids, want);
    for p in pending {
        p.run();
    }
    h.release.send(()).unwrap();
    assert!(h.pool.await_termination(LONG));
    assert_eq!(*h.order.lock().unwrap(), [0, 1, 2]);
    assert!(h.first.join().is_ok());
}

/// The batch is shared, not the filler's own: while the worker that filled
/// it runs a long task, the other worker runs the batch's tasks (the
/// hand-over wakes it, as Java wakes a follower for a due head).
#[test]
fn another_worker_runs_the_batch_while_the_filler_is_busy() {
    let (pool, clock) = manual(2);
    let (done_tx, done) = mpsc::channel::<usize>();
    // Scheduled first, so taken first: it waits for the other five.
    let long = pool
        .schedule(
            move || (0..5).all(|_| done.recv_timeout(LONG).is_ok()),
            Duration::from_secs(1),
        )
        .unwrap();
    for i in 0..5 {
        let done_tx = done_tx.clone();
        pool.schedule(move || done_tx.send(i).unwrap(), Duration::from_secs(1))
            .unwrap()
            .detach();
    }
    clock.advance(Duration::from_secs(1));
    assert_eq!(
        long.join(),
        Ok(true),
        "the short tasks waited behind the long one"
    );
    assert!(pool.wait_idle(LONG));
    assert_eq!(pool.completed_task_count(), 6);
}

/// `active_count` counts bodies running, not bookkeeping not yet folded
/// in: each of ten tasks, run by one worker, mostly from the batch, sees 1.
#[test]
fn active_count_counts_runs_not_the_batch() {
    let (pool, clock) = manual(1);
    let seen = Arc::new(Mutex::new(Vec::new()));
    for _ in 0..10 {
        let (p, s) = (pool.clone(), seen.clone());
        pool.schedule(
            move || s.lock().unwrap().push(p.active_count()),
            Duration::from_secs(1),
        )
        .unwrap()
        .detach();
    }
    clock.advance(Duration::from_secs(1));
    assert!(pool.wait_idle(LONG));
    assert_eq!(*seen.lock().unwrap(), [1; 10]);
    assert_eq!(pool.active_count(), 0);
    assert_eq!(pool.stats().active, 0);
}

/// A periodic task's catch-up runs sort before a batch that another worker
/// filled while the periodic run was in progress: its worker requeues it
/// before it helps with the batch, and the requeue moves the batch back,
/// so the catch-up runs come first (Java's order).
#[test]
fn a_periodic_requeue_goes_before_a_batch_filled_during_its_run() {
    let (pool, clock) = manual(2);
    let order = Arc::new(Mutex::new(Vec::<String>::new()));
    let (p_started_tx, p_started) = mpsc::channel();
    let (p_release, p_release_rx) = mpsc::channel::<()>();
    let p_release_rx = Mutex::new(p_release_rx);
    let o = order.clone();
    let mut first = true;
    let periodic = pool
        .schedule_at_fixed_rate(
            move || {
                o.lock().unwrap().push("P".into());
                if std::mem::take(&mut first) {
                    p_started_tx.send(()).unwrap();
                    p_release_rx.lock().unwrap().recv().unwrap();
                }
            },
            Duration::from_millis(1000),
            Duration::from_millis(250),
        )
        .unwrap();
    let (t_started_tx, t_started) = mpsc::channel();
    let (t_release, t_release_rx) = mpsc::channel::<()>();
    pool.schedule(
        move || {
            t_started_tx.send(()).unwrap();
            t_release_rx.recv().unwrap();
        },
        Duration::from_millis(1500),
    )
    .unwrap()
    .detach();
    for i in 2..=6 {
        let o = order.clone();
        pool.schedule(
            move || o.lock().unwrap().push(format!("T{i}")),
            Duration::from_millis(1500),
        )
        .unwrap()
        .detach();
    }
    clock.advance(Duration::from_millis(1000));
    p_started.recv_timeout(LONG).unwrap();
    // The other worker takes T1 and moves T2..T6 to the batch.
    clock.advance(Duration::from_millis(500));
    t_started.recv_timeout(LONG).unwrap();
    p_release.send(()).unwrap();
    // The first run and its two catch-ups (due at 1250 and 1500 ms, the
    // latter with P's older sequence number), or whatever came first.
    let deadline = std::time::Instant::now() + LONG;
    while order.lock().unwrap().len() < 3 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    t_release.send(()).unwrap();
    assert!(pool.wait_idle(LONG));
    assert!(periodic.cancel());
    let order = order.lock().unwrap().clone();
    assert_eq!(order[..3], ["P", "P", "P"], "{order:?}");
    assert_eq!(order.len(), 8, "{order:?}");
}

mod filled_from_the_wheel {
    //! The ready batch filled from the near-future wheel (`src/queue/ready.rs`,
    //! `WorkQueue::fill_ready`): such tasks move without a look at their headers
    //! and keep the wheel's mark, so these tests check, through the public API,
    //! that every removal still finds them in the batch and that the counts and
    //! the order hold.
    //!
    //! Each test holds the pool's one worker inside a first task due at 1 ms,
    //! with the other tasks one wheel slot (16.4 µs) apart behind it, so each
    //! is pushed into the wheel; advancing the manual clock past them lets the
    //! worker fill the batch from the wheel's run when it takes the first.

    use super::*;

    /// The mark a task moved from the wheel keeps (`crate::wheel::IN_WHEEL`).
    const IN_WHEEL: usize = usize::MAX - 4;

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
}
