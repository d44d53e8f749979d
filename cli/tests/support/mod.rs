//! What the CLI, console and browser tests share: a store filled with a
//! known mix of items, and a SQLite file in a temp dir.
//!
//! The fill: 5 pending `close-order` items (`order-1`..`order-5`, u64
//! payloads, due in an hour); one pending `mail` item whose id and JSON
//! payload both hold a `<script>` tag; 3 dead `charge` items
//! (`charge-1`..`charge-3`) whose handler failed with an error holding
//! `<b>`; and one durable calendar schedule, `hourly-report` (kind
//! `report`, every hour on the hour).

#![allow(dead_code)]

pub mod browser;
pub mod http;

use std::path::{Path, PathBuf};
use std::time::Duration;

use std::time::SystemTime;

use schedpool::calendar::Schedule;
use schedpool::durable::{DurableBackend, DurablePool, Misfire};

/// Every hour on the hour (UTC).
#[derive(Debug)]
pub struct Hourly;

impl Schedule for Hourly {
    fn next_after(&self, after: SystemTime) -> Option<SystemTime> {
        let secs = after.duration_since(SystemTime::UNIX_EPOCH).ok()?.as_secs();
        Some(SystemTime::UNIX_EPOCH + Duration::from_secs((secs / 3600 + 1) * 3600))
    }
}

/// The id with markup in it.
pub const SCRIPT_ID: &str = "<script>alert('id')</script>";
/// The payload with markup in it.
pub const SCRIPT_PAYLOAD: &str = r#"{"note":"<script>alert('payload')</script>"}"#;
/// The queue name every test uses.
pub const QUEUE: &str = "orders";

/// Fills the store `open` opens (called twice: a producer and a worker
/// that dead-letters the charges).
pub fn fill<B: DurableBackend>(open: impl Fn() -> B) {
    let producer = DurablePool::producer(open()).expect("a producer");
    let hour = Duration::from_secs(3600);
    for i in 1..=5u64 {
        producer
            .schedule("close-order", &format!("order-{i}"), &i, hour)
            .expect("schedule");
    }
    producer
        .schedule("mail", SCRIPT_ID, &SCRIPT_PAYLOAD.to_string(), hour)
        .expect("schedule");
    for i in 1..=3u64 {
        producer
            .schedule("charge", &format!("charge-{i}"), &i, Duration::ZERO)
            .expect("schedule");
    }
    producer
        .schedule_calendar("report", "hourly-report", &(), Hourly, Misfire::skip())
        .expect("a calendar schedule");
    producer.shutdown();
    let worker = DurablePool::builder(open())
        .threads(1)
        .max_attempts(1)
        .handler("charge", |_: &u64, _job| Err("card declined <b>".into()))
        .build()
        .expect("a worker");
    let limit = std::time::Instant::now() + Duration::from_secs(30);
    while worker.counts().expect("counts").dead < 3 {
        assert!(std::time::Instant::now() < limit, "the charges did not die");
        std::thread::sleep(Duration::from_millis(20));
    }
    worker.shutdown();
    assert!(worker.await_termination(Duration::from_secs(10)));
}

/// A temp dir removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!(
            "schedpool-cli-{tag}-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        std::fs::create_dir_all(&dir).expect("a temp dir");
        TempDir(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A SQLite file in `dir`, filled; its `sqlite:` URL.
#[cfg(feature = "sqlite")]
pub fn sqlite_store(dir: &TempDir) -> String {
    let path = dir.path().join("orders.db");
    fill(|| schedpool::durable::SqliteBackend::open(&path, QUEUE).expect("open the file"));
    format!("sqlite:{}", path.display())
}
