//! What an async handler of a `DurablePool` sees (feature `tokio`):
//! [`AsyncJob`], the run's [`JobInfo`] plus [`LeaseLost`], a future that
//! completes when the store refuses this run's lease.
//!
//! Invariant: a `LeaseLost` completes exactly when `JobInfo::lease_lost`
//! turns true (the heartbeat thread or a refused settle marks the lease
//! lost and wakes it; see `take/lease.rs`); it never completes for a lease
//! that is still held, and a run that settles normally leaves it pending.

use std::fmt;
use std::future::Future;
use std::ops::Deref;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use crate::durable::take::lease::LeaseCell;

use super::job::JobInfo;

/// What an async handler ([`DurablePoolBuilder::handler_async`]) knows about
/// its run: the [`JobInfo`] (it derefs to it: `job.id`, `job.token`,
/// `job.attempt`, ...), and [`lease_lost`](Self::lease_lost), a future to
/// `select!` on.
///
/// It is `Clone + Send + 'static`, so the handler's future can own it.
///
/// [`DurablePoolBuilder::handler_async`]: crate::durable::DurablePoolBuilder::handler_async
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedpool::durable::{AsyncJob, HandlerError};
///
/// // A long wait that stops early once the item was cancelled, replaced or
/// // taken over by another holder (its ack would be refused anyway); a
/// // handler can as well `tokio::select!` on `job.lease_lost()` beside its
/// // own work.
/// async fn close_order(order: u64, job: AsyncJob) -> Result<(), HandlerError> {
///     match tokio::time::timeout(Duration::from_millis(1), job.lease_lost()).await {
///         Ok(()) => Err(format!("order {order}: lease lost at attempt {}", job.attempt).into()),
///         Err(_waited) => Ok(()),
///     }
/// }
/// # let _ = close_order;
/// ```
#[derive(Clone)]
pub struct AsyncJob {
    pub(super) info: JobInfo,
}

impl AsyncJob {
    /// A future that completes once the store has refused to extend this
    /// run's lease: the item was cancelled, replaced by a new put, or its
    /// lease expired (this process stalled) and another holder may be
    /// running it. It stays pending while the lease is held, and after a
    /// normal settle. Heartbeats run every third of the lease, so it
    /// completes within about a third of the lease after the loss.
    ///
    /// Cancel-safe: dropping it changes nothing; calling it again gives a
    /// new future on the same lease.
    pub fn lease_lost(&self) -> LeaseLost {
        LeaseLost {
            cell: self.info.lease.clone(),
        }
    }

    /// True once the lease is lost, without waiting
    /// ([`JobInfo::lease_lost`]).
    pub fn is_lease_lost(&self) -> bool {
        self.info.lease_lost()
    }

    /// The run's [`JobInfo`].
    pub fn info(&self) -> &JobInfo {
        &self.info
    }
}

impl Deref for AsyncJob {
    type Target = JobInfo;

    fn deref(&self) -> &JobInfo {
        &self.info
    }
}

impl fmt::Debug for AsyncJob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("AsyncJob").field(&self.info).finish()
    }
}

/// The future of [`AsyncJob::lease_lost`]: completes once the run's lease
/// is lost.
#[must_use = "a future does nothing unless awaited or polled"]
pub struct LeaseLost {
    cell: Arc<LeaseCell>,
}

impl Future for LeaseLost {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.cell.poll_lost(cx)
    }
}

impl fmt::Debug for LeaseLost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaseLost")
            .field("id", &self.cell.id)
            .field("lost", &self.cell.lost())
            .finish()
    }
}
