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

#[path = "../../tests/postgres_support/mod.rs"]
mod postgres_support;
#[path = "../../tests/redis_support/mod.rs"]
mod redis_support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use postgres_support::Postgres;
use redis_support::Redis;
use schedpool::durable::{
    DurableBackend, DurablePool, MemoryBackend, PostgresBackend, Put, RedisBackend, StoredState,
};

const EVENTUALLY: Duration = Duration::from_secs(30);

/// A producer-only pool on `backend`, and one that runs `fail` (always
/// failing, one attempt: dead-lettered at once).
fn pools<B: DurableBackend>(make: impl Fn() -> B) -> (Arc<DurablePool>, Arc<DurablePool>) {
    let producer = DurablePool::builder(make()).threads(0).build().unwrap();
    let consumer = DurablePool::builder(make())
        .threads(1)
        .max_attempts(1)
        .handler("fail", |_: &u64, _| Err("no such order".into()))
        .build()
        .unwrap();
    (Arc::new(producer), Arc::new(consumer))
}

/// Runs a sync pool's blocking call (and its drop) off the runtime: the
/// sync PostgreSQL client refuses to block a runtime thread.
async fn off_runtime(f: impl FnOnce() + Send + 'static) {
    tokio::task::spawn_blocking(f).await.unwrap();
}

async fn verbs(producer: Arc<DurablePool>, consumer: Arc<DurablePool>) {
    let client = producer.async_client();
    let hour = Duration::from_secs(3600);
    let put = client.schedule("close", "o-1", &7u64, hour).await.unwrap();
    assert!(matches!(put, Put::Inserted { .. }), "{put:?}");
    let again = client
        .schedule_if_absent("close", "o-1", &8u64, hour)
        .await
        .unwrap();
    assert_eq!(again, Put::Exists);
    let item = client.get("o-1").await.unwrap().expect("stored");
    assert_eq!(
        (item.kind.as_str(), item.state),
        ("close", StoredState::Pending)
    );
    assert_eq!(item.decode::<u64>().unwrap(), 7);
    assert_eq!(Some(item.deadline_ms), put.deadline_ms());
    assert!(client.get("o-2").await.unwrap().is_none());
    assert_eq!(client.counts().await.unwrap().pending, 1);
    assert!(client.cancel("o-1").await.unwrap());
    assert!(!client.cancel("o-1").await.unwrap());
    // A dead letter, made by the consumer.
    client
        .schedule("fail", "o-3", &3u64, Duration::ZERO)
        .await
        .unwrap();
    let deadline = Instant::now() + EVENTUALLY;
    while client.counts().await.unwrap().dead == 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    off_runtime(move || consumer.shutdown()).await;
    let dead = client.dead_letters(10).await.unwrap();
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert_eq!(dead[0].id, "o-3");
    assert_eq!(dead[0].error.as_deref(), Some("no such order"));
    assert!(client.requeue("o-3").await.unwrap());
    assert!(!client.requeue("o-3").await.unwrap(), "no longer dead");
    assert_eq!(
        client.get("o-3").await.unwrap().unwrap().state,
        StoredState::Pending
    );
    assert!(client.cancel("o-3").await.unwrap());
    assert!(!client.purge("o-3").await.unwrap());
    // A closed pool's client refuses, as the pool does.
    let p = producer.clone();
    off_runtime(move || p.shutdown()).await;
    assert!(client.schedule("close", "o-4", &1u64, hour).await.is_err());
    drop(client);
    off_runtime(move || drop(producer)).await;
}

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
