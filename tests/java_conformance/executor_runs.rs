//! Numbered executor behaviours A6, A7 and A12: the worker loop and panics,
//! fixed-rate and fixed-delay runs (catch-up, starvation, no overlap), and
//! the counters; with the edge cases around them.

use super::*;

/// A6 / A7.35: a task that panics completes its handle with the panic message
/// and does not kill (or replace) its worker thread.
#[test]
fn a6_panic_does_not_kill_worker() {
    quiet_expected_panics();
    let p = guard(
        ScheduledThreadPool::builder()
            .core_threads(1)
            .thread_name("survivor")
            .build(),
    );
    let h = p
        .submit(|| -> u32 { panic!("{EXPECTED}: one-shot") })
        .unwrap();
    assert_panicked(h, "one-shot");
    let h = p
        .submit(|| thread::current().name().map(str::to_owned))
        .unwrap();
    assert_eq!(join(h).unwrap().as_deref(), Some("survivor-0"));
    assert_eq!(p.pool_size(), 1);
}

/// A7.30 / virtual time: advancing 10 periods makes a fixed-rate task run
/// exactly 10 more times (catch-up), and the schedule then holds.
#[test]
fn a7_fixed_rate_catch_up() {
    let clock = ManualClock::new();
    let p = manual_pool(2, &clock);
    let runs = counter();
    let r = runs.clone();
    let h = p
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
    clock.advance(ms(100));
    assert!(p.wait_idle(LONG));
    assert_eq!(runs.load(SeqCst), 11);
    clock.advance(ms(5));
    assert!(p.wait_idle(LONG));
    assert_eq!(runs.load(SeqCst), 11);
    clock.advance(ms(5));
    assert!(p.wait_idle(LONG));
    assert_eq!(runs.load(SeqCst), 12);
    assert!(h.cancel());
}

/// A7.31 / virtual time: a fixed-delay task runs once per advance, however
/// large, and its next run is `delay` after the previous one ended.
#[test]
fn a7_fixed_delay_advance_runs_once() {
    let clock = ManualClock::new();
    let p = manual_pool(2, &clock);
    let runs = counter();
    let r = runs.clone();
    let h = p
        .schedule_with_fixed_delay(
            move || {
                r.fetch_add(1, SeqCst);
            },
            Duration::ZERO,
            ms(10),
        )
        .unwrap();
    assert!(p.wait_idle(LONG));
    assert_eq!(runs.load(SeqCst), 1);
    clock.advance(ms(100));
    assert!(p.wait_idle(LONG));
    assert_eq!(runs.load(SeqCst), 2);
    clock.advance(ms(9));
    assert!(p.wait_idle(LONG));
    assert_eq!(runs.load(SeqCst), 2);
    clock.advance(ms(1));
    assert!(p.wait_idle(LONG));
    assert_eq!(runs.load(SeqCst), 3);
    assert!(h.cancel());
}

/// A7.30 starvation hazard (reproduced on purpose): on a 1-thread pool, a
/// fixed-rate task whose runs take 2 periods keeps an ever older deadline, so
/// a one-shot submitted "now" waits until the periodic task's deadline passes
/// its own (ties go to the periodic task's older sequence number).
#[test]
fn a7_fixed_rate_starvation() {
    let clock = ManualClock::new();
    let p = manual_pool(1, &clock);
    let period = ms(10);
    let runs = counter();
    let one_shot: Arc<Mutex<Option<ScheduledHandle<usize>>>> = Arc::new(Mutex::new(None));
    let (c, r, os, pc) = (clock.clone(), runs.clone(), one_shot.clone(), p.pool());
    let h = p
        .schedule_at_fixed_rate(
            move || {
                let n = r.fetch_add(1, SeqCst) + 1;
                if n <= 40 {
                    c.advance(period * 2); // this run "takes" two periods
                }
                if n == 4 {
                    let r2 = r.clone();
                    *os.lock().unwrap() = Some(pc.submit(move || r2.load(SeqCst)).unwrap());
                }
            },
            Duration::ZERO,
            period,
        )
        .unwrap();
    assert!(p.wait_idle(LONG));
    // Submitted during run 4 (index 3) at t = 80 ms: periodic runs due at
    // 0..=80 ms (9 of them, the tie included) go first.
    let seen = join(
        one_shot
            .lock()
            .unwrap()
            .take()
            .expect("one-shot not submitted"),
    )
    .unwrap();
    assert_eq!(seen, 9, "periodic runs completed before the one-shot ran");
    // The clock stopped at 800 ms: runs due at 0..=800 ms happened, no more.
    assert_eq!(runs.load(SeqCst), 81);
    assert!(h.cancel());
}

/// A7.32: a periodic task never runs concurrently with itself, even on a
/// multi-thread pool with runs longer than the period.
#[test]
fn a7_no_overlap() {
    let p = pool(4);
    let running = counter();
    let runs = counter();
    let overlap = Arc::new(AtomicBool::new(false));
    let (rn, rs, o) = (running.clone(), runs.clone(), overlap.clone());
    let h = p
        .schedule_at_fixed_rate(
            move || {
                if rn.fetch_add(1, SeqCst) != 0 {
                    o.store(true, SeqCst);
                }
                thread::sleep(ms(3));
                rs.fetch_add(1, SeqCst);
                rn.fetch_sub(1, SeqCst);
            },
            Duration::ZERO,
            ms(1),
        )
        .unwrap();
    eventually("20 runs", || runs.load(SeqCst) >= 20);
    assert!(h.cancel());
    assert!(!overlap.load(SeqCst), "a periodic task overlapped itself");
}

/// A12.56: completed_task_count counts every periodic execution (the task
/// itself is accepted once).
#[test]
fn a12_completed_counts_every_periodic_run() {
    let clock = ManualClock::new();
    let p = manual_pool(1, &clock);
    let h = p
        .schedule_at_fixed_rate(|| {}, Duration::ZERO, Duration::from_secs(1))
        .unwrap();
    assert!(p.wait_idle(LONG));
    clock.advance(Duration::from_secs(4));
    assert!(p.wait_idle(LONG));
    eventually("completed == 5", || p.completed_task_count() == 5);
    assert_eq!(p.task_count(), 1);
    assert!(h.cancel());
}

// ---------------------------------------------------------------------------
// Edge cases and races around the behaviours above
// ---------------------------------------------------------------------------

/// A panic whose payload is not a string is still caught and reported.
#[test]
fn a6_non_string_panic_payload() {
    quiet_expected_panics();
    let p = pool(1);
    let h = p
        .submit(|| -> u8 { panic::panic_any(ExpectedPayload) })
        .unwrap();
    assert!(matches!(join(h), Err(TaskError::Panicked(..))));
    assert_eq!(join(p.submit(|| 5).unwrap()).unwrap(), 5);
}

/// A7.31 in virtual time: a fixed-delay task's next run is due `delay` after
/// the previous run *ended* (each run here "takes" 5 ms of virtual time).
#[test]
fn a7_fixed_delay_measured_from_run_end() {
    let clock = ManualClock::new();
    let p = manual_pool(1, &clock);
    let t0 = clock.now();
    let starts = Arc::new(Mutex::new(Vec::new()));
    let (c, s) = (clock.clone(), starts.clone());
    let h = p
        .schedule_with_fixed_delay(
            move || {
                s.lock().unwrap().push((c.now() - t0).as_millis() as u64);
                c.advance(ms(5));
            },
            Duration::ZERO,
            ms(10),
        )
        .unwrap();
    assert!(p.wait_idle(LONG)); // ran at 0, ended at 5: next due at 15
    clock.advance(ms(9));
    assert!(p.wait_idle(LONG));
    assert_eq!(*starts.lock().unwrap(), vec![0]);
    clock.advance(ms(1));
    assert!(p.wait_idle(LONG)); // ran at 15, ended at 20: next due at 30
    clock.advance(ms(9));
    assert!(p.wait_idle(LONG));
    assert_eq!(*starts.lock().unwrap(), vec![0, 15]);
    clock.advance(ms(1));
    assert!(p.wait_idle(LONG));
    assert_eq!(*starts.lock().unwrap(), vec![0, 15, 30]);
    assert!(h.cancel());
}

/// A12.56: runs that panicked count as completed, like Java's runs that threw.
#[test]
fn a12_completed_counts_panicked_runs() {
    quiet_expected_panics();
    let p = pool(1);
    let h = p
        .submit(|| -> u8 { panic!("{EXPECTED}: counted") })
        .unwrap();
    assert_panicked(h, "counted");
    join(p.submit(|| ()).unwrap()).unwrap();
    eventually("completed == 2", || p.completed_task_count() == 2);
    assert_eq!(p.task_count(), 2);
}

/// A12.56-57 with remove_on_cancel: a cancelled task is removed, so it never
/// counts as a completed run, whether it was due or delayed when cancelled.
#[test]
fn a12_cancelled_due_task_not_counted_as_completed() {
    let gate = Latch::new(1);
    let p = pool(1).releasing(&gate);
    let started = Latch::new(1);
    p.execute(blocker(&started, &gate)).unwrap();
    started.await_();
    let a = p.submit(|| 1).unwrap();
    let b = p.submit(|| 2).unwrap();
    assert!(a.cancel());
    gate.open();
    assert_eq!(join(b).unwrap(), 2);
    assert!(p.wait_idle(LONG));
    eventually("completed >= 2", || p.completed_task_count() >= 2);
    thread::sleep(ms(5));
    assert_eq!(
        p.completed_task_count(),
        2,
        "the cancelled task counted as a run"
    );
    assert_cancelled(a);
}
