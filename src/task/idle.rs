//! An idle timer's task: fires once something has been idle for a while, where every
//! activity ([`IdleTimer::touch`](crate::IdleTimer::touch)) pushes the deadline back without a heap
//! operation.
//!
//! # Invariants
//!
//! - `touch` only stores "last active" under the timer's own small lock; the
//!   heap entry keeps its old deadline. When that deadline comes up, the
//!   worker asks the timer ([`Job::rearm`]): if it was touched since, it is
//!   requeued at `last active + timeout` without running (one heap operation
//!   per *period of idleness*, not per touch; no hooks, span or run count);
//!   otherwise it fires.
//! - "Fire or re-arm" and `touch` are decided under the same lock, so a
//!   touch either lands before the decision (and the timer re-arms) or
//!   returns false (the timer had already fired).

use crate::base::clock::{Clock, Nanos};
use crate::base::sync::Mutex;
use crate::task::completion::give_cell;
use crate::task::header::{Header, Job, Ran};
use crate::task::once::OnceTask;
use crate::task::ptr::TaskPtr;

struct Activity {
    last_active: Nanos,
    fired: bool,
}

/// The task behind an [`IdleTimer`](crate::IdleTimer). `repr(C)`: the one-shot, and so its
/// header, comes first (see [`crate::task::ptr`]).
#[repr(C)]
pub(crate) struct IdleTask<T, F> {
    once: OnceTask<T, F>,
    timeout: Nanos,
    activity: Mutex<Activity>,
}

impl<T, F> Job for IdleTask<T, F>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    fn header(&self) -> &Header {
        self.once.header()
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn result_cell(&self, out: &mut dyn std::any::Any) {
        give_cell(out, || self.once.cell());
    }

    fn rearm(&self, _clock: &Clock, now: Nanos) -> Option<Nanos> {
        let mut activity = self.activity.lock();
        if activity.fired {
            return None;
        }
        let due = activity.last_active.saturating_add(self.timeout);
        if due > now {
            // Touched since this deadline was set: re-arm, lazily.
            return Some(due);
        }
        activity.fired = true;
        None
    }

    fn run(&self, _clock: &Clock, _now: Nanos, watched: bool) -> Ran {
        // `rearm` decided, under the activity lock, that the timer fires.
        self.once.run_body(watched)
    }

    fn cancelled(&self) {
        self.activity.lock().fired = true;
        self.once.cancel_body();
    }
}

/// Records activity on the idle task `task`, a `IdleTask<T, F>` (the
/// timer's way to it, its type being erased in the `TaskPtr`).
pub(crate) fn touch<T, F>(task: &TaskPtr, now: Nanos) -> bool
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    task.as_any()
        .downcast_ref::<IdleTask<T, F>>()
        .expect("an idle timer's task is its IdleTask")
        .touch(now)
}

impl<T, F> IdleTask<T, F> {
    /// The task of a timer for `timeout`, last active at `now`.
    pub(crate) fn new(once: OnceTask<T, F>, timeout: Nanos, now: Nanos) -> Self {
        IdleTask {
            once,
            timeout,
            activity: Mutex::new(Activity {
                last_active: now,
                fired: false,
            }),
        }
    }

    fn touch(&self, now: Nanos) -> bool {
        let mut activity = self.activity.lock();
        if activity.fired {
            return false;
        }
        activity.last_active = activity.last_active.max(now);
        true
    }
}
