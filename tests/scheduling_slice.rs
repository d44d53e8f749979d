//! The workers' scheduling slice (`Builder::sched_slice`; Linux 6.12+): a
//! worker keeps the OS's slice until its pool's timers fire late on a host
//! whose CPUs are taken (a loaded spell), then runs with the configured
//! short one; `None` never changes it. Read back from the kernel
//! (`/proc/thread-self/sched`, `se.slice`) by a task on the worker. On
//! other systems, and on kernels without EEVDF's custom slices, the tests
//! check only that the pool runs.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use schedpool::ScheduledThreadPool;

/// The calling thread's slice in nanoseconds, as the kernel reports it
/// (`None` where it does not).
fn slice_here() -> Option<u64> {
    let sched = std::fs::read_to_string("/proc/thread-self/sched").ok()?;
    let line = sched.lines().find(|l| l.starts_with("se.slice"))?;
    line.split(':').nth(1)?.trim().parse().ok()
}

/// True if the kernel honours a fair thread's custom slice (6.12+).
fn custom_slices() -> bool {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mut parts = release.trim().split(|c: char| !c.is_ascii_digit());
    let major: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let minor: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    cfg!(target_os = "linux") && (major, minor) >= (6, 12)
}

/// The slice of a fresh thread: the OS's default for this process.
fn default_slice() -> Option<u64> {
    std::thread::spawn(slice_here).join().unwrap()
}

/// Busy threads, more than there are CPUs, until dropped: a host whose
/// CPUs are taken.
struct Load(Arc<AtomicBool>, Vec<std::thread::JoinHandle<()>>);

impl Load {
    fn start() -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let n = std::thread::available_parallelism().map_or(2, |n| n.get()) + 2;
        let threads = (0..n)
            .map(|_| {
                let stop = Arc::clone(&stop);
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        std::hint::spin_loop();
                    }
                })
            })
            .collect();
        Load(stop, threads)
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
        for t in self.1.drain(..) {
            let _ = t.join();
        }
    }
}

/// Under load, runs timed tasks (each 1 ms after the last) on `pool` until
/// one reads `wanted` as its worker's slice or `limit` passes; returns what
/// the last one read.
fn slice_under_load(
    pool: &ScheduledThreadPool,
    wanted: Option<u64>,
    limit: Duration,
) -> Option<u64> {
    let _load = Load::start();
    let start = Instant::now();
    loop {
        let read = pool
            .schedule(slice_here, Duration::from_millis(1))
            .unwrap()
            .join()
            .unwrap();
        if read == wanted || start.elapsed() > limit {
            return read;
        }
    }
}

#[test]
fn a_worker_keeps_the_os_slice_while_its_timers_are_on_time() {
    let pool = ScheduledThreadPool::new(2);
    let slice = pool.submit(slice_here).unwrap().join().unwrap();
    if custom_slices() {
        assert_eq!(slice, default_slice());
    }
}

#[test]
fn on_a_loaded_host_workers_take_a_tenth_of_a_millisecond_slice() {
    let pool = ScheduledThreadPool::new(2);
    let slice = slice_under_load(&pool, Some(100_000), Duration::from_secs(20));
    if custom_slices() {
        assert_eq!(slice, Some(100_000), "the OS's: {:?}", default_slice());
    }
}

#[test]
fn a_configured_slice_is_clamped_to_what_linux_accepts() {
    let pool = ScheduledThreadPool::builder()
        .sched_slice(Some(Duration::from_micros(10)))
        .build()
        .unwrap();
    let slice = slice_under_load(&pool, Some(100_000), Duration::from_secs(20));
    if custom_slices() {
        assert_eq!(slice, Some(100_000));
    }
}

#[test]
fn none_keeps_the_os_slice_even_under_load() {
    let pool = ScheduledThreadPool::builder()
        .sched_slice(None)
        .build()
        .unwrap();
    // Long enough for a spell to start (the tests above see one within a
    // few hundred milliseconds): the slice must not move.
    let slice = slice_under_load(&pool, Some(100_000), Duration::from_secs(2));
    if custom_slices() {
        assert_eq!(slice, default_slice());
    }
}
