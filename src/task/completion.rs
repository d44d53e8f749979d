//! The result cell of one task: what a [`ScheduledHandle`](crate::ScheduledHandle)
//! waits on, blocking or async.
//!
//! # Invariants
//!
//! - The outcome is set at most once; the first `complete` wins, later ones
//!   return false (a cancel beats a result that arrives after it).
//! - Completing wakes the stored waker (outside the lock) and every blocked
//!   waiter: this is a latch, so it uses `notify_all`.
//! - The registered waker is replaced under the same lock that `complete`
//!   takes, so a completion racing a `poll` always wakes the last waker
//!   stored or is seen by that `poll` (see the loom model).
//! - A cancelled task's outcome is `Err(Cancelled)` whether or not the cell
//!   says so: a cancel completes the cell only if someone marked the task
//!   as waited ([`Header::mark_waited`]), so the common cancel (nobody
//!   waiting) never touches this cell's cache line. Every reader marks the
//!   task under this lock before it blocks or stores a waker, and treats
//!   "pending and cancelled" as `Err(Cancelled)`.

use std::task::{Context, Poll, Waker};
use std::time::Duration;

use std::any::Any;
use std::sync::Arc;

use crate::base::error::TaskError;
use crate::base::sync::{wait_for, Condvar, Mutex};
use crate::task::header::Header;

enum Outcome<T> {
    Pending(Option<Waker>),
    Ready(Result<T, TaskError>),
    Taken,
}

/// A task's result cell.
pub(crate) struct Completion<T> {
    outcome: Mutex<Outcome<T>>,
    done: Condvar,
}

impl<T> Completion<T> {
    pub(crate) fn new() -> Self {
        Completion {
            outcome: Mutex::new(Outcome::Pending(None)),
            done: Condvar::new(),
        }
    }

    /// Sets the result unless one is set already; true if this call set it.
    pub(crate) fn complete(&self, result: Result<T, TaskError>) -> bool {
        let waker = {
            let mut outcome = self.outcome.lock();
            match &mut *outcome {
                Outcome::Pending(waker) => {
                    let waker = waker.take();
                    *outcome = Outcome::Ready(result);
                    waker
                }
                Outcome::Ready(_) | Outcome::Taken => return false,
            }
        };
        self.done.notify_all();
        if let Some(waker) = waker {
            waker.wake();
        }
        true
    }

    /// The failure's message, if the task completed with a panic or an
    /// `Err` failure.
    pub(crate) fn panic_message(&self) -> Option<String> {
        match &*self.outcome.lock() {
            Outcome::Ready(Err(e)) => e.failure_message().map(str::to_owned),
            _ => None,
        }
    }

    /// Blocks up to `timeout` (real time) for a result; true once there is
    /// one. `header` is the task's (see the module invariants).
    pub(crate) fn wait_timeout(&self, header: &Header, timeout: Duration) -> bool {
        let mut outcome = self.outcome.lock();
        if matches!(*outcome, Outcome::Pending(_)) && header.mark_waited() {
            return true; // cancelled: the outcome is Err(Cancelled)
        }
        wait_for(&self.done, &mut outcome, timeout, |o| {
            !matches!(o, Outcome::Pending(_))
        })
    }

    /// Blocks until the result is set, then takes it.
    ///
    /// # Panics
    ///
    /// If the result was already taken by polling the handle as a future.
    #[track_caller]
    pub(crate) fn join(&self, header: &Header) -> Result<T, TaskError> {
        let mut outcome = self.outcome.lock();
        if matches!(*outcome, Outcome::Pending(_)) && header.mark_waited() {
            *outcome = Outcome::Taken;
            return Err(TaskError::Cancelled);
        }
        loop {
            match std::mem::replace(&mut *outcome, Outcome::Taken) {
                Outcome::Ready(result) => return result,
                Outcome::Taken => {
                    panic!("the task's result was already taken by awaiting its handle")
                }
                pending @ Outcome::Pending(_) => {
                    *outcome = pending;
                    self.done.wait(&mut outcome);
                }
            }
        }
    }

    /// The `Future` side: takes the result, or stores the waker.
    ///
    /// # Panics
    ///
    /// If polled again after it returned `Ready`.
    #[track_caller]
    pub(crate) fn poll(&self, header: &Header, cx: &mut Context<'_>) -> Poll<Result<T, TaskError>> {
        let mut outcome = self.outcome.lock();
        match &mut *outcome {
            Outcome::Pending(_) if header.mark_waited() => {
                *outcome = Outcome::Taken;
                Poll::Ready(Err(TaskError::Cancelled))
            }
            Outcome::Pending(waker) => {
                match waker {
                    Some(w) if w.will_wake(cx.waker()) => {}
                    _ => *waker = Some(cx.waker().clone()),
                }
                Poll::Pending
            }
            Outcome::Ready(_) => match std::mem::replace(&mut *outcome, Outcome::Taken) {
                Outcome::Ready(result) => Poll::Ready(result),
                _ => unreachable!("checked Ready above"),
            },
            Outcome::Taken => panic!("a ScheduledHandle was polled after it completed"),
        }
    }
}

/// Gives `out`, an `Option<Arc<Completion<T>>>` of the task's own `T`, the
/// task's result cell (see [`Job::result_cell`](crate::task::header::Job::result_cell)); leaves any other type
/// alone.
pub(super) fn give_cell<T: 'static>(out: &mut dyn Any, cell: impl FnOnce() -> Arc<Completion<T>>) {
    if let Some(out) = out.downcast_mut::<Option<Arc<Completion<T>>>>() {
        *out = Some(cell());
    }
}
