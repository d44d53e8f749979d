//! A backend is user code (`DurableBackend` is a public trait), and a bug
//! in it may panic. The panic must cost what a failed store call costs and
//! no more: the pool's threads live on, a taker that panicked gives up its
//! turn (so the others do not wait for it for ever), the heartbeat keeps
//! renewing leases, shutdown finishes, and every job still runs. The
//! caller of a queue verb gets an error that names the panic, not the
//! panic itself.
//!
//! Each test makes the next calls of one verb panic through `Probed`
//! (`tests/durable_support`), on the in-memory backend. Two have a tracing
//! subscriber panic instead (on the calling thread only): while a taker
//! holds its turn, and while shutdown releases the items claimed ahead.

mod common;
mod durable_support;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::PanickingSubscriber;
use schedpool::durable::{DurableBackend, DurablePool, DurableQueue, MemoryBackend};

type Probed = durable_support::Probed<MemoryBackend>;

const WAIT: Duration = Duration::from_secs(20);

/// How many times each id ran.
type Runs = Arc<Mutex<HashMap<String, u32>>>;

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let until = Instant::now() + WAIT;
    while !done() {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A pool whose `job` handler counts each run, and fails the first
/// attempt of the ids in `fail_once`.
fn pool_on(
    backend: Probed,
    threads: usize,
    lease: Duration,
    runs: &Runs,
    fail_once: &'static [&'static str],
) -> DurablePool {
    let seen = runs.clone();
    DurablePool::builder(backend)
        .threads(threads)
        .lease(lease)
        .max_block(Duration::from_millis(100))
        .retry_backoff(Duration::from_millis(20), Duration::from_millis(20))
        .handler("job", move |_: &(), job| {
            *seen.lock().unwrap().entry(job.id.clone()).or_default() += 1;
            if fail_once.contains(&job.id.as_str()) && job.attempt == 1 {
                return Err("first attempt fails".into());
            }
            Ok(())
        })
        .build()
        .unwrap()
}

fn runs_of(runs: &Runs) -> HashMap<String, u32> {
    runs.lock().unwrap().clone()
}

/// Every job that ran ran exactly once, the store is empty, and the pool
/// shuts down in time.
fn all_ran_once_and_the_pool_terminates(pool: DurablePool, mem: &MemoryBackend, runs: &Runs) {
    assert!(pool.wait_idle(WAIT), "the pool went idle");
    let twice: Vec<_> = runs_of(runs).into_iter().filter(|&(_, n)| n != 1).collect();
    assert!(twice.is_empty(), "ran other than once: {twice:?}");
    assert_eq!(mem.counts().unwrap(), Default::default(), "none left");
    pool.shutdown();
    assert!(pool.await_termination(WAIT), "the pool terminated");
}

/// Makes the next three calls of `verb` panic, schedules `n` jobs due
/// after `delay`, and checks that each runs once and the pool terminates.
fn every_job_runs_despite(verb: &'static str, n: usize, delay: Duration) {
    let mem = MemoryBackend::new();
    let probed = Probed::new(mem.clone()).panicking(verb, 3);
    let probe = probed.probe.clone();
    let runs: Runs = Arc::default();
    let pool = pool_on(probed, 2, Duration::from_secs(30), &runs, &[]);
    for i in 0..n {
        pool.schedule("job", &format!("j{i}"), &(), delay).unwrap();
    }
    wait_for("every job to run", || runs_of(&runs).len() == n);
    assert_eq!(probe.panics_left(verb), 0, "the {verb} calls did panic");
    all_ran_once_and_the_pool_terminates(pool, &mem, &runs);
}

#[test]
fn claims_that_panic_leave_every_worker_taking() {
    every_job_runs_despite("claim", 10, Duration::ZERO);
}

#[test]
fn waits_that_panic_leave_every_worker_taking() {
    // Due later, so the takers wait in the store first.
    every_job_runs_despite("wait", 6, Duration::from_millis(300));
}

#[test]
fn a_retry_whose_nack_panics_still_runs_and_the_worker_lives_on() {
    let mem = MemoryBackend::new();
    let probed = Probed::new(mem.clone()).panicking("nack", 1);
    let probe = probed.probe.clone();
    let runs: Runs = Arc::default();
    // One worker: if the panic killed it, nothing after would run.
    let pool = pool_on(probed, 1, Duration::from_millis(500), &runs, &["flaky"]);
    pool.schedule("job", "flaky", &(), Duration::ZERO).unwrap();
    // Its retry could not be sent: the item comes back after its lease.
    wait_for("the retry", || {
        runs_of(&runs).get("flaky").copied() == Some(2)
    });
    assert_eq!(probe.panics_left("nack"), 0, "the nack did panic");
    pool.schedule("job", "after", &(), Duration::ZERO).unwrap();
    wait_for("the next job", || runs_of(&runs).contains_key("after"));
    assert!(pool.wait_idle(WAIT));
    assert_eq!(mem.counts().unwrap(), Default::default(), "none left");
    pool.shutdown();
    assert!(pool.await_termination(WAIT));
}

#[test]
fn a_heartbeat_that_panics_is_retried_and_the_lease_holds() {
    let mem = MemoryBackend::new();
    // One beat in three is lost to the panic; a lease of 1.5 s leaves the
    // next beat (at 1 s) half a second of slack on a loaded machine.
    let lease = Duration::from_millis(1_500);
    let probed = Probed::new(mem.clone()).panicking("extend", 1);
    let probe = probed.probe.clone();
    let runs: Runs = Arc::default();
    let seen = runs.clone();
    // A run three leases long: only heartbeats keep its lease.
    let pool_a = DurablePool::builder(probed)
        .threads(1)
        .lease(lease)
        .handler("job", move |_: &(), job| {
            *seen.lock().unwrap().entry(job.id.clone()).or_default() += 1;
            std::thread::sleep(Duration::from_millis(4_500));
            Ok(())
        })
        .build()
        .unwrap();
    pool_a.schedule("job", "long", &(), Duration::ZERO).unwrap();
    wait_for("the run to start", || runs_of(&runs).contains_key("long"));
    // Another process, which would run it again if its lease lapsed.
    let runs_b: Runs = Arc::default();
    let pool_b = pool_on(Probed::new(mem.clone()), 1, lease, &runs_b, &[]);
    assert!(pool_a.wait_idle(WAIT));
    assert_eq!(probe.panics_left("extend"), 0, "a heartbeat did panic");
    assert!(
        runs_of(&runs_b).is_empty(),
        "reclaimed: {:?}",
        runs_of(&runs_b)
    );
    let stats = pool_a.stats();
    assert_eq!((stats.succeeded, stats.lease_lost), (1, 0), "{stats:?}");
    assert_eq!(mem.counts().unwrap(), Default::default());
    for pool in [pool_a, pool_b] {
        pool.shutdown();
        assert!(pool.await_termination(WAIT));
    }
}

#[test]
fn shutdown_finishes_when_the_backends_unblock_panics() {
    let mem = MemoryBackend::new();
    let probed = Probed::new(mem.clone()).panicking("unblock", 1);
    let probe = probed.probe.clone();
    let runs: Runs = Arc::default();
    let pool = pool_on(probed, 2, Duration::from_secs(30), &runs, &[]);
    pool.schedule("job", "j", &(), Duration::ZERO).unwrap();
    wait_for("the job to run", || runs_of(&runs).contains_key("j"));
    assert!(pool.wait_idle(WAIT));
    pool.shutdown();
    assert_eq!(probe.panics_left("unblock"), 0, "unblock did panic");
    assert!(pool.await_termination(WAIT), "the pool terminated");
}

#[test]
fn a_queue_taker_gets_an_error_not_the_panic_and_the_others_go_on() {
    let mem = MemoryBackend::new();
    let probed = Probed::new(mem.clone()).panicking("claim", 1);
    let probe = probed.probe.clone();
    let q: DurableQueue<u32> = DurableQueue::new(probed);
    q.put("a", &1, Duration::ZERO).unwrap();
    // The one claim panics: the poll reports it as an error naming it.
    let err = q.poll().unwrap_err();
    assert!(err.to_string().contains("panicked"), "{err}");
    assert_eq!(probe.panics_left("claim"), 0);
    // The taker's turn was given up: another thread takes at once.
    let taken = std::thread::scope(|s| {
        s.spawn(|| q.poll_timeout(WAIT).unwrap().map(|d| *d.value()))
            .join()
            .unwrap()
    });
    assert_eq!(taken, Some(1));
}

#[test]
fn a_taker_that_unwinds_hands_its_turn_on() {
    let mem = MemoryBackend::new();
    let probed = Probed::new(mem.clone());
    let probe = probed.probe.clone();
    let q: DurableQueue<u32> = DurableQueue::new(probed);
    q.put("a", &1, Duration::ZERO).unwrap();
    // The claim fails, and the taker's warning about it, logged while it
    // holds the leader turn, panics in the subscriber.
    probe.fail_next("claim", 1);
    let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        tracing::subscriber::with_default(PanickingSubscriber("schedpool::durable", None), || {
            q.poll()
        })
    }));
    assert!(
        unwound.is_err(),
        "the subscriber's panic went through the poll"
    );
    assert_eq!(probe.calls("claim"), 1);
    // Its turn was given up: another thread takes at once.
    let started = Instant::now();
    let taken = std::thread::scope(|s| {
        s.spawn(|| q.poll_timeout(WAIT).unwrap().map(|d| *d.value()))
            .join()
            .unwrap()
    });
    assert_eq!(taken, Some(1));
    assert!(started.elapsed() < WAIT, "it did not wait out its limit");
}

#[test]
fn a_chain_whose_reschedule_panics_runs_on_after_the_lease() {
    let mem = MemoryBackend::new();
    let probed = Probed::new(mem.clone()).panicking("ack_and_reschedule", 1);
    let probe = probed.probe.clone();
    let runs: Runs = Arc::default();
    // One worker: if the panic killed it, the chain would stop.
    let pool = pool_on(probed, 1, Duration::from_millis(500), &runs, &[]);
    pool.schedule_at_fixed_rate(
        "job",
        "tick",
        &(),
        Duration::ZERO,
        Duration::from_millis(50),
    )
    .unwrap();
    // The first run's reschedule panics: its item stays leased, comes back
    // after the lease, and the chain goes on from there.
    wait_for("the chain to run on", || {
        runs_of(&runs).get("tick").copied().unwrap_or(0) >= 4
    });
    assert_eq!(probe.panics_left("ack_and_reschedule"), 0, "it did panic");
    pool.shutdown();
    assert!(pool.await_termination(WAIT));
}

#[test]
fn a_job_whose_burial_panics_is_buried_after_its_lease() {
    let mem = MemoryBackend::new();
    let probed = Probed::new(mem.clone()).panicking("bury", 1);
    let probe = probed.probe.clone();
    let runs: Runs = Arc::default();
    let seen = runs.clone();
    let pool = DurablePool::builder(probed)
        .threads(1)
        .lease(Duration::from_millis(500))
        .max_block(Duration::from_millis(100))
        .max_attempts(2)
        .retry_backoff(Duration::from_millis(20), Duration::from_millis(20))
        .handler("job", move |_: &(), job| {
            *seen.lock().unwrap().entry(job.id.clone()).or_default() += 1;
            if job.id == "doomed" {
                return Err("always fails".into());
            }
            Ok(())
        })
        .build()
        .unwrap();
    pool.schedule("job", "doomed", &(), Duration::ZERO).unwrap();
    // Its last attempt's burial panics: it stays leased, and the claim
    // after its lease buries it (its attempts are spent).
    wait_for("the burial", || {
        pool.dead_letters(10)
            .unwrap()
            .iter()
            .any(|d| d.id == "doomed")
    });
    assert_eq!(probe.panics_left("bury"), 0, "it did panic");
    assert_eq!(runs_of(&runs).get("doomed").copied(), Some(2));
    // The worker lives on.
    pool.schedule("job", "after", &(), Duration::ZERO).unwrap();
    wait_for("the next job", || runs_of(&runs).contains_key("after"));
    pool.shutdown();
    assert!(pool.await_termination(WAIT));
}

/// A handler's error whose `Display` panics (user code that runs outside
/// the handler's own `catch_unwind`, when the pool records the error).
#[derive(Debug)]
struct BadDisplay;

impl std::fmt::Display for BadDisplay {
    fn fmt(&self, _: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        panic!("Display panics")
    }
}

impl std::error::Error for BadDisplay {}

#[test]
fn a_handler_error_whose_display_panics_leaves_the_worker_running() {
    let mem = MemoryBackend::new();
    let runs: Runs = Arc::default();
    let seen = runs.clone();
    // One worker: if the panic killed it, nothing after would run, and its
    // run would stay counted as busy (the pool never idle or terminated).
    let pool = DurablePool::builder(Probed::new(mem.clone()))
        .threads(1)
        .lease(Duration::from_millis(300))
        .max_block(Duration::from_millis(100))
        .retry_backoff(Duration::from_millis(20), Duration::from_millis(20))
        .handler("job", move |_: &(), job| {
            *seen.lock().unwrap().entry(job.id.clone()).or_default() += 1;
            if job.id == "bad" && job.attempt == 1 {
                return Err(Box::new(BadDisplay));
            }
            Ok(())
        })
        .build()
        .unwrap();
    pool.schedule("job", "bad", &(), Duration::ZERO).unwrap();
    // Its first run's settle unwound: the item goes back, runs again.
    wait_for("the second run", || {
        runs_of(&runs).get("bad").copied() == Some(2)
    });
    pool.schedule("job", "after", &(), Duration::ZERO).unwrap();
    wait_for("the next job", || runs_of(&runs).contains_key("after"));
    assert!(pool.wait_idle(WAIT), "the pool went idle");
    assert_eq!(mem.counts().unwrap(), Default::default(), "none left");
    pool.shutdown();
    assert!(pool.await_termination(WAIT), "the pool terminated");
}

#[test]
fn a_failed_release_logged_to_a_panicking_subscriber_leaks_no_lease() {
    let mem = MemoryBackend::new();
    let lease = Duration::from_millis(300);
    let runs: Runs = Arc::default();
    let seen = runs.clone();
    let probed = Probed::new(mem.clone()).claim_delay(150);
    let probe = probed.probe.clone();
    let pool_a = DurablePool::builder(probed)
        .threads(1)
        .lease(lease)
        .handler("job", move |_: &(), job| {
            *seen.lock().unwrap().entry(job.id.clone()).or_default() += 1;
            if job.id == "a-slow" {
                std::thread::sleep(Duration::from_millis(500));
            }
            Ok(())
        })
        .build()
        .unwrap();
    // Fast runs teach the pool to claim ahead; then one claim takes the
    // slow item and the ones behind it (due together, they come in id
    // order).
    for i in 0..5 {
        pool_a
            .schedule("job", &format!("warm-{i}"), &(), Duration::ZERO)
            .unwrap();
    }
    assert!(pool_a.wait_idle(WAIT));
    pool_a
        .schedule("job", "a-slow", &(), Duration::ZERO)
        .unwrap();
    for i in 0..29 {
        pool_a
            .schedule("job", &format!("b-{i}"), &(), Duration::ZERO)
            .unwrap();
    }
    wait_for("the slow run", || runs_of(&runs).contains_key("a-slow"));
    let held = mem.counts().unwrap().in_flight;
    assert!(held > 2, "pool A claimed ahead: {held} in flight");
    // Shutdown releases the items waiting in the buffer; the first release
    // fails, and the warning about it panics in the subscriber. The items
    // it had not come to must still be let go of: their leases lapse and
    // they come back, where a lease left to the heartbeat would be renewed
    // for as long as this process lives.
    probe.fail_next("nack", 1);
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        tracing::subscriber::with_default(PanickingSubscriber("schedpool::durable", None), || {
            pool_a.shutdown()
        })
    }));
    assert!(pool_a.await_termination(WAIT));
    let pool_b = DurablePool::builder(Probed::new(mem.clone()))
        .threads(2)
        .lease(lease)
        .max_block(Duration::from_millis(100))
        .handler("job", {
            let seen = runs.clone();
            move |_: &(), job| {
                *seen.lock().unwrap().entry(job.id.clone()).or_default() += 1;
                Ok(())
            }
        })
        .build()
        .unwrap();
    wait_for("every run", || runs_of(&runs).len() == 35);
    assert!(pool_b.wait_idle(WAIT));
    assert_eq!(mem.counts().unwrap(), Default::default(), "none lost");
    pool_b.shutdown();
    assert!(pool_b.await_termination(WAIT));
}
