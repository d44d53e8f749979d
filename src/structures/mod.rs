//! Pure data structures, which know nothing of tasks or time: the indexed
//! 4-ary heap both queues sort by, and the slot table behind
//! `DelayQueue`'s keys.

pub(crate) mod heap;
pub(crate) mod slots;
