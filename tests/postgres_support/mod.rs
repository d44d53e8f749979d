//! A private PostgreSQL cluster per test: Debian's `postgresql` installed on
//! demand, `initdb` run once per machine into a template (as the
//! unprivileged `postgres` user when the tests run as root, since the server
//! refuses to run as root), copied into a temp dir per test, and started on
//! a free loopback port with its socket in that dir. Stopped by pid when
//! dropped.
//!
//! Child processes: re-use `redis_support`'s pattern: [`child`] re-executes
//! the current test binary for one test with a role in `SCHEDPOOL_ROLE`.

#![allow(dead_code)]

use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Where the binaries are, and who runs them.
struct Install {
    bin: PathBuf,
    /// (uid, gid) of the unprivileged user, when we are root.
    user: Option<(u32, u32)>,
}

fn install() -> &'static Install {
    static INSTALL: OnceLock<Install> = OnceLock::new();
    INSTALL.get_or_init(|| {
        if bin_dir().is_none() {
            // Several test binaries may race here: serialise through flock.
            let status = Command::new("flock")
                .args(["/tmp/schedpool-apt.lock", "sh", "-c"])
                .arg(
                    "ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || \
                     { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
                       apt-get install -y -qq postgresql >/dev/null; }",
                )
                .status()
                .expect("run apt-get");
            assert!(
                status.success(),
                "could not install postgresql with apt-get"
            );
        }
        let bin = bin_dir().expect("postgresql binaries still missing after apt-get");
        let user = if id("-u") == 0 {
            Some(postgres_user())
        } else {
            None
        };
        Install { bin, user }
    })
}

/// The newest /usr/lib/postgresql/<v>/bin with an initdb.
fn bin_dir() -> Option<PathBuf> {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let v: u32 = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((v, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, b)| b)
}

fn id(flag: &str) -> u32 {
    let out = Command::new("id").arg(flag).output().expect("run id");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("numeric id")
}

/// The `postgres` user (made by Debian's package), created if missing.
fn postgres_user() -> (u32, u32) {
    let lookup = || {
        let uid = Command::new("id").args(["-u", "postgres"]).output().ok()?;
        let gid = Command::new("id").args(["-g", "postgres"]).output().ok()?;
        if !uid.status.success() {
            return None;
        }
        let n = |o: &std::process::Output| String::from_utf8_lossy(&o.stdout).trim().parse().ok();
        Some((n(&uid)?, n(&gid)?))
    };
    if let Some(ids) = lookup() {
        return ids;
    }
    let _ = Command::new("useradd")
        .args([
            "--system",
            "--no-create-home",
            "--shell",
            "/bin/false",
            "postgres",
        ])
        .status();
    lookup().expect("a postgres user")
}

fn run_as(cmd: &mut Command) -> &mut Command {
    if let Some((uid, gid)) = install().user {
        cmd.uid(uid).gid(gid);
    }
    cmd
}

fn chown_tree(path: &Path) {
    if let Some((uid, gid)) = install().user {
        let status = Command::new("chown")
            .args(["-R", &format!("{uid}:{gid}")])
            .arg(path)
            .status()
            .expect("run chown");
        assert!(status.success());
    }
}

/// A fresh cluster's data dir, made once per machine (under a lock), so
/// each test copies it instead of running initdb.
fn template() -> PathBuf {
    static TEMPLATE: OnceLock<PathBuf> = OnceLock::new();
    TEMPLATE
        .get_or_init(|| {
            let inst = install();
            let version = inst
                .bin
                .parent()
                .and_then(|p| p.file_name())
                .map(|v| v.to_string_lossy().into_owned())
                .unwrap_or_default();
            let dir = PathBuf::from(format!("/tmp/schedpool-pg-template-{version}"));
            let lock = Command::new("flock")
                .arg("/tmp/schedpool-pg-template.lock")
                .args(["sh", "-c"])
                .arg(format!(
                    "test -f {d}/data/PG_VERSION && test -f {d}/ready || exit 3",
                    d = dir.display()
                ))
                .status()
                .expect("run flock");
            if lock.code() == Some(0) {
                return dir;
            }
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            chown_tree(&dir);
            let out = run_as(
                Command::new(inst.bin.join("initdb"))
                    .arg("-D")
                    .arg(dir.join("data"))
                    .args(["-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C"])
                    .arg("--no-sync")
                    .stdout(Stdio::null()),
            )
            .output()
            .expect("run initdb");
            assert!(
                out.status.success(),
                "initdb failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            std::fs::write(dir.join("ready"), b"").unwrap();
            dir
        })
        .clone()
}

/// The pids of the postmasters this process started and has not stopped:
/// the watchdog stops them before it aborts, so no server outlives a hung
/// test.
static LIVE: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());

fn forget(pid: u32) {
    LIVE.lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|&p| p != pid);
}

/// One PostgreSQL server (postmaster) process and its data dir.
pub struct Postgres {
    pub port: u16,
    pub dir: PathBuf,
    child: Option<Child>,
    extra: Vec<String>,
}

impl Postgres {
    /// Starts a fresh cluster.
    pub fn start() -> Postgres {
        Self::start_with(&[])
    }

    /// Starts a fresh cluster with `ssl=on` and the given server
    /// certificate and key (copied into the data dir as `server.crt` and
    /// `server.key`, mode 0600, owned by the user that runs the server).
    pub fn start_tls(cert: &Path, key: &Path) -> Postgres {
        Self::start_inner(
            &[
                "ssl=on",
                "ssl_cert_file=server.crt",
                "ssl_key_file=server.key",
            ],
            &[(cert, "server.crt"), (key, "server.key")],
        )
    }

    /// Starts a fresh cluster with extra `-c name=value` settings.
    pub fn start_with(extra: &[&str]) -> Postgres {
        Self::start_inner(extra, &[])
    }

    fn start_inner(extra: &[&str], files: &[(&Path, &str)]) -> Postgres {
        let template = template();
        let port = free_port();
        let dir = std::env::temp_dir().join(format!("schedpool-pg-{}-{port}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let status = Command::new("cp")
            .arg("-a")
            .arg(template.join("data"))
            .arg(dir.join("data"))
            .status()
            .expect("run cp");
        assert!(status.success(), "copy the template cluster");
        for (from, name) in files {
            let to = dir.join("data").join(name);
            std::fs::copy(from, &to).expect("copy a TLS file");
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        chown_tree(&dir);
        let mut pg = Postgres {
            port,
            dir,
            child: None,
            extra: extra.iter().map(|s| s.to_string()).collect(),
        };
        pg.spawn(true);
        pg
    }

    /// Starts the server and waits until it (this child, not another
    /// test's server that won the port: see [`Postgres::ours`]) accepts
    /// connections. On a `fresh` start a server that exits, as one whose
    /// port another process took between `free_port` and its bind does, is
    /// started again on another free port; a restart keeps its port, which
    /// clients already know.
    fn spawn(&mut self, fresh: bool) {
        let inst = install();
        // A restart right after kill -9 can find the old backends still
        // attached to shared memory for a moment: retry.
        let limit = Instant::now() + Duration::from_secs(30);
        loop {
            let mut cmd = Command::new(inst.bin.join("postgres"));
            cmd.arg("-D")
                .arg(self.dir.join("data"))
                .args(["-p", &self.port.to_string()])
                .arg("-k")
                .arg(&self.dir)
                .args(["-c", "listen_addresses=127.0.0.1"])
                .args(["-c", "fsync=off", "-c", "full_page_writes=off"])
                .args(["-c", "max_connections=200", "-c", "shared_buffers=32MB"])
                .args([
                    "-c",
                    "logging_collector=off",
                    "-c",
                    "log_min_messages=fatal",
                ]);
            for e in &self.extra {
                cmd.args(["-c", e]);
            }
            let log = std::fs::File::create(self.dir.join("server.log")).unwrap();
            cmd.stdout(Stdio::null()).stderr(log);
            let mut child = run_as(&mut cmd).spawn().expect("spawn postgres");
            let started = Instant::now();
            while started.elapsed() < Duration::from_secs(20) {
                if self.ours() {
                    LIVE.lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(child.id());
                    self.child = Some(child);
                    return;
                }
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
            if fresh {
                self.port = free_port();
            }
            assert!(
                Instant::now() < limit,
                "postgres on port {} did not start: {}",
                self.port,
                std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Connection parameters as the superuser `postgres`.
    pub fn params(&self) -> String {
        format!(
            "host=127.0.0.1 port={} user=postgres dbname=postgres connect_timeout=2",
            self.port
        )
    }

    /// A `postgresql://` URL as the superuser.
    pub fn url(&self) -> String {
        format!("postgresql://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// True when this cluster (its data directory, not another test's
    /// server on the same port) accepts a connection.
    fn ours(&self) -> bool {
        let Ok(mut c) = postgres::Client::connect(&self.params(), postgres::NoTls) else {
            return false;
        };
        let dir = c
            .query_one("SHOW data_directory", &[])
            .map(|row| row.get::<_, String>(0));
        dir.is_ok_and(|d| std::path::Path::new(&d) == self.dir.join("data"))
    }

    /// True when the server accepts a connection.
    pub fn ready(&self) -> bool {
        TcpStream::connect(("127.0.0.1", self.port)).is_ok()
            && postgres::Client::connect(&self.params(), postgres::NoTls).is_ok()
    }

    /// A superuser connection, for inspection and set-up.
    pub fn client(&self) -> postgres::Client {
        postgres::Client::connect(&self.params(), postgres::NoTls).expect("connect")
    }

    /// kill -9 the server: the postmaster and every process it started
    /// (backends, checkpointer, writers), as a crash of its host would
    /// end them, and returns once all are gone. The postmaster alone is
    /// not enough: its backends exit only when they notice it gone, and
    /// until then a connection's next statement is still answered (a
    /// "server that is gone" answered `relation does not exist` on a
    /// 2-core CI machine), and a restart can find the old shared memory
    /// in use.
    pub fn kill9(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let pid = child.id();
        forget(pid);
        // Stopped, the postmaster starts no process between the listing
        // of its children and its death.
        signal(pid, "STOP");
        let children = children_of(pid);
        let _ = child.kill();
        let _ = child.wait();
        for &c in &children {
            kill_quietly(c);
        }
        let until = Instant::now() + Duration::from_secs(30);
        while children.iter().any(|&c| alive(c)) {
            assert!(
                Instant::now() < until,
                "postgres processes {children:?} outlived SIGKILL by 30 s"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Starts the server again on the same port and data dir (crash
    /// recovery replays the WAL).
    pub fn restart(&mut self) {
        self.kill9();
        self.spawn(false);
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }
}

/// SIGKILL to a pid that may have exited already.
fn kill_quietly(pid: u32) {
    let _ = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .stderr(Stdio::null())
        .status();
}

/// The pids whose parent is `parent` (from `/proc/<pid>/stat`).
fn children_of(parent: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| stat_field(pid, 1).and_then(|p| p.parse().ok()) == Some(parent))
        .collect()
}

/// Field `n` after the command name of `/proc/<pid>/stat` (0: the state,
/// 1: the parent's pid).
fn stat_field(pid: u32, n: usize) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The name is in parentheses and may hold spaces: split after it.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(n).map(str::to_string)
}

/// Whether `pid` is a process that has not exited (a zombie has).
fn alive(pid: u32) -> bool {
    stat_field(pid, 0).is_some_and(|state| state != "Z" && state != "X")
}

impl Drop for Postgres {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            forget(child.id());
            // SIGQUIT: immediate shutdown, which also ends the backends.
            let _ = Command::new("kill")
                .args(["-QUIT", &child.id().to_string()])
                .status();
            let until = Instant::now() + Duration::from_secs(5);
            while Instant::now() < until {
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
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

/// Aborts the test process if `f` has not returned within `limit`. A
/// panic in `f` disarms it too: the test has failed, and its message and
/// the other tests of the binary must not be thrown away by an abort.
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
        for pid in LIVE.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            let _ = Command::new("kill")
                .args(["-QUIT", &pid.to_string()])
                .status();
        }
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
