//! A `tracing` subscriber that records every span and event it sees, for
//! the tests of the crate's tracing contract. Written against `tracing`
//! alone (the library's own dependency), so the root package needs no
//! `tracing-subscriber`.
//!
//! Invariants: span ids are unique per `Recorder`; a thread's stack of
//! entered spans is kept per thread, so an event is attributed to the span
//! its own thread is in (or to its explicit parent).
#![allow(dead_code)]

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// One span (at its creation) or one event.
#[derive(Debug, Clone)]
pub struct Seen {
    /// `"span"` or `"event"`.
    pub kind: &'static str,
    pub level: Level,
    pub target: String,
    pub name: String,
    /// Every field, its value as `{:?}` prints it (so a `&str` value keeps
    /// its quotes; a `message` has none).
    pub fields: Vec<(String, String)>,
    /// For an event: the name of the span it happened in.
    pub in_span: Option<String>,
}

impl Seen {
    /// The value of field `name`, if it has one.
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

type OnEvent = Box<dyn Fn(&Event<'_>) + Send + Sync>;

/// The recording subscriber; clones share what they saw.
#[derive(Clone, Default)]
pub struct Recorder(Arc<Inner>);

#[derive(Default)]
struct Inner {
    seen: Mutex<Vec<Seen>>,
    span_names: Mutex<HashMap<u64, &'static str>>,
    next_id: AtomicU64,
    on_event: Option<OnEvent>,
}

thread_local! {
    static ENTERED: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

impl Recorder {
    /// A recorder that also calls `f` on every event (user code inside a
    /// subscriber, as a metrics layer would be).
    pub fn with_callback(f: impl Fn(&Event<'_>) + Send + Sync + 'static) -> Self {
        Recorder(Arc::new(Inner {
            on_event: Some(Box::new(f)),
            ..Inner::default()
        }))
    }

    /// Everything seen so far, in order.
    pub fn seen(&self) -> Vec<Seen> {
        self.0.seen.lock().unwrap().clone()
    }

    /// The events seen so far at `level` with a target starting `target`.
    pub fn events(&self, level: Level, target: &str) -> Vec<Seen> {
        self.seen()
            .into_iter()
            .filter(|s| s.kind == "event" && s.level == level && s.target.starts_with(target))
            .collect()
    }
}

struct Fields(Vec<(String, String)>);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0
            .push((field.name().to_string(), format!("{value:?}")));
    }
}

impl Subscriber for Recorder {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        let id = self.0.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let mut f = Fields(Vec::new());
        attrs.record(&mut f);
        let m = attrs.metadata();
        self.0.span_names.lock().unwrap().insert(id, m.name());
        self.0.seen.lock().unwrap().push(Seen {
            kind: "span",
            level: *m.level(),
            target: m.target().to_string(),
            name: m.name().to_string(),
            fields: f.0,
            in_span: None,
        });
        Id::from_u64(id)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let parent = if event.is_contextual() {
            ENTERED.with(|s| s.borrow().last().copied())
        } else {
            event.parent().map(Id::into_u64)
        };
        let in_span = parent.and_then(|id| {
            let names = self.0.span_names.lock().unwrap();
            names.get(&id).map(|n| n.to_string())
        });
        let mut f = Fields(Vec::new());
        event.record(&mut f);
        let m = event.metadata();
        self.0.seen.lock().unwrap().push(Seen {
            kind: "event",
            level: *m.level(),
            target: m.target().to_string(),
            name: m.name().to_string(),
            fields: f.0,
            in_span,
        });
        if let Some(f) = &self.0.on_event {
            f(event);
        }
    }

    fn enter(&self, id: &Id) {
        ENTERED.with(|s| s.borrow_mut().push(id.into_u64()));
    }

    fn exit(&self, id: &Id) {
        ENTERED.with(|s| {
            let mut s = s.borrow_mut();
            if let Some(at) = s.iter().rposition(|&e| e == id.into_u64()) {
                s.remove(at);
            }
        });
    }
}
