//! Periodic tasks: pause and resume racing the end of a run, and a
//! re-enqueue that becomes the new head.

use super::*;

/// pause and resume racing the end of a periodic run (the worker claims,
/// runs, ends the run and requeues it): the task is never queued twice, runs
/// exactly once on a frozen clock, and ends scheduled for its next period or
/// paused. This once failed: a pause and resume between a run's end and its
/// requeue pushed the task, and the requeue pushed it again.
#[test]
fn pause_resume_race_the_end_of_a_run() {
    loom::model(|| {
        let pool = manual_pool();
        let runs = Arc::new(AtomicUsize::new(0));
        let r = runs.clone();
        let h = Arc::new(
            pool.schedule_at_fixed_rate(
                move || {
                    r.fetch_add(1, Ordering::SeqCst);
                },
                Duration::ZERO,
                FOREVER,
            )
            .unwrap(),
        );
        let steer = {
            let h = h.clone();
            thread::spawn(move || {
                h.pause();
                h.resume();
            })
        };
        steer.join().unwrap();
        assert!(pool.wait_idle(FOREVER));
        assert_eq!(runs.load(Ordering::SeqCst), 1, "ran exactly once");
        assert!(pool.queue_len() <= 1, "queued at most once");
        schedpool::internals::check_pool(&h).unwrap();
        assert!(matches!(
            h.state(),
            schedpool::TaskState::Scheduled | schedpool::TaskState::Paused
        ));
        finish(&pool);
    });
}

/// The requeue path with two workers: a periodic task requeued as the new
/// head (earlier than the far task another worker is timing as leader) must
/// still run when its next period comes, in every interleaving. loom never
/// fires a timeout, so only `advance` (which clears the leader itself) can
/// make the head due here: the self-handoff's own leader clear is checked
/// in real time by `tests/periodic.rs`
/// (`a_periodic_task_keeps_running_while_another_worker_leads_on_a_far_task`).
#[test]
fn periodic_requeue_as_new_head_keeps_someone_timing_it() {
    loom::model(|| {
        let clock = ManualClock::new();
        let pool = workers_on(2, &clock);
        let far = pool.schedule(|| (), FOREVER).unwrap();
        let runs = Arc::new(AtomicUsize::new(0));
        let r = runs.clone();
        let period = Duration::from_secs(1);
        let h = pool
            .schedule_at_fixed_rate(
                move || {
                    r.fetch_add(1, Ordering::SeqCst);
                },
                Duration::ZERO,
                period,
            )
            .unwrap();
        assert!(pool.wait_idle(FOREVER));
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        clock.advance(period);
        assert!(pool.wait_idle(FOREVER));
        assert_eq!(
            runs.load(Ordering::SeqCst),
            2,
            "the requeued head ran at its next period"
        );
        h.cancel();
        far.cancel();
        finish(&pool);
    });
}
