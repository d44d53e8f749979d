//! JSR-166 TCK `ScheduledExecutorTest`: scheduling, the fixed-rate and
//! fixed-delay sequences, the counters, the queue, submit and invokeAll, and
//! the fixed-delay overflow.

use super::*;

/// testExecute: execute() runs a task.
#[test]
fn tck_execute() {
    let p = pool(1);
    let done = Latch::new(1);
    let d = done.clone();
    p.execute(move || d.count_down()).unwrap();
    done.await_();
}

/// testSchedule1: a value-returning task scheduled with delay d returns its
/// value and did not start before d had elapsed.
#[test]
fn tck_schedule1() {
    let p = pool(1);
    let start = Instant::now();
    let h = p.schedule(move || (true, start.elapsed()), DELAY).unwrap();
    let (value, elapsed) = join(h).unwrap();
    assert!(value);
    assert!(elapsed >= DELAY, "ran early: {elapsed:?} < {DELAY:?}");
}

/// testSchedule3: a unit task scheduled with delay d runs no earlier than d;
/// its handle yields `()`.
#[test]
fn tck_schedule3() {
    let p = pool(1);
    let start = Instant::now();
    let ran_at = Arc::new(Mutex::new(None));
    let r = ran_at.clone();
    let h = p
        .schedule(move || *r.lock().unwrap() = Some(start.elapsed()), DELAY)
        .unwrap();
    join(h).unwrap();
    let elapsed = ran_at.lock().unwrap().expect("task did not run");
    assert!(elapsed >= DELAY, "ran early: {elapsed:?}");
}

/// testSchedule4: a fixed-rate task's first run is no earlier than its initial delay.
#[test]
fn tck_schedule4() {
    let p = pool(1);
    let start = Instant::now();
    let first = Latch::new(1);
    let early = Arc::new(AtomicBool::new(false));
    let (f, e) = (first.clone(), early.clone());
    let h = p
        .schedule_at_fixed_rate(
            move || {
                if f.count() == 1 && start.elapsed() < DELAY {
                    e.store(true, SeqCst);
                }
                f.count_down();
            },
            DELAY,
            HOUR,
        )
        .unwrap();
    first.await_();
    assert!(!early.load(SeqCst), "first fixed-rate run was early");
    assert!(h.cancel());
    assert_cancelled(h);
}

/// testSchedule5: a fixed-delay task's first run is no earlier than its initial delay.
#[test]
fn tck_schedule5() {
    let p = pool(1);
    let start = Instant::now();
    let first = Latch::new(1);
    let early = Arc::new(AtomicBool::new(false));
    let (f, e) = (first.clone(), early.clone());
    let h = p
        .schedule_with_fixed_delay(
            move || {
                if f.count() == 1 && start.elapsed() < DELAY {
                    e.store(true, SeqCst);
                }
                f.count_down();
            },
            DELAY,
            HOUR,
        )
        .unwrap();
    first.await_();
    assert!(!early.load(SeqCst), "first fixed-delay run was early");
    assert!(h.cancel());
    assert_cancelled(h);
}

/// testFixedRateSequence: with period d starting at 0, 8 runs take at least
/// 7·d; and, retrying with d ×3 on a noisy machine, at most 8·d.
#[test]
fn tck_fixed_rate_sequence() {
    let p = pool(1);
    let cycles = 8;
    let mut d = 1;
    while d <= 729 {
        let period = ms(d);
        let start = Instant::now();
        let done = Latch::new(cycles);
        let dc = done.clone();
        let h = p
            .schedule_at_fixed_rate(move || dc.count_down(), Duration::ZERO, period)
            .unwrap();
        let total = period * (cycles as u32 - 1);
        assert!(done.wait(total + LONG), "8 runs did not happen");
        let elapsed = start.elapsed();
        assert!(h.cancel());
        assert!(
            elapsed >= total,
            "8 runs in {elapsed:?} < 7 periods of {period:?}"
        );
        if elapsed <= period * cycles as u32 {
            return;
        }
        d *= 3; // too noisy: retry with a longer period
    }
    panic!("unexpected execution rate");
}

/// testFixedDelaySequence: every run starts at least d after the previous run
/// ended; retried with a longer delay when the machine was too slow to tell.
#[test]
fn tck_fixed_delay_sequence() {
    let p = pool(1);
    let cycles = 8;
    let mut d = 1;
    while d <= 729 {
        let delay = ms(d);
        let start = Instant::now();
        let done = Latch::new(cycles);
        let last_end: Arc<Mutex<Option<Instant>>> = Arc::new(Mutex::new(None));
        let too_early = Arc::new(Mutex::new(None));
        let try_longer = Arc::new(AtomicBool::new(false));
        let (dc, le, te, tl) = (
            done.clone(),
            last_end.clone(),
            too_early.clone(),
            try_longer.clone(),
        );
        let h = p
            .schedule_with_fixed_delay(
                move || {
                    let now = Instant::now();
                    if let Some(end) = *le.lock().unwrap() {
                        let gap = now - end;
                        if gap < delay {
                            *te.lock().unwrap() = Some(gap);
                        }
                        if gap >= delay * 2 {
                            tl.store(true, SeqCst);
                        }
                    }
                    dc.count_down();
                    *le.lock().unwrap() = Some(Instant::now());
                },
                Duration::ZERO,
                delay,
            )
            .unwrap();
        let total = delay * (cycles as u32 - 1);
        assert!(done.wait(total + LONG), "8 runs did not happen");
        assert!(h.cancel());
        let elapsed = start.elapsed();
        assert_eq!(
            *too_early.lock().unwrap(),
            None,
            "a gap between runs was shorter than the fixed delay {delay:?}"
        );
        assert!(elapsed >= total);
        if !try_longer.load(SeqCst) {
            return;
        }
        d *= 3;
    }
    panic!("unexpected execution rate");
}

/// testGetActiveCount: 0 before; 1 while one task runs, also seen from inside it.
#[test]
fn tck_get_active_count() {
    let gate = Latch::new(1);
    let p = pool(2).releasing(&gate);
    assert_eq!(p.active_count(), 0);
    let started = Latch::new(1);
    let seen_inside = Arc::new(AtomicUsize::new(usize::MAX));
    let (pc, si, s, g) = (p.pool(), seen_inside.clone(), started.clone(), gate.clone());
    let h = p
        .submit(move || {
            si.store(pc.active_count(), SeqCst);
            s.count_down();
            g.wait(LONG);
        })
        .unwrap();
    started.await_();
    assert_eq!(seen_inside.load(SeqCst), 1);
    assert_eq!(p.active_count(), 1);
    gate.open();
    join(h).unwrap();
    eventually("active == 0", || p.active_count() == 0);
}

/// testGetCompletedTaskCount: 0 while the task runs; eventually 1 after it finishes.
#[test]
fn tck_get_completed_task_count() {
    let gate = Latch::new(1);
    let p = pool(2).releasing(&gate);
    assert_eq!(p.completed_task_count(), 0);
    let started = Latch::new(1);
    let h = p.submit(blocker(&started, &gate)).unwrap();
    started.await_();
    assert_eq!(p.completed_task_count(), 0);
    gate.open();
    join(h).unwrap();
    eventually("completed == 1", || p.completed_task_count() == 1);
}

/// testGetCorePoolSize: returns the configured value.
#[test]
fn tck_get_core_pool_size() {
    for core in [0, 1, 5] {
        let p = pool(core);
        assert_eq!(p.core_threads(), core);
    }
}

/// testGetLargestPoolSize: 3 blocking tasks on core 3 give 3 threads.
/// (No largest_pool_size getter: we check pool_size while they block, and
/// that a terminated pool reports 0 threads, A12.53.)
#[test]
fn tck_get_largest_pool_size() {
    let gate = Latch::new(1);
    let p = pool(3).releasing(&gate);
    let started = Latch::new(3);
    for _ in 0..3 {
        p.execute(blocker(&started, &gate)).unwrap();
    }
    started.await_();
    assert_eq!(p.pool_size(), 3);
    assert_eq!(p.active_count(), 3);
    gate.open();
    assert!(p.shutdown().await_termination(LONG));
    assert_eq!(p.pool_size(), 0);
}

/// testGetPoolSize: 0 before any task (threads are created lazily); 1 once a task runs.
#[test]
fn tck_get_pool_size() {
    let gate = Latch::new(1);
    let p = pool(1).releasing(&gate);
    assert_eq!(p.pool_size(), 0);
    let started = Latch::new(1);
    p.execute(blocker(&started, &gate)).unwrap();
    started.await_();
    assert_eq!(p.pool_size(), 1);
}

/// testGetTaskCount: 1 running task, then 1+i while adding 3 more; after
/// termination task_count = completed = 4. (Ours counts "ever accepted".)
#[test]
fn tck_get_task_count() {
    let gate = Latch::new(1);
    let p = pool(1).releasing(&gate);
    assert_eq!(p.task_count(), 0);
    let started = Latch::new(1);
    p.execute(blocker(&started, &gate)).unwrap();
    started.await_();
    assert_eq!(p.task_count(), 1);
    for i in 1..=3u64 {
        p.execute(|| {}).unwrap();
        assert_eq!(p.task_count(), 1 + i);
    }
    assert_eq!(p.queue_len(), 3);
    gate.open();
    assert!(p.shutdown().await_termination(LONG));
    eventually("completed == 4", || p.completed_task_count() == 4);
    assert_eq!(p.task_count(), 4);
}

/// testGetQueue: on 1 thread, while the first of 5 tasks blocks, the other 4
/// are queued (and the running one is not).
#[test]
fn tck_get_queue() {
    let gate = Latch::new(1);
    let p = pool(1).releasing(&gate);
    let started = Latch::new(1);
    p.execute(blocker(&started, &gate)).unwrap();
    started.await_();
    assert_eq!(p.queue_len(), 0);
    let handles: Vec<_> = (0..4)
        .map(|i| p.schedule(move || i, ms(1)).unwrap())
        .collect();
    assert_eq!(p.queue_len(), 4);
    gate.open();
    for (i, h) in handles.into_iter().enumerate() {
        assert_eq!(join(h).unwrap(), i);
    }
    assert_eq!(p.queue_len(), 0);
}

/// testRemove (our counterpart is cancel with remove_on_cancel): cancelling
/// queued tasks 4 and 3 succeeds once, then fails, and the queue shrinks;
/// cancelled tasks never run, the others do.
#[test]
fn tck_remove() {
    let gate = Latch::new(1);
    let p = pool(1).releasing(&gate);
    let started = Latch::new(1);
    let first = p.submit(blocker(&started, &gate)).unwrap();
    started.await_();
    let ran = Arc::new(Mutex::new(Vec::new()));
    let handles: Vec<_> = (1..5)
        .map(|i| {
            let r = ran.clone();
            p.schedule(move || r.lock().unwrap().push(i), ms(1))
                .unwrap()
        })
        .collect();
    assert_eq!(p.queue_len(), 4);
    assert!(handles[3].cancel());
    assert_eq!(p.queue_len(), 3);
    assert!(handles[2].cancel());
    assert_eq!(p.queue_len(), 2);
    assert!(!handles[3].cancel());
    assert!(!handles[2].cancel());
    assert_eq!(p.queue_len(), 2);
    gate.open();
    join(first).unwrap();
    let mut hs = handles.into_iter();
    join(hs.next().unwrap()).unwrap();
    join(hs.next().unwrap()).unwrap();
    assert_cancelled(hs.next().unwrap());
    assert_cancelled(hs.next().unwrap());
    assert_eq!(*ran.lock().unwrap(), vec![1, 2]);
}

/// testPurge: cancel 2 of 5 far-future tasks. With remove_on_cancel (our
/// default) they leave the queue at once; with Java's policy they stay until
/// shutdown purges them (A9.44.3), and the 3 live delayed tasks stay queued.
#[test]
fn tck_purge() {
    for remove_on_cancel in [true, false] {
        let p = guard(
            ScheduledThreadPool::builder()
                .core_threads(1)
                .remove_on_cancel(remove_on_cancel)
                .build(),
        );
        let handles: Vec<_> = (0..5).map(|_| p.schedule(|| (), HOUR).unwrap()).collect();
        assert_eq!(p.queue_len(), 5);
        assert!(handles[3].cancel());
        assert!(handles[4].cancel());
        assert_eq!(p.queue_len(), if remove_on_cancel { 3 } else { 5 });
        p.shutdown();
        assert_eq!(p.queue_len(), 3, "shutdown removes cancelled tasks");
        assert!(!p.is_terminated());
        assert_eq!(p.shutdown_now().len(), 3);
        assert!(p.await_termination(LONG));
    }
}

/// testSubmitCallable: submit(f).join() returns f's value.
#[test]
fn tck_submit_callable() {
    let p = pool(2);
    let h = p.submit(|| String::from("callable")).unwrap();
    assert_eq!(join(h).unwrap(), "callable");
}

/// testSubmitRunnable: submitting a unit task: join returns and is_done is true.
#[test]
fn tck_submit_runnable() {
    let p = pool(2);
    let h = p.submit(|| {}).unwrap();
    assert!(h.wait_timeout(LONG));
    assert!(h.is_done());
    assert!(!h.is_cancelled());
    join(h).unwrap();
}

/// testSubmitRunnable2: submit(runnable, result) returns the very same result object.
#[test]
fn tck_submit_runnable2() {
    let p = pool(2);
    let result = Arc::new(String::from("result"));
    let r = result.clone();
    let h = p.submit(move || r).unwrap();
    let got = join(h).unwrap();
    assert!(Arc::ptr_eq(&got, &result));
}

/// testInvokeAll4 (no invokeAll: submit + join): a failed task's handle gives
/// an error while the others give their values.
#[test]
fn tck_invoke_all4() {
    quiet_expected_panics();
    let p = pool(2);
    let hs: Vec<ScheduledHandle<u32>> = (0..3u32)
        .map(|i| {
            p.submit(move || {
                if i == 1 {
                    panic!("{EXPECTED}: invoke_all4");
                }
                i
            })
            .unwrap()
        })
        .collect();
    let results: Vec<_> = hs.into_iter().map(join).collect();
    assert_eq!(results[0].as_ref().ok(), Some(&0));
    assert!(matches!(results[1], Err(TaskError::Panicked(..))));
    assert_eq!(results[2].as_ref().ok(), Some(&2));
}

/// testInvokeAll5 / testInvokeAny5 (submit + join): all results are returned.
#[test]
fn tck_invoke_all5() {
    let p = pool(2);
    let hs: Vec<_> = (0..10u64)
        .map(|i| p.submit(move || i * i).unwrap())
        .collect();
    let results: Vec<u64> = hs.into_iter().map(|h| join(h).unwrap()).collect();
    assert_eq!(results, (0..10u64).map(|i| i * i).collect::<Vec<_>>());
}

/// testTimedInvokeAll6 (submit + wait_timeout + cancel): at the deadline the
/// unfinished middle task is cancelled while the others have results; all
/// handles are done at once, even though the cancelled body still runs.
#[test]
fn tck_timed_invoke_all6() {
    let gate = Latch::new(1);
    let p = pool(2).releasing(&gate);
    let g = gate.clone();
    let hs = vec![
        p.submit(|| "a").unwrap(),
        p.submit(move || {
            g.wait(LONG);
            "slow"
        })
        .unwrap(),
        p.submit(|| "c").unwrap(),
    ];
    // The fast tasks must finish (bounded generously, so a slow machine does
    // not make them miss the "deadline"); the slow one is cut off at 200 ms.
    let deadline = Instant::now() + ms(200);
    for (i, h) in hs.iter().enumerate() {
        if i == 1 {
            if !h.wait_timeout(deadline.saturating_duration_since(Instant::now())) {
                assert!(h.cancel());
            }
        } else {
            assert!(h.wait_timeout(LONG));
        }
    }
    assert!(hs.iter().all(|h| h.is_done()));
    let results: Vec<_> = hs.into_iter().map(join).collect();
    assert_eq!(results[0].as_ref().ok(), Some(&"a"));
    assert!(matches!(results[1], Err(TaskError::Cancelled)));
    assert_eq!(results[2].as_ref().ok(), Some(&"c"));
}

/// testScheduleWithFixedDelay_overflow (JDK-8051859): a fixed-delay task with
/// the largest delay runs once, and a task it submits from inside still runs.
#[test]
fn tck_schedule_with_fixed_delay_overflow() {
    let p = pool(1);
    let delayed_done = Latch::new(1);
    let immediate_done = Latch::new(1);
    let runs = counter();
    let (pc, dd, id, r) = (
        p.pool(),
        delayed_done.clone(),
        immediate_done.clone(),
        runs.clone(),
    );
    let h = p
        .schedule_with_fixed_delay(
            move || {
                r.fetch_add(1, SeqCst);
                dd.count_down();
                let id = id.clone();
                pc.submit(move || id.count_down()).unwrap().detach();
            },
            Duration::ZERO,
            Duration::MAX,
        )
        .unwrap();
    delayed_done.await_();
    immediate_done.await_();
    assert!(p.wait_idle(LONG));
    assert_eq!(runs.load(SeqCst), 1);
    assert!(!h.is_done());
    assert!(
        h.delay() >= CENTURY,
        "next run should be centuries away: {:?}",
        h.delay()
    );
}
