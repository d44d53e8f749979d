//! [`CancelOnDrop`]: a [`ScheduledHandle`] that cancels its task when
//! dropped (tokio's `Sleep`, tokio-util's `AbortOnDropHandle`), for handles
//! that may be lost in a `select!` arm or an early return.
//!
//! # Invariants
//!
//! - The guard holds its handle until it is dropped or disarmed
//!   ([`CancelOnDrop::into_inner`], [`CancelOnDrop::detach`],
//!   [`CancelOnDrop::join`], [`CancelOnDrop::defuse`]); only `Drop` and
//!   `defuse` cancel, and only a guard still holding its handle.
//! - A cancel on drop after the task finished is a no-op (`cancel` returns
//!   false), so dropping the guard of a completed task changes nothing.

use std::fmt;
use std::future::Future;
use std::ops::Deref;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::base::error::TaskError;
use crate::pool::handle::ScheduledHandle;

/// A [`ScheduledHandle`] that cancels its task when dropped; made by
/// [`ScheduledHandle::cancel_on_drop`].
///
/// It derefs to the handle (so `cancel`, `is_done`, `wait_timeout`, ... work
/// on it), [`join`](Self::join)s and `.await`s like it, and
/// [`into_inner`](Self::into_inner) disarms it, giving the plain handle back
/// ([`detach`](Self::detach) disarms it and drops the handle: the task runs).
/// Dropping it cancels exactly as [`ScheduledHandle::cancel`] does: a task
/// not yet run never runs, and its handle reports
/// [`TaskError::Cancelled`]. So bind it to a name (`let _timeout = ...`):
/// `let _ = handle.cancel_on_drop();` drops the guard, and cancels the
/// task, on the spot. In a `select!` arm that loses, the guard is dropped
/// with the arm, and its task cancelled.
///
/// **Exactly once needs [`defuse`](Self::defuse).** A drop cannot report
/// that it came too late: when a reply and its timeout come due together,
/// the timeout's body may already be running when the reply's arm drops
/// the guard, and the request is then answered *and* timed out (a new user
/// measured 0.3–2 % of requests so; `integration/tests/exactly_once.rs`
/// reproduces it). Keep the guard out of the `select!` (await `&mut
/// guard`), and in the reply's arm answer only if `guard.defuse()` is
/// `true`:
///
/// ```text
/// // tokio, in a request's handler (run as written by
/// // integration/tests/exactly_once.rs, 10,000 times):
/// let mut timeout = pool.schedule(send_504, Duration::from_secs(30))?.cancel_on_drop();
/// tokio::select! {
///     reply = reply_rx => if timeout.defuse() {
///         send(reply?);     // the timeout's body never runs
///     },                    // else: its body sent the 504; drop the reply
///     _ = &mut timeout => {} // the body ran: the 504 went out
/// }
/// ```
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedpool::{ScheduledThreadPool, TaskState};
///
/// let pool = ScheduledThreadPool::new(1);
/// let guard = pool.schedule(|| "order 42 closed", Duration::from_secs(1800))?.cancel_on_drop();
/// let id = guard.id();
/// let probe = guard.state();
/// assert_eq!(probe, TaskState::Scheduled);
/// drop(guard); // the order was paid: the timeout goes with the guard
/// assert_eq!(pool.queue_len(), 0, "cancelled and removed, id {id}");
///
/// // Kept: into_inner() gives the plain handle back, and the task runs.
/// let h = pool.schedule(|| 7, Duration::from_millis(1))?.cancel_on_drop().into_inner();
/// assert_eq!(h.join()?, 7);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "dropping a CancelOnDrop cancels its task at once; bind it (let guard = ...) to keep the task"]
pub struct CancelOnDrop<T: 'static> {
    /// `Some` until dropped or disarmed.
    handle: Option<ScheduledHandle<T>>,
}

impl<T: 'static> CancelOnDrop<T> {
    pub(crate) fn new(handle: ScheduledHandle<T>) -> Self {
        CancelOnDrop {
            handle: Some(handle),
        }
    }

    fn handle(&self) -> &ScheduledHandle<T> {
        self.handle
            .as_ref()
            .expect("a CancelOnDrop holds its handle until dropped or detached")
    }

    fn disarm(mut self) -> ScheduledHandle<T> {
        self.handle
            .take()
            .expect("a CancelOnDrop holds its handle until dropped or detached")
    }

    /// Disarms the guard and gives the plain handle back (whose drop
    /// detaches: the task runs).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// let guard = pool.schedule(|| "sent", Duration::from_millis(5))?.cancel_on_drop();
    /// // The request succeeded: keep the follow-up after all.
    /// let handle = guard.into_inner();
    /// assert_eq!(handle.join()?, "sent");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use = "the handle is how to cancel or join the task; dropping it detaches the task (it still runs)"]
    pub fn into_inner(self) -> ScheduledHandle<T> {
        self.disarm()
    }

    /// Disarms the guard and drops the handle: the task is detached and
    /// runs unobserved.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::mpsc;
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// let (tx, rx) = mpsc::channel();
    /// let guard = pool.schedule(move || tx.send("audit written").unwrap(), Duration::from_millis(5))?.cancel_on_drop();
    /// guard.detach(); // let it run, unobserved
    /// assert_eq!(rx.recv_timeout(Duration::from_secs(5))?, "audit written");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn detach(self) {
        drop(self.disarm());
    }

    /// Cancels the task unless its body has started, and consumes the
    /// guard ([`ScheduledHandle::cancel_if_not_started`]): `true` only if
    /// this call cancelled it, so its body never runs; `false` if the body
    /// has run, is running, or the task was cancelled already. (A plain
    /// [`cancel`](ScheduledHandle::cancel), as Java's, also succeeds while
    /// the body runs, so its `true` cannot say that.)
    ///
    /// This is the call that makes "the reply or the timeout, never both"
    /// exactly once. Dropping the guard cancels too, but says nothing back:
    /// when the reply wins a `select!` against a timeout that came due at
    /// the same moment, the timeout's body may already be running, and a
    /// dropped guard cannot stop it, so the request is answered *and*
    /// timed out. Decide in the reply's arm with this `bool` instead:
    /// answer only when it is `true`; when it is `false` the timeout's body
    /// has (or is) answering, so drop the reply.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// let timed_out = Arc::new(AtomicBool::new(false));
    /// let flag = timed_out.clone();
    /// let timeout = pool
    ///     .schedule(move || flag.store(true, Ordering::SeqCst), Duration::from_secs(30))?
    ///     .cancel_on_drop();
    /// // ... the reply arrived first:
    /// if timeout.defuse() {
    ///     // The timeout's body will never run: answering is safe.
    /// } else {
    ///     // The timeout's body ran or is running: it answers, not us.
    /// }
    /// assert!(!timed_out.load(Ordering::SeqCst));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[doc(alias = "cancel")]
    #[must_use = "the bool says who answers: true, the caller (the body never runs); false, the task's body"]
    pub fn defuse(self) -> bool {
        self.disarm().cancel_if_not_started()
    }

    /// Blocks until the task is done and returns its result, as
    /// [`ScheduledHandle::join`].
    ///
    /// # Errors
    ///
    /// As [`ScheduledHandle::join`].
    ///
    /// # Panics
    ///
    /// If the result was already taken by awaiting the guard.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// let guard = pool.schedule(|| 42, Duration::from_millis(1))?.cancel_on_drop();
    /// assert_eq!(guard.join()?, 42);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[track_caller]
    pub fn join(self) -> Result<T, TaskError> {
        self.disarm().join()
    }
}

/// The guard's constructor (here, beside the guard).
impl<T: 'static> ScheduledHandle<T> {
    /// A guard that cancels the task when dropped, unless it is
    /// disarmed first ([`into_inner`](CancelOnDrop::into_inner),
    /// [`detach`](CancelOnDrop::detach)); it derefs to this
    /// handle, and joins and awaits like it. See [`CancelOnDrop`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// fn handle_request(pool: &ScheduledThreadPool) -> Result<(), Box<dyn std::error::Error>> {
    ///     let _timeout = pool
    ///         .schedule(|| println!("request timed out"), Duration::from_secs(30))?
    ///         .cancel_on_drop();
    ///     // ... the request's work; every return path cancels the timeout.
    ///     Ok(())
    /// }
    /// handle_request(&pool)?;
    /// assert_eq!(pool.queue_len(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use = "dropping the guard cancels the task at once"]
    pub fn cancel_on_drop(self) -> CancelOnDrop<T> {
        CancelOnDrop::new(self)
    }
}

impl<T: 'static> Deref for CancelOnDrop<T> {
    type Target = ScheduledHandle<T>;

    fn deref(&self) -> &ScheduledHandle<T> {
        self.handle()
    }
}

/// Awaiting the guard awaits the handle; the guard still cancels if dropped
/// before the task is done (a `select!` arm that lost).
impl<T: 'static> Future for CancelOnDrop<T> {
    type Output = Result<T, TaskError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let handle = self
            .get_mut()
            .handle
            .as_mut()
            .expect("a CancelOnDrop holds its handle until dropped or detached");
        Pin::new(handle).poll(cx)
    }
}

impl<T: 'static> Drop for CancelOnDrop<T> {
    fn drop(&mut self) {
        if let Some(handle) = self.handle.take() {
            handle.cancel();
        }
    }
}

impl<T: 'static> fmt::Debug for CancelOnDrop<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("CancelOnDrop").field(&self.handle).finish()
    }
}
