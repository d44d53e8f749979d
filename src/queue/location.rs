//! Where the work queue keeps a task: one type, [`Location`], stored in the
//! task's header as 32 bits that only this module encodes and decodes
//! (Java's `heapIndex`, grown to name every part of the queue).
//!
//! # Invariants
//!
//! - A queued task's location names the part that holds it: its position
//!   in the heap, its position in a wheel slot (its slot follows from its
//!   deadline), or the lane, the wheel's run or the ready batch. A task
//!   that no part holds is [`Location::NotQueued`].
//! - `LaneRemoved` and `RunRemoved` mark a cancelled task whose entry a
//!   FIFO part (the due lane, the wheel's sorted run) still holds until its
//!   front reaches it: those parts cannot take an entry out of the middle in
//!   O(1). The closure was dropped by the cancel already.
//! - Written under the pool lock, or, for a task leaving the ready batch,
//!   under the batch's lock ([`super::ready`]).

use crate::structures::heap::NOT_QUEUED as NOT_IN_HEAP;
use crate::task::header::Header;

/// See the module documentation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Location {
    /// In no part of the queue.
    NotQueued,
    /// In the indexed heap, at this position.
    Heap(usize),
    /// In the due lane.
    Lane,
    /// Cancelled; its entry waits in the due lane for the front.
    LaneRemoved,
    /// In the near-future wheel: at this position of its deadline's slot
    /// while that slot is after the wheel's cursor, else in the wheel's
    /// sorted run or, moved there by the fill without a look at its header,
    /// in the ready batch (the position is then stale; see
    /// [`super::wheel`]). Three meanings, kept because one would cost a
    /// header write per task under the pool lock (W7 about 10%:
    /// `docs/performance-log.md`, "The header-free wheel fill,
    /// re-measured").
    Wheel(usize),
    /// Cancelled; its entry waits in the wheel's run for the front.
    RunRemoved,
    /// In the ready batch.
    Ready,
}

/// [`Location::NotQueued`]'s code: the heap's one "not queued" index
/// ([`NOT_QUEUED`](crate::structures::heap::NOT_QUEUED)), cut to 32 bits.
const NOT_QUEUED: u32 = NOT_IN_HEAP as u32;
const LANE: u32 = u32::MAX - 1;
const LANE_REMOVED: u32 = u32::MAX - 2;
const READY: u32 = u32::MAX - 3;
const RUN_REMOVED: u32 = u32::MAX - 4;
/// `Wheel(p)` is `WHEEL + p`; `Heap(i)` is `i`, below it.
const WHEEL: u32 = 1 << 31;
/// The first code above the wheel's positions.
const SPECIAL: u32 = u32::MAX - 15;

/// The most entries the heap may hold: its positions must stay below
/// [`WHEEL`]'s codes. (2^31 tasks would take hundreds of GiB.)
pub(super) const HEAP_MAX: usize = WHEEL as usize;

/// The most entries one wheel slot may hold; a push beyond goes to the heap.
pub(super) const SLOT_MAX: usize = (SPECIAL - WHEEL) as usize;

impl Location {
    /// The task's location.
    #[inline]
    pub(crate) fn of(header: &Header) -> Location {
        match header.location_bits() {
            NOT_QUEUED => Location::NotQueued,
            LANE => Location::Lane,
            LANE_REMOVED => Location::LaneRemoved,
            READY => Location::Ready,
            RUN_REMOVED => Location::RunRemoved,
            bits if bits < WHEEL => Location::Heap(bits as usize),
            bits if bits < SPECIAL => Location::Wheel((bits - WHEEL) as usize),
            bits => unreachable!("an unused location code {bits}"),
        }
    }

    /// Records `self` as the task's location.
    #[inline]
    pub(super) fn set(self, header: &Header) {
        let bits = match self {
            Location::NotQueued => NOT_QUEUED,
            Location::Lane => LANE,
            Location::LaneRemoved => LANE_REMOVED,
            Location::Ready => READY,
            Location::RunRemoved => RUN_REMOVED,
            Location::Heap(i) => {
                debug_assert!(i < HEAP_MAX, "heap position {i} out of range");
                i as u32
            }
            Location::Wheel(p) => {
                debug_assert!(p < SLOT_MAX, "slot position {p} out of range");
                WHEEL + p as u32
            }
        };
        header.set_location_bits(bits);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::task::header::Kind;

    #[test]
    fn every_location_round_trips_through_its_bits() {
        let header = Header::new(1, 0, Kind::Once);
        assert_eq!(Location::of(&header), Location::NotQueued, "a new task");
        for location in [
            Location::NotQueued,
            Location::Heap(0),
            Location::Heap(HEAP_MAX - 1),
            Location::Lane,
            Location::LaneRemoved,
            Location::Wheel(0),
            Location::Wheel(SLOT_MAX - 1),
            Location::RunRemoved,
            Location::Ready,
        ] {
            location.set(&header);
            assert_eq!(Location::of(&header), location);
        }
    }
}
