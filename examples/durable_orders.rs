//! The durable main demo: two shop servers share one order-timeout queue on
//! Redis, and one of them is killed (`kill -9`) while it is closing orders.
//!
//! Each shop process takes 5,000 orders over 5 seconds and schedules a
//! "close-order" timeout for each, due 0–10 s later (30 minutes in real
//! life), on a [`DurablePool`] that both processes run with 32 workers and a
//! 2 s lease. Seven seconds in, shop A is killed: the orders it had
//! accepted are still in Redis and shop B closes them on time; the dozen A
//! was holding come back to B when their lease expires.
//!
//! Closing an order: ask the payment provider (10–30 ms), mark the order
//! closed, e-mail the customer (1–5 ms). The mark is a *conditional* side
//! effect: one atomic script sets it with `HSETNX` (so the redelivery of an
//! order A had closed but not yet acked cannot close it twice) and appends
//! the run to a log, before the pool acks. The demo then checks, from Redis
//! alone: every order closed exactly once, none before the deadline its put
//! returned (server clock, no slack), no fencing token used twice, and the
//! queue empty. It exits non-zero if any check fails.
//!
//! The example starts its own `redis-server` (from PATH) on a free port in a
//! temp dir and re-executes itself as the two shop processes.
//!
//! Run: `cargo run --release --features redis --example durable_orders`
//! (about 15 s).

#[cfg(not(feature = "redis"))]
fn main() {
    eprintln!("durable_orders needs the redis feature: cargo run --release --features redis --example durable_orders");
    std::process::exit(2);
}

#[cfg(feature = "redis")]
mod redis_server;

#[cfg(feature = "redis")]
fn main() {
    demo::main();
}

#[cfg(feature = "redis")]
mod demo {
    use std::collections::HashMap;
    use std::io::{BufRead, BufReader, IsTerminal, Write};
    use std::process::{Child, ChildStdin, Command, Stdio};
    use std::sync::{mpsc, Mutex};
    use std::thread;
    use std::time::{Duration, Instant};

    use schedpool::durable::{DurablePool, JobInfo, Put, RedisBackend};

    use super::redis_server::{self, RedisServer};

    const ORDERS_PER_SHOP: u64 = 5_000;
    const PLACE_WINDOW: Duration = Duration::from_secs(5);
    const MAX_DELAY_MS: u64 = 10_000; // "30 minutes"
    const LEASE: Duration = Duration::from_secs(2);
    const WORKERS: usize = 32;
    /// When shop A is killed, counted from the start of order taking.
    const KILL_AT: Duration = Duration::from_secs(7);
    /// Give up (and fail) if the orders are not all closed by then.
    const GIVE_UP_AFTER: Duration = Duration::from_secs(60);

    const QUEUE: &str = "order-timeouts";
    /// The shop's own records (same hash tag as the queue: one Cluster slot).
    const DEADLINES: &str = "shop:{order-timeouts}:deadline"; // id -> deadline ms (from the put)
    const CLOSED: &str = "shop:{order-timeouts}:closed"; // id -> "close_ms token shop" (first close)
    const RUNS: &str = "shop:{order-timeouts}:runs"; // one line per handler run

    const ROLE_VAR: &str = "SCHEDPOOL_DEMO_ROLE";
    const URL_VAR: &str = "SCHEDPOOL_DEMO_REDIS";

    /// Closes an order at most once, and logs the run, in one atomic step.
    /// ARGV: id, token, attempt, deadline ms, shop, claim lateness ms.
    /// Returns 1 when this run closed the order, 0 when it was closed already.
    const CLOSE_SCRIPT: &str = r#"
local t = redis.call('TIME')
local now = string.format('%d', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
local first = redis.call('HSETNX', KEYS[1], ARGV[1], now .. ' ' .. ARGV[2] .. ' ' .. ARGV[5])
redis.call('RPUSH', KEYS[2], table.concat({ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[6], now, ARGV[5], first}, ' '))
return first
"#;

    /// xorshift64*: a tiny deterministic random source for the simulation.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
    }

    pub fn main() {
        match std::env::var(ROLE_VAR).ok().as_deref() {
            Some(shop) => shop_main(shop),
            None => parent_main(),
        }
    }

    // ---------------------------------------------------------------- shops

    /// One shop server: a durable pool that closes orders, and a front that
    /// takes this shop's orders. Runs until its stdin closes (or kill -9).
    fn shop_main(shop: &str) {
        // The pool's WARN and ERROR events (a lost lease, a failed handler) to stderr.
        tracing::subscriber::set_global_default(crate::WarnsToStderr).expect("the only subscriber");
        let url = std::env::var(URL_VAR).expect("the parent passes the Redis URL");
        let backend = RedisBackend::connect(&url, QUEUE).expect("connect the queue");
        let conns: Mutex<Vec<redis::Connection>> = Mutex::new(Vec::new());
        let close = redis::Script::new(CLOSE_SCRIPT);
        let me = shop.to_string();
        let pool = DurablePool::builder(backend)
            .threads(WORKERS)
            .name(format!("shop-{shop}"))
            .lease(LEASE)
            .max_attempts(0)
            .retry_backoff(Duration::from_millis(50), Duration::from_secs(1))
            .handler("close-order", move |amount_cents: &u64, info: &JobInfo| {
                let mut conn = match conns.lock().unwrap().pop() {
                    Some(c) => c,
                    None => redis::Client::open(url.as_str())?
                        .get_connection_with_timeout(Duration::from_secs(2))?,
                };
                // Ask the payment provider whether it was paid after all: 10–30 ms.
                thread::sleep(Duration::from_millis(10 + amount_cents % 21));
                // The conditional side effect, before the ack: a redelivery
                // after a crash between here and the ack finds it closed.
                let closed_now: i64 = close
                    .key(CLOSED)
                    .key(RUNS)
                    .arg(&info.id)
                    .arg(info.token)
                    .arg(info.attempt)
                    .arg(info.deadline_ms)
                    .arg(&me)
                    .arg(info.lateness.as_millis() as u64)
                    .invoke(&mut conn)?;
                conns.lock().unwrap().push(conn);
                if closed_now == 1 {
                    // Release the stock and e-mail the customer: 1–5 ms.
                    thread::sleep(Duration::from_millis(1 + amount_cents / 7 % 5));
                }
                Ok(())
            })
            .build()
            .expect("start the pool");

        // The front: this shop's orders arrive at a steady rate.
        let mut records = redis_server::connect(&std::env::var(URL_VAR).unwrap());
        let mut rng = Rng(if shop == "A" {
            0x9E37_79B9_7F4A_7C15
        } else {
            0xD1B5_4A32_D192_ED03
        });
        let started = Instant::now();
        for n in 0..ORDERS_PER_SHOP {
            let at = started + PLACE_WINDOW.mul_f64(n as f64 / ORDERS_PER_SHOP as f64);
            if let Some(wait) = at.checked_duration_since(Instant::now()) {
                thread::sleep(wait);
            }
            let id = format!("order-{shop}-{n:05}");
            let amount_cents = 500 + rng.next() % 20_000;
            let delay = Duration::from_millis(rng.next() % (MAX_DELAY_MS + 1));
            let put = pool
                .schedule("close-order", &id, &amount_cents, delay)
                .expect("schedule the order timeout");
            let Put::Inserted { deadline_ms } = put else {
                panic!("order {id} existed already: {put:?}");
            };
            redis::cmd("HSET")
                .arg(DEADLINES)
                .arg(&id)
                .arg(deadline_ms)
                .query::<()>(&mut records)
                .expect("record the order");
        }
        say(&format!("placed {ORDERS_PER_SHOP}"));

        // Serve until the parent closes our stdin.
        let mut line = String::new();
        while std::io::stdin().read_line(&mut line).is_ok_and(|n| n > 0) {
            line.clear();
        }
        pool.shutdown();
        let terminated = pool.await_termination(Duration::from_secs(10));
        let s = pool.stats();
        say(&format!(
            "stats succeeded={} failed={} lease_lost={} terminated={terminated}",
            s.succeeded, s.failed, s.lease_lost
        ));
    }

    fn say(line: &str) {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{line}").and_then(|()| out.flush()).ok();
    }

    // ---------------------------------------------------------------- parent

    struct Shop {
        child: Child,
        stdin: Option<ChildStdin>,
    }

    fn spawn_shop(
        name: &'static str,
        url: &str,
        lines: mpsc::Sender<(&'static str, String)>,
    ) -> Shop {
        let mut child = Command::new(std::env::current_exe().expect("this example's path"))
            .env(ROLE_VAR, name)
            .env(URL_VAR, url)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start a shop process");
        let stdout = child.stdout.take().expect("piped");
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if lines.send((name, line)).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Shop { child, stdin }
    }

    fn server_ms(conn: &mut redis::Connection) -> u64 {
        let (s, us): (u64, u64) = redis::cmd("TIME").query(conn).expect("TIME");
        s * 1000 + us / 1000
    }

    fn parent_main() {
        let started = Instant::now();
        let redis = RedisServer::start();
        let url = redis.url();
        let mut conn = redis.conn();
        let keys = RedisBackend::connect(&url, QUEUE).expect("connect the queue");
        let key = |part| keys.key(part).expect("a queue key").to_string();
        let (due, lease, dead) = (key("due"), key("lease"), key("dead"));
        println!(
            "  redis-server {} on {url}; shops A and B: {WORKERS} workers each, lease {LEASE:?}",
            redis.version()
        );

        let (tx, rx) = mpsc::channel();
        let mut a = spawn_shop("A", &url, tx.clone());
        let mut b = spawn_shop("B", &url, tx);
        let total = 2 * ORDERS_PER_SHOP;
        let orders_started = Instant::now();

        let mut placed = 0;
        let mut kill_ms = None;
        let mut stats_b = None;
        let mut done_at = None;
        // The progress line is redrawn in place on a terminal only; a log
        // gets a plain line a second.
        let live = std::io::stdout().is_terminal();
        let mut logged: Option<Instant> = None;
        loop {
            while let Ok((shop, line)) = rx.try_recv() {
                if line.starts_with("placed ") {
                    placed += 1;
                } else if shop == "B" && line.starts_with("stats ") {
                    stats_b = Some(line);
                } else {
                    println!("\n  [{shop}] {line}");
                }
            }
            if kill_ms.is_none() && placed == 2 && orders_started.elapsed() >= KILL_AT {
                // Shop A crashes mid-way: no shutdown, no release, no acks.
                a.child.kill().expect("kill -9 shop A");
                a.child.wait().ok();
                kill_ms = Some(server_ms(&mut conn));
                println!(
                    "\n  {:>5.1} s  kill -9 shop A (pid {})",
                    started.elapsed().as_secs_f64(),
                    a.child.id()
                );
            }
            let (recorded, closed, pending, in_flight): (u64, u64, u64, u64) = redis::pipe()
                .hlen(DEADLINES)
                .hlen(CLOSED)
                .zcard(&due)
                .zcard(&lease)
                .query(&mut conn)
                .expect("progress");
            let line = format!(
                "  {:>5.1} s  orders {recorded:>6}  closed {closed:>6}  pending {pending:>6}  in flight {in_flight:>3}",
                started.elapsed().as_secs_f64()
            );
            if live {
                print!("\r{line}   ");
                std::io::stdout().flush().ok();
            } else if logged.is_none_or(|t| t.elapsed() >= Duration::from_secs(1)) {
                println!("{line}");
                logged = Some(Instant::now());
            }
            if kill_ms.is_some() && closed >= total && pending == 0 && in_flight == 0 {
                done_at.get_or_insert_with(Instant::now);
                break;
            }
            if started.elapsed() > GIVE_UP_AFTER {
                println!("\n  gave up after {GIVE_UP_AFTER:?}");
                break;
            }
            thread::sleep(Duration::from_millis(200));
        }
        println!();
        // Shop B shuts down gracefully when its stdin closes.
        drop(b.stdin.take());
        let b_exit = b.child.wait().expect("wait for shop B");
        while let Ok((shop, line)) = rx.recv_timeout(Duration::from_millis(500)) {
            if shop == "B" && line.starts_with("stats ") {
                stats_b = Some(line);
            }
        }
        drop(a.stdin.take());

        let mut ok = verify(&mut conn, &due, &lease, &dead, total, kill_ms);
        if !b_exit.success() || stats_b.is_none() {
            println!("  CHECK FAILED: shop B shut down cleanly ({b_exit})");
            ok = false;
        }
        println!(
            "  shop B                {} ({b_exit})",
            stats_b.as_deref().unwrap_or("(no stats)")
        );
        println!(
            "  wall time            {:>8.1} s",
            started.elapsed().as_secs_f64()
        );
        drop(redis);
        if !ok {
            println!("  FAILED");
            std::process::exit(1);
        }
        println!("  all checks passed");
    }

    struct Run {
        id: String,
        token: u64,
        attempt: u32,
        deadline_ms: u64,
        claim_lateness_ms: u64,
        close_ms: u64,
        shop: String,
        first: bool,
    }

    fn parse_run(line: &str) -> Run {
        let f: Vec<&str> = line.split(' ').collect();
        assert_eq!(f.len(), 8, "run log line {line:?}");
        let n = |i: usize| f[i].parse::<u64>().unwrap_or_else(|_| panic!("{line:?}"));
        Run {
            id: f[0].to_string(),
            token: n(1),
            attempt: n(2) as u32,
            deadline_ms: n(3),
            claim_lateness_ms: n(4),
            close_ms: n(5),
            shop: f[6].to_string(),
            first: f[7] == "1",
        }
    }

    /// Checks everything from Redis: the put deadlines, the close records
    /// and the run log. Returns false when a check fails.
    fn verify(
        conn: &mut redis::Connection,
        due: &str,
        lease: &str,
        dead: &str,
        total: u64,
        kill_ms: Option<u64>,
    ) -> bool {
        let deadlines: HashMap<String, u64> = redis::cmd("HGETALL")
            .arg(DEADLINES)
            .query(conn)
            .expect("deadlines");
        let closed: HashMap<String, String> = redis::cmd("HGETALL")
            .arg(CLOSED)
            .query(conn)
            .expect("closed");
        let lines: Vec<String> = redis::cmd("LRANGE")
            .arg(RUNS)
            .arg(0)
            .arg(-1)
            .query(conn)
            .expect("run log");
        let (pending, in_flight, dead_n): (u64, u64, u64) = redis::pipe()
            .zcard(due)
            .zcard(lease)
            .zcard(dead)
            .query(conn)
            .expect("counts");
        let runs: Vec<Run> = lines.iter().map(|l| parse_run(l)).collect();
        let kill_ms = kill_ms.unwrap_or(u64::MAX);

        let mut closes: HashMap<&str, u32> = HashMap::new();
        let (mut early, mut wrong_deadline, mut unknown) = (0, 0, 0);
        let (mut redelivered, mut guard_skips, mut closed_by) = (0, 0, HashMap::new());
        let mut back_after_kill: Vec<u64> = Vec::new();
        // Server claim time − deadline (from JobInfo::lateness), of first
        // claims and of redeliveries; close time − deadline of the close.
        let mut claim_late: Vec<u64> = Vec::new();
        let mut claim_late_redelivered: Vec<u64> = Vec::new();
        let mut close_late: Vec<u64> = Vec::new();
        let mut tokens = std::collections::HashSet::new();
        let mut token_reused = 0;
        for r in &runs {
            // Every claim draws a fresh fencing token: one token, one run.
            if !tokens.insert(r.token) {
                token_reused += 1;
            }
            let Some(&put_deadline) = deadlines.get(&r.id) else {
                unknown += 1;
                continue;
            };
            if r.deadline_ms != put_deadline {
                wrong_deadline += 1;
            }
            // Never early, by the server's clock, without slack: the close
            // happened at or after the deadline the put returned.
            if r.close_ms < put_deadline {
                early += 1;
            }
            if r.attempt >= 2 {
                redelivered += 1;
                claim_late_redelivered.push(r.claim_lateness_ms);
                let claimed_ms = r.deadline_ms + r.claim_lateness_ms;
                back_after_kill.push(claimed_ms.saturating_sub(kill_ms));
                if !r.first {
                    guard_skips += 1;
                }
            }
            if r.first {
                *closes.entry(r.id.as_str()).or_default() += 1;
                *closed_by.entry(r.shop.as_str()).or_insert(0u64) += 1;
                close_late.push(r.close_ms.saturating_sub(put_deadline));
            }
            if r.attempt == 1 {
                claim_late.push(r.claim_lateness_ms);
            }
        }
        let never_closed = deadlines
            .keys()
            .filter(|id| !closed.contains_key(*id))
            .count();
        let closed_twice = closes.values().filter(|&&n| n > 1).count();
        let logged_once = closes.len();
        claim_late.sort_unstable();
        claim_late_redelivered.sort_unstable();
        close_late.sort_unstable();
        back_after_kill.sort_unstable();
        let pct = |v: &[u64], p: f64| {
            v.get(((v.len().max(1) - 1) as f64 * p) as usize)
                .copied()
                .unwrap_or(0)
        };
        let secs = |ms: u64| ms as f64 / 1000.0;

        println!();
        println!("  orders                {:>7}", deadlines.len());
        println!(
            "  closed                {:>7}  (by A {}, by B {})",
            closed.len(),
            closed_by.get("A").unwrap_or(&0),
            closed_by.get("B").unwrap_or(&0)
        );
        println!("  closed twice          {closed_twice:>7}  (must be 0)");
        println!(
            "  closed early          {early:>7}  (must be 0: close time < the put's deadline, server clock)"
        );
        println!("  never closed          {never_closed:>7}  (must be 0)");
        println!(
            "  close runs            {:>7}  (handler runs that reached the close; the extra ones found it closed)",
            runs.len(),
        );
        println!(
            "  redelivered           {redelivered:>7}  (held by A at the kill; claimed again at kill + {:.2}–{:.2} s)",
            secs(back_after_kill.first().copied().unwrap_or(0)),
            secs(back_after_kill.last().copied().unwrap_or(0)),
        );
        println!(
            "    already closed      {guard_skips:>7}  (A closed them and died before its ack: the HSETNX guard skipped them)"
        );
        println!(
            "  claim lateness        p50 {} ms   p99 {} ms   max {} ms   (server claim time − deadline, first claims)",
            pct(&claim_late, 0.50),
            pct(&claim_late, 0.99),
            claim_late.last().copied().unwrap_or(0),
        );
        println!(
            "                        max {} ms   (redeliveries; the lease is {} ms)",
            claim_late_redelivered.last().copied().unwrap_or(0),
            LEASE.as_millis(),
        );
        println!(
            "  close lateness        p50 {} ms   p99 {} ms   max {} ms   (close time − deadline; includes the 10–30 ms provider check)",
            pct(&close_late, 0.50),
            pct(&close_late, 0.99),
            close_late.last().copied().unwrap_or(0),
        );
        println!("  left in the queue     pending {pending}, in flight {in_flight}, dead {dead_n}");

        let mut ok = true;
        let mut check = |cond: bool, what: &str| {
            if !cond {
                println!("  CHECK FAILED: {what}");
                ok = false;
            }
        };
        check(deadlines.len() as u64 == total, "every order was recorded");
        check(
            closed.len() as u64 == total && never_closed == 0,
            "every order was closed",
        );
        check(
            logged_once == closed.len(),
            "the run log agrees with the close records",
        );
        check(closed_twice == 0, "no order was closed twice");
        check(early == 0, "no order was closed before its deadline");
        check(token_reused == 0, "no claim token was handed out twice");
        check(unknown == 0, "no unknown order was closed");
        check(
            wrong_deadline == 0,
            "handlers saw the deadline the put returned",
        );
        check(
            pending == 0 && in_flight == 0 && dead_n == 0,
            "the queue is empty",
        );
        check(kill_ms != u64::MAX, "shop A was killed");
        ok
    }
}

/// Prints `tracing` events at WARN and above to stderr, one line each: all the
/// logging a shop process needs (the library depends on `tracing` alone).
#[cfg(feature = "redis")]
struct WarnsToStderr;

#[cfg(feature = "redis")]
impl tracing::Subscriber for WarnsToStderr {
    fn enabled(&self, m: &tracing::Metadata<'_>) -> bool {
        *m.level() <= tracing::Level::WARN
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        struct Line(String);
        impl tracing::field::Visit for Line {
            fn record_debug(&mut self, f: &tracing::field::Field, v: &dyn std::fmt::Debug) {
                use std::fmt::Write;
                let _ = write!(self.0, " {}={v:?}", f.name());
            }
        }
        let m = event.metadata();
        let mut line = Line(format!("{} {}:", m.level(), m.target()));
        event.record(&mut line);
        eprintln!("{}", line.0);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}
