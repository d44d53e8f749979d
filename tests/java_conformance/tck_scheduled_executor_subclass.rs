//! JSR-166 TCK `ScheduledExecutorSubclassTest`, where its intent differs from
//! `ScheduledExecutorTest` (Rust has no `decorateTask`).

use super::*;

/// The decorated object is what is re-enqueued every period (c.2, jtreg
/// DecorateTask): here the *same* FnMut closure is run every time, so state it
/// owns survives from one run to the next.
#[test]
fn tck_sub_periodic_closure_reenqueued() {
    let clock = ManualClock::new();
    let p = manual_pool(2, &clock);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let mut own_count = 0u32; // moved into the closure, never shared
    let h = p
        .schedule_at_fixed_rate(
            move || {
                own_count += 1;
                s.lock().unwrap().push(own_count);
            },
            Duration::ZERO,
            ms(10),
        )
        .unwrap();
    assert!(p.wait_idle(LONG));
    clock.advance(ms(50));
    assert!(p.wait_idle(LONG));
    assert!(h.cancel());
    assert_eq!(*seen.lock().unwrap(), vec![1, 2, 3, 4, 5, 6]);
}

/// CustomTask asserts `ran` inside get(): a handle only yields a value after
/// the body ran, and a task cancelled before its time never runs.
#[test]
fn tck_sub_join_implies_ran() {
    let p = pool(2);
    let ran = Arc::new(AtomicBool::new(false));
    let r = ran.clone();
    let h = p.schedule(move || r.store(true, SeqCst), DELAY).unwrap();
    join(h).unwrap();
    assert!(ran.load(SeqCst));
    let ran2 = Arc::new(AtomicBool::new(false));
    let r = ran2.clone();
    let h = p.schedule(move || r.store(true, SeqCst), HOUR).unwrap();
    assert!(h.cancel());
    assert_cancelled(h);
    assert!(!ran2.load(SeqCst));
}

/// testShutdownNow_delayedTasks (subclass variant): the returned tasks are the
/// scheduled tasks themselves and never ran; running a returned one-shot
/// completes the matching handle with its value.
#[test]
fn tck_sub_shutdown_now_delayed_tasks() {
    let p = pool(1);
    let ran = counter();
    let mut one_shots = Vec::new();
    for i in 0..3usize {
        let r = ran.clone();
        one_shots.push(
            p.schedule(
                move || {
                    r.fetch_add(1, SeqCst);
                    i
                },
                HOUR,
            )
            .unwrap(),
        );
    }
    let r = ran.clone();
    let rate = p
        .schedule_at_fixed_rate(
            move || {
                r.fetch_add(1, SeqCst);
            },
            HOUR * 2,
            HOUR,
        )
        .unwrap();
    let r = ran.clone();
    let delay = p
        .schedule_with_fixed_delay(
            move || {
                r.fetch_add(1, SeqCst);
            },
            HOUR * 2,
            HOUR,
        )
        .unwrap();
    let mut pending = p.shutdown_now().into_iter();
    assert_eq!(pending.len(), 5);
    assert!(p.await_termination(LONG));
    assert_eq!(
        ran.load(SeqCst),
        0,
        "shutdown_now returned tasks that already ran"
    );
    // Deadline order: the three one-shots (FIFO among equal delays) come first.
    for _ in 0..3 {
        pending.next().unwrap().run();
    }
    assert_eq!(ran.load(SeqCst), 3);
    for (i, h) in one_shots.into_iter().enumerate() {
        assert_eq!(join(h).unwrap(), i);
    }
    drop(pending);
    assert_cancelled(rate);
    assert_cancelled(delay);
    assert_eq!(ran.load(SeqCst), 3);
}
