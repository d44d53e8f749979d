//! The operator's reads at 1M pending, for `docs/durable.md` ("Operating
//! it"): on SQLite, PostgreSQL and Redis in turn, `--pending N` items
//! (default 1,000,000; every tenth of kind `sms`, the rest `mail`, due in
//! 1 h) are preloaded by the store directly, then timed, `--rounds R`
//! times each (default 5; the median and the slowest are printed):
//!
//! 1. the first page (100) of pending items, no filter;
//! 2. the first page of kind `sms`;
//! 3. the first page of ids starting with `pre-12345` (11 items);
//! 4. `Operator::overview` (counts by kind and state: a scan of all items).
//!
//! Each store runs on loopback in a temp dir started by this example
//! (redis-server with AOF everysec; PostgreSQL with `fsync=off`; SQLite in
//! a file with the backend's defaults).
//!
//! Run: `cargo run --release --features redis,postgres,sqlite --example durable_ops_bench`
//! (`-- --pending N --rounds R`; `--only sqlite|postgres|redis` runs one store).

#[cfg(not(all(feature = "redis", feature = "postgres", feature = "sqlite")))]
fn main() {
    eprintln!("durable_ops_bench needs the redis, postgres and sqlite features");
    std::process::exit(2);
}

#[cfg(all(feature = "redis", feature = "postgres", feature = "sqlite"))]
mod redis_server;

#[cfg(all(feature = "redis", feature = "postgres", feature = "sqlite"))]
#[path = "../tests/postgres_support/mod.rs"]
mod postgres_support;

#[cfg(all(feature = "redis", feature = "postgres", feature = "sqlite"))]
fn main() {
    bench::main();
}

#[cfg(all(feature = "redis", feature = "postgres", feature = "sqlite"))]
mod bench {
    use std::time::{Duration, Instant};

    use schedpool::durable::{
        DurableBackend, ListFilter, Operator, PostgresBackend, RedisBackend, SqliteBackend,
        StoredState,
    };

    use super::postgres_support::Postgres;
    use super::redis_server::RedisServer;

    fn arg(name: &str, default: usize) -> usize {
        let args: Vec<String> = std::env::args().collect();
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    }

    fn kind_of(i: usize) -> &'static str {
        if i % 10 == 0 {
            "sms"
        } else {
            "mail"
        }
    }

    fn envelope(kind: &str, i: usize) -> Vec<u8> {
        let mut v = vec![1u8, kind.len() as u8];
        v.extend_from_slice(kind.as_bytes());
        v.push(0);
        v.extend_from_slice(&(i as u64).to_be_bytes());
        v
    }

    /// Times `f` `rounds` times: (median, slowest).
    fn time(rounds: usize, mut f: impl FnMut()) -> (Duration, Duration) {
        let mut v: Vec<Duration> = (0..rounds)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed()
            })
            .collect();
        v.sort();
        (v[v.len() / 2], v[v.len() - 1])
    }

    fn measure(name: &str, ops: &Operator, pending: usize, rounds: usize) -> Vec<String> {
        let mut rows = Vec::new();
        let mut row = |what: &str, (med, max): (Duration, Duration)| {
            let line = format!("| {name} | {what} | {med:.1?} | {max:.1?} |");
            println!("{line}");
            rows.push(line);
        };
        row(
            "first page (100), pending",
            time(rounds, || {
                let p = ops.list(&ListFilter::new(StoredState::Pending)).unwrap();
                assert_eq!(p.items.len(), 100);
            }),
        );
        row(
            "first page (100), pending, kind `sms` (10%)",
            time(rounds, || {
                let p = ops
                    .list(&ListFilter::new(StoredState::Pending).kind("sms"))
                    .unwrap();
                assert!(p.items.iter().all(|i| i.kind == "sms"));
                assert!(!p.items.is_empty());
            }),
        );
        row(
            "first page, pending, id prefix `pre-12345` (11 match)",
            time(rounds, || {
                let p = ops
                    .list(&ListFilter::new(StoredState::Pending).id_prefix("pre-12345"))
                    .unwrap();
                assert!(p.items.iter().all(|i| i.id.starts_with("pre-12345")));
            }),
        );
        row(
            "overview (counts by kind and state)",
            time(rounds.min(3), || {
                let o = ops.overview().unwrap();
                assert!(o.counts.pending >= pending);
            }),
        );
        rows
    }

    fn sqlite(pending: usize, rounds: usize) -> Vec<String> {
        let dir = std::env::temp_dir().join(format!("schedpool-ops-bench-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("bench.db");
        let b = SqliteBackend::open(&path, "bench").unwrap();
        let far = b.server_time_ms().unwrap() as i64 + 3_600_000;
        let mut db = rusqlite::Connection::open(&path).unwrap();
        let t = Instant::now();
        let tx = db.transaction().unwrap();
        {
            let mut st = tx
                .prepare(
                    "INSERT INTO schedpool_items (queue, id, state, score, deadline, due, token, \
                     attempts, envelope, kind) VALUES ('bench', ?1, 0, ?2, ?2, ?2, ?3, 0, ?4, ?5)",
                )
                .unwrap();
            for i in 0..pending {
                let kind = kind_of(i);
                st.execute(rusqlite::params![
                    format!("pre-{i}"),
                    far + (i % 1000) as i64,
                    i as i64 + 1,
                    envelope(kind, i),
                    kind
                ])
                .unwrap();
            }
        }
        tx.commit().unwrap();
        db.execute_batch("ANALYZE").unwrap();
        eprintln!("sqlite: preloaded {pending} in {:?}", t.elapsed());
        let rows = measure("SQLite", &Operator::new(b), pending, rounds);
        let _ = std::fs::remove_dir_all(&dir);
        rows
    }

    fn postgres(pending: usize, rounds: usize) -> Vec<String> {
        let pg = Postgres::start();
        let b = PostgresBackend::connect(&pg.params(), "bench").unwrap();
        let mut db = pg.client();
        let t = Instant::now();
        // The kind column is set by the schema's trigger from the envelope.
        db.execute(
            "INSERT INTO schedpool.items (queue, id, state, score, deadline, due, token, envelope)
             SELECT 'bench', 'pre-' || g, 0, s.now + 3600000 + g % 1000, s.now + 3600000 + g % 1000,
                    s.now + 3600000 + g % 1000, nextval('schedpool.tokens'),
                    CASE WHEN g % 10 = 0 THEN $1::bytea ELSE $2::bytea END
             FROM generate_series(0::bigint, $3::bigint - 1) g, (SELECT schedpool.now_ms() AS now) s",
            &[&envelope("sms", 0), &envelope("mail", 0), &(pending as i64)],
        )
        .unwrap();
        db.batch_execute("ANALYZE schedpool.items").unwrap();
        eprintln!("postgres: preloaded {pending} in {:?}", t.elapsed());
        measure("PostgreSQL", &Operator::new(b), pending, rounds)
    }

    fn redis(pending: usize, rounds: usize) -> Vec<String> {
        let server = RedisServer::start();
        let b = RedisBackend::connect(&server.url(), "bench").unwrap();
        let keys: Vec<String> = ["due", "data", "meta"]
            .iter()
            .map(|p| b.key(p).unwrap().to_string())
            .collect();
        let mut conn = server.conn();
        let far = b.server_time_ms().unwrap() + 3_600_000;
        let t = Instant::now();
        for chunk in (0..pending).collect::<Vec<_>>().chunks(10_000) {
            let mut p = redis::pipe();
            for &i in chunk {
                let id = format!("pre-{i}");
                let at = far + (i % 1000) as u64;
                p.hset(&keys[1], &id, envelope(kind_of(i), i))
                    .ignore()
                    .hset(&keys[2], &id, format!("{i}:0:{at}:{at}"))
                    .ignore()
                    .zadd(&keys[0], &id, at)
                    .ignore();
            }
            p.query::<()>(&mut conn).unwrap();
        }
        eprintln!("redis: preloaded {pending} in {:?}", t.elapsed());
        measure("Redis", &Operator::new(b), pending, rounds)
    }

    pub fn main() {
        let pending = arg("--pending", 1_000_000);
        let rounds = arg("--rounds", 5).max(1);
        println!("| store | read at {pending} pending | median of {rounds} | slowest |");
        println!("|---|---|---:|---:|");
        let args: Vec<String> = std::env::args().collect();
        let only = args
            .iter()
            .position(|a| a == "--only")
            .and_then(|i| args.get(i + 1).cloned());
        let run = |name: &str| only.as_deref().is_none_or(|o| o == name);
        let mut all = Vec::new();
        if run("sqlite") {
            all.extend(sqlite(pending, rounds));
        }
        if run("postgres") {
            all.extend(postgres(pending, rounds));
        }
        if run("redis") {
            all.extend(redis(pending, rounds));
        }
        println!("\n{}", all.join("\n"));
    }
}
