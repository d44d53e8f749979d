//! The submission inbox: where a new task goes when its submitter may skip
//! the pool lock.
//!
//! A submission normally takes the pool lock, pushes into the work queue
//! and, if it made a new head, signals a waiter. Under a stream of
//! submissions that lock is fought over by the submitter and every worker
//! taking tasks, and on a small machine the loser yields its CPU. When no
//! worker needs waking, the submitter has nothing to do under the pool lock
//! but the push: it can leave the task in this inbox instead, under a lock
//! of its own held for one `Vec::push`, and the next worker to take the
//! pool lock moves it into the queue ([`absorb`](crate::pool::shared::State::absorb)).
//!
//! # Invariants
//!
//! - The *gate* is open, and a submission may use the inbox, only while the
//!   pool is running, has all its workers (`max(core_threads, 1)`), and no
//!   worker sleeps unless one spins. Its fields are written under the pool
//!   lock and this lock, and read under this lock.
//! - A worker sleeps ([`Inbox::sleep`]) only after finding the tray empty in
//!   the same critical section that counts it as sleeping; a worker leaves,
//!   and the pool shuts down, by closing the gate first and absorbing what
//!   it let in. So a task pushed through an open gate is always absorbed:
//!   every worker is awake and will take the pool lock again, or the
//!   spinner is kicked (under this lock, so a kick never outlives the spin
//!   it was meant for).
//! - Whoever takes the pool lock absorbs the tray before it reads the
//!   queue, so everything submitted before, in the same thread or ordered
//!   by a lock, is seen: counts, cancels, purges and `shutdown_now` behave
//!   as if the submission had taken the pool lock itself, and a slow-path
//!   submission never overtakes an earlier fast one.

use crate::base::clock::Nanos;
use crate::base::sync::{AtomicBool, AtomicU64, Mutex, Ordering};
use crate::task::ptr::TaskPtr;
use crate::wait::Signal;

/// A task waiting in the inbox, with the clock reading its deadline came
/// from (the work queue's lane test needs it).
pub(super) type Incoming = (TaskPtr, Nanos);

/// See the module documentation.
pub(super) struct Inbox {
    tray: Mutex<Tray>,
    /// How many tasks the tray holds; a hint read without the lock (see
    /// [`Inbox::looks_empty`]).
    len: AtomicU64,
    /// Whether the gate was open when last changed; a hint read without the
    /// lock, so a submission that would be turned away does not take it.
    /// A stale `true` costs a look under the lock; a stale `false` sends a
    /// submission the slow way, which is always correct.
    open: AtomicBool,
    /// `max(core_threads, 1)`: the workers the pool must have for the gate
    /// to open (with fewer, a submission starts one, under the pool lock).
    staff: usize,
}

struct Tray {
    tasks: Vec<Incoming>,
    /// The pool accepts submissions (it is `RUNNING`).
    running: bool,
    /// Worker threads started and not yet exited (the pool's count).
    workers: usize,
    /// Workers asleep on the pool's condvar.
    sleeping: usize,
    /// A worker spins watching the kick (at most one does). Every task here
    /// is due, so each one ends the spin.
    spinner: bool,
}

impl Inbox {
    pub(crate) fn new(core_threads: usize) -> Self {
        Inbox {
            tray: Mutex::new(Tray {
                tasks: Vec::new(),
                running: true,
                workers: 0,
                sleeping: 0,
                spinner: false,
            }),
            len: AtomicU64::new(0),
            open: AtomicBool::new(false),
            staff: core_threads.max(1),
        }
    }

    /// Leaves `task` for the workers if the gate is open, kicking the
    /// spinner if there is one; gives it back otherwise (the caller takes
    /// the pool lock).
    pub(crate) fn offer(&self, task: TaskPtr, now: Nanos, signal: &Signal) -> Result<(), TaskPtr> {
        if !self.open.load(Ordering::Relaxed) {
            return Err(task);
        }
        let mut tray = self.tray.lock();
        if !tray.open(self.staff) {
            return Err(task);
        }
        tray.tasks.push((task, now));
        self.len.store(tray.tasks.len() as u64, Ordering::Relaxed);
        if tray.spinner {
            signal.kick();
        }
        Ok(())
    }

    /// True if the tray looked empty. A stale answer is harmless: whoever
    /// must not miss a task takes this lock before deciding (a worker
    /// before it sleeps or leaves, a shutdown after it closes the gate), and
    /// a kicked spinner reads the hint after the kick that follows it.
    #[inline]
    pub(super) fn looks_empty(&self) -> bool {
        self.len.load(Ordering::Relaxed) == 0
    }

    /// How many tasks the tray holds (read under its lock).
    pub(super) fn len(&self) -> usize {
        self.tray.lock().tasks.len()
    }

    /// Moves the tray's tasks, in submission order, into `out` (empty; its
    /// capacity is swapped in, so neither side reallocates in a stream).
    pub(crate) fn take(&self, out: &mut Vec<Incoming>) {
        debug_assert!(out.is_empty());
        let mut tray = self.tray.lock();
        std::mem::swap(&mut tray.tasks, out);
        self.len.store(0, Ordering::Relaxed);
    }

    /// A worker is about to sleep on the pool condvar (pool lock held):
    /// counts it as sleeping and returns true, or returns false if tasks
    /// wait here (absorb them and look again instead).
    pub(crate) fn sleep(&self) -> bool {
        let mut tray = self.tray.lock();
        if !tray.tasks.is_empty() {
            return false;
        }
        tray.sleeping += 1;
        self.update(&tray);
        true
    }

    /// The worker counted by [`sleep`](Self::sleep) is awake again.
    pub(crate) fn woke(&self) {
        let mut tray = self.tray.lock();
        tray.sleeping -= 1;
        self.update(&tray);
    }

    /// A worker starts spinning (pool lock held). It resets the kick
    /// before, so no earlier kick is taken for this spin. Fails (false) if
    /// tasks wait here: they came in after the worker absorbed, and no kick
    /// will announce them.
    pub(crate) fn spin_starts(&self) -> bool {
        let mut tray = self.tray.lock();
        if !tray.tasks.is_empty() {
            return false;
        }
        tray.spinner = true;
        self.update(&tray);
        true
    }

    /// The spin that [`spin_starts`](Self::spin_starts) began has ended.
    pub(crate) fn spin_ends(&self) {
        let mut tray = self.tray.lock();
        tray.spinner = false;
        self.update(&tray);
    }

    /// The pool's worker count changed (pool lock held). A count that fell
    /// may have closed the gate: the caller absorbs after this.
    pub(super) fn set_workers(&self, workers: usize) {
        let mut tray = self.tray.lock();
        tray.workers = workers;
        self.update(&tray);
    }

    /// Shutdown: no submission uses the inbox any more. The caller absorbs
    /// after this, so the tasks that came in before are queued.
    pub(crate) fn close(&self) {
        let mut tray = self.tray.lock();
        tray.running = false;
        self.update(&tray);
    }

    /// Refreshes the `open` hint (under the tray lock, after a gate change).
    fn update(&self, tray: &Tray) {
        self.open.store(tray.open(self.staff), Ordering::Relaxed);
    }
}

impl Tray {
    fn open(&self, staff: usize) -> bool {
        self.running && self.workers >= staff && (self.sleeping == 0 || self.spinner)
    }
}
