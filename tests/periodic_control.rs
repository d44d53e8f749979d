//! Periodic task control: policies, limits, jitter, pause/resume, trigger,
//! reschedule, introspection, and their races with runs.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{eventually, Gate, Log, PoolGuard, EVENTUALLY};
use schedpool::{
    ManualClock, MissedTicks, Next, OnFailure, ScheduledThreadPool, TaskError, TaskState,
};

const MS: Duration = Duration::from_millis(1);

fn virtual_pool(threads: usize) -> (ManualClock, PoolGuard) {
    let clock = ManualClock::new();
    let pool = ScheduledThreadPool::builder()
        .core_threads(threads)
        .clock(clock.clone())
        .build()
        .unwrap();
    (clock, PoolGuard(pool))
}

fn counter() -> (Arc<AtomicUsize>, impl FnMut() + Send + 'static) {
    let n = Arc::new(AtomicUsize::new(0));
    let m = n.clone();
    (n, move || {
        m.fetch_add(1, Ordering::SeqCst);
    })
}

#[test]
fn missed_ticks_burst_skip_delay() {
    for (policy, expected_after_gap) in [
        (MissedTicks::Burst, 5),
        (MissedTicks::Skip, 1),
        (MissedTicks::Delay, 1),
    ] {
        let (clock, pool) = virtual_pool(1);
        let (n, body) = counter();
        let h = pool
            .at_fixed_rate(10 * MS)
            .initial_delay(10 * MS)
            .missed_ticks(policy)
            .start(body)
            .unwrap();
        clock.advance(50 * MS); // five ticks due at once
        assert!(pool.wait_idle(EVENTUALLY));
        assert_eq!(n.load(Ordering::SeqCst), expected_after_gap, "{policy:?}");
        let next = h.next_run().unwrap();
        match policy {
            // Caught up: the grid continues at 60 ms.
            MissedTicks::Burst | MissedTicks::Skip => {
                assert_eq!(next, clock.now() + 10 * MS, "{policy:?}")
            }
            // Shifted: one period after the late run started (at 50 ms).
            MissedTicks::Delay => assert_eq!(next, clock.now() + 10 * MS),
        }
        h.cancel();
    }
}

#[test]
fn on_failure_stop_continue_backoff() {
    // Stop (default): the handle completes with the panic.
    let (clock, pool) = virtual_pool(1);
    let h = pool
        .at_fixed_rate(MS)
        .start(|| -> () { panic!("always") })
        .unwrap();
    clock.advance(MS * 3);
    assert_eq!(h.join(), Err(TaskError::Panicked("always".into())));

    // Continue: runs go on; every failure is counted and visible.
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let h = pool
        .at_fixed_rate(MS)
        .on_failure(OnFailure::Continue)
        .start(move || {
            if r.fetch_add(1, Ordering::SeqCst) % 2 == 0 {
                panic!("even run");
            }
        })
        .unwrap();
    clock.advance(MS * 9); // runs at 0..=9 ms: 10 runs
    assert!(pool.wait_idle(EVENTUALLY));
    assert_eq!(runs.load(Ordering::SeqCst), 10);
    assert_eq!(h.failure_count(), 5);
    assert_eq!(h.run_count(), 10);
    assert_eq!(h.last_failure().as_deref(), Some("even run"));
    assert!(!h.is_done());
    h.cancel();

    // Backoff: retries after 10, 20, 40 ms, then the schedule resumes.
    let (clock, pool) = virtual_pool(1);
    let fail = Arc::new(AtomicBool::new(true));
    let (f, starts) = (fail.clone(), Log::new());
    let s = starts.clone();
    let c = clock.clone();
    let h = pool
        .at_fixed_rate(MS * 5)
        .on_failure(OnFailure::Backoff {
            initial: MS * 10,
            max: MS * 40,
        })
        .start(move || {
            s.push(c.now());
            if f.load(Ordering::SeqCst) {
                panic!("down");
            }
        })
        .unwrap();
    let t0 = clock.now();
    assert!(pool.wait_idle(EVENTUALLY), "the first run, due at once");
    for _ in 0..200 {
        clock.advance(MS);
        assert!(pool.wait_idle(EVENTUALLY));
    }
    let gaps: Vec<Duration> = starts.get().windows(2).map(|w| w[1] - w[0]).collect();
    assert_eq!(starts.get()[0], t0);
    assert_eq!(
        &gaps[..4],
        &[MS * 10, MS * 20, MS * 40, MS * 40],
        "doubling up to the max"
    );
    fail.store(false, Ordering::SeqCst);
    let before = starts.len();
    for _ in 0..60 {
        clock.advance(MS);
        assert!(pool.wait_idle(EVENTUALLY));
    }
    let after: Vec<Duration> = starts.get()[before..]
        .windows(2)
        .map(|w| w[1] - w[0])
        .collect();
    assert!(
        after.iter().all(|g| *g == MS * 5),
        "back on the 5 ms schedule: {after:?}"
    );
    assert!(h.failure_count() >= 5);
}

#[test]
fn max_runs_and_until_complete_normally() {
    let (clock, pool) = virtual_pool(2);
    let (n, body) = counter();
    let h = pool.with_fixed_delay(MS).max_runs(3).start(body).unwrap();
    clock.advance(MS * 10);
    assert!(pool.wait_idle(EVENTUALLY));
    clock.advance(MS * 10);
    assert!(pool.wait_idle(EVENTUALLY));
    clock.advance(MS * 10);
    assert_eq!(h.join(), Ok(()));
    assert_eq!(n.load(Ordering::SeqCst), 3);

    let (n, body) = counter();
    let until = clock.now() + MS * 45;
    let h = pool
        .at_fixed_rate(MS * 10)
        .until(until)
        .start(body)
        .unwrap();
    clock.advance(MS * 100);
    assert_eq!(h.join(), Ok(()));
    assert_eq!(n.load(Ordering::SeqCst), 5, "runs at 0, 10, 20, 30, 40 ms");
}

#[test]
fn bad_periodic_configuration_is_refused() {
    let pool = PoolGuard(ScheduledThreadPool::new(1));
    let cases = [
        pool.at_fixed_rate(Duration::ZERO).start(|| ()).unwrap_err(),
        pool.at_fixed_rate(MS).max_runs(0).start(|| ()).unwrap_err(),
        pool.at_fixed_rate(MS)
            .jitter(MS * 2)
            .start(|| ())
            .unwrap_err(),
        pool.at_fixed_rate(MS)
            .until(Instant::now() - Duration::from_secs(1))
            .start(|| ())
            .unwrap_err(),
        pool.at_fixed_rate(MS)
            .on_failure(OnFailure::Backoff {
                initial: Duration::ZERO,
                max: MS,
            })
            .start(|| ())
            .unwrap_err(),
        pool.at_fixed_rate(MS)
            .on_failure(OnFailure::Backoff {
                initial: MS * 2,
                max: MS,
            })
            .start(|| ())
            .unwrap_err(),
        pool.idle_timer(Duration::ZERO, || ()).unwrap_err(),
    ];
    for e in &cases {
        assert!(e.is_invalid_argument(), "{e}");
    }
    assert_eq!(pool.task_count(), 0);
    let handle = pool.submit(|| ()).unwrap();
    assert!(
        handle.set_period(MS).unwrap_err().is_invalid_argument(),
        "one-shots have no period"
    );
    assert!(ScheduledThreadPool::builder()
        .core_threads(1_000_000)
        .build()
        .is_err());
    assert!(ScheduledThreadPool::builder()
        .thread_name("a\0b")
        .build()
        .is_err());
}

#[test]
fn jitter_spreads_runs_without_drifting_the_grid() {
    let (clock, pool) = virtual_pool(1);
    let starts = Log::new();
    let (s, c) = (starts.clone(), clock.clone());
    let t0 = clock.now();
    let h = pool
        .at_fixed_rate(MS * 10)
        .jitter(MS * 5)
        .start(move || s.push(c.now()))
        .unwrap();
    for _ in 0..500 {
        clock.advance(Duration::from_micros(200));
        assert!(pool.wait_idle(EVENTUALLY));
    }
    h.cancel();
    let starts = starts.get();
    assert_eq!(starts.len(), 10);
    let offsets: Vec<Duration> = starts
        .iter()
        .enumerate()
        .map(|(n, t)| *t - (t0 + MS * 10 * n as u32))
        .collect();
    assert!(
        offsets
            .iter()
            .all(|o| *o < MS * 5 + Duration::from_micros(200)),
        "{offsets:?}"
    );
    let distinct: std::collections::HashSet<_> = offsets.iter().collect();
    assert!(distinct.len() > 3, "offsets vary: {offsets:?}");
}

#[test]
fn dynamic_delay_from_the_body() {
    let (clock, pool) = virtual_pool(1);
    let starts = Log::new();
    let (s, c) = (starts.clone(), clock.clone());
    let mut next = 0u32;
    let h = pool
        .schedule_dynamic(
            move || {
                s.push(c.now());
                next += 1;
                (next < 4).then(|| MS * next)
            },
            MS,
        )
        .unwrap();
    let t0 = clock.now();
    for _ in 0..20 {
        clock.advance(MS);
        assert!(pool.wait_idle(EVENTUALLY));
    }
    assert_eq!(h.join(), Ok(()));
    let times: Vec<Duration> = starts.get().iter().map(|t| *t - t0).collect();
    assert_eq!(times, vec![MS, MS * 2, MS * 4, MS * 7]);
}

#[test]
fn next_stop_from_a_fixed_rate_body() {
    let (clock, pool) = virtual_pool(1);
    let mut left = 3;
    let h = pool
        .at_fixed_rate(MS)
        .start_dynamic(move || {
            left -= 1;
            if left == 0 {
                Next::Stop
            } else {
                Next::Continue
            }
        })
        .unwrap();
    clock.advance(MS * 10);
    assert_eq!(h.join(), Ok(()));
}

#[test]
fn pause_and_resume_do_not_replay_missed_runs() {
    let (clock, pool) = virtual_pool(2);
    let (n, body) = counter();
    let h = pool.at_fixed_rate(MS * 10).start(body).unwrap();
    assert!(pool.wait_idle(EVENTUALLY));
    assert_eq!(n.load(Ordering::SeqCst), 1);
    assert_eq!(h.state(), TaskState::Scheduled);
    assert!(h.pause());
    assert!(!h.pause(), "already paused");
    assert_eq!(h.state(), TaskState::Paused);
    assert_eq!(h.next_run(), None);
    assert_eq!(pool.queue_len(), 0, "a paused task leaves the queue");
    clock.advance(MS * 100);
    assert!(pool.wait_idle(EVENTUALLY));
    assert_eq!(n.load(Ordering::SeqCst), 1, "nothing runs while paused");
    let t = clock.now();
    assert!(h.resume());
    assert!(!h.resume(), "not paused any more");
    assert!(pool.wait_idle(EVENTUALLY));
    assert_eq!(
        n.load(Ordering::SeqCst),
        2,
        "one run at resume: no replay of the missed ten"
    );
    assert_eq!(
        h.next_run(),
        Some(t + MS * 10),
        "the grid goes on from the resume point"
    );
    clock.advance(MS * 10);
    assert!(pool.wait_idle(EVENTUALLY));
    assert_eq!(n.load(Ordering::SeqCst), 3);
    assert!(h.cancel());
    assert!(!h.resume() && !h.pause());
}

#[test]
fn pause_during_a_run_pauses_after_it() {
    let pool = PoolGuard(ScheduledThreadPool::new(2));
    let (started, release) = (Gate::new(), Gate::new());
    let runs = Arc::new(AtomicUsize::new(0));
    let (s, r, n) = (started.clone(), release.clone(), runs.clone());
    let h = pool
        .at_fixed_rate(MS)
        .start(move || {
            if n.fetch_add(1, Ordering::SeqCst) == 0 {
                s.open();
                r.wait();
            }
        })
        .unwrap();
    started.wait();
    assert_eq!(h.state(), TaskState::Running);
    assert!(h.pause());
    release.open();
    eventually("paused after the run", || h.state() == TaskState::Paused);
    std::thread::sleep(MS * 20);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert!(h.resume());
    eventually("runs again", || runs.load(Ordering::SeqCst) >= 3);
    h.cancel();
}

#[test]
fn trigger_runs_now_and_keeps_the_grid() {
    let (clock, pool) = virtual_pool(1);
    let (n, body) = counter();
    let h = pool
        .at_fixed_rate(Duration::from_secs(60))
        .initial_delay(Duration::from_secs(60))
        .start(body)
        .unwrap();
    assert!(h.trigger());
    assert!(pool.wait_idle(EVENTUALLY));
    assert_eq!(n.load(Ordering::SeqCst), 1, "ran at once");
    assert_eq!(
        h.next_run(),
        Some(clock.now() + Duration::from_secs(120)),
        "the pulled-forward run was the 60 s one"
    );
    let once = pool.schedule(|| 5, Duration::from_secs(3600)).unwrap();
    assert!(once.trigger());
    assert_eq!(once.join(), Ok(5));
    h.cancel();
    assert!(!h.trigger(), "nothing to pull forward once cancelled");
}

#[test]
fn trigger_during_a_run_runs_again_right_after_without_overlap() {
    let pool = PoolGuard(ScheduledThreadPool::new(4));
    let (started, release) = (Gate::new(), Gate::new());
    let inside = Arc::new(AtomicBool::new(false));
    let runs = Arc::new(AtomicUsize::new(0));
    let (s, r, i, n) = (
        started.clone(),
        release.clone(),
        inside.clone(),
        runs.clone(),
    );
    let h = pool
        .at_fixed_rate(Duration::from_secs(3600))
        .start(move || {
            assert!(!i.swap(true, Ordering::SeqCst), "overlap");
            if n.fetch_add(1, Ordering::SeqCst) == 0 {
                s.open();
                r.wait();
            }
            i.store(false, Ordering::SeqCst);
        })
        .unwrap();
    started.wait();
    assert!(h.trigger(), "a running periodic task can be triggered");
    release.open();
    eventually("the triggered run", || runs.load(Ordering::SeqCst) == 2);
    assert!(!h.is_done(), "no overlap panic");
    h.cancel();
}

#[test]
fn set_period_moves_the_waiting_run_and_applies_to_later_ones() {
    let (clock, pool) = virtual_pool(1);
    let (n, body) = counter();
    let h = pool.at_fixed_rate(MS * 100).start(body).unwrap();
    assert!(pool.wait_idle(EVENTUALLY));
    let t0 = clock.now();
    assert_eq!(h.next_run(), Some(t0 + MS * 100));
    h.set_period(MS * 10).unwrap();
    assert_eq!(h.period(), Some(MS * 10));
    assert_eq!(
        h.next_run(),
        Some(t0 + MS * 10),
        "re-based on the previous run"
    );
    clock.advance(MS * 30);
    assert!(pool.wait_idle(EVENTUALLY));
    assert_eq!(n.load(Ordering::SeqCst), 4);
    assert!(h
        .set_period(Duration::ZERO)
        .unwrap_err()
        .is_invalid_argument());
    h.cancel();
    assert!(
        h.set_period(MS).is_err(),
        "finished tasks have no period to change"
    );
}

#[test]
fn introspection_follows_the_life_of_a_task() {
    let (clock, pool) = virtual_pool(1);
    let h = pool.schedule(|| 1, Duration::from_secs(5)).unwrap();
    assert_eq!((h.state(), h.run_count()), (TaskState::Scheduled, 0));
    assert_eq!(h.next_run(), Some(clock.now() + Duration::from_secs(5)));
    assert_eq!(h.period(), None);
    clock.advance(Duration::from_secs(5));
    assert!(h.wait_timeout(EVENTUALLY));
    assert_eq!(
        (h.state(), h.run_count(), h.next_run()),
        (TaskState::Done, 1, None)
    );
    let c = pool.schedule(|| 1, Duration::from_secs(5)).unwrap();
    c.cancel();
    assert_eq!((c.state(), c.run_count()), (TaskState::Cancelled, 0));
    let p = pool.submit(|| -> u8 { panic!("x") }).unwrap();
    assert!(p.wait_timeout(EVENTUALLY));
    assert_eq!(
        (p.failure_count(), p.last_failure().as_deref()),
        (1, Some("x"))
    );
}

#[test]
fn pause_resume_trigger_racing_runs_never_overlap_or_lose_the_task() {
    let pool = PoolGuard(ScheduledThreadPool::new(3));
    let inside = Arc::new(AtomicBool::new(false));
    let runs = Arc::new(AtomicUsize::new(0));
    let (i, n) = (inside.clone(), runs.clone());
    let h = Arc::new(
        pool.at_fixed_rate(Duration::from_micros(50))
            .start(move || {
                assert!(!i.swap(true, Ordering::SeqCst), "overlap");
                std::hint::spin_loop();
                i.store(false, Ordering::SeqCst);
                n.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap(),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let steerers: Vec<_> = (0..2)
        .map(|k| {
            let (h, stop) = (h.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut x = 0x9E37_79B9u64 + k;
                while !stop.load(Ordering::SeqCst) {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    match x % 4 {
                        0 => drop(h.pause()),
                        1 => drop(h.resume()),
                        2 => drop(h.trigger()),
                        _ => drop(h.set_period(Duration::from_micros(20 + x % 100))),
                    }
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::SeqCst);
    for s in steerers {
        s.join().unwrap();
    }
    assert!(
        !h.is_done(),
        "the task survived: no overlap panic, not lost"
    );
    // Paused, it is in the queue zero times; the queue is consistent.
    h.pause();
    eventually("paused", || h.state() == TaskState::Paused);
    assert_eq!(
        pool.queue_len(),
        0,
        "a paused task is never queued (no stale copy)"
    );
    schedpool::internals::check_pool(&h).unwrap();
    assert!(h.resume());
    let before = runs.load(Ordering::SeqCst);
    eventually("still running after the storm", || {
        runs.load(Ordering::SeqCst) > before + 5
    });
    schedpool::internals::check_pool(&h).unwrap();
    assert!(h.cancel());
    // A cancelled task in the due lane leaves when it reaches the front.
    eventually("cancel emptied the queue", || pool.queue_len() == 0);
}

#[test]
fn fixed_delay_respects_its_delay_after_a_trigger_free_run() {
    let pool = PoolGuard(ScheduledThreadPool::new(2));
    let spans: Arc<Mutex<Vec<(Instant, Instant)>>> = Arc::default();
    let s = spans.clone();
    let h = pool
        .with_fixed_delay(MS * 5)
        .max_runs(4)
        .start(move || {
            let t = Instant::now();
            std::thread::sleep(MS);
            s.lock().unwrap().push((t, Instant::now()));
        })
        .unwrap();
    assert_eq!(h.join(), Ok(()));
    let spans = spans.lock().unwrap().clone();
    assert_eq!(spans.len(), 4);
    for w in spans.windows(2) {
        assert!(w[1].0 - w[0].1 >= MS * 5);
    }
}

#[test]
fn resume_runs_a_fixed_delay_task_at_once_and_rebases_it_on_the_resume() {
    let (clock, pool) = virtual_pool(1);
    let (n, body) = counter();
    let secs = Duration::from_secs;
    let t0 = clock.now();
    let h = pool.with_fixed_delay(secs(10)).start(body).unwrap();
    assert!(pool.wait_idle(EVENTUALLY));
    assert_eq!(n.load(Ordering::SeqCst), 1, "the first run, at 0 s");
    assert_eq!(h.next_run(), Some(t0 + secs(10)));
    clock.advance(secs(1));
    assert!(h.pause());
    clock.advance(secs(1));
    assert!(h.resume());
    assert!(pool.wait_idle(EVENTUALLY));
    assert_eq!(n.load(Ordering::SeqCst), 2, "resumed at once, at 2 s");
    assert_eq!(
        h.next_run(),
        Some(t0 + secs(12)),
        "the delay counts from the run at the resume, not the old 10 s"
    );
    clock.advance(secs(10));
    assert!(pool.wait_idle(EVENTUALLY));
    assert_eq!(n.load(Ordering::SeqCst), 3);
    assert_eq!(h.next_run(), Some(t0 + secs(22)));
    h.cancel();
}

#[test]
fn set_period_while_paused_applies_to_the_grid_on_resume() {
    let (clock, pool) = virtual_pool(1);
    let (n, body) = counter();
    let secs = Duration::from_secs;
    let t0 = clock.now();
    let h = pool.at_fixed_rate(secs(10)).start(body).unwrap();
    assert!(pool.wait_idle(EVENTUALLY));
    assert_eq!(n.load(Ordering::SeqCst), 1, "the first run, at 0 s");
    clock.advance(secs(1));
    assert!(h.pause());
    h.set_period(secs(30)).unwrap();
    assert_eq!(h.period(), Some(secs(30)));
    clock.advance(secs(1));
    assert!(h.resume());
    assert!(pool.wait_idle(EVENTUALLY));
    assert_eq!(n.load(Ordering::SeqCst), 1, "nothing due at 2 s");
    assert_eq!(
        h.next_run(),
        Some(t0 + secs(30)),
        "one new period after the previous grid point (0 s), not the old 10 s"
    );
    clock.advance(secs(8)); // 10 s: the old grid point
    assert!(pool.wait_idle(EVENTUALLY));
    assert_eq!(n.load(Ordering::SeqCst), 1, "nothing runs on the old grid");
    clock.advance(secs(20)); // 30 s
    assert!(pool.wait_idle(EVENTUALLY));
    assert_eq!(n.load(Ordering::SeqCst), 2);
    assert_eq!(h.next_run(), Some(t0 + secs(60)));
    h.cancel();
}

#[test]
fn a_shorter_period_whose_rebased_run_is_past_keeps_the_grid_anchor() {
    let secs = Duration::from_secs;
    // Period 10 s -> 2 s at 9 s: the new grid (anchored on the run at 0 s)
    // is 2, 4, 6, 8, 10 ...; 2 to 8 are past, so they are late runs, and the
    // task's missed-tick policy handles them as any late runs.
    for (policy, runs_at_9, next) in [
        (MissedTicks::Burst, 1 + 4, secs(10)), // all four caught up, then on grid
        (MissedTicks::Skip, 1 + 1, secs(10)),  // one late run, then on grid
        (MissedTicks::Delay, 1 + 1, secs(11)), // one late run shifts the grid
    ] {
        let (clock, pool) = virtual_pool(1);
        let (n, body) = counter();
        let t0 = clock.now();
        let h = pool
            .at_fixed_rate(secs(10))
            .missed_ticks(policy)
            .start(body)
            .unwrap();
        assert!(pool.wait_idle(EVENTUALLY));
        assert_eq!(n.load(Ordering::SeqCst), 1, "{policy:?}: the run at 0 s");
        clock.advance(secs(9));
        // The re-based run (2 s) is past: due at once (a worker may already
        // be running it, so its deadline is not read here).
        h.set_period(secs(2)).unwrap();
        assert!(pool.wait_idle(EVENTUALLY));
        assert_eq!(n.load(Ordering::SeqCst), runs_at_9, "{policy:?}");
        assert_eq!(h.next_run(), Some(t0 + next), "{policy:?}");
        clock.advance(t0 + next - clock.now());
        assert!(pool.wait_idle(EVENTUALLY));
        assert_eq!(n.load(Ordering::SeqCst), runs_at_9 + 1, "{policy:?}");
        assert_eq!(h.next_run(), Some(t0 + next + secs(2)), "{policy:?}");
        h.cancel();
    }
}
