//! How a waiter is woken: a notify on the condvar, or, while a waiter spins
//! outside the lock, a store to its kick flag (no system call).
//!
//! # Invariants
//!
//! - [`Signal::one`] is called under the lock that guards the
//!   [`Leader`] it reads, so the spinner it chooses is the
//!   one registered; a kick set while nobody spins is cleared by the next
//!   spinner before it starts.
//! - Only `notify_one` is used: each woken waiter wakes the next if needed
//!   ([`Handoff`](super::Handoff)'s drop).

use crossbeam_utils::CachePadded;

use crate::base::sync::{AtomicBool, Condvar, Ordering};
use crate::wait::leader::Leader;

/// How waiters are woken: the condvar, or the spinner's kick.
pub(crate) struct Signal {
    pub(super) cv: Condvar,
    /// Set (instead of notifying) while a waiter spins; it sits alone on
    /// its cache line, which only the kicker and the spinner touch.
    pub(super) kick: CachePadded<AtomicBool>,
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
    /// pool's submission inbox).
    pub(crate) fn kick(&self) {
        self.kick.store(true, Ordering::Release);
    }
}
