//! Cancel racing a worker's take, a submission, a clock advance, shutdown's
//! purge and a periodic task's re-enqueue.

use super::*;

/// cancel racing the worker that takes the same task: the body runs at most
/// once, and cancel's return value agrees with the handle's outcome.
#[test]
fn cancel_races_take() {
    cancel_races_take_with(true);
}

/// The same with `remove_on_cancel(false)`: the cancelled task stays queued
/// and the worker must skip it.
#[test]
fn cancel_races_take_without_removal() {
    cancel_races_take_with(false);
}

fn cancel_races_take_with(remove_on_cancel: bool) {
    loom::model(move || {
        let pool = ScheduledThreadPool::builder()
            .core_threads(1)
            .remove_on_cancel(remove_on_cancel)
            .build()
            .unwrap();
        let ran = Arc::new(AtomicUsize::new(0));
        let h = {
            let ran = ran.clone();
            pool.submit(move || {
                ran.fetch_add(1, Ordering::SeqCst);
                5u32
            })
            .unwrap()
        };
        let cancelled = h.cancel();
        finish(&pool);
        let runs = ran.load(Ordering::SeqCst);
        assert!(runs <= 1, "ran {runs} times");
        assert!(h.is_done());
        assert_eq!(h.is_cancelled(), cancelled);
        if cancelled {
            assert_eq!(h.join(), Err(TaskError::Cancelled));
        } else {
            assert_eq!(runs, 1, "cancel returned false but the task never ran");
            assert_eq!(h.join(), Ok(5));
        }
        assert_eq!(pool.queue_len(), 0);
    });
}

/// Counts drops of a periodic task's closure.
struct DropCount(Arc<AtomicUsize>);

impl Drop for DropCount {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// cancel racing shutdown's purge of a periodic task (default policy:
/// periodic tasks are cancelled at shutdown): the task ends cancelled, its
/// closure is dropped exactly once, and the pool terminates.
#[test]
fn cancel_races_shutdown_purge() {
    loom::model(|| {
        let pool = manual_pool();
        let drops = Arc::new(AtomicUsize::new(0));
        let guard = DropCount(drops.clone());
        let h = pool
            .schedule_at_fixed_rate(
                move || {
                    let _ = &guard;
                },
                FOREVER,
                FOREVER,
            )
            .unwrap();
        let h = Arc::new(h);
        let canceller = {
            let h = h.clone();
            thread::spawn(move || h.cancel())
        };
        pool.shutdown();
        let _cancelled_by_call = canceller.join().unwrap();
        finish(&pool);
        assert!(h.is_cancelled());
        assert_eq!(
            drops.load(Ordering::SeqCst),
            1,
            "closure dropped {} times",
            drops.load(Ordering::SeqCst)
        );
    });
}

/// cancel racing a periodic task's run and requeue: the task runs at most
/// once (the clock never moves), ends cancelled and unqueued, its closure is
/// dropped exactly once, and the pool terminates.
#[test]
fn cancel_races_periodic_requeue() {
    for remove_on_cancel in [true, false] {
        loom::model(move || {
            let clock = ManualClock::new();
            let pool = ScheduledThreadPool::builder()
                .core_threads(1)
                .remove_on_cancel(remove_on_cancel)
                .clock(clock)
                .build()
                .unwrap();
            let drops = Arc::new(AtomicUsize::new(0));
            let runs = Arc::new(AtomicUsize::new(0));
            let guard = DropCount(drops.clone());
            let r = runs.clone();
            let h = pool
                .schedule_at_fixed_rate(
                    move || {
                        let _ = &guard;
                        r.fetch_add(1, Ordering::SeqCst);
                    },
                    Duration::ZERO,
                    FOREVER,
                )
                .unwrap();
            assert!(h.cancel(), "nothing else cancels it");
            finish(&pool);
            assert!(runs.load(Ordering::SeqCst) <= 1);
            assert!(h.is_cancelled());
            assert_eq!(pool.queue_len(), 0);
            assert_eq!(drops.load(Ordering::SeqCst), 1);
        });
    }
}

/// A cancel racing a submission from another thread and the worker: when
/// the cancel returns, the closure is dropped, the task is out of the queue
/// and counted once as cancelled, and it never runs.
#[test]
fn cancel_races_a_submission() {
    loom::model(|| {
        let pool = manual_pool();
        let drops = Arc::new(AtomicUsize::new(0));
        let ran = Arc::new(AtomicUsize::new(0));
        let h = {
            let guard = DropCount(drops.clone());
            let ran = ran.clone();
            pool.schedule(
                move || {
                    let _ = &guard;
                    ran.fetch_add(1, Ordering::SeqCst);
                },
                FOREVER,
            )
            .unwrap()
        };
        let canceller = thread::spawn(move || {
            let cancelled = h.cancel();
            (cancelled, h)
        });
        let other = pool.schedule(|| 2u32, FOREVER).unwrap();
        let (cancelled, h) = canceller.join().unwrap();
        assert!(cancelled, "nothing else cancels it");
        assert_eq!(
            drops.load(Ordering::SeqCst),
            1,
            "the cancel drops the closure"
        );
        assert_eq!(pool.queue_len(), 1, "only the other task is queued");
        assert_eq!(pool.stats().cancelled, 1);
        assert!(other.cancel());
        finish(&pool);
        assert_eq!(ran.load(Ordering::SeqCst), 0);
        assert_eq!(h.join(), Err(TaskError::Cancelled));
        assert_eq!(pool.stats().cancelled, 2);
    });
}

/// Two cancels, one from another thread and one after a clock advance that
/// makes both tasks due (the worker takes the lock to run them): a task whose cancel lost ran
/// (a cancel may also win during the run, which still finishes), every
/// cancel that won is counted once, and the queue ends empty.
#[test]
fn cancels_race_the_clock_making_their_tasks_due() {
    loom::model(|| {
        let clock = ManualClock::new();
        let pool = pool_on(&clock);
        let ran = Arc::new(AtomicUsize::new(0));
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let ran = ran.clone();
                pool.schedule(
                    move || {
                        ran.fetch_add(1, Ordering::SeqCst);
                    },
                    Duration::from_secs(1),
                )
                .unwrap()
            })
            .collect();
        let mut handles = handles.into_iter();
        let (first, second) = (handles.next().unwrap(), handles.next().unwrap());
        let canceller = thread::spawn(move || (first.cancel(), first));
        clock.advance(Duration::from_secs(2));
        let second_cancelled = second.cancel();
        let mut won = 0;
        for (cancelled, h) in [canceller.join().unwrap(), (second_cancelled, second)] {
            if cancelled {
                won += 1;
                assert_eq!(h.join(), Err(TaskError::Cancelled));
            }
        }
        finish(&pool);
        let runs = ran.load(Ordering::SeqCst);
        assert!(runs <= 2 && won + runs >= 2, "{won} cancelled, {runs} ran");
        assert_eq!(pool.stats().cancelled, won as u64);
        assert_eq!(pool.queue_len(), 0);
    });
}
