//! One-shot measurements W1–W9 of the "Performance" issue (and W4L, W9L: W4
//! and W9 under load), on `schedpool` and on the `scheduled-thread-pool` crate (the same tasks, the same seeded delays and
//! cancel order). `harness = false`: prints a table and writes the raw numbers to
//! `target/bench-results/` (CSV + JSON; W4 lateness samples under `raw/`).
//!
//! ```text
//! cargo bench --bench workloads                                  # both pools, full size
//! SCHEDPOOL_BENCH_QUICK=1 cargo bench --bench workloads          # smoke run (seconds)
//! cargo bench --bench workloads -- --impl schedpool --only W4,W5 --run 2 --csv /tmp/x.csv
//! ```
//!
//! Options (after `--`): `--impl schedpool|scheduled-thread-pool|stp|tokio|owner-model|all`
//! (default all: the two pools; `tokio` runs only the timeout workloads W4, W9, W4L, W9L;
//! `owner-model`, a model of JDK 25's DelayScheduler shape and not a scheduler, only W9
//! and W9L: `owner_model.rs`),
//! `--only W1,W2,...` (default all), `--run N` (tag of the run, default 0),
//! `--csv PATH` (default `target/bench-results/workloads.csv`; a `.json` is written beside it).
//!
//! The heap numbers come from a counting global allocator (requested bytes, not
//! malloc size classes), switched on only around the heap measurements; elsewhere
//! it costs one relaxed load per allocation. The criterion bench `peer_compare`
//! measures the timing workloads with the plain system allocator.
//!
//! | W1 | 1M no-op tasks, delays in [1 h, 2 h), one thread      | ns per schedule |
//! | W2 | cancel all of them in random order; heap retained     | ns per cancel; bytes |
//! | W3 | 1M zero-delay tasks, one submitter, 2 workers         | tasks/s until the last ran |
//! | W3S | W3 through `schedule(0)`, each handle dropped at once | as W3 |
//! | W4 | 10k tasks, delays in [0, 1 s): start − deadline       | p50, p99, p99.9, max µs |
//! | W5 | 1000 fixed-rate tasks, period 1 ms, 2 s               | runs / expected; worst drift |
//! | W6 | 1M pending tasks                                       | heap bytes per task |
//! | W7 | 2 producers × 500k tasks, delays 0–10 ms, pool running | tasks/s |
//! | W7X8 | W7's 1M tasks from 8 producers × 125k (issue 33)      | tasks/s |
//! | W8 | cancel cost with 1k, 10k, 100k, 1M pending             | ns per cancel |
//! | W9 | 2 producers × 250k timeouts/s for 2 s, delays 5–15 ms, 90 % cancelled 0–4 ms later | caller ns per schedule+cancel; CPU of all threads; fired; closure lifetime |
//! | W4L | W4 while two busy-loop processes hold both cores       | p50, p99, p99.9, max µs |
//! | W9L | W9 under the same load                                 | as W9 |
//!
//! `--burn` makes the binary a busy loop until killed (the load of W4L and W9L).
//!
//! Every timed workload also reports `cpu all threads`: user + system CPU time of
//! every thread of the process (`getrusage(RUSAGE_SELF)`) over the measured
//! section, per operation, so that work moved to another thread is not free.

#[path = "common/mod.rs"]
mod common;
#[path = "owner_model.rs"]
mod owner_model;

use common::*;
use crossbeam_utils::CachePadded;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

struct Args {
    imps: Vec<String>,
    only: Option<Vec<String>>,
    run: u32,
    csv: Option<std::path::PathBuf>,
}

fn parse_args() -> Args {
    let mut a = Args {
        imps: vec![Sp::NAME.to_string(), Stp::NAME.to_string()],
        only: None,
        run: 0,
        csv: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(x) = it.next() {
        match x.as_str() {
            "--bench" | "--nocapture" | "--burn" => {}
            "--probe" => {
                // For compare.sh, around the JDK's runs: one number, ns.
                println!("{:.1}", line_transfer_ns());
                std::process::exit(0);
            }
            "--impl" => {
                let v = it.next().expect("--impl needs a value");
                a.imps = match v.as_str() {
                    "all" => vec![Sp::NAME.to_string(), Stp::NAME.to_string()],
                    "sp" | "schedpool" => vec![Sp::NAME.to_string()],
                    "stp" | "scheduled-thread-pool" => vec![Stp::NAME.to_string()],
                    "tokio" => vec![Tokio::NAME.to_string()],
                    "owner" | "owner-model" => vec![Owner::NAME.to_string()],
                    other => panic!("unknown --impl {other}"),
                }
            }
            "--only" => {
                let v = it.next().expect("--only needs a value");
                a.only = Some(v.split(',').map(|s| s.trim().to_uppercase()).collect());
            }
            "--run" => a.run = it.next().expect("--run N").parse().expect("--run N"),
            "--csv" => a.csv = Some(it.next().expect("--csv PATH").into()),
            other if other.starts_with("--") => eprintln!("ignoring option {other}"),
            _ => {} // a criterion-style filter: ignored
        }
    }
    a
}

impl Args {
    fn wants(&self, w: &str) -> bool {
        match &self.only {
            None => true,
            Some(v) => v.iter().any(|x| x == w),
        }
    }
}

// --------------------------------------------------------------------------
// tokio's timer: the peer of the timeout workloads (issue 23)
// --------------------------------------------------------------------------

/// tokio's timer as a Rust service uses it: a 2-worker multi-thread runtime;
/// a task is `spawn(async move { sleep_until(deadline).await; f() })` with the
/// deadline taken at the call, and cancel is `JoinHandle::abort()` (the
/// future, and so the closure, is dropped when a worker next polls the
/// aborted task). Submitters are plain threads (not runtime workers), as in
/// the other pools' runs. Only W4, W9, W4L and W9L run on it.
struct Tokio {
    rt: tokio::runtime::Runtime,
    prefix: String,
}

impl BenchPool for Tokio {
    const NAME: &'static str = "tokio";
    type Handle = tokio::task::JoinHandle<()>;

    fn with_threads(n: usize) -> Self {
        let prefix = next_pool_prefix("tkb");
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(n)
            .enable_time()
            .thread_name(format!("{prefix}-w"))
            .build()
            .expect("tokio: build");
        Tokio { rt, prefix }
    }

    #[inline]
    fn schedule<F: FnOnce() + Send + 'static>(&self, delay: Duration, f: F) -> Self::Handle {
        let deadline = tokio::time::Instant::now() + delay;
        self.rt.spawn(async move {
            tokio::time::sleep_until(deadline).await;
            f()
        })
    }

    #[inline]
    fn execute<F: FnOnce() + Send + 'static>(&self, f: F) {
        drop(self.rt.spawn(async move { f() }));
    }

    fn fixed_rate<F: FnMut() + Send + 'static>(
        &self,
        initial: Duration,
        period: Duration,
        mut f: F,
    ) -> Self::Handle {
        let start = tokio::time::Instant::now() + initial;
        self.rt.spawn(async move {
            let mut iv = tokio::time::interval_at(start, period);
            iv.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
            loop {
                iv.tick().await;
                f();
            }
        })
    }

    #[inline]
    fn cancel(h: &Self::Handle) {
        h.abort();
    }

    /// False if the task had already finished (it ran).
    #[inline]
    fn try_cancel(h: &Self::Handle) -> bool {
        let done = h.is_finished();
        h.abort();
        !done
    }

    /// Tasks alive (pending timers, and aborted tasks not yet dropped).
    fn queue_len(&self) -> Option<usize> {
        Some(self.rt.metrics().num_alive_tasks())
    }

    fn teardown(self) {
        let Tokio { rt, prefix } = self;
        rt.shutdown_timeout(Duration::from_secs(30));
        wait_threads_gone(&prefix, Duration::from_secs(30));
    }
}

// --------------------------------------------------------------------------
// The owner-thread model (JDK 25's DelayScheduler shape; not a scheduler)
// --------------------------------------------------------------------------

/// [`owner_model::OwnerModel`] in the harness: W9 and W9L only (its module
/// says what it leaves out). One owner thread, whatever `n` says.
struct Owner {
    model: owner_model::OwnerModel,
    prefix: String,
}

impl BenchPool for Owner {
    const NAME: &'static str = "owner-model";
    type Handle = owner_model::Handle;

    fn with_threads(_n: usize) -> Self {
        let prefix = next_pool_prefix("omb");
        Owner {
            model: owner_model::OwnerModel::new(&prefix),
            prefix,
        }
    }

    #[inline]
    fn schedule<F: FnOnce() + Send + 'static>(&self, delay: Duration, f: F) -> Self::Handle {
        self.model.schedule(delay, f)
    }

    fn execute<F: FnOnce() + Send + 'static>(&self, f: F) {
        drop(self.model.schedule(Duration::ZERO, f));
    }

    fn fixed_rate<F: FnMut() + Send + 'static>(
        &self,
        _initial: Duration,
        _period: Duration,
        _f: F,
    ) -> Self::Handle {
        unreachable!("run_all gives the owner model W9 and W9L only")
    }

    #[inline]
    fn cancel(h: &Self::Handle) {
        h.cancel();
    }

    #[inline]
    fn try_cancel(h: &Self::Handle) -> bool {
        h.cancel()
    }

    fn teardown(self) {
        let Owner { model, prefix } = self;
        model.teardown();
        wait_threads_gone(&prefix, Duration::from_secs(30));
    }
}

// --------------------------------------------------------------------------
// Workloads
// --------------------------------------------------------------------------

/// A short run of the hot paths so that neither side pays first-touch costs
/// inside a measurement (the JDK side warms its JIT the same way).
fn warmup<P: BenchPool>() {
    let pool = P::with_threads(2);
    let d = delays(1, 20_000, LONG_MIN, LONG_SPAN);
    let hs: Vec<_> = d.iter().map(|&d| pool.schedule(d, noop)).collect();
    for h in hs.iter().rev() {
        P::cancel(h);
    }
    drop(hs);
    let latch = Latch::leak(20_000);
    for _ in 0..20_000 {
        pool.execute(move || latch.hit());
    }
    latch.wait(Duration::from_secs(30));
    pool.teardown();
}

/// W1's timed loop: schedules a no-op after each of `ds` into a new pool;
/// returns the pool, the handles, the time, the minor page faults taken and
/// the CPU time of all threads.
#[allow(clippy::type_complexity)]
fn schedule_all<P: BenchPool>(ds: &[Duration]) -> (P, Vec<P::Handle>, Duration, u64, u64) {
    let pool = P::with_threads(2);
    let mut handles = Vec::with_capacity(ds.len());
    let f0 = minor_faults();
    let c0 = process_cpu_ns();
    let t = Instant::now();
    for &d in ds {
        handles.push(pool.schedule(d, noop));
    }
    let took = t.elapsed();
    let cpu = process_cpu_ns() - c0;
    (pool, handles, took, minor_faults() - f0, cpu)
}

/// W1 (ns per schedule) and W2 (ns per cancel, random order).
fn w1_w2<P: BenchPool>(p: &Params, rows: &mut Vec<Row>) {
    let n = p.n_pending;
    let ds = delays(SEED_DELAYS, n, LONG_MIN, LONG_SPAN);
    let perm = permutation(SEED_PERM, n);

    let (pool, handles, sched, faults, sched_cpu) = schedule_all::<P>(&ds);
    let c0 = process_cpu_ns();
    let t = Instant::now();
    for &i in &perm {
        P::cancel(&handles[i as usize]);
    }
    let cancel = t.elapsed();
    let cancel_cpu = process_cpu_ns() - c0;
    drop(handles);
    pool.teardown();

    // Not a target row: the same schedules again, in a fresh pool of the
    // same process. The allocator may now hand out memory the first round
    // freed (how much it kept is glibc's choice), so the difference between
    // the two rows is about what first-touching fresh pages costs W1.
    let (pool, handles, again, faults_again, _) = schedule_all::<P>(&ds);
    drop(handles);
    pool.teardown();

    let per_op = |d: Duration| d.as_nanos() as f64 / n as f64;
    let per_1k = |f: u64| f as f64 * 1000.0 / n as f64;
    let cpu_per_op = |ns: u64| ns as f64 / n as f64;
    rows.push(row(P::NAME, "W1", "schedule", "ns/op", per_op(sched)));
    rows.push(row(
        P::NAME,
        "W1",
        "cpu all threads",
        "ns/op",
        cpu_per_op(sched_cpu),
    ));
    rows.push(row(P::NAME, "W1", "page faults", "per 1k", per_1k(faults)));
    rows.push(row(P::NAME, "W1", "schedule again", "ns/op", per_op(again)));
    rows.push(row(
        P::NAME,
        "W1",
        "faults again",
        "per 1k",
        per_1k(faults_again),
    ));
    rows.push(row(
        P::NAME,
        "W2",
        "cancel",
        "ns/op",
        cancel.as_nanos() as f64 / n as f64,
    ));
    rows.push(row(
        P::NAME,
        "W2",
        "cpu all threads",
        "ns/op",
        cpu_per_op(cancel_cpu),
    ));
}

/// W2 (heap retained after cancelling all) and W6 (heap per pending task).
fn memory<P: BenchPool>(p: &Params, rows: &mut Vec<Row>) {
    let n = p.n_pending;
    let ds = delays(SEED_DELAYS, n, LONG_MIN, LONG_SPAN);
    let perm = permutation(SEED_PERM, n);

    // Pass A: keep the handles, cancel everything, drop the handles.
    let pool = P::with_threads(2);
    let mut handles = Vec::with_capacity(n);
    set_counting(true);
    let b0 = settle_heap();
    let a0 = alloc_calls();
    for &d in &ds {
        handles.push(pool.schedule(d, noop));
    }
    let with_handles = live_bytes() - b0;
    let allocs = alloc_calls() - a0;
    for &i in &perm {
        P::cancel(&handles[i as usize]);
    }
    handles.clear();
    let retained = settle_heap() - b0;
    set_counting(false);
    drop(handles);
    pool.teardown();

    // Pass B: handles dropped at once (dropping does not cancel): what the pool keeps.
    let pool = P::with_threads(2);
    set_counting(true);
    let b0 = settle_heap();
    for &d in &ds {
        drop(pool.schedule(d, noop));
    }
    let pending = settle_heap() - b0;
    set_counting(false);
    pool.teardown();

    rows.push(row(P::NAME, "W2", "retained", "bytes", retained as f64));
    rows.push(row(
        P::NAME,
        "W6",
        "heap/task",
        "bytes",
        pending as f64 / n as f64,
    ));
    rows.push(row(
        P::NAME,
        "W6",
        "heap/task+handle",
        "bytes",
        with_handles as f64 / n as f64,
    ));
    rows.push(row(
        P::NAME,
        "W6",
        "allocs/schedule",
        "calls",
        allocs as f64 / n as f64,
    ));
}

/// W3: zero-delay tasks from one thread into 2 workers, until the last ran.
/// `W3` submits through each pool's `execute`; `W3S` through its scheduler
/// (`schedule` with a zero delay, the handle dropped at once), which for
/// schedpool and Java's STPE is the same path and for JDK 25's
/// `ForkJoinPool` is its `DelayScheduler` instead of its work-stealing queues.
fn w3<P: BenchPool>(p: &Params, label: &'static str, rows: &mut Vec<Row>) {
    let n = p.n_zero;
    let pool = P::with_threads(2);
    let latch = Latch::leak(n);
    let c0 = process_cpu_ns();
    let t = Instant::now();
    if label == "W3S" {
        for _ in 0..n {
            drop(pool.schedule(Duration::ZERO, move || latch.hit()));
        }
    } else {
        for _ in 0..n {
            pool.execute(move || latch.hit());
        }
    }
    let submitted = t.elapsed();
    let ok = latch.wait(Duration::from_secs(120));
    let el = t.elapsed();
    let cpu = process_cpu_ns() - c0;
    pool.teardown();
    if !ok {
        eprintln!("{}: {label} timed out", P::NAME);
    }
    rows.push(row(
        P::NAME,
        label,
        "throughput",
        "tasks/s",
        if ok {
            n as f64 / el.as_secs_f64()
        } else {
            f64::NAN
        },
    ));
    rows.push(row(
        P::NAME,
        label,
        "submit",
        "ns/op",
        submitted.as_nanos() as f64 / n as f64,
    ));
    rows.push(row(
        P::NAME,
        label,
        "cpu all threads",
        "ns/task",
        cpu as f64 / n as f64,
    ));
}

/// W4: lateness (start − deadline) of one-shot tasks with delays in [0, 1 s).
fn w4<P: BenchPool>(p: &Params, run: u32, label: &str, rows: &mut Vec<Row>) {
    struct St {
        late: Vec<AtomicI64>,
        latch: &'static Latch,
    }
    let n = p.n_lateness;
    let ds = delays(SEED_LATENESS, n, Duration::ZERO, p.w4_window);
    let st: &'static St = Box::leak(Box::new(St {
        late: (0..n).map(|_| AtomicI64::new(i64::MIN)).collect(),
        latch: Latch::leak(n),
    }));
    let pool = P::with_threads(2);
    let c0 = process_cpu_ns();
    for (i, &d) in ds.iter().enumerate() {
        let deadline = Instant::now() + d;
        drop(pool.schedule(d, move || {
            let now = Instant::now();
            st.late[i].store(signed_ns(now, deadline), Ordering::Relaxed);
            st.latch.hit();
        }));
    }
    let ok = st.latch.wait(p.w4_window + Duration::from_secs(30));
    let cpu = process_cpu_ns() - c0;
    pool.teardown();
    if !ok {
        eprintln!("{}: {label} timed out", P::NAME);
    }
    let mut v: Vec<i64> = st
        .late
        .iter()
        .map(|a| a.load(Ordering::Relaxed))
        .filter(|&x| x != i64::MIN)
        .collect();
    v.sort_unstable();
    let early = v.iter().filter(|&&x| x < 0).count();
    if early > 0 {
        eprintln!(
            "{}: {label}: {} task(s) started BEFORE their deadline",
            P::NAME,
            early
        );
    }
    // raw samples for the lateness chart
    let dir = results_dir().join("raw");
    let _ = std::fs::create_dir_all(&dir);
    if let Ok(mut f) = std::fs::File::create(dir.join(format!(
        "{}-lateness-{}-r{}.csv",
        label.to_lowercase(),
        P::NAME,
        run
    ))) {
        let _ = writeln!(f, "lateness_ns");
        for x in &v {
            let _ = writeln!(f, "{x}");
        }
    }
    let us = |x: i64| x as f64 / 1000.0;
    rows.push(row(P::NAME, label, "p50", "us", us(percentile(&v, 50.0))));
    rows.push(row(P::NAME, label, "p99", "us", us(percentile(&v, 99.0))));
    rows.push(row(P::NAME, label, "p99.9", "us", us(percentile(&v, 99.9))));
    rows.push(row(
        P::NAME,
        label,
        "max",
        "us",
        us(v.last().copied().unwrap_or(0)),
    ));
    rows.push(row(
        P::NAME,
        label,
        "cpu all threads",
        "ns/task",
        cpu as f64 / n as f64,
    ));
}

/// W5: fixed-rate tasks; runs started inside the window vs deadlines inside it,
/// and the worst start − due of any run.
fn w5<P: BenchPool>(p: &Params, rows: &mut Vec<Row>) {
    struct Slot {
        runs: AtomicU64,
        worst: AtomicU64,
    }
    let n = p.n_fixed_rate;
    let period = p.w5_period;
    let slots: &'static [Slot] = Box::leak(
        (0..n)
            .map(|_| Slot {
                runs: AtomicU64::new(0),
                worst: AtomicU64::new(0),
            })
            .collect::<Vec<_>>()
            .into_boxed_slice(),
    );
    let pool = P::with_threads(2);
    let c0 = process_cpu_ns();
    let t_start = Instant::now();
    let t_end = t_start + p.w5_duration;
    let mut t0s = Vec::with_capacity(n);
    let mut handles = Vec::with_capacity(n);
    for slot in slots.iter() {
        let t0 = Instant::now();
        let mut k: u32 = 0;
        handles.push(pool.fixed_rate(Duration::ZERO, period, move || {
            let now = Instant::now();
            let due = t0 + period * k;
            k += 1;
            if now <= t_end {
                slot.runs.fetch_add(1, Ordering::Relaxed);
                let drift = now.saturating_duration_since(due).as_nanos() as u64;
                if drift > slot.worst.load(Ordering::Relaxed) {
                    slot.worst.store(drift, Ordering::Relaxed);
                }
            }
        }));
        t0s.push(t0);
    }
    let now = Instant::now();
    if t_end > now {
        thread::sleep(t_end - now + Duration::from_millis(20));
    }
    let cpu = process_cpu_ns() - c0;
    for h in &handles {
        P::cancel(h);
    }
    drop(handles);
    pool.teardown();
    let p_ns = period.as_nanos();
    let expected: u64 = t0s
        .iter()
        .map(|&t0| (t_end.saturating_duration_since(t0).as_nanos() / p_ns) as u64 + 1)
        .sum();
    let runs: u64 = slots.iter().map(|s| s.runs.load(Ordering::Relaxed)).sum();
    let worst = slots
        .iter()
        .map(|s| s.worst.load(Ordering::Relaxed))
        .max()
        .unwrap_or(0);
    rows.push(row(
        P::NAME,
        "W5",
        "runs/expected",
        "ratio",
        runs as f64 / expected as f64,
    ));
    rows.push(row(
        P::NAME,
        "W5",
        "worst drift",
        "us",
        worst as f64 / 1000.0,
    ));
    rows.push(row(
        P::NAME,
        "W5",
        "cpu all threads",
        "ns/run",
        cpu as f64 / runs.max(1) as f64,
    ));
}

/// W7: two producer threads schedule tasks with delays in [0, 10 ms) while
/// the pool runs them; from the start until the last one ran. W7x8 (issue
/// 33): the same 2 × `n` tasks from eight producer threads (each `n` / 4,
/// its own seed), on this 2-core machine: submitters outnumber cores, so a
/// submitter that holds or waits for the pool lock shows.
fn w7<P: BenchPool>(p: &Params, label: &str, rows: &mut Vec<Row>) {
    let producers: usize = if label == "W7X8" { 8 } else { 2 };
    let total = 2 * p.n_per_producer;
    let n = total / producers;
    let ds: Vec<Vec<Duration>> = (0..producers)
        .map(|k| delays(SEED_PRODUCER + k as u64, n, Duration::ZERO, p.w7_window))
        .collect();
    let pool = P::with_threads(2);
    let latch = Latch::leak(producers * n);
    let barrier = Barrier::new(producers + 1);
    let c0 = process_cpu_ns();
    let (ok, el) = thread::scope(|s| {
        for d in &ds {
            let pool = &pool;
            let barrier = &barrier;
            s.spawn(move || {
                barrier.wait();
                for &x in d.iter() {
                    drop(pool.schedule(x, move || latch.hit()));
                }
            });
        }
        barrier.wait();
        let t = Instant::now();
        let ok = latch.wait(Duration::from_secs(120));
        (ok, t.elapsed())
    });
    let cpu = process_cpu_ns() - c0;
    pool.teardown();
    rows.push(row(
        P::NAME,
        label,
        "throughput",
        "tasks/s",
        if ok {
            (producers * n) as f64 / el.as_secs_f64()
        } else {
            f64::NAN
        },
    ));
    rows.push(row(
        P::NAME,
        label,
        "cpu all threads",
        "ns/task",
        cpu as f64 / (producers * n) as f64,
    ));
}

pub fn size_label(n: usize) -> String {
    if n >= 1_000_000 && n % 1_000_000 == 0 {
        format!("{}M", n / 1_000_000)
    } else if n >= 1000 && n % 1000 == 0 {
        format!("{}k", n / 1000)
    } else {
        n.to_string()
    }
}

/// W8: ns per cancel of random pending tasks with n pending (n/10 cancels
/// per queue, at most `w8_min_cancels`, repeated on fresh pools until at least
/// `w8_min_cancels` were timed).
fn w8<P: BenchPool>(p: &Params, rows: &mut Vec<Row>) {
    for &n in &p.w8_sizes {
        let k = (n / 10).clamp(1, p.w8_min_cancels);
        let reps = p.w8_min_cancels.div_ceil(k);
        let ds = delays(SEED_W8 ^ n as u64, n, LONG_MIN, LONG_SPAN);
        let mut rng = Rng::new(SEED_W8 + n as u64);
        let mut idx: Vec<u32> = (0..n as u32).collect();
        let mut total = Duration::ZERO;
        let mut cpu = 0u64;
        let mut count = 0usize;
        for _ in 0..reps {
            let pool = P::with_threads(2);
            let handles: Vec<_> = ds.iter().map(|&d| pool.schedule(d, noop)).collect();
            for i in 0..k {
                let j = i + rng.below((n - i) as u64) as usize;
                idx.swap(i, j);
            }
            let c0 = process_cpu_ns();
            let t = Instant::now();
            for &i in &idx[..k] {
                P::cancel(&handles[i as usize]);
            }
            total += t.elapsed();
            cpu += process_cpu_ns() - c0;
            count += k;
            drop(handles);
            pool.teardown();
        }
        rows.push(row(
            P::NAME,
            "W8",
            &format!("cancel@{}", size_label(n)),
            "ns/op",
            total.as_nanos() as f64 / count as f64,
        ));
        rows.push(row(
            P::NAME,
            "W8",
            &format!("cpu@{}", size_label(n)),
            "ns/op",
            cpu as f64 / count as f64,
        ));
    }
}

fn run_all<P: BenchPool>(p: &Params, a: &Args, rows: &mut Vec<Row>) {
    let step = |w: &str| eprintln!("[{}] {} ...", P::NAME, w);
    // tokio's timer is the peer of the timeout workloads only; the owner
    // model runs W9 and W9L only.
    let timeouts_only = P::NAME == Tokio::NAME || P::NAME == Owner::NAME;
    let timeouts: &[&str] = match P::NAME == Owner::NAME {
        true => &["W9", "W9L"],
        false => &["W4", "W9", "W4L", "W9L"],
    };
    let a = &Args {
        imps: a.imps.clone(),
        only: if timeouts_only {
            Some(
                timeouts
                    .iter()
                    .filter(|w| a.wants(w))
                    .map(|w| w.to_string())
                    .collect(),
            )
        } else {
            a.only.clone()
        },
        run: a.run,
        csv: a.csv.clone(),
    };
    step("warm-up");
    warmup::<P>();
    // Each measurement between two readings of where the vCPUs sit
    // (`line_transfer_ns`), so a run can be told near from far afterwards.
    let probed = |w: &str, rows: &mut Vec<Row>, measure: &dyn Fn(&mut Vec<Row>)| {
        rows.push(row(
            P::NAME,
            w,
            "line xfer before",
            "ns",
            line_transfer_ns(),
        ));
        measure(rows);
        rows.push(row(P::NAME, w, "line xfer after", "ns", line_transfer_ns()));
    };
    if a.wants("W1") || a.wants("W2") {
        step("W1/W2 time");
        w1_w2::<P>(p, rows);
    }
    if a.wants("W2") || a.wants("W6") {
        step("W2/W6 heap");
        memory::<P>(p, rows);
    }
    if a.wants("W3") {
        step("W3");
        probed("W3", rows, &|rows| w3::<P>(p, "W3", rows));
    }
    if a.wants("W3S") {
        step("W3S");
        probed("W3S", rows, &|rows| w3::<P>(p, "W3S", rows));
    }
    if a.wants("W4") {
        step("W4");
        probed("W4", rows, &|rows| w4::<P>(p, a.run, "W4", rows));
    }
    if a.wants("W5") {
        step("W5");
        probed("W5", rows, &|rows| w5::<P>(p, rows));
    }
    if a.wants("W7") {
        step("W7");
        probed("W7", rows, &|rows| w7::<P>(p, "W7", rows));
    }
    if a.wants("W7X8") {
        step("W7x8");
        probed("W7X8", rows, &|rows| w7::<P>(p, "W7X8", rows));
    }
    if a.wants("W8") {
        step("W8");
        w8::<P>(p, rows);
    }
    if a.wants("W9") {
        step("W9");
        w9::<P>(p, "W9", rows);
    }
    // Under load: two busy loops at this process's priority, started before
    // and killed after each workload (no placement probe: it needs idle CPUs).
    if a.wants("W4L") {
        step("W4L (2 burners)");
        let burners = Burners::start(2);
        w4::<P>(p, a.run, "W4L", rows);
        rows.push(row(P::NAME, "W4L", "burners", "cores", burners.cores()));
    }
    if a.wants("W9L") {
        step("W9L (2 burners)");
        let burners = Burners::start(2);
        w9::<P>(p, "W9L", rows);
        rows.push(row(P::NAME, "W9L", "burners", "cores", burners.cores()));
    }
}

// --------------------------------------------------------------------------
// W9: timeouts (most cancelled before they fire), and the loaded variants
// --------------------------------------------------------------------------

/// This thread's context switches so far: (voluntary, involuntary)
/// (`getrusage(RUSAGE_THREAD)`).
fn thread_switches() -> (u64, u64) {
    // SAFETY: `rusage` is plain data; all zeros is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid `who` and a valid out-pointer.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    (ru.ru_nvcsw as u64, ru.ru_nivcsw as u64)
}

/// This thread's CPU time, ns (`CLOCK_THREAD_CPUTIME_ID`).
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id and a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// User + system CPU time of every thread of this process so far
/// (`getrusage(RUSAGE_SELF)`; threads that exited included), ns.
fn process_cpu_ns() -> u64 {
    // SAFETY: `rusage` is plain data; getrusage fills it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid `who` and a valid out-pointer.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Busy-loop processes holding the CPUs (W4L, W9L): this binary again, in
/// `--burn` mode, at the caller's priority. Killed by pid when dropped.
struct Burners {
    children: Vec<std::process::Child>,
    started: Instant,
    cpu0: u64,
}

impl Burners {
    fn start(n: usize) -> Burners {
        let exe = std::env::current_exe().expect("current_exe");
        let children: Vec<_> = (0..n)
            .map(|_| {
                std::process::Command::new(&exe)
                    .arg("--burn")
                    .stdin(std::process::Stdio::null())
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .spawn()
                    .expect("spawn a burner")
            })
            .collect();
        // Let them get going (and the scheduler see them as CPU-bound).
        thread::sleep(Duration::from_millis(200));
        let mut b = Burners {
            children,
            started: Instant::now(),
            cpu0: 0,
        };
        b.cpu0 = b.cpu_ns();
        b
    }

    /// The burners' CPU time so far, ns (`/proc/<pid>/stat` utime + stime).
    fn cpu_ns(&self) -> u64 {
        // SAFETY: sysconf has no preconditions.
        let tck = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
        self.children
            .iter()
            .map(|c| {
                let stat =
                    std::fs::read_to_string(format!("/proc/{}/stat", c.id())).unwrap_or_default();
                let ticks: u64 = stat
                    .rsplit_once(')')
                    .map(|(_, rest)| {
                        rest.split_whitespace()
                            .skip(11)
                            .take(2)
                            .filter_map(|f| f.parse::<u64>().ok())
                            .sum()
                    })
                    .unwrap_or(0);
                ticks * 1_000_000_000 / tck
            })
            .sum()
    }

    /// Cores' worth of CPU the burners got since they started.
    fn cores(&self) -> f64 {
        (self.cpu_ns() - self.cpu0) as f64 / self.started.elapsed().as_nanos() as f64
    }
}

impl Drop for Burners {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill(); // SIGKILL to this child's pid
            let _ = c.wait();
        }
    }
}

/// `--burn`: spin until killed.
fn burn() -> ! {
    let mut x = 0u64;
    loop {
        x = std::hint::black_box(x.wrapping_add(1));
    }
}

/// A sharded counter (each thread adds to its own line).
struct Sharded([CachePadded<AtomicU64>; 16]);

impl Sharded {
    fn new() -> Sharded {
        Sharded(std::array::from_fn(|_| CachePadded::new(AtomicU64::new(0))))
    }
    #[inline]
    fn add(&self, n: u64) {
        thread_local! {
            static SHARD: usize = {
                static NEXT: AtomicU64 = AtomicU64::new(0);
                NEXT.fetch_add(1, Ordering::Relaxed) as usize % 16
            };
        }
        let i = SHARD.with(|s| *s);
        self.0[i].fetch_add(n, Ordering::Relaxed);
    }
    fn sum(&self) -> u64 {
        self.0.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }
}

/// What W9's closures write (leaked; indexed by the task's global number).
struct W9St {
    base: Instant,
    /// The task ran.
    fired: Vec<AtomicBool>,
    /// When a task whose cancel was planned ran, ns since `base` + 1.
    fired_at: Vec<AtomicU64>,
    /// When a sampled task's closure was dropped, ns since `base` + 1.
    dropped_at: Vec<AtomicU64>,
    /// Runs of tasks that are never cancelled.
    fired_kept: CachePadded<AtomicU64>,
    /// Closures dropped (run or not).
    drops: Sharded,
}

impl W9St {
    #[inline]
    fn now(&self) -> u64 {
        self.base.elapsed().as_nanos() as u64 + 1
    }
}

const W9_CANCEL: u8 = 1;
const W9_SAMPLED: u8 = 2;
/// One cancel in this many records when it returned, and its closure when
/// it was dropped (the closure lifetime's sample).
const W9_SAMPLE_EVERY: usize = 8;

/// Owned by each W9 closure: records the run and the drop.
struct W9Guard {
    st: &'static W9St,
    idx: u32,
    flags: u8,
}

impl W9Guard {
    #[inline]
    fn fire(&self) {
        let st = self.st;
        st.fired[self.idx as usize].store(true, Ordering::Relaxed);
        if self.flags & W9_CANCEL != 0 {
            st.fired_at[self.idx as usize].store(st.now(), Ordering::Relaxed);
        } else {
            st.fired_kept.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl Drop for W9Guard {
    #[inline]
    fn drop(&mut self) {
        if self.flags & W9_SAMPLED != 0 {
            self.st.dropped_at[self.idx as usize].store(self.st.now(), Ordering::Relaxed);
        }
        self.st.drops.add(1);
    }
}

/// One producer's plan, drawn before the run.
struct W9Plan {
    /// Global number of its first task.
    first: u32,
    delay: Vec<Duration>,
    flags: Vec<u8>,
    /// (when to cancel, ns after the start; local task number), by time.
    cancels: Vec<(u64, u32)>,
}

fn w9_plan(p: &Params, seed: u64, first: u32) -> W9Plan {
    let n = (p.w9_rate as u128 * p.w9_duration.as_nanos() / 1_000_000_000) as usize;
    let period = 1_000_000_000 / p.w9_rate;
    let mut rng = Rng::new(seed);
    let mut delay = Vec::with_capacity(n);
    let mut flags = Vec::with_capacity(n);
    let mut cancels = Vec::with_capacity(n);
    let mut k = 0usize;
    for i in 0..n {
        delay.push(rng.duration(Duration::from_millis(5), Duration::from_millis(10)));
        let cancel = rng.below(10) < 9;
        let at = i as u64 * period + rng.below(4_000_000);
        let mut f = 0;
        if cancel {
            f |= W9_CANCEL;
            if k % W9_SAMPLE_EVERY == 0 {
                f |= W9_SAMPLED;
            }
            k += 1;
            cancels.push((at, i as u32));
        }
        flags.push(f);
    }
    cancels.sort_unstable();
    W9Plan {
        first,
        delay,
        flags,
        cancels,
    }
}

/// What one producer measured.
#[derive(Default)]
struct W9Out {
    scheduled: u64,
    cancelled: u64,
    wall_sched: u64,
    wall_cancel: u64,
    cpu_sched: u64,
    cpu_cancel: u64,
    /// Context switches inside the schedule loops: (voluntary, involuntary).
    /// A voluntary one inside a loop is a wait (a contended lock: the loops
    /// never sleep); an involuntary one is a preemption.
    csw_sched: (u64, u64),
    /// The same inside the cancel loops.
    csw_cancel: (u64, u64),
    /// Involuntary switches over the producer's whole run (as the Java
    /// harness counts them, which cannot read them per loop cheaply).
    preempted: u64,
    /// Worst lag of a burst's start behind the plan, ns.
    max_lag: u64,
    /// (global task, when its cancel returned, ns since base + 1).
    returned: Vec<(u32, u64)>,
    /// Local tasks whose cancel returned true.
    cancel_ok: Vec<bool>,
    /// Per burst: (first cancel position, cancel phase start, end), ns since base.
    bursts: Vec<(u32, u64, u64)>,
}

/// The paced loop of one W9 producer: every burst schedules what the plan
/// says is due by now, then cancels what is due by now (in cancel-time
/// order, handles kept in a queue by task number), then sleeps.
fn w9_producer<P: BenchPool>(pool: &P, plan: &W9Plan, st: &'static W9St, rate: u64) -> W9Out {
    const QUANTUM: u64 = 200_000; // ns between bursts at least
    let period = 1_000_000_000 / rate;
    let n = plan.delay.len();
    let m = plan.cancels.len();
    let mut out = W9Out {
        cancel_ok: vec![false; n],
        returned: Vec::with_capacity(m / W9_SAMPLE_EVERY + 1),
        ..W9Out::default()
    };
    let mut ring: std::collections::VecDeque<Option<P::Handle>> =
        std::collections::VecDeque::with_capacity(4096);
    let mut ring_base = 0usize;
    let (mut next_s, mut next_c) = (0usize, 0usize);
    let ns = |t: Instant| t.duration_since(st.base).as_nanos() as u64;
    let sw0 = thread_switches();
    while next_s < n || next_c < m {
        let s0 = thread_switches();
        let c0 = thread_cpu_ns();
        let top = Instant::now();
        let now = ns(top);
        if next_s < n {
            out.max_lag = out.max_lag.max(now.saturating_sub(next_s as u64 * period));
        }
        while next_s < n && next_s as u64 * period <= now {
            let idx = plan.first + next_s as u32;
            let flags = plan.flags[next_s];
            let g = W9Guard { st, idx, flags };
            let h = pool.schedule(plan.delay[next_s], move || g.fire());
            ring.push_back((flags & W9_CANCEL != 0).then_some(h));
            next_s += 1;
        }
        let t1 = Instant::now();
        let c1 = thread_cpu_ns();
        let s1 = thread_switches();
        let t2 = Instant::now();
        out.bursts.push((next_c as u32, ns(t2), 0));
        while next_c < m && plan.cancels[next_c].0 <= now {
            let i = plan.cancels[next_c].1 as usize;
            let h = ring[i - ring_base].take().expect("a pending handle");
            let ok = P::try_cancel(&h);
            drop(h);
            out.cancel_ok[i] = ok;
            if plan.flags[i] & W9_SAMPLED != 0 {
                out.returned.push((plan.first + i as u32, st.now()));
            }
            next_c += 1;
        }
        let t3 = Instant::now();
        let c3 = thread_cpu_ns();
        let s3 = thread_switches();
        out.csw_sched.0 += s1.0 - s0.0;
        out.csw_sched.1 += s1.1 - s0.1;
        out.csw_cancel.0 += s3.0 - s1.0;
        out.csw_cancel.1 += s3.1 - s1.1;
        out.bursts.last_mut().expect("this burst").2 = ns(t3);
        while ring.front().is_some_and(|h| h.is_none()) && ring_base < next_s {
            ring.pop_front();
            ring_base += 1;
        }
        out.wall_sched += (t1 - top).as_nanos() as u64;
        out.wall_cancel += (t3 - t2).as_nanos() as u64;
        out.cpu_sched += c1 - c0;
        out.cpu_cancel += c3 - c1;
        let next_event = match (next_s < n, next_c < m) {
            (true, true) => (next_s as u64 * period).min(plan.cancels[next_c].0),
            (true, false) => next_s as u64 * period,
            (false, true) => plan.cancels[next_c].0,
            (false, false) => break,
        };
        let now = ns(Instant::now());
        thread::sleep(Duration::from_nanos(
            next_event.saturating_sub(now).max(QUANTUM),
        ));
    }
    out.preempted = thread_switches().1 - sw0.1;
    out.scheduled = n as u64;
    out.cancelled = m as u64;
    out
}

/// W9: 2 producers each schedule `w9_rate` timeouts a second (paced) for
/// `w9_duration`, delays in [5, 15) ms, and cancel 90 % of them 0–4 ms
/// after scheduling; then wait until the other 10 % ran. Rows under `label`
/// (W9, or W9L under load).
fn w9<P: BenchPool>(p: &Params, label: &str, rows: &mut Vec<Row>) {
    let plans: Vec<W9Plan> = (0..2u32)
        .map(|k| {
            let n = (p.w9_rate as u128 * p.w9_duration.as_nanos() / 1_000_000_000) as u32;
            w9_plan(p, SEED_W9 + k as u64, k * n)
        })
        .collect();
    let total: usize = plans.iter().map(|pl| pl.delay.len()).sum();
    let kept: u64 = plans
        .iter()
        .map(|pl| (pl.delay.len() - pl.cancels.len()) as u64)
        .sum();
    // One pool of two workers; or, split, one pool of one worker per
    // producer (each producer schedules and cancels on its own pool only).
    let pools: Vec<P> = match p.w9_split {
        false => vec![P::with_threads(p.w9_threads)],
        true => vec![P::with_threads(1), P::with_threads(1)],
    };
    // Start both workers before the clock starts.
    let latch = Latch::leak(4);
    for k in 0..4 {
        pools[k % pools.len()].execute(move || latch.hit());
    }
    latch.wait(Duration::from_secs(10));
    let st: &'static W9St = Box::leak(Box::new(W9St {
        base: Instant::now() + Duration::from_millis(2),
        fired: (0..total).map(|_| AtomicBool::new(false)).collect(),
        fired_at: (0..total).map(|_| AtomicU64::new(0)).collect(),
        dropped_at: (0..total).map(|_| AtomicU64::new(0)).collect(),
        fired_kept: CachePadded::new(AtomicU64::new(0)),
        drops: Sharded::new(),
    }));
    thread::sleep(st.base.saturating_duration_since(Instant::now()));
    let cpu0 = process_cpu_ns();
    let outs: Vec<W9Out> = thread::scope(|s| {
        let hs: Vec<_> = plans
            .iter()
            .enumerate()
            .map(|(k, plan)| {
                let pool = &pools[k % pools.len()];
                s.spawn(move || w9_producer(pool, plan, st, p.w9_rate))
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().expect("producer"))
            .collect()
    });
    // Right after the last cancels: what is still alive and queued.
    let alive = total as u64 - st.drops.sum();
    let kept_pending = kept - st.fired_kept.load(Ordering::Relaxed);
    let queue_len = pools
        .iter()
        .map(|pool| pool.queue_len())
        .sum::<Option<usize>>();
    let t_wait = Instant::now();
    while st.fired_kept.load(Ordering::Relaxed) < kept && t_wait.elapsed() < Duration::from_secs(10)
    {
        thread::sleep(Duration::from_micros(500));
    }
    let cpu = process_cpu_ns() - cpu0;
    let end = st.now();
    let fired_kept = st.fired_kept.load(Ordering::Relaxed);
    let n_pools = pools.len();
    for pool in pools {
        pool.teardown();
    }

    let sum = |f: fn(&W9Out) -> u64| outs.iter().map(f).sum::<u64>();
    let (scheduled, cancelled) = (sum(|o| o.scheduled), sum(|o| o.cancelled));
    // A planned cancel's task that ran: before its cancel's burst ended (a
    // late cancel: the producer fell behind its plan), or after a cancel
    // that returned true (a cancel that did not stop it).
    let (mut fired_after_cancel, mut late) = (0u64, 0u64);
    for (plan, o) in plans.iter().zip(&outs) {
        let mut pos = vec![0u32; plan.delay.len()];
        for (k, &(_, i)) in plan.cancels.iter().enumerate() {
            pos[i as usize] = k as u32;
        }
        for &(_, i) in &plan.cancels {
            let g = (plan.first + i) as usize;
            if !st.fired[g].load(Ordering::Relaxed) {
                continue;
            }
            let at = st.fired_at[g].load(Ordering::Relaxed) - 1;
            let b = o
                .bursts
                .partition_point(|&(k0, _, _)| k0 <= pos[i as usize])
                - 1;
            if at > o.bursts[b].2 && o.cancel_ok[i as usize] {
                fired_after_cancel += 1;
            } else {
                late += 1;
            }
        }
    }
    // Closure lifetime after cancel returned (sampled cancels that won).
    let mut life: Vec<i64> = Vec::new();
    let (mut in_cancel, mut never) = (0u64, 0u64);
    for o in &outs {
        for &(g, ret) in &o.returned {
            let local = g - plans.iter().rev().find(|pl| pl.first <= g).unwrap().first;
            if !o.cancel_ok[local as usize] || st.fired[g as usize].load(Ordering::Relaxed) {
                continue; // it ran: not a cancelled closure
            }
            let d = st.dropped_at[g as usize].load(Ordering::Relaxed);
            if d == 0 {
                never += 1;
                life.push((end - ret) as i64);
            } else if d <= ret {
                in_cancel += 1;
                life.push(0);
            } else {
                life.push((d - ret) as i64);
            }
        }
    }
    life.sort_unstable();
    let samples = life.len().max(1) as f64;
    let us = |x: i64| x as f64 / 1000.0;
    let w = label;
    let name = P::NAME;
    let pair_wall = (sum(|o| o.wall_sched) as f64 / scheduled as f64)
        + (sum(|o| o.wall_cancel) as f64 / cancelled as f64);
    let pair_cpu = (sum(|o| o.cpu_sched) as f64 / scheduled as f64)
        + (sum(|o| o.cpu_cancel) as f64 / cancelled as f64);
    rows.push(row(name, w, "rate/producer", "1/s", p.w9_rate as f64));
    if p.w9_split {
        // Said in the output, so a split run is never read as the usual one.
        rows.push(row(name, w, "split: pools", "count", n_pools as f64));
    } else if p.w9_threads != 2 {
        rows.push(row(name, w, "workers", "count", p.w9_threads as f64));
    }
    rows.push(row(name, w, "pair (caller)", "ns", pair_wall));
    rows.push(row(
        name,
        w,
        "schedule (caller)",
        "ns/op",
        sum(|o| o.wall_sched) as f64 / scheduled as f64,
    ));
    rows.push(row(
        name,
        w,
        "cancel (caller)",
        "ns/op",
        sum(|o| o.wall_cancel) as f64 / cancelled as f64,
    ));
    rows.push(row(name, w, "pair (caller cpu)", "ns", pair_cpu));
    // Per 1k operations: waits (voluntary switches) and preemptions
    // (involuntary) inside each loop, from getrusage(RUSAGE_THREAD).
    let per_k = |n: u64, ops: u64| n as f64 * 1000.0 / ops.max(1) as f64;
    let (sched_sw, cancel_sw) = (
        (sum(|o| o.csw_sched.0), sum(|o| o.csw_sched.1)),
        (sum(|o| o.csw_cancel.0), sum(|o| o.csw_cancel.1)),
    );
    for (metric, n, ops) in [
        ("schedule waits", sched_sw.0, scheduled),
        ("schedule preempted", sched_sw.1, scheduled),
        ("cancel waits", cancel_sw.0, cancelled),
        ("cancel preempted", cancel_sw.1, cancelled),
    ] {
        rows.push(row(name, w, metric, "per 1k", per_k(n, ops)));
    }
    // Over the producer's whole run, as the Java harness counts it.
    rows.push(row(
        name,
        w,
        "producer preempted",
        "per 1k pairs",
        per_k(sum(|o| o.preempted), cancelled),
    ));
    rows.push(row(
        name,
        w,
        "cpu all threads",
        "ns/timeout",
        cpu as f64 / scheduled as f64,
    ));
    rows.push(row(
        name,
        w,
        "kept fired",
        "ratio",
        fired_kept as f64 / kept as f64,
    ));
    rows.push(row(
        name,
        w,
        "cancelled fired",
        "count",
        fired_after_cancel as f64,
    ));
    rows.push(row(name, w, "late cancels", "count", late as f64));
    rows.push(row(name, w, "alive after", "closures", alive as f64));
    rows.push(row(
        name,
        w,
        "cancelled alive",
        "closures",
        alive.saturating_sub(kept_pending) as f64,
    ));
    if let Some(q) = queue_len {
        rows.push(row(name, w, "queue_len after", "tasks", q as f64));
    }
    rows.push(row(name, w, "life p50", "us", us(percentile(&life, 50.0))));
    rows.push(row(name, w, "life p99", "us", us(percentile(&life, 99.0))));
    rows.push(row(
        name,
        w,
        "life max",
        "us",
        us(life.last().copied().unwrap_or(0)),
    ));
    rows.push(row(
        name,
        w,
        "dropped in cancel",
        "ratio",
        in_cancel as f64 / samples,
    ));
    if never > 0 {
        rows.push(row(name, w, "never dropped", "count", never as f64));
    }
    rows.push(row(
        name,
        w,
        "pacing lag max",
        "us",
        outs.iter().map(|o| o.max_lag).max().unwrap_or(0) as f64 / 1000.0,
    ));
}

// --------------------------------------------------------------------------
// Output
// --------------------------------------------------------------------------

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

fn print_table(rows: &[Row], imps: &[String]) {
    let mut keys: Vec<(String, String, String)> = Vec::new();
    for r in rows {
        let k = (r.workload.clone(), r.metric.clone(), r.unit.clone());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.sort_by(|a, b| a.0.cmp(&b.0));
    print!("{:<4} {:<18} {:<8}", "work", "metric", "unit");
    for i in imps {
        print!(" {:>22}", i);
    }
    println!();
    for (w, m, u) in &keys {
        print!("{:<4} {:<18} {:<8}", w, m, u);
        for i in imps {
            let v = rows
                .iter()
                .find(|r| &r.imp == i && &r.workload == w && &r.metric == m)
                .map(|r| fmt_value(r.value))
                .unwrap_or_else(|| "-".into());
            print!(" {:>22}", v);
        }
        println!();
    }
}

fn write_outputs(rows: &[Row], a: &Args, p: &Params, load: (&str, &str), secs: f64) {
    let csv = a
        .csv
        .clone()
        .unwrap_or_else(|| results_dir().join("workloads.csv"));
    if let Some(d) = csv.parent() {
        let _ = std::fs::create_dir_all(d);
    }
    let mut s = String::from("impl,workload,metric,unit,value\n");
    for r in rows {
        s += &format!(
            "{},{},{},{},{}\n",
            r.imp, r.workload, r.metric, r.unit, r.value
        );
    }
    std::fs::write(&csv, s).expect("write csv");
    let json = csv.with_extension("json");
    let mut j = String::from("{\n");
    j += &format!(
        "  \"harness\": \"workloads.rs\",\n  \"run\": {},\n  \"quick\": {},\n  \"threads\": 2,\n",
        a.run, p.quick
    );
    j += &format!(
        "  \"loadavg_start\": \"{}\",\n  \"loadavg_end\": \"{}\",\n  \"wall_seconds\": {:.1},\n",
        load.0, load.1, secs
    );
    j += "  \"rows\": [\n";
    for (i, r) in rows.iter().enumerate() {
        let v = if r.value.is_finite() {
            format!("{}", r.value)
        } else {
            "null".into()
        };
        j += &format!(
            "    {{\"impl\": \"{}\", \"workload\": \"{}\", \"metric\": \"{}\", \"unit\": \"{}\", \"value\": {}}}{}\n",
            r.imp,
            r.workload,
            r.metric,
            r.unit,
            v,
            if i + 1 < rows.len() { "," } else { "" }
        );
    }
    j += "  ]\n}\n";
    std::fs::write(&json, j).expect("write json");
    eprintln!("wrote {} and {}", csv.display(), json.display());
}

fn main() {
    if std::env::args().any(|x| x == "--burn") {
        burn();
    }
    let a = parse_args();
    let p = Params::from_env();
    let load0 = loadavg();
    let t = Instant::now();
    eprintln!(
        "workloads: quick={} impls={:?} run={} loadavg={}",
        p.quick, a.imps, a.run, load0
    );
    let mut rows = Vec::new();
    for imp in &a.imps {
        if imp == Sp::NAME {
            run_all::<Sp>(&p, &a, &mut rows);
        } else if imp == Tokio::NAME {
            run_all::<Tokio>(&p, &a, &mut rows);
        } else if imp == Owner::NAME {
            run_all::<Owner>(&p, &a, &mut rows);
        } else {
            run_all::<Stp>(&p, &a, &mut rows);
        }
    }
    let load1 = loadavg();
    let secs = t.elapsed().as_secs_f64();
    println!(
        "\nschedpool workloads (run {}, quick={}, {:.1} s, loadavg {} -> {})",
        a.run, p.quick, secs, load0, load1
    );
    print_table(&rows, &a.imps);
    write_outputs(&rows, &a, &p, (&load0, &load1), secs);
}
