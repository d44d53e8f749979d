//! **Not public API.** Invariant checks for the crate's own tests
//! (`integration/tests/model.rs`). Hidden from the docs, exempt from semver, and may
//! change or vanish at any time: do not use.
//!
//! Each check takes the structure's lock once, reads a snapshot and returns
//! `Err` with a description of the first broken invariant.
//!
//! A handle is invariant in its result type: one coerced to a supertype
//! would ask its task for a result cell of another type (a review of the
//! thin handle found it covariant). This must not compile:
//!
//! ```compile_fail
//! use std::time::Duration;
//! use schedpool::{ScheduledHandle, ScheduledThreadPool};
//! fn f(_: &u8) {}
//! let pool = ScheduledThreadPool::new(1);
//! let h: ScheduledHandle<for<'a> fn(&'a u8)> =
//!     pool.schedule(|| f as for<'a> fn(&'a u8), Duration::ZERO).unwrap();
//! let h: ScheduledHandle<fn(&'static u8)> = h;
//! drop(h);
//! ```
//!
//! A handle dropped unbound is a warning (`#[must_use]`: dropping it
//! detaches the task, the trap of a timeout lost in a `select!` arm), so
//! under the doctests' `deny(warnings)` this must not compile:
//!
//! ```compile_fail
//! use std::time::Duration;
//! use schedpool::ScheduledThreadPool;
//! let pool = ScheduledThreadPool::new(1);
//! pool.schedule(|| (), Duration::from_secs(60)).unwrap();
//! ```
//!
//! while the same code that keeps, detaches or guards the handle does:
//!
//! ```
//! use std::time::Duration;
//! use schedpool::ScheduledThreadPool;
//! let pool = ScheduledThreadPool::new(1);
//! let kept = pool.schedule(|| (), Duration::from_secs(60)).unwrap();
//! pool.schedule(|| (), Duration::from_secs(60)).unwrap().detach();
//! let guard = pool.schedule(|| (), Duration::from_secs(60)).unwrap().cancel_on_drop();
//! assert!(kept.cancel());
//! drop(guard);
//! ```

use crate::structures::heap::NOT_QUEUED;
use crate::{DelayQueue, ScheduledHandle};

/// Checks a [`DelayQueue`]'s heap and slot table: the heap property on
/// `(deadline, seq)`; every queued entry's slot is occupied and records the
/// entry's own heap position; every slot not in the heap is free and carries
/// the not-queued mark.
pub fn check_delay_queue<T>(q: &DelayQueue<T>) -> Result<(), String> {
    let (heap, slots) = q.internals();
    let mut in_heap = vec![false; slots.len()];
    for (i, &(deadline, seq, slot)) in heap.iter().enumerate() {
        if i > 0 {
            let (pd, ps, _) = heap[(i - 1) / crate::structures::heap::ARITY];
            if (pd, ps) > (deadline, seq) {
                return Err(format!("heap property broken at {i}"));
            }
        }
        let Some(&(occupied, index)) = slots.get(slot) else {
            return Err(format!(
                "heap entry {i} names slot {slot}, which does not exist"
            ));
        };
        if !occupied {
            return Err(format!("heap entry {i} names free slot {slot}"));
        }
        if index != i {
            return Err(format!(
                "slot {slot} records heap index {index}, but sits at {i}"
            ));
        }
        if std::mem::replace(&mut in_heap[slot], true) {
            return Err(format!("slot {slot} is in the heap twice"));
        }
    }
    for (slot, &(occupied, index)) in slots.iter().enumerate() {
        if !in_heap[slot] && (occupied || index != NOT_QUEUED) {
            return Err(format!(
                "slot {slot} is not in the heap but is occupied={occupied} with index {index}"
            ));
        }
    }
    Ok(())
}

/// Checks the work queue of the pool that `handle` belongs to: the heap
/// property on `(deadline, seq)`, each entry's deadline equals its task's,
/// every heap task's recorded index is its own position, the due lane is
/// strictly increasing with every entry carrying the lane mark, and the
/// wheel's run is strictly increasing, its slots hold only tasks of their
/// own slot after the cursor, after the run, all carrying the wheel's marks.
pub fn check_pool<T: 'static>(handle: &ScheduledHandle<T>) -> Result<(), String> {
    let (_, shared) = handle.internals();
    let state = shared.lock();
    crate::queue::check::check(&state.queue)
}

/// Where `handle`'s task is queued, as a number: its heap position, or a
/// code for the other parts of the queue (the lane `usize::MAX - 1`, the
/// ready batch `usize::MAX - 3`, the wheel `usize::MAX - 4`); `None` when
/// it is not queued (a cancelled entry waiting to be discarded is not).
pub fn pool_heap_index<T: 'static>(handle: &ScheduledHandle<T>) -> Option<usize> {
    let (header, shared) = handle.internals();
    let _state = shared.lock();
    crate::queue::check::queued_code(header)
}

/// The nodes `handle`'s pool queue holds right now, those of cancelled
/// tasks not yet reclaimed included, but not those of tasks still in the
/// submission inbox or list: read under the pool lock without absorbing or
/// reclaiming (every other way to the lock does both first), for the loom
/// models of the submission list and of reclaiming
/// (`tests/loom/submissions.rs`, `tests/loom/cancel_reclaim.rs`), and for
/// telling queued tasks from listed ones in `tests/cancel_reclaim.rs`.
pub fn pool_queue_nodes<T: 'static>(handle: &ScheduledHandle<T>) -> usize {
    let (_, shared) = handle.internals();
    shared.queue_nodes()
}

/// The task nodes `handle`'s pool holds right now, paused tasks (kept
/// apart) aside: its queue's, those of cancelled tasks not yet reclaimed
/// included, and those of tasks still in the submission inbox or list that
/// no worker has moved into the queue yet. Read under the pool lock
/// without absorbing or reclaiming, for the tests of the reclaim bound
/// (`tests/cancel_reclaim.rs`).
pub fn pool_nodes<T: 'static>(handle: &ScheduledHandle<T>) -> usize {
    let (_, shared) = handle.internals();
    shared.nodes()
}

/// The durable queue's in-process leader/follower, for the loom models in
/// `tests/loom/durable_handoff.rs` (which drive it with a fake backend).
#[derive(Debug)]
pub struct DurableTaker(crate::durable::take::taker::Taker);

impl DurableTaker {
    /// A taker on `backend` with the default options.
    pub fn new(backend: std::sync::Arc<dyn crate::durable::DurableBackend>) -> Self {
        DurableTaker(crate::durable::take::taker::Taker::new(
            crate::durable::store::contained::Store::new(backend),
            crate::durable::QueueOptions::default(),
        ))
    }

    /// Blocks for one item, or `None` once closed.
    pub fn take(&self) -> Result<Option<crate::durable::Claimed>, crate::durable::DurableError> {
        Ok(self.0.take(None)?.map(|taken| taken.claimed))
    }

    /// Closes: blocked takers return `None`.
    pub fn close(&self) {
        self.0.close();
    }
}
