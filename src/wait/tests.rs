//! The successor hand-over, on the real clock with real threads: two
//! waiters on a bare [`Waitable`] (a sorted list of deadlines), so what is
//! checked is the protocol alone. Deadlines are hundreds of milliseconds
//! out, so both waiters are asleep long before the first is due.

use std::sync::Arc;
use std::thread;
use std::time::Duration;

use super::{Handoff, Leader, Signal, Waitable, Wake};
use crate::base::clock::{Clock, Nanos};
use crate::base::sync::Mutex;

#[derive(Default)]
struct Deadlines {
    leader: Leader,
    /// Sorted; the first is the head.
    items: Vec<Nanos>,
    /// Sleeps that ended: the waiter's name and when.
    wakes: Vec<(&'static str, Nanos)>,
    /// What [`Waitable::owes_wake`] answers next.
    owes: bool,
    closed: bool,
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
        self.closed
    }
    fn woke(&mut self) {
        self.wakes.push((NAME.with(|n| n.get()), Clock::Real.now()));
    }
    fn owes_wake(&mut self) -> bool {
        std::mem::take(&mut self.owes)
    }
}

struct Shared {
    state: Mutex<Deadlines>,
    signal: Signal,
}

const MS: Nanos = 1_000_000;

/// A waiter named `name`: waits for the head, takes it, and returns the
/// deadline it took, when, and who led right after it left.
fn taker(shared: &Arc<Shared>, name: &'static str) -> Taker {
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

type Taker = thread::JoinHandle<(Nanos, Nanos, bool)>;

fn shared(items: &[Nanos], early: Nanos) -> Arc<Shared> {
    let mut leader = Leader::default();
    leader.latency.early = early;
    Arc::new(Shared {
        state: Mutex::new(Deadlines {
            leader,
            items: items.to_vec(),
            ..Deadlines::default()
        }),
        signal: Signal::new(),
    })
}

/// Two waiters on `items`: `a` asleep as the leader, then `b` asleep as
/// the successor. Both wake `early` before their deadlines.
fn leader_and_successor(items: &[Nanos], early: Nanos) -> (Arc<Shared>, Taker, Taker) {
    let shared = shared(items, early);
    let a = taker(&shared, "a");
    until(&shared, |s| !s.leader.is_none());
    let b = taker(&shared, "b");
    until(&shared, |s| s.leader.successor.is_some());
    (shared, a, b)
}

/// How many of `name`'s sleeps ended.
fn wakes_of(shared: &Shared, name: &str) -> Vec<Nanos> {
    let state = shared.state.lock();
    state
        .wakes
        .iter()
        .filter(|w| w.0 == name)
        .map(|w| w.1)
        .collect()
}

#[test]
fn the_successor_leads_without_being_woken() {
    let now = Clock::Real.now();
    let (d1, d2) = (now + 600 * MS, now + 900 * MS);
    let (shared, a, b) = leader_and_successor(&[d1, d2], 0);

    let (took_a, at_a, led_after_a) = a.join().unwrap();
    let (took_b, at_b, _) = b.join().unwrap();
    assert_eq!((took_a, took_b), (d1, d2));
    assert!(at_a >= d1 && at_b >= d2, "never early");
    assert!(led_after_a, "the successor leads once the leader left");
    // b slept once: as successor, made leader in its sleep, woken by its
    // own timer. A wake-up from a leaves a second sleep.
    assert_eq!(wakes_of(&shared, "b").len(), 1);
}

#[test]
fn a_successor_made_leader_and_woken_early_spins_to_the_head() {
    // Both wake 100 ms early (a learned wake-up delay, exaggerated so the
    // early wake is unmistakable, and wide enough that a loaded machine's
    // late timer still fires before d2) and must spin the rest, never run
    // early.
    let early = 100 * MS;
    let now = Clock::Real.now();
    let (d1, d2) = (now + 600 * MS, now + 900 * MS);
    let (shared, a, b) = leader_and_successor(&[d1, d2], early);

    let (_, at_a, _) = a.join().unwrap();
    let (took_b, at_b, _) = b.join().unwrap();
    assert_eq!(took_b, d2);
    assert!(at_a >= d1 && at_b >= d2, "never early");
    // One sleep, ended by its timer about 100 ms before d2; the rest was a
    // spin. Without the spin b would sleep again as leader: two wakes. On
    // a machine so loaded that a timer fired more than CONTENDED_WAKE late,
    // spinning is off (the quiet time is set), and b sleeps to d2 instead.
    let wakes = wakes_of(&shared, "b");
    // (A loaded spell, started by a timer over 1 ms late on a busy
    // machine, turns spinning off too.)
    let quiet = {
        let state = shared.state.lock();
        state.leader.load.quiet_until.is_some() || state.leader.load.loaded_until.is_some()
    };
    if quiet {
        // (Either taker's late timer may have turned it off.)
        assert!(matches!(wakes.len(), 1 | 2), "{wakes:?}");
    } else {
        assert_eq!(wakes.len(), 1, "{wakes:?}");
    }
    assert!(wakes[0] < d2, "woke {} ms after d2", (wakes[0] - d2) / MS);
}

#[test]
fn a_successor_timed_too_late_is_woken_instead() {
    let now = Clock::Real.now();
    let (d1, d2) = (now + 600 * MS, now + 1_000 * MS);
    let (shared, a, b) = leader_and_successor(&[d1, d2], 0);
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

/// A timed wake-up far later than an idle machine's says the cores are
/// taken: spinning stops for a while, then comes back. An ordinary one
/// changes nothing.
#[test]
fn a_late_wake_up_turns_spinning_off_for_a_while() {
    let mut leader = Leader::default();
    assert!(!leader.load.cores_taken(), "a new leader may spin");
    assert!(!leader.woke_late(40_000, true), "40 µs late: an idle vCPU");
    assert!(!leader.load.cores_taken());
    assert!(leader.woke_late(crate::wait::load::CONTENDED_WAKE + 1, true));
    leader.load.loaded_until = None; // (the machine's load may have started one)
    assert!(
        leader.load.cores_taken(),
        "spinning is off after a late wake-up"
    );
    leader.load.quiet_until = Some(std::time::Instant::now());
    thread::sleep(Duration::from_millis(1));
    assert!(
        !leader.load.cores_taken(),
        "and on again once the quiet time passed"
    );
    assert_eq!(leader.load.quiet_until, None);
}

/// A spin that shares the cores with many busy threads is descheduled, and
/// says so; a kicked spin returns at once and does not.
#[test]
fn a_spin_reports_being_descheduled() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Instant;
    // Four busy threads per core: the scheduler must take turns within the
    // spin's 300 ms (its slices are a few ms).
    let cores = thread::available_parallelism().map_or(2, |n| n.get());
    let stop = Arc::new(AtomicBool::new(false));
    let busy: Vec<_> = (0..4 * cores)
        .map(|_| {
            let stop = Arc::clone(&stop);
            thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })
        })
        .collect();
    let kick = AtomicBool::new(false);
    let preempted =
        crate::wait::spin::spin_until(&kick, Instant::now() + Duration::from_millis(300));
    stop.store(true, Ordering::Relaxed);
    for b in busy {
        b.join().unwrap();
    }
    assert!(
        preempted,
        "a spin that shared the cores was not seen descheduled"
    );

    let kick = AtomicBool::new(true);
    assert!(
        !crate::wait::spin::spin_until(&kick, Instant::now() + Duration::from_secs(1)),
        "a kicked spin returns at once"
    );
}

/// A wake-up [`crate::wait::load::LOADED_WAKE`] late starts a loaded spell only if other
/// threads held the CPUs (not a paused vCPU); the spell ends by itself.
#[test]
fn a_loaded_spell_starts_only_on_a_busy_host_and_ends() {
    let mut leader = Leader::default();
    assert!(!leader.load.loaded());
    leader.load.note_load(|| false);
    assert!(!leader.load.loaded(), "nothing else was runnable: no spell");
    leader.load.note_load(|| true);
    assert!(leader.load.loaded(), "other threads held the CPUs");
    assert!(leader.load.cores_taken(), "nobody spins in a loaded spell");
    let now = Clock::Real.now();
    assert!(leader.load.loaded_at(now));
    leader.load.loaded_until = Some(crate::base::clock::to_instant(now));
    assert!(!leader.load.loaded_at(now + MS));
    thread::sleep(Duration::from_millis(1));
    assert!(!leader.load.loaded(), "the spell ended");
    assert_eq!(leader.load.loaded_until, None);
}

/// A waiter that follows a leader that never wakes (one the scheduler left
/// runnable behind another process): on a loaded host it times the head
/// itself and takes it; otherwise it times the second item, and only then
/// finds the head.
fn follower_of_a_stalled_leader(loaded: bool) -> (Nanos, Nanos, Nanos) {
    let now = Clock::Real.now();
    let (d1, d2) = (now + 300 * MS, now + 900 * MS);
    let shared = shared(&[d1, d2], 0);
    {
        let mut state = shared.state.lock();
        state.leader.current = Some(u64::MAX); // never wakes
        if loaded {
            state.leader.load.note_load(|| true);
        }
    }
    let b = taker(&shared, "b");
    let (took, at, _) = b.join().unwrap();
    assert_eq!(took, d1);
    assert!(at >= d1, "never early");
    (d1, d2, at)
}

#[test]
fn in_a_loaded_spell_the_successor_takes_the_head_of_a_stalled_leader() {
    let (d1, _, at) = follower_of_a_stalled_leader(true);
    // (Generous: a loaded 2-vCPU machine.)
    assert!(at - d1 < 250 * MS, "late by {} ms", (at - d1) / MS);
}

#[test]
fn outside_a_loaded_spell_the_successor_times_the_second_item() {
    let (_, d2, at) = follower_of_a_stalled_leader(false);
    assert!(at >= d2, "it woke {} ms before d2", (d2 - at) / MS);
}

/// Only a wake-up over [`crate::wait::load::LOADED_WAKE`] late reads the load, and not
/// again within a second of a renewal; a spell turns spinning off at once.
#[test]
fn only_a_wake_up_a_millisecond_late_probes_the_load() {
    let mut leader = Leader::default();
    let mut probed = false;
    let off = leader.woke_late_probing(crate::wait::load::LOADED_WAKE - 1, false, || {
        probed = true;
        true
    });
    assert!(!off && !probed && !leader.load.loaded());
    assert!(!leader.woke_late_probing(crate::wait::load::LOADED_WAKE + 1, false, || false));
    assert!(!leader.load.loaded(), "nothing else was runnable: no spell");
    assert!(
        leader.woke_late_probing(crate::wait::load::LOADED_WAKE + 1, false, || true),
        "spinning is off from the wake-up that starts a spell"
    );
    assert!(leader.load.loaded());
    let mut probed = false;
    leader.woke_late_probing(crate::wait::load::LOADED_WAKE + 1, false, || {
        probed = true;
        true
    });
    assert!(
        !probed,
        "a spell renewed within the second is not probed again"
    );
}

/// A leaver that owes a signal (the pool's published wake time counted on
/// it) wakes a sleeping follower even when nothing is left to time: other
/// threads emptied the state without the lock (the pool's ready batch).
/// Without the owed signal the follower sleeps on, untimed.
#[test]
fn a_leaver_that_owes_a_signal_wakes_a_follower_with_nothing_left() {
    let shared = shared(&[Clock::Real.now() + 10_000 * MS], 0);
    let waiter = |name: &'static str| {
        let shared = Arc::clone(&shared);
        thread::spawn(move || {
            NAME.with(|n| n.set(name));
            let mut state = Handoff::new(shared.state.lock(), &shared.signal, Duration::ZERO);
            let wake = state.wait_due(&Clock::Real, None);
            if let Wake::Due(_) = wake {
                // Took the head, and the rest went meanwhile.
                state.items.clear();
                state.owes = true;
            }
            wake
        })
    };
    let a = waiter("a");
    until(&shared, |s| !s.leader.is_none());
    let b = waiter("b");
    // b follows, untimed (no second item, so no successor).
    thread::sleep(Duration::from_millis(50));
    {
        // The head becomes due: whoever is woken takes it.
        let mut state = shared.state.lock();
        state.items[0] = Clock::Real.now();
        state.leader.clear();
        shared.signal.cv.notify_one();
    }
    for _ in 0..2_000 {
        if shared.state.lock().wakes.len() >= 2 {
            break;
        }
        thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(
        shared.state.lock().wakes.len(),
        2,
        "the follower left asleep: the owed signal was not sent"
    );
    shared.state.lock().closed = true;
    shared.signal.cv.notify_all();
    let mut wakes = [a.join().unwrap(), b.join().unwrap()];
    wakes.sort_by_key(|w| matches!(w, Wake::Closed));
    assert!(matches!(wakes, [Wake::Due(_), Wake::Closed]), "{wakes:?}");
}
