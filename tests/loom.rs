//! loom models of the protocol races: the leader/follower hand-offs of the
//! delay queue, schedule vs shutdown, cancel vs take, shutdown of idle
//! workers, and a handle's completion vs its waker registration.
//!
//! Run with:
//!
//! ```text
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 CARGO_TARGET_DIR=target/loom \
//!     cargo test --release --test loom
//! ```
//!
//! loom does not model time: a timed wait is an untimed wait that never
//! times out (see `src/sync.rs`). So every model makes progress only through
//! signals: deadlines already past, or a `ManualClock` that is advanced. A
//! lost wake-up therefore shows up as a loom deadlock. The pool's successor
//! (a follower that times the second task, `docs/design.md` rule 5) exists
//! only for a timer that fires, so it is off here and checked on the real
//! clock in `src/leader_tests.rs`. Every pool model shuts
//! its pool down and waits for termination, so all worker threads (loom
//! threads) exit. No model uses a core-0 pool (its keep-alive is a timed wait).
//! Each model has at most 4 threads, workers included.
#![cfg(loom)]

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::{Condvar, Mutex};
use loom::thread;
use schedpool::{DelayItem, DelayQueue, ManualClock, ScheduledThreadPool, TaskError};

/// Long enough to never matter: under loom the wait is untimed anyway.
const FOREVER: Duration = Duration::from_secs(3600);

fn past() -> Instant {
    Instant::now()
        .checked_sub(Duration::from_secs(1))
        .unwrap_or_else(Instant::now)
}

fn pool(core: usize) -> ScheduledThreadPool {
    assert!(core > 0, "a core-0 pool uses a timed keep-alive wait");
    ScheduledThreadPool::builder()
        .core_threads(core)
        .thread_name("loom")
        .build()
        .unwrap()
}

/// A one-worker pool on a `ManualClock` that is never advanced: its tasks
/// are due only when a model says so, by cancelling or shutting down.
fn manual_pool() -> ScheduledThreadPool {
    ScheduledThreadPool::builder()
        .core_threads(1)
        .clock(ManualClock::new())
        .build()
        .unwrap()
}

/// Shuts the pool down and checks that it terminates (a worker that never
/// exits is a loom deadlock, not a hang).
fn finish(pool: &ScheduledThreadPool) {
    assert!(pool.shutdown().await_termination(FOREVER));
    assert!(pool.is_terminated());
    assert_eq!(pool.pool_size(), 0);
}

// ===== DelayQueue: leader/follower =====

/// Two takers blocked, two due items put: the first taker out must signal
/// its successor (the put of the second item is not a new head, so it
/// signals nobody).
#[test]
fn two_takers_two_due_items() {
    loom::model(|| {
        let q = Arc::new(DelayQueue::new());
        let takers: Vec<_> = (0..2)
            .map(|_| {
                let q = q.clone();
                thread::spawn(move || q.take().map(DelayItem::into_inner))
            })
            .collect();
        let at = past();
        q.put(DelayItem::at(1u32, at));
        q.put(DelayItem::at(2u32, at));
        let mut got: Vec<u32> = takers
            .into_iter()
            .map(|t| {
                t.join()
                    .unwrap()
                    .expect("take returned None on an open queue")
            })
            .collect();
        got.sort_unstable();
        assert_eq!(got, vec![1, 2]);
        assert!(q.is_empty());
    });
}

/// A leader times a far head; an earlier, already due item is put: the put
/// must clear the leader and signal, and the taker returns it with no time
/// passing (the manual clock never moves).
#[test]
fn new_head_wakes_the_leader() {
    loom::model(|| {
        let clock = ManualClock::new();
        let q = Arc::new(DelayQueue::with_clock(clock.clone()));
        q.put(DelayItem::at("far", clock.now() + FOREVER));
        let taker = {
            let q = q.clone();
            thread::spawn(move || q.take().map(DelayItem::into_inner))
        };
        q.put(DelayItem::at("due", clock.now()));
        assert_eq!(taker.join().unwrap(), Some("due"));
        assert_eq!(clock.elapsed(), Duration::ZERO);
        assert_eq!(q.len(), 1, "the far item stays");
    });
}

/// The same with the real clock: the leader sleeps (untimed under loom) on a
/// head an hour away; only the new-head signal can wake it.
#[test]
fn new_head_wakes_the_leader_real_clock() {
    loom::model(|| {
        let q = Arc::new(DelayQueue::new());
        q.put(DelayItem::new("far", FOREVER));
        let taker = {
            let q = q.clone();
            thread::spawn(move || q.take().map(DelayItem::into_inner))
        };
        q.put(DelayItem::at("due", past()));
        assert_eq!(taker.join().unwrap(), Some("due"));
        assert_eq!(q.len(), 1);
    });
}

/// Advancing a manual clock wakes a leader timing the head, and the
/// successor signal wakes the follower for the second due item.
#[test]
fn clock_advance_wakes_leader_and_follower() {
    loom::model(|| {
        let clock = ManualClock::new();
        let q = Arc::new(DelayQueue::with_clock(clock.clone()));
        let due = clock.now() + Duration::from_secs(60);
        q.put(DelayItem::at(1u32, due));
        q.put(DelayItem::at(2u32, due));
        let takers: Vec<_> = (0..2)
            .map(|_| {
                let q = q.clone();
                thread::spawn(move || q.take().map(DelayItem::into_inner))
            })
            .collect();
        clock.advance(Duration::from_secs(60));
        let mut got: Vec<u32> = takers
            .into_iter()
            .map(|t| t.join().unwrap().expect("take returned None"))
            .collect();
        got.sort_unstable();
        assert_eq!(got, vec![1, 2]);
    });
}

/// close() wakes every blocked taker (each leaving taker wakes the next).
#[test]
fn close_wakes_all_takers() {
    loom::model(|| {
        let q: Arc<DelayQueue<DelayItem<u32>>> = Arc::new(DelayQueue::new());
        q.put(DelayItem::new(9, FOREVER));
        let takers: Vec<_> = (0..2)
            .map(|_| {
                let q = q.clone();
                thread::spawn(move || q.take())
            })
            .collect();
        q.close();
        for t in takers {
            assert!(t.join().unwrap().is_none());
        }
    });
}

// ===== the pool =====

/// schedule (zero delay, default policies) racing shutdown: Ok means the
/// task runs before termination; Err means it never runs.
#[test]
fn schedule_races_shutdown_runs_or_rejected() {
    loom::model(|| {
        let pool = pool(1);
        let ran = Arc::new(AtomicUsize::new(0));
        let submitter = {
            let pool = pool.clone();
            let ran = ran.clone();
            thread::spawn(move || {
                pool.schedule(
                    move || {
                        ran.fetch_add(1, Ordering::SeqCst);
                        7u32
                    },
                    Duration::ZERO,
                )
            })
        };
        pool.shutdown();
        let result = submitter.join().unwrap();
        finish(&pool);
        match result {
            Ok(h) => {
                assert!(h.is_done(), "accepted task not done at termination");
                assert_eq!(h.join(), Ok(7));
                assert_eq!(ran.load(Ordering::SeqCst), 1);
            }
            Err(e) => {
                assert!(e.is_shutdown());
                assert_eq!(ran.load(Ordering::SeqCst), 0, "a rejected task ran");
            }
        }
    });
}

/// schedule of a delayed task racing shutdown with
/// `execute_delayed_after_shutdown(false)`: Ok means the task is cancelled
/// (it is not due: the clock never moves) before termination; Err means it
/// never runs. Either way the pool terminates.
#[test]
fn schedule_races_shutdown_delayed_cancelled() {
    loom::model(|| {
        let clock = ManualClock::new();
        let pool = ScheduledThreadPool::builder()
            .core_threads(1)
            .execute_delayed_after_shutdown(false)
            .clock(clock.clone())
            .build()
            .unwrap();
        let ran = Arc::new(AtomicUsize::new(0));
        let submitter = {
            let pool = pool.clone();
            let ran = ran.clone();
            thread::spawn(move || {
                pool.schedule(
                    move || {
                        ran.fetch_add(1, Ordering::SeqCst);
                    },
                    Duration::from_secs(10),
                )
            })
        };
        pool.shutdown();
        let result = submitter.join().unwrap();
        finish(&pool);
        assert_eq!(ran.load(Ordering::SeqCst), 0);
        if let Ok(h) = result {
            assert!(h.is_cancelled(), "accepted delayed task not cancelled");
            assert_eq!(h.join(), Err(TaskError::Cancelled));
        }
    });
}

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

/// Two idle workers (blocked untimed on an empty queue) and a shutdown: both
/// exit and await_termination returns true.
#[test]
fn shutdown_with_idle_workers() {
    loom::model(|| {
        let pool = pool(2);
        let a = pool.submit(|| 1u32).unwrap();
        let b = pool.submit(|| 2u32).unwrap();
        assert_eq!(a.join(), Ok(1));
        assert_eq!(b.join(), Ok(2));
        assert!(pool.pool_size() <= 2);
        finish(&pool);
    });
}

/// Two workers, one the leader timing a far head and one a follower; a
/// shutdown whose policy cancels the delayed tasks empties the queue: both
/// workers (leader and follower) must wake and exit.
#[test]
fn shutdown_wakes_leader_and_follower() {
    loom::model(|| {
        let clock = ManualClock::new();
        let pool = ScheduledThreadPool::builder()
            .core_threads(2)
            .execute_delayed_after_shutdown(false)
            .clock(clock)
            .build()
            .unwrap();
        let a = pool.schedule(|| 1u32, FOREVER).unwrap();
        let b = pool.schedule(|| 2u32, FOREVER).unwrap();
        finish(&pool);
        assert_eq!(a.join(), Err(TaskError::Cancelled));
        assert_eq!(b.join(), Err(TaskError::Cancelled));
    });
}

/// The same through shutdown_now, from another thread than the waiter.
#[test]
fn shutdown_now_with_idle_workers() {
    loom::model(|| {
        let pool = pool(2);
        let a = pool.submit(|| 1u32).unwrap();
        let b = pool.submit(|| 2u32).unwrap();
        assert_eq!(a.join(), Ok(1));
        assert_eq!(b.join(), Ok(2));
        let stopper = {
            let pool = pool.clone();
            thread::spawn(move || pool.shutdown_now().len())
        };
        assert!(pool.await_termination(FOREVER));
        assert_eq!(stopper.join().unwrap(), 0, "nothing was pending");
        assert_eq!(pool.pool_size(), 0);
    });
}

/// Advancing a manual clock, then `wait_idle`: it returns only once the
/// task that came due has run (it must not see "nothing running" in the gap
/// before the worker takes the task), and it is woken when the run ends.
#[test]
fn advance_then_wait_idle_sees_the_run() {
    loom::model(|| {
        let clock = ManualClock::new();
        let pool = ScheduledThreadPool::builder()
            .core_threads(1)
            .clock(clock.clone())
            .build()
            .unwrap();
        let ran = Arc::new(AtomicUsize::new(0));
        let h = {
            let ran = ran.clone();
            pool.schedule(
                move || {
                    ran.fetch_add(1, Ordering::SeqCst);
                },
                Duration::from_secs(10),
            )
            .unwrap()
        };
        clock.advance(Duration::from_secs(10));
        assert!(pool.wait_idle(FOREVER));
        assert_eq!(
            ran.load(Ordering::SeqCst),
            1,
            "wait_idle returned before the due run"
        );
        assert!(h.is_done());
        finish(&pool);
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

/// pause and resume racing the end of a periodic run (the worker claims,
/// runs, ends the run and requeues it): the task is never queued twice, runs
/// exactly once on a frozen clock, and ends scheduled for its next period or
/// paused. This once failed: a pause and resume between a run's end and its
/// requeue pushed the task, and the requeue pushed it again.
#[test]
fn pause_resume_race_the_end_of_a_run() {
    loom::model(|| {
        let pool = manual_pool();
        let runs = Arc::new(AtomicUsize::new(0));
        let r = runs.clone();
        let h = Arc::new(
            pool.schedule_at_fixed_rate(
                move || {
                    r.fetch_add(1, Ordering::SeqCst);
                },
                Duration::ZERO,
                FOREVER,
            )
            .unwrap(),
        );
        let steer = {
            let h = h.clone();
            thread::spawn(move || {
                h.pause();
                h.resume();
            })
        };
        steer.join().unwrap();
        assert!(pool.wait_idle(FOREVER));
        assert_eq!(runs.load(Ordering::SeqCst), 1, "ran exactly once");
        assert!(pool.queue_len() <= 1, "queued at most once");
        schedpool::internals::check_pool(&h).unwrap();
        assert!(matches!(
            h.state(),
            schedpool::TaskState::Scheduled | schedpool::TaskState::Paused
        ));
        finish(&pool);
    });
}

/// The requeue path with two workers: a periodic task requeued as the new
/// head (earlier than the far task another worker is timing as leader) must
/// still run when its next period comes, in every interleaving. loom never
/// fires a timeout, so only `advance` (which clears the leader itself) can
/// make the head due here: the self-handoff's own leader clear is checked
/// in real time by `tests/periodic.rs`
/// (`a_periodic_task_keeps_running_while_another_worker_leads_on_a_far_task`).
#[test]
fn periodic_requeue_as_new_head_keeps_someone_timing_it() {
    loom::model(|| {
        let clock = ManualClock::new();
        let pool = ScheduledThreadPool::builder()
            .core_threads(2)
            .clock(clock.clone())
            .build()
            .unwrap();
        let far = pool.schedule(|| (), FOREVER).unwrap();
        let runs = Arc::new(AtomicUsize::new(0));
        let r = runs.clone();
        let period = Duration::from_secs(1);
        let h = pool
            .schedule_at_fixed_rate(
                move || {
                    r.fetch_add(1, Ordering::SeqCst);
                },
                Duration::ZERO,
                period,
            )
            .unwrap();
        assert!(pool.wait_idle(FOREVER));
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        clock.advance(period);
        assert!(pool.wait_idle(FOREVER));
        assert_eq!(
            runs.load(Ordering::SeqCst),
            2,
            "the requeued head ran at its next period"
        );
        h.cancel();
        far.cancel();
        finish(&pool);
    });
}

/// A due task is cancelled while `wait_idle` sleeps and before a worker
/// pops it. Nothing runs afterwards, so the cancel itself must wake
/// `wait_idle` (a review found it did not: `wait_idle` slept to its timeout,
/// here a loom deadlock, although the pool was idle from the cancel on).
#[test]
fn cancel_of_a_due_head_wakes_wait_idle() {
    loom::model(|| {
        let clock = ManualClock::new();
        let pool = ScheduledThreadPool::builder()
            .core_threads(1)
            .clock(clock.clone())
            .build()
            .unwrap();
        let h = pool.schedule(|| (), Duration::from_secs(10)).unwrap();
        clock.advance(Duration::from_secs(10));
        let canceller = thread::spawn(move || {
            h.cancel();
        });
        assert!(pool.wait_idle(FOREVER));
        canceller.join().unwrap();
        assert!(pool.shutdown().await_termination(FOREVER));
    });
}

// ===== completion vs waker =====

/// A waker that records the wake-up and signals a loom condvar.
struct Flag {
    woken: Mutex<bool>,
    cv: Condvar,
}

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        *self.woken.lock().unwrap() = true;
        self.cv.notify_all();
    }
}

/// A poller on another thread registers its waker while the worker
/// completes the task: either the poll sees the result, or the waker is
/// woken and the next poll sees it. A lost wake-up is a loom deadlock.
#[test]
fn completion_races_waker_registration() {
    loom::model(|| {
        let pool = pool(1);
        let mut h = pool.submit(|| 11u32).unwrap();
        let poller = thread::spawn(move || {
            let flag = Arc::new(Flag {
                woken: Mutex::new(false),
                cv: Condvar::new(),
            });
            let waker = Waker::from(flag.clone());
            let mut cx = Context::from_waker(&waker);
            loop {
                if let Poll::Ready(r) = Pin::new(&mut h).poll(&mut cx) {
                    return r;
                }
                let mut woken = flag.woken.lock().unwrap();
                while !*woken {
                    woken = flag.cv.wait(woken).unwrap();
                }
                *woken = false;
            }
        });
        assert_eq!(poller.join().unwrap(), Ok(11));
        finish(&pool);
    });
}

/// The same race against cancellation (a pending task returned by
/// shutdown_now and dropped) instead of the task's own completion.
#[test]
fn cancel_races_waker_registration() {
    loom::model(|| {
        let pool = manual_pool();
        let mut h = pool.schedule(|| 3u32, FOREVER).unwrap();
        let flag = Arc::new(Flag {
            woken: Mutex::new(false),
            cv: Condvar::new(),
        });
        // The handle moves to the poller, so the task is cancelled from here
        // by shutdown_now and dropping what it returns.
        let poller = {
            let flag = flag.clone();
            thread::spawn(move || {
                let waker = Waker::from(flag.clone());
                let mut cx = Context::from_waker(&waker);
                loop {
                    if let Poll::Ready(r) = Pin::new(&mut h).poll(&mut cx) {
                        return r;
                    }
                    let mut woken = flag.woken.lock().unwrap();
                    while !*woken {
                        woken = flag.cv.wait(woken).unwrap();
                    }
                    *woken = false;
                }
            })
        };
        // Dropping the pending task completes its handle as cancelled.
        let pending = pool.shutdown_now();
        assert_eq!(pending.len(), 1);
        drop(pending);
        assert_eq!(poller.join().unwrap(), Err(TaskError::Cancelled));
        assert!(pool.await_termination(FOREVER));
    });
}

/// A blocked `join` racing a cancel. A cancel completes the handle only if
/// the task was marked as waited (so the common, unwaited cancel never
/// touches the completion cell); the joiner marks it under the cell's lock
/// before it sleeps. Either the joiner sees the cancel, or the cancel sees
/// the mark and wakes it: never a joiner asleep for good.
#[test]
fn cancel_races_blocked_join() {
    loom::model(|| {
        let pool = manual_pool();
        let h = pool.schedule(|| 5u32, FOREVER).unwrap();
        let joiner = thread::spawn(move || h.join());
        // shutdown_now hands the task back; dropping it cancels it.
        let pending = pool.shutdown_now();
        assert_eq!(pending.len(), 1);
        drop(pending);
        assert_eq!(joiner.join().unwrap(), Err(TaskError::Cancelled));
        assert!(pool.await_termination(FOREVER));
    });
}

/// The same for `wait_timeout` against the handle's own `cancel`.
#[test]
fn cancel_races_wait_timeout() {
    loom::model(|| {
        let pool = manual_pool();
        let h = Arc::new(pool.schedule(|| 5u32, FOREVER).unwrap());
        let waiter = {
            let h = h.clone();
            thread::spawn(move || h.wait_timeout(FOREVER))
        };
        assert!(h.cancel());
        assert!(waiter.join().unwrap(), "wait_timeout missed the cancel");
        assert!(h.is_cancelled());
        finish(&pool);
    });
}

/// shutdown_now racing a worker that is taking a due task: API.md says
/// shutdown_now "returns every task that had not started", so the task
/// either runs (it had started) or is returned. This once failed: a worker
/// that popped the task just before shutdown_now saw STOP and cancelled it,
/// so it was neither run nor returned; the worker now decides under the lock
/// it took the task under.
#[test]
fn shutdown_now_returns_or_runs() {
    loom::model(|| {
        let pool = pool(1);
        let ran = Arc::new(AtomicUsize::new(0));
        let h = {
            let ran = ran.clone();
            pool.submit(move || {
                ran.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap()
        };
        let returned = pool.shutdown_now();
        let returned_it = returned.len() == 1;
        drop(returned);
        assert!(pool.await_termination(FOREVER));
        let runs = ran.load(Ordering::SeqCst);
        assert!(h.is_done());
        assert!(
            (runs == 1) != returned_it,
            "ran {runs} times, returned by shutdown_now: {returned_it}, handle: {:?}",
            h.join()
        );
    });
}

// ===== Durable queue: the in-process leader/follower over a backend =====

/// A backend with the Redis semantics that matter here: a claim takes up to
/// `max` items and chains the marker when more are due; `wait` blocks until
/// the marker or `unblock` (never on time: loom has none).
#[derive(Debug, Default)]
struct FakeStore {
    state: Mutex<FakeState>,
    cv: Condvar,
}

#[derive(Debug, Default)]
struct FakeState {
    due: Vec<String>,
    marker: bool,
    unblocked: bool,
    token: u64,
}

#[derive(Debug, Clone, Default)]
struct Fake(Arc<FakeStore>);

impl Fake {
    fn push(&self, id: &str) {
        let mut s = self.0.state.lock().unwrap();
        s.due.push(id.to_string());
        s.marker = true;
        self.0.cv.notify_all();
    }
}

mod fake_backend {
    use super::*;
    use schedpool::durable::*;

    fn unused<T>() -> Result<T, DurableError> {
        Err(DurableError::Config("not modelled".into()))
    }

    impl DurableBackend for Fake {
        fn put(&self, _: &str, _: &[u8], _: When, _: PutMode) -> Result<Put, DurableError> {
            unused()
        }
        fn claim(&self, _: Duration, max: usize, _: u32) -> Result<ClaimBatch, DurableError> {
            let mut s = self.0.state.lock().unwrap();
            let n = max.min(s.due.len());
            let mut items = Vec::new();
            for id in s.due.drain(..n).collect::<Vec<_>>() {
                s.token += 1;
                items.push(Claimed {
                    id,
                    token: s.token,
                    attempt: 1,
                    deadline_ms: 0,
                    due_ms: 0,
                    claimed_ms: 0,
                    envelope: vec![1, 0, 0],
                });
            }
            if !s.due.is_empty() {
                s.marker = true;
                self.0.cv.notify_all();
            }
            let wait = if s.due.is_empty() {
                None
            } else {
                Some(Duration::ZERO)
            };
            Ok(ClaimBatch { items, wait })
        }
        fn extend(&self, _: &[(&str, u64)], _: Duration) -> Result<Vec<bool>, DurableError> {
            unused()
        }
        fn ack(&self, _: &str, _: u64) -> Result<bool, DurableError> {
            unused()
        }
        fn nack(&self, _: &str, _: u64, _: Nack) -> Result<bool, DurableError> {
            unused()
        }
        fn ack_and_reschedule(
            &self,
            _: &str,
            _: u64,
            _: Repeat,
        ) -> Result<Option<u64>, DurableError> {
            unused()
        }
        fn cancel(&self, _: &str) -> Result<Cancelled, DurableError> {
            unused()
        }
        fn wait(&self, _: Option<Duration>, _: Duration) -> Result<bool, DurableError> {
            let mut s = self.0.state.lock().unwrap();
            loop {
                if std::mem::take(&mut s.marker) {
                    return Ok(true);
                }
                if std::mem::take(&mut s.unblocked) {
                    return Ok(false);
                }
                s = self.0.cv.wait(s).unwrap();
            }
        }
        fn unblock(&self) {
            self.0.state.lock().unwrap().unblocked = true;
            self.0.cv.notify_all();
        }
        fn counts(&self) -> Result<Counts, DurableError> {
            unused()
        }
        fn peek_deadline_ms(&self) -> Result<Option<u64>, DurableError> {
            unused()
        }
        fn server_time_ms(&self) -> Result<u64, DurableError> {
            unused()
        }
        fn dead_letters(&self, _: usize) -> Result<Vec<(String, Vec<u8>)>, DurableError> {
            unused()
        }
    }
}

/// Two takers, two items put one after the other while they wait: each
/// taker gets one. The taker that leaves with an item must hand the leader
/// role on, or the other waits untimed for ever (a loom deadlock).
#[test]
fn durable_takers_hand_the_leader_role_on() {
    loom::model(|| {
        let store = Fake::default();
        let taker = Arc::new(schedpool::internals::DurableTaker::new(Arc::new(
            store.clone(),
        )));
        let takers: Vec<_> = (0..2)
            .map(|_| {
                let taker = taker.clone();
                thread::spawn(move || taker.take().unwrap().expect("open").id)
            })
            .collect();
        store.push("a");
        store.push("b");
        let mut got: Vec<String> = takers.into_iter().map(|t| t.join().unwrap()).collect();
        got.sort();
        assert_eq!(got, ["a", "b"]);
    });
}

/// close() while a taker leads (inside the backend's wait) or follows:
/// both return None.
#[test]
fn durable_close_releases_leader_and_follower() {
    loom::model(|| {
        let store = Fake::default();
        let taker = Arc::new(schedpool::internals::DurableTaker::new(Arc::new(store)));
        let takers: Vec<_> = (0..2)
            .map(|_| {
                let taker = taker.clone();
                thread::spawn(move || taker.take().unwrap().is_none())
            })
            .collect();
        taker.close();
        for t in takers {
            assert!(t.join().unwrap());
        }
    });
}

// ===== the ready batch (src/ready.rs) =====

/// A pool of `workers` threads on a fresh manual clock.
fn manual_workers(workers: usize) -> (ScheduledThreadPool, ManualClock) {
    let clock = ManualClock::new();
    let pool = ScheduledThreadPool::builder()
        .core_threads(workers)
        .clock(clock.clone())
        .build()
        .unwrap();
    (pool, clock)
}

/// A pool on a manual clock with three one-shot tasks that have just come
/// due together: the worker that takes the first moves the others to the
/// ready batch, which the workers then take from without the pool lock.
/// Returns the pool, the handles and each task's run count.
type Counted = (
    ScheduledThreadPool,
    Vec<schedpool::ScheduledHandle<usize>>,
    Vec<Arc<AtomicUsize>>,
);

fn three_due_tasks(workers: usize) -> Counted {
    let (pool, clock) = manual_workers(workers);
    let mut handles = Vec::new();
    let mut runs = Vec::new();
    for i in 0..3 {
        let ran = Arc::new(AtomicUsize::new(0));
        let r = ran.clone();
        handles.push(
            pool.schedule(
                move || {
                    r.fetch_add(1, Ordering::SeqCst);
                    i
                },
                Duration::from_secs(1),
            )
            .unwrap(),
        );
        runs.push(ran);
    }
    clock.advance(Duration::from_secs(1));
    (pool, handles, runs)
}

/// `wait_idle` must not return while a task taken from the ready batch
/// (without the pool lock) has not finished: all three ran by then.
#[test]
fn ready_batch_then_wait_idle_sees_every_run() {
    loom::model(|| {
        let (pool, handles, runs) = three_due_tasks(2);
        assert!(pool.wait_idle(FOREVER));
        for (i, ran) in runs.iter().enumerate() {
            assert_eq!(ran.load(Ordering::SeqCst), 1, "task {i} before wait_idle");
        }
        assert_eq!(pool.active_count(), 0);
        assert_eq!(pool.completed_task_count(), 3);
        finish(&pool);
        for (i, h) in handles.into_iter().enumerate() {
            assert_eq!(h.join(), Ok(i));
        }
    });
}

/// `shutdown_now` racing the workers' takes from the ready batch: every
/// task runs once or is handed back (and completes as cancelled when the
/// caller drops it); none runs twice, none is lost, none is cancelled by the
/// pool.
#[test]
fn ready_batch_races_shutdown_now() {
    loom::model(|| {
        let (pool, handles, runs) = three_due_tasks(2);
        let pending = pool.shutdown_now();
        let returned = pending.len();
        drop(pending);
        assert!(pool.await_termination(FOREVER));
        let ran: usize = runs.iter().map(|r| r.load(Ordering::SeqCst)).sum();
        for (i, r) in runs.iter().enumerate() {
            assert!(r.load(Ordering::SeqCst) <= 1, "task {i} ran twice");
        }
        // A task taken from the batch before shutdown_now drained it runs,
        // as one popped under the pool lock does; the rest come back.
        assert_eq!(ran + returned, 3, "ran {ran}, returned {returned}");
        let mut ok = 0;
        for h in handles {
            match h.join() {
                Ok(_) => ok += 1,
                Err(e) => assert_eq!(e, TaskError::Cancelled),
            }
        }
        assert_eq!(ok, ran, "a handle's result disagrees with the runs");
        assert_eq!(pool.queue_len(), 0);
    });
}

/// cancel racing the ready batch: the last task is in the heap, in the
/// batch, or taken; it runs at most once, and surely if the cancel lost;
/// the pool is idle and empty afterwards.
#[test]
fn ready_batch_races_cancel() {
    loom::model(|| {
        let (pool, mut handles, runs) = three_due_tasks(1);
        let last = handles.pop().unwrap();
        let cancelled = last.cancel();
        assert!(pool.wait_idle(FOREVER));
        // A cancel that wins against a started run returns true too (Java:
        // `cancel(false)` of a running task); one that loses saw it done.
        let ran = runs[2].load(Ordering::SeqCst);
        assert!(
            ran <= 1 && (cancelled || ran == 1),
            "cancelled {cancelled}, ran {ran}"
        );
        assert_eq!(runs[0].load(Ordering::SeqCst), 1);
        assert_eq!(runs[1].load(Ordering::SeqCst), 1);
        assert_eq!(pool.queue_len(), 0);
        finish(&pool);
        if cancelled {
            assert_eq!(last.join(), Err(TaskError::Cancelled));
        } else {
            assert_eq!(last.join(), Ok(2));
        }
    });
}

/// `shutdown_now` while the one worker runs the first of three due tasks,
/// having moved the other two to the ready batch: they had not started, so
/// they are handed back, not run and not cancelled.
#[test]
fn shutdown_now_hands_back_the_ready_batch() {
    loom::model(|| {
        let (pool, clock) = manual_workers(1);
        // The first task waits in its run until shutdown_now has returned.
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        let first = {
            let gate = gate.clone();
            pool.schedule(
                move || {
                    let (open, cv) = &*gate;
                    let mut open = open.lock().unwrap();
                    while !*open {
                        open = cv.wait(open).unwrap();
                    }
                },
                Duration::from_secs(1),
            )
            .unwrap()
        };
        let later: Vec<_> = (0..2)
            .map(|i| pool.schedule(move || i, Duration::from_secs(1)).unwrap())
            .collect();
        clock.advance(Duration::from_secs(1));
        let pending = pool.shutdown_now();
        *gate.0.lock().unwrap() = true;
        gate.1.notify_all();
        let ids: Vec<u64> = pending.iter().map(|p| p.id()).collect();
        let later_ids: Vec<u64> = later.iter().map(|h| h.id()).collect();
        drop(pending);
        assert!(pool.await_termination(FOREVER));
        // Whether or not the worker had taken the first task, the two behind
        // it had not started: they come back, in order, after the first if
        // it was not taken.
        let first_id = first.id();
        if first.join().is_ok() {
            assert_eq!(ids, later_ids);
        } else {
            assert_eq!(ids[0], first_id);
            assert_eq!(ids[1..], later_ids[..]);
        }
        for h in later {
            assert_eq!(h.join(), Err(TaskError::Cancelled));
        }
    });
}
