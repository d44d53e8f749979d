//! The pool's shared core (Java's `ScheduledThreadPoolExecutor` plus its
//! `DelayedWorkQueue`): the lock-protected [`State`], submission, periodic
//! re-queueing, cancellation, shutdown and termination.
//!
//! # Invariants
//!
//! - Everything guarded lives in [`State`], behind one mutex: helpers that
//!   need the lock take `&mut State`, so "must hold the lock" is a type.
//!   [`Shared::lock`] and [`Shared::handoff`] absorb the submission inbox
//!   ([`inbox`](super::inbox)), the delayed submission list
//!   ([`submissions`](super::submissions)) and the removals before they
//!   return, so a holder sees every submission and cancel that returned
//!   before it took the lock.
//! - While queued, a task is in the [`WorkQueue`](crate::queue::WorkQueue) (heap, due lane, wheel or
//!   ready batch) and its `heap_index` says where (a batch task moved from
//!   the wheel keeps the wheel's mark); a removed, taken or drained
//!   task has `NOT_QUEUED` (see [`queue`](crate::queue), [`ready`](crate::queue::ready)).
//! - The run-state check and the push of a submission happen under the same
//!   lock, or the submission goes into the inbox or the submission list
//!   while it is open, and a shutdown closes both and absorbs under this
//!   lock before it purges; so a task is never queued after `shutdown` has purged the
//!   queue (Java's schedule/shutdown race, A14.60, cannot happen): every
//!   accepted task runs, is cancelled, or is returned by `shutdown_now`.
//! - `workers` counts threads started and not yet exited. A worker decides
//!   to exit and decrements `workers` under one lock (then closes the
//!   inbox's gate and absorbs, staying if that found work), so a submitter
//!   that sees a worker can count on it. `workers <= max(core_threads, 1)`.
//! - `active` counts tasks taken under this lock and not yet folded in; it
//!   is raised under the lock that pops the task, so `wait_idle` never sees
//!   a gap. Tasks taken from the ready batch count in its `taken` instead,
//!   raised under the batch's lock as they leave it; `wait_idle` reads both.
//! - `run_state` only grows: RUNNING < SHUTDOWN < STOP < TERMINATED. The
//!   atomic mirror in [`Shared`] is written under the lock and read without it.
//! - Under the lock, a task is `SCHEDULED` exactly while it is queued:
//!   workers claim a popped task (`SCHEDULED -> RUNNING`) and end a periodic
//!   run and requeue it (`RUNNING -> SCHEDULED` + push) under the lock, and
//!   pause/resume do their swap and their push or removal under it too. The
//!   exceptions: the tasks `shutdown_now` drains, which are returned right
//!   after (`shutdown` cancels what it purges under its lock); and a one-shot a worker took from the ready
//!   batch, `SCHEDULED` until that worker's `try_start` (a pause or cancel
//!   that wins there finds nothing to remove, and the worker drops the
//!   task). This is what makes pause/resume/trigger safe (no task is ever
//!   queued twice).
//! - No user code (task bodies, their `Drop`s) runs under the lock.

use crossbeam_utils::CachePadded;
use std::cell::Cell;
use std::sync::{Arc, Weak};

use super::config::Config;
use super::run_state::RunState;
use crate::base::clock::{Clock, ClockListener, Nanos};
use crate::base::error::Rejected;
use crate::base::sync::{
    spawn_named, thread_local, AtomicU64, AtomicU8, Condvar, Mutex, MutexGuard, Ordering,
};
use crate::pool::inbox::Inbox;
use crate::pool::ready_runs::Ready;
use crate::pool::removals::{After, Removals};
pub(crate) use crate::pool::state::State;
use crate::pool::stats::LatenessHistogram;
use crate::pool::submissions::Submissions;
use crate::pool::termination::TerminationWakers;
use crate::task::header::{EndOfRun, Header};
use crate::task::ptr::TaskPtr;
use crate::wait::{Handoff, Signal};

mod shutdown;

thread_local! {
    /// The pool this thread works for (its `Shared`'s address), or 0.
    static CURRENT_POOL: Cell<usize> = const { Cell::new(0) };
}

/// A worker thread's body: what [`Shared::start_worker`] runs on a new
/// thread ([`super::worker::run`], given by the builder, which sits above
/// both).
pub(super) type WorkerMain = fn(Arc<Shared>);

/// What the pool's threads and handles share.
pub(crate) struct Shared {
    state: Mutex<State>,
    /// Submissions that need not wake anyone skip `state`'s lock.
    inbox: Arc<Inbox>,
    /// Delayed submissions that a worker is bound to look for skip
    /// `state`'s lock (see [`submissions`](super::submissions)).
    submissions: Arc<Submissions>,
    /// Cancelled tasks whose queue nodes wait for the owner: a cancel
    /// skips `state`'s lock (see [`removals`](super::removals)).
    removals: Arc<Removals>,
    /// Due one-shot tasks workers take without `state`'s lock (also part
    /// of the state's work queue: see [`ready`](crate::queue::ready)).
    pub(crate) ready: Arc<Ready>,
    /// Leader/follower signalling of the work queue (notify_one only).
    available: Signal,
    /// The termination latch (`await_termination`).
    terminated: Condvar,
    /// Its async side (`ScheduledThreadPool::terminated`).
    pub(super) terminated_wakers: TerminationWakers,
    /// `wait_idle` waiters.
    idle: Condvar,
    pub(crate) clock: Clock,
    pub(super) config: Config,
    /// Mirror of `State::run_state` for lock-free reads.
    run_state: AtomicU8,
    /// On a line of its own: every submission writes it, and the fields
    /// workers read on every run (the clock, the histogram) must not share
    /// its line.
    next_seq: CachePadded<AtomicU64>,
    pub(super) lateness: LatenessHistogram,
    /// The pool's metric handles (feature `metrics`; see [`super::sampler`]).
    #[cfg(feature = "metrics")]
    pub(super) metrics: crate::pool::metrics::PoolMetrics,
    pub(crate) panicked: AtomicU64,
    /// Failed runs: panics and `Err`s.
    pub(crate) failed: AtomicU64,
    /// Submissions refused: the pool was shut down, or no worker could start.
    pub(super) rejected: AtomicU64,
    /// When the last starvation warning was logged (clock nanos).
    /// (std's atomic even under loom: whether it is touched depends on real time.)
    pub(super) last_starvation_warning: std::sync::atomic::AtomicU64,
    /// What a new worker thread runs.
    worker_main: WorkerMain,
}

impl Shared {
    pub(crate) fn new(config: Config, clock: Clock, worker_main: WorkerMain) -> Arc<Shared> {
        let inbox = Arc::new(Inbox::new(config.core_threads));
        let submissions = Arc::new(Submissions::new());
        let removals = Arc::new(Removals::new(Arc::clone(&submissions)));
        let ready = Arc::new(Ready::new());
        #[cfg(feature = "metrics")]
        let metrics = crate::pool::metrics::PoolMetrics::new(&config.thread_name);
        let shared = Arc::new(Shared {
            state: Mutex::new(State::new(
                &config,
                &clock,
                Arc::clone(&inbox),
                Arc::clone(&submissions),
                Arc::clone(&removals),
                Arc::clone(&ready),
            )),
            inbox,
            submissions,
            removals,
            ready,
            available: Signal::new(),
            terminated: Condvar::new(),
            terminated_wakers: TerminationWakers::default(),
            idle: Condvar::new(),
            clock,
            config,
            run_state: AtomicU8::new(RunState::Running as u8),
            next_seq: CachePadded::new(AtomicU64::new(0)),
            lateness: LatenessHistogram::new(),
            #[cfg(feature = "metrics")]
            metrics,
            panicked: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            last_starvation_warning: std::sync::atomic::AtomicU64::new(0),
            worker_main,
        });
        let listener: Weak<dyn ClockListener> = Arc::downgrade(&shared) as Weak<Shared>;
        shared.clock.subscribe(listener);
        shared
    }

    /// Marks the calling thread as one of this pool's workers.
    pub(super) fn enter_as_worker(self: &Arc<Self>) {
        CURRENT_POOL.with(|c| c.set(Arc::as_ptr(self) as usize));
    }

    /// True if the calling thread is one of this pool's workers.
    pub(super) fn is_current_pool(&self) -> bool {
        CURRENT_POOL.with(|c| c.get() == self as *const Shared as usize)
    }

    /// The pool lock, with the inbox, the submission list and the removals
    /// absorbed.
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        let mut state = self.state.lock();
        state.absorb();
        state
    }

    /// The lock, wrapped so that leaving it hands leadership on.
    pub(crate) fn handoff(&self) -> Handoff<'_, State> {
        Handoff::new(self.lock(), &self.available, self.config.idle_spin)
    }

    pub(crate) fn next_seq(&self) -> u64 {
        self.next_seq.fetch_add(1, Ordering::Relaxed)
    }

    pub(super) fn run_state(&self) -> RunState {
        RunState::from_byte(self.run_state.load(Ordering::Acquire))
    }

    fn set_run_state(&self, state: &mut State, to: RunState) {
        if state.run_state < to {
            state.run_state = to;
            self.run_state.store(to as u8, Ordering::Release);
            self.removals.set_urgent(true);
            state.close_inbox();
        }
    }

    // ===== submission (Java: delayedExecute) =====

    /// Queues a new task, starting a worker if the pool has fewer than its
    /// core size. Takes the queue's reference: a caller that hands out a
    /// handle clones first; `execute` gives its only one. On `Err` the task
    /// is dropped here, outside the lock.
    /// `now` is the clock reading its deadline was computed from.
    pub(super) fn enqueue(self: &Arc<Self>, task: TaskPtr, now: Nanos) -> Result<(), Rejected> {
        // Due already, with nobody to wake and nothing to start: leave it
        // for the workers. A delayed task goes into the queue under the
        // lock, unless a worker takes the lock by its deadline anyway.
        let deadline = task.header().deadline();
        let task = if deadline <= now {
            match self.inbox.offer(task, now, &self.available) {
                Ok(()) => return Ok(()),
                Err(task) => task,
            }
        } else if self.submissions.looks_open() {
            // Not due: if a worker is bound to take the pool lock by its
            // deadline anyway, leave it for that worker.
            match self.submit_without_lock(task, now, deadline) {
                Ok(()) => return Ok(()),
                Err(task) => task,
            }
        } else {
            task
        };
        let mut state = self.handoff();
        if state.run_state != RunState::Running {
            drop(state);
            self.count_rejected();
            tracing::debug!(target: "schedpool::pool", id = task.header().seq(), "task rejected: pool is shut down");
            return Err(Rejected::shutdown());
        }
        state.accepted += 1;
        let worker = state.reserve_worker(&self.config);
        // Only a submission that starts a worker keeps a reference, to take
        // the task back if the thread cannot be created.
        let kept = worker.map(|_| task.clone());
        if state.queue.push(task, now) {
            state.new_head();
        }
        drop(state);
        match (worker, kept) {
            (Some(number), Some(task)) => {
                self.start_worker(number, Some((task.header(), task.as_ptr())))
            }
            _ => Ok(()),
        }
    }

    /// A task not yet due, while the submission list is open: leaves it
    /// there if a worker is bound to look for it by its deadline, else
    /// gives it back (the caller takes the pool lock). See
    /// [`submissions`](super::submissions).
    fn submit_without_lock(
        &self,
        task: TaskPtr,
        now: Nanos,
        deadline: Nanos,
    ) -> Result<(), TaskPtr> {
        // Deadlines compare with published wake times only on the real
        // clock (loom has no time: a looking worker alone covers there).
        let real = (self.clock.is_real() && cfg!(not(loom))).then_some(deadline);
        // Not covered before the push: the locked push costs less than a
        // push here and the lock after it.
        if !self.removals.covers(real) {
            return Err(task);
        }
        self.submissions.push(task, now)?;
        if self.submissions.pushed(real) {
            self.available.kick();
        }
        if !self.removals.covers(real) {
            // The worker it counted on went to sleep past the deadline, or
            // left, meanwhile: absorb under the lock, and wake a waiter if
            // nobody times the head now (as a locked push of a new head).
            let mut state = self.handoff();
            if state.leader.is_none() {
                state.new_head();
            }
        }
        Ok(())
    }

    /// Starts worker `number`. If the thread cannot be created, the slot is
    /// released; if that leaves the pool with no worker at all, the task just
    /// queued is taken back and rejected (nothing would ever run it).
    pub(super) fn start_worker(
        self: &Arc<Self>,
        number: usize,
        submitted: Option<(&Header, *const u8)>,
    ) -> Result<(), Rejected> {
        let name = format!("{}-{}", self.config.thread_name, number);
        let shared = Arc::clone(self);
        let main = self.worker_main;
        let Err(err) = spawn_named(name, move || main(shared)) else {
            return Ok(());
        };
        let mut state = self.lock();
        state.worker_left();
        let mut taken_back = None;
        if state.workers == 0 {
            if let Some((header, task)) = submitted {
                taken_back = state.queue.remove_anywhere(header, task);
                if taken_back.is_some() {
                    state.accepted -= 1;
                }
            }
        }
        let terminated = self.try_terminate(&mut state);
        drop(state);
        self.announce_termination(terminated);
        let result = match taken_back {
            Some(entry) => {
                // Never reached a worker: the caller gets Err and no handle,
                // so the task is simply dropped.
                if entry.task.header().try_cancel() {
                    entry.task.cancelled();
                }
                self.count_rejected();
                Err(Rejected::no_worker(&err))
            }
            None => Ok(()),
        };
        // Logged once the worker count and the task are settled: a
        // subscriber that panicked before would leave a phantom worker that
        // keeps the pool from terminating.
        tracing::error!(target: "schedpool::pool", error = %err, "could not start a worker thread");
        result
    }

    /// Counts a refused submission (`PoolStats::rejected`; with the
    /// `metrics` feature, published at once rather than sampled: a
    /// submission may be refused after the pool terminated, when no
    /// sampler is left, and refusals are rare).
    #[inline(always)]
    fn count_rejected(&self) {
        self.rejected.fetch_add(1, Ordering::Relaxed);
        #[cfg(feature = "metrics")]
        self.metrics.count_rejected();
    }

    // ===== after a run (Java: reExecutePeriodic) =====

    /// May a task with this schedule and deadline run in the current state?
    /// (Java's `canRunInCurrentRunState`, JDK 9+.)
    pub(super) fn can_run(&self, run_state: RunState, header: &Header, now: Nanos) -> bool {
        match run_state {
            RunState::Running => true,
            RunState::Shutdown if header.kind().is_periodic() => {
                self.config.continue_periodic_after_shutdown
            }
            RunState::Shutdown => {
                self.config.execute_delayed_after_shutdown || header.deadline() <= now
            }
            _ => false,
        }
    }

    /// Ends a periodic task's run and requeues it, under the lock of the
    /// worker that ran it, so the task is never `SCHEDULED` outside the
    /// queue (pause, resume and trigger rely on that). Returns the task if
    /// it must be cleaned up outside the lock instead: it may no longer run
    /// (shut down meanwhile: now cancelled) or was cancelled during its run
    /// (its body, put back after the run, must still be dropped).
    ///
    /// A new head clears the leader but wakes nobody: the calling worker
    /// waits next, under this same lock, so it either takes the head at once
    /// or becomes the leader timing it. Waking another thread would only
    /// cost a context switch (the replaced leader wakes at its old deadline
    /// and follows).
    pub(crate) fn requeue(&self, state: &mut State, task: TaskPtr, now: Nanos) -> Option<TaskPtr> {
        match task.end_run(now) {
            EndOfRun::Paused if state.run_state == RunState::Running => {
                state.paused.push(task);
                None
            }
            EndOfRun::Paused => {
                // Paused during its run, and the pool shut down meanwhile:
                // nobody can resume it.
                if task.header().try_cancel() {
                    state.count_cancelled(1);
                }
                Some(task)
            }
            EndOfRun::Cancelled => Some(task),
            EndOfRun::Scheduled if self.can_run(state.run_state, task.header(), now) => {
                // To the heap, not the lane: a catch-up run is overdue, not
                // "due at submission".
                if state.queue.push(task, 0) {
                    state.leader.clear();
                }
                None
            }
            EndOfRun::Scheduled => {
                if task.header().try_cancel() {
                    state.count_cancelled(1);
                }
                Some(task)
            }
        }
    }

    // ===== cancellation (Java: remove / removeOnCancel) =====

    /// The queue's nodes, cancelled ones not yet reclaimed included (for
    /// [`crate::internals`]; takes the lock without absorbing or
    /// reclaiming).
    pub(crate) fn queue_nodes(&self) -> usize {
        self.state.lock().queue.len()
    }

    /// [`queue_nodes`](Self::queue_nodes) and the tasks still in the inbox
    /// and the submission list, which are nodes too: the task nodes the
    /// pool holds, paused tasks aside (for [`crate::internals`]; takes the
    /// lock without absorbing or reclaiming).
    pub(crate) fn nodes(&self) -> usize {
        self.state.lock().nodes()
    }

    /// A handle cancelled `task` (it won the state, completed the handle
    /// and dropped the body): leaves its queue node and its count for the
    /// owner, without the pool lock (see [`removals`](super::removals)).
    pub(super) fn cancelled(&self, task: TaskPtr) {
        match self.removals.push(task, || Clock::Real.now()) {
            After::Nothing => {}
            After::Wake => {
                // The lock only orders this signal after a waiter's check
                // (a signal without it could fall between that waiter's
                // check and its sleep); nothing is reclaimed here.
                let mut state = self.state.lock();
                state.leader.clear();
                self.available.one(&state.leader);
            }
            After::Reclaim => {
                // Shutting down, or a `wait_idle` waits: reclaim now, so
                // termination (the Handoff's drop wakes a worker to see it;
                // Java: tryTerminate) and idleness are seen at once.
                let state = self.handoff();
                self.note_maybe_idle(&state);
            }
        }
    }
}

impl ClockListener for Shared {
    fn clock_advanced(&self) {
        self.handoff().new_head();
    }
}

/// Takes `task` out of the paused list, if it is there.
pub(super) fn take_paused(state: &mut State, task: *const u8) -> Option<TaskPtr> {
    let at = state
        .paused
        .iter()
        .position(|t| std::ptr::eq(t.as_ptr(), task))?;
    Some(state.paused.swap_remove(at))
}
