//! A cancel racing the queue owner's reclaim (issue 33): a cancel never
//! takes the pool lock to remove its node; it leaves the task on the
//! pool's removal list, and a waiting worker takes the list. Under loom
//! (no time) every first cancel after a take wakes a waiter, so a lost
//! wake-up (a worker that checked the list, then slept, while a cancel
//! pushed and decided nobody needed waking) is a loom livelock here.

use super::*;

use schedpool::internals::pool_queue_nodes;

/// Spins (yielding to loom) until the pool's queue holds `n` nodes. Reads
/// under the pool lock without reclaiming: only the worker reclaims.
fn until_nodes<T: 'static>(h: &schedpool::ScheduledHandle<T>, n: usize) {
    while pool_queue_nodes(h) != n {
        thread::yield_now();
    }
}

/// Two cancels race each other and the sleeping worker's reclaim: both
/// nodes leave the queue without the cancelling threads taking part, each
/// cancel is counted once, and neither body runs.
#[test]
fn cancels_race_the_owners_reclaim() {
    loom::model(|| {
        let pool = manual_pool();
        let ran = Arc::new(AtomicUsize::new(0));
        let submit = |ran: Arc<AtomicUsize>| {
            pool.schedule(
                move || {
                    ran.fetch_add(1, Ordering::SeqCst);
                },
                FOREVER,
            )
            .unwrap()
        };
        let a = Arc::new(submit(ran.clone()));
        let b = submit(ran.clone());
        let other = {
            let a = a.clone();
            thread::spawn(move || assert!(a.cancel()))
        };
        assert!(b.cancel());
        other.join().unwrap();
        // Uncounted at once, whoever reclaimed.
        until_nodes(&b, 0);
        assert_eq!(ran.load(Ordering::SeqCst), 0);
        let stats = pool.stats();
        assert_eq!((stats.queued, stats.cancelled), (0, 2));
        assert!(
            pool.shutdown_now().is_empty(),
            "a cancelled task is never returned"
        );
        assert!(pool.await_termination(FOREVER));
    });
}

/// A cancel racing the worker's take of the same due task, where the
/// worker may pop the task before the removal reaches it: a cancel that
/// wins before the run starts (`cancel_if_not_started`) means the body
/// never runs, and it is counted once; otherwise the body runs once.
#[test]
fn cancel_races_the_take_of_a_due_task() {
    loom::model(|| {
        let clock = ManualClock::new();
        let pool = pool_on(&clock);
        let ran = Arc::new(AtomicUsize::new(0));
        let h = {
            let ran = ran.clone();
            pool.schedule(
                move || {
                    ran.fetch_add(1, Ordering::SeqCst);
                },
                Duration::from_secs(1),
            )
            .unwrap()
        };
        let advancer = {
            let clock = clock.clone();
            thread::spawn(move || clock.advance(Duration::from_secs(1)))
        };
        let cancelled = h.cancel_if_not_started();
        advancer.join().unwrap();
        assert!(pool.shutdown().await_termination(FOREVER));
        let runs = ran.load(Ordering::SeqCst);
        assert_eq!(runs, usize::from(!cancelled), "cancelled: {cancelled}");
        assert_eq!(pool.stats().cancelled, u64::from(cancelled));
        assert_eq!(pool.queue_len(), 0);
    });
}

/// A cancel racing a worker that leaves the wait to run a due task, while
/// the other worker sleeps: whichever way it goes, the cancelled node is
/// reclaimed while the due task still runs (its body waits for the node
/// to go), and the cancel is counted once. A cancel that finds a worker
/// looking wakes nobody; one that finds nobody looking wakes the sleeper.
/// (The hand-shake itself, a looking worker that must take the list before
/// it leaves, is modelled alone in `src/pool/removals.rs`, which fails if
/// the check is dropped; here the leaving worker's hand-over also wakes
/// the other, which would hide that bug.)
#[test]
fn cancel_races_a_worker_leaving_to_run() {
    loom::model(|| {
        let clock = ManualClock::new();
        let pool = workers_on(2, &clock);
        let far = Arc::new(pool.schedule(|| (), FOREVER).unwrap());
        let due = {
            let far = far.clone();
            pool.schedule(move || until_nodes(&far, 0), Duration::from_secs(1))
                .unwrap()
        };
        clock.advance(Duration::from_secs(1));
        assert!(far.cancel());
        assert!(due.join().is_ok());
        assert_eq!(pool.stats().cancelled, 1);
        finish(&pool);
    });
}
