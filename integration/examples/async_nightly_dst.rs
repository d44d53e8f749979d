//! A nightly async job at 02:30 Europe/Berlin, across both daylight-saving
//! changes of 2026, in virtual time.
//!
//! The job (an async export: it awaits an upstream call, then hands its
//! report to an async consumer) is a calendar task started with
//! `start_async`. A `ManualClock` moves time by 15-minute steps over three
//! nights around each change; `wait_idle` waits for each run's future, so
//! what the example prints is exact:
//!
//! - 2026-03-29, spring forward: 02:30 does not exist that night (02:00
//!   CET becomes 03:00 CEST); the default `Gap` policy runs the job at the
//!   gap's end, 03:00 CEST.
//! - 2026-10-25, fall back: 02:30 happens twice (03:00 CEST becomes 02:00
//!   CET); the default `Overlap::First` runs it once, at the first.
//!
//! Run: `cargo run --release --all-features --example async_nightly_dst`

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use schedpool::calendar::Daily;
use schedpool::{ManualClock, ScheduledThreadPool};
use tokio::sync::mpsc;

/// One night's export: its report line, sent to the consumer.
async fn export_orders(night: u32, wall: SystemTime, reports: mpsc::UnboundedSender<String>) {
    // The upstream call (real time: a virtual clock moves the pool only).
    tokio::time::sleep(Duration::from_millis(2)).await;
    let _ = reports.send(format!("export #{night} ran at {}", utc(wall)));
}

/// `YYYY-MM-DD HH:MM UTC` (civil from days, Howard Hinnant's algorithm).
fn utc(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).expect("after 1970").as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year}-{month:02}-{day:02} {:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60
    )
}

/// Runs the job over three nights from `start` and returns the UTC fire
/// times, printing each report.
async fn three_nights(start: SystemTime) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    let clock = ManualClock::new();
    clock.set_wall_time(start);
    let pool = ScheduledThreadPool::builder()
        .core_threads(1)
        .clock(clock.clone())
        .build()?;
    let (reports_tx, mut reports) = mpsc::unbounded_channel();
    let nights = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let job_clock = clock.clone();
    let job = pool
        .on_calendar(Daily::at("02:30", "Europe/Berlin")?)
        .start_async(move || {
            let night = nights.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            export_orders(night, job_clock.wall_time(), reports_tx.clone())
        })?;
    let mut fired = Vec::new();
    for _ in 0..3 * 24 * 4 {
        clock.advance(Duration::from_secs(15 * 60));
        // Waits for a due run's future too: the run holds its worker.
        assert!(pool.wait_idle(Duration::from_secs(10)));
        while let Ok(report) = reports.try_recv() {
            println!("  {report}");
            fired.push(report);
        }
    }
    assert!(job.cancel());
    assert!(pool.shutdown().await_termination(Duration::from_secs(5)));
    Ok(fired)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 1)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // 2026-03-28 12:00 UTC, the day before spring forward.
    println!("spring forward (2026-03-29 02:00 CET -> 03:00 CEST):");
    let spring = three_nights(UNIX_EPOCH + Duration::from_secs(1_774_699_200)).await?;
    assert_eq!(
        spring,
        [
            "export #1 ran at 2026-03-29 01:00 UTC", // 03:00 CEST: the gap's end
            "export #2 ran at 2026-03-30 00:30 UTC", // 02:30 CEST
            "export #3 ran at 2026-03-31 00:30 UTC",
        ]
    );
    // 2026-10-24 12:00 UTC, the day before fall back.
    println!("fall back (2026-10-25 03:00 CEST -> 02:00 CET):");
    let fall = three_nights(UNIX_EPOCH + Duration::from_secs(1_792_843_200)).await?;
    assert_eq!(
        fall,
        [
            "export #1 ran at 2026-10-25 00:30 UTC", // the first 02:30 (CEST), once
            "export #2 ran at 2026-10-26 01:30 UTC", // 02:30 CET
            "export #3 ran at 2026-10-27 01:30 UTC",
        ]
    );
    println!("every night once, never early, at 02:30 Berlin time (or the gap's end)");
    Ok(())
}
