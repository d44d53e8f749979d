//! The submission list (issue 33, `src/pool/submissions.rs`): a delayed
//! task whose submitter skips the pool lock because a worker is bound to
//! look for it. Under loom (no time) only a *looking* worker covers a
//! submission (no published wake time is compared with a deadline), so
//! each model lets the submission land while the only worker looks, goes
//! to sleep or sleeps. A submission left in the list with the worker
//! asleep is a loom livelock in `until_nodes` or a deadlock in `join`.
//! The hand-shake alone is modelled in `src/pool/submissions.rs`.

use super::*;

use schedpool::internals::pool_queue_nodes;

/// Spins (yielding to loom) until the pool's queue holds `n` nodes. Reads
/// under the pool lock without absorbing the list: only a worker, or a
/// submission that found nobody covering it, moves it into the queue.
fn until_nodes<T: 'static>(h: &schedpool::ScheduledHandle<T>, n: usize) {
    while pool_queue_nodes(h) != n {
        thread::yield_now();
    }
}

/// A pool on `clock` whose only worker has started: it leads on a far
/// task (returned), so the next submission may take the list.
fn leading_pool(clock: &ManualClock) -> (ScheduledThreadPool, schedpool::ScheduledHandle<()>) {
    let pool = ScheduledThreadPool::builder()
        .core_threads(1)
        .clock(clock.clone())
        .execute_delayed_after_shutdown(false)
        .build()
        .unwrap();
    let far = pool.schedule(|| (), FOREVER).unwrap();
    (pool, far)
}

/// A new, earlier head submitted while the leader re-times the old one:
/// the worker queues it without any other thread's help (the submission
/// found it looking, or found nobody and woke it), and it runs when due.
#[test]
fn submission_races_the_leader_retiming() {
    loom::model(|| {
        let clock = ManualClock::new();
        let (pool, far) = leading_pool(&clock);
        let submitter = {
            let pool = pool.clone();
            thread::spawn(move || pool.schedule(|| 5u32, Duration::from_secs(5)).unwrap())
        };
        let h = submitter.join().unwrap();
        until_nodes(&h, 2);
        clock.advance(Duration::from_secs(5));
        assert_eq!(h.join(), Ok(5));
        assert!(far.cancel());
        finish(&pool);
    });
}

/// A submission cancelled at once by its submitter, racing the worker's
/// drain of the list: the cancel wins, the body never runs, and the task
/// is counted once and leaves no node behind, whether it was still in
/// the list or already queued when the cancel came.
#[test]
fn cancel_races_the_drain_of_the_list() {
    loom::model(|| {
        let clock = ManualClock::new();
        let (pool, far) = leading_pool(&clock);
        let ran = Arc::new(AtomicUsize::new(0));
        let canceller = {
            let (pool, ran) = (pool.clone(), ran.clone());
            thread::spawn(move || {
                let h = pool
                    .schedule(
                        move || {
                            ran.fetch_add(1, Ordering::SeqCst);
                        },
                        Duration::from_secs(5),
                    )
                    .unwrap();
                assert!(h.cancel());
                h
            })
        };
        let h = canceller.join().unwrap();
        assert_eq!(h.join(), Err(TaskError::Cancelled));
        until_nodes(&far, 1);
        clock.advance(Duration::from_secs(5));
        let stats = pool.stats();
        assert_eq!((stats.queued, stats.cancelled), (1, 1));
        assert!(far.cancel());
        finish(&pool);
        assert_eq!(ran.load(Ordering::SeqCst), 0, "a cancelled task ran");
    });
}

/// A delayed submission racing `shutdown` (delayed tasks do not run after
/// it): rejected, or accepted and then cancelled by the shutdown, which
/// absorbs the list before it purges. Never lost: a task left in the list
/// would keep the pool from terminating.
#[test]
fn submission_races_shutdown() {
    loom::model(|| {
        let clock = ManualClock::new();
        let (pool, far) = leading_pool(&clock);
        let submitter = {
            let pool = pool.clone();
            thread::spawn(move || pool.schedule(|| 1u32, Duration::from_secs(5)))
        };
        pool.shutdown();
        let result = submitter.join().unwrap();
        finish(&pool);
        assert_eq!(far.join(), Err(TaskError::Cancelled));
        match result {
            Ok(h) => assert_eq!(h.join(), Err(TaskError::Cancelled)),
            Err(e) => assert!(e.is_shutdown()),
        }
        assert_eq!(pool.queue_len(), 0);
    });
}

/// A periodic task triggered, paused, re-periodised and resumed at once by
/// its submitter, while it may still be in the list: every control takes
/// the pool lock, which absorbs the list first, so the trigger runs it once,
/// it is never queued twice, and it ends scheduled with its new period.
#[test]
fn controls_race_a_periodic_task_in_the_list() {
    loom::model(|| {
        let clock = ManualClock::new();
        let (pool, far) = leading_pool(&clock);
        let runs = Arc::new(AtomicUsize::new(0));
        let steer = {
            let (pool, runs) = (pool.clone(), runs.clone());
            thread::spawn(move || {
                let h = pool
                    .schedule_at_fixed_rate(
                        move || {
                            runs.fetch_add(1, Ordering::SeqCst);
                        },
                        Duration::from_secs(5),
                        Duration::from_secs(5),
                    )
                    .unwrap();
                assert!(h.trigger());
                h
            })
        };
        let h = steer.join().unwrap();
        assert!(pool.wait_idle(FOREVER));
        assert_eq!(runs.load(Ordering::SeqCst), 1, "the trigger ran it once");
        assert!(h.pause());
        h.set_period(Duration::from_secs(7)).unwrap();
        assert!(h.resume());
        schedpool::internals::check_pool(&h).unwrap();
        assert_eq!(pool.queue_len(), 2, "queued once, with the far task");
        assert_eq!(h.state(), schedpool::TaskState::Scheduled);
        assert!(far.cancel());
        finish(&pool);
    });
}
