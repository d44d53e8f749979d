//! Second-pair-of-eyes review of `src/durable/`: each test reproduces one
//! suspected bug. A test that fails here is a confirmed bug (see the review
//! report for the suggested fix).
//!
//! Some tests wrap the in-memory backend in `Laggy`, which only adds delays
//! (as the round trips of a real store would) around the real operations:
//! it changes no semantics, it only widens race windows deterministically.

#[cfg(feature = "redis")]
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

#[cfg(feature = "redis")]
use schedpool::durable::DurableError;
use schedpool::durable::{
    DurableBackend, DurablePool, DurableQueue, MemoryBackend, PutMode, QueueOptions, When,
};
use schedpool::ManualClock;

mod durable_support;

/// The in-memory backend with optional delays (before a claim or a nack,
/// after a counts read): see `tests/durable_support`.
type Laggy = durable_support::Probed<MemoryBackend>;

fn opts(lease_ms: u64, max_block_ms: u64) -> QueueOptions {
    QueueOptions {
        lease: Duration::from_millis(lease_ms),
        max_block: Duration::from_millis(max_block_ms),
        ..QueueOptions::default()
    }
}

// ---------------------------------------------------------------------------
// leases.rs: Delivery::extend to a lease shorter than the heartbeat tick.
// ---------------------------------------------------------------------------

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
    let a: DurableQueue<u64> = DurableQueue::with_options(mem.clone(), opts(9_000, 50)).unwrap();
    let b: DurableQueue<u64> = DurableQueue::with_options(mem.clone(), opts(9_000, 50)).unwrap();
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

// ---------------------------------------------------------------------------
// taker.rs: a claim sized for takers that left is stranded in the buffer.
// ---------------------------------------------------------------------------

/// The leader claims `takers` items, but a timed taker can leave during the
/// claim's round trip. The surplus sits in the local buffer without a
/// heartbeat; its lease expires, another process claims it, and a later
/// `poll` here hands out the stale copy: two live holders of one item.
#[test]
fn a_surplus_claim_is_not_handed_out_after_its_lease_expired() {
    let mem = MemoryBackend::new();
    let a: DurableQueue<u64> =
        DurableQueue::with_options(Laggy::new(mem.clone()).claim_delay(200), opts(300, 2000))
            .unwrap();
    let b: DurableQueue<u64> = DurableQueue::with_options(mem.clone(), opts(300, 50)).unwrap();

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

// ---------------------------------------------------------------------------
// memory.rs: `unblock` is shared by every clone of a MemoryBackend.
// ---------------------------------------------------------------------------

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
        opts(30_000, 8_000),
    )
    .unwrap();
    let b: DurableQueue<u64> =
        DurableQueue::with_options(mem.clone(), opts(30_000, 8_000)).unwrap();
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

// ---------------------------------------------------------------------------
// pool.rs: wait_idle
// ---------------------------------------------------------------------------

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

/// `wait_idle(Duration::MAX)` ("wait as long as it takes") panics on
/// `Instant + Duration` overflow; `await_termination` handles the same
/// input with `checked_add`.
#[test]
fn wait_idle_with_an_unbounded_timeout_does_not_panic() {
    let pool = DurablePool::builder(MemoryBackend::new())
        .threads(1)
        .handler("k", |_: &u64, _| Ok(()))
        .build()
        .unwrap();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        pool.wait_idle(Duration::MAX)
    }));
    pool.shutdown();
    assert!(matches!(r, Ok(true)), "wait_idle(Duration::MAX) panicked");
}

// ---------------------------------------------------------------------------
// leases.rs: a lease too long for an Instant kills the heartbeat thread.
// ---------------------------------------------------------------------------

/// Suspected: `Instant::now() + lease / 3` overflowing for a huge lease and
/// killing the heartbeat thread. Not so: `Duration::MAX / 3` still fits an
/// `Instant` on Linux, and the store side caps at `MAX_MS` (passes).
#[test]
fn sound_a_huge_lease_still_releases_a_dropped_delivery() {
    let mem = MemoryBackend::new();
    let o = QueueOptions {
        lease: Duration::MAX,
        max_block: Duration::from_millis(50),
        ..QueueOptions::default()
    };
    let a: DurableQueue<u64> = DurableQueue::with_options(mem.clone(), o).unwrap();
    let b: DurableQueue<u64> = DurableQueue::with_options(mem.clone(), opts(1000, 50)).unwrap();
    a.put("x", &1, Duration::ZERO).unwrap();
    let d = a.take().unwrap().expect("due now");
    std::thread::sleep(Duration::from_millis(50));
    drop(d);
    let back = b.poll_timeout(Duration::from_secs(1)).unwrap();
    assert!(
        back.is_some(),
        "the dropped delivery was never released (heartbeat thread died)"
    );
}

// ---------------------------------------------------------------------------
// pool.rs / taker.rs: shutdown_now reports ids before they are released.
// ---------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------
// envelope.rs: generated ids are ordered per handle, not per process.
// ---------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------
// Sanity checks of things the review found sound (they pass).
// ---------------------------------------------------------------------------

/// Receipts: a repeated ack with the holder's token answers as the first.
#[test]
fn sound_a_repeated_ack_answers_as_the_first() {
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
fn sound_takers_get_a_trickle_of_items_once() {
    let queue: DurableQueue<u64> =
        DurableQueue::with_options(MemoryBackend::new(), opts(5_000, 200)).unwrap();
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

// ---------------------------------------------------------------------------
// Redis
// ---------------------------------------------------------------------------

#[cfg(feature = "redis")]
mod redis_support;

#[cfg(feature = "redis")]
mod on_redis {
    use super::*;
    use crate::redis_support::{watchdog, Redis};
    use schedpool::durable::{RedisBackend, Removed};

    /// `RedisBackend::wait` computes the blocking connection's read timeout
    /// as `block + 2 s` without overflow care: `max_block = Duration::MAX`
    /// (accepted by `QueueOptions::check`, and handled by the memory
    /// backend) panics inside `take`, with the taker's `leader` flag left
    /// set.
    #[test]
    fn redis_take_with_an_unbounded_max_block_does_not_panic() {
        let redis = Redis::start();
        watchdog(Duration::from_secs(60), || {
            let o = QueueOptions {
                max_block: Duration::MAX,
                ..QueueOptions::default()
            };
            let q: DurableQueue<u64> =
                DurableQueue::with_options(RedisBackend::connect(&redis.url(), "mb").unwrap(), o)
                    .unwrap();
            let q1 = q.clone();
            let t = std::thread::spawn(move || q1.take().map(|d| d.map(|d| *d.value())));
            std::thread::sleep(Duration::from_millis(300));
            q.put("x", &7, Duration::ZERO).unwrap();
            let r = t.join();
            q.close();
            assert!(
                matches!(r, Ok(Ok(Some(7)))),
                "take panicked or failed with max_block = Duration::MAX"
            );
        });
    }

    /// `RedisBackend::run` computes `Instant::now() + op_timeout`: an
    /// unbounded `op_timeout` (`Duration::MAX`) panics at connect instead of
    /// connecting or returning `DurableError::Config`.
    #[test]
    fn redis_connect_with_an_unbounded_op_timeout_does_not_panic() {
        let redis = Redis::start();
        let url = redis.url();
        let r = std::panic::catch_unwind(move || {
            RedisBackend::connect_with(
                &url,
                "opt",
                schedpool::durable::RedisOptions::default().op_timeout(Duration::MAX),
            )
            .map(|_| ())
        });
        assert!(
            r.is_ok(),
            "connect_with(op_timeout = Duration::MAX) panicked"
        );
    }

    /// docs/durable.md, "Nothing accepted is lost": "`put` returns `Err`
    /// when the server refuses it (out of memory, unreachable), and then
    /// nothing was written." An `Unavailable` after a read timeout is
    /// ambiguous: the script may run once the server catches up.
    #[test]
    fn redis_a_put_that_timed_out_is_unknown_and_repeatable() {
        let redis = Redis::start();
        watchdog(Duration::from_secs(60), || {
            let q: DurableQueue<u64> = DurableQueue::with_options(
                RedisBackend::connect_with(
                    &redis.url(),
                    "amb",
                    schedpool::durable::RedisOptions::default()
                        .op_timeout(Duration::from_millis(500)),
                )
                .unwrap(),
                opts(30_000, 5_000),
            )
            .unwrap();
            q.put("warm-up", &0, Duration::from_secs(60)).unwrap(); // loads the script
            q.remove("warm-up").unwrap();
            let pid = redis.pid().unwrap();
            crate::redis_support::signal(pid, "STOP");
            let r = q.put("ghost", &1, Duration::from_secs(60));
            crate::redis_support::signal(pid, "CONT");
            // The documented contract (docs/durable.md): a put that could not
            // get its reply is Unavailable, not Refused, because the server
            // may apply it later (here it does, on SIGCONT).
            assert!(
                matches!(r, Err(DurableError::Unavailable(_))),
                "a stopped server gives Unavailable: {r:?}"
            );
            std::thread::sleep(Duration::from_millis(300));
            assert!(q.counts().unwrap().pending <= 1, "at most the one item");
            // Repeating the put is safe: one item, with the repeated value.
            q.put("ghost", &2, Duration::from_secs(60)).unwrap();
            assert_eq!(q.counts().unwrap().pending, 1);
            assert_eq!(q.remove("ghost").unwrap(), Removed::Pending(2));
            q.close();
        });
    }

    /// Same heartbeat bug as `extend_to_a_shorter_lease_keeps_the_item_held`,
    /// on Redis.
    #[test]
    fn redis_extend_to_a_shorter_lease_keeps_the_item_held() {
        let redis = Redis::start();
        watchdog(Duration::from_secs(60), || {
            let conn = |_: ()| RedisBackend::connect(&redis.url(), "ext").unwrap();
            let a: DurableQueue<u64> =
                DurableQueue::with_options(conn(()), opts(9_000, 50)).unwrap();
            let b: DurableQueue<u64> =
                DurableQueue::with_options(conn(()), opts(9_000, 50)).unwrap();
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
            a.close();
            b.close();
            assert_eq!(
                stolen, None,
                "a second consumer claimed a live delivery's item"
            );
        });
    }

    /// The `wait_idle` race without any added delay: an item due now, a
    /// 200 ms handler, and `wait_idle` right after the put. Counts, head and
    /// time are three round trips; the worker's claim can land between the
    /// first two.
    #[test]
    fn redis_wait_idle_is_not_true_while_a_handler_runs() {
        let redis = Redis::start();
        watchdog(Duration::from_secs(120), || {
            let done = Arc::new(AtomicU64::new(0));
            let d2 = done.clone();
            let pool = DurablePool::builder(RedisBackend::connect(&redis.url(), "idle").unwrap())
                .threads(1)
                .handler("k", move |_: &u64, _| {
                    std::thread::sleep(Duration::from_millis(100));
                    d2.fetch_add(1, Ordering::SeqCst);
                    Ok(())
                })
                .build()
                .unwrap();
            let mut early = 0;
            for i in 0..40u64 {
                pool.schedule("k", &format!("j{i}"), &i, Duration::ZERO)
                    .unwrap();
                assert!(pool.wait_idle(Duration::from_secs(5)));
                if done.load(Ordering::SeqCst) != i + 1 {
                    early += 1;
                    // let it finish before the next round
                    while done.load(Ordering::SeqCst) != i + 1 {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                }
            }
            pool.shutdown();
            assert!(pool.await_termination(Duration::from_secs(5)));
            assert_eq!(
                early, 0,
                "wait_idle returned true {early}/40 times while the handler ran"
            );
        });
    }

    /// Stress of the in_wait/unblock_pending protocol: close at random
    /// points around the start of the block. Every take returns quickly.
    #[test]
    fn sound_redis_close_is_never_lost() {
        let redis = Redis::start();
        watchdog(Duration::from_secs(120), || {
            let mut worst = Duration::ZERO;
            for i in 0..60u64 {
                let q: DurableQueue<u64> = DurableQueue::with_options(
                    RedisBackend::connect(&redis.url(), "cl").unwrap(),
                    opts(30_000, 5_000),
                )
                .unwrap();
                let q1 = q.clone();
                let t = std::thread::spawn(move || q1.take().unwrap().is_none());
                std::thread::sleep(Duration::from_micros((i * 97) % 3000));
                let start = Instant::now();
                q.close();
                assert!(t.join().unwrap());
                worst = worst.max(start.elapsed());
            }
            // A lost close costs the whole 5 s `max_block`; 2 s leaves a
            // loaded machine room.
            assert!(worst < Duration::from_secs(2), "close took {worst:?}");
        });
    }

    /// `poll_timeout(d)` is documented as "blocking at most d". With nothing
    /// pending the leader blocks in `BZPOPMIN d`, which Redis times out only
    /// on its next `serverCron` tick (100 ms at `hz 10`): the nap applies to
    /// the store's due hint but not to the caller's own limit.
    #[test]
    fn redis_poll_timeout_returns_near_its_timeout() {
        let redis = Redis::start();
        watchdog(Duration::from_secs(60), || {
            let q: DurableQueue<u64> = DurableQueue::with_options(
                RedisBackend::connect(&redis.url(), "pt").unwrap(),
                opts(30_000, 5_000),
            )
            .unwrap();
            // Counted, not the worst: one call a loaded machine delays by
            // 40 ms is noise; a wait that ends on the server's tick (20 to
            // 120 ms) is late in most calls.
            let mut took = Vec::new();
            for _ in 0..20 {
                let t = Instant::now();
                assert!(q.poll_timeout(Duration::from_millis(20)).unwrap().is_none());
                took.push(t.elapsed());
            }
            q.close();
            let late = took
                .iter()
                .filter(|&&d| d >= Duration::from_millis(60))
                .count();
            assert!(
                late <= 4,
                "poll_timeout(20 ms): {late} of 20 calls took 60 ms or more: {took:?}"
            );
        });
    }
}
