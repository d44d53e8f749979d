//! Idle timers ([`IdleTimer`], [`ScheduledThreadPool::idle_timer`]): the
//! public side of [`crate::task::idle`], which holds the task and its
//! invariants.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::base::clock::{delay_nanos, Nanos};
use crate::base::error::Rejected;
use crate::pool::executor::ScheduledThreadPool;
use crate::pool::handle::ScheduledHandle;
use crate::task::idle;
use crate::task::new;
use crate::task::ptr::TaskPtr;

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
#[must_use = "dropping an IdleTimer detaches it (it still fires); keep it to touch or cancel it"]
pub struct IdleTimer<T> {
    /// The task's touch, for its erased type (the handle has the task).
    touch: fn(&TaskPtr, Nanos) -> bool,
    handle: ScheduledHandle<T>,
}

impl<T: 'static> IdleTimer<T> {
    /// Records activity: the timer now fires `timeout` after this moment.
    /// Returns false if the timer has already fired or was cancelled.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::{ManualClock, ScheduledThreadPool};
    ///
    /// let clock = ManualClock::new();
    /// let pool = ScheduledThreadPool::builder().core_threads(1).clock(clock.clone()).build()?;
    /// let session = pool.idle_timer(Duration::from_secs(300), || "logged out")?;
    /// for _ in 0..10 {
    ///     clock.advance(Duration::from_secs(200)); // a request every 200 s
    ///     assert!(session.touch(), "still open");
    /// }
    /// clock.advance(Duration::from_secs(300)); // then nothing for 5 minutes
    /// assert!(pool.wait_idle(Duration::from_secs(5)));
    /// assert!(!session.touch(), "too late: logged out");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn touch(&self) -> bool {
        let (task, pool) = self.handle.task_and_pool();
        (self.touch)(task, pool.clock.now())
    }

    /// The timer's handle: cancel it, wait for it, await it.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::{ManualClock, ScheduledThreadPool};
    ///
    /// let clock = ManualClock::new();
    /// let pool = ScheduledThreadPool::builder().core_threads(1).clock(clock.clone()).build()?;
    /// let timer = pool.idle_timer(Duration::from_secs(60), || ())?;
    /// assert_eq!(timer.handle().delay(), Duration::from_secs(60));
    /// clock.advance(Duration::from_secs(60));
    /// assert!(timer.handle().wait_timeout(Duration::from_secs(5)), "fired");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn handle(&self) -> &ScheduledHandle<T> {
        &self.handle
    }

    /// The handle, consuming the timer (no more touches).
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
    /// let handle = timer.into_handle(); // nobody will touch it again
    /// clock.advance(Duration::from_secs(60));
    /// assert_eq!(handle.join()?, "closed");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use = "the handle is how to cancel or join the task; dropping it detaches the task (it still runs)"]
    pub fn into_handle(self) -> ScheduledHandle<T> {
        self.handle
    }

    /// Cancels the timer (see [`ScheduledHandle::cancel`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// let timer = pool.idle_timer(Duration::from_secs(60), || ())?;
    /// // The client said goodbye: no idle close needed.
    /// assert!(timer.cancel());
    /// assert!(!timer.touch(), "a cancelled timer takes no touches");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
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
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::{ManualClock, ScheduledThreadPool};
    ///
    /// let clock = ManualClock::new();
    /// let pool = ScheduledThreadPool::builder().core_threads(1).clock(clock.clone()).build()?;
    /// // Close a connection idle for 60 s.
    /// let close = pool.idle_timer(Duration::from_secs(60), || "closed")?;
    /// clock.advance(Duration::from_secs(45));
    /// close.touch(); // a request: idle again from now
    /// clock.advance(Duration::from_secs(45));
    /// assert!(pool.wait_idle(Duration::from_secs(5)));
    /// assert!(!close.handle().is_done(), "idle 45 s only");
    /// clock.advance(Duration::from_secs(15));
    /// assert_eq!(close.into_handle().join()?, "closed");
    /// assert!(pool.idle_timer(Duration::ZERO, || ()).unwrap_err().is_invalid_argument());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use = "the handle is how to cancel or join the task; dropping it detaches the task (it still runs)"]
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
        let task = new::idle(shared.next_seq(), now, timeout, task);
        shared.enqueue(task.clone(), now)?;
        Ok(IdleTimer {
            touch: idle::touch::<T, F>,
            handle: ScheduledHandle::new(task, Arc::clone(shared)),
        })
    }
}
