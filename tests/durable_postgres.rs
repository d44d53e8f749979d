//! The PostgreSQL backend against a real server (a private cluster per
//! test, see `tests/postgres_support`): transactional put and cancel,
//! failures (a consumer killed mid-handler, the server killed and
//! restarted, a stalled holder, many items under repeated consumer kills),
//! schema management, least privilege and SCRAM, error mapping, untrusted
//! bytes, durable chains, wake-up latency.
//!
//! Rules as in the Redis tests: "never early" uses the server's deadline and
//! claim time with no slack; ledgers are written before the ack (F14), and
//! successful acks are counted by the server (a trigger), not by the
//! consumer that may die right after one.

#![cfg(feature = "postgres")]

mod durable_support;
mod postgres_support;

use std::collections::{BTreeSet, HashMap};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdout, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use postgres_support::{child, role, signal, watchdog, Postgres};
use schedpool::durable::{
    DurableBackend, DurableError, DurablePool, DurableQueue, PostgresBackend, PostgresOptions, Put,
    PutMode, QueueOptions, Removed, When,
};

fn env_params() -> String {
    std::env::var("SP_PG").expect("SP_PG")
}

fn opts(lease_ms: u64) -> QueueOptions {
    QueueOptions {
        lease: Duration::from_millis(lease_ms),
        max_block: Duration::from_millis(500),
        max_attempts: 0,
    }
}

/// Polls `f` until it gives `Some`, for up to 20 s: for a change that
/// reaches the server's sessions asynchronously (a configuration reload).
fn until<T>(mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let limit = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if Instant::now() >= limit {
            return None;
        }
        thread::sleep(Duration::from_millis(20));
    }
}

fn queue(pg: &str, name: &str, lease_ms: u64) -> DurableQueue<String> {
    let b = PostgresBackend::connect(pg, name).unwrap();
    DurableQueue::with_options(b, opts(lease_ms)).unwrap()
}

/// A child test process and its stdout lines.
struct Proc {
    child: Child,
    lines: BufReader<ChildStdout>,
}

impl Proc {
    fn spawn(test: &str, role: &str, pg: &Postgres) -> Proc {
        let mut child = child(test, role, &[("SP_PG", pg.params())])
            .stdin(Stdio::piped())
            .spawn()
            .expect("spawn child");
        let lines = BufReader::new(child.stdout.take().unwrap());
        Proc { child, lines }
    }

    /// The fields of the next line starting with `tag`.
    fn expect(&mut self, tag: &str) -> Vec<String> {
        loop {
            let mut line = String::new();
            let n = self.lines.read_line(&mut line).unwrap();
            assert!(n > 0, "child ended before {tag}");
            // The harness may have printed "test NAME ... " on this line.
            let Some(at) = line.find(&format!("@@ {tag}")) else {
                continue;
            };
            return line[at..]
                .split_whitespace()
                .skip(2)
                .map(str::to_string)
                .collect();
        }
    }

    fn say(&mut self, line: &str) {
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
    }

    fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// Child side: one progress line (written to the real stdout: `println!`
/// would go to the test harness's capture).
fn report(tag: &str, fields: &[String]) {
    let mut out = std::io::stdout().lock();
    writeln!(out, "@@ {tag} {}", fields.join(" ")).unwrap();
    out.flush().unwrap();
}

fn next_command() -> String {
    let mut line = String::new();
    let _ = std::io::stdin().read_line(&mut line);
    line.trim().to_string()
}

fn num(s: &str) -> u64 {
    s.parse().unwrap()
}

// ===== transactional enqueue and cancel =====

#[test]
fn a_rolled_back_put_is_never_delivered_a_committed_one_is() {
    watchdog(Duration::from_secs(60), || {
        let pg = Postgres::start();
        let q = queue(&pg.params(), "tx", 30_000);
        let mut db = pg.client();
        db.batch_execute("CREATE TABLE orders (id text PRIMARY KEY, state text NOT NULL)")
            .unwrap();

        // Checkout A: the order and its timeout, rolled back together.
        let mut tx = db.transaction().unwrap();
        tx.execute("INSERT INTO orders VALUES ('a', 'unpaid')", &[])
            .unwrap();
        q.put_in(&mut tx, "order-a", &"close a".into(), Duration::ZERO)
            .unwrap();
        tx.rollback().unwrap();

        // Checkout B: committed together.
        let mut tx = db.transaction().unwrap();
        tx.execute("INSERT INTO orders VALUES ('b', 'unpaid')", &[])
            .unwrap();
        let put = q
            .put_in(&mut tx, "order-b", &"close b".into(), Duration::ZERO)
            .unwrap();
        assert!(matches!(put, Put::Inserted { .. }), "{put:?}");
        // Not visible to a claimer before the commit.
        assert!(q.poll().unwrap().is_none(), "uncommitted put claimed");
        tx.commit().unwrap();

        // Order C is paid: its timeout is cancelled in the payment's
        // transaction; the first payment rolls back, so it stays.
        q.put("order-c", &"close c".into(), Duration::from_secs(3600))
            .unwrap();
        let mut tx = db.transaction().unwrap();
        assert_eq!(
            q.remove_in(&mut tx, "order-c").unwrap(),
            Removed::Pending("close c".into())
        );
        tx.rollback().unwrap();
        assert_eq!(
            q.counts().unwrap().pending,
            2,
            "the rolled-back cancel is undone"
        );
        let mut tx = db.transaction().unwrap();
        assert_eq!(
            q.remove_in(&mut tx, "order-c").unwrap(),
            Removed::Pending("close c".into())
        );
        tx.commit().unwrap();

        let d = q.poll_timeout(Duration::from_secs(5)).unwrap().expect("b");
        assert_eq!(d.id(), "order-b");
        assert!(d.claimed_ms() >= d.deadline_ms());
        d.ack().unwrap();
        assert!(
            q.poll_timeout(Duration::from_millis(700))
                .unwrap()
                .is_none(),
            "the rolled-back order-a never comes out"
        );
        assert_eq!(q.counts().unwrap(), Default::default());

        // A replace in the caller's transaction: undone by its rollback,
        // done by its commit.
        q.put("order-d", &"close d".into(), Duration::from_secs(3600))
            .unwrap();
        let far = q.peek_deadline().unwrap();
        let mut tx = db.transaction().unwrap();
        let put = q
            .put_in(&mut tx, "order-d", &"now d".into(), Duration::ZERO)
            .unwrap();
        assert!(matches!(put, Put::Replaced { .. }), "{put:?}");
        assert_eq!(
            q.put_if_absent_in(&mut tx, "order-d", &"x".into(), Duration::ZERO)
                .unwrap(),
            Put::Exists
        );
        tx.rollback().unwrap();
        assert_eq!(q.peek_deadline().unwrap(), far, "the replace is undone");
        let mut tx = db.transaction().unwrap();
        q.put_in(&mut tx, "order-d", &"now d".into(), Duration::ZERO)
            .unwrap();
        tx.commit().unwrap();
        let d = q.poll_timeout(Duration::from_secs(5)).unwrap().expect("d");
        assert_eq!((d.id(), d.value().as_str()), ("order-d", "now d"));
        d.ack().unwrap();
    });
}

#[test]
fn a_pool_schedules_and_cancels_in_the_callers_transaction() {
    watchdog(Duration::from_secs(60), || {
        let pg = Postgres::start();
        let backend = PostgresBackend::connect(&pg.params(), "pool-tx").unwrap();
        let ran = Arc::new(Mutex::new(Vec::new()));
        let seen = ran.clone();
        let pool = DurablePool::builder(backend)
            .threads(2)
            .lease(Duration::from_secs(5))
            .max_block(Duration::from_millis(500))
            .handler("close-order", move |order: &u64, _job| {
                seen.lock().unwrap().push(*order);
                Ok(())
            })
            .build()
            .unwrap();
        let mut db = pg.client();
        let delay = Duration::from_millis(200);
        let mut tx = db.transaction().unwrap();
        pool.schedule_in(&mut tx, "close-order", "order-1", &1u64, delay)
            .unwrap();
        pool.schedule_in(&mut tx, "close-order", "order-2", &2u64, delay)
            .unwrap();
        tx.commit().unwrap();
        let mut tx = db.transaction().unwrap();
        pool.schedule_in(&mut tx, "close-order", "order-3", &3u64, delay)
            .unwrap();
        tx.rollback().unwrap();
        let mut tx = db.transaction().unwrap();
        assert!(pool.cancel_in(&mut tx, "order-2").unwrap());
        tx.commit().unwrap();
        assert_eq!(
            pool.schedule_if_absent_in(&mut db, "close-order", "order-1", &9u64, delay)
                .unwrap(),
            Put::Exists
        );
        assert!(
            pool.schedule_in(&mut db, "no-such-kind", "x", &1u64, delay)
                .is_err(),
            "the pool's checks apply"
        );
        thread::sleep(Duration::from_millis(300));
        assert!(pool.wait_idle(Duration::from_secs(10)));
        assert_eq!(*ran.lock().unwrap(), vec![1]);
        pool.shutdown();
        assert!(pool.await_termination(Duration::from_secs(5)));
        // The transactional verbs refuse another backend.
        let mem: DurableQueue<String> = DurableQueue::new(schedpool::durable::MemoryBackend::new());
        assert!(matches!(
            mem.put_in(&mut db, "k", &"v".into(), Duration::ZERO),
            Err(DurableError::Config(_))
        ));
    });
}

// ===== failures =====

fn holder(lease_ms: u64) {
    let q = queue(&env_params(), "fail", lease_ms);
    let d = q
        .poll_timeout(Duration::from_secs(20))
        .unwrap()
        .expect("the item to hold");
    report(
        "CLAIMED",
        &[
            d.token().to_string(),
            d.attempt().to_string(),
            d.deadline_ms().to_string(),
            d.claimed_ms().to_string(),
        ],
    );
    // Mid-handler: the parent kills or stops us here.
    let _ = next_command();
    report("ACK", &[format!("{:?}", d.ack())]);
}

#[test]
fn a_consumer_killed_mid_handler_its_item_comes_back_after_the_lease() {
    if let Some(r) = role() {
        assert_eq!(r, "holder");
        return holder(1_000);
    }
    watchdog(Duration::from_secs(60), || {
        let pg = Postgres::start();
        let q = queue(&pg.params(), "fail", 1_000);
        let put = q
            .put("order-42", &"close".into(), Duration::from_millis(100))
            .unwrap();
        let deadline = put.deadline_ms().unwrap();
        let mut h = Proc::spawn(
            "a_consumer_killed_mid_handler_its_item_comes_back_after_the_lease",
            "holder",
            &pg,
        );
        let f = h.expect("CLAIMED");
        let (token1, claimed1) = (num(&f[0]), num(&f[3]));
        assert_eq!((num(&f[1]), num(&f[2])), (1, deadline));
        assert!(claimed1 >= deadline);
        // Alive and heartbeating: nobody else gets it for two leases.
        assert!(q
            .poll_timeout(Duration::from_millis(2_000))
            .unwrap()
            .is_none());
        h.kill9();
        let d = q
            .poll_timeout(Duration::from_secs(10))
            .unwrap()
            .expect("back");
        assert_eq!(d.id(), "order-42");
        assert_eq!(d.attempt(), 2);
        assert!(d.token() > token1);
        assert_eq!(d.deadline_ms(), deadline, "the original deadline is kept");
        assert!(d.claimed_ms() >= claimed1 + 1_000, "not inside the lease");
        d.ack().unwrap();
    });
}

#[test]
fn a_stalled_holder_is_fenced() {
    if let Some(r) = role() {
        assert_eq!(r, "holder");
        return holder(500);
    }
    watchdog(Duration::from_secs(60), || {
        let pg = Postgres::start();
        let q = queue(&pg.params(), "fail", 500);
        q.put("k", &"v".into(), Duration::ZERO).unwrap();
        let mut h = Proc::spawn("a_stalled_holder_is_fenced", "holder", &pg);
        let f = h.expect("CLAIMED");
        let claimed1 = num(&f[3]);
        signal(h.child.id(), "STOP");
        let d = q
            .poll_timeout(Duration::from_secs(10))
            .unwrap()
            .expect("taken over");
        assert!(
            d.claimed_ms() >= claimed1 + 500,
            "no two holders inside one lease"
        );
        assert_eq!(d.attempt(), 2);
        d.ack().unwrap();
        signal(h.child.id(), "CONT");
        h.say("ack");
        let f = h.expect("ACK");
        assert_eq!(
            f.join(" "),
            "Err(LeaseLost)",
            "the stale holder's ack is refused"
        );
    });
}

#[test]
fn the_server_killed_and_restarted_loses_no_committed_put_and_redelivers_no_ack() {
    watchdog(Duration::from_secs(120), || {
        let mut pg = Postgres::start();
        let q = queue(&pg.params(), "crash", 1_000);
        let stop = Arc::new(AtomicBool::new(false));
        let put_ok = Arc::new(Mutex::new(BTreeSet::new()));
        let acked = Arc::new(Mutex::new(BTreeSet::new()));
        let ack_unsure = Arc::new(Mutex::new(BTreeSet::new()));
        let producer = {
            let (q, stop, put_ok) = (q.clone(), stop.clone(), put_ok.clone());
            thread::spawn(move || {
                let mut n = 0u32;
                while !stop.load(Ordering::SeqCst) {
                    let id = format!("p-{n:06}");
                    if q.put(&id, &id, Duration::ZERO).is_ok() {
                        put_ok.lock().unwrap().insert(id);
                    } else {
                        thread::sleep(Duration::from_millis(20));
                    }
                    n += 1;
                }
            })
        };
        let consumer = {
            let (q, stop, acked, unsure) =
                (q.clone(), stop.clone(), acked.clone(), ack_unsure.clone());
            thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    if let Ok(Some(d)) = q.poll_timeout(Duration::from_millis(200)) {
                        let id = d.id().to_string();
                        assert!(d.claimed_ms() >= d.deadline_ms());
                        match d.ack() {
                            // Ids are unique: an id acked twice was
                            // redelivered after an ack that landed.
                            Ok(()) => assert!(
                                acked.lock().unwrap().insert(id.clone()),
                                "{id} delivered again after its ack landed"
                            ),
                            Err(_) => {
                                unsure.lock().unwrap().insert(id);
                            }
                        }
                    }
                }
            })
        };
        thread::sleep(Duration::from_millis(1_500));
        pg.kill9();
        thread::sleep(Duration::from_millis(500));
        pg.restart();
        thread::sleep(Duration::from_millis(1_500));
        stop.store(true, Ordering::SeqCst);
        producer.join().unwrap();
        consumer.join().unwrap();
        // Drain what is left (a lost claim reply comes back after its lease).
        let fresh = queue(&pg.params(), "crash", 1_000);
        let mut drained = BTreeSet::new();
        let until = Instant::now() + Duration::from_secs(20);
        while Instant::now() < until {
            match fresh.poll_timeout(Duration::from_millis(300)) {
                Ok(Some(d)) => {
                    drained.insert(d.id().to_string());
                    d.ack().unwrap();
                }
                _ if fresh.counts().map(|c| c.pending + c.in_flight).unwrap_or(1) == 0 => break,
                _ => {}
            }
        }
        let (put_ok, acked, unsure) = (
            put_ok.lock().unwrap(),
            acked.lock().unwrap(),
            ack_unsure.lock().unwrap(),
        );
        assert!(
            put_ok.len() > 50,
            "the producer made progress: {}",
            put_ok.len()
        );
        assert!(!acked.is_empty());
        let redelivered: Vec<_> = drained.intersection(&acked).collect();
        assert!(
            redelivered.is_empty(),
            "acked items redelivered: {redelivered:?}"
        );
        let lost: Vec<_> = put_ok
            .iter()
            .filter(|id| !acked.contains(*id) && !drained.contains(*id) && !unsure.contains(*id))
            .collect();
        assert!(lost.is_empty(), "committed puts lost: {lost:?}");
        eprintln!(
            "server kill -9: {} puts ok, {} acked, {} unsure acks, {} drained after restart",
            put_ok.len(),
            acked.len(),
            unsure.len(),
            drained.len()
        );
    });
}

// ===== many items under repeated consumer kills =====

/// Items of the kill test: the 100,000.
const MANY: usize = 100_000;

fn many_consumer() {
    const THREADS: usize = 4;
    let backend = PostgresBackend::connect(&env_params(), "many").unwrap();
    // A ledger connection a worker, so the ledger writes run side by side.
    let ledgers: Vec<postgres::Client> = (0..THREADS)
        .map(|_| postgres::Client::connect(&env_params(), postgres::NoTls).unwrap())
        .collect();
    let ledgers = Arc::new(Mutex::new(ledgers));
    let pool = DurablePool::builder(backend)
        .threads(THREADS)
        .lease(Duration::from_millis(1_000))
        .max_block(Duration::from_millis(500))
        .max_attempts(0)
        .handler("job", move |_: &(), job| {
            // The ledger before the ack (F14).
            let mut ledger = ledgers.lock().unwrap().pop().expect("one a worker");
            let written = ledger.execute("INSERT INTO ledger (id) VALUES ($1)", &[&job.id]);
            ledgers.lock().unwrap().push(ledger);
            written?;
            Ok(())
        })
        .build()
        .unwrap();
    report("READY", &[]);
    let _ = next_command();
    eprintln!("consumer {}: {:?}", std::process::id(), pool.stats());
    drop(pool);
}

#[test]
fn many_items_under_repeated_consumer_kills_none_lost_none_acked_twice() {
    if let Some(r) = role() {
        assert_eq!(r, "many");
        return many_consumer();
    }
    watchdog(Duration::from_secs(240), || {
        let started = Instant::now();
        let pg = Postgres::start();
        let backend = PostgresBackend::connect(&pg.params(), "many").unwrap();
        let mut db = pg.client();
        // Successful acks, counted by the server: every move from in
        // flight (1) to acked (3).
        db.batch_execute(
            "CREATE TABLE ledger (id text NOT NULL);
             CREATE TABLE acks (id text NOT NULL);
             CREATE FUNCTION count_ack() RETURNS trigger LANGUAGE plpgsql AS
               $$ BEGIN INSERT INTO acks VALUES (NEW.id); RETURN NEW; END $$;
             CREATE TRIGGER count_ack AFTER UPDATE ON schedpool.items FOR EACH ROW
               WHEN (OLD.state = 1 AND NEW.state = 3) EXECUTE FUNCTION count_ack();",
        )
        .unwrap();
        drop(backend);
        // The items, due over the first 3 s, written as the put function
        // writes a new item (the put path has its own tests; through it,
        // 100,000 puts took 21 s of this test on the loaded 2-core machine,
        // this takes a few). The envelope of a `job` run on `()`: format 1,
        // the kind's length and bytes, no repeat, no payload
        // (docs/durable.md, "The stored encoding").
        let envelope: &[u8] = &[1, 3, b'j', b'o', b'b', 0];
        let put = db
            .execute(
                "INSERT INTO schedpool.items (queue, id, state, score, deadline, due, token, envelope)
                 SELECT 'many', 'j-' || lpad(g::text, 6, '0'), 0, n.ms + g % 3000,
                        n.ms + g % 3000, n.ms + g % 3000, nextval('schedpool.tokens'), $1
                 FROM generate_series(0, $2::bigint - 1) g, (SELECT schedpool.now_ms() AS ms) n",
                &[&envelope, &(MANY as i64)],
            )
            .unwrap();
        assert_eq!(put, MANY as u64);
        db.batch_execute("ANALYZE schedpool.items").unwrap();
        eprintln!("{MANY} items put in {:?}", started.elapsed());
        let test = "many_items_under_repeated_consumer_kills_none_lost_none_acked_twice";
        let mut procs: Vec<Proc> = (0..3).map(|_| Proc::spawn(test, "many", &pg)).collect();
        for p in &mut procs {
            p.expect("READY");
        }
        let mut kills = 0;
        let mut next = 0;
        let left = |db: &mut postgres::Client| -> i64 {
            db.query_one(
                "SELECT count(*) FROM schedpool.items WHERE queue = 'many' AND state < 3",
                &[],
            )
            .unwrap()
            .get(0)
        };
        while left(&mut db) > 0 {
            assert!(started.elapsed() < Duration::from_secs(200), "too slow");
            thread::sleep(Duration::from_millis(1_500));
            if kills < 6 {
                procs[next].kill9();
                procs[next] = Proc::spawn(test, "many", &pg);
                procs[next].expect("READY");
                next = (next + 1) % procs.len();
                kills += 1;
            }
        }
        for p in &mut procs {
            p.say("stop");
        }
        let runs: HashMap<String, i64> = db
            .query("SELECT id, count(*) FROM ledger GROUP BY id", &[])
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
        let acks: HashMap<String, i64> = db
            .query("SELECT id, count(*) FROM acks GROUP BY id", &[])
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
        let mut twice = 0;
        for i in 0..MANY {
            let id = format!("j-{i:06}");
            assert!(runs.get(&id).copied().unwrap_or(0) >= 1, "{id} never ran");
            let a = acks.get(&id).copied().unwrap_or(0);
            assert_eq!(a, 1, "{id} acked {a} times");
            if runs[&id] > 1 {
                twice += 1;
            }
        }
        eprintln!(
            "{MANY} items, {kills} consumer kills: all ran, each acked once, {twice} ran twice, {:?}",
            started.elapsed()
        );
    });
}

// ===== schema, privileges, errors, untrusted bytes =====

#[test]
fn schema_migration_is_versioned_and_refuses_a_newer_one() {
    watchdog(Duration::from_secs(60), || {
        let pg = Postgres::start();
        let o = |s: &str| PostgresOptions::default().schema(s);
        let b = PostgresBackend::connect_with(&pg.params(), "q", o("shop_jobs")).unwrap();
        b.put(
            "x",
            &[1, 0, 0],
            When::After(Duration::ZERO),
            PutMode::Replace,
        )
        .unwrap();
        // A second connect finds the schema at its version and leaves it.
        PostgresBackend::connect_with(&pg.params(), "q", o("shop_jobs")).unwrap();
        let mut db = pg.client();
        db.batch_execute("UPDATE shop_jobs.meta SET value = '3' WHERE key = 'version'")
            .unwrap();
        let err = PostgresBackend::connect_with(&pg.params(), "q", o("shop_jobs")).unwrap_err();
        assert!(matches!(err, DurableError::Format(_)), "{err:?}");
        // migrate(false) on a missing schema says what to do.
        let err = PostgresBackend::connect_with(&pg.params(), "q", o("by_hand").migrate(false))
            .unwrap_err();
        assert!(
            matches!(&err, DurableError::Config(m) if m.contains("migration_sql")),
            "{err:?}"
        );
        // The documented DDL, applied by hand, is what connect accepts.
        db.batch_execute(&PostgresBackend::migration_sql("by_hand"))
            .unwrap();
        let b =
            PostgresBackend::connect_with(&pg.params(), "q", o("by_hand").migrate(false)).unwrap();
        assert_eq!(b.counts().unwrap(), Default::default());
        // A name too long for the NOTIFY channel is refused up front.
        let long = "s".repeat(51);
        assert!(matches!(
            PostgresBackend::connect_with(&pg.params(), "q", o(&long)),
            Err(DurableError::Config(_))
        ));
    });
}

/// Server settings under which a put or an ack that returned `Ok` can be
/// lost are named at connect (logged and in `warnings()`), or refused with
/// `strict`.
#[test]
fn settings_that_can_lose_acknowledged_writes_are_warned_or_refused() {
    watchdog(Duration::from_secs(90), || {
        // The test servers run with fsync and full_page_writes off (process
        // kills do not need them).
        let pg = Postgres::start();
        let b = PostgresBackend::connect(&pg.params(), "q").unwrap();
        let warnings = b.warnings().join("\n");
        assert!(
            warnings.contains("fsync is off") && warnings.contains("full_page_writes is off"),
            "{warnings}"
        );
        assert!(!warnings.contains("synchronous_commit"), "{warnings}");
        // Asynchronous commit for the backend's sessions is named too.
        let lax = format!("{} options='-c synchronous_commit=off'", pg.params());
        let b = PostgresBackend::connect(&lax, "q").unwrap();
        assert!(
            b.warnings()
                .iter()
                .any(|w| w.starts_with("synchronous_commit is off")),
            "{:?}",
            b.warnings()
        );
        let strict = || PostgresOptions::default().strict(true);
        let err = PostgresBackend::connect_with(&pg.params(), "q", strict().schema("refused"))
            .unwrap_err();
        assert!(
            matches!(&err, DurableError::Config(m) if m.contains("fsync is off")),
            "{err:?}"
        );
        // Refused before the migration: it wrote nothing.
        let schemas: i64 = pg
            .client()
            .query_one(
                "SELECT count(*) FROM pg_namespace WHERE nspname = 'refused'",
                &[],
            )
            .unwrap()
            .get(0);
        assert_eq!(schemas, 0, "a refused strict connect made its schema");
        // A server that keeps them on passes strict, with nothing to say.
        let safe = Postgres::start_with(&["fsync=on", "full_page_writes=on"]);
        let b = PostgresBackend::connect_with(&safe.params(), "q", strict()).unwrap();
        assert!(b.warnings().is_empty(), "{:?}", b.warnings());
        let b = PostgresBackend::connect(&safe.params(), "q").unwrap();
        assert!(b.warnings().is_empty(), "{:?}", b.warnings());
    });
}

#[test]
fn a_least_privileged_scram_role_with_rights_on_its_own_schema_only_works() {
    watchdog(Duration::from_secs(60), || {
        let pg = Postgres::start();
        let mut db = pg.client();
        db.batch_execute(
            "SET password_encryption = 'scram-sha-256';
             CREATE ROLE app LOGIN PASSWORD 'app-secret';
             REVOKE ALL ON DATABASE postgres FROM PUBLIC;
             GRANT CONNECT ON DATABASE postgres TO app;
             REVOKE CREATE ON SCHEMA public FROM PUBLIC;
             CREATE SCHEMA app_jobs AUTHORIZATION app;",
        )
        .unwrap();
        // Password authentication (SCRAM) for everyone but the superuser.
        let hba = pg.dir.join("data/pg_hba.conf");
        std::fs::write(
            &hba,
            "host all postgres 127.0.0.1/32 trust\nhost all all 127.0.0.1/32 scram-sha-256\n",
        )
        .unwrap();
        db.batch_execute("SELECT pg_reload_conf()").unwrap();
        thread::sleep(Duration::from_millis(200));
        let params = |pw: &str| {
            format!(
                "host=127.0.0.1 port={} user=app password={pw} dbname=postgres",
                pg.port
            )
        };
        let o = PostgresOptions::default().schema("app_jobs");
        let err = PostgresBackend::connect_with(&params("wrong"), "q", o.clone()).unwrap_err();
        assert!(
            matches!(err, DurableError::Config(_)),
            "bad password: {err:?}"
        );
        let b = PostgresBackend::connect_with(&params("app-secret"), "q", o.clone()).unwrap();
        let q: DurableQueue<String> = DurableQueue::with_options(b, opts(5_000)).unwrap();
        q.put("k", &"v".into(), Duration::ZERO).unwrap();
        let d = q
            .poll_timeout(Duration::from_secs(5))
            .unwrap()
            .expect("due");
        d.ack().unwrap();
        // It cannot make a schema elsewhere, and says so.
        let err = PostgresBackend::connect_with(
            &params("app-secret"),
            "q",
            PostgresOptions::default().schema("elsewhere"),
        )
        .unwrap_err();
        assert!(matches!(err, DurableError::Config(_)), "{err:?}");
    });
}

#[test]
fn errors_map_to_the_durable_kinds_and_never_panic() {
    watchdog(Duration::from_secs(90), || {
        let mut pg = Postgres::start();
        // The default op_timeout (2 s): a shorter one would fail the plain
        // puts here whenever a loaded machine delays one.
        let b =
            PostgresBackend::connect_with(&pg.params(), "q", PostgresOptions::default()).unwrap();
        let env = [1u8, 0, 0];
        let put =
            |b: &PostgresBackend| b.put("k", &env, When::After(Duration::ZERO), PutMode::Replace);
        put(&b).unwrap();
        let mut db = pg.client();
        // A server that is read-only (as a standby is, after a failover).
        // A reload reaches the backend's sessions when each gets the
        // server's signal, later on a loaded machine: poll for it.
        db.batch_execute("ALTER SYSTEM SET default_transaction_read_only = on")
            .unwrap();
        db.batch_execute("SELECT pg_reload_conf()").unwrap();
        let mut last = None;
        let refused = until(|| {
            let r = put(&b);
            let refused = matches!(r, Err(DurableError::Refused(_)));
            last = Some(r);
            refused.then_some(())
        });
        assert!(refused.is_some(), "read-only: {last:?}");
        db.batch_execute("ALTER SYSTEM RESET default_transaction_read_only")
            .unwrap();
        db.batch_execute("SELECT pg_reload_conf()").unwrap();
        until(|| put(&b).ok()).expect("writable again after the reload");
        // A serialization failure in the caller's transaction: a REPEATABLE
        // READ transaction whose snapshot predates another session's update
        // of the same row cannot update it (SQLSTATE 40001). Retrying is the
        // caller's (its transaction is aborted): Unavailable, the source kept.
        let mut caller = pg.client();
        let mut tx = caller
            .build_transaction()
            .isolation_level(postgres::IsolationLevel::RepeatableRead)
            .start()
            .unwrap();
        tx.batch_execute("SELECT 1").unwrap(); // takes the snapshot
        put(&b).unwrap(); // another session replaces "k"
        let err = b
            .put_in(
                &mut tx,
                "k",
                &env,
                When::After(Duration::ZERO),
                PutMode::Replace,
            )
            .unwrap_err();
        assert!(err.is_unavailable(), "serialization failure: {err:?}");
        let source = std::error::Error::source(&err).expect("the postgres error is kept");
        let code = source
            .downcast_ref::<postgres::Error>()
            .and_then(postgres::Error::code)
            .cloned();
        assert_eq!(
            code,
            Some(postgres::error::SqlState::T_R_SERIALIZATION_FAILURE),
            "{err:?}"
        );
        drop(tx);
        // A row lock held by a caller's open transaction: the backend's
        // statement gives up at op_timeout (lock_timeout) as Unavailable,
        // instead of waiting for as long as that transaction stays open.
        let mut holder = pg.client();
        let mut tx = holder.transaction().unwrap();
        tx.batch_execute("SELECT 1 FROM schedpool.items WHERE id = 'k' FOR UPDATE")
            .unwrap();
        // op_timeout is 2 s; without lock_timeout the cancel would wait
        // for as long as the transaction stays open (20 s is the bound
        // left to a loaded machine, and still well short of forever).
        let t = Instant::now();
        let err = b.cancel("k").unwrap_err();
        assert!(err.is_unavailable(), "row lock held: {err:?}");
        assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
        drop(tx);
        put(&b).unwrap();
        // A missing table.
        db.batch_execute("DROP TABLE schedpool.items CASCADE")
            .unwrap();
        let err = b.counts().unwrap_err();
        assert!(
            matches!(err, DurableError::Config(_)),
            "missing table: {err:?}"
        );
        // A server that is gone: Unavailable within op_timeout (2 s), not
        // a hang.
        pg.kill9();
        let t = Instant::now();
        let err = put(&b).unwrap_err();
        assert!(err.is_unavailable(), "down: {err:?}");
        assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
        assert!(b
            .claim(Duration::from_secs(1), 1, 0)
            .unwrap_err()
            .is_unavailable());
    });
}

#[test]
fn corrupt_truncated_or_foreign_bytes_are_dead_lettered_and_block_nothing() {
    watchdog(Duration::from_secs(60), || {
        let pg = Postgres::start();
        let q = queue(&pg.params(), "bytes", 30_000);
        let raw = PostgresBackend::connect(&pg.params(), "bytes").unwrap();
        let now = When::After(Duration::ZERO);
        raw.put("a-foreign", &[9, 9, 9], now, PutMode::Replace)
            .unwrap();
        raw.put("b-truncated", &[1, 200], now, PutMode::Replace)
            .unwrap();
        raw.put("c-empty", &[], now, PutMode::Replace).unwrap();
        q.put("d-good", &"fine".into(), Duration::ZERO).unwrap();
        let mut db = pg.client();
        // Bytes changed behind the backend's back: not UTF-8 for a String.
        q.put("e-bad-utf8", &"x".into(), Duration::ZERO).unwrap();
        db.execute(
            "UPDATE schedpool.items SET envelope = '\\x010000ff'::bytea WHERE id = 'e-bad-utf8'",
            &[],
        )
        .unwrap();
        let d = q
            .poll_timeout(Duration::from_secs(5))
            .unwrap()
            .expect("the good one");
        assert_eq!(d.id(), "d-good");
        d.ack().unwrap();
        assert!(q
            .poll_timeout(Duration::from_millis(300))
            .unwrap()
            .is_none());
        let dead: Vec<String> = q
            .dead_letters(10)
            .unwrap()
            .into_iter()
            .map(|d| {
                assert!(d.value.is_err());
                d.id
            })
            .collect();
        assert_eq!(dead.len(), 4, "{dead:?}");
    });
}

/// `len` bytes of pseudo-random letters and digits: text PostgreSQL cannot
/// compress, as a hash or a token in an id would be.
fn random_id(len: usize, mut seed: u64) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    (0..len)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            ALPHABET[(seed % ALPHABET.len() as u64) as usize] as char
        })
        .collect()
}

/// PostgreSQL cannot index an id much over 2.7 KB (less when it does not
/// compress): the server refuses such a put with "index row size ...
/// exceeds btree version 4 maximum 2704". The backend refuses an id over
/// 1,024 bytes (and a queue name over 1,024 bytes) itself, before sending,
/// as `Config`, the kind of every bad argument; with both at their limit a
/// put works.
#[test]
fn ids_over_1024_bytes_are_refused_before_they_reach_the_server() {
    watchdog(Duration::from_secs(60), || {
        let pg = Postgres::start();
        let longest_queue = random_id(1024, 7);
        let backend = PostgresBackend::connect(&pg.params(), &longest_queue).unwrap();
        let q: DurableQueue<String> = DurableQueue::with_options(backend, opts(30_000)).unwrap();
        let longest = random_id(1024, 11);
        q.put(&longest, &"v".into(), Duration::ZERO).unwrap();
        let d = q
            .poll_timeout(Duration::from_secs(5))
            .unwrap()
            .expect("the item");
        assert_eq!(d.id(), longest);
        d.ack().unwrap();

        let over = random_id(1025, 13);
        let refused = |r: Result<Put, DurableError>| match r {
            Err(DurableError::Config(m)) => assert!(m.contains("at most 1024 bytes"), "{m}"),
            other => panic!("{other:?}"),
        };
        refused(q.put(&over, &"v".into(), Duration::ZERO));
        refused(q.put_if_absent(&over, &"v".into(), Duration::ZERO));
        let raw = PostgresBackend::connect(&pg.params(), &longest_queue).unwrap();
        let now = When::After(Duration::ZERO);
        refused(raw.put(&over, b"v", now, PutMode::Replace));
        let mut db = pg.client();
        let mut tx = db.transaction().unwrap();
        refused(q.put_in(&mut tx, &over, &"v".into(), Duration::ZERO));
        refused(raw.put_in(&mut tx, &over, b"v", now, PutMode::Replace));
        // The transaction was not touched: it still commits.
        tx.commit().unwrap();
        let pool = DurablePool::producer(raw).unwrap();
        refused(pool.schedule("job", &over, &1u64, Duration::ZERO));
        let mut tx = db.transaction().unwrap();
        refused(pool.schedule_in(&mut tx, "job", &over, &1u64, Duration::ZERO));
        tx.commit().unwrap();
        assert_eq!(q.counts().unwrap().pending, 0, "nothing was stored");
        // A lookup of a long id finds nothing, and is no error.
        let far_over = random_id(3000, 17);
        assert_eq!(q.remove(&far_over).unwrap(), Removed::NotFound);

        // Why: the server itself refuses such an id (a program limit,
        // SQLSTATE 54000) when one gets past the check.
        let err = db
            .query_one(
                "SELECT * FROM schedpool.put($1, $2, $3, 0, NULL, false)",
                &[&"q", &far_over, &b"v".to_vec()],
            )
            .unwrap_err();
        assert_eq!(
            err.code(),
            Some(&postgres::error::SqlState::PROGRAM_LIMIT_EXCEEDED),
            "{err:?}"
        );

        // A queue name over the limit is refused at connect.
        let err =
            PostgresBackend::connect(&pg.params(), &random_id(1025, 19)).expect_err("refused");
        assert!(
            matches!(&err, DurableError::Config(m) if m.contains("1 to 1024 bytes")),
            "{err:?}"
        );
    });
}

// ===== durable chains and wake-ups =====

#[test]
fn a_fixed_rate_chain_is_rearmed_in_the_acks_transaction() {
    watchdog(Duration::from_secs(60), || {
        let pg = Postgres::start();
        let backend = PostgresBackend::connect(&pg.params(), "chain").unwrap();
        let occ = Arc::new(Mutex::new(Vec::new()));
        let seen = occ.clone();
        let pool = DurablePool::builder(backend)
            .threads(2)
            .lease(Duration::from_secs(5))
            .max_block(Duration::from_millis(500))
            .handler("tick", move |_: &(), job| {
                assert!(job.claimed_ms >= job.deadline_ms, "early");
                seen.lock().unwrap().push(job.deadline_ms);
                Ok(())
            })
            .build()
            .unwrap();
        let put = pool
            .schedule_at_fixed_rate(
                "tick",
                "tick",
                &(),
                Duration::ZERO,
                Duration::from_millis(100),
            )
            .unwrap();
        let first = put.deadline_ms().unwrap();
        assert_eq!(
            pool.schedule_at_fixed_rate(
                "tick",
                "tick",
                &(),
                Duration::ZERO,
                Duration::from_millis(100)
            )
            .unwrap(),
            Put::Exists
        );
        // Eight runs: 0.7 s when idle. A loaded machine runs them late and
        // the chain catches up on its grid, which the check below holds
        // exactly; how many fit in a fixed time is not this test's matter.
        let limit = Instant::now() + Duration::from_secs(30);
        while occ.lock().unwrap().len() < 8 {
            assert!(
                Instant::now() < limit,
                "{} runs in 30 s",
                occ.lock().unwrap().len()
            );
            thread::sleep(Duration::from_millis(20));
        }
        pool.cancel("tick").unwrap();
        pool.shutdown();
        assert!(pool.await_termination(Duration::from_secs(10)));
        let occ = occ.lock().unwrap();
        assert!(occ.len() >= 8, "{} runs", occ.len());
        for (n, at) in occ.iter().enumerate() {
            assert_eq!(
                *at,
                first + 100 * n as u64,
                "occurrence {n}: none missing, none doubled"
            );
        }
    });
}

/// A put that finds a due item ahead of it is not the head, so the head
/// check alone does not notify; if a claim leases that item in a snapshot
/// taken before the put commits, the claimer then sleeps on what it saw.
/// The caller's open transaction holds the put's commit back to make that
/// order certain: the consumer must still wake for it at the commit, not
/// `max_block` (5 s) later.
#[test]
fn a_put_behind_a_due_item_wakes_a_consumer_whose_claim_missed_it() {
    watchdog(Duration::from_secs(60), || {
        let pg = Postgres::start();
        let b = PostgresBackend::connect(&pg.params(), "race").unwrap();
        // A lost wake-up would cost the whole max_block, 40 s: far past
        // the bound below, which leaves a loaded machine seconds.
        let q: DurableQueue<String> = DurableQueue::with_options(
            b,
            QueueOptions {
                lease: Duration::from_secs(30),
                max_block: Duration::from_secs(40),
                max_attempts: 0,
            },
        )
        .unwrap();
        q.put("a-first", &"a".into(), Duration::ZERO).unwrap();
        let mut db = pg.client();
        let mut tx = db.transaction().unwrap();
        q.put_in(&mut tx, "b-second", &"b".into(), Duration::ZERO)
            .unwrap();
        // The claim's snapshot has a-first and not b-second.
        let first = q.poll_timeout(Duration::from_secs(5)).unwrap().expect("a");
        assert_eq!(first.id(), "a-first");
        let consumer = q.clone();
        let taker = thread::spawn(move || {
            let d = consumer.take().unwrap().expect("b");
            (Instant::now(), d)
        });
        // Let it claim (nothing visible) and go to sleep.
        thread::sleep(Duration::from_millis(500));
        let committed = Instant::now();
        tx.commit().unwrap();
        let (woke, second) = taker.join().unwrap();
        assert_eq!(second.id(), "b-second");
        let after = woke - committed;
        assert!(
            after < Duration::from_secs(10),
            "the commit's wake-up was lost: taken {after:?} after it"
        );
        first.ack().unwrap();
        second.ack().unwrap();
    });
}

#[test]
fn a_new_earlier_item_wakes_a_sleeping_consumer_within_milliseconds() {
    watchdog(Duration::from_secs(60), || {
        let pg = Postgres::start();
        // Counts the consumer's claims (tests/durable_support).
        let b =
            durable_support::Probed::new(PostgresBackend::connect(&pg.params(), "wake").unwrap());
        let probe = b.probe.clone();
        // A lost wake-up would cost the whole max_block, 40 s; the bound on
        // lateness below leaves a loaded machine seconds (the typical
        // wake-up, printed, takes milliseconds).
        let q: DurableQueue<String> = DurableQueue::with_options(
            b,
            QueueOptions {
                lease: Duration::from_secs(30),
                max_block: Duration::from_secs(40),
                max_attempts: 0,
            },
        )
        .unwrap();
        q.put("far", &"far".into(), Duration::from_secs(3600))
            .unwrap();
        // Idle, nothing due for an hour: a second of waiting is a claim or
        // two (the put above notified), not a polling loop.
        let before = probe.claims();
        assert!(q.poll_timeout(Duration::from_secs(1)).unwrap().is_none());
        let idle = probe.claims() - before;
        assert!(idle <= 3, "{idle} claims in 1 s idle: hot polling");
        let producer = queue(&pg.params(), "wake", 30_000);
        let claims = Arc::new(AtomicUsize::new(0));
        let mut late = Vec::new();
        for i in 0..20 {
            let consumer = q.clone();
            let c = claims.clone();
            let taker = thread::spawn(move || {
                let d = consumer.take().unwrap().unwrap();
                c.fetch_add(1, Ordering::SeqCst);
                (d.claimed_ms() - d.deadline_ms(), d)
            });
            // Let it go to sleep on the far head.
            thread::sleep(Duration::from_millis(150));
            producer
                .put(
                    &format!("near-{i}"),
                    &"near".into(),
                    Duration::from_millis(50),
                )
                .unwrap();
            let (lateness, d) = taker.join().unwrap();
            d.ack().unwrap();
            late.push(lateness);
        }
        late.sort();
        eprintln!("wake-up lateness ms (sorted): {late:?}");
        let worst = late[19];
        assert!(
            worst < 5_000,
            "a new earlier item waited {worst} ms: its wake-up was lost"
        );
    });
}
