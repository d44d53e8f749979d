//! Failure modes: panicking drops, tasks that never return, tasks that
//! cancel themselves or shut down / drop their own pool, long chains of
//! follow-up tasks, `Duration::MAX` everywhere, and a `Delayed` type whose
//! deadline changes after `put`.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use common::{eventually, Gate, PoolGuard, EVENTUALLY};
use schedpool::{
    DelayItem, DelayQueue, Delayed, ManualClock, ScheduledHandle, ScheduledThreadPool, TaskError,
};

fn pool(core: usize, name: &str) -> PoolGuard {
    PoolGuard(
        ScheduledThreadPool::builder()
            .core_threads(core)
            .thread_name(name)
            .build()
            .unwrap(),
    )
}

/// Names of this process's live threads.
fn thread_names() -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .map(|d| {
            d.filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("comm")).ok())
                .map(|s| s.trim().to_string())
                .collect()
        })
        .unwrap_or_default()
}

// ===== panics inside Drop =====

/// Panics when dropped (unless already panicking).
struct Bomb(Arc<AtomicUsize>);
impl Drop for Bomb {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
        if !std::thread::panicking() {
            panic!("bomb dropped");
        }
    }
}

#[test]
fn captured_value_panics_in_drop_after_the_body_ran() {
    let pool = pool(1, "bomb-run");
    let drops = Arc::new(AtomicUsize::new(0));
    let bomb = Bomb(drops.clone());
    let h = pool
        .submit(move || {
            let _keep = &bomb; // captured by value, dropped when the call ends
            7
        })
        .unwrap();
    // The call of the closure panicked (in the drop of its capture): the
    // handle reports the panic, nothing escapes into the worker.
    match h.join() {
        Err(TaskError::Panicked(msg)) => assert!(msg.contains("bomb dropped"), "{msg}"),
        other => panic!("expected Panicked, got {other:?}"),
    }
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    let first = pool
        .submit(|| std::thread::current().id())
        .unwrap()
        .join()
        .unwrap();
    let again = pool
        .submit(|| std::thread::current().id())
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(first, again, "the worker survived");
    assert_eq!(pool.pool_size(), 1);
}

#[test]
fn captured_value_panics_in_drop_when_cancelled_or_shut_down() {
    let pool = pool(1, "bomb-cancel");
    let drops = Arc::new(AtomicUsize::new(0));
    // cancel: the closure is dropped by cancel, its panic swallowed.
    let bomb = Bomb(drops.clone());
    let h = pool
        .schedule(move || drop(bomb), Duration::from_secs(3600))
        .unwrap();
    assert!(h.cancel());
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    assert_eq!(h.join(), Err(TaskError::Cancelled));

    // a periodic task cancelled by shutdown, and a pending task dropped.
    let bomb = Bomb(drops.clone());
    let periodic = pool
        .schedule_at_fixed_rate(
            move || {
                let _ = &bomb;
            },
            Duration::from_secs(3600),
            Duration::from_secs(1),
        )
        .unwrap();
    let bomb = Bomb(drops.clone());
    let later = pool
        .schedule(move || drop(bomb), Duration::from_secs(3600))
        .unwrap();
    let pending = pool.shutdown_now();
    assert_eq!(pending.len(), 2);
    drop(pending);
    assert_eq!(drops.load(Ordering::SeqCst), 3);
    assert_eq!(periodic.join(), Err(TaskError::Cancelled));
    assert_eq!(later.join(), Err(TaskError::Cancelled));
    assert!(pool.await_termination(EVENTUALLY));
}

/// A task's *result* panics when dropped, and nobody holds the handle: the
/// last reference to the result goes away on the worker, after the task's
/// `catch_unwind`. The pool must keep working, and the worker must survive
/// (no task panic kills a worker).
#[test]
fn result_value_panics_in_drop_with_the_handle_gone() {
    let pool = pool(1, "bomb-result");
    let drops = Arc::new(AtomicUsize::new(0));
    let d = drops.clone();
    let worker_before = pool
        .submit(|| std::thread::current().id())
        .unwrap()
        .join()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    let h = pool
        .schedule(
            move || {
                rx.recv_timeout(EVENTUALLY).unwrap();
                Bomb(d)
            },
            Duration::ZERO,
        )
        .unwrap();
    drop(h);
    tx.send(()).unwrap();
    eventually("the result was dropped", || {
        drops.load(Ordering::SeqCst) == 1
    });
    // The pool keeps working ...
    assert_eq!(pool.submit(|| 5).unwrap().join(), Ok(5));
    let worker_after = pool
        .submit(|| std::thread::current().id())
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(pool.pool_size(), 1);
    // ... on the same worker thread.
    assert_eq!(
        worker_before, worker_after,
        "a panic in a result's Drop killed the worker thread"
    );
}

/// A task panics with a payload whose own Drop panics: the pool drops the
/// payload without letting the second panic out (or aborting).
#[test]
fn panic_payload_panics_in_drop() {
    let pool = pool(1, "bomb-payload");
    let drops = Arc::new(AtomicUsize::new(0));
    let d = drops.clone();
    let worker_before = pool
        .submit(|| std::thread::current().id())
        .unwrap()
        .join()
        .unwrap();
    let h = pool
        .submit(move || -> u32 { std::panic::panic_any(Bomb(d)) })
        .unwrap();
    assert!(matches!(h.join(), Err(TaskError::Panicked(_))));
    // The payload may be dropped just after the handle completes.
    eventually("payload dropped", || drops.load(Ordering::SeqCst) == 1);
    let d = drops.clone();
    let periodic = pool
        .schedule_with_fixed_delay(
            move || std::panic::panic_any(Bomb(d.clone())),
            Duration::ZERO,
            Duration::from_millis(1),
        )
        .unwrap();
    assert!(matches!(periodic.join(), Err(TaskError::Panicked(_))));
    eventually("payload dropped", || drops.load(Ordering::SeqCst) == 2);
    let worker_after = pool
        .submit(|| std::thread::current().id())
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(worker_before, worker_after, "the worker died");
}

/// A queue element whose Drop panics, dropped by `clear`: the panic reaches
/// the caller of `clear` (after the lock is released), every element is
/// dropped once, and the queue stays usable and consistent. A `Delayed`
/// whose `deadline()` panics leaves the queue untouched.
#[test]
fn delay_queue_elements_that_panic() {
    struct Boom(#[allow(dead_code)] Bomb, Instant);
    impl Delayed for Boom {
        fn deadline(&self) -> Instant {
            self.1
        }
    }
    struct BadDeadline;
    impl Delayed for BadDeadline {
        fn deadline(&self) -> Instant {
            panic!("no deadline")
        }
    }
    let drops = Arc::new(AtomicUsize::new(0));
    let q = DelayQueue::new();
    for i in 0..3 {
        q.put(Boom(
            Bomb(drops.clone()),
            Instant::now() + Duration::from_secs(60 + i),
        ));
    }
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| q.clear()));
    assert!(result.is_err(), "the element's panic reaches the caller");
    assert_eq!(
        drops.load(Ordering::SeqCst),
        3,
        "every element dropped once"
    );
    assert!(q.is_empty());
    schedpool::internals::check_delay_queue(&q).unwrap();
    q.put(Boom(Bomb(drops.clone()), Instant::now()));
    let item = q.poll().expect("usable after the panic");
    std::mem::forget(item);

    let q2: DelayQueue<BadDeadline> = DelayQueue::new();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| q2.put(BadDeadline)));
    assert!(result.is_err());
    assert!(q2.is_empty());
    schedpool::internals::check_delay_queue(&q2).unwrap();
    assert!(q2.poll().is_none());
}

// ===== a task that never returns =====

#[test]
fn a_task_that_never_returns() {
    let pool = pool(1, "stuck");
    let (release, stuck) = mpsc::channel::<()>();
    let started = Arc::new(AtomicBool::new(false));
    let s = started.clone();
    let h = pool
        .submit(move || {
            s.store(true, Ordering::SeqCst);
            // "Never" returns: until the test releases it at the end.
            let _ = stuck.recv();
        })
        .unwrap();
    eventually("the stuck task started", || started.load(Ordering::SeqCst));
    let queued = pool.schedule(|| (), Duration::from_millis(1)).unwrap();

    let t = Instant::now();
    let pending = pool.shutdown_now();
    assert!(t.elapsed() < Duration::from_secs(2), "shutdown_now blocked");
    assert_eq!(pending.len(), 1, "the queued task is returned");
    drop(pending);
    assert_eq!(queued.join(), Err(TaskError::Cancelled));

    let t = Instant::now();
    assert!(!pool.await_termination(Duration::from_millis(300)));
    let waited = t.elapsed();
    assert!(
        waited >= Duration::from_millis(300),
        "await_termination returned early: {waited:?}"
    );
    assert!(
        waited < Duration::from_secs(5),
        "await_termination overslept: {waited:?}"
    );
    assert!(!pool.is_terminated());
    assert!(!h.is_done());
    assert!(!h.wait_timeout(Duration::from_millis(50)));

    release.send(()).unwrap();
    assert!(pool.await_termination(EVENTUALLY));
    assert_eq!(h.join(), Ok(()));
}

// ===== tasks acting on themselves and their pool =====

#[test]
fn a_one_shot_cancels_itself() {
    let pool = pool(1, "self-cancel");
    let slot: Arc<OnceLock<ScheduledHandle<u32>>> = Arc::new(OnceLock::new());
    let s = slot.clone();
    let (go, wait) = mpsc::channel::<()>();
    let result = Arc::new(Mutex::new(None));
    let r = result.clone();
    let h = pool
        .submit(move || {
            wait.recv_timeout(EVENTUALLY).unwrap();
            let me = s.get().expect("handle stored");
            *r.lock().unwrap() = Some((me.cancel(), me.is_cancelled(), me.is_done(), me.cancel()));
            1
        })
        .unwrap();
    // The handle is shared with the task through the slot; keep a way to join.
    assert!(slot.set(h).is_ok());
    go.send(()).unwrap();
    let h = {
        eventually("the task ran", || result.lock().unwrap().is_some());
        Arc::try_unwrap(slot).ok().and_then(OnceLock::into_inner)
    };
    assert_eq!(*result.lock().unwrap(), Some((true, true, true, false)));
    if let Some(h) = h {
        assert_eq!(h.join(), Err(TaskError::Cancelled));
    }
}

#[test]
fn a_periodic_task_cancels_itself() {
    let pool = pool(1, "self-cancel-p");
    // Hold the only worker until the task has its own handle.
    let gate = Gate::new();
    let g = gate.clone();
    pool.execute(move || g.wait()).unwrap();
    let slot: Arc<OnceLock<ScheduledHandle<()>>> = Arc::new(OnceLock::new());
    let runs = Arc::new(AtomicUsize::new(0));
    let (s, r) = (slot.clone(), runs.clone());
    let h = pool
        .schedule_at_fixed_rate(
            move || {
                if r.fetch_add(1, Ordering::SeqCst) + 1 == 3 {
                    // The handle is set before the gate lets a run start.
                    assert!(s.get().expect("handle set").cancel());
                }
            },
            Duration::from_millis(10),
            Duration::from_millis(1),
        )
        .unwrap();
    assert!(slot.set(h).is_ok());
    gate.open();
    eventually("the third run", || runs.load(Ordering::SeqCst) >= 3);
    let h = slot.get().unwrap();
    assert!(h.wait_timeout(EVENTUALLY));
    assert!(h.is_cancelled());
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(
        runs.load(Ordering::SeqCst),
        3,
        "ran after cancelling itself"
    );
    assert_eq!(pool.queue_len(), 0);
}

#[test]
fn a_task_shuts_its_own_pool_down() {
    let pool = pool(2, "self-shutdown");
    let inner = pool.0.clone();
    let h = pool
        .submit(move || {
            inner.shutdown();
            let waited = Instant::now();
            // From inside a pool thread: false at once, no deadlock.
            let terminated = inner.await_termination(Duration::from_secs(30));
            (terminated, waited.elapsed(), inner.is_shutdown())
        })
        .unwrap();
    let (terminated, waited, shut) = h.join().unwrap();
    assert!(!terminated);
    assert!(
        waited < Duration::from_secs(5),
        "await_termination from inside waited {waited:?}"
    );
    assert!(shut);
    assert!(pool.await_termination(EVENTUALLY));
    assert!(pool.execute(|| ()).unwrap_err().is_shutdown());
}

#[test]
fn a_task_calls_shutdown_now_on_its_own_pool() {
    let pool = pool(1, "self-stop");
    let inner = pool.0.clone();
    let later = pool.schedule(|| 2, Duration::from_secs(3600)).unwrap();
    let h = pool.submit(move || inner.shutdown_now().len()).unwrap();
    assert_eq!(h.join(), Ok(1));
    assert_eq!(later.join(), Err(TaskError::Cancelled));
    assert!(pool.await_termination(EVENTUALLY));
}

#[test]
fn a_task_drops_the_last_pool_handle() {
    let pool = ScheduledThreadPool::builder()
        .core_threads(1)
        .thread_name("lastdrop")
        .build()
        .unwrap();
    let periodic = pool
        .schedule_at_fixed_rate(|| (), Duration::from_secs(3600), Duration::from_secs(1))
        .unwrap();
    let inner = pool.clone();
    let (go, wait) = mpsc::channel::<()>();
    let h = pool
        .submit(move || {
            wait.recv_timeout(EVENTUALLY).unwrap();
            drop(inner); // the last clone: shuts the pool down from its own worker
            "dropped"
        })
        .unwrap();
    drop(pool);
    go.send(()).unwrap();
    assert_eq!(h.join(), Ok("dropped"));
    // Shutdown cancelled the periodic task (default policy) ...
    assert!(periodic.wait_timeout(EVENTUALLY));
    assert!(periodic.is_cancelled());
    // ... and the worker thread exits.
    eventually("the worker exited", || {
        !thread_names().iter().any(|n| n.starts_with("lastdrop"))
    });
}

// ===== long chains =====

#[test]
fn ten_thousand_chained_follow_ups() {
    const N: usize = 10_000;
    let pool = pool(2, "chain");
    let seen = Arc::new(Mutex::new(Vec::with_capacity(N)));
    let (done, finished) = mpsc::channel();

    fn link(
        pool: ScheduledThreadPool,
        i: usize,
        seen: Arc<Mutex<Vec<usize>>>,
        done: mpsc::Sender<()>,
    ) {
        seen.lock().unwrap().push(i);
        if i + 1 == N {
            done.send(()).unwrap();
            return;
        }
        let next = pool.clone();
        // Every other link is delayed a little, to mix due and timed paths.
        let delay = if i % 100 == 0 {
            Duration::from_micros(100)
        } else {
            Duration::ZERO
        };
        pool.schedule(move || link(next, i + 1, seen, done), delay)
            .expect("follow-up rejected");
    }

    let (p, s) = (pool.0.clone(), seen.clone());
    pool.execute(move || link(p, 0, s, done)).unwrap();
    finished
        .recv_timeout(EVENTUALLY)
        .expect("chain did not finish");
    assert_eq!(*seen.lock().unwrap(), (0..N).collect::<Vec<_>>());
    assert_eq!(pool.task_count(), N as u64);
    eventually("all counted", || pool.completed_task_count() == N as u64);
}

// ===== Duration::MAX everywhere =====

#[test]
fn duration_max_everywhere_in_the_pool() {
    let pool = pool(2, "max");
    let one = pool.schedule(|| 1, Duration::MAX).unwrap();
    let rate = pool
        .schedule_at_fixed_rate(|| (), Duration::MAX, Duration::MAX)
        .unwrap();
    let delay = pool
        .schedule_with_fixed_delay(|| (), Duration::MAX, Duration::MAX)
        .unwrap();
    let hundred_years = Duration::from_secs(100 * 365 * 86_400);
    for d in [one.delay(), rate.delay(), delay.delay()] {
        assert!(d > hundred_years, "delay {d:?}");
    }
    // Periodic tasks with a due first run and an endless period: run once.
    let (r1, r2) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (c1, c2) = (r1.clone(), r2.clone());
    let rate_now = pool
        .schedule_at_fixed_rate(
            move || {
                c1.fetch_add(1, Ordering::SeqCst);
            },
            Duration::ZERO,
            Duration::MAX,
        )
        .unwrap();
    let delay_now = pool
        .schedule_with_fixed_delay(
            move || {
                c2.fetch_add(1, Ordering::SeqCst);
            },
            Duration::ZERO,
            Duration::MAX,
        )
        .unwrap();
    let quick = pool.submit(|| 2).unwrap();
    assert!(quick.wait_timeout(Duration::MAX));
    assert_eq!(quick.join(), Ok(2));
    eventually("both periodic tasks ran once", || {
        r1.load(Ordering::SeqCst) == 1 && r2.load(Ordering::SeqCst) == 1
    });
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(
        (r1.load(Ordering::SeqCst), r2.load(Ordering::SeqCst)),
        (1, 1)
    );
    for d in [rate_now.delay(), delay_now.delay()] {
        assert!(d > hundred_years, "next run in {d:?}");
    }
    assert!(pool.wait_idle(Duration::MAX));
    assert!(!one.is_done() && !rate.is_done() && !delay.is_done());
    assert!(one.cancel());
    assert_eq!(one.join(), Err(TaskError::Cancelled));
    // shutdown cancels the periodic ones; nothing else keeps the pool alive.
    pool.shutdown();
    assert!(pool.await_termination(Duration::MAX));
    for h in [rate, delay, rate_now, delay_now] {
        assert!(h.wait_timeout(Duration::MAX));
        assert!(h.is_cancelled());
    }
}

#[test]
fn duration_max_with_a_manual_clock() {
    let clock = ManualClock::new();
    let pool = PoolGuard(
        ScheduledThreadPool::builder()
            .core_threads(1)
            .clock(clock.clone())
            .build()
            .unwrap(),
    );
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let rate = pool
        .schedule_at_fixed_rate(
            move || {
                r.fetch_add(1, Ordering::SeqCst);
            },
            Duration::MAX,
            Duration::MAX,
        )
        .unwrap();
    let one = pool.schedule(|| 1, Duration::MAX).unwrap();
    clock.advance(Duration::from_secs(3600));
    assert!(pool.wait_idle(Duration::MAX));
    assert!(!one.is_done());
    // The clock saturates where the deadlines do: both come due, once.
    clock.advance(Duration::MAX);
    clock.advance(Duration::MAX);
    assert!(pool.wait_idle(EVENTUALLY));
    assert_eq!(one.join(), Ok(1));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert!(rate.cancel());
}

#[test]
fn duration_max_in_the_delay_queue() {
    let q = Arc::new(DelayQueue::new());
    let key = q.put(DelayItem::new("never", Duration::MAX));
    let deadline = q.peek_deadline().unwrap();
    assert!(deadline > Instant::now() + Duration::from_secs(100 * 365 * 86_400));
    assert!(q.poll().is_none());
    assert!(q.drain_expired().is_empty());
    // poll_timeout(MAX) returns as soon as an earlier item is due.
    let putter = {
        let q = q.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            q.put(DelayItem::new("soon", Duration::ZERO));
        })
    };
    let t = Instant::now();
    let got = q.poll_timeout(Duration::MAX).map(DelayItem::into_inner);
    assert_eq!(got, Some("soon"));
    assert!(t.elapsed() < EVENTUALLY);
    putter.join().unwrap();
    assert_eq!(q.remove(key).map(DelayItem::into_inner), Some("never"));

    // A manual clock advanced by MAX makes a MAX item due (both saturate).
    let clock = ManualClock::new();
    let q = DelayQueue::with_clock(clock.clone());
    q.put(DelayItem::at(
        "far",
        clock.now() + Duration::from_secs(3600),
    ));
    clock.advance(Duration::MAX);
    assert_eq!(q.poll().map(DelayItem::into_inner), Some("far"));
}

// ===== a Delayed type whose deadline moves =====

/// A `Delayed` whose deadline the test changes after `put`.
struct Moving {
    name: &'static str,
    deadline: Arc<Mutex<Instant>>,
}
impl Delayed for Moving {
    fn deadline(&self) -> Instant {
        *self.deadline.lock().unwrap()
    }
}

#[test]
fn a_delayed_type_whose_deadline_changes_after_put() {
    let clock = ManualClock::new();
    let t0 = clock.now();
    let q = DelayQueue::with_clock(clock.clone());
    let a = Arc::new(Mutex::new(t0 + Duration::from_secs(10)));
    let b = Arc::new(Mutex::new(t0 + Duration::from_secs(20)));
    let ka = q.put(Moving {
        name: "a",
        deadline: a.clone(),
    });
    q.put(Moving {
        name: "b",
        deadline: b.clone(),
    });
    // Move both after put: a far away, b to the past.
    *a.lock().unwrap() = t0 + Duration::from_secs(1000);
    *b.lock().unwrap() = t0 - Duration::from_secs(1);
    // The queue keeps the deadlines read at put: nothing is due yet, the
    // order is still a then b, and nothing panics or corrupts the heap.
    assert!(q.poll().is_none(), "b came out early");
    assert_eq!(q.peek_deadline(), Some(t0 + Duration::from_secs(10)));
    schedpool::internals::check_delay_queue(&q).unwrap();
    clock.advance(Duration::from_secs(10));
    assert_eq!(q.poll().map(|m| m.name), Some("a"));
    assert!(q.remove(ka).is_none());
    assert!(q.poll().is_none());
    clock.advance(Duration::from_secs(10));
    let rest: Vec<_> = q.drain_expired().into_iter().map(|m| m.name).collect();
    assert_eq!(rest, vec!["b"]);
    schedpool::internals::check_delay_queue(&q).unwrap();
}
