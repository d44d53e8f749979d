//! The async durable API against real servers (issue 36, items 3, 4, 6):
//! the `AsyncClient`'s verbs on Redis, PostgreSQL and memory; the
//! transactional verbs on a sqlx and a tokio-postgres transaction (a
//! rollback never delivered, a commit never early by the store's clock);
//! and a runtime with one worker thread that keeps running while the
//! store stalls every call for 1.5 s, with an async handler pool busy on
//! it too. The servers are the root package's test supports: a private
//! redis-server and PostgreSQL cluster per test, on loopback.
#![cfg(all(
    feature = "tokio",
    feature = "redis",
    feature = "postgres",
    feature = "sqlx"
))]

mod async_support;
#[path = "../../tests/postgres_support/mod.rs"]
mod postgres_support;
#[path = "../../tests/redis_support/mod.rs"]
mod redis_support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_support::{off_runtime, pools, verbs, EVENTUALLY};
use postgres_support::Postgres;
use redis_support::Redis;
use schedpool::durable::{DurablePool, MemoryBackend, PostgresBackend, Put, RedisBackend};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_async_client_verbs_on_memory_redis_and_postgres() {
    let memory = MemoryBackend::new();
    let (p, c) = pools(|| memory.clone());
    assert!(format!("{:?}", p.async_client()).contains("in memory"));
    verbs(p, c).await;

    let redis = tokio::task::spawn_blocking(Redis::start).await.unwrap();
    let url = redis.url();
    let (p, c) = tokio::task::spawn_blocking(move || {
        pools(|| RedisBackend::connect(&url, "async-verbs").unwrap())
    })
    .await
    .unwrap();
    assert!(format!("{:?}", p.async_client()).contains("redis (tokio)"));
    verbs(p, c).await;

    let pg = tokio::task::spawn_blocking(Postgres::start).await.unwrap();
    let params = pg.params();
    let (p, c) = tokio::task::spawn_blocking(move || {
        pools(|| PostgresBackend::connect(&params, "async-verbs").unwrap())
    })
    .await
    .unwrap();
    assert!(format!("{:?}", p.async_client()).contains("tokio-postgres"));
    verbs(p, c).await;
    off_runtime(move || drop((redis, pg))).await;
}

/// What a consumer's handler saw: (id, deadline_ms, claimed_ms).
type Seen = Arc<std::sync::Mutex<Vec<(String, u64, u64)>>>;

/// The transactional verbs on a sqlx transaction and a tokio-postgres
/// transaction: a rolled-back schedule is never delivered, a rolled-back
/// cancel leaves its item, a committed schedule is delivered once and no
/// earlier than its deadline by the store's clock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schedule_in_and_cancel_in_on_sqlx_and_tokio_postgres_transactions() {
    let pg = tokio::task::spawn_blocking(Postgres::start).await.unwrap();
    let params = pg.params();
    let seen: Seen = Arc::default();
    let s = seen.clone();
    let (pool, consumer) = tokio::task::spawn_blocking(move || {
        let producer = DurablePool::builder(PostgresBackend::connect(&params, "tx").unwrap())
            .threads(0)
            .build()
            .unwrap();
        let consumer = DurablePool::builder(PostgresBackend::connect(&params, "tx").unwrap())
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
    })
    .await
    .unwrap();
    let client = pool.async_client();
    let delay = Duration::from_millis(300);

    // sqlx: a pool of connections, as an axum service has.
    let db = sqlx::PgPool::connect(&pg.url()).await.unwrap();
    let mut tx = db.begin().await.unwrap();
    client
        .schedule_in(&mut tx, "close", "sqlx-rolled-back", &1u64, Duration::ZERO)
        .await
        .unwrap();
    tx.rollback().await.unwrap();
    let mut tx = db.begin().await.unwrap();
    let put = client
        .schedule_in(&mut tx, "close", "sqlx-committed", &2u64, delay)
        .await
        .unwrap();
    assert!(matches!(put, Put::Inserted { .. }));
    assert!(
        client.get("sqlx-committed").await.unwrap().is_none(),
        "not visible before the commit"
    );
    tx.commit().await.unwrap();
    // On a plain pooled connection (autocommit).
    let mut conn = db.acquire().await.unwrap();
    let put_auto = client
        .schedule_if_absent_in(&mut *conn, "close", "sqlx-autocommit", &3u64, delay)
        .await
        .unwrap();
    assert!(matches!(put_auto, Put::Inserted { .. }));
    drop(conn);

    // tokio-postgres.
    let (mut tp, connection) = tokio_postgres::connect(&pg.params(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let tx = tp.transaction().await.unwrap();
    let mut tx = tx;
    client
        .schedule_in(&mut tx, "close", "tp-rolled-back", &4u64, Duration::ZERO)
        .await
        .unwrap();
    tx.rollback().await.unwrap();
    let mut tx = tp.transaction().await.unwrap();
    let put_tp = client
        .schedule_in(&mut tx, "close", "tp-committed", &5u64, delay)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    // A cancel rolled back leaves the item; one committed removes it.
    client
        .schedule("close", "to-cancel", &6u64, Duration::from_secs(3600))
        .await
        .unwrap();
    let mut tx = tp.transaction().await.unwrap();
    assert!(client.cancel_in(&mut tx, "to-cancel").await.unwrap());
    tx.rollback().await.unwrap();
    assert!(
        client.get("to-cancel").await.unwrap().is_some(),
        "rolled back: still there"
    );
    let mut tx = db.begin().await.unwrap();
    assert!(client.cancel_in(&mut tx, "to-cancel").await.unwrap());
    tx.commit().await.unwrap();
    assert!(client.get("to-cancel").await.unwrap().is_none());

    let deadline = Instant::now() + EVENTUALLY;
    while seen.lock().unwrap().len() < 3 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Time for a rolled-back item to show up, were it stored.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut got = seen.lock().unwrap().clone();
    got.sort();
    let ids: Vec<&str> = got.iter().map(|(id, _, _)| id.as_str()).collect();
    assert_eq!(ids, ["sqlx-autocommit", "sqlx-committed", "tp-committed"]);
    for (id, deadline_ms, claimed_ms) in &got {
        assert!(
            claimed_ms >= deadline_ms,
            "{id} claimed early: {claimed_ms} < {deadline_ms}"
        );
    }
    let deadline_of = |id: &str| got.iter().find(|g| g.0 == id).unwrap().1;
    assert_eq!(put.deadline_ms(), Some(deadline_of("sqlx-committed")));
    assert_eq!(put_tp.deadline_ms(), Some(deadline_of("tp-committed")));
    drop(client);
    off_runtime(move || drop((pool, consumer, pg))).await;
}

/// A runtime with one worker thread keeps running while the store stalls
/// every call: Redis paused for writes (`CLIENT PAUSE`), a PostgreSQL row
/// held locked by another transaction, each for 1.5 s, with 20 async
/// client calls and 20 async handler futures on the runtime meanwhile. A
/// blocking call on the runtime's one thread would stop the ticker for the
/// whole stall; it must tick on.
#[tokio::test(flavor = "current_thread")]
async fn a_one_thread_runtime_makes_progress_while_the_store_stalls() {
    let redis = tokio::task::spawn_blocking(Redis::start).await.unwrap();
    let pg = tokio::task::spawn_blocking(Postgres::start).await.unwrap();
    let (url, params) = (redis.url(), pg.params());
    let runtime = tokio::runtime::Handle::current();
    let handled = Arc::new(AtomicUsize::new(0));
    let h = handled.clone();
    let (on_redis, on_pg, worker) = tokio::task::spawn_blocking(move || {
        let producer = |b: Box<dyn Fn() -> DurablePool>| Arc::new(b());
        let on_redis = producer(Box::new(move || {
            DurablePool::builder(RedisBackend::connect(&url, "stall").unwrap())
                .threads(0)
                .build()
                .unwrap()
        }));
        let on_pg = producer(Box::new(move || {
            DurablePool::builder(PostgresBackend::connect(&params, "stall").unwrap())
                .threads(0)
                .build()
                .unwrap()
        }));
        // Async handlers on the same one-thread runtime.
        let worker = DurablePool::builder(MemoryBackend::new())
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
        (on_redis, on_pg, Arc::new(worker))
    })
    .await
    .unwrap();
    for i in 0..20 {
        worker
            .schedule("tick", &format!("t{i}"), &(), Duration::ZERO)
            .unwrap();
    }
    let ticks = Arc::new(AtomicUsize::new(0));
    let t = ticks.clone();
    let ticker = tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_millis(1)).await;
            t.fetch_add(1, Ordering::Relaxed);
        }
    });
    // The stalls.
    let mut paused = redis.conn();
    let _: () = redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(1500)
        .arg("WRITE")
        .query(&mut paused)
        .unwrap();
    let pg_params = pg.params();
    let locker = std::thread::spawn(move || {
        let mut db = postgres::Client::connect(&pg_params, postgres::NoTls).unwrap();
        let mut tx = db.transaction().unwrap();
        tx.execute(
            "INSERT INTO schedpool.items (queue, id, state, score, deadline, due, token, envelope) \
             VALUES ('stall', 'locked', 0, 0, 0, 0, 0, '\\x01'::bytea)",
            &[],
        )
        .unwrap();
        std::thread::sleep(Duration::from_millis(1500));
        tx.rollback().unwrap();
    });
    tokio::time::sleep(Duration::from_millis(50)).await; // the lock is taken
    let started = Instant::now();
    let before = ticks.load(Ordering::Relaxed);
    let mut calls = tokio::task::JoinSet::new();
    let (r, p) = (on_redis.async_client(), on_pg.async_client());
    for i in 0..10 {
        calls.spawn(r.schedule("job", &format!("r{i}"), &1u64, Duration::from_secs(60)));
        calls.spawn(p.schedule("job", "locked", &1u64, Duration::from_secs(60)));
    }
    let mut results = Vec::new();
    while let Some(done) = calls.join_next().await {
        results.push(done.unwrap());
    }
    let stalled = started.elapsed();
    let during = ticks.load(Ordering::Relaxed) - before;
    ticker.abort();
    locker.join().unwrap();
    eprintln!(
        "20 calls took {stalled:?} while the store stalled; the ticker ticked {during} times; \
         {} handler futures finished",
        handled.load(Ordering::SeqCst)
    );
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    assert!(
        stalled >= Duration::from_millis(1_000),
        "the calls were stalled: {stalled:?}"
    );
    assert!(
        during >= 50,
        "a one-thread runtime ticked only {during} times in {stalled:?}: something blocked it"
    );
    assert_eq!(
        handled.load(Ordering::SeqCst),
        20,
        "the handlers ran meanwhile"
    );
    drop((r, p));
    off_runtime(move || drop((on_redis, on_pg, worker, redis, pg))).await;
}
