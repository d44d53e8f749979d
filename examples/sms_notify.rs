//! "Send an SMS 60 seconds after an order", tested with virtual time.
//!
//! The shop code below is ordinary production code: it schedules a message
//! 60 s after each order, and cancels it if the order is cancelled first.
//! The test harness builds the pool on a `ManualClock` and walks virtual
//! time forward second by second: a 3-minute scenario runs in milliseconds,
//! and every message goes out at exactly +60 s of virtual time.
//!
//! Run: `cargo run --release --example sms_notify`

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use schedpool::{ManualClock, ScheduledHandle, ScheduledThreadPool, TaskError};

const SMS_DELAY: Duration = Duration::from_secs(60);

/// Where messages go. Production sends them; the test records them.
trait Gateway: Send + Sync {
    fn send(&self, order: u32, text: String);
}

/// The production code: it knows nothing about virtual time.
struct Shop {
    pool: ScheduledThreadPool,
    gateway: Arc<dyn Gateway>,
}

impl Shop {
    fn place_order(&self, order: u32, phone: &str) -> ScheduledHandle<()> {
        let gateway = self.gateway.clone();
        let text = format!("to {phone}: how was order #{order}? Rate us!");
        self.pool
            .schedule(move || gateway.send(order, text), SMS_DELAY)
            .expect("the shop is open")
    }
}

/// The test double: records each message with the virtual time it went out.
struct FakeGateway {
    clock: ManualClock,
    sent: Mutex<Vec<(u32, String, Instant)>>,
}

impl Gateway for FakeGateway {
    fn send(&self, order: u32, text: String) {
        self.sent
            .lock()
            .unwrap()
            .push((order, text, self.clock.now()));
    }
}

fn main() {
    let wall = Instant::now();
    let clock = ManualClock::new();
    let pool = ScheduledThreadPool::builder()
        .core_threads(2)
        .clock(clock.clone())
        .build()
        .expect("pool");
    let gateway = Arc::new(FakeGateway {
        clock: clock.clone(),
        sent: Mutex::new(Vec::new()),
    });
    let shop = Shop {
        pool: pool.clone(),
        gateway: gateway.clone(),
    };

    // (virtual second, order id, phone); order 3 is cancelled at +40 s.
    let orders = [
        (0, 1, "+1 555 0101"),
        (5, 2, "+1 555 0102"),
        (20, 3, "+1 555 0103"),
        (20, 4, "+1 555 0104"),
        (61, 5, "+1 555 0105"),
        (119, 6, "+1 555 0106"),
    ];
    let cancel_at = (40, 3);
    let mut handles = Vec::new();
    let mut ordered_at: HashMap<u32, Instant> = HashMap::new();
    let mut printed = 0;

    println!("  virtual time   event");
    for second in 0..=180u64 {
        // Advance one virtual second, then let whatever became due run.
        if second > 0 {
            clock.advance(Duration::from_secs(1));
        }
        assert!(pool.wait_idle(Duration::from_secs(5)), "the pool went idle");
        for (order, text, sent_at) in &gateway.sent.lock().unwrap()[printed..] {
            println!(
                "  t = {:>3} s      SMS {text}   (+{} s after the order)",
                clock.elapsed().as_secs(),
                (*sent_at - ordered_at[order]).as_secs()
            );
            printed += 1;
        }
        for &(at, id, phone) in &orders {
            if at == second {
                println!(
                    "  t = {second:>3} s      order #{id} placed, SMS due at {} s",
                    at + 60
                );
                ordered_at.insert(id, clock.now());
                handles.push((id, shop.place_order(id, phone)));
            }
        }
        if second == cancel_at.0 {
            let (_, h) = handles.iter().find(|(id, _)| *id == cancel_at.1).unwrap();
            let delay = h.delay().as_secs();
            assert!(h.cancel());
            println!("  t = {second:>3} s      order #3 cancelled: its SMS ({delay} s away) never goes out");
        }
    }

    let sent = gateway.sent.lock().unwrap().clone();
    println!();
    println!(
        "  {} messages sent over {} s of virtual time, in {:.0} ms of real time",
        sent.len(),
        clock.elapsed().as_secs(),
        wall.elapsed().as_secs_f64() * 1e3
    );

    for (order, _, sent_at) in &sent {
        assert_eq!(
            *sent_at - ordered_at[order],
            SMS_DELAY,
            "order #{order}: exactly +60 s"
        );
    }
    let ids: Vec<u32> = sent.iter().map(|s| s.0).collect();
    assert_eq!(ids, [1, 2, 4, 5, 6], "in order; #3 was cancelled");
    for (id, h) in handles {
        let expected = if id == 3 {
            Err(TaskError::Cancelled)
        } else {
            Ok(())
        };
        assert_eq!(h.join(), expected, "order #{id}");
    }
    assert!(pool.shutdown().await_termination(Duration::from_secs(5)));
    assert!(wall.elapsed() < Duration::from_secs(5), "no real waiting");
    println!("ok");
}
