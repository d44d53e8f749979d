//! Criterion benches of the timing workloads of the "Performance" issue, each
//! group running `schedpool` and the `scheduled-thread-pool` crate on identical
//! tasks (same seeded delays, same cancel order):
//!
//! * `W1_schedule_1M`   — schedule 1M no-op tasks, delays in [1 h, 2 h), one thread (per element)
//! * `W2_cancel_1M`     — cancel all of them in random order (per element)
//! * `W3_zero_delay_1M` — 1M zero-delay tasks into 2 workers until the last ran (per element)
//! * `W7_2_producers`   — 2 × 500k tasks, delays 0–10 ms, while the pool runs them
//! * `W8_cancel_vs_pending` — one cancel with 1k, 10k, 100k, 1M pending
//!
//! Set-up and tear-down (building the queue, dropping 1M pending tasks) are not
//! timed (`iter_custom`). `SCHEDPOOL_BENCH_QUICK=1` scales everything down.
//! The one-off measurements (lateness, fixed-rate drift, heap) are in `workloads.rs`.
//!
//! ```text
//! cargo bench --bench peer_compare                 # all groups
//! cargo bench --bench peer_compare -- W8           # one group
//! ```

#[path = "common/mod.rs"]
mod common;

use common::*;
use criterion::{
    criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput,
};
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};

fn w1<P: BenchPool>(iters: u64, ds: &[Duration]) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let pool = P::with_threads(2);
        let mut hs = Vec::with_capacity(ds.len());
        let t = Instant::now();
        for &d in ds {
            hs.push(pool.schedule(d, noop));
        }
        total += t.elapsed();
        drop(hs);
        pool.teardown();
    }
    total
}

fn w2<P: BenchPool>(iters: u64, ds: &[Duration], perm: &[u32]) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let pool = P::with_threads(2);
        let hs: Vec<_> = ds.iter().map(|&d| pool.schedule(d, noop)).collect();
        let t = Instant::now();
        for &i in perm {
            P::cancel(&hs[i as usize]);
        }
        total += t.elapsed();
        drop(hs);
        pool.teardown();
    }
    total
}

fn w3<P: BenchPool>(iters: u64, n: usize) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let pool = P::with_threads(2);
        let latch = Latch::leak(n);
        let t = Instant::now();
        for _ in 0..n {
            pool.execute(move || latch.hit());
        }
        assert!(latch.wait(Duration::from_secs(120)), "tasks never ran");
        total += t.elapsed();
        pool.teardown();
    }
    total
}

fn w7<P: BenchPool>(iters: u64, d0: &[Duration], d1: &[Duration]) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let pool = P::with_threads(2);
        let latch = Latch::leak(d0.len() + d1.len());
        let barrier = Barrier::new(3);
        total += thread::scope(|s| {
            for d in [d0, d1] {
                let (pool, barrier) = (&pool, &barrier);
                s.spawn(move || {
                    barrier.wait();
                    for &x in d {
                        drop(pool.schedule(x, move || latch.hit()));
                    }
                });
            }
            barrier.wait();
            let t = Instant::now();
            assert!(latch.wait(Duration::from_secs(120)), "tasks never ran");
            t.elapsed()
        });
        pool.teardown();
    }
    total
}

/// W8 state kept across criterion calls: a pool with `n` pending tasks, rebuilt
/// (untimed) after every n/10 cancels so the queue stays within 90–100 % of n.
struct CancelState<P: BenchPool> {
    n: usize,
    ds: Vec<Duration>,
    rng: Rng,
    idx: Vec<u32>,
    cursor: usize,
    live: Option<(P, Vec<P::Handle>)>,
}

impl<P: BenchPool> CancelState<P> {
    fn new(n: usize) -> Self {
        CancelState {
            n,
            ds: delays(SEED_W8 ^ n as u64, n, LONG_MIN, LONG_SPAN),
            rng: Rng::new(SEED_W8 + n as u64),
            idx: (0..n as u32).collect(),
            cursor: usize::MAX,
            live: None,
        }
    }

    fn run(&mut self, iters: u64) -> Duration {
        let k = (self.n / 10).max(1);
        let mut left = iters as usize;
        let mut total = Duration::ZERO;
        while left > 0 {
            if self.cursor >= k {
                if let Some((pool, hs)) = self.live.take() {
                    drop(hs);
                    pool.teardown();
                }
                let pool = P::with_threads(2);
                let hs: Vec<_> = self.ds.iter().map(|&d| pool.schedule(d, noop)).collect();
                for i in 0..k {
                    let j = i + self.rng.below((self.n - i) as u64) as usize;
                    self.idx.swap(i, j);
                }
                self.live = Some((pool, hs));
                self.cursor = 0;
            }
            let m = left.min(k - self.cursor);
            let hs = &self.live.as_ref().unwrap().1;
            let batch = &self.idx[self.cursor..self.cursor + m];
            let t = Instant::now();
            for &i in batch {
                P::cancel(&hs[i as usize]);
            }
            total += t.elapsed();
            self.cursor += m;
            left -= m;
        }
        total
    }

    fn finish(mut self) {
        if let Some((pool, hs)) = self.live.take() {
            drop(hs);
            pool.teardown();
        }
    }
}

fn config(c: &mut Criterion) -> (Params, Duration) {
    let p = Params::from_env();
    let mt = if p.quick {
        Duration::from_millis(300)
    } else {
        Duration::from_secs(2)
    };
    let _ = c;
    (p, mt)
}

fn benches(c: &mut Criterion) {
    let (p, mt) = config(c);
    let n = p.n_pending;
    let label = |n: usize| {
        if n % 1_000_000 == 0 {
            format!("{}M", n / 1_000_000)
        } else {
            format!("{}k", n / 1000)
        }
    };

    let ds = delays(SEED_DELAYS, n, LONG_MIN, LONG_SPAN);
    let perm = permutation(SEED_PERM, n);

    {
        let mut g = c.benchmark_group(format!("W1_schedule_{}", label(n)));
        g.sampling_mode(SamplingMode::Flat)
            .sample_size(10)
            .warm_up_time(mt / 2)
            .measurement_time(mt)
            .throughput(Throughput::Elements(n as u64));
        g.bench_function(Sp::NAME, |b| b.iter_custom(|it| w1::<Sp>(it, &ds)));
        g.bench_function(Stp::NAME, |b| b.iter_custom(|it| w1::<Stp>(it, &ds)));
        g.finish();
    }
    {
        let mut g = c.benchmark_group(format!("W2_cancel_{}", label(n)));
        g.sampling_mode(SamplingMode::Flat)
            .sample_size(10)
            .warm_up_time(mt / 4)
            .measurement_time(mt / 2)
            .throughput(Throughput::Elements(n as u64));
        g.bench_function(Sp::NAME, |b| b.iter_custom(|it| w2::<Sp>(it, &ds, &perm)));
        g.bench_function(Stp::NAME, |b| b.iter_custom(|it| w2::<Stp>(it, &ds, &perm)));
        g.finish();
    }
    drop((ds, perm));
    {
        let nz = p.n_zero;
        let mut g = c.benchmark_group(format!("W3_zero_delay_{}", label(nz)));
        g.sampling_mode(SamplingMode::Flat)
            .sample_size(10)
            .warm_up_time(mt / 2)
            .measurement_time(mt)
            .throughput(Throughput::Elements(nz as u64));
        g.bench_function(Sp::NAME, |b| b.iter_custom(|it| w3::<Sp>(it, nz)));
        g.bench_function(Stp::NAME, |b| b.iter_custom(|it| w3::<Stp>(it, nz)));
        g.finish();
    }
    {
        let np = p.n_per_producer;
        let d0 = delays(SEED_PRODUCER, np, Duration::ZERO, p.w7_window);
        let d1 = delays(SEED_PRODUCER + 1, np, Duration::ZERO, p.w7_window);
        let mut g = c.benchmark_group("W7_2_producers");
        g.sampling_mode(SamplingMode::Flat)
            .sample_size(10)
            .warm_up_time(mt / 2)
            .measurement_time(mt)
            .throughput(Throughput::Elements(2 * np as u64));
        g.bench_function(Sp::NAME, |b| b.iter_custom(|it| w7::<Sp>(it, &d0, &d1)));
        g.bench_function(Stp::NAME, |b| b.iter_custom(|it| w7::<Stp>(it, &d0, &d1)));
        g.finish();
    }
    {
        let mut g = c.benchmark_group("W8_cancel_vs_pending");
        g.sample_size(20)
            .warm_up_time(mt / 4)
            .measurement_time(mt / 2)
            .throughput(Throughput::Elements(1));
        for &size in &p.w8_sizes {
            let mut st = CancelState::<Sp>::new(size);
            g.bench_with_input(BenchmarkId::new(Sp::NAME, size), &size, |b, _| {
                b.iter_custom(|it| st.run(it))
            });
            st.finish();
            let mut st = CancelState::<Stp>::new(size);
            g.bench_with_input(BenchmarkId::new(Stp::NAME, size), &size, |b, _| {
                b.iter_custom(|it| st.run(it))
            });
            st.finish();
        }
        g.finish();
    }
}

criterion_group!(peer, benches);
criterion_main!(peer);
