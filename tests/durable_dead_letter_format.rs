//! The stored form of dead letters, on the stores that keep it: an entry
//! written before dead records existed (hand-written here, byte for byte
//! as the previous version stored it) still reads (no error recorded),
//! requeues and purges; and a buried entry is stored as documented (the
//! dead record `DE AD 01`, the error's length, the error, then the
//! envelope), which `requeue` strips in the store.

#[cfg(feature = "postgres")]
mod postgres_support;
#[cfg(feature = "redis")]
mod redis_support;

#[cfg(any(feature = "redis", feature = "postgres"))]
mod common {
    use std::time::Duration;

    use schedpool::durable::{DurableBackend, DurableQueue, Put};

    /// A version-1 envelope of kind `kind` around `payload`, as every
    /// version so far has written it.
    pub fn envelope(kind: &str, payload: &[u8]) -> Vec<u8> {
        let mut v = vec![1, kind.len() as u8];
        v.extend_from_slice(kind.as_bytes());
        v.push(0);
        v.extend_from_slice(payload);
        v
    }

    /// What a burial with `error` stores in front of the envelope.
    pub fn record(error: &str) -> Vec<u8> {
        let mut v = vec![0xDE, 0xAD, 0x01];
        v.extend_from_slice(&(error.len() as u16).to_be_bytes());
        v.extend_from_slice(error.as_bytes());
        v
    }

    /// The old entries "old" (a queue's, payload "hello", 3 attempts,
    /// died at `died`) and "old-job" (a pool's, kind "charge") are stored;
    /// check that they read, requeue and purge.
    pub fn old_entries_read_requeue_and_purge(backend: impl DurableBackend, died: u64) {
        let q: DurableQueue<String> = DurableQueue::new(backend);
        let dead = q.dead_letters(10).unwrap();
        assert_eq!(dead.len(), 2, "{dead:?}");
        let old = dead.iter().find(|d| d.id == "old").expect("listed");
        assert_eq!(
            (old.kind.as_str(), old.attempts, old.died_ms),
            ("", 3, died)
        );
        assert_eq!(old.error, None, "no record: no error recorded");
        assert_eq!(old.value, Ok("hello".to_string()));
        let job = dead.iter().find(|d| d.id == "old-job").expect("listed");
        assert_eq!((job.kind.as_str(), job.error.as_deref()), ("charge", None));
        assert!(q.requeue("old").unwrap());
        let d = q
            .poll_timeout(Duration::from_secs(5))
            .unwrap()
            .expect("due now");
        assert_eq!(
            (d.id(), d.value().as_str(), d.attempt()),
            ("old", "hello", 1)
        );
        d.ack().unwrap();
        assert!(q.purge("old-job").unwrap());
        assert_eq!(q.counts().unwrap(), Default::default());
    }

    /// Buries "new" with `error` through `q`, for the caller to read the
    /// stored bytes; returns the envelope it was put with.
    pub fn bury_new(q: &DurableQueue<String>, error: &str) -> Vec<u8> {
        assert!(matches!(
            q.put("new", &"v".to_string(), Duration::ZERO).unwrap(),
            Put::Inserted { .. }
        ));
        let d = q
            .poll_timeout(Duration::from_secs(5))
            .unwrap()
            .expect("due");
        d.dead_letter_with(error).unwrap();
        envelope("", b"v")
    }
}

#[cfg(feature = "redis")]
mod redis {
    use super::common::*;
    use super::redis_support::Redis;
    use schedpool::durable::{DurableQueue, RedisBackend};

    #[test]
    fn old_entries_and_the_stored_record() {
        let server = Redis::start();
        let backend = RedisBackend::connect(&server.url(), "fmt").unwrap();
        let key = |part: &str| backend.key(part).unwrap().to_string();
        let (data, meta, dead) = (key("data"), key("meta"), key("dead"));
        let mut c = server.conn();
        let died = 1_700_000_000_000u64;
        for (id, env) in [
            ("old", envelope("", b"hello")),
            ("old-job", envelope("charge", &42u64.to_be_bytes())),
        ] {
            redis::pipe()
                .hset(&data, id, env)
                .hset(&meta, id, "17:3:1699999999000:1699999999000")
                .zadd(&dead, id, died)
                .query::<()>(&mut c)
                .unwrap();
        }
        old_entries_read_requeue_and_purge(backend, died);

        let q: DurableQueue<String> =
            DurableQueue::new(RedisBackend::connect(&server.url(), "fmt").unwrap());
        let env = bury_new(&q, "no such address");
        let stored: Vec<u8> = redis::cmd("HGET")
            .arg(&data)
            .arg("new")
            .query(&mut c)
            .unwrap();
        assert_eq!(stored, [record("no such address"), env.clone()].concat());
        assert!(q.requeue("new").unwrap());
        let stored: Vec<u8> = redis::cmd("HGET")
            .arg(&data)
            .arg("new")
            .query(&mut c)
            .unwrap();
        assert_eq!(stored, env, "requeue strips the record in the store");
    }
}

#[cfg(feature = "postgres")]
mod postgres {
    use super::common::*;
    use super::postgres_support::Postgres;
    use schedpool::durable::{DurableQueue, PostgresBackend};

    #[test]
    fn old_entries_and_the_stored_record() {
        let server = Postgres::start();
        let backend = PostgresBackend::connect(&server.params(), "fmt").unwrap();
        let mut c = server.client();
        let died = 1_700_000_000_000i64;
        for (id, env) in [
            ("old", envelope("", b"hello")),
            ("old-job", envelope("charge", &42u64.to_be_bytes())),
        ] {
            c.execute(
                "INSERT INTO schedpool.items (queue, id, state, score, deadline, due, token, \
                 attempts, envelope) VALUES ('fmt', $1, 2, $2::bigint, $2::bigint - 1000, $2::bigint - 1000, \
                 nextval('schedpool.tokens'), 3, $3)",
                &[&id, &died, &env],
            )
            .unwrap();
        }
        old_entries_read_requeue_and_purge(backend, died as u64);

        let q: DurableQueue<String> =
            DurableQueue::new(PostgresBackend::connect(&server.params(), "fmt").unwrap());
        let env = bury_new(&q, "no such address");
        let stored = |c: &mut postgres::Client| -> Vec<u8> {
            c.query_one(
                "SELECT envelope FROM schedpool.items WHERE queue = 'fmt' AND id = 'new'",
                &[],
            )
            .unwrap()
            .get(0)
        };
        assert_eq!(
            stored(&mut c),
            [record("no such address"), env.clone()].concat()
        );
        assert!(q.requeue("new").unwrap());
        assert_eq!(
            stored(&mut c),
            env,
            "requeue strips the record in the store"
        );
    }
}
