//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use schedpool::{ManualClock, ScheduledThreadPool};

/// Generous bound for "eventually" on a loaded 2-core machine.
pub const EVENTUALLY: Duration = Duration::from_secs(20);

/// Java's `PoolCleaner`: stops the pool when the test ends, pass or fail.
pub struct PoolGuard(pub ScheduledThreadPool);

impl Drop for PoolGuard {
    fn drop(&mut self) {
        drop(self.0.shutdown_now());
        let terminated = self.0.await_termination(EVENTUALLY);
        if !std::thread::panicking() {
            assert!(terminated, "pool did not terminate");
        }
    }
}

impl std::ops::Deref for PoolGuard {
    type Target = ScheduledThreadPool;
    fn deref(&self) -> &ScheduledThreadPool {
        &self.0
    }
}

/// A pool of `core` threads named `name-<n>`, stopped when the test ends.
pub fn named_pool(core: usize, name: &str) -> PoolGuard {
    PoolGuard(
        ScheduledThreadPool::builder()
            .core_threads(core)
            .thread_name(name)
            .build()
            .unwrap(),
    )
}

/// A pool of `core` threads on a fresh `ManualClock` (not stopped by a guard).
pub fn manual_pool(core: usize) -> (ManualClock, ScheduledThreadPool) {
    let clock = ManualClock::new();
    let pool = ScheduledThreadPool::builder()
        .core_threads(core)
        .clock(clock.clone())
        .build()
        .unwrap();
    (clock, pool)
}

/// Spins (with short sleeps) until `cond` holds; panics after `EVENTUALLY`.
#[track_caller]
pub fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < EVENTUALLY,
            "timed out waiting for: {what}"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A gate that holds a worker until opened.
#[derive(Clone, Default)]
pub struct Gate(Arc<(Mutex<bool>, Condvar)>);

impl Gate {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn open(&self) {
        *self.0 .0.lock().unwrap() = true;
        self.0 .1.notify_all();
    }
    pub fn wait(&self) {
        let mut open = self.0 .0.lock().unwrap();
        let start = Instant::now();
        while !*open {
            assert!(start.elapsed() < EVENTUALLY, "gate never opened");
            open = self
                .0
                 .1
                .wait_timeout(open, Duration::from_millis(50))
                .unwrap()
                .0;
        }
    }
}

/// A recorder of events, in order.
#[derive(Clone, Default)]
pub struct Log<T>(Arc<Mutex<Vec<T>>>);

impl<T: Clone> Log<T> {
    pub fn new() -> Self {
        Log(Arc::new(Mutex::new(Vec::new())))
    }
    pub fn push(&self, t: T) {
        self.0.lock().unwrap().push(t);
    }
    pub fn get(&self) -> Vec<T> {
        self.0.lock().unwrap().clone()
    }
    pub fn len(&self) -> usize {
        self.0.lock().unwrap().len()
    }
}

/// A tracing subscriber that panics on every event whose target is the
/// first field (and, if the second is given, whose level is that): a bug in
/// a user's subscriber, or a writer that panics. For the tests that check
/// the crate's state survives such a panic.
pub struct PanickingSubscriber(pub &'static str, pub Option<tracing::Level>);

impl tracing::Subscriber for PanickingSubscriber {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let m = event.metadata();
        if m.target() == self.0 && self.1.is_none_or(|level| *m.level() == level) {
            panic!("the subscriber panics on an event of {}", self.0);
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}
