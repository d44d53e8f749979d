//! A real `redis-server` per test: installed on demand (Debian's package),
//! started on a free loopback port in its own temp dir with AOF `everysec`,
//! `noeviction` and no RDB snapshots, and killed by pid when dropped.
//!
//! Child processes: [`child`] re-executes the current test binary running
//! only the named test, with a role in `SCHEDPOOL_ROLE`; the test checks
//! [`role`] first and plays the child's part when it is set.

#![allow(dead_code)]

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Once;
use std::time::{Duration, Instant};

/// Installs redis-server (and faketime) with apt-get when missing.
pub fn ensure_installed() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if which("redis-server") && which("faketime") {
            return;
        }
        // Several test binaries may race here: serialise through flock.
        let status = Command::new("flock")
            .args(["/tmp/schedpool-apt.lock", "sh", "-c"])
            .arg(
                "command -v redis-server >/dev/null && command -v faketime >/dev/null || \
                 { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
                   apt-get install -y -qq redis-server faketime >/dev/null; }",
            )
            .status()
            .expect("run apt-get");
        assert!(
            status.success(),
            "could not install redis-server with apt-get"
        );
        assert!(
            which("redis-server"),
            "redis-server still missing after apt-get"
        );
    });
}

fn which(cmd: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {cmd} >/dev/null")])
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// One redis-server process.
pub struct Redis {
    pub port: u16,
    pub dir: PathBuf,
    child: Option<Child>,
    extra: Vec<String>,
}

impl Redis {
    /// Starts a fresh server with the durable settings.
    pub fn start() -> Redis {
        Self::start_with(&[])
    }

    /// Starts a fresh server with extra `--name value` settings appended.
    pub fn start_with(extra: &[&str]) -> Redis {
        ensure_installed();
        let port = free_port();
        let dir =
            std::env::temp_dir().join(format!("schedpool-redis-{}-{port}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        let mut redis = Redis {
            port,
            dir,
            child: None,
            extra: extra.iter().map(|s| s.to_string()).collect(),
        };
        redis.spawn();
        redis
    }

    fn spawn(&mut self) {
        let mut cmd = Command::new("redis-server");
        cmd.args(["--port", &self.port.to_string()])
            .args(["--bind", "127.0.0.1"])
            .arg("--dir")
            .arg(&self.dir)
            .args(["--appendonly", "yes", "--appendfsync", "everysec"])
            .args(["--maxmemory-policy", "noeviction", "--save", ""])
            .args(["--daemonize", "no", "--logfile", "redis.log"])
            .args(&self.extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        self.child = Some(cmd.spawn().expect("spawn redis-server"));
        let limit = Instant::now() + Duration::from_secs(20);
        while Instant::now() < limit {
            if self.ping() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!(
            "redis-server on port {} did not answer within 20 s",
            self.port
        );
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// True when the server answers PING.
    pub fn ping(&self) -> bool {
        let Ok(client) = redis::Client::open(self.url()) else {
            return false;
        };
        let Ok(mut c) = client.get_connection_with_timeout(Duration::from_millis(200)) else {
            return false;
        };
        redis::cmd("PING").query::<String>(&mut c).is_ok()
    }

    /// A plain connection for inspecting keys.
    pub fn conn(&self) -> redis::Connection {
        let client = redis::Client::open(self.url()).unwrap();
        let c = client
            .get_connection_with_timeout(Duration::from_secs(2))
            .unwrap();
        c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        c
    }

    /// kill -9 the server (data survives in its AOF).
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again on the same port and directory.
    pub fn restart(&mut self) {
        self.kill9();
        self.spawn();
    }

    /// The server's pid, for SIGSTOP/SIGCONT.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.kill9();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn free_port() -> u16 {
    loop {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        // Skip a port something answers on already.
        if TcpStream::connect(("127.0.0.1", port)).is_err() {
            return port;
        }
    }
}

/// The role this process plays, when it is a child started by [`child`].
pub fn role() -> Option<String> {
    std::env::var("SCHEDPOOL_ROLE").ok()
}

/// Re-executes this test binary, running only `test` with `role` and the
/// extra environment; stdout is piped so the parent can read progress lines.
pub fn child(test: &str, role: &str, env: &[(&str, String)]) -> Command {
    let exe = std::env::current_exe().expect("test binary path");
    let mut cmd = Command::new(exe);
    cmd.args([
        test,
        "--exact",
        "--nocapture",
        "--test-threads=1",
        "--include-ignored",
    ])
    .env("SCHEDPOOL_ROLE", role)
    .stdout(Stdio::piped())
    .stderr(Stdio::inherit());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

/// Sends a signal (`"STOP"`, `"CONT"`, `"KILL"`) to a pid.
pub fn signal(pid: u32, sig: &str) {
    let status = Command::new("kill")
        .args([&format!("-{sig}"), &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -{sig} {pid} failed");
}

/// Panics the test if `f` has not returned within `limit` (a watchdog for
/// tests that could otherwise hang CI).
pub fn watchdog<R>(limit: Duration, f: impl FnOnce() -> R) -> R {
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = done.clone();
    std::thread::spawn(move || {
        let until = Instant::now() + limit;
        while Instant::now() < until {
            if flag.load(std::sync::atomic::Ordering::Relaxed) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        eprintln!("watchdog: test exceeded {limit:?}; aborting");
        std::process::abort();
    });
    let r = f();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    r
}
