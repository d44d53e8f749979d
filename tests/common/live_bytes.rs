//! A global allocator that counts the live heap bytes of a whole test
//! binary: a test file declares it with
//! `#[path = "common/live_bytes.rs"] mod live_bytes;` and
//! `#[global_allocator] static ALLOC: live_bytes::Counting = live_bytes::Counting;`,
//! and its tests take turns, since every thread's allocations count.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

/// Forwards to the system allocator and counts the bytes live.
pub struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

/// The heap bytes live in this binary now.
pub fn live() -> isize {
    LIVE.load(Ordering::SeqCst)
}

// SAFETY: every call is forwarded unchanged to the system allocator; this
// only counts the bytes live.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged to the system allocator.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `alloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded unchanged to the system allocator.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_add(
                new_size as isize - layout.size() as isize,
                Ordering::Relaxed,
            );
        }
        p
    }
}
