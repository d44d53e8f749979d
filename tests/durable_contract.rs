//! The `DurableBackend` contract, checked on every backend: the in-memory
//! one always, the Redis one (a real redis-server) with `--features redis`,
//! the PostgreSQL one (a private cluster) with `--features postgres`.
//! Users test against the in-memory backend, so it must behave as the
//! stores do.

#[cfg(feature = "postgres")]
mod postgres_support;
#[cfg(feature = "redis")]
mod redis_support;

use schedpool::durable::{
    Cancelled, DurableBackend, MemoryBackend, Nack, Put, PutMode, Repeat, When,
};
use std::time::{Duration, Instant};

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
    // Hundreds of ms: a loaded machine's pause before the first claim must
    // not make "b" due.
    let da = put(b, "a", 600);
    let db = put(b, "b", 200);
    assert!(da > db);
    let first = b.claim(LEASE, 10, 0).unwrap();
    assert!(first.items.is_empty(), "nothing is due yet");
    let wait = first.wait.expect("items are pending");
    assert!(
        wait <= Duration::from_millis(200),
        "the wait hint is the head: {wait:?}"
    );
    assert_eq!(b.peek_deadline_ms().unwrap(), Some(db));
    let got = claim_n(b, 2, LEASE);
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
    // Replacing an in-flight item fences its holder.
    put(b, "k", 0);
    assert!(!b.ack("k", held.token).unwrap(), "the old holder is fenced");
    assert!(!b.extend(&[("k", held.token)], LEASE).unwrap()[0]);
    let again = claim_n(b, 1, LEASE).remove(0);
    assert!(again.token > held.token, "tokens only grow");
    assert_eq!(again.attempt, 1, "a put resets the attempts");
    assert!(b.ack("k", again.token).unwrap());
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
    let batch = b.claim(short, 10, 2).unwrap();
    assert!(batch.items.is_empty());
    let c = b.counts().unwrap();
    assert_eq!((c.pending, c.in_flight, c.dead), (0, 0, 1));
    assert_eq!(
        b.dead_letters(10).unwrap(),
        vec![("e".to_string(), env(b"e"))]
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
    assert!(
        b.wait(None, Duration::from_millis(1)).unwrap(),
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
        b.wait(None, Duration::from_millis(1)).unwrap(),
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

macro_rules! contract {
    ($($name:ident),* $(,)?) => {
        mod memory {
            $(
                #[test]
                fn $name() {
                    super::$name(&schedpool::durable::MemoryBackend::new());
                }
            )*
        }
        #[cfg(feature = "redis")]
        mod redis {
            $(
                #[test]
                fn $name() {
                    let server = super::redis_support::Redis::start();
                    let b = schedpool::durable::RedisBackend::connect(&server.url(), "contract").unwrap();
                    super::$name(&b);
                }
            )*
        }
        #[cfg(feature = "postgres")]
        mod postgres {
            $(
                #[test]
                fn $name() {
                    let server = super::postgres_support::Postgres::start();
                    let b = schedpool::durable::PostgresBackend::connect(&server.params(), "contract").unwrap();
                    super::$name(&b);
                }
            )*
        }
    };
}

contract!(
    order_and_never_early,
    replace_and_if_absent,
    lease_expiry_and_dead_letters,
    nack_retry_keeps_deadline,
    release_goes_back_to_the_front,
    defer_does_not_count_an_attempt,
    reschedule,
    cancel_everywhere,
    wake_ups,
);

#[test]
fn memory_backend_debug_names_its_clock() {
    assert!(format!("{:?}", MemoryBackend::new()).contains("Real"));
}
