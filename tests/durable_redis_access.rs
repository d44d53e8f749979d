#![cfg(feature = "redis-tls")]
//! Who may connect to the Redis backend: TLS against a TLS-only server the
//! test configures with a certificate it makes (a wrong CA and a plain
//! connection are refused with a clear error), AUTH as an ACL user, and the
//! least-privileged ACL user of `docs/durable.md` (only the commands the
//! backend sends, only the queue's keys): a pool works on it, and the
//! checks it may not make (INFO, CONFIG GET) become warnings, or errors
//! with `strict`.

mod durable_support;
mod redis_support;
mod tls_support;

use std::time::{Duration, Instant};

use redis_support::{watchdog, Redis};
use schedpool::durable::{
    DurableBackend, DurableError, DurableQueue, QueueOptions, RedisBackend, RedisOptions,
};
use tls_support::Certs;

/// The ACL of `docs/durable.md`: the commands the backend sends (and its
/// scripts call), on the queue's keys only, no channels.
fn least_privileged(queue: &str, user: &str, password: &str) -> Vec<String> {
    let mut acl: Vec<String> = vec![
        user.into(),
        "reset".into(),
        "on".into(),
        format!(">{password}"),
        format!("~sp:{{{queue}}}:*"),
        "resetchannels".into(),
        "-@all".into(),
    ];
    for c in [
        "evalsha",
        "script|load",
        "time",
        "hsetnx",
        "hget",
        "hmget",
        "zcard",
        "zrange",
        "zpopmin",
        "bzpopmin",
        "client|id",
        "client|unblock",
        "ping",
        // Called by the scripts:
        "zadd",
        "zrem",
        "zscore",
        "zrangebyscore",
        "hset",
        "hdel",
        "hincrby",
        "set",
        "get",
    ] {
        acl.push(format!("+{c}"));
    }
    acl
}

fn acl_setuser(redis: &Redis, args: &[String]) {
    let mut conn = redis.conn();
    let mut cmd = redis::cmd("ACL");
    cmd.arg("SETUSER");
    for a in args {
        cmd.arg(a);
    }
    cmd.query::<()>(&mut conn).unwrap();
}

fn opts() -> QueueOptions {
    QueueOptions {
        lease: Duration::from_secs(10),
        max_block: Duration::from_millis(500),
        max_attempts: 0,
    }
}

#[test]
fn tls_with_the_servers_ca_works_a_wrong_ca_or_plain_connection_is_refused() {
    watchdog(Duration::from_secs(60), || {
        let certs = Certs::generate("redis");
        let redis = Redis::start_tls(&certs.cert, &certs.key, &certs.ca);
        // What succeeds gets seconds (a loaded machine's TLS handshakes);
        // what must fail at once gets an op_timeout far longer than the
        // bound it is held to, so a retried refusal would show.
        let good = RedisOptions::default()
            .ca_file(&certs.ca)
            .unwrap()
            .require_tls(true)
            .op_timeout(Duration::from_secs(5));
        let b = RedisBackend::connect_with(&redis.url(), "tls", good.clone()).unwrap();
        let q: DurableQueue<String> = DurableQueue::with_options(b, opts()).unwrap();
        q.put("k", &"over tls".into(), Duration::ZERO).unwrap();
        let d = q
            .poll_timeout(Duration::from_secs(5))
            .unwrap()
            .expect("due");
        assert_eq!(d.value(), "over tls");
        d.ack().unwrap();

        // A CA that did not sign the server's certificate.
        let wrong = RedisOptions::default()
            .ca_file(&certs.other_ca)
            .unwrap()
            .op_timeout(Duration::from_secs(20));
        let t = Instant::now();
        let err = RedisBackend::connect_with(&redis.url(), "tls", wrong).unwrap_err();
        assert!(
            matches!(&err, DurableError::Config(m) if m.contains("certificate")),
            "wrong CA: {err:?}"
        );
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "refused at once, not retried for the 20 s op_timeout: {:?}",
            t.elapsed()
        );

        // The system's roots do not include the test CA either.
        let err = RedisBackend::connect_with(
            &redis.url(),
            "tls",
            RedisOptions::default().op_timeout(Duration::from_secs(20)),
        )
        .unwrap_err();
        assert!(
            err.to_string().to_lowercase().contains("certificate"),
            "system roots: {err:?}"
        );

        // A plain connection to the TLS-only port: refused, not hung (it is
        // retried for its op_timeout, the default 2 s).
        let plain = format!("redis://127.0.0.1:{}/", redis.port);
        let t = Instant::now();
        let err = RedisBackend::connect_with(&plain, "tls", RedisOptions::default()).unwrap_err();
        assert!(err.is_unavailable(), "plain to a TLS port: {err:?}");
        assert!(
            err.to_string().contains("rediss://"),
            "the error names the likely cause: {err:?}"
        );
        assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());

        // require_tls refuses a plain URL before sending anything, and a CA
        // on a plain URL is a configuration error.
        let err = RedisBackend::connect_with(&plain, "tls", good.clone()).unwrap_err();
        assert!(matches!(err, DurableError::Config(_)), "{err:?}");
        let err = RedisBackend::connect_with(
            &plain,
            "tls",
            RedisOptions::default().ca_file(&certs.ca).unwrap(),
        )
        .unwrap_err();
        assert!(matches!(err, DurableError::Config(_)), "{err:?}");
    });
}

#[test]
fn a_least_privileged_acl_user_over_tls_runs_a_pool_and_unreadable_checks_warn() {
    watchdog(Duration::from_secs(90), || {
        let certs = Certs::generate("redis-acl");
        let redis = Redis::start_tls(&certs.cert, &certs.key, &certs.ca);
        acl_setuser(&redis, &least_privileged("jobs", "app", "app-secret"));
        let tls = RedisOptions::default()
            .ca_file(&certs.ca)
            .unwrap()
            .op_timeout(Duration::from_secs(5));

        // Wrong password, and no password: refused as configuration.
        let err = RedisBackend::connect_with(&redis.url_as("app", "wrong"), "jobs", tls.clone())
            .unwrap_err();
        assert!(
            matches!(err, DurableError::Config(_)),
            "bad password: {err:?}"
        );

        let b = RedisBackend::connect_with(&redis.url_as("app", "app-secret"), "jobs", tls.clone())
            .unwrap();
        // INFO and CONFIG are not granted: the checks warn instead of failing.
        let warnings = b.warnings().join("\n");
        assert!(warnings.contains("version"), "{warnings}");
        assert!(warnings.contains("appendonly is unknown"), "{warnings}");
        assert!(warnings.contains("appendfsync is unknown"), "{warnings}");
        assert!(
            warnings.contains("maxmemory-policy is unknown"),
            "{warnings}"
        );

        // Every verb the pool uses works on this user: put, claim, ack, nack
        // (retry and dead), extend (heartbeat), cancel, counts, wait/unblock.
        durable_support::every_pool_verb_works(b);

        // The user reaches nothing outside its queue's keys.
        let other = RedisBackend::connect_with(&redis.url_as("app", "app-secret"), "other", tls)
            .unwrap_err();
        assert!(
            other.to_string().contains("NOPERM") || other.to_string().contains("permission"),
            "another queue: {other:?}"
        );

        // strict refuses what it cannot prove safe.
        let strict = RedisOptions::default()
            .ca_file(&certs.ca)
            .unwrap()
            .strict(true);
        let err = RedisBackend::connect_with(&redis.url_as("app", "app-secret"), "jobs", strict)
            .unwrap_err();
        assert!(matches!(err, DurableError::Config(_)), "strict: {err:?}");
    });
}

#[test]
fn a_server_with_safe_settings_leaves_no_warnings() {
    watchdog(Duration::from_secs(30), || {
        let redis = Redis::start();
        let b = RedisBackend::connect(&redis.url(), "q").unwrap();
        assert!(b.warnings().is_empty(), "{:?}", b.warnings());
        assert_eq!(b.counts().unwrap().pending, 0);
    });
}
