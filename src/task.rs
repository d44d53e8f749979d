//! A scheduled task: its header (the part the queue and the handle share),
//! its state machine, and the one-shot body. Periodic bodies are in
//! [`crate::periodic`], idle timers in [`crate::idle`].
//!
//! # Invariants
//!
//! - The state word holds a base state and, while `RUNNING`, request flags:
//!   `SCHEDULED -> RUNNING -> SCHEDULED` (periodic, between runs) or
//!   `-> PAUSED`, and ends in `DONE` (completed or panicked) or `CANCELLED`.
//!   `PAUSED -> SCHEDULED` on resume.
//! - Only the thread whose compare-and-swap takes `SCHEDULED -> RUNNING`
//!   runs the body, so a task never runs twice at once, and never after a
//!   successful cancel or pause.
//! - A pause or trigger that arrives during a run sets a flag in the same
//!   word the runner's end-of-run swap reads, so it can never be lost
//!   between "the run ended" and "requeued".
//! - `CANCELLED` is reachable from `SCHEDULED`, `RUNNING` and `PAUSED`; the
//!   thread that wins that swap completes the handle with
//!   [`TaskError::Cancelled`] at once (Java: `isDone` is true immediately,
//!   even while the body still runs) and drops the body unless it is out
//!   running.
//! - `heap_index` is written only under the owning pool's lock; while the
//!   task is queued it equals its position in the heap, otherwise
//!   [`NOT_QUEUED`].
//! - `deadline` changes only while the task is not in the heap, or under the
//!   pool lock together with a remove and re-push.
//! - The body is never dropped under a pool lock, and panics from its `Drop`
//!   are swallowed ([`drop_quietly`]).

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use crate::clock::{Clock, Nanos};
use crate::completion::Completion;
use crate::error::{drop_quietly, panic_message, TaskError};
use crate::heap::NOT_QUEUED;
use crate::periodic_task::Control;
use crate::sync::{AtomicU32, AtomicU64, AtomicU8, Mutex, Ordering};

pub(crate) const SCHEDULED: u8 = 0;
pub(crate) const RUNNING: u8 = 1;
pub(crate) const PAUSED: u8 = 2;
pub(crate) const DONE: u8 = 3;
pub(crate) const CANCELLED: u8 = 4;
const BASE: u8 = 0b0111;
/// While `RUNNING`: pause instead of requeueing after this run.
const PAUSE_REQUESTED: u8 = 0b1000;
/// While `RUNNING`: the next run is due at once.
const TRIGGER_REQUESTED: u8 = 0b1_0000;
/// In any state: someone waits for the result (see [`Header::mark_waited`]).
/// Without it a cancel need not touch the completion cell at all.
const WAITED: u8 = 0b10_0000;

/// How [`crate::work_queue::IN_LANE`] is stored in a header's 32-bit index.
const LANE_MARK: u32 = u32::MAX - 1;
/// How [`crate::work_queue::LANE_REMOVED`] is stored.
const LANE_REMOVED_MARK: u32 = u32::MAX - 2;

/// What kind of task this is (the `kind` field of the `task` span).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Once,
    FixedRate,
    FixedDelay,
    Idle,
}

impl Kind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Once => "once",
            Kind::FixedRate => "fixed_rate",
            Kind::FixedDelay => "fixed_delay",
            Kind::Idle => "idle",
        }
    }

    pub(crate) fn is_periodic(self) -> bool {
        matches!(self, Kind::FixedRate | Kind::FixedDelay)
    }
}

/// What every task carries, whatever its body and result type.
pub(crate) struct Header {
    /// Position in the pool's heap, or `u32::MAX` for [`NOT_QUEUED`]. Four
    /// bytes, not eight: a pool cannot hold 2^32 tasks (that is hundreds of
    /// GiB of tasks) and every byte here is paid per pending task.
    heap_index: AtomicU32,
    /// When the task is (next) due.
    deadline: AtomicU64,
    /// Submission order: the FIFO tie-break, and the task's id.
    pub(crate) seq: u64,
    pub(crate) kind: Kind,
    state: AtomicU8,
}

/// How the end of a periodic run resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EndOfRun {
    /// Back to `SCHEDULED`: requeue it.
    Scheduled,
    /// A pause was requested during the run: now `PAUSED`, not queued.
    Paused,
    /// Cancelled during the run.
    Cancelled,
}

impl Header {
    pub(crate) fn new(seq: u64, deadline: Nanos, kind: Kind) -> Self {
        Header {
            heap_index: AtomicU32::new(u32::MAX),
            deadline: AtomicU64::new(deadline),
            seq,
            kind,
            state: AtomicU8::new(SCHEDULED),
        }
    }

    /// Position in the pool's heap, or [`NOT_QUEUED`]. Meaningful only
    /// under the pool lock (where it is written).
    pub(crate) fn heap_index(&self) -> usize {
        match self.heap_index.load(Ordering::Relaxed) {
            u32::MAX => NOT_QUEUED,
            LANE_MARK => crate::work_queue::IN_LANE,
            LANE_REMOVED_MARK => crate::work_queue::LANE_REMOVED,
            index => index as usize,
        }
    }

    /// Records the task's heap position (under the pool lock).
    pub(crate) fn set_heap_index(&self, index: usize) {
        let index = match index {
            crate::work_queue::IN_LANE => LANE_MARK,
            crate::work_queue::LANE_REMOVED => LANE_REMOVED_MARK,
            index => u32::try_from(index).unwrap_or(u32::MAX),
        };
        self.heap_index.store(index, Ordering::Relaxed);
    }

    pub(crate) fn deadline(&self) -> Nanos {
        self.deadline.load(Ordering::Acquire)
    }

    /// Sets the deadline. Only while not in the heap (see the invariants).
    pub(crate) fn set_deadline(&self, deadline: Nanos) {
        self.deadline.store(deadline, Ordering::Release);
    }

    fn load(&self) -> u8 {
        self.state.load(Ordering::Acquire)
    }

    /// Moves the state by `next` (given and returning it without the
    /// [`WAITED`] mark, which every transition keeps); returns the state
    /// it moved from, or `None` if `next` declined.
    fn update(&self, mut next: impl FnMut(u8) -> Option<u8>) -> Option<u8> {
        let mut current = self.load();
        loop {
            let to = next(current & !WAITED)? | (current & WAITED);
            match self
                .state
                .compare_exchange(current, to, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(from) => return Some(from),
                Err(actual) => current = actual,
            }
        }
    }

    /// The base state (`SCHEDULED` ... `CANCELLED`), without request flags.
    pub(crate) fn state(&self) -> u8 {
        self.load() & BASE
    }

    /// Claims the right to run the body: `SCHEDULED -> RUNNING`.
    pub(crate) fn try_start(&self) -> bool {
        self.update(|s| (s == SCHEDULED).then_some(RUNNING))
            .is_some()
    }

    /// `SCHEDULED`, `RUNNING` or `PAUSED` -> `CANCELLED`; true if this call did it.
    pub(crate) fn try_cancel(&self) -> bool {
        self.update(|s| matches!(s & BASE, SCHEDULED | RUNNING | PAUSED).then_some(CANCELLED))
            .is_some()
    }

    /// `RUNNING` -> `DONE` at the end of a final run; false if cancelled meanwhile.
    pub(crate) fn finish(&self) -> bool {
        self.update(|s| (s & BASE == RUNNING).then_some(DONE))
            .is_some()
    }

    /// Ends a periodic run. `set_next(triggered)` stores the next deadline
    /// before the task becomes `SCHEDULED`; it runs again if a request
    /// arrives between it and the swap.
    pub(crate) fn end_run(&self, mut set_next: impl FnMut(bool)) -> EndOfRun {
        let mut outcome = EndOfRun::Cancelled;
        self.update(|s| {
            if s & BASE != RUNNING {
                outcome = EndOfRun::Cancelled;
                None
            } else if s & PAUSE_REQUESTED != 0 {
                outcome = EndOfRun::Paused;
                Some(PAUSED)
            } else {
                set_next(s & TRIGGER_REQUESTED != 0);
                outcome = EndOfRun::Scheduled;
                Some(SCHEDULED)
            }
        });
        outcome
    }

    /// Records that someone waits for the result (a blocked `join` or
    /// `wait_timeout`, or a stored waker); true if the task is already
    /// cancelled, so there is nothing to wait for. Called under the
    /// completion's lock: a cancel either came first (and this sees it) or
    /// comes after and sees the mark (and completes the handle).
    pub(crate) fn mark_waited(&self) -> bool {
        self.state.fetch_or(WAITED, Ordering::AcqRel) & BASE == CANCELLED
    }

    /// True once [`mark_waited`](Self::mark_waited) was called.
    pub(crate) fn was_waited(&self) -> bool {
        self.load() & WAITED != 0
    }

    /// Asks a running task to pause after its run; true if it was running.
    pub(crate) fn request_pause(&self) -> bool {
        self.request(PAUSE_REQUESTED)
    }

    /// Asks a running task to run again at once after its run.
    pub(crate) fn request_trigger(&self) -> bool {
        self.request(TRIGGER_REQUESTED)
    }

    fn request(&self, flag: u8) -> bool {
        self.update(|s| (s & BASE == RUNNING).then_some(s | flag))
            .is_some()
    }

    /// `SCHEDULED -> PAUSED` (caller holds the pool lock).
    pub(crate) fn pause_scheduled(&self) -> bool {
        self.update(|s| (s == SCHEDULED).then_some(PAUSED))
            .is_some()
    }

    /// `PAUSED -> SCHEDULED` (caller holds the pool lock).
    pub(crate) fn resume_paused(&self) -> bool {
        self.update(|s| (s == PAUSED).then_some(SCHEDULED))
            .is_some()
    }

    pub(crate) fn is_scheduled(&self) -> bool {
        self.state() == SCHEDULED
    }

    pub(crate) fn is_cancelled(&self) -> bool {
        self.state() == CANCELLED
    }

    pub(crate) fn is_done(&self) -> bool {
        self.state() >= DONE
    }
}

/// A panic caught in a run.
pub(crate) struct Caught {
    pub(crate) message: String,
    pub(crate) payload: Box<dyn Any + Send>,
}

impl Caught {
    pub(crate) fn new(payload: Box<dyn Any + Send>) -> Self {
        Caught {
            message: panic_message(&*payload),
            payload,
        }
    }
}

/// How one run ended.
pub(crate) struct Ran {
    /// The task runs again: it is still `RUNNING`, and the worker calls
    /// [`Job::end_run`] and requeues it under the pool lock.
    pub(crate) again: bool,
    /// The body panicked (whether or not the task goes on).
    pub(crate) panic: Option<Caught>,
}

impl Ran {
    pub(crate) const DONE: Ran = Ran {
        again: false,
        panic: None,
    };
}

/// The queue's view of a task: type-erased over body and result.
pub(crate) trait Job: Send + Sync + 'static {
    fn header(&self) -> &Header;
    /// Runs the body once. The caller has won [`Header::try_start`];
    /// `started` is the clock's reading when the run began. `watched`: a
    /// handle may still read the result (the caller's reference is not the
    /// only one), so a result must be kept.
    fn run(&self, clock: &Clock, started: Nanos, watched: bool) -> Ran;
    /// Completes the handle as cancelled and drops the body unless it is out
    /// running. The caller has won [`Header::try_cancel`]; never call it
    /// under a pool lock.
    fn cancelled(&self);
    /// The periodic controls, for periodic tasks.
    fn control(&self) -> Option<&Control> {
        None
    }
    /// Ends a run that returned `again`: the task is still `RUNNING`; this
    /// moves it to `SCHEDULED` at its next deadline (or to `PAUSED`, if a
    /// pause was requested), under the pool lock, right before the push.
    /// `now` serves a trigger requested during the run.
    fn end_run(&self, _now: Nanos) -> EndOfRun {
        self.header().end_run(|_| {})
    }
    /// For an idle timer touched since it was armed: its new deadline, to
    /// requeue it without running it. `None`: run it now.
    fn rearm(&self, _now: Nanos) -> Option<Nanos> {
        None
    }
    /// Completed runs (a one-shot: 0 or 1).
    fn runs(&self) -> u64 {
        u64::from(self.header().state() == DONE)
    }
}

/// The handle's view of a task.
pub(crate) trait TaskRef<T>: Job {
    /// The result cell (a one-shot task creates it on first need).
    fn completion(&self) -> Arc<Completion<T>>;
}

/// A task that runs once and produces a `T`.
///
/// Its result cell exists only once someone needs it: a handle that waits
/// or polls, or a run that finishes while a handle may still read the
/// result. A pending task with nobody waiting (the common case: millions of
/// timeouts, most cancelled) carries one pointer for it, not the cell.
///
/// `repr(C)` keeps the order: what a cancel touches (the header's state and
/// heap index, then the body it drops) comes first, next to the `Arc`'s
/// counts, so a cancel of a small closure stays in one cache line.
#[repr(C)]
pub(crate) struct OnceTask<T, F> {
    header: Header,
    slot: Mutex<Slot<T, F>>,
}

struct Slot<T, F> {
    /// Until it runs or is cancelled.
    body: Option<F>,
    /// The result cell, once needed (see [`OnceTask`]).
    cell: Option<Arc<Completion<T>>>,
}

impl<T, F> OnceTask<T, F>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    pub(crate) fn new(header: Header, body: F) -> Self {
        OnceTask {
            header,
            slot: Mutex::new(Slot {
                body: Some(body),
                cell: None,
            }),
        }
    }

    /// The result cell, created if nobody needed it yet.
    pub(crate) fn cell(&self) -> Arc<Completion<T>> {
        let mut slot = self.slot.lock();
        Arc::clone(slot.cell.get_or_insert_with(|| Arc::new(Completion::new())))
    }

    /// Completes the handle (the caller won `finish`): into the cell if it
    /// exists or a handle may still read it; otherwise nobody ever can, and
    /// the result is dropped here.
    fn complete(&self, result: Result<T, TaskError>, watched: bool) {
        let cell = if watched {
            Some(self.cell())
        } else {
            self.slot.lock().cell.clone()
        };
        match cell {
            Some(cell) => {
                cell.complete(result);
            }
            None => drop_quietly(result),
        }
    }

    /// Runs the body (the caller won `try_start`) and completes the handle.
    pub(crate) fn run_body(&self, watched: bool) -> Ran {
        let body = self.slot.lock().body.take();
        let Some(body) = body else { return Ran::DONE };
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
                    self.complete(Err(TaskError::Panicked(caught.message.clone())), watched);
                }
                Ran {
                    again: false,
                    panic: Some(caught),
                }
            }
        }
    }

    pub(crate) fn cancel_body(&self) {
        let (body, cell) = {
            let mut slot = self.slot.lock();
            (slot.body.take(), slot.cell.clone())
        };
        // Nobody waiting: the cancelled state is the outcome (see
        // `crate::completion`). A waiter creates the cell before it marks
        // the task, so a marked task has one.
        if let (true, Some(cell)) = (self.header.was_waited(), cell) {
            cell.complete(Err(TaskError::Cancelled));
        }
        drop_quietly(body);
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
    fn run(&self, _clock: &Clock, _started: Nanos, watched: bool) -> Ran {
        self.run_body(watched)
    }
    fn cancelled(&self) {
        self.cancel_body();
    }
}

impl<T, F> TaskRef<T> for OnceTask<T, F>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    fn completion(&self) -> Arc<Completion<T>> {
        self.cell()
    }
}

/// A fire-and-forget task (`execute`): no handle can ever wait for it, so
/// it has no completion cell. A panic is reported like any other (hooks,
/// panic handler); the result, `()`, goes nowhere.
#[repr(C)]
pub(crate) struct ExecTask<F> {
    header: Header,
    body: Mutex<Option<F>>,
}

impl<F: FnOnce() + Send + 'static> ExecTask<F> {
    pub(crate) fn new(header: Header, body: F) -> Self {
        ExecTask {
            header,
            body: Mutex::new(Some(body)),
        }
    }
}

impl<F: FnOnce() + Send + 'static> Job for ExecTask<F> {
    fn header(&self) -> &Header {
        &self.header
    }
    fn run(&self, _clock: &Clock, _started: Nanos, _watched: bool) -> Ran {
        let body = self.body.lock().take();
        let Some(body) = body else { return Ran::DONE };
        let panic = catch_unwind(AssertUnwindSafe(body)).err().map(Caught::new);
        self.header.finish();
        Ran {
            again: false,
            panic,
        }
    }
    fn cancelled(&self) {
        let body = self.body.lock().take();
        drop_quietly(body);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::mem::{size_of, size_of_val};

    /// Every byte here is paid once per pending task (W6): keep them from
    /// creeping back.
    #[test]
    fn per_task_sizes_stay_small() {
        assert!(
            size_of::<super::Header>() <= 24,
            "{}",
            size_of::<super::Header>()
        );
        assert!(size_of::<crate::work_queue::Entry>() <= 24);
        // A no-op closure's task: header, and body and result-cell pointer
        // under one lock.
        let noop = || ();
        assert!(
            size_of_val(&super::OnceTask::new(
                super::Header::new(0, 0, super::Kind::Once),
                noop
            )) <= 48
        );
        // `execute`'s task has no completion cell.
        let noop = || ();
        assert!(
            size_of_val(&super::ExecTask::new(
                super::Header::new(0, 0, super::Kind::Once),
                noop
            )) <= 32
        );
    }
}
