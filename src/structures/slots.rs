//! A slot table: the storage behind [`Key`](crate::Key).
//!
//! # Invariants
//!
//! - A slot is either occupied (`value` is `Some`, `heap_index` is its
//!   entry's heap position) or free (`value` is `None`, `heap_index` is
//!   `NOT_QUEUED`, and the slot is on the free list).
//! - An occupied slot's `generation` is the occupant's generation, which
//!   the queue draws from its sequence counter: unique over the queue's
//!   whole life. So a key `(index, generation)` names exactly one element,
//!   and a stale key never matches a later element in the same slot
//!   (tokio-util's index-only key can).
//! - Because generations do not live in the slots, the table can be
//!   dropped whole once it is empty ([`Slab::release_if_empty`]): a queue
//!   that drained gives its memory back.

use crate::structures::heap::NOT_QUEUED;

#[derive(Debug)]
struct Slot<T> {
    generation: u64,
    heap_index: usize,
    value: Option<T>,
}

/// The slot table. Values live here; the heap holds only slot numbers.
#[derive(Debug)]
pub(crate) struct Slab<T> {
    slots: Vec<Slot<T>>,
    free: Vec<usize>,
    occupied: usize,
}

impl<T> Slab<T> {
    pub(crate) const fn new() -> Self {
        Slab {
            slots: Vec::new(),
            free: Vec::new(),
            occupied: 0,
        }
    }

    /// Stores `value` under `generation` (unique per queue); returns its
    /// slot number.
    pub(crate) fn insert(&mut self, value: T, generation: u64) -> usize {
        self.occupied += 1;
        let slot = Slot {
            generation,
            heap_index: NOT_QUEUED,
            value: Some(value),
        };
        match self.free.pop() {
            Some(index) => {
                self.slots[index] = slot;
                index
            }
            None => {
                self.slots.push(slot);
                self.slots.len() - 1
            }
        }
    }

    /// The heap index of the occupant named by `(index, generation)`.
    pub(crate) fn heap_index(&self, index: usize, generation: u64) -> Option<usize> {
        self.slots
            .get(index)
            .filter(|s| s.generation == generation && s.value.is_some())
            .map(|s| s.heap_index)
    }

    pub(crate) fn set_heap_index(&mut self, index: usize, heap_index: usize) {
        self.slots[index].heap_index = heap_index;
    }

    /// Frees slot `index` and returns its value.
    ///
    /// # Panics
    ///
    /// If the slot is free (an internal bug: the heap named a freed slot).
    #[track_caller]
    pub(crate) fn take(&mut self, index: usize) -> T {
        let slot = &mut self.slots[index];
        let value = slot.value.take().expect("slot occupied");
        slot.heap_index = NOT_QUEUED;
        self.free.push(index);
        self.occupied -= 1;
        value
    }

    /// Every slot as `(occupied, heap_index)`, for [`crate::internals`].
    pub(crate) fn snapshot(&self) -> Vec<(bool, usize)> {
        self.slots
            .iter()
            .map(|s| (s.value.is_some(), s.heap_index))
            .collect()
    }

    /// Empties the table, returning the values; every outstanding key goes
    /// stale. The table's memory is released.
    pub(crate) fn take_all(&mut self) -> Vec<T> {
        let values = self.slots.drain(..).filter_map(|s| s.value).collect();
        *self = Slab::new();
        values
    }

    /// Releases the table's memory if nothing is stored.
    pub(crate) fn release_if_empty(&mut self) {
        if self.occupied == 0 && self.slots.capacity() > 0 {
            *self = Slab::new();
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn stale_keys_never_match() {
        let mut slab = Slab::new();
        let a = slab.insert("a", 1);
        slab.set_heap_index(a, 0);
        assert_eq!(slab.heap_index(a, 1), Some(0));
        assert_eq!(slab.take(a), "a");
        assert_eq!(slab.heap_index(a, 1), None);
        let b = slab.insert("b", 2);
        assert_eq!(b, a, "the slot is reused");
        assert_eq!(
            slab.heap_index(a, 1),
            None,
            "the old key does not see the new value"
        );
        assert_eq!(slab.take_all(), vec!["b"]);
        assert_eq!(slab.heap_index(b, 2), None);
    }

    #[test]
    fn an_empty_table_gives_its_memory_back() {
        let mut slab = Slab::new();
        let slots: Vec<usize> = (0..1000).map(|g| slab.insert(g, g)).collect();
        for &s in &slots[..999] {
            slab.take(s);
        }
        slab.release_if_empty();
        assert!(slab.slots.capacity() >= 1000, "one value left: kept");
        slab.take(slots[999]);
        slab.release_if_empty();
        assert_eq!((slab.slots.capacity(), slab.free.capacity()), (0, 0));
        let again = slab.insert(5, 5000);
        assert_eq!(
            slab.heap_index(again, 999),
            None,
            "an old key into a released table stays stale"
        );
    }
}
