#![cfg(feature = "redis")]
//! Acceptance tests T4, T5, T10, T11 and T13 of `durable-design.md`: the
//! durable queue against a real `redis-server` that fails.
//!
//! - T4: a consumer process is kill -9'd mid-task; its item comes back after
//!   the lease (attempt 2, a higher token, the original deadline).
//! - T5: a SIGSTOPped holder is fenced: its ack and extend fail with
//!   `LeaseLost`, its heartbeat marks the delivery lost, one ack succeeds.
//! - T10: redis-server is kill -9'd and restarted: every acknowledged put
//!   survives (with `appendfsync always`: under `everysec` a slow fsync
//!   lets Redis answer puts it has not written yet, see
//!   `fsync_always`), consumers reconnect by themselves.
//! - T11: Redis is unavailable for 5 s (killed, or SIGSTOPped): puts fail in
//!   time, takes retry without spinning, nothing put before is lost.
//!   A put whose reply timed out is `Unavailable` (it may yet apply), and
//!   repeating it leaves one item.
//! - T13: out of memory refuses puts with nothing written and lets consumers
//!   drain; an unsafe server configuration warns, or fails in strict mode.
//!
//! "Never early" is always checked with the server's deadline and claim
//! time, exactly. Ledgers are written before the ack (F14). Child processes
//! re-execute this binary (see `redis_support::child`) and report progress
//! on stdout as `@@ TAG field...` lines.

mod durable_support;
mod redis_support;
mod trace_support;
use trace_support::Recorder;

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use redis_support::{child, role, signal, watchdog, Redis};
use schedpool::durable::*;

const LEASE: Duration = Duration::from_secs(1);
const MAX_BLOCK: Duration = Duration::from_secs(1);

fn opts() -> QueueOptions {
    QueueOptions {
        lease: LEASE,
        max_block: MAX_BLOCK,
        max_attempts: 0,
    }
}

fn ms(d: Duration) -> u64 {
    d.as_millis() as u64
}

// ---------------------------------------------------------------------------
// Child processes
// ---------------------------------------------------------------------------

/// A child process running one role of a test; killed when dropped.
struct Proc {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
}

impl Proc {
    fn spawn(test: &str, role: &str, env: &[(&str, String)]) -> Proc {
        let mut cmd = child(test, role, env);
        cmd.stdin(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn the child test process");
        let out = child.stdout.take().expect("piped stdout");
        let stdin = child.stdin.take();
        let (tx, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Proc {
            child,
            stdin,
            lines,
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits for the child's `@@ TAG ...` line and returns its fields.
    /// (libtest may print `test name ... ` in front of it on the same line.)
    fn expect(&self, tag: &str, within: Duration) -> Vec<String> {
        let until = Instant::now() + within;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    let Some(at) = line.find("@@ ") else { continue };
                    let mut words = line[at + 3..].split_whitespace();
                    if words.next() == Some(tag) {
                        return words.map(str::to_string).collect();
                    }
                }
                Err(_) => panic!("the child did not report {tag} within {within:?}"),
            }
        }
    }

    fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("child stdin");
        writeln!(stdin, "{line}").expect("write to the child");
        stdin.flush().expect("flush the child's stdin");
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Child side: one progress line for the parent.
fn report(tag: &str, fields: &[String]) {
    let mut out = std::io::stdout().lock();
    writeln!(out, "@@ {tag} {}", fields.join(" ")).unwrap();
    out.flush().unwrap();
}

/// Child side: the next line from the parent, `None` once the parent is gone.
fn next_command() -> Option<String> {
    let mut line = String::new();
    match std::io::stdin().read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line.trim().to_string()),
    }
}

fn env_url() -> String {
    std::env::var("SP_URL").expect("SP_URL for the child")
}

fn num(s: &str) -> u64 {
    s.parse()
        .unwrap_or_else(|_| panic!("not a number from the child: {s:?}"))
}

fn settle_code(r: &Result<(), DurableError>) -> &'static str {
    match r {
        Ok(()) => "ok",
        Err(DurableError::LeaseLost) => "lease_lost",
        Err(_) => "other_error",
    }
}

// ---------------------------------------------------------------------------
// Redis inspection
// ---------------------------------------------------------------------------

fn zscore(conn: &mut redis::Connection, key: &str, member: &str) -> Option<u64> {
    redis::cmd("ZSCORE")
        .arg(key)
        .arg(member)
        .query::<Option<f64>>(conn)
        .unwrap()
        .map(|s| s as u64)
}

fn hget(conn: &mut redis::Connection, key: &str, field: &str) -> Option<Vec<u8>> {
    redis::cmd("HGET")
        .arg(key)
        .arg(field)
        .query::<Option<Vec<u8>>>(conn)
        .unwrap()
}

/// (due, lease, data, meta) sizes of one queue.
fn sizes(conn: &mut redis::Connection, b: &RedisBackend) -> (usize, usize, usize, usize) {
    redis::pipe()
        .zcard(b.key("due").unwrap())
        .zcard(b.key("lease").unwrap())
        .hlen(b.key("data").unwrap())
        .hlen(b.key("meta").unwrap())
        .query(conn)
        .unwrap()
}

fn info_u64(conn: &mut redis::Connection, section: &str, field: &str) -> u64 {
    let info: String = redis::cmd("INFO").arg(section).query(conn).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .unwrap_or_else(|| panic!("INFO {section} has no {field}"))
        .trim()
        .parse()
        .unwrap()
}

fn config_get(conn: &mut redis::Connection, name: &str) -> String {
    let pair: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg(name)
        .query(conn)
        .unwrap();
    pair[1].clone()
}

fn config_set(conn: &mut redis::Connection, name: &str, value: &str) {
    redis::cmd("CONFIG")
        .arg("SET")
        .arg(name)
        .arg(value)
        .query::<()>(conn)
        .unwrap();
}

// ---------------------------------------------------------------------------
// T4: kill -9 a consumer mid-task
// ---------------------------------------------------------------------------

/// T4 child: claims the one item, reports it, and holds it (heartbeats on)
/// until it is killed (or the parent goes away).
fn t4_holder() {
    let backend = RedisBackend::connect(&env_url(), "t4").unwrap();
    let q: RedisDelayQueue<String> = DurableQueue::with_options(backend, opts()).unwrap();
    let d = q
        .poll_timeout(Duration::from_secs(10))
        .unwrap()
        .expect("the item to hold");
    report(
        "CLAIMED",
        &[
            d.id().to_string(),
            d.token().to_string(),
            d.attempt().to_string(),
            d.deadline_ms().to_string(),
            d.claimed_ms().to_string(),
            d.value().clone(),
        ],
    );
    // Mid-task: the parent kills us here.
    let _ = next_command();
    drop(d);
}

#[test]
fn t4_killed_consumer_item_comes_back_after_the_lease() {
    if let Some(r) = role() {
        assert_eq!(r, "t4-holder");
        return t4_holder();
    }
    watchdog(Duration::from_secs(60), || {
        let started = Instant::now();
        let redis = Redis::start();
        let backend = RedisBackend::connect(&redis.url(), "t4").unwrap();
        let lease_key = backend.key("lease").unwrap().to_string();
        let q: RedisDelayQueue<String> = DurableQueue::with_options(backend, opts()).unwrap();
        let mut conn = redis.conn();

        let put = q
            .put(
                "order-42",
                &"close-order".to_string(),
                Duration::from_millis(300),
            )
            .unwrap();
        assert!(matches!(put, Put::Inserted { .. }), "{put:?}");
        let deadline = put.deadline_ms().unwrap();

        let holder = Proc::spawn(
            "t4_killed_consumer_item_comes_back_after_the_lease",
            "t4-holder",
            &[("SP_URL", redis.url())],
        );
        let f = holder.expect("CLAIMED", Duration::from_secs(20));
        let (token1, attempt1, deadline1, claimed1) =
            (num(&f[1]), num(&f[2]), num(&f[3]), num(&f[4]));
        assert_eq!(f[0], "order-42");
        assert_eq!(f[5], "close-order");
        assert_eq!(attempt1, 1);
        assert_eq!(deadline1, deadline, "the holder sees the put's deadline");
        assert!(
            claimed1 >= deadline,
            "claimed early: {claimed1} < {deadline}"
        );

        // Another consumer blocks in take() while the holder works.
        let (tx, rx) = mpsc::channel();
        let consumer = q.clone();
        let taker = thread::spawn(move || {
            let d = consumer.take().unwrap().expect("open queue");
            tx.send(d).unwrap();
        });

        // The holder is alive and heartbeating: 2.5 leases pass and nobody
        // else gets the item; its lease was extended past claim + lease.
        thread::sleep(LEASE * 5 / 2);
        assert!(
            rx.try_recv().is_err(),
            "the item was redelivered while its holder was alive and heartbeating"
        );
        let extended = zscore(&mut conn, &lease_key, "order-42").expect("still leased");
        assert!(
            extended > claimed1 + ms(LEASE),
            "heartbeats did not extend the lease: {extended} <= {claimed1} + lease"
        );

        // kill -9 mid-task.
        let mut holder = holder;
        signal(holder.pid(), "KILL");
        let status = holder.child.wait().unwrap();
        assert!(!status.success(), "the holder was killed: {status:?}");
        thread::sleep(Duration::from_millis(50));
        let lease_end = zscore(&mut conn, &lease_key, "order-42")
            .expect("the dead holder's lease is still there");
        let killed_at = Instant::now();

        let d = rx
            .recv_timeout(LEASE + MAX_BLOCK + Duration::from_secs(5))
            .expect("the item came back after the killed holder's lease");
        let waited = killed_at.elapsed();
        taker.join().unwrap();

        assert_eq!(d.id(), "order-42");
        assert_eq!(d.value(), "close-order");
        assert_eq!(d.attempt(), 2, "a redelivery is attempt 2");
        assert!(d.token() > token1, "token {} <= {token1}", d.token());
        assert_eq!(d.deadline_ms(), deadline, "the original deadline is kept");
        assert!(
            d.claimed_ms() >= lease_end,
            "reclaimed inside the lease: claim {} < lease end {lease_end}",
            d.claimed_ms()
        );
        assert!(d.claimed_ms() >= claimed1 + ms(LEASE));
        let bound = lease_end + ms(MAX_BLOCK) + 1000;
        assert!(
            d.claimed_ms() <= bound,
            "redelivered late: claim {} > lease end {lease_end} + max_block + 1 s",
            d.claimed_ms()
        );
        let after_lease_end = d.claimed_ms() - lease_end;
        d.ack().unwrap();
        assert_eq!(q.counts().unwrap(), Counts::default());
        eprintln!(
            "T4: redelivered {after_lease_end} ms after the lease end ({waited:?} after the kill); \
             total {:?}",
            started.elapsed()
        );
    });
}

// ---------------------------------------------------------------------------
// T5: a stalled holder is fenced
// ---------------------------------------------------------------------------

/// T5 child: claims the item and reports it; after the parent's SIGSTOP,
/// SIGCONT and "GO", reports what its heartbeat, extend and ack saw.
fn t5_holder() {
    let backend = RedisBackend::connect(&env_url(), "t5").unwrap();
    let q: RedisDelayQueue<u64> = DurableQueue::with_options(backend, opts()).unwrap();
    let d = q
        .poll_timeout(Duration::from_secs(10))
        .unwrap()
        .expect("the item to hold");
    report(
        "CLAIMED",
        &[
            d.id().to_string(),
            d.token().to_string(),
            d.attempt().to_string(),
            d.claimed_ms().to_string(),
        ],
    );
    if next_command().as_deref() != Some("GO") {
        return;
    }
    // The heartbeat thread alone must notice (within a few ticks).
    let t = Instant::now();
    while !d.lease_lost() && t.elapsed() < Duration::from_secs(3) {
        thread::sleep(Duration::from_millis(5));
    }
    let noticed = d.lease_lost();
    let extend = d.extend(LEASE);
    if let Err(e) = &extend {
        eprintln!("t5 holder: extend -> {e}");
    }
    let lost_after = d.lease_lost();
    let ack = d.ack();
    if let Err(e) = &ack {
        eprintln!("t5 holder: ack -> {e}");
    }
    report(
        "RESULT",
        &[
            noticed.to_string(),
            settle_code(&extend).to_string(),
            lost_after.to_string(),
            settle_code(&ack).to_string(),
        ],
    );
    let _ = next_command();
}

#[test]
fn t5_stalled_holder_is_fenced() {
    if let Some(r) = role() {
        assert_eq!(r, "t5-holder");
        return t5_holder();
    }
    watchdog(Duration::from_secs(60), || {
        let started = Instant::now();
        let redis = Redis::start();
        let backend = RedisBackend::connect(&redis.url(), "t5").unwrap();
        let lease_key = backend.key("lease").unwrap().to_string();
        let data_key = backend.key("data").unwrap().to_string();
        let q: RedisDelayQueue<u64> = DurableQueue::with_options(backend, opts()).unwrap();
        // A second handle for the stale holder's raw calls.
        let raw = RedisBackend::connect(&redis.url(), "t5").unwrap();
        let mut conn = redis.conn();

        let deadline = q
            .put("job", &7, Duration::ZERO)
            .unwrap()
            .deadline_ms()
            .unwrap();
        let mut holder = Proc::spawn(
            "t5_stalled_holder_is_fenced",
            "t5-holder",
            &[("SP_URL", redis.url())],
        );
        let f = holder.expect("CLAIMED", Duration::from_secs(20));
        assert_eq!(f[0], "job");
        let token1 = num(&f[1]);
        assert_eq!(num(&f[2]), 1);
        assert!(num(&f[3]) >= deadline);

        // Stall the holder for 3 leases.
        signal(holder.pid(), "STOP");
        let stopped_at = Instant::now();
        thread::sleep(Duration::from_millis(50));
        let lease_end = zscore(&mut conn, &lease_key, "job").expect("leased by the holder");

        // Our consumer gets the item only after the stalled lease expired.
        let d = q
            .poll_timeout(LEASE + MAX_BLOCK + Duration::from_secs(3))
            .unwrap()
            .expect("the stalled holder's item is reclaimed");
        assert_eq!(d.id(), "job");
        assert_eq!(*d.value(), 7);
        assert!(
            d.claimed_ms() >= lease_end,
            "reclaimed inside the stalled holder's lease: {} < {lease_end}",
            d.claimed_ms()
        );
        assert_eq!(d.attempt(), 2);
        assert!(d.token() > token1);
        assert_eq!(d.deadline_ms(), deadline);

        let stall = LEASE * 3;
        thread::sleep(stall.saturating_sub(stopped_at.elapsed()));
        signal(holder.pid(), "CONT");
        holder.send("GO");
        let r = holder.expect("RESULT", Duration::from_secs(15));
        holder.send("EXIT");

        // The item is still ours: the stale ack deleted nothing.
        assert!(
            zscore(&mut conn, &lease_key, "job").is_some()
                && hget(&mut conn, &data_key, "job").is_some(),
            "the stale holder's ack removed the item"
        );
        // The stale token is refused at the store too.
        assert_eq!(raw.extend(&[("job", token1)], LEASE).unwrap(), vec![false]);
        assert!(!raw.ack("job", token1).unwrap());
        assert!(!raw
            .nack("job", token1, Nack::Retry(Duration::ZERO))
            .unwrap());

        assert_eq!(
            r[0], "true",
            "the stale holder's heartbeat did not mark its delivery lost"
        );
        assert_eq!(r[1], "lease_lost", "the stale holder's extend");
        assert_eq!(r[2], "true", "lease_lost() after the failed extend");
        assert_eq!(r[3], "lease_lost", "the stale holder's ack");

        // Exactly one successful ack: ours.
        assert!(!d.lease_lost());
        d.ack().unwrap();
        assert_eq!(q.counts().unwrap(), Counts::default());
        assert!(hget(&mut conn, &data_key, "job").is_none());
        drop(holder);
        eprintln!("T5: total {:?}", started.elapsed());
    });
}

// ---------------------------------------------------------------------------
// T10: redis-server kill -9
// ---------------------------------------------------------------------------

/// A server that writes and fsyncs the AOF before it answers, the setting
/// under which a kill -9 of `redis-server` loses no acknowledged put. Under
/// `everysec` (the harness's default) Redis postpones the AOF write for up
/// to 2 s while an fsync is slow, and answers clients meanwhile: on a busy
/// disk (other engineers' builds, CI) a kill then loses those puts, so a
/// test of "nothing acknowledged is lost" across a kill uses this.
fn fsync_always() -> Redis {
    let redis = Redis::start_with(&["--appendfsync", "always"]);
    assert_eq!(config_get(&mut redis.conn(), "appendfsync"), "always");
    redis
}

struct PutRecord {
    id: String,
    issued: Instant,
    returned: Instant,
    result: Result<u64, DurableError>,
}

/// What consumers saw: per id, (claimed_ms, deadline_ms) of each delivery
/// (written before the ack), successful acks, and any error.
#[derive(Default)]
struct Ledger {
    deliveries: HashMap<String, Vec<(u64, u64)>>,
    acks: HashMap<String, usize>,
    errors: Vec<String>,
}

fn consume(q: RedisDelayQueue<u64>, ledger: Arc<Mutex<Ledger>>) -> thread::JoinHandle<()> {
    thread::spawn(move || loop {
        match q.take() {
            Ok(Some(d)) => {
                let id = d.id().to_string();
                ledger
                    .lock()
                    .unwrap()
                    .deliveries
                    .entry(id.clone())
                    .or_default()
                    .push((d.claimed_ms(), d.deadline_ms()));
                match d.ack() {
                    Ok(()) => *ledger.lock().unwrap().acks.entry(id).or_default() += 1,
                    Err(e) => ledger.lock().unwrap().errors.push(format!("ack {id}: {e}")),
                }
            }
            Ok(None) => return,
            Err(e) => {
                ledger.lock().unwrap().errors.push(format!("take: {e}"));
                thread::sleep(Duration::from_millis(10));
            }
        }
    })
}

fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

#[test]
fn t10_redis_kill9_loses_no_acknowledged_put() {
    watchdog(Duration::from_secs(120), || {
        let started = Instant::now();
        let mut redis = fsync_always();
        let url = redis.url();
        // A 2 s lease: a delivery in hand at the kill keeps its lease over
        // the restart (the heartbeat retries until the server is back).
        let qopts = QueueOptions {
            lease: Duration::from_secs(2),
            ..opts()
        };
        let connect = || {
            DurableQueue::<u64>::with_options(RedisBackend::connect(&url, "t10").unwrap(), qopts)
                .unwrap()
        };
        let backend = RedisBackend::connect(&url, "t10").unwrap();
        let data_key = backend.key("data").unwrap().to_string();
        let meta_key = backend.key("meta").unwrap().to_string();
        let producer: RedisDelayQueue<u64> = DurableQueue::with_options(backend, qopts).unwrap();

        let ledger = Arc::new(Mutex::new(Ledger::default()));
        let consumers: Vec<RedisDelayQueue<u64>> = (0..2).map(|_| connect()).collect();
        let handles: Vec<_> = consumers
            .iter()
            .map(|q| consume(q.clone(), ledger.clone()))
            .collect();

        let stop = Arc::new(AtomicBool::new(false));
        let puts = Arc::new(Mutex::new(Vec::<PutRecord>::new()));
        let prod = {
            let (stop, puts, producer) = (stop.clone(), puts.clone(), producer.clone());
            thread::spawn(move || {
                let mut rng = 0x9e37_79b9_7f4a_7c15u64;
                let mut i = 0u64;
                while !stop.load(Ordering::SeqCst) {
                    let id = format!("item-{i:06}");
                    let delay = Duration::from_millis(xorshift(&mut rng) % 1500);
                    let issued = Instant::now();
                    let result = producer
                        .put(&id, &i, delay)
                        .map(|p| p.deadline_ms().unwrap());
                    puts.lock().unwrap().push(PutRecord {
                        id,
                        issued,
                        returned: Instant::now(),
                        result,
                    });
                    i += 1;
                    thread::sleep(Duration::from_millis(1));
                }
            })
        };

        thread::sleep(Duration::from_secs(2));
        let killed_at = Instant::now();
        redis.kill9();
        redis.restart();
        let up_at = Instant::now();
        eprintln!("T10: redis down for {:?}", up_at - killed_at);

        // Present after the restart: every put acknowledged before the kill
        // is in `data` or was delivered (the ledger is written before the
        // ack, and read after `data`).
        let mut conn = redis.conn();
        let stored: HashSet<String> = redis::cmd("HKEYS")
            .arg(&data_key)
            .query::<Vec<String>>(&mut conn)
            .unwrap()
            .into_iter()
            .collect();
        let delivered: HashSet<String> =
            ledger.lock().unwrap().deliveries.keys().cloned().collect();
        let before_kill: Vec<String> = puts
            .lock()
            .unwrap()
            .iter()
            .filter(|p| p.result.is_ok() && p.returned < killed_at)
            .map(|p| p.id.clone())
            .collect();
        let missing: Vec<&String> = before_kill
            .iter()
            .filter(|id| !stored.contains(*id) && !delivered.contains(*id))
            .collect();
        assert!(
            missing.is_empty(),
            "{} of {} acknowledged puts missing after the restart: {:?}",
            missing.len(),
            before_kill.len(),
            &missing[..missing.len().min(10)]
        );
        assert!(
            !stored.is_empty(),
            "nothing was pending at the kill: the test did not exercise the AOF"
        );

        thread::sleep(Duration::from_secs(2));
        stop.store(true, Ordering::SeqCst);
        prod.join().unwrap();
        let puts = std::mem::take(&mut *puts.lock().unwrap());

        // Consumers reconnect by themselves and drain within 30 s.
        let ok: HashMap<&str, u64> = puts
            .iter()
            .filter_map(|p| p.result.as_ref().ok().map(|d| (p.id.as_str(), *d)))
            .collect();
        let drain_limit = up_at + Duration::from_secs(30);
        loop {
            let acked = ledger.lock().unwrap().acks.len();
            let counts = producer.counts().unwrap();
            if acked >= ok.len() && counts.pending + counts.in_flight == 0 {
                break;
            }
            assert!(
                Instant::now() < drain_limit,
                "not drained 30 s after the restart: {acked} of {} acked, {counts:?}",
                ok.len()
            );
            thread::sleep(Duration::from_millis(50));
        }
        let drained_after = up_at.elapsed();
        for q in &consumers {
            q.close();
        }
        for h in handles {
            h.join().unwrap();
        }

        let ledger = ledger.lock().unwrap();
        assert!(
            ledger.errors.is_empty(),
            "errors reached user code: {:?}",
            ledger.errors
        );
        // Only puts issued while the server was down may fail.
        let failed: Vec<&PutRecord> = puts.iter().filter(|p| p.result.is_err()).collect();
        for p in &failed {
            assert!(
                p.issued <= up_at && p.returned >= killed_at,
                "put {} failed outside the outage: {:?}",
                p.id,
                p.result
            );
        }
        let ids: HashSet<&str> = puts.iter().map(|p| p.id.as_str()).collect();
        for (id, deliveries) in &ledger.deliveries {
            assert!(ids.contains(id.as_str()), "delivered an unknown id {id}");
            for &(claimed, deadline) in deliveries {
                assert!(
                    claimed >= deadline,
                    "{id} claimed early: {claimed} < {deadline}"
                );
                if let Some(&put_deadline) = ok.get(id.as_str()) {
                    assert_eq!(deadline, put_deadline, "{id} deadline changed");
                }
            }
        }
        for id in ok.keys() {
            assert_eq!(
                ledger.acks.get(*id).copied().unwrap_or(0),
                1,
                "{id}: acknowledged put not acked exactly once"
            );
        }
        for p in &failed {
            eprintln!(
                "T10: put {} failed after {:?}: {:?}",
                p.id,
                p.returned - p.issued,
                p.result
            );
        }
        let redelivered = ledger.deliveries.values().filter(|v| v.len() > 1).count();
        let hlen = |key: &str| -> usize {
            redis::cmd("HLEN")
                .arg(key)
                .query(&mut redis.conn())
                .unwrap()
        };
        assert_eq!(producer.counts().unwrap(), Counts::default());
        assert_eq!((hlen(&data_key), hlen(&meta_key)), (0, 0));
        eprintln!(
            "T10: {} puts ({} acknowledged, {} failed during the outage), {} pending at the kill, \
             {redelivered} redelivered; drained {drained_after:?} after the restart; total {:?}",
            puts.len(),
            ok.len(),
            failed.len(),
            stored.len(),
            started.elapsed()
        );
    });
}

/// T10, the restart's second half: a restarted server answers `LOADING`
/// while it replays its AOF. Puts and acks issued then must be retried like
/// a refused connection (the load here takes about 0.5 s, under the 2 s
/// `op_timeout`), not fail at once.
#[test]
fn t10_put_and_ack_during_the_aof_load_are_retried() {
    watchdog(Duration::from_secs(60), || {
        let started = Instant::now();
        // Slow the load down to about 0.5 s, and answer clients during it.
        let mut redis = Redis::start_with(&[
            "--key-load-delay",
            "20",
            "--loading-process-events-interval-bytes",
            "1024",
        ]);
        let url = redis.url();
        let mut conn = redis.conn();
        let mut fill = redis::pipe();
        for i in 0..5000 {
            fill.cmd("SET").arg(format!("filler:{i}")).arg("x").ignore();
        }
        fill.query::<()>(&mut conn).unwrap();

        let qopts = QueueOptions {
            lease: Duration::from_secs(10),
            ..opts()
        };
        let q: RedisDelayQueue<u64> =
            DurableQueue::with_options(RedisBackend::connect(&url, "t10l").unwrap(), qopts)
                .unwrap();
        q.put("held", &1, Duration::ZERO).unwrap();
        let held = q
            .poll_timeout(Duration::from_secs(2))
            .unwrap()
            .expect("held");
        q.put("pending", &2, Duration::ZERO).unwrap();
        // Everything into the AOF's base file (an RDB preamble, loaded with
        // the key delay).
        redis::cmd("BGREWRITEAOF").query::<()>(&mut conn).unwrap();
        let limit = Instant::now() + Duration::from_secs(20);
        loop {
            thread::sleep(Duration::from_millis(50));
            let busy = info_u64(&mut conn, "persistence", "aof_rewrite_in_progress")
                + info_u64(&mut conn, "persistence", "aof_rewrite_scheduled");
            if busy == 0 {
                break;
            }
            assert!(Instant::now() < limit, "BGREWRITEAOF did not finish");
        }
        drop(conn);

        redis.kill9();
        let restarter = thread::spawn(move || {
            redis.restart();
            redis
        });
        // Wait for the server to answer LOADING.
        let client = redis::Client::open(url.as_str()).unwrap();
        let limit = Instant::now() + Duration::from_secs(10);
        let loading_seen = loop {
            assert!(Instant::now() < limit, "never saw the server loading");
            let Ok(mut c) = client.get_connection_with_timeout(Duration::from_millis(200)) else {
                thread::sleep(Duration::from_millis(5));
                continue;
            };
            match redis::cmd("PING").query::<String>(&mut c) {
                // redis-rs shows LOADING as "BusyLoading: ...".
                Err(e) if e.to_string().to_lowercase().contains("loading") => break Instant::now(),
                Err(_) => thread::sleep(Duration::from_millis(5)),
                Ok(_) => panic!("the server answered PING before it was seen loading"),
            }
        };
        let qp = q.clone();
        let put = thread::spawn(move || {
            let t = Instant::now();
            (qp.put("during-load", &3, Duration::ZERO), t.elapsed())
        });
        let ack = thread::spawn(move || {
            let t = Instant::now();
            (held.ack(), t.elapsed())
        });
        let (put, put_took) = put.join().unwrap();
        let (ack, ack_took) = ack.join().unwrap();
        let redis = restarter.join().unwrap();
        let loaded_after = loading_seen.elapsed();
        eprintln!(
            "T10 load: put -> {put:?} in {put_took:?}; ack -> {ack:?} in {ack_took:?}; \
             up {loaded_after:?} after LOADING was seen"
        );
        assert!(
            put.is_ok(),
            "a put issued while the server loaded its AOF failed instead of being retried: {put:?}"
        );
        assert!(
            ack.is_ok(),
            "an ack issued while the server loaded its AOF failed instead of being retried: {ack:?}"
        );
        let mut ids = Vec::new();
        while ids.len() < 2 {
            let d = q
                .poll_timeout(Duration::from_secs(5))
                .unwrap()
                .expect("the rest");
            assert!(d.claimed_ms() >= d.deadline_ms());
            ids.push(d.id().to_string());
            d.ack().unwrap();
        }
        ids.sort();
        assert_eq!(ids, ["during-load", "pending"]);
        assert_eq!(q.counts().unwrap(), Counts::default());
        drop(redis);
        eprintln!("T10 load: total {:?}", started.elapsed());
    });
}

/// A TCP proxy in front of Redis that, when armed, swallows the next reply
/// from the server and closes that connection: the command ran, its reply
/// is lost (a kill or a network cut at the worst moment).
struct LossyProxy {
    port: u16,
    arm: Arc<AtomicBool>,
    dropped: Arc<AtomicUsize>,
}

impl LossyProxy {
    fn start(target: u16) -> LossyProxy {
        use std::io::Read;
        use std::net::{Shutdown, TcpListener, TcpStream};
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let arm = Arc::new(AtomicBool::new(false));
        let dropped = Arc::new(AtomicUsize::new(0));
        let (arm2, dropped2) = (arm.clone(), dropped.clone());
        thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { break };
                let Ok(server) = TcpStream::connect(("127.0.0.1", target)) else {
                    continue;
                };
                let (mut from_client, mut to_server) =
                    (client.try_clone().unwrap(), server.try_clone().unwrap());
                thread::spawn(move || {
                    let _ = std::io::copy(&mut from_client, &mut to_server);
                    let _ = to_server.shutdown(Shutdown::Both);
                });
                let (mut from_server, mut to_client) = (server, client);
                let (arm, dropped) = (arm2.clone(), dropped2.clone());
                thread::spawn(move || {
                    let mut buf = vec![0u8; 1 << 16];
                    loop {
                        let n = match from_server.read(&mut buf) {
                            Ok(0) | Err(_) => break,
                            Ok(n) => n,
                        };
                        if arm.swap(false, Ordering::SeqCst) {
                            dropped.fetch_add(1, Ordering::SeqCst);
                            let _ = from_server.shutdown(Shutdown::Both);
                            break;
                        }
                        if to_client.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                    let _ = to_client.shutdown(Shutdown::Both);
                });
            }
        });
        LossyProxy { port, arm, dropped }
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// Runs `f` with the next server reply swallowed; asserts one was.
    fn losing_reply<R>(&self, f: impl FnOnce() -> R) -> R {
        let before = self.dropped.load(Ordering::SeqCst);
        self.arm.store(true, Ordering::SeqCst);
        let r = f();
        assert!(!self.arm.load(Ordering::SeqCst), "no reply was swallowed");
        assert_eq!(self.dropped.load(Ordering::SeqCst), before + 1);
        r
    }
}

/// T10 (F5): "no error but put errors reaches user code" across a restart
/// means an ack or a cancel that ran but whose reply was lost must not be
/// reported wrongly when the backend retries it. The proxy makes that
/// moment deterministic: the command runs, its reply is swallowed, the
/// connection drops, the backend retries on a new one.
#[test]
fn t10_ack_and_cancel_whose_reply_was_lost_report_what_happened() {
    watchdog(Duration::from_secs(60), || {
        let started = Instant::now();
        let redis = Redis::start();
        let proxy = LossyProxy::start(redis.port);
        // A long lease: no heartbeat runs while a reply is being swallowed.
        let qopts = QueueOptions {
            lease: Duration::from_secs(30),
            ..opts()
        };
        let backend = RedisBackend::connect(&proxy.url(), "t10r").unwrap();
        let q: RedisDelayQueue<u64> = DurableQueue::with_options(backend, qopts).unwrap();
        // Load every script once (a first EVALSHA answers NOSCRIPT).
        q.put("warm", &0, Duration::ZERO).unwrap();
        q.poll_timeout(Duration::from_secs(2))
            .unwrap()
            .unwrap()
            .ack()
            .unwrap();
        q.put("warm", &0, Duration::from_secs(3600)).unwrap();
        assert_eq!(q.remove("warm").unwrap(), Removed::Pending(0));

        let mut wrong = Vec::new();
        // An ack that ran.
        q.put("a", &1, Duration::ZERO).unwrap();
        let d = q.poll_timeout(Duration::from_secs(2)).unwrap().unwrap();
        let ack = proxy.losing_reply(|| d.ack());
        assert_eq!(q.counts().unwrap(), Counts::default(), "the ack ran");
        if ack.is_err() {
            wrong.push(format!(
                "ack ran, its reply was lost, the retry reported {ack:?}"
            ));
        }
        // A cancel that ran.
        q.put("p", &5, Duration::from_secs(3600)).unwrap();
        let removed = proxy.losing_reply(|| q.remove("p"));
        assert_eq!(q.counts().unwrap(), Counts::default(), "the cancel ran");
        if removed != Ok(Removed::Pending(5))
            && !matches!(removed, Err(DurableError::Unavailable(_)))
        {
            wrong.push(format!(
                "cancel of a pending item ran, its reply was lost, the retry reported {removed:?} \
                 (expected Pending(5), or Unavailable for an unknown outcome)"
            ));
        }
        // A put that ran: a retry may say Replaced, but the item is there once.
        let put = proxy.losing_reply(|| q.put("n", &9, Duration::ZERO));
        assert!(put.is_ok(), "{put:?}");
        let d = q.poll_timeout(Duration::from_secs(2)).unwrap().unwrap();
        assert_eq!((d.id(), *d.value()), ("n", 9));
        d.ack().unwrap();
        assert_eq!(q.counts().unwrap(), Counts::default());
        eprintln!(
            "T10 lost replies: ack -> {ack:?}; remove -> {removed:?}; put -> {put:?}; total {:?}",
            started.elapsed()
        );
        assert!(wrong.is_empty(), "{wrong:#?}");
    });
}

// ---------------------------------------------------------------------------
// T11: Redis unavailable for 5 s
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outage {
    /// kill -9, restart on the same port and directory: connections refused.
    Killed,
    /// SIGSTOP, then SIGCONT: connections accepted, nothing answered.
    Stopped,
}

fn t11(outage: Outage, name: &str) {
    let started = Instant::now();
    // Killed: nothing put before the kill may be lost (see `fsync_always`).
    let mut redis = fsync_always();
    let url = redis.url();
    let op_timeout = Duration::from_millis(1500);
    let connect = || {
        RedisBackend::connect_with(&url, name, RedisOptions::default().op_timeout(op_timeout))
            .unwrap()
    };
    let producer: RedisDelayQueue<u64> = DurableQueue::with_options(connect(), opts()).unwrap();
    // Counts the consumer's claim attempts (tests/durable_support).
    let counting = durable_support::Probed::new(connect());
    let claims = counting.probe.clone();
    let consumer: RedisDelayQueue<u64> = DurableQueue::with_options(counting, opts()).unwrap();
    let poller: RedisDelayQueue<u64> = DurableQueue::with_options(connect(), opts()).unwrap();

    // Before the outage: 40 items due over the next 8 s (before, during and
    // after it).
    let mut pre: HashMap<String, u64> = HashMap::new();
    for i in 0..40u64 {
        let id = format!("pre-{i:02}");
        let p = producer
            .put(&id, &i, Duration::from_millis(200 * i))
            .unwrap();
        pre.insert(id, p.deadline_ms().unwrap());
    }

    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let consumer_thread = consume(consumer.clone(), ledger.clone());
    let stop = Arc::new(AtomicBool::new(false));
    let puts = Arc::new(Mutex::new(Vec::<PutRecord>::new()));
    let prod = {
        let (stop, puts, producer) = (stop.clone(), puts.clone(), producer.clone());
        thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(Ordering::SeqCst) {
                let id = format!("during-{i:04}");
                let issued = Instant::now();
                let result = producer
                    .put(&id, &(1000 + i), Duration::from_millis(100))
                    .map(|p| p.deadline_ms().unwrap());
                puts.lock().unwrap().push(PutRecord {
                    id,
                    issued,
                    returned: Instant::now(),
                    result,
                });
                i += 1;
                thread::sleep(Duration::from_millis(100));
            }
        })
    };

    thread::sleep(Duration::from_secs(1));
    let claims_before = claims.claims();
    let down_at = Instant::now();
    let pid = redis.pid().expect("running");
    match outage {
        Outage::Killed => redis.kill9(),
        Outage::Stopped => signal(pid, "STOP"),
    }
    thread::sleep(Duration::from_millis(300));

    // Side by side, from 0.3 s into the 5 s outage, so that a call hung
    // until the server is back would take 4.7 s, far past the bounds
    // below (which leave a loaded machine seconds): poll_timeout(1 s) on
    // its own handle returns in time, and a put fails in time.
    let polling = {
        let poller = poller.clone();
        thread::spawn(move || {
            let t = Instant::now();
            let polled = poller.poll_timeout(Duration::from_secs(1));
            (polled.map(|d| d.map(|d| d.id().to_string())), t.elapsed())
        })
    };
    let t = Instant::now();
    let probe = producer.put("probe", &0, Duration::ZERO);
    let probe_took = t.elapsed();
    let (polled, poll_took) = polling.join().unwrap();

    thread::sleep(Duration::from_secs(5).saturating_sub(down_at.elapsed()));
    let claims_during = claims.claims() - claims_before;
    match outage {
        Outage::Killed => redis.restart(),
        Outage::Stopped => signal(pid, "CONT"),
    }
    let up_at = Instant::now();
    let down_for = up_at - down_at;

    // Everything put before the outage is delivered. By the ledger (written
    // before the ack), not by successful acks: an ack that timed out while
    // Redis was stopped may still have run when it resumed (F14).
    let limit = up_at + Duration::from_secs(20);
    loop {
        let delivered = {
            let l = ledger.lock().unwrap();
            pre.keys()
                .filter(|id| l.deliveries.contains_key(*id))
                .count()
        };
        if delivered == pre.len() {
            break;
        }
        assert!(
            Instant::now() < limit,
            "{outage:?}: only {delivered} of {} pre-outage items delivered 20 s after the restart",
            pre.len()
        );
        thread::sleep(Duration::from_millis(50));
    }
    let pre_delivered_after = up_at.elapsed();
    thread::sleep(Duration::from_millis(500));
    stop.store(true, Ordering::SeqCst);
    prod.join().unwrap();
    let puts = std::mem::take(&mut *puts.lock().unwrap());
    // Drain the rest (also puts that failed ambiguously but landed).
    let limit = Instant::now() + Duration::from_secs(15);
    loop {
        let c = producer.counts().unwrap();
        if c.pending + c.in_flight == 0 {
            break;
        }
        assert!(Instant::now() < limit, "{outage:?}: not drained: {c:?}");
        thread::sleep(Duration::from_millis(50));
    }
    consumer.close();
    consumer_thread.join().unwrap();

    eprintln!(
        "T11 {outage:?}: down {down_for:?}; {claims_during} claims while down; poll_timeout(1 s) \
         took {poll_took:?} -> {:?}; probe put took {probe_took:?} -> {:?}; pre-outage items \
         delivered {pre_delivered_after:?} after the restart; total {:?}",
        polled.as_ref().map(Option::is_some),
        probe.as_ref().map(|_| ()),
        started.elapsed()
    );

    // What each call may take: its own budget (1 s, or one claim's
    // op_timeout; op_timeout and one grace attempt for a put) and 2 s for
    // a loaded machine's scheduling. A hang lasts until the server is back.
    let slack = Duration::from_secs(2);
    assert!(
        poll_took <= op_timeout + slack,
        "{outage:?}: poll_timeout(1 s) took {poll_took:?}"
    );
    assert!(
        !matches!(polled, Ok(Some(_))),
        "{outage:?}: claimed from a server that is down"
    );
    assert!(
        probe.is_err(),
        "{outage:?}: a put succeeded while down: {probe:?}"
    );
    assert!(
        probe_took <= op_timeout + slack,
        "{outage:?}: put took {probe_took:?} to fail (op_timeout {op_timeout:?})"
    );
    for p in &puts {
        let took = p.returned - p.issued;
        assert!(
            took <= op_timeout + slack,
            "{outage:?}: put {} took {took:?} ({:?})",
            p.id,
            p.result
        );
        if p.result.is_err() {
            assert!(
                p.issued <= up_at && p.returned >= down_at,
                "{outage:?}: put {} failed outside the outage",
                p.id
            );
        }
    }
    assert!(
        puts.iter().any(|p| p.result.is_err()),
        "{outage:?}: no put failed during a 5 s outage"
    );
    assert!(
        claims_during >= 1,
        "{outage:?}: take stopped trying while down"
    );
    assert!(
        claims_during <= 50,
        "{outage:?}: take spun: {claims_during} claim attempts in {down_for:?}"
    );

    let ledger = ledger.lock().unwrap();
    let take_errors: Vec<&String> = ledger
        .errors
        .iter()
        .filter(|e| e.starts_with("take"))
        .collect();
    assert!(
        take_errors.is_empty(),
        "{outage:?}: take returned errors: {take_errors:?}"
    );
    if !ledger.errors.is_empty() {
        // An ack while the server is down fails; the item came back.
        eprintln!(
            "T11 {outage:?}: ack errors during the outage: {:?}",
            ledger.errors
        );
    }
    for (id, deadline) in &pre {
        for &(claimed, d) in &ledger.deliveries[id] {
            assert_eq!(d, *deadline, "{id}: deadline changed");
            assert!(claimed >= d, "{id} claimed early: {claimed} < {d}");
        }
    }
    for p in &puts {
        if let Ok(deadline) = p.result {
            let delivered = ledger
                .deliveries
                .get(&p.id)
                .expect("every accepted put delivered");
            assert!(delivered.iter().all(|&(c, d)| d == deadline && c >= d));
        }
    }
    assert_eq!(producer.counts().unwrap(), Counts::default());
}

#[test]
fn t11_redis_killed_for_5s_no_hang_no_spin() {
    watchdog(Duration::from_secs(90), || t11(Outage::Killed, "t11k"));
}

#[test]
fn t11_redis_stopped_for_5s_no_hang_no_spin() {
    watchdog(Duration::from_secs(90), || t11(Outage::Stopped, "t11s"));
}

/// docs/durable.md, "Nothing accepted is lost": "`put` returns `Err`
/// when the server refuses it (out of memory, unreachable), and then
/// nothing was written." An `Unavailable` after a read timeout is
/// ambiguous: the script may run once the server catches up.
#[test]
fn redis_a_put_that_timed_out_is_unknown_and_repeatable() {
    let redis = Redis::start();
    watchdog(Duration::from_secs(60), || {
        let q: DurableQueue<u64> = DurableQueue::with_options(
            RedisBackend::connect_with(
                &redis.url(),
                "amb",
                schedpool::durable::RedisOptions::default().op_timeout(Duration::from_millis(500)),
            )
            .unwrap(),
            durable_support::options_ms(30_000, 5_000),
        )
        .unwrap();
        q.put("warm-up", &0, Duration::from_secs(60)).unwrap(); // loads the script
        q.remove("warm-up").unwrap();
        let pid = redis.pid().unwrap();
        crate::redis_support::signal(pid, "STOP");
        let r = q.put("ghost", &1, Duration::from_secs(60));
        crate::redis_support::signal(pid, "CONT");
        // The documented contract (docs/durable.md): a put that could not
        // get its reply is Unavailable, not Refused, because the server
        // may apply it later (here it does, on SIGCONT).
        assert!(
            matches!(r, Err(DurableError::Unavailable(_))),
            "a stopped server gives Unavailable: {r:?}"
        );
        // It says that it timed out, not the socket's "os error 11".
        let text = r.unwrap_err().to_string();
        assert!(text.contains("no reply from Redis within 500 ms"), "{text}");
        std::thread::sleep(Duration::from_millis(300));
        assert!(q.counts().unwrap().pending <= 1, "at most the one item");
        // Repeating the put is safe: one item, with the repeated value.
        q.put("ghost", &2, Duration::from_secs(60)).unwrap();
        assert_eq!(q.counts().unwrap().pending, 1);
        assert_eq!(q.remove("ghost").unwrap(), Removed::Pending(2));
        q.close();
    });
}

// ---------------------------------------------------------------------------
// T13: OOM and the config guard
// ---------------------------------------------------------------------------

#[test]
fn t13_oom_refuses_puts_and_lets_consumers_drain() {
    watchdog(Duration::from_secs(60), || {
        let started = Instant::now();
        let redis = Redis::start();
        let backend = RedisBackend::connect(&redis.url(), "t13").unwrap();
        let due_key = backend.key("due").unwrap().to_string();
        let meta_key = backend.key("meta").unwrap().to_string();
        let data_key = backend.key("data").unwrap().to_string();
        let inspect = RedisBackend::connect(&redis.url(), "t13").unwrap();
        let q: RedisDelayQueue<Vec<u8>> = DurableQueue::with_options(backend, opts()).unwrap();
        let mut conn = redis.conn();
        let big = vec![7u8; 64 * 1024];
        let hour = Duration::from_secs(3600);

        for i in 0..20 {
            q.put(&format!("now-{i:02}"), &big, Duration::ZERO).unwrap();
        }
        for i in 0..10 {
            q.put(&format!("later-{i:02}"), &big, hour).unwrap();
        }

        // Part 1, as in the design: maxmemory just above the used memory;
        // fill until a put is refused. It must leave nothing behind.
        let used = info_u64(&mut conn, "memory", "used_memory");
        let maxmemory = used + 256 * 1024;
        config_set(&mut conn, "maxmemory", &maxmemory.to_string());
        let mut refused = None;
        for i in 0..64 {
            let before = sizes(&mut conn, &inspect);
            let id = format!("fill-{i:02}");
            match q.put(&id, &big, hour) {
                Ok(_) => continue,
                Err(e) => {
                    refused = Some((id, e, before));
                    break;
                }
            }
        }
        let (id, err, before) = refused.expect("no put was refused above maxmemory");
        assert!(
            matches!(&err, DurableError::Refused(m) if m.contains("OOM")),
            "{err:?}"
        );
        assert_eq!(
            sizes(&mut conn, &inspect),
            before,
            "a refused put wrote something"
        );
        assert!(zscore(&mut conn, &due_key, &id).is_none());
        assert!(hget(&mut conn, &data_key, &id).is_none());
        assert!(hget(&mut conn, &meta_key, &id).is_none());
        let fills: Vec<String> = (0..64)
            .map(|i| format!("fill-{i:02}"))
            .take_while(|f| *f != id)
            .collect();

        // Part 2: the server is out of memory (maxmemory below what is used,
        // as after a burst of writes). Every put is refused, whatever its
        // size and mode, and an item it would replace is untouched.
        let used = info_u64(&mut conn, "memory", "used_memory");
        let maxmemory = used - 512 * 1024;
        config_set(&mut conn, "maxmemory", &maxmemory.to_string());
        let before = sizes(&mut conn, &inspect);
        let meta_before = hget(&mut conn, &meta_key, "later-00");
        for r in [
            q.put("tiny", &vec![1], Duration::ZERO),
            q.put_if_absent("tiny", &vec![1], Duration::ZERO),
            q.put("later-00", &vec![2], Duration::ZERO),
            q.put_at_server_ms("tiny", &vec![1], 0),
        ] {
            assert!(
                matches!(&r, Err(DurableError::Refused(m)) if m.contains("OOM")),
                "{r:?}"
            );
            assert_eq!(sizes(&mut conn, &inspect), before);
        }
        assert_eq!(hget(&mut conn, &meta_key, "later-00"), meta_before);

        // take, extend, nack, ack and cancel still work (allow-oom).
        let d = q
            .poll_timeout(Duration::from_secs(2))
            .unwrap()
            .expect("a due item under OOM");
        d.extend(LEASE).unwrap();
        let nacked = d.id().to_string();
        d.nack(Duration::ZERO).unwrap();
        let d = q.poll_timeout(Duration::from_secs(2)).unwrap().unwrap();
        assert_eq!(d.value(), &big);
        d.ack().unwrap();
        assert_eq!(q.remove("later-00").unwrap(), Removed::Pending(big.clone()));
        assert!(
            info_u64(&mut conn, "memory", "used_memory") > maxmemory,
            "the server left the OOM state early: the checks above tested nothing"
        );

        // Drain everything.
        let mut taken = 1;
        let mut nacked_again = false;
        while let Some(d) = q.poll().unwrap() {
            assert!(d.claimed_ms() >= d.deadline_ms());
            if d.id() == nacked {
                assert_eq!(d.attempt(), 2);
                nacked_again = true;
            }
            d.ack().unwrap();
            taken += 1;
        }
        assert!(nacked_again, "the item nacked under OOM came back");
        assert_eq!(taken, 20, "every due item taken under OOM");
        for id in (1..10).map(|i| format!("later-{i:02}")).chain(fills) {
            assert_eq!(
                q.remove(&id).unwrap(),
                Removed::Pending(big.clone()),
                "{id}"
            );
        }
        assert_eq!(q.counts().unwrap(), Counts::default());
        let used_after = info_u64(&mut conn, "memory", "used_memory");
        assert!(
            used_after < maxmemory,
            "{used_after} >= {maxmemory} after draining"
        );

        // Puts work again.
        let p = q.put("after", &big, Duration::ZERO).unwrap();
        assert!(matches!(p, Put::Inserted { .. }));
        let d = q.poll_timeout(Duration::from_secs(2)).unwrap().unwrap();
        assert_eq!(d.id(), "after");
        d.ack().unwrap();
        assert_eq!(q.counts().unwrap(), Counts::default());
        config_set(&mut conn, "maxmemory", "0");
        eprintln!(
            "T13 OOM: refused at {id}; drained under maxmemory {maxmemory} (used {used} -> {used_after}); total {:?}",
            started.elapsed()
        );
    });
}

/// Connects with default options, capturing this thread's warnings.
fn connect_capturing(url: &str, name: &str) -> (Result<RedisBackend, DurableError>, Vec<String>) {
    let recorder = Recorder::default();
    let r =
        tracing::subscriber::with_default(recorder.clone(), || RedisBackend::connect(url, name));
    let seen = recorder
        .events(tracing::Level::WARN, "schedpool::durable")
        .into_iter()
        .filter(|e| e.target == "schedpool::durable")
        .map(|e| e.field("message").unwrap_or_default().to_string())
        .collect();
    (r, seen)
}

#[test]
fn t13_unsafe_server_config_warns_or_fails_strict() {
    watchdog(Duration::from_secs(60), || {
        let started = Instant::now();
        // Control: the harness's safe settings give no warning.
        let safe = Redis::start();
        let (r, warnings) = connect_capturing(&safe.url(), "t13c");
        r.unwrap();
        assert!(
            !warnings
                .iter()
                .any(|w| w.contains("appendonly") || w.contains("maxmemory-policy")),
            "{warnings:?}"
        );
        RedisBackend::connect_with(&safe.url(), "t13c", RedisOptions::default().strict(true))
            .expect("strict connect to a safe server");

        let unsafe_redis =
            Redis::start_with(&["--appendonly", "no", "--maxmemory-policy", "allkeys-lru"]);
        let mut conn = unsafe_redis.conn();
        assert_eq!(config_get(&mut conn, "appendonly"), "no");
        assert_eq!(config_get(&mut conn, "maxmemory-policy"), "allkeys-lru");

        let (r, warnings) = connect_capturing(&unsafe_redis.url(), "t13c");
        r.expect("a non-strict connect only warns");
        assert!(
            warnings.iter().any(|w| w.contains("appendonly")),
            "no appendonly warning: {warnings:?}"
        );
        assert!(
            warnings.iter().any(|w| w.contains("maxmemory-policy")),
            "no maxmemory-policy warning: {warnings:?}"
        );

        let strict = RedisBackend::connect_with(
            &unsafe_redis.url(),
            "t13c",
            RedisOptions::default().strict(true),
        );
        match strict {
            Err(DurableError::Config(msg)) => {
                assert!(msg.contains("appendonly"), "{msg}");
                assert!(msg.contains("maxmemory-policy"), "{msg}");
            }
            other => panic!("strict connect to an unsafe server: {other:?}"),
        }
        eprintln!("T13 config guard: total {:?}", started.elapsed());
    });
}
