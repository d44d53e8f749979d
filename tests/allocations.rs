//! Allocations on the schedule/run path: one per task (the task itself),
//! and none from tracing when no subscriber is installed (API.md,
//! "Observability": the cost is a branch, not an allocation).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use schedpool::ScheduledThreadPool;

struct Counting;
static ALLOCS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards every call to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract, which we pass on.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout (see `alloc`).
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn one_allocation_per_task_and_none_from_tracing_without_a_subscriber() {
    const N: u64 = 20_000;
    let pool = ScheduledThreadPool::new(2);
    let done = Arc::new(AtomicUsize::new(0));
    // Warm up: start the workers, grow the queue's buffers (the lane's,
    // and the wheel's slots and run: the same delays as measured below).
    for i in 0..N {
        let d = done.clone();
        pool.schedule(
            move || {
                d.fetch_add(1, Ordering::Relaxed);
            },
            Duration::from_micros(i % 3 * 50),
        )
        .unwrap()
        .detach();
    }
    while done.load(Ordering::Relaxed) < N as usize {
        std::thread::yield_now();
    }
    done.store(0, Ordering::Relaxed);
    let before = ALLOCS.load(Ordering::Relaxed);
    for i in 0..N {
        let d = done.clone();
        // Delayed and zero-delay tasks: both queues, both run paths.
        let delay = Duration::from_micros(i % 3 * 50);
        pool.schedule(
            move || {
                d.fetch_add(1, Ordering::Relaxed);
            },
            delay,
        )
        .unwrap()
        .detach();
    }
    while done.load(Ordering::Relaxed) < N as usize {
        std::thread::yield_now();
    }
    let per_task = (ALLOCS.load(Ordering::Relaxed) - before) as f64 / N as f64;
    eprintln!("allocations per schedule + run: {per_task:.3}");
    // The task (one Arc) and nothing else: no span, event or RunInfo
    // allocates without a subscriber. A little slack for buffers that grow.
    assert!(per_task < 1.05, "{per_task} allocations per task");
    assert!(pool.shutdown().await_termination(Duration::from_secs(10)));
}
