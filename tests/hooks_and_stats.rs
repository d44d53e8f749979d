//! The pool's failure handler, before/after hooks, RunInfo and stats.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{eventually, Log, PoolGuard, EVENTUALLY};
use schedpool::{ManualClock, OnFailure, RunInfo, ScheduledThreadPool};

#[test]
fn the_failure_handler_sees_every_panic_with_payload_and_id() {
    let seen: Log<(u64, String, Option<u32>)> = Log::new();
    let s = seen.clone();
    let pool = PoolGuard(
        ScheduledThreadPool::builder()
            .core_threads(1)
            .failure_handler(move |p| {
                let code = p.payload().downcast_ref::<u32>().copied();
                s.push((p.id(), p.message().to_string(), code));
            })
            .build()
            .unwrap(),
    );
    let a = pool
        .submit(|| -> () { std::panic::panic_any(7u32) })
        .unwrap();
    let a_id = a.id();
    assert!(a.join().is_err());
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let b = pool
        .at_fixed_rate(Duration::from_millis(1))
        .on_failure(OnFailure::Continue)
        .max_runs(3)
        .start(move || -> () {
            r.fetch_add(1, Ordering::SeqCst);
            panic!("periodic failure");
        })
        .unwrap();
    let b_id = b.id();
    assert_eq!(
        b.join(),
        Ok(()),
        "Continue: the limit completes it normally"
    );
    eventually("4 reports", || seen.len() == 4);
    let seen = seen.get();
    assert_eq!(seen[0].0, a_id);
    assert_eq!(seen[0].2, Some(7));
    assert!(seen[1..]
        .iter()
        .all(|(id, msg, _)| *id == b_id && msg == "periodic failure"));
    assert_eq!(pool.stats().panicked, 4);
}

#[test]
fn a_panicking_handler_or_hook_is_contained() {
    let pool = PoolGuard(
        ScheduledThreadPool::builder()
            .core_threads(1)
            .failure_handler(|_| panic!("handler bug"))
            .before_execute(|info| {
                if info.id() % 2 == 1 {
                    panic!("hook bug")
                }
            })
            .build()
            .unwrap(),
    );
    for i in 0..10 {
        let h = pool
            .submit(move || if i == 3 { panic!("task") } else { i })
            .unwrap();
        let _ = h.join();
    }
    assert_eq!(
        pool.submit(|| 99).unwrap().join(),
        Ok(99),
        "the worker is alive"
    );
    assert_eq!(pool.pool_size(), 1);
}

#[test]
fn before_and_after_hooks_bracket_each_run() {
    let log = Log::new();
    let (b, a) = (log.clone(), log.clone());
    let pool = PoolGuard(
        ScheduledThreadPool::builder()
            .core_threads(1)
            .before_execute(move |info| b.push(format!("before {} {}", info.id(), info.kind())))
            .after_execute(move |info, panic| a.push(format!("after {} {:?}", info.id(), panic)))
            .build()
            .unwrap(),
    );
    let l = log.clone();
    let ok = pool.submit(move || l.push("body".to_string())).unwrap();
    let ok_id = ok.id();
    ok.join().unwrap();
    let bad = pool.submit(|| -> () { panic!("bad") }).unwrap();
    let bad_id = bad.id();
    let _ = bad.join();
    eventually("hooks ran", || log.len() == 5);
    assert_eq!(
        log.get(),
        vec![
            format!("before {ok_id} once"),
            "body".to_string(),
            format!("after {ok_id} None"),
            format!("before {bad_id} once"),
            format!("after {bad_id} Some(\"bad\")"),
        ]
    );
}

#[test]
fn run_info_knows_due_time_lateness_and_run_number() {
    let clock = ManualClock::new();
    let pool = PoolGuard(
        ScheduledThreadPool::builder()
            .core_threads(1)
            .clock(clock.clone())
            .build()
            .unwrap(),
    );
    let infos: Log<RunInfo> = Log::new();
    let i = infos.clone();
    let t0 = clock.now();
    let h = pool
        .at_fixed_rate(Duration::from_secs(1))
        .initial_delay(Duration::from_secs(1))
        .start(move || i.push(RunInfo::current().expect("inside a run")))
        .unwrap();
    clock.advance(Duration::from_millis(3500)); // runs due at 1, 2, 3 s start at 3.5 s
    assert!(pool.wait_idle(EVENTUALLY));
    h.cancel();
    let infos = infos.get();
    assert_eq!(infos.len(), 3);
    for (n, info) in infos.iter().enumerate() {
        assert_eq!(info.run(), n as u64 + 1);
        assert_eq!(info.due(), t0 + Duration::from_secs(n as u64 + 1));
        assert_eq!(info.started(), t0 + Duration::from_millis(3500));
        assert_eq!(
            info.lateness(),
            Duration::from_millis(2500 - 1000 * n as u64)
        );
        assert_eq!(info.kind(), "fixed_rate");
        assert_eq!(info.id(), h.id());
    }
    let stats = pool.stats();
    assert_eq!(stats.lateness.count, 3);
    assert_eq!(stats.lateness.max, Duration::from_millis(2500));
    assert!(
        stats.lateness.p50 <= Duration::from_millis(1500)
            && stats.lateness.p50 >= Duration::from_millis(1300)
    );
}

#[test]
fn stats_snapshot_counts() {
    let pool = PoolGuard(ScheduledThreadPool::new(2));
    for _ in 0..10 {
        pool.submit(|| ()).unwrap().join().unwrap();
    }
    pool.schedule(|| (), Duration::from_secs(3600))
        .unwrap()
        .detach();
    eventually("completed", || pool.stats().completed == 10);
    let s = pool.stats();
    assert_eq!(
        (s.accepted, s.completed, s.queued, s.panicked),
        (11, 10, 1, 0)
    );
    assert!(s.workers >= 1 && s.workers <= 2);
    assert_eq!(s.lateness.count, 10);
}

/// `cancelled` counts each task cancelled once, whoever cancelled it (a
/// handle, a guard, shutdown's policies); `rejected` counts submissions
/// refused by a shut-down pool, not invalid arguments.
#[test]
fn stats_count_cancelled_and_rejected_tasks() {
    let pool = ScheduledThreadPool::new(1);
    let hour = Duration::from_secs(3600);
    let a = pool.schedule(|| (), hour).unwrap();
    assert!(a.cancel());
    assert!(!a.cancel(), "a second cancel does not count");
    drop(pool.schedule(|| (), hour).unwrap().cancel_on_drop());
    assert!(pool
        .schedule_at_fixed_rate(|| (), hour, Duration::ZERO)
        .is_err());
    let s = pool.stats();
    assert_eq!((s.cancelled, s.rejected), (2, 0), "{s:?}");
    // Two more pending: Java's default shutdown keeps delayed one-shots, but
    // cancels periodic tasks.
    pool.schedule(|| (), hour).unwrap().detach();
    let periodic = pool
        .schedule_at_fixed_rate(|| (), hour, Duration::from_secs(60))
        .unwrap();
    pool.shutdown();
    assert!(periodic.join().unwrap_err().is_cancelled());
    assert!(pool.schedule(|| (), hour).is_err());
    assert!(pool.execute(|| ()).is_err());
    let s = pool.stats();
    assert_eq!((s.cancelled, s.rejected), (3, 2), "{s:?}");
    drop(pool.shutdown_now());
    assert!(pool.await_termination(EVENTUALLY));
    assert_eq!(
        pool.stats().cancelled,
        3,
        "shutdown_now hands the delayed one-shot back: dropping it cancels it, outside the pool"
    );
}
