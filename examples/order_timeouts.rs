//! The main demo: close unpaid orders when their payment window ends.
//!
//! A shop receives 200,000 orders over about 5 seconds. Each order gets a
//! payment deadline (30 minutes in real life, scaled to 2 seconds here), so
//! the pool schedules a "close order" task for it. About 70 % of customers
//! pay in time: their payment arrives through a `DelayQueue` (simulated
//! customers) and cancels the timeout, which leaves the pool's queue at once.
//! The rest are closed by the pool at their deadline, never before.
//!
//! Run: `cargo run --release --example order_timeouts`

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use schedpool::{DelayItem, DelayQueue, ScheduledHandle, ScheduledThreadPool};

const ORDERS: u64 = 200_000;
const ARRIVAL_WINDOW: Duration = Duration::from_secs(5);
const PAYMENT_WINDOW: Duration = Duration::from_secs(2); // "30 minutes"
const PAY_PERCENT: u64 = 70;

#[derive(Default)]
struct Stats {
    placed: AtomicU64,
    paid: AtomicU64,
    paid_too_late: AtomicU64,
    closed: AtomicU64,
    closed_early: AtomicU64,
    peak_queue: AtomicU64,
    lateness_us: Mutex<Vec<u64>>,
}

/// xorshift64*: a tiny deterministic random source for the simulation.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

fn main() {
    let started = Instant::now();
    let pool = ScheduledThreadPool::builder()
        .core_threads(2)
        .thread_name("order-timeouts")
        .build()
        .expect("pool");
    let stats = Arc::new(Stats::default());
    // Customers who will pay: (order id, the timeout to cancel), due when they pay.
    let payments: Arc<DelayQueue<DelayItem<ScheduledHandle<()>>>> = Arc::new(DelayQueue::new());

    // The cashier: takes each payment when it arrives and cancels the timeout.
    let cashier = {
        let (payments, stats) = (payments.clone(), stats.clone());
        thread::spawn(move || {
            while let Some(payment) = payments.take() {
                if payment.into_inner().cancel() {
                    stats.paid.fetch_add(1, Ordering::Relaxed);
                } else {
                    stats.paid_too_late.fetch_add(1, Ordering::Relaxed);
                }
            }
        })
    };

    // The shop front: orders arrive at a steady rate over ARRIVAL_WINDOW.
    let shop = {
        let (pool, payments, stats) = (pool.clone(), payments.clone(), stats.clone());
        thread::spawn(move || {
            let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
            let per_ms = ORDERS / ARRIVAL_WINDOW.as_millis() as u64;
            let mut placed = 0;
            while placed < ORDERS {
                let tick = started + Duration::from_millis(placed / per_ms);
                if let Some(wait) = tick.checked_duration_since(Instant::now()) {
                    thread::sleep(wait);
                }
                for _ in 0..per_ms.min(ORDERS - placed) {
                    let deadline = Instant::now() + PAYMENT_WINDOW;
                    let s = stats.clone();
                    let timeout = pool
                        .schedule(
                            move || {
                                let now = Instant::now();
                                if now < deadline {
                                    s.closed_early.fetch_add(1, Ordering::Relaxed);
                                }
                                let late =
                                    now.saturating_duration_since(deadline).as_micros() as u64;
                                s.lateness_us.lock().unwrap().push(late);
                                s.closed.fetch_add(1, Ordering::Relaxed);
                            },
                            PAYMENT_WINDOW,
                        )
                        .expect("the shop is open");
                    if rng.next() % 100 < PAY_PERCENT {
                        // Pays somewhere between 5 % and 90 % of the window.
                        let window_us = PAYMENT_WINDOW.as_micros() as u64;
                        let pay_after = window_us / 20 + rng.next() % (window_us * 85 / 100);
                        payments.put(DelayItem::new(timeout, Duration::from_micros(pay_after)));
                    }
                    placed += 1;
                }
                stats.placed.store(placed, Ordering::Relaxed);
            }
        })
    };

    // Progress until every order is settled: a line redrawn in place on a
    // terminal; a plain line a second into a log or a pipe.
    let live = std::io::stdout().is_terminal();
    let mut logged = Instant::now();
    loop {
        thread::sleep(Duration::from_millis(100));
        let queued = pool.queue_len() as u64;
        stats.peak_queue.fetch_max(queued, Ordering::Relaxed);
        let (placed, paid, closed) = (
            stats.placed.load(Ordering::Relaxed),
            stats.paid.load(Ordering::Relaxed),
            stats.closed.load(Ordering::Relaxed),
        );
        let line = format!(
            "  {:>5.1} s  orders {:>7}  paid {:>7}  auto-closed {:>7}  pending timeouts {:>7}",
            started.elapsed().as_secs_f64(),
            placed,
            paid,
            closed,
            queued
        );
        let done = placed == ORDERS && paid + closed >= ORDERS;
        if live {
            print!("\r{line}   ");
            std::io::stdout().flush().ok();
        } else if done || logged.elapsed() >= Duration::from_secs(1) {
            println!("{line}");
            logged = Instant::now();
        }
        if done {
            break;
        }
    }
    if live {
        println!();
    }
    shop.join().unwrap();
    payments.close();
    cashier.join().unwrap();
    let terminated = pool.shutdown().await_termination(Duration::from_secs(10));

    let mut lateness = stats.lateness_us.lock().unwrap().clone();
    lateness.sort_unstable();
    let pct = |p: f64| {
        lateness
            .get(((lateness.len() as f64 - 1.0) * p) as usize)
            .copied()
            .unwrap_or(0)
    };
    println!();
    println!(
        "  orders placed        {:>9}",
        stats.placed.load(Ordering::Relaxed)
    );
    println!(
        "  paid in time         {:>9}  (timeout cancelled, removed at once)",
        stats.paid.load(Ordering::Relaxed)
    );
    println!(
        "  paid too late        {:>9}",
        stats.paid_too_late.load(Ordering::Relaxed)
    );
    println!(
        "  auto-closed          {:>9}  (closed by the pool at the deadline)",
        stats.closed.load(Ordering::Relaxed)
    );
    println!(
        "  closed early         {:>9}  (must be 0)",
        stats.closed_early.load(Ordering::Relaxed)
    );
    println!(
        "  close lateness       p50 {} µs   p99 {} µs   max {} µs",
        pct(0.50),
        pct(0.99),
        lateness.last().copied().unwrap_or(0)
    );
    println!(
        "  peak pending         {:>9}  timeouts in the pool's queue",
        stats.peak_queue.load(Ordering::Relaxed)
    );
    println!("  pool terminated      {:>9}", terminated);
    println!(
        "  wall time            {:>8.2} s",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(
        stats.closed_early.load(Ordering::Relaxed),
        0,
        "an order was closed before its deadline"
    );
    let settled = stats.paid.load(Ordering::Relaxed) + stats.closed.load(Ordering::Relaxed);
    assert_eq!(
        settled, ORDERS,
        "every order was either paid or closed exactly once"
    );
}
