//! Shared code of the `schedpool` benchmark harness (the "Performance" issue).
//!
//! Included by every bench target with `#[path = "common/mod.rs"] mod common;`.
//! It holds:
//!
//! * [`BenchPool`]: the tiny common surface of the two Rust pools under test
//!   (`schedpool` and the `scheduled-thread-pool` crate), so that every
//!   workload is written once and runs identical tasks on both;
//! * [`Rng`]: a seeded SplitMix64 generator (no dev-dependency needed), so both
//!   pools (and the JDK side, which uses the same generator) see the same
//!   delays and the same cancel order;
//! * [`CountingAlloc`]: a sharded counting global allocator, switched on only
//!   around the heap measurements (W2, W6) of the one-off `workloads` binary;
//! * [`Params`]: workload sizes, scaled down by `SCHEDPOOL_BENCH_QUICK=1`;
//! * small helpers: percentiles, result rows, output directory.
#![allow(dead_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicUsize, Ordering};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------
// Parameters
// ---------------------------------------------------------------------------

/// True when `SCHEDPOOL_BENCH_QUICK` is set to anything but `0`/empty:
/// every workload is scaled down so that a smoke run takes seconds.
pub fn quick() -> bool {
    match std::env::var("SCHEDPOOL_BENCH_QUICK") {
        Ok(v) => !(v.is_empty() || v == "0"),
        Err(_) => false,
    }
}

/// Workload sizes. The full values are the ones of the "Performance" issue.
#[derive(Clone, Debug)]
pub struct Params {
    pub quick: bool,
    /// W1/W2/W6: tasks scheduled with delays in [1 h, 2 h).
    pub n_pending: usize,
    /// W3: zero-delay tasks from one thread.
    pub n_zero: usize,
    /// W4: tasks with delays in [0, w4_window).
    pub n_lateness: usize,
    pub w4_window: Duration,
    /// W5: fixed-rate tasks, their period and how long they run.
    pub n_fixed_rate: usize,
    pub w5_period: Duration,
    pub w5_duration: Duration,
    /// W7: tasks per producer (2 producers), delays in [0, w7_window).
    pub n_per_producer: usize,
    pub w7_window: Duration,
    /// W8: queue sizes and how many cancels to time per size (at least).
    pub w8_sizes: Vec<usize>,
    pub w8_min_cancels: usize,
    /// W9: timeouts scheduled per producer per second (2 producers, paced),
    /// for `w9_duration`; delays in [5, 15) ms, 90 % cancelled 0–4 ms later.
    pub w9_rate: u64,
    pub w9_duration: Duration,
    /// W9, W9L: one pool of one worker per producer instead of one pool of
    /// two workers (`SCHEDPOOL_BENCH_W9_SPLIT=1`): a bound on what a queue
    /// sharded by submitter could buy (`docs/performance-log.md`).
    pub w9_split: bool,
    /// W9, W9L: the workers of the one pool (`SCHEDPOOL_BENCH_W9_THREADS`,
    /// default 2; ignored when split): how the producers' preemptions
    /// follow the number of workers (`docs/performance-log.md`).
    pub w9_threads: usize,
}

impl Params {
    /// The sizes of the issue (or the quick ones), with W9's rate and length
    /// overridden by `SCHEDPOOL_BENCH_W9_RATE` (timeouts per producer per
    /// second) and `SCHEDPOOL_BENCH_W9_MS`, for a machine that cannot keep
    /// W9's pace (its `pacing lag max` row says so).
    pub fn from_env() -> Params {
        let mut p = Params::sized();
        let env = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<u64>().ok());
        if let Some(rate) = env("SCHEDPOOL_BENCH_W9_RATE").filter(|&r| r > 0) {
            p.w9_rate = rate;
        }
        if let Some(ms) = env("SCHEDPOOL_BENCH_W9_MS").filter(|&ms| ms > 0) {
            p.w9_duration = Duration::from_millis(ms);
        }
        p.w9_split = match std::env::var("SCHEDPOOL_BENCH_W9_SPLIT").ok().as_deref() {
            None | Some("0") => false,
            Some("1") => true,
            Some(other) => panic!("SCHEDPOOL_BENCH_W9_SPLIT={other}: 0 or 1"),
        };
        if let Some(n) = env("SCHEDPOOL_BENCH_W9_THREADS") {
            assert!(n > 0, "SCHEDPOOL_BENCH_W9_THREADS: at least 1");
            p.w9_threads = n as usize;
        }
        p
    }

    fn sized() -> Params {
        if quick() {
            Params {
                quick: true,
                n_pending: 20_000,
                n_zero: 20_000,
                n_lateness: 1_000,
                w4_window: Duration::from_millis(200),
                n_fixed_rate: 100,
                w5_period: Duration::from_millis(1),
                w5_duration: Duration::from_millis(300),
                n_per_producer: 10_000,
                w7_window: Duration::from_millis(10),
                w8_sizes: vec![1_000, 10_000],
                w8_min_cancels: 1_000,
                w9_rate: 250_000,
                w9_duration: Duration::from_millis(300),
                w9_split: false,
                w9_threads: 2,
            }
        } else {
            Params {
                quick: false,
                n_pending: 1_000_000,
                n_zero: 1_000_000,
                n_lateness: 10_000,
                w4_window: Duration::from_secs(1),
                n_fixed_rate: 1_000,
                w5_period: Duration::from_millis(1),
                w5_duration: Duration::from_secs(2),
                n_per_producer: 500_000,
                w7_window: Duration::from_millis(10),
                w8_sizes: vec![1_000, 10_000, 100_000, 1_000_000],
                w8_min_cancels: 10_000,
                w9_rate: 250_000,
                w9_duration: Duration::from_secs(2),
                w9_split: false,
                w9_threads: 2,
            }
        }
    }
}

/// Delays of W1/W2/W6/W8: uniform in [1 h, 2 h).
pub const LONG_MIN: Duration = Duration::from_secs(3600);
pub const LONG_SPAN: Duration = Duration::from_secs(3600);

/// Seeds, shared with `benches/jdk/StpeBench.java`.
pub const SEED_DELAYS: u64 = 0x5EED_0001;
pub const SEED_PERM: u64 = 0x5EED_0002;
pub const SEED_LATENESS: u64 = 0x5EED_0004;
pub const SEED_PRODUCER: u64 = 0x5EED_0007;
pub const SEED_W8: u64 = 0x5EED_0008;
pub const SEED_W9: u64 = 0x5EED_0009;

// ---------------------------------------------------------------------------
// Random numbers: SplitMix64 (same algorithm in StpeBench.java)
// ---------------------------------------------------------------------------

#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, n) (n > 0), by 128-bit multiply (no modulo bias to speak of).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Uniform in [min, min + span), nanosecond resolution.
    pub fn duration(&mut self, min: Duration, span: Duration) -> Duration {
        min + Duration::from_nanos(self.below(span.as_nanos() as u64))
    }

    /// Fisher–Yates shuffle.
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            v.swap(i, j);
        }
    }
}

/// `n` delays uniform in [min, min + span) from `seed`.
pub fn delays(seed: u64, n: usize, min: Duration, span: Duration) -> Vec<Duration> {
    let mut rng = Rng::new(seed);
    (0..n).map(|_| rng.duration(min, span)).collect()
}

/// A random permutation of `0..n` from `seed`.
pub fn permutation(seed: u64, n: usize) -> Vec<u32> {
    let mut v: Vec<u32> = (0..n as u32).collect();
    Rng::new(seed).shuffle(&mut v);
    v
}

// ---------------------------------------------------------------------------
// The two Rust pools under test
// ---------------------------------------------------------------------------

/// The common surface of the pools under test. Every pool is built with
/// 2 worker threads by the workloads (the machine has 2 cores; the JDK side
/// uses 2 core threads too).
pub trait BenchPool: Send + Sync + Sized + 'static {
    /// Name used in tables, CSV and chart legends.
    const NAME: &'static str;
    type Handle: Send + 'static;

    fn with_threads(n: usize) -> Self;
    /// One-shot task after `delay`; keeps a cancellable handle.
    fn schedule<F: FnOnce() + Send + 'static>(&self, delay: Duration, f: F) -> Self::Handle;
    /// Zero-delay fire-and-forget submission (each pool's cheapest API for it).
    fn execute<F: FnOnce() + Send + 'static>(&self, f: F);
    fn fixed_rate<F: FnMut() + Send + 'static>(
        &self,
        initial: Duration,
        period: Duration,
        f: F,
    ) -> Self::Handle;
    fn cancel(h: &Self::Handle);
    /// Cancels; false if the pool says the task had already run or been
    /// cancelled. A pool whose cancel reports nothing says true.
    fn try_cancel(h: &Self::Handle) -> bool {
        Self::cancel(h);
        true
    }
    /// Tasks queued, if the pool can tell.
    fn queue_len(&self) -> Option<usize> {
        None
    }
    /// Drops every pending task and waits (bounded) until the worker threads
    /// are gone, so that the next measurement starts on a quiet machine.
    fn teardown(self);
}

static POOL_ID: AtomicUsize = AtomicUsize::new(0);

pub fn next_pool_prefix(tag: &str) -> String {
    format!(
        "{}{}",
        tag,
        POOL_ID.fetch_add(1, Ordering::Relaxed) % 100_000
    )
}

/// Waits until no thread of this process has a name starting with `prefix-`
/// (Linux: /proc/self/task/*/comm). Falls back to a short sleep elsewhere.
pub fn wait_threads_gone(prefix: &str, timeout: Duration) {
    let want = format!("{}-", prefix);
    let start = Instant::now();
    loop {
        let dir = match std::fs::read_dir("/proc/self/task") {
            Ok(d) => d,
            Err(_) => {
                std::thread::sleep(Duration::from_millis(100));
                return;
            }
        };
        let mut alive = false;
        for e in dir.flatten() {
            if let Ok(comm) = std::fs::read_to_string(e.path().join("comm")) {
                if comm.trim_end().starts_with(&want) {
                    alive = true;
                    break;
                }
            }
        }
        if !alive {
            return;
        }
        if start.elapsed() > timeout {
            eprintln!("warning: threads {}* still alive after {:?}", want, timeout);
            return;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// `schedpool` (this crate), 2 core threads, remove-on-cancel (its default).
pub struct Sp {
    pool: schedpool::ScheduledThreadPool,
    prefix: String,
}

impl BenchPool for Sp {
    const NAME: &'static str = "schedpool";
    type Handle = schedpool::ScheduledHandle<()>;

    /// The pool's defaults, except where the environment asks for the
    /// precision knobs of the guide's section 10 (for measuring what they
    /// trade): `SCHEDPOOL_BENCH_IDLE_SPIN_US` (`Builder::idle_spin`, µs only) and
    /// `SCHEDPOOL_BENCH_TIMER_SLACK_US` (`Builder::timer_slack`, µs; `os`
    /// keeps the OS default) and `SCHEDPOOL_BENCH_SLICE_US`
    /// (`Builder::sched_slice`, µs; `os` never sets it).
    fn with_threads(n: usize) -> Self {
        let prefix = next_pool_prefix("spb");
        let mut builder = schedpool::ScheduledThreadPool::builder()
            .core_threads(n)
            .thread_name(&prefix)
            .remove_on_cancel(true);
        if let Some(us) = env_micros("SCHEDPOOL_BENCH_IDLE_SPIN_US") {
            let us =
                us.expect("SCHEDPOOL_BENCH_IDLE_SPIN_US: a number of µs (`os` is for the slack)");
            builder = builder.idle_spin(us);
        }
        if let Some(us) = env_micros("SCHEDPOOL_BENCH_TIMER_SLACK_US") {
            builder = builder.timer_slack(us);
        }
        if let Some(us) = env_micros("SCHEDPOOL_BENCH_SLICE_US") {
            builder = builder.sched_slice(us);
        }
        let pool = builder.build().expect("schedpool: build");
        Sp { pool, prefix }
    }

    #[inline]
    fn schedule<F: FnOnce() + Send + 'static>(&self, delay: Duration, f: F) -> Self::Handle {
        self.pool.schedule(f, delay).expect("schedpool: schedule")
    }

    #[inline]
    fn execute<F: FnOnce() + Send + 'static>(&self, f: F) {
        self.pool.execute(f).expect("schedpool: execute")
    }

    fn fixed_rate<F: FnMut() + Send + 'static>(
        &self,
        initial: Duration,
        period: Duration,
        f: F,
    ) -> Self::Handle {
        self.pool
            .schedule_at_fixed_rate(f, initial, period)
            .expect("schedpool: schedule_at_fixed_rate")
    }

    #[inline]
    fn cancel(h: &Self::Handle) {
        h.cancel();
    }

    #[inline]
    fn try_cancel(h: &Self::Handle) -> bool {
        h.cancel()
    }

    fn queue_len(&self) -> Option<usize> {
        Some(self.pool.queue_len())
    }

    fn teardown(self) {
        let pending = self.pool.shutdown_now();
        drop(pending);
        let _ = self.pool.await_termination(Duration::from_secs(30));
        let prefix = self.prefix.clone();
        drop(self);
        wait_threads_gone(&prefix, Duration::from_secs(30));
    }
}

/// The `scheduled-thread-pool` crate (0.2), 2 threads. It cancels lazily
/// (a flag; the job stays in its heap until due), so pending jobs are
/// discarded on drop rather than run 1–2 h later.
pub struct Stp {
    pool: scheduled_thread_pool::ScheduledThreadPool,
    prefix: String,
}

impl BenchPool for Stp {
    const NAME: &'static str = "scheduled-thread-pool";
    type Handle = scheduled_thread_pool::JobHandle;

    fn with_threads(n: usize) -> Self {
        let prefix = next_pool_prefix("stpb");
        let pattern = format!("{}-{{}}", prefix);
        let pool = scheduled_thread_pool::ScheduledThreadPool::builder()
            .num_threads(n)
            .thread_name_pattern(&pattern)
            .on_drop_behavior(scheduled_thread_pool::OnPoolDropBehavior::DiscardPendingScheduled)
            .build();
        Stp { pool, prefix }
    }

    #[inline]
    fn schedule<F: FnOnce() + Send + 'static>(&self, delay: Duration, f: F) -> Self::Handle {
        self.pool.execute_after(delay, f)
    }

    #[inline]
    fn execute<F: FnOnce() + Send + 'static>(&self, f: F) {
        let _ = self.pool.execute(f);
    }

    fn fixed_rate<F: FnMut() + Send + 'static>(
        &self,
        initial: Duration,
        period: Duration,
        f: F,
    ) -> Self::Handle {
        self.pool.execute_at_fixed_rate(initial, period, f)
    }

    #[inline]
    fn cancel(h: &Self::Handle) {
        h.cancel();
    }

    fn teardown(self) {
        let prefix = self.prefix.clone();
        // Dropping the pool flags shutdown; each worker then returns and the
        // last one frees the job heap before its thread ends.
        drop(self);
        wait_threads_gone(&prefix, Duration::from_secs(30));
    }
}

// ---------------------------------------------------------------------------
// Counting allocator (sharded per thread, always on)
// ---------------------------------------------------------------------------

/// Counts live heap bytes (requested sizes, not the malloc size classes) and
/// allocation calls, but only while [`set_counting`]`(true)`: outside the heap
/// measurements the cost is one relaxed load per call, so the timing workloads
/// are not slowed down. While counting, each thread adds to its own
/// cache-line-sized shard (an uncontended atomic add; the worker threads are not
/// serialized). Counts are deltas: measure `live_bytes()` differences within one
/// counting window (a block allocated before the window and freed inside it shows
/// as negative; `realloc` counts its size change, so growing a pre-existing
/// buffer is counted right).
/// Use with `#[global_allocator] static A: CountingAlloc = CountingAlloc;`.
pub struct CountingAlloc;

static COUNTING: AtomicBool = AtomicBool::new(false);

/// Turns the counting of [`CountingAlloc`] on or off.
pub fn set_counting(on: bool) {
    COUNTING.store(on, Ordering::SeqCst);
}

const SHARDS: usize = 64;

#[repr(align(128))]
struct Shard {
    bytes: AtomicIsize,
    allocs: AtomicIsize,
}

#[allow(clippy::declare_interior_mutable_const)]
const SHARD_INIT: Shard = Shard {
    bytes: AtomicIsize::new(0),
    allocs: AtomicIsize::new(0),
};
static SHARD_TABLE: [Shard; SHARDS] = [SHARD_INIT; SHARDS];
static NEXT_SHARD: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static MY_SHARD: Cell<usize> = const { Cell::new(usize::MAX) };
}

#[inline]
fn my_shard() -> &'static Shard {
    let i = MY_SHARD
        .try_with(|c| {
            let mut v = c.get();
            if v == usize::MAX {
                v = NEXT_SHARD.fetch_add(1, Ordering::Relaxed) % SHARDS;
                c.set(v);
            }
            v
        })
        .unwrap_or(0);
    &SHARD_TABLE[i]
}

unsafe impl GlobalAlloc for CountingAlloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() && COUNTING.load(Ordering::Relaxed) {
            let s = my_shard();
            s.bytes.fetch_add(layout.size() as isize, Ordering::Relaxed);
            s.allocs.fetch_add(1, Ordering::Relaxed);
        }
        p
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if !p.is_null() && COUNTING.load(Ordering::Relaxed) {
            let s = my_shard();
            s.bytes.fetch_add(layout.size() as isize, Ordering::Relaxed);
            s.allocs.fetch_add(1, Ordering::Relaxed);
        }
        p
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        if COUNTING.load(Ordering::Relaxed) {
            my_shard()
                .bytes
                .fetch_sub(layout.size() as isize, Ordering::Relaxed);
        }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() && COUNTING.load(Ordering::Relaxed) {
            let s = my_shard();
            s.bytes.fetch_add(
                new_size as isize - layout.size() as isize,
                Ordering::Relaxed,
            );
            s.allocs.fetch_add(1, Ordering::Relaxed);
        }
        p
    }
}

/// Live heap bytes counted by [`CountingAlloc`] (0 if it is not installed).
pub fn live_bytes() -> isize {
    SHARD_TABLE
        .iter()
        .map(|s| s.bytes.load(Ordering::Relaxed))
        .sum()
}

/// Allocation calls so far counted by [`CountingAlloc`].
pub fn alloc_calls() -> isize {
    SHARD_TABLE
        .iter()
        .map(|s| s.allocs.load(Ordering::Relaxed))
        .sum()
}

/// Waits until the live-bytes count stops moving (frees done by other threads).
pub fn settle_heap() -> isize {
    let mut last = live_bytes();
    let mut stable = 0;
    for _ in 0..200 {
        std::thread::sleep(Duration::from_millis(5));
        let now = live_bytes();
        if now == last {
            stable += 1;
            if stable >= 3 {
                break;
            }
        } else {
            stable = 0;
            last = now;
        }
    }
    last
}

// ---------------------------------------------------------------------------
// Where the vCPUs sit
// ---------------------------------------------------------------------------

/// How long a cache line takes to move between two cores, in ns per one-way
/// trip: two threads pass a counter back and forth, and this is the median of
/// five tries of 40,000 round trips, the first quarter of each untimed (25-120
/// ms in all). On a shared VM it tells apart the placements of the vCPUs,
/// which the host switches on its own: on this project's 2-vCPU machine a
/// line moves in 30-45 ns ("near") or in 170-200 ns ("far"), and W3, W5 and
/// W7, where two workers take turns on one lock, run markedly slower in the
/// far placement on every scheduler. NaN when it cannot tell: one CPU, or a
/// try that hit its 200 ms limit, or a median over 1 µs a trip (the two
/// threads were sharing a CPU with something else, which says nothing about
/// the placement).
pub fn line_transfer_ns() -> f64 {
    if thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        return f64::NAN;
    }
    let mut tries: Vec<f64> = (0..5).map(|_| ping_pong(40_000)).collect();
    tries.sort_by(f64::total_cmp); // NaN sorts last
    let median = tries[2];
    if median > 1_000.0 {
        f64::NAN
    } else {
        median
    }
}

/// One try of [`line_transfer_ns`]: ns per one-way trip, or NaN if the try
/// did not finish within 50 ms.
fn ping_pong(rounds: u64) -> f64 {
    use std::sync::atomic::AtomicU64;
    use std::sync::Arc;
    #[repr(align(128))]
    struct Ball(AtomicU64);
    let ball = Arc::new(Ball(AtomicU64::new(0)));
    let stop = Arc::new(AtomicBool::new(false));
    let limit = Duration::from_millis(200);
    // Spins until the ball holds `want` (no `spin_loop` hint: its pause would
    // add to what is measured); false if `give_up` says so first (checked
    // every 1024 spins).
    fn wait(ball: &AtomicU64, want: u64, mut give_up: impl FnMut() -> bool) -> bool {
        let mut spins = 0u32;
        while ball.load(Ordering::Acquire) != want {
            spins = spins.wrapping_add(1);
            if spins % 1024 == 0 && give_up() {
                return false;
            }
        }
        true
    }
    let other = {
        let (ball, stop) = (Arc::clone(&ball), Arc::clone(&stop));
        thread::spawn(move || {
            for i in 0..rounds {
                if !wait(&ball.0, 2 * i + 1, || stop.load(Ordering::Relaxed)) {
                    return;
                }
                ball.0.store(2 * i + 2, Ordering::Release);
            }
        })
    };
    let finish = |result: f64| {
        stop.store(true, Ordering::Relaxed);
        let _ = other.join();
        result
    };
    // The first `warm` round trips are not timed: they wait for the other
    // thread to start and for its vCPU to wake up, which on a VM can take
    // milliseconds and would swamp a short try.
    let warm = rounds / 4;
    let t0 = Instant::now();
    let mut start = t0;
    for i in 0..rounds {
        if i == warm {
            start = Instant::now();
        }
        ball.0.store(2 * i + 1, Ordering::Release);
        if !wait(&ball.0, 2 * i + 2, || t0.elapsed() > limit) {
            return finish(f64::NAN);
        }
    }
    let elapsed = start.elapsed();
    finish(elapsed.as_nanos() as f64 / (2 * (rounds - warm)) as f64)
}

// ---------------------------------------------------------------------------
// Results
// ---------------------------------------------------------------------------

/// One measured number. CSV: `impl,workload,metric,unit,value`
/// (the same columns the JDK side writes).
#[derive(Clone, Debug)]
pub struct Row {
    pub imp: String,
    pub workload: String,
    pub metric: String,
    pub unit: String,
    pub value: f64,
}

pub fn row(imp: &str, workload: &str, metric: &str, unit: &str, value: f64) -> Row {
    Row {
        imp: imp.to_string(),
        workload: workload.to_string(),
        metric: metric.to_string(),
        unit: unit.to_string(),
        value,
    }
}

/// `target/bench-results/` of the package (or `$SCHEDPOOL_BENCH_OUT`).
pub fn results_dir() -> std::path::PathBuf {
    let dir = match std::env::var_os("SCHEDPOOL_BENCH_OUT") {
        Some(d) => std::path::PathBuf::from(d),
        None => std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-results"),
    };
    let _ = std::fs::create_dir_all(&dir);
    dir
}

/// Nearest-rank percentile of sorted data, p in [0, 100].
pub fn percentile(sorted: &[i64], p: f64) -> i64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Signed nanoseconds `a - b`.
#[inline]
pub fn signed_ns(a: Instant, b: Instant) -> i64 {
    if a >= b {
        (a - b).as_nanos() as i64
    } else {
        -((b - a).as_nanos() as i64)
    }
}

/// Formats a value for the tables: thousands get no decimals.
pub fn fmt_value(v: f64) -> String {
    if v.is_nan() {
        "n/a".to_string()
    } else if v.abs() >= 1000.0 {
        format!("{:.0}", v)
    } else if v.abs() >= 10.0 {
        format!("{:.1}", v)
    } else {
        format!("{:.3}", v)
    }
}

/// The no-op task body of the workloads.
pub fn noop() {}

/// Minor page faults of this process so far (`/proc/self/stat`, field 10;
/// 0 where it cannot be read).
pub fn minor_faults() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The command name (field 2) may hold spaces; count from its ')'.
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().nth(7))
        .and_then(|f| f.parse().ok())
        .unwrap_or(0)
}

/// Counts completions; the one that reaches the target wakes the waiter.
/// Leaked (`&'static`) so a task captures one pointer and touches no refcount.
pub struct Latch {
    count: AtomicUsize,
    target: usize,
    waiter: Thread,
}

impl Latch {
    pub fn leak(target: usize) -> &'static Latch {
        Box::leak(Box::new(Latch {
            count: AtomicUsize::new(0),
            target,
            waiter: thread::current(),
        }))
    }

    #[inline]
    pub fn hit(&self) {
        if self.count.fetch_add(1, Ordering::AcqRel) + 1 == self.target {
            self.waiter.unpark();
        }
    }

    /// Waits (parked) until every task ran; false on timeout.
    pub fn wait(&self, timeout: Duration) -> bool {
        let start = Instant::now();
        while self.count.load(Ordering::Acquire) < self.target {
            let el = start.elapsed();
            if el >= timeout {
                return false;
            }
            thread::park_timeout((timeout - el).min(Duration::from_millis(20)));
        }
        true
    }
}

/// `Some(Some(d))` for a variable set to a number of µs, `Some(None)` for
/// `os`, `None` when unset.
///
/// # Panics
///
/// On any other value, so that a typo never measures the defaults.
fn env_micros(name: &str) -> Option<Option<Duration>> {
    let value = std::env::var(name).ok()?;
    if value == "os" {
        return Some(None);
    }
    let us: u64 = value
        .parse()
        .unwrap_or_else(|_| panic!("{name}={value}: a number of µs or `os`"));
    Some(Some(Duration::from_micros(us)))
}
