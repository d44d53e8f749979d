//! [`TaskPtr`]: a thin, reference-counted pointer to a task, the queue's
//! and the handles' `Arc<dyn Job>` at half the size.
//!
//! The heap stores one of these per pending task, next to its deadline:
//! 8 bytes instead of `Arc<dyn Job>`'s 16 (data and vtable pointers), so an
//! entry is 16 bytes and the four children of a 4-ary heap node span 64.
//! The count lives in the task's [`Header`] (4 bytes), not in a separate
//! 16-byte `Arc` prefix; the vtable, as one function pointer, there too.
//!
//! # Invariants
//!
//! - A `TaskPtr` points at the [`Header`] of a task allocated by
//!   [`TaskPtr::new`] as a `Box<J>`, where the header is `J`'s first field
//!   (`J` is `repr(C)`; `new` checks the address), and `header.job` was set
//!   to the cast for that very `J`.
//! - `header.refs` counts the live `TaskPtr`s; the task is freed, as the
//!   `Box<J>` it was, when it drops to zero, and never touched after.
//! - A `TaskPtr` only ever gives out shared references, so the task is
//!   `Sync` for whatever it holds (`Job: Send + Sync`).

use std::fmt;
use std::ops::Deref;
use std::ptr::NonNull;

use crate::task::header::{Header, Job};

/// A thin `Arc<dyn Job>`. See the module docs.
pub(crate) struct TaskPtr {
    header: NonNull<Header>,
}

// SAFETY: a `TaskPtr` gives shared access to a `J: Job`, which is `Send +
// Sync`, and moves the count with atomics, exactly like `Arc<dyn Job>`.
unsafe impl Send for TaskPtr {}
// SAFETY: as above.
unsafe impl Sync for TaskPtr {}

/// `header.job` for a `J`: the header is `J`'s first field, so the two
/// addresses are the same (see the invariants).
fn job_of<J: Job>(header: NonNull<Header>) -> NonNull<dyn Job> {
    header.cast::<J>()
}

impl TaskPtr {
    /// Moves `job` to the heap and returns the first reference to it.
    ///
    /// # Panics
    ///
    /// If `job`'s header is not its first field (a bug in a task type:
    /// every one is `repr(C)` with the header first).
    pub(crate) fn new<J: Job>(job: J) -> TaskPtr {
        assert!(
            std::ptr::addr_eq(job.header(), &job),
            "a task's header must be its first field"
        );
        let raw: *mut J = Box::into_raw(Box::new(job));
        let header = raw.cast::<Header>();
        // SAFETY: `raw` is a fresh, valid allocation that nothing else
        // refers to yet, and its header is at its start (checked above), so
        // `header` is valid for this plain write before it is shared.
        unsafe { (*header).set_job_of(job_of::<J>) };
        // SAFETY: from `Box::into_raw`, never null.
        let header = unsafe { NonNull::new_unchecked(header) };
        TaskPtr { header }
    }

    /// The task's header (no indirection: it is where this points).
    #[inline]
    pub(crate) fn header(&self) -> &Header {
        // SAFETY: the task is live while this reference is (invariants).
        unsafe { self.header.as_ref() }
    }

    /// The address of the task, for identity comparisons.
    #[inline]
    pub(crate) fn as_ptr(&self) -> *const u8 {
        self.header.as_ptr().cast::<u8>().cast_const()
    }

    /// How many references there are, this one included.
    pub(crate) fn ref_count(&self) -> u32 {
        self.header().ref_count()
    }
}

impl Deref for TaskPtr {
    type Target = dyn Job;

    #[inline]
    fn deref(&self) -> &dyn Job {
        let job = (self.header().job_of())(self.header);
        // SAFETY: `job` is the cast for the task's own type (invariants), so
        // it points at the live task this reference keeps alive.
        unsafe { job.as_ref() }
    }
}

impl Clone for TaskPtr {
    #[inline]
    fn clone(&self) -> TaskPtr {
        let old = self.header().count_ref();
        if old > i32::MAX as u32 {
            // As `Arc`: a count this high means leaked references; wrapping
            // would free a live task.
            std::process::abort();
        }
        TaskPtr {
            header: self.header,
        }
    }
}

impl Drop for TaskPtr {
    #[inline]
    fn drop(&mut self) {
        if !self.header().release_ref() {
            return;
        }
        let job = (self.header().job_of())(self.header);
        // SAFETY: this was the last reference, so nothing else can reach the
        // task; it was allocated as the `Box<J>` that `job` (the cast for
        // `J`) points at, with `J`'s vtable, so `Box<dyn Job>` frees it with
        // `J`'s drop and layout.
        drop(unsafe { Box::from_raw(job.as_ptr()) });
    }
}

impl fmt::Debug for TaskPtr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskPtr")
            .field("id", &self.header().seq())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::TaskPtr;
    use crate::base::clock::{Clock, Nanos};
    use crate::task::header::{Header, Job, Kind, Ran};
    use std::any::Any;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[repr(C)]
    struct Probe {
        header: Header,
        drops: Arc<AtomicUsize>,
        payload: [u64; 3],
    }

    impl Drop for Probe {
        fn drop(&mut self) {
            self.drops.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// A `Job` that does nothing, for a test type with a `header` field.
    macro_rules! inert_job {
        ($t:ty) => {
            impl Job for $t {
                fn header(&self) -> &Header {
                    &self.header
                }
                fn as_any(&self) -> &dyn Any {
                    self
                }
                fn run(&self, _: &Clock, _: Nanos, _: bool) -> Ran {
                    Ran::DONE
                }
                fn cancelled(&self) {}
            }
        };
    }

    inert_job!(Probe);

    fn probe(drops: &Arc<AtomicUsize>) -> TaskPtr {
        TaskPtr::new(Probe {
            header: Header::new(7, 0, Kind::Once),
            drops: Arc::clone(drops),
            payload: [1, 2, 3],
        })
    }

    #[test]
    fn frees_once_when_the_last_reference_goes() {
        let drops = Arc::new(AtomicUsize::new(0));
        let a = probe(&drops);
        let b = a.clone();
        assert_eq!(a.ref_count(), 2);
        assert_eq!(a.as_ptr(), b.as_ptr());
        let probe = a.as_any().downcast_ref::<Probe>().expect("a Probe");
        assert_eq!(probe.payload, [1, 2, 3]);
        assert_eq!(a.header().seq(), 7);
        drop(a);
        assert_eq!(drops.load(Ordering::SeqCst), 0);
        assert_eq!(b.ref_count(), 1);
        drop(b);
        assert_eq!(drops.load(Ordering::SeqCst), 1);
    }

    /// Rounds of the racing tests: Miri interprets about 100x slower than
    /// native code, and a few rounds already race every access it checks.
    const ROUNDS: usize = if cfg!(miri) { 4 } else { 200 };

    /// Clones and drops from many threads at once: the task is freed once,
    /// by whichever drop was last (run under Miri, ThreadSanitizer and
    /// valgrind by `.ci/miri.sh`, `.ci/tsan.sh` and `.ci/valgrind.sh`).
    #[test]
    fn concurrent_clones_and_drops_free_once() {
        let drops = Arc::new(AtomicUsize::new(0));
        for _ in 0..ROUNDS {
            let task = probe(&drops);
            let threads: Vec<_> = (0..4)
                .map(|_| {
                    let mine = task.clone();
                    std::thread::spawn(move || {
                        for _ in 0..if cfg!(miri) { 10 } else { 100 } {
                            let c = mine.clone();
                            assert_eq!(c.header().seq(), 7);
                            drop(c);
                        }
                    })
                })
                .collect();
            drop(task);
            for t in threads {
                t.join().expect("no panic");
            }
        }
        assert_eq!(drops.load(Ordering::SeqCst), ROUNDS);
    }

    /// A task whose `Drop` writes its plain (non-atomic) data, which every
    /// holder reads.
    #[repr(C)]
    struct Canary {
        header: Header,
        data: u64,
    }

    impl Drop for Canary {
        fn drop(&mut self) {
            self.data = 0;
        }
    }

    inert_job!(Canary);

    /// Holders on several threads read the task's plain data and drop their
    /// references while the others do: the last drop, which writes the data
    /// as it frees the task, must see every holder's read (the real-thread
    /// twin of the loom model of the same name). A final decrement that is
    /// only `Release` is a data race here that Miri and ThreadSanitizer
    /// report; a free before the last reference is a use after free that
    /// Miri and valgrind report.
    #[test]
    fn the_last_drop_sees_every_holders_reads() {
        for _ in 0..ROUNDS {
            let task = TaskPtr::new(Canary {
                header: Header::new(3, 0, Kind::Once),
                data: 1,
            });
            let read = |t: &TaskPtr| {
                let canary = t.as_any().downcast_ref::<Canary>().expect("a Canary");
                assert_eq!(canary.data, 1);
            };
            let holders: Vec<_> = (0..3)
                .map(|_| {
                    let mine = task.clone();
                    std::thread::spawn(move || {
                        read(&mine);
                        drop(mine);
                    })
                })
                .collect();
            read(&task);
            drop(task);
            for h in holders {
                h.join().expect("no panic");
            }
        }
    }

    #[test]
    #[should_panic(expected = "first field")]
    fn a_header_not_first_is_refused() {
        #[repr(C)]
        struct Misplaced {
            before: u64,
            header: Header,
        }
        inert_job!(Misplaced);
        let _ = TaskPtr::new(Misplaced {
            before: 0,
            header: Header::new(0, 0, Kind::Once),
        });
    }
}

/// loom models of a one-shot task's life through `TaskPtr`s: the count,
/// the body's claim and the lazily created result cell, raced. Run with
/// `RUSTFLAGS="--cfg loom" cargo test --release --lib` (`.ci/run` does). The
/// body sits in the facade's `UnsafeCell`, which loom tracks, so a claim or
/// free without the ordering it needs is a causality error here.
#[cfg(all(test, loom))]
mod loom_models {
    use std::sync::Arc;

    use loom::sync::atomic::{AtomicUsize, Ordering};

    use super::TaskPtr;
    use crate::base::clock::{Clock, Nanos};
    use crate::base::error::TaskError;
    use crate::task::header::{Header, Job, Kind, Ran};
    use crate::task::once::OnceTask;

    type Body = Box<dyn FnOnce() -> u32 + Send>;

    struct Counted(Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// A task whose body counts its drops and its runs.
    fn counted_task(drops: &Arc<AtomicUsize>, ran: &Arc<AtomicUsize>) -> TaskPtr {
        let counted = Counted(Arc::clone(drops));
        let ran = Arc::clone(ran);
        let body: Body = Box::new(move || {
            let _keep = &counted;
            ran.fetch_add(1, Ordering::SeqCst);
            5
        });
        TaskPtr::new(OnceTask::new(Header::new(0, 0, Kind::Once), body))
    }

    fn run(task: &TaskPtr) {
        if task.header().try_start() {
            let watched = task.ref_count() > 1;
            task.run(&Clock::Real, 0, watched);
        }
    }

    /// A runner, a cancel and a joiner race on one task, each through its
    /// own reference, and the joiner lets go of its reference before the
    /// others finish: the body is dropped exactly once, whoever frees the
    /// task, and the joiner gets the outcome that won.
    #[test]
    fn run_cancel_and_join_race() {
        loom::model(|| {
            let drops = Arc::new(AtomicUsize::new(0));
            let ran = Arc::new(AtomicUsize::new(0));
            let task = counted_task(&drops, &ran);
            let runner = {
                let t = task.clone();
                loom::thread::spawn(move || run(&t))
            };
            let canceller = {
                let t = task.clone();
                loom::thread::spawn(move || {
                    let won = t.header().try_cancel();
                    if won {
                        t.cancelled();
                    }
                    won
                })
            };
            let cell = task
                .as_any()
                .downcast_ref::<OnceTask<u32, Body>>()
                .expect("the task's type")
                .cell();
            let outcome = cell.join(task.header());
            drop(task);
            runner.join().expect("runner");
            let cancelled = canceller.join().expect("canceller");
            if cancelled {
                assert_eq!(outcome, Err(TaskError::Cancelled));
            } else {
                assert_eq!(outcome, Ok(5));
                assert_eq!(ran.load(Ordering::SeqCst), 1);
            }
            assert_eq!(drops.load(Ordering::SeqCst), 1, "the body dropped once");
        });
    }

    /// The handle goes away while the task runs, so the run may or may not
    /// see itself watched: either way the body is dropped once and the
    /// task freed once, by whichever thread is last.
    #[test]
    fn the_handle_goes_away_during_the_run() {
        loom::model(|| {
            let drops = Arc::new(AtomicUsize::new(0));
            let ran = Arc::new(AtomicUsize::new(0));
            let handle = counted_task(&drops, &ran);
            let queued = handle.clone();
            let worker = loom::thread::spawn(move || run(&queued));
            drop(handle);
            worker.join().expect("worker");
            assert_eq!(ran.load(Ordering::SeqCst), 1);
            assert_eq!(drops.load(Ordering::SeqCst), 1);
        });
    }

    /// A task that writes its data when freed: the last drop must see every
    /// other holder's reads (fails if the final decrement is only Release).
    #[repr(C)]
    struct Canary {
        header: Header,
        data: crate::base::sync::UnsafeCell<u64>,
    }
    // SAFETY (test): `data` is written only by `Drop`, with `&mut self`.
    unsafe impl Sync for Canary {}
    impl Drop for Canary {
        fn drop(&mut self) {
            // SAFETY: `&mut self`: nobody else can reach the task.
            self.data.with_mut(|p| unsafe { *p = 0 });
        }
    }
    impl Job for Canary {
        fn header(&self) -> &Header {
            &self.header
        }
        fn as_any(&self) -> &dyn std::any::Any {
            self
        }
        fn run(&self, _: &Clock, _: Nanos, _: bool) -> Ran {
            Ran::DONE
        }
        fn cancelled(&self) {}
    }

    #[test]
    fn the_last_drop_sees_every_holders_reads() {
        loom::model(|| {
            let a = TaskPtr::new(Canary {
                header: Header::new(0, 0, Kind::Once),
                data: crate::base::sync::UnsafeCell::new(1),
            });
            let b = a.clone();
            let read = |t: &TaskPtr| {
                let canary = t.as_any().downcast_ref::<Canary>().expect("a Canary");
                // SAFETY: only `Drop` writes, and it runs after every reader
                // let go (the count's ordering is what this model checks).
                canary.data.with(|p| assert_eq!(unsafe { *p }, 1));
            };
            let t = loom::thread::spawn(move || {
                read(&b);
                drop(b);
            });
            read(&a);
            drop(a);
            t.join().expect("reader");
        });
    }

    /// A value loom tracks, written when made and read by whoever gets it.
    struct Tracked(crate::base::sync::UnsafeCell<u64>);
    // SAFETY (test): written only before it is shared.
    unsafe impl Sync for Tracked {}

    /// Two threads create a task's result cell at once (a waiter and a
    /// finishing run): both get the one that won the install, and each
    /// sees it fully made (fails if the install or the read is Relaxed).
    #[test]
    fn the_lazy_cell_is_made_once_and_seen_whole() {
        use crate::task::once::LazyCell;
        loom::model(|| {
            let cell = Arc::new(LazyCell::<Tracked>::new());
            let make = || Tracked(crate::base::sync::UnsafeCell::new(7));
            // SAFETY (test): the value is written only before it is
            // shared, so reads never race a write.
            let read = |t: &Tracked| t.0.with(|p| unsafe { *p });
            let other = {
                let cell = Arc::clone(&cell);
                loom::thread::spawn(move || {
                    let got = cell.get_or_create(make);
                    assert_eq!(read(&got), 7);
                    Arc::as_ptr(&got) as usize
                })
            };
            let mine = cell.get_or_create(make);
            assert_eq!(read(&mine), 7);
            let theirs = other.join().expect("other");
            assert_eq!(theirs, Arc::as_ptr(&mine) as usize, "one cell");
            let seen = cell.get().expect("installed");
            assert_eq!(read(&seen), 7);
        });
    }

    /// The last two references drop at once on two threads: the task is
    /// freed once, and its unclaimed body with it.
    #[test]
    fn last_references_drop_together() {
        loom::model(|| {
            let drops = Arc::new(AtomicUsize::new(0));
            let ran = Arc::new(AtomicUsize::new(0));
            let task = counted_task(&drops, &ran);
            let other = task.clone();
            let t = loom::thread::spawn(move || drop(other));
            drop(task);
            t.join().expect("dropper");
            assert_eq!(drops.load(Ordering::SeqCst), 1);
            assert_eq!(ran.load(Ordering::SeqCst), 0);
        });
    }
}
