//! The parts a `schedule` is made of, each timed alone on this machine: the
//! floor under W1 (ns per schedule). `docs/performance.md` sets them against
//! the whole.
//!
//! `cargo bench --bench parts`

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion};

/// About the size of a pending no-op task (W6): the allocation a schedule makes.
struct TaskSized {
    _words: [u64; 6],
}

fn parts(c: &mut Criterion) {
    let mut g = c.benchmark_group("schedule_parts");
    g.bench_function("Instant::now", |b| b.iter(|| black_box(Instant::now())));
    g.bench_function("Arc::new(64 B) + drop", |b| {
        b.iter(|| black_box(Arc::new(TaskSized { _words: [0; 6] })))
    });
    let lock = parking_lot::Mutex::new(0u64);
    g.bench_function("uncontended lock + unlock", |b| {
        b.iter(|| *black_box(&lock).lock() += 1)
    });
    let counter = AtomicU64::new(0);
    g.bench_function("atomic fetch_add", |b| {
        b.iter(|| black_box(&counter).fetch_add(1, Ordering::Relaxed))
    });
    let pool = schedpool::ScheduledThreadPool::new(1);
    let far = std::time::Duration::from_secs(3600);
    // An earlier head, so that the measured tasks never become the head
    // (a new head wakes the leader: a futex call, not what W1 measures).
    let _anchor = pool.schedule(|| (), far / 2).unwrap();
    g.bench_function("whole: schedule + cancel, 1-task queue", |b| {
        b.iter(|| {
            let h = pool.schedule(|| (), far).unwrap();
            h.cancel();
        })
    });
    g.finish();
}

criterion_group!(benches, parts);
criterion_main!(benches);
