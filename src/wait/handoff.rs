//! The leader/follower protocol itself: the [`Waitable`] state, the wait
//! ([`Handoff::wait_due`]) and the hand-over every exit makes
//! ([`Handoff`]'s `Drop`). The module documentation of [`crate::wait`]
//! states the protocol and why no wake-up is lost.
//!
//! # Invariants
//!
//! - A waiter sleeps only after checking, under the lock, that the head is
//!   not due and that nothing arrived without the lock
//!   ([`Waitable::may_sleep`]).
//! - Every exit from [`Handoff::wait_due`] (due, timed out, closed, or a
//!   panic) passes through the drop, which signals one waiter when nobody
//!   is timing a non-empty queue, when the state is closed, or when nobody
//!   leads and the leaver owes a signal ([`Waitable::owes_wake`]).
//! - No reference to the head is held while sleeping: only its deadline.

use std::ops::{Deref, DerefMut};
use std::time::{Duration, Instant};

use crate::base::clock::{to_instant, Clock, Nanos};
use crate::base::sync::{MutexGuard, Ordering};
use crate::wait::leader::{Leader, SUCCESSOR_MIN_AHEAD};
use crate::wait::signal::Signal;
use crate::wait::spin::MAX_EARLY;

/// Lock-protected state that can be waited on.
pub(crate) trait Waitable {
    /// The leader slot.
    fn leader(&mut self) -> &mut Leader;
    /// The head's deadline, due or not.
    fn head_deadline(&self) -> Option<Nanos>;
    /// A deadline no later than the second item's, if there are two; with
    /// it, one follower times the second item as the successor. `None`
    /// (the default) keeps Java's protocol, except in a loaded spell, when
    /// the successor times the head ([`Load::loaded`](crate::wait::load::Load::loaded)).
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
    /// A real time by which a sleeping waiter must look at the state again,
    /// whatever its deadline (work that arrives without the lock and needs
    /// no signal: the pool's removals). Bounds every sleep, the leader's
    /// included; reaching it is neither a timeout nor a wake-up.
    fn recheck_by(&self) -> Option<Instant> {
        None
    }
    /// Moves work that arrived without the lock into the state (the pool's
    /// submission inbox); called before every look at the head.
    fn absorb(&mut self) {}
    /// The waiter is about to sleep: false if work arrived without the lock
    /// meanwhile (absorb it and look again instead). A true must be
    /// followed by [`woke`](Self::woke).
    fn may_sleep(&mut self) -> bool {
        true
    }
    /// The waiter that [`may_sleep`](Self::may_sleep) let sleep is awake.
    fn woke(&mut self) {}
    /// A waiter entered the wait. From here, and from every
    /// [`woke`](Self::woke), it *looks* until a true
    /// [`may_sleep`](Self::may_sleep) or [`may_leave`](Self::may_leave):
    /// it absorbs before it sleeps or leaves, so work that arrives without
    /// the lock meanwhile needs no signal (the pool's removals).
    fn looks(&mut self) {}
    /// The waiter is about to return from the wait: false if work arrived
    /// without the lock meanwhile (absorb it and look again instead).
    fn may_leave(&mut self) -> bool {
        true
    }
    /// A looking waiter left without [`may_leave`](Self::may_leave) (a
    /// panic unwound the wait).
    fn left(&mut self) {}
    /// The waiter that [`may_leave`](Self::may_leave) let go counted on its
    /// hand-over to wake somebody (the pool's published wake time); read
    /// (and cleared) once, by the hand-over. True makes the hand-over
    /// signal a waiter whenever nobody leads, even if nothing is left to
    /// time (the state may have emptied without the lock since).
    fn owes_wake(&mut self) -> bool {
        false
    }
    /// A waiter starts spinning outside the lock until `until` (towards the
    /// head's deadline, or for a while if there is none), unless kicked.
    /// Fails (false) if work arrived without the lock: absorb it instead.
    fn spin_starts(&mut self, _until: Instant) -> bool {
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
    /// The waiter looks ([`Waitable::looks`]): awake in the wait, and not
    /// yet let sleep or leave.
    looking: bool,
}

impl<'a, S: Waitable> Handoff<'a, S> {
    pub(crate) fn new(guard: MutexGuard<'a, S>, available: &'a Signal, spin: Duration) -> Self {
        Handoff {
            guard,
            available,
            spin,
            taker: false,
            looking: false,
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
            !self.spin.is_zero() && clock.is_real() && !self.guard.leader().load.cores_taken();
        // loom has no time to learn a wake-up delay from, or to spin to.
        let mut wake_early = may_spin && cfg!(not(loom));
        // A successor needs a timer that fires: not on a manual clock
        // (whose waits are untimed), nor under loom (no time at all).
        let may_succeed = clock.is_real() && cfg!(not(loom));
        // Since when nothing has been queued, for a keep-alive.
        let mut idle_until: Option<Instant> = None;
        self.guard.looks();
        self.looking = true;
        loop {
            self.guard.absorb();
            let head = self.guard.head_deadline();
            let mut now = 0;
            if let Some(deadline) = head {
                now = clock.now();
                if deadline <= now {
                    if !self.may_leave() {
                        continue; // work arrived without the lock: absorb it
                    }
                    return Wake::Due(now);
                }
            }
            if self.guard.is_closed() {
                if !self.may_leave() {
                    continue;
                }
                return Wake::Closed;
            }
            idle_until = match (head, self.guard.keep_alive()) {
                (None, Some(keep_alive)) => {
                    idle_until.or_else(|| Instant::now().checked_add(keep_alive))
                }
                _ => None,
            };
            let limit = earliest(caller_limit, idle_until);
            if let Some(limit) = limit {
                if Instant::now() >= limit {
                    if !self.may_leave() {
                        continue;
                    }
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
            self.looking = false;
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
                let bound = earliest(limit, self.guard.recheck_by());
                let timed_out =
                    clock.wait(&self.available.cv, &mut self.guard, Some(target), bound);
                self.guard.woke();
                self.looking = true;
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
                let bound = earliest(limit, self.guard.recheck_by());
                let timed_out = clock.wait(&self.available.cv, &mut self.guard, wakes_at, bound);
                self.guard.woke();
                self.looking = true;
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
                        // spins, wait exactly from now on). Only if the
                        // head is within a leader's early wake of now, and
                        // at most [`MAX_EARLY`] more: the timer fired by a
                        // bound on the second task, which may be well
                        // before the head (a wheel slot's start, a little;
                        // a loaded spell's head, a lot). Further off, it
                        // sleeps again as the leader instead (looping),
                        // rather than spin for milliseconds on a CPU that
                        // the worker running the last head may need.
                        let head = self.guard.head_deadline().filter(|&head| now < head);
                        let leader = self.guard.leader();
                        let near = |head: Nanos| head - now <= leader.latency.early + MAX_EARLY;
                        match head {
                            Some(head) if leader.current == Some(me) && !near(head) => {}
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

    /// The waiter is about to return: false if it must absorb and look
    /// again first ([`Waitable::may_leave`]).
    fn may_leave(&mut self) -> bool {
        let leaves = self.guard.may_leave();
        self.looking = !leaves;
        leaves
    }

    /// A follower about to sleep: registers it as the successor and returns
    /// when its timer should fire, if a leader times the head, nobody else
    /// is successor, and the caller's limit is not earlier. It times the
    /// second item if that is at least [`SUCCESSOR_MIN_AHEAD`] away (its
    /// deadline, minus the leader's early wake where that is used), and in
    /// a loaded spell the head's deadline ([`Load::loaded`](crate::wait::load::Load::loaded)).
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
            _ if leader.load.loaded() => (head, 0, raw_second.unwrap_or(head).max(head)),
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
        if !self.guard.spin_starts(until) {
            return; // work arrived without the lock: the caller re-checks
        }
        self.guard.leader().spinner = true;
        let preempted = crate::base::sync::unlocked(&mut self.guard, || {
            crate::wait::spin::spin_until(kick, until)
        });
        let leader = self.guard.leader();
        leader.spinner = false;
        if preempted {
            leader.load.saw_cores_taken();
        }
        self.guard.spin_ends();
    }
}

/// The earlier of two optional limits.
fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
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
        if self.looking {
            state.left(); // a panic unwound the wait
        }
        // (The head is read only by a taker that left nobody leading: a
        // submitter's critical section does not touch the heap's top.)
        let owed = self.taker && state.owes_wake();
        let untimed_work = self.taker
            && state.leader().is_none()
            && match state.head_deadline() {
                Some(head) => !state.leader().promote_successor(head),
                None => owed,
            };
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
