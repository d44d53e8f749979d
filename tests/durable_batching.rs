//! A `DurablePool` claims ahead and acks in batches: a burst of fast jobs
//! costs few store calls, and none of a run's guarantees is given up for
//! it. Each ack in a batch is fenced by its own token (a stale one is
//! refused alone and counted for its job); a run whose batched ack never
//! reaches the store comes back after its lease (at least once); items
//! claimed ahead keep their leases while they wait, and a shutdown with
//! the store down gives up releasing them after the first failure; shutdown
//! sends every ack before the pool terminates.
//!
//! On the in-memory backend wrapped in `Probed` (`tests/durable_support`),
//! which counts the calls and adds delays as a store's round trips would;
//! the backends' own `ack_many` is checked by `tests/durable_contract.rs`.

mod durable_support;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use schedpool::durable::{DurableBackend, DurablePool, MemoryBackend};
use schedpool::ManualClock;

type Probed = durable_support::Probed<MemoryBackend>;

const WAIT: Duration = Duration::from_secs(20);

/// The default lease.
const LEASE: Duration = Duration::from_secs(30);

/// How many times each id ran.
type Runs = Arc<Mutex<HashMap<String, u32>>>;

fn count_run(runs: &Runs, id: &str) {
    *runs.lock().unwrap().entry(id.to_string()).or_default() += 1;
}

/// A pool on `backend` with `lease`, whose `job` handler counts each run
/// in `runs`.
fn counting_pool(
    backend: impl DurableBackend,
    threads: usize,
    lease: Duration,
    runs: &Runs,
) -> DurablePool {
    let seen = runs.clone();
    DurablePool::builder(backend)
        .threads(threads)
        .lease(lease)
        .handler("job", move |_: &(), job| {
            count_run(&seen, &job.id);
            Ok(())
        })
        .build()
        .unwrap()
}

/// Schedules `n` jobs due now, `prefix-00`, `prefix-01`, ...
fn schedule_now(pool: &DurablePool, prefix: &str, n: usize) {
    for i in 0..n {
        pool.schedule("job", &format!("{prefix}-{i:04}"), &(), Duration::ZERO)
            .unwrap();
    }
}

fn wait_for(what: &str, cond: impl Fn() -> bool) {
    let until = Instant::now() + WAIT;
    while !cond() {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_burst_of_fast_jobs_costs_few_claims_and_few_ack_calls() {
    const JOBS: usize = 600;
    let clock = ManualClock::new();
    // 5 ms a claim and an ack call: a store's round trip, so acks gather
    // while one is in flight.
    let backend = Probed::new(MemoryBackend::with_clock(clock.clone()))
        .claim_delay(5)
        .ack_delay(5);
    let probe = backend.probe.clone();
    let pool = DurablePool::builder(backend)
        .threads(2)
        .handler("noop", |_: &u64, _| Ok(()))
        .build()
        .unwrap();
    for i in 0..JOBS {
        pool.schedule(
            "noop",
            &format!("j-{i:04}"),
            &(i as u64),
            Duration::from_secs(60),
        )
        .unwrap();
    }
    clock.advance(Duration::from_secs(60));
    assert!(pool.wait_idle(WAIT));
    let stats = pool.stats();
    pool.shutdown();
    assert!(pool.await_termination(WAIT));
    assert_eq!(stats.succeeded, JOBS as u64);
    let batches = probe.ack_batches();
    let acked: usize = batches.iter().map(Vec::len).sum();
    assert_eq!(
        (acked, probe.acks()),
        (JOBS, 0),
        "every ack went through ack_many"
    );
    // One claim and one ack call a job (or a claim for two, one per
    // worker) without the batching; a tenth of that with it.
    eprintln!(
        "{JOBS} jobs: {} claims, {} ack calls",
        probe.claims(),
        batches.len()
    );
    assert!(
        probe.claims() <= JOBS / 10,
        "{} claims for {JOBS} jobs",
        probe.claims()
    );
    assert!(
        batches.len() <= JOBS / 10,
        "{} ack calls for {JOBS} jobs",
        batches.len()
    );
}

#[test]
fn a_stale_ack_in_a_batch_is_refused_alone_and_counted_for_its_job() {
    const JOBS: usize = 200;
    let mem = MemoryBackend::new();
    let backend = Probed::new(mem.clone()).ack_delay(20);
    let probe = backend.probe.clone();
    let runs: Runs = Arc::default();
    let (seen, store) = (runs.clone(), mem.clone());
    let pool = DurablePool::builder(backend)
        .threads(2)
        .handler("job", move |_: &(), job| {
            count_run(&seen, &job.id);
            if job.id == "j-0100" {
                // Cancelled while it runs: its ack must be refused.
                store.cancel(&job.id).unwrap();
            }
            Ok(())
        })
        .build()
        .unwrap();
    schedule_now(&pool, "j", JOBS);
    wait_for("every run", || runs.lock().unwrap().len() == JOBS);
    assert!(pool.wait_idle(WAIT));
    let stats = pool.stats();
    pool.shutdown();
    assert!(pool.await_termination(WAIT));
    assert_eq!(stats.lease_lost, 1, "{stats:?}");
    assert_eq!(stats.succeeded, JOBS as u64 - 1, "{stats:?}");
    let batch = probe
        .ack_batches()
        .into_iter()
        .find(|b| b.iter().any(|id| id == "j-0100"))
        .expect("the cancelled run's ack was sent");
    assert!(
        batch.len() > 1,
        "the stale ack shared its batch with others: {batch:?}"
    );
    assert_eq!(mem.counts().unwrap(), Default::default());
    assert!(
        runs.lock().unwrap().values().all(|&n| n == 1),
        "every job ran once"
    );
}

#[test]
fn a_run_whose_batched_ack_fails_comes_back_after_its_lease() {
    const JOBS: usize = 20;
    let mem = MemoryBackend::new();
    let runs_a: Runs = Arc::default();
    let pool_a = counting_pool(
        Probed::new(mem.clone()).failing_acks(),
        1,
        Duration::from_millis(300),
        &runs_a,
    );
    schedule_now(&pool_a, "j", JOBS);
    wait_for("pool A's runs", || runs_a.lock().unwrap().len() == JOBS);
    pool_a.shutdown();
    assert!(pool_a.await_termination(WAIT));
    assert_eq!(pool_a.stats().succeeded, 0, "no ack reached the store");
    assert_eq!(mem.counts().unwrap().in_flight, JOBS, "all still leased");
    // Another process: every item comes back to it after the lease.
    let runs_b: Runs = Arc::default();
    let pool_b = counting_pool(mem.clone(), 2, LEASE, &runs_b);
    wait_for("pool B's runs", || runs_b.lock().unwrap().len() == JOBS);
    assert!(pool_b.wait_idle(WAIT));
    assert_eq!(pool_b.stats().succeeded, JOBS as u64);
    assert_eq!(mem.counts().unwrap(), Default::default(), "none lost");
    pool_b.shutdown();
    assert!(pool_b.await_termination(WAIT));
}

/// A custom backend whose `ack_many` panics does not kill the acker: the
/// pool terminates, the runs' leases are let go, and their items come back
/// to another process after the lease.
#[test]
fn a_backend_whose_ack_many_panics_leaves_the_pool_able_to_terminate() {
    const JOBS: usize = 5;
    let mem = MemoryBackend::new();
    let runs_a: Runs = Arc::default();
    let pool_a = counting_pool(
        Probed::new(mem.clone()).panicking_acks(),
        1,
        Duration::from_millis(300),
        &runs_a,
    );
    schedule_now(&pool_a, "p", JOBS);
    wait_for("pool A's runs", || runs_a.lock().unwrap().len() == JOBS);
    pool_a.shutdown();
    assert!(pool_a.await_termination(WAIT), "the acker exited");
    assert_eq!(pool_a.stats().succeeded, 0);
    let runs_b: Runs = Arc::default();
    let pool_b = counting_pool(mem.clone(), 1, LEASE, &runs_b);
    wait_for("pool B's runs", || runs_b.lock().unwrap().len() == JOBS);
    assert!(pool_b.wait_idle(WAIT));
    assert_eq!(mem.counts().unwrap(), Default::default(), "none lost");
    pool_b.shutdown();
    assert!(pool_b.await_termination(WAIT));
}

#[test]
fn items_claimed_ahead_keep_their_leases_while_they_wait() {
    let mem = MemoryBackend::new();
    let lease = Duration::from_millis(300);
    let runs: Runs = Arc::default();
    let handler = |runs: &Runs| {
        let seen = runs.clone();
        move |_: &(), job: &schedpool::durable::JobInfo| {
            count_run(&seen, &job.id);
            if job.id == "a-slow" {
                // Three leases long, while the rest wait in this pool.
                std::thread::sleep(Duration::from_secs(1));
            }
            Ok(())
        }
    };
    // Its claims take 150 ms (a slow round trip), so the puts below all
    // land before the claim that the first of them starts reads the store.
    let pool_a = DurablePool::builder(Probed::new(mem.clone()).claim_delay(150))
        .threads(1)
        .lease(lease)
        .handler("job", handler(&runs))
        .build()
        .unwrap();
    // Warm-up: fast runs teach the pool to claim ahead.
    for i in 0..5 {
        pool_a
            .schedule("job", &format!("warm-{i}"), &(), Duration::ZERO)
            .unwrap();
    }
    assert!(pool_a.wait_idle(WAIT));
    // One claim takes the slow item and the 29 behind it.
    pool_a
        .schedule("job", "a-slow", &(), Duration::ZERO)
        .unwrap();
    for i in 0..29 {
        pool_a
            .schedule("job", &format!("b-{i:02}"), &(), Duration::ZERO)
            .unwrap();
    }
    wait_for("the slow run", || {
        runs.lock().unwrap().contains_key("a-slow")
    });
    let waiting = mem.counts().unwrap();
    // Another process, which reclaims any lease that expires meanwhile.
    let pool_b = DurablePool::builder(mem.clone())
        .threads(2)
        .lease(lease)
        .handler("job", handler(&runs))
        .build()
        .unwrap();
    wait_for("every run", || runs.lock().unwrap().len() == 35);
    assert!(pool_a.wait_idle(WAIT) && pool_b.wait_idle(WAIT));
    let (a, b) = (pool_a.stats(), pool_b.stats());
    for pool in [pool_a, pool_b] {
        pool.shutdown();
        assert!(pool.await_termination(WAIT));
    }
    assert!(
        waiting.in_flight > 1,
        "pool A claimed ahead of its one worker: {waiting:?}"
    );
    let twice: Vec<_> = runs
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, &n)| n != 1)
        .map(|(id, n)| format!("{id}:{n}"))
        .collect();
    assert!(twice.is_empty(), "ran more than once: {twice:?}");
    assert_eq!((a.lease_lost, b.lease_lost), (0, 0));
    assert_eq!(a.succeeded + b.succeeded, 35);
    assert_eq!(mem.counts().unwrap(), Default::default());
}

/// Shutdown gives the items claimed ahead back to the store, one call
/// each. With the store unreachable each call waits out the backend's
/// operation timeout, so after the first such failure the rest are left to
/// their leases: they come back to another process all the same.
#[test]
fn shutdown_with_the_store_down_tries_one_release_not_one_per_item() {
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
            count_run(&seen, &job.id);
            if job.id == "a-slow" {
                std::thread::sleep(Duration::from_millis(500));
            }
            Ok(())
        })
        .build()
        .unwrap();
    // Fast runs teach the pool to claim ahead; then one claim takes the
    // slow item and the ones behind it.
    schedule_now(&pool_a, "warm", 5);
    assert!(pool_a.wait_idle(WAIT));
    pool_a
        .schedule("job", "a-slow", &(), Duration::ZERO)
        .unwrap();
    schedule_now(&pool_a, "b", 29);
    wait_for("the slow run", || {
        runs.lock().unwrap().contains_key("a-slow")
    });
    let held = mem.counts().unwrap().in_flight;
    assert!(held > 2, "pool A claimed ahead: {held} in flight");
    // The store goes away; shutdown releases what waits in the buffer.
    let before = probe.calls("nack");
    probe.fail_next("nack", usize::MAX);
    pool_a.shutdown();
    assert_eq!(
        probe.calls("nack") - before,
        1,
        "one release tried, then none"
    );
    assert!(pool_a.await_termination(WAIT));
    // The items come back after their leases.
    let pool_b = counting_pool(mem.clone(), 2, lease, &runs);
    wait_for("every run", || runs.lock().unwrap().len() == 35);
    assert!(pool_b.wait_idle(WAIT));
    assert_eq!(mem.counts().unwrap(), Default::default(), "none lost");
    pool_b.shutdown();
    assert!(pool_b.await_termination(WAIT));
}

#[test]
fn a_slow_ack_flush_keeps_the_leases_it_is_settling() {
    const JOBS: usize = 20;
    let mem = MemoryBackend::new();
    let runs: Runs = Arc::default();
    // Each ack call takes two leases; the leases must be renewed meanwhile.
    let lease = Duration::from_millis(300);
    let pool_a = counting_pool(Probed::new(mem.clone()).ack_delay(700), 2, lease, &runs);
    schedule_now(&pool_a, "j", JOBS);
    wait_for("pool A's runs", || runs.lock().unwrap().len() == JOBS);
    // Another process, which reclaims any lease that expires meanwhile.
    let pool_b = counting_pool(mem.clone(), 2, lease, &runs);
    assert!(pool_a.wait_idle(WAIT) && pool_b.wait_idle(WAIT));
    let (a, b) = (pool_a.stats(), pool_b.stats());
    for pool in [pool_a, pool_b] {
        pool.shutdown();
        assert!(pool.await_termination(WAIT));
    }
    assert_eq!(a.lease_lost, 0, "{a:?}");
    assert_eq!((a.succeeded, b.succeeded), (JOBS as u64, 0));
    assert!(
        runs.lock().unwrap().values().all(|&n| n == 1),
        "every job ran once: {:?}",
        runs.lock().unwrap()
    );
    assert_eq!(mem.counts().unwrap(), Default::default());
}

#[test]
fn shutdown_sends_every_ack_before_the_pool_terminates() {
    const JOBS: usize = 50;
    let mem = MemoryBackend::new();
    let runs: Runs = Arc::default();
    let pool = counting_pool(Probed::new(mem.clone()).ack_delay(300), 2, LEASE, &runs);
    schedule_now(&pool, "j", JOBS);
    wait_for("every run", || runs.lock().unwrap().len() == JOBS);
    pool.shutdown();
    assert!(pool.await_termination(WAIT));
    assert_eq!(pool.stats().succeeded, JOBS as u64);
    assert_eq!(
        mem.counts().unwrap(),
        Default::default(),
        "nothing left in flight once terminated"
    );
}
