//! `Probed<B>`: a `DurableBackend` that delegates to `B` and lets a test see
//! and steer the calls: it counts claims and acks (and records the ids of
//! each `ack_many` batch), can run a hook right after the next claim returns
//! (before the taker sees the reply), can add delays before a claim, an ack
//! or a nack and after a counts read (a call or reply in flight), and can
//! make acks fail as an unreachable store's would, and can make the next
//! calls of any verb panic, as a buggy backend's code would.
//! Shared by the durable test files, so each does not carry its own copy of
//! the delegation.

#![allow(dead_code)]

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use schedpool::durable::{
    Buried, Cancelled, ClaimBatch, Counts, DurableBackend, DurableError, Nack, Put, PutMode,
    QueueOptions, Repeat, Stored, When,
};

pub type Hook = Box<dyn FnOnce() + Send>;

/// What a test keeps of a [`Probed`] backend once a queue owns it.
#[derive(Clone, Default)]
pub struct Probe {
    claims: Arc<AtomicUsize>,
    acks: Arc<AtomicUsize>,
    ack_batches: Arc<Mutex<Vec<Vec<String>>>>,
    fail_acks: Arc<AtomicBool>,
    panic_acks: Arc<AtomicBool>,
    after_claim: Arc<Mutex<Option<Hook>>>,
    claim_before_ms: Arc<AtomicU64>,
    ack_before_ms: Arc<AtomicU64>,
    nack_before_ms: Arc<AtomicU64>,
    counts_after_ms: Arc<AtomicU64>,
    /// Verb -> how many of its next calls panic.
    panics: Arc<Mutex<HashMap<&'static str, usize>>>,
    /// Verb -> how many of its next calls fail with `Unavailable`.
    failures: Arc<Mutex<HashMap<&'static str, usize>>>,
    /// Verb -> how many calls it had.
    calls: Arc<Mutex<HashMap<&'static str, usize>>>,
}

impl Probe {
    /// Claim calls so far.
    pub fn claims(&self) -> usize {
        self.claims.load(Ordering::SeqCst)
    }

    /// Single `ack` calls so far.
    pub fn acks(&self) -> usize {
        self.acks.load(Ordering::SeqCst)
    }

    /// The ids of each `ack_many` call so far, in call order.
    pub fn ack_batches(&self) -> Vec<Vec<String>> {
        self.ack_batches.lock().unwrap().clone()
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

    /// Sleeps `ms` before each ack or `ack_many` runs.
    pub fn ack_delay(self, ms: u64) -> Self {
        self.probe.ack_before_ms.store(ms, Ordering::SeqCst);
        self
    }

    /// Makes every ack and `ack_many` fail with `Unavailable` (without
    /// reaching the store) from now on.
    pub fn failing_acks(self) -> Self {
        self.probe.fail_acks.store(true, Ordering::SeqCst);
        self
    }

    /// Makes every `ack_many` panic, as a buggy custom backend's might.
    pub fn panicking_acks(self) -> Self {
        self.probe.panic_acks.store(true, Ordering::SeqCst);
        self
    }

    /// Makes the next `times` calls of `verb` (a method name of
    /// `DurableBackend`: "claim", "wait", "extend", "nack", ...) panic
    /// before they reach the store.
    pub fn panicking(self, verb: &'static str, times: usize) -> Self {
        self.probe.panic_next(verb, times);
        self
    }

    /// Sleeps `ms` before each nack (or bury) runs.
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

impl Probe {
    /// Makes the next `times` calls of `verb` panic (see
    /// [`Probed::panicking`]); usable after a queue owns the backend.
    pub fn panic_next(&self, verb: &'static str, times: usize) {
        self.panics.lock().unwrap().insert(verb, times);
    }

    /// Makes the next `times` calls of `verb` fail with `Unavailable`
    /// without reaching the store (and without any delay set for it), as
    /// calls to an unreachable store do.
    pub fn fail_next(&self, verb: &'static str, times: usize) {
        self.failures.lock().unwrap().insert(verb, times);
    }

    /// How many calls of `verb` were made so far.
    pub fn calls(&self, verb: &'static str) -> usize {
        self.calls.lock().unwrap().get(verb).copied().unwrap_or(0)
    }

    /// How many planned panics of `verb` have not happened yet.
    pub fn panics_left(&self, verb: &'static str) -> usize {
        self.panics.lock().unwrap().get(verb).copied().unwrap_or(0)
    }

    /// A call of `verb` begins: counts it, and panics or fails if planned.
    fn enter(&self, verb: &'static str) -> Result<(), DurableError> {
        *self.calls.lock().unwrap().entry(verb).or_default() += 1;
        if take_one(&self.panics, verb) {
            panic!("{verb} panics (Probed)");
        }
        if take_one(&self.failures, verb) {
            return Err(DurableError::Unavailable(
                format!("{verb} fails (Probed)").into(),
            ));
        }
        Ok(())
    }

    fn check_acks(&self) -> Result<(), DurableError> {
        if self.panic_acks.load(Ordering::SeqCst) {
            panic!("ack_many panics (Probed)");
        }
        if self.fail_acks.load(Ordering::SeqCst) {
            return Err(DurableError::Unavailable("acks fail (Probed)".into()));
        }
        Ok(())
    }
}

/// Takes one of the planned events of `verb`, if any are left.
fn take_one(plan: &Mutex<HashMap<&'static str, usize>>, verb: &'static str) -> bool {
    match plan.lock().unwrap().get_mut(verb) {
        Some(left) if *left > 0 => {
            *left -= 1;
            true
        }
        _ => false,
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
        self.probe.enter("put")?;
        self.inner.put(id, env, when, mode)
    }
    fn claim(
        &self,
        lease: Duration,
        max: usize,
        attempts: u32,
    ) -> Result<ClaimBatch, DurableError> {
        self.probe.enter("claim")?;
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
        self.probe.enter("extend")?;
        self.inner.extend(leases, lease)
    }
    fn ack(&self, id: &str, token: u64) -> Result<bool, DurableError> {
        self.probe.enter("ack")?;
        self.probe.acks.fetch_add(1, Ordering::SeqCst);
        nap(&self.probe.ack_before_ms);
        self.probe.check_acks()?;
        self.inner.ack(id, token)
    }
    fn ack_many(&self, acks: &[(&str, u64)]) -> Result<Vec<bool>, DurableError> {
        self.probe.enter("ack_many")?;
        let ids = acks.iter().map(|a| a.0.to_string()).collect();
        self.probe.ack_batches.lock().unwrap().push(ids);
        nap(&self.probe.ack_before_ms);
        self.probe.check_acks()?;
        self.inner.ack_many(acks)
    }
    fn nack(&self, id: &str, token: u64, to: Nack) -> Result<bool, DurableError> {
        self.probe.enter("nack")?;
        nap(&self.probe.nack_before_ms);
        self.inner.nack(id, token, to)
    }
    fn ack_and_reschedule(
        &self,
        id: &str,
        token: u64,
        repeat: Repeat,
    ) -> Result<Option<u64>, DurableError> {
        self.probe.enter("ack_and_reschedule")?;
        self.inner.ack_and_reschedule(id, token, repeat)
    }
    fn cancel(&self, id: &str) -> Result<Cancelled, DurableError> {
        self.probe.enter("cancel")?;
        self.inner.cancel(id)
    }
    fn wait(&self, due: Option<Duration>, limit: Duration) -> Result<bool, DurableError> {
        self.probe.enter("wait")?;
        self.inner.wait(due, limit)
    }
    fn unblock(&self) {
        let _ = self.probe.enter("unblock");
        self.inner.unblock()
    }
    fn counts(&self) -> Result<Counts, DurableError> {
        self.probe.enter("counts")?;
        let counts = self.inner.counts();
        nap(&self.probe.counts_after_ms);
        counts
    }
    fn peek_deadline_ms(&self) -> Result<Option<u64>, DurableError> {
        self.probe.enter("peek_deadline_ms")?;
        self.inner.peek_deadline_ms()
    }
    fn get(&self, id: &str) -> Result<Option<Stored>, DurableError> {
        self.probe.enter("get")?;
        self.inner.get(id)
    }
    fn server_time_ms(&self) -> Result<u64, DurableError> {
        self.probe.enter("server_time_ms")?;
        self.inner.server_time_ms()
    }
    fn dead_letters(&self, max: usize) -> Result<Vec<Buried>, DurableError> {
        self.probe.enter("dead_letters")?;
        self.inner.dead_letters(max)
    }
    fn bury(&self, id: &str, token: u64, error: Option<&str>) -> Result<bool, DurableError> {
        self.probe.enter("bury")?;
        nap(&self.probe.nack_before_ms);
        self.inner.bury(id, token, error)
    }
    fn requeue(&self, id: &str) -> Result<bool, DurableError> {
        self.probe.enter("requeue")?;
        self.inner.requeue(id)
    }
    fn purge(&self, id: &str) -> Result<bool, DurableError> {
        self.probe.enter("purge")?;
        self.inner.purge(id)
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

/// A pool on `backend` uses every verb it needs: put, claim, ack, nack
/// (a retry), extend (a handler past half its lease is heartbeated),
/// cancel, counts and wait/unblock; for the access tests, whose backends
/// connect as a user with only the rights the docs list.
pub fn every_pool_verb_works(backend: impl DurableBackend) {
    use schedpool::durable::DurablePool;
    use std::time::Instant;

    let ran = Arc::new(AtomicUsize::new(0));
    let seen = ran.clone();
    let pool = DurablePool::builder(backend)
        .threads(2)
        .lease(Duration::from_secs(2))
        .max_block(Duration::from_millis(300))
        .retry_backoff(Duration::from_millis(50), Duration::from_millis(50))
        .handler("job", move |n: &u32, job| {
            if *n == 7 && job.attempt == 1 {
                return Err("fail once".into());
            }
            if *n == 8 {
                // Past half the lease: the heartbeat must extend it.
                std::thread::sleep(Duration::from_millis(1_500));
            }
            seen.fetch_add(1, Ordering::SeqCst);
            Ok(())
        })
        .build()
        .unwrap();
    for n in 0..10u32 {
        pool.schedule("job", &format!("j{n}"), &n, Duration::from_millis(50))
            .unwrap();
    }
    pool.schedule("job", "later", &99u32, Duration::from_secs(3600))
        .unwrap();
    assert!(pool.cancel("later").unwrap());
    let until = Instant::now() + Duration::from_secs(30);
    while ran.load(Ordering::SeqCst) < 10 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(ran.load(Ordering::SeqCst), 10);
    pool.shutdown();
}
