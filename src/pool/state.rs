//! Everything the pool lock protects: the work queue, the leader slot, the
//! run state and the counters, with the moves that keep them consistent
//! with the submission [`Inbox`].
//!
//! # Invariants
//!
//! - Only code holding the pool lock has a `&mut State`, so "must hold the
//!   lock" is a type. [`Shared::lock`](crate::pool::shared::Shared::lock) and
//!   [`Shared::handoff`](crate::pool::shared::Shared::handoff) absorb the inbox
//!   before they hand it out, and a waiting worker absorbs before every
//!   look at the head.
//! - `workers` and `run_state` are mirrored into the inbox's gate whenever
//!   they change; a change that may close the gate is followed by an
//!   absorb, so no task is left behind a closed gate.
//! - An absorbed task counts as accepted, and is pushed exactly as a
//!   submission under the lock would have been: a new head clears the
//!   leader (the absorbing thread is a worker about to look at the head,
//!   or every worker is awake or kicked; see [`inbox`](super::inbox)).

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::base::clock::{to_instant, to_nanos, Clock, Nanos};
use crate::pool::config::Config;
use crate::pool::inbox::{Inbox, Incoming};
use crate::pool::ready_runs::{Ready, Runs};
use crate::pool::removals::{Removals, Sleep, BATCH_WINDOW, RECLAIM_BOUND};
use crate::pool::run_state::RunState;
use crate::pool::submissions::Submissions;
use crate::queue::WorkQueue;
use crate::task::ptr::TaskPtr;
use crate::wait::{Leader, Waitable};

/// Everything the pool lock protects.
///
/// Aligned to 128 bytes (two lines, the unit x86's adjacent-line prefetcher
/// moves), so the mutex's lock word sits on a line of its own: a worker
/// spinning on the lock then does not pull the lines this state lives on
/// away from the worker that holds it.
#[repr(align(128))]
pub(crate) struct State {
    pub(crate) queue: WorkQueue<Runs>,
    pub(crate) leader: Leader,
    pub(super) run_state: RunState,
    /// Worker threads started and not yet exited.
    pub(crate) workers: usize,
    /// Names the next worker thread.
    pub(super) next_worker: usize,
    /// Tasks taken from the heap and not yet finished.
    pub(crate) active: usize,
    pub(crate) completed: u64,
    pub(crate) accepted: u64,
    /// Tasks the pool or a handle cancelled.
    pub(super) cancelled: u64,
    /// Threads blocked in `wait_idle`.
    pub(super) idle_waiters: usize,
    /// Paused tasks (not queued): shutdown completes them, so no `join`
    /// waits forever on a task nobody can resume.
    pub(crate) paused: Vec<TaskPtr>,
    /// A core-0 pool's keep-alive: its worker leaves after this long with
    /// nothing queued (Java: a timed poll with `keepAliveTime`).
    pub(crate) keep_alive: Option<Duration>,
    /// Submissions that skipped this lock (shared with [`crate::pool::shared::Shared`]).
    inbox: Arc<Inbox>,
    /// The tray swapped out of the inbox while absorbing (kept for its
    /// capacity).
    incoming: Vec<Incoming>,
    /// Delayed submissions that skipped this lock (shared with
    /// [`crate::pool::shared::Shared`]; see [`submissions`](super::submissions)).
    submissions: Arc<Submissions>,
    /// The list swapped out of `submissions` while absorbing: its own
    /// buffer, so the list's two buffers keep their full size and never
    /// mix with the inbox's.
    listed: Vec<Incoming>,
    /// `max(core_threads, 1)`: the workers the pool must have for the
    /// submission list to open.
    staff: usize,
    /// Cancelled tasks whose queue nodes wait for this lock's holder
    /// (shared with [`crate::pool::shared::Shared`]).
    removals: Arc<Removals>,
    /// The list swapped out of `removals` while absorbing.
    removed: Vec<TaskPtr>,
    /// Whether a cancelled task's node leaves the queue (the builder's
    /// `remove_on_cancel`).
    remove_on_cancel: bool,
    /// When the last take that found removals began (real clock): more may
    /// follow, so waiters sleep at most [`RECLAIM_BOUND`] past it, and past
    /// newer removals at most [`BATCH_WINDOW`] past it (see
    /// [`removals`](super::removals)).
    taken_at: Option<Nanos>,
    /// The waiter about to sleep passed removals younger than the batch
    /// window: it sleeps at most until then (see [`removals`](super::removals)).
    batch_until: Option<Nanos>,
    /// Deadlines are real time (they can be published to cancels).
    real_clock: bool,
    /// The waiter leaving the wait left the published wake time to its
    /// hand-over's signal ([`Waitable::owes_wake`]).
    owes_wake: bool,
}

impl Waitable for State {
    fn leader(&mut self) -> &mut Leader {
        &mut self.leader
    }
    fn head_deadline(&self) -> Option<Nanos> {
        self.queue.peek_deadline()
    }
    fn second_deadline(&self) -> Option<Nanos> {
        self.queue.second_deadline()
    }
    /// Workers stop waiting once the pool is stopping, or shut down with
    /// nothing left to run (Java's `getTask` returning null).
    fn is_closed(&self) -> bool {
        self.run_state >= RunState::Stop
            || (self.run_state == RunState::Shutdown && self.queue.is_empty())
    }
    fn keep_alive(&self) -> Option<Duration> {
        self.keep_alive
    }
    fn absorb(&mut self) {
        State::absorb(self);
    }
    fn recheck_by(&self) -> Option<Instant> {
        self.batch_until.or(self.recheck()).map(to_instant)
    }
    fn may_sleep(&mut self) -> bool {
        // When some waiter looks at the removals next, at the latest: the
        // head's deadline (someone times it) or the recheck, whichever is
        // first. A manual clock's deadlines are not real time.
        // (loom has no time: there every first cancel after a take wakes.)
        let head = match self.real_clock && cfg!(not(loom)) {
            true => self.queue.peek_deadline().unwrap_or(u64::MAX),
            false => u64::MAX,
        };
        let recheck = self.recheck().unwrap_or(u64::MAX);
        // A take that found removals within the bound: what came since may
        // wait for its window (batching).
        self.batch_until = None;
        match self
            .removals
            .sleeping_until(head.min(recheck), self.taken_at.is_some())
        {
            Sleep::Empty => {}
            Sleep::Batch => {
                self.batch_until = self
                    .taken_at
                    .map(|t| t.saturating_add(BATCH_WINDOW.as_nanos() as Nanos));
            }
            Sleep::Take => return false,
        }
        if !self.inbox.sleep() {
            self.removals.looks_again();
            self.batch_until = None;
            return false;
        }
        true
    }
    fn woke(&mut self) {
        self.batch_until = None;
        self.removals.awake();
        self.inbox.woke();
    }
    fn looks(&mut self) {
        self.removals.looking();
    }
    fn may_leave(&mut self) -> bool {
        // What a published time may still promise once this waiter leaves
        // (to run the head, or for good). A follower that went to sleep
        // while this waiter was awake (spinning to the head as the leader)
        // published the head's deadline, counting on it. Leaving the queue
        // empty, or closed, nobody times anything: withdraw it. Leaving a
        // successor to be promoted where it sleeps, that one's timer is
        // what holds. Otherwise the hand-over at the lock's release wakes a
        // waiter, which looks at once.
        // (That signal is owed even if the queue empties meanwhile: other
        // workers take the ready batch without this lock. Found in review.)
        let owes = if self.queue.len() <= 1 || Waitable::is_closed(self) {
            self.removals.hand_on(u64::MAX);
            false
        } else if let Some(timer) = self.leader.successor_timer() {
            self.removals.hand_on(timer);
            false
        } else {
            true
        };
        let leaves = self.removals.stops_looking();
        self.owes_wake = leaves && owes;
        leaves
    }
    fn owes_wake(&mut self) -> bool {
        std::mem::take(&mut self.owes_wake)
    }
    fn left(&mut self) {
        self.removals.left();
    }
    fn spin_starts(&mut self, until: Instant) -> bool {
        if !self.inbox.spin_starts() {
            return false;
        }
        // Until when it spins, for a submission to compare its deadline
        // with (on the real clock; otherwise every submission kicks it).
        let until = match self.real_clock && cfg!(not(loom)) {
            true => to_nanos(until).max(1),
            false => u64::MAX,
        };
        if !self.submissions.spin_starts(until) {
            self.inbox.spin_ends();
            return false;
        }
        true
    }
    fn spin_ends(&mut self) {
        self.submissions.spin_ends();
        self.inbox.spin_ends();
    }
}

impl State {
    pub(super) fn new(
        config: &Config,
        clock: &Clock,
        inbox: Arc<Inbox>,
        submissions: Arc<Submissions>,
        removals: Arc<Removals>,
        ready: Arc<Ready>,
    ) -> Self {
        State {
            queue: WorkQueue::with_ready(ready),
            leader: Leader::default(),
            run_state: RunState::Running,
            workers: 0,
            next_worker: 0,
            active: 0,
            completed: 0,
            accepted: 0,
            cancelled: 0,
            idle_waiters: 0,
            paused: Vec::new(),
            keep_alive: (config.core_threads == 0).then_some(config.keep_alive),
            inbox,
            incoming: Vec::new(),
            submissions,
            // Made with the pool, at the list's full size (see
            // `submissions`): a fixed 4 KiB per pool, not a cost per task.
            listed: Vec::with_capacity(crate::pool::submissions::LIST_MAX),
            staff: config.core_threads.max(1),
            removals,
            removed: Vec::new(),
            remove_on_cancel: config.remove_on_cancel,
            taken_at: None,
            batch_until: None,
            real_clock: clock.is_real(),
            owes_wake: false,
        }
    }

    /// When a waiter must look at the removals again at the latest, after
    /// a take that found some ([`RECLAIM_BOUND`] past it).
    fn recheck(&self) -> Option<Nanos> {
        self.taken_at
            .map(|t| t.saturating_add(RECLAIM_BOUND.as_nanos() as Nanos))
    }

    /// Counts `n` tasks cancelled, by a handle or by the pool
    /// (`PoolStats::cancelled`, and the metrics sampler).
    #[inline(always)]
    pub(super) fn count_cancelled(&mut self, n: usize) {
        self.cancelled += n as u64;
    }

    /// The task nodes the pool holds and has not reclaimed, paused tasks
    /// aside: the queue's (cancelled ones included) and those still in the
    /// inbox and the submission list.
    pub(crate) fn nodes(&self) -> usize {
        self.queue.len() + self.inbox.len() + self.submissions.len()
    }

    /// Moves the inbox's and the submission list's tasks into the queue, in
    /// submission order, then reclaims what cancels left.
    #[inline]
    pub(crate) fn absorb(&mut self) {
        if !self.inbox.looks_empty() {
            self.absorb_tray();
        }
        if !self.submissions.looks_empty() {
            self.absorb_submissions();
        }
        // After the tray: a task's cancel comes after its submission.
        if !self.removals.looks_empty() {
            self.absorb_removals();
        } else if self.taken_at.is_some() {
            self.taken_at = None;
        }
    }

    /// Reclaims what cancels left (see [`removals`](super::removals)):
    /// counts each cancel, and takes its task out of the paused list and,
    /// with `remove_on_cancel`, out of the queue. Runs no user code: each
    /// task's body was dropped by its cancel, and the handle that cancelled
    /// it held a reference until then, so these drops free only memory.
    #[inline(never)]
    fn absorb_removals(&mut self) {
        // Read before the take: every removal pushed after it is younger
        // than its time (batching). loom has no time.
        let taken_at = match cfg!(loom) {
            true => 0,
            false => Clock::Real.now(),
        };
        self.removals.take(&mut self.removed);
        let mut removed = std::mem::take(&mut self.removed);
        let n = removed.len();
        for task in removed.drain(..) {
            self.cancelled += 1;
            let at = task.as_ptr();
            if !self.paused.is_empty() {
                if let Some(i) = self
                    .paused
                    .iter()
                    .position(|t| std::ptr::eq(t.as_ptr(), at))
                {
                    drop(self.paused.swap_remove(i));
                }
            }
            if self.remove_on_cancel {
                drop(self.queue.remove(task.header(), at));
            }
        }
        if removed.capacity() <= 1024 {
            self.removed = removed;
        }
        self.removals.set_queued(self.queue.len());
        // More may follow: while they do, waiters sleep at most the bound.
        self.taken_at = (n > 0 && cfg!(not(loom))).then_some(taken_at);
    }

    #[inline(never)]
    fn absorb_tray(&mut self) {
        let mut incoming = std::mem::take(&mut self.incoming);
        self.inbox.take(&mut incoming);
        self.queue_all(&mut incoming);
        // Keep a burst's capacity only while it is small.
        if incoming.capacity() <= 1024 {
            self.incoming = incoming;
        }
    }

    /// Moves the submission list's tasks into the queue. A new head clears
    /// the leader and wakes nobody: the submission found a worker bound to
    /// take this lock by its deadline, or signals itself after this.
    #[inline(never)]
    fn absorb_submissions(&mut self) {
        let mut listed = std::mem::take(&mut self.listed);
        self.submissions.take(&mut listed);
        self.queue_all(&mut listed);
        self.listed = listed;
    }

    /// Queues (and empties) what [`absorb_tray`](Self::absorb_tray) or
    /// [`absorb_submissions`](Self::absorb_submissions) took, each as a
    /// submission under the lock would have been.
    fn queue_all(&mut self, incoming: &mut Vec<Incoming>) {
        let mut new_head = false;
        for (task, now) in incoming.drain(..) {
            self.accepted += 1;
            // Cancelled since (its removal may have been taken already):
            // no node to leave behind.
            if self.remove_on_cancel && task.header().is_cancelled() {
                continue;
            }
            new_head |= self.queue.push(task, now);
        }
        if new_head {
            self.leader.clear();
        }
    }

    /// Reserves a worker slot if fewer than the core size run (at least one
    /// even for a core size of 0); returns the new worker's number. Java's
    /// `ensurePrestart`: at most one new thread per call.
    pub(super) fn reserve_worker(&mut self, config: &Config) -> Option<usize> {
        if self.workers < config.core_threads.max(1) {
            self.workers += 1;
            self.workers_changed();
            self.next_worker += 1;
            Some(self.next_worker - 1)
        } else {
            None
        }
    }

    /// Mirrors the worker count into the inbox's gate and the submission
    /// list's (pool lock held).
    fn workers_changed(&mut self) {
        self.inbox.set_workers(self.workers);
        self.submissions.set_staffed(self.workers >= self.staff);
    }

    /// A worker left (or was never started): one fewer, and whatever the
    /// inbox let in before its gate saw that is queued now.
    pub(super) fn worker_left(&mut self) {
        self.workers -= 1;
        self.workers_changed();
        self.absorb();
    }

    /// A worker that was leaving stays after all (see
    /// [`worker_left`](Self::worker_left)).
    pub(super) fn worker_back(&mut self) {
        self.workers += 1;
        self.workers_changed();
    }

    /// The run state grew past `RUNNING`: the inbox closes, and what it let
    /// in before is queued now, to be purged, run or returned with the rest.
    pub(super) fn close_inbox(&mut self) {
        self.inbox.close();
        self.submissions.close();
        self.absorb();
    }
}
