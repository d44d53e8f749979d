//! Numbered executor behaviours A9 and A10: shutdown and its policies,
//! `shutdown_now`, `await_termination`, `wait_idle`, calls from inside a task,
//! dropping the last clone, and rejection; with the edge cases around them.

use super::*;

/// wait_idle returns as soon as the pool is idle, also when the last due
/// work was a cancelled task kept in the queue (remove_on_cancel = false)
/// that a worker discards.
#[test]
fn a9_wait_idle_prompt_after_discarding_cancelled_task() {
    let clock = ManualClock::new();
    let p = guard(
        ScheduledThreadPool::builder()
            .core_threads(1)
            .clock(clock.clone())
            .remove_on_cancel(false)
            .build(),
    );
    for round in 0..5 {
        let h = p.schedule(|| (), Duration::from_secs(10)).unwrap();
        assert!(h.cancel());
        clock.advance(Duration::from_secs(10));
        let start = Instant::now();
        assert!(p.wait_idle(LONG));
        let took = start.elapsed();
        assert!(
            took < Duration::from_secs(2),
            "round {round}: wait_idle took {took:?}"
        );
        assert_eq!(p.queue_len(), 0);
    }
}

/// A9.44 defaults: at shutdown a queued periodic task is cancelled, a delayed
/// one-shot stays and still runs at its time (await_termination waits for
/// it), and new submissions are rejected.
#[test]
fn a9_shutdown_defaults() {
    let clock = ManualClock::new();
    let p = manual_pool(1, &clock);
    let one = p.schedule(|| "one", ms(200)).unwrap();
    let runs = counter();
    let r = runs.clone();
    let per = p
        .schedule_at_fixed_rate(
            move || {
                r.fetch_add(1, SeqCst);
            },
            Duration::ZERO,
            ms(10),
        )
        .unwrap();
    assert!(p.wait_idle(LONG));
    assert_eq!(runs.load(SeqCst), 1);
    p.shutdown();
    assert!(per.is_done() && per.is_cancelled());
    assert!(!one.is_done());
    assert_eq!(p.queue_len(), 1);
    assert!(!p.await_termination(SHORT));
    assert_submissions_rejected(&p, &counter());
    clock.advance(ms(200));
    assert_eq!(join(one).unwrap(), "one");
    assert!(p.await_termination(LONG));
    assert_eq!(runs.load(SeqCst), 1);
    assert_cancelled(per);
}

/// A9.43-44 with execute_delayed_after_shutdown = false: queued not-yet-due
/// one-shots are cancelled at shutdown; already-due ones still run (JDK 9+).
#[test]
fn a9_execute_delayed_false() {
    let clock = ManualClock::new();
    let gate = Latch::new(1);
    let p = guard(
        ScheduledThreadPool::builder()
            .core_threads(1)
            .clock(clock.clone())
            .execute_delayed_after_shutdown(false)
            .build(),
    )
    .releasing(&gate);
    let started = Latch::new(1);
    p.execute(blocker(&started, &gate)).unwrap();
    started.await_();
    let ran = counter();
    let r = ran.clone();
    let due = p
        .schedule(move || r.fetch_add(1, SeqCst), Duration::ZERO)
        .unwrap();
    let r = ran.clone();
    p.execute(move || {
        r.fetch_add(1, SeqCst);
    })
    .unwrap();
    let r = ran.clone();
    let delayed = p
        .schedule(move || r.fetch_add(1, SeqCst), Duration::from_secs(1))
        .unwrap();
    p.shutdown();
    assert!(delayed.is_cancelled());
    assert_eq!(p.queue_len(), 2);
    gate.open();
    join(due).unwrap();
    assert!(
        p.await_termination(LONG),
        "nothing delayed is left to wait for"
    );
    assert_eq!(ran.load(SeqCst), 2);
    assert_cancelled(delayed);
}

/// A9.45 with continue_periodic_after_shutdown = true: periodic tasks keep
/// running after shutdown and the pool does not terminate until they are
/// cancelled.
#[test]
fn a9_continue_periodic_true() {
    let clock = ManualClock::new();
    let p = guard(
        ScheduledThreadPool::builder()
            .core_threads(1)
            .clock(clock.clone())
            .continue_periodic_after_shutdown(true)
            .build(),
    );
    let runs = counter();
    let r = runs.clone();
    let h = p
        .schedule_at_fixed_rate(
            move || {
                r.fetch_add(1, SeqCst);
            },
            Duration::ZERO,
            Duration::from_secs(1),
        )
        .unwrap();
    assert!(p.wait_idle(LONG));
    p.shutdown();
    clock.advance(Duration::from_secs(3));
    assert!(p.wait_idle(LONG));
    assert_eq!(runs.load(SeqCst), 4);
    assert!(!h.is_done());
    assert!(!p.await_termination(SHORT));
    assert!(h.cancel());
    assert!(p.await_termination(LONG));
    assert_eq!(runs.load(SeqCst), 4);
}

/// A9.44.1: shutdown is idempotent, also after termination.
#[test]
fn a9_shutdown_idempotent() {
    let p = pool(2);
    join(p.submit(|| ()).unwrap()).unwrap();
    p.shutdown();
    p.shutdown();
    assert!(p.await_termination(LONG));
    p.shutdown();
    assert!(p.is_terminated());
    assert!(p.shutdown_now().is_empty());
    assert!(p.is_terminated());
}

/// A9.44: a periodic task running at shutdown is cancelled after its current
/// run (its re-enqueue is refused).
#[test]
fn a9_running_periodic_cancelled_after_run() {
    let gate = Latch::new(1);
    let p = pool(1).releasing(&gate);
    let started = Latch::new(1);
    let runs = counter();
    let h = p
        .schedule_at_fixed_rate(
            periodic_body(&runs, Some((&started, &gate)), "unused"),
            Duration::ZERO,
            ms(1),
        )
        .unwrap();
    started.await_();
    p.shutdown();
    gate.open();
    assert_cancelled(h);
    assert!(p.await_termination(LONG));
    assert_eq!(runs.load(SeqCst), 1);
}

/// A9.46 (our PendingTask): shutdown_now returns tasks in deadline order (FIFO
/// among ties); running one completes its handle with its value.
#[test]
fn a9_shutdown_now_deadline_order_and_run() {
    let clock = ManualClock::new();
    let p = manual_pool(1, &clock);
    let order = Arc::new(Mutex::new(Vec::new()));
    let task = |name: &'static str| {
        let o = order.clone();
        move || {
            o.lock().unwrap().push(name);
            name
        }
    };
    let h3 = p.schedule(task("3s"), Duration::from_secs(3)).unwrap();
    let h1a = p.schedule(task("1s-a"), Duration::from_secs(1)).unwrap();
    let h2 = p.schedule(task("2s"), Duration::from_secs(2)).unwrap();
    let h1b = p.schedule(task("1s-b"), Duration::from_secs(1)).unwrap();
    let pending = p.shutdown_now();
    assert_eq!(pending.len(), 4);
    assert!(p.await_termination(LONG));
    for t in pending {
        t.run();
    }
    assert_eq!(*order.lock().unwrap(), vec!["1s-a", "1s-b", "2s", "3s"]);
    assert_eq!(join(h1a).unwrap(), "1s-a");
    assert_eq!(join(h1b).unwrap(), "1s-b");
    assert_eq!(join(h2).unwrap(), "2s");
    assert_eq!(join(h3).unwrap(), "3s");
}

/// A9.46: after shutdown_now no queued task starts, even a due one; dropping
/// the returned tasks cancels their handles, so no join can hang.
#[test]
fn a9_shutdown_now_nothing_starts_after() {
    let gate = Latch::new(1);
    let p = pool(1).releasing(&gate);
    let started = Latch::new(1);
    p.execute(blocker(&started, &gate)).unwrap();
    started.await_();
    let ran = counter();
    let hs: Vec<_> = (0..5)
        .map(|_| {
            let r = ran.clone();
            p.submit(move || r.fetch_add(1, SeqCst)).unwrap()
        })
        .collect();
    let pending = p.shutdown_now();
    assert_eq!(pending.len(), 5);
    gate.open();
    assert!(p.await_termination(LONG));
    assert_eq!(ran.load(SeqCst), 0);
    drop(pending);
    for h in hs {
        assert_cancelled(h);
    }
    assert_eq!(ran.load(SeqCst), 0);
}

/// API: shutdown from inside a running task works and does not deadlock.
#[test]
fn a9_shutdown_from_inside_task() {
    let p = pool(1);
    let pc = p.pool();
    let h = p
        .submit(move || {
            pc.shutdown();
            pc.is_shutdown()
        })
        .unwrap();
    assert!(join(h).unwrap());
    assert!(p.await_termination(LONG));
}

/// API: schedule and cancel from inside a running task work.
#[test]
fn a9_schedule_and_cancel_from_inside_task() {
    let p = pool(1);
    let victim = p.schedule(|| (), HOUR).unwrap();
    let pc = p.pool();
    let h = p
        .submit(move || {
            let cancelled = victim.cancel();
            let inner = pc.schedule(|| 5, ms(1)).unwrap();
            (cancelled, inner)
        })
        .unwrap();
    let (cancelled, inner) = join(h).unwrap();
    assert!(cancelled);
    assert_eq!(join(inner).unwrap(), 5);
    assert_eq!(p.queue_len(), 0);
}

/// Deliberate difference: await_termination from a pool thread returns false
/// instead of waiting for itself.
#[test]
fn a9_await_termination_from_pool_thread() {
    let p = pool(1);
    let pc = p.pool();
    let h = p
        .submit(move || {
            pc.shutdown();
            pc.await_termination(ms(500))
        })
        .unwrap();
    assert!(!join(h).unwrap());
    assert!(p.await_termination(LONG));
}

/// A9.47: a zero timeout returns the current status at once.
#[test]
fn a9_await_termination_zero_timeout() {
    let p = pool(1);
    assert!(!p.await_termination(Duration::ZERO));
    p.shutdown();
    assert!(p.await_termination(LONG));
    assert!(p.await_termination(Duration::ZERO));
}

/// A9.49 (our Drop): dropping the last clone shuts the pool down like
/// shutdown(), without blocking: the periodic task is cancelled, the delayed
/// one-shot still runs when due.
#[test]
fn a9_drop_last_clone_shuts_down() {
    let clock = ManualClock::new();
    let pool = ScheduledThreadPool::builder()
        .core_threads(1)
        .clock(clock.clone())
        .build()
        .unwrap();
    let one = pool.schedule(|| "late", HOUR).unwrap();
    let runs = counter();
    let r = runs.clone();
    let per = pool
        .schedule_at_fixed_rate(
            move || {
                r.fetch_add(1, SeqCst);
            },
            Duration::ZERO,
            Duration::from_secs(1),
        )
        .unwrap();
    assert!(pool.wait_idle(LONG));
    let clone = pool.clone();
    drop(pool);
    assert!(!clone.is_shutdown(), "a live clone keeps the pool running");
    let start = Instant::now();
    drop(clone);
    assert!(start.elapsed() < LONG / 2, "drop blocked");
    assert_cancelled(per);
    assert!(!one.is_done());
    clock.advance(HOUR);
    assert_eq!(join(one).unwrap(), "late");
    assert_eq!(runs.load(SeqCst), 1);
}

/// A10 / API: Rejected says why: shut down, or which argument.
#[test]
fn a10_rejected_says_why() {
    let p = pool(1);
    let period =
        rejected(p.schedule_at_fixed_rate(|| {}, Duration::ZERO, Duration::ZERO)).to_string();
    let delay =
        rejected(p.schedule_with_fixed_delay(|| {}, Duration::ZERO, Duration::ZERO)).to_string();
    p.shutdown();
    let shut = rejected(p.execute(|| {})).to_string();
    assert!(period.to_lowercase().contains("period"), "{period:?}");
    assert!(
        delay.to_lowercase().contains("delay") || delay.to_lowercase().contains("period"),
        "{delay:?}"
    );
    assert!(shut.to_lowercase().contains("shut"), "{shut:?}");
    let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(rejected(p.submit(|| 1)));
    assert!(!boxed.to_string().is_empty());
}

// ---------------------------------------------------------------------------
// Edge cases and races around the behaviours above
// ---------------------------------------------------------------------------

/// PendingTask::run on a periodic task runs it once, then its handle
/// completes as cancelled (its pool is stopped).
#[test]
fn a9_pending_periodic_runs_once() {
    let p = pool(1);
    let runs = counter();
    let r = runs.clone();
    let h = p
        .schedule_with_fixed_delay(
            move || {
                r.fetch_add(1, SeqCst);
            },
            HOUR,
            ms(1),
        )
        .unwrap();
    let pending = p.shutdown_now();
    assert_eq!(pending.len(), 1);
    for t in pending {
        t.run();
    }
    assert_eq!(runs.load(SeqCst), 1);
    assert_cancelled(h);
    assert!(p.await_termination(LONG));
}

/// shutdown_now from inside a running task returns the queued tasks and
/// does not deadlock.
#[test]
fn a9_shutdown_now_from_inside_task() {
    let p = pool(1);
    let later = p.schedule(|| (), HOUR).unwrap();
    let pc = p.pool();
    let h = p.submit(move || pc.shutdown_now().len()).unwrap();
    assert_eq!(join(h).unwrap(), 1);
    assert!(p.await_termination(LONG));
    assert_cancelled(later);
}

/// await_termination of *another* pool from a pool thread waits normally
/// (only waiting for one's own pool is refused).
#[test]
fn a9_await_other_pool_from_pool_thread() {
    let a = pool(1);
    let b = pool(1);
    let bc = b.pool();
    let slow = b.schedule(|| (), ms(30)).unwrap();
    let h = a
        .submit(move || {
            bc.shutdown();
            bc.await_termination(LONG)
        })
        .unwrap();
    assert!(
        join(h).unwrap(),
        "waiting for another pool from a pool thread failed"
    );
    join(slow).unwrap();
}

/// The last clone of a pool may be dropped on one of its own threads (inside
/// a task): the pool shuts down without deadlocking.
#[test]
fn a9_last_clone_dropped_inside_task() {
    let pool = ScheduledThreadPool::new(1);
    let per = pool.schedule_at_fixed_rate(|| {}, HOUR, HOUR).unwrap();
    let inner = pool.clone();
    let started = Latch::new(1);
    let s = started.clone();
    pool.execute(move || {
        s.wait(LONG);
        thread::sleep(ms(5));
        drop(inner); // the last clone goes away on a worker thread
    })
    .unwrap();
    drop(pool);
    started.open();
    assert_cancelled(per);
}

/// wait_idle is exact on a multi-thread pool: once it returns true every due
/// task has finished (with a ManualClock).
#[test]
fn a9_wait_idle_means_all_due_work_done() {
    let clock = ManualClock::new();
    let p = manual_pool(3, &clock);
    let done = counter();
    for i in 0..60u64 {
        let d = done.clone();
        p.schedule(
            move || {
                thread::sleep(Duration::from_micros(200));
                d.fetch_add(1, SeqCst);
            },
            ms(1 + i % 3),
        )
        .unwrap()
        .detach();
    }
    for i in 0..5u64 {
        p.schedule(|| (), HOUR + ms(i)).unwrap().detach();
    }
    clock.advance(ms(3));
    assert!(p.wait_idle(LONG));
    assert_eq!(done.load(SeqCst), 60);
    assert_eq!(p.queue_len(), 5);
    assert_eq!(p.active_count(), 0);
}

/// A9.44.2: shutdown wakes idle workers, including one in a long timed wait
/// on a far head, so the pool terminates promptly.
#[test]
fn a9_idle_pool_terminates_promptly() {
    let p = pool(4);
    let all = Latch::new(4);
    for _ in 0..4 {
        let a = all.clone();
        p.execute(move || {
            a.count_down();
            a.wait(LONG);
        })
        .unwrap();
    }
    all.await_();
    let per = p.schedule_at_fixed_rate(|| {}, HOUR, HOUR).unwrap();
    assert!(p.wait_idle(LONG));
    thread::sleep(ms(5)); // the workers are now waiting, one of them on the far head
    let start = Instant::now();
    p.shutdown();
    assert!(p.await_termination(LONG));
    let took = start.elapsed();
    assert!(took < Duration::from_secs(3), "termination took {took:?}");
    assert_eq!(p.pool_size(), 0);
    assert_cancelled(per);
}

/// A10: a rejected task's closure is dropped (not leaked, not run).
#[test]
fn a10_rejected_closure_is_dropped() {
    let p = pool(1);
    p.shutdown();
    let token = Arc::new(());
    let t = token.clone();
    rejected(p.schedule(move || drop(t), HOUR));
    let t = token.clone();
    rejected(p.schedule_at_fixed_rate(move || drop(t.clone()), HOUR, HOUR));
    let t = token.clone();
    rejected(p.schedule_at_fixed_rate(move || drop(t.clone()), HOUR, Duration::ZERO));
    assert_eq!(Arc::strong_count(&token), 1);
}

/// A PendingTask whose handle was cancelled after shutdown_now returned it
/// does not run; its handle stays Cancelled.
#[test]
fn a9_cancelled_pending_task_does_not_run() {
    let p = pool(1);
    let ran = Arc::new(AtomicBool::new(false));
    let r = ran.clone();
    let h = p.schedule(move || r.store(true, SeqCst), HOUR).unwrap();
    let pending = p.shutdown_now();
    assert_eq!(pending.len(), 1);
    assert!(h.cancel());
    for t in pending {
        t.run();
    }
    assert!(!ran.load(SeqCst));
    assert_cancelled(h);
}

/// A9.44 / A9.46: shutdown or shutdown_now racing with a periodic task's
/// re-enqueue never leaves it queued: the pool terminates and the handle is
/// cancelled.
#[test]
fn a9_shutdown_races_with_periodic_reenqueue() {
    for i in 0..100u64 {
        let p = pool(1 + (i % 2) as usize);
        let h = p
            .schedule_at_fixed_rate(|| {}, Duration::ZERO, Duration::from_micros(20))
            .unwrap();
        thread::sleep(Duration::from_micros(10 * (i % 20)));
        if i % 2 == 0 {
            p.shutdown();
        } else {
            drop(p.shutdown_now());
        }
        assert!(
            p.await_termination(LONG),
            "iteration {i}: pool did not terminate"
        );
        assert_cancelled(h);
        assert_eq!(p.queue_len(), 0);
    }
}

/// A cancelled due task (remove_on_cancel) is not returned by shutdown_now.
#[test]
fn a9_cancelled_due_task_not_returned_by_shutdown_now() {
    let gate = Latch::new(1);
    let p = pool(1).releasing(&gate);
    let started = Latch::new(1);
    p.execute(blocker(&started, &gate)).unwrap();
    started.await_();
    let a = p.submit(|| 1).unwrap();
    let b = p.submit(|| 2).unwrap();
    assert!(a.cancel());
    let pending = p.shutdown_now();
    assert_eq!(pending.len(), 1, "a cancelled task was returned");
    assert_eq!(pending[0].id(), b.id());
    drop(pending);
    gate.open();
    assert!(p.await_termination(LONG));
    assert_cancelled(a);
    assert_cancelled(b);
    eventually("completed == 1", || p.completed_task_count() == 1);
}
