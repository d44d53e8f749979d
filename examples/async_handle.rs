//! Awaiting handles from async code, with no async runtime anywhere.
//!
//! `ScheduledHandle<T>` implements `Future<Output = Result<T, TaskError>>`.
//! The pool wakes the task's waker when the task completes, so any executor
//! works; schedpool itself depends on none. To make the point, this example
//! brings its own: a 15-line `block_on` built from `std::task::Wake` and
//! thread park/unpark, and a small `join_all`.
//!
//! Run: `cargo run --release --example async_handle`

use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use schedpool::{ScheduledHandle, ScheduledThreadPool, TaskError};

// ===== a minimal executor =====

/// Wakes the thread blocked in `block_on`, and counts the wake-ups.
struct ThreadWaker {
    thread: Thread,
    wakes: AtomicUsize,
}

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.wakes.fetch_add(1, Ordering::Relaxed);
        self.thread.unpark();
    }
}

/// Runs `fut` to completion on this thread; returns its output and the
/// number of polls it took.
fn block_on<F: Future>(fut: F) -> (F::Output, usize) {
    let mut fut = pin!(fut);
    let waker = Arc::new(ThreadWaker {
        thread: thread::current(),
        wakes: AtomicUsize::new(0),
    });
    let cx_waker = Waker::from(waker.clone());
    let mut cx = Context::from_waker(&cx_waker);
    let mut polls = 0;
    loop {
        polls += 1;
        if let Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
            return (out, polls);
        }
        // Sleeps until a handle's task completes and calls wake (a spurious
        // unpark just means one more poll).
        thread::park();
    }
}

/// Awaits every future at once; outputs in input order.
struct JoinAll<F: Future> {
    futures: Vec<Option<Pin<Box<F>>>>,
    outputs: Vec<Option<F::Output>>,
}

fn join_all<F: Future>(futures: impl IntoIterator<Item = F>) -> JoinAll<F> {
    let futures: Vec<_> = futures.into_iter().map(|f| Some(Box::pin(f))).collect();
    let outputs = futures.iter().map(|_| None).collect();
    JoinAll { futures, outputs }
}

impl<F: Future> Future for JoinAll<F>
where
    F::Output: Unpin,
{
    type Output = Vec<F::Output>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        for (slot, out) in this.futures.iter_mut().zip(&mut this.outputs) {
            if let Some(f) = slot {
                if let Poll::Ready(v) = f.as_mut().poll(cx) {
                    *out = Some(v);
                    *slot = None; // a completed future is never polled again
                }
            }
        }
        if this.futures.iter().all(Option::is_none) {
            Poll::Ready(this.outputs.iter_mut().map(|o| o.take().unwrap()).collect())
        } else {
            Poll::Pending
        }
    }
}

// ===== async code using the pool =====

/// An async "sleep" on the pool's timer: a task that does nothing, awaited.
async fn sleep(pool: &ScheduledThreadPool, d: Duration) {
    pool.schedule(|| (), d).unwrap().await.unwrap();
}

/// Retries a flaky lookup, waiting a little longer after each failure.
async fn lookup_with_retry(pool: &ScheduledThreadPool, attempts_needed: u32) -> (u32, Duration) {
    let started = Instant::now();
    let mut wait = Duration::from_millis(5);
    for attempt in 1.. {
        let ok = pool
            .submit(move || attempt >= attempts_needed)
            .unwrap()
            .await
            .unwrap();
        if ok {
            return (attempt, started.elapsed());
        }
        sleep(pool, wait).await;
        wait *= 2;
    }
    unreachable!()
}

fn main() {
    let start = Instant::now();
    let pool = ScheduledThreadPool::new(2);
    // Section 2 panics on purpose and the pool reports it through the handle:
    // keep std's panic message off the console for the pool's threads.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !thread::current()
            .name()
            .is_some_and(|n| n.starts_with("schedpool-"))
        {
            default_hook(info);
        }
    }));

    // 1. Await five delayed "fetches" at once.
    let delays = [80u64, 20, 60, 40, 100];
    let handles: Vec<ScheduledHandle<String>> = delays
        .iter()
        .map(|&ms| {
            pool.schedule(
                move || format!("reply after {ms} ms"),
                Duration::from_millis(ms),
            )
            .unwrap()
        })
        .collect();
    let t = Instant::now();
    let (results, polls) = block_on(join_all(handles));
    let together = t.elapsed();
    println!("1. join_all over {} handles:", delays.len());
    for r in &results {
        println!("     {r:?}");
    }
    println!(
        "   done in {:.0} ms (the longest delay), {polls} polls: the thread slept in park() between completions",
        together.as_secs_f64() * 1e3
    );

    // 2. A cancelled handle and a panicked one resolve to errors.
    let ok = pool.schedule(|| 7, Duration::from_millis(10)).unwrap();
    let cancelled = pool.schedule(|| 8, Duration::from_secs(3600)).unwrap();
    let panicked = pool
        .schedule(
            || -> i32 { panic!("backend exploded") },
            Duration::from_millis(5),
        )
        .unwrap();
    assert!(cancelled.cancel());
    let (mixed, _) = block_on(join_all([ok, cancelled, panicked]));
    println!("2. results: {mixed:?}");

    // 3. Sequential async logic: awaits in a loop, timers on the pool.
    let ((attempt, took), polls3) = block_on(lookup_with_retry(&pool, 4));
    println!(
        "3. retry loop succeeded on attempt {attempt} after {:.0} ms (waits 5+10+20 ms), {polls3} polls",
        took.as_secs_f64() * 1e3
    );

    assert!(pool.shutdown().await_termination(Duration::from_secs(5)));
    println!("   wall time {:.2} s", start.elapsed().as_secs_f64());

    // Checks.
    let expected: Vec<Result<String, TaskError>> = delays
        .iter()
        .map(|ms| Ok(format!("reply after {ms} ms")))
        .collect();
    assert_eq!(results, expected, "outputs in input order");
    assert!(together >= Duration::from_millis(100), "never early");
    // One poll to start, at most one per completion (plus rare spurious unparks).
    assert!(
        polls <= 1 + delays.len() + 2,
        "no busy polling: {polls} polls"
    );
    assert_eq!(mixed[0], Ok(7));
    assert_eq!(mixed[1], Err(TaskError::Cancelled));
    assert_eq!(
        mixed[2],
        Err(TaskError::Panicked("backend exploded".into()))
    );
    assert_eq!(attempt, 4);
    assert!(took >= Duration::from_millis(35));
    println!("ok");
}
