//! The pool's queue entry, shared by the work queue's parts (the heap, the
//! lane, the wheel and the ready batch), and the recorder that keeps each
//! task's heap index in the task itself (Java's `setIndex`).

use super::location::Location;
use crate::base::clock::Nanos;
use crate::structures::heap::{HeapEntry, Positions, NOT_QUEUED};
use crate::task::ptr::TaskPtr;

/// A queued task: its deadline inline, so comparing two entries
/// dereferences a task only on a tie (for the sequence number, which the
/// header has); the task behind it, as a thin pointer. 16 bytes: every byte
/// here is paid per pending task, and sifts move whole entries.
pub(crate) struct Entry {
    pub(crate) deadline: Nanos,
    pub(crate) task: TaskPtr,
}

impl Entry {
    pub(crate) fn new(deadline: Nanos, task: TaskPtr) -> Self {
        Entry { deadline, task }
    }

    pub(crate) fn key(&self) -> (Nanos, u64) {
        (self.deadline, self.task.header().seq())
    }
}

impl HeapEntry for Entry {
    #[inline]
    fn deadline(&self) -> u64 {
        self.deadline
    }
    #[inline]
    fn seq(&self) -> u64 {
        self.task.header().seq()
    }
}

/// Records heap positions in the tasks themselves (Java's `setIndex`).
pub(super) struct InTask;

impl Positions<Entry> for InTask {
    #[inline]
    fn set(&mut self, entry: &Entry, index: usize) {
        let location = if index == NOT_QUEUED {
            Location::NotQueued
        } else {
            Location::Heap(index)
        };
        location.set(entry.task.header());
    }
}

/// Is `task` the task behind `entry`? (Data pointers; vtables may differ.)
pub(super) fn is_task(entry: &Entry, task: *const u8) -> bool {
    std::ptr::eq(entry.task.as_ptr(), task)
}
