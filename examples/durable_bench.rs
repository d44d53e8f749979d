//! Throughput of the Redis durable queue, for `docs/durable.md`: one client
//! thread (so mostly round trips), against its own `redis-server` on
//! loopback (AOF `everysec`, `noeviction`).
//!
//! Measured, in this order:
//!
//! 1. `put` (a new id, due in 1 h) from one thread: the first 100,000 items;
//! 2. `put` from 4 threads sharing one queue handle, up to 1,000,000 pending;
//! 3. Redis `used_memory` per pending item at 1M;
//! 4. an empty claim (`poll` with nothing due) at 1M pending, and at 1k;
//! 5. `remove` (cancel) of a pending id at 1M pending, and at 1k;
//! 6. claim + ack (`poll` then `Delivery::ack`) of due items at 1M pending,
//!    and on a queue holding only the due items;
//! 7. for reference, `PING` round trips on one connection.
//!
//! Run: `cargo run --release --features redis --example durable_bench`
//! (about 1–2 minutes). `-- --pending N --ops M` changes the sizes
//! (defaults 1,000,000 and 10,000; `--rounds 5`).

#[cfg(not(feature = "redis"))]
fn main() {
    eprintln!(
        "durable_bench needs the redis feature: cargo run --release --features redis --example durable_bench"
    );
    std::process::exit(2);
}

#[cfg(feature = "redis")]
mod redis_server;

#[cfg(feature = "redis")]
fn main() {
    bench::main();
}

#[cfg(feature = "redis")]
mod bench {
    use std::io::{IsTerminal, Write};
    use std::thread;
    use std::time::{Duration, Instant};

    use schedpool::durable::{Put, RedisDelayQueue, Removed};

    use super::redis_server::{info_field, RedisServer};

    const FAR: Duration = Duration::from_secs(3600);
    const WRITERS: usize = 4;

    /// One measured operation: `ops` per round, several rounds.
    struct Row {
        what: String,
        ops: u64,
        /// Per round: client wall time, and Redis's own time for the
        /// round's commands (INFO commandstats), in µs.
        rounds: Vec<(Duration, f64)>,
    }

    impl Row {
        fn rates(&self) -> Vec<f64> {
            let mut v: Vec<f64> = self
                .rounds
                .iter()
                .map(|(d, _)| self.ops as f64 / d.as_secs_f64())
                .collect();
            v.sort_by(f64::total_cmp);
            v
        }
        fn median_rate(&self) -> f64 {
            let v = self.rates();
            v[v.len() / 2]
        }
        fn server_us_per_op(&self) -> f64 {
            let mut v: Vec<f64> = self
                .rounds
                .iter()
                .map(|(_, us)| us / self.ops as f64)
                .collect();
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        }
    }

    fn arg(name: &str, default: u64) -> u64 {
        let args: Vec<String> = std::env::args().collect();
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .map(|v| v.replace('_', "").parse().expect("a number"))
            .unwrap_or(default)
    }

    fn id(n: u64) -> String {
        format!("order-{n:07}")
    }

    /// A status line redrawn in place on a terminal; a plain line in a log.
    fn progress(what: &str) {
        if std::io::stderr().is_terminal() {
            eprint!("\r  {what:<70}");
            std::io::stderr().flush().ok();
        } else {
            eprintln!("  {what}");
        }
    }

    fn used_memory(conn: &mut redis::Connection) -> u64 {
        let info: String = redis::cmd("INFO")
            .arg("memory")
            .query(conn)
            .expect("INFO memory");
        info_field(&info, "used_memory")
            .and_then(|v| v.parse().ok())
            .expect("used_memory")
    }

    /// Redis's time spent in commands since the last reset, in µs (the
    /// admin commands of this harness excluded).
    fn server_usec(conn: &mut redis::Connection) -> f64 {
        let info: String = redis::cmd("INFO")
            .arg("commandstats")
            .query(conn)
            .expect("INFO commandstats");
        info.lines()
            .filter(|l| l.starts_with("cmdstat_"))
            .filter(|l| !l.starts_with("cmdstat_info:") && !l.starts_with("cmdstat_config"))
            .filter_map(|l| {
                let usec = l.split([':', ',']).find_map(|f| f.strip_prefix("usec="))?;
                usec.parse::<f64>().ok()
            })
            .sum()
    }

    /// Times `f` on the client and on the server.
    fn round(admin: &mut redis::Connection, f: impl FnOnce()) -> (Duration, f64) {
        redis::cmd("CONFIG")
            .arg("RESETSTAT")
            .query::<()>(admin)
            .expect("CONFIG RESETSTAT");
        let t = Instant::now();
        f();
        let elapsed = t.elapsed();
        (elapsed, server_usec(admin))
    }

    /// `rounds` rounds of `ops` operations each; `f(r)` runs round `r`
    /// (and may do untimed set-up before calling `round` itself).
    fn measure(
        what: String,
        ops: u64,
        rounds: u64,
        mut f: impl FnMut(u64) -> (Duration, f64),
    ) -> Row {
        let rounds = (0..rounds)
            .map(|r| {
                progress(&format!("{what}: round {}", r + 1));
                f(r)
            })
            .collect();
        Row { what, ops, rounds }
    }

    /// `ops` empty claims: nothing is due.
    fn empty_claims(q: &RedisDelayQueue<u64>, ops: u64) {
        for _ in 0..ops {
            assert!(q.poll().expect("poll").is_none(), "nothing is due");
        }
    }

    /// Cancels the pending ids `k * 7919 % pending` for k in `ks`: distinct
    /// (7919 is a prime that does not divide the sizes used) and scattered.
    fn cancels(q: &RedisDelayQueue<u64>, pending: u64, ks: std::ops::Range<u64>) {
        for k in ks {
            let n = k * 7919 % pending;
            let removed = q.remove(&id(n)).expect("remove");
            assert_eq!(removed, Removed::Pending(n), "{}", id(n));
        }
    }

    /// Puts `ops` items due now (untimed), then claims and acks them one by
    /// one (timed).
    fn claim_acks(
        admin: &mut redis::Connection,
        q: &RedisDelayQueue<u64>,
        prefix: &str,
        ops: u64,
    ) -> (Duration, f64) {
        for n in 0..ops {
            q.put(&format!("{prefix}-{n:07}"), &n, Duration::ZERO)
                .expect("put");
        }
        // Let the last one be due by the server's clock (ms resolution).
        thread::sleep(Duration::from_millis(5));
        round(admin, || {
            for _ in 0..ops {
                let d = q.poll().expect("poll").expect("an item is due");
                d.ack().expect("ack");
            }
        })
    }

    pub fn main() {
        let pending = arg("--pending", 1_000_000);
        let ops = arg("--ops", 10_000);
        let rounds = arg("--rounds", 5).max(1);
        let single = (pending / 10).max(rounds);
        let small = 1_000.min(pending);
        assert!(
            rounds * ops < pending / 2,
            "--ops × --rounds must stay well under --pending"
        );
        let started = Instant::now();
        let redis = RedisServer::start();
        let url = redis.url();
        let mut admin = redis.conn();
        let mut rows = Vec::new();

        // A floor: one round trip on one connection.
        let mut conn = redis.conn();
        rows.push(measure(
            "`PING`, 1 connection (the round-trip floor)".into(),
            ops,
            rounds,
            |_| {
                round(&mut admin, || {
                    for _ in 0..ops {
                        redis::cmd("PING").query::<String>(&mut conn).expect("PING");
                    }
                })
            },
        ));

        let q: RedisDelayQueue<u64> = RedisDelayQueue::connect(&url, "bench").expect("connect");
        let before = used_memory(&mut admin);

        // 1. put, one thread.
        let per = single / rounds;
        rows.push(measure(
            format!("`put`, 1 thread (0 → {} pending)", per * rounds),
            per,
            rounds,
            |r| {
                round(&mut admin, || {
                    for n in r * per..(r + 1) * per {
                        let put = q.put(&id(n), &n, FAR).expect("put");
                        debug_assert!(matches!(put, Put::Inserted { .. }));
                    }
                })
            },
        ));

        // 2. put, 4 threads on one shared handle, up to `pending`.
        let from = per * rounds;
        let chunk = (pending - from).div_ceil(rounds);
        rows.push(measure(
            format!("`put`, {WRITERS} threads, one shared handle ({from} → {pending} pending)"),
            chunk,
            rounds,
            |r| {
                let (lo, hi) = (from + r * chunk, (from + (r + 1) * chunk).min(pending));
                round(&mut admin, || {
                    thread::scope(|s| {
                        for w in 0..WRITERS as u64 {
                            let q = q.clone();
                            s.spawn(move || {
                                let mut n = lo + w;
                                while n < hi {
                                    q.put(&id(n), &n, FAR).expect("put");
                                    n += WRITERS as u64;
                                }
                            });
                        }
                    });
                })
            },
        ));
        let counts = q.counts().expect("counts");
        assert_eq!(counts.pending as u64, pending, "{counts:?}");

        // 3. memory.
        thread::sleep(Duration::from_millis(200));
        let after = used_memory(&mut admin);
        let per_item = (after.saturating_sub(before)) as f64 / pending as f64;

        // 4. empty claims at `pending`.
        rows.push(measure(
            format!("empty claim (`poll`, nothing due), {pending} pending"),
            ops,
            rounds,
            |_| round(&mut admin, || empty_claims(&q, ops)),
        ));

        // 5. cancel at `pending`.
        rows.push(measure(
            format!("cancel (`remove` a pending id), {pending} pending"),
            ops,
            rounds,
            |r| round(&mut admin, || cancels(&q, pending, r * ops..(r + 1) * ops)),
        ));
        let left = pending - rounds * ops;

        // 6. claim + ack of due items among the far ones.
        rows.push(measure(
            format!("claim + ack (`poll` + `ack`), {left} others pending"),
            ops,
            rounds,
            |r| claim_acks(&mut admin, &q, &format!("due{r}"), ops),
        ));

        // The same on small and empty queues.
        let q_small: RedisDelayQueue<u64> =
            RedisDelayQueue::connect(&url, "bench-small").expect("connect");
        for n in 0..small {
            q_small.put(&id(n), &n, FAR).expect("put");
        }
        rows.push(measure(
            format!("empty claim (`poll`, nothing due), {small} pending"),
            ops,
            rounds,
            |_| round(&mut admin, || empty_claims(&q_small, ops)),
        ));
        let q_cancel: RedisDelayQueue<u64> =
            RedisDelayQueue::connect(&url, "bench-cancel").expect("connect");
        rows.push(measure(
            format!(
                "cancel (`remove` a pending id), {small}→{} pending",
                small / 2
            ),
            small / 2,
            rounds,
            |_| {
                for n in 0..small {
                    q_cancel.put(&id(n), &n, FAR).expect("put");
                }
                round(&mut admin, || cancels(&q_cancel, small, 0..small / 2))
            },
        ));
        let q_empty: RedisDelayQueue<u64> =
            RedisDelayQueue::connect(&url, "bench-empty").expect("connect");
        rows.push(measure(
            "claim + ack (`poll` + `ack`), no others pending".into(),
            ops,
            rounds,
            |r| claim_acks(&mut admin, &q_empty, &format!("due{r}"), ops),
        ));
        progress("done");
        if std::io::stderr().is_terminal() {
            eprintln!();
        }

        let cpus = thread::available_parallelism().map_or(0, |n| n.get());
        let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
        println!();
        println!(
            "Redis {} on loopback (AOF everysec, noeviction), {cpus} CPUs (load average at the end: {}), \
             schedpool {} (release). One client thread unless stated; {rounds} rounds per row: \
             the median round, the slowest–fastest range, and Redis's own time per operation \
             (INFO commandstats).",
            redis.version(),
            load.split(' ').take(3).collect::<Vec<_>>().join(" "),
            env!("CARGO_PKG_VERSION")
        );
        println!();
        println!("| operation | ops/s (median) | range | µs/op (client) | µs/op in Redis |");
        println!("|---|---:|---:|---:|---:|");
        for r in &rows {
            let rates = r.rates();
            println!(
                "| {} | {:.0} | {:.0}–{:.0} | {:.1} | {:.1} |",
                r.what,
                r.median_rate(),
                rates[0],
                rates[rates.len() - 1],
                1e6 / r.median_rate(),
                r.server_us_per_op(),
            );
        }
        println!(
            "| memory: `used_memory` per pending item at {pending} | | | {per_item:.0} B | {:.0} MB in all |",
            (after - before) as f64 / 1e6
        );
        println!();
        println!(
            "Items: ids `order-NNNNNNN` (13 bytes), a `u64` payload (an 11-byte envelope), due in 1 h. \
             Claim + ack: one `poll` claims one item (one claim script), then one `ack` script."
        );
        println!(
            "Command: `cargo run --release --features redis --example durable_bench -- --pending {pending} --ops {ops} --rounds {rounds}`"
        );
        println!("Wall time: {:.1} s", started.elapsed().as_secs_f64());
    }
}
