//! The async durable API on SQLite (issue 36, items 3, 4 and 6): the
//! transactional verbs on a sqlx SQLite transaction and connection (a
//! rollback never delivered, a commit delivered once and never early by
//! the store's clock, another file refused before anything is written, a
//! deferred transaction that read first `Unavailable` at once);
//! the `AsyncClient`'s verbs through the blocking pool, and what a future
//! dropped mid-way leaves; and a runtime with one worker thread that keeps
//! running while another connection holds the file's write lock for
//! 1.5 s, with async client calls, sqlx transactions and async handler
//! futures on it meanwhile. No server: a file in a temp dir per test.
#![cfg(feature = "sqlx-sqlite")]

mod async_support;
#[path = "../../tests/sqlite_support/mod.rs"]
mod sqlite_support;

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_support::{off_runtime, EVENTUALLY};
use schedpool::durable::{DurableError, DurablePool, Put, SqliteBackend, StoredState};
use sqlite_support::TempDb;
use sqlx::sqlite::{SqliteConnectOptions, SqlitePool};
use sqlx::{Connection, SqliteConnection};

/// What a consumer's handler saw: (id, deadline_ms, claimed_ms).
type Seen = Arc<Mutex<Vec<(String, u64, u64)>>>;

/// A sqlx pool on `db`'s file, with the application's own table.
async fn app_db(db: &TempDb) -> SqlitePool {
    let opts = SqliteConnectOptions::new()
        .filename(&db.path)
        .create_if_missing(true);
    let pool = SqlitePool::connect_with(opts).await.unwrap();
    sqlx::query("CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY, state TEXT NOT NULL)")
        .execute(&pool)
        .await
        .unwrap();
    pool
}

/// A producer-only pool and a consumer recording into `seen`, on `db`.
fn pools(db: &TempDb, seen: &Seen) -> (Arc<DurablePool>, Arc<DurablePool>) {
    let producer = DurablePool::builder(SqliteBackend::open(&db.path, "tx").unwrap())
        .threads(0)
        .build()
        .unwrap();
    let s = seen.clone();
    let consumer = DurablePool::builder(SqliteBackend::open(&db.path, "tx").unwrap())
        .threads(1)
        .handler("close", move |_: &u64, job| {
            s.lock()
                .unwrap()
                .push((job.id.clone(), job.deadline_ms, job.claimed_ms));
            Ok(())
        })
        .build()
        .unwrap();
    (Arc::new(producer), Arc::new(consumer))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schedule_in_and_cancel_in_on_a_sqlx_sqlite_transaction() {
    let db = TempDb::new("sqlx-tx");
    let seen: Seen = Arc::default();
    let (pool, consumer) = pools(&db, &seen);
    let client = pool.async_client();
    let app = app_db(&db).await;
    let delay = Duration::from_millis(300);

    // Rolled back: the order and its timeout, neither.
    let mut tx = app.begin_with("BEGIN IMMEDIATE").await.unwrap();
    sqlx::query("INSERT INTO orders (id, state) VALUES (1, 'unpaid')")
        .execute(&mut *tx)
        .await
        .unwrap();
    client
        .schedule_in(&mut tx, "close", "rolled-back", &1u64, Duration::ZERO)
        .await
        .unwrap();
    tx.rollback().await.unwrap();

    // Committed: invisible until the commit, then delivered once.
    let mut tx = app.begin_with("BEGIN IMMEDIATE").await.unwrap();
    sqlx::query("INSERT INTO orders (id, state) VALUES (2, 'unpaid')")
        .execute(&mut *tx)
        .await
        .unwrap();
    let put = client
        .schedule_in(&mut tx, "close", "committed", &2u64, delay)
        .await
        .unwrap();
    assert!(matches!(put, Put::Inserted { .. }), "{put:?}");
    let again = client
        .schedule_if_absent_in(&mut tx, "close", "committed", &2u64, delay)
        .await
        .unwrap();
    assert_eq!(again, Put::Exists, "seen inside its own transaction");
    assert!(
        client.get("committed").await.unwrap().is_none(),
        "not visible before the commit"
    );
    tx.commit().await.unwrap();
    assert_eq!(
        client.get("committed").await.unwrap().unwrap().state,
        StoredState::Pending
    );

    // On a plain connection (autocommit).
    let mut conn = app.acquire().await.unwrap();
    let put_auto = client
        .schedule_if_absent_in(&mut *conn, "close", "autocommit", &3u64, delay)
        .await
        .unwrap();
    assert!(matches!(put_auto, Put::Inserted { .. }));
    drop(conn);

    // A cancel rolled back leaves the item; one committed removes it.
    client
        .schedule("close", "to-cancel", &4u64, Duration::from_secs(3600))
        .await
        .unwrap();
    let mut tx = app.begin_with("BEGIN IMMEDIATE").await.unwrap();
    assert!(client.cancel_in(&mut tx, "to-cancel").await.unwrap());
    tx.rollback().await.unwrap();
    assert!(
        client.get("to-cancel").await.unwrap().is_some(),
        "rolled back: still there"
    );
    let mut tx = app.begin_with("BEGIN IMMEDIATE").await.unwrap();
    assert!(client.cancel_in(&mut tx, "to-cancel").await.unwrap());
    assert!(!client.cancel_in(&mut tx, "to-cancel").await.unwrap());
    tx.commit().await.unwrap();
    assert!(client.get("to-cancel").await.unwrap().is_none());

    let deadline = Instant::now() + EVENTUALLY;
    while seen.lock().unwrap().len() < 2 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Time for a rolled-back item to show up, were it stored.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut got = seen.lock().unwrap().clone();
    got.sort();
    let ids: Vec<&str> = got.iter().map(|(id, _, _)| id.as_str()).collect();
    assert_eq!(ids, ["autocommit", "committed"], "each once, nothing else");
    for (id, deadline_ms, claimed_ms) in &got {
        assert!(
            claimed_ms >= deadline_ms,
            "{id} claimed early: {claimed_ms} < {deadline_ms}"
        );
    }
    assert_eq!(put.deadline_ms(), Some(got[1].1));
    assert_eq!(put_auto.deadline_ms(), Some(got[0].1));
    let orders: Vec<(i64,)> = sqlx::query_as("SELECT id FROM orders ORDER BY id")
        .fetch_all(&app)
        .await
        .unwrap();
    assert_eq!(
        orders,
        [(2,)],
        "the rolled-back order is gone with its timeout"
    );
    drop(client);
    off_runtime(move || drop((pool, consumer))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_on_another_file_is_refused_before_anything_is_written() {
    let db = TempDb::new("sqlx-other");
    let other = TempDb::new("sqlx-other-2");
    let seen: Seen = Arc::default();
    let (pool, consumer) = pools(&db, &seen);
    let client = pool.async_client();
    let app = app_db(&other).await;
    let mut tx = app.begin_with("BEGIN IMMEDIATE").await.unwrap();
    let err = client
        .schedule_in(&mut tx, "close", "o-1", &1u64, Duration::ZERO)
        .await
        .unwrap_err();
    assert!(matches!(err, DurableError::Config(_)), "{err}");
    assert!(err.to_string().contains("not on the queue's file"), "{err}");
    let err = client.cancel_in(&mut tx, "o-1").await.unwrap_err();
    assert!(matches!(err, DurableError::Config(_)), "{err}");
    // A kind the pool has no handler for, an empty id: refused too.
    let err = client
        .schedule_in(&mut tx, "no-such-kind", "o-1", &1u64, Duration::ZERO)
        .await
        .unwrap_err();
    assert!(matches!(err, DurableError::Config(_)), "{err}");
    tx.commit().await.unwrap();
    let app = app_db(&db).await;
    let mut tx = app.begin_with("BEGIN IMMEDIATE").await.unwrap();
    let err = client
        .schedule_in(&mut tx, "close", "", &1u64, Duration::ZERO)
        .await
        .unwrap_err();
    assert!(matches!(err, DurableError::Config(_)), "{err}");
    tx.commit().await.unwrap();
    let tables: i64 =
        sqlx::query_scalar("SELECT count(*) FROM sqlite_master WHERE name LIKE 'schedpool%'")
            .fetch_one(&app_db(&other).await)
            .await
            .unwrap();
    assert_eq!(tables, 0, "nothing written to the other file");
    assert_eq!(client.counts().await.unwrap().pending, 0);
    drop(client);
    off_runtime(move || drop((pool, consumer))).await;
}

/// Every verb of the async client on SQLite (through the blocking pool).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_async_client_verbs_on_sqlite() {
    let db = TempDb::new("async-verbs");
    let (p, c) = async_support::pools(|| SqliteBackend::open(&db.path, "verbs").unwrap());
    assert!(format!("{:?}", p.async_client()).contains("blocking pool"));
    async_support::verbs(p, c).await;
}

/// Waits until the pending count holds still for 1 s: a dropped future's
/// call on the blocking pool still completes, after its drop.
async fn quiet(client: &schedpool::durable::AsyncClient) {
    let (mut last, mut still) = (usize::MAX, 0);
    let until = Instant::now() + EVENTUALLY;
    while still < 5 && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let now = client.counts().await.unwrap().pending;
        still = if now == last { still + 1 } else { 0 };
        last = now;
    }
}

/// Futures dropped mid-way (after 0 to 2 ms) leave each item stored whole
/// or not at all: every item found decodes to the value it was put with,
/// and the store's count is the number found.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn futures_dropped_mid_way_leave_nothing_half_done() {
    let db = TempDb::new("async-drop");
    let pool = DurablePool::builder(SqliteBackend::open(&db.path, "drop").unwrap())
        .threads(0)
        .build()
        .unwrap();
    let client = pool.async_client();
    let hour = Duration::from_secs(3600);
    for i in 0..200u64 {
        let cut = Duration::from_micros(i * 10 % 2_000);
        let _ =
            tokio::time::timeout(cut, client.schedule("close", &format!("d{i}"), &i, hour)).await;
    }
    quiet(&client).await;
    let mut found = 0;
    for i in 0..200u64 {
        if let Some(item) = client.get(&format!("d{i}")).await.unwrap() {
            assert_eq!(item.decode::<u64>().unwrap(), i, "d{i} stored whole");
            found += 1;
        }
    }
    assert_eq!(client.counts().await.unwrap().pending, found);
    // And cancels dropped mid-way: each item gone or whole.
    for i in 0..200u64 {
        let cut = Duration::from_micros(i * 10 % 2_000);
        let _ = tokio::time::timeout(cut, client.cancel(&format!("d{i}"))).await;
    }
    quiet(&client).await;
    let mut left = 0;
    for i in 0..200u64 {
        if let Some(item) = client.get(&format!("d{i}")).await.unwrap() {
            assert_eq!(item.decode::<u64>().unwrap(), i);
            left += 1;
        }
    }
    assert_eq!(client.counts().await.unwrap().pending, left);
    eprintln!("{found} of 200 puts landed, {left} survived their cancel");
    off_runtime(move || drop(pool)).await;
}

/// A runtime with one worker thread keeps running while another
/// connection holds the file's write lock for 1.5 s, with 10 async client
/// calls, 10 sqlx transactions calling `schedule_in`, and 20 async handler
/// futures of a pool on the same file on the runtime meanwhile. A blocking
/// call on the runtime's one thread would stop the ticker for the whole
/// stall; it must tick on.
#[tokio::test(flavor = "current_thread")]
async fn a_one_thread_runtime_makes_progress_while_the_file_is_locked() {
    let db = TempDb::new("one-thread");
    let ticks_db = TempDb::new("one-thread-ticks");
    let runtime = tokio::runtime::Handle::current();
    let handled = Arc::new(AtomicUsize::new(0));
    let h = handled.clone();
    let (path, ticks_path) = (db.path.clone(), ticks_db.path.clone());
    let (producer, worker) = tokio::task::spawn_blocking(move || {
        let producer = DurablePool::builder(SqliteBackend::open(&path, "stall").unwrap())
            .threads(0)
            .build()
            .unwrap();
        // On a file of its own: its handlers run while the other is locked.
        let worker = DurablePool::builder(SqliteBackend::open(&ticks_path, "ticks").unwrap())
            .threads(1)
            .runtime(runtime)
            .handler_async("tick", move |_: (), _job| {
                let h = h.clone();
                async move {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    h.fetch_add(1, Ordering::SeqCst);
                    Ok(())
                }
            })
            .build()
            .unwrap();
        (Arc::new(producer), Arc::new(worker))
    })
    .await
    .unwrap();
    let client = producer.async_client();
    let ticks_client = worker.async_client();
    let app = app_db(&db).await;
    let ticks = Arc::new(AtomicUsize::new(0));
    let t = ticks.clone();
    let ticker = tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_millis(1)).await;
            t.fetch_add(1, Ordering::Relaxed);
        }
    });
    // The stall: another connection holds the write lock for 1.5 s.
    let opts = SqliteConnectOptions::new().filename(&db.path);
    let mut locker = SqliteConnection::connect_with(&opts).await.unwrap();
    let lock = locker.begin_with("BEGIN IMMEDIATE").await.unwrap();
    let started = Instant::now();
    let before = ticks.load(Ordering::Relaxed);
    for i in 0..20 {
        ticks_client
            .schedule("tick", &format!("t{i}"), &(), Duration::ZERO)
            .await
            .unwrap();
    }
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..10 {
        calls.spawn(client.schedule("job", &format!("c{i}"), &1u64, Duration::from_secs(60)));
        let (client, app) = (client.clone(), app.clone());
        calls.spawn(async move {
            let mut tx = app.begin_with("BEGIN IMMEDIATE").await.unwrap();
            let put = client
                .schedule_in(
                    &mut tx,
                    "job",
                    &format!("x{i}"),
                    &1u64,
                    Duration::from_secs(60),
                )
                .await;
            tx.commit().await.unwrap();
            put
        });
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let handled_during = handled.load(Ordering::SeqCst);
    lock.rollback().await.unwrap();
    let mut results = Vec::new();
    while let Some(done) = calls.join_next().await {
        results.push(done.unwrap());
    }
    let stalled = started.elapsed();
    let during = ticks.load(Ordering::Relaxed) - before;
    let deadline = Instant::now() + EVENTUALLY;
    while handled.load(Ordering::SeqCst) < 20 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    ticker.abort();
    eprintln!(
        "20 calls took {stalled:?} while the file was locked; the ticker ticked {during} times; \
         {handled_during} handler futures finished meanwhile"
    );
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    assert!(
        stalled >= Duration::from_millis(1_400),
        "the calls waited for the lock: {stalled:?}"
    );
    assert!(
        during >= 50,
        "a one-thread runtime ticked only {during} times in {stalled:?}: something blocked it"
    );
    assert!(
        handled_during > 0,
        "no handler future ran while the file was locked"
    );
    assert_eq!(handled.load(Ordering::SeqCst), 20, "every handler ran once");
    let ids: HashSet<String> = (0..10)
        .flat_map(|i| [format!("c{i}"), format!("x{i}")])
        .collect();
    for id in &ids {
        assert!(client.get(id).await.unwrap().is_some(), "{id} stored");
    }
    drop((client, ticks_client, app));
    off_runtime(move || drop((producer, worker, db, ticks_db))).await;
}

/// A deferred transaction that read before another connection wrote
/// cannot take the write lock: the verb fails at once with `Unavailable`
/// (SQLite's `SQLITE_BUSY_SNAPSHOT`), as documented, and nothing is
/// stored; with `BEGIN IMMEDIATE` the same put succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deferred_transaction_that_read_first_is_unavailable() {
    let db = TempDb::new("sqlx-deferred");
    let seen: Seen = Arc::default();
    let (pool, consumer) = pools(&db, &seen);
    let client = pool.async_client();
    let app = app_db(&db).await;
    let mut tx = app.begin().await.unwrap();
    let _: i64 = sqlx::query_scalar("SELECT count(*) FROM orders")
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    client
        .schedule("close", "meanwhile", &1u64, Duration::from_secs(3600))
        .await
        .unwrap();
    let started = Instant::now();
    let err = client
        .schedule_in(
            &mut tx,
            "close",
            "deferred",
            &2u64,
            Duration::from_secs(3600),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, DurableError::Unavailable(_)), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "not the 5 s busy timeout: {:?}",
        started.elapsed()
    );
    tx.rollback().await.unwrap();
    assert!(client.get("deferred").await.unwrap().is_none());
    let mut tx = app.begin_with("BEGIN IMMEDIATE").await.unwrap();
    client
        .schedule_in(
            &mut tx,
            "close",
            "deferred",
            &2u64,
            Duration::from_secs(3600),
        )
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert!(client.get("deferred").await.unwrap().is_some());
    drop(client);
    off_runtime(move || drop((pool, consumer))).await;
}
