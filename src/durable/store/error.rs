//! [`DurableError`], the one error type of the durable API, and
//! [`ErrorDetail`], what its message-carrying kinds hold.
//!
//! Invariants:
//!
//! - Every error built from an underlying error (a `redis::RedisError`, a
//!   `postgres::Error`, an `io::Error`, a rustls error, a payload's decode
//!   error) keeps it: [`std::error::Error::source`] returns it, typed, for
//!   downcasting. Nothing in the crate turns such an error into text only.
//! - The message keeps the underlying error's text too, as it always did,
//!   so a log line of `%err` shows the reason (see `docs/design.md`, "The
//!   durable error type", for why both). One exception: a socket timeout's
//!   text is the OS's `EAGAIN` ("Resource temporarily unavailable"), which
//!   reads like a server error, so a timed-out Redis call says instead
//!   which timeout ran out (the source still holds the error).
//! - Equality compares the kind and the message, never the source (an
//!   `Arc<dyn Error>` cannot be compared); cloning shares the source.
//!
//! A leaf: nothing of the crate is imported here.

use std::error::Error;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// The error of every durable operation.
///
/// Match on the kind (it is `#[non_exhaustive]`, so keep a `_` arm) or use
/// the `is_*` predicates; the underlying error, when there is one, is
/// [`source()`](std::error::Error::source).
///
/// # Examples
///
/// ```
/// use std::error::Error;
/// use std::time::Duration;
/// use schedpool::durable::{DurableError, DurableQueue, MemoryBackend};
///
/// let backend = MemoryBackend::new();
/// let words: DurableQueue<String> = DurableQueue::new(backend.clone());
/// let numbers: DurableQueue<u64> = DurableQueue::new(backend);
/// words.put("w", &"hi".to_string(), Duration::from_secs(60))?;
/// // Removed all the same, but "hi" is not a u64:
/// let err = numbers.remove("w").unwrap_err();
/// assert!(err.is_format());
/// match &err {
///     DurableError::Format(detail) => assert!(detail.contains("\"w\"")),
///     other => panic!("unexpected {other}"),
/// }
/// // The payload's own decode error:
/// assert_eq!(err.source().unwrap().to_string(), "expected 8 bytes, found 2");
/// # Ok::<(), DurableError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DurableError {
    /// The store could not be reached or did not answer in time (within
    /// the store's `op_timeout`, or `connect_timeout` for a connect). The
    /// operation may or may not have happened; the idempotent ones are safe
    /// to repeat. Also a panic in the backend's own code (a
    /// [`DurableBackend`](crate::durable::DurableBackend) is user code): the queue
    /// and the pool call every backend method with the panic caught, and
    /// the error's detail reads `the backend panicked in <method>:
    /// <message>`.
    Unavailable(ErrorDetail),
    /// The store refused the command (for instance Redis out of memory).
    /// Nothing was written.
    Refused(ErrorDetail),
    /// This holder's lease is lost: the item was reclaimed after the lease
    /// expired, cancelled or replaced. Its ack was refused.
    LeaseLost,
    /// A stored item or queue uses a format this version cannot read, or a
    /// payload did not decode.
    Format(ErrorDetail),
    /// Configuration or authentication: the store refused who we are (a
    /// wrong or missing password or user, a role without a right the
    /// backend needs, a certificate that does not chain to the CA), the
    /// server's configuration failed a check in strict mode (no AOF, an
    /// evicting `maxmemory-policy`, a Redis older than 7.0, `fsync` off),
    /// or an argument was invalid. The text of a refused login starts with
    /// `authentication:`.
    ///
    /// Never transient: the same call fails the same way until someone
    /// changes the configuration, so do not retry it as you would
    /// [`Unavailable`](Self::Unavailable). Fail the start-up, or alert and
    /// retry only after the credentials or settings change (a rotated
    /// password read again, say). Both stores give this kind for the same
    /// causes, and give it at once, without the operation timeout's
    /// retries.
    Config(ErrorDetail),
    /// The queue is closed.
    Closed,
}

impl DurableError {
    /// True for [`DurableError::Unavailable`].
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::durable::{DurableError, ErrorDetail};
    ///
    /// let err = DurableError::Unavailable(ErrorDetail::new("no reply from the store within 2000 ms"));
    /// assert!(err.is_unavailable()); // the put may have landed: repeat it or remove the id
    /// ```
    pub fn is_unavailable(&self) -> bool {
        matches!(self, DurableError::Unavailable(_))
    }

    /// True for [`DurableError::Refused`].
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::durable::{DurableError, ErrorDetail};
    ///
    /// let err = DurableError::Refused(ErrorDetail::new("OOM command not allowed"));
    /// assert!(err.is_refused()); // nothing was written
    /// ```
    pub fn is_refused(&self) -> bool {
        matches!(self, DurableError::Refused(_))
    }

    /// True for [`DurableError::LeaseLost`].
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::durable::DurableError;
    ///
    /// assert!(DurableError::LeaseLost.is_lease_lost());
    /// ```
    pub fn is_lease_lost(&self) -> bool {
        matches!(self, DurableError::LeaseLost)
    }

    /// True for [`DurableError::Format`].
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::durable::{DurableError, ErrorDetail};
    ///
    /// let err = DurableError::Format(ErrorDetail::new("item \"a\": expected 8 bytes, found 2"));
    /// assert!(err.is_format());
    /// ```
    pub fn is_format(&self) -> bool {
        matches!(self, DurableError::Format(_))
    }

    /// True for [`DurableError::Config`].
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::durable::{DurableError, ErrorDetail};
    ///
    /// let err = DurableError::Config(ErrorDetail::new("lease must be at least 3 ms"));
    /// assert!(err.is_config());
    /// ```
    pub fn is_config(&self) -> bool {
        matches!(self, DurableError::Config(_))
    }

    /// True for [`DurableError::Closed`].
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::durable::DurableError;
    ///
    /// assert!(DurableError::Closed.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        matches!(self, DurableError::Closed)
    }

    /// The detail of a kind that carries one (all but `LeaseLost` and
    /// `Closed`).
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::durable::{DurableError, ErrorDetail};
    ///
    /// let err = DurableError::Refused(ErrorDetail::new("OOM command not allowed"));
    /// assert!(err.detail().is_some_and(|d| d.contains("OOM")));
    /// assert!(DurableError::LeaseLost.detail().is_none());
    /// ```
    pub fn detail(&self) -> Option<&ErrorDetail> {
        match self {
            DurableError::Unavailable(d)
            | DurableError::Refused(d)
            | DurableError::Format(d)
            | DurableError::Config(d) => Some(d),
            DurableError::LeaseLost | DurableError::Closed => None,
        }
    }
}

impl DurableError {
    /// A retried `verb` (requeue, purge) that found `id` gone: its first
    /// attempt may have acted and lost its reply, so the outcome is unknown.
    #[cfg(any(feature = "redis", feature = "postgres"))]
    pub(crate) fn lost_reply(verb: &str, id: &str) -> Self {
        DurableError::Unavailable(ErrorDetail::new(format!(
            "{verb} of {id:?}: the reply was lost and the dead letter is gone; it may have been this {verb}"
        )))
    }
}

impl fmt::Display for DurableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DurableError::Unavailable(why) => write!(f, "durable store unavailable: {why}"),
            DurableError::Refused(why) => write!(f, "durable store refused the command: {why}"),
            DurableError::LeaseLost => f.write_str("the lease on this item was lost"),
            DurableError::Format(why) => write!(f, "unreadable durable data: {why}"),
            DurableError::Config(why) => write!(f, "durable configuration: {why}"),
            DurableError::Closed => f.write_str("the durable queue is closed"),
        }
    }
}

impl Error for DurableError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        let source = self.detail()?.source.as_deref()?;
        Some(source as &(dyn Error + 'static))
    }
}

/// What a [`DurableError`] kind carries: a message for people, and the
/// underlying error, if any, for code.
///
/// It dereferences to the message, so `detail.contains("OOM")` reads it.
/// Two details are equal when their messages are; the source takes no part.
///
/// # Examples
///
/// ```
/// use schedpool::durable::{DurableError, ErrorDetail};
///
/// let io = std::io::Error::new(std::io::ErrorKind::TimedOut, "no answer");
/// let err = DurableError::Unavailable(ErrorDetail::with_source("reading a reply: no answer", io));
/// assert!(err.is_unavailable());
/// assert_eq!(err.to_string(), "durable store unavailable: reading a reply: no answer");
/// let plain = DurableError::Config(ErrorDetail::from("a lease must be at least 3 ms"));
/// assert!(std::error::Error::source(&plain).is_none());
/// ```
#[derive(Clone)]
pub struct ErrorDetail {
    message: String,
    source: Option<Arc<dyn Error + Send + Sync + 'static>>,
}

impl ErrorDetail {
    /// A detail with `message` and no underlying error.
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::durable::{DurableError, ErrorDetail};
    ///
    /// // A custom backend reports a refusal:
    /// let err = DurableError::Refused(ErrorDetail::new("quota exceeded"));
    /// assert_eq!(err.to_string(), "durable store refused the command: quota exceeded");
    /// ```
    pub fn new(message: impl Into<String>) -> Self {
        ErrorDetail {
            message: message.into(),
            source: None,
        }
    }

    /// A detail with `message`, caused by `source` (any error, or a
    /// `String` describing one).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::error::Error;
    /// use schedpool::durable::{DurableError, ErrorDetail};
    ///
    /// let io = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset by peer");
    /// let err = DurableError::Unavailable(ErrorDetail::with_source("sending a put: reset by peer", io));
    /// let source = err.source().expect("kept");
    /// assert_eq!(
    ///     source.downcast_ref::<std::io::Error>().map(|e| e.kind()),
    ///     Some(std::io::ErrorKind::ConnectionReset)
    /// );
    /// ```
    pub fn with_source(
        message: impl Into<String>,
        source: impl Into<Box<dyn Error + Send + Sync + 'static>>,
    ) -> Self {
        ErrorDetail {
            message: message.into(),
            source: Some(Arc::from(source.into())),
        }
    }

    /// The message.
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::durable::ErrorDetail;
    ///
    /// assert_eq!(ErrorDetail::new("quota exceeded").message(), "quota exceeded");
    /// ```
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The underlying error, if any: the same as the
    /// [`DurableError`]'s `source()`, with `Send + Sync`.
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::durable::ErrorDetail;
    ///
    /// let io = std::io::Error::new(std::io::ErrorKind::TimedOut, "slow");
    /// assert!(ErrorDetail::with_source("slow", io).source().is_some());
    /// assert!(ErrorDetail::new("no cause").source().is_none());
    /// ```
    pub fn source(&self) -> Option<&(dyn Error + Send + Sync + 'static)> {
        self.source.as_deref()
    }
}

impl Deref for ErrorDetail {
    type Target = str;

    fn deref(&self) -> &str {
        &self.message
    }
}

impl From<String> for ErrorDetail {
    fn from(message: String) -> Self {
        ErrorDetail::new(message)
    }
}

impl From<&str> for ErrorDetail {
    fn from(message: &str) -> Self {
        ErrorDetail::new(message)
    }
}

impl PartialEq for ErrorDetail {
    fn eq(&self, other: &Self) -> bool {
        self.message == other.message
    }
}

impl Eq for ErrorDetail {}

impl fmt::Display for ErrorDetail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl fmt::Debug for ErrorDetail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.source {
            // The message alone, as the String it replaced printed.
            None => fmt::Debug::fmt(&self.message, f),
            Some(source) => f
                .debug_struct("ErrorDetail")
                .field("message", &self.message)
                .field("source", source)
                .finish(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_is_kept_and_equality_ignores_it() {
        let io = std::io::Error::new(std::io::ErrorKind::TimedOut, "slow");
        let a = DurableError::Unavailable(ErrorDetail::with_source("slow", io));
        let b = DurableError::Unavailable(ErrorDetail::from("slow"));
        assert_eq!(a, b);
        assert_ne!(a, DurableError::Refused(ErrorDetail::from("slow")));
        let source = a.source().expect("kept");
        assert_eq!(
            source.downcast_ref::<std::io::Error>().unwrap().kind(),
            std::io::ErrorKind::TimedOut
        );
        assert!(a.clone().source().is_some(), "a clone shares the source");
        assert!(b.source().is_none());
        assert!(DurableError::LeaseLost.source().is_none());
        let decode = ErrorDetail::with_source("item \"x\": bad", String::from("bad"));
        assert_eq!(decode.source().unwrap().to_string(), "bad");
    }
}
