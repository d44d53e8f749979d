//! Calendar tasks in a pool: runs at the schedule's wall-clock times, never
//! early by the wall clock, re-planned when the wall clock steps, and the
//! controls a periodic task has (pause, resume, trigger, run limits, until,
//! failure policy, jitter, missed fires), on a `ManualClock`.

mod calendar_support;
mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use calendar_support::{at, EverySecs, FirstN};
use common::{eventually, manual_pool, Log, PoolGuard};
use schedpool::{
    ManualClock, MissedTicks, OnFailure, RunInfo, ScheduledThreadPool, TaskError, TaskState,
};

const WAIT: Duration = Duration::from_secs(20);

/// A pool on a manual clock whose wall time starts at `start`.
fn pool_at(start: &str) -> (ManualClock, PoolGuard) {
    let (clock, pool) = manual_pool(1);
    clock.set_wall_time(at(start));
    (clock, PoolGuard(pool))
}

/// A body that logs the wall time of each run, and its lateness.
fn logging(
    clock: &ManualClock,
    log: &Log<(SystemTime, Duration)>,
) -> impl FnMut() + Send + 'static {
    let (clock, log) = (clock.clone(), log.clone());
    move || {
        let lateness = RunInfo::current().map(|i| i.lateness()).unwrap_or_default();
        log.push((clock.wall_time(), lateness));
    }
}

/// Moves the manual clock (both times) forward by `by` and lets the pool
/// act on it.
fn advance(clock: &ManualClock, pool: &ScheduledThreadPool, by: Duration) {
    clock.advance(by);
    assert!(pool.wait_idle(WAIT), "the pool did not settle");
}

#[test]
fn runs_at_fire_times_never_early_by_the_wall_clock() {
    let (clock, pool) = pool_at("2025-01-01T00:00:05");
    let log = Log::new();
    let h = pool
        .schedule_calendar(logging(&clock, &log), EverySecs(10))
        .unwrap();
    assert_eq!(h.next_fire(), Some(at("2025-01-01T00:00:10")));
    advance(&clock, &pool, Duration::from_millis(4_999));
    assert_eq!(log.len(), 0, "one millisecond early: no run");
    advance(&clock, &pool, Duration::from_millis(1));
    eventually("the run at :10", || log.len() == 1);
    assert_eq!(log.get()[0].0, at("2025-01-01T00:00:10"));
    assert_eq!(h.next_fire(), Some(at("2025-01-01T00:00:20")));
    assert_eq!(h.period(), None, "a calendar task has no period");
    let e = h.set_period(Duration::from_secs(1)).unwrap_err();
    assert!(
        e.is_invalid_argument() && e.to_string().contains("calendar"),
        "{e}"
    );
    assert!(h.cancel());
    assert_eq!(h.join(), Err(TaskError::Cancelled));
}

#[cfg(feature = "calendar")]
#[test]
fn a_year_of_nightly_runs_in_berlin_in_virtual_time() {
    use calendar_support::utc;
    use schedpool::calendar::{Daily, Schedule};
    let start = "2025-01-01T00:00:00Z";
    let (clock, pool) = pool_at(start);
    let nightly = Daily::at("02:30", "Europe/Berlin").unwrap();
    let expected: Vec<SystemTime> = nightly.fires_after(at(start)).take(365).collect();
    let log = Log::new();
    let h = pool
        .on_calendar(nightly)
        .max_runs(365)
        .start(logging(&clock, &log))
        .unwrap();
    for (i, fire) in expected.iter().enumerate() {
        assert_eq!(h.next_fire(), Some(*fire));
        // To one second before the fire, then to it: the run comes at the
        // fire, not before.
        let ahead = fire.duration_since(clock.wall_time()).unwrap();
        advance(&clock, &pool, ahead - Duration::from_secs(1));
        assert_eq!(log.len(), i, "early, before {}", utc(*fire));
        advance(&clock, &pool, Duration::from_secs(1));
        eventually("the night's run", || log.len() == i + 1);
    }
    let ran: Vec<SystemTime> = log.get().iter().map(|r| r.0).collect();
    assert_eq!(ran, expected);
    // The spring-forward night ran at 03:00 CEST, the fall-back one once.
    assert!(ran.contains(&at("2025-03-30T03:00:00+02:00")));
    assert!(ran.contains(&at("2025-10-26T02:30:00+02:00")));
    assert!(!ran.contains(&at("2025-10-26T02:30:00+01:00")));
    assert_eq!(h.join(), Ok(()), "max_runs(365) ends it");
}

#[test]
fn a_wall_clock_step_forward_is_seen_within_the_check_interval() {
    let (clock, pool) = pool_at("2025-01-01T00:00:00");
    let log = Log::new();
    let h = pool
        .on_calendar(EverySecs(3600))
        .wall_clock_check(Duration::from_secs(10))
        .start(logging(&clock, &log))
        .unwrap();
    // NTP steps the wall clock two hours ahead; the monotonic time stays.
    clock.set_wall_time(at("2025-01-01T02:00:00"));
    advance(&clock, &pool, Duration::from_secs(9));
    assert_eq!(log.len(), 0);
    advance(&clock, &pool, Duration::from_secs(1));
    eventually("the late run", || log.len() == 1);
    let (ran, lateness) = log.get()[0];
    assert_eq!(
        ran,
        at("2025-01-01T02:00:10"),
        "after 10 s of monotonic time, not an hour"
    );
    assert_eq!(
        lateness,
        Duration::from_secs(3_610),
        "late by the wall clock, and says so"
    );
    // The missed 02:00 fire is not run again (Skip): the next is 03:00.
    assert_eq!(h.next_fire(), Some(at("2025-01-01T03:00:00")));
}

#[test]
fn a_wall_clock_step_back_makes_the_task_wait_never_fire_early() {
    let (clock, pool) = pool_at("2025-01-01T00:59:00");
    let log = Log::new();
    let h = pool
        .schedule_calendar(logging(&clock, &log), EverySecs(3600))
        .unwrap();
    // The wall clock steps back an hour: the 01:00 fire is now 61 min away.
    clock.set_wall_time(at("2024-12-31T23:59:00"));
    for _ in 0..60 {
        advance(&clock, &pool, Duration::from_secs(60));
    }
    assert_eq!(log.len(), 0, "60 minutes on: the wall clock reads 00:59");
    advance(&clock, &pool, Duration::from_secs(60));
    eventually("the run at 01:00 by the wall clock", || log.len() == 1);
    assert_eq!(log.get()[0].0, at("2025-01-01T01:00:00"));
    // A step back after a run does not repeat the fire it ran.
    clock.set_wall_time(at("2025-01-01T00:30:00"));
    assert_eq!(h.next_fire(), Some(at("2025-01-01T02:00:00")));
}

#[test]
fn pause_resume_and_trigger() {
    let (clock, pool) = pool_at("2025-01-01T00:00:00");
    let log = Log::new();
    let h = pool
        .schedule_calendar(logging(&clock, &log), EverySecs(60))
        .unwrap();
    assert!(h.pause());
    assert_eq!(h.state(), TaskState::Paused);
    assert_eq!(h.next_fire(), None, "paused: no next fire");
    advance(&clock, &pool, Duration::from_secs(200));
    assert_eq!(log.len(), 0, "paused: no runs");
    assert!(h.resume());
    // Fires missed while paused are not replayed: the next is 04:00.
    assert_eq!(h.next_fire(), Some(at("2025-01-01T00:04:00")));
    assert!(pool.wait_idle(WAIT));
    assert_eq!(log.len(), 0);
    // A trigger runs it now, whatever the wall clock says, and takes the
    // place of the pending fire.
    assert!(h.trigger());
    eventually("the triggered run", || log.len() == 1);
    assert_eq!(log.get()[0].0, at("2025-01-01T00:03:20"));
    assert_eq!(h.next_fire(), Some(at("2025-01-01T00:05:00")));
    advance(&clock, &pool, Duration::from_secs(100));
    eventually("the 05:00 run", || log.len() == 2);
    assert_eq!(log.get()[1].0, at("2025-01-01T00:05:00"));
    assert_eq!(h.run_count(), 2);
}

#[test]
fn run_limits_until_and_an_ending_schedule_complete_the_handle() {
    let (clock, pool) = pool_at("2025-01-01T00:00:00");
    let limited = pool
        .on_calendar(EverySecs(10))
        .max_runs(2)
        .start(|| ())
        .unwrap();
    let until = pool
        .on_calendar(EverySecs(10))
        .until(at("2025-01-01T00:00:30"))
        .start(|| ())
        .unwrap();
    let ending = pool
        .schedule_calendar(|| (), FirstN(EverySecs(10), 4))
        .unwrap();
    for _ in 0..6 {
        advance(&clock, &pool, Duration::from_secs(10));
    }
    assert_eq!(limited.run_count(), 2);
    assert_eq!(until.run_count(), 3, "00:10, 00:20, 00:30");
    assert_eq!(ending.run_count(), 4, "the rule has four fires");
    assert_eq!(limited.join(), Ok(()));
    assert_eq!(until.join(), Ok(()));
    assert_eq!(ending.join(), Ok(()));
}

#[test]
fn failures_follow_the_failure_policy() {
    let (clock, pool) = pool_at("2025-01-01T00:00:00");
    let stop = pool
        .schedule_calendar(
            || -> Result<(), String> { Err("disk full".into()) },
            EverySecs(10),
        )
        .unwrap();
    let go_on = pool
        .on_calendar(EverySecs(10))
        .on_failure(OnFailure::Continue)
        .max_runs(3)
        .start(|| -> Result<(), String> { Err("flaky".into()) })
        .unwrap();
    for _ in 0..3 {
        advance(&clock, &pool, Duration::from_secs(10));
    }
    assert_eq!(stop.join(), Err(TaskError::Failed("disk full".into())));
    assert_eq!(go_on.failure_count(), 3);
    assert_eq!(go_on.last_failure().as_deref(), Some("flaky"));
    assert_eq!(go_on.join(), Ok(()));
}

#[test]
fn missed_fires_skip_by_default_or_burst() {
    let (clock, pool) = pool_at("2025-01-01T00:00:00");
    let skipped = Log::new();
    let burst = Log::new();
    let s = pool
        .schedule_calendar(logging(&clock, &skipped), EverySecs(10))
        .unwrap();
    let b = pool
        .on_calendar(EverySecs(10))
        .missed_ticks(MissedTicks::Burst)
        .start(logging(&clock, &burst))
        .unwrap();
    // Half a minute passes at once (a suspend, a stalled pool).
    advance(&clock, &pool, Duration::from_secs(35));
    eventually("the burst", || burst.len() == 3);
    assert_eq!(skipped.len(), 1, "one late run stands for the missed fires");
    assert_eq!(s.next_fire(), Some(at("2025-01-01T00:00:40")));
    assert_eq!(b.next_fire(), Some(at("2025-01-01T00:00:40")));
    let lateness: Vec<Duration> = burst.get().iter().map(|r| r.1).collect();
    assert_eq!(
        lateness,
        [25, 15, 5].map(Duration::from_secs),
        "each late by the wall clock"
    );
}

#[test]
fn jitter_delays_each_run_within_its_bound() {
    let (clock, pool) = pool_at("2025-01-01T00:00:00");
    let log = Log::new();
    let _h = pool
        .on_calendar(EverySecs(60))
        .jitter(Duration::from_secs(20))
        .start(logging(&clock, &log))
        .unwrap();
    for _ in 0..20 * 60 + 30 {
        advance(&clock, &pool, Duration::from_secs(1));
    }
    let runs = log.get();
    assert_eq!(runs.len(), 20);
    let offsets: Vec<u64> = runs
        .iter()
        .map(|r| {
            r.0.duration_since(at("2025-01-01T00:00:00"))
                .unwrap()
                .as_secs()
                % 60
        })
        .collect();
    assert!(offsets.iter().all(|&o| o <= 20), "{offsets:?}");
    assert!(
        offsets.iter().any(|&o| o != offsets[0]),
        "jittered: {offsets:?}"
    );
}

#[test]
fn bad_options_and_empty_schedules_are_rejected() {
    let (_clock, pool) = pool_at("2025-01-01T00:00:00");
    let none = pool
        .schedule_calendar(|| (), FirstN(EverySecs(10), 0))
        .unwrap_err();
    assert!(
        none.is_invalid_argument() && none.to_string().contains("no fire"),
        "{none}"
    );
    let past = pool
        .on_calendar(EverySecs(10))
        .until(at("2024-12-31T00:00:00"))
        .start(|| ())
        .unwrap_err();
    assert!(past.is_invalid_argument());
    let delay = pool
        .on_calendar(EverySecs(10))
        .missed_ticks(MissedTicks::Delay)
        .start(|| ());
    assert!(delay.unwrap_err().to_string().contains("Delay"));
    let check = pool
        .on_calendar(EverySecs(10))
        .wall_clock_check(Duration::ZERO)
        .start(|| ());
    assert!(check.unwrap_err().is_invalid_argument());
    assert!(pool
        .on_calendar(EverySecs(10))
        .max_runs(0)
        .start(|| ())
        .is_err());
    assert_eq!(pool.task_count(), 0, "nothing was accepted");
    pool.shutdown();
    assert!(pool
        .schedule_calendar(|| (), EverySecs(10))
        .unwrap_err()
        .is_shutdown());
}

/// A rule that breaks the `Schedule` contract: it panics, or answers a
/// time that is not after its argument (`back` seconds before it).
#[derive(Debug)]
enum Broken {
    Panics,
    GoesBack(u64),
}

impl schedpool::calendar::Schedule for Broken {
    fn next_after(&self, after: SystemTime) -> Option<SystemTime> {
        match self {
            Broken::Panics => panic!("no rule here"),
            Broken::GoesBack(back) => Some(after - Duration::from_secs(*back)),
        }
    }
}

#[test]
fn a_schedule_that_breaks_its_contract_at_start_is_rejected_with_what_it_did() {
    let (_clock, pool) = pool_at("2025-01-01T00:00:00");
    let panicked = pool.schedule_calendar(|| (), Broken::Panics).unwrap_err();
    assert!(panicked.is_invalid_argument(), "{panicked}");
    assert_eq!(
        panicked.to_string(),
        "task rejected: the schedule panicked in next_after(2025-01-01T00:00:00Z): \
         no rule here"
    );
    let back = pool
        .on_calendar(Broken::GoesBack(3600))
        .start(|| ())
        .unwrap_err();
    assert!(back.is_invalid_argument(), "{back}");
    assert_eq!(
        back.to_string(),
        "task rejected: the schedule broke its contract: next_after(2025-01-01T00:00:00Z) \
         returned 2024-12-31T23:00:00Z, not a time after it"
    );
    let same = pool
        .on_calendar(Broken::GoesBack(0))
        .start(|| ())
        .unwrap_err();
    assert!(
        same.to_string()
            .contains("returned 2025-01-01T00:00:00Z, not a time after it"),
        "{same}"
    );
    assert_eq!(pool.task_count(), 0, "nothing was accepted");
}

#[test]
fn a_calendar_run_is_a_task_span_of_kind_calendar() {
    let (clock, pool) = pool_at("2025-01-01T00:00:00");
    let kind = Arc::new(Mutex::new(None));
    let k = kind.clone();
    let h = pool
        .on_calendar(EverySecs(10))
        .max_runs(1)
        .start(move || *k.lock().unwrap() = RunInfo::current().map(|i| i.kind()))
        .unwrap();
    assert!(format!("{h:?}").contains("calendar"));
    advance(&clock, &pool, Duration::from_secs(10));
    assert_eq!(h.join(), Ok(()));
    assert_eq!(*kind.lock().unwrap(), Some("calendar"));
}

/// A schedule that asks the pool something (takes its lock) each time.
#[derive(Debug)]
struct AsksThePool(EverySecs, Arc<Mutex<Option<ScheduledThreadPool>>>);

impl schedpool::calendar::Schedule for AsksThePool {
    fn next_after(&self, after: SystemTime) -> Option<SystemTime> {
        if let Some(pool) = self.1.lock().unwrap().as_ref() {
            let _ = pool.queue_len();
        }
        self.0.next_after(after)
    }
}

#[test]
fn a_schedule_may_call_into_its_pool() {
    let (clock, pool) = pool_at("2025-01-01T00:00:00");
    let slot = Arc::new(Mutex::new(None));
    let h = pool
        .schedule_calendar(|| (), AsksThePool(EverySecs(10), slot.clone()))
        .unwrap();
    *slot.lock().unwrap() = Some(pool.0.clone());
    advance(&clock, &pool, Duration::from_secs(10));
    eventually("a run, and its next fire asked", || h.run_count() == 1);
    assert!(h.pause());
    advance(&clock, &pool, Duration::from_secs(30));
    // resume asks the schedule for its next fire: not under the pool lock.
    let (tx, rx) = std::sync::mpsc::channel();
    let resumer = std::thread::spawn(move || {
        let _ = tx.send(h.resume());
        h
    });
    let resumed = rx.recv_timeout(WAIT);
    if resumed.is_err() {
        // The pool lock is held for good: stopping the pool would hang too.
        std::mem::forget(pool);
        panic!("resume deadlocked: it asked the schedule under the pool lock");
    }
    assert_eq!(resumed, Ok(true));
    let h = resumer.join().unwrap();
    assert_eq!(h.next_fire(), Some(at("2025-01-01T00:00:50")));
    *slot.lock().unwrap() = None; // the pool held by its own task's schedule
}
