//! Deferred removal: where a cancel leaves its task's queue node for the
//! heap's owner, so that cancelling never waits on the pool lock (JDK 25's
//! `DelayScheduler` does the same).
//!
//! A cancel has already won the task's state (`-> CANCELLED`), completed its
//! handle and dropped its body when it gets here. What is left is the queue
//! node (the heap entry, tens of bytes) and the bookkeeping: it pushes the
//! task onto this list, under a lock of its own held for one `Vec::push`,
//! and whoever next holds the pool lock takes the list
//! ([`absorb`](crate::pool::state::State::absorb)): counts the cancels,
//! takes the tasks out of the queue and the paused list.
//!
//! # Invariants
//!
//! - Every holder of the pool lock takes this list before it reads the
//!   queue or the counters, so `queue_len()`, `stats()`, the metrics and
//!   `shutdown_now()` see every cancel that returned before they were
//!   called: the task is uncounted at once, though its node may stay in the
//!   heap until then.
//! - *Looking.* A worker inside the wait loop that is awake (it entered the
//!   wait or woke, and has not yet slept or left) is *looking*
//!   ([`Removals::looking`]): before it sleeps or leaves it stops looking
//!   and then checks that the list is empty, and takes the list and looks
//!   again if not ([`Removals::stops_looking`]; or, about to sleep, may
//!   sleep past it for a short while: *Batching*, below). A cancel pushes, then
//!   reads the count (both sequentially consistent, with a fence between:
//!   one of the two sees the other), so a cancel that finds a worker
//!   looking needs to wake nobody: that worker takes the list before it
//!   leaves the wait (even to run a task it found due), and before it
//!   sleeps or within [`BATCH_WINDOW`] of sleeping.
//! - *Published wake time.* Only a waiter that goes to sleep leaves its
//!   wake time published: one that published it and then looks again
//!   instead withdraws it ([`Removals::looks_again`]), since it may leave
//!   to run a task rather than wake by then. A follower that goes to sleep
//!   publishes the head's deadline, counting on the leader that times it;
//!   if that leader was awake (spinning to the head outside the lock), it
//!   may then leave to run the head without sleeping again. So a waiter
//!   that leaves the wait first corrects the published time
//!   ([`Removals::hand_on`]): to nothing if it leaves the queue empty or
//!   closed, to the successor's timer if it leaves one to be promoted;
//!   otherwise it owes a signal, which its hand-over sends whenever nobody
//!   leads by then, even if the queue emptied meanwhile (other workers take
//!   the ready batch without the pool lock), and the woken waiter looks at
//!   once; a waiter still leading is asleep with a timer no later than the
//!   published time, or awake and looking. A
//!   published time so names a waiter asleep with a timer no later than
//!   it, or one that was woken and looks (or is about to).
//! - *Reclaim bound.* A waiting worker that is about to sleep publishes
//!   when it will next wake ([`Removals::sleeping_until`]) before it stops
//!   looking. A cancel that finds the list was empty, nobody looking and
//!   no waiter due within [`RECLAIM_BOUND`] wakes one (taking the pool
//!   lock only to signal, at most once per empty-to-non-empty change). A
//!   waiter that took removals sleeps at most [`RECLAIM_BOUND`] while they
//!   keep coming. So a node is reclaimed at the next wake-up of a worker,
//!   and no later than [`RECLAIM_BOUND`] after its cancel while a worker
//!   waits (a pool whose workers are all running long tasks reclaims when
//!   one of them next takes the lock).
//! - *Batching.* A waiter that took the list at time `t` (finding
//!   removals there) may sleep past removals pushed since, if it wakes by
//!   `t +` [`BATCH_WINDOW`] ([`Sleep::Batch`]); the window is shorter than
//!   [`RECLAIM_BOUND`], so every one of them is still younger than the
//!   bound when it wakes. While cancels keep coming, the waiter so takes
//!   them a window's worth at a time, instead of taking each as it lands
//!   and racing the cancels for the list's lock and counters.
//! - *Bulk.* When the list grows past a share of the queue
//!   ([`Removals::bulk_at`]), the cancel that crosses it wakes a waiter at
//!   once: unreclaimed nodes never outnumber a quarter of the queue (plus
//!   [`BULK_MIN`]) for longer than a wake-up.
//! - *Urgent.* While the pool is shutting down or a thread waits in
//!   `wait_idle`, a cancel takes the pool lock itself (as before this
//!   list), so termination and idleness are seen at once.

use std::time::Duration;

use std::sync::Arc;

use crate::base::clock::Nanos;
use crate::base::sync::{fence, AtomicBool, AtomicU64, AtomicUsize, Mutex, Ordering};
use crate::pool::submissions::Submissions;
use crate::task::ptr::TaskPtr;
use crate::wait::spin::MAX_EARLY;

/// The longest a cancelled task's node stays in the queue while a worker
/// waits (see the invariants).
pub(crate) const RECLAIM_BOUND: Duration = Duration::from_millis(10);

/// How long after a take that found removals a waiter may sleep past
/// newer ones, to take them in one batch (see the invariants).
pub(crate) const BATCH_WINDOW: Duration = Duration::from_millis(1);

// A batching waiter must wake inside the bound.
const _: () = assert!(BATCH_WINDOW.as_nanos() < RECLAIM_BOUND.as_nanos());

/// [`RECLAIM_BOUND`] in nanoseconds.
const BOUND_NANOS: Nanos = RECLAIM_BOUND.as_nanos() as Nanos;

/// The fewest pending removals that wake a waiter at once, whatever the
/// queue's length: below it, the reclaim bound alone applies (a few
/// hundred KiB at most).
pub(crate) const BULK_MIN: usize = 4096;

/// What a cancel must do after leaving its task here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum After {
    /// Nothing: a waiter will take the list within the bound.
    Nothing,
    /// Wake one waiter (the list was empty and nobody wakes in time, or it
    /// grew past the bulk share).
    Wake,
    /// Take the pool lock and reclaim at once (shutdown, `wait_idle`).
    Reclaim,
}

/// What a waiter about to sleep found ([`Removals::sleeping_until`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sleep {
    /// The list is empty: sleep (until the time it published).
    Empty,
    /// Removals came in since the last take, which was recent: sleep, but
    /// no longer than [`BATCH_WINDOW`] after that take, then take them all.
    Batch,
    /// Removals came in: take them and look again (it still looks).
    Take,
}

/// See the module documentation.
pub(crate) struct Removals {
    list: Mutex<Vec<TaskPtr>>,
    /// How many tasks the list holds (exact under its lock; a hint outside).
    len: AtomicUsize,
    /// When the next waiter to sleep wakes at the latest, on the real
    /// clock's scale (`u64::MAX`: no timed waiter; unknown).
    wake_at: AtomicU64,
    /// How many workers are looking (see the invariants).
    looking: AtomicUsize,
    /// A length at which a cancel wakes a waiter at once.
    bulk_at: AtomicUsize,
    /// Cancels reclaim under the pool lock themselves.
    urgent: AtomicBool,
    /// The submission list, which the same hand-shake covers: a waiter
    /// stops looking only when both lists are empty.
    submissions: Arc<Submissions>,
}

impl Removals {
    pub(crate) fn new(submissions: Arc<Submissions>) -> Self {
        Removals {
            submissions,
            list: Mutex::new(Vec::new()),
            len: AtomicUsize::new(0),
            wake_at: AtomicU64::new(u64::MAX),
            looking: AtomicUsize::new(0),
            bulk_at: AtomicUsize::new(BULK_MIN),
            urgent: AtomicBool::new(false),
        }
    }

    /// Leaves a cancelled task for the owner; `now` reads the real clock
    /// (called only when the list was empty). Says what the caller must do
    /// to keep the bounds.
    pub(crate) fn push(&self, task: TaskPtr, now: impl FnOnce() -> Nanos) -> After {
        let before = {
            let mut list = self.list.lock();
            list.push(task);
            self.len.fetch_add(1, Ordering::SeqCst)
        };
        // Dekker with `set_urgent` and `stops_looking`: the push, then
        // their flags (a full fence: loom models SeqCst accesses as AcqRel,
        // but fences as SeqCst).
        fence(Ordering::SeqCst);
        if self.urgent.load(Ordering::SeqCst) {
            return After::Reclaim;
        }
        let bulk = self.bulk_at.load(Ordering::Relaxed);
        if before < bulk && before + 1 >= bulk {
            return After::Wake;
        }
        if before == 0
            && self.looking.load(Ordering::SeqCst) == 0
            && self.wake_at.load(Ordering::SeqCst) > now().saturating_add(BOUND_NANOS)
        {
            return After::Wake;
        }
        After::Nothing
    }

    /// After a submission pushed onto the submission list (and its fence):
    /// true if a worker is bound to take the pool lock by `deadline` anyway,
    /// so nobody need be woken. One is if a worker looks (it absorbs before
    /// it sleeps or leaves), or, for a `deadline` on the real clock's scale
    /// (`None` otherwise), if a sleeping waiter published a wake time more
    /// than [`MAX_EARLY`] before it (Dekker with
    /// [`sleeping_until`](Self::sleeping_until)).
    ///
    /// A published time covers only a deadline more than
    /// [`MAX_EARLY`] after it: the waiter that wakes then, finding the task
    /// its new head, still has time to ask to be woken early and spin to
    /// it, as it would have had the submission taken the lock and signalled.
    #[inline]
    pub(crate) fn covers(&self, deadline: Option<Nanos>) -> bool {
        self.looking.load(Ordering::SeqCst) > 0
            || deadline.is_some_and(|d| {
                self.wake_at
                    .load(Ordering::SeqCst)
                    .saturating_add(MAX_EARLY)
                    < d
            })
    }

    /// True if the list is empty, as of a sequentially consistent read: a
    /// holder of the pool lock that set [`urgent`](Self::set_urgent) (or
    /// published a wake time) before this read sees every push a cancel
    /// made before it read that flag (a plain load on x86).
    #[inline]
    pub(crate) fn looks_empty(&self) -> bool {
        self.len.load(Ordering::SeqCst) == 0
    }

    /// Moves the list's tasks into `out` (empty; capacities are swapped).
    pub(crate) fn take(&self, out: &mut Vec<TaskPtr>) {
        debug_assert!(out.is_empty());
        let mut list = self.list.lock();
        std::mem::swap(&mut *list, out);
        self.len.store(0, Ordering::SeqCst);
    }

    /// The queue holds `queued` tasks after a reclaim: sets the bulk share.
    pub(crate) fn set_queued(&self, queued: usize) {
        self.bulk_at
            .store((queued / 4).max(BULK_MIN), Ordering::Relaxed);
    }

    /// A worker entered the wait loop (pool lock held): it is looking.
    pub(crate) fn looking(&self) {
        self.looking.fetch_add(1, Ordering::SeqCst);
    }

    /// A looking waiter is about to sleep (pool lock held) and wakes by
    /// `wake_at` (real clock; `u64::MAX`: untimed) at the latest. Stops
    /// looking, then checks the list (Dekker with `push`); see [`Sleep`].
    /// `batch`: the list was taken within [`RECLAIM_BOUND`], so what came
    /// in since may wait for the window (see the invariants).
    pub(crate) fn sleeping_until(&self, wake_at: Nanos, batch: bool) -> Sleep {
        // Before it stops looking: a cancel that sees it stopped sees this.
        self.wake_at.store(wake_at, Ordering::SeqCst);
        match self.stop_looking() {
            (true, true) => return Sleep::Empty,
            // Only removals: they may wait for the window. (A submission
            // may be due before the window ends.)
            (false, true) if batch => return Sleep::Batch,
            _ => {}
        }
        self.looks_again();
        Sleep::Take
    }

    /// A waiter that [`sleeping_until`](Self::sleeping_until) let sleep
    /// does not sleep after all (pool lock held): it looks again, and the
    /// wake time it published goes, since it may now leave to run a task
    /// instead of waking by then. (`u64::MAX`: the next cancel onto an
    /// empty list with nobody looking wakes a waiter, which is always
    /// safe.)
    pub(crate) fn looks_again(&self) {
        self.wake_at.store(u64::MAX, Ordering::SeqCst);
        self.looking.fetch_add(1, Ordering::SeqCst);
    }

    /// A looking worker about to leave the wait loop (pool lock held, before
    /// [`stops_looking`](Self::stops_looking)) replaces the published wake
    /// time with `wake_at`: what still holds once it is gone (see the
    /// invariants). Stored before it stops looking, so a cancel or a
    /// submission that sees it gone sees this.
    pub(crate) fn hand_on(&self, wake_at: Nanos) {
        self.wake_at.store(wake_at, Ordering::SeqCst);
    }

    /// A looking worker is about to leave the wait loop (pool lock held):
    /// stops looking, then checks the list (Dekker with `push`). True if it
    /// is empty; if not, it looks again and returns false: take the list
    /// and look again instead.
    pub(crate) fn stops_looking(&self) -> bool {
        if self.stop_looking() == (true, true) {
            return true;
        }
        self.looking.fetch_add(1, Ordering::SeqCst);
        false
    }

    /// Stops looking, then reads both lists' lengths: whether this list,
    /// and whether the submission list, is empty.
    fn stop_looking(&self) -> (bool, bool) {
        self.looking.fetch_sub(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        (
            self.len.load(Ordering::SeqCst) == 0,
            self.submissions.looks_empty(),
        )
    }

    /// A looking worker left the wait loop without checking the list (a
    /// panic unwound it): it no longer looks.
    pub(crate) fn left(&self) {
        self.wake_at.store(u64::MAX, Ordering::SeqCst);
        self.looking.fetch_sub(1, Ordering::SeqCst);
    }

    /// A waiter woke: it looks again, and its published time no longer
    /// holds.
    pub(crate) fn awake(&self) {
        self.looking.fetch_add(1, Ordering::SeqCst);
        self.wake_at.store(u64::MAX, Ordering::SeqCst);
    }

    /// Cancels reclaim under the pool lock themselves while `urgent`
    /// (pool lock held).
    pub(crate) fn set_urgent(&self, urgent: bool) {
        self.urgent.store(urgent, Ordering::SeqCst);
        // Then the caller takes the list (see `push`).
        fence(Ordering::SeqCst);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::sync::Arc;

    use super::{After, Removals, Sleep};
    use crate::pool::submissions::Submissions;
    use crate::task::header::{Header, Kind};
    use crate::task::once::OnceTask;
    use crate::task::ptr::TaskPtr;

    fn task() -> TaskPtr {
        TaskPtr::new(OnceTask::new(Header::new(0, 0, Kind::Once), || ()))
    }

    /// A waiter that published a wake time, then looked again instead of
    /// sleeping and left to run a task, must not leave that time behind:
    /// a cancel would count on a wake-up that never comes.
    #[test]
    fn a_waiter_that_does_not_sleep_withdraws_its_wake_time() {
        let removals = Removals::new(Arc::new(Submissions::new()));
        let mut list = Vec::new();
        removals.looking();
        // A cancel lands while the waiter looks: it wakes nobody.
        assert_eq!(removals.push(task(), || 0), After::Nothing);
        // About to sleep until 5 ms: the list is not empty, so it takes it.
        assert_eq!(removals.sleeping_until(5_000_000, false), Sleep::Take);
        removals.take(&mut list);
        // It finds a task due and leaves the wait to run it.
        assert!(removals.stops_looking());
        // Nobody waits by 5 ms now: the next cancel must wake a waiter.
        assert_eq!(removals.push(task(), || 0), After::Wake);
    }

    /// The same when it published its time, then found a submission in
    /// the inbox and looked again.
    #[test]
    fn a_waiter_that_looks_again_withdraws_its_wake_time() {
        let removals = Removals::new(Arc::new(Submissions::new()));
        removals.looking();
        assert_eq!(removals.sleeping_until(5_000_000, false), Sleep::Empty);
        removals.looks_again();
        assert!(removals.stops_looking());
        assert_eq!(removals.push(task(), || 0), After::Wake);
    }

    /// A waiter that sleeps keeps its time published: a cancel within the
    /// bound of it wakes nobody.
    #[test]
    fn a_sleeping_waiter_keeps_its_wake_time() {
        let removals = Removals::new(Arc::new(Submissions::new()));
        removals.looking();
        assert_eq!(removals.sleeping_until(5_000_000, false), Sleep::Empty);
        assert_eq!(removals.push(task(), || 0), After::Nothing);
    }
}

/// loom models of the *looking* hand-shake (see the invariants): a cancel
/// that wakes nobody because a worker looks must have its removal taken by
/// that worker before it sleeps or leaves. Run with `RUSTFLAGS="--cfg loom"
/// cargo test --release --lib` (`.ci/run` does).
#[cfg(all(test, loom))]
mod loom_models {
    use std::sync::Arc;

    use super::{After, Removals, Sleep};
    use crate::base::sync::Ordering;
    use crate::pool::submissions::Submissions;
    use crate::task::header::{Header, Kind};
    use crate::task::once::OnceTask;
    use crate::task::ptr::TaskPtr;

    fn task() -> TaskPtr {
        TaskPtr::new(OnceTask::new(Header::new(0, 0, Kind::Once), || ()))
    }

    /// A worker that looks, then stops by `stop` (sleeping or leaving),
    /// taking the list each time the check fails; a cancel pushes. Returns
    /// how many removals the worker took and what the cancel was told.
    fn race(stop: fn(&Removals) -> bool) -> (usize, After) {
        let removals = Arc::new(Removals::new(Arc::new(Submissions::new())));
        removals.looking();
        let worker = {
            let removals = Arc::clone(&removals);
            loom::thread::spawn(move || {
                let (mut taken, mut list) = (0, Vec::new());
                while !stop(&removals) {
                    removals.take(&mut list);
                    taken += list.len();
                    list.clear();
                }
                taken
            })
        };
        let after = removals.push(task(), || 0);
        (worker.join().expect("worker"), after)
    }

    /// Fails if a worker may leave without checking the list after it
    /// stops looking.
    #[test]
    fn a_leaving_worker_takes_what_a_cancel_left_it() {
        loom::model(|| {
            let (taken, after) = race(Removals::stops_looking);
            assert!(taken == 1 || after == After::Wake, "{taken} {after:?}");
        });
    }

    /// The same for a worker about to sleep untimed.
    #[test]
    fn a_sleeping_worker_takes_what_a_cancel_left_it() {
        loom::model(|| {
            let (taken, after) = race(|r| r.sleeping_until(u64::MAX, false) == Sleep::Empty);
            assert!(taken == 1 || after == After::Wake, "{taken} {after:?}");
        });
    }

    /// A worker allowed to batch sleeps past a removal only if it is still
    /// in the list (its timed wake takes it), and stops looking either way
    /// (a later cancel must not count on it).
    #[test]
    fn a_batching_worker_leaves_a_removal_only_in_the_list() {
        loom::model(|| {
            let removals = Arc::new(Removals::new(Arc::new(Submissions::new())));
            removals.looking();
            let worker = {
                let removals = Arc::clone(&removals);
                loom::thread::spawn(move || {
                    let mut list = Vec::new();
                    match removals.sleeping_until(u64::MAX, true) {
                        Sleep::Take => unreachable!("a batching worker never looks again"),
                        Sleep::Empty => (0, false),
                        Sleep::Batch => {
                            // What its timed wake does: take the list.
                            removals.take(&mut list);
                            (list.len(), true)
                        }
                    }
                })
            };
            let after = removals.push(task(), || 0);
            let (taken, batched) = worker.join().expect("worker");
            assert!(
                taken == 1 || after == After::Wake,
                "{taken} {after:?} batched {batched}"
            );
            assert_eq!(
                removals.looking.load(Ordering::SeqCst),
                0,
                "it stopped looking"
            );
        });
    }
}
