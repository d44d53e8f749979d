#![cfg(feature = "redis")]
//! Bytes read back from Redis are untrusted: an entry with corrupt,
//! truncated or foreign contents (meta that does not parse, data missing,
//! an envelope that does not decode, a lease entry nobody wrote) is
//! dead-lettered, never a panic or an error that stops the queue, and the
//! items behind it are delivered.

mod redis_support;

use std::time::Duration;

use redis_support::{watchdog, Redis};
use schedpool::durable::{DurableQueue, QueueOptions, RedisBackend, RedisOptions};

fn server_ms(conn: &mut redis::Connection) -> u64 {
    let (s, us): (u64, u64) = redis::cmd("TIME").query(conn).unwrap();
    s * 1000 + us / 1000
}

#[test]
fn corrupt_truncated_or_foreign_entries_are_dead_lettered_and_block_nothing() {
    watchdog(Duration::from_secs(60), || {
        let redis = Redis::start();
        let mut conn = redis.conn();
        // This test is about what the claim does with garbage, not about
        // timeouts: a generous op_timeout, because on a loaded machine a
        // Redis that fsyncs each write once took over the default 2 s to
        // reply ("no reply from Redis within 2000 ms").
        let opts = RedisOptions::default().op_timeout(Duration::from_secs(30));
        let backend = RedisBackend::connect_with(&redis.url(), "bytes", opts).unwrap();
        let key = |p: &str| backend.key(p).unwrap().to_string();
        let (due, lease, data, meta) = (key("due"), key("lease"), key("data"), key("meta"));
        let q: DurableQueue<String> = DurableQueue::with_options(
            backend,
            QueueOptions {
                lease: Duration::from_secs(30),
                max_block: Duration::from_millis(300),
                max_attempts: 0,
            },
        )
        .unwrap();
        let now = server_ms(&mut conn);
        let env = vec![1u8, 0, 0, b'x'];
        let set = |c: &mut redis::Connection, k: &str, id: &str, v: &[u8]| {
            redis::cmd("HSET")
                .arg(k)
                .arg(id)
                .arg(v)
                .query::<()>(c)
                .unwrap();
        };
        let zadd = |c: &mut redis::Connection, k: &str, id: &str, score: u64| {
            redis::cmd("ZADD")
                .arg(k)
                .arg(score)
                .arg(id)
                .query::<()>(c)
                .unwrap();
        };
        // Due first, ahead of the good items: each would stop a claim that
        // trusted it.
        for (i, (id, m, d)) in [
            ("a-garbage-meta", Some(&b"not:a:meta"[..]), Some(&env[..])),
            ("b-empty-meta", Some(&b""[..]), Some(&env[..])),
            ("c-no-meta", None, Some(&env[..])),
            ("d-no-data", Some(&b"1:0:5:5"[..]), None),
            ("e-orphan", None, None),
            (
                "f-bad-envelope",
                Some(&b"1:0:5:5"[..]),
                Some(&[7u8, 7, 7][..]),
            ),
            ("g-truncated", Some(&b"1:0:5:5"[..]), Some(&[1u8][..])),
        ]
        .into_iter()
        .enumerate()
        {
            if let Some(m) = m {
                set(&mut conn, &meta, id, m);
            }
            if let Some(d) = d {
                set(&mut conn, &data, id, d);
            }
            zadd(&mut conn, &due, id, now - 1000 + i as u64);
        }
        // An expired lease entry with foreign meta: the reclaim meets it.
        set(&mut conn, &meta, "h-leased-garbage", b"zz");
        set(&mut conn, &data, "h-leased-garbage", &env);
        zadd(&mut conn, &lease, "h-leased-garbage", now - 500);

        for n in 0..3 {
            q.put(&format!("good-{n}"), &format!("v{n}"), Duration::ZERO)
                .unwrap();
        }
        let mut got = Vec::new();
        while let Some(d) = q.poll_timeout(Duration::from_secs(2)).unwrap() {
            got.push(d.id().to_string());
            d.ack().unwrap();
        }
        assert_eq!(got, ["good-0", "good-1", "good-2"]);
        let dead = q.dead_letters(20).unwrap();
        let mut ids: Vec<&str> = dead.iter().map(|d| d.id.as_str()).collect();
        ids.sort();
        assert_eq!(
            ids,
            [
                "a-garbage-meta",
                "b-empty-meta",
                "c-no-meta",
                "d-no-data",
                "e-orphan",
                "f-bad-envelope",
                "g-truncated",
                "h-leased-garbage"
            ]
        );
        // Those with no data, or data that does not decode, report why.
        for d in &dead {
            if ["d-no-data", "e-orphan", "f-bad-envelope", "g-truncated"].contains(&d.id.as_str()) {
                assert!(d.value.is_err(), "{d:?}");
            }
        }
        let c = q.counts().unwrap();
        assert_eq!((c.pending, c.in_flight, c.dead), (0, 0, 8));
        // Each can be removed (one whose bytes do not decode says so).
        for id in ids {
            match q.remove(id) {
                Ok(_) | Err(schedpool::durable::DurableError::Format(_)) => {}
                Err(e) => panic!("remove {id}: {e:?}"),
            }
        }
        assert_eq!(q.counts().unwrap().dead, 0);
    });
}
