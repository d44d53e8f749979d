//! A thread that meets a lock held never gives its core away with
//! `sched_yield`: it spins briefly and then sleeps until the unlock.
//!
//! Why it matters: on a host whose cores are taken by other processes, a
//! yield hands the core to one of them until the next scheduler tick
//! (Linux's EEVDF moves the yielder's deadline a whole slice back), so a
//! caller that met the pool lock held lost milliseconds. parking_lot's
//! mutex yields up to seven times before it parks; that was most of a
//! timeout's cost to its caller on a busy host (W9L, 2.7 µs a pair).
//!
//! How it is checked: a seccomp filter on the test's thread, inherited by
//! every thread it starts (the pool's workers and the producers), turns
//! `sched_yield` into a `SIGSYS` whose handler counts it. Producers and
//! workers then fight over the pool's lock and a `DelayQueue`'s lock for a
//! while, and the count must stay zero. With parking_lot's mutex in
//! `base::sync` this counted thousands.

#![cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use schedpool::{DelayItem, DelayQueue, ScheduledThreadPool};

#[path = "common/seccomp.rs"]
mod seccomp;

const SIGSYS: i32 = 31;
#[cfg(target_arch = "x86_64")]
const SYS_SCHED_YIELD: u32 = 24;
#[cfg(target_arch = "aarch64")]
const SYS_SCHED_YIELD: u32 = 124;

extern "C" {
    fn signal(signum: i32, handler: extern "C" fn(i32)) -> usize;
}

/// `sched_yield` calls trapped so far.
static YIELDS: AtomicUsize = AtomicUsize::new(0);

extern "C" fn count_yield(_signal: i32) {
    YIELDS.fetch_add(1, Ordering::Relaxed);
}

/// Turns every `sched_yield` of the calling thread, and of the threads it
/// starts from now on, into a counted `SIGSYS` (the call itself is
/// skipped, which no caller can tell from a yield that found nobody to
/// run).
fn count_yields_from_this_thread_on() {
    // SAFETY: `count_yield` only touches an atomic, which is
    // async-signal-safe; `signal` takes a plain function pointer.
    let old = unsafe { signal(SIGSYS, count_yield) };
    assert_ne!(old, usize::MAX, "signal: {}", io::Error::last_os_error());
    seccomp::answer_on_this_thread(&[SYS_SCHED_YIELD], seccomp::SECCOMP_RET_TRAP);
}

#[test]
fn threads_that_meet_a_held_lock_never_yield_their_core() {
    count_yields_from_this_thread_on();
    // The filter works: a yield from here is counted.
    std::thread::yield_now();
    assert_eq!(
        YIELDS.load(Ordering::Relaxed),
        1,
        "the filter counts yields"
    );
    YIELDS.store(0, Ordering::Relaxed);

    // Four producers against two workers on the pool's lock (timeouts
    // scheduled and cancelled, a few left to fire), and two takers
    // against two putters on a DelayQueue's lock.
    let pool = ScheduledThreadPool::new(2);
    let queue = Arc::new(DelayQueue::new());
    let stop = Arc::new(AtomicBool::new(false));
    let fired = Arc::new(AtomicU64::new(0));
    let end = Instant::now() + Duration::from_millis(600);
    let mut threads = Vec::new();
    for p in 0..4u64 {
        let (pool, fired) = (pool.clone(), Arc::clone(&fired));
        threads.push(std::thread::spawn(move || {
            let mut ops = 0u64;
            while Instant::now() < end {
                for i in 0..64u64 {
                    let fired = Arc::clone(&fired);
                    let delay = Duration::from_micros((p * 64 + i) % 200);
                    let h = pool
                        .schedule(
                            move || {
                                fired.fetch_add(1, Ordering::Relaxed);
                            },
                            delay,
                        )
                        .expect("the pool takes it");
                    if i % 8 != 0 {
                        h.cancel();
                    }
                    ops += 1;
                }
            }
            ops
        }));
    }
    for p in 0..2u64 {
        let queue = Arc::clone(&queue);
        threads.push(std::thread::spawn(move || {
            let mut ops = 0u64;
            while Instant::now() < end {
                let delay = Duration::from_micros(ops % 50);
                queue.put(DelayItem::new(p, delay));
                ops += 1;
            }
            ops
        }));
    }
    for _ in 0..2 {
        let (queue, stop) = (Arc::clone(&queue), Arc::clone(&stop));
        threads.push(std::thread::spawn(move || {
            let mut ops = 0u64;
            while !stop.load(Ordering::Relaxed) {
                if queue.poll_timeout(Duration::from_millis(5)).is_some() {
                    ops += 1;
                }
            }
            ops
        }));
    }
    let mut ops = 0;
    for t in threads.drain(..6) {
        ops += t.join().expect("a producer");
    }
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().expect("a taker");
    }
    assert!(pool.shutdown().await_termination(Duration::from_secs(20)));
    assert!(ops > 1_000, "the threads contended ({ops} operations)");
    assert!(fired.load(Ordering::Relaxed) > 0, "some timeouts ran");
    assert_eq!(
        YIELDS.load(Ordering::Relaxed),
        0,
        "a thread waiting for a lock called sched_yield"
    );
}
