//! The async side of `DurablePoolBuilder` (feature `tokio`): async handlers,
//! their runtime and their per-kind concurrency limits, checked at `build`
//! (an impl block of `builder.rs`'s builder).

use std::future::Future;
use std::sync::mpsc::Receiver;

use crate::durable::store::envelope::{self, Payload};
use crate::durable::store::error::DurableError;

use super::async_job::AsyncJob;
use super::builder::DurablePoolBuilder;
use super::job::HandlerError;
use super::shared::Handler;
use super::shared::{Aio, AsyncHandler, BoxRun, Msg};

/// How many futures of one async kind run at once unless
/// [`DurablePoolBuilder::async_concurrency`] says otherwise.
pub const DEFAULT_ASYNC_CONCURRENCY: usize = 64;

// ===== impl DurablePoolBuilder (feature tokio) =====

#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
impl DurablePoolBuilder {
    /// Registers an async handler of `kind` (feature `tokio`): for each run,
    /// `handler(payload, job)` makes a future, which runs on the pool's
    /// tokio runtime ([`runtime`](Self::runtime), else the runtime current
    /// at [`build`](Self::build)). At most
    /// [`async_concurrency`](Self::async_concurrency) futures of a kind
    /// run at once (default [`DEFAULT_ASYNC_CONCURRENCY`]).
    ///
    /// A run is a sync handler's run in every other way:
    ///
    /// - the pool's workers claim the items, by the store's clock, and
    ///   start the futures; a worker goes back to claiming at once, so a
    ///   few workers keep many futures running, and no store call runs on
    ///   the runtime (the settle is the pool's settler thread's);
    /// - the lease is heartbeated while the future awaits, and
    ///   [`AsyncJob::lease_lost`] completes if the store refuses it;
    /// - a future that outlives its lease (the item was cancelled or
    ///   replaced, or another holder took it over) is fenced as a sync run
    ///   is: its ack is refused (`stats().lease_lost`);
    /// - `Err` and a panic (in `handler` or in the future) are failures:
    ///   retried with backoff, dead-lettered after `max_attempts`;
    /// - a future whose task is dropped before it finishes (its runtime
    ///   shut down) releases its item to be run again.
    ///
    /// Registering a kind again replaces its handler, sync or async.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ManualClock;
    /// use schedpool::durable::{DurablePool, MemoryBackend};
    ///
    /// let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build()?;
    /// let clock = ManualClock::new();
    /// let pool = DurablePool::builder(MemoryBackend::with_clock(clock.clone()))
    ///     .threads(1)
    ///     .runtime(runtime.handle().clone())
    ///     .handler_async("close-order", |order: u64, job| async move {
    ///         tokio::time::sleep(Duration::from_millis(1)).await; // an async call
    ///         println!("order {order} closed (attempt {})", job.attempt);
    ///         Ok(())
    ///     })
    ///     .async_concurrency("close-order", 100)
    ///     .build()?;
    /// pool.schedule("close-order", "order-42", &42u64, Duration::from_secs(1800))?;
    /// clock.advance(Duration::from_secs(1800));
    /// // The runtime runs the future while this thread waits for the pool.
    /// runtime.block_on(async { tokio::task::spawn_blocking(move || {
    ///     assert!(pool.wait_idle(Duration::from_secs(10)));
    ///     assert_eq!(pool.stats().succeeded, 1);
    /// }).await })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn handler_async<T, F, Fut>(mut self, kind: &str, handler: F) -> Self
    where
        T: Payload + Send + 'static,
        F: Fn(T, AsyncJob) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), HandlerError>> + Send + 'static,
    {
        let make = Box::new(move |bytes: &[u8], job: AsyncJob| {
            let value = envelope::decode::<T>(&job.id, bytes)?;
            let run: BoxRun = Box::pin(handler(value, job));
            Ok(run)
        });
        let run = Handler::Async(AsyncHandler {
            make,
            limit: DEFAULT_ASYNC_CONCURRENCY,
        });
        self.handlers.insert(kind.to_string(), run);
        self
    }

    /// How many futures of the async kind `kind` may run at once in this
    /// process (default [`DEFAULT_ASYNC_CONCURRENCY`]). While all run, a
    /// worker that claimed another item of the kind waits for one to
    /// finish (its lease heartbeated), so the store keeps what this process
    /// cannot start yet for other processes.
    ///
    /// # Examples
    ///
    /// See [`handler_async`](Self::handler_async). At
    /// [`build`](Self::build), a limit of 0, or one for a kind without an
    /// async handler, is a [`DurableError::Config`].
    pub fn async_concurrency(mut self, kind: &str, limit: usize) -> Self {
        self.async_limits.insert(kind.to_string(), limit);
        self
    }

    /// The tokio runtime that runs the async handlers' futures (default:
    /// the runtime current when [`build`](Self::build) is called). Give a
    /// handle when building outside the runtime, or to keep the handlers
    /// off the runtime that serves requests.
    ///
    /// # Examples
    ///
    /// See [`handler_async`](Self::handler_async).
    pub fn runtime(mut self, runtime: tokio::runtime::Handle) -> Self {
        self.runtime = Some(runtime);
        self
    }

    /// The pool's async side, when it has async handlers: the limits
    /// applied, the runtime found.
    pub(super) fn async_side(&mut self) -> Result<Option<(Aio, Receiver<Msg>)>, DurableError> {
        for (kind, &limit) in &self.async_limits {
            match self.handlers.get_mut(kind) {
                Some(Handler::Async(handler)) if limit > 0 => handler.limit = limit,
                Some(Handler::Async(_)) => {
                    return Err(DurableError::Config(
                        format!("async_concurrency of {kind:?} must be at least 1").into(),
                    ))
                }
                _ => {
                    return Err(DurableError::Config(
                        format!("async_concurrency for {kind:?}, which has no async handler")
                            .into(),
                    ))
                }
            }
        }
        if !self
            .handlers
            .values()
            .any(|h| matches!(h, Handler::Async(_)))
        {
            return Ok(None);
        }
        let runtime = match self.runtime.take() {
            Some(runtime) => runtime,
            None => tokio::runtime::Handle::try_current().map_err(|_| {
                DurableError::Config(
                    "handler_async needs a tokio runtime: build the pool inside one, or give \
                     it one with runtime(handle)"
                        .into(),
                )
            })?,
        };
        Ok(Some(Aio::new(runtime)))
    }
}
