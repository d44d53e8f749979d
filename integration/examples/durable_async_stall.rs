//! How much a durable queue's blocking calls stall a tokio runtime, called
//! directly from async tasks, through `spawn_blocking`, or through one
//! dedicated thread fed by a channel (the numbers in docs/durable.md's
//! "From async code").
//!
//! `TASKS` async tasks each do `PUTS` puts; meanwhile a ticker task on the
//! same runtime sleeps 1 ms at a time and records how late each wake-up
//! was. A runtime worker stuck in a blocking call cannot run the ticker, so
//! its lateness is the stall. Rounds alternate the three ways, on the
//! memory backend and (with `--features redis` and `redis-server` on PATH,
//! started here on a free loopback port in a temp dir) on Redis.
//!
//! Run: `cargo run --release -p schedpool-integration --features redis --example durable_async_stall`
//! (env: `TASKS` default 32, `PUTS` default 100, `ROUNDS` default 3,
//! `WORKERS` runtime worker threads, default 2).

use std::sync::Arc;
use std::time::{Duration, Instant};

use schedpool::durable::{DurableBackend, DurableQueue, MemoryBackend};
use tokio::sync::{mpsc, oneshot, Mutex};

#[derive(Clone, Copy, Debug)]
enum Way {
    Direct,
    SpawnBlocking,
    Thread,
}

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Ticker lateness over a run: (ticks, p99, max).
struct Stall {
    ticks: usize,
    p99: Duration,
    max: Duration,
}

async fn ticker(stop: Arc<Mutex<bool>>) -> Stall {
    let period = Duration::from_millis(1);
    let mut late = Vec::new();
    let mut due = tokio::time::Instant::now() + period;
    loop {
        tokio::time::sleep_until(due).await;
        late.push(tokio::time::Instant::now() - due);
        if *stop.lock().await {
            break;
        }
        due += period;
        // A stalled ticker does not replay its missed ticks.
        let now = tokio::time::Instant::now();
        if due < now {
            due = now + period;
        }
    }
    late.sort_unstable();
    let p99 = late[(late.len() * 99 / 100).min(late.len() - 1)];
    Stall {
        ticks: late.len(),
        p99,
        max: *late.last().unwrap(),
    }
}

/// One dedicated thread owns the blocking calls; async tasks send it work
/// and await a oneshot reply.
type Job = (String, u64, oneshot::Sender<Result<(), String>>);

fn start_put_thread(queue: DurableQueue<u64>) -> mpsc::UnboundedSender<Job> {
    let (tx, mut rx) = mpsc::unbounded_channel::<Job>();
    std::thread::Builder::new()
        .name("durable-calls".into())
        .spawn(move || {
            while let Some((id, value, reply)) = rx.blocking_recv() {
                let done = queue
                    .put(&id, &value, Duration::from_secs(3600))
                    .map(drop)
                    .map_err(|e| e.to_string());
                let _ = reply.send(done);
            }
        })
        .expect("spawn the durable-calls thread");
    tx
}

async fn round(
    queue: &DurableQueue<u64>,
    way: Way,
    tasks: usize,
    puts: usize,
    tag: usize,
) -> (Duration, Stall) {
    let stop = Arc::new(Mutex::new(false));
    let ticker = tokio::spawn(ticker(stop.clone()));
    // Let the ticker settle in first.
    tokio::time::sleep(Duration::from_millis(20)).await;
    let thread = matches!(way, Way::Thread).then(|| start_put_thread(queue.clone()));
    let start = Instant::now();
    let mut all = Vec::new();
    for t in 0..tasks {
        let q = queue.clone();
        let thread = thread.clone();
        all.push(tokio::spawn(async move {
            for i in 0..puts {
                let id = format!("r{tag}-t{t}-{i}");
                let value = i as u64;
                match way {
                    // The mistake: a blocking round trip on a runtime worker.
                    Way::Direct => {
                        q.put(&id, &value, Duration::from_secs(3600)).unwrap();
                    }
                    Way::SpawnBlocking => {
                        let q = q.clone();
                        tokio::task::spawn_blocking(move || {
                            q.put(&id, &value, Duration::from_secs(3600)).map(drop)
                        })
                        .await
                        .unwrap()
                        .unwrap();
                    }
                    Way::Thread => {
                        let (reply, done) = oneshot::channel();
                        thread.as_ref().unwrap().send((id, value, reply)).unwrap();
                        done.await.unwrap().unwrap();
                    }
                }
            }
        }));
    }
    for task in all {
        task.await.unwrap();
    }
    let took = start.elapsed();
    *stop.lock().await = true;
    (took, ticker.await.unwrap())
}

fn measure(
    name: &str,
    backend: impl DurableBackend,
    tasks: usize,
    puts: usize,
    rounds: usize,
    workers: usize,
) {
    let queue: DurableQueue<u64> = DurableQueue::new(backend);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_time()
        .build()
        .expect("a tokio runtime");
    let ways = [Way::Direct, Way::SpawnBlocking, Way::Thread];
    let mut tag = 0;
    for r in 0..rounds {
        for way in ways {
            tag += 1;
            let (took, stall) = rt.block_on(round(&queue, way, tasks, puts, tag));
            let n = tasks * puts;
            println!(
                "{name:<7} round {r}  {:<14} {n} puts in {:>7.1} ms ({:>6.1} µs/put)  ticker: {} ticks, p99 late {:>8.3} ms, max late {:>8.3} ms",
                format!("{way:?}"),
                took.as_secs_f64() * 1e3,
                took.as_secs_f64() * 1e6 / n as f64,
                stall.ticks,
                stall.p99.as_secs_f64() * 1e3,
                stall.max.as_secs_f64() * 1e3,
            );
        }
    }
}

fn main() {
    let tasks = env("TASKS", 32);
    let puts = env("PUTS", 100);
    let rounds = env("ROUNDS", 3);
    let workers = env("WORKERS", 2);
    println!(
        "{tasks} async tasks x {puts} puts, {workers} runtime workers, {rounds} rounds; ticker period 1 ms"
    );
    measure("memory", MemoryBackend::new(), tasks, puts, rounds, workers);
    #[cfg(feature = "redis")]
    {
        match redis_server::RedisServer::start() {
            Some(server) => {
                let backend = schedpool::durable::RedisBackend::connect(&server.url(), "stall")
                    .expect("connect to the redis-server just started");
                measure("redis", backend, tasks, puts, rounds, workers);
            }
            None => println!("redis: skipped (redis-server not on PATH)"),
        }
    }
    #[cfg(not(feature = "redis"))]
    println!("redis: skipped (build with --features redis)");
}

/// A throw-away redis-server: a free loopback port, a temp dir, killed by
/// pid on drop. (The library's examples have a fuller one, which needs the
/// `redis` crate directly; this one only needs a socket.)
#[cfg(feature = "redis")]
mod redis_server {
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::path::PathBuf;
    use std::process::{Child, Command, Stdio};
    use std::time::{Duration, Instant};

    pub struct RedisServer {
        port: u16,
        dir: PathBuf,
        child: Child,
    }

    impl RedisServer {
        pub fn start() -> Option<RedisServer> {
            let port = TcpListener::bind("127.0.0.1:0")
                .ok()?
                .local_addr()
                .ok()?
                .port();
            let dir = std::env::temp_dir().join(format!(
                "schedpool-stall-redis-{}-{port}",
                std::process::id()
            ));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).ok()?;
            let child = Command::new("redis-server")
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .arg("--dir")
                .arg(&dir)
                .args(["--appendonly", "yes", "--appendfsync", "everysec"])
                .args(["--maxmemory-policy", "noeviction", "--save", ""])
                .args(["--daemonize", "no", "--logfile", "redis.log"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .ok()?;
            let server = RedisServer { port, dir, child };
            let limit = Instant::now() + Duration::from_secs(20);
            while !server.ping() {
                assert!(
                    Instant::now() < limit,
                    "redis-server did not answer within 20 s"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
            Some(server)
        }

        pub fn url(&self) -> String {
            format!("redis://127.0.0.1:{}/", self.port)
        }

        fn ping(&self) -> bool {
            let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) else {
                return false;
            };
            let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
            let mut reply = [0u8; 7];
            s.write_all(b"PING\r\n").is_ok()
                && s.read_exact(&mut reply).is_ok()
                && &reply == b"+PONG\r\n"
        }
    }

    impl Drop for RedisServer {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}
