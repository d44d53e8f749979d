//! A real headless Chromium for the console's browser test: Debian's
//! `chromium` and `chromium-driver`, installed with apt-get when missing
//! (as `.ci/run` does first), `chromedriver` started on a free loopback
//! port and killed by pid on drop, and a WebDriver session (fantoccini)
//! with a new empty profile in a temp dir.
//!
//! A machine where they cannot be installed or started fails the test:
//! it never passes without a browser.

#![allow(dead_code)]

use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder};

use super::TempDir;

fn which(cmd: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {cmd} >/dev/null")])
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// Installs chromium and chromium-driver with apt-get when missing.
pub fn ensure_installed() {
    if which("chromium") && which("chromedriver") {
        return;
    }
    // Several test binaries may race here: serialise through flock.
    let status = Command::new("flock")
        .args(["/tmp/schedpool-apt.lock", "sh", "-c"])
        .arg(
            "command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
             { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
               apt-get install -y -qq chromium chromium-driver >/dev/null; }",
        )
        .status()
        .expect("run apt-get (install chromium and chromium-driver)");
    assert!(
        status.success() && which("chromium") && which("chromedriver"),
        "could not install chromium and chromium-driver with apt-get: the browser test cannot run \
         (run `apt-get install -y chromium chromium-driver`, as .ci/run does)"
    );
}

/// A chromedriver process on a loopback port.
pub struct Driver {
    pub port: u16,
    child: Child,
}

impl Driver {
    pub fn start(log_dir: &Path) -> Driver {
        ensure_installed();
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let log = std::fs::File::create(log_dir.join("chromedriver.log")).expect("a log file");
        let child = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .arg("--allowed-ips=127.0.0.1")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start chromedriver");
        let limit = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < limit,
                "chromedriver did not listen within 30 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Driver { port, child }
    }

    /// A headless Chromium session with a new empty profile in `profile`.
    pub async fn session(&self, profile: &TempDir) -> Client {
        let args = [
            "--headless".to_string(),
            "--no-sandbox".to_string(),
            "--disable-gpu".to_string(),
            "--disable-quic".to_string(),
            "--no-first-run".to_string(),
            "--disable-background-networking".to_string(),
            "--disable-component-update".to_string(),
            "--disable-sync".to_string(),
            "--disable-dev-shm-usage".to_string(),
            "--window-size=1280,900".to_string(),
            format!("--user-data-dir={}", profile.path().display()),
        ];
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".to_string(),
            serde_json::json!({ "args": args }),
        );
        ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(caps)
            .connect(&format!("http://127.0.0.1:{}", self.port))
            .await
            .expect("a WebDriver session in headless Chromium")
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
