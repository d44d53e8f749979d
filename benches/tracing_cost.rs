//! What tracing costs on the schedule/run path: allocations and time per
//! task with no subscriber, and with a (global) subscriber that records the
//! `task` span.
//!
//! `cargo bench --bench tracing_cost`

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use schedpool::ScheduledThreadPool;
use tracing_subscriber::layer::SubscriberExt;

struct Counting;
static ALLOCS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards every call to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Schedules and runs `n` zero-delay no-op tasks; returns (ns per task, allocations per task).
fn measure(n: u64) -> (f64, f64) {
    let pool = ScheduledThreadPool::new(2);
    let done = Arc::new(AtomicUsize::new(0));
    let run = |count: u64| {
        done.store(0, Ordering::Relaxed);
        for _ in 0..count {
            let d = done.clone();
            pool.execute(move || {
                d.fetch_add(1, Ordering::Relaxed);
            })
            .unwrap();
        }
        while done.load(Ordering::Relaxed) < count as usize {
            std::thread::yield_now();
        }
    };
    run(n / 10); // warm up
    let allocs = ALLOCS.load(Ordering::Relaxed);
    let start = Instant::now();
    run(n);
    let ns = start.elapsed().as_nanos() as f64 / n as f64;
    let per = (ALLOCS.load(Ordering::Relaxed) - allocs) as f64 / n as f64;
    pool.shutdown().await_termination(Duration::from_secs(10));
    (ns, per)
}

fn main() {
    let n = if std::env::var_os("SCHEDPOOL_BENCH_QUICK").is_some() {
        20_000
    } else {
        500_000
    };
    println!("tracing cost per zero-delay task (schedule + run), {n} tasks, 2 workers");
    let (ns, a) = measure(n);
    println!("  no subscriber                    {ns:>8.1} ns   {a:.3} allocations");
    let _ = tracing::subscriber::set_global_default(
        tracing_subscriber::registry()
            .with(tracing_subscriber::fmt::layer().with_writer(std::io::sink)),
    );
    let (ns, a) = measure(n);
    println!("  subscriber recording the span    {ns:>8.1} ns   {a:.3} allocations");
}
