//! The wait strategy: the leader/follower wait (Java `DelayQueue.take` /
//! `poll(timeout)`, POSA2), written once and used by both
//! [`DelayQueue`](crate::DelayQueue) and the pool's workers, with what
//! tunes it: spinning, the OS's wake-up delay, load detection and the
//! workers' timer slack.
//!
//! The files, each using only those above it:
//!
//! 1. [`load`]: whether the host's CPUs are taken, and the loaded spells
//!    and quiet periods that follow from late wake-ups.
//! 2. [`spin`]: the spin to a deadline outside the lock, and the estimate of
//!    the OS's wake-up delay that decides how early to wake.
//! 3. [`leader`]: who times the head (the leader, the successor) and the
//!    tuning state of one wait protocol.
//! 4. [`signal`]: how a waiter is woken (a condvar notify, or a spinner's kick).
//! 5. [`handoff`]: the protocol itself: [`Waitable`], [`Handoff::wait_due`]
//!    and the hand-over on every exit.
//! 6. [`slack`]: the pool workers' timer slack, which follows loaded spells.
//! 7. [`slice`](mod@slice): the pool workers' scheduling slice, short so that a worker
//!    whose timer fires takes a CPU from a busy thread at once.
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
//!   leader the scheduler leaves waiting ([`Load::loaded`](load::Load::loaded)). Every other
//!   waiter (a *follower*) sleeps untimed, except for its caller's own
//!   real-time limit.
//! - When the leader leaves with the head, the successor, if its timer
//!   fires no later than the new head's deadline, becomes the leader where
//!   it sleeps: nobody is woken (see [`Leader`]'s `successor` for why).
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
//!   ([`WakeLatency`](spin::WakeLatency)) and spins to the deadline. A spinner has released
//!   the lock and is registered in [`Leader`], so a signal meanwhile is a
//!   [`Signal`] kick instead of a notify; it re-checks everything under the
//!   lock when the spin ends.
//!
//! - Work may also arrive without the lock (the pool's
//!   submission inbox): the waiter absorbs it before every look at the head
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

pub(crate) mod handoff;
pub(crate) mod leader;
pub(crate) mod load;
pub(crate) mod signal;
pub(crate) mod slack;
pub(crate) mod slice;
pub(crate) mod spin;

pub(crate) use handoff::{Handoff, Waitable, Wake};
pub(crate) use leader::Leader;
pub(crate) use signal::Signal;

#[cfg(all(test, not(loom)))]
mod tests;
