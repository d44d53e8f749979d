//! OpenJDK jtreg regression tests of `ScheduledThreadPoolExecutor`,
//! `ThreadPoolExecutor`, `BlockingQueue`, `Executors` and `DelayQueue`.

use super::*;

// ---------------------------------------------------------------------------
// The executor
// ---------------------------------------------------------------------------

/// Queues a task that is due now, in one of four ways (DelayOverflow's scheduleNow).
fn schedule_now(p: &ScheduledThreadPool, ran: &Latch, how: usize) -> Option<ScheduledHandle<()>> {
    let r = ran.clone();
    match how {
        0 => {
            p.execute(move || r.count_down()).unwrap();
            None
        }
        1 => Some(p.schedule(move || r.count_down(), Duration::ZERO).unwrap()),
        2 => Some(
            p.schedule_with_fixed_delay(
                move || r.count_down(),
                Duration::ZERO,
                Duration::from_micros(1),
            )
            .unwrap(),
        ),
        _ => Some(
            p.schedule_at_fixed_rate(
                move || r.count_down(),
                Duration::ZERO,
                Duration::from_secs(1),
            )
            .unwrap(),
        ),
    }
}

/// DelayOverflow (bug 6725789): with the 1-thread pool busy, an overdue task
/// and then a task at the end of time are queued; once the pool is free the
/// overdue task runs and the far one never does. All 4 × 6 combinations.
/// (The second half, a Duration::MAX fixed-delay task that submits a task from
/// inside its run, is tck_schedule_with_fixed_delay_overflow.)
#[test]
fn jtreg_delay_overflow() {
    for now_how in 0..4 {
        for then_how in 0..6 {
            let gate = Latch::new(1);
            let p = pool(1).releasing(&gate);
            let busy = Latch::new(1);
            p.execute(blocker(&busy, &gate)).unwrap();
            busy.await_();
            let ran = Latch::new(1);
            let never = Arc::new(AtomicBool::new(false));
            let now_handle = schedule_now(&p, &ran, now_how);
            thread::sleep(ms(2)); // the "now" task is overdue from here on
            let far = schedule_at_end_of_time(&p, &never, then_how);
            assert!(
                far.delay() >= CENTURY,
                "case {now_how}/{then_how}: {:?}",
                far.delay()
            );
            gate.open();
            assert!(
                ran.wait(LONG),
                "case {now_how}/{then_how}: the due task did not run"
            );
            if let Some(h) = now_handle {
                h.cancel();
            }
            assert!(
                !never.load(SeqCst),
                "case {now_how}/{then_how}: the far task ran"
            );
            assert!(!far.is_done());
        }
    }
}

/// ZeroCorePoolSize (bug 7091003): with 0 core threads a task scheduled 12 ms
/// out still runs; shutdown and await_termination succeed.
#[test]
fn jtreg_zero_core_pool_size() {
    let p = pool(0);
    let h = p.schedule(|| 7, ms(12)).unwrap();
    assert_eq!(join(h).unwrap(), 7);
    p.shutdown();
    assert!(p.await_termination(LONG));
}

/// ZeroCoreThreads (JDK-8022642 and friends): with 0 core threads and one task
/// an hour out, exactly one thread exists (waiting for it, not spinning);
/// task_count = 1, completed = 0.
#[test]
fn jtreg_zero_core_threads() {
    let p = pool(0);
    let h = p.schedule(|| (), HOUR).unwrap();
    eventually("pool_size == 1", || p.pool_size() == 1);
    for _ in 0..10 {
        thread::sleep(ms(5));
        assert_eq!(p.pool_size(), 1);
    }
    assert_eq!(p.task_count(), 1);
    assert_eq!(p.completed_task_count(), 0);
    assert_eq!(p.queue_len(), 1);
    assert_eq!(p.active_count(), 0);
    assert!(!h.is_done());
}

/// Checks a terminated pool (BasicCancelTest's checkTerminated).
#[track_caller]
fn assert_terminated(p: &ScheduledThreadPool) {
    assert!(p.is_shutdown());
    assert!(p.is_terminated());
    assert_eq!(p.pool_size(), 0);
    assert_eq!(p.active_count(), 0);
    assert_eq!(p.queue_len(), 0);
    assert!(p.await_termination(Duration::ZERO));
    assert_submissions_rejected(p, &counter());
}

/// BasicCancelTest (bug 6602600): schedule-then-cancel 200,000 tasks 10
/// minutes out; with remove_on_cancel nothing is retained (the queue stays
/// empty and every closure is dropped). Afterwards the pool terminates cleanly
/// and rejects submissions. (task_count is "ever accepted" here; Java's is 0.)
#[test]
fn jtreg_basic_cancel_test() {
    let p = pool(1);
    let token = Arc::new(());
    let n = 200_000;
    for _ in 0..n {
        let t = token.clone();
        let h = p.schedule(move || drop(t), ms(600_000)).unwrap();
        assert!(h.cancel());
    }
    assert_eq!(p.queue_len(), 0);
    eventually("every cancelled closure dropped", || {
        Arc::strong_count(&token) == 1
    });
    p.shutdown();
    assert!(p.await_termination(LONG));
    assert_terminated(&p);
    assert_eq!(p.completed_task_count(), 0);
    assert_eq!(p.task_count(), n as u64);
}

/// GCRetention: after cancelling 100 far-future tasks, nothing in the pool
/// still holds them, including the worker waiting on the old head and the
/// handles themselves.
#[test]
fn jtreg_gc_retention() {
    let p = pool(1);
    join(p.submit(|| ()).unwrap()).unwrap(); // a worker exists and now waits on the queue
    let token = Arc::new(());
    let handles: Vec<_> = (0..100u64)
        .map(|i| {
            let t = token.clone();
            p.schedule(move || drop(t), HOUR + ms(i)).unwrap()
        })
        .collect();
    assert_eq!(Arc::strong_count(&token), 101);
    thread::sleep(ms(5)); // let the worker start its timed wait on the head
    for h in &handles {
        assert!(h.cancel());
    }
    eventually("no task closure retained", || {
        Arc::strong_count(&token) == 1
    });
    assert_eq!(p.queue_len(), 0);
    drop(handles);
}

/// GCRetention with Java's default policy (remove_on_cancel = false): the
/// cancelled tasks are purged by shutdown, and the pool then terminates.
#[test]
fn jtreg_gc_retention_purge_on_shutdown() {
    let p = guard(
        ScheduledThreadPool::builder()
            .core_threads(1)
            .remove_on_cancel(false)
            .build(),
    );
    let token = Arc::new(());
    let handles: Vec<_> = (0..100u64)
        .map(|i| {
            let t = token.clone();
            p.schedule(move || drop(t), HOUR + ms(i)).unwrap()
        })
        .collect();
    for h in &handles {
        assert!(h.cancel());
    }
    p.shutdown();
    assert!(
        p.await_termination(LONG),
        "only cancelled tasks were queued"
    );
    assert_eq!(Arc::strong_count(&token), 1);
    assert_eq!(p.queue_len(), 0);
}

/// DecorateTask (bug 6560953): the object re-enqueued every period is the one
/// that runs: 100 fixed-rate and 100 fixed-delay runs give exactly 200 calls,
/// and each periodic task stops at its first panic (its 100th run).
#[test]
fn jtreg_decorate_task() {
    quiet_expected_panics();
    let clock = ManualClock::new();
    let p = manual_pool(10, &clock);
    let calls = counter();
    let make = |name: &'static str| {
        let calls = calls.clone();
        let mut own = 0;
        move || {
            own += 1;
            calls.fetch_add(1, SeqCst);
            if own == 100 {
                panic!("{EXPECTED}: {name} run 100");
            }
        }
    };
    let rate = p
        .schedule_at_fixed_rate(make("rate"), Duration::ZERO, ms(1))
        .unwrap();
    let delay = p
        .schedule_with_fixed_delay(make("delay"), Duration::ZERO, ms(1))
        .unwrap();
    for _ in 0..300 {
        assert!(p.wait_idle(LONG));
        if rate.is_done() && delay.is_done() {
            break;
        }
        clock.advance(ms(1));
    }
    assert_panicked(rate, "rate run 100");
    assert_panicked(delay, "delay run 100");
    assert_eq!(calls.load(SeqCst), 200);
    clock.advance(ms(100));
    assert!(p.wait_idle(LONG));
    assert_eq!(calls.load(SeqCst), 200);
}

/// Stress (bug 6602600), scaled down: many threads and one 1 ms fixed-rate
/// task counting 200 runs; it finishes, and the runs never overlap.
#[test]
fn jtreg_stress() {
    let threads = 16;
    let p = pool(threads);
    // Start every worker (there is no prestart_all_core_threads).
    let started = Latch::new(threads);
    for _ in 0..threads {
        let s = started.clone();
        p.execute(move || {
            s.count_down();
            s.wait(LONG);
        })
        .unwrap();
    }
    started.await_();
    let done = Latch::new(200);
    let running = counter();
    let overlap = Arc::new(AtomicBool::new(false));
    let (d, r, o) = (done.clone(), running.clone(), overlap.clone());
    let h = p
        .schedule_at_fixed_rate(
            move || {
                if r.fetch_add(1, SeqCst) != 0 {
                    o.store(true, SeqCst);
                }
                d.count_down();
                r.fetch_sub(1, SeqCst);
            },
            Duration::ZERO,
            ms(1),
        )
        .unwrap();
    done.await_();
    assert!(h.cancel());
    assert!(!overlap.load(SeqCst));
    assert_eq!(p.pool_size(), threads);
}

/// ScheduledTickleService (bug 6362121): a periodic task that, from inside its
/// own run, cancels itself and reschedules a new one with a longer interval
/// runs exactly 5 times in all, and cancelled tasks leave the queue.
#[test]
fn jtreg_scheduled_tickle_service() {
    fn tickle(
        p: ScheduledThreadPool,
        slot: Arc<Mutex<Option<ScheduledHandle<()>>>>,
        runs: Counter,
        done: Latch,
        interval: u64,
    ) -> impl FnMut() + Send + 'static {
        move || {
            let n = runs.fetch_add(1, SeqCst) + 1;
            let mut s = slot.lock().unwrap();
            let me = s.take().expect("a run without a handle in the slot");
            assert!(me.cancel(), "cancelling my own handle from inside my run");
            assert!(me.is_cancelled());
            if n < 5 {
                let next = interval + 1;
                let body = tickle(p.clone(), slot.clone(), runs.clone(), done.clone(), next);
                *s = Some(p.schedule_at_fixed_rate(body, ms(next), ms(next)).unwrap());
            } else {
                done.count_down();
            }
        }
    }
    let p = pool(2);
    let slot = Arc::new(Mutex::new(None));
    let runs = counter();
    let done = Latch::new(1);
    {
        let mut s = slot.lock().unwrap();
        let body = tickle(p.pool(), slot.clone(), runs.clone(), done.clone(), 1);
        *s = Some(p.schedule_at_fixed_rate(body, ms(1), ms(1)).unwrap());
    }
    done.await_();
    thread::sleep(SHORT);
    assert!(p.wait_idle(LONG));
    assert_eq!(runs.load(SeqCst), 5);
    assert_eq!(p.queue_len(), 0);
    assert!(slot.lock().unwrap().is_none());
}

/// ThreadRestarts: with 0 core threads and a far-future task, the one worker
/// is not churned: at most one thread at any time, and it is still the first
/// thread ever created ("name-0") when a due task finally arrives.
#[test]
fn jtreg_thread_restarts() {
    let p = guard(
        ScheduledThreadPool::builder()
            .core_threads(0)
            .thread_name("restarts")
            .build(),
    );
    let _far = p.schedule(|| (), HOUR).unwrap();
    let deadline = Instant::now() + ms(200);
    while Instant::now() < deadline {
        assert!(p.pool_size() <= 1);
        thread::sleep(ms(2));
    }
    let h = p
        .submit(|| thread::current().name().map(str::to_owned))
        .unwrap();
    assert_eq!(join(h).unwrap().as_deref(), Some("restarts-0"));
}

/// Custom (bug 6277663): 10 submissions on 10 core threads give 10 threads;
/// they all exit after shutdown.
#[test]
fn jtreg_custom() {
    let gate = Latch::new(1);
    let p = pool(10).releasing(&gate);
    let started = Latch::new(10);
    let handles: Vec<_> = (0..10)
        .map(|_| p.submit(blocker(&started, &gate)).unwrap())
        .collect();
    started.await_();
    assert_eq!(p.pool_size(), 10);
    assert_eq!(p.active_count(), 10);
    gate.open();
    for h in handles {
        join(h).unwrap();
    }
    assert!(p.shutdown().await_termination(LONG));
    assert_eq!(p.pool_size(), 0);
}

/// BlockingQueue/Interrupt (bug 6384064) uses the pool as a delayed
/// "interrupter"; without interrupts, a scheduled task closes the queue, which
/// wakes the thread blocked in take().
#[test]
fn jtreg_interrupt() {
    let p = pool(1);
    let q: Arc<DelayQueue<DelayItem<u32>>> = Arc::new(DelayQueue::new());
    let (tx, rx) = mpsc::channel();
    let q2 = q.clone();
    let taker = thread::spawn(move || tx.send(q2.take().map(DelayItem::into_inner)).unwrap());
    let q3 = q.clone();
    p.schedule(move || q3.close(), ms(20)).unwrap().detach();
    let got = rx.recv_timeout(LONG);
    q.close(); // in case the assertion below fails: never leave the taker blocked
    assert_eq!(got, Ok(None));
    taker.join().unwrap();
}

/// Executors/Throws: the Java checks are all about nulls and negative sizes,
/// which the types rule out; what remains is that every valid configuration
/// builds (core 0 included) and shutdown_now on a fresh pool is fine.
#[test]
fn jtreg_throws() {
    for core in [0, 1, 3] {
        let p = guard(
            ScheduledThreadPool::builder()
                .core_threads(core)
                .thread_name("throws")
                .remove_on_cancel(false)
                .continue_periodic_after_shutdown(true)
                .execute_delayed_after_shutdown(false)
                .build(),
        );
        assert!(p.shutdown_now().is_empty());
        assert!(p.await_termination(LONG));
        assert!(p.is_terminated());
    }
    let p = ScheduledThreadPool::new(2);
    assert!(p.shutdown_now().is_empty());
    assert!(p.await_termination(LONG));
}

// ---------------------------------------------------------------------------
// DelayQueue
// ---------------------------------------------------------------------------

/// DelayQueue/PollUnexpired (bug 6327342): poll and a 100 ms timed poll on
/// unexpired-only elements return None; the size is unchanged.
#[test]
fn jtreg_dq_poll_unexpired() {
    let q: DelayQueue<DelayItem<u32>> = DelayQueue::new();
    for i in 0..3 {
        q.put(DelayItem::new(i, HOUR));
    }
    assert!(q.poll().is_none());
    let start = Instant::now();
    assert!(q.poll_timeout(ms(100)).is_none());
    assert!(start.elapsed() >= ms(100));
    assert_eq!(q.len(), 3);
    assert!(q.drain_expired().is_empty());
}

/// DelayQueue/Iterate (bug 6355327), through keys (there is no iterator):
/// removing the second element leaves the first and third; a key obtained
/// before clear() matches nothing afterwards, not even a new element.
#[test]
fn jtreg_dq_iterate() {
    let clock = ManualClock::new();
    let q = DelayQueue::with_clock(clock.clone());
    let at = clock.now();
    let keys: Vec<Key> = (0..3).map(|i| q.put(DelayItem::at(i, at))).collect();
    assert_eq!(val(q.remove(keys[1])), Some(1));
    let rest: Vec<i32> = q
        .drain_expired()
        .into_iter()
        .map(DelayItem::into_inner)
        .collect();
    assert_eq!(rest, vec![0, 2]);
    let k = q.put(DelayItem::at(10, at));
    q.clear();
    let fresh = q.put(DelayItem::at(11, at));
    assert_ne!(k, fresh);
    assert!(q.remove(k).is_none());
    for old in keys {
        assert!(q.remove(old).is_none());
    }
    assert_eq!(q.len(), 1);
}

/// DelayQueue/Stress (bug 6609775), scaled down: 30 threads doing timed polls
/// on 1,000 staggered elements all make progress: every element comes out
/// exactly once, never before its deadline (no lost wake-up, no herd stall).
#[test]
fn jtreg_dq_stress() {
    let q: Queue = Arc::new(DelayQueue::new());
    let n = 1000;
    for i in 0..n {
        q.put(DelayItem::new(i, ms((i % 100) as u64)));
    }
    let got = Arc::new(Mutex::new(Vec::with_capacity(n)));
    let early = Arc::new(AtomicBool::new(false));
    let deadline = Instant::now() + LONG;
    let consumers: Vec<_> = (0..30)
        .map(|_| {
            let (q, got, early) = (q.clone(), got.clone(), early.clone());
            thread::spawn(move || {
                while got.lock().unwrap().len() < n && Instant::now() < deadline {
                    if let Some(item) = q.poll_timeout(ms(20)) {
                        if Instant::now() < item.deadline() {
                            early.store(true, SeqCst);
                        }
                        got.lock().unwrap().push(item.into_inner());
                    }
                }
            })
        })
        .collect();
    for c in consumers {
        c.join().unwrap();
    }
    let mut got = std::mem::take(&mut *got.lock().unwrap());
    got.sort_unstable();
    assert_eq!(got, (0..n).collect::<Vec<_>>());
    assert!(
        !early.load(SeqCst),
        "an element came out before its deadline"
    );
}
