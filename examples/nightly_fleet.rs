//! A nightly job on a fleet of three processes: one run per night, whichever
//! process claims it, for a simulated month.
//!
//! The three "processes" are three `DurablePool`s on one in-memory store
//! (each clone of the backend stands for a process with its own connection)
//! and the store's clock is a `ManualClock`, so a month takes a moment. The
//! second process starts on day 5, the third on day 12: each registers the
//! same schedule at start-up and finds it stored. With Redis or PostgreSQL
//! the code is the same, with `RedisBackend::connect(..)` in each process.
//!
//! Run it with `cargo run --example nightly_fleet`. It prints one line per
//! night and checks, before it exits, that every night ran exactly once.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use schedpool::calendar::Schedule;
use schedpool::durable::{DurableError, DurablePool, MemoryBackend, Misfire, Put};
use schedpool::ManualClock;

/// Every day at 02:30 UTC: a rule of your own is ten lines.
#[derive(Debug)]
struct NightlyUtc;

impl Schedule for NightlyUtc {
    fn next_after(&self, after: SystemTime) -> Option<SystemTime> {
        const AT: u64 = 2 * 3600 + 30 * 60;
        let t = after.duration_since(UNIX_EPOCH).ok()?.as_secs();
        let today = t / 86_400 * 86_400 + AT;
        let next = if today > t { today } else { today + 86_400 };
        Some(UNIX_EPOCH + Duration::from_secs(next))
    }
}

/// The nights that ran: fire instant (ms) → the processes that ran it.
type Ledger = Arc<Mutex<BTreeMap<u64, Vec<usize>>>>;

/// Process `n` of the fleet: its pool, and its registration at start-up.
fn start_process(
    store: &MemoryBackend,
    n: usize,
    ledger: &Ledger,
) -> Result<DurablePool, DurableError> {
    let ledger = ledger.clone();
    let pool = DurablePool::builder(store.clone())
        .threads(2)
        .handler("nightly-report", move |_: &(), job| {
            // A real handler makes its effect conditional on (job.id,
            // job.deadline_ms): a run repeated after a crash is harmless.
            let mut ledger = ledger.lock().unwrap();
            let first = ledger.keys().next().copied().unwrap_or(job.deadline_ms);
            let night = (job.deadline_ms - first) / 86_400_000 + 1;
            let day = job.deadline_ms / 86_400_000;
            println!("  night {night:2} (day {day} of the Unix epoch, 02:30 UTC): process {n}");
            ledger.entry(job.deadline_ms).or_default().push(n);
            Ok(())
        })
        .build()?;
    let put = pool.schedule_calendar(
        "nightly-report",
        "nightly-report",
        &(),
        NightlyUtc,
        // The simulated clock moves in 15-minute steps: a fire claimed up
        // to 20 minutes late is on time.
        Misfire::default().grace(Duration::from_secs(20 * 60)),
    )?;
    let what = match put {
        Put::Inserted { deadline_ms } => {
            format!("stored it; first night: day {}", deadline_ms / 86_400_000)
        }
        _ => "found it stored".to_string(),
    };
    println!("process {n} starts and registers the schedule: {what}");
    Ok(pool)
}

fn main() -> Result<(), DurableError> {
    let clock = ManualClock::new();
    let store = MemoryBackend::with_clock(clock.clone());
    let ledger = Ledger::default();
    let mut fleet = vec![start_process(&store, 1, &ledger)?];
    let step = Duration::from_secs(15 * 60);
    let steps_a_day = 24 * 4;
    for i in 0..30 * steps_a_day {
        if i == 5 * steps_a_day || i == 12 * steps_a_day {
            fleet.push(start_process(&store, fleet.len() + 1, &ledger)?);
        }
        clock.advance(step);
        for pool in &fleet {
            assert!(
                pool.wait_idle(Duration::from_secs(10)),
                "the fleet went idle"
            );
        }
    }
    for pool in &fleet {
        pool.shutdown();
    }

    // Check: 30 nights, each run exactly once, a day apart.
    let ledger = ledger.lock().unwrap();
    let nights: Vec<u64> = ledger.keys().copied().collect();
    assert_eq!(nights.len(), 30, "one run per night for 30 nights");
    assert!(
        ledger.values().all(|by| by.len() == 1),
        "no night ran twice: {ledger:?}"
    );
    assert!(
        nights.windows(2).all(|w| w[1] - w[0] == 86_400_000),
        "a day apart"
    );
    let mut by_process = BTreeMap::new();
    for by in ledger.values() {
        *by_process.entry(by[0]).or_insert(0) += 1;
    }
    println!("30 nights, 30 runs, none twice; runs by process: {by_process:?}");
    Ok(())
}
