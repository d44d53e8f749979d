//! Spinning: the spin to a deadline (or a kick) outside the lock, and the
//! estimate of the OS's wake-up delay that says how early the leader asks
//! to be woken and so how long it spins.
//!
//! # Invariants
//!
//! - A spin only ever watches one flag (the [`Signal`](super::Signal)'s
//!   kick) and a deadline; it never touches the queue: the spinner
//!   re-checks everything under the lock afterwards.
//! - The wake-up estimate moves by at most [`STEP`] per wake-up and never
//!   past [`MAX_EARLY`], so one stall of milliseconds does not move it
//!   further than any other wake-up.
//! - Under loom a spin is a few yielding looks at the flag: loom has no
//!   time, and the models check the hand-over around the spin.

use std::time::Instant;

use crate::base::clock::Nanos;
use crate::base::sync::{AtomicBool, Ordering};

/// How far one timed wake-up moves the estimate of the OS's wake-up delay.
const STEP: Nanos = 500;
/// The most the leader ever asks to be woken early (and so the longest it
/// spins to a deadline).
pub(crate) const MAX_EARLY: Nanos = 100_000;

/// How late the OS returns from the leader's timed waits: a running
/// estimate of the median (each wake-up moves it [`STEP`] towards its own
/// lateness, so a stall of milliseconds moves it no more than any other
/// wake-up). The leader asks to be woken that much before the deadline and
/// spins the rest when it arrives early: the OS's usual delay (tens of µs
/// from an idle vCPU, a few on bare metal) leaves the lateness of a typical
/// task, and the spin costs about the spread of that delay, not its size.
#[derive(Debug, Default)]
pub(crate) struct WakeLatency {
    /// How early to ask to be woken.
    pub(super) early: Nanos,
}

impl WakeLatency {
    pub(super) fn record(&mut self, late: Nanos) {
        self.early = if late > self.early {
            (self.early + STEP).min(MAX_EARLY)
        } else {
            self.early.saturating_sub(STEP)
        };
    }
}

/// Spins until `flag` is set or `until` passes. Returns true if the
/// spin was descheduled on the way: two of its clock reads, a few
/// dozen pause instructions apart, lay more than `PREEMPTED` apart, so
/// another thread had the core (the spin then only cost that thread
/// its time).
#[cfg(not(loom))]
pub(super) fn spin_until(flag: &AtomicBool, until: Instant) -> bool {
    /// Far beyond one lap of the loop (well under a microsecond) and a
    /// virtual machine's usual hiccups (50 µs fired on an idle VM here
    /// and cost W4's median 5x), about a scheduler's time slice.
    const PREEMPTED: std::time::Duration = std::time::Duration::from_millis(1);
    let mut last = Instant::now();
    let mut preempted = false;
    while !flag.load(Ordering::Acquire) && last < until {
        for _ in 0..32 {
            std::hint::spin_loop();
        }
        let now = Instant::now();
        preempted |= now.duration_since(last) > PREEMPTED;
        last = now;
    }
    preempted
}

/// A spin under loom: a few looks at `flag`, yielding between them (loom
/// has no time, so "until" is a bound on looks, not a deadline).
#[cfg(loom)]
pub(super) fn spin_until(flag: &AtomicBool, _until: Instant) -> bool {
    for _ in 0..2 {
        if flag.load(Ordering::Acquire) {
            return false;
        }
        loom::thread::yield_now();
    }
    false
}
