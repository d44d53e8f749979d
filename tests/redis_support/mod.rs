//! A real `redis-server` per test: installed on demand (Debian's package),
//! started on a free loopback port in its own temp dir with AOF `everysec`,
//! `noeviction` and no RDB snapshots, and killed by pid when dropped.
//!
//! Child processes: [`child`] re-executes the current test binary running
//! only the named test, with a role in `SCHEDPOOL_ROLE`; the test checks
//! [`role`] first and plays the child's part when it is set.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
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
    /// TLS-only: `port` speaks TLS, plain commands go to this socket.
    unix: Option<PathBuf>,
    /// How far the server's wall clock is off the real one, in ms.
    skew_ms: Option<i64>,
}

impl Redis {
    /// Starts a TLS-only server: `port` speaks TLS only (with the server
    /// certificate and key given); the test's own inspection connections
    /// go through a unix socket in the temp dir, so no plain TCP port is
    /// open. Clients are not asked for certificates.
    pub fn start_tls(cert: &Path, key: &Path, ca: &Path) -> Redis {
        ensure_installed();
        let port = free_port();
        let dir =
            std::env::temp_dir().join(format!("schedpool-redis-{}-{port}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        let sock = dir.join("redis.sock");
        let p = |p: &Path| p.display().to_string();
        let extra = vec![
            "--tls-port".into(),
            port.to_string(),
            "--tls-cert-file".into(),
            p(cert),
            "--tls-key-file".into(),
            p(key),
            "--tls-ca-cert-file".into(),
            p(ca),
            "--tls-auth-clients".into(),
            "no".into(),
            "--unixsocket".into(),
            p(&sock),
            "--unixsocketperm".into(),
            "700".into(),
        ];
        let mut redis = Redis {
            port,
            dir,
            child: None,
            extra,
            unix: Some(sock),
            skew_ms: None,
        };
        redis.spawn_fresh();
        redis
    }

    /// Starts a fresh server with the durable settings.
    pub fn start() -> Redis {
        Self::start_with(&[])
    }

    /// Starts a fresh server with extra `--name value` settings appended.
    pub fn start_with(extra: &[&str]) -> Redis {
        Self::fresh(extra, None)
    }

    fn fresh(extra: &[&str], skew_ms: Option<i64>) -> Redis {
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
            unix: None,
            skew_ms,
        };
        redis.spawn_fresh();
        redis
    }

    /// Starts a fresh server whose clock (`TIME`, and so every deadline)
    /// is `skew_ms` off the real one (see [`skew_clock`]).
    pub fn start_with_clock(skew_ms: i64) -> Redis {
        Self::fresh(&[], Some(skew_ms))
    }

    /// Stops the server cleanly (`SHUTDOWN`: the AOF is flushed, nothing
    /// is lost) and starts it again on the same port and directory, with
    /// its clock `skew_ms` off the real one.
    pub fn restart_with_clock(&mut self, skew_ms: i64) {
        if let Some(mut child) = self.child.take() {
            let _ = redis::cmd("SHUTDOWN").query::<()>(&mut self.conn());
            let _ = child.wait();
        }
        self.skew_ms = Some(skew_ms);
        self.spawn();
    }

    /// The first start: when another process took the port between
    /// `free_port` and the server's bind (several test binaries, or other
    /// checkouts' tests, start servers at once on a loaded machine), the
    /// server exits, and this starts it again on another free port.
    fn spawn_fresh(&mut self) {
        for _ in 0..5 {
            if self.try_spawn() {
                return;
            }
            self.port = free_port();
        }
        panic!("redis-server found its port taken five times in a row");
    }

    /// A restart: on the same port, which clients already know.
    fn spawn(&mut self) {
        assert!(
            self.try_spawn(),
            "redis-server could not listen on port {} again (another process took it)",
            self.port
        );
    }

    /// Starts the server and waits until it answers; false when it exited
    /// instead (its port was taken). The answer must be this child's own
    /// (`INFO`'s `process_id`): a server of another test that won the port
    /// answers PING too, and would vanish under this one's clients.
    fn try_spawn(&mut self) -> bool {
        let mut cmd = Command::new("redis-server");
        if let Some(skew_ms) = self.skew_ms {
            skew_clock(&mut cmd, skew_ms);
        }
        let plain_port = if self.unix.is_some() { 0 } else { self.port };
        cmd.args(["--port", &plain_port.to_string()])
            .args(["--bind", "127.0.0.1"])
            .arg("--dir")
            .arg(&self.dir)
            .args(["--appendonly", "yes", "--appendfsync", "everysec"])
            .args(["--maxmemory-policy", "noeviction", "--save", ""])
            .args(["--daemonize", "no", "--logfile", "redis.log"])
            .args(&self.extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let mut child = cmd.spawn().expect("spawn redis-server");
        let limit = Instant::now() + Duration::from_secs(20);
        while Instant::now() < limit {
            if let Ok(Some(_)) = child.try_wait() {
                return false;
            }
            if self.answering_pid() == Some(child.id()) {
                self.child = Some(child);
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!(
            "redis-server on port {} did not answer within 20 s",
            self.port
        );
    }

    /// The pid of the server that answers on this one's address, once it
    /// serves commands (PING is refused while it loads its AOF; INFO is
    /// not), if any.
    fn answering_pid(&self) -> Option<u32> {
        let client = redis::Client::open(self.admin_url()).ok()?;
        let mut c = client
            .get_connection_with_timeout(Duration::from_millis(200))
            .ok()?;
        c.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
        redis::cmd("PING").query::<String>(&mut c).ok()?;
        let info: String = redis::cmd("INFO").arg("server").query(&mut c).ok()?;
        info.lines()
            .find_map(|l| l.strip_prefix("process_id:"))?
            .trim()
            .parse()
            .ok()
    }

    /// The URL the backend connects to (`rediss://` when TLS-only).
    pub fn url(&self) -> String {
        if self.unix.is_some() {
            format!("rediss://127.0.0.1:{}/", self.port)
        } else {
            format!("redis://127.0.0.1:{}/", self.port)
        }
    }

    /// As [`url`](Self::url), with a user and password (`AUTH user pass`).
    pub fn url_as(&self, user: &str, password: &str) -> String {
        let scheme = if self.unix.is_some() {
            "rediss"
        } else {
            "redis"
        };
        format!("{scheme}://{user}:{password}@127.0.0.1:{}/", self.port)
    }

    /// The URL of the test's own inspection connections (plain TCP, or the
    /// unix socket of a TLS-only server).
    fn admin_url(&self) -> String {
        match &self.unix {
            Some(sock) => format!("redis+unix://{}", sock.display()),
            None => format!("redis://127.0.0.1:{}/", self.port),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A plain connection for inspecting keys.
    pub fn conn(&self) -> redis::Connection {
        let client = redis::Client::open(self.admin_url()).unwrap();
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

/// A child process with its `@@` protocol lines on a channel; killed (and
/// reaped) on drop so a failing parent leaves no consumer behind.
pub struct Kid {
    pub name: String,
    child: Option<Child>,
    pub lines: Receiver<String>,
}

impl Kid {
    pub fn spawn(name: &str, mut cmd: Command) -> Kid {
        let mut child = cmd.spawn().expect("spawn child test process");
        let out = child.stdout.take().expect("piped stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        let tag = name.to_string();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                // The harness prints "test name ... " without a newline
                // before the test's first line: look for "@@" anywhere.
                if let Some(at) = line.find("@@") {
                    if tx.send(line[at + 2..].to_string()).is_err() {
                        break;
                    }
                } else if std::env::var("FLEET_VERBOSE").is_ok() {
                    eprintln!("[{tag}] {line}");
                }
            }
        });
        Kid {
            name: name.to_string(),
            child: Some(child),
            lines: rx,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(Child::id).unwrap_or(0)
    }

    /// The next protocol line starting with `prefix` (others are skipped).
    pub fn expect(&self, prefix: &str, limit: Duration) -> String {
        let until = Instant::now() + limit;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.starts_with(prefix) => return line,
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout) => {
                    panic!("{}: no {prefix:?} line within {limit:?}", self.name)
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("{}: exited before printing {prefix:?}", self.name)
                }
            }
        }
    }

    /// kill -9, and reap.
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Waits for a normal exit; panics (after killing it) at `limit`.
    pub fn wait_exit(&mut self, limit: Duration) -> ExitStatus {
        let until = Instant::now() + limit;
        let c = self.child.as_mut().expect("running");
        loop {
            if let Some(status) = c.try_wait().unwrap() {
                self.child = None;
                return status;
            }
            if Instant::now() >= until {
                self.kill9();
                panic!("{}: did not exit within {limit:?}", self.name);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Kid {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// `child(..)` run under `faketime -f <offset>` with a real monotonic clock.
pub fn faketime_child(offset: &str, test: &str, role: &str, env: &[(&str, String)]) -> Command {
    let inner = child(test, role, env);
    let mut cmd = Command::new("faketime");
    cmd.arg("-f").arg(offset).arg(inner.get_program());
    cmd.args(inner.get_args());
    for (k, v) in inner.get_envs() {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    cmd.env("FAKETIME_DONT_FAKE_MONOTONIC", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit());
    cmd
}

/// Runs `cmd` with its wall clock `skew_ms` off the real one, its
/// monotonic clock real: `skew.c` (beside this file), built once with the
/// system's C compiler (Rust's linker) into the test target's temp dir and
/// preloaded. It shifts `gettimeofday`, `time` and `clock_gettime` on the
/// real-time clocks through raw syscalls. libfaketime cannot do this for
/// `redis-server`: it recurses into jemalloc's clock reads at start-up
/// and Redis never answers (libfaketime issue #130).
pub fn skew_clock(cmd: &mut Command, skew_ms: i64) {
    cmd.env("LD_PRELOAD", skew_lib())
        .env("SCHEDPOOL_SKEW_MS", skew_ms.to_string());
}

fn skew_lib() -> PathBuf {
    static LIB: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    LIB.get_or_init(|| {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/redis_support/skew.c");
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
        let lib = dir.join("libschedpool_skew.so");
        // Several test binaries may build it at once: each writes its own
        // file and renames it into place.
        let tmp = dir.join(format!("libschedpool_skew.{}.so", std::process::id()));
        let status = Command::new("cc")
            .args(["-shared", "-fPIC", "-O2", "-o"])
            .arg(&tmp)
            .arg(&src)
            .status()
            .expect("run cc to build the clock-skew shim");
        assert!(status.success(), "cc could not build {}", src.display());
        std::fs::rename(&tmp, &lib).expect("move the clock-skew shim into place");
        lib
    })
    .clone()
}

/// Sends a signal (`"STOP"`, `"CONT"`, `"KILL"`) to a pid.
pub fn signal(pid: u32, sig: &str) {
    let status = Command::new("kill")
        .args([&format!("-{sig}"), &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -{sig} {pid} failed");
}

/// Aborts the test process if `f` has not returned within `limit` (a
/// watchdog for tests that could otherwise hang CI). A panic in `f`
/// disarms it too: the test has failed, and its message and the other
/// tests of the binary must not be thrown away by an abort.
pub fn watchdog<R>(limit: Duration, f: impl FnOnce() -> R) -> R {
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = done.clone();
    let name = std::thread::current().name().map(str::to_string);
    std::thread::spawn(move || {
        let until = Instant::now() + limit;
        while Instant::now() < until {
            if flag.load(std::sync::atomic::Ordering::Relaxed) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        // Straight to the process's stderr: `eprintln!` in a thread a test
        // spawned is captured with the test's output, which the abort
        // throws away, and CI would not say which test hung.
        use std::io::Write as _;
        let _ = writeln!(
            std::io::stderr(),
            "watchdog: test {} exceeded {limit:?}; aborting",
            name.as_deref().unwrap_or("?")
        );
        std::process::abort();
    });
    struct Disarm(std::sync::Arc<std::sync::atomic::AtomicBool>);
    impl Drop for Disarm {
        fn drop(&mut self) {
            self.0.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }
    let _disarm = Disarm(done);
    f()
}
