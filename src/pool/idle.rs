//! Idle timers: fire once something has been idle for a while, where every
//! activity ([`IdleTimer::touch`]) pushes the deadline back without a heap
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

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::clock::{delay_nanos, Clock, Nanos};
use crate::error::Rejected;
use crate::handle::ScheduledHandle;
use crate::once::OnceTask;
use crate::pool::ScheduledThreadPool;
use crate::sync::Mutex;
use crate::task::{give_cell, Header, Job, Kind, Ran};
use crate::task_ptr::TaskPtr;

struct Activity {
    last_active: Nanos,
    fired: bool,
}

/// The task behind an [`IdleTimer`]. `repr(C)`: the one-shot, and so its
/// header, comes first (see `crate::task_ptr`).
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

    fn rearm(&self, now: Nanos) -> Option<Nanos> {
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
fn touch<T, F>(task: &TaskPtr, now: Nanos) -> bool
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
    fn touch(&self, now: Nanos) -> bool {
        let mut activity = self.activity.lock();
        if activity.fired {
            return false;
        }
        activity.last_active = activity.last_active.max(now);
        true
    }
}

/// A timer that fires once its subject has been idle for `timeout`: the
/// seeds' "close connections idle past a limit". Made by
/// [`ScheduledThreadPool::idle_timer`].
///
/// Every [`touch`](IdleTimer::touch) (a request on the connection, say)
/// pushes the deadline back to `timeout` from now. A touch costs a clock
/// read and an uncontended lock, never a heap operation. The timer re-arms
/// lazily when its old deadline comes up.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedpool::{ManualClock, ScheduledThreadPool};
///
/// let clock = ManualClock::new();
/// let pool = ScheduledThreadPool::builder().core_threads(1).clock(clock.clone()).build()?;
/// let timer = pool.idle_timer(Duration::from_secs(60), || "closed")?;
/// clock.advance(Duration::from_secs(50));
/// assert!(timer.touch()); // activity: idle again from now
/// clock.advance(Duration::from_secs(50));
/// assert!(pool.wait_idle(Duration::from_secs(5)));
/// assert!(!timer.handle().is_done(), "only 50 s idle");
/// clock.advance(Duration::from_secs(10));
/// assert_eq!(timer.into_handle().join()?, "closed");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct IdleTimer<T> {
    /// The task's touch, for its erased type (the handle has the task).
    touch: fn(&TaskPtr, Nanos) -> bool,
    handle: ScheduledHandle<T>,
}

impl<T: 'static> IdleTimer<T> {
    /// Records activity: the timer now fires `timeout` after this moment.
    /// Returns false if the timer has already fired or was cancelled.
    pub fn touch(&self) -> bool {
        let (task, pool) = self.handle.task_and_pool();
        (self.touch)(task, pool.clock.now())
    }

    /// The timer's handle: cancel it, wait for it, await it.
    pub fn handle(&self) -> &ScheduledHandle<T> {
        &self.handle
    }

    /// The handle, consuming the timer (no more touches).
    pub fn into_handle(self) -> ScheduledHandle<T> {
        self.handle
    }

    /// Cancels the timer (see [`ScheduledHandle::cancel`]).
    pub fn cancel(&self) -> bool {
        self.handle.cancel()
    }
}

impl<T: 'static> fmt::Debug for IdleTimer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IdleTimer")
            .field("handle", &self.handle)
            .finish()
    }
}

impl ScheduledThreadPool {
    /// A timer that runs `task` once nothing has called
    /// [`IdleTimer::touch`] for `timeout`.
    ///
    /// # Errors
    ///
    /// [`Rejected`] if `timeout` is zero, or once shutdown has begun.
    pub fn idle_timer<F, T>(&self, timeout: Duration, task: F) -> Result<IdleTimer<T>, Rejected>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        if timeout.is_zero() {
            return Err(Rejected::invalid("idle timeout must be greater than zero"));
        }
        let shared = self.shared();
        let now = shared.clock.now();
        let timeout = delay_nanos(timeout);
        let header = Header::new(shared.next_seq(), now.saturating_add(timeout), Kind::Idle);
        let task = TaskPtr::new(IdleTask {
            once: OnceTask::new(header, task),
            timeout,
            activity: Mutex::new(Activity {
                last_active: now,
                fired: false,
            }),
        });
        shared.enqueue(task.clone(), now)?;
        Ok(IdleTimer {
            touch: touch::<T, F>,
            handle: ScheduledHandle::new(task, Arc::clone(shared)),
        })
    }
}
