//! The synchronisation facade: std normally, loom under `cfg(loom)`.
//!
//! Every lock, condition variable, atomic, `UnsafeCell` the crate's
//! `unsafe` relies on, thread spawn and thread-local in the crate is
//! imported from here, so the loom models in `tests/loom/` and in
//! [`crate::task::ptr`] check the very code that ships. (`Arc` is std's even under
//! loom: see `docs/design.md`.) The API is parking_lot's
//! (`lock()` returns the guard directly, waits take `&mut MutexGuard`); the
//! loom side adapts loom's std-like API to it.
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

/// std's futex mutex and condvar behind parking_lot's API, for every lock
/// in the crate (see the module's documentation for why not parking_lot's).
#[cfg(not(loom))]
mod imp {
    use std::ops::{Deref, DerefMut};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Instant;

    /// std's mutex behind parking_lot's API: `lock()` returns the guard, and
    /// a panic while it was held does not poison it (as parking_lot).
    #[derive(Debug, Default)]
    pub(crate) struct Mutex<T>(std::sync::Mutex<T>);

    /// The guard; an `Option` so a wait can hand std's guard to the condvar
    /// and [`unlocked`] can release and re-take it, with the mutex beside
    /// it for the re-take. Present whenever a caller can reach it.
    #[derive(Debug)]
    pub(crate) struct MutexGuard<'a, T>(
        Option<std::sync::MutexGuard<'a, T>>,
        &'a std::sync::Mutex<T>,
    );

    impl<T> Mutex<T> {
        pub(crate) const fn new(value: T) -> Self {
            Mutex(std::sync::Mutex::new(value))
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
    fn relock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
        mutex
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
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

    /// std's condvar, with the two waits the crate uses, and a count of its
    /// sleepers so that a notify with nobody asleep costs no system call
    /// (std's `notify_one` always makes one; parking_lot's did not).
    ///
    /// The count is exact for the crate's use: a waiter counts itself while
    /// it holds the lock, and every notify follows a change made under
    /// that lock, so a notifier either sees the count or changed the state
    /// before the waiter looked at it.
    #[derive(Debug, Default)]
    pub(crate) struct Condvar {
        cv: std::sync::Condvar,
        sleepers: AtomicUsize,
    }

    impl Condvar {
        pub(crate) const fn new() -> Self {
            Condvar {
                cv: std::sync::Condvar::new(),
                sleepers: AtomicUsize::new(0),
            }
        }

        pub(crate) fn wait<T>(&self, guard: &mut MutexGuard<'_, T>) {
            let inner = guard.0.take().expect("guard present");
            self.sleepers.fetch_add(1, Ordering::SeqCst);
            let inner = self
                .cv
                .wait(inner)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            self.sleepers.fetch_sub(1, Ordering::SeqCst);
            guard.0 = Some(inner);
        }

        /// Waits until `deadline`; true if it returned because time ran out.
        pub(crate) fn wait_until<T>(
            &self,
            guard: &mut MutexGuard<'_, T>,
            deadline: Instant,
        ) -> bool {
            let Some(left) = deadline
                .checked_duration_since(Instant::now())
                .filter(|left| !left.is_zero())
            else {
                return true;
            };
            let inner = guard.0.take().expect("guard present");
            self.sleepers.fetch_add(1, Ordering::SeqCst);
            let (inner, result) = self
                .cv
                .wait_timeout(inner, left)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            self.sleepers.fetch_sub(1, Ordering::SeqCst);
            guard.0 = Some(inner);
            result.timed_out()
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

#[cfg(loom)]
mod imp {
    use std::ops::{Deref, DerefMut};
    use std::time::Instant;

    use loom::sync::atomic::{AtomicUsize, Ordering};

    /// loom's mutex behind parking_lot's API (no poisoning).
    #[derive(Debug, Default)]
    pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

    /// The guard; an `Option` so a wait can hand the inner guard to loom,
    /// and the mutex, so [`super::unlocked`] can release and re-take it.
    #[derive(Debug)]
    pub(crate) struct MutexGuard<'a, T>(
        Option<loom::sync::MutexGuard<'a, T>>,
        &'a loom::sync::Mutex<T>,
    );

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Mutex(loom::sync::Mutex::new(value))
        }
        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            MutexGuard(
                Some(self.0.lock().unwrap_or_else(|e| e.into_inner())),
                &self.0,
            )
        }
    }

    /// Runs `f` with the lock released (parking_lot's `MutexGuard::unlocked`).
    pub(crate) fn unlocked<T, R>(guard: &mut MutexGuard<'_, T>, f: impl FnOnce() -> R) -> R {
        drop(guard.0.take());
        let result = f();
        guard.0 = Some(guard.1.lock().unwrap_or_else(|e| e.into_inner()));
        result
    }

    impl<T> Deref for MutexGuard<'_, T> {
        type Target = T;
        fn deref(&self) -> &T {
            self.0.as_ref().expect("guard present")
        }
    }
    impl<T> DerefMut for MutexGuard<'_, T> {
        fn deref_mut(&mut self) -> &mut T {
            self.0.as_mut().expect("guard present")
        }
    }

    /// loom's condvar with the std side's count of sleepers, so the models
    /// check that a notify skipped because nobody sleeps never loses a
    /// wake-up (the std side's documentation says why the count is exact).
    #[derive(Debug, Default)]
    pub(crate) struct Condvar {
        cv: loom::sync::Condvar,
        sleepers: AtomicUsize,
    }

    impl Condvar {
        pub(crate) fn new() -> Self {
            Condvar {
                cv: loom::sync::Condvar::new(),
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
        /// loom cannot time out: this is an untimed wait that reports no timeout.
        pub(crate) fn wait_until<T>(
            &self,
            guard: &mut MutexGuard<'_, T>,
            _deadline: Instant,
        ) -> bool {
            self.wait(guard);
            false
        }
        pub(crate) fn notify_one(&self) {
            if self.sleepers.load(Ordering::SeqCst) != 0 {
                self.cv.notify_one();
            }
        }
        pub(crate) fn notify_all(&self) {
            if self.sleepers.load(Ordering::SeqCst) != 0 {
                self.cv.notify_all();
            }
        }
    }
}
