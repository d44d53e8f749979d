//! The submission list: where a delayed task goes when a worker is bound to
//! look for it by its deadline, so that its submitter skips the pool lock
//! (issue 33, item 2: a submission wakes the leader only when its deadline
//! is earlier than the one the leader published).
//!
//! A submission of a task that is not yet due normally takes the pool lock
//! and pushes the task into the heap or the wheel. When a worker is bound
//! to take the pool lock again by the task's deadline anyway, the submitter
//! has nothing to do under that lock but the push: it leaves the task here
//! instead, under a lock of its own held for one `Vec::push`, and whoever
//! next holds the pool lock moves it into the queue
//! ([`absorb`](crate::pool::state::State::absorb)). *Bound to look* is the
//! removals' hand-shake ([`Removals::covers`](super::removals::Removals::covers)):
//! a worker looks now, or a sleeping waiter published a wake time more than
//! [`MAX_EARLY`](crate::wait::spin::MAX_EARLY) before the deadline.
//!
//! # Invariants
//!
//! - The list is *open*, and a submission may use it, only while the pool
//!   is running and has all its workers (`max(core_threads, 1)`); both are
//!   written under the pool lock and this lock. A shutdown, and a worker's
//!   exit, close it first and then absorb under the pool lock, so a task
//!   pushed while it was open is queued before the shutdown purges or the
//!   exit is final: it counts as accepted before the shutdown.
//! - A submission pushes, then asks whether a worker is bound to look
//!   (sequentially consistent, a fence between; Dekker with a waiter that
//!   stops looking and then reads [`Submissions::looks_empty`]). If none
//!   is, it takes the pool lock, which absorbs the list, and signals a
//!   waiter if nobody leads then (as a locked push of a new head does).
//! - A spinning waiter (outside the pool lock, looking) publishes until
//!   when it spins (`spin_until`) before it checks this list, and a
//!   submission that pushed reads it after its fence: either the spinner
//!   sees the task before it spins, or the submission kicks the spin short
//!   if its deadline comes before the spin's end (at the end the spinner
//!   takes the pool lock and looks anyway). Off the real clock every
//!   submission kicks it.
//! - Whoever takes the pool lock absorbs this list before it reads the
//!   queue, and before the removals (a task's cancel comes after its
//!   submission), so counts, cancels, pause, resume, trigger, purges and
//!   `shutdown_now` see every submission that returned before.

use crate::base::clock::Nanos;
use crate::base::sync::{fence, AtomicBool, AtomicU64, AtomicUsize, Mutex, Ordering};
use crate::pool::inbox::Incoming;
use crate::task::ptr::TaskPtr;

/// The most tasks the list holds: a submission that finds it full takes
/// the pool lock, which absorbs it. This bounds the work a worker inherits
/// in one absorb (a few microseconds) and the list's memory (4 KiB, and as
/// much again for the buffer the lock's holder swaps in), which a burst
/// of far-off submissions would otherwise double for a while (W6, heap per
/// pending task, read 1.07× without a bound).
pub(crate) const LIST_MAX: usize = 256;

/// See the module documentation.
pub(crate) struct Submissions {
    list: Mutex<List>,
    /// How many tasks the list holds (exact under its lock; a hint outside,
    /// read sequentially consistent by the hand-shake).
    len: AtomicUsize,
    /// Whether the list was open when last changed: a hint read without
    /// the lock, so a submission that would be turned away does not take it.
    open: AtomicBool,
    /// Until when a waiter spins outside the pool lock (real clock; 0: no
    /// spinner; `u64::MAX`: kick it whatever the deadline). See the
    /// invariants.
    spin_until: AtomicU64,
}

struct List {
    tasks: Vec<Incoming>,
    /// The pool is `RUNNING`.
    running: bool,
    /// It has all its workers.
    staffed: bool,
}

impl Submissions {
    pub(crate) fn new() -> Self {
        Submissions {
            list: Mutex::new(List {
                // Its full size at once, when the pool is made (see `push`).
                tasks: Vec::with_capacity(LIST_MAX),
                running: true,
                staffed: false,
            }),
            len: AtomicUsize::new(0),
            open: AtomicBool::new(false),
            spin_until: AtomicU64::new(0),
        }
    }

    /// True if the list may take a submission (a hint: [`push`](Self::push)
    /// decides under the lock).
    #[inline]
    pub(crate) fn looks_open(&self) -> bool {
        self.open.load(Ordering::Relaxed)
    }

    /// Leaves `task` (its deadline read at `now`) for the workers if the
    /// list is open and not full; gives it back otherwise. On `Ok`, the caller must ask
    /// whether a worker is bound to look, after a sequentially consistent
    /// fence ([`pushed`](Self::pushed) makes it).
    pub(crate) fn push(&self, task: TaskPtr, now: Nanos) -> Result<(), TaskPtr> {
        let mut list = self.list.lock();
        if !(list.running && list.staffed) || list.tasks.len() >= LIST_MAX {
            return Err(task);
        }
        if list.tasks.capacity() == 0 {
            // Never in a stream: both buffers the pool lock's holder swaps
            // are made at their full size with the pool, and stay put
            // (growing them in a stream moved glibc's heap top and let it
            // trim memory that W1 then faulted in again).
            list.tasks.reserve_exact(LIST_MAX);
        }
        list.tasks.push((task, now));
        self.len.store(list.tasks.len(), Ordering::SeqCst);
        Ok(())
    }

    /// The fence after a push of a task due at `deadline` (real clock;
    /// `None` otherwise), then whether a waiter spins past it: the
    /// submission then kicks the spin short (see the invariants).
    #[inline]
    pub(crate) fn pushed(&self, deadline: Option<Nanos>) -> bool {
        fence(Ordering::SeqCst);
        let until = self.spin_until.load(Ordering::SeqCst);
        until != 0 && deadline.is_none_or(|d| d < until)
    }

    /// True if the list is empty, as of a sequentially consistent read (see
    /// the invariants).
    #[inline]
    pub(crate) fn looks_empty(&self) -> bool {
        self.len.load(Ordering::SeqCst) == 0
    }

    /// How many tasks the list holds (read under its lock).
    pub(crate) fn len(&self) -> usize {
        self.list.lock().tasks.len()
    }

    /// Moves the list's tasks, in submission order, into `out` (empty; its
    /// capacity is swapped in).
    pub(crate) fn take(&self, out: &mut Vec<Incoming>) {
        debug_assert!(out.is_empty());
        let mut list = self.list.lock();
        std::mem::swap(&mut list.tasks, out);
        self.len.store(0, Ordering::SeqCst);
    }

    /// A waiter is about to spin outside the pool lock until `until` (real
    /// clock, at least 1; `u64::MAX` off it) unless kicked (pool lock
    /// held): publishes that, then checks the list. False (and nothing
    /// published) if tasks wait here: absorb them instead.
    pub(crate) fn spin_starts(&self, until: Nanos) -> bool {
        debug_assert!(until > 0);
        self.spin_until.store(until, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        if self.len.load(Ordering::SeqCst) == 0 {
            return true;
        }
        self.spin_until.store(0, Ordering::SeqCst);
        false
    }

    /// The spin that [`spin_starts`](Self::spin_starts) began has ended.
    pub(crate) fn spin_ends(&self) {
        self.spin_until.store(0, Ordering::SeqCst);
    }

    /// The pool has all its workers, or not (pool lock held). A change to
    /// `false` may strand tasks: the caller absorbs after it.
    pub(crate) fn set_staffed(&self, staffed: bool) {
        let mut list = self.list.lock();
        list.staffed = staffed;
        self.open
            .store(list.running && list.staffed, Ordering::Relaxed);
    }

    /// Shutdown: no submission uses the list any more. The caller absorbs
    /// after this, so the tasks that came in before are queued.
    pub(crate) fn close(&self) {
        let mut list = self.list.lock();
        list.running = false;
        self.open.store(false, Ordering::Relaxed);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::sync::Arc;

    use super::{Submissions, LIST_MAX};
    use crate::pool::removals::{Removals, Sleep};
    use crate::task::header::{Header, Kind};
    use crate::task::once::OnceTask;
    use crate::task::ptr::TaskPtr;
    use crate::wait::spin::MAX_EARLY;

    fn task() -> TaskPtr {
        TaskPtr::new(OnceTask::new(Header::new(0, 10, Kind::Once), || ()))
    }

    fn open() -> Arc<Submissions> {
        let submissions = Arc::new(Submissions::new());
        submissions.set_staffed(true);
        submissions
    }

    #[test]
    fn a_closed_or_full_list_gives_the_task_back() {
        let submissions = Submissions::new();
        assert!(submissions.push(task(), 0).is_err(), "not staffed yet");
        submissions.set_staffed(true);
        for _ in 0..LIST_MAX {
            assert!(submissions.push(task(), 0).is_ok());
        }
        assert!(submissions.push(task(), 0).is_err(), "full");
        let mut out = Vec::new();
        submissions.take(&mut out);
        assert_eq!(out.len(), LIST_MAX);
        assert!(submissions.looks_empty());
        submissions.close();
        assert!(submissions.push(task(), 0).is_err(), "closed");
        assert!(!submissions.looks_open());
    }

    /// A sleeping waiter's published time covers a deadline at or after
    /// it, and nothing earlier; a looking worker covers every deadline.
    #[test]
    fn a_published_wake_time_covers_later_deadlines_only() {
        let submissions = open();
        let removals = Removals::new(Arc::clone(&submissions));
        assert!(!removals.covers(Some(u64::MAX - 1)), "nobody waits");
        removals.looking();
        assert!(removals.covers(None), "a looking worker");
        assert_eq!(removals.sleeping_until(5_000, false), Sleep::Empty);
        assert!(removals.covers(Some(5_001 + MAX_EARLY)));
        assert!(
            !removals.covers(Some(5_000 + MAX_EARLY)),
            "too close after the wake-up to be timed with an early wake"
        );
        assert!(!removals.covers(Some(4_999)), "due before the waiter wakes");
        assert!(!removals.covers(None), "not on the real clock");
        // A follower published the head's deadline (5,000) while the
        // leader was awake; the leader now leaves the queue empty to run
        // the head: nobody will look by then any more.
        removals.looking();
        removals.hand_on(u64::MAX);
        assert!(removals.stops_looking());
        assert!(
            !removals.covers(Some(u64::MAX - 1)),
            "withdrawn by the leaver"
        );
    }

    /// A waiter about to sleep, or to leave, finds a submission and looks
    /// again; one allowed to batch removals does not batch past it.
    #[test]
    fn a_waiter_never_sleeps_or_leaves_past_a_submission() {
        let submissions = open();
        let removals = Removals::new(Arc::clone(&submissions));
        removals.looking();
        submissions.push(task(), 0).unwrap();
        assert_eq!(removals.sleeping_until(u64::MAX, true), Sleep::Take);
        assert!(!removals.stops_looking());
        assert!(!submissions.spin_starts(u64::MAX), "no spin past it either");
        let mut out = Vec::new();
        submissions.take(&mut out);
        assert!(removals.stops_looking());
        assert!(submissions.spin_starts(1_000));
        submissions.push(task(), 0).unwrap();
        assert!(
            submissions.pushed(Some(999)),
            "due before the spin ends: kicked"
        );
        assert!(
            !submissions.pushed(Some(1_000)),
            "due after it: looked at after it"
        );
        assert!(submissions.pushed(None), "off the real clock: kicked");
        submissions.spin_ends();
        assert!(!submissions.pushed(None));
    }
}

/// loom models of the hand-shake (see the invariants): a submission that
/// skipped the pool lock because a worker looked must be taken by that
/// worker before it sleeps, leaves or spins; otherwise the submission must
/// learn that nobody covers it (and take the lock to wake a waiter). Run
/// with `RUSTFLAGS="--cfg loom" cargo test --release --lib` (`.ci/run`
/// does). The pool-level races (the leader re-timing, a cancel, shutdown,
/// pause and trigger against a task in the list) are in
/// `tests/loom/submissions.rs`.
#[cfg(all(test, loom))]
mod loom_models {
    use std::sync::Arc;

    use super::Submissions;
    use crate::pool::removals::{Removals, Sleep};
    use crate::task::header::{Header, Kind};
    use crate::task::once::OnceTask;
    use crate::task::ptr::TaskPtr;

    fn task() -> TaskPtr {
        TaskPtr::new(OnceTask::new(Header::new(0, 10, Kind::Once), || ()))
    }

    /// A worker that looks, then stops by `stop`, taking the submission
    /// list each time the check fails; a submission pushes and asks whether
    /// it is covered. Returns what the worker took and the submission's
    /// answer.
    fn race(stop: fn(&Removals, &Submissions) -> bool) -> (usize, bool) {
        let submissions = Arc::new(Submissions::new());
        submissions.set_staffed(true);
        let removals = Arc::new(Removals::new(Arc::clone(&submissions)));
        removals.looking();
        let worker = {
            let (removals, submissions) = (Arc::clone(&removals), Arc::clone(&submissions));
            loom::thread::spawn(move || {
                let (mut taken, mut list) = (0, Vec::new());
                while !stop(&removals, &submissions) {
                    submissions.take(&mut list);
                    taken += list.len();
                    list.clear();
                }
                taken
            })
        };
        submissions.push(task(), 0).expect("open");
        let kicked = submissions.pushed(None);
        let covered = removals.covers(None) || kicked;
        (worker.join().expect("worker"), covered)
    }

    /// Fails if a worker may sleep without seeing a submission that counted
    /// on it.
    #[test]
    fn a_sleeping_worker_takes_a_submission_that_counted_on_it() {
        loom::model(|| {
            let (taken, covered) = race(|r, _| r.sleeping_until(u64::MAX, false) == Sleep::Empty);
            assert!(taken == 1 || !covered, "{taken} {covered}");
        });
    }

    /// The same for a worker leaving the wait to run a task.
    #[test]
    fn a_leaving_worker_takes_a_submission_that_counted_on_it() {
        loom::model(|| {
            let (taken, covered) = race(|r, _| r.stops_looking());
            assert!(taken == 1 || !covered, "{taken} {covered}");
        });
    }

    /// The same for a worker that may batch removals: never past a
    /// submission.
    #[test]
    fn a_batching_worker_takes_a_submission_that_counted_on_it() {
        loom::model(|| {
            let (taken, covered) = race(|r, _| r.sleeping_until(u64::MAX, true) != Sleep::Take);
            assert!(taken == 1 || !covered, "{taken} {covered}");
        });
    }

    /// A spinner (looking, outside the lock) either sees the submission
    /// before it spins or is kicked by it.
    #[test]
    fn a_spinner_sees_a_submission_or_is_kicked() {
        loom::model(|| {
            let submissions = Arc::new(Submissions::new());
            submissions.set_staffed(true);
            let spinner = {
                let submissions = Arc::clone(&submissions);
                // It starts a spin that lasts past the submission (the
                // spin's end, which re-checks under the lock, is not
                // modelled).
                loom::thread::spawn(move || submissions.spin_starts(u64::MAX))
            };
            submissions.push(task(), 0).expect("open");
            let kicked = submissions.pushed(None);
            let spun = spinner.join().expect("spinner");
            assert!(!spun || kicked, "spun past it");
        });
    }
}
