//! The pool's work queue (Java's `DelayedWorkQueue`): the indexed heap, plus
//! a FIFO lane for tasks that are already due when submitted, and a wheel
//! for one-shot tasks due within the next ~16.8 ms ([`wheel`]), and the
//! ready batch ([`ready`]). This is the only module that knows every part:
//! the rest of the crate sees one queue ordered by `(deadline, seq)`.
//!
//! # Invariants
//!
//! - Every queued task is in exactly one of `heap`, `lane` and `wheel`, or
//!   in the ready batch (below), and its [`Location`] says which: its heap
//!   position, `Lane`, `Wheel(its position in its slot)`, and in the batch
//!   `Ready` or, moved there from the wheel's run without a look at its
//!   header, `Wheel` still; a task that leaves the queue gets `NotQueued`.
//! - The lane ([`lane`]) is strictly increasing in `(deadline, seq)`.
//!   A task due at submission normally sorts after the lane's back already
//!   (the clock is monotonic and sequence numbers grow); one that would not
//!   (two submitters raced for the lock, or a trigger pulled an old task
//!   forward) goes to the heap instead, at its exact deadline. Deadlines are
//!   never changed: a bumped one could be a future that a frozen manual
//!   clock never reaches.
//! - The queue's order is the merge of the three: `pop` takes whichever
//!   front comes first by `(deadline, seq)`, so FIFO among equal deadlines
//!   holds across them. The lane makes a burst of due tasks O(1) to push and
//!   pop (no sift, no index writes into other tasks), the wheel a stream of
//!   near ones. Its tasks still in slots come after its boundary, and after
//!   every mutation the first task comes before the boundary
//!   ([`WorkQueue::settle`]), so the front, the head's deadline and "new
//!   head" are exact without looking into the slots.
//! - Removing a cancelled task from the lane ([`WorkQueue::remove`]) does
//!   not search for it: its entry is marked `LaneRemoved` and no longer
//!   counts in `len`; it is discarded, without running or counting as a
//!   run, when it reaches the front (the front is never a removed entry, so
//!   peeking stays O(1)). Its closure is dropped by the cancel at once; the
//!   entry holds one `Arc` until then. Pause, trigger and reschedule, which
//!   requeue the task later, take it out by a linear search of the lane
//!   ([`WorkQueue::remove_anywhere`]): a stale entry there could run the
//!   task twice.
//! - Removing a cancelled task from a wheel slot takes it out at once, in
//!   O(1) (`Location::Wheel` is its position there); only one already in
//!   the wheel's sorted run is marked, as in the lane.
//! - In front of both sits the ready batch ([`ready`]): due one-shot
//!   tasks a worker moved out in one critical section, which workers take
//!   without this lock. They still count as queued, and every operation here
//!   sees them; the head and the length read its `len` hint, which may be
//!   high but never low (see there). The batch stays the queue's front: a
//!   push that sorts before its last task (a periodic task's catch-up run,
//!   a trigger, a submitter that read the clock before the fill) first moves
//!   the batch back to the heap. (A due submission that skipped the lock
//!   waits in the inbox until the next pool lock; if its clock reading was
//!   before the fill, the workers may take the whole batch first. Both were
//!   due: only submissions racing each other are reordered so.) Pushes decide "new head" by the heap and
//!   the lane alone: the worker that filled the batch takes it empty before
//!   it waits, so whoever times the head must time theirs.

pub(crate) mod check;
mod entry;
mod lane;
pub(crate) mod location;
pub(crate) mod ready;
mod wheel;

use std::sync::Arc;

use crate::base::clock::Nanos;
use crate::structures::heap::IndexedHeap;
use crate::task::header::{Header, Kind};
use crate::task::ptr::TaskPtr;
pub(crate) use entry::Entry;
use entry::{is_task, InTask};
use lane::Lane;
use location::Location;
use ready::Ready;
use wheel::Wheel;

/// The work queue. Lives in the pool's lock-protected `State`. `L` is the
/// ledger its user keeps under the ready batch's lock ([`ready`]).
pub(crate) struct WorkQueue<L> {
    heap: IndexedHeap<Entry>,
    lane: Lane,
    /// The ready batch, shared with the workers' lock-free takes.
    ready: Arc<Ready<L>>,
    /// Where a fill collects the batch (kept for its capacity: no
    /// allocation per fill).
    fill_buf: Vec<Entry>,
    /// The key of the last task the ready batch was filled with, until the
    /// batch is moved back: a push that sorts before it moves it back.
    /// (Workers' lock-free takes leave it set; a later push then moves an
    /// empty batch back, which costs one lock.)
    ready_last: Option<(Nanos, u64)>,
    /// One-shot tasks due within the next ~16.8 ms ([`wheel`]).
    wheel: Wheel,
}

/// Where the queue's first task is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Source {
    Lane,
    Heap,
    Wheel,
}

#[cfg(all(test, not(loom)))]
impl WorkQueue<()> {
    /// A queue whose ready batch keeps no ledger.
    pub(crate) fn new() -> Self {
        Self::with_ready(Arc::new(Ready::new()))
    }
}

impl<L> WorkQueue<L> {
    /// A queue whose ready batch is `ready` (which the pool's workers take
    /// from without the lock).
    pub(crate) fn with_ready(ready: Arc<Ready<L>>) -> Self {
        WorkQueue {
            heap: IndexedHeap::new(),
            lane: Lane::new(),
            ready,
            fill_buf: Vec::new(),
            ready_last: None,
            wheel: Wheel::new(),
        }
    }

    /// Queued tasks, the ready batch included (its hint: see the invariants).
    pub(crate) fn len(&self) -> usize {
        self.heap.len() + self.lane.len() + self.wheel.len() + self.ready.hint_len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Which front comes first by `(deadline, seq)`: the lane's, the
    /// heap's or the wheel's run's (the sequence number only on a tie).
    fn first(&self) -> Option<Source> {
        let mut best: Option<(&Entry, Source)> = None;
        let fronts = [
            (self.lane.front(), Source::Lane),
            (self.heap.peek(), Source::Heap),
            (self.wheel.front(), Source::Wheel),
        ];
        for (front, source) in fronts {
            let Some(e) = front else { continue };
            let earlier = best.is_none_or(|(b, _)| {
                e.deadline < b.deadline || (e.deadline == b.deadline && e.key() < b.key())
            });
            if earlier {
                best = Some((e, source));
            }
        }
        best.map(|(_, source)| source)
    }

    /// Restores the wheel's part of the invariants after the front moved
    /// or a first slot filled: while the first task is missing or not
    /// before the wheel's boundary, the next slot joins the run.
    fn settle(&mut self) {
        if self.wheel.boundary().is_some() {
            self.settled_first();
        }
    }

    /// [`settle`](Self::settle), returning [`first`](Self::first) as the
    /// last check found it: for a push into the wheel, which asks both
    /// (under the pool lock).
    fn settled_first(&mut self) -> Option<Source> {
        loop {
            let first = self.first();
            let Some(boundary) = self.wheel.boundary() else {
                return first;
            };
            let front = first.and_then(|source| self.front_of(source));
            if front.is_some_and(|e| e.deadline < boundary) {
                return first;
            }
            self.wheel.advance();
        }
    }

    /// The first task's deadline, due or not. With the ready batch
    /// non-empty, 0: its tasks were due when they were moved there.
    pub(crate) fn peek_deadline(&self) -> Option<Nanos> {
        if self.ready.hint_len() > 0 {
            return Some(0);
        }
        self.queued_deadline()
    }

    /// The earliest deadline of a task still queued, the ready batch's
    /// included (whose tasks come first): for the metrics' lag, where
    /// [`peek_deadline`](Self::peek_deadline)'s 0 for a non-empty batch
    /// would not do.
    #[cfg(feature = "metrics")]
    pub(crate) fn oldest_deadline(&self) -> Option<Nanos> {
        self.ready
            .front_deadline()
            .or_else(|| self.queued_deadline())
    }

    /// The first deadline in the heap and the lane.
    fn queued_deadline(&self) -> Option<Nanos> {
        self.front().map(|e| e.deadline)
    }

    /// A deadline no later than the second task's (the earliest after the
    /// first), if two entries are queued. It is exact unless the lane holds
    /// a removed entry, whose deadline is no later than the live ones
    /// behind it (the lane is sorted), so the bound still holds, or the
    /// start of the wheel's first occupied slot comes first: then it is
    /// less than a slot (16.4 µs) early.
    pub(crate) fn second_deadline(&self) -> Option<Nanos> {
        if self.ready.hint_len() > 0 {
            // A due task is first: 0 bounds whatever comes second.
            return (self.len() > 1).then_some(0);
        }
        // The first two of the union are among the lane's first two, the
        // heap's first two and the wheel's (its run's first two, and the
        // start of its first occupied slot for the tasks still in slots).
        let wheel = self.wheel.first_deadlines();
        let mut candidates = [
            self.lane.front().map(|e| e.deadline),
            self.lane.second().map(|e| e.deadline),
            self.heap.peek().map(|e| e.deadline),
            self.heap.second_deadline(),
            wheel[0],
            wheel[1],
            wheel[2],
        ];
        candidates.sort_unstable_by_key(|d| d.unwrap_or(Nanos::MAX));
        candidates[1]
    }

    /// Queues `task` at its header's deadline; true if it became the first.
    /// A task due at `now` goes to the lane.
    pub(crate) fn push(&mut self, task: TaskPtr, now: Nanos) -> bool {
        let header = task.header();
        let deadline = header.deadline();
        if let Some(last) = self.ready_last {
            if (deadline, header.seq()) < last {
                self.unready();
            }
        }
        if deadline <= now && self.lane.accepts(deadline, header.seq()) {
            self.lane.push(Entry::new(deadline, task));
            return self.lane.len() == 1 && self.first() == Some(Source::Lane);
        }
        // Not yet due, or it would break the lane's order (a racing submitter
        // queued a later sequence number first, or a trigger pulled an old
        // task forward): the wheel or the heap keeps it exactly, placed once.
        // Whether a wheel task is the new head is read after settling: with
        // no slot occupied before, a later heap task may have been first.
        let once = header.kind() == Kind::Once;
        let slot = once.then(|| self.wheel.slot_for(deadline, now)).flatten();
        let entry = Entry::new(deadline, task);
        let Some(slot) = slot else {
            return self.heap.push(entry, &mut InTask) && self.first() == Some(Source::Heap);
        };
        let ptr = entry.task.as_ptr();
        self.wheel.push(slot, entry);
        self.settled_first()
            .and_then(|source| self.front_of(source))
            .is_some_and(|e| is_task(e, ptr))
    }

    /// Starts loading the lines the next pop reads first
    /// ([`IndexedHeap::prefetch_top`]).
    #[inline]
    pub(crate) fn prefetch_top(&self) {
        self.heap.prefetch_top();
    }

    /// Removes and returns the first task, the ready batch's first.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn pop(&mut self) -> Option<Entry> {
        self.pop_due(Nanos::MAX)
    }

    /// Removes and returns the first task if it is due at `now`. `None`
    /// when the ready batch's hint was high and the next task is not due.
    pub(crate) fn pop_due(&mut self, now: Nanos) -> Option<Entry> {
        if self.ready.hint_len() > 0 {
            if let Some(entry) = self.ready.pop() {
                Location::NotQueued.set(entry.task.header());
                return Some(entry);
            }
        }
        let source = self.first()?;
        if self.front_of(source)?.deadline > now {
            return None;
        }
        self.pop_from(source)
    }

    /// Moves due one-shot tasks from the front of the queue to the ready
    /// batch until it holds `BATCH - 1` (the worker runs the one it took);
    /// stops at the first task that is not due, or, from the heap or the
    /// lane, not a plain one-shot or not `SCHEDULED` (a cancelled task kept
    /// in the queue: the worker that pops it counts it).
    ///
    /// A task from the wheel's run, while no cancelled entry waits there,
    /// moves without a look at its header: it is a one-shot task, and it is
    /// `SCHEDULED` unless a cancel swapped its state and has not removed it:
    /// one that waits for this lock (and then finds it in the batch, or the
    /// worker that took it drops it, as for a cancel just after the fill),
    /// or, with `remove_on_cancel(false)`, one that never removes it (the
    /// worker that takes it drops it and counts a no-op run, as a pop
    /// would). It keeps its `Location::Wheel` (see [`ready`]). Its header is
    /// a line the producer's core wrote: reading it here, under the pool
    /// lock, cost W7 4% when this was added; reading and marking it (one
    /// meaning for `Location::Wheel`) cost 10% when issue 33 measured again
    /// (`docs/performance-log.md`, "The header-free wheel fill, re-measured").
    pub(crate) fn fill_ready(&mut self, now: Nanos) {
        self.fill_ready_up_to(now, ready::BATCH - 1);
    }

    /// [`fill_ready`](Self::fill_ready) until the batch holds `max`.
    fn fill_ready_up_to(&mut self, now: Nanos, max: usize) {
        let room = max.saturating_sub(self.ready.hint_len());
        if room == 0 || self.queued_deadline().is_none_or(|d| d > now) {
            return; // the common case away from a burst: one peek
        }
        let mut batch = std::mem::take(&mut self.fill_buf);
        while batch.len() < room {
            let Some(source) = self.first() else { break };
            if source == Source::Wheel && !self.wheel.has_removed() {
                let deadline = self.wheel.front().expect("the first").deadline;
                if deadline > now {
                    break;
                }
                let entry = self.wheel.pop_front_unmarked().expect("a front");
                self.settle();
                // The key's sequence number is in the header: a bound that
                // sorts after it will do (a push that sorts before it moves
                // the batch back; one tying on the deadline does too).
                self.ready_last = Some((deadline, u64::MAX));
                batch.push(entry);
                continue;
            }
            let first = self.front_of(source).expect("the first");
            let header = first.task.header();
            if first.deadline > now || header.kind() != Kind::Once || !header.is_scheduled() {
                break;
            }
            let entry = self.pop_from(source).expect("a front");
            Location::Ready.set(entry.task.header());
            self.ready_last = Some(entry.key());
            batch.push(entry);
        }
        self.ready.extend(batch.drain(..));
        self.fill_buf = batch;
    }

    /// Moves the ready batch back to the heap (see the invariants): what a
    /// worker did not take yet sorts by its key again.
    #[cold]
    fn unready(&mut self) {
        self.ready_last = None;
        let mut batch = std::mem::take(&mut self.fill_buf);
        self.ready.drain_into(&mut batch);
        for entry in batch.drain(..) {
            self.heap.push(entry, &mut InTask);
        }
        self.fill_buf = batch;
    }

    /// The first queued entry: the lane's, the heap's or the wheel's run's.
    fn front(&self) -> Option<&Entry> {
        self.front_of(self.first()?)
    }

    /// The front of one part.
    fn front_of(&self, source: Source) -> Option<&Entry> {
        match source {
            Source::Lane => self.lane.front(),
            Source::Heap => self.heap.peek(),
            Source::Wheel => self.wheel.front(),
        }
    }

    /// Removes and returns the first queued task.
    fn pop_queued(&mut self) -> Option<Entry> {
        let source = self.first()?;
        self.pop_from(source)
    }

    /// Removes and returns the front of one part, which [`first`](Self::first)
    /// named, and restores the wheel's invariants.
    fn pop_from(&mut self, source: Source) -> Option<Entry> {
        let entry = match source {
            Source::Lane => self.lane.pop_front()?,
            Source::Heap => self.heap.pop(&mut InTask)?,
            Source::Wheel => self.wheel.pop_front()?,
        };
        Location::NotQueued.set(entry.task.header());
        self.settle();
        Some(entry)
    }

    /// Removes a cancelled task: from the heap in O(log n), returning its
    /// entry; from the lane or the wheel by marking it (see the
    /// invariants), in O(1).
    pub(crate) fn remove(&mut self, header: &Header, task: *const u8) -> Option<Entry> {
        let removed = self.remove_unsettled(header, task);
        self.settle();
        removed
    }

    fn remove_unsettled(&mut self, header: &Header, task: *const u8) -> Option<Entry> {
        match Location::of(header) {
            Location::Wheel(_) => self
                .take_unmarked_from_batch(header, task)
                // (A worker may have taken it from the batch meanwhile: its
                // location is then `NotQueued`, and this finds nothing.)
                .or_else(|| self.wheel.cancel(header)),
            Location::Lane => {
                self.lane.mark_removed(header);
                None
            }
            Location::Ready => {
                let entry = self.ready.remove(task)?;
                Location::NotQueued.set(header);
                Some(entry)
            }
            Location::Heap(index) => {
                if !self.heap.get(index).is_some_and(|e| is_task(e, task)) {
                    return None;
                }
                let entry = self.heap.remove_at(index, &mut InTask);
                self.heap.shrink_if_sparse();
                Location::NotQueued.set(header);
                Some(entry)
            }
            Location::NotQueued | Location::LaneRemoved | Location::RunRemoved => None,
        }
    }

    /// Removes the task wherever it is queued: the heap in O(log n), a
    /// wheel slot in O(1), the lane and the wheel's run (tasks already due)
    /// by a linear search. For the paths that must not leave a stale entry
    /// behind because they requeue the task later (pause, trigger,
    /// reschedule, taking back a task no worker will run); cancel uses
    /// [`remove`](Self::remove).
    pub(crate) fn remove_anywhere(&mut self, header: &Header, task: *const u8) -> Option<Entry> {
        let entry = match Location::of(header) {
            Location::Wheel(_) => self
                .take_unmarked_from_batch(header, task)
                .or_else(|| self.wheel.remove(header, task)),
            Location::Lane => self.lane.remove(header, task),
            _ => return self.remove(header, task),
        };
        self.settle();
        entry
    }

    /// Takes out of the ready batch a task marked `Location::Wheel` that a
    /// fill moved there unmarked (see [`fill_ready`](Self::fill_ready)), if
    /// it is there: only a task not in a slot can be, and only while the
    /// batch's length (never low under this lock) is not 0.
    fn take_unmarked_from_batch(&mut self, header: &Header, task: *const u8) -> Option<Entry> {
        if self.wheel.holds_in_slot(header.deadline()) || self.ready.hint_len() == 0 {
            return None;
        }
        let entry = self.ready.remove(task)?;
        Location::NotQueued.set(header);
        Some(entry)
    }

    /// Keeps the tasks for which `keep` is true; returns the others.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&Entry) -> bool) -> Vec<Entry> {
        let mut removed = Vec::new();
        self.ready.retain(&mut keep, &mut removed);
        for entry in &removed {
            Location::NotQueued.set(entry.task.header());
        }
        removed.extend(self.heap.retain(&mut keep, &mut InTask));
        self.wheel.retain(&mut keep, &mut removed);
        self.lane.retain(&mut keep, &mut removed);
        self.settle();
        removed
    }

    /// Removes every task, in queue order.
    pub(crate) fn drain(&mut self) -> Vec<Entry> {
        let mut out = Vec::with_capacity(self.len());
        self.ready.drain_into(&mut out);
        while let Some(entry) = self.pop_queued() {
            out.push(entry);
        }
        for entry in &out {
            Location::NotQueued.set(entry.task.header());
        }
        self.ready_last = None;
        *self = WorkQueue::with_ready(Arc::clone(&self.ready));
        out
    }
}

#[cfg(all(test, not(loom)))]
mod tests;

#[cfg(all(test, not(loom)))]
mod model_tests;
