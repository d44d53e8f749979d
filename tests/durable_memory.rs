//! The durable API on the in-memory backend with a `ManualClock`: what a
//! user's own tests do ("the order closes after 30 minutes", instantly).

use schedpool::durable::{
    DurableError, DurablePool, DurableQueue, MemoryBackend, Put, QueueOptions, Removed,
};
use schedpool::ManualClock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const MIN: Duration = Duration::from_secs(60);
const WAIT: Duration = Duration::from_secs(10);

type Log = Arc<Mutex<Vec<(u64, u32, u64)>>>;

fn recording_pool(clock: &ManualClock, threads: usize) -> (DurablePool, Log) {
    let log: Log = Arc::default();
    let l = log.clone();
    let pool = DurablePool::builder(MemoryBackend::with_clock(clock.clone()))
        .threads(threads)
        .handler("close-order", move |order: &u64, info| {
            l.lock()
                .unwrap()
                .push((*order, info.attempt, info.deadline_ms));
            Ok(())
        })
        .build()
        .unwrap();
    (pool, log)
}

#[test]
fn an_order_closes_after_30_minutes_and_not_before() {
    let clock = ManualClock::new();
    let (pool, log) = recording_pool(&clock, 2);
    pool.schedule("close-order", "order-42", &42u64, 30 * MIN)
        .unwrap();
    pool.schedule("close-order", "order-43", &43u64, 30 * MIN)
        .unwrap();
    // Order 43 is paid.
    assert!(pool.cancel("order-43").unwrap());
    clock.advance(30 * MIN - Duration::from_secs(1));
    assert!(pool.wait_idle(WAIT));
    assert!(log.lock().unwrap().is_empty(), "nothing closes early");
    clock.advance(Duration::from_secs(1));
    assert!(pool.wait_idle(WAIT));
    assert_eq!(
        log.lock().unwrap().iter().map(|r| r.0).collect::<Vec<_>>(),
        vec![42]
    );
    assert_eq!(pool.stats().succeeded, 1);
    assert_eq!(
        pool.counts().unwrap(),
        Default::default(),
        "acked items are gone"
    );
    pool.shutdown();
    assert!(pool.await_termination(WAIT));
    assert!(pool.is_terminated());
}

#[test]
fn failures_retry_with_backoff_then_dead_letter() {
    let clock = ManualClock::new();
    let runs = Arc::new(AtomicU32::new(0));
    let r = runs.clone();
    let pool = DurablePool::builder(MemoryBackend::with_clock(clock.clone()))
        .threads(1)
        .max_attempts(3)
        .retry_backoff(Duration::from_secs(10), Duration::from_secs(15))
        .handler("flaky", move |_: &(), info| {
            r.fetch_add(1, Ordering::SeqCst);
            if info.attempt == 2 {
                panic!("attempt 2 panics");
            }
            Err("downstream refused".into())
        })
        .build()
        .unwrap();
    pool.schedule("flaky", "job", &(), Duration::ZERO).unwrap();
    clock.advance(Duration::ZERO);
    assert!(pool.wait_idle(WAIT));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // The first backoff is 10 s: 9 s is not enough.
    clock.advance(Duration::from_secs(9));
    assert!(pool.wait_idle(WAIT));
    assert_eq!(runs.load(Ordering::SeqCst), 1, "a retry is never early");
    clock.advance(Duration::from_secs(1));
    assert!(pool.wait_idle(WAIT));
    assert_eq!(
        runs.load(Ordering::SeqCst),
        2,
        "the panic is caught and retried"
    );
    // The second backoff is capped at 15 s.
    clock.advance(Duration::from_secs(15));
    assert!(pool.wait_idle(WAIT));
    assert_eq!(runs.load(Ordering::SeqCst), 3);
    let stats = pool.stats();
    assert_eq!(
        (stats.failed, stats.retried, stats.dead_lettered),
        (3, 2, 1)
    );
    assert_eq!(
        pool.dead_letters(10).unwrap(),
        vec![("job".to_string(), "flaky".to_string())]
    );
    clock.advance(10 * MIN);
    assert!(pool.wait_idle(WAIT));
    assert_eq!(
        runs.load(Ordering::SeqCst),
        3,
        "a dead letter never runs again"
    );
}

#[test]
fn a_fixed_rate_chain_keeps_its_grid_and_catches_up() {
    let clock = ManualClock::new();
    let (pool, log) = recording_pool(&clock, 2);
    let first = pool
        .schedule_at_fixed_rate("close-order", "tick", &7u64, MIN, MIN)
        .unwrap()
        .deadline_ms()
        .unwrap();
    // Starting it again (another process, a restart) leaves it as it is.
    assert_eq!(
        pool.schedule_at_fixed_rate("close-order", "tick", &7u64, MIN, MIN)
            .unwrap(),
        Put::Exists
    );
    clock.advance(MIN);
    assert!(pool.wait_idle(WAIT));
    // 10 minutes at once: 10 catch-up runs, one per scheduled minute.
    clock.advance(10 * MIN);
    assert!(pool.wait_idle(WAIT));
    let deadlines: Vec<u64> = log.lock().unwrap().iter().map(|r| r.2).collect();
    let expected: Vec<u64> = (0..11).map(|i| first + i * 60_000).collect();
    assert_eq!(deadlines, expected, "every occurrence once, on the grid");
    assert!(pool.cancel("tick").unwrap());
    clock.advance(10 * MIN);
    assert!(pool.wait_idle(WAIT));
    assert_eq!(log.lock().unwrap().len(), 11, "a cancelled chain stops");
}

#[test]
fn a_fixed_delay_chain_counts_from_the_end_of_each_run() {
    let clock = ManualClock::new();
    let (pool, log) = recording_pool(&clock, 1);
    pool.schedule_with_fixed_delay("close-order", "reaper", &1u64, Duration::ZERO, MIN)
        .unwrap();
    clock.advance(Duration::ZERO);
    assert!(pool.wait_idle(WAIT));
    // A fixed delay does not catch up: 10 minutes at once is one run.
    clock.advance(10 * MIN);
    assert!(pool.wait_idle(WAIT));
    clock.advance(MIN);
    assert!(pool.wait_idle(WAIT));
    let log = log.lock().unwrap();
    assert_eq!(log.len(), 3, "{log:?}");
    assert!(log[2].2 >= log[1].2 + 60_000);
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    let clock = ManualClock::new();
    let (pool, _) = recording_pool(&clock, 1);
    let config = |r: Result<Put, DurableError>| matches!(r, Err(DurableError::Config(_)));
    assert!(config(pool.schedule("no-such-kind", "x", &1u64, MIN)));
    assert!(config(pool.schedule("close-order", "", &1u64, MIN)));
    assert!(config(pool.schedule_at_fixed_rate(
        "close-order",
        "x",
        &1u64,
        MIN,
        Duration::ZERO
    )));
    assert!(
        DurablePool::builder(MemoryBackend::new())
            .threads(1)
            .build()
            .is_err(),
        "workers without handlers"
    );
    let opts = QueueOptions {
        lease: Duration::ZERO,
        ..QueueOptions::default()
    };
    assert!(DurableQueue::<u64>::with_options(MemoryBackend::new(), opts).is_err());
    pool.shutdown();
    assert_eq!(
        pool.schedule("close-order", "x", &1u64, MIN),
        Err(DurableError::Closed)
    );
}

#[test]
fn a_queue_take_wakes_on_advance() {
    let clock = ManualClock::new();
    let queue: DurableQueue<String> = DurableQueue::new(MemoryBackend::with_clock(clock.clone()));
    queue
        .put("session-1", &"expire".to_string(), 30 * MIN)
        .unwrap();
    let q = queue.clone();
    let taker =
        std::thread::spawn(move || q.take().unwrap().map(|d| (d.id().to_string(), d.ack())));
    std::thread::sleep(Duration::from_millis(50));
    assert!(!taker.is_finished(), "take waits for the deadline");
    let t = Instant::now();
    clock.advance(30 * MIN);
    let (id, acked) = taker.join().unwrap().expect("open queue");
    assert_eq!(id, "session-1");
    acked.unwrap();
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "woken by the advance, not by max_block"
    );
}

#[test]
fn a_lease_expires_in_virtual_time_and_fences_the_holder() {
    let clock = ManualClock::new();
    let queue: DurableQueue<u64> = DurableQueue::new(MemoryBackend::with_clock(clock.clone()));
    queue.put("x", &1, Duration::ZERO).unwrap();
    let held = queue.poll().unwrap().unwrap();
    assert!(
        queue.poll().unwrap().is_none(),
        "leased: not handed out twice"
    );
    clock.advance(queue.options().lease);
    let again = queue.poll().unwrap().expect("the lease expired");
    assert_eq!(again.attempt(), 2);
    assert!(again.token() > held.token());
    assert_eq!(held.ack(), Err(DurableError::LeaseLost));
    again.ack().unwrap();
}

#[test]
fn a_dropped_delivery_comes_back_at_once() {
    let queue: DurableQueue<u64> = DurableQueue::new(MemoryBackend::new());
    queue.put("x", &1, Duration::ZERO).unwrap();
    drop(queue.poll_timeout(WAIT).unwrap().unwrap());
    let again = queue.poll_timeout(Duration::from_secs(2)).unwrap();
    let again = again.expect("released by the heartbeat thread, not after the 30 s lease");
    assert_eq!(again.attempt(), 2);
    again.ack().unwrap();
}

#[test]
fn an_undecodable_item_is_dead_lettered_not_delivered() {
    let backend = MemoryBackend::new();
    let strings: DurableQueue<String> = DurableQueue::new(backend.clone());
    let numbers: DurableQueue<u64> = DurableQueue::new(backend);
    strings
        .put("bad", &"not eight bytes".to_string(), Duration::ZERO)
        .unwrap();
    numbers.put("good", &5, Duration::ZERO).unwrap();
    let d = numbers.poll_timeout(WAIT).unwrap().unwrap();
    assert_eq!((d.id(), *d.value()), ("good", 5));
    d.ack().unwrap();
    let dead = numbers.dead_letters(10).unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].0, "bad");
    assert!(matches!(dead[0].1, Err(DurableError::Format(_))));
    assert!(matches!(
        numbers.remove("bad"),
        Err(DurableError::Format(_))
    ));
    assert_eq!(numbers.remove("bad").unwrap(), Removed::NotFound);
}

#[test]
fn close_unblocks_takers_and_keeps_the_items() {
    let queue: DurableQueue<u64> = DurableQueue::new(MemoryBackend::new());
    queue.put("later", &1, 10 * MIN).unwrap();
    let takers: Vec<_> = (0..3)
        .map(|_| {
            let q = queue.clone();
            std::thread::spawn(move || q.take().unwrap().is_none())
        })
        .collect();
    std::thread::sleep(Duration::from_millis(50));
    let t = Instant::now();
    queue.close();
    for taker in takers {
        assert!(taker.join().unwrap(), "take returns None once closed");
    }
    assert!(t.elapsed() < Duration::from_secs(1));
    assert!(queue.is_closed());
    assert_eq!(
        queue.len().unwrap(),
        1,
        "close leaves the stored items alone"
    );
}

#[test]
fn many_takers_share_one_leader_and_get_everything_once() {
    let queue: DurableQueue<u64> = DurableQueue::new(MemoryBackend::new());
    for i in 0..2000u64 {
        queue
            .put(&format!("i{i}"), &i, Duration::from_millis(i % 50))
            .unwrap();
    }
    let seen = Arc::new(Mutex::new(Vec::new()));
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let (q, seen) = (queue.clone(), seen.clone());
            std::thread::spawn(move || {
                while let Some(d) = q.poll_timeout(Duration::from_millis(300)).unwrap() {
                    seen.lock().unwrap().push(*d.value());
                    d.ack().unwrap();
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let mut seen = seen.lock().unwrap().clone();
    seen.sort_unstable();
    assert_eq!(seen, (0..2000).collect::<Vec<_>>());
    assert!(queue.is_empty().unwrap());
}

#[test]
fn a_producer_only_pool_schedules_for_the_fleet() {
    let clock = ManualClock::new();
    let backend = MemoryBackend::with_clock(clock.clone());
    let producer = DurablePool::builder(backend.clone())
        .threads(0)
        .build()
        .unwrap();
    let log: Log = Arc::default();
    let l = log.clone();
    let worker = DurablePool::builder(backend)
        .threads(1)
        .handler("close-order", move |order: &u64, info| {
            assert!(info.claimed_ms >= info.deadline_ms, "never early");
            l.lock()
                .unwrap()
                .push((*order, info.attempt, info.deadline_ms));
            Ok(())
        })
        .build()
        .unwrap();
    producer
        .schedule("close-order", "order-1", &1u64, MIN)
        .unwrap();
    clock.advance(MIN);
    assert!(worker.wait_idle(WAIT));
    assert_eq!(log.lock().unwrap().len(), 1);
    producer.shutdown();
    assert!(
        producer.await_termination(WAIT),
        "no workers: terminated at once"
    );
}

#[test]
fn a_process_without_the_handler_defers_the_item_to_one_that_has_it() {
    // A rolling deploy: the old process (kind "a" only) claims items of the
    // new kind "b" before the new process is up. It must hand them back
    // without using up attempts, so they are not dead-lettered.
    let clock = ManualClock::new();
    let backend = MemoryBackend::with_clock(clock.clone());
    let old = DurablePool::builder(backend.clone())
        .threads(1)
        .max_attempts(2)
        .retry_backoff(Duration::from_secs(1), Duration::from_secs(60))
        .handler("a", |_: &(), _| Ok(()))
        .build()
        .unwrap();
    let producer = DurablePool::builder(backend.clone())
        .threads(0)
        .build()
        .unwrap();
    producer
        .schedule("b", "new-kind", &7u64, Duration::ZERO)
        .unwrap();
    for _ in 0..5 {
        clock.advance(Duration::from_secs(1));
        assert!(old.wait_idle(WAIT));
    }
    assert!(old.stats().deferred >= 5, "{:?}", old.stats());
    assert_eq!(
        old.counts().unwrap().dead,
        0,
        "never dead-lettered for a missing handler"
    );
    let log: Log = Arc::default();
    let l = log.clone();
    let new = DurablePool::builder(backend)
        .threads(1)
        .handler("b", move |v: &u64, info| {
            l.lock().unwrap().push((*v, info.attempt, info.deadline_ms));
            Ok(())
        })
        .build()
        .unwrap();
    old.shutdown();
    assert!(old.await_termination(WAIT));
    clock.advance(Duration::from_secs(1));
    assert!(new.wait_idle(WAIT));
    let log = log.lock().unwrap();
    assert_eq!(log.len(), 1);
    assert_eq!((log[0].0, log[0].1), (7, 1), "the first real attempt");
}

#[test]
fn a_handler_sees_its_lease_lost_when_the_item_is_cancelled_mid_run() {
    let (tx, rx) = std::sync::mpsc::channel();
    let pool = DurablePool::builder(MemoryBackend::new())
        .threads(1)
        .lease(Duration::from_millis(300))
        .handler("long", move |_: &(), info| {
            tx.send("started").unwrap();
            let until = Instant::now() + Duration::from_secs(5);
            while !info.lease_lost() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(5));
            }
            tx.send(if info.lease_lost() { "lost" } else { "kept" })
                .unwrap();
            Ok(())
        })
        .build()
        .unwrap();
    pool.schedule("long", "job", &(), Duration::ZERO).unwrap();
    assert_eq!(rx.recv_timeout(WAIT).unwrap(), "started");
    assert!(pool.cancel("job").unwrap());
    assert_eq!(
        rx.recv_timeout(WAIT).unwrap(),
        "lost",
        "the next heartbeat tells the handler"
    );
    assert!(pool.wait_idle(WAIT));
    assert_eq!(pool.stats().lease_lost, 1, "its ack was refused");
    assert_eq!(pool.stats().succeeded, 0);
}
