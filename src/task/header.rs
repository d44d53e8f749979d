//! A scheduled task's header (the part the queue and the handle share), its
//! state machine, and the [`Job`] trait every task type implements.
//! One-shot bodies are in [`super::once`], periodic ones in
//! [`super::periodic`], idle timers in [`super::idle`]; the thin pointer
//! that holds them all is [`super::ptr`].
//!
//! # Invariants
//!
//! - The header is the first field of every task (`repr(C)`), 32 bytes:
//!   the reference count, the queue location, the type-erasure cast, one word
//!   for `seq << 11 | kind << 8 | state`, and the deadline. `seq` and `kind`
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
//!   [`TaskError::Cancelled`](crate::TaskError::Cancelled) at once (Java: `isDone` is true immediately,
//!   even while the body still runs) and drops the body unless it is out
//!   running.
//! - The reference count and the cast (`refs`, `job`) are private to this
//!   module: only [`super::ptr::TaskPtr`] moves them, through
//!   `count_ref`, `release_ref` and `set_job_of`.
//! - `location` is the pool queue's, encoded and decoded only by
//!   [`crate::queue::location`] (this module does not know what the bits
//!   mean); it is written under the owning pool's lock, or, for a task
//!   leaving the ready batch, under that batch's lock.
//! - `deadline` changes only while the task is not in the heap, or under the
//!   pool lock together with a remove and re-push.
//! - The body is never dropped under a pool lock, and panics from its `Drop`
//!   are swallowed ([`drop_quietly`](crate::base::error::drop_quietly)).

use std::any::Any;

use crate::base::clock::{Clock, Nanos};
use crate::base::error::panic_message;
use crate::base::sync::{AtomicU32, AtomicU64, Ordering};
use crate::task::cadence::Cadence;
pub(crate) use crate::task::kind::Kind;

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

/// What every task carries, whatever its body and result type. 32 bytes,
/// the first field of every task type (`repr(C)`), so a thin
/// [`TaskPtr`](crate::task::ptr::TaskPtr) to the task is a pointer to this.
#[repr(C)]
pub(crate) struct Header {
    /// References held by [`TaskPtr`](super::ptr::TaskPtr)s: the queue,
    /// handles, a running worker. Private: see the invariants.
    refs: AtomicU32,
    /// Where the pool's queue keeps the task ([`crate::queue::location`]).
    /// Four bytes, not eight: a pool cannot hold 2^31 tasks (that is
    /// hundreds of GiB of tasks) and every byte here is paid per pending
    /// task.
    location: AtomicU32,
    /// The task's type, erased: turns a pointer to this header into one to
    /// the whole task (the thin pointer's vtable). Set by `TaskPtr::new`.
    job: JobOf,
    /// `seq << 11 | kind << 8 | state`: submission order (the FIFO
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
/// for; see [`super::ptr`].
pub(super) type JobOf = fn(std::ptr::NonNull<Header>) -> std::ptr::NonNull<dyn Job>;

/// A header's `job` before `TaskPtr::new` sets it: a header not (yet) inside
/// a shared task. Never dereferenced: only `TaskPtr` uses `job`.
fn unset_job(_: std::ptr::NonNull<Header>) -> std::ptr::NonNull<dyn Job> {
    unreachable!("a task's header is used through a TaskPtr only")
}

/// Bits of the header's word below the sequence number: the state byte and
/// three bits of kind.
const SEQ_SHIFT: u32 = 11;
/// Sequence numbers wrap at 2^53: at ten million tasks a second, after 28
/// years.
const SEQ_MASK: u64 = (1 << (64 - SEQ_SHIFT)) - 1;
const STATE_MASK: u64 = 0xFF;

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
            location: AtomicU32::new(u32::MAX),
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

    /// Where the pool's queue keeps the task, as the queue encodes it
    /// ([`crate::queue::location`], the only reader and writer). Written
    /// under the pool lock (and, for a task leaving the ready batch, under
    /// the batch's lock).
    #[inline]
    pub(crate) fn location_bits(&self) -> u32 {
        self.location.load(Ordering::Relaxed)
    }

    /// See [`location_bits`](Self::location_bits).
    #[inline]
    pub(crate) fn set_location_bits(&self, bits: u32) {
        self.location.store(bits, Ordering::Relaxed);
    }

    /// Counts one more [`TaskPtr`](super::ptr::TaskPtr) to this task;
    /// returns the count before. Relaxed, as `Arc`: a new reference is made
    /// from an existing one, which already keeps the task alive.
    #[inline]
    pub(super) fn count_ref(&self) -> u32 {
        self.refs.fetch_add(1, Ordering::Relaxed)
    }

    /// Counts one reference fewer; true if it was the last. AcqRel, not
    /// `Arc`'s Release plus an Acquire fence: the same instruction on x86,
    /// and visible to ThreadSanitizer. The last reference then sees every
    /// other holder's writes before freeing.
    #[inline]
    pub(super) fn release_ref(&self) -> bool {
        self.refs.fetch_sub(1, Ordering::AcqRel) == 1
    }

    /// How many references there are.
    pub(super) fn ref_count(&self) -> u32 {
        self.refs.load(Ordering::Acquire)
    }

    /// The cast to the whole task (see [`JobOf`]).
    #[inline]
    pub(super) fn job_of(&self) -> JobOf {
        self.job
    }

    /// Sets the cast, once, before the task is shared.
    pub(super) fn set_job_of(&mut self, job: JobOf) {
        self.job = job;
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
    /// owns it; see [`crate::task::once`].
    pub(super) fn claim_body(&self) -> bool {
        self.word.fetch_or(u64::from(BODY_TAKEN), Ordering::AcqRel) & u64::from(BODY_TAKEN) == 0
    }

    /// True once [`claim_body`](Self::claim_body) succeeded.
    pub(super) fn body_taken(&self) -> bool {
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

    /// `SCHEDULED` or `PAUSED` -> `CANCELLED`, never from `RUNNING`: true if
    /// this call did it, so no run is in progress and none starts after
    /// (the exactly-once cancel of a timeout that races its reply).
    pub(crate) fn try_cancel_idle(&self) -> bool {
        self.update(|s| matches!(s & BASE, SCHEDULED | PAUSED).then_some(CANCELLED))
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
    pub(super) fn mark_waited(&self) -> bool {
        let before = self.word.fetch_or(u64::from(WAITED), Ordering::AcqRel);
        (before & STATE_MASK) as u8 & BASE == CANCELLED
    }

    /// True once [`mark_waited`](Self::mark_waited) was called.
    pub(super) fn was_waited(&self) -> bool {
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

/// A failed run: a panic caught in it, or an `Err` its body returned.
pub(crate) struct Caught {
    pub(crate) message: String,
    /// The panic payload; for an `Err`, its text as a `String`.
    pub(crate) payload: Box<dyn Any + Send>,
    /// A panic, not an `Err`.
    pub(crate) panicked: bool,
}

impl Caught {
    pub(crate) fn new(payload: Box<dyn Any + Send>) -> Self {
        Caught {
            message: panic_message(&*payload),
            payload,
            panicked: true,
        }
    }

    /// A run whose body returned `Err` with this text.
    #[cold]
    pub(crate) fn failed(message: String) -> Self {
        Caught {
            payload: Box::new(message.clone()),
            message,
            panicked: false,
        }
    }

    /// The error a handle completes with for this failure. A string
    /// payload is copied (the handler keeps the original); another type
    /// stays here, for the failure handler, and the handle's is the message.
    pub(crate) fn task_error(&self) -> crate::base::error::TaskError {
        if self.panicked {
            let payload: Box<dyn Any + Send> =
                if let Some(s) = self.payload.downcast_ref::<&'static str>() {
                    Box::new(*s)
                } else {
                    Box::new(self.message.clone())
                };
            crate::base::error::TaskError::Panicked(crate::base::error::Panic::new(
                self.message.clone(),
                payload,
            ))
        } else {
            crate::base::error::TaskError::Failed(self.message.clone())
        }
    }
}

/// How one run ended.
pub(crate) struct Ran {
    /// The task runs again: it is still `RUNNING`, and the worker calls
    /// [`Job::end_run`] and requeues it under the pool lock.
    pub(crate) again: bool,
    /// The run failed: panicked or returned `Err` (whether or not the
    /// task goes on).
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
    fn cadence(&self) -> Option<&Cadence> {
        None
    }
    /// Ends a run that returned `again`: the task is still `RUNNING`; this
    /// moves it to `SCHEDULED` at its next deadline (or to `PAUSED`, if a
    /// pause was requested), under the pool lock, right before the push.
    /// `now` serves a trigger requested during the run.
    fn end_run(&self, _now: Nanos) -> EndOfRun {
        self.header().end_run(|_| {})
    }
    /// Asked under the pool lock when the task is popped to run: a new
    /// deadline, to requeue it without running it, or `None`: run it now.
    /// An idle timer touched since it was armed, or a calendar task whose
    /// wall-clock time has not come (the wall clock is read from `clock`),
    /// is requeued.
    fn rearm(&self, _clock: &Clock, _now: Nanos) -> Option<Nanos> {
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
