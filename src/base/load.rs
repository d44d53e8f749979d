//! Whether the machine's CPUs are all taken: more threads runnable than
//! there are CPUs for this process. Read only when a timed wake-up came
//! very late, to tell a busy host (other runnable threads held the CPU)
//! from a virtual machine whose vCPU the host paused (nothing else ran).
//!
//! # Invariants
//!
//! - Best effort and never blocking for long: one read of a small file in
//!   `/proc` on Linux, only on a late wake-up or a worker's start. Where
//!   that cannot be read (another OS, no `/proc`), a late wake-up alone
//!   decides ([`cpus_taken`] says "taken"), and a start never does
//!   ([`oversubscribed_by_others`] says no).

use std::sync::OnceLock;

/// True if more threads are runnable right now than there are CPUs for
/// this process (the fourth field of `/proc/loadavg`, which counts the
/// caller too), or if that cannot be read.
pub(crate) fn cpus_taken() -> bool {
    runnable().is_none_or(|runnable| runnable > cpus())
}

/// True if more threads are runnable right now than there are CPUs plus
/// `ours` (the caller's own runnable threads, which `/proc/loadavg`
/// counts); false if that cannot be read.
pub(crate) fn oversubscribed_by_others(ours: usize) -> bool {
    runnable().is_some_and(|runnable| runnable > cpus() + ours)
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
        let _ = super::oversubscribed_by_others(2);
    }
}
