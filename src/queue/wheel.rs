//! The near-future wheel: one-shot tasks due within the next ~16.8 ms wait
//! in time slots in front of the heap, and a slot is sorted only when the
//! queue's front reaches it.
//!
//! Why: with producers and workers streaming tasks a few milliseconds out
//! (W7), the heap's pop was the workers' largest cost and ran under the pool
//! lock: a sift-down of about seven levels, each writing the moved task's
//! index into that task (`docs/performance-log.md`). Here a push is an append
//! to a slot, a slot's tasks are sorted together once (a small sort over
//! contiguous entries), and a pop takes the sorted run's front in O(1),
//! writing no other task. Tasks further out, periodic tasks and due ones
//! keep the heap and the lane.
//!
//! # Invariants
//!
//! - Absolute slot `s = deadline >> SHIFT` lives at `slots[s % SLOTS]`, and
//!   only slots in `(cursor, cursor + SLOTS)` hold entries, so no two
//!   absolute slots share a place. Every entry in a slot is due at or after
//!   [`Wheel::boundary`], `(cursor + 1) << SHIFT`.
//! - A task's place is decided once: the work queue asks
//!   [`Wheel::slot_for`] before it builds the entry, and a task refused
//!   there (due, beyond the horizon, not after the cursor's slot, or its
//!   slot full) goes straight to the heap without entering here; only
//!   one-shot tasks are offered.
//! - `occupied` has bit `i` set exactly when `slots[i]` is non-empty;
//!   `in_slots` counts their entries. A slot holds no cancelled entry.
//! - A task in a slot carries `Location::Wheel(p)`, `p` its position in
//!   the slot, so a cancel or a pause takes it out in O(1) (a swap with the
//!   slot's last entry, whose position is rewritten).
//! - The run holds the tasks of slots up to `cursor`, strictly increasing
//!   in `(deadline, seq)`; its front is never a cancelled entry. A task in
//!   the run keeps the `Location::Wheel(p)` it had in its slot (stale: its
//!   slot is at or before the cursor, which tells the two apart); a
//!   cancelled one there carries `Location::RunRemoved`: it no longer counts
//!   in `live`, its closure was dropped by the cancel, and its entry (one
//!   reference) is discarded when it reaches the run's front, as the lane
//!   does for its own, or by a sweep once more than 1,024 of them outnumber
//!   the live tasks: they never exceed `max(1024, live)`. The run holds
//!   tasks that are due or within one slot of due, so on the real clock
//!   the workers reach them at once unless the pool is saturated.
//! - The work queue keeps its front exact: whenever its first task (of the
//!   heap, the lane and the run) is missing or not before `boundary`, it
//!   calls [`Wheel::advance`] until one is (`WorkQueue::settle`).
//! - A task taken from the run by [`Wheel::pop_front_unmarked`] (the ready
//!   batch's fill) keeps its `Location::Wheel` after it left: its slot is at or
//!   before the cursor, so [`Wheel::holds_in_slot`] is false for it, and
//!   the work queue's removals look for such a task in the ready batch
//!   before the wheel ([`crate::queue::ready`]). (So `Location::Wheel` has
//!   three meanings: in a slot, in the run, in the batch. Giving it one
//!   takes a header write per task under the pool lock, which cost W7
//!   about 10%: `docs/performance-log.md`, "The header-free wheel fill,
//!   re-measured".)

use std::collections::VecDeque;

use super::entry::{is_task, Entry};
use super::lane::discard_marked_front;
use super::location::{Location, SLOT_MAX};
use crate::base::clock::Nanos;
use crate::task::header::{Header, Kind};

/// A slot spans `2^SHIFT` ns (16.4 µs): W7's stream puts a few dozen tasks
/// in each, a cheap sort.
pub(super) const SHIFT: u32 = 14;

/// Slots in the wheel: a horizon of 1024 × 16.4 µs ≈ 16.8 ms.
const SLOTS: usize = 1024;

/// The run, each slot's entries with its absolute slot number and
/// position, and the cursor (for [`super::check`]).
pub(super) type Parts<'a> = (Vec<&'a Entry>, Vec<(u64, usize, &'a Entry)>, u64);

/// A place [`Wheel::slot_for`] chose for a task, which [`Wheel::push`]
/// takes: the slot's index, and the cursor (caught up with the clock when
/// no slot held a task).
pub(super) struct Slot {
    at: usize,
    cursor: u64,
}

/// See the module documentation.
pub(super) struct Wheel {
    slots: Vec<Vec<Entry>>,
    occupied: [u64; SLOTS / 64],
    in_slots: usize,
    /// The last absolute slot moved to the run.
    cursor: u64,
    run: VecDeque<Entry>,
    /// Live (not cancelled) tasks in the slots and the run.
    live: usize,
    /// Cancelled entries in the run, not yet discarded: while there are
    /// none, popping reads no task's header.
    removed: usize,
    /// Emptied slot vectors, kept for the next slot that fills: a few
    /// circulate (as many as slots are occupied at once), not one per slot.
    spare: Vec<Vec<Entry>>,
}

impl Wheel {
    pub(crate) fn new() -> Self {
        Wheel {
            slots: (0..SLOTS).map(|_| Vec::new()).collect(),
            occupied: [0; SLOTS / 64],
            in_slots: 0,
            cursor: 0,
            run: VecDeque::new(),
            live: 0,
            removed: 0,
            spare: Vec::new(),
        }
    }

    /// Live tasks here.
    pub(crate) fn len(&self) -> usize {
        self.live
    }

    /// Where a one-shot task due at `deadline` would wait here, pushed at
    /// `now`: a slot after the cursor's and within the horizon, with room
    /// left; `None` (the heap's) otherwise. The work queue asks before it
    /// builds the entry, so a task beyond the horizon never comes here.
    #[inline]
    pub(super) fn slot_for(&self, deadline: Nanos, now: Nanos) -> Option<Slot> {
        // Nothing waits in a slot: the cursor may catch up with the clock.
        let cursor = if self.in_slots == 0 {
            self.cursor.max(now >> SHIFT)
        } else {
            self.cursor
        };
        let slot = deadline >> SHIFT;
        if deadline <= now || slot <= cursor || slot - cursor >= SLOTS as u64 {
            return None;
        }
        let at = (slot % SLOTS as u64) as usize;
        (self.slots[at].len() < SLOT_MAX).then_some(Slot { at, cursor })
    }

    /// Appends `entry` to the slot [`slot_for`](Self::slot_for) chose for
    /// its deadline (with nothing changed here in between).
    pub(super) fn push(&mut self, slot: Slot, entry: Entry) {
        let Slot { at, cursor } = slot;
        debug_assert_eq!(((entry.deadline >> SHIFT) % SLOTS as u64) as usize, at);
        debug_assert!(entry.task.header().kind() == Kind::Once);
        self.cursor = cursor;
        Location::Wheel(self.slots[at].len()).set(entry.task.header());
        if self.slots[at].capacity() == 0 {
            if let Some(spare) = self.spare.pop() {
                self.slots[at] = spare;
            }
        }
        self.slots[at].push(entry);
        self.occupied[at / 64] |= 1 << (at % 64);
        self.in_slots += 1;
        self.live += 1;
    }

    /// The earliest deadline a task still in a slot may have, if any is.
    #[inline]
    pub(super) fn boundary(&self) -> Option<Nanos> {
        (self.in_slots > 0).then(|| (self.cursor + 1) << SHIFT)
    }

    /// The run's first task (live).
    #[inline]
    pub(crate) fn front(&self) -> Option<&Entry> {
        self.run.front()
    }

    /// Bounds for the second task: the run's first two, and the start of
    /// the first occupied slot (no task in a slot is due before it).
    ///
    /// Not the [`boundary`](Self::boundary), the cursor's next slot: a
    /// successor times the second task by this bound, and with tasks a few
    /// milliseconds apart the boundary is the head's own time, so the
    /// successor woke with the head and then waited the whole gap to the
    /// next task awake (a 3 ms spin that kept the worker running the head
    /// off its CPU: the task ran one period late; `docs/performance-log.md`,
    /// "A successor that spun the gap to the next task").
    pub(super) fn first_deadlines(&self) -> [Option<Nanos>; 3] {
        [
            self.run.front().map(|e| e.deadline),
            self.run.get(1).map(|e| e.deadline),
            self.first_slot_start(),
        ]
    }

    /// When the first occupied slot begins: no task in a slot is due
    /// before it. `None` when every slot is empty.
    fn first_slot_start(&self) -> Option<Nanos> {
        if self.in_slots == 0 {
            return None;
        }
        let step = self.next_occupied()?;
        Some((self.cursor + step) << SHIFT)
    }

    /// Whether cancelled entries wait here (while none do, every entry is
    /// a live one-shot task).
    #[inline]
    pub(super) fn has_removed(&self) -> bool {
        self.removed > 0
    }

    /// Whether a task of this deadline that carries `Location::Wheel` is in
    /// a slot; if not, it is in the run or was moved to the ready batch
    /// unmarked (see the invariants).
    #[inline]
    pub(super) fn holds_in_slot(&self, deadline: Nanos) -> bool {
        deadline >> SHIFT > self.cursor
    }

    /// Removes the run's first task without touching its header (it keeps
    /// its `Location::Wheel`; see the invariants). Only while no cancelled entry
    /// waits here ([`has_removed`](Self::has_removed) is false), so the
    /// new front needs no discard either.
    #[inline]
    pub(super) fn pop_front_unmarked(&mut self) -> Option<Entry> {
        debug_assert!(self.removed == 0, "an unmarked pop with cancelled entries");
        let entry = self.run.pop_front()?;
        self.live -= 1;
        self.give_room_back();
        Some(entry)
    }

    /// Removes the run's first task.
    pub(crate) fn pop_front(&mut self) -> Option<Entry> {
        let entry = self.run.pop_front()?;
        self.live -= 1;
        self.discard_removed_front();
        self.give_room_back();
        Some(entry)
    }

    /// A burst into one slot is over once the run is empty: give its room
    /// back.
    #[inline]
    fn give_room_back(&mut self) {
        if self.run.is_empty() && self.run.capacity() > 1024 {
            self.run.shrink_to(64);
        }
    }

    /// Moves the next occupied slot, sorted, to the run's back. Call only
    /// while [`boundary`] is `Some`.
    ///
    /// [`boundary`]: Self::boundary
    pub(crate) fn advance(&mut self) {
        let Some(step) = self.next_occupied() else {
            debug_assert!(false, "advance with every slot empty");
            return;
        };
        self.cursor += step;
        let at = (self.cursor % SLOTS as u64) as usize;
        self.occupied[at / 64] &= !(1 << (at % 64));
        let mut slot = std::mem::take(&mut self.slots[at]);
        self.in_slots -= slot.len();
        slot.sort_unstable_by(|a, b| {
            a.deadline
                .cmp(&b.deadline)
                .then_with(|| a.task.header().seq().cmp(&b.task.header().seq()))
        });
        debug_assert!(self
            .run
            .back()
            .is_none_or(|b| slot.first().is_none_or(|f| b.key() < f.key())));
        self.run.extend(slot.drain(..));
        // Keep its room for the next slot to fill, unless a burst made it
        // large or enough are kept.
        if slot.capacity() <= 64 && self.spare.len() < 64 {
            self.spare.push(slot);
        }
    }

    /// How many slots after the cursor the next occupied one is.
    fn next_occupied(&self) -> Option<u64> {
        let start = ((self.cursor + 1) % SLOTS as u64) as usize;
        // Words from the start's, wrapping around once (the start's word
        // again last, for the bits before the start).
        for k in 0..=SLOTS / 64 {
            let w = (start / 64 + k) % (SLOTS / 64);
            let mut bits = self.occupied[w];
            if k == 0 {
                bits &= !0u64 << (start % 64);
            }
            if bits != 0 {
                let at = w * 64 + bits.trailing_zeros() as usize;
                let step = (at + SLOTS - start) % SLOTS;
                return Some(step as u64 + 1);
            }
        }
        None
    }

    /// A cancelled task, which carries `Location::Wheel`: out of its slot
    /// at once, returning its entry; in the run, marked (see the
    /// invariants), returning `None`.
    pub(crate) fn cancel(&mut self, header: &Header) -> Option<Entry> {
        let Location::Wheel(at) = Location::of(header) else {
            return None;
        };
        if self.holds_in_slot(header.deadline()) {
            return Some(self.take_from_slot(header.deadline(), at));
        }
        Location::RunRemoved.set(header);
        self.live -= 1;
        self.removed += 1;
        self.discard_removed_front();
        if self.removed > 1024 && self.removed > self.live {
            // Schedule-and-cancel behind a front that does not move (a
            // frozen manual clock, a busy pool) would pile entries up:
            // sweep once they outnumber the live tasks (amortized O(1),
            // each sweep at least halves what is here).
            self.retain(&mut |_| true, &mut Vec::new());
        }
        None
    }

    /// Takes the entry at position `at` of the slot of `deadline` out, in
    /// O(1): the slot's last entry takes its place and is told so.
    fn take_from_slot(&mut self, deadline: Nanos, at: usize) -> Entry {
        let slot = ((deadline >> SHIFT) % SLOTS as u64) as usize;
        let entry = self.slots[slot].swap_remove(at);
        if let Some(moved) = self.slots[slot].get(at) {
            Location::Wheel(at).set(moved.task.header());
        }
        self.in_slots -= 1;
        if self.slots[slot].is_empty() {
            self.occupied[slot / 64] &= !(1 << (slot % 64));
        }
        self.live -= 1;
        Location::NotQueued.set(entry.task.header());
        entry
    }

    /// Takes the live task out wherever it is here: from its slot in O(1),
    /// from the run by a linear search (the run holds tasks due now or
    /// within one slot). For pause, trigger and reschedule.
    pub(crate) fn remove(&mut self, header: &Header, task: *const u8) -> Option<Entry> {
        let Location::Wheel(at) = Location::of(header) else {
            return None;
        };
        if self.holds_in_slot(header.deadline()) {
            return Some(self.take_from_slot(header.deadline(), at));
        }
        let i = self.run.iter().position(|e| is_task(e, task))?;
        let entry = self.run.remove(i)?;
        self.live -= 1;
        Location::NotQueued.set(entry.task.header());
        self.discard_removed_front();
        Some(entry)
    }

    /// Keeps the live tasks for which `keep` is true; appends the others
    /// to `removed` (cancelled entries are discarded).
    pub(crate) fn retain(
        &mut self,
        keep: &mut impl FnMut(&Entry) -> bool,
        removed: &mut Vec<Entry>,
    ) {
        let mut split = |entries: &mut dyn Iterator<Item = Entry>, kept: &mut Vec<Entry>| {
            for entry in entries {
                let header = entry.task.header();
                if Location::of(header) == Location::RunRemoved {
                    Location::NotQueued.set(header);
                } else if keep(&entry) {
                    kept.push(entry);
                } else {
                    Location::NotQueued.set(header);
                    removed.push(entry);
                }
            }
        };
        let mut kept = Vec::new();
        split(&mut std::mem::take(&mut self.run).into_iter(), &mut kept);
        self.run = kept.drain(..).collect();
        for at in 0..SLOTS {
            if !self.slots[at].is_empty() {
                split(
                    &mut std::mem::take(&mut self.slots[at]).into_iter(),
                    &mut kept,
                );
                for (p, e) in kept.iter().enumerate() {
                    Location::Wheel(p).set(e.task.header());
                }
                self.slots[at] = std::mem::take(&mut kept);
            }
        }
        self.recount();
    }

    /// After a rebuild: the counts and the bitmap from the slots and the run.
    fn recount(&mut self) {
        self.in_slots = 0;
        self.occupied = [0; SLOTS / 64];
        for (at, slot) in self.slots.iter().enumerate() {
            if !slot.is_empty() {
                self.in_slots += slot.len();
                self.occupied[at / 64] |= 1 << (at % 64);
            }
        }
        self.live = self.run.len() + self.in_slots;
        // `retain` discarded every cancelled entry.
        self.removed = 0;
        self.discard_removed_front();
    }

    /// Discards cancelled entries from the run's front.
    fn discard_removed_front(&mut self) {
        discard_marked_front(&mut self.run, &mut self.removed, Location::RunRemoved);
    }

    /// The run's room, for a test.
    #[cfg(all(test, not(loom)))]
    pub(super) fn run_capacity(&self) -> usize {
        self.run.capacity()
    }

    /// For [`super::check`]: the run, then each slot's entries with its
    /// absolute slot number and position, and the cursor.
    pub(super) fn parts(&self) -> Parts<'_> {
        let mut slots = Vec::new();
        for step in 1..SLOTS as u64 {
            let slot = self.cursor + step;
            for (p, e) in self.slots[(slot % SLOTS as u64) as usize]
                .iter()
                .enumerate()
            {
                slots.push((slot, p, e));
            }
        }
        (self.run.iter().collect(), slots, self.cursor)
    }
}
