//! A throw-away `redis-server` for the durable examples: started from PATH
//! on a free loopback port, in its own temp dir, with the settings the
//! durable backend wants (AOF `everysec`, `noeviction`, no RDB snapshots),
//! and killed when dropped. Not an example itself (no `main.rs` here).

#![allow(dead_code)]

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One redis-server process, killed (and its directory removed) on drop.
pub struct RedisServer {
    pub port: u16,
    pub dir: PathBuf,
    child: Child,
}

impl RedisServer {
    /// Starts redis-server, or exits the process with a hint when it is not
    /// installed.
    pub fn start() -> RedisServer {
        let found = Command::new("redis-server")
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !found {
            eprintln!(
                "redis-server was not found on PATH.\n\
                 This example starts its own Redis (7.0 or later). Install it with\n\n    \
                 sudo apt-get install redis-server\n\n\
                 (or your platform's package), then run the example again."
            );
            std::process::exit(2);
        }
        let port = free_port();
        let dir = std::env::temp_dir().join(format!(
            "schedpool-example-redis-{}-{port}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create a temp dir for redis-server");
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
            .expect("spawn redis-server");
        let server = RedisServer { port, dir, child };
        let limit = Instant::now() + Duration::from_secs(20);
        while !server.ping() {
            assert!(
                Instant::now() < limit,
                "redis-server on port {port} did not answer within 20 s (see {}/redis.log)",
                server.dir.display()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        server
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// A plain connection, for the examples' own bookkeeping.
    pub fn conn(&self) -> redis::Connection {
        connect(&self.url())
    }

    /// `redis_version` from INFO.
    pub fn version(&self) -> String {
        let info: String = redis::cmd("INFO")
            .arg("server")
            .query(&mut self.conn())
            .expect("INFO server");
        info_field(&info, "redis_version")
            .unwrap_or("?")
            .to_string()
    }

    fn ping(&self) -> bool {
        let Ok(client) = redis::Client::open(self.url()) else {
            return false;
        };
        let Ok(mut c) = client.get_connection_with_timeout(Duration::from_millis(200)) else {
            return false;
        };
        redis::cmd("PING").query::<String>(&mut c).is_ok()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A plain connection to `url` with generous timeouts.
pub fn connect(url: &str) -> redis::Connection {
    let client = redis::Client::open(url).expect("redis url");
    let c = client
        .get_connection_with_timeout(Duration::from_secs(2))
        .expect("connect to redis-server");
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    c.set_write_timeout(Some(Duration::from_secs(30))).unwrap();
    c
}

/// One `field:value` line of an INFO reply.
pub fn info_field<'a>(info: &'a str, field: &str) -> Option<&'a str> {
    info.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .map(str::trim)
}

fn free_port() -> u16 {
    loop {
        let port = TcpListener::bind("127.0.0.1:0")
            .expect("bind a loopback port")
            .local_addr()
            .expect("local addr")
            .port();
        if TcpStream::connect(("127.0.0.1", port)).is_err() {
            return port;
        }
    }
}
