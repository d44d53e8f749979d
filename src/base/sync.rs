//! The synchronisation facade: std normally, loom under `cfg(loom)`.
//!
//! Every lock, condition variable, atomic, `UnsafeCell` the crate's
//! `unsafe` relies on, thread spawn and thread-local in the crate is
//! imported from here, so the loom models in `tests/loom/` and in
//! [`crate::task::ptr`] check the very code that ships. (`Arc` is std's even under
//! loom: see `docs/design.md`.) The API is parking_lot's
//! (`lock()` returns the guard directly, waits take `&mut MutexGuard`),
//! written once over std's or loom's std-like types: only the small `raw`
//! module differs between the two builds.
//!
//! # Why std's lock and not parking_lot's
//!
//! parking_lot's mutex, waiting for a held lock, spins a few times and
//! then calls `sched_yield` up to seven times before it parks. On a host
//! whose cores are taken by other processes, a yield hands the core to one
//! of them until the next scheduler tick (Linux's EEVDF moves the
//! yielder's deadline a whole slice back): a caller that met the pool lock
//! held lost about 3.5 ms. That was most of W9L's cost per timeout (2.7
//! µs of the caller's time, 1.9 yields per 1,000 pairs counted as
//! involuntary switches). std's futex mutex spins about a hundred times on
//! the lock word and then sleeps in the kernel, which wakes it at the
//! unlock: W9L's pair fell to 0.17× (`docs/performance-log.md`, "Why
//! callers lost whole time slices on a busy host").
//!
//! loom does not model time: under loom a timed wait is an untimed wait that
//! never reports a timeout. Models therefore use deadlines already past or a
//! `ManualClock`, never a timeout, to make progress.

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{
    fence, AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering,
};
#[cfg(not(loom))]
pub(crate) use std::thread_local;

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{
    fence, AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering,
};
/// loom's `thread_local!` (a 2018-edition macro) does not accept the
/// `const { .. }` initialiser that std's does: strip it and forward.
#[cfg(loom)]
macro_rules! loom_thread_local {
    ($(#[$attr:meta])* $vis:vis static $name:ident: $t:ty = const { $init:expr } $(;)?) => {
        loom::thread_local!($(#[$attr])* $vis static $name: $t = $init);
    };
    ($(#[$attr:meta])* $vis:vis static $name:ident: $t:ty = $init:expr $(;)?) => {
        loom::thread_local!($(#[$attr])* $vis static $name: $t = $init);
    };
}
#[cfg(loom)]
pub(crate) use loom_thread_local as thread_local;

pub(crate) use imp::{unlocked, Condvar, Mutex, MutexGuard};

/// loom's `UnsafeCell`, whose accesses loom checks for races, under loom.
#[cfg(loom)]
pub(crate) use loom::cell::UnsafeCell;

/// `std::cell::UnsafeCell` behind loom's closure-based API.
#[cfg(not(loom))]
#[derive(Debug)]
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> UnsafeCell<T> {
    pub(crate) fn new(value: T) -> Self {
        UnsafeCell(std::cell::UnsafeCell::new(value))
    }

    /// Runs `f` with a pointer to the value; the caller's protocol makes
    /// the access exclusive.
    #[inline]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }

    /// Runs `f` with a pointer for reading; the caller's protocol rules
    /// out a concurrent write.
    #[allow(dead_code)] // only the loom models read without moving out
    #[inline]
    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }
}

/// Waits on `cv` until `done(&mut state)` holds (true) or `timeout` of real
/// time passes (false). A timeout too large for an `Instant` waits without
/// limit. The condition is checked under the lock before every wait, so a
/// signal sent after the state changed is never missed.
pub(crate) fn wait_for<T>(
    cv: &Condvar,
    guard: &mut MutexGuard<'_, T>,
    timeout: std::time::Duration,
    mut done: impl FnMut(&mut T) -> bool,
) -> bool {
    let limit = std::time::Instant::now().checked_add(timeout);
    loop {
        if done(&mut *guard) {
            return true;
        }
        match limit {
            Some(limit) => {
                if std::time::Instant::now() >= limit {
                    return false;
                }
                cv.wait_until(guard, limit);
            }
            None => cv.wait(guard),
        }
    }
}

/// Spawns a named, detached thread.
///
/// # Errors
///
/// The operating system's error when the thread cannot be created.
pub(crate) fn spawn_named<F>(name: String, f: F) -> std::io::Result<()>
where
    F: FnOnce() + Send + 'static,
{
    #[cfg(not(loom))]
    {
        std::thread::Builder::new().name(name).spawn(f).map(drop)
    }
    #[cfg(loom)]
    {
        loom::thread::Builder::new().name(name).spawn(f).map(drop)
    }
}

/// What differs between std and loom under [`Mutex`] and [`Condvar`], and
/// nothing else: the raw types, how long a timed wait has left, and the
/// timed wait itself (loom has no time).
#[cfg(not(loom))]
mod raw {
    pub(super) use std::sync::atomic::{AtomicUsize, Ordering};
    pub(super) use std::sync::{Condvar, Mutex, MutexGuard};
    use std::time::{Duration, Instant};

    /// How long a wait until `deadline` has left; `None` if none.
    #[inline]
    pub(super) fn left(deadline: Instant) -> Option<Duration> {
        deadline
            .checked_duration_since(Instant::now())
            .filter(|left| !left.is_zero())
    }

    /// Waits on `cv` for at most `left`; true if time ran out.
    pub(super) fn wait_timeout<'a, T>(
        cv: &Condvar,
        guard: MutexGuard<'a, T>,
        left: Duration,
    ) -> (MutexGuard<'a, T>, bool) {
        let (guard, result) = cv
            .wait_timeout(guard, left)
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        (guard, result.timed_out())
    }
}

/// See the std side.
#[cfg(loom)]
mod raw {
    pub(super) use loom::sync::atomic::{AtomicUsize, Ordering};
    pub(super) use loom::sync::{Condvar, Mutex, MutexGuard};
    use std::time::{Duration, Instant};

    /// loom has no time: every timed wait has all of it left.
    pub(super) fn left(_deadline: Instant) -> Option<Duration> {
        Some(Duration::MAX)
    }

    /// loom cannot time out: an untimed wait that reports no timeout.
    pub(super) fn wait_timeout<'a, T>(
        cv: &Condvar,
        guard: MutexGuard<'a, T>,
        _left: Duration,
    ) -> (MutexGuard<'a, T>, bool) {
        (cv.wait(guard).unwrap_or_else(|e| e.into_inner()), false)
    }
}

/// std's futex mutex and condvar (loom's under loom) behind parking_lot's
/// API, for every lock in the crate (see the module's documentation for
/// why not parking_lot's). One implementation for both: only [`raw`]
/// differs, so the models check the code that ships.
mod imp {
    use std::ops::{Deref, DerefMut};
    use std::time::Instant;

    use super::raw::{self, AtomicUsize, Ordering};

    /// The mutex behind parking_lot's API: `lock()` returns the guard, and
    /// a panic while it was held does not poison it (as parking_lot).
    #[derive(Debug, Default)]
    pub(crate) struct Mutex<T>(raw::Mutex<T>);

    /// The guard; an `Option` so a wait can hand the inner guard to the
    /// condvar and [`unlocked`] can release and re-take it, with the mutex
    /// beside it for the re-take. Present whenever a caller can reach it.
    #[derive(Debug)]
    pub(crate) struct MutexGuard<'a, T>(Option<raw::MutexGuard<'a, T>>, &'a raw::Mutex<T>);

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Mutex(raw::Mutex::new(value))
        }

        /// Takes the lock: a compare-and-swap, else std's slow path (a
        /// short spin on the lock word, then a futex wait). Never
        /// `sched_yield`.
        #[inline]
        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            MutexGuard(Some(relock(&self.0)), &self.0)
        }
    }

    /// Locks `mutex`, ignoring poison (the crate's state stays consistent
    /// across a panicking body: bodies never run under a lock).
    #[inline]
    fn relock<T>(mutex: &raw::Mutex<T>) -> raw::MutexGuard<'_, T> {
        mutex.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` with the lock released (parking_lot's `MutexGuard::unlocked`).
    pub(crate) fn unlocked<T, R>(guard: &mut MutexGuard<'_, T>, f: impl FnOnce() -> R) -> R {
        drop(guard.0.take());
        let result = f();
        guard.0 = Some(relock(guard.1));
        result
    }

    impl<T> Deref for MutexGuard<'_, T> {
        type Target = T;
        #[inline]
        fn deref(&self) -> &T {
            self.0.as_ref().expect("guard present")
        }
    }
    impl<T> DerefMut for MutexGuard<'_, T> {
        #[inline]
        fn deref_mut(&mut self) -> &mut T {
            self.0.as_mut().expect("guard present")
        }
    }

    /// The condvar, with the two waits the crate uses, and a count of its
    /// sleepers so that a notify with nobody asleep costs no system call
    /// (std's `notify_one` always makes one; parking_lot's did not). Under
    /// loom the models check that a notify so skipped never loses a
    /// wake-up.
    ///
    /// The count is exact for the crate's use: a waiter counts itself while
    /// it holds the lock, and every notify follows a change made under
    /// that lock, so a notifier either sees the count or changed the state
    /// before the waiter looked at it.
    #[derive(Debug, Default)]
    pub(crate) struct Condvar {
        cv: raw::Condvar,
        sleepers: AtomicUsize,
    }

    impl Condvar {
        pub(crate) fn new() -> Self {
            Condvar {
                cv: raw::Condvar::new(),
                sleepers: AtomicUsize::new(0),
            }
        }

        pub(crate) fn wait<T>(&self, guard: &mut MutexGuard<'_, T>) {
            let inner = guard.0.take().expect("guard present");
            self.sleepers.fetch_add(1, Ordering::SeqCst);
            let inner = self.cv.wait(inner).unwrap_or_else(|e| e.into_inner());
            self.sleepers.fetch_sub(1, Ordering::SeqCst);
            guard.0 = Some(inner);
        }

        /// Waits until `deadline`; true if it returned because time ran out
        /// (never under loom, whose timed waits are untimed).
        pub(crate) fn wait_until<T>(
            &self,
            guard: &mut MutexGuard<'_, T>,
            deadline: Instant,
        ) -> bool {
            let Some(left) = raw::left(deadline) else {
                return true;
            };
            let inner = guard.0.take().expect("guard present");
            self.sleepers.fetch_add(1, Ordering::SeqCst);
            let (inner, timed_out) = raw::wait_timeout(&self.cv, inner, left);
            self.sleepers.fetch_sub(1, Ordering::SeqCst);
            guard.0 = Some(inner);
            timed_out
        }

        pub(crate) fn notify_one(&self) {
            if self.sleepers.load(Ordering::SeqCst) != 0 {
                self.cv.notify_one();
            }
        }

        /// Only for latches (a task's completion, the pool's termination),
        /// where every waiter must return; never for the work queue.
        pub(crate) fn notify_all(&self) {
            if self.sleepers.load(Ordering::SeqCst) != 0 {
                self.cv.notify_all();
            }
        }
    }
}
