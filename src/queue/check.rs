//! Invariant checks of the work queue, for the crate's model tests
//! (through the doc-hidden [`crate::internals`]): each reads the parts under
//! the pool lock its caller holds and returns `Err` with the first broken
//! invariant.

use super::entry::Entry;
use super::location::Location;
use super::WorkQueue;
use crate::structures::heap::ARITY;
use crate::task::header::Header;

/// The heap property on `(deadline, seq)`, each entry's deadline equals its
/// task's, every heap task's location is its own position; the due lane is
/// strictly increasing with every entry carrying the lane's location; the
/// wheel's run is strictly increasing, its slots hold only tasks of their
/// own slot after the cursor, after the run, each at the position it
/// records; the ready batch is in order and its tasks say so.
pub(crate) fn check<L>(queue: &WorkQueue<L>) -> Result<(), String> {
    let heap: Vec<&Entry> = (0..queue.heap.len())
        .filter_map(|i| queue.heap.get(i))
        .collect();
    for (i, e) in heap.iter().enumerate() {
        let h = e.task.header();
        if i > 0 && heap[(i - 1) / ARITY].key() > e.key() {
            return Err(format!("heap property broken at {i}"));
        }
        if e.deadline != h.deadline() {
            return Err(format!(
                "entry {i}: deadline differs from task {}'s",
                h.seq()
            ));
        }
        let at = Location::of(h);
        if at != Location::Heap(i) {
            return Err(format!("task {} records {at:?}, but sits at {i}", h.seq()));
        }
    }
    let lane: Vec<&Entry> = queue.lane.iter().collect();
    for (i, e) in lane.iter().enumerate() {
        let h = e.task.header();
        let at = Location::of(h);
        if at != Location::Lane && (i == 0 || at != Location::LaneRemoved) {
            return Err(format!("lane task {} at {i} records {at:?}", h.seq()));
        }
        if i > 0 && lane[i - 1].key() >= e.key() {
            return Err(format!("lane out of order at {i}"));
        }
    }
    let (run, slots, cursor) = queue.wheel.parts();
    for (i, e) in run.iter().enumerate() {
        let at = Location::of(e.task.header());
        let live = matches!(at, Location::Wheel(_));
        if !live && (i == 0 || at != Location::RunRemoved) {
            return Err(format!("wheel run task at {i} records {at:?}"));
        }
        if i > 0 && run[i - 1].key() >= e.key() {
            return Err(format!("wheel run out of order at {i}"));
        }
    }
    for (slot, position, e) in &slots {
        let at = Location::of(e.task.header());
        if at != Location::Wheel(*position) {
            return Err(format!(
                "wheel slot {slot}'s task at {position} records {at:?}"
            ));
        }
        if e.deadline >> super::wheel::SHIFT != *slot || *slot <= cursor {
            return Err(format!(
                "task due {} in slot {slot} (cursor {cursor})",
                e.deadline
            ));
        }
        if run.last().is_some_and(|r| r.key() >= e.key()) {
            return Err("a slot's task sorts before the run's back".into());
        }
    }
    let ready = queue.ready.snapshot();
    for (i, (key, at)) in ready.iter().enumerate() {
        if !matches!(at, Location::Ready | Location::Wheel(_)) {
            return Err(format!("ready task {} at {i} records {at:?}", key.1));
        }
        if i > 0 && ready[i - 1].0 >= *key {
            return Err(format!("ready batch out of order at {i}"));
        }
    }
    Ok(())
}

/// A live task's location as a number, for the model tests: its heap
/// position, or for the other parts the codes the tests name (the lane
/// `usize::MAX - 1`, the ready batch `usize::MAX - 3`, the wheel
/// `usize::MAX - 4`); `None` when it is not queued or a cancelled entry
/// waits to be discarded.
pub(crate) fn queued_code(header: &Header) -> Option<usize> {
    match Location::of(header) {
        Location::Heap(i) => Some(i),
        Location::Lane => Some(usize::MAX - 1),
        Location::Ready => Some(usize::MAX - 3),
        Location::Wheel(_) => Some(usize::MAX - 4),
        Location::NotQueued | Location::LaneRemoved | Location::RunRemoved => None,
    }
}

/// The unit and model tests' view of locations, as the numbers they
/// compare (the heap position, or a code per part).
#[cfg(all(test, not(loom)))]
pub(super) mod marks {
    use super::super::location::Location;
    use super::super::{Entry, WorkQueue};
    use crate::base::clock::Nanos;
    use crate::task::header::Header;

    pub(crate) use crate::structures::heap::NOT_QUEUED;
    pub(in crate::queue) const IN_LANE: usize = usize::MAX - 1;
    pub(in crate::queue) const LANE_REMOVED: usize = usize::MAX - 2;
    pub(in crate::queue) const IN_READY: usize = usize::MAX - 3;
    pub(in crate::queue) const IN_WHEEL: usize = usize::MAX - 4;
    /// A cancelled entry in the wheel's run.
    pub(in crate::queue) const WHEEL_REMOVED: usize = usize::MAX - 5;

    /// A location as its number.
    pub(crate) fn code(location: Location) -> usize {
        match location {
            Location::NotQueued => NOT_QUEUED,
            Location::Heap(i) => i,
            Location::Lane => IN_LANE,
            Location::LaneRemoved => LANE_REMOVED,
            Location::Ready => IN_READY,
            Location::Wheel(_) => IN_WHEEL,
            Location::RunRemoved => WHEEL_REMOVED,
        }
    }

    /// The task's location as its number.
    pub(crate) fn mark(header: &Header) -> usize {
        code(Location::of(header))
    }

    impl<L> WorkQueue<L> {
        /// The ready batch's keys and location numbers.
        pub(in crate::queue) fn ready_snapshot(&self) -> Vec<((Nanos, u64), usize)> {
            self.ready
                .snapshot()
                .into_iter()
                .map(|(k, l)| (k, code(l)))
                .collect()
        }

        /// The wheel's run, its slots' entries with their absolute slot
        /// numbers, and its cursor.
        pub(in crate::queue) fn wheel_parts(&self) -> (Vec<&Entry>, Vec<(u64, &Entry)>, u64) {
            let (run, slots, cursor) = self.wheel.parts();
            (
                run,
                slots.into_iter().map(|(s, _, e)| (s, e)).collect(),
                cursor,
            )
        }

        /// The heap entries in array order, and the lane.
        pub(crate) fn parts(&self) -> (Vec<&Entry>, Vec<&Entry>) {
            let heap = (0..self.heap.len())
                .filter_map(|i| self.heap.get(i))
                .collect();
            (heap, self.lane.iter().collect())
        }
    }
}
