//! Who times the head: the leader (one timed waiter), the successor (one
//! follower timing the next item, promoted where it sleeps), and the
//! tuning state one protocol instance learns as it runs.
//!
//! # Invariants
//!
//! - [`Leader`] lives inside the lock-protected state it serves and is read
//!   and written only under that lock.
//! - At most one leader (`current`), at most one successor, at most one
//!   spinner; a waiter's id is unique among the waiters of one state (a
//!   wrapping counter).
//! - The successor is promoted only when nobody leads and its timer fires
//!   no later than the head's deadline ([`Leader::promote_successor`]):
//!   the head is then timed without waking anyone.

use crate::base::clock::Nanos;
use crate::wait::load::Load;
use crate::wait::spin::WakeLatency;

/// Who is timing the head, and whether a waiter is spinning.
#[derive(Debug, Default)]
pub(crate) struct Leader {
    pub(super) current: Option<u64>,
    pub(super) next_id: u64,
    /// A waiter is spinning outside the lock, watching [`Signal`](super::Signal)'s kick
    /// instead of sleeping on its condvar. At most one at a time.
    pub(super) spinner: bool,
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
    pub(super) successor: Option<(u64, Nanos)>,
    /// How late the leader's timed waits return, to wake that much early.
    pub(super) latency: WakeLatency,
    /// Loaded spells and quiet periods (see [`Load`]).
    pub(crate) load: Load,
}

/// The successor waits only for a second item due at least this far ahead:
/// one closer is due within the time a sleep and a wake-up take anyway, and
/// a stream of them (W7) made the timers cost more than they saved.
pub(super) const SUCCESSOR_MIN_AHEAD: Nanos = 5_000;

impl Leader {
    /// Records how late a timed wake-up came (`late`): the wake-up delay
    /// estimate, and whether it says the cores are taken.
    /// `estimate`: the wake-up was asked early by the estimate, so it
    /// updates it.
    pub(super) fn woke_late(&mut self, late: Nanos, estimate: bool) -> bool {
        self.woke_late_probing(late, estimate, crate::wait::load::cpus_taken)
    }

    /// [`woke_late`](Self::woke_late), with `cpus_taken` as the load probe.
    /// True if spinning is now off (the cores were seen taken, or a loaded
    /// spell is on).
    pub(super) fn woke_late_probing(
        &mut self,
        late: Nanos,
        estimate: bool,
        cpus_taken: impl FnOnce() -> bool,
    ) -> bool {
        if estimate {
            self.latency.record(late);
        }
        self.load.woke_late(late, cpus_taken)
    }

    /// Forgets the leader: used when its timeout became too long.
    pub(crate) fn clear(&mut self) {
        self.current = None;
    }

    pub(crate) fn is_none(&self) -> bool {
        self.current.is_none()
    }

    /// When the successor's timer fires, if there is one.
    pub(crate) fn successor_timer(&self) -> Option<Nanos> {
        self.successor.map(|(_, wakes_at)| wakes_at)
    }

    /// Nobody leads and the head is due at `head`: makes the successor the
    /// leader if its timer fires by then (true), so nobody needs waking.
    pub(super) fn promote_successor(&mut self, head: Nanos) -> bool {
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
