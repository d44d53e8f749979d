//! W5 seen from inside: 1,000 fixed-rate tasks at 1 ms on 2 workers, and
//! how many runs complete in each 100 ms window (100k are due), plus the
//! process's CPU time. Tells a shortfall of throughput (every window a little
//! short) from a stall (one window near zero). `docs/performance.md`, W5.
//!
//! `cargo bench --bench w5_windows [-- SECONDS]` (default 2)

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use schedpool::ScheduledThreadPool;

static RUNS: AtomicU64 = AtomicU64::new(0);

/// User + system CPU of this process, in seconds (Linux; 0 elsewhere).
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    let rest = &stat[stat.rfind(')').map_or(0, |i| i + 2)..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}

fn main() {
    let seconds: u64 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(2);
    let pool = ScheduledThreadPool::new(2);
    let handles: Vec<_> = (0..1000)
        .map(|_| {
            pool.schedule_at_fixed_rate(
                || {
                    // The W5 body reads the clock to measure its drift.
                    std::hint::black_box(Instant::now());
                    RUNS.fetch_add(1, Ordering::Relaxed);
                },
                Duration::ZERO,
                Duration::from_millis(1),
            )
            .expect("schedule")
        })
        .collect();
    let (t0, cpu0) = (Instant::now(), cpu_seconds());
    let mut last = 0;
    let mut windows = Vec::new();
    for i in 1..=seconds * 10 {
        let at = t0 + Duration::from_millis(100 * i);
        std::thread::sleep(at.saturating_duration_since(Instant::now()));
        let runs = RUNS.load(Ordering::Relaxed);
        windows.push((runs - last) / 1000);
        last = runs;
    }
    let (wall, cpu) = (t0.elapsed().as_secs_f64(), cpu_seconds() - cpu0);
    println!("runs per 100 ms window, thousands (100 due): {windows:?}");
    println!(
        "{last} runs in {wall:.2} s ({:.4} of the ~{:.0} due); {cpu:.2} s of CPU, {:.2} us per run",
        last as f64 / (wall * 1e6),
        wall * 1e6,
        cpu * 1e6 / last as f64
    );
    for h in &handles {
        h.cancel();
    }
}
