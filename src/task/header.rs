//! A scheduled task: its header (the part the queue and the handle share),
//! its state machine, and the [`Job`] trait every task type implements.
//! One-shot bodies are in [`crate::once`], periodic ones in
//! [`crate::periodic_task`], idle timers in [`crate::idle`]; the thin
//! pointer that holds them all is [`crate::task_ptr`].
//!
//! # Invariants
//!
//! - The header is the first field of every task (`repr(C)`), 32 bytes:
//!   the reference count, the heap index, the type-erasure cast, one word
//!   for `seq << 10 | kind << 8 | state`, and the deadline. `seq` and `kind`
//!   never change; every state transition is a compare-and-swap of the
//!   whole word that keeps them.
//! - The state byte holds a base state and, while `RUNNING`, request flags:
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
//! - `heap_index` is written under the owning pool's lock (and, to reset
//!   the ready batch's mark when a worker takes the task from it, under the
//!   batch's lock); while the task is in the heap it equals its position
//!   there, in the lane, the wheel or the batch it is their mark (a task
//!   the batch took from the wheel keeps the wheel's), otherwise
//!   [`NOT_QUEUED`].
//! - `deadline` changes only while the task is not in the heap, or under the
//!   pool lock together with a remove and re-push.
//! - The body is never dropped under a pool lock, and panics from its `Drop`
//!   are swallowed ([`drop_quietly`](crate::error::drop_quietly)).

use std::any::Any;
use std::sync::Arc;

use crate::clock::{Clock, Nanos};
use crate::completion::Completion;
use crate::error::panic_message;
use crate::heap::NOT_QUEUED;
use crate::periodic_task::Control;
use crate::sync::{AtomicU32, AtomicU64, Ordering};

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
/// In any state: the one-shot body was claimed (taken to run, or to drop
/// by a cancel); see [`Header::claim_body`].
const BODY_TAKEN: u8 = 0b100_0000;

/// How [`crate::lane::IN_LANE`] is stored in a header's 32-bit index.
const LANE_MARK: u32 = u32::MAX - 1;
/// How [`crate::lane::LANE_REMOVED`] is stored.
const LANE_REMOVED_MARK: u32 = u32::MAX - 2;
/// [`crate::ready::IN_READY`] as stored.
const READY_MARK: u32 = u32::MAX - 3;
/// [`crate::wheel::IN_WHEEL`] as stored.
const WHEEL_MARK: u32 = u32::MAX - 4;
/// [`crate::wheel::WHEEL_REMOVED`] as stored.
const WHEEL_REMOVED_MARK: u32 = u32::MAX - 5;

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

/// What every task carries, whatever its body and result type. 32 bytes,
/// the first field of every task type (`repr(C)`), so a thin
/// [`TaskPtr`](crate::task_ptr::TaskPtr) to the task is a pointer to this.
#[repr(C)]
pub(crate) struct Header {
    /// References held by [`TaskPtr`](crate::task_ptr::TaskPtr)s: the
    /// queue, handles, a running worker. Owned by `task_ptr.rs`.
    pub(crate) refs: AtomicU32,
    /// Position in the pool's heap, or `u32::MAX` for [`NOT_QUEUED`]. Four
    /// bytes, not eight: a pool cannot hold 2^32 tasks (that is hundreds of
    /// GiB of tasks) and every byte here is paid per pending task.
    heap_index: AtomicU32,
    /// The task's type, erased: turns a pointer to this header into one to
    /// the whole task (the thin pointer's vtable). Set by `TaskPtr::new`.
    pub(crate) job: JobOf,
    /// `seq << 10 | kind << 8 | state`: submission order (the FIFO
    /// tie-break, and the task's id), what kind of task it is, and the
    /// state byte. One word, because every byte here is paid per pending
    /// task; `seq` and `kind` never change.
    word: AtomicU64,
    /// When the task is (next) due.
    deadline: AtomicU64,
}

/// Turns a pointer to a task's header into a pointer to the task (as
/// `dyn Job`). Safe to call (it only casts), unsafe to dereference unless
/// the header is the first field of a live task of the type it was made
/// for; see `crate::task_ptr`.
pub(crate) type JobOf = fn(std::ptr::NonNull<Header>) -> std::ptr::NonNull<dyn Job>;

/// A header's `job` before `TaskPtr::new` sets it: a header not (yet) inside
/// a shared task. Never dereferenced: only `TaskPtr` uses `job`.
fn unset_job(_: std::ptr::NonNull<Header>) -> std::ptr::NonNull<dyn Job> {
    unreachable!("a task's header is used through a TaskPtr only")
}

/// Bits of the header's word below the sequence number.
const SEQ_SHIFT: u32 = 10;
/// Sequence numbers wrap at 2^54: at ten million tasks a second, after 57
/// years.
const SEQ_MASK: u64 = (1 << (64 - SEQ_SHIFT)) - 1;
const STATE_MASK: u64 = 0xFF;

impl Kind {
    fn bits(self) -> u64 {
        match self {
            Kind::Once => 0,
            Kind::FixedRate => 1,
            Kind::FixedDelay => 2,
            Kind::Idle => 3,
        }
    }
    fn from_bits(bits: u64) -> Kind {
        match bits & 3 {
            0 => Kind::Once,
            1 => Kind::FixedRate,
            2 => Kind::FixedDelay,
            _ => Kind::Idle,
        }
    }
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
            refs: AtomicU32::new(1),
            heap_index: AtomicU32::new(u32::MAX),
            job: unset_job,
            word: AtomicU64::new(
                (seq & SEQ_MASK) << SEQ_SHIFT | kind.bits() << 8 | u64::from(SCHEDULED),
            ),
            deadline: AtomicU64::new(deadline),
        }
    }

    /// Submission order: the FIFO tie-break, and the task's id.
    #[inline]
    pub(crate) fn seq(&self) -> u64 {
        self.word.load(Ordering::Relaxed) >> SEQ_SHIFT
    }

    /// What kind of task this is.
    pub(crate) fn kind(&self) -> Kind {
        Kind::from_bits(self.word.load(Ordering::Relaxed) >> 8)
    }

    /// Position in the pool's heap, or [`NOT_QUEUED`]. Meaningful only
    /// under the pool lock (where it is written; a worker's take from the
    /// ready batch resets its mark, [`crate::ready::IN_READY`] or the
    /// wheel's, under that batch's lock, which a reader that sees the mark
    /// then takes).
    pub(crate) fn heap_index(&self) -> usize {
        match self.heap_index.load(Ordering::Relaxed) {
            u32::MAX => NOT_QUEUED,
            LANE_MARK => crate::lane::IN_LANE,
            LANE_REMOVED_MARK => crate::lane::LANE_REMOVED,
            READY_MARK => crate::ready::IN_READY,
            WHEEL_MARK => crate::wheel::IN_WHEEL,
            WHEEL_REMOVED_MARK => crate::wheel::WHEEL_REMOVED,
            index => index as usize,
        }
    }

    /// Records the task's heap position (under the pool lock).
    pub(crate) fn set_heap_index(&self, index: usize) {
        let index = match index {
            crate::lane::IN_LANE => LANE_MARK,
            crate::lane::LANE_REMOVED => LANE_REMOVED_MARK,
            crate::ready::IN_READY => READY_MARK,
            crate::wheel::IN_WHEEL => WHEEL_MARK,
            crate::wheel::WHEEL_REMOVED => WHEEL_REMOVED_MARK,
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
        (self.word.load(Ordering::Acquire) & STATE_MASK) as u8
    }

    /// Moves the state by `next` (given and returning it without the
    /// sticky marks [`WAITED`] and [`BODY_TAKEN`], which every transition
    /// keeps); returns the state it moved from, or `None` if `next`
    /// declined.
    fn update(&self, mut next: impl FnMut(u8) -> Option<u8>) -> Option<u8> {
        const STICKY: u8 = WAITED | BODY_TAKEN;
        let mut current = self.word.load(Ordering::Acquire);
        loop {
            let state = (current & STATE_MASK) as u8;
            let to = next(state & !STICKY)? | (state & STICKY);
            let word = current & !STATE_MASK | u64::from(to);
            match self
                .word
                .compare_exchange(current, word, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Some(state & !STICKY),
                Err(actual) => current = actual,
            }
        }
    }

    /// Claims the body: true for exactly one caller over the task's life
    /// (the runner, or a cancel that stopped it from running), which then
    /// owns it; see `crate::once`.
    pub(crate) fn claim_body(&self) -> bool {
        self.word.fetch_or(u64::from(BODY_TAKEN), Ordering::AcqRel) & u64::from(BODY_TAKEN) == 0
    }

    /// True once [`claim_body`](Self::claim_body) succeeded.
    pub(crate) fn body_taken(&self) -> bool {
        self.load() & BODY_TAKEN != 0
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
        let before = self.word.fetch_or(u64::from(WAITED), Ordering::AcqRel);
        (before & STATE_MASK) as u8 & BASE == CANCELLED
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
    /// The task as `Any`, so a handle can reach its typed result cell.
    fn as_any(&self) -> &dyn Any;
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
    /// Puts the result cell, created if nobody needed it yet, into `out`:
    /// the handle's `Option<Arc<Completion<T>>>`, type-erased (the task
    /// knows its `T`, the handle checks it matches). A task no handle can
    /// wait on (`execute`) leaves it `None`. So a handle is two thin
    /// pointers.
    fn result_cell(&self, _out: &mut dyn Any) {}
    /// Completed runs (a one-shot: 0 or 1).
    fn runs(&self) -> u64 {
        u64::from(self.header().state() == DONE)
    }
}

/// Gives `out`, an `Option<Arc<Completion<T>>>` of the task's own `T`, the
/// task's result cell (see [`Job::result_cell`]); leaves any other type
/// alone.
pub(crate) fn give_cell<T: 'static>(out: &mut dyn Any, cell: impl FnOnce() -> Arc<Completion<T>>) {
    if let Some(out) = out.downcast_mut::<Option<Arc<Completion<T>>>>() {
        *out = Some(cell());
    }
}
