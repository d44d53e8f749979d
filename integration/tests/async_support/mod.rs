//! What the async durable tests share: a producer and a consumer pool on
//! one store, every verb of the `AsyncClient` against them, and running a
//! sync pool's blocking calls off the runtime.

#![allow(dead_code)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use schedpool::durable::{DurableBackend, DurableError, DurablePool, Put, StoredState};

pub const EVENTUALLY: Duration = Duration::from_secs(30);

/// A producer-only pool on `backend`, and one that runs `fail` (always
/// failing, one attempt: dead-lettered at once).
pub fn pools<B: DurableBackend>(make: impl Fn() -> B) -> (Arc<DurablePool>, Arc<DurablePool>) {
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
pub async fn off_runtime(f: impl FnOnce() + Send + 'static) {
    tokio::task::spawn_blocking(f).await.unwrap();
}

pub async fn verbs(producer: Arc<DurablePool>, consumer: Arc<DurablePool>) {
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
    let rate = client
        .schedule_at_fixed_rate("close", "tick", &1u64, hour, hour)
        .await
        .unwrap();
    assert!(matches!(rate, Put::Inserted { .. }), "{rate:?}");
    let delayed = client
        .schedule_with_fixed_delay("close", "tick", &1u64, hour, hour)
        .await
        .unwrap();
    assert_eq!(delayed, Put::Exists, "a chain is started once");
    assert!(client.cancel("tick").await.unwrap());
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
    let err = client
        .schedule("close", "o-4", &1u64, hour)
        .await
        .unwrap_err();
    assert!(matches!(err, DurableError::Closed), "{err}");
    drop(client);
    off_runtime(move || drop(producer)).await;
}
