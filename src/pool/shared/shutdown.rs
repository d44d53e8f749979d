//! Shutdown, termination and idleness of the pool's core: Java's
//! `shutdown`/`onShutdown`, `shutdownNow`, `tryTerminate` and
//! `awaitTermination`, and `wait_idle` for virtual-time tests. A part of
//! [`Shared`] kept in its own file; the invariants are the core's
//! ([`shared`](super)).

use std::time::Duration;

use super::{Shared, State};
use crate::base::sync::wait_for;
use crate::pool::run_state::RunState;
use crate::task::ptr::TaskPtr;

impl Shared {
    // ===== shutdown =====

    /// Java's `shutdown` + `onShutdown`: stop accepting, cancel what the
    /// policies say may not run, let the rest finish. Never blocks.
    pub(crate) fn shutdown(&self) {
        let removed = {
            let mut state = self.handoff();
            if state.run_state != RunState::Running {
                return;
            }
            self.set_run_state(&mut state, RunState::Shutdown);
            // Read after the inbox closed: every task it let in was due by
            // its submitter's reading, so by this one too, and is kept.
            let now = self.clock.now();
            let config = &self.config;
            let removed = state.queue.retain(|e| {
                let h = e.task.header();
                !h.is_cancelled()
                    && if h.kind().is_periodic() {
                        config.continue_periodic_after_shutdown
                    } else {
                        config.execute_delayed_after_shutdown || h.deadline() <= now
                    }
            });
            // Paused tasks are not queued and cannot be resumed any more:
            // complete them as cancelled, whatever the policies.
            let paused = std::mem::take(&mut state.paused);
            let removed = cancel_all(
                &mut state,
                removed.into_iter().map(|e| e.task).chain(paused),
            );
            let terminated = self.try_terminate(&mut state);
            (removed, terminated)
            // The Handoff's drop wakes a worker if the queue is now empty,
            // and each exiting worker wakes the next.
        };
        let (removed, terminated) = removed;
        let cancelled = removed.len();
        // Wake-ups and completions before the log line: a subscriber is
        // user code, and one that panics must not leave a `join` or a
        // `terminated()` waiting for ever.
        self.announce_termination(terminated);
        complete_cancelled(removed);
        tracing::info!(target: "schedpool::pool", cancelled, "pool shutting down");
    }

    /// Java's `shutdownNow`: stop, and hand back every queued task that had
    /// not started, in deadline order.
    pub(crate) fn shutdown_now(&self) -> Vec<TaskPtr> {
        // Logged first: once the queue is drained, a subscriber that panicked
        // would drop the tasks before they reach the caller, and their
        // handles would wait for ever.
        tracing::info!(target: "schedpool::pool", "pool stopping now");
        let drained = {
            let mut state = self.handoff();
            self.set_run_state(&mut state, RunState::Stop);
            let drained = state.queue.drain();
            // Paused tasks did not start, but nobody can resume them: they
            // are completed as cancelled rather than returned.
            let paused = std::mem::take(&mut state.paused);
            let paused = cancel_all(&mut state, paused);
            let terminated = self.try_terminate(&mut state);
            (drained, paused, terminated)
        };
        let (drained, paused, terminated) = drained;
        self.announce_termination(terminated);
        complete_cancelled(paused);
        drained
            .into_iter()
            .map(|e| e.task)
            .filter(|t| t.header().is_scheduled())
            .collect()
    }

    /// Terminates if shut down, with no worker left and nothing queued;
    /// true if this call did. The caller announces it
    /// ([`announce_termination`](Self::announce_termination)) after
    /// releasing the lock: a tracing subscriber and a waker are user code.
    #[must_use]
    pub(in crate::pool) fn try_terminate(&self, state: &mut State) -> bool {
        let drained = state.queue.is_empty() || state.run_state >= RunState::Stop;
        let terminate = state.run_state >= RunState::Shutdown
            && state.run_state < RunState::Terminated
            && state.workers == 0
            && drained;
        if terminate {
            self.set_run_state(state, RunState::Terminated);
            self.terminated.notify_all();
            self.idle.notify_all();
        }
        terminate
    }

    /// Blocks until terminated or `timeout` (real time) passed.
    pub(crate) fn await_termination(&self, timeout: Duration) -> bool {
        if self.is_current_pool() {
            // Waiting for ourselves would never end.
            return self.run_state() == RunState::Terminated;
        }
        let mut state = self.lock();
        wait_for(&self.terminated, &mut state, timeout, |s| {
            s.run_state == RunState::Terminated
        })
    }

    // ===== idleness (virtual-time tests) =====

    /// True once no task runs and none is due; false if `timeout` passed.
    pub(crate) fn wait_idle(&self, timeout: Duration) -> bool {
        let mut state = self.lock();
        state.idle_waiters += 1;
        self.removals.set_urgent(true);
        let idle = wait_for(&self.idle, &mut state, timeout, |s| {
            // A re-check after a wake-up sees submissions that skipped the lock.
            s.absorb();
            let now = self.clock.now();
            let due = s.queue.peek_deadline().is_some_and(|d| d <= now);
            s.active == 0 && self.ready.taken() == 0 && (!due || s.run_state >= RunState::Stop)
        });
        state.idle_waiters -= 1;
        self.removals
            .set_urgent(state.idle_waiters > 0 || state.run_state != RunState::Running);
        idle
    }

    /// Called under the lock after a run: wakes `wait_idle` callers if the
    /// pool may have become idle.
    pub(in crate::pool) fn note_finished(&self, state: &mut State) {
        state.active -= 1;
        state.completed += 1;
        self.note_maybe_idle(state);
    }

    /// Wakes `wait_idle` callers if the pool may be idle now: after a run,
    /// and after a worker took a task it did not run (a cancelled task kept
    /// in the queue, an idle timer re-armed).
    pub(in crate::pool) fn note_maybe_idle(&self, state: &State) {
        if state.active == 0 && state.idle_waiters > 0 {
            self.idle.notify_all();
        }
    }

    /// Wakes the pool's `terminated()` futures and logs its termination
    /// (outside the lock: a subscriber and a waker are user code; the
    /// wake-ups first, so a subscriber that panics cannot keep them).
    pub(in crate::pool) fn announce_termination(&self, terminated: bool) {
        if terminated {
            self.terminated_wakers.wake_all();
            tracing::info!(target: "schedpool::pool", "pool terminated");
        }
    }
}

/// Cancels `tasks` that shutdown took out of the queue or the paused list:
/// their state swaps under the lock (an atomic swap, no user code), so the
/// count of cancels is whole before the pool can terminate. Each comes
/// back with whether this swap won (a racing handle's cancel may have).
fn cancel_all(state: &mut State, tasks: impl IntoIterator<Item = TaskPtr>) -> Vec<(TaskPtr, bool)> {
    let tasks: Vec<(TaskPtr, bool)> = tasks
        .into_iter()
        .map(|task| {
            let won = task.header().try_cancel();
            (task, won)
        })
        .collect();
    state.count_cancelled(tasks.iter().filter(|(_, won)| *won).count());
    tasks
}

/// Completes the tasks [`cancel_all`] cancelled, outside the lock (waking
/// their waiters and dropping their bodies runs user code).
fn complete_cancelled(tasks: Vec<(TaskPtr, bool)>) {
    for (task, won) in tasks {
        if won {
            task.cancelled();
        }
    }
}
