#![cfg(any(feature = "redis", feature = "postgres"))]
//! A wrong or missing password is one kind on both stores,
//! [`DurableError::Config`] ("configuration / authentication"), never
//! `Unavailable` (which callers retry) nor `Refused`; and it comes back at
//! once, not after the operation timeout's retries (issue 34, part 6).

#[cfg(feature = "postgres")]
mod postgres_support;
#[cfg(feature = "redis")]
mod redis_support;

use std::time::{Duration, Instant};

use schedpool::durable::DurableError;

/// How long a refused login may take: one round trip, no retries (the
/// operation timeout below is 3 s, so a retried error would take longer).
const AT_ONCE: Duration = Duration::from_millis(2500);

fn assert_auth(err: &DurableError, what: &str, took: Duration) {
    assert!(
        matches!(err, DurableError::Config(m) if m.to_lowercase().contains("authentication")),
        "{what}: {err:?}"
    );
    assert!(
        !err.is_unavailable() && !err.is_refused(),
        "{what}: {err:?}"
    );
    assert!(took < AT_ONCE, "{what}: took {took:?}");
}

#[cfg(feature = "postgres")]
#[test]
fn postgres_wrong_or_missing_password_is_config() {
    use postgres_support::{watchdog, Postgres};
    use schedpool::durable::{PostgresBackend, PostgresOptions};

    watchdog(Duration::from_secs(60), || {
        let pg = Postgres::start();
        pg.client()
            .batch_execute(
                "SET password_encryption = 'scram-sha-256';
                 CREATE ROLE app LOGIN PASSWORD 'app-secret';
                 CREATE SCHEMA app_jobs AUTHORIZATION app;",
            )
            .unwrap();
        std::fs::write(
            pg.dir.join("data/pg_hba.conf"),
            "host all postgres 127.0.0.1/32 trust\n\
             host all all 127.0.0.1/32 scram-sha-256\n",
        )
        .unwrap();
        pg.client()
            .batch_execute("SELECT pg_reload_conf()")
            .unwrap();
        std::thread::sleep(Duration::from_millis(200));
        let o = PostgresOptions::default()
            .schema("app_jobs")
            .op_timeout(Duration::from_secs(3));
        let params = |password: &str| {
            format!(
                "host=127.0.0.1 port={} user=app dbname=postgres{password}",
                pg.port
            )
        };
        for (what, p) in [
            ("wrong password", params(" password=nope")),
            ("missing password", params("")),
        ] {
            let t = Instant::now();
            let err = PostgresBackend::connect_with(&p, "q", o.clone()).unwrap_err();
            assert_auth(&err, what, t.elapsed());
        }
        PostgresBackend::connect_with(&params(" password=app-secret"), "q", o)
            .expect("the right password connects");
    });
}

#[cfg(feature = "redis")]
#[test]
fn redis_wrong_or_missing_password_is_config() {
    use redis_support::{watchdog, Redis};
    use schedpool::durable::{RedisBackend, RedisOptions};

    watchdog(Duration::from_secs(60), || {
        let redis = Redis::start();
        let mut admin = redis.conn();
        redis::cmd("ACL")
            .arg(&["SETUSER", "app", "on", ">app-secret", "~*", "+@all"])
            .query::<()>(&mut admin)
            .unwrap();
        // From here on the default user needs a password too (the admin
        // connection stays authenticated).
        redis::cmd("CONFIG")
            .arg(&["SET", "requirepass", "default-secret"])
            .query::<()>(&mut admin)
            .unwrap();
        let o = RedisOptions::default().op_timeout(Duration::from_secs(3));
        for (what, url) in [
            ("wrong password", redis.url_as("app", "nope")),
            ("missing password", redis.url()),
        ] {
            let t = Instant::now();
            let err = RedisBackend::connect_with(&url, "q", o.clone()).unwrap_err();
            assert_auth(&err, what, t.elapsed());
        }
        RedisBackend::connect_with(&redis.url_as("app", "app-secret"), "q", o)
            .expect("the right password connects");
    });
}
