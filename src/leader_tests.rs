//! The successor hand-over, on the real clock with real threads: two
//! waiters on a bare [`Waitable`] (a sorted list of deadlines), so what is
//! checked is the protocol alone. Deadlines are hundreds of milliseconds
//! out, so both waiters are asleep long before the first is due.

use std::sync::Arc;
use std::thread;
use std::time::Duration;

use super::{Handoff, Leader, Signal, Waitable, Wake};
use crate::clock::{Clock, Nanos};
use crate::sync::Mutex;

#[derive(Default)]
struct Deadlines {
    leader: Leader,
    /// Sorted; the first is the head.
    items: Vec<Nanos>,
    /// Sleeps that ended, per waiter name.
    wakes: Vec<&'static str>,
}

thread_local! {
    static NAME: std::cell::Cell<&'static str> = const { std::cell::Cell::new("") };
}

impl Waitable for Deadlines {
    fn leader(&mut self) -> &mut Leader {
        &mut self.leader
    }
    fn head_deadline(&self) -> Option<Nanos> {
        self.items.first().copied()
    }
    fn second_deadline(&self) -> Option<Nanos> {
        self.items.get(1).copied()
    }
    fn is_closed(&self) -> bool {
        false
    }
    fn woke(&mut self) {
        self.wakes.push(NAME.with(|n| n.get()));
    }
}

struct Shared {
    state: Mutex<Deadlines>,
    signal: Signal,
}

const MS: Nanos = 1_000_000;

/// A waiter named `name`: waits for the head, takes it, and returns the
/// deadline it took, when, and who led right after it left.
fn taker(shared: &Arc<Shared>, name: &'static str) -> thread::JoinHandle<(Nanos, Nanos, bool)> {
    let shared = Arc::clone(shared);
    thread::spawn(move || {
        NAME.with(|n| n.set(name));
        let clock = Clock::Real;
        let mut state = Handoff::new(
            shared.state.lock(),
            &shared.signal,
            Duration::from_micros(20),
        );
        let Wake::Due(at) = state.wait_due(&clock, None) else {
            panic!("nothing closes or times out here");
        };
        let took = state.items.remove(0);
        drop(state); // hands the head on
        let led = !shared.state.lock().leader.is_none();
        (took, at, led)
    })
}

/// Waits (bounded) until `ready` holds for the state.
fn until(shared: &Shared, ready: impl Fn(&Deadlines) -> bool) {
    for _ in 0..2_000 {
        if ready(&shared.state.lock()) {
            return;
        }
        thread::sleep(Duration::from_millis(1));
    }
    panic!("the waiters did not go to sleep in 2 s");
}

fn setup(items: &[Nanos]) -> Arc<Shared> {
    Arc::new(Shared {
        state: Mutex::new(Deadlines {
            items: items.to_vec(),
            ..Deadlines::default()
        }),
        signal: Signal::new(),
    })
}

#[test]
fn the_successor_leads_without_being_woken() {
    let now = Clock::Real.now();
    let (d1, d2) = (now + 600 * MS, now + 900 * MS);
    let shared = setup(&[d1, d2]);
    let a = taker(&shared, "a");
    until(&shared, |s| !s.leader.is_none());
    let b = taker(&shared, "b");
    until(&shared, |s| s.leader.successor.is_some());

    let (took_a, at_a, led_after_a) = a.join().unwrap();
    let (took_b, at_b, _) = b.join().unwrap();
    assert_eq!((took_a, took_b), (d1, d2));
    assert!(at_a >= d1 && at_b >= d2, "never early");
    assert!(led_after_a, "the successor leads once the leader left");
    // b slept once: as successor, made leader in its sleep, woken by its
    // own timer. A wake-up from a leaves a second sleep.
    let wakes = shared.state.lock().wakes.clone();
    assert_eq!(wakes.iter().filter(|&&w| w == "b").count(), 1, "{wakes:?}");
}

#[test]
fn a_successor_timed_too_late_is_woken_instead() {
    let now = Clock::Real.now();
    let (d1, d2) = (now + 600 * MS, now + 1_000 * MS);
    let shared = setup(&[d1, d2]);
    let a = taker(&shared, "a");
    until(&shared, |s| !s.leader.is_none());
    let b = taker(&shared, "b");
    until(&shared, |s| s.leader.successor.is_some());
    // A new second item, earlier than the successor's timer; not a new
    // head, so nobody is signalled now (Java's `offer`).
    let between = now + 700 * MS;
    shared.state.lock().items.insert(1, between);

    let (took_a, _, _) = a.join().unwrap();
    let (took_b, at_b, _) = b.join().unwrap();
    assert_eq!((took_a, took_b), (d1, between));
    assert!(at_b >= between, "never early");
    // Promoted, b would sleep to d2, 300 ms late; woken, it is on time
    // (the bound is generous: a loaded 2-vCPU machine).
    assert!(
        at_b - between < 150 * MS,
        "late by {} ms",
        (at_b - between) / MS
    );
}
