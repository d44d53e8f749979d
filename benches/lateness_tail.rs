//! Where W4's lateness tail comes from: 10,000 tasks with delays uniform in
//! [0, 1 s) on 1 and on 2 worker threads, schedpool against the
//! `scheduled-thread-pool` crate; then the same deadlines as items of a
//! `DelayQueue` taken by 1 and 2 consumer threads (lateness = when `take`
//! returned − deadline). The main thread only sleeps while they run.
//!
//! `cargo bench --bench lateness_tail` (about 20 s)

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const N: usize = 10_000;

/// xorshift64: the same delays for both pools.
fn delays() -> Vec<Duration> {
    let mut x = 88_172_645_463_325_252u64;
    (0..N)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            Duration::from_nanos(x % 1_000_000_000)
        })
        .collect()
}

type Samples = Arc<Mutex<Vec<u64>>>;

/// A task that records its lateness in microseconds.
fn recorder(samples: &Samples, due: Instant) -> impl FnOnce() + Send + 'static {
    let samples = samples.clone();
    move || {
        let late = Instant::now().saturating_duration_since(due).as_micros() as u64;
        samples.lock().unwrap().push(late);
    }
}

fn wait_all(samples: &Samples) -> Vec<u64> {
    while samples.lock().unwrap().len() < N {
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut v = samples.lock().unwrap().clone();
    v.sort_unstable();
    v
}

fn report(name: &str, threads: usize, v: &[u64]) {
    println!(
        "{name:<22} {threads} thread(s)   p50 {:>5} µs   p99 {:>5} µs   p99.9 {:>5} µs   max {:>5} µs",
        v[N / 2],
        v[N * 99 / 100],
        v[N * 999 / 1000],
        v[N - 1]
    );
}

fn main() {
    let delays = delays();
    for threads in [1, 2] {
        let pool = schedpool::ScheduledThreadPool::new(threads);
        let samples: Samples = Arc::default();
        for &d in &delays {
            let due = Instant::now() + d;
            pool.schedule(recorder(&samples, due), d).unwrap().detach();
        }
        report("schedpool", threads, &wait_all(&samples));
        pool.shutdown_now();

        let stp = scheduled_thread_pool::ScheduledThreadPool::new(threads);
        let samples: Samples = Arc::default();
        for &d in &delays {
            let due = Instant::now() + d;
            stp.execute_after(d, recorder(&samples, due));
        }
        report("scheduled-thread-pool", threads, &wait_all(&samples));
    }
    for takers in [1, 2] {
        report("DelayQueue takers", takers, &delay_queue(&delays, takers));
    }
}

/// The deadlines as `DelayQueue` items, taken by `takers` threads; the
/// sorted lateness of each `take` in microseconds.
fn delay_queue(delays: &[Duration], takers: usize) -> Vec<u64> {
    use schedpool::{DelayItem, DelayQueue, Delayed};
    let queue: Arc<DelayQueue<DelayItem<()>>> = Arc::new(DelayQueue::new());
    let threads: Vec<_> = (0..takers)
        .map(|_| {
            let queue = queue.clone();
            std::thread::spawn(move || {
                let mut late = Vec::with_capacity(N);
                while let Some(item) = queue.take() {
                    let now = Instant::now();
                    late.push(now.saturating_duration_since(item.deadline()).as_micros() as u64);
                }
                late
            })
        })
        .collect();
    let start = Instant::now();
    for &d in delays {
        queue.put(DelayItem::at((), start + d));
    }
    while !queue.is_empty() {
        std::thread::sleep(Duration::from_millis(10));
    }
    queue.close(); // the takers return once it is empty
    let mut v: Vec<u64> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    assert_eq!(v.len(), N);
    v.sort_unstable();
    v
}
