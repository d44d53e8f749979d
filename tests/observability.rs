//! The tracing contract of API.md: a `task` span per run with `id`, `kind`,
//! `lateness_us`; an ERROR event with the panic message; DEBUG on
//! rejection, INFO on shutdown; a WARN on pool starvation. And a subscriber
//! is user code: one that reads the pool it observes does not deadlock.

use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use schedpool::ScheduledThreadPool;
use tracing::Level;

mod trace_support;
use trace_support::{Recorder, Seen};

fn field<'a>(s: &'a Seen, name: &str) -> Option<&'a str> {
    s.field(name)
}

#[test]
fn spans_and_events_follow_the_contract() {
    let capture = Recorder::default();
    // Global: worker threads must see it too. No other test in this file sets one.
    tracing::subscriber::set_global_default(capture.clone()).unwrap();

    let pool = ScheduledThreadPool::builder()
        .core_threads(1)
        .starvation_threshold(Duration::from_millis(5))
        .build()
        .unwrap();
    let once = pool
        .submit(|| tracing::info!(target: "user", "inside the task"))
        .unwrap();
    let once_id = once.id();
    once.join().unwrap();
    let rate = pool
        .at_fixed_rate(Duration::from_millis(1))
        .max_runs(1)
        .start(|| ())
        .unwrap();
    rate.join().unwrap();
    let delay = pool
        .with_fixed_delay(Duration::from_millis(1))
        .max_runs(1)
        .start(|| ())
        .unwrap();
    delay.join().unwrap();
    let bad = pool.submit(|| -> () { panic!("traced boom") }).unwrap();
    let _ = bad.join();
    // Starvation: a blocker holds the only worker while a task comes due.
    let blocker = pool
        .submit(|| std::thread::sleep(Duration::from_millis(30)))
        .unwrap();
    let starved = pool.schedule(|| (), Duration::from_millis(1)).unwrap();
    blocker.join().unwrap();
    starved.join().unwrap();
    pool.shutdown();
    assert!(pool.await_termination(Duration::from_secs(10)));
    assert!(pool.execute(|| ()).is_err());

    let seen = capture.seen();
    let spans: Vec<&Seen> = seen
        .iter()
        .filter(|s| s.kind == "span" && s.name == "task")
        .collect();
    assert!(spans.len() >= 6, "{spans:#?}");
    for s in &spans {
        assert!(s.target.starts_with("schedpool"), "{}", s.target);
        assert!(
            field(s, "id").is_some() && field(s, "lateness_us").is_some(),
            "{s:?}"
        );
    }
    let kinds: Vec<&str> = spans.iter().filter_map(|s| field(s, "kind")).collect();
    for k in ["\"once\"", "\"fixed_rate\"", "\"fixed_delay\""] {
        assert!(kinds.contains(&k), "kind {k} missing from {kinds:?}");
    }
    assert!(spans
        .iter()
        .any(|s| field(s, "id") == Some(&once_id.to_string())));
    let user = seen.iter().find(|s| s.target == "user").unwrap();
    assert_eq!(
        user.in_span.as_deref(),
        Some("task"),
        "the body runs inside the task span"
    );
    let panic = seen
        .iter()
        .find(|s| s.kind == "event" && s.level == Level::ERROR)
        .expect("an ERROR event");
    assert!(panic.target.starts_with("schedpool"));
    assert!(field(panic, "panic").unwrap().contains("traced boom"));
    assert!(
        seen.iter()
            .any(|s| s.level == Level::WARN && s.target.starts_with("schedpool")),
        "starvation WARN"
    );
    assert!(
        seen.iter().any(|s| s.level == Level::INFO
            && s.kind == "event"
            && s.target.starts_with("schedpool")),
        "shutdown INFO"
    );
    assert!(
        seen.iter()
            .any(|s| s.level == Level::DEBUG && s.target.starts_with("schedpool")),
        "rejection DEBUG"
    );
}

/// A `tracing` subscriber is user code: the "pool terminated" INFO event
/// must not be emitted under the pool lock, or a subscriber that reads the
/// pool it observes (a metrics layer calling `queue_len()`) self-deadlocks.
#[test]
fn a_subscriber_reading_the_pool_on_its_events_does_not_deadlock() {
    use std::sync::OnceLock;

    let cell = Arc::new(OnceLock::new());
    let pool = ScheduledThreadPool::new(1);
    cell.set(pool.clone()).ok().unwrap();
    let (tx, rx) = mpsc::channel();
    let layer_cell = cell.clone();
    std::thread::spawn(move || {
        // User code inside a subscriber: it reads the pool it observes.
        let subscriber = Recorder::with_callback(move |event| {
            if event.metadata().target().starts_with("schedpool") {
                if let Some(pool) = layer_cell.get() {
                    let _ = pool.queue_len();
                }
            }
        });
        tracing::subscriber::with_default(subscriber, || {
            // No worker was ever started: shutdown terminates the pool
            // itself, under its lock, on this thread.
            pool.shutdown();
        });
        tx.send(()).unwrap();
    });
    assert!(
        rx.recv_timeout(Duration::from_secs(3)).is_ok(),
        "shutdown() deadlocked: the subscriber ran under the pool lock"
    );
}
