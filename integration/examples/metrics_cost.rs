//! What the `metrics` feature costs per task, with a real recorder: the
//! numbers in docs/performance-log.md ("Metrics").
//!
//! Alternating rounds, one binary (feature `metrics` on): a pool built with
//! no recorder (its handles are the facade's no-ops) against one built
//! under the Prometheus exporter's recorder, each scheduling and running
//! `N` zero-delay no-op tasks on 2 workers (as `benches/tracing_cost.rs`).
//! Then the per-run work alone, on one thread: a clock read and two
//! histogram records, on no-op and on Prometheus handles.
//!
//! Run: `cargo run --release -p schedpool-integration --features metrics --example metrics_cost`
//! (env: `N` tasks per round, default 200000; `ROUNDS`, default 7).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use schedpool::ScheduledThreadPool;
use schedpool_integration::prometheus;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// CPU time of the calling thread, ns (Linux: /proc/thread-self/schedstat;
/// 0 elsewhere). CPU rather than wall time: on a loaded machine a thread's
/// wall time counts other processes' slices too.
fn thread_cpu() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// CPU time of every thread of the process, ns (/proc/self/task/*/schedstat).
fn process_cpu() -> u64 {
    std::fs::read_dir("/proc/self/task")
        .map(|d| {
            d.filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("schedstat")).ok())
                .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
                .sum()
        })
        .unwrap_or(0)
}

/// (wall ns, CPU ns of all threads) per zero-delay task (schedule + run) on `pool`.
fn per_task(pool: &ScheduledThreadPool, n: usize) -> (f64, f64) {
    let done = Arc::new(AtomicUsize::new(0));
    let run = |count: usize| {
        done.store(0, Ordering::Relaxed);
        for _ in 0..count {
            let d = done.clone();
            pool.execute(move || {
                d.fetch_add(1, Ordering::Relaxed);
            })
            .unwrap();
        }
        while done.load(Ordering::Relaxed) < count {
            std::thread::yield_now();
        }
    };
    run(n / 10); // warm up
    let (start, cpu) = (Instant::now(), process_cpu());
    run(n);
    let wall = start.elapsed().as_nanos() as f64 / n as f64;
    (wall, process_cpu().saturating_sub(cpu) as f64 / n as f64)
}

/// CPU ns per (clock read + two histogram records), what a run adds.
fn per_record(lateness: &metrics::Histogram, run_time: &metrics::Histogram, n: usize) -> f64 {
    let cpu = thread_cpu();
    let start = Instant::now();
    let mut last = start;
    for _ in 0..n {
        let now = Instant::now();
        lateness.record(now.duration_since(last).as_secs_f64());
        run_time.record(1e-6);
        last = now;
    }
    thread_cpu().saturating_sub(cpu) as f64 / n as f64
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let n = env("N", 200_000);
    let rounds = env("ROUNDS", 7);
    let recorder = prometheus::recorder();
    let handle = recorder.handle();
    let build = || {
        ScheduledThreadPool::builder()
            .core_threads(2)
            .thread_name("cost")
            .build()
            .unwrap()
    };
    let (mut noop, mut prom) = (Vec::new(), Vec::new());
    let (mut noop_cpu, mut prom_cpu) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let plain = build();
        let recorded = metrics::with_local_recorder(&recorder, build);
        // Alternate which goes first.
        let (a, b) = if round % 2 == 0 {
            (per_task(&plain, n), per_task(&recorded, n))
        } else {
            let b = per_task(&recorded, n);
            (per_task(&plain, n), b)
        };
        println!(
            "round {round}: no recorder {:>7.1} ns/task wall {:>7.1} CPU   prometheus {:>7.1} wall {:>7.1} CPU",
            a.0, a.1, b.0, b.1
        );
        noop.push(a.0);
        prom.push(b.0);
        noop_cpu.push(a.1);
        prom_cpu.push(b.1);
        for pool in [plain, recorded] {
            pool.shutdown();
            pool.await_termination(Duration::from_secs(10));
        }
        handle.run_upkeep();
    }
    println!(
        "median of {rounds}: no recorder {:.1} ns/task wall, {:.1} CPU; prometheus {:.1} wall, {:.1} CPU",
        median(noop),
        median(noop_cpu),
        median(prom),
        median(prom_cpu)
    );

    let m = n * 10;
    let noop = (metrics::Histogram::noop(), metrics::Histogram::noop());
    let prom = metrics::with_local_recorder(&recorder, || {
        (
            metrics::histogram!("cost_lateness_seconds"),
            metrics::histogram!("cost_run_seconds"),
        )
    });
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        a.push(per_record(&noop.0, &noop.1, m));
        b.push(per_record(&prom.0, &prom.1, m));
        handle.run_upkeep();
    }
    println!(
        "per run alone (clock read + 2 records), median of {rounds} x {m}: no-op handles {:.1} CPU ns, prometheus handles {:.1} CPU ns",
        median(a),
        median(b)
    );
}
