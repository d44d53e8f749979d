//! The ready batch: due one-shot tasks that a worker moved out of the work
//! queue in one critical section, so that workers can take them one by one
//! without the pool lock.
//!
//! Why: with producers and workers all on the pool lock, every task crosses
//! it twice (pushed, then popped), and those critical sections are serial
//! (`docs/performance.md`, W7). A worker that takes a due task under the
//! pool lock also moves up to [`BATCH`]` - 1` more due tasks here; they then
//! cost the workers this small lock, which producers never touch, instead
//! of the pool lock.
//!
//! The batch's lock also guards a *ledger* `L` that its user keeps: the
//! pool's run accounting ([`crate::pool::ready_runs`]), which must change
//! in the same critical section as a take. The batch never reads it.
//!
//! # Invariants
//!
//! - Only plain one-shot tasks ([`Kind::Once`](crate::task::header::Kind)) that are
//!   `SCHEDULED` enter, only while the pool is `RUNNING`, and only when due:
//!   everything here comes before everything still in the heap and the lane
//!   (it was their front when moved), and in `(deadline, seq)` order. (One
//!   from the wheel's run may enter cancelled: by a cancel that swapped its
//!   state and waits for the pool lock, or, with `remove_on_cancel(false)`,
//!   one that never removes it; see `WorkQueue::fill_ready`.)
//! - A task here is still queued: it counts in the queue's length, keeps
//!   `SCHEDULED` (but see above), records `Location::Ready` as its heap index (set under the pool
//!   lock when it enters, reset under this lock when it leaves), or, moved
//!   from the wheel's run without a look at its header, keeps
//!   `Location::Wheel` (removals look here for such a
//!   task not in a slot), and cancel, pause,
//!   trigger, shutdown and `shutdown_now` find it here (under the pool lock,
//!   then this lock: the only lock order). It leaves by [`Ready::take_with`]
//!   (a worker, without the pool lock), or under the pool lock by a pop,
//!   removal or drain.
//! - `len` mirrors the deque's length, written under this lock (only by
//!   the release of an [`Edit`], the guard every change to the deque holds). Read under
//!   the pool lock it may be high (a worker just took the last one, which is
//!   then already taken) but never low: only a worker holding the pool lock
//!   adds. So a waiter that trusts it wakes at worst once for nothing.
//! - Nothing here is stranded while workers sleep: the queue's head reads
//!   as due (0) while the batch is non-empty, so no waiter sleeps then, and
//!   the worker that fills it takes from it, without the pool lock or under
//!   it, until it is empty (its unwinding guard starts a replacement if
//!   work is left).

use std::collections::VecDeque;

use crossbeam_utils::CachePadded;

use super::entry::{is_task, Entry};
use super::location::Location;
use crate::base::sync::{AtomicUsize, Mutex, MutexGuard, Ordering};
use crate::task::ptr::TaskPtr;

/// How many due tasks one take may move out of the queue, the one it runs
/// included (so the batch holds at most `BATCH - 1`). With 32, W7 ran
/// 2.54 → 2.97 M/s and W3 4.75 → 5.97 M/s in alternating runs; 8 and 128
/// were within the noise of 32 (`docs/performance-log.md`).
pub(crate) const BATCH: usize = 32;

/// Due one-shot tasks, taken without the pool lock. Shared by the pool's
/// `Shared` (for the workers' lock-free takes) and its work queue. `L` is
/// the ledger its user keeps under its lock (see the module docs).
pub(crate) struct Ready<L> {
    inner: CachePadded<Mutex<Inner<L>>>,
    /// The deque's length, for reads under the pool lock (see the invariants).
    len: CachePadded<AtomicUsize>,
}

struct Inner<L> {
    items: VecDeque<Entry>,
    ledger: L,
}

/// The batch's lock held for a change to the deque. Releasing it mirrors
/// the deque's length into [`Ready::len`], still under the lock: the one
/// place `len` is written.
struct Edit<'a, L> {
    inner: MutexGuard<'a, Inner<L>>,
    len: &'a AtomicUsize,
}

impl<L> Drop for Edit<'_, L> {
    fn drop(&mut self) {
        self.len.store(self.inner.items.len(), Ordering::SeqCst);
    }
}

impl<L> std::ops::Deref for Edit<'_, L> {
    type Target = Inner<L>;
    fn deref(&self) -> &Inner<L> {
        &self.inner
    }
}

impl<L> std::ops::DerefMut for Edit<'_, L> {
    fn deref_mut(&mut self) -> &mut Inner<L> {
        &mut self.inner
    }
}

impl<L: Default> Ready<L> {
    /// An empty batch with a fresh ledger.
    pub(crate) fn new() -> Self {
        Ready {
            inner: CachePadded::new(Mutex::new(Inner {
                items: VecDeque::with_capacity(BATCH),
                ledger: L::default(),
            })),
            len: CachePadded::new(AtomicUsize::new(0)),
        }
    }
}

impl<L> Ready<L> {
    /// The lock, for a change to the deque: `len` is written from it when
    /// the guard is released.
    fn edit(&self) -> Edit<'_, L> {
        Edit {
            inner: self.inner.lock(),
            len: &self.len,
        }
    }

    /// How many are here, possibly high (see the invariants).
    #[inline]
    pub(crate) fn hint_len(&self) -> usize {
        self.len.load(Ordering::SeqCst)
    }

    /// A worker's take, without the pool lock: the first task, if any.
    /// `count` runs on the ledger in the same critical section, told
    /// whether a task came out, so the ledger changes with the take.
    #[inline]
    pub(crate) fn take_with(&self, count: impl FnOnce(&mut L, bool)) -> Option<TaskPtr> {
        let mut inner = self.edit();
        let entry = inner.items.pop_front();
        count(&mut inner.ledger, entry.is_some());
        let entry = entry?;
        // Under this lock, as every move out of the batch: a removal under
        // the pool lock that read `IN_READY` (or `IN_WHEEL`) searches here
        // and misses it.
        Location::NotQueued.set(entry.task.header());
        Some(entry.task)
    }

    /// Reads or changes the ledger under the batch's lock (the deque
    /// untouched).
    #[inline]
    pub(crate) fn ledger<R>(&self, f: impl FnOnce(&mut L) -> R) -> R {
        f(&mut self.inner.lock().ledger)
    }

    /// The deadline of the first task here, if any (the oldest: the batch
    /// is in queue order).
    #[cfg(feature = "metrics")]
    pub(crate) fn front_deadline(&self) -> Option<crate::base::clock::Nanos> {
        self.inner.lock().items.front().map(|e| e.deadline)
    }

    // ----- under the pool lock (through the work queue) -----

    /// Appends `entries` (due, in queue order, marked `Location::Ready` or,
    /// from the wheel's run, still `Location::Wheel`).
    pub(crate) fn extend(&self, entries: impl Iterator<Item = Entry>) {
        self.edit().items.extend(entries);
    }

    /// Removes the first task (a worker taking under the pool lock).
    pub(crate) fn pop(&self) -> Option<Entry> {
        self.edit().items.pop_front()
    }

    /// Removes the task `task` if it is still here.
    pub(crate) fn remove(&self, task: *const u8) -> Option<Entry> {
        let mut inner = self.edit();
        let at = inner.items.iter().position(|e| is_task(e, task))?;
        inner.items.remove(at)
    }

    /// Keeps the tasks for which `keep` is true; appends the others to
    /// `removed`.
    pub(crate) fn retain(&self, keep: &mut impl FnMut(&Entry) -> bool, removed: &mut Vec<Entry>) {
        let mut inner = self.edit();
        let items = std::mem::take(&mut inner.items);
        for entry in items {
            if keep(&entry) {
                inner.items.push_back(entry);
            } else {
                removed.push(entry);
            }
        }
    }

    /// Removes every task, in order, appending them to `out`.
    pub(super) fn drain_into(&self, out: &mut Vec<Entry>) {
        out.extend(self.edit().items.drain(..));
    }

    /// For [`crate::internals`]: each task's key and recorded heap index,
    /// in order.
    pub(super) fn snapshot(&self) -> Vec<((u64, u64), Location)> {
        let inner = self.inner.lock();
        inner
            .items
            .iter()
            .map(|e| (e.key(), Location::of(e.task.header())))
            .collect()
    }
}
