//! SQLite, PostgreSQL and Redis in one run, for the throughput table of
//! `docs/durable.md`: with `--pending N` far-future items preloaded (default
//! 1,000,000), on each backend in turn:
//!
//! 1. `put` (a new id, due in 1 h) from one thread;
//! 2. `put` in the caller's transaction, one commit each (SQLite and
//!    PostgreSQL);
//! 3. cancel (`DurablePool::cancel`) of a preloaded id;
//! 4. claim + run + ack of `--jobs` no-op jobs (default `--ops`) by a
//!    `DurablePool` with its default settings (threads = cores, default
//!    lease): the items are scheduled 1 h out, then made due at once by the
//!    store, and the pool's `stats().succeeded` is timed from then until
//!    all have run and been acked;
//! 5. wake-up latency of a new item due now, from its deadline (the
//!    store's clock) to its handler's start (this machine's clock, the same
//!    clock on loopback), `--wakes` samples each: first on an idle pool,
//!    then on a busy one, while two producer threads put no-op jobs due now
//!    at half the rate step 4 measured (the rate reached is printed). The
//!    table gives their p50 and p99 over all rounds' samples together, and
//!    each round's p99.
//!
//! Each store runs on loopback in a temp dir, started by this example
//! (redis-server with AOF everysec; PostgreSQL with `fsync=off`, as the
//! tests run it: its numbers are an upper bound for a durable setup;
//! SQLite in a file with the backend's defaults, `synchronous=FULL`, so
//! every commit is synced to the disk: `examples/bench_parts/sqlite.rs`).
//! `--rounds R` repeats the whole run R times, alternating which backend
//! goes first, and prints each round and the medians.
//!
//! Run: `cargo run --release --features redis,postgres,sqlite --example durable_bench_pool`
//! (`-- --pending N --ops M --jobs J --wakes K --rounds R`; `--only sqlite`,
//! `--only redis` or `--only postgres` runs one backend, without the table).

#[cfg(not(all(feature = "redis", feature = "postgres", feature = "sqlite")))]
fn main() {
    eprintln!("durable_bench_pool needs the redis, postgres and sqlite features");
    std::process::exit(2);
}

#[cfg(all(feature = "redis", feature = "postgres", feature = "sqlite"))]
mod redis_server;

#[cfg(all(feature = "redis", feature = "postgres", feature = "sqlite"))]
#[path = "../tests/postgres_support/mod.rs"]
mod postgres_support;

#[cfg(all(feature = "redis", feature = "postgres", feature = "sqlite"))]
#[path = "bench_parts/sqlite.rs"]
mod sqlite_part;

#[cfg(all(feature = "redis", feature = "postgres", feature = "sqlite"))]
fn main() {
    bench::main();
}

#[cfg(all(feature = "redis", feature = "postgres", feature = "sqlite"))]
mod bench {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    use schedpool::durable::{DurableBackend, DurablePool, PostgresBackend, RedisBackend};

    use super::postgres_support::Postgres;
    use super::redis_server::RedisServer;

    pub const FAR: Duration = Duration::from_secs(3600);

    fn arg(name: &str, default: usize) -> usize {
        let args: Vec<String> = std::env::args().collect();
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    }

    pub fn rate(n: usize, d: Duration) -> f64 {
        n as f64 / d.as_secs_f64()
    }

    pub struct Results {
        /// Redis only: the server's CPU µs a job while the jobs ran.
        pub server_us: Option<f64>,
        pub put: f64,
        pub put_tx: Option<f64>,
        pub cancel: f64,
        pub run: f64,
        pub idle: (Duration, Duration),
        pub busy: (Duration, Duration),
        /// Every wake-up sample, idle then busy.
        pub samples: (Vec<Duration>, Vec<Duration>),
        pub busy_rate: f64,
    }

    /// The pool's part of a run.
    pub struct PoolResults {
        pub cancel: f64,
        pub run: f64,
        pub idle: (Duration, Duration),
        pub busy: (Duration, Duration),
        /// Every wake-up sample, idle then busy.
        pub samples: (Vec<Duration>, Vec<Duration>),
        pub busy_rate: f64,
    }

    /// This machine's clock in ms since the Unix epoch.
    pub fn now_ms() -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64
    }

    /// p50 and p99 of `samples`.
    fn p50_p99(samples: &mut [Duration]) -> (Duration, Duration) {
        samples.sort();
        let p = |q: f64| {
            let n = samples.len();
            samples[((n as f64 * q).ceil() as usize).clamp(1, n) - 1]
        };
        (p(0.5), p(0.99))
    }

    /// `wakes` probes, one every 100 ms: a new item due now, and the time
    /// from its deadline to its handler's start.
    fn probes(pool: &DurablePool, late: &Mutex<Vec<Duration>>, tag: &str, wakes: usize) {
        late.lock().unwrap().clear();
        for i in 0..wakes {
            std::thread::sleep(Duration::from_millis(100));
            pool.schedule("noop", &format!("{tag}-{i}"), &u64::MAX, Duration::ZERO)
                .unwrap();
        }
        let until = Instant::now() + Duration::from_secs(30);
        while late.lock().unwrap().len() < wakes && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The pool part, the same on both stores; `make_due` makes the ids
    /// `run-0..jobs` due now in the store, and `after_run` is called when
    /// they have all run.
    pub fn pool_part(
        backend: impl DurableBackend,
        jobs: usize,
        wakes: usize,
        make_due: &dyn Fn(usize),
        after_run: &dyn Fn(),
    ) -> PoolResults {
        let late = Arc::new(Mutex::new(Vec::new()));
        let seen = late.clone();
        let pool = DurablePool::builder(backend)
            .handler("noop", move |n: &u64, job| {
                if *n == u64::MAX {
                    let started = now_ms().saturating_sub(job.deadline_ms);
                    seen.lock().unwrap().push(Duration::from_millis(started));
                }
                Ok(())
            })
            .build()
            .unwrap();
        // The first cancels: preloaded ids.
        let t = Instant::now();
        for i in 0..jobs.min(2_000) {
            assert!(pool.cancel(&format!("pre-{i}")).unwrap());
        }
        let cancel = rate(jobs.min(2_000), t.elapsed());
        for i in 0..jobs {
            pool.schedule("noop", &format!("run-{i}"), &(i as u64), FAR)
                .unwrap();
        }
        let before = pool.stats().succeeded;
        make_due(jobs);
        // Timed from when all are due (a store may start on them while
        // make_due runs: those are not counted).
        let t = Instant::now();
        let done_at_start = pool.stats().succeeded - before;
        while pool.stats().succeeded - before < jobs as u64 {
            std::thread::sleep(Duration::from_millis(2));
        }
        let run = rate(jobs - done_at_start as usize, t.elapsed());
        after_run();
        probes(&pool, &late, "idle", wakes);
        let idle_samples = late.lock().unwrap().clone();
        let idle = p50_p99(&mut late.lock().unwrap());
        // Busy: two producers at half the rate measured above, in all.
        let stop = AtomicBool::new(false);
        let put = AtomicUsize::new(0);
        let per_thread = (run / 4.0).max(1.0);
        let t = Instant::now();
        std::thread::scope(|s| {
            for p in 0..2 {
                let (pool, stop, put) = (&pool, &stop, &put);
                s.spawn(move || {
                    let start = Instant::now();
                    let mut n = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        let due = start + Duration::from_secs_f64(n as f64 / per_thread);
                        if let Some(wait) = due.checked_duration_since(Instant::now()) {
                            std::thread::sleep(wait);
                        }
                        pool.schedule("noop", &format!("busy-{p}-{n}"), &n, Duration::ZERO)
                            .unwrap();
                        put.fetch_add(1, Ordering::Relaxed);
                        n += 1;
                    }
                });
            }
            std::thread::sleep(Duration::from_millis(500));
            probes(&pool, &late, "busy", wakes);
            stop.store(true, Ordering::Relaxed);
        });
        let busy_rate = rate(put.load(Ordering::Relaxed), t.elapsed());
        let busy_samples = late.lock().unwrap().clone();
        let busy = p50_p99(&mut late.lock().unwrap());
        if std::env::var_os("BENCH_SAMPLES").is_some() {
            eprintln!("busy wake-ups, sorted: {:?}", late.lock().unwrap());
        }
        pool.shutdown();
        PoolResults {
            cancel,
            run,
            idle,
            busy,
            samples: (idle_samples, busy_samples),
            busy_rate,
        }
    }

    pub fn envelope_of_u64(kind: &str, n: u64) -> Vec<u8> {
        // A placeholder: preloaded items are only cancelled, never
        // decoded (1M puts through the pool would take minutes on
        // PostgreSQL, so they are written by the store directly).
        let mut v = vec![1u8, kind.len() as u8, 0];
        v.extend_from_slice(kind.as_bytes());
        v.extend_from_slice(&n.to_le_bytes());
        v
    }

    fn postgres(pending: usize, ops: usize, jobs: usize, wakes: usize) -> Results {
        let pg = Postgres::start();
        let b = PostgresBackend::connect(&pg.params(), "bench").unwrap();
        let mut db = pg.client();
        let t = Instant::now();
        db.execute(
            "INSERT INTO schedpool.items (queue, id, state, score, deadline, due, token, envelope)
             SELECT 'bench', 'pre-' || g, 0, s.now + 3600000, s.now + 3600000, s.now + 3600000,
                    nextval('schedpool.tokens'), $1
             FROM generate_series(0::bigint, $2::bigint - 1) g, (SELECT schedpool.now_ms() AS now) s",
            &[&envelope_of_u64("noop", 0), &(pending as i64)],
        )
        .unwrap();
        db.batch_execute("ANALYZE schedpool.items").unwrap();
        eprintln!("postgres: preloaded {pending} in {:?}", t.elapsed());
        let q = schedpool::durable::DurableQueue::<u64>::new(
            PostgresBackend::connect(&pg.params(), "bench-puts").unwrap(),
        );
        let t = Instant::now();
        for i in 0..ops {
            q.put(&format!("p-{i}"), &(i as u64), FAR).unwrap();
        }
        let put = rate(ops, t.elapsed());
        let mut app = pg.client();
        let t = Instant::now();
        for i in 0..ops {
            let mut tx = app.transaction().unwrap();
            q.put_in(&mut tx, &format!("t-{i}"), &(i as u64), FAR)
                .unwrap();
            tx.commit().unwrap();
        }
        let put_tx = rate(ops, t.elapsed());
        let params = pg.params();
        let make_due = move |n: usize| {
            let mut c = postgres::Client::connect(&params, postgres::NoTls).unwrap();
            c.execute(
                "UPDATE schedpool.items SET score = schedpool.now_ms(), due = schedpool.now_ms(),
                        deadline = schedpool.now_ms()
                 WHERE queue = 'bench' AND state = 0 AND id = ANY($1)",
                &[&(0..n).map(|i| format!("run-{i}")).collect::<Vec<_>>()],
            )
            .unwrap();
            c.execute("SELECT pg_notify('schedpool_schedpool', 'bench')", &[])
                .unwrap();
        };
        let p = pool_part(b, jobs, wakes, &make_due, &|| {});
        Results {
            server_us: None,
            put,
            put_tx: Some(put_tx),
            cancel: p.cancel,
            run: p.run,
            idle: p.idle,
            busy: p.busy,
            samples: p.samples,
            busy_rate: p.busy_rate,
        }
    }

    fn redis(pending: usize, ops: usize, jobs: usize, wakes: usize) -> Results {
        let server = RedisServer::start();
        let b = RedisBackend::connect(&server.url(), "bench").unwrap();
        let keys: Vec<String> = ["due", "data", "meta", "cfg"]
            .iter()
            .map(|p| b.key(p).unwrap().to_string())
            .collect();
        let mut conn = server.conn();
        let (s, us): (u64, u64) = redis::cmd("TIME").query(&mut conn).unwrap();
        let far = s * 1000 + us / 1000 + 3_600_000;
        let env = envelope_of_u64("noop", 0);
        let t = Instant::now();
        for chunk in (0..pending).collect::<Vec<_>>().chunks(10_000) {
            let mut p = redis::pipe();
            for i in chunk {
                let id = format!("pre-{i}");
                p.hset(&keys[1], &id, &env)
                    .ignore()
                    .hset(&keys[2], &id, format!("{i}:0:{far}:{far}"))
                    .ignore()
                    .zadd(&keys[0], &id, far)
                    .ignore();
            }
            p.query::<()>(&mut conn).unwrap();
        }
        eprintln!("redis: preloaded {pending} in {:?}", t.elapsed());
        let q = schedpool::durable::DurableQueue::<u64>::new(
            RedisBackend::connect(&server.url(), "bench-puts").unwrap(),
        );
        let t = Instant::now();
        for i in 0..ops {
            q.put(&format!("p-{i}"), &(i as u64), FAR).unwrap();
        }
        let put = rate(ops, t.elapsed());
        let url = server.url();
        let due = keys[0].clone();
        let wake = b.key("wake").unwrap().to_string();
        // redis-server's CPU time (user + sys) while the jobs run, a job.
        let cpu = |c: &mut redis::Connection| -> f64 {
            let info: String = redis::cmd("INFO").arg("cpu").query(c).unwrap();
            info.lines()
                .filter(|l| l.starts_with("used_cpu_user:") || l.starts_with("used_cpu_sys:"))
                .map(|l| l.split(':').nth(1).unwrap().trim().parse::<f64>().unwrap())
                .sum()
        };
        let cpu_at_start = std::cell::Cell::new(0.0);
        let server_us = std::cell::Cell::new(None);
        let stats_url = url.clone();
        let make_due = |n: usize| {
            let mut c = super::redis_server::connect(&url);
            cpu_at_start.set(cpu(&mut c));
            let (s, us): (u64, u64) = redis::cmd("TIME").query(&mut c).unwrap();
            let now = s * 1000 + us / 1000;
            let mut p = redis::pipe();
            for i in 0..n {
                p.zadd(&due, format!("run-{i}"), now).ignore();
            }
            p.zadd(&wake, "w", now).ignore();
            p.query::<()>(&mut c).unwrap();
        };
        let after_run = || {
            let mut c = super::redis_server::connect(&stats_url);
            let used = cpu(&mut c) - cpu_at_start.get();
            server_us.set(Some(used * 1e6 / jobs as f64));
        };
        let p = pool_part(b, jobs, wakes, &make_due, &after_run);
        Results {
            server_us: server_us.get(),
            put,
            put_tx: None,
            cancel: p.cancel,
            run: p.run,
            idle: p.idle,
            busy: p.busy,
            samples: p.samples,
            busy_rate: p.busy_rate,
        }
    }

    fn utc_now() -> String {
        std::process::Command::new("date")
            .args(["-u", "+%H:%M:%S"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default()
    }

    fn load() -> String {
        std::fs::read_to_string("/proc/loadavg")
            .map(|l| l.split_whitespace().next().unwrap_or("?").to_string())
            .unwrap_or_default()
    }

    fn median(mut v: Vec<f64>) -> f64 {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        v[v.len() / 2]
    }

    fn table(pending: usize, sq: &[Results], pg: &[Results], rd: &[Results]) {
        let m = |rs: &[Results], f: &dyn Fn(&Results) -> f64| median(rs.iter().map(f).collect());
        let ms = |d: Duration| format!("{} ms", d.as_millis());
        let each = |rs: &[Results], f: &dyn Fn(&Results) -> Duration| {
            rs.iter()
                .map(|r| f(r).as_millis().to_string())
                .collect::<Vec<_>>()
                .join(", ")
                + " ms"
        };
        println!("| operation at {pending} pending | SQLite | PostgreSQL | Redis |");
        println!("|---|---:|---:|---:|");
        println!(
            "| put, 1 thread (ops/s) | {:.0} | {:.0} | {:.0} |",
            m(sq, &|r| r.put),
            m(pg, &|r| r.put),
            m(rd, &|r| r.put)
        );
        println!(
            "| put in the caller's transaction, 1 commit each (ops/s) | {:.0} | {:.0} | n/a |",
            m(sq, &|r| r.put_tx.unwrap_or(0.0)),
            m(pg, &|r| r.put_tx.unwrap_or(0.0))
        );
        println!(
            "| cancel, 1 thread (ops/s) | {:.0} | {:.0} | {:.0} |",
            m(sq, &|r| r.cancel),
            m(pg, &|r| r.cancel),
            m(rd, &|r| r.cancel)
        );
        println!(
            "| claim + run + ack, pool defaults (jobs/s) | {:.0} | {:.0} | {:.0} |",
            m(sq, &|r| r.run),
            m(pg, &|r| r.run),
            m(rd, &|r| r.run)
        );
        // Wake-ups: the percentiles of all rounds' samples together.
        let pooled = |rs: &[Results], busy: bool| {
            let mut all: Vec<Duration> = rs
                .iter()
                .flat_map(|r| if busy { &r.samples.1 } else { &r.samples.0 })
                .copied()
                .collect();
            let (p50, p99) = p50_p99(&mut all);
            format!("{} / {} (of {})", ms(p50), ms(p99), all.len())
        };
        println!(
            "| wake-up, idle pool, p50 / p99, all rounds' samples | {} | {} | {} |",
            pooled(sq, false),
            pooled(pg, false),
            pooled(rd, false)
        );
        println!(
            "| wake-up, busy pool, p50 / p99, all rounds' samples | {} | {} | {} |",
            pooled(sq, true),
            pooled(pg, true),
            pooled(rd, true)
        );
        println!(
            "| wake-up p99 of each round, idle; busy | {}; {} | {}; {} | {}; {} |",
            each(sq, &|r| r.idle.1),
            each(sq, &|r| r.busy.1),
            each(pg, &|r| r.idle.1),
            each(pg, &|r| r.busy.1),
            each(rd, &|r| r.idle.1),
            each(rd, &|r| r.busy.1)
        );
        println!(
            "| busy pool's load (jobs/s put) | {:.0} | {:.0} | {:.0} |",
            m(sq, &|r| r.busy_rate),
            m(pg, &|r| r.busy_rate),
            m(rd, &|r| r.busy_rate)
        );
    }

    pub fn main() {
        let pending = arg("--pending", 1_000_000);
        let ops = arg("--ops", 20_000);
        let jobs = arg("--jobs", ops);
        let wakes = arg("--wakes", 100);
        let rounds = arg("--rounds", 1).max(1);
        // `--only postgres` or `--only redis`: one backend (for profiling).
        let args: Vec<String> = std::env::args().collect();
        let only = args
            .iter()
            .position(|a| a == "--only")
            .and_then(|i| args.get(i + 1).cloned());
        let started = std::process::Command::new("date")
            .arg("-u")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default();
        let (mut sq, mut pg, mut rd) = (Vec::new(), Vec::new(), Vec::new());
        let names = ["sqlite", "postgres", "redis"];
        for round in 0..rounds {
            // A different backend first each round.
            for k in 0..3 {
                let name = names[(round + k) % 3];
                if only.as_deref().is_some_and(|o| o != name) {
                    continue;
                }
                let (at, load_before) = (utc_now(), load());
                let r = match name {
                    "sqlite" => super::sqlite_part::sqlite(pending, ops, jobs, wakes),
                    "postgres" => postgres(pending, ops, jobs, wakes),
                    _ => redis(pending, ops, jobs, wakes),
                };
                eprintln!(
                    "round {} {name} {at}-{} UTC (load {load_before} -> {}): put {:.0}, cancel {:.0}, \
                     claim+run+ack {:.0}/s ({}), wake idle {:?}/{:?}, busy {:?}/{:?} at {:.0}/s",
                    round + 1,
                    utc_now(),
                    load(),
                    r.put,
                    r.cancel,
                    r.run,
                    r.server_us
                        .map_or("-".into(), |u| format!("server {u:.1} µs CPU a job")),
                    r.idle.0,
                    r.idle.1,
                    r.busy.0,
                    r.busy.1,
                    r.busy_rate
                );
                match name {
                    "sqlite" => sq.push(r),
                    "postgres" => pg.push(r),
                    _ => rd.push(r),
                }
            }
        }
        println!(
            "started {started}; {pending} pending, {ops} ops, {jobs} jobs, {wakes} wake-ups, \
             {rounds} round(s), medians:"
        );
        if sq.is_empty() || pg.is_empty() || rd.is_empty() {
            // One backend only: its rounds above are the result.
            return;
        }
        table(pending, &sq, &pg, &rd);
    }
}
