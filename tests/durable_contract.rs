//! The `DurableBackend` contract, checked on every backend: the in-memory
//! one always, the SQLite one (a file in a temp dir) with `--features
//! sqlite`, the Redis one (a real redis-server) with `--features redis`,
//! the PostgreSQL one (a private cluster) with `--features postgres`.
//! Users test against the in-memory backend, so it must behave as the
//! stores do. Most cases take one handle; a `pair` case takes two handles
//! on one store (two processes); an `owned` case builds a pool on one.

mod contract_ops;
#[cfg(feature = "postgres")]
mod postgres_support;
#[cfg(feature = "redis")]
mod redis_support;
#[cfg(feature = "sqlite")]
mod sqlite_support;

use contract_ops::*;
use schedpool::calendar::Schedule;
use schedpool::durable::{
    Cancelled, DurableBackend, DurableError, DurablePool, MemoryBackend, Misfire, Nack, Put,
    PutMode, Repeat, StoredState, When, MAX_ERROR_BYTES,
};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const LEASE: Duration = Duration::from_secs(30);

fn env(payload: &[u8]) -> Vec<u8> {
    let mut v = vec![1, 0, 0];
    v.extend_from_slice(payload);
    v
}

fn put(b: &dyn DurableBackend, id: &str, delay_ms: u64) -> u64 {
    b.put(
        id,
        &env(id.as_bytes()),
        When::After(Duration::from_millis(delay_ms)),
        PutMode::Replace,
    )
    .unwrap()
    .deadline_ms()
    .unwrap()
}

/// Claims until `n` items came out or 5 s passed, checking "never early"
/// exactly by the backend's clock.
fn claim_n(b: &dyn DurableBackend, n: usize, lease: Duration) -> Vec<schedpool::durable::Claimed> {
    let limit = Instant::now() + Duration::from_secs(5);
    let mut out = Vec::new();
    while out.len() < n && Instant::now() < limit {
        let batch = b.claim(lease, n - out.len(), 0).unwrap();
        for c in &batch.items {
            assert!(c.claimed_ms >= c.due_ms, "claimed early: {c:?}");
        }
        out.extend(batch.items);
        if out.len() < n {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    assert_eq!(out.len(), n, "only {} of {n} items came out", out.len());
    out
}

fn order_and_never_early(b: &dyn DurableBackend) {
    let da = put(b, "a", 600);
    let db = put(b, "b", 200);
    assert!(da > db);
    // Nothing is due yet, unless this thread was held off a loaded
    // machine's CPUs past b's deadline: then what came out must be due,
    // and in order, which the checks below make of either path.
    let first = b.claim(LEASE, 10, 0).unwrap();
    for c in &first.items {
        assert!(c.claimed_ms >= c.due_ms, "claimed early: {c:?}");
    }
    let mut got = first.items;
    if got.is_empty() {
        let wait = first.wait.expect("items are pending");
        assert!(
            wait <= Duration::from_millis(200),
            "the wait hint is the head: {wait:?}"
        );
        assert_eq!(b.peek_deadline_ms().unwrap(), Some(db));
    }
    let more = claim_n(b, 2 - got.len(), LEASE);
    got.extend(more);
    assert_eq!(got[0].id, "b");
    assert_eq!(got[1].id, "a");
    assert_eq!(got[1].deadline_ms, da);
    assert_eq!(got[0].envelope, env(b"b"));
    assert!(got[1].token > got[0].token || got[0].token > got[1].token);
    let c = b.counts().unwrap();
    assert_eq!((c.pending, c.in_flight, c.dead), (0, 2, 0));
    assert!(b.ack(&got[0].id, got[0].token).unwrap());
    assert!(
        b.ack(&got[0].id, got[0].token).unwrap(),
        "a repeated ack with the same token answers as the first (a retry after a lost reply)"
    );
    assert!(
        !b.ack(&got[1].id, got[1].token + 1000).unwrap(),
        "a wrong token is refused"
    );
    assert!(b.ack(&got[1].id, got[1].token).unwrap());
    let c = b.counts().unwrap();
    assert_eq!((c.pending, c.in_flight, c.dead), (0, 0, 0));
    assert_eq!(
        b.claim(LEASE, 10, 0).unwrap().wait,
        None,
        "empty: no wait hint"
    );
}

fn replace_and_if_absent(b: &dyn DurableBackend) {
    let first = put(b, "k", 10_000);
    let again = b
        .put(
            "k",
            &env(b"x"),
            When::After(Duration::ZERO),
            PutMode::IfAbsent,
        )
        .unwrap();
    assert_eq!(again, Put::Exists);
    assert_eq!(
        b.peek_deadline_ms().unwrap(),
        Some(first),
        "if_absent changed nothing"
    );
    let replaced = b
        .put(
            "k",
            &env(b"new"),
            When::After(Duration::ZERO),
            PutMode::Replace,
        )
        .unwrap();
    assert!(matches!(replaced, Put::Replaced { deadline_ms } if deadline_ms < first));
    let held = claim_n(b, 1, LEASE).remove(0);
    assert_eq!(held.envelope, env(b"new"));
    assert_eq!(
        b.put(
            "k",
            &env(b"x"),
            When::After(Duration::ZERO),
            PutMode::IfAbsent
        )
        .unwrap(),
        Put::Exists,
        "in flight counts as present"
    );
    // Replacing an in-flight item fences its holder: its ack, nack, extend
    // and reschedule are all refused, and change nothing.
    put(b, "k", 0);
    assert!(!b.ack("k", held.token).unwrap(), "the old holder is fenced");
    assert!(!b.extend(&[("k", held.token)], LEASE).unwrap()[0]);
    assert!(!b
        .nack("k", held.token, Nack::Retry(Duration::from_secs(60)))
        .unwrap());
    assert_eq!(
        b.ack_and_reschedule("k", held.token, Repeat::FixedDelay(LEASE))
            .unwrap(),
        None
    );
    let again = claim_n(b, 1, LEASE).remove(0);
    assert!(again.token > held.token, "tokens only grow");
    assert_eq!(again.attempt, 1, "a put resets the attempts");
    assert!(b.ack("k", again.token).unwrap());
}

fn ack_many_fences_each_pair_alone(b: &dyn DurableBackend) {
    for id in ["m1", "m2", "m3"] {
        put(b, id, 0);
    }
    let got = claim_n(b, 3, LEASE);
    let token = |id: &str| got.iter().find(|c| c.id == id).unwrap().token;
    // m2 is replaced while held, then claimed by a new holder: the old
    // holder's token is stale, the new one's holds.
    put(b, "m2", 0);
    let again = claim_n(b, 1, LEASE).remove(0);
    assert_eq!(again.id, "m2");
    let acks = [
        ("m1", token("m1")),
        ("m2", token("m2")),
        ("m2", again.token),
        ("m3", token("m3") + 1000),
    ];
    assert_eq!(
        b.ack_many(&acks).unwrap(),
        [true, false, true, false],
        "each pair is checked against its own token; a stale one is refused alone"
    );
    assert_eq!(
        b.ack_many(&acks).unwrap(),
        [true, false, true, false],
        "a repeated batch (a retry after a lost reply) answers as the first"
    );
    let c = b.counts().unwrap();
    assert_eq!(
        (c.pending, c.in_flight, c.dead),
        (0, 1, 0),
        "only m3 is still held"
    );
    assert_eq!(b.ack_many(&[("m3", token("m3"))]).unwrap(), [true]);
    assert_eq!(b.ack_many(&[]).unwrap(), Vec::<bool>::new());
    assert_eq!(b.counts().unwrap(), Default::default());
}

fn lease_expiry_and_dead_letters(b: &dyn DurableBackend) {
    let deadline = put(b, "e", 0);
    let short = Duration::from_millis(40);
    let first = claim_n(b, 1, short).remove(0);
    assert_eq!(first.attempt, 1);
    std::thread::sleep(Duration::from_millis(60));
    let second = claim_n(b, 1, short).remove(0);
    assert_eq!(second.id, "e");
    assert_eq!(second.attempt, 2);
    assert_eq!(
        second.deadline_ms, deadline,
        "a redelivery keeps its deadline"
    );
    assert!(second.token > first.token);
    assert!(
        !b.ack("e", first.token).unwrap(),
        "the expired holder is fenced"
    );
    // With max_attempts 2, the next expiry dead-letters it.
    std::thread::sleep(Duration::from_millis(60));
    let before = b.server_time_ms().unwrap();
    let batch = b.claim(short, 10, 2).unwrap();
    assert!(batch.items.is_empty());
    let c = b.counts().unwrap();
    assert_eq!((c.pending, c.in_flight, c.dead), (0, 0, 1));
    let dead = b.dead_letters(10).unwrap();
    assert_eq!(dead.len(), 1);
    let d = &dead[0];
    assert_eq!(
        (d.id.as_str(), &d.envelope, d.error.as_deref(), d.attempts),
        ("e", &env(b"e"), None, 2),
        "an expired last lease records no error"
    );
    assert!(
        (before..=b.server_time_ms().unwrap()).contains(&d.died_ms),
        "stamped by the store's clock: {d:?}"
    );
    // A put revives a dead-lettered id as new.
    assert!(matches!(
        b.put(
            "e",
            &env(b"e"),
            When::After(Duration::ZERO),
            PutMode::IfAbsent
        )
        .unwrap(),
        Put::Inserted { .. }
    ));
    assert_eq!(b.counts().unwrap().dead, 0);
    let held = claim_n(b, 1, LEASE).remove(0);
    assert!(b.nack("e", held.token, Nack::Dead).unwrap());
    assert_eq!(b.cancel("e").unwrap(), Cancelled::Dead(env(b"e")));
    assert_eq!(b.cancel("e").unwrap(), Cancelled::NotFound);
}

fn nack_retry_keeps_deadline(b: &dyn DurableBackend) {
    let deadline = put(b, "n", 0);
    let held = claim_n(b, 1, LEASE).remove(0);
    assert!(b
        .nack("n", held.token, Nack::Retry(Duration::from_millis(50)))
        .unwrap());
    assert!(
        b.nack("n", held.token, Nack::Retry(Duration::ZERO))
            .unwrap(),
        "a repeated nack answers as the first and changes nothing"
    );
    let retry = claim_n(b, 1, LEASE).remove(0);
    assert_eq!(retry.deadline_ms, deadline);
    assert!(
        retry.due_ms >= deadline + 50,
        "the backoff is kept: {retry:?}"
    );
    assert!(retry.claimed_ms >= retry.due_ms);
    assert_eq!(retry.attempt, 2);
    assert!(b.ack("n", retry.token).unwrap());
}

fn release_goes_back_to_the_front(b: &dyn DurableBackend) {
    let first = put(b, "first", 0);
    std::thread::sleep(Duration::from_millis(5));
    put(b, "second", 0);
    let held = claim_n(b, 1, LEASE).remove(0);
    assert_eq!(held.id, "first");
    std::thread::sleep(Duration::from_millis(5));
    assert!(b.nack("first", held.token, Nack::Release).unwrap());
    let again = claim_n(b, 1, LEASE).remove(0);
    assert_eq!(
        again.id, "first",
        "a released item keeps its place ahead of later ones"
    );
    assert_eq!((again.due_ms, again.deadline_ms), (first, first));
    assert_eq!(again.attempt, 2);
    for c in [again].into_iter().chain(claim_n(b, 1, LEASE)) {
        assert!(b.ack(&c.id, c.token).unwrap());
    }
}

fn defer_does_not_count_an_attempt(b: &dyn DurableBackend) {
    let deadline = put(b, "d", 0);
    for _ in 0..3 {
        let held = claim_n(b, 1, LEASE).remove(0);
        assert_eq!(held.attempt, 1, "a deferred claim is not an attempt");
        assert_eq!(held.deadline_ms, deadline);
        let before = b.server_time_ms().unwrap();
        assert!(b
            .nack("d", held.token, Nack::Defer(Duration::from_millis(20)))
            .unwrap());
        let again = claim_n(b, 1, LEASE).remove(0);
        assert!(again.due_ms >= before + 20, "the pause is kept: {again:?}");
        assert!(b
            .nack("d", again.token, Nack::Defer(Duration::ZERO))
            .unwrap());
    }
    // With max_attempts 1, deferrals never dead-letter it.
    let held = claim_n(b, 1, Duration::from_millis(20)).remove(0);
    assert_eq!(held.attempt, 1);
    assert!(b.ack("d", held.token).unwrap());
    assert_eq!(b.counts().unwrap().dead, 0);
}

fn reschedule(b: &dyn DurableBackend) {
    let deadline = put(b, "r", 0);
    let held = claim_n(b, 1, LEASE).remove(0);
    let next = b
        .ack_and_reschedule(
            "r",
            held.token,
            Repeat::FixedRate(Duration::from_millis(30)),
        )
        .unwrap();
    assert_eq!(
        next,
        Some(deadline + 30),
        "fixed rate: the previous occurrence plus the period"
    );
    assert_eq!(
        b.ack_and_reschedule(
            "r",
            held.token,
            Repeat::FixedRate(Duration::from_millis(30))
        )
        .unwrap(),
        Some(deadline + 30),
        "a repeated reschedule answers as the first"
    );
    let second = claim_n(b, 1, LEASE).remove(0);
    assert_eq!(second.deadline_ms, deadline + 30);
    assert_eq!(second.attempt, 1);
    let before = b.server_time_ms().unwrap();
    let next = b
        .ack_and_reschedule(
            "r",
            second.token,
            Repeat::FixedDelay(Duration::from_millis(500)),
        )
        .unwrap()
        .unwrap();
    assert!(next >= before + 500, "fixed delay: now plus the delay");
    assert!(matches!(b.cancel("r").unwrap(), Cancelled::Pending(_)));
}

fn cancel_everywhere(b: &dyn DurableBackend) {
    put(b, "p", 10_000);
    put(b, "f", 0);
    let held = claim_n(b, 1, LEASE).remove(0);
    assert_eq!(b.cancel("p").unwrap(), Cancelled::Pending(env(b"p")));
    assert_eq!(b.cancel("f").unwrap(), Cancelled::InFlight);
    assert!(
        !b.ack("f", held.token).unwrap(),
        "a cancelled holder's ack is refused"
    );
    assert!(!b.extend(&[("f", held.token)], LEASE).unwrap()[0]);
    assert_eq!(b.cancel("p").unwrap(), Cancelled::NotFound);
    assert_eq!(b.counts().unwrap(), Default::default());
}

fn wake_ups(b: &dyn DurableBackend) {
    // Drain any marker left by earlier puts.
    while b.wait(None, Duration::from_millis(1)).unwrap() {}
    put(b, "far", 60_000);
    // A positive wait may take its time (PostgreSQL's NOTIFY arrives on
    // another connection, late on a loaded machine): it returns as soon as
    // the marker is there.
    assert!(
        b.wait(None, Duration::from_secs(5)).unwrap(),
        "a new head sets the marker"
    );
    put(b, "farther", 120_000);
    let t = Instant::now();
    assert!(
        !b.wait(None, Duration::from_millis(50)).unwrap(),
        "not a new head: no marker"
    );
    assert!(t.elapsed() >= Duration::from_millis(40));
    // A claim that fills its batch with more due chains the wake-up.
    put(b, "now1", 0);
    put(b, "now2", 0);
    while b.wait(None, Duration::from_millis(1)).unwrap() {}
    let got = claim_n(b, 1, LEASE);
    assert_eq!(got.len(), 1);
    assert!(
        b.wait(None, Duration::from_secs(5)).unwrap(),
        "chained to another sleeper"
    );
    // unblock interrupts a wait.
    std::thread::scope(|s| {
        let waiter = s.spawn(|| {
            let t = Instant::now();
            b.wait(None, Duration::from_secs(10)).unwrap();
            t.elapsed()
        });
        std::thread::sleep(Duration::from_millis(100));
        b.unblock();
        assert!(waiter.join().unwrap() < Duration::from_secs(5));
    });
}

/// Bury records the error with the item; `dead_letters` reads it back with
/// the attempts and the time of death; requeue puts it back as a fresh put
/// due now (attempts reset, the record stripped); purge deletes it; neither
/// touches a live item.
fn bury_requeue_and_purge(b: &dyn DurableBackend) {
    let first_deadline = put(b, "x", 0);
    let held = claim_n(b, 1, LEASE).remove(0);
    let before = b.server_time_ms().unwrap();
    assert!(b.bury("x", held.token, Some("card declined")).unwrap());
    assert!(
        b.bury("x", held.token, Some("card declined")).unwrap(),
        "a repeated bury answers as the first"
    );
    assert!(
        !b.bury("x", held.token + 1000, Some("other")).unwrap(),
        "a wrong token is refused"
    );
    let dead = b.dead_letters(10).unwrap();
    assert_eq!(dead.len(), 1, "{dead:?}");
    let d = &dead[0];
    assert_eq!(
        (d.id.as_str(), &d.envelope, d.error.as_deref(), d.attempts),
        ("x", &env(b"x"), Some("card declined"), 1)
    );
    assert!(
        (before..=b.server_time_ms().unwrap()).contains(&d.died_ms),
        "stamped by the store's clock: {d:?}"
    );
    assert!(b.claim(LEASE, 10, 0).unwrap().items.is_empty());
    // Requeue and purge act on dead letters only.
    put(b, "live", 60_000);
    for id in ["live", "nobody"] {
        assert!(!b.requeue(id).unwrap(), "{id}");
        assert!(!b.purge(id).unwrap(), "{id}");
    }
    let c = b.counts().unwrap();
    assert_eq!((c.pending, c.in_flight, c.dead), (1, 0, 1));
    let before = b.server_time_ms().unwrap();
    assert!(b.requeue("x").unwrap());
    assert!(!b.requeue("x").unwrap(), "requeued once");
    let c = b.counts().unwrap();
    assert_eq!((c.pending, c.in_flight, c.dead), (2, 0, 0));
    let again = claim_n(b, 1, LEASE).remove(0);
    assert_eq!(again.id, "x");
    assert_eq!(
        again.envelope,
        env(b"x"),
        "the stored bytes are what was put"
    );
    assert_eq!(again.attempt, 1, "a requeue resets the attempts");
    assert!(again.token > held.token, "a fresh token");
    assert!(
        again.due_ms >= before && again.deadline_ms == again.due_ms,
        "due now by the store's clock: {again:?}"
    );
    assert!(again.deadline_ms >= first_deadline);
    assert!(
        !b.extend(&[("x", held.token)], LEASE).unwrap()[0],
        "the holder before the burial stays fenced"
    );
    // Buried again without a reason: no stale error.
    assert!(b.bury("x", again.token, None).unwrap());
    let d = b.dead_letters(10).unwrap().remove(0);
    assert_eq!((d.error, d.attempts, d.envelope), (None, 1, env(b"x")));
    assert!(b.purge("x").unwrap());
    assert!(!b.purge("x").unwrap(), "purged once");
    assert!(!b.requeue("x").unwrap(), "a purged item cannot come back");
    // A long error is cut at a character boundary; cancel hands back the
    // envelope without the record.
    put(b, "y", 0);
    let held = claim_n(b, 1, LEASE).remove(0);
    assert!(b.bury("y", held.token, Some(&"é".repeat(3000))).unwrap());
    let error = b.dead_letters(10).unwrap().remove(0).error.unwrap();
    assert!(
        error.len() <= MAX_ERROR_BYTES && error.ends_with('…'),
        "{}",
        error.len()
    );
    assert!(error.starts_with("éé"));
    assert_eq!(b.cancel("y").unwrap(), Cancelled::Dead(env(b"y")));
    assert_eq!(b.cancel("live").unwrap(), Cancelled::Pending(env(b"live")));
    assert_eq!(b.counts().unwrap(), Default::default());
    assert!(
        b.claim(LEASE, 10, 0).unwrap().items.is_empty(),
        "nothing purged comes back"
    );
}

/// Two handles on one store (two processes) race on one dead letter:
/// exactly one requeue or purge acts each round.
fn racing_requeues_and_purges(a: &dyn DurableBackend, b: &dyn DurableBackend) {
    for round in 0..4 {
        put(a, "r", 0);
        let held = claim_n(a, 1, LEASE).remove(0);
        assert!(a.bury("r", held.token, Some("boom")).unwrap());
        // Rounds 0 and 1: requeues only; 2 and 3: requeues against purges.
        let purges = round >= 2;
        let barrier = std::sync::Barrier::new(6);
        let won: Vec<(bool, bool)> = std::thread::scope(|s| {
            let racers: Vec<_> = (0..6)
                .map(|i| {
                    let (backend, barrier) = (if i % 2 == 0 { a } else { b }, &barrier);
                    s.spawn(move || {
                        let purge = purges && i >= 3;
                        barrier.wait();
                        let acted = if purge {
                            backend.purge("r")
                        } else {
                            backend.requeue("r")
                        };
                        (purge, acted.unwrap())
                    })
                })
                .collect();
            racers.into_iter().map(|r| r.join().unwrap()).collect()
        });
        let winners: Vec<_> = won.iter().filter(|(_, acted)| *acted).collect();
        assert_eq!(winners.len(), 1, "round {round}: {won:?}");
        let c = a.counts().unwrap();
        if winners[0].0 {
            assert_eq!((c.pending, c.dead), (0, 0), "purged: gone");
        } else {
            assert_eq!((c.pending, c.dead), (1, 0), "requeued once, not purged");
            let again = claim_n(b, 1, LEASE).remove(0);
            assert_eq!((again.id.as_str(), again.attempt), ("r", 1));
            assert!(b.ack("r", again.token).unwrap());
        }
        assert_eq!(a.counts().unwrap(), Default::default());
    }
}

/// Through a pool: a handler's `Err` and a handler's panic become dead
/// letters carrying their text; a requeued one runs again, a purged one
/// never does.
fn handler_errors_become_dead_letters<B: DurableBackend>(b: B) {
    let healed = Arc::new(AtomicBool::new(false));
    let ships = Arc::new(AtomicUsize::new(0));
    let pool = DurablePool::builder(b)
        .threads(2)
        .max_attempts(1)
        .handler("charge", {
            let healed = healed.clone();
            move |amount: &u64, _job| {
                if healed.load(Ordering::SeqCst) {
                    Ok(())
                } else {
                    Err(format!("card declined for {amount}").into())
                }
            }
        })
        .handler("ship", {
            let ships = ships.clone();
            move |what: &String, _job| {
                ships.fetch_add(1, Ordering::SeqCst);
                panic!("warehouse on fire: {what}")
            }
        })
        .build()
        .unwrap();
    let wait = Duration::from_secs(10);
    pool.schedule("charge", "c1", &1999u64, Duration::ZERO)
        .unwrap();
    pool.schedule("ship", "s1", &"box".to_string(), Duration::ZERO)
        .unwrap();
    assert!(pool.wait_idle(wait));
    let mut dead = pool.dead_letters(10).unwrap();
    dead.sort_by(|x, y| x.id.cmp(&y.id));
    assert_eq!(dead.len(), 2, "{dead:?}");
    let (charge, ship) = (&dead[0], &dead[1]);
    assert_eq!(
        (charge.id.as_str(), charge.kind.as_str(), charge.attempts),
        ("c1", "charge", 1)
    );
    assert_eq!(charge.error.as_deref(), Some("card declined for 1999"));
    assert_eq!(charge.decode::<u64>().unwrap(), 1999);
    assert_eq!((ship.id.as_str(), ship.kind.as_str()), ("s1", "ship"));
    assert_eq!(
        ship.error.as_deref(),
        Some("panicked: warehouse on fire: box")
    );
    assert_eq!(ship.decode::<String>().unwrap(), "box");
    assert_eq!(pool.stats().dead_lettered, 2);
    healed.store(true, Ordering::SeqCst);
    assert!(pool.requeue("c1").unwrap());
    assert!(pool.purge("s1").unwrap());
    assert!(pool.wait_idle(wait));
    assert_eq!(pool.stats().succeeded, 1, "the requeued one ran again");
    assert_eq!(
        ships.load(Ordering::SeqCst),
        1,
        "the purged one never ran again"
    );
    assert_eq!(pool.counts().unwrap(), Default::default());
    assert!(pool.dead_letters(10).unwrap().is_empty());
    pool.shutdown();
    assert!(pool.await_termination(wait));
}

/// The tests of one backend: `$open` makes a handle on a fresh store
/// (`$server` the store), `$again` a second handle on the same store.
fn get_reads_without_claiming(b: &dyn DurableBackend) {
    assert_eq!(b.get("g").unwrap(), None, "nothing stored");
    let deadline = put(b, "g", 60_000);
    let pending = b.get("g").unwrap().expect("stored");
    assert_eq!(pending.state, StoredState::Pending);
    assert_eq!(
        (pending.deadline_ms, &pending.envelope[..]),
        (deadline, &env(b"g")[..])
    );
    let now = put(b, "h", 0);
    let held = claim_n(b, 1, LEASE).remove(0);
    let in_flight = b.get("h").unwrap().expect("stored");
    assert_eq!(
        (in_flight.state, in_flight.deadline_ms),
        (StoredState::InFlight, now)
    );
    assert!(b.nack("h", held.token, Nack::Dead).unwrap());
    assert_eq!(b.get("h").unwrap().unwrap().state, StoredState::Dead);
    let c = b.counts().unwrap();
    assert_eq!(
        (c.pending, c.in_flight, c.dead),
        (1, 0, 1),
        "reads changed nothing"
    );
    assert_eq!(b.cancel("g").unwrap(), Cancelled::Pending(env(b"g")));
    assert_eq!(b.cancel("h").unwrap(), Cancelled::Dead(env(b"h")));
    assert_eq!(b.get("g").unwrap(), None, "gone");
}

/// Every 300 ms on the epoch's grid.
#[derive(Debug)]
struct Every300;

impl Schedule for Every300 {
    fn next_after(&self, after: SystemTime) -> Option<SystemTime> {
        let ms = after.duration_since(UNIX_EPOCH).ok()?.as_millis() as u64;
        Some(UNIX_EPOCH + Duration::from_millis((ms / 300 + 1) * 300))
    }
}

/// A calendar schedule registered by two pools (two "processes", each on
/// its own `make()`) on the real clock: one item, each fire run once on
/// the grid and never early, a changed definition refused then replaced.
fn calendar_once_per_fleet<B: DurableBackend>(make: impl Fn() -> B) {
    let runs: Arc<Mutex<Vec<(u64, u64)>>> = Arc::default();
    let pool = |runs: &Arc<Mutex<Vec<(u64, u64)>>>| {
        let runs = runs.clone();
        DurablePool::builder(make())
            .threads(2)
            .max_block(Duration::from_millis(100))
            .handler("tick", move |_: &(), job| {
                runs.lock().unwrap().push((job.deadline_ms, job.claimed_ms));
                Ok(())
            })
            .build()
            .unwrap()
    };
    let (a, b) = (pool(&runs), pool(&runs));
    let m = Misfire::default();
    assert!(matches!(
        a.schedule_calendar("tick", "cal", &(), Every300, m).unwrap(),
        Put::Inserted { deadline_ms } if deadline_ms % 300 == 0
    ));
    assert_eq!(
        b.schedule_calendar("tick", "cal", &(), Every300, m)
            .unwrap(),
        Put::Exists
    );
    let refused = b.schedule_calendar("tick", "cal", &(), Every300, Misfire::skip());
    assert!(
        matches!(refused, Err(DurableError::Config(_))),
        "{refused:?}"
    );
    let limit = Instant::now() + Duration::from_secs(10);
    while runs.lock().unwrap().len() < 4 && Instant::now() < limit {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(a.cancel("cal").unwrap());
    assert!(a.wait_idle(Duration::from_secs(5)) && b.wait_idle(Duration::from_secs(5)));
    let mut got = runs.lock().unwrap().clone();
    got.sort_unstable();
    assert!(got.len() >= 4, "{got:?}");
    for (i, (fire, claimed)) in got.iter().enumerate() {
        assert!(claimed >= fire, "never early: {got:?}");
        assert_eq!(
            *fire,
            got[0].0 + 300 * i as u64,
            "each fire once, on the grid: {got:?}"
        );
    }
    let put = b
        .replace_calendar("tick", "cal", &(), Every300, Misfire::skip())
        .unwrap();
    assert!(
        matches!(put, Put::Inserted { .. }),
        "cancelled: a new schedule {put:?}"
    );
    let put = a.replace_calendar("tick", "cal", &(), Every300, m).unwrap();
    assert!(matches!(put, Put::Replaced { .. }), "{put:?}");
    assert!(a.cancel("cal").unwrap());

    // A rule with one fire: after it, the item is parked at the end of the
    // store's time (a score this backend must keep exactly).
    let store = make();
    let soon = store.server_time_ms().unwrap() + 300;
    let at = a.schedule_calendar("tick", "once", &(), Once(soon), m);
    let Ok(Put::Inserted { deadline_ms: at }) = at else {
        panic!("{at:?}")
    };
    let limit = Instant::now() + Duration::from_secs(10);
    while store.get("once").unwrap().unwrap().deadline_ms == at && Instant::now() < limit {
        std::thread::sleep(Duration::from_millis(20));
    }
    let parked = store.get("once").unwrap().expect("kept");
    assert_eq!(parked.state, StoredState::Pending);
    assert_eq!(parked.deadline_ms, 1 << 53, "parked at MAX_MS");
    assert!(runs.lock().unwrap().iter().any(|r| r.0 == at));
    assert!(a.cancel("once").unwrap());
}

/// One fire, at `0` (ms).
#[derive(Debug)]
struct Once(u64);

impl Schedule for Once {
    fn next_after(&self, after: SystemTime) -> Option<SystemTime> {
        let at = UNIX_EPOCH + Duration::from_millis(self.0);
        (after < at).then_some(at)
    }
}

mod calendar {
    #[test]
    fn memory() {
        let b = schedpool::durable::MemoryBackend::new();
        super::calendar_once_per_fleet(|| b.clone());
    }

    #[cfg(feature = "redis")]
    #[test]
    fn redis() {
        let server = super::redis_support::Redis::start();
        let url = server.url();
        super::calendar_once_per_fleet(|| {
            schedpool::durable::RedisBackend::connect(&url, "contract").unwrap()
        });
    }

    #[cfg(feature = "sqlite")]
    #[test]
    fn sqlite() {
        let db = super::sqlite_support::TempDb::new("calendar");
        super::calendar_once_per_fleet(|| {
            schedpool::durable::SqliteBackend::open(&db.path, "contract").unwrap()
        });
    }

    #[cfg(feature = "postgres")]
    #[test]
    fn postgres() {
        let server = super::postgres_support::Postgres::start();
        let params = server.params();
        super::calendar_once_per_fleet(|| {
            schedpool::durable::PostgresBackend::connect(&params, "contract").unwrap()
        });
    }
}

macro_rules! contract_on {
    (
        $server:expr, |$srv:ident| $open:expr, |$first:ident| $again:expr;
        shared: [$($name:ident),* $(,)?],
        pair: [$($pair:ident),* $(,)?],
        owned: [$($owned:ident),* $(,)?] $(,)?
        twin: [$($twin:ident),* $(,)?] $(,)?
    ) => {
        $(
            #[test]
            fn $name() {
                let $srv = $server;
                super::$name(&$open);
            }
        )*
        $(
            #[test]
            fn $pair() {
                let $srv = $server;
                let $first = $open;
                super::$pair(&$first, &$again);
            }
        )*
        $(
            #[test]
            fn $owned() {
                let $srv = $server;
                super::$owned($open);
            }
        )*
        $(
            #[test]
            fn $twin() {
                let $srv = $server;
                let $first = $open;
                let second = $again;
                super::$twin($first, second);
            }
        )*
    };
}

// The operator's cases run where `DurableOps` is implemented so far.
macro_rules! contract {
    ($($cases:tt)*) => {
        mod memory {
            use schedpool::durable::MemoryBackend;
            contract_on!((), |_s| MemoryBackend::new(), |first| first.clone(); $($cases)*
                twin: [ops_list_inspect_and_overview, ops_pause_skips_claims, ops_bulk_dead_exactly_once]);
        }
        #[cfg(feature = "redis")]
        mod redis {
            use super::redis_support::Redis;
            use schedpool::durable::RedisBackend;
            contract_on!(
                Redis::start(),
                |server| RedisBackend::connect(&server.url(), "contract").unwrap(),
                |_first| RedisBackend::connect(&server.url(), "contract").unwrap();
                $($cases)*
                twin: [ops_list_inspect_and_overview, ops_pause_skips_claims, ops_bulk_dead_exactly_once]
            );
        }
        #[cfg(feature = "sqlite")]
        mod sqlite {
            use super::sqlite_support::TempDb;
            use schedpool::durable::SqliteBackend;
            contract_on!(
                TempDb::new("contract"),
                |db| SqliteBackend::open(&db.path, "contract").unwrap(),
                |_first| SqliteBackend::open(&db.path, "contract").unwrap();
                $($cases)*
                twin: [ops_list_inspect_and_overview, ops_pause_skips_claims, ops_bulk_dead_exactly_once]
            );
        }
        #[cfg(feature = "postgres")]
        mod postgres {
            use super::postgres_support::Postgres;
            use schedpool::durable::PostgresBackend;
            contract_on!(
                Postgres::start(),
                |server| PostgresBackend::connect(&server.params(), "contract").unwrap(),
                |_first| PostgresBackend::connect(&server.params(), "contract").unwrap();
                $($cases)*
                twin: [ops_list_inspect_and_overview, ops_pause_skips_claims, ops_bulk_dead_exactly_once]
            );
        }
    };
}

contract!(
    shared: [
        order_and_never_early,
        replace_and_if_absent,
        ack_many_fences_each_pair_alone,
        lease_expiry_and_dead_letters,
        nack_retry_keeps_deadline,
        release_goes_back_to_the_front,
        defer_does_not_count_an_attempt,
        reschedule,
        cancel_everywhere,
        wake_ups,
        bury_requeue_and_purge,
        get_reads_without_claiming,
    ],
    pair: [racing_requeues_and_purges],
    owned: [handler_errors_become_dead_letters],
);

#[test]
fn memory_backend_debug_names_its_clock() {
    assert!(format!("{:?}", MemoryBackend::new()).contains("Real"));
}
