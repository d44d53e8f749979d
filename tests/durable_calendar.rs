//! Calendar schedules once per fleet, on the in-memory backend with a
//! `ManualClock`: several pools on one store are the processes of a fleet
//! (each clone of the backend is its own "process"), and the clock is the
//! store's. A month of nightly fires, the misfire policies after a 3-hour
//! outage of the whole fleet, changed definitions, rules that end, failing
//! runs and bad input. The same against a real Redis with OS processes:
//! `tests/durable_calendar_redis.rs`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use schedpool::calendar::Schedule;
use schedpool::durable::{
    DurableBackend, DurableError, DurablePool, DurablePoolBuilder, DurableStats, MemoryBackend,
    Misfire, Put, StoredState,
};
use schedpool::ManualClock;
use tracing::field::{Field, Visit};
use tracing::{Event, Level};

mod trace_support;

const WAIT: Duration = Duration::from_secs(10);
const MIN_MS: u64 = 60_000;
const HOUR_MS: u64 = 60 * MIN_MS;
const DAY_MS: u64 = 24 * HOUR_MS;

/// Every day at `secs` after midnight, UTC: a user's own rule, the way the
/// guide shows it.
#[derive(Debug)]
struct DailyUtc {
    secs: u64,
}

impl Schedule for DailyUtc {
    fn next_after(&self, after: SystemTime) -> Option<SystemTime> {
        let t = after.duration_since(UNIX_EPOCH).ok()?.as_secs();
        let today = t / 86_400 * 86_400 + self.secs;
        let next = if today > t { today } else { today + 86_400 };
        Some(UNIX_EPOCH + Duration::from_secs(next))
    }
}

/// Every `0` ms on the Unix epoch's grid, up to `1` (ms) if set.
#[derive(Debug)]
struct Every(u64, Option<u64>);

impl Schedule for Every {
    fn next_after(&self, after: SystemTime) -> Option<SystemTime> {
        let ms = after.duration_since(UNIX_EPOCH).ok()?.as_millis() as u64;
        let next = (ms / self.0 + 1) * self.0;
        (self.1.is_none_or(|end| next <= end)).then(|| UNIX_EPOCH + Duration::from_millis(next))
    }
}

fn every(ms: u64) -> Every {
    Every(ms, None)
}

/// What the handlers saw: (schedule id, fire instant, claim time, process).
type Runs = Arc<Mutex<Vec<(String, u64, u64, usize)>>>;

/// A pool's builder on `store` as process number `n`, recording into `runs`.
fn builder(store: &MemoryBackend, n: usize, runs: &Runs) -> DurablePoolBuilder {
    let runs = runs.clone();
    DurablePool::builder(store.clone())
        .threads(2)
        .handler("job", move |_: &(), job| {
            let mut r = runs.lock().unwrap();
            r.push((job.id.clone(), job.deadline_ms, job.claimed_ms, n));
            Ok(())
        })
}

/// A pool on `store` as process number `n`, recording into `runs`.
fn process(store: &MemoryBackend, n: usize, runs: &Runs) -> DurablePool {
    builder(store, n, runs).build().unwrap()
}

/// Fire instants each schedule ran, in order.
fn fires_of(runs: &Runs, id: &str) -> Vec<u64> {
    let mut v: Vec<u64> = runs
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r.0 == id)
        .map(|r| r.1)
        .collect();
    v.sort_unstable();
    v
}

fn idle(pools: &[&DurablePool]) {
    for p in pools {
        assert!(p.wait_idle(WAIT), "the pool went idle");
    }
}

fn sum(pools: &[&DurablePool], f: impl Fn(DurableStats) -> u64) -> u64 {
    pools.iter().map(|p| f(p.stats())).sum()
}

fn inserted(put: Put) -> u64 {
    match put {
        Put::Inserted { deadline_ms } => deadline_ms,
        other => panic!("expected Inserted, got {other:?}"),
    }
}

/// Three processes, started on days 0, 3 and 10, register one nightly
/// schedule; the store's clock runs a month in 10-minute steps. Every
/// night's fire runs exactly once, never before its instant; only the
/// first registration stores it.
#[test]
fn three_processes_run_a_nightly_job_once_per_night_for_a_month() {
    let clock = ManualClock::new();
    let store = MemoryBackend::with_clock(clock.clone());
    let runs = Runs::default();
    let nightly = || DailyUtc {
        secs: 2 * 3600 + 30 * 60,
    };
    let misfire = Misfire::default().grace(Duration::from_secs(20 * 60));
    let start = store.server_time_ms().unwrap();
    let a = process(&store, 0, &runs);
    let first = inserted(
        a.schedule_calendar("job", "nightly", &(), nightly(), misfire)
            .unwrap(),
    );
    assert!(first > start && first <= start + DAY_MS);
    assert_eq!(first % DAY_MS, (2 * 3600 + 30 * 60) * 1000, "02:30 UTC");
    assert_eq!(
        a.schedule_calendar("job", "nightly", &(), nightly(), misfire)
            .unwrap(),
        Put::Exists,
        "registering again is a no-op"
    );
    let step = Duration::from_secs(10 * 60);
    let steps_a_day = 24 * 6;
    let mut pools = vec![a];
    for i in 0..31 * steps_a_day {
        if i == 3 * steps_a_day || i == 10 * steps_a_day {
            let p = process(&store, pools.len(), &runs);
            let put = p.schedule_calendar("job", "nightly", &(), nightly(), misfire);
            assert_eq!(put.unwrap(), Put::Exists, "a later process finds it");
            pools.push(p);
        }
        clock.advance(step);
        idle(&pools.iter().collect::<Vec<_>>());
    }
    let end = store.server_time_ms().unwrap();
    let expected: Vec<u64> = (0..)
        .map(|d| first + d * DAY_MS)
        .take_while(|&f| f <= end)
        .collect();
    assert_eq!(expected.len(), 31);
    assert_eq!(fires_of(&runs, "nightly"), expected, "one run per night");
    for (_, fire, claimed, _) in runs.lock().unwrap().iter() {
        assert!(
            claimed >= fire,
            "never early: fire {fire} claimed {claimed}"
        );
        assert!(claimed - fire <= 10 * MIN_MS, "within one step");
    }
    let pools: Vec<&DurablePool> = pools.iter().collect();
    assert_eq!(sum(&pools, |s| s.succeeded), 31);
    assert_eq!(sum(&pools, |s| s.fires_skipped + s.fires_coalesced), 0);
    let stored = store.get("nightly").unwrap().expect("stored");
    assert_eq!(stored.state, StoredState::Pending);
    assert_eq!(
        stored.deadline_ms,
        expected[30] + DAY_MS,
        "at the next night"
    );
    assert_eq!(
        store.counts().unwrap().pending,
        1,
        "one item for the schedule"
    );
}

// ---------------------------------------------------------------------------
// Misfire policies after an outage
// ---------------------------------------------------------------------------

/// The WARN events of the misfire decisions: (schedule, message, skipped
/// fires, coalesced fires). One subscriber for the whole test binary.
type Decisions = Arc<Mutex<Vec<BTreeMap<String, String>>>>;

fn decisions() -> &'static Decisions {
    static SEEN: OnceLock<Decisions> = OnceLock::new();
    SEEN.get_or_init(|| {
        let seen = Decisions::default();
        let capture = seen.clone();
        let subscriber = trace_support::Recorder::with_callback(move |e| on_event(&capture, e));
        tracing::subscriber::set_global_default(subscriber).unwrap();
        seen
    })
}

struct Fields(BTreeMap<String, String>);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().into(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().into(), value.into());
    }
}

/// Keeps a misfire decision's WARN event.
fn on_event(seen: &Decisions, event: &Event<'_>) {
    if *event.metadata().level() != Level::WARN {
        return;
    }
    let mut f = Fields(BTreeMap::new());
    event.record(&mut f);
    if f.0.contains_key("skipped_fires") {
        seen.lock().unwrap().push(f.0);
    }
}

/// An instant as the events print it (RFC 3339, UTC), by a civil-calendar
/// walk independent of the crate's.
fn rfc3339(ms: u64) -> String {
    let (mut days, secs) = (ms / DAY_MS, ms / 1000 % 86_400);
    let mut year = 1970;
    let leap = |y: u64| (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    while days >= 365 + u64::from(leap(year)) {
        days -= 365 + u64::from(leap(year));
        year += 1;
    }
    let lengths = [
        31,
        28 + u64::from(leap(year)),
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    let mut month = 0;
    while days >= lengths[month] {
        days -= lengths[month];
        month += 1;
    }
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    format!(
        "{year}-{:02}-{:02}T{h:02}:{m:02}:{s:02}Z",
        month + 1,
        days + 1
    )
}

/// Half-hourly schedules under the three policies run their first fire on
/// a 2-process fleet; the whole fleet goes down for 3 h 5 min of store
/// time; a new fleet registers them again. What runs, what is counted and
/// what is reported comes from the store: the policies of the first
/// registration (a restart with another policy is refused).
#[test]
fn after_a_three_hour_outage_missed_fires_follow_the_stored_policy() {
    let seen = decisions();
    let clock = ManualClock::new();
    let store = MemoryBackend::with_clock(clock.clone());
    let runs = Runs::default();
    let half_hour = 30 * MIN_MS;
    let policies = [
        ("out-skip", Misfire::skip()),
        (
            "out-once",
            Misfire::run_once().max_lateness(Duration::from_millis(100 * MIN_MS)),
        ),
        ("out-all", Misfire::run_all(3)),
    ];
    let register = |pool: &DurablePool| -> Vec<Put> {
        policies
            .iter()
            .map(|(id, m)| pool.schedule_calendar("job", id, &(), every(half_hour), *m))
            .collect::<Result<_, _>>()
            .unwrap()
    };
    let (a, b) = (process(&store, 0, &runs), process(&store, 1, &runs));
    let first = inserted(register(&a)[0]);
    assert!(register(&b).iter().all(|p| *p == Put::Exists));
    clock.advance(Duration::from_millis(
        first - store.server_time_ms().unwrap(),
    ));
    idle(&[&a, &b]);
    for (id, _) in &policies {
        assert_eq!(fires_of(&runs, id), vec![first], "{id}: its first fire ran");
    }

    // The whole fleet goes down; the store's clock goes on 3 h 5 min.
    for p in [a, b] {
        p.shutdown();
        assert!(p.await_termination(WAIT));
    }
    clock.advance(Duration::from_millis(3 * HOUR_MS + 5 * MIN_MS));
    let fire = |n: u64| first + n * half_hour;

    // A new fleet: the same registrations find the stored schedules; one
    // with another policy is refused, so the stored one governs.
    let probe = DurablePool::builder(store.clone())
        .threads(0)
        .build()
        .unwrap();
    let refused = probe.schedule_calendar(
        "job",
        "out-skip",
        &(),
        every(half_hour),
        Misfire::run_all(9),
    );
    assert!(
        matches!(&refused, Err(DurableError::Config(why)) if why.contains("misfire")),
        "{refused:?}"
    );
    // Fires are due: each process registers at build, before its workers
    // start (registered after, a fire claimed first would be handed on).
    let restart = |n| {
        let b = policies
            .iter()
            .fold(builder(&store, n, &runs), |b, (id, m)| {
                b.schedule_calendar("job", id, &(), every(half_hour), *m)
            });
        b.build().unwrap()
    };
    let (c, d) = (restart(2), restart(3));
    assert!(register(&c).iter().all(|p| *p == Put::Exists));
    assert!(register(&d).iter().all(|p| *p == Put::Exists));
    idle(&[&c, &d]);
    assert_eq!(
        fires_of(&runs, "out-skip"),
        vec![first],
        "skip: nothing ran"
    );
    assert_eq!(
        fires_of(&runs, "out-once"),
        vec![first, fire(6)],
        "run_once: one run, for the latest missed fire"
    );
    assert_eq!(
        fires_of(&runs, "out-all"),
        vec![first, fire(4), fire(5), fire(6)],
        "run_all(3): the latest three, in order"
    );
    // Counted: skip 6; run_once 2 too late (> 100 min) and 3 coalesced;
    // run_all 3 beyond its cap.
    assert_eq!(sum(&[&c, &d], |s| s.fires_skipped), 6 + 2 + 3);
    assert_eq!(sum(&[&c, &d], |s| s.fires_coalesced), 3);
    // Reported, naming the instants.
    let names = |ns: &[u64]| {
        ns.iter()
            .map(|&n| rfc3339(fire(n)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let event = |id: &str| {
        let all = seen.lock().unwrap();
        let mine: Vec<_> = all
            .iter()
            .filter(|e| e["schedule"] == id)
            .cloned()
            .collect();
        assert_eq!(mine.len(), 1, "{id}: one decision reported: {mine:?}");
        mine[0].clone()
    };
    let e = event("out-skip");
    assert_eq!(e["skipped_fires"], names(&[1, 2, 3, 4, 5, 6]));
    assert_eq!(e["coalesced_fires"], "none");
    let e = event("out-once");
    assert_eq!(e["skipped_fires"], names(&[1, 2]));
    assert_eq!(e["coalesced_fires"], names(&[3, 4, 5]));
    assert!(e["message"].contains(&rfc3339(fire(6))), "{e:?}");
    let e = event("out-all");
    assert_eq!(e["skipped_fires"], names(&[1, 2, 3]));
    // Every schedule goes on at its next fire.
    clock.advance(Duration::from_millis(
        fire(7) - store.server_time_ms().unwrap(),
    ));
    idle(&[&c, &d]);
    for (id, _) in &policies {
        assert_eq!(fires_of(&runs, id).last(), Some(&fire(7)), "{id} goes on");
    }
}

// ---------------------------------------------------------------------------
// Definitions: changed, replaced, not registered here
// ---------------------------------------------------------------------------

/// Another definition under a stored id is refused with a message naming
/// the difference, and the refusal changes nothing; `replace_calendar`
/// replaces it, and the new rule runs from its first fire after now.
#[test]
fn a_changed_definition_is_refused_unless_replaced() {
    let clock = ManualClock::new();
    let store = MemoryBackend::with_clock(clock.clone());
    let runs = Runs::default();
    let old = process(&store, 0, &runs);
    let ten = 10 * MIN_MS;
    inserted(
        old.schedule_calendar("job", "sync", &(), every(ten), Misfire::default())
            .unwrap(),
    );
    // A producer-only pool registers anything, without workers that could
    // claim the fires meanwhile.
    let probe = DurablePool::builder(store.clone())
        .threads(0)
        .build()
        .unwrap();
    let refusal = |put: Result<Put, DurableError>| match put {
        Err(DurableError::Config(why)) => why,
        other => panic!("expected a refusal, got {other:?}"),
    };
    let why =
        refusal(probe.schedule_calendar("job", "sync", &(), every(2 * ten), Misfire::default()));
    assert!(
        why.contains("rule `Every(600000, None)`, here `Every(1200000, None)`"),
        "{why}"
    );
    assert!(why.contains("replace_calendar"), "{why}");
    let why =
        refusal(probe.schedule_calendar("other", "sync", &(), every(ten), Misfire::default()));
    assert!(why.contains("kind \"job\", here \"other\""), "{why}");
    let why =
        refusal(probe.schedule_calendar("job", "sync", &7u64, every(ten), Misfire::default()));
    assert!(why.contains("payload"), "{why}");
    // The stored schedule is untouched and runs on.
    let now = store.server_time_ms().unwrap();
    clock.advance(Duration::from_millis((now / ten + 1) * ten - now));
    assert!(old.wait_idle(WAIT));
    assert_eq!(fires_of(&runs, "sync").len(), 1);

    // A deliberate change: the old process is gone (a rolling deploy).
    old.shutdown();
    assert!(old.await_termination(WAIT));
    let new = process(&store, 1, &runs);
    let now = store.server_time_ms().unwrap();
    let put = new
        .replace_calendar("job", "sync", &(), every(2 * ten), Misfire::default())
        .unwrap();
    assert_eq!(
        put,
        Put::Replaced {
            deadline_ms: (now / (2 * ten) + 1) * 2 * ten
        }
    );
    assert_eq!(
        new.replace_calendar("job", "sync", &(), every(2 * ten), Misfire::default())
            .unwrap(),
        Put::Exists,
        "replacing with the same definition changes nothing"
    );
    assert_eq!(store.counts().unwrap().pending, 1);
    clock.advance(Duration::from_millis(2 * ten));
    assert!(new.wait_idle(WAIT));
    assert_eq!(new.stats().succeeded, 1, "the new rule ran its first fire");
    assert_eq!(
        fires_of(&runs, "sync")[1] % (2 * ten),
        0,
        "on the new rule's grid"
    );
}

/// A process that did not register a schedule (or registered another
/// definition) does not run its fires: it hands them back, uncounted, to
/// a process that did; once it registers, it runs them.
#[test]
fn only_a_process_that_registered_the_schedule_runs_it() {
    let clock = ManualClock::new();
    let store = MemoryBackend::with_clock(clock.clone());
    let runs = Runs::default();
    let first_process = process(&store, 0, &runs);
    let first = inserted(
        first_process
            .schedule_calendar("job", "hourly", &(), every(HOUR_MS), Misfire::default())
            .unwrap(),
    );
    first_process.shutdown();
    assert!(first_process.await_termination(WAIT));
    let other = process(&store, 1, &runs);
    clock.advance(Duration::from_millis(
        first - store.server_time_ms().unwrap(),
    ));
    assert!(other.wait_idle(WAIT));
    assert!(
        fires_of(&runs, "hourly").is_empty(),
        "not registered here: not run"
    );
    assert_eq!(other.stats().deferred, 1);
    let stored = store.get("hourly").unwrap().unwrap();
    assert_eq!(stored.deadline_ms, first, "the fire is kept");
    assert_eq!(
        other
            .schedule_calendar("job", "hourly", &(), every(HOUR_MS), Misfire::default())
            .unwrap(),
        Put::Exists
    );
    clock.advance(Duration::from_secs(1)); // the deferral's pause
    assert!(other.wait_idle(WAIT));
    assert_eq!(fires_of(&runs, "hourly"), vec![first]);
}

// ---------------------------------------------------------------------------
// Rules that end, failing runs, bad input
// ---------------------------------------------------------------------------

/// A rule with three fires runs three times, then stays parked (so a
/// registration racing its last fire cannot start it over) until
/// cancelled; registering it again is refused: it never fires again.
#[test]
fn a_rule_that_ends_runs_its_fires_then_stays_parked() {
    let clock = ManualClock::new();
    let store = MemoryBackend::with_clock(clock.clone());
    let runs = Runs::default();
    let pool = process(&store, 0, &runs);
    let now = store.server_time_ms().unwrap();
    let step = MIN_MS;
    let last = (now / step + 3) * step;
    let rule = || Every(step, Some(last));
    inserted(
        pool.schedule_calendar("job", "thrice", &(), rule(), Misfire::default())
            .unwrap(),
    );
    for _ in 0..10 {
        clock.advance(Duration::from_millis(step));
        assert!(pool.wait_idle(WAIT));
    }
    assert_eq!(
        fires_of(&runs, "thrice"),
        vec![last - 2 * step, last - step, last]
    );
    let parked = store.get("thrice").unwrap().unwrap();
    assert_eq!(parked.state, StoredState::Pending);
    assert!(
        parked.deadline_ms > now + 1000 * 365 * DAY_MS,
        "parked: {parked:?}"
    );
    let again = pool.schedule_calendar("job", "thrice", &(), rule(), Misfire::default());
    assert!(
        matches!(&again, Err(DurableError::Config(why)) if why.contains("never fires after")),
        "{again:?}"
    );
    assert!(pool.cancel("thrice").unwrap());
    assert_eq!(store.counts().unwrap().pending, 0);
}

/// A failing run is retried for the same fire (the fire instant is kept);
/// once its attempts are used up the schedule is dead-lettered under its
/// handler's kind, and registering it again revives it from the next fire.
#[test]
fn failing_runs_retry_the_same_fire_then_dead_letter_the_schedule() {
    let clock = ManualClock::new();
    let store = MemoryBackend::with_clock(clock.clone());
    let tries: Arc<Mutex<Vec<(u64, u32)>>> = Arc::default();
    let t = tries.clone();
    let pool = DurablePool::builder(store.clone())
        .threads(1)
        .max_attempts(2)
        .handler("flaky", move |_: &(), job| {
            t.lock().unwrap().push((job.deadline_ms, job.attempt));
            Err("the report server is down".into())
        })
        .build()
        .unwrap();
    let first = inserted(
        pool.schedule_calendar("flaky", "report", &(), every(HOUR_MS), Misfire::default())
            .unwrap(),
    );
    clock.advance(Duration::from_millis(
        first - store.server_time_ms().unwrap(),
    ));
    assert!(pool.wait_idle(WAIT));
    clock.advance(Duration::from_secs(1)); // the retry backoff
    assert!(pool.wait_idle(WAIT));
    assert_eq!(*tries.lock().unwrap(), vec![(first, 1), (first, 2)]);
    let dead = pool.dead_letters(10).unwrap();
    assert_eq!(
        dead.iter()
            .map(|d| (d.id.as_str(), d.kind.as_str(), d.attempts))
            .collect::<Vec<_>>(),
        vec![("report", "flaky", 2)],
        "a calendar schedule's dead letter shows its handler's kind"
    );
    dead[0].decode::<()>().expect("and its value");
    let revived = inserted(
        pool.schedule_calendar("flaky", "report", &(), every(HOUR_MS), Misfire::default())
            .unwrap(),
    );
    assert_eq!(revived, first + HOUR_MS);
}

/// Bad input is a clear `Config` error at registration, never a panic.
#[test]
fn bad_input_is_refused_at_registration() {
    #[derive(Debug)]
    struct Backwards;
    impl Schedule for Backwards {
        fn next_after(&self, after: SystemTime) -> Option<SystemTime> {
            Some(after - Duration::from_secs(1))
        }
    }
    let pool = DurablePool::builder(MemoryBackend::new())
        .threads(1)
        .handler("job", |_: &(), _| Ok(()))
        .build()
        .unwrap();
    let config = |put: Result<Put, DurableError>| match put {
        Err(DurableError::Config(why)) => why,
        other => panic!("expected Config, got {other:?}"),
    };
    let m = Misfire::default();
    let hourly = || every(HOUR_MS);
    assert!(
        config(pool.schedule_calendar("job", "x", &(), Every(HOUR_MS, Some(0)), m))
            .contains("never fires after")
    );
    assert!(
        config(pool.schedule_calendar("job", "x", &(), Backwards, m))
            .contains("broke the Schedule contract")
    );
    assert!(
        config(pool.schedule_calendar("job", "x", &(), hourly(), Misfire::run_all(0)))
            .contains("run_all(0)")
    );
    let short = Misfire::skip()
        .grace(Duration::from_secs(60))
        .max_lateness(Duration::from_secs(1));
    assert!(
        config(pool.schedule_calendar("job", "x", &(), hourly(), short)).contains("max_lateness")
    );
    assert!(config(pool.schedule_calendar("nope", "x", &(), hourly(), m)).contains("no handler"));
    assert!(config(pool.schedule_calendar("job", "", &(), hourly(), m)).contains("empty"));
    assert!(
        config(pool.schedule_calendar("schedpool/calendar", "x", &(), hourly(), m))
            .contains("reserved")
    );
    assert_eq!(pool.counts().unwrap().pending, 0, "nothing was stored");
    let reserved = DurablePool::builder(MemoryBackend::new())
        .handler("schedpool/calendar", |_: &(), _| Ok(()))
        .build();
    assert!(matches!(reserved, Err(DurableError::Config(why)) if why.contains("reserved")));
    pool.shutdown();
    assert_eq!(
        pool.schedule_calendar("job", "x", &(), hourly(), m),
        Err(DurableError::Closed)
    );
}

/// A rule that panics on a worker (here: once the first fire has run, at
/// the plan of the next) does not kill the worker: the schedule is
/// dead-lettered with the panic's text, the fire ran once, and the pool
/// still idles and terminates.
#[test]
fn a_rule_that_panics_on_a_worker_dead_letters_its_schedule_with_the_reason() {
    #[derive(Debug)]
    struct OnceThenPanics(u64);
    impl Schedule for OnceThenPanics {
        fn next_after(&self, after: SystemTime) -> Option<SystemTime> {
            let ms = after.duration_since(UNIX_EPOCH).ok()?.as_millis() as u64;
            assert!(ms < self.0, "the rule's table ran out");
            Some(UNIX_EPOCH + Duration::from_millis(self.0))
        }
    }
    let clock = ManualClock::new();
    let store = MemoryBackend::with_clock(clock.clone());
    let ran = Arc::new(Mutex::new(0u32));
    let r = ran.clone();
    let pool = DurablePool::builder(store.clone())
        .threads(1)
        .handler("job", move |_: &(), _| {
            *r.lock().unwrap() += 1;
            Ok(())
        })
        .build()
        .unwrap();
    let fire = store.server_time_ms().unwrap() + HOUR_MS;
    let first = inserted(
        pool.schedule_calendar(
            "job",
            "table",
            &(),
            OnceThenPanics(fire),
            Misfire::default(),
        )
        .unwrap(),
    );
    assert_eq!(first, fire);
    clock.advance(Duration::from_millis(HOUR_MS));
    assert!(pool.wait_idle(WAIT));
    assert_eq!(*ran.lock().unwrap(), 1, "the fire ran once");
    let dead = pool.dead_letters(10).unwrap();
    assert_eq!(dead.len(), 1, "{dead:?}");
    let why = dead[0].error.as_deref().unwrap_or_default();
    assert!(
        why.contains("panicked") && why.contains("the rule's table ran out"),
        "{why}"
    );
    pool.shutdown();
    assert!(pool.await_termination(WAIT));
}
