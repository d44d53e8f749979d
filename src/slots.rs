//! A generational slot table: the storage behind [`Key`](crate::Key).
//!
//! # Invariants
//!
//! - A slot is either occupied (`value` is `Some`, `heap_index` is its
//!   entry's heap position) or free (`value` is `None`, `heap_index` is
//!   `NOT_QUEUED`, and the slot is on the free list).
//! - A slot's `generation` grows by one every time it is freed, so a key
//!   `(index, generation)` names exactly one occupancy: a stale key never
//!   matches a later element in the same slot (tokio-util's index-only key
//!   can).

use crate::heap::NOT_QUEUED;

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
}

impl<T> Slab<T> {
    pub(crate) const fn new() -> Self {
        Slab {
            slots: Vec::new(),
            free: Vec::new(),
        }
    }

    /// Stores `value`; returns `(index, generation)`.
    pub(crate) fn insert(&mut self, value: T) -> (usize, u64) {
        match self.free.pop() {
            Some(index) => {
                let slot = &mut self.slots[index];
                slot.value = Some(value);
                (index, slot.generation)
            }
            None => {
                self.slots.push(Slot {
                    generation: 0,
                    heap_index: NOT_QUEUED,
                    value: Some(value),
                });
                (self.slots.len() - 1, 0)
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
        slot.generation += 1;
        slot.heap_index = NOT_QUEUED;
        self.free.push(index);
        value
    }

    /// Every slot as `(occupied, heap_index)`, for `crate::internals`.
    pub(crate) fn snapshot(&self) -> Vec<(bool, usize)> {
        self.slots
            .iter()
            .map(|s| (s.value.is_some(), s.heap_index))
            .collect()
    }

    /// Frees every slot, returning the values; every outstanding key goes stale.
    pub(crate) fn take_all(&mut self) -> Vec<T> {
        let mut out = Vec::new();
        for (index, slot) in self.slots.iter_mut().enumerate() {
            if let Some(value) = slot.value.take() {
                slot.generation += 1;
                slot.heap_index = NOT_QUEUED;
                self.free.push(index);
                out.push(value);
            }
        }
        out
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn stale_keys_never_match() {
        let mut slab = Slab::new();
        let (a, ga) = slab.insert("a");
        slab.set_heap_index(a, 0);
        assert_eq!(slab.heap_index(a, ga), Some(0));
        assert_eq!(slab.take(a), "a");
        assert_eq!(slab.heap_index(a, ga), None);
        let (b, gb) = slab.insert("b");
        assert_eq!(b, a, "the slot is reused");
        assert_ne!(gb, ga);
        assert_eq!(
            slab.heap_index(a, ga),
            None,
            "the old key does not see the new value"
        );
        assert_eq!(slab.take_all(), vec!["b"]);
        assert_eq!(slab.heap_index(b, gb), None);
    }
}
