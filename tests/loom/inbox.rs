//! loom models of the submission inbox (`src/pool/inbox.rs`): a submission that
//! skips the pool lock while the workers spin, go to sleep, take tasks or
//! shut down. Each model first runs one task per worker, so the pool has
//! all its workers and the inbox's gate can open.
//!
//! Under loom the idle spin is a few yielding looks at the kick.

use super::*;
use schedpool::{Rejected, ScheduledHandle};

/// A pool whose `core` workers have started and are idle (or about to be).
fn warm_pool(core: usize, spin: bool) -> ScheduledThreadPool {
    let mut builder = ScheduledThreadPool::builder()
        .core_threads(core)
        .thread_name("loom");
    if !spin {
        builder = builder.idle_spin(Duration::ZERO);
    }
    let pool = builder.build().unwrap();
    for i in 0..core {
        assert_eq!(pool.submit(move || i).unwrap().join(), Ok(i));
    }
    assert_eq!(pool.pool_size(), core);
    pool
}

/// A task body that counts its runs in `ran`.
fn counting(ran: &Arc<AtomicUsize>) -> impl FnOnce() + Send + 'static {
    let ran = ran.clone();
    move || {
        ran.fetch_add(1, Ordering::SeqCst);
    }
}

/// Submits, from a new thread, a task that counts its runs in `ran`.
fn submit_counted(
    pool: &ScheduledThreadPool,
    ran: &Arc<AtomicUsize>,
) -> thread::JoinHandle<Result<ScheduledHandle<()>, Rejected>> {
    let pool = pool.clone();
    let body = counting(ran);
    thread::spawn(move || pool.submit(body))
}

/// A submission from another thread while the only worker spins, decides to
/// sleep, or sleeps: the task runs (a lost task is a deadlock in `join`).
#[test]
fn submission_races_the_worker_going_to_sleep() {
    for spin in [true, false] {
        loom::model(move || {
            let pool = warm_pool(1, spin);
            let submitter = {
                let pool = pool.clone();
                thread::spawn(move || pool.submit(|| 7u32).unwrap())
            };
            let h = submitter.join().unwrap();
            assert_eq!(h.join(), Ok(7));
            finish(&pool);
        });
    }
}

/// Two submissions from one thread, either of which may skip the lock: they
/// run in submission order (one worker), the later one never overtakes.
#[test]
fn submissions_keep_their_order_across_both_paths() {
    loom::model(|| {
        let pool = warm_pool(1, true);
        let order = Arc::new(Mutex::new(Vec::new()));
        let handles: Vec<_> = (0..2u32)
            .map(|i| {
                let order = order.clone();
                pool.submit(move || order.lock().unwrap().push(i)).unwrap()
            })
            .collect();
        for h in handles {
            assert_eq!(h.join(), Ok(()));
        }
        assert_eq!(*order.lock().unwrap(), vec![0, 1]);
        finish(&pool);
    });
}

/// Two workers, both idle, and a submission: one of them runs it, whether
/// it was kicked while spinning, woken from sleep, or found it on its own.
#[test]
fn submission_reaches_one_of_two_idle_workers() {
    loom::model(|| {
        let pool = warm_pool(2, true);
        let h = pool.submit(|| 3u32).unwrap();
        assert_eq!(h.join(), Ok(3));
        finish(&pool);
    });
}

/// A submission racing `shutdown` on a pool whose worker is idle: it is
/// rejected, or accepted and run before termination; never lost.
#[test]
fn submission_races_shutdown() {
    loom::model(|| {
        let pool = warm_pool(1, true);
        let ran = Arc::new(AtomicUsize::new(0));
        let submitter = submit_counted(&pool, &ran);
        pool.shutdown();
        let result = submitter.join().unwrap();
        finish(&pool);
        match result {
            Ok(h) => {
                assert!(h.is_done());
                assert_eq!(ran.load(Ordering::SeqCst), 1, "accepted but never ran");
            }
            Err(e) => {
                assert!(e.is_shutdown());
                assert_eq!(ran.load(Ordering::SeqCst), 0, "a rejected task ran");
            }
        }
    });
}

/// A due task (which may go through the inbox) cancelled at once by its
/// submitter, with the worker spinning, going to sleep or taking it: a
/// successful cancel leaves the queue empty and the handle cancelled (the
/// body ran at most once, if the cancel came during its run); a failed one
/// means it ran. (Found by review: an earlier version of this model
/// scheduled a delayed task, which never uses the inbox.)
#[test]
fn cancel_of_a_due_task_that_may_be_in_the_inbox() {
    for spin in [true, false] {
        loom::model(move || {
            let pool = warm_pool(1, spin);
            let ran = Arc::new(AtomicUsize::new(0));
            let h = pool.submit(counting(&ran)).unwrap();
            let cancelled = h.cancel();
            let len = pool.queue_len();
            let result = h.join();
            let runs = ran.load(Ordering::SeqCst);
            if cancelled {
                assert_eq!(len, 0, "a cancelled task is still queued");
                assert_eq!(result, Err(TaskError::Cancelled));
                assert!(runs <= 1);
            } else {
                assert_eq!(result, Ok(()));
                assert_eq!(runs, 1);
            }
            finish(&pool);
        });
    }
}

/// A submission from another thread racing `shutdown_now` on a pool whose
/// worker is idle: rejected, or accepted and then either run or returned
/// (exactly one), and done once the pool has terminated. A task left in the
/// inbox as it closed would be neither.
#[test]
fn submission_races_shutdown_now() {
    loom::model(|| {
        let pool = warm_pool(1, true);
        let ran = Arc::new(AtomicUsize::new(0));
        let submitter = submit_counted(&pool, &ran);
        let returned = pool.shutdown_now();
        let returned_it = returned.len() == 1;
        drop(returned);
        let result = submitter.join().unwrap();
        assert!(pool.await_termination(FOREVER));
        let runs = ran.load(Ordering::SeqCst);
        match result {
            Ok(h) => {
                assert!(h.is_done(), "accepted, but neither run nor returned");
                assert!(
                    (runs == 1) != returned_it,
                    "ran {runs}, returned {returned_it}"
                );
            }
            Err(e) => {
                assert!(e.is_shutdown());
                assert_eq!(runs, 0);
                assert!(!returned_it);
            }
        }
    });
}
