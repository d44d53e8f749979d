//! Handles as futures: awaited without a runtime dependency in the library.

mod common;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use common::PoolGuard;
use schedpool::{ScheduledThreadPool, TaskError};

/// A minimal executor: parks the thread until woken, counting wake-ups.
struct ThreadWaker {
    woken: Mutex<bool>,
    cv: Condvar,
    wakes: AtomicUsize,
}

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.wakes.fetch_add(1, Ordering::SeqCst);
        *self.woken.lock().unwrap() = true;
        self.cv.notify_one();
    }
}

fn block_on<F: Future>(fut: F) -> (F::Output, usize) {
    let tw = Arc::new(ThreadWaker {
        woken: Mutex::new(false),
        cv: Condvar::new(),
        wakes: AtomicUsize::new(0),
    });
    let waker = Waker::from(tw.clone());
    let mut cx = Context::from_waker(&waker);
    let mut fut = Box::pin(fut);
    loop {
        if let Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
            return (out, tw.wakes.load(Ordering::SeqCst));
        }
        let mut woken = tw.woken.lock().unwrap();
        while !*woken {
            let (w, timeout) = tw.cv.wait_timeout(woken, common::EVENTUALLY).unwrap();
            assert!(!timeout.timed_out(), "the future was never woken");
            woken = w;
        }
        *woken = false;
    }
}

#[test]
fn await_a_value() {
    let pool = PoolGuard(ScheduledThreadPool::new(1));
    // Far enough out that the first poll comes first on a loaded machine.
    let h = pool.schedule(|| 42, Duration::from_millis(200)).unwrap();
    let (out, wakes) = block_on(h);
    assert_eq!(out, Ok(42));
    assert_eq!(wakes, 1, "woken once, on completion");
}

#[test]
fn await_a_cancelled_task_and_a_panic() {
    let pool = PoolGuard(ScheduledThreadPool::new(1));
    let h = pool.schedule(|| 1, Duration::from_secs(3600)).unwrap();
    let h2 = pool.schedule(|| 2, Duration::from_secs(3600)).unwrap();
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(20));
        assert!(h2.cancel());
    });
    assert!(h.cancel());
    assert_eq!(block_on(h).0, Err(TaskError::Cancelled));
    canceller.join().unwrap();
    let p = pool.submit(|| -> u8 { panic!("async boom") }).unwrap();
    assert_eq!(block_on(p).0, Err(TaskError::Panicked("async boom".into())));
}

#[test]
fn await_a_task_dropped_by_shutdown_now() {
    let pool = ScheduledThreadPool::new(1);
    let h = pool.schedule(|| 1, Duration::from_secs(3600)).unwrap();
    let waiter = std::thread::spawn(move || block_on(h).0);
    std::thread::sleep(Duration::from_millis(20));
    drop(pool.shutdown_now());
    assert_eq!(waiter.join().unwrap(), Err(TaskError::Cancelled));
}

#[test]
fn the_latest_waker_is_the_one_woken() {
    struct Flag(AtomicUsize);
    impl Wake for Flag {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let pool = PoolGuard(ScheduledThreadPool::new(1));
    let gate = common::Gate::new();
    let g = gate.clone();
    let mut h = pool.submit(move || g.wait()).unwrap();
    let (a, b) = (
        Arc::new(Flag(AtomicUsize::new(0))),
        Arc::new(Flag(AtomicUsize::new(0))),
    );
    let (wa, wb) = (Waker::from(a.clone()), Waker::from(b.clone()));
    assert!(Pin::new(&mut h)
        .poll(&mut Context::from_waker(&wa))
        .is_pending());
    assert!(Pin::new(&mut h)
        .poll(&mut Context::from_waker(&wb))
        .is_pending());
    gate.open();
    assert!(h.wait_timeout(common::EVENTUALLY));
    // The waker is woken just after the result is published (outside the
    // result's lock), so wait for it rather than race it.
    common::eventually("the latest waker is woken", || {
        b.0.load(Ordering::SeqCst) == 1
    });
    assert_eq!(
        a.0.load(Ordering::SeqCst),
        0,
        "the replaced waker is never woken"
    );
    assert_eq!(
        Pin::new(&mut h).poll(&mut Context::from_waker(&wb)),
        Poll::Ready(Ok(()))
    );
}

#[test]
fn handles_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<schedpool::ScheduledHandle<String>>();
    assert_send_sync::<ScheduledThreadPool>();
    assert_send_sync::<schedpool::DelayQueue<schedpool::DelayItem<String>>>();
    assert_send_sync::<schedpool::PendingTask>();
}

#[test]
fn the_terminated_future_completes_when_the_pool_terminates() {
    let pool = ScheduledThreadPool::new(1);
    let gate = common::Gate::new();
    let g = gate.clone();
    pool.submit(move || g.wait()).unwrap().detach();
    let waiter = {
        let terminated = pool.terminated();
        std::thread::spawn(move || block_on(terminated))
    };
    std::thread::sleep(Duration::from_millis(20));
    assert!(!waiter.is_finished(), "not terminated: not even shut down");
    pool.shutdown();
    std::thread::sleep(Duration::from_millis(20));
    assert!(
        !waiter.is_finished(),
        "shut down, but a task still runs: not terminated"
    );
    gate.open();
    let ((), wakes) = waiter.join().unwrap();
    assert!(pool.is_terminated());
    assert_eq!(wakes, 1, "woken once, by the termination");
    // Already terminated: ready at the first poll, without a wake-up.
    assert_eq!(block_on(pool.terminated()), ((), 0));
}
