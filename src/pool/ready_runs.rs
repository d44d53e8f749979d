//! The run accounting of the ready batch ([`crate::queue::ready`]): which
//! tasks workers took from it without the pool lock, and which runs are
//! still going, so that `wait_idle` and `active_count` stay exact.
//!
//! The batch is the queue's; these counters are the pool's. They are the
//! batch's *ledger* ([`Runs`]): they live under the batch's lock, because a
//! take must change them in the same critical section as it empties the
//! batch's slot, or `wait_idle` could see the batch empty and the task not
//! yet taken.
//!
//! # Invariants
//!
//! - A task [`Ready::take`] handed out is *taken*, as one a worker popped
//!   under the pool lock is: it runs if its `try_start` wins (a cancel or a
//!   pause in between wins instead, and the worker drops it). Until that
//!   worker folds its bookkeeping in under its next pool lock
//!   ([`Ready::fold`]), it counts in [`Ready::taken`], so `wait_idle` still
//!   waits for it.
//! - `active_count` counts runs, not bookkeeping: the ledger also keeps
//!   `running` (tasks taken from the batch whose worker has not come back
//!   for the next one) and `lock_runs_ended` (a run taken under the pool
//!   lock that ended before its worker went on to the batch; it stays in
//!   the pool's `active` until folded). Each worker reports the end of its
//!   previous run in its next [`Ready::take`], under the batch's lock, so
//!   `active + running - lock_runs_ended`, read under both locks
//!   ([`Ready::running`]), is the number of bodies running (or about to).

use crate::task::ptr::TaskPtr;

/// The ready batch with the pool's run accounting as its ledger: the
/// batch the pool's `Shared` and its work queue share.
pub(crate) type Ready = crate::queue::ready::Ready<Runs>;

/// The counters kept under the batch's lock (see the module docs).
#[derive(Default)]
pub(crate) struct Runs {
    /// Tasks handed out by [`Ready::take`] and not yet folded in.
    taken: usize,
    /// Tasks handed out whose worker has not reported their end.
    running: usize,
    /// Runs taken under the pool lock, ended, not yet folded in.
    lock_runs_ended: usize,
}

impl Runs {
    fn report(&mut self, previous: Previous) {
        match previous {
            Previous::Nothing => {}
            Previous::LockRun => self.lock_runs_ended += 1,
            Previous::ReadyRun => self.running -= 1,
        }
    }
}

/// What the worker calling [`Ready::take`] ran before.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Previous {
    /// Nothing it has not reported.
    Nothing,
    /// A one-shot run taken under the pool lock (still in `active`).
    LockRun,
    /// A task from this batch.
    ReadyRun,
}

/// The accounting side of the batch (an impl block of its own file, beside
/// the counters it keeps).
impl Ready {
    /// A worker's take, without the pool lock: the first task, now taken
    /// and running. Reports the end of the worker's `previous` run.
    #[inline]
    pub(crate) fn take(&self, previous: Previous) -> Option<TaskPtr> {
        self.take_with(|runs, took| {
            runs.report(previous);
            if took {
                runs.taken += 1;
                runs.running += 1;
            }
        })
    }

    /// Reports the end of a worker's `previous` run without taking another
    /// (a worker unwinding out of a run).
    pub(crate) fn report(&self, previous: Previous) {
        self.ledger(|runs| runs.report(previous));
    }

    /// Folds in `n` tasks a worker took with [`take`](Self::take) and has
    /// finished with (run, cancelled or dropped), and whether it reported a
    /// run taken under the pool lock as ended. Under the pool lock, with
    /// that run's own fold.
    pub(crate) fn fold(&self, n: usize, lock_run: bool) {
        self.ledger(|runs| {
            runs.taken -= n;
            runs.lock_runs_ended -= usize::from(lock_run);
        });
    }

    /// Tasks taken without the pool lock and not yet folded in.
    pub(crate) fn taken(&self) -> usize {
        self.ledger(|runs| runs.taken)
    }

    /// Under the pool lock: task bodies running, given the pool's `active`
    /// (see the invariants).
    pub(crate) fn running(&self, active: usize) -> usize {
        self.ledger(|runs| active + runs.running - runs.lock_runs_ended)
    }
}
