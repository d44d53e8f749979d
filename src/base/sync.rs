//! The synchronisation facade: parking_lot and std normally, loom under `cfg(loom)`.
//!
//! Every lock, condition variable, atomic, `UnsafeCell` the crate's
//! `unsafe` relies on, thread spawn and thread-local in the crate is
//! imported from here, so the loom models in `tests/loom/` and in
//! [`crate::task::ptr`] check the very code that ships. (`Arc` is std's even under
//! loom: see `docs/design.md`.) The API is parking_lot's
//! (`lock()` returns the guard directly, waits take `&mut MutexGuard`); the
//! loom side adapts loom's std-like API to it.
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

#[cfg(not(loom))]
mod imp {
    use std::time::Instant;

    pub(crate) use parking_lot::{Mutex, MutexGuard};

    /// Runs `f` with the lock released.
    pub(crate) fn unlocked<T, R>(guard: &mut MutexGuard<'_, T>, f: impl FnOnce() -> R) -> R {
        MutexGuard::unlocked(guard, f)
    }

    /// parking_lot's `Condvar`, with the two waits the crate uses.
    #[derive(Debug, Default)]
    pub(crate) struct Condvar(parking_lot::Condvar);

    impl Condvar {
        pub(crate) const fn new() -> Self {
            Condvar(parking_lot::Condvar::new())
        }
        pub(crate) fn wait<T>(&self, guard: &mut MutexGuard<'_, T>) {
            self.0.wait(guard);
        }
        /// Waits until `deadline`; true if it returned because time ran out.
        pub(crate) fn wait_until<T>(
            &self,
            guard: &mut MutexGuard<'_, T>,
            deadline: Instant,
        ) -> bool {
            self.0.wait_until(guard, deadline).timed_out()
        }
        pub(crate) fn notify_one(&self) {
            self.0.notify_one();
        }
        /// Only for latches (a task's completion, the pool's termination),
        /// where every waiter must return; never for the work queue.
        pub(crate) fn notify_all(&self) {
            self.0.notify_all();
        }
    }
}

#[cfg(loom)]
mod imp {
    use std::ops::{Deref, DerefMut};
    use std::time::Instant;

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

    #[derive(Debug, Default)]
    pub(crate) struct Condvar(loom::sync::Condvar);

    impl Condvar {
        pub(crate) fn new() -> Self {
            Condvar(loom::sync::Condvar::new())
        }
        pub(crate) fn wait<T>(&self, guard: &mut MutexGuard<'_, T>) {
            let inner = guard.0.take().expect("guard present");
            guard.0 = Some(self.0.wait(inner).unwrap_or_else(|e| e.into_inner()));
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
            self.0.notify_one();
        }
        pub(crate) fn notify_all(&self) {
            self.0.notify_all();
        }
    }
}
