//! A tracing subscriber is user code, and the durable pool logs from
//! threads the user never sees: the acker (an ack refused or failed), the
//! heartbeat (a beat or a release failed), the takers (a claim failed). A
//! subscriber that panics there must not end those threads or leave a
//! count set: the acks still go out, leases are still renewed, and the pool
//! still terminates.
//!
//! This binary installs, for the whole process, a subscriber that panics
//! on every event of `schedpool::durable`, so it holds only tests that
//! want that.

mod common;
mod durable_support;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Once};
use std::time::{Duration, Instant};

use schedpool::durable::{DurableBackend, DurablePool, MemoryBackend};

type Probed = durable_support::Probed<MemoryBackend>;

const WAIT: Duration = Duration::from_secs(20);

type Runs = Arc<Mutex<HashMap<String, u32>>>;

fn panicking_subscriber() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        tracing::subscriber::set_global_default(common::PanickingSubscriber(
            "schedpool::durable",
            None,
        ))
        .expect("the first global subscriber");
    });
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let until = Instant::now() + WAIT;
    while !done() {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn runs_of(runs: &Runs) -> HashMap<String, u32> {
    runs.lock().unwrap().clone()
}

fn pool_on(backend: Probed, lease: Duration, runs: &Runs, sleep: Duration) -> DurablePool {
    let seen = runs.clone();
    DurablePool::builder(backend)
        .threads(1)
        .lease(lease)
        .max_block(Duration::from_millis(100))
        .handler("job", move |_: &(), job| {
            *seen.lock().unwrap().entry(job.id.clone()).or_default() += 1;
            std::thread::sleep(sleep);
            Ok(())
        })
        .build()
        .unwrap()
}

#[test]
fn a_failed_ack_logged_to_a_panicking_subscriber_leaves_the_acker_running() {
    panicking_subscriber();
    let mem = MemoryBackend::new();
    let probed = Probed::new(mem.clone());
    let probe = probed.probe.clone();
    let runs: Runs = Arc::default();
    let pool = pool_on(probed, Duration::from_millis(300), &runs, Duration::ZERO);
    // The first batch of acks fails: the acker logs it (and the subscriber
    // panics); the item returns after its lease and is acked then.
    probe.fail_next("ack_many", 1);
    pool.schedule("job", "a", &(), Duration::ZERO).unwrap();
    wait_for("the failed ack", || probe.calls("ack_many") >= 1);
    wait_for("the second run", || {
        runs_of(&runs).get("a").copied() == Some(2)
    });
    // Later acks still go out: the acker is alive.
    pool.schedule("job", "b", &(), Duration::ZERO).unwrap();
    assert!(pool.wait_idle(WAIT), "the pool went idle");
    assert_eq!(
        mem.counts().unwrap(),
        Default::default(),
        "every item acked"
    );
    pool.shutdown();
    assert!(pool.await_termination(WAIT), "the pool terminated");
}

#[test]
fn a_failed_claim_logged_to_a_panicking_subscriber_leaves_the_worker_running() {
    panicking_subscriber();
    let mem = MemoryBackend::new();
    let probed = Probed::new(mem.clone());
    let probe = probed.probe.clone();
    let runs: Runs = Arc::default();
    // The pool's only worker: if its take unwinding ended it, nothing
    // would run again.
    let pool = pool_on(probed, Duration::from_millis(500), &runs, Duration::ZERO);
    // Its next claims fail; the taker logs each failure, and the
    // subscriber panics in the worker's take.
    probe.fail_next("claim", 2);
    wait_for("the failed claims", || probe.calls("claim") >= 3);
    pool.schedule("job", "after", &(), Duration::ZERO).unwrap();
    wait_for("the run", || {
        runs_of(&runs).get("after").copied() == Some(1)
    });
    assert!(pool.wait_idle(WAIT), "the pool went idle");
    pool.shutdown();
    assert!(pool.await_termination(WAIT), "the pool terminated");
}

#[test]
fn a_failed_beat_logged_to_a_panicking_subscriber_leaves_the_heartbeat_running() {
    panicking_subscriber();
    let mem = MemoryBackend::new();
    let lease = Duration::from_millis(1_500);
    let probed = Probed::new(mem.clone());
    let probe = probed.probe.clone();
    let runs: Runs = Arc::default();
    // A run three leases long: only heartbeats keep its lease.
    let pool_a = pool_on(probed, lease, &runs, Duration::from_millis(4_500));
    probe.fail_next("extend", 1);
    pool_a.schedule("job", "long", &(), Duration::ZERO).unwrap();
    wait_for("the run to start", || runs_of(&runs).contains_key("long"));
    // Another process, which would run it again if its lease lapsed.
    let runs_b: Runs = Arc::default();
    let pool_b = pool_on(Probed::new(mem.clone()), lease, &runs_b, Duration::ZERO);
    assert!(pool_a.wait_idle(WAIT));
    assert!(
        probe.calls("extend") >= 2,
        "the failed beat was followed by others"
    );
    assert!(
        runs_of(&runs_b).is_empty(),
        "reclaimed: {:?}",
        runs_of(&runs_b)
    );
    assert_eq!(mem.counts().unwrap(), Default::default());
    for pool in [pool_a, pool_b] {
        pool.shutdown();
        assert!(pool.await_termination(WAIT));
    }
}
