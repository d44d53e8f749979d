//! [`ScheduledHandle`] (Java's `ScheduledFuture`) and [`PendingTask`] (what
//! `shutdown_now` hands back).
//!
//! # Invariants
//!
//! - A handle never keeps the pool *open* (it holds the shared core, not a
//!   pool clone), and dropping it does not cancel the task (Java semantics).
//! - `cancel` returns true only for the call whose compare-and-swap moved
//!   the task to `CANCELLED`; that call removes the task from the heap
//!   (with `remove_on_cancel`, the default) and completes the handle.
//! - A `PendingTask` always completes its handle: by running, or, when
//!   dropped unrun, as cancelled. No `join` can hang on a task that will
//!   never run.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use crate::error::TaskError;
use crate::shared::{data_ptr, Shared};
use crate::task::{Job, Ran, TaskRef};

/// The handle of a scheduled task (Java's `ScheduledFuture`): cancel it,
/// ask about it, wait for it, or `.await` it.
///
/// `Send + Sync`; dropping it does not cancel the task. A periodic task's
/// handle completes only when the task is cancelled, panics, or is dropped
/// by a shutdown.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedpool::ScheduledThreadPool;
///
/// let pool = ScheduledThreadPool::new(1);
/// let h = pool.schedule(|| 6 * 7, Duration::from_millis(5))?;
/// assert!(h.delay() <= Duration::from_millis(5));
/// assert_eq!(h.join()?, 42);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// Async code awaits it without blocking a thread:
///
/// ```
/// # use std::time::Duration;
/// # use schedpool::ScheduledThreadPool;
/// # let pool = ScheduledThreadPool::new(1);
/// async fn later(pool: &ScheduledThreadPool) -> u32 {
///     pool.schedule(|| 7, Duration::from_millis(1)).unwrap().await.unwrap()
/// }
/// # let _ = later(&pool);
/// ```
pub struct ScheduledHandle<T> {
    task: Arc<dyn TaskRef<T>>,
    pool: Arc<Shared>,
}

impl<T> ScheduledHandle<T> {
    pub(crate) fn new(task: Arc<dyn TaskRef<T>>, pool: Arc<Shared>) -> Self {
        ScheduledHandle { task, pool }
    }

    /// Cancels the task. Returns true only if this call cancelled it: false
    /// if it had already completed, panicked or been cancelled.
    ///
    /// A queued task leaves the queue at once, in O(log n), and its closure
    /// is dropped (unless the pool was built with `remove_on_cancel(false)`,
    /// Java's default, which leaves it queued until its deadline). A running
    /// task finishes its current run, but its handle reports cancelled at
    /// once and a periodic task runs no more.
    pub fn cancel(&self) -> bool {
        let header = self.task.header();
        if !header.try_cancel() {
            return false;
        }
        let removed = self.pool.remove_cancelled(header, data_ptr(&self.task));
        self.task.cancelled();
        drop(removed);
        true
    }

    /// True if the task was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.task.header().is_cancelled()
    }

    /// True once the task completed, panicked or was cancelled.
    pub fn is_done(&self) -> bool {
        self.task.header().is_done()
    }

    /// Time left until the task is (next) due, by the pool's clock;
    /// `Duration::ZERO` when due or done.
    pub fn delay(&self) -> Duration {
        let header = self.task.header();
        if header.is_done() {
            return Duration::ZERO;
        }
        Duration::from_nanos(header.deadline().saturating_sub(self.pool.clock.now()))
    }

    /// The task's id: its submission sequence number, also the `id` field of
    /// its `task` tracing span.
    pub fn id(&self) -> u64 {
        self.task.header().seq
    }

    /// Blocks up to `timeout` (real time); true once the task is done
    /// (completed, panicked or cancelled). Consumes nothing.
    pub fn wait_timeout(&self, timeout: Duration) -> bool {
        self.task.completion().wait_timeout(timeout)
    }

    /// Blocks until the task is done and returns its result.
    ///
    /// # Errors
    ///
    /// [`TaskError::Cancelled`] if it was cancelled (at once, even if its
    /// body is still running), [`TaskError::Panicked`] if it panicked.
    ///
    /// # Panics
    ///
    /// If the result was already taken by awaiting the handle.
    #[track_caller]
    pub fn join(self) -> Result<T, TaskError> {
        self.task.completion().join()
    }
}

/// Polling after the handle returned `Ready` panics, like most futures.
impl<T> Future for ScheduledHandle<T> {
    type Output = Result<T, TaskError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.task.completion().poll(cx)
    }
}

impl<T> fmt::Debug for ScheduledHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header = self.task.header();
        f.debug_struct("ScheduledHandle")
            .field("id", &header.seq)
            .field("kind", &header.schedule.kind())
            .field("done", &header.is_done())
            .field("cancelled", &header.is_cancelled())
            .finish()
    }
}

/// A task that [`shutdown_now`](crate::ScheduledThreadPool::shutdown_now)
/// took out of the queue before it started.
///
/// [`run`](PendingTask::run) it on the current thread, or drop it: its handle
/// then completes with [`TaskError::Cancelled`]. Either way nobody waiting
/// on the handle hangs.
pub struct PendingTask {
    task: Arc<dyn Job>,
    clock: crate::clock::Clock,
}

impl PendingTask {
    pub(crate) fn new(task: Arc<dyn Job>, clock: crate::clock::Clock) -> Self {
        PendingTask { task, clock }
    }

    /// Runs the task once on the calling thread; a panic in it is caught and
    /// reported to its handle. A periodic task runs once and is then
    /// complete as cancelled (its pool is stopped).
    pub fn run(self) {
        let header = self.task.header();
        if header.try_start() {
            if let Ran::Panicked(message) = self.task.run(&self.clock) {
                tracing::error!(target: "schedpool::task", id = header.seq, panic = %message, "task panicked");
            }
        }
        // Drop completes a periodic task (back to SCHEDULED) as cancelled.
    }

    /// The task's id (as [`ScheduledHandle::id`]).
    pub fn id(&self) -> u64 {
        self.task.header().seq
    }

    /// True for a fixed-rate or fixed-delay task.
    pub fn is_periodic(&self) -> bool {
        self.task.header().schedule.is_periodic()
    }
}

impl Drop for PendingTask {
    fn drop(&mut self) {
        if self.task.header().try_cancel() {
            self.task.cancelled();
        }
    }
}

impl fmt::Debug for PendingTask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header = self.task.header();
        f.debug_struct("PendingTask")
            .field("id", &header.seq)
            .field("kind", &header.schedule.kind())
            .finish()
    }
}
