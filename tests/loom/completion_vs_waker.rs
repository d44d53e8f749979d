//! A handle's completion (by a run or a cancel) racing its waker
//! registration, a blocked `join` and `wait_timeout` (the waited mark).

use super::*;

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
