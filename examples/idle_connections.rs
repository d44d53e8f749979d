//! Close connections that stay idle past a limit; activity pushes the
//! deadline back.
//!
//! Each connection gets one `pool.idle_timer(LIMIT, close)`. Every request on
//! it calls `touch()`, which only records "active now" (no heap operation);
//! the timer re-arms lazily when its old deadline comes up, and closes the
//! connection once it finds it idle for the whole limit. A touch that comes
//! too late returns false: the connection was already closed and the client
//! has to reconnect.
//!
//! 400 simulated connections over 1.5 s: chatty ones (a request every few
//! tens of ms), bursty ones (pauses, some longer than the limit) and silent
//! ones. Time is real; the limit is 150 ms.
//!
//! Run: `cargo run --release --example idle_connections`

use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use schedpool::{IdleTimer, ScheduledThreadPool};

const LIMIT: Duration = Duration::from_millis(150);
const CONNECTIONS: usize = 400;
const TRAFFIC: Duration = Duration::from_millis(1500);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Profile {
    Chatty,
    Bursty,
    Silent,
}

struct Conn {
    profile: Profile,
    timer: IdleTimer<()>,
    /// When the client will next send a request.
    next_request: Instant,
    /// The last request that reached an open connection (touch returned true).
    last_active: Instant,
    opened: Instant,
}

/// xorshift64*: a tiny deterministic random source for the simulation.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn ms(&mut self, lo: u64, hi: u64) -> Duration {
        Duration::from_millis(lo + self.next() % (hi - lo + 1))
    }
}

fn main() {
    let start = Instant::now();
    let pool = ScheduledThreadPool::builder()
        .core_threads(2)
        .thread_name("reaper")
        .build()
        .expect("pool");
    // closed[i]: when connection i's timer closed it.
    let closed: Arc<Mutex<Vec<Option<Instant>>>> = Arc::new(Mutex::new(vec![None; CONNECTIONS]));
    let mut rng = Rng(0x1234_5678_9ABC_DEF1);

    let open = |i: usize, profile: Profile, rng: &mut Rng| {
        let closed = closed.clone();
        // Read the clock before arming: the timer counts from a later read.
        let now = Instant::now();
        let timer = pool
            .idle_timer(LIMIT, move || {
                closed.lock().unwrap()[i] = Some(Instant::now());
            })
            .expect("pool is running");
        Conn {
            profile,
            timer,
            next_request: now + rng.ms(1, 100),
            last_active: now,
            opened: now,
        }
    };
    let mut conns: Vec<Conn> = (0..CONNECTIONS)
        .map(|i| {
            let profile = match i % 4 {
                0 | 1 => Profile::Chatty,
                2 => Profile::Bursty,
                _ => Profile::Silent,
            };
            open(i, profile, &mut rng)
        })
        .collect();

    // The clients: requests until TRAFFIC is over, then everyone goes quiet.
    let (mut touches, mut refused) = (0u64, 0u64);
    while start.elapsed() < TRAFFIC {
        for c in conns.iter_mut().filter(|c| c.profile != Profile::Silent) {
            let now = Instant::now();
            if now < c.next_request {
                continue;
            }
            // Record the time *before* touching: the timer counts from a later read.
            let at = Instant::now();
            if c.timer.touch() {
                c.last_active = at;
                touches += 1;
            } else {
                refused += 1; // closed already: the client would reconnect
            }
            c.next_request = now
                + match c.profile {
                    Profile::Chatty => rng.ms(5, 60),
                    // Mostly short gaps, one in four longer than the limit.
                    _ if rng.next() % 4 == 0 => rng.ms(200, 400),
                    _ => rng.ms(10, 100),
                };
        }
        thread::sleep(Duration::from_millis(2));
    }
    let traffic_end = Instant::now();

    // Everyone is idle now: every connection must close within the limit.
    for c in &conns {
        assert!(
            c.timer.handle().wait_timeout(Duration::from_secs(5)),
            "closed eventually"
        );
    }
    let closed = closed.lock().unwrap().clone();
    // A run is counted once its worker is done with it, just after its
    // handle completes: wait for the last ones.
    assert!(pool.wait_idle(Duration::from_secs(5)));

    // Check: never closed while active within the limit; every one closed.
    let mut early = 0;
    let mut slack = Vec::new();
    let mut closed_during_traffic = [0usize; 3];
    for (c, at) in conns.iter().zip(&closed) {
        let at = at.expect("every idle connection is closed");
        if at < c.last_active + LIMIT {
            early += 1;
        }
        slack.push(at - (c.last_active + LIMIT));
        if at < traffic_end {
            closed_during_traffic[c.profile as usize] += 1;
        }
        assert!(at >= c.opened + LIMIT);
    }
    slack.sort();
    let pct = |p: f64| slack[((slack.len() - 1) as f64 * p) as usize].as_secs_f64() * 1e3;
    let stats = pool.stats();

    println!(
        "  {CONNECTIONS} connections, idle limit {} ms, traffic for {} ms",
        LIMIT.as_millis(),
        TRAFFIC.as_millis()
    );
    println!("  touches (requests on open connections) {touches:>7}");
    println!("  requests on closed connections         {refused:>7}  (touch() returned false)");
    println!(
        "  closed during traffic: chatty {}  bursty {}  silent {}",
        closed_during_traffic[0], closed_during_traffic[1], closed_during_traffic[2]
    );
    println!(
        "  closed after traffic stopped           {:>7}",
        closed.len() - closed_during_traffic.iter().sum::<usize>()
    );
    println!("  closed while active within the limit   {early:>7}  (must be 0)");
    println!(
        "  close time past last activity + limit  p50 {:.2} ms  p99 {:.2} ms  max {:.2} ms",
        pct(0.5),
        pct(0.99),
        pct(1.0)
    );
    println!(
        "  timer runs in the pool                 {:>7}  (one close each; re-arms are not runs)",
        stats.completed
    );
    println!(
        "  wall time                              {:>7.2} s",
        start.elapsed().as_secs_f64()
    );

    assert_eq!(
        early, 0,
        "a connection was closed while active within the limit"
    );
    assert_eq!(
        closed_during_traffic[Profile::Silent as usize],
        CONNECTIONS / 4
    );
    assert!(
        closed_during_traffic[Profile::Bursty as usize] > 0,
        "long pauses close bursty ones"
    );
    assert!(refused > 0, "some clients came back to a closed connection");
    assert_eq!(
        stats.completed, CONNECTIONS as u64,
        "a timer runs once, when it closes its connection: its re-arms are not runs"
    );
    assert_eq!(pool.queue_len(), 0, "no timer left behind");
    assert!(pool.shutdown().await_termination(Duration::from_secs(5)));
    println!("ok");
}
