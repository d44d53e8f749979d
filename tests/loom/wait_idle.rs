//! `wait_idle` after a clock advance, and woken by the cancel of a due head.

use super::*;

/// Advancing a manual clock, then `wait_idle`: it returns only once the
/// task that came due has run (it must not see "nothing running" in the gap
/// before the worker takes the task), and it is woken when the run ends.
#[test]
fn advance_then_wait_idle_sees_the_run() {
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
                Duration::from_secs(10),
            )
            .unwrap()
        };
        clock.advance(Duration::from_secs(10));
        assert!(pool.wait_idle(FOREVER));
        assert_eq!(
            ran.load(Ordering::SeqCst),
            1,
            "wait_idle returned before the due run"
        );
        assert!(h.is_done());
        finish(&pool);
    });
}

/// A due task is cancelled while `wait_idle` sleeps and before a worker
/// pops it. Nothing runs afterwards, so the cancel itself must wake
/// `wait_idle` (a review found it did not: `wait_idle` slept to its timeout,
/// here a loom deadlock, although the pool was idle from the cancel on).
#[test]
fn cancel_of_a_due_head_wakes_wait_idle() {
    loom::model(|| {
        let clock = ManualClock::new();
        let pool = pool_on(&clock);
        let h = pool.schedule(|| (), Duration::from_secs(10)).unwrap();
        clock.advance(Duration::from_secs(10));
        let canceller = thread::spawn(move || {
            h.cancel();
        });
        assert!(pool.wait_idle(FOREVER));
        canceller.join().unwrap();
        assert!(pool.shutdown().await_termination(FOREVER));
    });
}
