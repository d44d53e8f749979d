#![cfg(feature = "redis")]
//! Calendar schedules once per fleet against a real `redis-server`, with
//! OS processes (issue 22, parts 4 and 5): three processes with clocks
//! 90 s apart run one schedule, one is kill -9'd mid-run and restarted,
//! and every fire runs once; a 3-hour outage of the whole fleet, with the
//! store's clock driven by the test (`redis-server` with a preloaded
//! clock shift, restarted with a later clock), after which the restarted fleet follows
//! the misfire policies stored with the schedules.
//!
//! Child processes re-execute this test binary with a role
//! (`redis_support::child`) and talk to the parent through `@@` lines and
//! Redis keys. Ledgers are written by the handler before its run returns
//! (F14), and every "never early" check uses the server's times.

mod redis_support;
mod trace_support;

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use redis_support::{child, role, skew_clock, watchdog, Kid, Redis};
use schedpool::calendar::Schedule;
use schedpool::durable::{DurableBackend, DurablePool, JobInfo, Misfire, RedisBackend};

/// The two parents start up to four processes each: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// Every `0` ms on the Unix epoch's grid.
#[derive(Debug)]
struct Every(u64);

impl Schedule for Every {
    fn next_after(&self, after: SystemTime) -> Option<SystemTime> {
        let ms = after.duration_since(UNIX_EPOCH).ok()?.as_millis() as u64;
        Some(UNIX_EPOCH + Duration::from_millis((ms / self.0 + 1) * self.0))
    }
}

/// Sends `@@line` to the parent.
macro_rules! tell {
    ($($arg:tt)*) => {{
        println!("@@{}", format!($($arg)*));
    }};
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("child needs {name}"))
}

fn conn(url: &str) -> redis::Connection {
    let c = redis::Client::open(url)
        .unwrap()
        .get_connection_with_timeout(Duration::from_secs(5))
        .unwrap();
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    c
}

fn hgetall(c: &mut redis::Connection, key: &str) -> BTreeMap<u64, i64> {
    let raw: Vec<(String, i64)> = redis::cmd("HGETALL").arg(key).query(c).unwrap();
    raw.into_iter()
        .map(|(k, v)| (k.parse().unwrap(), v))
        .collect()
}

fn server_ms(c: &mut redis::Connection) -> u64 {
    let (s, us): (u64, u64) = redis::cmd("TIME").query(c).unwrap();
    s * 1000 + us / 1000
}

/// Waits until `f` holds, polling; panics with `what` after `limit`.
fn wait_for(limit: Duration, what: &str, mut f: impl FnMut() -> bool) {
    let until = Instant::now() + limit;
    while !f() {
        assert!(Instant::now() < until, "timed out after {limit:?}: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The lines of `k` up to and including the first that starts with
/// `prefix`.
fn lines_until(k: &Kid, prefix: &str, limit: Duration) -> Vec<String> {
    let until = Instant::now() + limit;
    let mut seen = Vec::new();
    loop {
        let left = until.saturating_duration_since(Instant::now());
        let line = k
            .lines
            .recv_timeout(left)
            .unwrap_or_else(|e| panic!("{}: no {prefix:?} line ({e})", k.name));
        let done = line.starts_with(prefix);
        seen.push(line);
        if done {
            return seen;
        }
    }
}

/// A child whose wall clock is `skew_ms` off the real one.
fn kid(test: &str, role: &str, name: &str, skew_ms: i64, url: &str) -> Kid {
    let env = [("T_URL", url.to_string()), ("T_NAME", name.to_string())];
    let mut cmd = child(test, role, &env);
    skew_clock(&mut cmd, skew_ms);
    Kid::spawn(name, cmd)
}

/// Runs until the parent sets `key`, then shuts the pool down. The poll
/// (re)connects whenever it has no connection: the parent restarts Redis
/// right after this process said "ready", which on a loaded machine can be
/// before its first connect here.
fn serve_until(pool: DurablePool, url: &str, key: &str) -> DurablePool {
    let client = redis::Client::open(url).unwrap();
    let mut c = None;
    loop {
        if c.is_none() {
            c = client
                .get_connection_with_timeout(Duration::from_secs(5))
                .ok();
        }
        if let Some(conn) = c.as_mut() {
            match redis::cmd("EXISTS").arg(key).query::<i64>(conn) {
                Ok(1) => break,
                Ok(_) => {}
                Err(_) => c = None,
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    pool.shutdown();
    assert!(pool.await_termination(Duration::from_secs(10)));
    pool
}

// ---------------------------------------------------------------------------
// Exactly once per fire, three processes, one killed and restarted
// ---------------------------------------------------------------------------

const EVERY_MS: u64 = 400;
const LEASE_MS: u64 = 1000;
const BLOCK_MS: u64 = 300;

/// Three processes, started one after another with wall clocks at −90 s,
/// real and +90 s, register one schedule firing every 400 ms. The process
/// running a fire is kill -9'd and started again. The ledger (written by
/// the handler before it returns) must hold every fire from the first to
/// the last exactly once, except the one in flight at the kill, which may
/// appear twice; no fire is claimed before its instant by the server's
/// clock; only the first registration stored the schedule.
#[test]
fn three_processes_run_each_fire_once_through_a_kill_and_restart() {
    if let Some(r) = role() {
        assert_eq!(r, "once");
        return watchdog(Duration::from_secs(90), once_child);
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    watchdog(Duration::from_secs(120), once_parent);
}

fn once_child() {
    let url = env("T_URL");
    let pid = std::process::id();
    let ledger = url.clone();
    let pool = DurablePool::builder(RedisBackend::connect(&url, "cal-once").unwrap())
        .threads(2)
        .lease(Duration::from_millis(LEASE_MS))
        .max_block(Duration::from_millis(BLOCK_MS))
        .handler("tick", move |_: &(), job: &JobInfo| {
            thread_local! {
                static C: std::cell::RefCell<Option<redis::Connection>> =
                    const { std::cell::RefCell::new(None) };
            }
            C.with(|c| {
                let mut c = c.borrow_mut();
                let c = c.get_or_insert_with(|| conn(&ledger));
                redis::pipe()
                    .cmd("HINCRBY")
                    .arg("cal-once:fires")
                    .arg(job.deadline_ms)
                    .arg(1)
                    .ignore()
                    .cmd("RPUSH")
                    .arg("cal-once:log")
                    .arg(format!("{} {} {pid}", job.deadline_ms, job.claimed_ms))
                    .ignore()
                    .query::<()>(c)
            })?;
            tell!("running {}", job.deadline_ms);
            std::thread::sleep(Duration::from_millis(100));
            Ok(())
        })
        .build()
        .unwrap();
    let put = pool
        .schedule_calendar(
            "tick",
            "every-400",
            &(),
            Every(EVERY_MS),
            Misfire::default(),
        )
        .unwrap();
    tell!("ready {put:?}");
    serve_until(pool, &url, "cal-once:stop");
    tell!("done");
}

fn once_parent() {
    let r = Redis::start();
    let url = r.url();
    let mut c = conn(&url);
    let test = "three_processes_run_each_fire_once_through_a_kill_and_restart";
    let clocks = [("A", -90_000), ("B", 0), ("C", 90_000)];
    let mut kids: Vec<Kid> = Vec::new();
    let mut stored = Vec::new();
    let before = server_ms(&mut c);
    for (name, skew) in clocks {
        let k = kid(test, "once", name, skew, &url);
        let ready = k.expect("ready", Duration::from_secs(30));
        if let Some(at) = ready.strip_prefix("ready Inserted { deadline_ms: ") {
            stored.push(at.trim_end_matches(" }").parse::<u64>().unwrap());
        }
        kids.push(k);
    }
    assert_eq!(
        stored.len(),
        1,
        "one registration stored it, the others found it"
    );
    // A, 90 s behind, stored it: its first fire is still the store's next.
    assert!(
        stored[0] > before,
        "first fire {} before the store's now {before}",
        stored[0]
    );
    wait_for(Duration::from_secs(20), "5 fires", || {
        hgetall(&mut c, "cal-once:fires").len() >= 5
    });

    // kill -9 whichever process is running a fire.
    for k in &kids {
        while k.lines.try_recv().is_ok() {}
    }
    let until = Instant::now() + Duration::from_secs(20);
    let (victim, killed_fire) = 'found: loop {
        assert!(Instant::now() < until, "no process ran a fire");
        for (i, k) in kids.iter().enumerate() {
            if let Ok(line) = k.lines.try_recv() {
                if let Some(fire) = line.strip_prefix("running ") {
                    break 'found (i, fire.parse::<u64>().unwrap());
                }
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    kids[victim].kill9();
    let at_kill = hgetall(&mut c, "cal-once:fires").len();
    let (name, skew) = clocks[victim];
    eprintln!("killed {name} while it ran fire {killed_fire}; restarting it");
    let again = kid(test, "once", name, skew, &url);
    let ready = again.expect("ready", Duration::from_secs(30));
    assert!(
        ready.ends_with("Exists"),
        "the restarted process found it: {ready}"
    );
    kids[victim] = again;
    wait_for(Duration::from_secs(30), "8 more fires", || {
        hgetall(&mut c, "cal-once:fires").len() >= at_kill + 8
    });

    let store = RedisBackend::connect(&url, "cal-once").unwrap();
    assert!(store.get("every-400").unwrap().is_some());
    redis::cmd("SET")
        .arg("cal-once:stop")
        .arg(1)
        .query::<()>(&mut c)
        .unwrap();
    for k in &mut kids {
        k.expect("done", Duration::from_secs(30));
        assert!(k.wait_exit(Duration::from_secs(30)).success());
    }
    let fires = hgetall(&mut c, "cal-once:fires");
    let (first, last) = (*fires.keys().next().unwrap(), *fires.keys().last().unwrap());
    let mut problems = Vec::new();
    let mut at = first;
    while at <= last {
        match fires.get(&at) {
            Some(1) => {}
            Some(2) if at == killed_fire => {}
            other => problems.push((at, other.copied())),
        }
        at += EVERY_MS;
    }
    assert!(
        problems.is_empty(),
        "missing or repeated fires: {problems:?}"
    );
    assert!(
        fires.keys().all(|f| f % EVERY_MS == 0),
        "off the grid: {fires:?}"
    );
    assert!(fires.contains_key(&killed_fire));
    assert_eq!(
        first, stored[0],
        "the first fire ran, and nothing before it"
    );
    let log: Vec<String> = redis::cmd("LRANGE")
        .arg("cal-once:log")
        .arg(0)
        .arg(-1)
        .query(&mut c)
        .unwrap();
    let pids: std::collections::HashSet<&str> = log
        .iter()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let (fire, claimed) = (f[0].parse::<u64>().unwrap(), f[1].parse::<u64>().unwrap());
            assert!(claimed >= fire, "claimed {claimed} before fire {fire}");
            f[2]
        })
        .collect();
    eprintln!(
        "{} fires {first}..{last}, the killed one ran {} time(s), by {} processes",
        fires.len(),
        fires[&killed_fire],
        pids.len()
    );
    assert!(store.cancel("every-400").is_ok());
}

// ---------------------------------------------------------------------------
// The misfire policies after a 3-hour outage of the whole fleet
// ---------------------------------------------------------------------------

const HALF_HOUR: u64 = 30 * 60_000;

/// The policies under test: (schedule id, policy).
fn policies() -> [(&'static str, Misfire); 3] {
    [
        ("skip", Misfire::skip()),
        (
            "once",
            Misfire::run_once().max_lateness(Duration::from_secs(100 * 60)),
        ),
        ("all", Misfire::run_all(3)),
    ]
}

/// Forwards a misfire decision's WARN event to the parent.
fn forward_decision(event: &tracing::Event<'_>) {
    struct Fields(BTreeMap<String, String>);
    impl tracing::field::Visit for Fields {
        fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
            self.0.insert(field.name().into(), format!("{value:?}"));
        }
    }
    let mut f = Fields(BTreeMap::new());
    event.record(&mut f);
    if let (Some(id), Some(skipped), Some(coalesced)) = (
        f.0.get("schedule"),
        f.0.get("skipped_fires"),
        f.0.get("coalesced_fires"),
    ) {
        tell!("decision {id}|{skipped}|{coalesced}");
    }
}

/// Three half-hourly schedules (skip; run_once with a 100-minute maximum
/// lateness; run_all(3)) run their fire at B on a 3-process fleet. The
/// whole fleet is killed; the store's clock jumps to B + 3 h 5 min (Redis
/// shut down cleanly and restarted under a later clock); a new fleet
/// registers the same schedules. What runs, what the processes count and
/// what they report follows the stored policies: skip runs nothing and
/// drops 6 fires; run_once runs B + 3 h once, drops the 2 fires older than
/// 100 minutes and coalesces 3; run_all(3) runs the latest 3, in order,
/// and drops 3. Every schedule then waits for B + 3 h 30 min.
#[test]
fn after_a_three_hour_outage_of_the_whole_fleet_the_stored_policies_decide() {
    if let Some(r) = role() {
        assert_eq!(r, "outage");
        return watchdog(Duration::from_secs(90), outage_child);
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    watchdog(Duration::from_secs(120), outage_parent);
}

fn outage_child() {
    let subscriber = trace_support::Recorder::with_callback(forward_decision);
    tracing::subscriber::set_global_default(subscriber).unwrap();
    let url = env("T_URL");
    let ledger = url.clone();
    let mut builder = DurablePool::builder(RedisBackend::connect(&url, "cal-out").unwrap())
        .threads(2)
        .max_block(Duration::from_millis(BLOCK_MS))
        .handler("tick", move |id: &String, job: &JobInfo| {
            // Redis restarts under this test: a failed connection is a
            // failed run (retried), not a panic.
            let client = redis::Client::open(ledger.as_str())?;
            let mut c = client.get_connection_with_timeout(Duration::from_secs(5))?;
            redis::cmd("HINCRBY")
                .arg(format!("cal-out:{id}"))
                .arg(job.deadline_ms)
                .arg(1)
                .query::<()>(&mut c)?;
            Ok(())
        });
    // The restarted fleet meets fires already due: it registers them at
    // build, before its workers start (the first fleet, with nothing due,
    // registers through the pool's verb).
    let restarted = std::env::var("T_NAME").unwrap().starts_with('2');
    if restarted {
        for (id, misfire) in policies() {
            builder =
                builder.schedule_calendar("tick", id, &id.to_string(), Every(HALF_HOUR), misfire);
        }
    }
    let pool = builder.build().unwrap();
    let puts: Vec<String> = policies()
        .into_iter()
        .map(|(id, misfire)| {
            let put =
                pool.schedule_calendar("tick", id, &id.to_string(), Every(HALF_HOUR), misfire);
            format!("{id}: {:?}", put.unwrap())
        })
        .collect();
    tell!("ready {}", puts.join("; "));
    let pool = serve_until(pool, &url, "cal-out:stop");
    let s = pool.stats();
    tell!(
        "stats {} {} {}",
        s.fires_skipped,
        s.fires_coalesced,
        s.succeeded
    );
}

/// The skew that puts a clock at `at_ms` now.
fn skew_to(at_ms: u64) -> i64 {
    let real = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    at_ms as i64 - real
}

fn outage_parent() {
    let test = "after_a_three_hour_outage_of_the_whole_fleet_the_stored_policies_decide";
    let real = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let b = (real / HALF_HOUR + 2) * HALF_HOUR;
    let fire = |n: u64| b + n * HALF_HOUR;
    // The store's clock: ten minutes before B while the fleet registers.
    let mut r = Redis::start_with_clock(skew_to(b - 600_000));
    let url = r.url();
    // Three processes register the schedules; returns them, how many
    // registrations stored a schedule (at B), and their lines so far.
    let fleet = |round: &str| -> (Vec<Kid>, usize, Vec<String>) {
        let kids: Vec<Kid> = ["A", "B", "C"]
            .iter()
            .map(|n| kid(test, "outage", &format!("{round}{n}"), 0, &url))
            .collect();
        let lines: Vec<String> = kids
            .iter()
            .flat_map(|k| lines_until(k, "ready", Duration::from_secs(30)))
            .collect();
        let stored = format!("Inserted {{ deadline_ms: {b} }}");
        let inserted = lines.iter().map(|l| l.matches(&stored).count()).sum();
        (kids, inserted, lines)
    };
    let (mut first, inserted, _) = fleet("1");
    assert_eq!(inserted, 3, "each schedule stored once, first fire at B");

    // The store's clock reaches B + 5 s: every schedule runs B, on time.
    r.restart_with_clock(skew_to(b + 5_000));
    let mut c = conn(&url);
    let ran = |c: &mut redis::Connection, id: &str| -> Vec<u64> {
        hgetall(c, &format!("cal-out:{id}"))
            .into_iter()
            .flat_map(|(f, n)| vec![f; n as usize])
            .collect()
    };
    wait_for(Duration::from_secs(30), "B ran on every schedule", || {
        policies().iter().all(|(id, _)| ran(&mut c, id) == vec![b])
    });
    // ...and was settled: the ledger is written before a run returns, so
    // a kill right now could leave B in flight, to be judged after the
    // outage as one more missed fire.
    let store = RedisBackend::connect(&url, "cal-out").unwrap();
    wait_for(
        Duration::from_secs(10),
        "every schedule moved to B + 30 min",
        || {
            policies()
                .iter()
                .all(|(id, _)| store.get(id).unwrap().unwrap().deadline_ms == fire(1))
        },
    );
    drop(store);

    // The whole fleet dies; 3 h 5 min pass on the store's clock.
    for k in &mut first {
        k.kill9();
    }
    r.restart_with_clock(skew_to(b + 3 * 3_600_000 + 5 * 60_000));
    let mut c = conn(&url);
    assert!(
        server_ms(&mut c) >= fire(6) + 4 * 60_000,
        "the store's clock jumped"
    );
    let (mut second, inserted, mut lines) = fleet("2");
    assert_eq!(
        inserted, 0,
        "the restarted fleet found the stored schedules"
    );
    let expected = [
        ("skip", vec![b]),
        ("once", vec![b, fire(6)]),
        ("all", vec![b, fire(4), fire(5), fire(6)]),
    ];
    wait_for(Duration::from_secs(30), "the policies' runs", || {
        expected.iter().all(|(id, runs)| ran(&mut c, id) == *runs)
    });
    let store = RedisBackend::connect(&url, "cal-out").unwrap();
    wait_for(
        Duration::from_secs(10),
        "every schedule at B + 3 h 30 min",
        || {
            policies()
                .iter()
                .all(|(id, _)| store.get(id).unwrap().unwrap().deadline_ms == fire(7))
        },
    );
    redis::cmd("SET")
        .arg("cal-out:stop")
        .arg(1)
        .query::<()>(&mut c)
        .unwrap();
    let (mut skipped, mut coalesced, mut decisions) = (0, 0, BTreeMap::new());
    for k in &second {
        lines.extend(lines_until(k, "stats", Duration::from_secs(30)));
    }
    for line in lines {
        if let Some(d) = line.strip_prefix("decision ") {
            let parts: Vec<&str> = d.split('|').collect();
            let (id, lists) = (parts[0], (parts[1].to_string(), parts[2].to_string()));
            let old = decisions.insert(id.to_string(), lists);
            assert!(old.is_none(), "one decision per schedule: {d}");
        } else if let Some(n) = line.strip_prefix("stats ") {
            let n: Vec<u64> = n.split_whitespace().map(|x| x.parse().unwrap()).collect();
            skipped += n[0];
            coalesced += n[1];
        }
    }
    for k in &mut second {
        assert!(k.wait_exit(Duration::from_secs(30)).success());
    }
    // Everything after the restart ran exactly as the policies say.
    for (id, runs) in &expected {
        assert_eq!(ran(&mut c, id), *runs, "{id}");
    }
    assert_eq!((skipped, coalesced), (6 + 2 + 3, 3), "counted by the fleet");
    let named = |list: &str| {
        if list == "none" {
            0
        } else {
            list.split(", ").count()
        }
    };
    let d = |id: &str| {
        decisions
            .get(id)
            .unwrap_or_else(|| panic!("no decision event for {id}: {decisions:?}"))
    };
    assert_eq!((named(&d("skip").0), named(&d("skip").1)), (6, 0));
    assert_eq!((named(&d("once").0), named(&d("once").1)), (2, 3));
    assert_eq!((named(&d("all").0), named(&d("all").1)), (3, 0));
    assert!(
        d("skip").0.ends_with('Z'),
        "instants, in UTC: {:?}",
        d("skip")
    );
}
