//! Panics: workers survive, handles report, periodic tasks stop, panicking
//! destructors are contained.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{eventually, PoolGuard};
use schedpool::{ScheduledThreadPool, TaskError};

#[test]
fn a_panicking_task_does_not_kill_its_worker() {
    let pool = PoolGuard(ScheduledThreadPool::new(1));
    let h = pool.submit(|| -> u32 { panic!("boom {}", 42) }).unwrap();
    let err = h.join().unwrap_err();
    assert_eq!(err, TaskError::Panicked("boom 42".into()));
    assert_eq!(err.panic_message(), Some("boom 42"));
    assert!(err.to_string().contains("boom 42"));
    assert_eq!(
        pool.submit(|| 1).unwrap().join(),
        Ok(1),
        "the worker is alive"
    );
    assert_eq!(pool.pool_size(), 1);
}

#[test]
fn a_periodic_task_that_panics_runs_no_more() {
    let pool = PoolGuard(ScheduledThreadPool::new(2));
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let h = pool
        .schedule_at_fixed_rate(
            move || {
                if r.fetch_add(1, Ordering::SeqCst) + 1 == 3 {
                    panic!("third run fails");
                }
            },
            Duration::ZERO,
            Duration::from_millis(1),
        )
        .unwrap();
    assert_eq!(h.join(), Err(TaskError::Panicked("third run fails".into())));
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(runs.load(Ordering::SeqCst), 3, "no 4th run");
    assert_eq!(pool.queue_len(), 0);
}

#[test]
fn non_string_payloads_are_reported() {
    let pool = PoolGuard(ScheduledThreadPool::new(1));
    let h = pool.submit(|| std::panic::panic_any(17u8)).unwrap();
    let err = h.join().unwrap_err();
    assert!(err.is_panic());
    assert!(err.panic_message().unwrap().contains("not a string"));
}

#[test]
fn a_panic_inside_a_captured_values_drop_is_contained() {
    struct Bomb;
    impl Drop for Bomb {
        fn drop(&mut self) {
            panic!("drop bomb");
        }
    }
    let pool = PoolGuard(ScheduledThreadPool::new(1));
    // Dropped at the end of the run.
    let bomb = Bomb;
    let h = pool
        .submit(move || {
            let _b = bomb;
            5
        })
        .unwrap();
    // The panic in Drop happens inside the task body: reported as a panic.
    assert!(h.join().unwrap_err().is_panic());
    // Dropped by cancel, on the cancelling thread: swallowed.
    let bomb = Bomb;
    let h = pool
        .schedule(
            move || {
                let _b = &bomb;
            },
            Duration::from_secs(3600),
        )
        .unwrap();
    assert!(h.cancel());
    // A result whose drop panics, discarded because its task was cancelled.
    assert_eq!(pool.submit(|| 1).unwrap().join(), Ok(1), "worker alive");
}

#[test]
fn many_panics_keep_the_pool_healthy() {
    let pool = PoolGuard(ScheduledThreadPool::new(2));
    let handles: Vec<_> = (0..200)
        .map(|i| {
            pool.submit(move || if i % 2 == 0 { panic!("even {i}") } else { i })
                .unwrap()
        })
        .collect();
    let (mut ok, mut failed) = (0, 0);
    for h in handles {
        match h.join() {
            Ok(_) => ok += 1,
            Err(e) => {
                assert!(e.is_panic());
                failed += 1;
            }
        }
    }
    assert_eq!((ok, failed), (100, 100));
    eventually("all counted", || pool.completed_task_count() == 200);
    assert_eq!(pool.pool_size(), 2);
}
