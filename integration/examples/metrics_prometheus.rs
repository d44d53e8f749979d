//! schedpool's metrics served to Prometheus: a pool closing order
//! timeouts (a third cancelled) beside a health check that fails now and
//! then, and a durable pool on the
//! in-memory backend, both publishing through the `metrics` facade to the
//! Prometheus exporter's recorder, which `schedpool_integration::prometheus`
//! serves on a std `TcpListener` (no HTTP stack compiled).
//!
//! Run: `cargo run --release -p schedpool-integration --features metrics --example metrics_prometheus`
//! then `curl http://127.0.0.1:9898/metrics` while it runs. Env: `ADDR`
//! (default `127.0.0.1:9898`; port 0 for a free one), `RUN_SECONDS` (how long
//! it runs, default 10; 0 runs until killed). At the end it scrapes itself
//! and prints the `schedpool_` lines.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use schedpool::durable::{DurablePool, MemoryBackend};
use schedpool::{OnFailure, ScheduledThreadPool};
use schedpool_integration::prometheus;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::var("ADDR").unwrap_or_else(|_| "127.0.0.1:9898".into());
    let seconds: u64 = std::env::var("RUN_SECONDS").map_or(Ok(10), |s| s.parse())?;

    // The recorder first: pools register their metrics when built.
    let recorder = prometheus::recorder();
    let endpoint = prometheus::serve(recorder.handle(), addr.as_str())?;
    metrics::set_global_recorder(recorder)?;
    println!("serving {} for {seconds} s", endpoint.url());

    let pool = ScheduledThreadPool::builder()
        .core_threads(2)
        .thread_name("orders") // the label: pool="orders"
        .metrics_interval(Duration::from_millis(500))
        .build()?;
    let durable = DurablePool::builder(MemoryBackend::new())
        .name("reminders")
        .threads(1)
        .max_attempts(2)
        .retry_backoff(Duration::from_millis(50), Duration::from_millis(50))
        .metrics_interval(Duration::from_secs(1))
        .handler("remind", |n: &u64, _| {
            if n % 10 == 0 {
                Err(format!("reminder {n}: mailbox full").into())
            } else {
                Ok(())
            }
        })
        .build()?;

    // A health check whose every fifth run fails (and keeps running).
    let checks = AtomicU64::new(0);
    let health = pool
        .at_fixed_rate(Duration::from_millis(100))
        .on_failure(OnFailure::Continue)
        .start(move || match checks.fetch_add(1, Ordering::Relaxed) % 5 {
            4 => Err("ledger unavailable"),
            _ => Ok(()),
        })?;

    let start = Instant::now();
    let order = AtomicU64::new(0);
    while seconds == 0 || start.elapsed() < Duration::from_secs(seconds) {
        for _ in 0..100 {
            let n = order.fetch_add(1, Ordering::Relaxed);
            let window = Duration::from_millis(5 + n % 50);
            // Close the order when its payment window ends ...
            let timeout = pool.schedule(
                move || std::thread::sleep(Duration::from_micros(50)),
                window,
            )?;
            if n % 3 == 0 {
                timeout.cancel(); // ... unless it is paid in time
            } else {
                timeout.detach();
            }
            if n % 20 == 0 {
                durable.schedule("remind", &format!("reminder-{n}"), &(n / 20), window)?;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }

    health.cancel();
    pool.shutdown();
    pool.await_termination(Duration::from_secs(10));
    durable.shutdown();
    durable.await_termination(Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(100)); // the samplers' last samples
    let page = prometheus::scrape(endpoint.addr())?;
    for line in page.lines().filter(|l| l.starts_with("schedpool_")) {
        if !line.contains("_bucket{") || line.contains("le=\"0.001\"") {
            println!("{line}");
        }
    }
    endpoint.stop();
    Ok(())
}
