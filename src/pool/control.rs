//! Steering a queued or running task: pause, resume, trigger, reschedule.
//! These live apart from [`shared`](super::shared)'s submission and shutdown paths
//! but use the same lock and state.
//!
//! # Invariants
//!
//! - Every operation here runs under the pool lock, and relies on the pool's
//!   invariant that a task is `SCHEDULED` exactly while it is queued (workers
//!   claim a task, and end a periodic run and requeue it, under this lock).
//!   So pause finds what it must remove, resume pushes a task that is not
//!   queued, and no task is ever queued twice. One exception: a one-shot
//!   task a worker took from the ready batch ([`ready`](crate::queue::ready)) is
//!   `SCHEDULED` until that worker's `try_start`, without the pool lock. A
//!   pause or cancel that wins that race finds nothing to remove, and the
//!   worker, whose start then fails, drops it; a trigger finds nothing to
//!   pull forward and returns false, as for a task about to start.
//! - A request that arrives while the task runs (pause, trigger) is a flag in
//!   the task's state word, read by the runner's end-of-run swap (see
//!   [`crate::task`]), so it cannot fall between "the run ended" and
//!   "requeued".

use crate::base::clock::Nanos;
use crate::pool::run_state::RunState;
use crate::pool::shared::{take_paused, Shared, State};
use crate::task::header::{Header, Kind};
use crate::task::ptr::TaskPtr;

impl Shared {
    /// Removes `task` from the queue if it is queued there; true if it was.
    fn unqueue(&self, state: &mut State, header: &Header, task: *const u8) -> bool {
        // The entry holds only a clone of the task's Arc: dropping it under
        // the lock runs no user code.
        state.queue.remove_anywhere(header, task).is_some()
    }

    /// Pauses a task: a queued one leaves the queue (for the paused list),
    /// a running one pauses after its run. True if it was scheduled or
    /// running. Refused once shutdown has begun: a paused task could never
    /// be resumed, and shutdown completes the paused list.
    pub(crate) fn pause(&self, job: &TaskPtr) -> bool {
        let header = job.header();
        let mut state = self.handoff();
        if state.run_state != RunState::Running {
            return false;
        }
        if header.pause_scheduled() {
            self.unqueue(&mut state, header, job.as_ptr());
            state.paused.push(job.clone());
            // It may have been the due head `wait_idle` waits on.
            self.note_maybe_idle(&state);
            return true;
        }
        header.request_pause()
    }

    /// Resumes a paused task: a fixed-rate one at its next grid point at or
    /// after now (missed runs are not replayed), a fixed-delay one now, a
    /// calendar one at its next fire not yet passed. False
    /// if it was not paused. A task the pool may no
    /// longer run (shut down meanwhile) is cancelled instead.
    pub(crate) fn resume(&self, job: &TaskPtr) -> bool {
        let header = job.header();
        let now = self.clock.now();
        // A calendar task's next fire is its schedule's answer (user code):
        // asked here, outside the pool lock.
        let calendar = job
            .cadence()
            .and_then(|control| control.plan())
            .map(|plan| plan.resume_fire(self.clock.wall_now()));
        let refused = {
            let mut state = self.handoff();
            if header.state() != crate::task::header::PAUSED {
                return false;
            }
            if let Some(control) = job.cadence() {
                header.set_deadline(control.resume_at(header.kind(), calendar, now));
            }
            if !header.resume_paused() {
                return false;
            }
            drop(take_paused(&mut state, job.as_ptr()));
            if self.can_run(state.run_state, header, now) {
                if state.queue.push(job.clone(), now) {
                    state.new_head();
                }
                false
            } else {
                // Shut down meanwhile: cancelled under the lock, so it is
                // never SCHEDULED outside the queue; completed outside it.
                let won = header.try_cancel();
                if won {
                    state.count_cancelled(1);
                }
                won
            }
        };
        if refused {
            job.cancelled();
        }
        true
    }

    /// Makes a task due now. A running periodic task runs again as soon as
    /// its current run ends (never overlapping). False if it was not
    /// waiting for a run (done, cancelled, paused, or a running one-shot).
    pub(crate) fn trigger(&self, job: &TaskPtr) -> bool {
        let header = job.header();
        if header.kind() == Kind::Idle {
            // An idle timer fires on idleness, not on demand: its next pop
            // would just re-arm it. Refuse rather than pretend.
            return false;
        }
        let now = self.clock.now();
        let mut state = self.handoff();
        if header.is_scheduled() {
            // SCHEDULED means queued (the worker claims and requeues under
            // this lock); only a shutdown purge holds a SCHEDULED task out
            // of the queue, briefly, before cancelling or returning it.
            if !self.unqueue(&mut state, header, job.as_ptr()) {
                return false;
            }
            header.set_deadline(header.deadline().min(now));
            if let Some(control) = job.cadence() {
                // A calendar task runs now, whatever the wall clock says.
                control.release_wall();
            }
            if state.queue.push(job.clone(), now) {
                state.new_head();
            }
            return true;
        }
        header.kind().is_periodic() && header.request_trigger()
    }

    /// Changes a periodic task's period (or delay). A queued task is moved
    /// to its re-based next run; a paused one is re-based too, for resume to
    /// start from; a running one uses the new period when its run ends.
    pub(super) fn set_period(&self, job: &TaskPtr, period: Nanos) -> bool {
        let Some(control) = job.cadence() else {
            return false;
        };
        let header = job.header();
        let now = self.clock.now();
        let mut state = self.handoff();
        if header.is_done() {
            return false;
        }
        let old = control.swap_period(period);
        if self.unqueue(&mut state, header, job.as_ptr()) {
            header.set_deadline(control.rebase(old, period, now));
            if state.queue.push(job.clone(), now) {
                state.new_head();
            }
            // A due head may have moved later: `wait_idle` may be done.
            self.note_maybe_idle(&state);
        } else if header.state() == crate::task::header::PAUSED {
            // Out of the queue, under the lock: `resume` starts from the
            // re-based grid point, not the old period's.
            header.set_deadline(control.rebase(old, period, now));
        }
        true
    }
}
