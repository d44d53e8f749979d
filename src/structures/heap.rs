//! An array 4-ary min-heap whose entries know where they are (Java's
//! `DelayedWorkQueue` with `setIndex`, with four children per node instead
//! of two: half the height, and a node's children share cache lines, which
//! matters because every level a sift crosses also writes a task's index).
//!
//! # Invariants
//!
//! - Ordered by `(deadline, sequence)`: earliest first, FIFO among equal
//!   deadlines because sequence numbers are unique. The deadline lives in
//!   the entry (the array), so a comparison reads the sequence number, which
//!   may live behind a pointer, only on a tie.
//! - Every time an entry lands in a slot, [`Positions::set`] is told its new
//!   index, so while queued an entry's recorded index equals its position;
//!   an entry leaving the heap is told [`NOT_QUEUED`]. That makes removal of
//!   an arbitrary entry O(log n) ([`IndexedHeap::remove_at`]).
//! - Keys live inside the array, so sifting never chases a pointer.
//! - A sift down asks for the next level's lines while it compares this
//!   one's ([`prefetch`]), and a worker asks for the top levels as soon as
//!   it holds the lock ([`IndexedHeap::prefetch_top`]): with two workers
//!   taking turns, each level was last written by the other core, and one
//!   fetch after another was most of a pop.
//!
//! No locks, no threads: a pure data structure, owned by a lock-protected
//! `State`.

/// The index recorded for an entry that is not in the heap.
pub(crate) const NOT_QUEUED: usize = usize::MAX;

/// Children per node: the parent of `i` is `(i - 1) / ARITY`.
pub(crate) const ARITY: usize = 4;

/// An element of an [`IndexedHeap`].
pub(crate) trait HeapEntry {
    /// When it is due; earlier comes out first.
    fn deadline(&self) -> u64;
    /// The tie-break among equal deadlines (submission order); read only
    /// on a tie.
    fn seq(&self) -> u64;
}

/// Does `a` come out before `b`?
#[inline]
fn precedes<E: HeapEntry>(a: &E, b: &E) -> bool {
    let (da, db) = (a.deadline(), b.deadline());
    da < db || (da == db && a.seq() < b.seq())
}

/// Starts loading, into every cache level, the lines that hold the
/// entries `items[from..to]` (clamped to the slice). A hint to the CPU: it
/// changes nothing the program can observe.
#[inline(always)]
fn prefetch<E>(items: &[E], from: usize, to: usize) {
    let to = to.min(items.len());
    if from >= to {
        return;
    }
    let bytes = (to - from) * std::mem::size_of::<E>();
    if bytes == 0 {
        return; // zero-sized entries: nothing to load
    }
    let start = items.as_ptr().wrapping_add(from).cast::<u8>();
    let mut offset = 0;
    while offset < bytes {
        prefetch_line(start.wrapping_add(offset));
        offset += 64;
    }
    // The last line, which the stride may have stepped over.
    prefetch_line(start.wrapping_add(bytes - 1));
}

#[inline(always)]
fn prefetch_line(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `_mm_prefetch` (SSE, which every x86_64 CPU has) only hints
    // that the line holding `p` will be read soon: it never faults and
    // reads nothing the program can observe, whatever `p` is. Ours always
    // points into a live slice besides.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Where the heap reports each entry's position (Java's `setIndex`).
pub(crate) trait Positions<E> {
    /// `entry` is now at `index` ([`NOT_QUEUED`] when it left the heap).
    fn set(&mut self, entry: &E, index: usize);
}

/// The indexed binary heap. See the module docs for its invariants.
#[derive(Debug)]
pub(crate) struct IndexedHeap<E> {
    items: Vec<E>,
}

impl<E: HeapEntry> IndexedHeap<E> {
    pub(crate) const fn new() -> Self {
        IndexedHeap { items: Vec::new() }
    }

    pub(crate) fn len(&self) -> usize {
        self.items.len()
    }

    #[cfg(all(test, not(loom)))]
    pub(crate) fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The first entry, due or not.
    pub(crate) fn peek(&self) -> Option<&E> {
        self.items.first()
    }

    /// The second entry's deadline (the earliest after the first's), if
    /// there are two: a 4-ary heap keeps it among the root's children.
    pub(crate) fn second_deadline(&self) -> Option<u64> {
        let children = self.items.get(1..self.items.len().min(1 + ARITY))?;
        children.iter().map(HeapEntry::deadline).min()
    }

    /// Starts loading the top three levels, which a pop reads first: a
    /// worker calls it as soon as it holds the lock, so the lines another
    /// worker's pop last wrote arrive together instead of one per level.
    #[inline]
    pub(crate) fn prefetch_top(&self) {
        prefetch(&self.items, 0, 1 + ARITY + ARITY * ARITY);
    }

    /// The entry at `index`, if any.
    pub(crate) fn get(&self, index: usize) -> Option<&E> {
        self.items.get(index)
    }

    /// Every entry, in array (not deadline) order.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn iter(&self) -> std::slice::Iter<'_, E> {
        self.items.iter()
    }

    /// Adds `entry`; returns true if it became the head.
    pub(crate) fn push(&mut self, entry: E, pos: &mut impl Positions<E>) -> bool {
        let index = self.items.len();
        self.items.push(entry);
        self.sift_up(index, pos) == 0
    }

    /// Removes and returns the first entry.
    pub(crate) fn pop(&mut self, pos: &mut impl Positions<E>) -> Option<E> {
        if self.items.is_empty() {
            None
        } else {
            Some(self.remove_at(0, pos))
        }
    }

    /// Removes the entry at `index` in O(log n): the last entry fills the
    /// hole and is sifted down, or up if it did not move down.
    ///
    /// # Panics
    ///
    /// If `index` is out of bounds (callers check the recorded index first).
    #[track_caller]
    pub(crate) fn remove_at(&mut self, index: usize, pos: &mut impl Positions<E>) -> E {
        let removed = self.items.swap_remove(index);
        pos.set(&removed, NOT_QUEUED);
        if index < self.items.len() {
            let landed = self.sift_down(index, pos);
            if landed == index {
                self.sift_up(index, pos);
            }
        }
        removed
    }

    /// Keeps the entries for which `keep` is true and returns the others,
    /// restoring the heap in O(n).
    pub(crate) fn retain(
        &mut self,
        mut keep: impl FnMut(&E) -> bool,
        pos: &mut impl Positions<E>,
    ) -> Vec<E> {
        let mut removed = Vec::new();
        let mut kept = Vec::with_capacity(self.items.len());
        for entry in self.items.drain(..) {
            if keep(&entry) {
                kept.push(entry);
            } else {
                pos.set(&entry, NOT_QUEUED);
                removed.push(entry);
            }
        }
        self.items = kept;
        for (index, entry) in self.items.iter().enumerate() {
            pos.set(entry, index);
        }
        for index in (0..self.items.len().div_ceil(ARITY)).rev() {
            self.sift_down(index, pos);
        }
        removed
    }

    /// Removes every entry, in deadline order.
    #[cfg(all(test, not(loom)))]
    pub(super) fn drain_sorted(&mut self, pos: &mut impl Positions<E>) -> Vec<E> {
        let mut out = Vec::with_capacity(self.items.len());
        while let Some(entry) = self.pop(pos) {
            out.push(entry);
        }
        out
    }

    /// Releases spare capacity once the heap has shrunk to a quarter of it.
    pub(crate) fn shrink_if_sparse(&mut self) {
        if self.items.capacity() > 64 && self.items.len() < self.items.capacity() / 4 {
            self.items.shrink_to(self.items.len() * 2);
        }
    }

    fn sift_up(&mut self, mut index: usize, pos: &mut impl Positions<E>) -> usize {
        while index > 0 {
            let parent = (index - 1) / ARITY;
            if !precedes(&self.items[index], &self.items[parent]) {
                break;
            }
            self.items.swap(index, parent);
            pos.set(&self.items[index], index);
            index = parent;
        }
        pos.set(&self.items[index], index);
        index
    }

    fn sift_down(&mut self, mut index: usize, pos: &mut impl Positions<E>) -> usize {
        let len = self.items.len();
        loop {
            let first = ARITY * index + 1;
            if first >= len {
                break;
            }
            // The grandchildren load while the children are compared, so
            // whichever child wins, the next level is on its way.
            let grand = ARITY * first + 1;
            prefetch(&self.items, grand, grand + ARITY * ARITY);
            let mut child = first;
            for c in first + 1..(first + ARITY).min(len) {
                if precedes(&self.items[c], &self.items[child]) {
                    child = c;
                }
            }
            if !precedes(&self.items[child], &self.items[index]) {
                break;
            }
            self.items.swap(index, child);
            pos.set(&self.items[index], index);
            index = child;
        }
        pos.set(&self.items[index], index);
        index
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::collections::{BTreeMap, HashMap};

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    struct E {
        deadline: u64,
        seq: u64,
    }
    impl HeapEntry for E {
        fn deadline(&self) -> u64 {
            self.deadline
        }
        fn seq(&self) -> u64 {
            self.seq
        }
    }
    impl E {
        fn key(&self) -> (u64, u64) {
            (self.deadline, self.seq)
        }
    }
    #[derive(Default)]
    struct Pos(HashMap<u64, usize>);
    impl Positions<E> for Pos {
        fn set(&mut self, e: &E, index: usize) {
            self.0.insert(e.seq, index);
        }
    }

    #[test]
    fn second_deadline_is_the_second_smallest() {
        let mut heap = IndexedHeap::new();
        let mut pos = Pos::default();
        assert_eq!(heap.second_deadline(), None);
        let mut x = 7u64;
        let mut model = Vec::new();
        for seq in 0..200 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let deadline = (x >> 33) % 50;
            heap.push(E { deadline, seq }, &mut pos);
            model.push(deadline);
            model.sort_unstable();
            assert_eq!(heap.second_deadline(), model.get(1).copied());
            if seq % 3 == 0 {
                let popped = heap.pop(&mut pos).unwrap();
                assert_eq!(popped.deadline, model.remove(0));
                assert_eq!(heap.second_deadline(), model.get(1).copied());
            }
        }
    }

    /// Every queued entry's recorded index is its position; the heap property holds.
    fn check(heap: &IndexedHeap<E>, pos: &Pos) {
        for (i, e) in heap.iter().enumerate() {
            assert_eq!(pos.0[&e.seq], i, "stored index of seq {} is stale", e.seq);
            if i > 0 {
                assert!(
                    heap.items[(i - 1) / ARITY].key() <= e.key(),
                    "heap property broken at {i}"
                );
            }
        }
    }

    /// xorshift64*: deterministic randomness without a dependency.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
    }

    #[test]
    fn random_operations_keep_indices_and_order() {
        for seed in 1..=20u64 {
            let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let mut heap = IndexedHeap::new();
            let mut pos = Pos::default();
            let mut model: BTreeMap<(u64, u64), E> = BTreeMap::new();
            let mut seq = 0;
            for _ in 0..2_000 {
                match rng.next() % 10 {
                    0..=4 => {
                        seq += 1;
                        let e = E {
                            deadline: rng.next() % 50,
                            seq,
                        };
                        let head = heap.push(e, &mut pos);
                        model.insert(e.key(), e);
                        assert_eq!(head, model.keys().next() == Some(&e.key()));
                    }
                    5..=6 => {
                        assert_eq!(heap.pop(&mut pos), model.pop_first().map(|(_, e)| e));
                    }
                    7..=8 if !heap.is_empty() => {
                        let victim = *model
                            .values()
                            .nth((rng.next() % model.len() as u64) as usize)
                            .unwrap();
                        let index = pos.0[&victim.seq];
                        assert_eq!(heap.remove_at(index, &mut pos), victim);
                        model.remove(&victim.key());
                        assert_eq!(pos.0[&victim.seq], NOT_QUEUED);
                    }
                    _ => {
                        let cut = rng.next() % 50;
                        let removed = heap.retain(|e| e.deadline >= cut, &mut pos);
                        for e in &removed {
                            assert_eq!(pos.0[&e.seq], NOT_QUEUED);
                            model.remove(&e.key());
                        }
                        assert!(model.values().all(|e| e.deadline >= cut));
                    }
                }
                check(&heap, &pos);
                assert_eq!(heap.len(), model.len());
            }
            let drained = heap.drain_sorted(&mut pos);
            assert_eq!(drained, model.into_values().collect::<Vec<_>>());
        }
    }

    #[test]
    fn prefetch_accepts_any_range_and_zero_sized_entries() {
        // A hint has no effect to assert on; what can fail is the arithmetic
        // (an overflow panics in this debug build).
        let units = [(); 3];
        prefetch(&units, 0, 3);
        let entries = [E {
            deadline: 1,
            seq: 1,
        }; 5];
        for (from, to) in [(0, 5), (4, 100), (5, 9), (7, 2), (0, 0), (0, usize::MAX)] {
            prefetch(&entries, from, to);
        }
        prefetch::<E>(&[], 0, 21);
        let heap: IndexedHeap<E> = IndexedHeap::new();
        heap.prefetch_top();
    }

    #[test]
    fn equal_deadlines_come_out_fifo() {
        let mut heap = IndexedHeap::new();
        let mut pos = Pos::default();
        for seq in (0..100).rev() {
            heap.push(E { deadline: 7, seq }, &mut pos);
        }
        let order: Vec<u64> = heap.drain_sorted(&mut pos).iter().map(|e| e.seq).collect();
        assert_eq!(order, (0..100).collect::<Vec<_>>());
    }
}
