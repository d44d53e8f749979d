//! Async task bodies (feature `tokio`): [`ScheduledThreadPool::schedule_async`]
//! and `start_async` on the [`Periodic`] and [`OnCalendar`] builders. A layer
//! over the sync API: each async task is a sync task whose body runs one
//! future to its end ([`crate::task::async_body`]), so the pool keeps the
//! timing, the controls and the accounting exactly as for a sync body.
//!
//! # Invariants
//!
//! - The runtime is resolved when the task is submitted (the builder's
//!   handle, else the caller's current runtime), never on a pool thread:
//!   no runtime is a [`Rejected`] then, not a failure later.
//! - A run holds its pool worker until its future completes: fixed delay
//!   counts from the completion, fixed rate never overlaps, and
//!   `active_count`, `wait_idle` and `await_termination` see the run.
//! - A future's panic is resumed inside the pool's run (reported as a sync
//!   body's panic); a periodic future's `Err` is returned as the run's `Err`
//!   (a failure under [`OnFailure`](crate::OnFailure)).

use std::future::Future;
use std::panic::resume_unwind;
use std::sync::Arc;
use std::time::Duration;

use tokio::runtime::Handle;

use crate::base::error::Rejected;
use crate::base::sync::Mutex;
use crate::pool::async_handle::AsyncHandle;
use crate::pool::calendar::OnCalendar;
use crate::pool::executor::ScheduledThreadPool;
use crate::pool::handle::ScheduledHandle;
use crate::pool::periodic::Periodic;
use crate::task::async_body::{run_future, Flight, Outcome};
use crate::task::policy::RunResult;

/// The builder's runtime, else the caller's current one.
fn resolve(runtime: Option<Handle>) -> Result<Handle, Rejected> {
    match runtime {
        Some(runtime) => Ok(runtime),
        None => Handle::try_current().map_err(|_| {
            Rejected::invalid(
                "an async task needs a tokio runtime: submit it from inside one, or give one \
                 (schedule_async_on, or .runtime(handle) on the builder)",
            )
        }),
    }
}

/// A periodic or calendar task's sync body: one future per run, its output
/// the run's result.
fn periodic_body<F, Fut, R>(
    runtime: Handle,
    flight: Arc<Flight>,
    mut factory: F,
) -> impl FnMut() -> Result<(), String> + Send + 'static
where
    F: FnMut() -> Fut + Send + 'static,
    Fut: Future<Output = R> + Send + 'static,
    R: RunResult + Send + 'static,
{
    move || match run_future(&runtime, &flight, &mut factory) {
        Outcome::Done(result) => result.into_failure().map_or(Ok(()), Err),
        Outcome::Panicked(payload) => resume_unwind(payload),
        // Aborted: the handle already says Cancelled, and no run follows.
        Outcome::Aborted => Ok(()),
        Outcome::Lost(why) => Err(why.to_string()),
    }
}

/// Starts a periodic or calendar task with `start` and wraps its handle.
fn start_periodic<F, Fut, R>(
    runtime: Option<Handle>,
    factory: F,
    start: impl FnOnce(
        Box<dyn FnMut() -> Result<(), String> + Send>,
    ) -> Result<ScheduledHandle<()>, Rejected>,
) -> Result<AsyncHandle<()>, Rejected>
where
    F: FnMut() -> Fut + Send + 'static,
    Fut: Future<Output = R> + Send + 'static,
    R: RunResult + Send + 'static,
{
    let runtime = resolve(runtime)?;
    let flight = Arc::new(Flight::default());
    let body = periodic_body(runtime, Arc::clone(&flight), factory);
    let handle = start(Box::new(body))?;
    Ok(AsyncHandle::new(
        handle,
        flight,
        Arc::new(Mutex::new(Some(()))),
    ))
}

/// Async one-shot tasks (feature `tokio`).
impl ScheduledThreadPool {
    /// Runs the future `task` makes once `delay` has passed, on the caller's
    /// tokio runtime (the one current when this is called); the handle
    /// gives its output. The pool keeps the timing (never early; equal
    /// deadlines in submission order; a [`ManualClock`](crate::ManualClock)
    /// drives it) and the run, as for [`schedule`](Self::schedule): the
    /// factory is called at the deadline (inside the runtime's context),
    /// the future runs on the runtime, and the run, which holds one of the
    /// pool's workers, ends when the future completes. So `active_count`,
    /// `wait_idle` and `await_termination` count it, and the pool's core
    /// threads bound how many such futures run at once. No runtime thread
    /// ever blocks on the pool.
    ///
    /// A future that panics completes the handle with
    /// [`TaskError::Panicked`](crate::TaskError::Panicked), reported as a
    /// sync body's panic is; an `Err` it returns is its output, as for
    /// `schedule`. `cancel()` is Java's `cancel(false)`: a future that has
    /// started runs to its end; [`AsyncHandle::abort`] stops it at its next
    /// `.await`. If the runtime shuts down under a running future, the run
    /// is a panic with that message.
    ///
    /// # Errors
    ///
    /// [`Rejected`] when called outside a tokio runtime (use
    /// [`schedule_async_on`](Self::schedule_async_on)), or once shutdown
    /// has begun.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use schedpool::ScheduledThreadPool;
    ///
    /// async fn send_reminder(user: u64) -> Result<u64, String> { Ok(user) }
    ///
    /// let pool = ScheduledThreadPool::new(2);
    /// let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build()?;
    /// runtime.block_on(async {
    ///     let start = Instant::now();
    ///     let h = pool.schedule_async(|| async { send_reminder(7).await }, Duration::from_millis(20))?;
    ///     assert_eq!(h.await?, Ok(7));
    ///     assert!(start.elapsed() >= Duration::from_millis(20), "never early");
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })?;
    /// // Outside a runtime, with no handle given: a clear error.
    /// assert!(pool.schedule_async(|| async {}, Duration::ZERO).unwrap_err().is_invalid_argument());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn schedule_async<F, Fut>(
        &self,
        task: F,
        delay: Duration,
    ) -> Result<AsyncHandle<Fut::Output>, Rejected>
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future + Send + 'static,
        Fut::Output: Send + 'static,
    {
        self.schedule_async_with(resolve(None)?, task, delay)
    }

    /// [`schedule_async`](Self::schedule_async) with the future run on
    /// `runtime`: for a caller outside any runtime, or to keep the task's
    /// futures off the runtime that serves requests.
    ///
    /// # Errors
    ///
    /// [`Rejected`] once shutdown has begun.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build()?;
    /// let pool = ScheduledThreadPool::new(1);
    /// let h = pool.schedule_async_on(runtime.handle(), || async {
    ///     tokio::time::sleep(Duration::from_millis(1)).await;
    ///     "done"
    /// }, Duration::from_millis(5))?;
    /// // A current-thread runtime runs its futures while a thread drives it.
    /// assert_eq!(runtime.block_on(h)?, "done");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn schedule_async_on<F, Fut>(
        &self,
        runtime: &Handle,
        task: F,
        delay: Duration,
    ) -> Result<AsyncHandle<Fut::Output>, Rejected>
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future + Send + 'static,
        Fut::Output: Send + 'static,
    {
        self.schedule_async_with(runtime.clone(), task, delay)
    }

    fn schedule_async_with<F, Fut>(
        &self,
        runtime: Handle,
        task: F,
        delay: Duration,
    ) -> Result<AsyncHandle<Fut::Output>, Rejected>
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future + Send + 'static,
        Fut::Output: Send + 'static,
    {
        let flight = Arc::new(Flight::default());
        let output = Arc::new(Mutex::new(None));
        let (run_flight, run_output) = (Arc::clone(&flight), Arc::clone(&output));
        let body = move || match run_future(&runtime, &run_flight, task) {
            Outcome::Done(value) => *run_output.lock() = Some(value),
            Outcome::Panicked(payload) => resume_unwind(payload),
            Outcome::Aborted => {}
            Outcome::Lost(why) => resume_unwind(Box::new(why)),
        };
        let handle = self.schedule(body, delay)?;
        Ok(AsyncHandle::new(handle, flight, output))
    }
}

/// Async bodies (feature `tokio`).
impl Periodic<'_> {
    /// The tokio runtime that runs the task's futures (default: the
    /// caller's current runtime, when [`start_async`](Self::start_async)
    /// is called). Give one to start the task outside a runtime, or to
    /// keep its futures off the runtime that serves requests.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let background = tokio::runtime::Builder::new_current_thread().enable_time().build()?;
    /// let pool = ScheduledThreadPool::new(1);
    /// // Not inside any runtime here: without .runtime(..) this is Err(Rejected).
    /// assert!(pool.at_fixed_rate(Duration::from_secs(1)).start_async(|| async {}).is_err());
    /// let h = pool
    ///     .at_fixed_rate(Duration::from_secs(1))
    ///     .runtime(background.handle().clone())
    ///     .start_async(|| async { /* flush metrics */ })?;
    /// assert!(h.cancel());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn runtime(mut self, runtime: Handle) -> Self {
        self.runtime = Some(runtime);
        self
    }

    /// Starts the task with an async body: `body` makes one future per
    /// run, whose output is `()` or `Result<(), E>` (`E: Display`), as a
    /// [`start`](Self::start) body's. The pool keeps the timing and every
    /// control (pause, resume, trigger, `set_period`, limits, jitter,
    /// missed ticks, a [`ManualClock`](crate::ManualClock)); each future
    /// runs on the runtime, and its run ends when it completes: a fixed
    /// delay counts from the completion, and a fixed-rate task never
    /// overlaps itself (a run due while the previous future is still
    /// running waits for it; [`MissedTicks`](crate::MissedTicks) decides
    /// what follows). A run holds one of the pool's workers while its
    /// future runs; no runtime thread blocks.
    ///
    /// A future that returns `Err` or panics is a failed run, handled by
    /// the [`OnFailure`](crate::OnFailure) policy as a sync body's. A
    /// runtime that shuts down under a running future fails that run.
    /// `cancel()` lets a started future finish (Java's `cancel(false)`);
    /// [`AsyncHandle::abort`] stops it at its next `.await`.
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start); and [`Rejected`] when no runtime was
    /// given and this is called outside one.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::{OnFailure, ScheduledThreadPool};
    ///
    /// async fn refresh_token() -> Result<(), String> { Ok(()) }
    ///
    /// let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build()?;
    /// let pool = ScheduledThreadPool::new(1);
    /// let h = pool
    ///     .with_fixed_delay(Duration::from_millis(2)) // from each future's completion
    ///     .on_failure(OnFailure::Continue)
    ///     .max_runs(3)
    ///     .runtime(runtime.handle().clone())
    ///     .start_async(|| async {
    ///         tokio::time::sleep(Duration::from_millis(1)).await;
    ///         refresh_token().await
    ///     })?;
    /// runtime.block_on(h)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use = "the handle is how to cancel or join the task; dropping it detaches the task (it still runs)"]
    pub fn start_async<F, Fut, R>(mut self, body: F) -> Result<AsyncHandle<()>, Rejected>
    where
        F: FnMut() -> Fut + Send + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: RunResult + Send + 'static,
    {
        let runtime = self.runtime.take();
        start_periodic(runtime, body, |body| self.start(body))
    }
}

/// Async bodies (feature `tokio`).
impl OnCalendar<'_> {
    /// The tokio runtime that runs the task's futures (default: the
    /// caller's current runtime, when [`start_async`](Self::start_async)
    /// is called). Give one to start the task outside a runtime, or to
    /// keep its futures off the runtime that serves requests.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, SystemTime, UNIX_EPOCH};
    /// use schedpool::{calendar::Schedule, ScheduledThreadPool};
    ///
    /// #[derive(Debug)]
    /// struct Hourly; // every whole hour, UTC
    /// impl Schedule for Hourly {
    ///     fn next_after(&self, t: SystemTime) -> Option<SystemTime> {
    ///         let secs = t.duration_since(UNIX_EPOCH).ok()?.as_secs();
    ///         Some(UNIX_EPOCH + Duration::from_secs((secs / 3600 + 1) * 3600))
    ///     }
    /// }
    ///
    /// let background = tokio::runtime::Builder::new_current_thread().build()?;
    /// let pool = ScheduledThreadPool::new(1);
    /// let h = pool
    ///     .on_calendar(Hourly)
    ///     .runtime(background.handle().clone())
    ///     .start_async(|| async { /* rotate the logs */ })?;
    /// assert!(h.next_fire().is_some());
    /// assert!(h.cancel());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn runtime(mut self, runtime: Handle) -> Self {
        self.runtime = Some(runtime);
        self
    }

    /// Starts the calendar task with an async body, as
    /// [`Periodic::start_async`]: one future per fire, run on the runtime;
    /// the pool keeps the fire times (never early by the wall clock), the
    /// controls and the failure policy, and the next fire is planned when
    /// the future completes.
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start); and [`Rejected`] when no runtime was
    /// given and this is called outside one.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, SystemTime, UNIX_EPOCH};
    /// use schedpool::{calendar::Schedule, ManualClock, ScheduledThreadPool};
    ///
    /// #[derive(Debug)]
    /// struct Hourly; // every whole hour, UTC
    /// impl Schedule for Hourly {
    ///     fn next_after(&self, t: SystemTime) -> Option<SystemTime> {
    ///         let secs = t.duration_since(UNIX_EPOCH).ok()?.as_secs();
    ///         Some(UNIX_EPOCH + Duration::from_secs((secs / 3600 + 1) * 3600))
    ///     }
    /// }
    ///
    /// let runtime = tokio::runtime::Builder::new_current_thread().build()?;
    /// let clock = ManualClock::new();
    /// clock.set_wall_time(UNIX_EPOCH + Duration::from_secs(1_700_000_000)); // 22:13:20 UTC
    /// let pool = ScheduledThreadPool::builder().core_threads(1).clock(clock.clone()).build()?;
    /// let h = pool
    ///     .on_calendar(Hourly)
    ///     .max_runs(1)
    ///     .runtime(runtime.handle().clone())
    ///     .start_async(|| async { /* an async report */ })?;
    /// clock.advance(Duration::from_secs(2_800)); // 23:00: the fire is due
    /// runtime.block_on(h)?; // its future ran on the runtime
    /// assert!(pool.wait_idle(Duration::from_secs(5))); // the worker's books too
    /// assert_eq!(pool.completed_task_count(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use = "the handle is how to cancel or join the task; dropping it detaches the task (it still runs)"]
    pub fn start_async<F, Fut, R>(mut self, body: F) -> Result<AsyncHandle<()>, Rejected>
    where
        F: FnMut() -> Fut + Send + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: RunResult + Send + 'static,
    {
        let runtime = self.runtime.take();
        start_periodic(runtime, body, |body| self.start(body))
    }
}
