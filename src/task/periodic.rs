//! A periodic task's body and its next-run arithmetic: [`Cadence`] (the
//! period or calendar plan, options, grid point and counters) and
//! [`PeriodicTask`], which runs fixed-rate, fixed-delay and calendar tasks
//! alike.
//!
//! # Invariants
//!
//! - `nominal` is the grid point of the next run, without jitter; the
//!   header's deadline is `nominal + jitter`. Fixed-rate grids advance from
//!   `nominal`, so jitter never accumulates.
//! - Only the runner (the thread that won `SCHEDULED -> RUNNING`) or a
//!   holder of the pool lock while the task is out of the heap (pause,
//!   resume, reschedule) writes `nominal` and the deadline.
//! - A run leaves the task `RUNNING`; the worker applies the computed next
//!   run (`pending`) in [`Job::end_run`] under the pool lock, right before
//!   the push.
//! - A run that ends the task (limit reached, `Next::Stop`, `until` passed,
//!   a calendar schedule with no fire left, a failure (panic or `Err`)
//!   under [`OnFailure::Stop`]) completes the handle with `Ok(())` or the
//!   failure; never both.
//! - A calendar task is popped only to run when the wall clock has reached
//!   its target ([`Job::rearm`] asks its plan); a trigger releases that
//!   condition.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use crate::base::clock::{after, Clock, Nanos};
use crate::base::error::{drop_quietly, TaskError};
use crate::base::sync::{Mutex, Ordering};
use crate::task::cadence::Cadence;
use crate::task::calendar::Check;
use crate::task::completion::give_cell;
use crate::task::completion::Completion;
use crate::task::header::{Caught, EndOfRun, Header, Job, Ran};
use crate::task::policy::{Next, OnFailure, RunOutcome};

/// A fixed-rate or fixed-delay task.
#[repr(C)]
pub(crate) struct PeriodicTask<F> {
    header: Header,
    body: Mutex<Option<F>>,
    /// Shared with handles (periodic tasks are few: the cell is eager).
    completion: Arc<Completion<()>>,
    control: Cadence,
}

impl<F> PeriodicTask<F> {
    pub(crate) fn new(header: Header, body: F, control: Cadence) -> Self {
        PeriodicTask {
            header,
            body: Mutex::new(Some(body)),
            completion: Arc::new(Completion::new()),
            control,
        }
    }
}

impl<F, R> Job for PeriodicTask<F>
where
    F: FnMut() -> R + Send + 'static,
    R: RunOutcome + 'static,
{
    fn header(&self) -> &Header {
        &self.header
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn result_cell(&self, out: &mut dyn std::any::Any) {
        give_cell(out, || Arc::clone(&self.completion));
    }

    fn cadence(&self) -> Option<&Cadence> {
        Some(&self.control)
    }

    fn runs(&self) -> u64 {
        self.control.runs()
    }

    fn run(&self, clock: &Clock, started: Nanos, _watched: bool) -> Ran {
        let c = &self.control;
        let body = self.body.lock().take();
        let Some(mut body) = body else {
            return Ran::DONE;
        };
        if c.plan().is_some_and(|plan| plan.take_exhausted()) {
            // Resumed with no fire left: it ends here, unrun.
            drop_quietly(body);
            if self.header.finish() {
                self.completion.complete(Ok(()));
            }
            return Ran::DONE;
        }
        // `into_next` is user code too (`RunOutcome` is a public trait): it
        // runs inside the same catch, and its panic counts as the run's; an `Err` it gives is a
        // failed run, as a panic is.
        let result = match catch_unwind(AssertUnwindSafe(|| body().into_next())) {
            Ok(Ok(next)) => Ok(next),
            Ok(Err(text)) => Err(Caught::failed(text)),
            Err(payload) => Err(Caught::new(payload)),
        };
        // The end of the run, read only when a policy needs it (fixed rate
        // with Burst, the default, never does).
        let ended = std::cell::OnceCell::new();
        let now = || *ended.get_or_init(|| clock.now());
        let runs = c.runs.fetch_add(1, Ordering::AcqRel) + 1;
        let (next, panic) = match result {
            Ok(next) => {
                c.consecutive_failures.store(0, Ordering::Release);
                match next {
                    Next::Continue => (c.next_run(self.header.kind(), clock, started, now), None),
                    Next::After(delay) => {
                        c.release_wall();
                        (Some(after(now(), delay)), None)
                    }
                    Next::Stop => (None, None),
                }
            }
            Err(caught) => {
                c.failures.fetch_add(1, Ordering::AcqRel);
                c.consecutive_failures.fetch_add(1, Ordering::AcqRel);
                *c.last_failure.lock() = Some(caught.message.clone());
                let next = match c.options.on_failure {
                    OnFailure::Stop => None,
                    OnFailure::Continue => c.next_run(self.header.kind(), clock, started, now),
                    OnFailure::Backoff { .. } => c.backoff(now()),
                };
                if next.is_none() && matches!(c.options.on_failure, OnFailure::Stop) {
                    drop_quietly(body);
                    if self.header.finish() {
                        self.completion.complete(Err(caught.task_error()));
                    }
                    return Ran {
                        again: false,
                        panic: Some(caught),
                    };
                }
                (next, Some(caught))
            }
        };
        let limit_reached = c.options.max_runs.is_some_and(|max| runs >= max);
        let past_until = |n: Nanos| c.options.until.is_some_and(|until| n > until);
        let next = next.filter(|&n| !limit_reached && !past_until(n));
        let Some(next) = next else {
            // The task is over, normally.
            drop_quietly(body);
            if self.header.finish() {
                self.completion.complete(Ok(()));
            }
            return Ran {
                again: false,
                panic,
            };
        };
        // Still RUNNING: the worker ends the run under the pool lock, with
        // the push (`end_run`), so the task is never SCHEDULED outside the
        // queue.
        c.pending.store(next, Ordering::Release);
        *self.body.lock() = Some(body);
        Ran { again: true, panic }
    }

    fn end_run(&self, now: Nanos) -> EndOfRun {
        let c = &self.control;
        let next = c.pending.load(Ordering::Acquire);
        let end = self.header.end_run(|triggered| {
            let deadline = c.schedule_at(next);
            if triggered {
                c.release_wall();
            }
            self.header
                .set_deadline(if triggered { now } else { deadline });
        });
        if end == EndOfRun::Paused {
            // Paused at the end of a run: resume continues from the next
            // grid point, not the one that just ran.
            c.nominal.store(next, Ordering::Release);
        }
        end
    }

    fn rearm(&self, clock: &Clock, now: Nanos) -> Option<Nanos> {
        let plan = self.control.plan()?;
        match plan.check(clock.wall_now(), now) {
            Check::Wait(due) => Some(due),
            Check::Run(due) => {
                if let Some(due) = due {
                    // Out of the queue, under the pool lock: the run's
                    // lateness is its lateness by the wall clock.
                    self.header.set_deadline(due);
                }
                None
            }
        }
    }

    fn cancelled(&self) {
        self.completion.complete(Err(TaskError::Cancelled));
        let body = self.body.lock().take();
        drop_quietly(body);
    }
}
