//! Request timeouts whose action is async, on a tokio service.
//!
//! Each request calls a flaky backend (most replies are quick, some slower
//! than the 50 ms timeout, one in ten never comes) and schedules its
//! timeout with `pool.schedule_async`: when it fires, its future answers
//! the client with a 504 and writes an audit record, both async. The pool
//! keeps the timing (never early); the futures run on the service's
//! runtime; no runtime thread ever blocks.
//!
//! Exactly once: the reply's arm decides with `cancel_if_not_started()`
//! (true: the timeout never runs, the reply is ours to send; false: the
//! timeout's future has started and answers). One client in twenty hangs
//! up: its handler calls `abort()`, which also stops a timeout future that
//! has started, at its next `.await` (a plain `cancel()` would let it run
//! to its end, as Java's `cancel(false)`). The example checks that every
//! request still connected got exactly one answer.
//!
//! Sizing: a timeout's run holds one of the pool's workers until its
//! future completes (that is how the pool keeps the timing and counts the
//! run). Here each action takes about 1.5 ms, and timeouts fire at up to
//! ~2,000/s: with `POOL_THREADS=4` the actions queue for workers (lateness
//! p50 6.1-6.6 ms, 2 runs on this 2-core machine), with the default 16
//! they do not (p50 70 us), measured 2026-12-05 with `POOL_THREADS=4`
//! and `16` on the command below. Give the pool a worker per action you
//! want running at once.
//!
//! Run: `cargo run --release --all-features --example async_request_timeouts`
//! (`POOL_THREADS=n` to change the pool's size).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use schedpool::ScheduledThreadPool;
use tokio::sync::{mpsc, Semaphore};

const REQUESTS: u64 = 2_000;
const IN_FLIGHT: usize = 200;
const TIMEOUT: Duration = Duration::from_millis(50);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    Reply,
    GatewayTimeout,
}

/// What the backend does with one request.
#[derive(Clone, Copy)]
enum Backend {
    /// Replies after this long.
    Replies(Duration),
    /// Never replies.
    Lost,
}

/// A request's dice: splitmix64 of its id and a salt (deterministic).
fn dice(id: u64, salt: u64) -> u64 {
    let mut z = id.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(salt);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

async fn call_backend(behaviour: Backend) -> &'static str {
    match behaviour {
        Backend::Replies(after) => {
            tokio::time::sleep(after).await;
            "200 OK"
        }
        Backend::Lost => std::future::pending().await,
    }
}

/// An async audit write (a database insert, say).
async fn audit(log: &Mutex<Vec<u64>>, id: u64) {
    tokio::time::sleep(Duration::from_millis(1)).await;
    log.lock().unwrap().push(id);
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let threads = std::env::var("POOL_THREADS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(16);
    let pool = ScheduledThreadPool::new(threads);
    let (answers_tx, mut answers_rx) = mpsc::unbounded_channel::<(u64, Answer)>();
    let audit_log = Arc::new(Mutex::new(Vec::new()));
    let late_us = Arc::new(Mutex::new(Vec::new()));
    let aborted = Arc::new(AtomicU64::new(0));
    let limit = Arc::new(Semaphore::new(IN_FLIGHT));
    let mut hung_up = Vec::new();
    let started = Instant::now();
    let mut requests = Vec::new();
    for id in 0..REQUESTS {
        let behaviour = match dice(id, 1) % 10 {
            0 => Backend::Lost,
            n => Backend::Replies(Duration::from_millis(n * 9)), // 9..81 ms
        };
        let hangs_up = (dice(id, 2) % 20 == 0).then(|| Duration::from_millis(dice(id, 3) % 80));
        if hangs_up.is_some() {
            hung_up.push(id);
        }
        let permit = Arc::clone(&limit).acquire_owned().await?;
        let (pool, tx, log) = (pool.clone(), answers_tx.clone(), Arc::clone(&audit_log));
        let (late_us, aborted) = (Arc::clone(&late_us), Arc::clone(&aborted));
        requests.push(tokio::spawn(async move {
            let _permit = permit;
            let due = Instant::now() + TIMEOUT;
            let timeout_tx = tx.clone();
            // The timeout's action is a future: made and run only if the
            // timeout fires, on this runtime.
            let mut timeout = pool.schedule_async(
                move || async move {
                    late_us
                        .lock()
                        .unwrap()
                        .push(due.elapsed().as_micros() as u64);
                    let _ = timeout_tx.send((id, Answer::GatewayTimeout));
                    audit(&log, id).await;
                },
                TIMEOUT,
            )?;
            let hang_up = async move {
                match hangs_up {
                    Some(after) => tokio::time::sleep(after).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                reply = call_backend(behaviour) => {
                    if timeout.cancel_if_not_started() {
                        let _ = tx.send((id, Answer::Reply)); // the timeout never runs
                    } // else: its future answered with a 504
                    let _ = reply;
                }
                _ = &mut timeout => {} // the 504 went out
                () = hang_up => {
                    // The client is gone: stop the timeout, even mid-run.
                    if timeout.abort() {
                        aborted.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            Ok::<(), schedpool::Rejected>(())
        }));
    }
    drop(answers_tx);
    for request in requests {
        request.await??;
    }
    assert!(pool.wait_idle(Duration::from_secs(30)), "timeouts settled");
    let elapsed = started.elapsed();

    let mut answered: HashMap<u64, Vec<Answer>> = HashMap::new();
    while let Some((id, answer)) = answers_rx.recv().await {
        answered.entry(id).or_default().push(answer);
    }
    let mut replies = 0;
    let mut timeouts = 0;
    for id in 0..REQUESTS {
        let got = answered.get(&id).map_or(&[][..], Vec::as_slice);
        if hung_up.contains(&id) {
            assert!(got.len() <= 1, "request {id} answered {} times", got.len());
        } else {
            assert_eq!(got.len(), 1, "request {id} answered {} times", got.len());
        }
        for answer in got {
            match answer {
                Answer::Reply => replies += 1,
                Answer::GatewayTimeout => timeouts += 1,
            }
        }
    }
    let audited = audit_log.lock().unwrap().len();
    let mut late = late_us.lock().unwrap().clone();
    late.sort_unstable();
    let pct = |p: usize| {
        late.get(late.len().saturating_sub(1) * p / 100)
            .copied()
            .unwrap_or(0)
    };
    println!(
        "{REQUESTS} requests in {:.2} s: {replies} replies, {timeouts} timeouts (504, async), \
         {} clients hung up ({} timeouts aborted)",
        elapsed.as_secs_f64(),
        hung_up.len(),
        aborted.load(Ordering::Relaxed),
    );
    println!(
        "timeout lateness (action start - deadline, never negative): p50 {} us, p99 {} us, max {} us",
        pct(50),
        pct(99),
        pct(100)
    );
    println!("audit records written by timeout futures: {audited}; every connected request answered exactly once");
    assert!(pool.shutdown().await_termination(Duration::from_secs(5)));
    Ok(())
}
