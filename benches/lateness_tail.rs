//! Where W4's lateness tail comes from: 10,000 tasks with delays uniform in
//! [0, 1 s) on 1 and on 2 worker threads, schedpool against the
//! `scheduled-thread-pool` crate. The main thread only sleeps while they run.
//!
//! `cargo bench --bench lateness_tail` (about 15 s)

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
            pool.schedule(recorder(&samples, due), d).unwrap();
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
}
