//! The ready batch (`src/queue/ready.rs`): tasks taken without the pool lock
//! racing `wait_idle`, `shutdown_now` and cancel.

use super::*;

/// A pool of `workers` threads on a fresh manual clock.
fn manual_workers(workers: usize) -> (ScheduledThreadPool, ManualClock) {
    let clock = ManualClock::new();
    let pool = ScheduledThreadPool::builder()
        .core_threads(workers)
        .clock(clock.clone())
        .build()
        .unwrap();
    (pool, clock)
}

/// A pool on a manual clock with three one-shot tasks that have just come
/// due together: the worker that takes the first moves the others to the
/// ready batch, which the workers then take from without the pool lock.
/// Returns the pool, the handles and each task's run count.
type Counted = (
    ScheduledThreadPool,
    Vec<schedpool::ScheduledHandle<usize>>,
    Vec<Arc<AtomicUsize>>,
);

fn three_due_tasks(workers: usize) -> Counted {
    let (pool, clock) = manual_workers(workers);
    let mut handles = Vec::new();
    let mut runs = Vec::new();
    for i in 0..3 {
        let ran = Arc::new(AtomicUsize::new(0));
        let r = ran.clone();
        handles.push(
            pool.schedule(
                move || {
                    r.fetch_add(1, Ordering::SeqCst);
                    i
                },
                Duration::from_secs(1),
            )
            .unwrap(),
        );
        runs.push(ran);
    }
    clock.advance(Duration::from_secs(1));
    (pool, handles, runs)
}

/// `wait_idle` must not return while a task taken from the ready batch
/// (without the pool lock) has not finished: all three ran by then.
#[test]
fn ready_batch_then_wait_idle_sees_every_run() {
    loom::model(|| {
        let (pool, handles, runs) = three_due_tasks(2);
        assert!(pool.wait_idle(FOREVER));
        for (i, ran) in runs.iter().enumerate() {
            assert_eq!(ran.load(Ordering::SeqCst), 1, "task {i} before wait_idle");
        }
        assert_eq!(pool.active_count(), 0);
        assert_eq!(pool.completed_task_count(), 3);
        finish(&pool);
        for (i, h) in handles.into_iter().enumerate() {
            assert_eq!(h.join(), Ok(i));
        }
    });
}

/// `shutdown_now` racing the workers' takes from the ready batch: every
/// task runs once or is handed back (and completes as cancelled when the
/// caller drops it); none runs twice, none is lost, none is cancelled by the
/// pool.
#[test]
fn ready_batch_races_shutdown_now() {
    loom::model(|| {
        let (pool, handles, runs) = three_due_tasks(2);
        let pending = pool.shutdown_now();
        let returned = pending.len();
        drop(pending);
        assert!(pool.await_termination(FOREVER));
        let ran: usize = runs.iter().map(|r| r.load(Ordering::SeqCst)).sum();
        for (i, r) in runs.iter().enumerate() {
            assert!(r.load(Ordering::SeqCst) <= 1, "task {i} ran twice");
        }
        // A task taken from the batch before shutdown_now drained it runs,
        // as one popped under the pool lock does; the rest come back.
        assert_eq!(ran + returned, 3, "ran {ran}, returned {returned}");
        let mut ok = 0;
        for h in handles {
            match h.join() {
                Ok(_) => ok += 1,
                Err(e) => assert_eq!(e, TaskError::Cancelled),
            }
        }
        assert_eq!(ok, ran, "a handle's result disagrees with the runs");
        assert_eq!(pool.queue_len(), 0);
    });
}

/// cancel racing the ready batch: the last task is in the heap, in the
/// batch, or taken; it runs at most once, and surely if the cancel lost;
/// the pool is idle and empty afterwards.
#[test]
fn ready_batch_races_cancel() {
    loom::model(|| {
        let (pool, mut handles, runs) = three_due_tasks(1);
        let last = handles.pop().unwrap();
        let cancelled = last.cancel();
        assert!(pool.wait_idle(FOREVER));
        // A cancel that wins against a started run returns true too (Java:
        // `cancel(false)` of a running task); one that loses saw it done.
        let ran = runs[2].load(Ordering::SeqCst);
        assert!(
            ran <= 1 && (cancelled || ran == 1),
            "cancelled {cancelled}, ran {ran}"
        );
        assert_eq!(runs[0].load(Ordering::SeqCst), 1);
        assert_eq!(runs[1].load(Ordering::SeqCst), 1);
        assert_eq!(pool.queue_len(), 0);
        finish(&pool);
        if cancelled {
            assert_eq!(last.join(), Err(TaskError::Cancelled));
        } else {
            assert_eq!(last.join(), Ok(2));
        }
    });
}

/// `shutdown_now` while the one worker runs the first of three due tasks,
/// having moved the other two to the ready batch: they had not started, so
/// they are handed back, not run and not cancelled.
#[test]
fn shutdown_now_hands_back_the_ready_batch() {
    loom::model(|| {
        let (pool, clock) = manual_workers(1);
        // The first task waits in its run until shutdown_now has returned.
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        let first = {
            let gate = gate.clone();
            pool.schedule(
                move || {
                    let (open, cv) = &*gate;
                    let mut open = open.lock().unwrap();
                    while !*open {
                        open = cv.wait(open).unwrap();
                    }
                },
                Duration::from_secs(1),
            )
            .unwrap()
        };
        let later: Vec<_> = (0..2)
            .map(|i| pool.schedule(move || i, Duration::from_secs(1)).unwrap())
            .collect();
        clock.advance(Duration::from_secs(1));
        let pending = pool.shutdown_now();
        *gate.0.lock().unwrap() = true;
        gate.1.notify_all();
        let ids: Vec<u64> = pending.iter().map(|p| p.id()).collect();
        let later_ids: Vec<u64> = later.iter().map(|h| h.id()).collect();
        drop(pending);
        assert!(pool.await_termination(FOREVER));
        // Whether or not the worker had taken the first task, the two behind
        // it had not started: they come back, in order, after the first if
        // it was not taken.
        let first_id = first.id();
        if first.join().is_ok() {
            assert_eq!(ids, later_ids);
        } else {
            assert_eq!(ids[0], first_id);
            assert_eq!(ids[1..], later_ids[..]);
        }
        for h in later {
            assert_eq!(h.join(), Err(TaskError::Cancelled));
        }
    });
}
