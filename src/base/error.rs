//! The two error types of the public API: [`Rejected`] (a submission was
//! refused, nothing will run) and [`TaskError`] (an accepted task ended
//! without a value).

use std::error::Error;
use std::fmt;

/// A submission the pool refused. Nothing of it was queued and nothing of it
/// will ever run.
///
/// The pool rejects for three reasons: it is shut down, an argument is
/// invalid (a zero period or fixed delay), or it could not start a worker
/// thread and has none. [`Display`](fmt::Display) says which.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedpool::ScheduledThreadPool;
///
/// let pool = ScheduledThreadPool::new(1);
/// let err = pool.schedule_at_fixed_rate(|| {}, Duration::ZERO, Duration::ZERO).unwrap_err();
/// assert!(err.is_invalid_argument());
/// assert_eq!(err.to_string(), "task rejected: period must be greater than zero");
///
/// pool.shutdown();
/// let err = pool.execute(|| {}).unwrap_err();
/// assert!(err.is_shutdown());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    reason: Reason,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Reason {
    Shutdown,
    InvalidArgument(&'static str),
    NoWorker(String),
}

impl Rejected {
    pub(crate) fn shutdown() -> Self {
        Rejected {
            reason: Reason::Shutdown,
        }
    }
    pub(crate) fn invalid(what: &'static str) -> Self {
        Rejected {
            reason: Reason::InvalidArgument(what),
        }
    }
    pub(crate) fn no_worker(err: &std::io::Error) -> Self {
        Rejected {
            reason: Reason::NoWorker(err.to_string()),
        }
    }

    /// True if the pool had begun shutting down.
    pub fn is_shutdown(&self) -> bool {
        matches!(self.reason, Reason::Shutdown)
    }

    /// True if an argument was invalid (for example a zero period).
    pub fn is_invalid_argument(&self) -> bool {
        matches!(self.reason, Reason::InvalidArgument(_))
    }

    /// True if no worker thread existed and a new one could not be started.
    pub fn is_no_worker(&self) -> bool {
        matches!(self.reason, Reason::NoWorker(_))
    }
}

impl fmt::Display for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.reason {
            Reason::Shutdown => f.write_str("task rejected: the pool is shut down"),
            Reason::InvalidArgument(what) => write!(f, "task rejected: {what}"),
            Reason::NoWorker(err) => {
                write!(
                    f,
                    "task rejected: no worker thread could be started ({err})"
                )
            }
        }
    }
}

impl Error for Rejected {}

/// Why an accepted task produced no value.
///
/// Returned by [`ScheduledHandle::join`](crate::ScheduledHandle::join) and by
/// awaiting a handle.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedpool::{ScheduledThreadPool, TaskError};
///
/// let pool = ScheduledThreadPool::new(1);
/// let h = pool.submit(|| -> u32 { panic!("boom") }).unwrap();
/// match h.join() {
///     Err(TaskError::Panicked(msg)) => assert_eq!(msg, "boom"),
///     other => panic!("unexpected {other:?}"),
/// }
/// let h = pool.schedule(|| 1, Duration::from_secs(60)).unwrap();
/// assert!(h.cancel());
/// assert_eq!(h.join(), Err(TaskError::Cancelled));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskError {
    /// The task was cancelled (by its handle, by a shutdown policy, or by
    /// dropping the [`PendingTask`](crate::PendingTask) that `shutdown_now`
    /// returned) before it produced a value.
    Cancelled,
    /// The task panicked; this is the panic message (or a placeholder when
    /// the payload was neither `&str` nor `String`).
    Panicked(String),
}

impl TaskError {
    /// True for [`TaskError::Cancelled`].
    pub fn is_cancelled(&self) -> bool {
        matches!(self, TaskError::Cancelled)
    }

    /// True for [`TaskError::Panicked`].
    pub fn is_panic(&self) -> bool {
        matches!(self, TaskError::Panicked(_))
    }

    /// The panic message, if the task panicked.
    pub fn panic_message(&self) -> Option<&str> {
        match self {
            TaskError::Panicked(msg) => Some(msg),
            TaskError::Cancelled => None,
        }
    }
}

impl fmt::Display for TaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TaskError::Cancelled => f.write_str("task was cancelled"),
            TaskError::Panicked(msg) => write!(f, "task panicked: {msg}"),
        }
    }
}

impl Error for TaskError {}

/// Turns a panic payload into its message.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&'static str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "Box<dyn Any> (a panic payload that is not a string)".to_string()
    }
}

/// Drops `value`, swallowing a panic from its `Drop` so that no user
/// destructor can unwind through the pool's own code.
pub(crate) fn drop_quietly<T>(value: T) {
    if let Err(payload) =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(value)))
    {
        // The payload's own Drop could panic again; leak it rather than abort.
        std::mem::forget(payload);
        tracing::error!(target: "schedpool::task", "a task's captured value panicked while being dropped");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_error<E: Error + Send + Sync + 'static>() {}

    #[test]
    fn errors_fit_in_boxed_errors() {
        assert_error::<Rejected>();
        assert_error::<TaskError>();
        let boxed: Box<dyn Error + Send + Sync> = Box::new(TaskError::Panicked("x".into()));
        assert_eq!(boxed.to_string(), "task panicked: x");
    }

    #[test]
    fn panic_messages() {
        assert_eq!(panic_message(&"a"), "a");
        assert_eq!(panic_message(&String::from("b")), "b");
        assert!(panic_message(&7u8).contains("not a string"));
    }

    #[test]
    fn drop_quietly_swallows_a_panicking_drop() {
        struct Bomb;
        impl Drop for Bomb {
            fn drop(&mut self) {
                panic!("drop bomb");
            }
        }
        drop_quietly(Bomb);
    }
}
