//! The durable API on the in-memory backend. With a `ManualClock`: what a
//! user's own tests do ("the order closes after 30 minutes", instantly). On
//! the real clock, the races of the leader/follower taker and the pool
//! around the store's round trips: heartbeats of an extended lease, a claim
//! that outlives its takers, close, `wait_idle`, `shutdown_now`, generated
//! ids, repeated acks.
//!
//! Some of the latter wrap the in-memory backend in `Laggy`, which only adds
//! delays (as the round trips of a real store would) around the real
//! operations: it changes no semantics, it only widens race windows
//! deterministically.

mod durable_support;

use schedpool::durable::{
    DurableBackend, DurableError, DurablePool, DurableQueue, MemoryBackend, Put, PutMode,
    QueueOptions, Removed, When,
};
use schedpool::ManualClock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use durable_support::options_ms;

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

/// The in-memory backend with optional delays (before a claim or a nack,
/// after a counts read): see `tests/durable_support`.
type Laggy = durable_support::Probed<MemoryBackend>;

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
    let dead = pool.dead_letters(10).unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!(
        (dead[0].id.as_str(), dead[0].kind.as_str(), dead[0].attempts),
        ("job", "flaky", 3)
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
    let named = DurablePool::builder(MemoryBackend::new())
        .threads(1)
        .name("bad\0name")
        .handler("job", |_: &u64, _| Ok(()))
        .build();
    assert!(
        matches!(&named, Err(DurableError::Config(m)) if m.contains("NUL")),
        "a thread name with a NUL byte: {:?}",
        named.err()
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
    // A take that missed the advance would sleep out max_block: 60 s, far
    // past the bound below.
    let queue: DurableQueue<String> = DurableQueue::with_options(
        MemoryBackend::with_clock(clock.clone()),
        options_ms(30_000, 60_000),
    )
    .unwrap();
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
    assert!(t.elapsed() < WAIT, "woken by the advance, not by max_block");
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
    assert_eq!(dead[0].id, "bad");
    assert!(matches!(dead[0].value, Err(DurableError::Format(_))));
    assert_eq!(
        dead[0].error.as_deref(),
        Some("unreadable durable data: item \"bad\": expected 8 bytes, found 15"),
        "the decode error is recorded"
    );
    assert!(matches!(
        numbers.remove("bad"),
        Err(DurableError::Format(_))
    ));
    assert_eq!(numbers.remove("bad").unwrap(), Removed::NotFound);
}

#[test]
fn close_unblocks_takers_and_keeps_the_items() {
    // A taker that missed the close would sleep out max_block: 60 s.
    let queue: DurableQueue<u64> =
        DurableQueue::with_options(MemoryBackend::new(), options_ms(30_000, 60_000)).unwrap();
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
    assert!(t.elapsed() < WAIT, "woken by the close, not by max_block");
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

// ===== on the real clock: leases and claims =====
//
// A comment below that says how the code goes wrong tells a bug the code
// once had (all fixed): its test rules the bug out.

/// `Delivery::extend(d)` promises "keeps heartbeats renewing it to that
/// length", but the heartbeat thread ticks every `queue lease / 3`, fixed
/// at start. With `d` shorter than the tick, the lease lapses between
/// beats and another consumer claims the item while the first delivery is
/// alive (and was never told its lease was lost). In seconds, not tens of
/// milliseconds (a 9 s lease extended to 900 ms, watched for 3 s): the
/// fixed 3 s tick lets it lapse, while a heartbeat a loaded machine delays
/// by 60 ms does not.
#[test]
fn extend_to_a_shorter_lease_keeps_the_item_held() {
    let mem = MemoryBackend::new();
    let a: DurableQueue<u64> =
        DurableQueue::with_options(mem.clone(), options_ms(9_000, 50)).unwrap();
    let b: DurableQueue<u64> =
        DurableQueue::with_options(mem.clone(), options_ms(9_000, 50)).unwrap();
    a.put("x", &1, Duration::ZERO).unwrap();
    let held = a.take().unwrap().expect("due now");
    held.extend(Duration::from_millis(900)).unwrap();
    let until = Instant::now() + Duration::from_millis(3_000);
    let mut stolen = None;
    while Instant::now() < until {
        if let Some(d) = b.poll().unwrap() {
            stolen = Some((d.token(), held.lease_lost()));
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(
        stolen, None,
        "a second consumer claimed the item (token, first holder's lease_lost) \
         while the first delivery was alive and heartbeating"
    );
    held.ack().unwrap();
}

/// The leader claims `takers` items, but a timed taker can leave during the
/// claim's round trip. The surplus sits in the local buffer without a
/// heartbeat; its lease expires, another process claims it, and a later
/// `poll` here hands out the stale copy: two live holders of one item.
#[test]
fn a_surplus_claim_is_not_handed_out_after_its_lease_expired() {
    let mem = MemoryBackend::new();
    let a: DurableQueue<u64> = DurableQueue::with_options(
        Laggy::new(mem.clone()).claim_delay(200),
        options_ms(300, 2000),
    )
    .unwrap();
    let b: DurableQueue<u64> =
        DurableQueue::with_options(mem.clone(), options_ms(300, 50)).unwrap();

    // T1 leads and waits in the store (nothing is due yet).
    let a1 = a.clone();
    let t1 = std::thread::spawn(move || {
        let d = a1
            .poll_timeout(Duration::from_secs(5))
            .unwrap()
            .expect("x1 or x2");
        let id = d.id().to_string();
        d.ack().unwrap();
        id
    });
    std::thread::sleep(Duration::from_millis(250));
    // T2 follows with a short limit: it is counted when T1 takes the lead
    // again, and leaves while T1's claim (200 ms) is in flight.
    let a2 = a.clone();
    let t2 = std::thread::spawn(move || {
        a2.poll_timeout(Duration::from_millis(150))
            .unwrap()
            .map(|d| d.id().to_string())
    });
    std::thread::sleep(Duration::from_millis(10));
    b.put("x1", &1, Duration::ZERO).unwrap();
    b.put("x2", &2, Duration::ZERO).unwrap();
    let first = t1.join().unwrap();
    assert_eq!(
        t2.join().unwrap(),
        None,
        "T2 left before the claim returned"
    );
    let other = if first == "x1" { "x2" } else { "x1" };

    // The stranded item's lease (300 ms) expires; process B claims it.
    std::thread::sleep(Duration::from_millis(500));
    let theirs = b
        .poll()
        .unwrap()
        .expect("the expired lease is reclaimed by B");
    assert_eq!(theirs.id(), other);

    // A must not hand out its stale copy while B holds the item.
    let stale = a.poll().unwrap();
    assert!(
        stale.is_none(),
        "A handed out {:?} (token {:?}) while B holds it under token {}",
        stale.as_ref().map(|d| d.id().to_string()),
        stale.as_ref().map(|d| d.token()),
        theirs.token()
    );
    theirs.ack().unwrap();
}

/// Receipts: a repeated ack with the holder's token answers as the first.
#[test]
fn a_repeated_ack_answers_as_the_first() {
    let mem = MemoryBackend::new();
    mem.put(
        "x",
        &[1, 0, 0],
        When::After(Duration::ZERO),
        PutMode::Replace,
    )
    .unwrap();
    let c = mem
        .claim(Duration::from_secs(5), 1, 0)
        .unwrap()
        .items
        .remove(0);
    assert!(mem.ack("x", c.token).unwrap());
    assert!(mem.ack("x", c.token).unwrap());
    assert!(!mem.ack("x", c.token + 1).unwrap());
}

/// Leader/follower: many takers and a trickle of items, none lost.
#[test]
fn takers_get_a_trickle_of_items_once() {
    let queue: DurableQueue<u64> =
        DurableQueue::with_options(MemoryBackend::new(), options_ms(5_000, 200)).unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let (q, seen) = (queue.clone(), seen.clone());
            std::thread::spawn(move || {
                while let Some(d) = q.take().unwrap() {
                    seen.lock().unwrap().push(*d.value());
                    d.ack().unwrap();
                }
            })
        })
        .collect();
    for i in 0..200u64 {
        queue
            .put(&format!("i{i}"), &i, Duration::from_millis(i % 7))
            .unwrap();
        if i % 10 == 0 {
            std::thread::sleep(Duration::from_millis(3));
        }
    }
    let until = Instant::now() + Duration::from_secs(10);
    while seen.lock().unwrap().len() < 200 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    queue.close();
    for w in workers {
        w.join().unwrap();
    }
    let mut seen = seen.lock().unwrap().clone();
    seen.sort_unstable();
    assert_eq!(seen, (0..200).collect::<Vec<_>>());
}

/// `push` promises ids "time-ordered within this process", so ties come out
/// FIFO. The ms part is process-wide (`FLOOR`), but the sequence `last` is
/// per `IdGen`, i.e. per queue handle: within one ms, a second handle's
/// first id (seq 0) sorts before the first handle's later ids.
#[test]
fn generated_ids_of_two_handles_in_one_process_sort_in_creation_order() {
    let mem = MemoryBackend::with_clock(ManualClock::new());
    let q1: DurableQueue<u64> = DurableQueue::new(mem.clone());
    let q2: DurableQueue<u64> = DurableQueue::new(mem.clone());
    for _ in 0..1000 {
        for _ in 0..20 {
            q1.next_id();
        }
        let a = q1.next_id();
        let b = q2.next_id();
        if a[..12] == b[..12] {
            assert!(a < b, "id {b} made after {a} sorts before it");
            return;
        }
    }
    panic!("never got two ids in one ms");
}

// ===== on the real clock: close, wait_idle and shutdown_now =====
//
// A comment below that says how the code goes wrong tells a bug the code
// once had (all fixed): its test rules the bug out.

/// Two queues on clones of one `MemoryBackend` model two processes on one
/// Redis. Closing A sets the *shared* `unblocked` flag, which B's waiting
/// leader consumes; A's leader (its claim still in flight) then waits its
/// whole `max_block`. On Redis each process has its own backend and its
/// own `unblock_pending`, so close is never stolen.
#[test]
fn closing_one_queue_is_not_stolen_by_another_on_a_shared_memory_backend() {
    let mem = MemoryBackend::new();
    let a: DurableQueue<u64> = DurableQueue::with_options(
        Laggy::new(mem.clone()).claim_delay(300),
        options_ms(30_000, 8_000),
    )
    .unwrap();
    let b: DurableQueue<u64> =
        DurableQueue::with_options(mem.clone(), options_ms(30_000, 8_000)).unwrap();
    let b1 = b.clone();
    let tb = std::thread::spawn(move || b1.take().unwrap().is_none());
    std::thread::sleep(Duration::from_millis(100)); // B's leader waits in the store
    let (tx, rx) = mpsc::channel();
    let a1 = a.clone();
    std::thread::spawn(move || {
        let r = a1.take().unwrap().is_none();
        tx.send(r).unwrap();
    });
    std::thread::sleep(Duration::from_millis(100)); // A's leader is claiming
    let t = Instant::now();
    a.close();
    let r = rx.recv_timeout(Duration::from_secs(2));
    let took = t.elapsed();
    b.close();
    assert!(tb.join().unwrap());
    assert_eq!(
        r,
        Ok(true),
        "A's take did not return None within 2 s of close ({took:?})"
    );
}

/// `is_idle` checks `busy` first, then reads counts, the head and the time
/// in three separate store calls. A claim landing between the counts and
/// the head makes it report idle while the handler runs: the module docs'
/// own example (`advance; wait_idle; assert succeeded == 1`) can fail.
#[test]
fn wait_idle_is_not_true_while_a_handler_runs() {
    let clock = ManualClock::new();
    let backend = Laggy::new(MemoryBackend::with_clock(clock.clone()))
        .claim_delay(50)
        .counts_delay(100);
    let pool = DurablePool::builder(backend)
        .threads(1)
        .max_block(Duration::from_secs(5))
        .handler("slow", |_: &u64, _| {
            std::thread::sleep(Duration::from_millis(400));
            Ok(())
        })
        .build()
        .unwrap();
    pool.schedule("slow", "job", &1u64, Duration::from_secs(60))
        .unwrap();
    std::thread::sleep(Duration::from_millis(200)); // the worker waits in the store
    clock.advance(Duration::from_secs(60));
    assert!(pool.wait_idle(Duration::from_secs(5)));
    let succeeded = pool.stats().succeeded;
    pool.shutdown();
    assert!(pool.await_termination(Duration::from_secs(5)));
    assert_eq!(
        succeeded, 1,
        "wait_idle returned true before the run finished"
    );
}

/// `close_and_list` waits only until the leader's turn ends (`leader` is
/// cleared), then returns `released`; the leader nacks those items *after*
/// unlocking. So `shutdown_now()` can return ids that are still leased in
/// the store (and whose release may yet fail).
#[test]
fn shutdown_now_returns_after_the_items_it_lists_are_released() {
    let mem = MemoryBackend::new();
    let backend = Laggy::new(mem.clone()).claim_delay(200).nack_delay(300);
    let pool = DurablePool::builder(backend)
        .threads(1)
        .lease(Duration::from_secs(30))
        .handler("k", |_: &u64, _| Ok(()))
        .build()
        .unwrap();
    std::thread::sleep(Duration::from_millis(250)); // first (empty) claim done
    pool.schedule("k", "x", &1u64, Duration::ZERO).unwrap(); // wakes the leader: claim in flight
    std::thread::sleep(Duration::from_millis(50));
    let ids = pool.shutdown_now();
    let counts = mem.counts().unwrap();
    assert!(pool.await_termination(Duration::from_secs(5)));
    assert_eq!(ids, vec!["x".to_string()]);
    assert_eq!(
        (counts.pending, counts.in_flight),
        (1, 0),
        "shutdown_now returned {ids:?} while the item was still leased"
    );
}

#[test]
fn a_producer_pool_never_claims_a_job() {
    // A web process that only schedules: `DurablePool::producer` starts no
    // worker, so it never claims the fleet's jobs, not even due ones of a
    // kind it has no handler for (which a worker would claim and hand
    // back).
    let store = MemoryBackend::new();
    let probed = durable_support::Probed::new(store.clone());
    let probe = probed.probe.clone();
    let producer = DurablePool::producer(probed).unwrap();
    let started = Instant::now();
    for n in 0..20u64 {
        producer
            .schedule("close-order", &format!("order-{n}"), &n, Duration::ZERO)
            .unwrap();
    }
    assert_eq!(producer.counts().unwrap().pending, 20);
    // The fleet's worker runs them all, meanwhile.
    let ran = Arc::new(AtomicU32::new(0));
    let r = ran.clone();
    let worker = DurablePool::builder(store)
        .threads(2)
        .handler("close-order", move |_: &u64, _| {
            r.fetch_add(1, Ordering::SeqCst);
            Ok(())
        })
        .build()
        .unwrap();
    assert!(worker.wait_idle(WAIT));
    assert_eq!(ran.load(Ordering::SeqCst), 20);
    // A pool with workers claims within milliseconds of its build; give
    // the producer's (if it had any) at least 200 ms.
    std::thread::sleep(Duration::from_millis(200).saturating_sub(started.elapsed()));
    for verb in ["claim", "wait", "extend", "ack", "ack_many", "nack"] {
        assert_eq!(probe.calls(verb), 0, "the producer called {verb}");
    }
    assert_eq!(probe.calls("put"), 20);
    assert_eq!(producer.stats(), Default::default(), "it ran nothing");
    // It cancels, as it schedules, any kind.
    producer
        .schedule("no-such-kind", "later", &0u64, MIN)
        .unwrap();
    assert!(producer.cancel("later").unwrap());
    producer.shutdown();
    assert!(producer.await_termination(WAIT), "no threads to wait for");
    worker.shutdown();
    assert!(worker.await_termination(WAIT));
}

#[test]
fn a_repeated_put_of_a_running_item_runs_it_again_put_if_absent_does_not() {
    // docs/durable.md, rule 5: a repeated put is idempotent only while the
    // item is pending.
    let (started_tx, started) = mpsc::channel::<u64>();
    let (release, release_rx) = mpsc::channel::<()>();
    let (started_tx, release_rx) = (Mutex::new(started_tx), Mutex::new(release_rx));
    let pool = DurablePool::builder(MemoryBackend::new())
        .threads(1)
        .lease(Duration::from_secs(30))
        .handler("job", move |value: &u64, _| {
            started_tx.lock().unwrap().send(*value).unwrap();
            release_rx.lock().unwrap().recv().unwrap();
            Ok(())
        })
        .build()
        .unwrap();
    let next_start = || started.recv_timeout(WAIT).expect("a run started");

    // `schedule` of an item while its handler runs: replaced, the running
    // holder's ack is refused, and the handler runs again.
    pool.schedule("job", "x", &1u64, Duration::ZERO).unwrap();
    assert_eq!(next_start(), 1);
    let again = pool.schedule("job", "x", &2u64, Duration::ZERO).unwrap();
    assert!(matches!(again, Put::Replaced { .. }), "{again:?}");
    release.send(()).unwrap();
    assert_eq!(next_start(), 2, "the handler runs again");
    release.send(()).unwrap();
    assert!(pool.wait_idle(WAIT));
    let stats = pool.stats();
    assert_eq!((stats.succeeded, stats.lease_lost), (1, 1), "{stats:?}");

    // `schedule_if_absent` of a running item changes nothing.
    pool.schedule("job", "y", &3u64, Duration::ZERO).unwrap();
    assert_eq!(next_start(), 3);
    let again = pool
        .schedule_if_absent("job", "y", &4u64, Duration::ZERO)
        .unwrap();
    assert_eq!(again, Put::Exists);
    release.send(()).unwrap();
    assert!(pool.wait_idle(WAIT));
    assert!(started.try_recv().is_err(), "it ran once");
    let stats = pool.stats();
    assert_eq!((stats.succeeded, stats.lease_lost), (2, 1), "{stats:?}");

    // While pending, both leave one item: `schedule` replaces it with the
    // new value, `schedule_if_absent` keeps the first.
    pool.schedule("job", "z", &5u64, MIN).unwrap();
    pool.schedule("job", "z", &6u64, MIN).unwrap();
    pool.schedule_if_absent("job", "z", &7u64, MIN).unwrap();
    assert_eq!(pool.counts().unwrap().pending, 1);
    pool.shutdown_now();
    assert!(pool.await_termination(WAIT));
}

#[test]
fn an_item_id_over_1024_bytes_is_refused_on_every_path() {
    // The same limit as PostgreSQL's (tests/durable_postgres.rs), so an
    // application is portable between the backends.
    let queue: DurableQueue<u64> = DurableQueue::new(MemoryBackend::new());
    let longest = "k".repeat(1024);
    queue.put(&longest, &1, MIN).unwrap();
    // 1,025 bytes, with a 3-byte character across the cut of the message.
    let over = format!("{}€", "k".repeat(1022));
    assert_eq!(over.len(), 1025);
    let refused = |r: Result<Put, DurableError>| match r {
        Err(DurableError::Config(m)) => {
            assert!(m.contains("at most 1024 bytes"), "{m}");
            assert!(m.contains("has 1025"), "{m}");
        }
        other => panic!("{other:?}"),
    };
    refused(queue.put(&over, &2, MIN));
    refused(queue.put_if_absent(&over, &2, MIN));
    refused(queue.put_at_server_ms(&over, &2, 0));
    let many_bytes = "€".repeat(400);
    assert!(matches!(
        queue.put(&many_bytes, &3, MIN),
        Err(DurableError::Config(m)) if m.contains("has 1200")
    ));
    let pool = DurablePool::producer(MemoryBackend::new()).unwrap();
    refused(pool.schedule("job", &over, &2u64, MIN));
    refused(pool.schedule_if_absent("job", &over, &2u64, MIN));
    refused(pool.schedule_at_fixed_rate("job", &over, &2u64, MIN, MIN));
    pool.schedule("job", &longest, &1u64, MIN).unwrap();
    // Nothing over the limit was stored; a lookup of such an id finds
    // nothing.
    assert_eq!(queue.len().unwrap(), 1);
    assert_eq!(queue.remove(&over).unwrap(), Removed::NotFound);
    assert_eq!(queue.remove(&longest).unwrap(), Removed::Pending(1));
    assert_eq!(pool.counts().unwrap().pending, 1);
    assert!(!pool.cancel(&over).unwrap());
}
