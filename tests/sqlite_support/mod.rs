//! A SQLite database file per test, in a temp dir of its own that is
//! removed when dropped; and child processes that re-execute the test
//! binary with a role (as `redis_support`'s).

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

/// One temp dir, holding the test's database file(s).
pub struct TempDb {
    pub dir: PathBuf,
    pub path: PathBuf,
}

impl TempDb {
    pub fn new(name: &str) -> TempDb {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "schedpool-sqlite-{}-{}-{name}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("timeouts.db");
        TempDb { dir, path }
    }
}

impl Drop for TempDb {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
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
    cmd.args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env("SCHEDPOOL_ROLE", role)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}
