//! Memory and CPU: cancelled tasks drop their closures at once and are
//! freed by the next holder of the pool lock (the workers' own bound is
//! `tests/cancel_reclaim.rs`'s); an idle pool
//! (and a blocked delay-queue taker) costs no measurable CPU.
//!
//! The allocator (`common/live_bytes.rs`) counts live heap bytes for the whole test binary, so
//! the tests here run one at a time (`SERIAL`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use schedpool::{DelayItem, DelayQueue, ScheduledThreadPool};

#[path = "common/live_bytes.rs"]
mod live_bytes;
use live_bytes::live;

#[global_allocator]
static ALLOC: live_bytes::Counting = live_bytes::Counting;

static SERIAL: Mutex<()> = Mutex::new(());

const MIB: isize = 1 << 20;

/// Counts drops of the values a closure captures.
struct DropCounter(Arc<AtomicUsize>);
impl Drop for DropCounter {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn cancelling_a_million_pending_tasks_drops_their_closures_at_once_and_frees_them() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    const N: usize = 1_000_000;
    let pool = ScheduledThreadPool::new(1);
    // Warm up: start the worker, register tracing callsites, run a cancel.
    pool.submit(|| ()).unwrap().join().unwrap();
    assert!(pool
        .schedule(|| (), Duration::from_secs(3600))
        .unwrap()
        .cancel());
    let drops = Arc::new(AtomicUsize::new(0));
    let baseline = live();
    let mut handles = Vec::with_capacity(N);

    for _ in 0..N {
        let guard = DropCounter(drops.clone());
        handles.push(
            pool.schedule(move || drop(guard), Duration::from_secs(3600))
                .unwrap(),
        );
    }
    assert_eq!(pool.queue_len(), N);
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    let peak = live() - baseline;
    assert!(
        peak > 40 * MIB,
        "1M tasks should take real memory, saw {peak} bytes"
    );

    for (i, h) in handles.iter().enumerate() {
        assert!(h.cancel());
        // The closure (and what it captured) is gone when cancel returns.
        assert_eq!(
            drops.load(Ordering::SeqCst),
            i + 1,
            "closure {i} not dropped by cancel"
        );
    }
    assert_eq!(pool.queue_len(), 0);
    drop(handles);
    let after = live() - baseline;
    eprintln!(
        "peak {} MiB, after cancel + drop {} KiB",
        peak / MIB,
        after / 1024
    );
    assert!(
        after.abs() < 4 * MIB,
        "live heap {after} bytes off the baseline after cancelling everything"
    );
    assert!(pool.shutdown().await_termination(Duration::from_secs(20)));
}

#[test]
fn shutdown_now_of_a_million_pending_tasks_frees_them() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    const N: usize = 1_000_000;
    let drops = Arc::new(AtomicUsize::new(0));
    let pool = ScheduledThreadPool::new(1);
    pool.submit(|| ()).unwrap().join().unwrap();
    let baseline = live();
    for _ in 0..N {
        let guard = DropCounter(drops.clone());
        // Handles dropped at once: they do not keep tasks alive.
        pool.schedule(move || drop(guard), Duration::from_secs(3600))
            .unwrap()
            .detach();
    }
    let pending = pool.shutdown_now();
    assert_eq!(pending.len(), N);
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    drop(pending);
    assert_eq!(drops.load(Ordering::SeqCst), N);
    assert!(pool.await_termination(Duration::from_secs(20)));
    let after = live() - baseline;
    assert!(
        after < 4 * MIB,
        "live heap {after} bytes above the baseline"
    );
}

/// The same for the delay queue: a queue that once held a million
/// elements, all removed by key, gives its memory back.
#[test]
fn removing_a_million_queue_elements_frees_them() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    const N: usize = 1_000_000;
    let q = DelayQueue::new();
    q.put(DelayItem::new(0u64, Duration::ZERO));
    assert!(q.poll().is_some());
    let baseline = live();
    let keys: Vec<_> = (0..N as u64)
        .map(|i| q.put(DelayItem::new(i, Duration::from_secs(3600))))
        .collect();
    let peak = live() - baseline;
    for (i, k) in keys.iter().enumerate() {
        assert_eq!(q.remove(*k).map(DelayItem::into_inner), Some(i as u64));
    }
    drop(keys);
    assert!(q.is_empty());
    let after = live() - baseline;
    eprintln!(
        "delay queue: peak {} MiB, after removing everything {} KiB",
        peak / MIB,
        after / 1024
    );
    assert!(
        after.abs() < 4 * MIB,
        "an empty DelayQueue still holds {after} bytes after 1M put/remove"
    );
}

/// Queues and pools made on one manual clock and dropped again must not
/// pile up: the clock's listener list holds `Weak`s, which keep each dropped
/// queue's allocation alive until the next `advance` prunes them.
#[test]
fn dropped_queues_on_a_manual_clock_are_freed() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let clock = schedpool::ManualClock::new();
    drop(DelayQueue::<DelayItem<u8>>::with_clock(clock.clone()));
    let baseline = live();
    for _ in 0..100_000 {
        drop(DelayQueue::<DelayItem<u8>>::with_clock(clock.clone()));
    }
    let after = live() - baseline;
    eprintln!(
        "100k queues made and dropped on one clock: {} KiB retained",
        after / 1024
    );
    assert!(after < 4 * MIB, "{after} bytes retained by dropped queues");
    clock.advance(Duration::from_secs(1)); // prunes today
    assert!((live() - baseline) < 4 * MIB);
}

/// CPU time of the whole process (user + system), from /proc/self/stat,
/// in clock ticks of 10 ms (USER_HZ is 100 on Linux).
fn cpu_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    // The command name may contain spaces: fields after the last ')'.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 here.
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// CPU time of every live thread, in nanoseconds (/proc/self/task/*/schedstat).
fn cpu_nanos() -> u64 {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

#[test]
fn an_idle_pool_and_a_blocked_taker_use_no_cpu() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let pool = ScheduledThreadPool::new(4);
    // Start all four workers, then leave only far-future work.
    let hs: Vec<_> = (0..4)
        .map(|_| {
            pool.submit(|| std::thread::sleep(Duration::from_millis(20)))
                .unwrap()
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    let far: Vec<_> = (0..1000)
        .map(|i| {
            pool.schedule(move || i, Duration::from_secs(3600 + i))
                .unwrap()
        })
        .collect();
    let periodic = pool
        .schedule_at_fixed_rate(|| (), Duration::from_secs(3600), Duration::from_secs(3600))
        .unwrap();
    assert_eq!(pool.pool_size(), 4);
    // A core-0 pool keeps one worker while anything is queued; a pool on a
    // manual clock waits untimed.
    let core0 = ScheduledThreadPool::new(0);
    let far0 = core0.schedule(|| (), Duration::from_secs(3600)).unwrap();
    let manual = ScheduledThreadPool::builder()
        .core_threads(2)
        .clock(schedpool::ManualClock::new())
        .build()
        .unwrap();
    let far_manual = manual.schedule(|| (), Duration::from_secs(1)).unwrap();

    // A delay queue with a blocked taker on a far head, and a timed poller.
    let q = Arc::new(DelayQueue::new());
    q.put(DelayItem::new(1u32, Duration::from_secs(3600)));
    let taker = {
        let q = q.clone();
        std::thread::spawn(move || q.take())
    };
    let poller = {
        let q = q.clone();
        std::thread::spawn(move || q.poll_timeout(Duration::from_secs(4)))
    };
    std::thread::sleep(Duration::from_millis(100)); // let everyone settle

    let (ticks0, nanos0, t0) = (cpu_ticks(), cpu_nanos(), Instant::now());
    std::thread::sleep(Duration::from_secs(2));
    let (ticks1, nanos1, wall) = (cpu_ticks(), cpu_nanos(), t0.elapsed());
    let used_ms = (ticks1 - ticks0) * 10;
    let used_ns = nanos1.saturating_sub(nanos0);
    eprintln!(
        "idle for {wall:?}: {used_ms} ms by /proc/self/stat, {} us by schedstat",
        used_ns / 1000
    );
    assert!(used_ms < 50, "idle process used {used_ms} ms of CPU in 2 s");
    assert!(
        used_ns < 50_000_000,
        "idle threads used {used_ns} ns of CPU in 2 s"
    );
    assert!(far.iter().all(|h| !h.is_done()));

    q.close();
    assert!(taker.join().unwrap().is_none());
    assert!(poller.join().unwrap().is_none());
    assert!(periodic.cancel());
    assert_eq!(core0.pool_size(), 1);
    assert!(!far0.is_done() && !far_manual.is_done());
    for p in [&core0, &manual] {
        drop(p.shutdown_now());
        assert!(p.await_termination(Duration::from_secs(20)));
    }
    drop(pool.shutdown_now());
    assert!(pool.await_termination(Duration::from_secs(20)));
}

/// An idle worker spins briefly (`Builder::idle_spin`, 20 µs by default)
/// before it sleeps, once each time the queue runs dry. Sparse work must
/// therefore cost about that much CPU per task, and an empty pool nothing:
/// a spin that never ended would burn a whole core here.
#[test]
fn an_empty_pool_spins_only_briefly() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let pool = ScheduledThreadPool::new(2);
    pool.submit(|| ()).unwrap().join().unwrap();
    std::thread::sleep(Duration::from_millis(50));

    // 100 tasks, 10 ms apart: the queue runs dry after each one.
    let (nanos0, t0) = (cpu_nanos(), Instant::now());
    for i in 0..100u32 {
        assert_eq!(pool.submit(move || i).unwrap().join().unwrap(), i);
        std::thread::sleep(Duration::from_millis(10));
    }
    let sparse_ns = cpu_nanos().saturating_sub(nanos0);
    let sparse_wall = t0.elapsed();

    // Then nothing at all for a second.
    let nanos1 = cpu_nanos();
    std::thread::sleep(Duration::from_secs(1));
    let empty_ns = cpu_nanos().saturating_sub(nanos1);
    eprintln!(
        "100 sparse tasks over {sparse_wall:?}: {} us of CPU; empty for 1 s: {} us",
        sparse_ns / 1000,
        empty_ns / 1000
    );
    // Generous bounds (a shared 2-core machine); an endless spin would use
    // about 1 s of CPU per second of wall time.
    assert!(
        sparse_ns < 250_000_000,
        "sparse tasks used {sparse_ns} ns of CPU"
    );
    assert!(
        empty_ns < 50_000_000,
        "an empty pool used {empty_ns} ns of CPU in 1 s"
    );
}
