//! `Probed<B>`: a `DurableBackend` that delegates to `B` and lets a test see
//! and steer the calls: it counts claims, can run a hook right after the next
//! claim returns (before the taker sees the reply), and can add delays before
//! a claim or a nack and after a counts read (a call or reply in flight).
//! Shared by the durable test files, so each does not carry its own copy of
//! the delegation.

#![allow(dead_code)]

use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use schedpool::durable::{
    Cancelled, ClaimBatch, Counts, DurableBackend, DurableError, Nack, Put, PutMode, QueueOptions,
    Repeat, When,
};

pub type Hook = Box<dyn FnOnce() + Send>;

/// What a test keeps of a [`Probed`] backend once a queue owns it.
#[derive(Clone, Default)]
pub struct Probe {
    claims: Arc<AtomicUsize>,
    after_claim: Arc<Mutex<Option<Hook>>>,
    claim_before_ms: Arc<AtomicU64>,
    nack_before_ms: Arc<AtomicU64>,
    counts_after_ms: Arc<AtomicU64>,
}

impl Probe {
    /// Claim calls so far.
    pub fn claims(&self) -> usize {
        self.claims.load(Ordering::SeqCst)
    }

    /// Runs `hook` once, right after the next claim returns.
    pub fn arm(&self, hook: impl FnOnce() + Send + 'static) {
        *self.after_claim.lock().unwrap() = Some(Box::new(hook));
    }
}

/// Delegates to `inner`, observed and delayed through `probe`.
#[derive(Clone)]
pub struct Probed<B> {
    pub inner: B,
    pub probe: Probe,
}

impl<B> Probed<B> {
    pub fn new(inner: B) -> Self {
        Probed {
            inner,
            probe: Probe::default(),
        }
    }

    /// Sleeps `ms` before each claim runs.
    pub fn claim_delay(self, ms: u64) -> Self {
        self.probe.claim_before_ms.store(ms, Ordering::SeqCst);
        self
    }

    /// Sleeps `ms` before each nack runs.
    pub fn nack_delay(self, ms: u64) -> Self {
        self.probe.nack_before_ms.store(ms, Ordering::SeqCst);
        self
    }

    /// Sleeps `ms` after each counts read, before its reply is returned.
    pub fn counts_delay(self, ms: u64) -> Self {
        self.probe.counts_after_ms.store(ms, Ordering::SeqCst);
        self
    }
}

fn nap(ms: &AtomicU64) {
    let ms = ms.load(Ordering::SeqCst);
    if ms > 0 {
        std::thread::sleep(Duration::from_millis(ms));
    }
}

impl<B: fmt::Debug> fmt::Debug for Probed<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Probed")
            .field("inner", &self.inner)
            .field("claims", &self.probe.claims())
            .finish()
    }
}

impl<B: DurableBackend> DurableBackend for Probed<B> {
    fn put(&self, id: &str, env: &[u8], when: When, mode: PutMode) -> Result<Put, DurableError> {
        self.inner.put(id, env, when, mode)
    }
    fn claim(
        &self,
        lease: Duration,
        max: usize,
        attempts: u32,
    ) -> Result<ClaimBatch, DurableError> {
        self.probe.claims.fetch_add(1, Ordering::SeqCst);
        nap(&self.probe.claim_before_ms);
        let batch = self.inner.claim(lease, max, attempts);
        let hook = self.probe.after_claim.lock().unwrap().take();
        if let Some(hook) = hook {
            hook();
        }
        batch
    }
    fn extend(&self, leases: &[(&str, u64)], lease: Duration) -> Result<Vec<bool>, DurableError> {
        self.inner.extend(leases, lease)
    }
    fn ack(&self, id: &str, token: u64) -> Result<bool, DurableError> {
        self.inner.ack(id, token)
    }
    fn nack(&self, id: &str, token: u64, to: Nack) -> Result<bool, DurableError> {
        nap(&self.probe.nack_before_ms);
        self.inner.nack(id, token, to)
    }
    fn ack_and_reschedule(
        &self,
        id: &str,
        token: u64,
        repeat: Repeat,
    ) -> Result<Option<u64>, DurableError> {
        self.inner.ack_and_reschedule(id, token, repeat)
    }
    fn cancel(&self, id: &str) -> Result<Cancelled, DurableError> {
        self.inner.cancel(id)
    }
    fn wait(&self, due: Option<Duration>, limit: Duration) -> Result<bool, DurableError> {
        self.inner.wait(due, limit)
    }
    fn unblock(&self) {
        self.inner.unblock()
    }
    fn counts(&self) -> Result<Counts, DurableError> {
        let counts = self.inner.counts();
        nap(&self.probe.counts_after_ms);
        counts
    }
    fn peek_deadline_ms(&self) -> Result<Option<u64>, DurableError> {
        self.inner.peek_deadline_ms()
    }
    fn server_time_ms(&self) -> Result<u64, DurableError> {
        self.inner.server_time_ms()
    }
    fn dead_letters(&self, max: usize) -> Result<Vec<(String, Vec<u8>)>, DurableError> {
        self.inner.dead_letters(max)
    }
}

/// Queue options with a `lease_ms` lease and a `max_block_ms` block, the
/// rest the defaults.
pub fn options_ms(lease_ms: u64, max_block_ms: u64) -> QueueOptions {
    QueueOptions {
        lease: Duration::from_millis(lease_ms),
        max_block: Duration::from_millis(max_block_ms),
        ..QueueOptions::default()
    }
}
