//! The error types of the public API: [`Rejected`] (a submission was
//! refused, nothing will run), [`TaskError`] (an accepted task ended
//! without a value) and [`BuildError`] (a pool configuration that cannot
//! be built).

use std::borrow::Cow;
use std::error::Error;
use std::fmt;
use std::io;
use std::sync::Arc;

/// A submission the pool refused. Nothing of it was queued and nothing of it
/// will ever run.
///
/// The pool rejects for three reasons: it is shut down, an argument is
/// invalid (a zero period or fixed delay), or it could not start a worker
/// thread and has none. [`Display`](fmt::Display) says which. For the last,
/// the OS's [`io::Error`] is the rejection's [`source`](Error::source)
/// (its text is in the message too), so code can look at its kind or
/// `raw_os_error`; two rejections compare equal when their messages do.
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

#[derive(Debug, Clone)]
enum Reason {
    Shutdown,
    InvalidArgument(Cow<'static, str>),
    /// Shared, so that `Rejected` stays `Clone` (an `io::Error` is not).
    NoWorker(Arc<io::Error>),
}

impl PartialEq for Reason {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Reason::Shutdown, Reason::Shutdown) => true,
            (Reason::InvalidArgument(a), Reason::InvalidArgument(b)) => a == b,
            (Reason::NoWorker(a), Reason::NoWorker(b)) => {
                a.kind() == b.kind() && a.to_string() == b.to_string()
            }
            _ => false,
        }
    }
}

impl Eq for Reason {}

impl Rejected {
    pub(crate) fn shutdown() -> Self {
        Rejected {
            reason: Reason::Shutdown,
        }
    }
    pub(crate) fn invalid(what: impl Into<Cow<'static, str>>) -> Self {
        Rejected {
            reason: Reason::InvalidArgument(what.into()),
        }
    }
    /// A copy of `err` is kept (the pool still logs the original): the
    /// same OS error code, or else the same kind and text.
    pub(crate) fn no_worker(err: &io::Error) -> Self {
        let copy = match err.raw_os_error() {
            Some(code) => io::Error::from_raw_os_error(code),
            None => io::Error::new(err.kind(), err.to_string()),
        };
        Rejected {
            reason: Reason::NoWorker(Arc::new(copy)),
        }
    }

    /// True if the pool had begun shutting down.
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// pool.shutdown();
    /// assert!(pool.submit(|| ()).unwrap_err().is_shutdown());
    /// ```
    pub fn is_shutdown(&self) -> bool {
        matches!(self.reason, Reason::Shutdown)
    }

    /// True if an argument was invalid (for example a zero period).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// let err = pool.schedule_at_fixed_rate(|| (), Duration::ZERO, Duration::ZERO).unwrap_err();
    /// assert!(err.is_invalid_argument() && !err.is_shutdown());
    /// ```
    pub fn is_invalid_argument(&self) -> bool {
        matches!(self.reason, Reason::InvalidArgument(_))
    }

    /// True if no worker thread existed and a new one could not be started;
    /// the OS's error is then [`source`](Error::source).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::error::Error;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// fn submit(pool: &ScheduledThreadPool) -> Result<(), String> {
    ///     match pool.execute(|| ()) {
    ///         Ok(()) => Ok(()),
    ///         Err(e) if e.is_no_worker() => {
    ///             // Out of threads or memory: the OS's error says which.
    ///             let os = e.source().and_then(|s| s.downcast_ref::<std::io::Error>());
    ///             Err(format!("no worker ({:?})", os.map(|e| e.kind())))
    ///         }
    ///         Err(e) => Err(e.to_string()),
    ///     }
    /// }
    /// assert_eq!(submit(&ScheduledThreadPool::new(1)), Ok(()));
    /// ```
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

impl Error for Rejected {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match &self.reason {
            Reason::NoWorker(err) => Some(&**err),
            Reason::Shutdown | Reason::InvalidArgument(_) => None,
        }
    }
}

/// Why an accepted task produced no value: cancelled, panicked, or (a
/// periodic task) stopped by an `Err` its body returned.
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
///     Err(TaskError::Panicked(panic)) => assert_eq!(panic.message(), "boom"),
///     other => panic!("unexpected {other:?}"),
/// }
/// // The payload, to re-raise the panic here: std::panic::resume_unwind(e.into_panic()).
/// let e = pool.submit(|| -> u32 { panic!("again") }).unwrap().join().unwrap_err();
/// assert!(e.is_panic());
/// assert_eq!(e.into_panic().downcast_ref::<&str>(), Some(&"again"));
/// let h = pool.schedule(|| 1, Duration::from_secs(60)).unwrap();
/// assert!(h.cancel());
/// assert_eq!(h.join(), Err(TaskError::Cancelled));
/// ```
#[derive(Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskError {
    /// The task was cancelled (by its handle, by a shutdown policy, or by
    /// dropping the [`PendingTask`](crate::PendingTask) that `shutdown_now`
    /// returned) before it produced a value.
    Cancelled,
    /// The task panicked: its message and payload ([`Panic`]).
    Panicked(Panic),
    /// A periodic task's body returned `Err` and its
    /// [`OnFailure`](crate::OnFailure) policy stopped it; this is the
    /// error's `Display` text. (A one-shot task's `Result` is its value:
    /// `submit(|| Err(e))` joins as `Ok(Err(e))`, never as this.)
    Failed(String),
}

impl TaskError {
    /// True for [`TaskError::Cancelled`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// let h = pool.schedule(|| (), Duration::from_secs(60))?;
    /// h.cancel();
    /// assert!(h.join().unwrap_err().is_cancelled());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_cancelled(&self) -> bool {
        matches!(self, TaskError::Cancelled)
    }

    /// True for [`TaskError::Panicked`].
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// assert!(pool.submit(|| -> u8 { panic!("boom") })?.join().unwrap_err().is_panic());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_panic(&self) -> bool {
        matches!(self, TaskError::Panicked(_))
    }

    /// The panic payload, for `std::panic::resume_unwind` (as tokio's
    /// `JoinError::into_panic`).
    ///
    /// # Panics
    ///
    /// If the task did not panic; [`try_into_panic`](Self::try_into_panic)
    /// returns the error instead.
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// let err = pool.submit(|| -> u8 { panic!("boom") })?.join().unwrap_err();
    /// let payload = err.into_panic();
    /// assert_eq!(payload.downcast_ref::<&str>(), Some(&"boom"));
    /// // To re-raise it on this thread: std::panic::resume_unwind(payload).
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[track_caller]
    pub fn into_panic(self) -> Box<dyn std::any::Any + Send> {
        match self.try_into_panic() {
            Ok(payload) => payload,
            Err(e) => panic!("TaskError::into_panic on a task that did not panic: {e}"),
        }
    }

    /// The panic payload if the task panicked, else the error itself.
    ///
    /// # Errors
    ///
    /// `self`, unchanged, if it is not [`TaskError::Panicked`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// let h = pool.schedule(|| (), Duration::from_secs(60))?;
    /// h.cancel();
    /// let err = h.join().unwrap_err();
    /// assert!(err.try_into_panic().unwrap_err().is_cancelled(), "not a panic: given back");
    /// let err = pool.submit(|| -> () { panic!("boom") })?.join().unwrap_err();
    /// assert_eq!(err.try_into_panic().ok().and_then(|p| p.downcast_ref::<&str>().copied()), Some("boom"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_into_panic(self) -> Result<Box<dyn std::any::Any + Send>, TaskError> {
        match self {
            TaskError::Panicked(panic) => Ok(panic.into_payload()),
            other => Err(other),
        }
    }

    /// True for [`TaskError::Failed`]: a periodic body returned `Err`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// let h = pool.at_fixed_rate(Duration::from_millis(1)).start(|| Err::<(), _>("quota exceeded"))?;
    /// let err = h.join().unwrap_err();
    /// assert!(err.is_failed());
    /// assert_eq!(err.failure_message(), Some("quota exceeded"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_failed(&self) -> bool {
        matches!(self, TaskError::Failed(_))
    }

    /// The panic message, if the task panicked.
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// let err = pool.submit(|| -> u8 { panic!("index {} out of range", 7) })?.join().unwrap_err();
    /// assert_eq!(err.panic_message(), Some("index 7 out of range"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn panic_message(&self) -> Option<&str> {
        match self {
            TaskError::Panicked(panic) => Some(panic.message()),
            TaskError::Cancelled | TaskError::Failed(_) => None,
        }
    }

    /// The failure's text: the panic message, or the text of the `Err` a
    /// periodic body returned; `None` if cancelled.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// let panicked = pool.submit(|| -> u8 { panic!("bug") })?.join().unwrap_err();
    /// let failed = pool.at_fixed_rate(Duration::from_millis(1)).start(|| Err::<(), _>("503"))?.join().unwrap_err();
    /// assert_eq!((panicked.failure_message(), failed.failure_message()), (Some("bug"), Some("503")));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn failure_message(&self) -> Option<&str> {
        match self {
            TaskError::Panicked(panic) => Some(panic.message()),
            TaskError::Failed(msg) => Some(msg),
            TaskError::Cancelled => None,
        }
    }
}

impl fmt::Display for TaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TaskError::Cancelled => f.write_str("task was cancelled"),
            TaskError::Panicked(msg) => write!(f, "task panicked: {msg}"),
            TaskError::Failed(msg) => write!(f, "task failed: {msg}"),
        }
    }
}

impl Error for TaskError {}

/// A task's panic, in [`TaskError::Panicked`]: its message and its payload.
///
/// Equality and `Debug` look at the message only, and it compares equal to
/// a `&str` or `String` of it, so `TaskError::Panicked("boom".into())`
/// reads as before. The payload is the one the task panicked with when it
/// is a string (the common case, copied); a payload of another type goes
/// to the pool's failure handler, and this one then holds the message as a
/// `String`. Not `Clone` (a payload is not), so neither is [`TaskError`].
///
/// # Examples
///
/// ```
/// use schedpool::{ScheduledThreadPool, TaskError};
///
/// let pool = ScheduledThreadPool::new(1);
/// match pool.submit(|| -> u32 { panic!("row {} is corrupt", 17) })?.join() {
///     Err(TaskError::Panicked(panic)) => {
///         assert_eq!(panic, "row 17 is corrupt"); // compares with its message
///         assert!(panic.contains("corrupt"));     // and derefs to it
///     }
///     other => panic!("unexpected {other:?}"),
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Panic {
    message: String,
    /// `Mutex` only to make it `Sync` (a payload is `Send` only); it is
    /// never locked but by `into_payload`, which owns it.
    payload: std::sync::Mutex<Box<dyn std::any::Any + Send>>,
}

impl Panic {
    pub(crate) fn new(message: String, payload: Box<dyn std::any::Any + Send>) -> Self {
        Panic {
            message,
            payload: std::sync::Mutex::new(payload),
        }
    }

    /// The panic message (or a placeholder when the payload was neither
    /// `&str` nor `String`).
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::{ScheduledThreadPool, TaskError};
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// match pool.submit(|| -> u8 { panic!("boom") })?.join() {
    ///     Err(TaskError::Panicked(panic)) => assert_eq!(panic.message(), "boom"),
    ///     other => panic!("unexpected {other:?}"),
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The payload, for `std::panic::resume_unwind`.
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::{ScheduledThreadPool, TaskError};
    ///
    /// let pool = ScheduledThreadPool::new(1);
    /// if let Err(TaskError::Panicked(panic)) = pool.submit(|| -> u8 { std::panic::panic_any(7u8) })?.join() {
    ///     // Another type than a string: the handle's payload is the message.
    ///     assert!(panic.into_payload().downcast_ref::<String>().is_some());
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn into_payload(self) -> Box<dyn std::any::Any + Send> {
        self.payload
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The message, so `Panicked(msg) => msg.contains("..")` reads as it did
/// when the variant held a `String`.
impl std::ops::Deref for Panic {
    type Target = str;

    fn deref(&self) -> &str {
        &self.message
    }
}

impl AsRef<str> for Panic {
    fn as_ref(&self) -> &str {
        &self.message
    }
}

impl From<&str> for Panic {
    fn from(message: &str) -> Self {
        Panic::from(message.to_owned())
    }
}

impl From<String> for Panic {
    fn from(message: String) -> Self {
        let payload = Box::new(message.clone());
        Panic::new(message, payload)
    }
}

impl fmt::Debug for Panic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.message, f)
    }
}

impl fmt::Display for Panic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl PartialEq for Panic {
    fn eq(&self, other: &Panic) -> bool {
        self.message == other.message
    }
}

impl Eq for Panic {}

impl PartialEq<str> for Panic {
    fn eq(&self, other: &str) -> bool {
        self.message == other
    }
}

impl PartialEq<&str> for Panic {
    fn eq(&self, other: &&str) -> bool {
        self.message == *other
    }
}

impl PartialEq<String> for Panic {
    fn eq(&self, other: &String) -> bool {
        self.message == *other
    }
}

/// A [`Builder`](crate::Builder) configuration the pool cannot be built
/// with ([`Builder::build`](crate::Builder::build)). [`Display`](fmt::Display)
/// says which setting and why; it converts into a `std::io::Error` of kind
/// `InvalidInput`, so `?` in code returning `io::Result` keeps working.
///
/// No thread starts at build time (workers start with the first task), so
/// building never fails for the OS's reasons: a worker that cannot start is
/// a [`Rejected::is_no_worker`] at submission. [`source`](Error::source) is
/// therefore `None` today.
///
/// # Examples
///
/// ```
/// use schedpool::ScheduledThreadPool;
///
/// let err = ScheduledThreadPool::builder().core_threads(1 << 20).build().unwrap_err();
/// assert!(err.is_too_many_threads());
/// assert_eq!(err.to_string(), "core_threads 1048576 exceeds the maximum of 32768");
/// fn start() -> std::io::Result<ScheduledThreadPool> {
///     Ok(ScheduledThreadPool::builder().core_threads(2).build()?)
/// }
/// assert!(start().is_ok());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildError {
    kind: BuildErrorKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum BuildErrorKind {
    ThreadName,
    TooManyThreads { asked: usize, max: usize },
}

impl BuildError {
    pub(crate) fn thread_name() -> Self {
        BuildError {
            kind: BuildErrorKind::ThreadName,
        }
    }

    pub(crate) fn too_many_threads(asked: usize, max: usize) -> Self {
        BuildError {
            kind: BuildErrorKind::TooManyThreads { asked, max },
        }
    }

    /// True if the thread name prefix contains a NUL byte.
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let err = ScheduledThreadPool::builder().thread_name("a\0b").build().unwrap_err();
    /// assert!(err.is_invalid_thread_name());
    /// ```
    pub fn is_invalid_thread_name(&self) -> bool {
        matches!(self.kind, BuildErrorKind::ThreadName)
    }

    /// True if more core threads were asked for than the pool allows.
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::ScheduledThreadPool;
    ///
    /// let err = ScheduledThreadPool::builder().core_threads(usize::MAX).build().unwrap_err();
    /// assert!(err.is_too_many_threads());
    /// ```
    pub fn is_too_many_threads(&self) -> bool {
        matches!(self.kind, BuildErrorKind::TooManyThreads { .. })
    }
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            BuildErrorKind::ThreadName => {
                f.write_str("thread name prefix must not contain a NUL byte")
            }
            BuildErrorKind::TooManyThreads { asked, max } => {
                write!(f, "core_threads {asked} exceeds the maximum of {max}")
            }
        }
    }
}

impl Error for BuildError {}

impl From<BuildError> for std::io::Error {
    fn from(err: BuildError) -> Self {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, err)
    }
}

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

/// Runs `f`, containing a panic from it: `None` if it unwound, its payload
/// dropped by [`drop_quietly`]. For the pool's own threads around code they
/// do not own (a tracing subscriber, a user type's `Display`): such a panic
/// must not end the thread or skip the bookkeeping after it.
pub(crate) fn quietly<R>(f: impl FnOnce() -> R) -> Option<R> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(value) => Some(value),
        Err(payload) => {
            drop_quietly(payload);
            None
        }
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
        assert_error::<BuildError>();
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
