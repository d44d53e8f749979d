//! JSR-166 TCK `ScheduledExecutorTest`: rejection after shutdown, the
//! shutdown states, `shutdown_now` and the shutdown policies.

use super::*;

/// testSubmittedTasksRejectedWhenShutdown: after shutdown or shutdown_now,
/// before and after termination, every kind of submission is rejected with no
/// side effect, whatever the delay (0, 1 ns, 1 ms, 1 h, Duration::MAX).
#[test]
fn tck_submitted_tasks_rejected_when_shutdown() {
    for use_shutdown_now in [false, true] {
        let gate = Latch::new(1);
        let p = pool(2).releasing(&gate);
        let started = Latch::new(1);
        p.execute(blocker(&started, &gate)).unwrap();
        started.await_();
        let ran = counter();
        if use_shutdown_now {
            assert!(p.shutdown_now().is_empty());
        } else {
            p.shutdown();
        }
        assert!(p.is_shutdown());
        assert!(!p.is_terminated(), "a task is still running");
        assert_submissions_rejected(&p, &ran);
        gate.open();
        assert!(p.await_termination(LONG));
        assert!(p.is_terminated());
        assert_submissions_rejected(&p, &ran);
        eventually("completed == 1", || p.completed_task_count() == 1);
        assert_eq!(p.task_count(), 1);
        assert_eq!(ran.load(SeqCst), 0);
    }
}

/// testIsShutdown: false before shutdown, true after.
#[test]
fn tck_is_shutdown() {
    let p = pool(1);
    assert!(!p.is_shutdown());
    p.shutdown();
    assert!(p.is_shutdown());
    assert!(p.await_termination(LONG));
    assert!(p.is_shutdown());
}

/// testIsTerminated: false while a task runs (even after shutdown); true after
/// shutdown + await_termination.
#[test]
fn tck_is_terminated() {
    let gate = Latch::new(1);
    let p = pool(1).releasing(&gate);
    let started = Latch::new(1);
    p.execute(blocker(&started, &gate)).unwrap();
    started.await_();
    assert!(!p.is_terminated());
    p.shutdown();
    assert!(!p.is_terminated());
    assert!(!p.await_termination(SHORT));
    gate.open();
    assert!(p.await_termination(LONG));
    assert!(p.is_terminated());
}

/// testIsTerminating: "terminating" (shut down, not yet terminated) while a
/// task still runs; not terminating before shutdown or after termination.
#[test]
fn tck_is_terminating() {
    let gate = Latch::new(1);
    let p = pool(1).releasing(&gate);
    let terminating = |p: &ScheduledThreadPool| p.is_shutdown() && !p.is_terminated();
    assert!(!terminating(&p));
    let started = Latch::new(1);
    p.execute(blocker(&started, &gate)).unwrap();
    started.await_();
    assert!(!terminating(&p));
    p.shutdown();
    assert!(terminating(&p));
    gate.open();
    assert!(p.await_termination(LONG));
    assert!(!terminating(&p));
}

/// testShutdownNow: 5 tasks on 2 threads; shutdown_now returns the 3 queued
/// ones, the queue is empty, the 2 running ones finish (we release them: no
/// interrupts), the pool terminates, ran = completed = 2.
#[test]
fn tck_shutdown_now() {
    let gate = Latch::new(1);
    let p = pool(2).releasing(&gate);
    let started = Latch::new(2);
    let ran = counter();
    let mut handles = Vec::new();
    for _ in 0..5 {
        let (s, g, r) = (started.clone(), gate.clone(), ran.clone());
        handles.push(
            p.submit(move || {
                s.count_down();
                g.wait(LONG);
                r.fetch_add(1, SeqCst);
            })
            .unwrap(),
        );
    }
    started.await_();
    let pending = p.shutdown_now();
    assert_eq!(pending.len(), 3);
    assert_eq!(p.queue_len(), 0);
    assert!(p.is_shutdown());
    drop(pending);
    gate.open();
    assert!(p.await_termination(LONG));
    assert_eq!(ran.load(SeqCst), 2);
    eventually("completed == 2", || p.completed_task_count() == 2);
    let outcomes: Vec<bool> = handles.into_iter().map(|h| join(h).is_ok()).collect();
    assert_eq!(outcomes, vec![true, true, false, false, false]);
}

/// testShutdownNow_delayedTasks: 3 × (one-shot, fixed-rate, fixed-delay)
/// far-future tasks; shutdown_now returns those 9, none of them done or
/// cancelled while the PendingTasks live; the pool terminates. Dropping the
/// PendingTasks completes the handles as Cancelled (our deliberate difference).
#[test]
fn tck_shutdown_now_delayed_tasks() {
    let p = pool(1);
    let ran = counter();
    let mut handles = Vec::new();
    for _ in 0..3 {
        let r = ran.clone();
        handles.push(
            p.schedule(
                move || {
                    r.fetch_add(1, SeqCst);
                },
                HOUR,
            )
            .unwrap(),
        );
        let r = ran.clone();
        handles.push(
            p.schedule_at_fixed_rate(
                move || {
                    r.fetch_add(1, SeqCst);
                },
                HOUR,
                HOUR,
            )
            .unwrap(),
        );
        let r = ran.clone();
        handles.push(
            p.schedule_with_fixed_delay(
                move || {
                    r.fetch_add(1, SeqCst);
                },
                HOUR,
                HOUR,
            )
            .unwrap(),
        );
    }
    assert_eq!(p.queue_len(), 9);
    let pending = p.shutdown_now();
    assert_eq!(pending.len(), 9);
    // The very tasks that were scheduled (Java: the same ScheduledFuture objects).
    let pending_ids: HashSet<u64> = pending.iter().map(|t| t.id()).collect();
    let handle_ids: HashSet<u64> = handles.iter().map(|h| h.id()).collect();
    assert_eq!(pending_ids, handle_ids);
    assert_eq!(pending.iter().filter(|t| t.is_periodic()).count(), 6);
    assert_eq!(p.queue_len(), 0);
    assert!(p.is_shutdown());
    for h in &handles {
        assert!(!h.is_done());
        assert!(!h.is_cancelled());
    }
    assert!(p.await_termination(LONG));
    assert!(p.is_terminated());
    for h in &handles {
        assert!(
            !h.is_done(),
            "handle completed while its PendingTask is alive"
        );
    }
    drop(pending);
    for h in handles {
        assert!(h.is_done());
        assert!(h.is_cancelled());
        assert_cancelled(h);
    }
    assert_eq!(ran.load(SeqCst), 0);
}

/// testShutdown_cancellation, over all 8 combinations of the three policies
/// instead of a random one: two periodic tasks block both workers; a second
/// wave (due one-shots, a delayed one-shot, a due periodic task, a cancelled
/// task) is queued; then shutdown. Checks which tasks stay queued, which are
/// cancelled, that due tasks run whatever the delayed policy, that continuing
/// periodic tasks stop only by panicking, and the exact run counts.
#[test]
fn tck_shutdown_cancellation() {
    quiet_expected_panics();
    for combo in 0..8u32 {
        let continue_periodic = combo & 1 != 0;
        let execute_delayed = combo & 2 != 0;
        let remove_on_cancel = combo & 4 != 0;
        let ctx = format!(
            "continue_periodic={continue_periodic} execute_delayed={execute_delayed} \
             remove_on_cancel={remove_on_cancel}"
        );
        let clock = ManualClock::new();
        let gate = Latch::new(1);
        let p = guard(
            ScheduledThreadPool::builder()
                .core_threads(2)
                .clock(clock.clone())
                .continue_periodic_after_shutdown(continue_periodic)
                .execute_delayed_after_shutdown(execute_delayed)
                .remove_on_cancel(remove_on_cancel)
                .build(),
        )
        .releasing(&gate);
        let blocked = Latch::new(2);
        let (r1, r2, rq) = (counter(), counter(), counter());
        let p1 = p
            .schedule_at_fixed_rate(
                periodic_body(&r1, Some((&blocked, &gate)), "p1"),
                Duration::ZERO,
                HOUR,
            )
            .unwrap();
        let p2 = p
            .schedule_with_fixed_delay(
                periodic_body(&r2, Some((&blocked, &gate)), "p2"),
                Duration::ZERO,
                HOUR,
            )
            .unwrap();
        blocked.await_();
        // Second wave, queued behind the two blocked workers.
        let ran_due = counter();
        let mut due = Vec::new();
        for i in 0..3 {
            let r = ran_due.clone();
            due.push(
                p.schedule(
                    move || {
                        r.fetch_add(1, SeqCst);
                        i
                    },
                    Duration::ZERO,
                )
                .unwrap(),
            );
        }
        let r = ran_due.clone();
        p.execute(move || {
            r.fetch_add(1, SeqCst);
        })
        .unwrap();
        let ran_delayed = counter();
        let r = ran_delayed.clone();
        let delayed = p
            .schedule(
                move || {
                    r.fetch_add(1, SeqCst);
                    "delayed"
                },
                HOUR,
            )
            .unwrap();
        let q = p
            .schedule_at_fixed_rate(periodic_body(&rq, None, "q"), Duration::ZERO, HOUR)
            .unwrap();
        let ran_cancelled = counter();
        let r = ran_cancelled.clone();
        let cancelled = p
            .schedule(
                move || {
                    r.fetch_add(1, SeqCst);
                },
                HOUR,
            )
            .unwrap();
        assert!(cancelled.cancel());
        let queued = 4 + 1 + 1 + usize::from(!remove_on_cancel);
        assert_eq!(p.queue_len(), queued, "{ctx}");

        p.shutdown();
        let kept = 4 + usize::from(execute_delayed) + usize::from(continue_periodic);
        assert_eq!(p.queue_len(), kept, "queue after shutdown; {ctx}");
        assert_eq!(delayed.is_cancelled(), !execute_delayed, "{ctx}");
        assert_eq!(q.is_cancelled(), !continue_periodic, "{ctx}");
        assert!(cancelled.is_cancelled());

        gate.open();
        for (i, h) in due.into_iter().enumerate() {
            assert_eq!(join(h).unwrap(), i, "{ctx}");
        }
        assert!(p.wait_idle(LONG), "{ctx}");
        if continue_periodic || execute_delayed {
            assert!(!p.await_termination(SHORT), "terminated too early; {ctx}");
        }
        clock.advance(HOUR);
        assert!(p.await_termination(LONG), "did not terminate; {ctx}");

        assert_eq!(ran_due.load(SeqCst), 4, "{ctx}");
        if continue_periodic {
            assert_panicked(p1, "p1 second run");
            assert_panicked(p2, "p2 second run");
            assert_panicked(q, "q second run");
            assert_eq!(
                (r1.load(SeqCst), r2.load(SeqCst), rq.load(SeqCst)),
                (2, 2, 2),
                "{ctx}"
            );
        } else {
            assert_cancelled(p1);
            assert_cancelled(p2);
            assert_cancelled(q);
            assert_eq!(
                (r1.load(SeqCst), r2.load(SeqCst), rq.load(SeqCst)),
                (1, 1, 0),
                "{ctx}"
            );
        }
        if execute_delayed {
            assert_eq!(join(delayed).unwrap(), "delayed");
            assert_eq!(ran_delayed.load(SeqCst), 1, "{ctx}");
        } else {
            assert_cancelled(delayed);
            assert_eq!(ran_delayed.load(SeqCst), 0, "{ctx}");
        }
        assert_cancelled(cancelled);
        assert_eq!(ran_cancelled.load(SeqCst), 0, "{ctx}");
    }
}
