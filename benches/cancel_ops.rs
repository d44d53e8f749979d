//! W8 in instructions instead of nanoseconds: how much *work* one cancel
//! does as the queue grows, apart from what the cache makes of it.
//!
//! ```text
//! benches/w8_callgrind.sh            # both pools, 1k .. 1M pending (about 3 minutes)
//! cargo bench --bench cancel_ops -- schedpool 1000000 10000   # one run, natively
//! ```
//!
//! The binary schedules `n` no-op tasks with delays in [1 h, 2 h) (W8's
//! queue), then cancels `k` of them in random order inside
//! [`cancel_batch`], which the script's `callgrind --toggle-collect` counts
//! alone. Instructions per cancel are exact and repeatable whatever else the
//! machine does; they grow with the algorithm (log n for a heap), while
//! W8's wall clock also grows with cache misses.

#[path = "common/mod.rs"]
mod common;

use common::{delays, BenchPool, Rng, Sp, Stp, LONG_MIN, LONG_SPAN};

/// Cancels `picked` handles; the only function callgrind counts.
#[inline(never)]
fn cancel_batch<P: BenchPool>(handles: &[P::Handle], picked: &[u32]) {
    for &i in picked {
        P::cancel(&handles[i as usize]);
    }
}

fn run<P: BenchPool>(n: usize, k: usize) {
    let ds = delays(0x5eed_0008 ^ n as u64, n, LONG_MIN, LONG_SPAN);
    let pool = P::with_threads(2);
    let handles: Vec<_> = ds.iter().map(|&d| pool.schedule(d, common::noop)).collect();
    let mut rng = Rng::new(0x5eed_0008 + n as u64);
    let mut idx: Vec<u32> = (0..n as u32).collect();
    let k = k.min(n);
    for i in 0..k {
        let j = i + rng.below((n - i) as u64) as usize;
        idx.swap(i, j);
    }
    let t = std::time::Instant::now();
    cancel_batch::<P>(&handles, &idx[..k]);
    let ns = t.elapsed().as_nanos() as f64 / k as f64;
    println!("{} n={n} k={k} {ns:.1} ns/cancel", P::NAME);
    drop(handles);
    pool.teardown();
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let which = args.first().map_or("schedpool", String::as_str);
    let n = args
        .get(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let k = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(10_000);
    match which {
        "schedpool" => run::<Sp>(n, k),
        "stp" | "scheduled-thread-pool" => run::<Stp>(n, k),
        other => {
            eprintln!("unknown pool {other:?}: schedpool or stp");
            std::process::exit(2);
        }
    }
}
