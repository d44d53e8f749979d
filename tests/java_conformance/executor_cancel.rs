//! Numbered executor behaviour A8: cancel, retention without
//! `remove_on_cancel`, and cancel racing runs and re-enqueues; with the edge
//! cases around them.

use super::*;

/// A8.36: a second cancel returns false and changes nothing.
#[test]
fn a8_cancel_twice() {
    let p = pool(1);
    let h = p.schedule(|| (), HOUR).unwrap();
    assert!(!h.is_cancelled());
    assert!(h.cancel());
    assert!(!h.cancel());
    assert!(h.is_cancelled());
    assert!(h.is_done());
    assert_cancelled(h);
}

/// A8.36: cancel after completion returns false; the result stays.
#[test]
fn a8_cancel_after_completion() {
    let p = pool(1);
    let h = p.submit(|| 3).unwrap();
    assert!(h.wait_timeout(LONG));
    assert!(!h.cancel());
    assert!(!h.is_cancelled());
    assert!(h.is_done());
    assert_eq!(join(h).unwrap(), 3);
}

/// A8.36: cancelling a running one-shot succeeds, and the handle is done and
/// cancelled at once, even though the body is still running.
#[test]
fn a8_cancel_running_one_shot() {
    let gate = Latch::new(1);
    let p = pool(1).releasing(&gate);
    let started = Latch::new(1);
    let finished = Arc::new(AtomicBool::new(false));
    let (s, g, f) = (started.clone(), gate.clone(), finished.clone());
    let h = p
        .submit(move || {
            s.count_down();
            g.wait(LONG);
            f.store(true, SeqCst);
            9
        })
        .unwrap();
    started.await_();
    assert!(h.cancel());
    assert!(h.is_cancelled());
    assert!(h.is_done());
    assert!(h.wait_timeout(Duration::ZERO));
    assert!(!finished.load(SeqCst));
    gate.open();
    assert_cancelled(h);
    eventually("the body finished", || finished.load(SeqCst));
}

/// Checklist "cancelling during a periodic run": is_done is true at once and
/// there is no further run.
#[test]
fn a8_cancel_running_periodic() {
    let gate = Latch::new(1);
    let p = pool(2).releasing(&gate);
    let started = Latch::new(1);
    let runs = counter();
    let (s, g, r) = (started.clone(), gate.clone(), runs.clone());
    let h = p
        .schedule_at_fixed_rate(
            move || {
                if r.fetch_add(1, SeqCst) + 1 == 3 {
                    s.count_down();
                    g.wait(LONG);
                }
            },
            Duration::ZERO,
            ms(1),
        )
        .unwrap();
    started.await_();
    assert!(h.cancel());
    assert!(h.is_done());
    assert!(h.is_cancelled());
    gate.open();
    thread::sleep(SHORT);
    assert!(p.wait_idle(LONG));
    assert_eq!(runs.load(SeqCst), 3);
    assert_eq!(p.queue_len(), 0);
    assert_cancelled(h);
}

/// A8.38 (our default, remove_on_cancel = true): a successful cancel takes the
/// task out of the queue at once and drops its closure.
#[test]
fn a8_remove_on_cancel_drops_closure_at_once() {
    let p = pool(1);
    let token = Arc::new(());
    let t = token.clone();
    let h = p.schedule(move || drop(t), HOUR).unwrap();
    assert_eq!(Arc::strong_count(&token), 2);
    assert_eq!(p.queue_len(), 1);
    assert!(h.cancel());
    assert_eq!(p.queue_len(), 0);
    assert_eq!(
        Arc::strong_count(&token),
        1,
        "the cancelled closure is still alive"
    );
}

/// A8.37 (Java's policy, remove_on_cancel = false): a cancelled task stays
/// queued until its time, its handle reports Cancelled at once, and when it
/// comes due it is discarded (counting as a completed no-op run, as in Java).
#[test]
fn a8_retention_without_remove_on_cancel() {
    let clock = ManualClock::new();
    let p = guard(
        ScheduledThreadPool::builder()
            .core_threads(1)
            .clock(clock.clone())
            .remove_on_cancel(false)
            .build(),
    );
    let ran = counter();
    let r = ran.clone();
    let h = p
        .schedule(
            move || {
                r.fetch_add(1, SeqCst);
            },
            Duration::from_secs(10),
        )
        .unwrap();
    assert!(h.cancel());
    assert_eq!(p.queue_len(), 1);
    assert!(h.is_done());
    assert_cancelled(h);
    clock.advance(Duration::from_secs(10));
    // (Not wait_idle here: see a9_wait_idle_prompt_after_discarding_cancelled_task.)
    eventually("the cancelled task leaves the queue", || p.queue_len() == 0);
    assert_eq!(ran.load(SeqCst), 0);
    eventually("completed == 1", || p.completed_task_count() == 1);
}

/// A8.38: cancelling the last queued task after shutdown lets the pool terminate.
#[test]
fn a8_cancel_last_task_after_shutdown_terminates() {
    let p = pool(1);
    let h = p.schedule(|| (), HOUR).unwrap();
    p.shutdown();
    assert!(
        !p.await_termination(SHORT),
        "the delayed task keeps the pool alive"
    );
    assert!(h.cancel());
    assert!(p.await_termination(LONG));
}

// ---------------------------------------------------------------------------
// Edge cases and races around the behaviours above
// ---------------------------------------------------------------------------

/// wait_timeout is released by a cancel from another thread.
#[test]
fn a8_wait_timeout_released_by_cancel() {
    let p = pool(1);
    let h = Arc::new(p.schedule(|| (), HOUR).unwrap());
    let hc = h.clone();
    let t = thread::spawn(move || {
        let start = Instant::now();
        (hc.wait_timeout(LONG), start.elapsed())
    });
    thread::sleep(DELAY);
    assert!(h.cancel());
    let (done, waited) = t.join().unwrap();
    assert!(done);
    assert!(waited < LONG / 2);
}

/// A8.36: of many threads cancelling the same task at once, exactly one wins.
#[test]
fn a8_concurrent_cancel_exactly_one_wins() {
    let p = pool(1);
    for _ in 0..50 {
        let h = Arc::new(p.schedule(|| (), HOUR).unwrap());
        let go = Latch::new(1);
        let wins = counter();
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (h, go, wins) = (h.clone(), go.clone(), wins.clone());
                thread::spawn(move || {
                    go.wait(LONG);
                    if h.cancel() {
                        wins.fetch_add(1, SeqCst);
                    }
                })
            })
            .collect();
        go.open();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(wins.load(SeqCst), 1);
        assert!(h.is_cancelled());
    }
    assert_eq!(p.queue_len(), 0);
}

/// Cancel racing with execution: a successful cancel always means the handle
/// reports Cancelled; a failed one means it completed with its value; no body
/// runs twice and nothing hangs.
#[test]
fn a8_cancel_races_with_run() {
    let p = pool(2);
    let runs = Arc::new((0..2000).map(|_| AtomicUsize::new(0)).collect::<Vec<_>>());
    let mut outcomes = Vec::new();
    for i in 0..2000usize {
        let r = runs.clone();
        let h = p
            .schedule(
                move || {
                    r[i].fetch_add(1, SeqCst);
                    i
                },
                if i % 2 == 0 {
                    Duration::ZERO
                } else {
                    Duration::from_micros(50)
                },
            )
            .unwrap();
        if i % 3 == 0 {
            thread::yield_now();
        }
        outcomes.push((i, h.cancel(), h));
    }
    for (i, cancelled, h) in outcomes {
        let result = join(h);
        if cancelled {
            assert!(matches!(result, Err(TaskError::Cancelled)), "task {i}");
        } else {
            assert_eq!(result.ok(), Some(i));
            assert_eq!(runs[i].load(SeqCst), 1, "task {i}");
        }
        assert!(runs[i].load(SeqCst) <= 1, "task {i} ran twice");
    }
}

/// A8.36 / A7.33: cancel racing with a periodic task's re-enqueue: once
/// cancelled, the task leaves the queue, stops running and drops its closure.
#[test]
fn a8_cancel_races_with_periodic_reenqueue() {
    let p = pool(2);
    for i in 0..200u64 {
        let token = Arc::new(());
        let runs = counter();
        let (t, r) = (token.clone(), runs.clone());
        let h = p
            .schedule_at_fixed_rate(
                move || {
                    let _keep = &t;
                    r.fetch_add(1, SeqCst);
                },
                Duration::ZERO,
                Duration::from_micros(20),
            )
            .unwrap();
        thread::sleep(Duration::from_micros(10 * (i % 20)));
        assert!(h.cancel());
        eventually("the cancelled periodic closure is dropped", || {
            Arc::strong_count(&token) == 1
        });
        let after = runs.load(SeqCst);
        // A due task cancelled in the pool's FIFO lane may linger as a stale
        // entry until it reaches the front (see a8_cancel_due_task_leaves_queue_at_once).
        eventually("the cancelled task leaves the queue", || p.queue_len() == 0);
        thread::sleep(Duration::from_micros(100));
        assert_eq!(runs.load(SeqCst), after, "iteration {i}: ran after cancel");
        assert_cancelled(h);
    }
}

/// A8.38 / checklist "with removeOnCancel the queue size drops at once": a
/// cancelled task that was already due when queued (waiting behind a busy
/// worker) leaves the queue at once, like a delayed one.
#[test]
fn a8_cancel_due_task_leaves_queue_at_once() {
    let gate = Latch::new(1);
    let p = pool(1).releasing(&gate);
    let started = Latch::new(1);
    p.execute(blocker(&started, &gate)).unwrap();
    started.await_();
    let hs: Vec<_> = (0..3).map(|i| p.submit(move || i).unwrap()).collect();
    assert_eq!(p.queue_len(), 3);
    assert!(hs[1].cancel());
    assert_eq!(
        p.queue_len(),
        2,
        "a cancelled due task is still counted as queued"
    );
    let delayed = p.schedule(|| 9, HOUR).unwrap();
    assert_eq!(p.queue_len(), 3);
    assert!(delayed.cancel());
    assert_eq!(p.queue_len(), 2);
    gate.open();
    let mut hs = hs.into_iter();
    assert_eq!(join(hs.next().unwrap()).unwrap(), 0);
    assert_cancelled(hs.next().unwrap());
    assert_eq!(join(hs.next().unwrap()).unwrap(), 2);
}
