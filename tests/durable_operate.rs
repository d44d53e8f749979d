//! The operator's side of each store beyond the shared contract
//! (`durable_contract.rs`, `contract_ops/`): a pause survives a restart
//! (a new handle on the same store, as a restarted process), and the
//! SQLite file of schema version 1 is upgraded in place with its items'
//! kinds filled in.

#[cfg(feature = "postgres")]
mod postgres_support;
#[cfg(feature = "redis")]
mod redis_support;
#[cfg(feature = "sqlite")]
mod sqlite_support;

#[allow(unused_imports)]
use schedpool::durable::{
    DurableBackend, DurablePool, ListFilter, Operator, PutMode, StoredState, When,
};
#[allow(unused_imports)]
use std::time::{Duration, Instant};

/// Pauses `mail` through one handle, drops it (the process ends), and
/// checks on a fresh handle that the pause held and that a pool on it
/// leaves the due item waiting until a resume.
#[allow(dead_code)]
fn pause_survives_restart<B: DurableBackend>(open: impl Fn() -> B) {
    let first = Operator::new(open());
    assert!(first.pause_kind("mail", "ada").unwrap());
    drop(first);

    let pool = DurablePool::builder(open())
        .threads(1)
        .handler("mail", |_: &(), _job| Ok(()))
        .build()
        .unwrap();
    pool.schedule("mail", "m-1", &(), Duration::ZERO).unwrap();
    let paused = pool.paused_kinds().unwrap();
    assert_eq!((paused.len(), paused[0].by.as_str()), (1, "ada"));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        pool.counts().unwrap().pending,
        1,
        "paused across the restart"
    );
    assert_eq!(pool.stats().succeeded, 0);
    assert!(pool.resume_kind("mail", "bob").unwrap());
    assert!(pool.wait_idle(Duration::from_secs(10)), "resumed: it runs");
    assert_eq!(pool.stats().succeeded, 1);
    pool.shutdown();
    let audit = Operator::new(open()).audit(10, None).unwrap();
    let what: Vec<_> = audit
        .iter()
        .map(|e| (e.action.as_str(), e.by.as_str()))
        .collect();
    assert_eq!(what, [("resume", "bob"), ("pause", "ada")]);
}

#[test]
fn memory_pause_holds_for_every_handle() {
    let store = schedpool::durable::MemoryBackend::new();
    pause_survives_restart(|| store.clone());
}

#[cfg(feature = "sqlite")]
mod sqlite {
    use super::sqlite_support::TempDb;
    use super::*;
    use schedpool::durable::SqliteBackend;

    #[test]
    fn pause_survives_restart() {
        let db = TempDb::new("ops-restart");
        super::pause_survives_restart(|| SqliteBackend::open(&db.path, "q").unwrap());
    }

    /// Version 1's tables, as that build created them.
    const V1: &str = "
CREATE TABLE schedpool_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE schedpool_tokens (one INTEGER PRIMARY KEY CHECK (one = 1), last INTEGER NOT NULL);
INSERT INTO schedpool_tokens (one, last) VALUES (1, 10);
CREATE TABLE schedpool_items (
    queue TEXT NOT NULL, id TEXT NOT NULL,
    state INTEGER NOT NULL CHECK (state BETWEEN 0 AND 3),
    score INTEGER NOT NULL, deadline INTEGER NOT NULL, due INTEGER NOT NULL,
    token INTEGER NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, envelope BLOB NOT NULL,
    r_token INTEGER, r_result INTEGER, r_expires INTEGER,
    PRIMARY KEY (queue, id)
) WITHOUT ROWID;
CREATE INDEX schedpool_items_by_state ON schedpool_items (queue, state, score, id);
INSERT INTO schedpool_meta (key, value) VALUES ('version', '1');
";

    #[test]
    fn a_version_1_file_is_upgraded_with_its_kinds() {
        let db = TempDb::new("ops-v1");
        let conn = rusqlite::Connection::open(&db.path).unwrap();
        conn.execute_batch(V1).unwrap();
        // A pending "mail" item, and a dead "sms" one (its dead record first).
        let mail = b"\x01\x04mail\x00hello".to_vec();
        let mut dead = b"\xDE\xAD\x01\x00\x00".to_vec();
        dead.extend_from_slice(b"\x01\x03sms\x00x");
        conn.execute(
            "INSERT INTO schedpool_items (queue, id, state, score, deadline, due, token, envelope) \
             VALUES ('q', 'm-1', 0, 5, 5, 5, 1, ?1), ('q', 's-1', 2, 6, 6, 6, 2, ?2)",
            rusqlite::params![mail, dead],
        )
        .unwrap();
        drop(conn);

        let b = SqliteBackend::open(&db.path, "q").unwrap();
        let version: String = rusqlite::Connection::open(&db.path)
            .unwrap()
            .query_row(
                "SELECT value FROM schedpool_meta WHERE key = 'version'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(version, "2");
        let ops = Operator::new(b);
        let mail = ops
            .list(&ListFilter::new(StoredState::Pending).kind("mail"))
            .unwrap();
        assert_eq!(mail.items[0].id, "m-1");
        let by_kind = ops.overview().unwrap().by_kind;
        let kinds: Vec<_> = by_kind
            .iter()
            .map(|k| (k.kind.as_str(), k.pending, k.dead))
            .collect();
        assert_eq!(kinds, [("mail", 1, 0), ("sms", 0, 1)]);
        assert_eq!(
            ops.inspect("s-1").unwrap().unwrap().summary.kind,
            "sms",
            "a dead item's kind is read past its dead record"
        );
    }
}

#[cfg(feature = "postgres")]
mod postgres {
    use super::postgres_support::Postgres;
    use super::*;
    use schedpool::durable::PostgresBackend;

    #[test]
    fn pause_survives_restart() {
        let server = Postgres::start();
        let params = server.params();
        super::pause_survives_restart(|| PostgresBackend::connect(&params, "q").unwrap());
    }

    /// A schema made by a version-1 build (version 2 taken back off, as the
    /// version-2 DDL leaves version 1's tables as they were) is upgraded
    /// at connect, with the kinds of its rows read from their envelopes.
    #[test]
    fn a_version_1_schema_is_upgraded_with_its_kinds() {
        let server = Postgres::start();
        let params = server.params();
        drop(PostgresBackend::connect(&params, "q").unwrap());
        let mut client = server.client();
        client
            .batch_execute(
                "DROP TRIGGER items_kind_on_insert ON schedpool.items;
                 DROP TRIGGER items_kind_on_update ON schedpool.items;
                 DROP FUNCTION schedpool.set_kind();
                 DROP FUNCTION schedpool.kind_of(bytea);
                 DROP INDEX schedpool.items_by_kind;
                 ALTER TABLE schedpool.items DROP COLUMN kind;
                 DROP TABLE schedpool.paused;
                 DROP TABLE schedpool.audit;
                 UPDATE schedpool.meta SET value = '1' WHERE key = 'version';
                 INSERT INTO schedpool.items (queue, id, state, score, deadline, due, token, envelope)
                 VALUES ('q', 'm-1', 0, 5, 5, 5, 1, '\\x01046d61696c0068656c6c6f'),
                        ('q', 's-1', 2, 6, 6, 6, 2, '\\xdead0100000103736d730078');",
            )
            .unwrap();
        let off = schedpool::durable::PostgresOptions::default().migrate(false);
        let err = PostgresBackend::connect_with(&params, "q", off).unwrap_err();
        assert!(err.to_string().contains("version 1"), "{err}");

        let ops = Operator::new(PostgresBackend::connect(&params, "q").unwrap());
        let version: String = client
            .query_one(
                "SELECT value FROM schedpool.meta WHERE key = 'version'",
                &[],
            )
            .unwrap()
            .get(0);
        assert_eq!(version, "2");
        let kinds: Vec<_> = ops
            .overview()
            .unwrap()
            .by_kind
            .iter()
            .map(|k| (k.kind.clone(), k.pending, k.dead))
            .collect();
        assert_eq!(
            kinds,
            [("mail".to_string(), 1, 0), ("sms".to_string(), 0, 1)]
        );
        assert_eq!(ops.inspect("m-1").unwrap().unwrap().payload, b"hello");
    }
}

#[cfg(feature = "redis")]
mod redis {
    use super::redis_support::Redis;
    use schedpool::durable::RedisBackend;

    #[test]
    fn pause_survives_restart() {
        let server = Redis::start();
        let url = server.url();
        super::pause_survives_restart(|| RedisBackend::connect(&url, "q").unwrap());
    }
}
