//! **Not public API.** Invariant checks for the crate's own tests
//! (`tests/model.rs`). Hidden from the docs, exempt from semver, and may
//! change or vanish at any time: do not use.
//!
//! Each check takes the structure's lock once, reads a snapshot and returns
//! `Err` with a description of the first broken invariant.

use crate::heap::NOT_QUEUED;
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
            let (pd, ps, _) = heap[(i - 1) / crate::heap::ARITY];
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
/// property on `(deadline, seq)`, each entry's key equals its task's, and
/// every queued task's recorded heap index is its own position.
pub fn check_pool<T: 'static>(handle: &ScheduledHandle<T>) -> Result<(), String> {
    let (_, shared) = handle.internals();
    let state = shared.lock();
    let heap = &state.heap;
    for i in 0..heap.len() {
        let e = heap.get(i).expect("in bounds");
        let h = e.task.header();
        if i > 0 {
            let p = heap.get((i - 1) / crate::heap::ARITY).expect("in bounds");
            if (p.deadline, p.task.header().seq) > (e.deadline, h.seq) {
                return Err(format!("heap property broken at {i}"));
            }
        }
        if e.deadline != h.deadline() {
            return Err(format!("entry {i}: key differs from task {}'s", h.seq));
        }
        let index = h.heap_index();
        if index != i {
            return Err(format!(
                "task {} records heap index {index}, but sits at {i}",
                h.seq
            ));
        }
    }
    Ok(())
}

/// The heap index `handle`'s task records: `None` when it carries the
/// not-queued mark.
pub fn pool_heap_index<T: 'static>(handle: &ScheduledHandle<T>) -> Option<usize> {
    let (header, shared) = handle.internals();
    let _state = shared.lock();
    let index = header.heap_index();
    (index != NOT_QUEUED).then_some(index)
}
