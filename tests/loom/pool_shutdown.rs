//! The pool's shutdown: schedule racing shutdown, idle workers and the
//! leader woken by shutdown and `shutdown_now`, `shutdown_now` racing a run.

use super::*;

/// schedule (zero delay, default policies) racing shutdown: Ok means the
/// task runs before termination; Err means it never runs.
#[test]
fn schedule_races_shutdown_runs_or_rejected() {
    loom::model(|| {
        let pool = pool(1);
        let ran = Arc::new(AtomicUsize::new(0));
        let submitter = {
            let pool = pool.clone();
            let ran = ran.clone();
            thread::spawn(move || {
                pool.schedule(
                    move || {
                        ran.fetch_add(1, Ordering::SeqCst);
                        7u32
                    },
                    Duration::ZERO,
                )
            })
        };
        pool.shutdown();
        let result = submitter.join().unwrap();
        finish(&pool);
        match result {
            Ok(h) => {
                assert!(h.is_done(), "accepted task not done at termination");
                assert_eq!(h.join(), Ok(7));
                assert_eq!(ran.load(Ordering::SeqCst), 1);
            }
            Err(e) => {
                assert!(e.is_shutdown());
                assert_eq!(ran.load(Ordering::SeqCst), 0, "a rejected task ran");
            }
        }
    });
}

/// schedule of a delayed task racing shutdown with
/// `execute_delayed_after_shutdown(false)`: Ok means the task is cancelled
/// (it is not due: the clock never moves) before termination; Err means it
/// never runs. Either way the pool terminates.
#[test]
fn schedule_races_shutdown_delayed_cancelled() {
    loom::model(|| {
        let clock = ManualClock::new();
        let pool = ScheduledThreadPool::builder()
            .core_threads(1)
            .execute_delayed_after_shutdown(false)
            .clock(clock.clone())
            .build()
            .unwrap();
        let ran = Arc::new(AtomicUsize::new(0));
        let submitter = {
            let pool = pool.clone();
            let ran = ran.clone();
            thread::spawn(move || {
                pool.schedule(
                    move || {
                        ran.fetch_add(1, Ordering::SeqCst);
                    },
                    Duration::from_secs(10),
                )
            })
        };
        pool.shutdown();
        let result = submitter.join().unwrap();
        finish(&pool);
        assert_eq!(ran.load(Ordering::SeqCst), 0);
        if let Ok(h) = result {
            assert!(h.is_cancelled(), "accepted delayed task not cancelled");
            assert_eq!(h.join(), Err(TaskError::Cancelled));
        }
    });
}

/// Two idle workers (blocked untimed on an empty queue) and a shutdown: both
/// exit and await_termination returns true.
#[test]
fn shutdown_with_idle_workers() {
    loom::model(|| {
        let pool = pool(2);
        let a = pool.submit(|| 1u32).unwrap();
        let b = pool.submit(|| 2u32).unwrap();
        assert_eq!(a.join(), Ok(1));
        assert_eq!(b.join(), Ok(2));
        assert!(pool.pool_size() <= 2);
        finish(&pool);
    });
}

/// Two workers, one the leader timing a far head and one a follower; a
/// shutdown whose policy cancels the delayed tasks empties the queue: both
/// workers (leader and follower) must wake and exit.
#[test]
fn shutdown_wakes_leader_and_follower() {
    loom::model(|| {
        let clock = ManualClock::new();
        let pool = ScheduledThreadPool::builder()
            .core_threads(2)
            .execute_delayed_after_shutdown(false)
            .clock(clock)
            .build()
            .unwrap();
        let a = pool.schedule(|| 1u32, FOREVER).unwrap();
        let b = pool.schedule(|| 2u32, FOREVER).unwrap();
        finish(&pool);
        assert_eq!(a.join(), Err(TaskError::Cancelled));
        assert_eq!(b.join(), Err(TaskError::Cancelled));
    });
}

/// The same through shutdown_now, from another thread than the waiter.
#[test]
fn shutdown_now_with_idle_workers() {
    loom::model(|| {
        let pool = pool(2);
        let a = pool.submit(|| 1u32).unwrap();
        let b = pool.submit(|| 2u32).unwrap();
        assert_eq!(a.join(), Ok(1));
        assert_eq!(b.join(), Ok(2));
        let stopper = {
            let pool = pool.clone();
            thread::spawn(move || pool.shutdown_now().len())
        };
        assert!(pool.await_termination(FOREVER));
        assert_eq!(stopper.join().unwrap(), 0, "nothing was pending");
        assert_eq!(pool.pool_size(), 0);
    });
}

/// shutdown_now racing a worker that is taking a due task: API.md says
/// shutdown_now "returns every task that had not started", so the task
/// either runs (it had started) or is returned. This once failed: a worker
/// that popped the task just before shutdown_now saw STOP and cancelled it,
/// so it was neither run nor returned; the worker now decides under the lock
/// it took the task under.
#[test]
fn shutdown_now_returns_or_runs() {
    loom::model(|| {
        let pool = pool(1);
        let ran = Arc::new(AtomicUsize::new(0));
        let h = {
            let ran = ran.clone();
            pool.submit(move || {
                ran.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap()
        };
        let returned = pool.shutdown_now();
        let returned_it = returned.len() == 1;
        drop(returned);
        assert!(pool.await_termination(FOREVER));
        let runs = ran.load(Ordering::SeqCst);
        assert!(h.is_done());
        assert!(
            (runs == 1) != returned_it,
            "ran {runs} times, returned by shutdown_now: {returned_it}, handle: {:?}",
            h.join()
        );
    });
}
