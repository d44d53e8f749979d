//! One-shot tasks: [`OnceTask`] (`schedule`, idle timers) and [`ExecTask`]
//! (`execute`), with their two compact parts, [`Body`] and [`LazyCell`].
//!
//! A pending one-shot is the commonest object in the crate (millions of
//! timeouts, most of them cancelled), so it is laid out for size: a no-op
//! task is its 32-byte header and an 8-byte pointer to a result cell that
//! does not exist yet, 40 bytes in all.
//!
//! # Invariants
//!
//! - The body is claimed once, through the header's state word
//!   ([`Header::claim_body`]): by the runner (after it won `try_start`) or
//!   by a cancel (after it won `try_cancel`). The claimant alone moves it
//!   out of the [`Body`] and runs or drops it; a body nobody claimed is
//!   dropped with the task. So the body is never touched by two threads,
//!   and is dropped exactly once.
//! - The result cell is created at most once (a compare-and-swap from
//!   null), never replaced, and freed with the task; so a pointer read from
//!   it stays valid while the task is.
//! - A waiter creates the cell before it marks the task waited (see
//!   [`crate::task::completion`]), so a cancel that sees the mark finds the cell.

use std::any::Any;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use crate::base::clock::{Clock, Nanos};
use crate::base::error::{drop_quietly, TaskError};
use crate::base::sync::{AtomicPtr, Ordering, UnsafeCell};
use crate::task::completion::give_cell;
use crate::task::completion::Completion;
use crate::task::header::{Caught, Header, Job, Ran};
use crate::task::policy::RunResult;

/// A one-shot body, owned by whoever claims it through the header.
pub(super) struct Body<F>(UnsafeCell<ManuallyDrop<F>>);

impl<F> Body<F> {
    pub(crate) fn new(body: F) -> Self {
        Body(UnsafeCell::new(ManuallyDrop::new(body)))
    }

    /// Moves the body out, if `header` (the task's own) lets this caller
    /// claim it; `None` if someone else already did.
    pub(crate) fn claim(&self, header: &Header) -> Option<F> {
        if !header.claim_body() {
            return None;
        }
        // SAFETY: `claim_body` returns true once per task, so this is the
        // only access to the body there will ever be; `Drop` below sees the
        // claim and leaves the moved-out value alone.
        Some(
            self.0
                .with_mut(|body| unsafe { ManuallyDrop::take(&mut *body) }),
        )
    }

    /// Drops the body unless it was claimed; for the task's `Drop`.
    fn drop_unclaimed(&mut self, header: &Header) {
        if !header.body_taken() {
            // SAFETY: unclaimed, so never moved out; `&mut self` means no
            // other access, and the task is being dropped, so never again.
            drop_quietly(
                self.0
                    .with_mut(|body| unsafe { ManuallyDrop::take(&mut *body) }),
            );
        }
    }
}

// SAFETY: the body is only ever moved out by its single claimant (see the
// invariants), never shared by reference, so `F: Send` is all it needs.
unsafe impl<F: Send> Sync for Body<F> {}

/// A value created on first need and shared by `Arc`, one pointer until
/// then: a one-shot task's result cell (`P = Completion<T>`; generic so the
/// loom models can give it a payload loom tracks).
///
/// The marker makes it `Send` and `Sync` exactly when the `Arc` it holds
/// would be (an `AtomicPtr` alone is both for any `P`).
pub(super) struct LazyCell<P>(AtomicPtr<P>, PhantomData<Arc<P>>);

impl<P> LazyCell<P> {
    pub(crate) fn new() -> Self {
        LazyCell(AtomicPtr::new(std::ptr::null_mut()), PhantomData)
    }

    /// The value, if it exists.
    pub(crate) fn get(&self) -> Option<Arc<P>> {
        let cell = self.0.load(Ordering::Acquire);
        if cell.is_null() {
            return None;
        }
        // SAFETY: a non-null pointer here came from `Arc::into_raw` and this
        // `LazyCell` holds that reference until it is dropped (it is never
        // replaced), so the cell is alive; take one more reference to it.
        unsafe {
            Arc::increment_strong_count(cell);
            Some(Arc::from_raw(cell))
        }
    }

    /// The value, created by `create` if nobody needed it yet.
    pub(super) fn get_or_create(&self, create: impl FnOnce() -> P) -> Arc<P> {
        if let Some(cell) = self.get() {
            return cell;
        }
        let fresh = Arc::new(create());
        let raw = Arc::into_raw(Arc::clone(&fresh)).cast_mut();
        match self.0.compare_exchange(
            std::ptr::null_mut(),
            raw,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => fresh,
            Err(_) => {
                // Someone else created it first: theirs is the cell.
                // SAFETY: `raw` is the reference `into_raw` just made and
                // nobody else saw.
                drop(unsafe { Arc::from_raw(raw) });
                self.get().expect("the cell another thread installed")
            }
        }
    }
}

impl<P> Drop for LazyCell<P> {
    fn drop(&mut self) {
        // A load, not `get_mut`, which loom's `AtomicPtr` lacks; `&mut self`
        // means nobody else can touch it.
        let cell = self.0.load(Ordering::Acquire);
        if !cell.is_null() {
            // SAFETY: the reference this cell held since `get_or_create`
            // installed it; nothing can read the pointer any more.
            drop(unsafe { Arc::from_raw(cell) });
        }
    }
}

/// A task that runs once and produces a `T`.
///
/// Its result cell exists only once someone needs it: a handle that waits
/// or polls, or a run that finishes while a handle may still read the
/// result. A pending task with nobody waiting carries one pointer for it.
#[repr(C)]
pub(crate) struct OnceTask<T, F> {
    header: Header,
    cell: LazyCell<Completion<T>>,
    body: Body<F>,
}

impl<T, F> OnceTask<T, F>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    pub(crate) fn new(header: Header, body: F) -> Self {
        OnceTask {
            header,
            cell: LazyCell::new(),
            body: Body::new(body),
        }
    }

    pub(crate) fn header(&self) -> &Header {
        &self.header
    }

    /// The result cell, created if nobody needed it yet.
    pub(crate) fn cell(&self) -> Arc<Completion<T>> {
        self.cell.get_or_create(Completion::new)
    }

    /// Completes the handle (the caller won `finish`): into the cell if it
    /// exists or a handle may still read it; otherwise nobody ever can, and
    /// the result is dropped here.
    fn complete(&self, result: Result<T, TaskError>, watched: bool) {
        let cell = if watched {
            Some(self.cell())
        } else {
            self.cell.get()
        };
        match cell {
            Some(cell) => {
                cell.complete(result);
            }
            None => drop_quietly(result),
        }
    }

    /// Runs the body (the caller won `try_start`) and completes the handle.
    pub(super) fn run_body(&self, watched: bool) -> Ran {
        let Some(body) = self.body.claim(&self.header) else {
            return Ran::DONE; // cancelled between `try_start` and here
        };
        match catch_unwind(AssertUnwindSafe(body)) {
            Ok(value) => {
                if self.header.finish() {
                    self.complete(Ok(value), watched);
                } else {
                    // Cancelled while running: the handle already says so.
                    drop_quietly(value);
                }
                Ran::DONE
            }
            Err(payload) => {
                let caught = Caught::new(payload);
                if self.header.finish() {
                    self.complete(Err(caught.task_error()), watched);
                }
                Ran {
                    again: false,
                    panic: Some(caught),
                }
            }
        }
    }

    pub(super) fn cancel_body(&self) {
        let body = self.body.claim(&self.header);
        // Nobody waiting: the cancelled state is the outcome (see
        // [`crate::task::completion`]). A waiter creates the cell before it marks
        // the task, so a marked task has one.
        if self.header.was_waited() {
            if let Some(cell) = self.cell.get() {
                cell.complete(Err(TaskError::Cancelled));
            }
        }
        drop_quietly(body);
    }
}

impl<T, F> Drop for OnceTask<T, F> {
    fn drop(&mut self) {
        self.body.drop_unclaimed(&self.header);
    }
}

impl<T, F> Job for OnceTask<T, F>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    fn header(&self) -> &Header {
        &self.header
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn result_cell(&self, out: &mut dyn Any) {
        give_cell(out, || self.cell());
    }
    fn run(&self, _clock: &Clock, _started: Nanos, watched: bool) -> Ran {
        self.run_body(watched)
    }
    fn cancelled(&self) {
        self.cancel_body();
    }
}

/// A fire-and-forget task (`execute`): no handle can ever wait for it, so
/// it has no completion cell. A panic, or an `Err` its body returns, is
/// reported like any other failure (hooks, failure handler); an `Ok(())`
/// or `()` goes nowhere.
#[repr(C)]
pub(crate) struct ExecTask<F> {
    header: Header,
    body: Body<F>,
}

impl<F> ExecTask<F> {
    pub(crate) fn new(header: Header, body: F) -> Self {
        ExecTask {
            header,
            body: Body::new(body),
        }
    }
}

impl<F> Drop for ExecTask<F> {
    fn drop(&mut self) {
        self.body.drop_unclaimed(&self.header);
    }
}

impl<F, R> Job for ExecTask<F>
where
    F: FnOnce() -> R + Send + 'static,
    R: RunResult,
{
    fn header(&self) -> &Header {
        &self.header
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn run(&self, _clock: &Clock, _started: Nanos, _watched: bool) -> Ran {
        let Some(body) = self.body.claim(&self.header) else {
            return Ran::DONE;
        };
        let panic = match catch_unwind(AssertUnwindSafe(|| body().into_failure())) {
            Ok(None) => None,
            Ok(Some(text)) => Some(Caught::failed(text)),
            Err(payload) => Some(Caught::new(payload)),
        };
        self.header.finish();
        Ran {
            again: false,
            panic,
        }
    }
    fn cancelled(&self) {
        drop_quietly(self.body.claim(&self.header));
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::mem::size_of_val;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    use super::{ExecTask, OnceTask};
    use crate::task::header::{Header, Kind};
    use crate::task::ptr::TaskPtr;

    /// Every byte here is paid once per pending task (W6): keep them from
    /// creeping back.
    #[test]
    fn per_task_sizes_stay_small() {
        assert_eq!(std::mem::size_of::<Header>(), 32);
        assert_eq!(std::mem::size_of::<crate::queue::Entry>(), 16);
        // A handle: the task and the pool, two thin pointers.
        assert_eq!(std::mem::size_of::<crate::ScheduledHandle<u64>>(), 16);
        let noop = || ();
        assert_eq!(
            size_of_val(&OnceTask::new(Header::new(0, 0, Kind::Once), noop)),
            40
        );
        let noop = || ();
        assert_eq!(
            size_of_val(&ExecTask::new(Header::new(0, 0, Kind::Once), noop)),
            32
        );
    }

    /// Counts drops of the value it owns.
    struct Counted(Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn task(drops: &Arc<AtomicUsize>) -> TaskPtr {
        let counted = Counted(Arc::clone(drops));
        TaskPtr::new(OnceTask::new(Header::new(1, 0, Kind::Once), move || {
            let _keep = &counted;
            5u32
        }))
    }

    /// The body is dropped exactly once on every path: run, cancel before
    /// the run, cancel during it, and never claimed at all.
    #[test]
    fn the_body_is_dropped_once_on_every_path() {
        let clock = crate::base::clock::Clock::Real;
        let drops = Arc::new(AtomicUsize::new(0));

        let t = task(&drops);
        assert!(t.header().try_start());
        t.run(&clock, 0, false);
        assert_eq!(drops.load(Ordering::SeqCst), 1, "run");
        drop(t);
        assert_eq!(drops.load(Ordering::SeqCst), 1);

        let t = task(&drops);
        assert!(t.header().try_cancel());
        t.cancelled();
        assert_eq!(drops.load(Ordering::SeqCst), 2, "cancelled");
        assert!(!t.header().try_start());
        drop(t);
        assert_eq!(drops.load(Ordering::SeqCst), 2);

        let t = task(&drops);
        assert!(t.header().try_start());
        assert!(t.header().try_cancel(), "cancel while running");
        t.cancelled();
        assert_eq!(drops.load(Ordering::SeqCst), 3, "the cancel claimed it");
        t.run(&clock, 0, false);
        drop(t);
        assert_eq!(drops.load(Ordering::SeqCst), 3, "the run found nothing");

        drop(task(&drops));
        assert_eq!(drops.load(Ordering::SeqCst), 4, "never claimed");

        // Claimed by the run, then a cancel is too late.
        let t = task(&drops);
        assert!(t.header().try_start());
        t.run(&clock, 0, false);
        assert!(!t.header().try_cancel(), "done");
        drop(t);
        assert_eq!(drops.load(Ordering::SeqCst), 5);
    }

    /// Racing claimants: a runner and a cancel on many tasks at once; each
    /// body is dropped once and runs at most once (Miri, ThreadSanitizer
    /// and valgrind run this: `.ci/miri.sh`, `.ci/tsan.sh`, `.ci/valgrind.sh`).
    #[test]
    fn a_run_racing_a_cancel_drops_the_body_once() {
        let clock = crate::base::clock::Clock::Real;
        let drops = Arc::new(AtomicUsize::new(0));
        let ran = Arc::new(AtomicUsize::new(0));
        // Miri interprets about 100x slower than native code.
        const N: usize = if cfg!(miri) { 100 } else { 2000 };
        let tasks: Vec<TaskPtr> = (0..N)
            .map(|i| {
                let counted = Counted(Arc::clone(&drops));
                let ran = Arc::clone(&ran);
                TaskPtr::new(OnceTask::new(
                    Header::new(i as u64, 0, Kind::Once),
                    move || {
                        let _keep = &counted;
                        ran.fetch_add(1, Ordering::SeqCst);
                    },
                ))
            })
            .collect();
        let runner_tasks = tasks.clone();
        let runner = std::thread::spawn(move || {
            for t in &runner_tasks {
                if t.header().try_start() {
                    t.run(&clock, 0, true);
                }
            }
        });
        let mut cancelled = 0;
        for t in &tasks {
            if t.header().try_cancel() {
                t.cancelled();
                cancelled += 1;
            }
        }
        runner.join().expect("runner");
        drop(tasks);
        assert_eq!(drops.load(Ordering::SeqCst), N);
        assert!(ran.load(Ordering::SeqCst) + cancelled >= N);
        assert!(ran.load(Ordering::SeqCst) <= N);
    }

    /// Many threads create the result cell at once: all get the same one,
    /// and the run's result lands in it.
    #[test]
    fn racing_waiters_share_one_cell() {
        fn nine() -> u8 {
            9
        }
        type Nine = OnceTask<u8, fn() -> u8>;
        let clock = crate::base::clock::Clock::Real;
        for _ in 0..if cfg!(miri) { 4 } else { 200 } {
            let t = TaskPtr::new(Nine::new(Header::new(0, 0, Kind::Once), nine));
            let waiters: Vec<_> = (0..3)
                .map(|_| {
                    let t = t.clone();
                    std::thread::spawn(move || {
                        let once = t.as_any().downcast_ref::<Nine>().expect("a Nine");
                        let cell = once.cell();
                        let done = cell.wait_timeout(t.header(), Duration::from_secs(30));
                        (Arc::as_ptr(&cell) as usize, done)
                    })
                })
                .collect();
            assert!(t.header().try_start());
            t.run(&clock, 0, true);
            let seen: Vec<_> = waiters
                .into_iter()
                .map(|w| w.join().expect("waiter"))
                .collect();
            let mine = t.as_any().downcast_ref::<Nine>().expect("a Nine").cell();
            for (cell, done) in seen {
                assert_eq!(cell, Arc::as_ptr(&mine) as usize, "one cell");
                assert!(done, "the waiter saw the result");
            }
            assert_eq!(mine.join(t.header()), Ok(9));
        }
    }

    /// A body that owns heap memory (and counts nothing): on every path,
    /// for both task types, its memory is freed exactly once. Nothing here
    /// can see a double free or a leak; Miri and valgrind (`.ci/miri.sh`,
    /// `.ci/valgrind.sh`) do, so this is the test they check `Body` by.
    #[test]
    fn bodies_that_own_memory_are_freed_once_on_every_path() {
        let clock = crate::base::clock::Clock::Real;
        let once = |words: usize| {
            let owned: Vec<u64> = vec![7; words];
            TaskPtr::new(OnceTask::new(Header::new(1, 0, Kind::Once), move || {
                owned.len()
            }))
        };
        let exec = |words: usize| {
            let owned: Vec<u64> = vec![7; words];
            TaskPtr::new(ExecTask::new(Header::new(2, 0, Kind::Once), move || {
                assert_eq!(owned.len(), words);
            }))
        };
        for make in [&once as &dyn Fn(usize) -> TaskPtr, &exec] {
            // Run (watched, so a one-shot's result goes into its cell).
            let t = make(3);
            assert!(t.header().try_start());
            t.run(&clock, 0, true);
            drop(t);
            // Cancelled before the run.
            let t = make(4);
            assert!(t.header().try_cancel());
            t.cancelled();
            assert!(!t.header().try_start());
            drop(t);
            // Cancelled during the run: the cancel claims it, the run finds nothing.
            let t = make(5);
            assert!(t.header().try_start());
            assert!(t.header().try_cancel());
            t.cancelled();
            t.run(&clock, 0, false);
            drop(t);
            // Never claimed: dropped with the task.
            drop(make(6));
        }
    }

    /// `get_or_create` losing the install: the loser's fresh value is freed
    /// and the installed one returned. Deterministic on one thread: the
    /// outer call's `create` installs a value first, through an inner call.
    #[test]
    fn a_lazy_cell_that_loses_the_install_returns_the_winner() {
        use super::LazyCell;
        let cell = LazyCell::<Vec<u64>>::new();
        let got = cell.get_or_create(|| {
            let winner = cell.get_or_create(|| vec![2; 4]);
            assert_eq!(*winner, vec![2; 4]);
            vec![1; 4]
        });
        assert_eq!(*got, vec![2; 4], "the installed value wins");
        let again = cell.get().expect("installed");
        assert!(Arc::ptr_eq(&got, &again), "one cell");
        drop(cell);
        assert_eq!(
            *got,
            vec![2; 4],
            "the cell's reference is released, ours lives"
        );
    }

    /// Threads create a bare cell at once, nobody blocking: all get the
    /// one that won, whole.
    #[test]
    fn racing_creators_share_one_cell() {
        use super::LazyCell;
        for _ in 0..if cfg!(miri) { 4 } else { 200 } {
            let cell = Arc::new(LazyCell::<Vec<u64>>::new());
            let creators: Vec<_> = (0..3)
                .map(|i| {
                    let cell = Arc::clone(&cell);
                    std::thread::spawn(move || {
                        let got = cell.get_or_create(|| vec![i; 8]);
                        assert!(got.iter().all(|&w| w == got[0]), "seen whole");
                        Arc::as_ptr(&got) as usize
                    })
                })
                .collect();
            let mine = cell.get_or_create(|| vec![9; 8]);
            for c in creators {
                assert_eq!(c.join().expect("creator"), Arc::as_ptr(&mine) as usize);
            }
        }
    }
}
