//! Load detection: whether the host's CPUs are taken, and the spells that
//! follow from late timed wake-ups. A spell changes how the protocol waits
//! (nobody spins; the successor backs the leader up; workers let the OS
//! batch their timers), never who is woken.
//!
//! # Invariants
//!
//! - Best effort: one read of a small file in `/proc` on Linux, only on a
//!   wake-up over a millisecond late, and at most once a second while a
//!   spell lasts. Where it cannot be read (another OS, no `/proc`), the
//!   answer is "not taken": no loaded spells there.
//! - `/proc/loadavg` counts the whole host (in a container too, unless
//!   lxcfs serves it), while the CPUs counted are this process's (its
//!   affinity and cgroup quota): a container limited to fewer CPUs than
//!   the host has is seen taken more readily. That errs towards a spell.
//! - A spell or quiet period is an end time that is forgotten once passed,
//!   so one that never started costs no clock reading.
//! - [`Load`] is written only under the lock of the state that holds it.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::base::clock::{to_instant, Nanos};

/// A timed wake-up this late (the thread runnable, but another process's
/// time slice running to its end, or to the next scheduler tick) starts a
/// loaded spell (see [`Load::loaded`]). An idle vCPU wakes a sleeper within
/// tens of microseconds.
pub(super) const LOADED_WAKE: Nanos = 1_000_000;

/// How long a loaded spell lasts after the last wake-up [`LOADED_WAKE`]
/// late: a busy host tends to stay busy, and the spell costs little (a
/// second timer per head, later wake-ups).
const LOADED_SPELL: Duration = Duration::from_secs(10);

/// How often a spell's renewal reads the load, at most.
const LOADED_PROBE_GAP: Duration = Duration::from_secs(1);

/// A timed wake-up this late says the cores are taken: an idle vCPU wakes a
/// sleeper within tens of microseconds, and rarely a millisecond late
/// (500 µs fired on an idle VM here and cost W4's median 5x).
pub(super) const CONTENDED_WAKE: Nanos = 2_000_000;

/// How long spinning stays off once the cores were seen taken.
const QUIET: Duration = Duration::from_millis(200);

/// Until when the cores count as taken, and until when a loaded spell
/// lasts.
#[derive(Debug, Default)]
pub(crate) struct Load {
    /// Until when nobody spins (see [`Load::cores_taken`]).
    pub(super) quiet_until: Option<Instant>,
    /// Until when the successor backs the leader up (see
    /// [`Load::loaded`]).
    pub(super) loaded_until: Option<Instant>,
}

impl Load {
    /// Whether the cores were seen taken within the last [`QUIET`]: a spin
    /// was descheduled, or a timed wake-up came [`CONTENDED_WAKE`] late.
    /// Then nobody spins, and the leader sleeps to the deadline itself: a
    /// spinner on a busy machine only burns the slice another thread needs,
    /// and a thread that sleeps more is the one the scheduler runs first
    /// when its timer fires.
    pub(super) fn cores_taken(&mut self) -> bool {
        self.loaded() || still(&mut self.quiet_until)
    }

    /// Whether a timed wake-up came [`LOADED_WAKE`] late within the last
    /// [`LOADED_SPELL`]. Then the successor times the head too, not only
    /// the second item: when the scheduler leaves the woken leader waiting
    /// behind another process for milliseconds (until that process's slice
    /// or the next tick ends), the successor, woken by its own timer on its
    /// own CPU, takes the head instead. The pool's workers also let the OS
    /// batch their wake-ups then ([`slack`](super::slack)).
    pub(crate) fn loaded(&mut self) -> bool {
        still(&mut self.loaded_until)
    }

    /// A timed wake-up came [`LOADED_WAKE`] late: starts or extends a loaded
    /// spell if `cpus_taken` says other threads were runnable (a busy host),
    /// not a paused vCPU or a stopped process.
    /// While a spell renewed within the last [`LOADED_PROBE_GAP`] is on, the
    /// probe (a file read, under the lock) is skipped.
    pub(super) fn note_load(&mut self, cpus_taken: impl FnOnce() -> bool) {
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
    pub(super) fn saw_cores_taken(&mut self) {
        self.quiet_until = Instant::now().checked_add(QUIET);
    }

    /// A timed wake-up came `late`: starts a loaded spell or a quiet period
    /// if it was late enough (`cpus_taken` is the load probe). True if
    /// spinning is now off (the cores were seen taken, or a loaded spell is
    /// on).
    pub(super) fn woke_late(&mut self, late: Nanos, cpus_taken: impl FnOnce() -> bool) -> bool {
        if late > LOADED_WAKE && cfg!(not(loom)) {
            self.note_load(cpus_taken);
        }
        let taken = late > CONTENDED_WAKE && cfg!(not(loom));
        if taken {
            self.saw_cores_taken();
        }
        taken || self.loaded()
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

/// True if more threads are runnable right now than there are CPUs for
/// this process (the fourth field of `/proc/loadavg`, which counts the
/// caller too); false if that cannot be read.
pub(crate) fn cpus_taken() -> bool {
    runnable().is_some_and(|runnable| runnable > cpus())
}

/// The CPUs this process may use (read once).
fn cpus() -> usize {
    static CPUS: OnceLock<usize> = OnceLock::new();
    *CPUS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Threads runnable now, system-wide (Linux's `/proc/loadavg`).
fn runnable() -> Option<usize> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    parse_runnable(&text)
}

/// The count before the `/` of `/proc/loadavg`'s fourth field.
fn parse_runnable(text: &str) -> Option<usize> {
    let field = text.split_whitespace().nth(3)?;
    field.split('/').next()?.parse().ok()
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::parse_runnable;

    #[test]
    fn the_runnable_count_is_read_from_loadavg() {
        assert_eq!(parse_runnable("0.81 1.94 1.99 3/83 23297\n"), Some(3));
        assert_eq!(parse_runnable("0.00 0.00 0.00 1/1 1"), Some(1));
        assert_eq!(parse_runnable("garbage"), None);
        assert_eq!(parse_runnable("1 2 3 x/83 4"), None);
    }

    #[test]
    fn an_answer_comes_back_on_this_machine() {
        // Whatever the load, it must not panic or block.
        let _ = super::cpus_taken();
    }
}
