//! `durable::Json<T>` (feature `serde`): round trip through a durable queue,
//! and a foreign or corrupt entry is dead-lettered with a Format reason,
//! never a panic.
#![cfg(feature = "serde")]

use std::time::Duration;

use schedpool::durable::{DurableQueue, Json, MemoryBackend, Payload};

type Order = (u64, String);

#[test]
fn json_value_round_trips_through_a_queue() {
    let q: DurableQueue<Json<Order>> = DurableQueue::new(MemoryBackend::new());
    q.put("o1", &Json((42, "ada".into())), Duration::ZERO)
        .unwrap();
    let d = q
        .poll_timeout(Duration::from_secs(5))
        .unwrap()
        .expect("due item");
    assert_eq!(d.value().0, (42, "ada".to_string()));
    d.ack().unwrap();
}

#[test]
fn encoding_is_tag_one_then_json() {
    let mut out = Vec::new();
    Json((7u64, "x".to_string())).encode(&mut out);
    assert_eq!(out, b"\x01[7,\"x\"]");
}

#[test]
fn unknown_tag_empty_and_bad_json_are_errors() {
    assert!(Json::<Order>::decode(b"").unwrap_err().contains("empty"));
    assert!(Json::<Order>::decode(b"\x02[7,\"x\"]")
        .unwrap_err()
        .contains("unknown format tag 2"));
    assert!(Json::<Order>::decode(b"\x01{not json").is_err());
    assert!(Json::<Order>::decode(b"\x01{\"a\":1}").is_err());
}

#[test]
fn foreign_entry_is_dead_lettered_as_format_error() {
    let backend = MemoryBackend::new();
    let raw: DurableQueue<Vec<u8>> = DurableQueue::new(backend.clone());
    raw.put("foreign", &b"\x02whatever".to_vec(), Duration::ZERO)
        .unwrap();
    raw.put("corrupt", &b"\x01{oops".to_vec(), Duration::ZERO)
        .unwrap();
    let q: DurableQueue<Json<Order>> = DurableQueue::new(backend);
    assert!(q
        .poll_timeout(Duration::from_millis(200))
        .unwrap()
        .is_none());
    let dead = q.dead_letters(10).unwrap();
    assert_eq!(dead.len(), 2, "{dead:?}");
    for d in dead {
        let (id, err) = (&d.id, d.value.as_ref().expect_err(&d.id));
        assert!(
            matches!(err, schedpool::durable::DurableError::Format(_)),
            "{id}: {err}"
        );
    }
}
