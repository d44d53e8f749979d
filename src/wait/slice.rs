//! The pool workers' scheduling slice (Linux 6.12+, EEVDF's custom slice):
//! how long the kernel lets a thread run before another runnable thread
//! may take its CPU, which also decides whether a woken thread may take
//! the CPU at once. It follows the loaded spells of [`load`](super::load).
//!
//! Under EEVDF a woken thread preempts the running one only if its virtual
//! deadline, its eligible time plus its slice, is the earlier. With the
//! default slice (0.75 ms times one plus the log of the CPU count) a worker
//! whose timer fires on a host whose CPUs are taken often waits out the
//! running thread's slice: a task starts 1–3 ms late. A short slice makes
//! its deadline early, so it takes the CPU when its timer fires. It does
//! not change the thread's share of CPU (the same fair accounting); it
//! makes the kernel switch more often between the threads that compete,
//! a long task body's included. That has a price where the pool's own
//! threads compete with each other (a submitter feeding busy workers), so
//! a worker asks for the short slice only while a loaded spell lasts, and
//! goes back to the OS's default when it ends.
//!
//! # Invariants
//!
//! - A worker changes only its own thread's slice, outside every lock,
//!   once per change of spell; with no configured slice, or on a manual
//!   clock, it never touches it.
//! - Only a thread whose policy is a fair one (`SCHED_OTHER`,
//!   `SCHED_BATCH`) is changed; policy, nice value and flags are written
//!   back as the kernel reported them. A kernel without custom slices
//!   (before 6.12) accepts the call and ignores the slice.
//! - Best effort: a failure is logged at debug level and changes nothing.

use std::time::Duration;

/// The shortest slice the kernel accepts (it clamps to 0.1–100 ms).
pub(crate) const MIN_SLICE: Duration = Duration::from_micros(100);
/// The longest slice the kernel accepts.
pub(crate) const MAX_SLICE: Duration = Duration::from_millis(100);

/// A worker's slice follows the pool's loaded spells
/// ([`Load::loaded`](crate::wait::load::Load::loaded)): the configured
/// slice in one, the OS's default outside. Set on the worker's own thread,
/// outside the lock, once per change.
pub(crate) struct Slice {
    /// The slice to ask for in a loaded spell (`None`: never change it).
    configured: Option<Duration>,
    /// The configured slice is the one set.
    short: bool,
    /// A change to make before the next lock: `Some(None)` goes back to the
    /// OS's default.
    pub(crate) change: Option<Option<Duration>>,
}

impl Slice {
    pub(crate) fn new(configured: Option<Duration>) -> Self {
        Slice {
            configured,
            short: false,
            change: None,
        }
    }

    /// A worker found a task due while a loaded spell was on or not
    /// ([`loaded_spell`](super::slack::loaded_spell)): notes a change of
    /// spell.
    pub(crate) fn follow(&mut self, loaded: bool) {
        let Some(configured) = self.configured else {
            return;
        };
        if loaded != self.short {
            self.short = loaded;
            self.change = Some(loaded.then_some(configured));
        }
    }
}

/// Asks the kernel for a scheduling slice of `slice` (clamped to
/// [`MIN_SLICE`]..=[`MAX_SLICE`]; `None`: the OS's default) for the
/// calling thread. Linux only; a no-op elsewhere, under loom and under
/// Miri (which cannot make the system call). Returns the error the kernel
/// gave, if any.
pub(crate) fn set_sched_slice(slice: Option<Duration>) -> std::io::Result<()> {
    #[cfg(all(target_os = "linux", not(loom), not(miri)))]
    {
        // 0 asks for the OS's default slice.
        let nanos = slice.map_or(0, |slice| {
            slice.clamp(MIN_SLICE, MAX_SLICE).as_nanos() as u64
        });
        let result = linux::set_runtime(nanos);
        if let Err(err) = &result {
            tracing::debug!(target: "schedpool::pool", error = %err, "could not set the worker's scheduling slice");
        }
        result
    }
    #[cfg(not(all(target_os = "linux", not(loom), not(miri))))]
    {
        let _ = slice;
        Ok(())
    }
}

#[cfg(all(target_os = "linux", not(loom), not(miri)))]
mod linux {
    /// `struct sched_attr` of `sched_setattr(2)`, its first version
    /// (`SCHED_ATTR_SIZE_VER0`, 48 bytes): the fields the kernel reads and
    /// writes for a size of 48, in its order.
    #[repr(C)]
    #[derive(Debug, Default)]
    struct SchedAttr {
        size: u32,
        sched_policy: u32,
        sched_flags: u64,
        sched_nice: i32,
        sched_priority: u32,
        sched_runtime: u64,
        sched_deadline: u64,
        sched_period: u64,
    }

    /// `SCHED_OTHER` and `SCHED_BATCH`: the fair policies, whose
    /// `sched_runtime` is the custom slice.
    const FAIR: [u32; 2] = [0, 3];

    /// Reads the calling thread's attributes, and writes them back with
    /// `sched_runtime = nanos` if its policy is a fair one.
    pub(super) fn set_runtime(nanos: u64) -> std::io::Result<()> {
        const SIZE: u32 = std::mem::size_of::<SchedAttr>() as u32;
        let mut attr = SchedAttr::default();
        // SAFETY: `sched_getattr(0, attr, SIZE, 0)` writes at most `SIZE`
        // bytes into `attr`, a live, exclusively borrowed `repr(C)` struct
        // of exactly that size whose fields are plain integers (any bit
        // pattern is valid); pid 0 is the calling thread. The kernel keeps
        // no pointer past the call.
        let got = unsafe {
            libc::syscall(
                libc::SYS_sched_getattr,
                0,
                &mut attr as *mut SchedAttr,
                SIZE,
                0,
            )
        };
        if got != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if !FAIR.contains(&attr.sched_policy) {
            return Ok(()); // a real-time or idle thread: not ours to change
        }
        attr.size = SIZE;
        attr.sched_runtime = nanos;
        // SAFETY: `sched_setattr(0, attr, 0)` reads `attr.size` (= `SIZE`)
        // bytes from `attr`, a live `repr(C)` struct of exactly that size,
        // every field initialised (by `default`, then by the kernel);
        // pid 0 is the calling thread. The kernel keeps no pointer past
        // the call.
        let set =
            unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const SchedAttr, 0) };
        if set != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    #[cfg(test)]
    mod tests {
        /// The calling thread's slice, in nanoseconds, as the kernel
        /// reports it (`se.slice`; `None` before EEVDF).
        fn slice_of_this_thread() -> Option<u64> {
            let sched = std::fs::read_to_string("/proc/thread-self/sched").ok()?;
            let line = sched.lines().find(|l| l.starts_with("se.slice"))?;
            line.split(':').nth(1)?.trim().parse().ok()
        }

        /// True if the running kernel honours a fair thread's custom
        /// slice (Linux 6.12 and later), as far as its release string says.
        fn custom_slices() -> bool {
            let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
            let mut parts = release.trim().split(|c: char| !c.is_ascii_digit());
            let major: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
            let minor: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
            (major, minor) >= (6, 12)
        }

        /// Runs the unsafe blocks (valgrind checks their buffers:
        /// `.ci/valgrind.sh` runs `wait::slice::`), on a thread of its own so
        /// the test runner's thread keeps its slice.
        #[test]
        fn sets_the_calling_threads_slice() {
            std::thread::spawn(|| {
                let before = slice_of_this_thread();
                super::set_runtime(200_000).expect("sched_setattr");
                let after = slice_of_this_thread();
                super::set_runtime(0).expect("sched_setattr");
                let restored = slice_of_this_thread();
                if before.is_some() && custom_slices() {
                    assert_eq!(after, Some(200_000), "before: {before:?}");
                    assert_eq!(restored, before, "0 is the OS's default again");
                }
            })
            .join()
            .expect("the test thread");
        }
    }
}
