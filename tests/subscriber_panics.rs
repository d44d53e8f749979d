//! A tracing subscriber is user code, and the pool's workers log around a
//! task's run (the starvation warning). A subscriber that panics there must
//! not leave the task running for ever, its handle waiting, nor end the
//! worker.
//!
//! This binary installs, for the whole process, a subscriber that panics on
//! every WARN event of `schedpool::pool`, so it holds only tests that want
//! that.

mod common;

use std::time::Duration;

use schedpool::{ManualClock, ScheduledThreadPool, TaskError};

const WAIT: Duration = Duration::from_secs(20);

#[test]
fn a_warning_that_panics_before_a_run_completes_the_task_as_cancelled() {
    tracing::subscriber::set_global_default(common::PanickingSubscriber(
        "schedpool::pool",
        Some(tracing::Level::WARN),
    ))
    .unwrap();
    let clock = ManualClock::new();
    let pool = ScheduledThreadPool::builder()
        .core_threads(1)
        .clock(clock.clone())
        .starvation_threshold(Duration::from_millis(100))
        .build()
        .unwrap();
    // Due in 10 ms, started a second late: the starvation warning, logged
    // before the run, panics in the subscriber.
    let late = pool.schedule(|| 1, Duration::from_millis(10)).unwrap();
    clock.advance(Duration::from_secs(1));
    assert!(late.wait_timeout(WAIT), "the late task's handle completed");
    assert_eq!(late.join(), Err(TaskError::Cancelled));
    // The worker lives on: a task on time runs.
    let on_time = pool.schedule(|| 2, Duration::from_millis(10)).unwrap();
    clock.advance(Duration::from_millis(10));
    assert!(on_time.wait_timeout(WAIT));
    assert_eq!(on_time.join(), Ok(2));
    pool.shutdown();
    assert!(pool.await_termination(WAIT));
}
