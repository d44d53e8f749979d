#![cfg(feature = "redis")]
//! Fleet acceptance tests of the durable Redis backend (docs: the design's
//! "Acceptance tests" T6, T7, T12, T14 and T15), against a real
//! `redis-server` per test and several OS processes.
//!
//! Child processes re-execute this test binary (`redis_support::child`)
//! with a role; each test function plays its children's parts first. They
//! talk to the parent through `@@`-prefixed stdout lines and Redis keys.
//!
//! Rules kept throughout:
//! - "Never early" and "no overlap" checks use the server times the scripts
//!   return (claim time, deadline, lease score), with no slack.
//! - Ledgers are written before the ack (F14); a successful ack is counted
//!   only after `ack()` returned `Ok`.
//! - Upper bounds on lateness are generous (2-core CI), every test and every
//!   child has a watchdog, and the parents of this file run one at a time so
//!   that their timing does not depend on each other.

mod redis_support;
mod trace_support;
use trace_support::Recorder;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use redis_support::{child, faketime_child, role, watchdog, Kid, Redis};
use schedpool::durable::*;

// ---------------------------------------------------------------------------
// Shared helpers
// ---------------------------------------------------------------------------

/// The parents of this file run one at a time: each starts up to five
/// processes on a 2-core box, and T12's "deadline + 1 s" and T15's
/// "within 500 ms" should not depend on another test's load.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A plain Redis connection for ledgers and inspection.
fn rconn(url: &str) -> redis::Connection {
    let client = redis::Client::open(url).unwrap();
    let c = client
        .get_connection_with_timeout(Duration::from_secs(5))
        .unwrap();
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    c.set_write_timeout(Some(Duration::from_secs(30))).unwrap();
    c
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("child needs {name}"))
}

/// The server's clock in ms (Redis `TIME`).
fn server_ms(c: &mut redis::Connection) -> u64 {
    let (s, us): (u64, u64) = redis::cmd("TIME").query(c).unwrap();
    s * 1000 + us / 1000
}

fn exists(c: &mut redis::Connection, key: &str) -> bool {
    redis::cmd("EXISTS").arg(key).query::<i64>(c).unwrap() == 1
}

fn set(c: &mut redis::Connection, key: &str) {
    redis::cmd("SET").arg(key).arg(1).query::<()>(c).unwrap();
}

fn zcard(c: &mut redis::Connection, key: &str) -> usize {
    redis::cmd("ZCARD").arg(key).query(c).unwrap()
}

fn hlen(c: &mut redis::Connection, key: &str) -> usize {
    redis::cmd("HLEN").arg(key).query(c).unwrap()
}

fn hgetall(c: &mut redis::Connection, key: &str) -> HashMap<String, String> {
    redis::cmd("HGETALL").arg(key).query(c).unwrap()
}

fn lrange(c: &mut redis::Connection, key: &str) -> Vec<String> {
    redis::cmd("LRANGE")
        .arg(key)
        .arg(0)
        .arg(-1)
        .query(c)
        .unwrap()
}

/// The sizes of a queue's `due`, `lease`, `data`, `meta` and `dead` keys.
fn store_sizes(c: &mut redis::Connection, q: &str) -> [usize; 5] {
    [
        zcard(c, &format!("sp:{{{q}}}:due")),
        zcard(c, &format!("sp:{{{q}}}:lease")),
        hlen(c, &format!("sp:{{{q}}}:data")),
        hlen(c, &format!("sp:{{{q}}}:meta")),
        zcard(c, &format!("sp:{{{q}}}:dead")),
    ]
}

/// Waits until `f` holds, polling every `every`; panics with `what` after
/// `limit`.
fn wait_for(limit: Duration, every: Duration, what: &str, mut f: impl FnMut() -> bool) {
    let until = Instant::now() + limit;
    while !f() {
        assert!(Instant::now() < until, "timed out after {limit:?}: {what}");
        std::thread::sleep(every);
    }
}

/// A small deterministic generator (no `rand` in the dev-dependencies).
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    fn next(&mut self) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A seed from `SCHEDPOOL_SEED`, or the clock; printed so a failure can be
/// replayed.
fn seed(what: &str) -> u64 {
    let s = std::env::var("SCHEDPOOL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                ^ u64::from(std::process::id())
        });
    eprintln!("{what}: seed {s} (set SCHEDPOOL_SEED to replay)");
    s
}

/// Runs a child role under a watchdog, so an orphaned child cannot hang.
fn as_child(limit: Duration, f: impl FnOnce()) {
    watchdog(limit, f)
}

fn u(s: &str) -> u64 {
    s.parse()
        .unwrap_or_else(|e| panic!("not a number {s:?}: {e}"))
}

fn i(s: &str) -> i64 {
    s.parse()
        .unwrap_or_else(|e| panic!("not a number {s:?}: {e}"))
}

/// Sends `@@line` to the parent.
macro_rules! tell {
    ($($arg:tt)*) => {{
        println!("@@{}", format!($($arg)*));
    }};
}

// ---------------------------------------------------------------------------
// T6. No two holders inside one lease.
// ---------------------------------------------------------------------------

const T6_ITEMS: u64 = 50_000;
const T6_PROCS: usize = 4;
const T6_THREADS: usize = 8;
const T6_LEASE_MS: u64 = 500;
/// Every item whose number is a multiple of this sleeps past the lease, so
/// only heartbeats keep it (100 items).
const T6_LONG_EVERY: u64 = 500;
const T6_LONG_SLEEP_MS: u64 = 800;

/// Reads the holder's view of its lease (the `meta` token and the `lease`
/// score, atomically) and appends it to the claim record, in one step.
const T6_LOG: &str = r#"
local m = redis.call('HGET', KEYS[1], ARGV[1])
local s = redis.call('ZSCORE', KEYS[2], ARGV[1])
redis.call('RPUSH', KEYS[3], ARGV[2] .. ' ' .. (m or '-') .. ' ' .. (s or '-'))
return 1
"#;

/// 4 processes × 8 threads share 50k items due now (lease 500 ms, automatic
/// heartbeats every lease/3). Each claim is logged to a Redis list with its
/// token, server claim time and lease end, plus the lease score the holder
/// still had right before its ack. For every id the holders' lease
/// intervals must not overlap, every id is acked exactly once, and every
/// process claimed at least 10 % of the items.
///
/// Scaled: handlers sleep 0–10 ms instead of 0–50 ms (the run would take
/// 4× longer for the same contention); 100 items sleep 800 ms, past the
/// lease, so the heartbeats' extensions are exercised and checked too.
#[test]
fn t6_no_two_holders_inside_one_lease() {
    if let Some(r) = role() {
        assert_eq!(r, "t6");
        return as_child(Duration::from_secs(300), t6_child);
    }
    let _serial = serial();
    watchdog(Duration::from_secs(240), t6_parent);
}

fn t6_child() {
    let url = env("T_URL");
    let pid = std::process::id();
    let backend = RedisBackend::connect(&url, "t6").unwrap();
    let meta = backend.key("meta").unwrap().to_string();
    let lease_key = backend.key("lease").unwrap().to_string();
    let q: RedisDelayQueue<u64> = RedisDelayQueue::with_options(
        backend,
        QueueOptions {
            lease: Duration::from_millis(T6_LEASE_MS),
            max_block: Duration::from_secs(2),
            max_attempts: 0,
        },
    )
    .unwrap();
    let mut c = rconn(&url);
    tell!("ready {pid}");
    while !exists(&mut c, "t6:go") {
        std::thread::sleep(Duration::from_millis(2));
    }
    let claimed = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (0..T6_THREADS)
        .map(|t| {
            let q = q.clone();
            let url = url.clone();
            let (meta, lease_key) = (meta.clone(), lease_key.clone());
            let claimed = claimed.clone();
            std::thread::spawn(move || {
                let mut c = rconn(&url);
                let log = redis::Script::new(T6_LOG);
                let mut rng = Rng::new((u64::from(pid) << 8) | t as u64);
                while let Some(d) = q.take().unwrap() {
                    claimed.fetch_add(1, Ordering::Relaxed);
                    let n = *d.value();
                    let ms = if n % T6_LONG_EVERY == 0 {
                        T6_LONG_SLEEP_MS
                    } else {
                        rng.below(11)
                    };
                    std::thread::sleep(Duration::from_millis(ms));
                    // The ledger entry, before the ack: id token claim
                    // lease-end-at-claim pid, then the holder's meta and
                    // lease score as they are now.
                    let record = format!(
                        "{} {} {} {} {pid}",
                        d.id(),
                        d.token(),
                        d.claimed_ms(),
                        d.claimed_ms() + T6_LEASE_MS
                    );
                    // The stall (SIGSTOP/SIGCONT) can interrupt this
                    // connection's read (EINTR): retry on a new one. A
                    // retried log line is deduplicated by (id, token) in
                    // the parent.
                    retrying(&url, &mut c, |c| {
                        log.key(&meta)
                            .key(&lease_key)
                            .key("t6:log")
                            .arg(d.id())
                            .arg(&record)
                            .invoke::<i64>(c)
                    });
                    let id = d.id().to_string();
                    let token = d.token();
                    let (hash, what) = match d.ack() {
                        Ok(()) => ("t6:acks", String::new()),
                        Err(DurableError::LeaseLost) => ("t6:lost", String::new()),
                        Err(e) => ("t6:ackerr", e.to_string()),
                    };
                    if !what.is_empty() {
                        eprintln!("t6 child {pid}: ack of {id} failed: {what}");
                    }
                    // Counted once per (id, token), so a retry after an
                    // interrupted reply cannot count an ack twice.
                    retrying(&url, &mut c, |c| {
                        redis::Script::new(
                            "if redis.call('SADD', KEYS[1], ARGV[2]) == 1 then \
                             redis.call('HINCRBY', KEYS[2], ARGV[1], 1) end return 1",
                        )
                        .key(format!("{hash}:seen"))
                        .key(hash)
                        .arg(&id)
                        .arg(format!("{id}:{token}"))
                        .invoke::<i64>(c)
                    });
                }
            })
        })
        .collect();
    // This process is the one the parent stalls (SIGSTOP/SIGCONT), which
    // can interrupt this poll's read too (EINTR).
    let stop = |c: &mut redis::Connection| redis::cmd("EXISTS").arg("t6:stop").query::<i64>(c);
    while retrying(&url, &mut c, stop) == 0 {
        std::thread::sleep(Duration::from_millis(20));
    }
    q.close();
    for w in workers {
        w.join().unwrap();
    }
    tell!("done {pid} {}", claimed.load(Ordering::Relaxed));
}

/// Runs `f` on `c`, reconnecting and retrying on errors (a stalled
/// process's reads can fail with EINTR); panics after 20 failures.
fn retrying<T>(
    url: &str,
    c: &mut redis::Connection,
    mut f: impl FnMut(&mut redis::Connection) -> redis::RedisResult<T>,
) -> T {
    let mut last = None;
    for _ in 0..20 {
        match f(c) {
            Ok(v) => return v,
            Err(e) => {
                last = Some(e);
                std::thread::sleep(Duration::from_millis(50));
                *c = rconn(url);
            }
        }
    }
    panic!("redis kept failing: {last:?}");
}

fn t6_parent() {
    let t0 = Instant::now();
    let r = Redis::start();
    let url = r.url();
    let mut c = rconn(&url);

    // 50k items due now, put through the API from 4 threads.
    let q: RedisDelayQueue<u64> = RedisDelayQueue::connect(&url, "t6").unwrap();
    let putters: Vec<_> = (0..4u64)
        .map(|t| {
            let q = q.clone();
            std::thread::spawn(move || {
                for n in (t..T6_ITEMS).step_by(4) {
                    q.put(&format!("i{n:05}"), &n, Duration::ZERO).unwrap();
                }
            })
        })
        .collect();
    for p in putters {
        p.join().unwrap();
    }
    let put_time = t0.elapsed();
    assert_eq!(q.counts().unwrap().pending, T6_ITEMS as usize);

    let test = "t6_no_two_holders_inside_one_lease";
    let mut kids: Vec<Kid> = (0..T6_PROCS)
        .map(|k| {
            Kid::spawn(
                &format!("t6-{k}"),
                child(test, "t6", &[("T_URL", url.clone())]),
            )
        })
        .collect();
    for k in &kids {
        k.expect("ready", Duration::from_secs(60));
    }
    let started = Instant::now();
    set(&mut c, "t6:go");
    // Stall one consumer for 4 leases mid-run (SIGSTOP): its items must go
    // to other holders only after their leases end, and its late acks must
    // be refused. Without this the overlap check would rarely see an id
    // claimed twice.
    wait_for(
        Duration::from_secs(60),
        Duration::from_millis(20),
        "20% of the items acked",
        || hlen(&mut c, "t6:acks") >= T6_ITEMS as usize / 5,
    );
    let stalled = kids[0].pid();
    redis_support::signal(stalled, "STOP");
    std::thread::sleep(Duration::from_millis(4 * T6_LEASE_MS));
    redis_support::signal(stalled, "CONT");
    wait_for(
        Duration::from_secs(180),
        Duration::from_millis(200),
        "all 50k items acked",
        || {
            let [due, lease, ..] = store_sizes(&mut c, "t6");
            due == 0 && lease == 0
        },
    );
    let run_time = started.elapsed();
    set(&mut c, "t6:stop");
    let mut claims_by_pid: HashMap<u32, u64> = HashMap::new();
    for k in &mut kids {
        let line = k.expect("done", Duration::from_secs(30));
        let f: Vec<&str> = line.split_whitespace().collect();
        claims_by_pid.insert(u(f[1]) as u32, u(f[2]));
        let status = k.wait_exit(Duration::from_secs(30));
        assert!(status.success(), "{}: {status}", k.name);
    }

    // The claim log: id token claim_ms claim_end pid meta score.
    struct Claim {
        token: u64,
        claim: u64,
        /// The latest lease end this holder is known to have had: the
        /// claim's own, or the heartbeat-extended score it still held
        /// right before its ack (a lower bound of its true lease end, so
        /// the overlap check can miss an overlap but never invent one).
        end: u64,
        extended: bool,
        pid: u32,
    }
    let log = lrange(&mut c, "t6:log");
    let mut by_id: HashMap<String, Vec<Claim>> = HashMap::new();
    let mut logged = std::collections::HashSet::new();
    for line in &log {
        let f: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(f.len(), 7, "bad log line {line:?}");
        let token = u(f[1]);
        if !logged.insert((f[0].to_string(), token)) {
            continue; // a retried log write (see the child)
        }
        let claim = u(f[2]);
        let claim_end = u(f[3]);
        assert_eq!(claim_end, claim + T6_LEASE_MS);
        let held_token = f[5].split(':').next().and_then(|t| t.parse::<u64>().ok());
        let score = (f[6] != "-").then(|| f[6].parse::<f64>().unwrap() as u64);
        let observed = match (held_token, score) {
            (Some(t), Some(s)) if t == token => Some(s),
            _ => None,
        };
        by_id.entry(f[0].to_string()).or_default().push(Claim {
            token,
            claim,
            end: observed.unwrap_or(claim_end).max(claim_end),
            extended: observed.is_some_and(|s| s > claim_end),
            pid: u(f[4]) as u32,
        });
    }
    assert_eq!(
        by_id.len(),
        T6_ITEMS as usize,
        "every item must have been claimed"
    );

    let mut overlaps = Vec::new();
    let mut redelivered = 0;
    let mut extended = 0;
    let mut long_extended = 0;
    let mut ids_by_pid: HashMap<u32, u64> = HashMap::new();
    for (id, claims) in &mut by_id {
        claims.sort_by_key(|c| (c.claim, c.token));
        if claims.len() > 1 {
            redelivered += 1;
        }
        let n: u64 = id[1..].parse().unwrap();
        let mut end_so_far = 0;
        let mut last_token = 0;
        for (k, cl) in claims.iter().enumerate() {
            if k > 0 && (cl.claim < end_so_far || cl.token <= last_token) {
                overlaps.push(format!(
                    "{id}: claim #{k} (token {}, pid {}) at {} inside a lease ending {end_so_far} (token {last_token})",
                    cl.token, cl.pid, cl.claim
                ));
            }
            end_so_far = end_so_far.max(cl.end);
            last_token = cl.token;
            if cl.extended {
                extended += 1;
                if n % T6_LONG_EVERY == 0 {
                    long_extended += 1;
                }
            }
        }
        *ids_by_pid.entry(claims[0].pid).or_default() += 1;
    }

    let acks = hgetall(&mut c, "t6:acks");
    let lost = hgetall(&mut c, "t6:lost");
    let ackerr = hgetall(&mut c, "t6:ackerr");
    let sizes = store_sizes(&mut c, "t6");
    eprintln!(
        "T6: put {put_time:?}, run {run_time:?}, stalled {stalled}, {} claims, {redelivered} ids redelivered, \
         {extended} holders seen with a heartbeat-extended lease ({long_extended} of {} long items), \
         lost acks {}, ack errors {}, claims by pid {claims_by_pid:?}, first claims by pid {ids_by_pid:?}",
        log.len(),
        T6_ITEMS / T6_LONG_EVERY,
        lost.len(),
        ackerr.len(),
    );
    assert!(
        overlaps.is_empty(),
        "lease overlaps:\n{}",
        overlaps.join("\n")
    );
    // The stalled process held items: they were redelivered, and its acks
    // of them were refused.
    assert!(redelivered >= 1, "no item was redelivered after the stall");
    assert!(!lost.is_empty(), "no stale ack was refused after the stall");
    for id in lost.keys() {
        assert!(
            by_id[id].len() >= 2,
            "{id}: an ack was refused, but nobody else claimed the item"
        );
    }
    assert!(
        lost.keys()
            .any(|id| by_id[id].iter().any(|c| c.pid == stalled)),
        "none of the refused acks was the stalled process's"
    );
    assert_eq!(acks.len(), T6_ITEMS as usize, "every id acked");
    assert!(
        acks.values().all(|v| v == "1"),
        "an id was acked more than once"
    );
    assert!(ackerr.is_empty(), "ack errors: {ackerr:?}");
    assert_eq!(sizes, [0; 5], "due, lease, data, meta, dead must be empty");
    // Fairness: every process claimed at least 10 % of the items.
    assert_eq!(claims_by_pid.len(), T6_PROCS);
    for (pid, n) in &claims_by_pid {
        assert!(
            *n >= T6_ITEMS / 10,
            "process {pid} claimed only {n} of {T6_ITEMS}: {claims_by_pid:?}"
        );
    }
    // The long items outlived their first lease only through heartbeats:
    // nearly all of them must show an extended lease before their ack (a
    // starved heartbeat thread may lose one; that one is redelivered, and
    // the overlap check above covers it).
    assert!(
        long_extended >= (T6_ITEMS / T6_LONG_EVERY) * 9 / 10,
        "only {long_extended} of {} long items had their lease extended",
        T6_ITEMS / T6_LONG_EVERY
    );
    eprintln!("T6 total {:?}", t0.elapsed());
}

// ---------------------------------------------------------------------------
// T7. 100k items, none lost, none acked twice, under repeated kill -9.
// ---------------------------------------------------------------------------

const T7_ITEMS: u64 = 100_000;
const T7_PROCS: usize = 4;
const T7_THREADS: usize = 8;
const T7_LEASE_MS: u64 = 1000;

/// 100k items with delays of 0–5 s, 4 consumer processes of 8 threads,
/// and every 3 s one random consumer is kill -9'd and replaced.
///
/// Ledgers (F14): the handler writes `exec[id] += 1` and `by[id] = pid`
/// *before* its ack; `acks[id] += 1` is written only after `ack()` returned
/// `Ok`. A consumer killed between its ack and that write leaves an id that
/// was acked in Redis but not counted, so "exactly one successful ack per
/// id" is checked as:
/// - `acks[id] <= 1` for every id: no ack ever succeeded twice;
/// - `due`, `lease`, `data`, `meta` and `dead` are empty at the end: every
///   id left the store, and with no cancel and no dead-lettering (no
///   `max_attempts`) the only way out is a successful ack, so every id was
///   acked at least once;
/// - an id with no counted ack was last executed by a process that was
///   killed (`by[id]` is in the killed set), and there are at most
///   threads × kills of them: the window between an ack and its count.
#[test]
fn t7_no_loss_no_double_ack_under_kills() {
    if let Some(r) = role() {
        assert_eq!(r, "t7");
        return as_child(Duration::from_secs(400), t7_child);
    }
    let _serial = serial();
    watchdog(Duration::from_secs(300), t7_parent);
}

fn t7_child() {
    let url = env("T_URL");
    let pid = std::process::id();
    let q: RedisDelayQueue<u64> = RedisDelayQueue::with_options(
        RedisBackend::connect(&url, "t7").unwrap(),
        QueueOptions {
            lease: Duration::from_millis(T7_LEASE_MS),
            max_block: Duration::from_secs(2),
            max_attempts: 0,
        },
    )
    .unwrap();
    let workers: Vec<_> = (0..T7_THREADS)
        .map(|_| {
            let q = q.clone();
            let url = url.clone();
            std::thread::spawn(move || {
                let mut c = rconn(&url);
                while let Some(d) = q.take().unwrap() {
                    let id = d.id().to_string();
                    // The ledger, before the ack (F14).
                    redis::pipe()
                        .cmd("HINCRBY")
                        .arg("t7:exec")
                        .arg(&id)
                        .arg(1)
                        .ignore()
                        .cmd("HSET")
                        .arg("t7:by")
                        .arg(&id)
                        .arg(pid)
                        .ignore()
                        .query::<()>(&mut c)
                        .unwrap();
                    let token = d.token();
                    let hash = match d.ack() {
                        Ok(()) => "t7:acks",
                        Err(DurableError::LeaseLost) => "t7:lost",
                        Err(e) => {
                            eprintln!("t7 child {pid}: ack of {id}: {e}");
                            "t7:ackerr"
                        }
                    };
                    // Counted once per (id, token), so a retry after an
                    // interrupted reply cannot count an ack twice.
                    retrying(&url, &mut c, |c| {
                        redis::Script::new(
                            "if redis.call('SADD', KEYS[1], ARGV[2]) == 1 then \
                             redis.call('HINCRBY', KEYS[2], ARGV[1], 1) end return 1",
                        )
                        .key(format!("{hash}:seen"))
                        .key(hash)
                        .arg(&id)
                        .arg(format!("{id}:{token}"))
                        .invoke::<i64>(c)
                    });
                }
            })
        })
        .collect();
    let mut c = rconn(&url);
    tell!("ready {pid}");
    while !exists(&mut c, "t7:stop") {
        std::thread::sleep(Duration::from_millis(20));
    }
    q.close();
    for w in workers {
        w.join().unwrap();
    }
    tell!("done {pid}");
}

fn t7_parent() {
    let t0 = Instant::now();
    let mut rng = Rng::new(seed("T7"));
    let r = Redis::start();
    let url = r.url();
    let mut c = rconn(&url);
    let test = "t7_no_loss_no_double_ack_under_kills";
    let spawn = |n: usize| {
        Kid::spawn(
            &format!("t7-{n}"),
            child(test, "t7", &[("T_URL", url.clone())]),
        )
    };
    let mut spawned = 0;
    let mut kids: Vec<Kid> = (0..T7_PROCS)
        .map(|_| {
            spawned += 1;
            spawn(spawned)
        })
        .collect();
    for k in &kids {
        k.expect("ready", Duration::from_secs(60));
    }

    // The producer: 4 threads put 100k items with delays of 0-5 s.
    let q: RedisDelayQueue<u64> = RedisDelayQueue::connect(&url, "t7").unwrap();
    let puts_done = Arc::new(AtomicU64::new(0));
    let base_seed = rng.next();
    let putters: Vec<_> = (0..4u64)
        .map(|t| {
            let q = q.clone();
            let done = puts_done.clone();
            std::thread::spawn(move || {
                let mut rng = Rng::new(base_seed ^ t);
                for n in (t..T7_ITEMS).step_by(4) {
                    let delay = Duration::from_millis(rng.below(5001));
                    q.put(&format!("j{n:06}"), &n, delay).unwrap();
                }
                done.fetch_add(1, Ordering::SeqCst);
            })
        })
        .collect();

    // The killer: every 3 s one random consumer is kill -9'd and replaced,
    // until every item was put and the store is empty.
    let mut killed: HashSet<u32> = HashSet::new();
    let mut kill_log = Vec::new();
    let mut next_kill = Instant::now() + Duration::from_secs(3);
    let drained = loop {
        if Instant::now() >= next_kill {
            let k = rng.below(T7_PROCS as u64) as usize;
            let pid = kids[k].pid();
            kids[k].kill9();
            killed.insert(pid);
            kill_log.push((t0.elapsed(), pid));
            spawned += 1;
            kids[k] = spawn(spawned);
            next_kill += Duration::from_secs(3);
        }
        if puts_done.load(Ordering::SeqCst) == 4 {
            let [due, lease, data, ..] = store_sizes(&mut c, "t7");
            if due + lease + data == 0 {
                break t0.elapsed();
            }
        }
        assert!(
            t0.elapsed() < Duration::from_secs(240),
            "T7 did not drain within 240 s: store {:?}, kills {kill_log:?}",
            store_sizes(&mut c, "t7")
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    for p in putters {
        p.join().unwrap();
    }
    // Stop the survivors gracefully so that every ack they made is counted.
    set(&mut c, "t7:stop");
    for k in &mut kids {
        let status = k.wait_exit(Duration::from_secs(60));
        assert!(status.success(), "{}: {status}", k.name);
    }

    let exec = hgetall(&mut c, "t7:exec");
    let by = hgetall(&mut c, "t7:by");
    let acks = hgetall(&mut c, "t7:acks");
    let lost = hgetall(&mut c, "t7:lost");
    let ackerr = hgetall(&mut c, "t7:ackerr");
    let sizes = store_sizes(&mut c, "t7");
    let redelivered = exec.values().filter(|v| v.as_str() != "1").count();
    let uncounted: Vec<&String> = exec.keys().filter(|id| !acks.contains_key(*id)).collect();
    eprintln!(
        "T7: drained at {drained:?}, {} kills {kill_log:?}, {redelivered} ids executed more than once, \
         {} stale acks refused, {} acks uncounted (killed between ack and count), total {:?}",
        kill_log.len(),
        lost.len(),
        uncounted.len(),
        t0.elapsed()
    );
    assert!(
        kill_log.len() >= 3,
        "the run ended before 3 kills: not a meaningful T7"
    );
    assert_eq!(sizes, [0; 5], "due, lease, data, meta, dead must be empty");
    // Every id executed at least once.
    assert_eq!(exec.len(), T7_ITEMS as usize, "ids never executed");
    for n in 0..T7_ITEMS {
        let id = format!("j{n:06}");
        let e = exec.get(&id).map(|v| i(v)).unwrap_or(0);
        assert!(e >= 1, "{id} never executed");
    }
    // No ack succeeded twice.
    let twice: Vec<_> = acks.iter().filter(|(_, v)| v.as_str() != "1").collect();
    assert!(twice.is_empty(), "ids acked more than once: {twice:?}");
    assert!(
        ackerr.is_empty(),
        "acks that failed with errors: {ackerr:?}"
    );
    // Ids whose successful ack was not counted: only a killed process's.
    for id in &uncounted {
        let pid: u32 = by[*id].parse().unwrap();
        assert!(
            killed.contains(&pid),
            "{id} has no counted ack, but its last executor {pid} was not killed"
        );
    }
    assert!(
        uncounted.len() <= killed.len() * T7_THREADS,
        "{} uncounted acks for {} kills",
        uncounted.len(),
        killed.len()
    );
    assert!(t0.elapsed() < Duration::from_secs(300));
}

// ---------------------------------------------------------------------------
// T12. Clock skew between clients.
// ---------------------------------------------------------------------------

/// Connects with a subscriber that records the skew warning.
fn connect_watching_skew(url: &str, name: &str) -> (RedisBackend, Option<(tracing::Level, i64)>) {
    let recorder = Recorder::default();
    let backend = tracing::subscriber::with_default(recorder.clone(), || {
        RedisBackend::connect(url, name).unwrap()
    });
    let first = recorder
        .seen()
        .into_iter()
        .filter(|s| s.kind == "event")
        .find_map(|e| Some((e.level, e.field("skew_ms")?.parse().ok()?)));
    (backend, first)
}

fn unix_ms_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

const T12_SKEW_MS: i64 = 120_000;

/// The producer runs under `faketime -f -120s`, the consumer under
/// `faketime -f +120s` (monotonic clock real). The producer puts 100 items
/// with a 5 s delay: none is claimed before its server deadline, all are
/// claimed within deadline + 1 s, both clients see the skew warning at
/// connect, and `put_at(SystemTime)` shifts by the client's skew as
/// documented (the producer's lands 120 s late; the consumer's, 120 s
/// early, is clamped to "due now").
#[test]
fn t12_clock_skew_between_clients() {
    if let Some(r) = role() {
        return as_child(Duration::from_secs(120), || match r.as_str() {
            "t12c" => t12_consumer(),
            "t12p" => t12_producer(),
            other => panic!("unknown role {other}"),
        });
    }
    let _serial = serial();
    watchdog(Duration::from_secs(120), t12_parent);
}

/// Reports the skew event, the local-vs-server clock, and a `put_at`
/// of "server now + 5 s" as a `SystemTime`: (deadline - intended).
fn t12_report_clock(url: &str, backend: &RedisBackend, seen: Option<(tracing::Level, i64)>) {
    let server = backend.server_time_ms().unwrap() as i64;
    let local = unix_ms_now();
    match seen {
        Some((level, skew)) => tell!("skew {level} {skew} {}", local - server),
        None => tell!("skew none 0 {}", local - server),
    }
    // put_at on a separate queue so the consumers never see it.
    let at: RedisDelayQueue<u64> = RedisDelayQueue::connect(url, "t12-at").unwrap();
    let id = format!("at-{}", std::process::id());
    let now = at.server_time_ms().unwrap();
    let intended = now + 5000;
    let put = at
        .put_at(&id, &0, UNIX_EPOCH + Duration::from_millis(intended))
        .unwrap();
    let deadline = put.deadline_ms().unwrap();
    assert_eq!(at.remove(&id).unwrap(), Removed::Pending(0));
    tell!(
        "putat {} {}",
        deadline as i64 - intended as i64,
        deadline as i64 - now as i64
    );
}

fn t12_consumer() {
    let url = env("T_URL");
    let (backend, seen) = connect_watching_skew(&url, "t12");
    t12_report_clock(&url, &backend, seen);
    let q: RedisDelayQueue<u64> = RedisDelayQueue::with_options(
        backend,
        QueueOptions {
            lease: Duration::from_secs(5),
            max_block: Duration::from_secs(5),
            max_attempts: 0,
        },
    )
    .unwrap();
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let q = q.clone();
            let url = url.clone();
            std::thread::spawn(move || {
                let mut c = rconn(&url);
                while let Some(d) = q.take().unwrap() {
                    let line = format!(
                        "{} {} {} {}",
                        d.id(),
                        d.deadline_ms(),
                        d.claimed_ms(),
                        unix_ms_now()
                    );
                    redis::cmd("RPUSH")
                        .arg("t12:log")
                        .arg(line)
                        .query::<i64>(&mut c)
                        .unwrap();
                    d.ack().unwrap();
                }
            })
        })
        .collect();
    let mut c = rconn(&url);
    tell!("ready");
    while !exists(&mut c, "t12:stop") {
        std::thread::sleep(Duration::from_millis(20));
    }
    q.close();
    for w in workers {
        w.join().unwrap();
    }
}

fn t12_producer() {
    let url = env("T_URL");
    let (backend, seen) = connect_watching_skew(&url, "t12");
    t12_report_clock(&url, &backend, seen);
    let q: RedisDelayQueue<u64> = RedisDelayQueue::new(backend);
    let before = q.server_time_ms().unwrap();
    let mut deadlines = Vec::new();
    for n in 0..100u64 {
        let put = q
            .put(&format!("s{n:03}"), &n, Duration::from_secs(5))
            .unwrap();
        deadlines.push(put.deadline_ms().unwrap());
    }
    let after = q.server_time_ms().unwrap();
    tell!(
        "put {before} {after} {} {}",
        deadlines.iter().min().unwrap(),
        deadlines.iter().max().unwrap()
    );
}

fn t12_parent() {
    let r = Redis::start();
    let url = r.url();
    let mut c = rconn(&url);
    let test = "t12_clock_skew_between_clients";
    let envs = [("T_URL", url.clone())];
    let mut consumer = Kid::spawn(
        "t12-consumer(+120s)",
        faketime_child("+120s", test, "t12c", &envs),
    );
    let c_skew = consumer.expect("skew", Duration::from_secs(30));
    let c_putat = consumer.expect("putat", Duration::from_secs(30));
    consumer.expect("ready", Duration::from_secs(30));
    let mut producer = Kid::spawn(
        "t12-producer(-120s)",
        faketime_child("-120s", test, "t12p", &envs),
    );
    let p_skew = producer.expect("skew", Duration::from_secs(30));
    let p_putat = producer.expect("putat", Duration::from_secs(30));
    let p_put = producer.expect("put", Duration::from_secs(30));
    assert!(producer.wait_exit(Duration::from_secs(30)).success());

    wait_for(
        Duration::from_secs(30),
        Duration::from_millis(50),
        "100 claims logged",
        || {
            redis::cmd("LLEN")
                .arg("t12:log")
                .query::<usize>(&mut c)
                .unwrap()
                >= 100
        },
    );
    set(&mut c, "t12:stop");
    assert!(consumer.wait_exit(Duration::from_secs(30)).success());
    eprintln!("T12: consumer {c_skew} / {c_putat}; producer {p_skew} / {p_putat} / {p_put}");

    // faketime really skewed both clients, and both saw the warning at
    // connect, with skew_ms = local - server.
    for (who, line, sign) in [("consumer", &c_skew, 1), ("producer", &p_skew, -1)] {
        let f: Vec<&str> = line.split_whitespace().collect();
        let offset = i(f[3]);
        assert!(
            (offset - sign * T12_SKEW_MS).abs() < 2000,
            "{who}: local - server is {offset} ms; faketime not in effect?"
        );
        assert_eq!(f[1], "WARN", "{who}: no skew warning at connect ({line})");
        let skew = i(f[2]);
        assert!(
            (skew - sign * T12_SKEW_MS).abs() < 2000,
            "{who}: the warning's skew_ms is {skew}"
        );
    }
    // put_at(SystemTime) converts with the local clock, once: the
    // producer's (120 s behind) lands 120 s after the intended instant;
    // the consumer's (120 s ahead) would land 115 s in the past, so it is
    // due at once (5 s before the intended instant).
    let f: Vec<i64> = p_putat.split_whitespace().skip(1).map(i).collect();
    assert!(
        (f[0] - T12_SKEW_MS).abs() < 1000,
        "producer put_at shifted by {} ms, expected +{T12_SKEW_MS}",
        f[0]
    );
    let f: Vec<i64> = c_putat.split_whitespace().skip(1).map(i).collect();
    assert!(
        (0..1000).contains(&f[1]),
        "consumer put_at due {} ms after the put, expected at once",
        f[1]
    );
    // Relative puts from the skewed producer are not shifted: deadline =
    // server time at the put + 5 s.
    let f: Vec<u64> = p_put.split_whitespace().skip(1).map(u).collect();
    let (before, after, min_dl, max_dl) = (f[0], f[1], f[2], f[3]);
    assert!(
        min_dl >= before + 5000 && max_dl <= after + 5000,
        "deadlines {min_dl}..{max_dl} not within put time + 5 s ({before}..{after})"
    );

    let log = lrange(&mut c, "t12:log");
    assert_eq!(log.len(), 100);
    let mut ids = HashSet::new();
    let mut worst = 0;
    for line in &log {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (deadline, claimed, local) = (u(f[1]), u(f[2]), i(f[3]));
        assert!(ids.insert(f[0].to_string()), "{} claimed twice", f[0]);
        assert!(
            claimed >= deadline,
            "{} claimed at {claimed}, before its deadline {deadline}",
            f[0]
        );
        assert!(
            claimed <= deadline + 1000,
            "{} claimed {} ms after its deadline",
            f[0],
            claimed - deadline
        );
        // The consumer's own clock said the item was 2 minutes early: it
        // was never consulted.
        assert!(local - (claimed as i64) > T12_SKEW_MS - 2000);
        worst = worst.max(claimed - deadline);
    }
    eprintln!("T12: worst lateness {worst} ms");
    assert_eq!(store_sizes(&mut c, "t12"), [0; 5]);
}

// ---------------------------------------------------------------------------
// T14. A durable fixed-rate chain survives kill -9.
// ---------------------------------------------------------------------------

const T14_PERIOD_MS: u64 = 300;
const T14_LEASE_MS: u64 = 1000;
const T14_MAX_BLOCK_MS: u64 = 2000;
/// What a loaded machine may add to lease + max_block before B continues
/// the chain: Redis's timer slack, B's scheduling, a claim's round trip.
const T14_SLACK_MS: u64 = 3000;

/// Processes A and B both run a 2-thread `DurablePool` and both start the
/// fixed-rate chain (period 300 ms; the second start is `Exists`). Each run
/// records its occurrence (`JobInfo::deadline_ms`, the scheduled server
/// time) in a ledger before it returns, then takes 150 ms. A is kill -9'd
/// while it runs an occurrence. The ledger must have every occurrence from
/// the first to the last exactly once, except the one in flight at the
/// kill, which may appear twice; B must run it again no earlier than A's
/// lease allows and within lease + max_block of the kill.
#[test]
fn t14_fixed_rate_chain_survives_kill() {
    if let Some(r) = role() {
        assert_eq!(r, "t14");
        return as_child(Duration::from_secs(120), t14_child);
    }
    let _serial = serial();
    watchdog(Duration::from_secs(120), t14_parent);
}

thread_local! {
    static LEDGER: std::cell::RefCell<Option<redis::Connection>> =
        const { std::cell::RefCell::new(None) };
}

/// Runs `f` on this thread's ledger connection.
fn with_ledger<R>(url: &str, f: impl FnOnce(&mut redis::Connection) -> R) -> R {
    LEDGER.with(|cell| {
        let mut cell = cell.borrow_mut();
        f(cell.get_or_insert_with(|| rconn(url)))
    })
}

fn t14_child() {
    let url = env("T_URL");
    let name = env("T_NAME");
    let pid = std::process::id();
    let handler_url = url.clone();
    let pool = DurablePool::builder(RedisBackend::connect(&url, "t14").unwrap())
        .threads(2)
        .lease(Duration::from_millis(T14_LEASE_MS))
        .max_block(Duration::from_millis(T14_MAX_BLOCK_MS))
        .handler("tick", move |_: &u64, info: &JobInfo| {
            let claimed = info.deadline_ms + info.lateness.as_millis() as u64;
            with_ledger(&handler_url, |c| {
                redis::pipe()
                    .cmd("HINCRBY")
                    .arg("t14:occ")
                    .arg(info.deadline_ms)
                    .arg(1)
                    .ignore()
                    .cmd("RPUSH")
                    .arg("t14:log")
                    .arg(format!(
                        "{} {claimed} {pid} {} {}",
                        info.deadline_ms, info.attempt, info.token
                    ))
                    .ignore()
                    .query::<()>(c)
            })?;
            tell!("running {} {claimed}", info.deadline_ms);
            std::thread::sleep(Duration::from_millis(150));
            Ok(())
        })
        .build()
        .unwrap();
    let put = pool
        .schedule_at_fixed_rate(
            "tick",
            "chain",
            &0u64,
            Duration::from_millis(200),
            Duration::from_millis(T14_PERIOD_MS),
        )
        .unwrap();
    tell!("ready {name} {pid} {put:?}");
    let mut c = rconn(&url);
    while !exists(&mut c, "t14:stop") {
        std::thread::sleep(Duration::from_millis(20));
    }
    pool.shutdown();
    assert!(pool.await_termination(Duration::from_secs(10)));
    tell!("done {name}");
}

fn t14_parent() {
    let t0 = Instant::now();
    let r = Redis::start();
    let url = r.url();
    let mut c = rconn(&url);
    let test = "t14_fixed_rate_chain_survives_kill";
    let kid = |name: &str| {
        Kid::spawn(
            &format!("t14-{name}"),
            child(
                test,
                "t14",
                &[("T_URL", url.clone()), ("T_NAME", name.to_string())],
            ),
        )
    };
    let mut b = kid("B");
    b.expect("ready", Duration::from_secs(30));
    let mut a = kid("A");
    let a_ready = a.expect("ready", Duration::from_secs(30));
    let a_pid = a.pid();
    assert!(
        a_ready.ends_with("Exists"),
        "B started the chain: {a_ready}"
    );

    // Let the chain run ~1.5 s, then kill A while it runs an occurrence.
    wait_for(
        Duration::from_secs(20),
        Duration::from_millis(20),
        "5 occurrences",
        || hlen(&mut c, "t14:occ") >= 5,
    );
    while a.lines.try_recv().is_ok() {}
    let line = a.expect("running", Duration::from_secs(30));
    a.kill9();
    let kill_ms = server_ms(&mut c);
    let f: Vec<u64> = line.split_whitespace().skip(1).map(u).collect();
    let (killed_occ, a_claim) = (f[0], f[1]);
    let occ_at_kill = hlen(&mut c, "t14:occ");
    eprintln!(
        "T14: killed A ({a_pid}) running occurrence {killed_occ} (claimed {a_claim}) at {kill_ms}"
    );

    // B goes on (with catch-up runs) for ~3 s more of chain.
    wait_for(
        Duration::from_secs(30),
        Duration::from_millis(20),
        "10 more occurrences after the kill",
        || hlen(&mut c, "t14:occ") >= occ_at_kill + 10,
    );
    let backend = RedisBackend::connect(&url, "t14").unwrap();
    assert_ne!(backend.cancel("chain").unwrap(), Cancelled::NotFound);
    set(&mut c, "t14:stop");
    b.expect("done", Duration::from_secs(30));
    assert!(b.wait_exit(Duration::from_secs(30)).success());

    let occ: BTreeMap<u64, i64> = hgetall(&mut c, "t14:occ")
        .into_iter()
        .map(|(k, v)| (u(&k), i(&v)))
        .collect();
    let log = lrange(&mut c, "t14:log");
    let first = *occ.keys().next().unwrap();
    let last = *occ.keys().last().unwrap();
    let mut missing = Vec::new();
    let mut dup = Vec::new();
    let mut at = first;
    while at <= last {
        match occ.get(&at) {
            None => missing.push(at),
            Some(1) => {}
            Some(&n) if at == killed_occ && n == 2 => {}
            Some(&n) => dup.push((at, n)),
        }
        at += T14_PERIOD_MS;
    }
    let off_grid: Vec<_> = occ
        .keys()
        .filter(|k| (*k - first) % T14_PERIOD_MS != 0)
        .collect();
    eprintln!(
        "T14: {} occurrences {first}..{last}; killed one ran {} time(s); log {} lines",
        occ.len(),
        occ.get(&killed_occ).copied().unwrap_or(0),
        log.len()
    );
    assert!(
        off_grid.is_empty(),
        "occurrences off the period: {off_grid:?}"
    );
    assert!(missing.is_empty(), "missing occurrences: {missing:?}");
    assert!(dup.is_empty(), "duplicated occurrences: {dup:?}");
    assert!(occ.contains_key(&killed_occ));

    // B's first claim after the kill: not inside A's lease, and within
    // lease + max_block of the kill.
    let b_after: Vec<(u64, u64)> = log
        .iter()
        .map(|l| l.split_whitespace().map(u).collect::<Vec<_>>())
        .filter(|f| f[2] != u64::from(a_pid))
        .map(|f| (f[1], f[0]))
        .collect();
    let (b_claim, b_occ) = *b_after
        .iter()
        .filter(|(claim, _)| *claim > a_claim)
        .min()
        .expect("B ran the chain after the kill");
    eprintln!(
        "T14: B continued with occurrence {b_occ} at {b_claim}: {} ms after the kill, {} ms after A's claim",
        b_claim as i64 - kill_ms as i64,
        b_claim - a_claim
    );
    if b_occ == killed_occ {
        assert!(
            b_claim >= a_claim + T14_LEASE_MS,
            "B reclaimed {b_occ} at {b_claim}, inside A's lease from {a_claim}"
        );
    }
    assert!(
        b_claim <= kill_ms + T14_LEASE_MS + T14_MAX_BLOCK_MS + T14_SLACK_MS,
        "B continued {} ms after the kill (lease {T14_LEASE_MS} + max_block {T14_MAX_BLOCK_MS} \
         + {T14_SLACK_MS} for a loaded machine)",
        b_claim - kill_ms
    );
    assert!(occ.len() >= 12, "too few occurrences: {occ:?}");
    assert_eq!(store_sizes(&mut c, "t14"), [0; 5]);
    eprintln!("T14 total {:?}", t0.elapsed());
}

// ---------------------------------------------------------------------------
// T15. Graceful shutdown, shutdown_now, close.
// ---------------------------------------------------------------------------

/// Appends "ARGV[1] <server ms>" to KEYS[1] and counts ARGV[2] in KEYS[2];
/// returns the server ms.
const T15_START: &str = r#"
local t = redis.call('TIME')
local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('RPUSH', KEYS[1], ARGV[1] .. ' ' .. string.format('%d', ms))
redis.call('HINCRBY', KEYS[2], ARGV[2], 1)
return ms
"#;

const T15_ITEMS: usize = 100;
const T15_HANDLER_MS: u64 = 200;
/// A's and B's leases differ so that a lease score tells whose it is: A's
/// are at most now + 10 s, B's (heartbeat every 20/3 s) at least now +
/// 13.3 s.
const T15_LEASE_A_MS: u64 = 10_000;
const T15_LEASE_B_MS: u64 = 20_000;

/// 3-worker durable pools in processes A and B share 100 items due now,
/// handlers of 200 ms. `shutdown()` in A: its running items finish and are
/// acked (no item runs twice, A's acks equal its runs); items it had
/// claimed but not started run in B within 500 ms of the shutdown (not
/// after A's 10 s lease); and once `await_termination` returns, no lease of
/// A is left in Redis (A exits right away, as a real service would).
#[test]
fn t15_graceful_shutdown_two_processes() {
    if let Some(r) = role() {
        return as_child(Duration::from_secs(120), || match r.as_str() {
            "t15a" => t15_child(true),
            "t15b" => t15_child(false),
            other => panic!("unknown role {other}"),
        });
    }
    let _serial = serial();
    watchdog(Duration::from_secs(120), t15_parent);
}

fn t15_child(is_a: bool) {
    let url = env("T_URL");
    let pid = std::process::id();
    let lease = if is_a { T15_LEASE_A_MS } else { T15_LEASE_B_MS };
    let backend = RedisBackend::connect(&url, "t15").unwrap();
    let lease_key = backend.key("lease").unwrap().to_string();
    let runs = Arc::new(AtomicU64::new(0));
    let runs2 = runs.clone();
    let handler_url = url.clone();
    let start = redis::Script::new(T15_START);
    let pool = DurablePool::builder(backend)
        .threads(3)
        .lease(Duration::from_millis(lease))
        .max_block(Duration::from_secs(2))
        .handler("job", move |_: &u64, info: &JobInfo| {
            runs2.fetch_add(1, Ordering::SeqCst);
            with_ledger(&handler_url, |c| {
                start
                    .key("t15:log")
                    .key("t15:exec")
                    .arg(format!("{} {pid} {} {}", info.id, info.attempt, info.token))
                    .arg(&info.id)
                    .invoke::<u64>(c)
            })?;
            std::thread::sleep(Duration::from_millis(T15_HANDLER_MS));
            Ok(())
        })
        .build()
        .unwrap();
    let mut c = rconn(&url);
    if !is_a {
        tell!("ready {pid}");
        while !exists(&mut c, "t15:stop") {
            std::thread::sleep(Duration::from_millis(20));
        }
        pool.shutdown();
        assert!(pool.await_termination(Duration::from_secs(10)));
        tell!("done {pid} {}", pool.stats().succeeded);
        return;
    }
    for n in 0..T15_ITEMS as u64 {
        pool.schedule("job", &format!("job-{n:03}"), &n, Duration::ZERO)
            .unwrap();
    }
    tell!("ready {pid}");
    while !exists(&mut c, "t15:shutA") {
        std::thread::sleep(Duration::from_millis(2));
    }
    let t_shut = server_ms(&mut c);
    pool.shutdown();
    let terminated = pool.await_termination(Duration::from_secs(10));
    let t_term = server_ms(&mut c);
    // Any lease scored below t_term + 12 s is A's (B's are >= + 13.3 s).
    let leaked: Vec<(String, f64)> = redis::cmd("ZRANGEBYSCORE")
        .arg(&lease_key)
        .arg("-inf")
        .arg(t_term + 12_000)
        .arg("WITHSCORES")
        .query(&mut c)
        .unwrap();
    let stats = pool.stats();
    tell!(
        "term {terminated} {t_shut} {t_term} {} {} {} {:?}",
        runs.load(Ordering::SeqCst),
        stats.succeeded,
        stats.lease_lost,
        leaked
    );
    // Exit at once, as a service does after await_termination: anything
    // still only queued in this process is lost with it.
    std::process::exit(0);
}

fn t15_parent() {
    let t0 = Instant::now();
    let r = Redis::start();
    let url = r.url();
    let mut c = rconn(&url);
    let test = "t15_graceful_shutdown_two_processes";
    let envs = [("T_URL", url.clone())];
    let mut b = Kid::spawn("t15-B", child(test, "t15b", &envs));
    let b_pid = u(b
        .expect("ready", Duration::from_secs(30))
        .split_whitespace()
        .nth(1)
        .unwrap());
    let mut a = Kid::spawn("t15-A", child(test, "t15a", &envs));
    let a_pid = u(a
        .expect("ready", Duration::from_secs(30))
        .split_whitespace()
        .nth(1)
        .unwrap());
    wait_for(
        Duration::from_secs(30),
        Duration::from_millis(5),
        "20 runs started",
        || {
            redis::cmd("LLEN")
                .arg("t15:log")
                .query::<usize>(&mut c)
                .unwrap()
                >= 20
        },
    );
    set(&mut c, "t15:shutA");
    let term = a.expect("term", Duration::from_secs(30));
    assert!(a.wait_exit(Duration::from_secs(10)).success());
    let f: Vec<&str> = term.splitn(8, ' ').collect();
    let (terminated, t_shut, t_term) = (f[1] == "true", u(f[2]), u(f[3]));
    let (a_runs, a_acked, a_lost, leaked) = (u(f[4]), u(f[5]), u(f[6]), f[7]);

    wait_for(
        Duration::from_secs(60),
        Duration::from_millis(20),
        "B to finish the rest",
        || {
            let [due, lease, ..] = store_sizes(&mut c, "t15");
            due + lease == 0
        },
    );
    set(&mut c, "t15:stop");
    b.expect("done", Duration::from_secs(30));
    assert!(b.wait_exit(Duration::from_secs(30)).success());

    // log: id pid attempt token start_ms
    let log = lrange(&mut c, "t15:log");
    let exec = hgetall(&mut c, "t15:exec");
    let mut a_started = 0;
    let mut released_to_b = Vec::new();
    for line in &log {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (pid, attempt, start) = (u(f[1]), u(f[2]), u(f[4]));
        if pid == a_pid {
            a_started += 1;
            assert!(start <= t_term, "A started {} after terminating", f[0]);
        } else {
            assert_eq!(pid, b_pid);
            if attempt >= 2 {
                released_to_b.push((f[0].to_string(), start as i64 - t_shut as i64));
            }
        }
    }
    eprintln!(
        "T15: A ran {a_started} (acked {a_acked}, lease lost {a_lost}), shutdown->terminated {} ms, \
         items A released that B ran (id, ms after A's shutdown): {released_to_b:?}; total {:?}",
        t_term - t_shut,
        t0.elapsed()
    );
    assert!(terminated, "A's await_termination timed out");
    assert_eq!(
        leaked, "[]",
        "leases of A still in Redis after its await_termination returned (id, expiry)"
    );
    assert_eq!(a_runs, a_started, "A's handler count vs its ledger");
    assert_eq!(
        a_acked, a_started,
        "every run A started must finish and be acked by A"
    );
    assert!(a_started >= 1);
    assert_eq!(exec.len(), T15_ITEMS, "every item ran");
    let twice: Vec<_> = exec.iter().filter(|(_, v)| v.as_str() != "1").collect();
    assert!(twice.is_empty(), "items ran twice: {twice:?}");
    for (id, after) in &released_to_b {
        assert!(
            *after <= 500,
            "{id}, claimed by A but not started, ran in B {after} ms after A's shutdown"
        );
    }
    assert_eq!(store_sizes(&mut c, "t15"), [0; 5]);
}

/// `shutdown_now()` returns exactly the ids it released: repeated on a
/// 3-worker pool over a backlog of short items, the returned ids are the
/// items that went back to `due` after a claim (attempts ≥ 1) and did not
/// run; everything else ran exactly once; and no lease is left once
/// `await_termination` returns.
#[test]
fn t15_shutdown_now_returns_released_ids() {
    let _serial = serial();
    watchdog(Duration::from_secs(120), || {
        let t0 = Instant::now();
        let r = Redis::start();
        let url = r.url();
        let mut c = rconn(&url);
        let mut rng = Rng::new(seed("T15 shutdown_now"));
        let mut problems = Vec::new();
        let mut nonempty = 0;
        let rounds = 15;
        for round in 0..rounds {
            let name = format!("t15n-{round}");
            let items = 300;
            let q: RedisDelayQueue<u64> = RedisDelayQueue::connect(&url, &name).unwrap();
            for n in 0..items {
                q.put(&format!("n{n:03}"), &n, Duration::ZERO).unwrap();
            }
            let ran = Arc::new(Mutex::new(Vec::new()));
            let ran2 = ran.clone();
            let pool = DurablePool::builder(RedisBackend::connect(&url, &name).unwrap())
                .threads(3)
                .lease(Duration::from_secs(10))
                // Items put through a queue have the empty kind.
                .handler("", move |_: &u64, info: &JobInfo| {
                    ran2.lock().unwrap().push(info.id.clone());
                    std::thread::sleep(Duration::from_micros(300));
                    Ok(())
                })
                .build()
                .unwrap();
            std::thread::sleep(Duration::from_millis(5 + rng.below(40)));
            let released = pool.shutdown_now();
            assert!(pool.await_termination(Duration::from_secs(10)));
            let leases_at_termination = zcard(&mut c, &format!("sp:{{{name}}}:lease"));
            if leases_at_termination != 0 {
                problems.push(format!(
                    "round {round}: {leases_at_termination} lease(s) left when await_termination returned (released {released:?})"
                ));
            }
            // Let asynchronous releases land before comparing sets.
            wait_for(
                Duration::from_secs(5),
                Duration::from_millis(5),
                "the released leases to go back to due",
                || zcard(&mut c, &format!("sp:{{{name}}}:lease")) == 0,
            );
            let ran: Vec<String> = ran.lock().unwrap().clone();
            let ran_set: HashSet<&String> = ran.iter().collect();
            let released_set: HashSet<&String> = released.iter().collect();
            if ran.len() != ran_set.len() {
                problems.push(format!("round {round}: an item ran twice"));
            }
            if released.len() != released_set.len() {
                problems.push(format!("round {round}: an id released twice {released:?}"));
            }
            // Items back in due after a claim: attempts >= 1 in meta.
            let meta = hgetall(&mut c, &format!("sp:{{{name}}}:meta"));
            let due: Vec<String> = redis::cmd("ZRANGE")
                .arg(format!("sp:{{{name}}}:due"))
                .arg(0)
                .arg(-1)
                .query(&mut c)
                .unwrap();
            let claimed_back: HashSet<&String> = due
                .iter()
                .filter(|id| meta[*id].split(':').nth(1).map(u).unwrap_or(0) >= 1)
                .collect();
            if claimed_back != released_set {
                problems.push(format!(
                    "round {round}: shutdown_now returned {released:?}, but the ids back in due after a claim are {claimed_back:?}"
                ));
            }
            if let Some(id) = released.iter().find(|id| ran_set.contains(id)) {
                problems.push(format!("round {round}: {id} was released and ran"));
            }
            if ran.len() + due.len() != items as usize {
                problems.push(format!(
                    "round {round}: {} ran + {} due != {items}",
                    ran.len(),
                    due.len()
                ));
            }
            if !released.is_empty() {
                nonempty += 1;
            }
            q.close();
        }
        eprintln!(
            "T15 shutdown_now: {nonempty} of {rounds} rounds released claimed items; {:?}",
            t0.elapsed()
        );
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    });
}

/// `close()` unblocks a `take()` parked in `BZPOPMIN` at once, that take
/// returns `None`, and the stored items are untouched. Checked six times,
/// with the queue empty and with a far head. "At once" is within 2 s: the
/// unblock takes milliseconds, a loaded machine may add a second of
/// scheduling, and a lost one would block until `max_block`, 60 s.
#[test]
fn t15_close_unblocks_bzpopmin() {
    let _serial = serial();
    watchdog(Duration::from_secs(90), || {
        let r = Redis::start();
        let url = r.url();
        let mut c = rconn(&url);
        for round in 0..6 {
            let name = format!("t15c-{round}");
            let q: RedisDelayQueue<u64> = RedisDelayQueue::with_options(
                RedisBackend::connect(&url, &name).unwrap(),
                QueueOptions {
                    lease: Duration::from_secs(1),
                    max_block: Duration::from_secs(60),
                    max_attempts: 0,
                },
            )
            .unwrap();
            let far_head = round % 2 == 1;
            if far_head {
                q.put("far", &1, Duration::from_secs(3600)).unwrap();
            }
            let q2 = q.clone();
            let taker = std::thread::spawn(move || {
                let got = q2.take().unwrap();
                (got.is_none(), Instant::now())
            });
            // Wait until a client is blocked in BZPOPMIN (only this
            // queue's taker blocks on this server now).
            wait_for(
                Duration::from_secs(10),
                Duration::from_millis(5),
                "the taker to block in BZPOPMIN",
                || {
                    let list: String = redis::cmd("CLIENT").arg("LIST").query(&mut c).unwrap();
                    list.lines()
                        .any(|l| l.contains("cmd=bzpopmin") && l.contains("flags=b"))
                },
            );
            let blocked_since = Instant::now();
            std::thread::sleep(Duration::from_millis(100));
            let closing = Instant::now();
            q.close();
            let (none, returned) = taker.join().unwrap();
            let took = returned.saturating_duration_since(closing);
            eprintln!(
                "T15 close round {round} (far head {far_head}): take returned {took:?} after close() \
                 (blocked {:?})",
                closing - blocked_since
            );
            assert!(none, "take() after close() must return None");
            assert!(
                took < Duration::from_secs(2),
                "take() returned {took:?} after close()"
            );
            assert!(
                q.take().unwrap().is_none(),
                "closed queue hands out nothing"
            );
            let pending = q.counts().unwrap().pending;
            assert_eq!(
                pending,
                usize::from(far_head),
                "close() must not touch data"
            );
        }
    });
}

/// The release behind `shutdown()` (an item claimed but not started goes
/// back at once) must let another process take it promptly even when that
/// process has a backlog: a released item was due before the backlog, so
/// it must not queue behind it (the design: "a redelivered item returns at
/// its original deadline, i.e. at the front"; T15: "taken by B within 500
/// ms, not after the lease").
///
/// Process A is modelled by a queue handle that claims the head item and
/// drops its delivery unsettled (the same release, nack with no delay, that
/// `close()` uses for claimed-but-not-started items); process B is a
/// 3-worker pool with 200 ms handlers and 50 items due behind it.
#[test]
fn t15_released_item_is_not_queued_behind_backlog() {
    let _serial = serial();
    watchdog(Duration::from_secs(60), || {
        let r = Redis::start();
        let url = r.url();
        let mut c = rconn(&url);
        let name = "t15r";
        let a: RedisDelayQueue<u64> = RedisDelayQueue::with_options(
            RedisBackend::connect(&url, name).unwrap(),
            QueueOptions {
                lease: Duration::from_secs(T15_LEASE_A_MS / 1000),
                ..QueueOptions::default()
            },
        )
        .unwrap();
        a.put("x", &0, Duration::ZERO).unwrap();
        std::thread::sleep(Duration::from_millis(3));
        for n in 0..50 {
            a.put(&format!("y{n:02}"), &n, Duration::ZERO).unwrap();
        }
        let x = a.poll().unwrap().expect("x is due");
        assert_eq!(x.id(), "x");

        let starts = Arc::new(Mutex::new(Vec::new()));
        let starts2 = starts.clone();
        let handler_url = url.clone();
        let b = DurablePool::builder(RedisBackend::connect(&url, name).unwrap())
            .threads(3)
            .lease(Duration::from_millis(T15_LEASE_B_MS))
            .handler("", move |_: &u64, info: &JobInfo| {
                let ms = with_ledger(&handler_url, server_ms);
                starts2
                    .lock()
                    .unwrap()
                    .push((info.id.clone(), info.attempt, ms));
                std::thread::sleep(Duration::from_millis(T15_HANDLER_MS));
                Ok(())
            })
            .build()
            .unwrap();
        std::thread::sleep(Duration::from_millis(300));
        let released_at = server_ms(&mut c);
        drop(x);
        assert!(b.wait_idle(Duration::from_secs(30)));
        b.shutdown();
        assert!(b.await_termination(Duration::from_secs(10)));
        a.close();
        let starts = starts.lock().unwrap().clone();
        assert_eq!(starts.len(), 51, "{starts:?}");
        let (_, attempt, x_start) = starts
            .iter()
            .find(|(id, ..)| id == "x")
            .cloned()
            .expect("x ran in B");
        let position = starts.iter().position(|(id, ..)| id == "x").unwrap();
        eprintln!(
            "T15 release: x ran in B {} ms after its release, as run #{position} of 51",
            x_start as i64 - released_at as i64
        );
        assert_eq!(attempt, 2);
        assert!(
            x_start <= released_at + 500,
            "the released item ran {} ms after its release (run #{position} of 51): \
             it was queued behind items due after it",
            x_start - released_at
        );
    });
}
