//! A worker thread's life (Java's `ThreadPoolExecutor.runWorker` and
//! `getTask`, as `ScheduledThreadPoolExecutor` uses them).
//!
//! # Invariants
//!
//! - A worker takes tasks from the queue only through the leader/follower
//!   wait ([`crate::wait`]), under the pool lock, and raises `active` under
//!   the same lock that pops the task; or from the ready batch, under the
//!   batch's lock, which counts it as taken (see below).
//! - The bookkeeping of a finished run (`active`, `completed`, requeueing a
//!   periodic task) happens under the next lock the worker takes anyway, the
//!   one it waits for its next task under: one lock round-trip per task.
//! - A worker that takes a due task may move more due one-shot tasks to the
//!   ready batch ([`ready`](crate::queue::ready)) under the same lock; it then takes them
//!   one by one without the pool lock, until the batch is empty, before it
//!   waits again (other workers may help), unless a periodic run of its own
//!   is still to be requeued: that comes first. Their bookkeeping
//!   (`completed`, and the batch's `taken`) is folded in under the next pool
//!   lock, as a run's is.
//! - A task body runs outside every lock, inside `catch_unwind`: a panicking
//!   task never kills its worker. What runs around the body (the lateness
//!   warning, the span, a metrics recorder, the panic report) is contained
//!   too (`run_one`): if it unwinds, a task still `RUNNING` is completed as
//!   cancelled, so no handle waits for a run that never ends.
//! - A worker leaves by decrementing `workers` under the lock where it
//!   decided to leave. If it unwinds instead (a bug, or a panicking hook), a
//!   drop guard does the same, and starts a replacement if work is queued.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use crate::base::clock::Nanos;
use crate::base::error::drop_quietly;
use crate::pool::hooks::{CurrentRun, RunInfo};
use crate::pool::ready_runs::Previous;
use crate::pool::run_state::RunState;
use crate::pool::shared::{Shared, State};
use crate::task::header::Kind;
use crate::task::ptr::TaskPtr;
use crate::wait::slack::{loaded_spell, set_timer_slack, Slack};
use crate::wait::slice::{set_sched_slice, Slice};
use crate::wait::Wake;

/// What a run left to fold into the pool state at the next lock.
struct Finished {
    /// A periodic task to end the run of and requeue (still `RUNNING`).
    again: Option<TaskPtr>,
    /// When the run started (serves a trigger requested during it).
    started: Nanos,
}

/// Decrements `workers` if the thread unwinds out of its loop.
struct ExitGuard<'a> {
    shared: &'a Arc<Shared>,
    /// A task is taken and not yet accounted for.
    busy: bool,
    /// Taken from the ready batch without the pool lock, not yet folded in.
    ready: ReadyTally,
    /// `workers` was already decremented (normal exit).
    left: bool,
}

impl Drop for ExitGuard<'_> {
    fn drop(&mut self) {
        if self.left {
            return;
        }
        let replacement = {
            let mut state = self.shared.lock();
            state.worker_left();
            if self.busy {
                self.shared.note_finished(&mut state);
            }
            self.ready.fold(self.shared, &mut state);
            // The ready batch this worker filled may still hold tasks: a
            // replacement takes them.
            let replacement = if state.run_state < RunState::Stop && !state.queue.is_empty() {
                state.reserve_worker(&self.shared.config)
            } else {
                None
            };
            let terminated = self.shared.try_terminate(&mut state);
            (replacement, terminated)
        };
        let (replacement, terminated) = replacement;
        self.shared.announce_termination(terminated);
        if let Some(number) = replacement {
            let _ = self.shared.start_worker(number, None);
        }
    }
}

/// The worker thread's main function.
pub(crate) fn run(shared: Arc<Shared>) {
    shared.enter_as_worker();
    let mut slack = Slack::new(shared.config.timer_slack);
    if let Some(base) = shared.config.timer_slack {
        set_timer_slack(base);
    }
    let mut slice = Slice::new(shared.config.sched_slice);
    let mut guard = ExitGuard {
        shared: &shared,
        busy: false,
        ready: ReadyTally::default(),
        left: false,
    };
    let mut finished: Option<Finished> = None;
    loop {
        if let Some(change) = slack.change.take() {
            set_timer_slack(change);
        }
        if let Some(change) = slice.change.take() {
            // Best effort, logged there; the worker runs either way.
            let _ = set_sched_slice(change);
        }
        // Not before a periodic task's requeue: its catch-up runs may sort
        // before the batch (the requeue then moves the batch back).
        let requeue = finished.as_ref().is_some_and(|f| f.again.is_some());
        if !requeue && shared.ready.hint_len() > 0 {
            let previous = match finished {
                Some(_) => Previous::LockRun,
                None => Previous::Nothing,
            };
            run_ready(&shared, &mut guard.ready, previous);
        }
        let mut state = shared.handoff();
        // Another worker's pop last wrote the top of the heap: fetch its
        // lines together while the bookkeeping below runs.
        state.queue.prefetch_top();
        guard.ready.fold(&shared, &mut state);
        if let Some(done) = finished.take() {
            shared.note_finished(&mut state);
            guard.busy = false;
            if let Some(task) = done.again {
                if let Some(cleanup) = shared.requeue(&mut state, task, done.started) {
                    // Cancelled during its run, or shut down meanwhile:
                    // complete it and drop its body outside the lock.
                    drop(state);
                    cleanup.cancelled();
                    continue;
                }
            }
        }
        // The last worker of a core-0 pool leaves after its keep-alive with
        // nothing queued (`Waitable::keep_alive`): wait_due says TimedOut.
        let now = match state.wait_due(&shared.clock, None) {
            Wake::Due(now) => now,
            Wake::TimedOut if !state.queue.is_empty() => continue,
            Wake::Closed | Wake::TimedOut => {
                state.worker_left();
                if state.run_state == RunState::Running && !state.queue.is_empty() {
                    // A submission came in through the inbox as it closed.
                    state.worker_back();
                    continue;
                }
                guard.left = true;
                let terminated = shared.try_terminate(&mut state);
                drop(state);
                shared.announce_termination(terminated);
                return;
            }
        };
        let loaded = loaded_spell(&state.leader, &shared.clock, now);
        slack.follow(loaded);
        slice.follow(loaded);
        let Some(entry) = state.queue.pop_due(now) else {
            // The ready batch looked non-empty, but another worker took
            // its last task meanwhile: look again.
            continue;
        };
        let task = entry.task;
        // Everything about the task is decided under the lock it was taken
        // under, so a task is SCHEDULED exactly while it is queued (pause,
        // resume and trigger rely on that), and a task taken before
        // `shutdown_now` counts as started: it runs, it is not returned.
        match claim(&shared, &mut state, &task, now) {
            Claim::Run => {
                state.active += 1;
                guard.busy = true;
                if state.run_state == RunState::Running && task.header().kind() == Kind::Once {
                    // More tasks due: take them without the pool lock
                    // after this run (the loop's top), with any worker
                    // the hand-over below wakes to help. Not after a
                    // periodic task: its requeue, at the next lock, comes
                    // after the batch, and its catch-up run may sort first.
                    state.queue.fill_ready(now);
                }
                drop(state); // hands leadership on before the run
                finished = Some(run_one(&shared, task, now));
            }
            Claim::Cancel => {
                drop(state);
                task.cancelled();
                drop_quietly(task);
            }
            Claim::Done => {
                // Perhaps a cancelled task's last reference: drop it (and
                // whatever it holds) outside the lock.
                drop(state);
                drop_quietly(task);
            }
        }
    }
}

/// What a worker took from the ready batch without the pool lock, to fold
/// in under the next one.
#[derive(Default)]
struct ReadyTally {
    /// Tasks taken ([`Ready::taken`](crate::pool::ready_runs::Ready::taken)).
    taken: usize,
    /// Of those, runs and no-op runs (cancelled after they were taken).
    completed: u64,
    /// The run taken under the pool lock before them was reported ended
    /// ([`Previous::LockRun`]); the caller folds that run in itself.
    lock_run: bool,
    /// A task taken from the batch whose end is not reported yet (only
    /// while it runs, or if its worker unwinds out of it).
    unreported: bool,
}

impl ReadyTally {
    fn fold(&mut self, shared: &Shared, state: &mut State) {
        if std::mem::take(&mut self.unreported) {
            shared.ready.report(Previous::ReadyRun);
        }
        if self.taken == 0 && !self.lock_run {
            return;
        }
        state.completed += self.completed;
        shared.ready.fold(self.taken, self.lock_run);
        *self = ReadyTally::default();
        shared.note_maybe_idle(state);
    }
}

/// Takes tasks from the ready batch, without the pool lock, until it is
/// empty, and runs each whose start wins. A task taken is started even if
/// `shutdown_now` comes before its start, as one popped under the lock is
/// (Java's worker runs the task it took): `shutdown_now` drains the batch
/// under its lock, so it hands back exactly the tasks nobody took. One that
/// a cancel or a pause got to first is dropped; a cancelled one counts as a
/// no-op run, as Java counts every task a worker took (and as a pop under
/// the lock counts one).
fn run_ready(shared: &Shared, tally: &mut ReadyTally, mut previous: Previous) {
    tally.lock_run |= previous == Previous::LockRun;
    while let Some(task) = shared.ready.take(previous) {
        previous = Previous::ReadyRun;
        tally.unreported = true;
        tally.taken += 1;
        let header = task.header();
        if header.try_start() {
            let now = shared.clock.now();
            let done = run_one(shared, task, now);
            debug_assert!(done.again.is_none(), "only one-shot tasks are batched");
            tally.completed += 1;
        } else {
            // Java counts every task a worker took, a cancelled one as a
            // no-op run; a paused one runs, and counts, when resumed.
            if header.is_cancelled() {
                tally.completed += 1;
            }
            drop_quietly(task);
        }
    }
    tally.unreported = false;
}

/// What the worker does with a task it took.
enum Claim {
    /// It is `RUNNING` now: run it.
    Run,
    /// It may not run (shut down) and is `CANCELLED` now: complete it
    /// outside the lock.
    Cancel,
    /// Nothing more: re-armed (an idle timer, a calendar task not yet due
    /// by the wall clock) or already cancelled/paused
    /// while queued.
    Done,
}

/// Decides, under the lock, what to do with a task just taken from the
/// queue.
fn claim(shared: &Shared, state: &mut State, task: &TaskPtr, now: Nanos) -> Claim {
    let header = task.header();
    if state.run_state != RunState::Running && !shared.can_run(state.run_state, header, now) {
        // Java: a periodic task taken after shutdown cancels itself instead
        // of running. Counted as a run, like Java's.
        state.completed += 1;
        shared.note_maybe_idle(state);
        return if header.try_cancel() {
            state.count_cancelled(1);
            Claim::Cancel
        } else {
            Claim::Done
        };
    }
    if let Some(due) = task.rearm(&shared.clock, now) {
        // An idle timer touched since it was armed, or a calendar task the
        // wall clock says is not due: not a run, just a new deadline (it
        // stays SCHEDULED, so it goes straight back).
        header.set_deadline(due);
        if state.queue.push(task.clone(), 0) {
            state.leader.clear(); // this worker waits next: self-handoff
        }
        shared.note_maybe_idle(state);
        return Claim::Done;
    }
    if header.try_start() {
        Claim::Run
    } else {
        // Cancelled while queued but kept (remove_on_cancel = false): a
        // no-op run, counted as completed like Java's.
        state.completed += 1;
        shared.note_maybe_idle(state);
        Claim::Done
    }
}

/// Runs a task the worker claimed (it is `RUNNING`); returns what to fold
/// in afterwards.
///
/// The body runs inside its own `catch_unwind` (in the task); what runs
/// around it is contained here: a tracing subscriber or a metrics recorder
/// (user code) that panics must not leave the task `RUNNING` for ever, its
/// handle waiting. Such a task is completed as cancelled, unless its run
/// already completed it, and the worker goes on.
fn run_one(shared: &Shared, task: TaskPtr, now: Nanos) -> Finished {
    let again = match catch_unwind(AssertUnwindSafe(|| run_around(shared, &task, now))) {
        Ok(again) => again,
        Err(payload) => {
            if task.header().try_cancel() {
                task.cancelled();
            }
            drop_quietly(payload);
            false
        }
    };
    if again {
        Finished {
            again: Some(task),
            started: now,
        }
    } else {
        // Perhaps the last reference (the handle is gone): dropping it drops
        // a stored result whose `Drop` may panic. Contained, so the worker
        // survives.
        drop_quietly(task);
        Finished {
            again: None,
            started: now,
        }
    }
}

/// The run itself, with its bookkeeping: lateness, span, hooks, metrics,
/// the panic report. True if a periodic task is to be requeued.
fn run_around(shared: &Shared, task: &TaskPtr, now: Nanos) -> bool {
    let header = task.header();
    let info = RunInfo::new(
        header.seq(),
        header.kind().name(),
        header.deadline(),
        now,
        task.runs() + 1,
    );
    shared.record_lateness(header.seq(), info.lateness_nanos(), now);
    let span = tracing::info_span!(
        target: "schedpool::task",
        "task",
        id = header.seq(),
        kind = header.kind().name(),
        lateness_us = info.lateness_nanos() / 1_000,
    );
    let _entered = span.enter();
    let hooks = &shared.config.hooks;
    hooks.before(&info);
    let ran = {
        let _current = CurrentRun::enter(info);
        let watched = task.ref_count() > 1;
        task.run(&shared.clock, now, watched)
    };
    #[cfg(feature = "metrics")]
    shared.metrics.record_run(
        info.lateness_nanos(),
        shared.clock.now().saturating_sub(now),
    );
    hooks.after(&info, ran.panic.as_ref().map(|p| p.message.as_str()));
    if let Some(caught) = ran.panic {
        shared.report_panic(header, caught);
    }
    ran.again
}
