//! The tracing contract of API.md: a `task` span per run with `id`, `kind`,
//! `lateness_us`; an ERROR event with the panic message; DEBUG on
//! rejection, INFO on shutdown; a WARN on pool starvation. And a subscriber
//! is user code: one that reads the pool it observes does not deadlock.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use schedpool::ScheduledThreadPool;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

#[derive(Debug, Clone)]
struct Seen {
    kind: &'static str, // "span" or "event"
    level: Level,
    target: String,
    name: String,
    fields: Vec<(String, String)>,
    in_span: Option<String>,
}

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<Seen>>>);

struct Fields(Vec<(String, String)>);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0
            .push((field.name().to_string(), format!("{value:?}")));
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, _id: &Id, _ctx: Context<'_, S>) {
        let mut f = Fields(Vec::new());
        attrs.record(&mut f);
        let m = attrs.metadata();
        self.0.lock().unwrap().push(Seen {
            kind: "span",
            level: *m.level(),
            target: m.target().to_string(),
            name: m.name().to_string(),
            fields: f.0,
            in_span: None,
        });
    }
    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut f = Fields(Vec::new());
        event.record(&mut f);
        let m = event.metadata();
        let in_span = ctx.event_span(event).map(|s| s.name().to_string());
        self.0.lock().unwrap().push(Seen {
            kind: "event",
            level: *m.level(),
            target: m.target().to_string(),
            name: m.name().to_string(),
            fields: f.0,
            in_span,
        });
    }
}

fn field<'a>(s: &'a Seen, name: &str) -> Option<&'a str> {
    s.fields
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

#[test]
fn spans_and_events_follow_the_contract() {
    let capture = Capture::default();
    let subscriber = tracing_subscriber::registry().with(capture.clone());
    // Global: worker threads must see it too. No other test in this file sets one.
    tracing::subscriber::set_global_default(subscriber).unwrap();

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

    let seen = capture.0.lock().unwrap().clone();
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
    use tracing::{Event, Subscriber};
    use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

    struct ReadsPool(Arc<OnceLock<ScheduledThreadPool>>);
    impl<S: Subscriber> Layer<S> for ReadsPool {
        fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
            if event.metadata().target().starts_with("schedpool") {
                if let Some(pool) = self.0.get() {
                    let _ = pool.queue_len();
                }
            }
        }
    }

    let cell = Arc::new(OnceLock::new());
    let pool = ScheduledThreadPool::new(1);
    cell.set(pool.clone()).ok().unwrap();
    let (tx, rx) = mpsc::channel();
    let layer_cell = cell.clone();
    std::thread::spawn(move || {
        let subscriber = tracing_subscriber::registry().with(ReadsPool(layer_cell));
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
