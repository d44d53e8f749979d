//! The due lane: a FIFO of tasks that were already due when submitted, in
//! front of the heap, so a burst of due tasks is O(1) to push and to pop (no
//! sift, no index writes into other tasks).
//!
//! # Invariants
//!
//! - The entries are strictly increasing in `(deadline, seq)`. A task joins
//!   at the back only if it sorts after the back ([`Lane::accepts`]); the
//!   work queue sends any other to the heap ([`crate::queue`]).
//! - A task here carries `Location::Lane`; a cancelled one,
//!   `Location::LaneRemoved`: it no longer counts in [`Lane::len`], its closure was
//!   dropped by the cancel, and its entry (one reference) is discarded when
//!   it reaches the front. `removed` counts those marked entries.
//! - The front is never a removed entry, so peeking stays O(1).

use std::collections::VecDeque;

use super::entry::{is_task, Entry};
use super::location::Location;
use crate::base::clock::Nanos;
use crate::task::header::Header;

/// See the module documentation.
pub(super) struct Lane {
    entries: VecDeque<Entry>,
    /// Entries marked `Location::LaneRemoved`, not yet discarded.
    removed: usize,
}

impl Lane {
    pub(crate) const fn new() -> Self {
        Lane {
            entries: VecDeque::new(),
            removed: 0,
        }
    }

    /// Live tasks in the lane.
    pub(crate) fn len(&self) -> usize {
        self.entries.len() - self.removed
    }

    /// The first task (never a removed one).
    pub(crate) fn front(&self) -> Option<&Entry> {
        self.entries.front()
    }

    /// The entry after the front, which may be a removed one: its deadline
    /// is still no later than the live ones behind it.
    pub(crate) fn second(&self) -> Option<&Entry> {
        self.entries.get(1)
    }

    /// Would a task with this key keep the lane sorted at its back? (The
    /// back's sequence number is read only on a tie: one fewer pointer to
    /// follow per push.)
    pub(crate) fn accepts(&self, deadline: Nanos, seq: u64) -> bool {
        self.entries.back().is_none_or(|back| {
            back.deadline < deadline
                || (back.deadline == deadline && back.task.header().seq() < seq)
        })
    }

    /// Appends `entry`, which [`accepts`](Self::accepts) allowed.
    pub(crate) fn push(&mut self, entry: Entry) {
        Location::Lane.set(entry.task.header());
        self.entries.push_back(entry);
    }

    /// Removes the front task; the caller marks it not queued.
    pub(crate) fn pop_front(&mut self) -> Option<Entry> {
        let entry = self.entries.pop_front()?;
        self.discard_removed_front();
        Some(entry)
    }

    /// Marks a cancelled task in the lane as removed, in O(1) (see the
    /// invariants).
    pub(super) fn mark_removed(&mut self, header: &Header) {
        Location::LaneRemoved.set(header);
        self.removed += 1;
        self.discard_removed_front();
    }

    /// Takes a live task out by a linear search, for the paths that must
    /// not leave a stale entry behind (pause, trigger, reschedule).
    pub(crate) fn remove(&mut self, header: &Header, task: *const u8) -> Option<Entry> {
        let at = self.entries.iter().position(|e| is_task(e, task))?;
        let entry = self.entries.remove(at)?;
        Location::NotQueued.set(header);
        self.discard_removed_front();
        Some(entry)
    }

    /// Keeps the live tasks for which `keep` is true, appends the other
    /// live ones to `removed`, and discards the removed entries.
    pub(crate) fn retain(
        &mut self,
        keep: &mut impl FnMut(&Entry) -> bool,
        removed: &mut Vec<Entry>,
    ) {
        let entries = std::mem::take(&mut self.entries);
        self.removed = 0;
        for entry in entries {
            if Location::of(entry.task.header()) == Location::LaneRemoved {
                Location::NotQueued.set(entry.task.header());
            } else if keep(&entry) {
                self.entries.push_back(entry);
            } else {
                Location::NotQueued.set(entry.task.header());
                removed.push(entry);
            }
        }
    }

    /// The entries in order, removed ones included (for [`crate::internals`]).
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter()
    }

    /// Discards removed entries from the front, so the front is always a
    /// live entry.
    fn discard_removed_front(&mut self) {
        discard_marked_front(&mut self.entries, &mut self.removed, Location::LaneRemoved);
    }
}

/// Pops entries whose task carries `mark` (a cancel's removal mark) off the
/// front of `entries`, counting them down from `removed`, until the front
/// is a live entry. The lane's and the wheel's run's shared discard.
pub(super) fn discard_marked_front(
    entries: &mut VecDeque<Entry>,
    removed: &mut usize,
    mark: Location,
) {
    if *removed == 0 {
        return; // the common case: no header to touch
    }
    while entries
        .front()
        .is_some_and(|e| Location::of(e.task.header()) == mark)
    {
        let entry = entries.pop_front().expect("a front");
        Location::NotQueued.set(entry.task.header());
        *removed -= 1;
        // The cancel that marked it holds another reference (a handle is
        // alive while cancelling), so this drop runs no user code.
        drop(entry);
    }
}
