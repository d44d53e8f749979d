//! The leader/follower wait (Java `DelayQueue.take` / `poll(timeout)`,
//! POSA2), written once and used by both [`DelayQueue`](crate::DelayQueue)
//! and the pool's workers.
//!
//! # The protocol
//!
//! All waiting happens on one mutex and one condvar, with `notify_one` only.
//!
//! - At most one waiter, the *leader*, sleeps with a timeout: the head's
//!   deadline. At most one follower, the *successor*, sleeps with a timeout
//!   for the second item's deadline, when the state can name it
//!   ([`Waitable::second_deadline`]; both queues can) and the clock is
//!   real (a manual clock's waits are untimed; loom has no time); in a
//!   loaded spell it times the head's deadline instead, as a backup for a
//!   leader the scheduler leaves waiting ([`Leader::loaded`]). Every other
//!   waiter (a *follower*) sleeps untimed, except for its caller's own
//!   real-time limit.
//! - When the leader leaves with the head, the successor, if its timer
//!   fires no later than the new head's deadline, becomes the leader where
//!   it sleeps: nobody is woken (see [`Leader::successor`] for why).
//! - A push that creates a new, earlier head clears the leader and signals
//!   one waiter ([`Handoff::new_head`]); whoever wakes becomes leader with the
//!   shorter timeout. Waiters must accept gaining and losing leadership at
//!   any time (a replaced leader later wakes, sees it is not leader, and
//!   follows).
//! - A push that does not create a new head signals nobody (Java `offer`):
//!   whoever times the head, or the taker that leaves it untimed, is
//!   responsible for it. So a producer pays for at most one wake-up per
//!   burst; the takers wake each other in a cascade.
//! - Every exit from a wait — return with the head, timeout, closed, or a
//!   panic — goes through [`Handoff`]'s `Drop`, which signals one waiter
//!   when nobody is timing the head (no leader, no successor to promote,
//!   and the queue is not empty)
//!   or when the queue is closed (so closing wakes waiters one by one, each
//!   waking the next). Java's `finally { if (leader == null && q.peek() != null)
//!   available.signal(); }`.
//! - No reference to the head is held while sleeping: only its deadline, a
//!   number, is read.
//! - Two spins, neither of which changes who is woken (pool only, real
//!   clock; under loom the idle spin is a few yielding looks at the kick,
//!   and the leader never wakes early): a waiter that finds the queue empty spins
//!   for [`Builder::idle_spin`](crate::Builder::idle_spin) before it
//!   sleeps, and the leader asks to be woken early by the OS's usual delay
//!   ([`WakeLatency`]) and spins to the deadline. A spinner has released
//!   the lock and is registered in [`Leader`], so a signal meanwhile is a
//!   [`Signal`] kick instead of a notify; it re-checks everything under the
//!   lock when the spin ends.
//!
//! - Work may also arrive without the lock (the pool's
//!   [`crate::inbox`]): the waiter absorbs it before every look at the head
//!   ([`Waitable::absorb`]), and sleeps or spins only if the state agrees
//!   nothing arrived since ([`Waitable::may_sleep`], [`Waitable::spin_starts`]).
//!
//! Why no wake-up is lost: a waiter only sleeps after checking, under the
//! lock, that the head is not due. Anything that can make something due
//! earlier (a push of a new head, a manual clock's advance) changes state
//! under the same lock and then clears the leader and signals. Removals only
//! make the head later; the leader's timeout is then early, it wakes,
//! re-reads and sleeps again. When the leader leaves (for any reason) with
//! items left, the drop hands the role to the successor if its timer fires
//! by the new head's deadline, and signals a follower otherwise.
//! `docs/design.md` walks through each case.

use std::ops::{Deref, DerefMut};
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;

use crate::base::clock::{to_instant, Clock, Nanos};
use crate::base::sync::{AtomicBool, Condvar, MutexGuard, Ordering};

/// Who is timing the head, and whether a waiter is spinning.
#[derive(Debug, Default)]
pub(crate) struct Leader {
    current: Option<u64>,
    next_id: u64,
    /// A waiter is spinning outside the lock, watching [`Signal`]'s kick
    /// instead of sleeping on its condvar. At most one at a time.
    spinner: bool,
    /// The successor: a follower asleep with a timer for the second item
    /// (in a loaded spell, for the head), and when that timer fires. At
    /// most one.
    ///
    /// Why: in Java's protocol the leader, leaving with the head, wakes a
    /// follower to time the next one. On a small machine the woken thread
    /// is often placed on the waker's CPU and preempts it, so the task just
    /// taken starts only after the follower has re-armed its timer and gone
    /// back to sleep (about 12 µs of W4's median lateness on this VM). A
    /// successor armed in advance takes the role over where it sleeps.
    successor: Option<(u64, Nanos)>,
    /// How late the leader's timed waits return, to wake that much early.
    latency: WakeLatency,
    /// Until when nobody spins (see [`Leader::cores_taken`]).
    quiet_until: Option<Instant>,
    /// Until when the successor backs the leader up (see
    /// [`Leader::loaded`]).
    loaded_until: Option<Instant>,
}

/// The successor waits only for a second item due at least this far ahead:
/// one closer is due within the time a sleep and a wake-up take anyway, and
/// a stream of them (W7) made the timers cost more than they saved.
const SUCCESSOR_MIN_AHEAD: Nanos = 5_000;

/// A timed wake-up this late (the thread runnable, but another process's
/// time slice running to its end, or to the next scheduler tick) starts a
/// loaded spell (see [`Leader::loaded`]). An idle vCPU wakes a sleeper within
/// tens of microseconds.
const LOADED_WAKE: Nanos = 1_000_000;

/// How long a loaded spell lasts after the last wake-up [`LOADED_WAKE`]
/// late: a busy host tends to stay busy, and the spell costs little (a
/// second timer per head, later wake-ups).
const LOADED_SPELL: Duration = Duration::from_secs(10);

/// How often a spell's renewal reads the load, at most.
const LOADED_PROBE_GAP: Duration = Duration::from_secs(1);

/// A timed wake-up this late says the cores are taken: an idle vCPU wakes a
/// sleeper within tens of microseconds, and rarely a millisecond late
/// (500 µs fired on an idle VM here and cost W4's median 5x).
const CONTENDED_WAKE: Nanos = 2_000_000;

/// How long spinning stays off once the cores were seen taken.
const QUIET: Duration = Duration::from_millis(200);

/// How far one timed wake-up moves the estimate of the OS's wake-up delay.
const STEP: Nanos = 500;
/// The most the leader ever asks to be woken early (and so the longest it
/// spins to a deadline).
const MAX_EARLY: Nanos = 100_000;

/// How late the OS returns from the leader's timed waits: a running
/// estimate of the median (each wake-up moves it [`STEP`] towards its own
/// lateness, so a stall of milliseconds moves it no more than any other
/// wake-up). The leader asks to be woken that much before the deadline and
/// spins the rest when it arrives early: the OS's usual delay (tens of µs
/// from an idle vCPU, a few on bare metal) leaves the lateness of a typical
/// task, and the spin costs about the spread of that delay, not its size.
#[derive(Debug, Default)]
struct WakeLatency {
    /// How early to ask to be woken.
    early: Nanos,
}

impl WakeLatency {
    fn record(&mut self, late: Nanos) {
        self.early = if late > self.early {
            (self.early + STEP).min(MAX_EARLY)
        } else {
            self.early.saturating_sub(STEP)
        };
    }
}

/// How waiters are woken: the condvar, or the spinner's kick.
pub(crate) struct Signal {
    cv: Condvar,
    /// Set (instead of notifying) while a waiter spins; it sits alone on
    /// its cache line, which only the kicker and the spinner touch.
    kick: CachePadded<AtomicBool>,
}

impl Signal {
    pub(crate) fn new() -> Self {
        Signal {
            cv: Condvar::new(),
            kick: CachePadded::new(AtomicBool::new(false)),
        }
    }

    /// Wakes one waiter: the spinner if there is one (a store, no system
    /// call), else a sleeper. Called under the lock that guards `leader`.
    pub(crate) fn one(&self, leader: &Leader) {
        if leader.spinner {
            self.kick.store(true, Ordering::Release);
        } else {
            self.cv.notify_one();
        }
    }

    /// Ends the current spin (a submission that skipped the lock: see
    /// [`crate::inbox`]).
    pub(crate) fn kick(&self) {
        self.kick.store(true, Ordering::Release);
    }
}

impl Leader {
    /// Whether the cores were seen taken within the last [`QUIET`]: a spin
    /// was descheduled, or a timed wake-up came [`CONTENDED_WAKE`] late.
    /// Then nobody spins, and the leader sleeps to the deadline itself: a
    /// spinner on a busy machine only burns the slice another thread needs,
    /// and a thread that sleeps more is the one the scheduler runs first
    /// when its timer fires.
    fn cores_taken(&mut self) -> bool {
        self.loaded() || still(&mut self.quiet_until)
    }

    /// Whether a timed wake-up came [`LOADED_WAKE`] late within the last
    /// [`LOADED_SPELL`]. Then the successor times the head too, not only
    /// the second item: when the scheduler leaves the woken leader waiting
    /// behind another process for milliseconds (until that process's slice
    /// or the next tick ends), the successor, woken by its own timer on its
    /// own CPU, takes the head instead. The pool's workers also let the OS
    /// batch their wake-ups then ([`crate::pool`]'s timer slack).
    pub(crate) fn loaded(&mut self) -> bool {
        still(&mut self.loaded_until)
    }

    /// A timed wake-up came [`LOADED_WAKE`] late: starts or extends a loaded
    /// spell if `cpus_taken` says other threads were runnable (a busy host),
    /// not a paused vCPU or a stopped process.
    /// While a spell renewed within the last [`LOADED_PROBE_GAP`] is on, the
    /// probe (a file read, under the lock) is skipped.
    fn note_load(&mut self, cpus_taken: impl FnOnce() -> bool) {
        let now = Instant::now();
        let fresh = self.loaded_until.is_some_and(|until| {
            until.saturating_duration_since(now) > LOADED_SPELL.saturating_sub(LOADED_PROBE_GAP)
        });
        if !fresh && cpus_taken() {
            self.loaded_until = now.checked_add(LOADED_SPELL);
        }
    }

    /// [`loaded`](Self::loaded) at the real clock's reading `now`, without
    /// reading the clock (and without ending the spell).
    pub(crate) fn loaded_at(&self, now: Nanos) -> bool {
        self.loaded_until
            .is_some_and(|until| to_instant(now) < until)
    }

    /// See [`cores_taken`](Self::cores_taken).
    fn saw_cores_taken(&mut self) {
        self.quiet_until = Instant::now().checked_add(QUIET);
    }

    /// Records how late a timed wake-up came (`late`): the wake-up delay
    /// estimate, and whether it says the cores are taken.
    /// `estimate`: the wake-up was asked early by the estimate, so it
    /// updates it.
    fn woke_late(&mut self, late: Nanos, estimate: bool) -> bool {
        self.woke_late_probing(late, estimate, crate::base::load::cpus_taken)
    }

    /// [`woke_late`](Self::woke_late), with `cpus_taken` as the load probe.
    /// True if spinning is now off (the cores were seen taken, or a loaded
    /// spell is on).
    fn woke_late_probing(
        &mut self,
        late: Nanos,
        estimate: bool,
        cpus_taken: impl FnOnce() -> bool,
    ) -> bool {
        if estimate {
            self.latency.record(late);
        }
        if late > LOADED_WAKE && cfg!(not(loom)) {
            self.note_load(cpus_taken);
        }
        let taken = late > CONTENDED_WAKE && cfg!(not(loom));
        if taken {
            self.saw_cores_taken();
        }
        taken || self.loaded()
    }

    /// Forgets the leader: used when its timeout became too long.
    pub(crate) fn clear(&mut self) {
        self.current = None;
    }

    pub(crate) fn is_none(&self) -> bool {
        self.current.is_none()
    }

    /// Nobody leads and the head is due at `head`: makes the successor the
    /// leader if its timer fires by then (true), so nobody needs waking.
    fn promote_successor(&mut self, head: Nanos) -> bool {
        match self.successor {
            Some((id, wakes_at)) if self.current.is_none() && wakes_at <= head => {
                self.current = Some(id);
                self.successor = None;
                true
            }
            _ => false,
        }
    }
}

/// Whether a spell that lasts until `*until` is still on; forgets it once
/// over (so a spell that never started costs no clock reading).
fn still(until: &mut Option<Instant>) -> bool {
    match *until {
        Some(end) if Instant::now() < end => true,
        Some(_) => {
            *until = None;
            false
        }
        None => false,
    }
}

/// Lock-protected state that can be waited on.
pub(crate) trait Waitable {
    /// The leader slot.
    fn leader(&mut self) -> &mut Leader;
    /// The head's deadline, due or not.
    fn head_deadline(&self) -> Option<Nanos>;
    /// A deadline no later than the second item's, if there are two; with
    /// it, one follower times the second item as the successor. `None`
    /// (the default) keeps Java's protocol, except in a loaded spell, when
    /// the successor times the head ([`Leader::loaded`]).
    fn second_deadline(&self) -> Option<Nanos> {
        None
    }
    /// True when waiters should stop waiting (queue closed, pool stopping).
    fn is_closed(&self) -> bool;
    /// A waiter that finds nothing queued for this long (real time) stops
    /// waiting with [`Wake::TimedOut`] (a core-0 pool's keep-alive).
    fn keep_alive(&self) -> Option<Duration> {
        None
    }
    /// Moves work that arrived without the lock into the state (the pool's
    /// [`crate::inbox`]); called before every look at the head.
    fn absorb(&mut self) {}
    /// The waiter is about to sleep: false if work arrived without the lock
    /// meanwhile (absorb it and look again instead). A true must be
    /// followed by [`woke`](Self::woke).
    fn may_sleep(&mut self) -> bool {
        true
    }
    /// The waiter that [`may_sleep`](Self::may_sleep) let sleep is awake.
    fn woke(&mut self) {}
    /// A waiter starts spinning outside the lock (towards the head's
    /// deadline, or for a while if there is none). Fails (false) if work
    /// arrived without the lock: absorb it instead.
    fn spin_starts(&mut self) -> bool {
        true
    }
    /// The spin that [`spin_starts`](Self::spin_starts) began has ended.
    fn spin_ends(&mut self) {}
}

/// Why [`Handoff::wait_due`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wake {
    /// The head is due: pop it now, under this lock. Carries the clock
    /// reading that found it due (the run's start time, to the nanosecond
    /// that matters), so callers need not read the clock again.
    Due(Nanos),
    /// Closed and nothing is due.
    Closed,
    /// The caller's real-time limit passed and nothing is due.
    TimedOut,
}

/// A held lock on a [`Waitable`] state that, when dropped, hands the timing
/// of the head on (promotes the successor or signals a follower).
pub(crate) struct Handoff<'a, S: Waitable> {
    guard: MutexGuard<'a, S>,
    available: &'a Signal,
    /// How long a waiter that finds the queue empty may spin before it
    /// sleeps (zero: never).
    spin: Duration,
    /// This holder waited (or checked) for the head: its exit may have to
    /// hand the timing of the head on (Java `take`'s `finally`). A holder
    /// that only pushed or removed hands nothing on: a push signals only
    /// when it made a new head, as Java's `offer`.
    taker: bool,
}

impl<'a, S: Waitable> Handoff<'a, S> {
    pub(crate) fn new(guard: MutexGuard<'a, S>, available: &'a Signal, spin: Duration) -> Self {
        Handoff {
            guard,
            available,
            spin,
            taker: false,
        }
    }

    /// A new earlier head was pushed (or the clock jumped): the leader's
    /// timeout is now too long. Clear it and wake one waiter.
    pub(crate) fn new_head(&mut self) {
        let leader = self.guard.leader();
        leader.clear();
        self.available.one(leader);
    }

    /// Blocks until the head is due (returns [`Wake::Due`] with the lock
    /// held), the state is closed, or the real-time `limit` passes.
    pub(crate) fn wait_due(&mut self, clock: &Clock, caller_limit: Option<Instant>) -> Wake {
        self.taker = true;
        let me = {
            let leader = self.guard.leader();
            leader.next_id = leader.next_id.wrapping_add(1);
            leader.next_id
        };
        let mut may_spin =
            !self.spin.is_zero() && clock.is_real() && !self.guard.leader().cores_taken();
        // loom has no time to learn a wake-up delay from, or to spin to.
        let mut wake_early = may_spin && cfg!(not(loom));
        // A successor needs a timer that fires: not on a manual clock
        // (whose waits are untimed), nor under loom (no time at all).
        let may_succeed = clock.is_real() && cfg!(not(loom));
        // Since when nothing has been queued, for a keep-alive.
        let mut idle_until: Option<Instant> = None;
        loop {
            self.guard.absorb();
            let head = self.guard.head_deadline();
            let mut now = 0;
            if let Some(deadline) = head {
                now = clock.now();
                if deadline <= now {
                    return Wake::Due(now);
                }
            }
            if self.guard.is_closed() {
                return Wake::Closed;
            }
            idle_until = match (head, self.guard.keep_alive()) {
                (None, Some(keep_alive)) => {
                    idle_until.or_else(|| Instant::now().checked_add(keep_alive))
                }
                _ => None,
            };
            let limit = match (caller_limit, idle_until) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            if let Some(limit) = limit {
                if Instant::now() >= limit {
                    return Wake::TimedOut;
                }
            }
            let lead = match head {
                None => false,
                // A waiter that will give up before the head is due must not
                // hold the leader role (Java: `nanos < delay || leader != null`).
                Some(deadline) => {
                    self.guard.leader().is_none()
                        && !(clock.is_real() && limit.is_some_and(|l| l < to_instant(deadline)))
                }
            };
            if head.is_none() && may_spin && !self.guard.leader().spinner {
                // Nothing queued: watch for a push for a few microseconds
                // before paying for a sleep and a wake-up (once per call).
                may_spin = false;
                if let Some(until) = Instant::now().checked_add(self.spin) {
                    self.spin_outside_lock(limit.map_or(until, |l| l.min(until)));
                    continue; // re-check everything under the lock
                }
            }
            if !self.guard.may_sleep() {
                continue; // work arrived without the lock: absorb it
            }
            if let (true, Some(deadline)) = (lead, head) {
                self.guard.leader().current = Some(me);
                // Ask to be woken the OS's usual delay early, where the rest
                // may be spun (a pool on the real clock). A head due sooner
                // than that is not worth a spin: sleep as usual (with many
                // heads that close, waking late lets them run in a batch).
                let early = match self.guard.leader().latency.early {
                    early if wake_early && deadline - now > early => early,
                    _ => 0,
                };
                let target = deadline.saturating_sub(early);
                let timed_out =
                    clock.wait(&self.available.cv, &mut self.guard, Some(target), limit);
                self.guard.woke();
                if timed_out && clock.is_real() {
                    let now = clock.now();
                    let leader = self.guard.leader();
                    if leader.woke_late(now.saturating_sub(target), wake_early) {
                        (may_spin, wake_early) = (false, false);
                    } else if wake_early && now < deadline {
                        // Woken before the deadline: spin the rest as the
                        // leader (a new head kicks the spin short), or, if
                        // someone else spins, wait exactly from now on.
                        if leader.current == Some(me) && !leader.spinner {
                            self.spin_outside_lock(to_instant(deadline));
                        } else {
                            wake_early = false;
                        }
                    }
                }
                let leader = self.guard.leader();
                if leader.current == Some(me) {
                    leader.current = None;
                }
            } else {
                let wakes_at = match may_succeed {
                    true => self.successor_target(head, now, wake_early, limit, me),
                    false => None,
                };
                let timed_out = clock.wait(&self.available.cv, &mut self.guard, wakes_at, limit);
                self.guard.woke();
                let leader = self.guard.leader();
                if leader.successor.is_some_and(|(id, _)| id == me) {
                    leader.successor = None;
                }
                if let (true, Some(target)) = (timed_out, wakes_at) {
                    let now = clock.now();
                    if leader.woke_late(now.saturating_sub(target), wake_early) {
                        (may_spin, wake_early) = (false, false);
                    } else if wake_early {
                        // Made leader while asleep and woken early: spin to
                        // the head as the leader does (or, if someone else
                        // spins, wait exactly from now on).
                        let head = self.guard.head_deadline().filter(|&head| now < head);
                        let leader = self.guard.leader();
                        match head {
                            Some(head) if leader.current == Some(me) && !leader.spinner => {
                                self.spin_outside_lock(to_instant(head));
                            }
                            Some(_) if leader.current == Some(me) => wake_early = false,
                            _ => {}
                        }
                    }
                }
                let leader = self.guard.leader();
                if leader.current == Some(me) {
                    leader.current = None;
                }
            }
        }
    }

    /// A follower about to sleep: registers it as the successor and returns
    /// when its timer should fire, if a leader times the head, nobody else
    /// is successor, and the caller's limit is not earlier. It times the
    /// second item if that is at least [`SUCCESSOR_MIN_AHEAD`] away (its
    /// deadline, minus the leader's early wake where that is used), and in
    /// a loaded spell the head's deadline ([`Leader::loaded`]).
    fn successor_target(
        &mut self,
        head: Option<Nanos>,
        now: Nanos,
        wake_early: bool,
        limit: Option<Instant>,
        me: u64,
    ) -> Option<Nanos> {
        let head = head?;
        let raw_second = self.guard.second_deadline();
        let second = raw_second.filter(|&second| second.saturating_sub(now) >= SUCCESSOR_MIN_AHEAD);
        let leader = self.guard.leader();
        if leader.is_none() || leader.successor.is_some() {
            return None;
        }
        // When it must be awake, how early it asks to be woken, and until
        // when it must be able to stay: promoted, it leads the next head.
        let (due, early, stays) = match second {
            _ if leader.loaded() => (head, 0, raw_second.unwrap_or(head).max(head)),
            Some(second) if wake_early => (second, leader.latency.early, second),
            Some(second) => (second, 0, second),
            None => return None,
        };
        // (A caller that gives up before then would leave the role it was
        // given: Java's rule for the leader.)
        if limit.is_some_and(|l| l < to_instant(stays)) {
            return None;
        }
        let target = if due.saturating_sub(now) > early {
            due - early
        } else {
            due
        };
        leader.successor = Some((me, target));
        Some(target)
    }

    /// Spins, with the lock released, until a signal kicks this waiter or
    /// `until` passes. Registered as the spinner under the lock, so every
    /// signal meanwhile becomes a kick; the caller re-checks the state under
    /// the lock afterwards, so a push that raced the end of the spin is
    /// seen there. Under loom the spin is a few yielding looks at the kick,
    /// so the models check this hand-over too.
    fn spin_outside_lock(&mut self, until: Instant) {
        let kick = &self.available.kick;
        kick.store(false, Ordering::Relaxed);
        if !self.guard.spin_starts() {
            return; // work arrived without the lock: the caller re-checks
        }
        self.guard.leader().spinner = true;
        let preempted = crate::base::sync::unlocked(&mut self.guard, || {
            crate::base::sync::spin_until(kick, until)
        });
        let leader = self.guard.leader();
        leader.spinner = false;
        if preempted {
            leader.saw_cores_taken();
        }
        self.guard.spin_ends();
    }
}

impl<S: Waitable> Deref for Handoff<'_, S> {
    type Target = S;
    fn deref(&self) -> &S {
        &self.guard
    }
}

impl<S: Waitable> DerefMut for Handoff<'_, S> {
    fn deref_mut(&mut self) -> &mut S {
        &mut self.guard
    }
}

impl<S: Waitable> Drop for Handoff<'_, S> {
    fn drop(&mut self) {
        let state = &mut *self.guard;
        // (The head is read only by a taker that left nobody leading: a
        // submitter's critical section does not touch the heap's top.)
        let untimed_work = self.taker
            && state.leader().is_none()
            && state
                .head_deadline()
                .is_some_and(|head| !state.leader().promote_successor(head));
        // A removal emptied the queue under a leader that still times the
        // old head: with a keep-alive, that waiter must start counting it.
        let emptied = !self.taker
            && state.keep_alive().is_some()
            && state.head_deadline().is_none()
            && !state.leader().is_none();
        if untimed_work || emptied || state.is_closed() {
            self.available.one(state.leader());
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
