//! [`AsyncHandle`] (feature `tokio`): the handle of a task whose body is a
//! future factory. It is a [`ScheduledHandle<()>`] (it derefs to one, for
//! every query and control) plus [`abort`](AsyncHandle::abort), and its
//! [`join`](AsyncHandle::join) and `.await` give the future's output.
//!
//! # Invariants
//!
//! - A one-shot run stores its future's output in `output` before its body
//!   returns, so before the inner handle completes: a handle that sees
//!   `Ok(())` finds the output there (a periodic task's `()` is stored at
//!   start). The output is taken once, by `join` or by the `.await` that
//!   returns `Ready`.
//! - `abort` marks the task's [`Flight`] before it cancels the task, so a
//!   run that starts after it never spawns its future, and one that spawned
//!   it before is found and aborted.

use std::fmt;
use std::future::Future;
use std::ops::Deref;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use crate::base::error::TaskError;
use crate::base::sync::Mutex;
use crate::pool::handle::ScheduledHandle;
use crate::task::async_body::Flight;

/// A future's output, from its run to its handle.
pub(crate) type Output<T> = Arc<Mutex<Option<T>>>;

/// The handle of an async task: from
/// [`ScheduledThreadPool::schedule_async`](crate::ScheduledThreadPool::schedule_async),
/// [`Periodic::start_async`](crate::Periodic::start_async) or
/// [`OnCalendar::start_async`](crate::OnCalendar::start_async).
///
/// It derefs to the task's [`ScheduledHandle<()>`], so every query and
/// control is there: `cancel`, `is_done`, `delay`, `wait_timeout`,
/// `run_count`, `pause`, `resume`, `trigger`, `set_period`, ... What it adds:
///
/// - [`join`](Self::join) and `.await` give the future's output (a one-shot
///   task's `T`; `()` for a periodic one).
/// - [`abort`](Self::abort) cancels the task *and* stops a future that has
///   started, at its next `.await`.
///
/// `cancel()` is Java's `cancel(false)`: a run that has not started never
/// does, but a future that has started runs to its end (its output is
/// dropped; the handle says [`TaskError::Cancelled`] at once). Use `abort`
/// to stop it too.
///
/// Dropping the handle detaches the task (it still runs), as a
/// `ScheduledHandle`'s does.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedpool::ScheduledThreadPool;
///
/// let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build()?;
/// runtime.block_on(async {
///     let pool = ScheduledThreadPool::new(1);
///     let h = pool.schedule_async(|| async { 6 * 7 }, Duration::from_millis(5))?;
///     assert!(!h.is_done()); // a ScheduledHandle's query, through Deref
///     assert_eq!(h.await?, 42);
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "dropping an AsyncHandle detaches the task (it still runs); keep it to cancel, abort or join"]
pub struct AsyncHandle<T> {
    handle: ScheduledHandle<()>,
    flight: Arc<Flight>,
    output: Output<T>,
}

impl<T: 'static> AsyncHandle<T> {
    pub(crate) fn new(handle: ScheduledHandle<()>, flight: Arc<Flight>, output: Output<T>) -> Self {
        AsyncHandle {
            handle,
            flight,
            output,
        }
    }

    /// Cancels the task and stops its future if one is running: the future
    /// is dropped at its next `.await` (a future never yields inside
    /// synchronous code, so a CPU-bound stretch without an `.await` runs
    /// to its end). No later run starts. Returns true if this call
    /// cancelled the task or stopped a running future; false if the task
    /// had already finished (or been aborted).
    ///
    /// After an abort, the handle resolves to [`TaskError::Cancelled`]; the
    /// worker the run held is free once the runtime has dropped the
    /// future.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::{ScheduledThreadPool, TaskError};
    ///
    /// let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build()?;
    /// let pool = ScheduledThreadPool::new(1);
    /// let (started, has_started) = tokio::sync::oneshot::channel::<()>();
    /// let h = pool.schedule_async_on(runtime.handle(), move || async move {
    ///     let _ = started.send(());
    ///     tokio::time::sleep(Duration::from_secs(3600)).await; // stopped here
    ///     "never"
    /// }, Duration::ZERO)?;
    /// runtime.block_on(async {
    ///     has_started.await.unwrap();
    ///     assert!(h.abort(), "stopped the running future");
    ///     assert_eq!(h.await, Err(TaskError::Cancelled));
    /// });
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn abort(&self) -> bool {
        let running = self.flight.abort();
        let cancelled = self.handle.cancel();
        let stopped = running.is_some_and(|future| {
            let live = !future.is_finished();
            future.abort();
            live
        });
        cancelled || stopped
    }

    /// Blocks until the task is done and returns the future's output (a
    /// periodic task's `()` once it ends normally). Don't call it on a
    /// runtime thread: `.await` the handle there.
    ///
    /// # Errors
    ///
    /// [`TaskError::Cancelled`] if it was cancelled or aborted,
    /// [`TaskError::Panicked`] if the future (or the factory) panicked,
    /// [`TaskError::Failed`] if a periodic run's `Err` stopped it, or the
    /// runtime shut down under a periodic run.
    ///
    /// # Panics
    ///
    /// If the result was already taken by awaiting the handle.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// // A runtime driven by a thread of its own (or any multi-thread runtime).
    /// let runtime = tokio::runtime::Builder::new_current_thread().build()?;
    /// let handle = runtime.handle().clone();
    /// std::thread::spawn(move || runtime.block_on(std::future::pending::<()>()));
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// let h = pool.schedule_async_on(&handle, || async { "sent" }, Duration::from_millis(1))?;
    /// assert_eq!(h.join()?, "sent");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[track_caller]
    pub fn join(self) -> Result<T, TaskError> {
        let AsyncHandle { handle, output, .. } = self;
        handle.join().and_then(|()| take(&output))
    }

    /// The task's [`ScheduledHandle`], for what takes one by value
    /// ([`cancel_on_drop`](ScheduledHandle::cancel_on_drop),
    /// [`detach`](ScheduledHandle::detach)). Its `join` gives `()`, not the
    /// future's output, and it has no `abort`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let runtime = tokio::runtime::Builder::new_current_thread().build()?;
    /// let pool = ScheduledThreadPool::new(1);
    /// let h = pool.schedule_async_on(runtime.handle(), || async {}, Duration::from_secs(60))?;
    /// let guard = h.into_handle().cancel_on_drop();
    /// drop(guard); // cancels it
    /// assert_eq!(pool.queue_len(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn into_handle(self) -> ScheduledHandle<()> {
        self.handle
    }
}

/// The output a completed run stored.
fn take<T>(output: &Output<T>) -> Result<T, TaskError> {
    // Only a cancel can leave it empty, and a cancelled handle never
    // completes with Ok: say Cancelled rather than panic.
    output.lock().take().ok_or(TaskError::Cancelled)
}

impl<T> Deref for AsyncHandle<T> {
    type Target = ScheduledHandle<()>;

    fn deref(&self) -> &ScheduledHandle<()> {
        &self.handle
    }
}

/// Polling after the handle returned `Ready` panics, as a
/// `ScheduledHandle`'s does.
impl<T: 'static> Future for AsyncHandle<T> {
    type Output = Result<T, TaskError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match Pin::new(&mut self.handle).poll(cx) {
            Poll::Ready(result) => Poll::Ready(result.and_then(|()| take(&self.output))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<T> fmt::Debug for AsyncHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AsyncHandle")
            .field("handle", &self.handle)
            .field("aborted", &self.flight.is_aborted())
            .finish()
    }
}
