//! Idle timers: touch pushes the deadline back without heap operations;
//! the timer fires once idle; touch racing expiry tells the truth; an idle
//! timer cannot be triggered.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{manual_pool, PoolGuard, EVENTUALLY};
use schedpool::{ManualClock, ScheduledThreadPool, TaskError};

#[test]
fn fires_only_after_a_full_idle_period() {
    let clock = ManualClock::new();
    let pool = PoolGuard(
        ScheduledThreadPool::builder()
            .core_threads(2)
            .clock(clock.clone())
            .build()
            .unwrap(),
    );
    let t0 = clock.now();
    let timer = pool
        .idle_timer(Duration::from_secs(60), move || "closed")
        .unwrap();
    for _ in 0..100 {
        clock.advance(Duration::from_secs(30));
        assert!(timer.touch(), "still armed");
        assert!(pool.wait_idle(EVENTUALLY));
        assert!(!timer.handle().is_done());
    }
    assert_eq!(pool.queue_len(), 1, "one entry, however many touches");
    // 3000 s of activity; now idle.
    clock.advance(Duration::from_secs(59));
    assert!(pool.wait_idle(EVENTUALLY));
    assert!(!timer.handle().is_done());
    clock.advance(Duration::from_secs(1));
    let fired_at = clock.now();
    let h = timer.into_handle();
    assert_eq!(h.join(), Ok("closed"));
    assert_eq!(fired_at - t0, Duration::from_secs(3060));
}

#[test]
fn touch_after_firing_returns_false_and_cancel_works() {
    let clock = ManualClock::new();
    let pool = PoolGuard(
        ScheduledThreadPool::builder()
            .core_threads(1)
            .clock(clock.clone())
            .build()
            .unwrap(),
    );
    let timer = pool.idle_timer(Duration::from_secs(1), || ()).unwrap();
    clock.advance(Duration::from_secs(1));
    assert!(timer.handle().wait_timeout(EVENTUALLY));
    assert!(!timer.touch(), "already fired");
    let t2 = pool.idle_timer(Duration::from_secs(1), || ()).unwrap();
    assert!(t2.cancel());
    assert!(!t2.touch());
    assert_eq!(t2.into_handle().join(), Err(TaskError::Cancelled));
    assert_eq!(pool.queue_len(), 0);
}

#[test]
fn touch_racing_expiry_never_loses_a_touch_that_returned_true() {
    // Real time, many rounds: whenever touch() returned true *and* the
    // body has not fired at the moment of the touch, the timer must fire no
    // earlier than timeout after that touch.
    let pool = PoolGuard(ScheduledThreadPool::new(2));
    let timeout = Duration::from_millis(2);
    let fired_early = Arc::new(AtomicUsize::new(0));
    for _ in 0..300 {
        let last_touch = Arc::new(std::sync::Mutex::new(std::time::Instant::now()));
        let (lt, early) = (last_touch.clone(), fired_early.clone());
        let timer = pool
            .idle_timer(timeout, move || {
                if std::time::Instant::now() < *lt.lock().unwrap() + timeout {
                    early.fetch_add(1, Ordering::SeqCst);
                }
            })
            .unwrap();
        let spin_until = std::time::Instant::now() + Duration::from_millis(3);
        while std::time::Instant::now() < spin_until {
            let mut lt = last_touch.lock().unwrap();
            let now = std::time::Instant::now();
            if timer.touch() {
                *lt = now;
            }
            drop(lt);
            std::thread::sleep(Duration::from_micros(300));
        }
        assert!(timer.into_handle().wait_timeout(EVENTUALLY));
    }
    assert_eq!(fired_early.load(Ordering::SeqCst), 0);
}

/// `trigger()` on an idle timer's handle used to return true ("runs the task
/// now") while the worker's `rearm` silently pushed it back to its old
/// deadline. An idle timer fires on idleness only: `trigger` now says so by
/// returning false, and the timer is left exactly as it was.
#[test]
fn trigger_of_an_idle_timer_is_refused_and_changes_nothing() {
    let (clock, pool) = manual_pool(1);
    let timer = pool
        .idle_timer(Duration::from_secs(3600), || "fired")
        .unwrap();
    assert!(
        !timer.handle().trigger(),
        "an idle timer cannot be triggered"
    );
    assert!(pool.wait_idle(Duration::from_secs(2)));
    assert!(!timer.handle().is_done());
    assert_eq!(timer.handle().delay(), Duration::from_secs(3600));
    clock.advance(Duration::from_secs(3600));
    assert_eq!(timer.into_handle().join(), Ok("fired"));
}
