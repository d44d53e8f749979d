//! A scheduled task: its header (the part the queue and the handle share),
//! its state machine, and the two bodies, one-shot and periodic.
//!
//! # Invariants
//!
//! - `state` moves `SCHEDULED -> RUNNING -> SCHEDULED` (periodic, between
//!   runs) and ends in `DONE` (completed or panicked) or `CANCELLED`. Only
//!   the thread whose compare-and-swap takes `SCHEDULED -> RUNNING` runs the
//!   body, so a task never runs twice at once and never runs after a
//!   successful cancel.
//! - `CANCELLED` is reachable from `SCHEDULED` and `RUNNING`; the thread
//!   that wins that swap calls [`Job::cancelled`], which completes the
//!   handle with [`TaskError::Cancelled`] at once (Java: `isDone` is true
//!   immediately, even while the body still runs) and drops the body if it
//!   is not out running.
//! - `heap_index` is written only under the owning queue's lock; while the
//!   task is queued it equals its position in the heap, otherwise
//!   [`NOT_QUEUED`].
//! - `deadline` is the current (or next, for a periodic task) due time. It
//!   is written by the submitter before queueing and by the runner between
//!   runs, never while queued.
//! - The body is never dropped under a pool lock, and panics from its `Drop`
//!   are swallowed ([`drop_quietly`]).

use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::clock::{Clock, Nanos};
use crate::completion::Completion;
use crate::error::{drop_quietly, panic_message, TaskError};
use crate::heap::NOT_QUEUED;
use crate::sync::{AtomicU64, AtomicU8, AtomicUsize, Mutex, Ordering};

const SCHEDULED: u8 = 0;
const RUNNING: u8 = 1;
const DONE: u8 = 2;
const CANCELLED: u8 = 3;

/// How a task repeats. Java encodes this in the sign of `period`; an enum
/// cannot get the sign wrong (JDK-8051859).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Schedule {
    /// Runs once.
    Once,
    /// The n-th run is due at `first + n * period` (nanoseconds).
    FixedRate(Nanos),
    /// Each run is due `delay` nanoseconds after the previous one ended.
    FixedDelay(Nanos),
}

impl Schedule {
    /// The `kind` field of the `task` span.
    pub(crate) fn kind(self) -> &'static str {
        match self {
            Schedule::Once => "once",
            Schedule::FixedRate(_) => "fixed_rate",
            Schedule::FixedDelay(_) => "fixed_delay",
        }
    }

    pub(crate) fn is_periodic(self) -> bool {
        !matches!(self, Schedule::Once)
    }
}

/// What every task carries, whatever its body and result type.
pub(crate) struct Header {
    /// Position in the pool's heap, or [`NOT_QUEUED`].
    pub(crate) heap_index: AtomicUsize,
    /// When the task is (next) due.
    deadline: AtomicU64,
    /// Submission order: the FIFO tie-break, and the task's id.
    pub(crate) seq: u64,
    pub(crate) schedule: Schedule,
    state: AtomicU8,
}

impl Header {
    pub(crate) fn new(seq: u64, deadline: Nanos, schedule: Schedule) -> Self {
        Header {
            heap_index: AtomicUsize::new(NOT_QUEUED),
            deadline: AtomicU64::new(deadline),
            seq,
            schedule,
            state: AtomicU8::new(SCHEDULED),
        }
    }

    pub(crate) fn deadline(&self) -> Nanos {
        self.deadline.load(Ordering::Acquire)
    }

    fn set_deadline(&self, deadline: Nanos) {
        self.deadline.store(deadline, Ordering::Release);
    }

    /// Claims the right to run the body: `SCHEDULED -> RUNNING`.
    pub(crate) fn try_start(&self) -> bool {
        self.transition(SCHEDULED, RUNNING)
    }

    /// `SCHEDULED` or `RUNNING` -> `CANCELLED`; true if this call did it.
    pub(crate) fn try_cancel(&self) -> bool {
        let mut current = self.state.load(Ordering::Acquire);
        while current == SCHEDULED || current == RUNNING {
            match self.state.compare_exchange(
                current,
                CANCELLED,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return true,
                Err(actual) => current = actual,
            }
        }
        false
    }

    fn transition(&self, from: u8, to: u8) -> bool {
        self.state
            .compare_exchange(from, to, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    pub(crate) fn is_scheduled(&self) -> bool {
        self.state.load(Ordering::Acquire) == SCHEDULED
    }

    pub(crate) fn is_cancelled(&self) -> bool {
        self.state.load(Ordering::Acquire) == CANCELLED
    }

    pub(crate) fn is_done(&self) -> bool {
        self.state.load(Ordering::Acquire) >= DONE
    }
}

/// How one run ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Ran {
    /// Finished for good (a one-shot ran, or a periodic task was cancelled
    /// during its run).
    Done,
    /// A periodic task is `SCHEDULED` again, due at this time: requeue it.
    Again(Nanos),
    /// The body panicked with this message; the task is over.
    Panicked(String),
}

/// The queue's view of a task: type-erased over body and result.
pub(crate) trait Job: Send + Sync + 'static {
    fn header(&self) -> &Header;
    /// Runs the body once. The caller has won [`Header::try_start`].
    fn run(&self, clock: &Clock) -> Ran;
    /// Completes the handle as cancelled and drops the body unless it is out
    /// running. The caller has won [`Header::try_cancel`]; never call it
    /// under a pool lock.
    fn cancelled(&self);
}

/// The handle's view of a task.
pub(crate) trait TaskRef<T>: Send + Sync {
    fn header(&self) -> &Header;
    fn completion(&self) -> &Completion<T>;
    fn cancelled(&self);
}

/// A task that runs once and produces a `T`.
pub(crate) struct OnceTask<T, F> {
    header: Header,
    body: Mutex<Option<F>>,
    completion: Completion<T>,
}

impl<T, F> OnceTask<T, F> {
    pub(crate) fn new(header: Header, body: F) -> Self {
        OnceTask {
            header,
            body: Mutex::new(Some(body)),
            completion: Completion::new(),
        }
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

    fn run(&self, _clock: &Clock) -> Ran {
        let body = self.body.lock().take();
        let Some(body) = body else { return Ran::Done };
        match catch_unwind(AssertUnwindSafe(body)) {
            Ok(value) => {
                if self.header.transition(RUNNING, DONE) {
                    self.completion.complete(Ok(value));
                } else {
                    // Cancelled while running: the handle already says so.
                    drop_quietly(value);
                }
                Ran::Done
            }
            Err(payload) => {
                let message = panic_message(&*payload);
                drop_quietly(payload);
                if self.header.transition(RUNNING, DONE) {
                    self.completion
                        .complete(Err(TaskError::Panicked(message.clone())));
                }
                Ran::Panicked(message)
            }
        }
    }

    fn cancelled(&self) {
        self.completion.complete(Err(TaskError::Cancelled));
        let body = self.body.lock().take();
        drop_quietly(body);
    }
}

impl<T, F> TaskRef<T> for OnceTask<T, F>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    fn header(&self) -> &Header {
        &self.header
    }
    fn completion(&self) -> &Completion<T> {
        &self.completion
    }
    fn cancelled(&self) {
        Job::cancelled(self);
    }
}

/// A fixed-rate or fixed-delay task.
pub(crate) struct PeriodicTask<F> {
    header: Header,
    body: Mutex<Option<F>>,
    completion: Completion<()>,
}

impl<F> PeriodicTask<F> {
    pub(crate) fn new(header: Header, body: F) -> Self {
        debug_assert!(header.schedule.is_periodic());
        PeriodicTask {
            header,
            body: Mutex::new(Some(body)),
            completion: Completion::new(),
        }
    }
}

impl<F> Job for PeriodicTask<F>
where
    F: FnMut() + Send + 'static,
{
    fn header(&self) -> &Header {
        &self.header
    }

    fn run(&self, clock: &Clock) -> Ran {
        let body = self.body.lock().take();
        let Some(mut body) = body else {
            return Ran::Done;
        };
        if let Err(payload) = catch_unwind(AssertUnwindSafe(&mut body)) {
            let message = panic_message(&*payload);
            drop_quietly(payload);
            drop_quietly(body);
            if self.header.transition(RUNNING, DONE) {
                self.completion
                    .complete(Err(TaskError::Panicked(message.clone())));
            }
            return Ran::Panicked(message);
        }
        let next = match self.header.schedule {
            // Java: time += period, from the previous *scheduled* time.
            Schedule::FixedRate(period) => self.header.deadline().saturating_add(period),
            // Java: triggerTime(delay), after the run returned.
            Schedule::FixedDelay(delay) => clock.now().saturating_add(delay),
            Schedule::Once => unreachable!("a periodic task has a period"),
        };
        self.header.set_deadline(next);
        *self.body.lock() = Some(body);
        if self.header.transition(RUNNING, SCHEDULED) {
            Ran::Again(next)
        } else {
            // Cancelled during the run: nothing more; drop the body unless
            // the canceller already did.
            let body = self.body.lock().take();
            drop_quietly(body);
            Ran::Done
        }
    }

    fn cancelled(&self) {
        self.completion.complete(Err(TaskError::Cancelled));
        let body = self.body.lock().take();
        drop_quietly(body);
    }
}

impl<F> TaskRef<()> for PeriodicTask<F>
where
    F: FnMut() + Send + 'static,
{
    fn header(&self) -> &Header {
        &self.header
    }
    fn completion(&self) -> &Completion<()> {
        &self.completion
    }
    fn cancelled(&self) {
        Job::cancelled(self);
    }
}
