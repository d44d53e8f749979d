//! Whether the machine's CPUs are all taken: more threads runnable than
//! there are CPUs for this process. Read only when a timed wake-up came
//! very late, to tell a busy host (other runnable threads held the CPU)
//! from a virtual machine whose vCPU the host paused (nothing else ran).
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

use std::sync::OnceLock;

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
