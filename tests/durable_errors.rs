//! `DurableError` keeps what caused it: the underlying error (a
//! `redis::RedisError`, a `postgres::Error`, an `io::Error`, a payload's
//! decode error) is `source()`, typed, while the kinds users match on and
//! the messages they read stay as they were. No server is needed: each
//! cause is provoked locally (a closed port, a missing file, bad bytes).

use std::error::Error;
use std::time::Duration;

use schedpool::durable::{DurableError, DurableQueue, ErrorDetail, MemoryBackend};

/// A loopback port nothing listens on.
#[cfg(any(feature = "redis", feature = "postgres"))]
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[test]
fn a_payload_decode_error_is_the_source_of_a_format_error() {
    let backend = MemoryBackend::new();
    let words: DurableQueue<String> = DurableQueue::new(backend.clone());
    let numbers: DurableQueue<u64> = DurableQueue::new(backend);
    words
        .put("w", &"hello".to_string(), Duration::from_secs(60))
        .unwrap();
    let err = numbers.remove("w").unwrap_err();
    assert!(
        matches!(&err, DurableError::Format(m) if m.contains("\"w\"")),
        "{err:?}"
    );
    assert!(err.is_format() && !err.is_config());
    assert_eq!(
        err.to_string(),
        "unreadable durable data: item \"w\": expected 8 bytes, found 5"
    );
    let source = err.source().expect("the decode error is kept");
    assert_eq!(source.to_string(), "expected 8 bytes, found 5");
    let cloned = err.clone();
    assert_eq!(cloned, err);
    assert!(cloned.source().is_some(), "a clone keeps the source");
}

#[test]
fn kinds_without_a_cause_have_no_source() {
    assert!(DurableError::LeaseLost.source().is_none());
    assert!(DurableError::Closed.is_closed());
    let bad = DurableQueue::<u64>::with_options(
        MemoryBackend::new(),
        schedpool::durable::QueueOptions {
            lease: Duration::from_millis(1),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert_eq!(
        bad,
        DurableError::Config(ErrorDetail::from("lease must be at least 3 ms"))
    );
    assert!(bad.source().is_none());
}

#[cfg(feature = "redis")]
#[test]
fn redis_errors_are_kept_as_redis_errors() {
    use schedpool::durable::{RedisBackend, RedisOptions};

    let url = format!("redis://127.0.0.1:{}/0", closed_port());
    let opts = RedisOptions::default().op_timeout(Duration::from_millis(100));
    let err = RedisBackend::connect_with(&url, "q", opts).unwrap_err();
    assert!(err.is_unavailable(), "{err:?}");
    let redis = err
        .source()
        .and_then(|s| s.downcast_ref::<redis::RedisError>())
        .expect("the redis::RedisError is the source");
    assert!(redis.is_connection_refusal(), "{redis:?}");
    assert!(
        err.to_string().contains(&redis.to_string()),
        "the message keeps its text"
    );

    let err = RedisOptions::default()
        .ca_file("/no/such/ca.pem")
        .unwrap_err();
    assert!(matches!(&err, DurableError::Config(m) if m.contains("/no/such/ca.pem")));
    let io = err
        .source()
        .and_then(|s| s.downcast_ref::<std::io::Error>())
        .expect("the io::Error is the source");
    assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
}

/// The Redis message of a server that accepts and never answers says that
/// it timed out, and how long it waited: not the socket's `EAGAIN` ("os
/// error 11", "Resource temporarily unavailable"), which reads like a
/// server error; and no TLS hint, since a TLS-only server would not stay
/// silent.
#[cfg(feature = "redis")]
#[test]
fn a_redis_call_that_times_out_says_so() {
    use schedpool::durable::{RedisBackend, RedisOptions};

    // The kernel completes the connection from the backlog; nothing reads.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("redis://127.0.0.1:{}/", silent.local_addr().unwrap().port());
    let opts = RedisOptions::default().op_timeout(Duration::from_millis(300));
    let err = RedisBackend::connect_with(&url, "q", opts).unwrap_err();
    assert!(err.is_unavailable(), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("no reply from Redis within 300 ms"), "{text}");
    assert!(
        !text.contains("os error") && !text.contains("temporarily"),
        "{text}"
    );
    assert!(!text.contains("rediss://"), "no TLS hint: {text}");
    let redis = err
        .source()
        .and_then(|s| s.downcast_ref::<redis::RedisError>())
        .expect("the redis::RedisError is the source");
    assert!(redis.is_timeout(), "{redis:?}");
}

/// A refused connection (nothing listens) keeps its text and gets no TLS
/// hint; a server that closes a new plain connection before its first
/// reply (what a TLS-only port does) gets it.
#[cfg(feature = "redis")]
#[test]
fn the_rediss_hint_comes_only_where_tls_can_be_the_cause() {
    use schedpool::durable::{RedisBackend, RedisOptions};

    let opts = || RedisOptions::default().op_timeout(Duration::from_millis(300));
    let refused = format!("redis://127.0.0.1:{}/", closed_port());
    let err = RedisBackend::connect_with(&refused, "q", opts()).unwrap_err();
    assert!(err.is_unavailable(), "{err:?}");
    assert!(!err.to_string().contains("rediss://"), "{err}");
    assert!(
        err.to_string().to_lowercase().contains("refused"),
        "says refused: {err}"
    );

    // Accepts, reads nothing, closes at once: a TLS-only server's answer
    // to plain text.
    let hangs_up = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!(
        "redis://127.0.0.1:{}/",
        hangs_up.local_addr().unwrap().port()
    );
    std::thread::spawn(move || {
        for conn in hangs_up.incoming() {
            drop(conn);
        }
    });
    let err = RedisBackend::connect_with(&url, "q", opts()).unwrap_err();
    assert!(err.is_unavailable(), "{err:?}");
    assert!(
        err.to_string()
            .contains("if the server accepts TLS only, connect with a rediss:// URL"),
        "{err}"
    );
}

#[cfg(feature = "postgres")]
#[test]
fn postgres_errors_are_kept_as_postgres_errors() {
    use schedpool::durable::{PostgresBackend, PostgresOptions};

    let params = format!(
        "host=127.0.0.1 port={} user=nobody connect_timeout=2",
        closed_port()
    );
    let err = PostgresBackend::connect(&params, "q").unwrap_err();
    assert!(err.is_unavailable(), "{err:?}");
    let pg = err
        .source()
        .and_then(|s| s.downcast_ref::<postgres::Error>())
        .expect("the postgres::Error is the source");
    assert!(pg.as_db_error().is_none(), "a connection error: {pg:?}");

    let err = PostgresBackend::connect("port=not-a-number", "q").unwrap_err();
    assert!(err.is_config(), "{err:?}");
    assert!(err
        .source()
        .is_some_and(|s| s.downcast_ref::<postgres::Error>().is_some()));

    // `?` on the postgres client's own calls, beside the transactional verbs.
    let connect = || -> Result<(), DurableError> {
        postgres::Client::connect(&params, postgres::NoTls)?;
        Ok(())
    };
    let err = connect().unwrap_err();
    assert!(err.is_unavailable(), "{err:?}");
    assert!(err.source().is_some());

    let err = PostgresOptions::default()
        .ca_file("/no/such/ca.pem")
        .unwrap_err();
    let io = err
        .source()
        .and_then(|s| s.downcast_ref::<std::io::Error>())
        .expect("the io::Error is the source");
    assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
}
