//! Numbered executor behaviours A1–A5 of `java-behaviour.md`: construction
//! and thread names, the time model and huge delays, FIFO ties and the
//! handle as a future, argument checks, lazy threads and core 0; with the
//! edge cases around them.

use super::*;

/// A1.1 (thread factory naming): workers are named "<prefix>-0", "<prefix>-1", ...
#[test]
fn a1_thread_names() {
    let p = guard(
        ScheduledThreadPool::builder()
            .core_threads(2)
            .thread_name("tck-name")
            .build(),
    );
    let both = Latch::new(2);
    let hs: Vec<_> = (0..2)
        .map(|_| {
            let b = both.clone();
            p.submit(move || {
                b.count_down();
                b.wait(LONG);
                thread::current().name().map(str::to_owned)
            })
            .unwrap()
        })
        .collect();
    let names: HashSet<String> = hs.into_iter().map(|h| join(h).unwrap().unwrap()).collect();
    let expected: HashSet<String> = ["tck-name-0", "tck-name-1"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(names, expected);
}

/// The API's auto-trait and error-type promises (API.md).
#[test]
fn a1_api_bounds() {
    fn send_sync<T: Send + Sync>() {}
    fn clone<T: Clone>() {}
    fn key<T: Copy + Eq + std::hash::Hash + std::fmt::Debug>() {}
    fn error<E: std::error::Error + Send + Sync + 'static>() {}
    send_sync::<ScheduledThreadPool>();
    send_sync::<ScheduledHandle<u32>>();
    send_sync::<DelayQueue<DelayItem<String>>>();
    send_sync::<ManualClock>();
    clone::<ScheduledThreadPool>();
    clone::<ManualClock>();
    key::<Key>();
    error::<Rejected>();
    error::<TaskError>();
    let _boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(TaskError::Cancelled);
    let _pending: fn(Vec<PendingTask>) = drop;
}

/// A2.8 (JDK 24 cap; A14.61): delays at the end of time in every form do not
/// panic or wrap, report at least a century, never run, and do not stop a due
/// task scheduled after them.
#[test]
fn a2_huge_delays_saturate() {
    let p = pool(1);
    let never = Arc::new(AtomicBool::new(false));
    let mut hs: Vec<ScheduledHandle<()>> = (0..6)
        .map(|how| schedule_at_end_of_time(&p, &never, how))
        .collect();
    let n = never.clone();
    hs.push(
        p.schedule_at_fixed_rate(move || n.store(true, SeqCst), Duration::MAX, Duration::MAX)
            .unwrap(),
    );
    let n = never.clone();
    hs.push(
        p.schedule_with_fixed_delay(move || n.store(true, SeqCst), Duration::MAX, Duration::MAX)
            .unwrap(),
    );
    for h in &hs {
        assert!(h.delay() >= CENTURY, "{:?}", h.delay());
        assert!(!h.is_done());
    }
    assert_eq!(join(p.schedule(|| 1, Duration::ZERO).unwrap()).unwrap(), 1);
    assert!(p.wait_idle(LONG));
    assert!(!never.load(SeqCst));
    assert_eq!(p.queue_len(), 8);
}

/// A2.9: delay() is the time left on the pool's clock (exact with a ManualClock).
#[test]
fn a2_delay_reads_manual_clock() {
    let clock = ManualClock::new();
    let p = manual_pool(1, &clock);
    let h = p.schedule(|| 5, Duration::from_secs(10)).unwrap();
    assert_eq!(h.delay(), Duration::from_secs(10));
    clock.advance(Duration::from_secs(3));
    assert_eq!(h.delay(), Duration::from_secs(7));
    assert!(p.wait_idle(LONG));
    assert!(!h.is_done());
    clock.advance(Duration::from_secs(7));
    assert!(h.wait_timeout(LONG));
    assert_eq!(h.delay(), Duration::ZERO);
    assert_eq!(h.join().unwrap(), 5);
}

/// A2.9: delay() is zero once the task is due (even if no worker took it yet)
/// and once it is done, cancelled included.
#[test]
fn a2_delay_zero_when_due_or_done() {
    let clock = ManualClock::new();
    let gate = Latch::new(1);
    let p = manual_pool(1, &clock).releasing(&gate);
    let started = Latch::new(1);
    p.execute(blocker(&started, &gate)).unwrap();
    started.await_();
    let due = p.schedule(|| (), Duration::from_secs(1)).unwrap();
    clock.advance(Duration::from_secs(2));
    assert!(!due.is_done());
    assert_eq!(due.delay(), Duration::ZERO);
    let far = p.schedule(|| (), HOUR).unwrap();
    assert!(far.cancel());
    assert_eq!(far.delay(), Duration::ZERO);
    gate.open();
    join(due).unwrap();
}

/// A3.12: tasks with exactly equal deadlines run in submission order
/// (sequence numbers), whatever method queued them.
#[test]
fn a3_fifo_equal_deadlines() {
    let clock = ManualClock::new();
    let p = manual_pool(1, &clock);
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut periodic = Vec::new();
    for i in 0..200usize {
        let o = order.clone();
        if i % 10 == 9 {
            let mut once = true;
            periodic.push(
                p.schedule_at_fixed_rate(
                    move || {
                        if once {
                            o.lock().unwrap().push(i);
                            once = false;
                        }
                    },
                    ms(5),
                    HOUR,
                )
                .unwrap(),
            );
        } else {
            p.schedule(move || o.lock().unwrap().push(i), ms(5))
                .unwrap()
                .detach();
        }
    }
    clock.advance(ms(5));
    assert!(p.wait_idle(LONG));
    assert_eq!(*order.lock().unwrap(), (0..200).collect::<Vec<_>>());
    for h in periodic {
        assert!(h.cancel());
    }
}

/// A3.14 / API: the handle is a Future; awaiting it gives the value, or the
/// cancellation; a pending await is woken by completion.
#[test]
fn a3_handle_is_future() {
    let gate = Latch::new(1);
    let p = pool(1).releasing(&gate);
    let h = p.schedule(|| 42, DELAY).unwrap();
    assert_eq!(
        block_on_timeout(h, LONG).expect("await timed out").unwrap(),
        42
    );
    let h = p.schedule(|| 1, HOUR).unwrap();
    assert!(h.cancel());
    assert!(matches!(
        block_on_timeout(h, LONG),
        Some(Err(TaskError::Cancelled))
    ));
    let g = gate.clone();
    let h = p
        .submit(move || {
            g.wait(LONG);
            7
        })
        .unwrap();
    let opener = {
        let g = gate.clone();
        thread::spawn(move || {
            thread::sleep(DELAY);
            g.open();
        })
    };
    assert_eq!(
        block_on_timeout(h, LONG).expect("await timed out").unwrap(),
        7
    );
    opener.join().unwrap();
}

/// A4.15: a zero period or zero fixed delay is rejected (Java:
/// IllegalArgumentException), with no side effect.
#[test]
fn a4_zero_period_rejected() {
    let p = pool(1);
    let ran = counter();
    let (r1, r2) = (ran.clone(), ran.clone());
    let e1 = rejected(p.schedule_at_fixed_rate(
        move || {
            r1.fetch_add(1, SeqCst);
        },
        Duration::ZERO,
        Duration::ZERO,
    ));
    let e2 = rejected(p.schedule_with_fixed_delay(
        move || {
            r2.fetch_add(1, SeqCst);
        },
        HOUR,
        Duration::ZERO,
    ));
    assert!(e1.is_invalid_argument() && !e1.is_shutdown(), "{e1}");
    assert!(e2.is_invalid_argument() && !e2.is_shutdown(), "{e2}");
    assert_eq!(p.task_count(), 0);
    assert_eq!(p.queue_len(), 0);
    assert!(p.wait_idle(LONG));
    assert_eq!(ran.load(SeqCst), 0);
    assert!(!p.is_shutdown());
}

/// A4.17 / A7.35: a panic in an `execute`d task is swallowed (nobody can see
/// it) and does not kill the worker.
#[test]
fn a4_execute_panic_worker_survives() {
    quiet_expected_panics();
    let p = guard(
        ScheduledThreadPool::builder()
            .core_threads(1)
            .thread_name("exec-panic")
            .build(),
    );
    p.execute(|| -> () { panic!("{EXPECTED}: execute") })
        .unwrap();
    let h = p
        .submit(|| thread::current().name().map(str::to_owned))
        .unwrap();
    assert_eq!(join(h).unwrap().as_deref(), Some("exec-panic-0"));
    assert_eq!(p.pool_size(), 1);
}

/// A4.21: a periodic handle never completes normally: after many runs it is
/// still pending; it completes on cancel.
#[test]
fn a4_periodic_handle_completes_only_on_cancel() {
    let clock = ManualClock::new();
    let p = manual_pool(1, &clock);
    let runs = counter();
    let r = runs.clone();
    let h = p
        .schedule_with_fixed_delay(
            move || {
                r.fetch_add(1, SeqCst);
            },
            Duration::ZERO,
            Duration::from_secs(1),
        )
        .unwrap();
    for _ in 0..5 {
        assert!(p.wait_idle(LONG));
        clock.advance(Duration::from_secs(1));
    }
    assert!(p.wait_idle(LONG));
    assert_eq!(runs.load(SeqCst), 6);
    assert!(!h.wait_timeout(SHORT));
    assert!(!h.is_done());
    assert!(h.cancel());
    assert_cancelled(h);
}

/// A5.23: threads are created lazily, one per submission, up to the core
/// size: k blocking submissions on core N give min(k, N) threads.
#[test]
fn a5_lazy_threads() {
    let gate = Latch::new(1);
    let p = pool(4).releasing(&gate);
    assert_eq!(p.pool_size(), 0);
    let two = Latch::new(2);
    for _ in 0..2 {
        p.execute(blocker(&two, &gate)).unwrap();
    }
    two.await_();
    assert_eq!(p.pool_size(), 2);
    let more = Latch::new(2);
    for _ in 0..4 {
        p.execute(blocker(&more, &gate)).unwrap();
    }
    more.await_();
    assert_eq!(p.active_count(), 4);
    assert_eq!(p.pool_size(), 4);
    assert_eq!(p.queue_len(), 2);
}

// ---------------------------------------------------------------------------
// Edge cases and races around the behaviours above
// ---------------------------------------------------------------------------

/// A2.9 / B-b boundary: a task is due exactly at its deadline (delay <= 0),
/// not a nanosecond before.
#[test]
fn a2_due_exactly_at_deadline() {
    let clock = ManualClock::new();
    let p = manual_pool(1, &clock);
    let h = p.schedule(|| 1, Duration::from_secs(10)).unwrap();
    clock.advance(Duration::from_secs(10) - Duration::from_nanos(1));
    assert!(p.wait_idle(LONG));
    assert!(!h.is_done(), "ran a nanosecond early");
    assert_eq!(h.delay(), Duration::from_nanos(1));
    clock.advance(Duration::from_nanos(1));
    assert_eq!(join(h).unwrap(), 1);
}

/// Real-time waits accept `Duration::MAX` ("wait forever") without
/// overflowing an `Instant`.
#[test]
fn a2_max_timeouts_do_not_overflow() {
    let p = pool(1);
    let h = p.schedule(|| 3, DELAY).unwrap();
    let h = within("wait_timeout(MAX)", move || {
        assert!(h.wait_timeout(Duration::MAX));
        h
    });
    assert_eq!(h.join().unwrap(), 3);
    let pc = p.pool();
    assert!(within("wait_idle(MAX)", move || pc.wait_idle(Duration::MAX)));
    let q: Queue = Arc::new(DelayQueue::new());
    q.put(DelayItem::new(8, DELAY));
    let q2 = q.clone();
    assert_eq!(
        within("poll_timeout(MAX)", move || val(
            q2.poll_timeout(Duration::MAX)
        )),
        Some(8)
    );
    p.shutdown();
    let pc = p.pool();
    assert!(within("await_termination(MAX)", move || pc
        .await_termination(Duration::MAX)));
}

/// Dropping a handle does not cancel the task (Java semantics), one-shot or periodic.
#[test]
fn a3_dropping_handle_does_not_cancel() {
    let clock = ManualClock::new();
    let p = manual_pool(1, &clock);
    let runs = counter();
    let r = runs.clone();
    drop(
        p.schedule_at_fixed_rate(
            move || {
                r.fetch_add(1, SeqCst);
            },
            ms(10),
            ms(10),
        )
        .unwrap(),
    );
    let r = runs.clone();
    drop(
        p.schedule(
            move || {
                r.fetch_add(100, SeqCst);
            },
            ms(15),
        )
        .unwrap(),
    );
    clock.advance(ms(30));
    assert!(p.wait_idle(LONG));
    assert_eq!(runs.load(SeqCst), 103);
    assert_eq!(p.queue_len(), 1, "the periodic task is still scheduled");
}

/// A handle cancelled on another thread resolves to Cancelled when awaited,
/// and an await that is already pending is woken when shutdown cancels its
/// periodic task.
#[test]
fn a3_future_woken_by_cancel_and_shutdown() {
    let p = pool(1);
    let h = p.schedule(|| 2, HOUR).unwrap();
    let h = thread::spawn(move || {
        assert!(h.cancel());
        h
    })
    .join()
    .unwrap();
    assert!(matches!(
        block_on_timeout(h, LONG),
        Some(Err(TaskError::Cancelled))
    ));
    let per = p.schedule_at_fixed_rate(|| {}, HOUR, HOUR).unwrap();
    let start = Instant::now();
    let pc = p.pool();
    let t = thread::spawn(move || {
        thread::sleep(DELAY);
        pc.shutdown();
    });
    assert!(matches!(
        block_on_timeout(per, LONG),
        Some(Err(TaskError::Cancelled))
    ));
    assert!(start.elapsed() >= DELAY);
    t.join().unwrap();
}

/// A pending await is woken when shutdown_now's PendingTask is dropped.
#[test]
fn a3_future_woken_by_pending_task_drop() {
    let p = pool(1);
    let h = p.schedule(|| 1, HOUR).unwrap();
    let pending = p.shutdown_now();
    assert_eq!(pending.len(), 1);
    let t = thread::spawn(move || {
        thread::sleep(DELAY);
        drop(pending);
    });
    assert!(matches!(
        block_on_timeout(h, LONG),
        Some(Err(TaskError::Cancelled))
    ));
    t.join().unwrap();
}

/// A2.9 for periodic tasks: delay() is the time to the *next* run.
#[test]
fn a2_periodic_delay_tracks_next_run() {
    let clock = ManualClock::new();
    let p = manual_pool(1, &clock);
    let h = p
        .schedule_at_fixed_rate(|| {}, Duration::ZERO, Duration::from_secs(10))
        .unwrap();
    assert!(p.wait_idle(LONG));
    assert_eq!(h.delay(), Duration::from_secs(10));
    clock.advance(Duration::from_secs(3));
    assert_eq!(h.delay(), Duration::from_secs(7));
    clock.advance(Duration::from_secs(7));
    assert!(p.wait_idle(LONG));
    assert_eq!(h.delay(), Duration::from_secs(10));
    assert!(h.cancel());
    assert_eq!(h.delay(), Duration::ZERO);
}

/// A 0-core pool on a manual clock: the one worker survives real time
/// passing while the task waits on virtual time, and runs it when due.
#[test]
fn a5_zero_core_pool_on_manual_clock() {
    let clock = ManualClock::new();
    let p = manual_pool(0, &clock);
    let h = p.schedule(|| "due", HOUR).unwrap();
    thread::sleep(SHORT); // several keep-alive periods of real time
    assert!(!h.is_done());
    clock.advance(HOUR);
    assert_eq!(join(h).unwrap(), "due");
}

/// Part d for the pool: a worker timing a far head is woken by an earlier
/// task and runs it on time (never early).
#[test]
fn a5_new_earlier_task_preempts_wait() {
    let p = pool(1);
    let _far = p.schedule(|| (), HOUR).unwrap();
    thread::sleep(ms(10)); // the one worker is now timing the far head
    let start = Instant::now();
    let h = p.schedule(move || start.elapsed(), DELAY).unwrap();
    let ran_after = join(h).unwrap();
    assert!(ran_after >= DELAY);
}

/// A3.12 across task kinds: a delayed task that came due and tasks submitted
/// already due are ordered by (deadline, submission order) together.
#[test]
fn a3_fifo_due_and_delayed_merge() {
    let clock = ManualClock::new();
    let gate = Latch::new(1);
    let p = manual_pool(1, &clock).releasing(&gate);
    let started = Latch::new(1);
    p.execute(blocker(&started, &gate)).unwrap();
    started.await_();
    let order = Arc::new(Mutex::new(Vec::new()));
    let push = |name: &'static str| {
        let o = order.clone();
        move || o.lock().unwrap().push(name)
    };
    p.schedule(push("x: delayed 5 ms"), ms(5)).unwrap().detach();
    p.execute(push("y: due at 0")).unwrap();
    p.schedule(push("w: delayed 5 ms, later"), ms(5))
        .unwrap()
        .detach();
    clock.advance(ms(5));
    p.execute(push("z: due at 5 ms")).unwrap();
    p.schedule(push("v: delayed 0 at 5 ms"), Duration::ZERO)
        .unwrap()
        .detach();
    gate.open();
    assert!(p.wait_idle(LONG));
    assert_eq!(
        *order.lock().unwrap(),
        vec![
            "y: due at 0",
            "x: delayed 5 ms",
            "w: delayed 5 ms, later",
            "z: due at 5 ms",
            "v: delayed 0 at 5 ms"
        ]
    );
}

/// A5.23: a 0-core pool never has more than one thread, even under a burst.
#[test]
fn a5_core_zero_burst_uses_one_thread() {
    let p = pool(0);
    let max_seen = counter();
    let hs: Vec<_> = (0..100)
        .map(|_| {
            let (pc, m) = (p.pool(), max_seen.clone());
            p.submit(move || {
                m.fetch_max(pc.pool_size(), SeqCst);
                thread::sleep(Duration::from_micros(100));
            })
            .unwrap()
        })
        .collect();
    for h in hs {
        join(h).unwrap();
    }
    assert_eq!(max_seen.load(SeqCst), 1);
}
