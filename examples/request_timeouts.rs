//! A sliding window of requests, each timing out unless answered.
//!
//! A client keeps up to 64 requests in flight to a flaky server. Each request
//! schedules its own timeout on the pool; when the answer arrives first, the
//! client cancels the timeout, which leaves the pool's queue at once. `cancel`
//! returns true only if the timeout had not started, so "answered" and
//! "timed out" can never both happen to one request, even when the answer
//! and the timeout race at the 50 ms boundary.
//!
//! The server's answers travel through a `DelayQueue` (the "network"): one
//! in ten is lost, some are slower than the timeout, most are quick.
//!
//! Run: `cargo run --release --example request_timeouts`

use std::collections::HashMap;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use schedpool::{DelayItem, DelayQueue, ScheduledHandle, ScheduledThreadPool};

const REQUESTS: u64 = 3_000;
const WINDOW: usize = 64;
const TIMEOUT: Duration = Duration::from_millis(50);

/// xorshift64*: a tiny deterministic random source for the simulation.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn ms(&mut self, lo: u64, hi: u64) -> Duration {
        Duration::from_micros(lo * 1000 + self.next() % ((hi - lo) * 1000 + 1))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Answered,
    TimedOut,
}

fn main() {
    let start = Instant::now();
    let pool = ScheduledThreadPool::builder()
        .core_threads(2)
        .thread_name("timeouts")
        .build()
        .expect("pool");
    let network: Arc<DelayQueue<DelayItem<u64>>> = Arc::new(DelayQueue::new());
    // Timeouts report here: (request, when it fired).
    let (timed_out_tx, timed_out_rx) = mpsc::channel::<(u64, Instant)>();

    let mut rng = Rng(0xDEAD_BEEF_CAFE_F00D);
    let mut in_flight: HashMap<u64, (Instant, ScheduledHandle<()>)> = HashMap::new();
    let mut outcomes: HashMap<u64, Outcome> = HashMap::new();
    let (mut sent, mut late_answers, mut lost, mut peak) = (0u64, 0u64, 0u64, 0usize);
    // Timed out before TIMEOUT; settled twice (answered *and* timed out).
    let (mut early_timeouts, mut double) = (0u64, 0u64);

    while outcomes.len() < REQUESTS as usize {
        // Fill the window.
        while in_flight.len() < WINDOW && sent < REQUESTS {
            let id = sent;
            sent += 1;
            let tx = timed_out_tx.clone();
            // Read the clock before scheduling: the pool's deadline is
            // computed after this instant, so "never early" is measured
            // against a lower bound of it.
            let sent_at = Instant::now();
            let timeout = pool
                .schedule(move || tx.send((id, Instant::now())).unwrap(), TIMEOUT)
                .expect("pool is running");
            in_flight.insert(id, (sent_at, timeout));
            // The server: 10 % lost, 15 % around or past the timeout, the rest quick.
            match rng.next() % 100 {
                0..=9 => lost += 1,
                10..=24 => {
                    network.put(DelayItem::new(id, rng.ms(45, 70)));
                }
                _ => {
                    network.put(DelayItem::new(id, rng.ms(2, 35)));
                }
            }
        }
        peak = peak.max(in_flight.len());

        // Answers that arrived.
        if let Some(answer) = network.poll_timeout(Duration::from_millis(1)) {
            let id = answer.into_inner();
            match in_flight.get(&id) {
                Some((_, timeout)) if timeout.cancel() => {
                    in_flight.remove(&id);
                    double += u64::from(outcomes.insert(id, Outcome::Answered).is_some());
                }
                // The timeout fired (or is firing): its report is on the way.
                Some(_) => late_answers += 1,
                // Already settled as timed out.
                None => late_answers += 1,
            }
        }

        // Timeouts that fired.
        for (id, fired) in timed_out_rx.try_iter() {
            if let Some((sent_at, _)) = in_flight.remove(&id) {
                if fired < sent_at + TIMEOUT {
                    early_timeouts += 1;
                }
            }
            double += u64::from(outcomes.insert(id, Outcome::TimedOut).is_some());
        }
    }
    network.close();

    let answered = outcomes
        .values()
        .filter(|o| **o == Outcome::Answered)
        .count();
    let timed_out = outcomes
        .values()
        .filter(|o| **o == Outcome::TimedOut)
        .count();
    let stats = pool.stats();
    println!(
        "  requests            {REQUESTS:>6}   (window {WINDOW}, timeout {} ms)",
        TIMEOUT.as_millis()
    );
    println!("  answered            {answered:>6}   (timeout cancelled and removed)");
    println!("  timed out           {timed_out:>6}   (of which {lost} answers were lost)");
    println!("  answers too late    {late_answers:>6}   (ignored: already timed out)");
    println!("  timed out early     {early_timeouts:>6}   (must be 0)");
    println!("  answered + timed out{double:>6}   (must be 0)");
    println!("  peak in flight      {peak:>6}");
    println!(
        "  timeout lateness    p50 {:?}  p99 {:?}",
        stats.lateness.p50, stats.lateness.p99
    );
    println!("  timeouts queued now {:>6}", pool.queue_len());
    println!(
        "  wall time           {:>6.2} s",
        start.elapsed().as_secs_f64()
    );

    assert_eq!(early_timeouts, 0, "a request timed out early");
    assert_eq!(double, 0, "a request was both answered and timed out");
    assert_eq!(
        answered + timed_out,
        REQUESTS as usize,
        "every request settled once"
    );
    assert!(timed_out as u64 >= lost, "every lost answer timed out");
    assert!(peak <= WINDOW);
    assert_eq!(
        pool.queue_len(),
        0,
        "cancelled timeouts left the queue at once"
    );
    assert!(pool.shutdown().await_termination(Duration::from_secs(5)));
    println!("ok");
}
