//! [`Error`]: what went wrong, in words that say what to do, and the
//! [`ErrorKind`] that picks the tool's exit code.
//!
//! Invariant: every store error maps to exactly one kind, by
//! [`DurableError`]'s own predicates, so scripts can trust the exit code.

use std::fmt;

use schedpool::durable::DurableError;

/// The class of an [`Error`], one exit code each (see [`ErrorKind::exit_code`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Something else failed (an unreadable stored item, an I/O error): exit 1.
    Failed,
    /// Bad arguments or a bad store URL: exit 2 (clap's own code for usage errors).
    Usage,
    /// The item, kind or schedule named does not exist: exit 3.
    NotFound,
    /// The store could not be reached or did not answer in time: exit 4.
    Unavailable,
    /// The store or the tool refused: wrong credentials, missing rights, a
    /// refused command, or a bulk change that needs `--yes`: exit 5.
    Refused,
}

impl ErrorKind {
    /// The process exit code of this kind: 1 failed, 2 usage, 3 not found,
    /// 4 unavailable, 5 refused (0 is success).
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool_cli::ErrorKind;
    ///
    /// assert_eq!(ErrorKind::NotFound.exit_code(), 3);
    /// ```
    pub fn exit_code(self) -> u8 {
        match self {
            ErrorKind::Failed => 1,
            ErrorKind::Usage => 2,
            ErrorKind::NotFound => 3,
            ErrorKind::Unavailable => 4,
            ErrorKind::Refused => 5,
        }
    }

    /// A short name for `--json` output (`"not_found"`, ...).
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool_cli::ErrorKind;
    ///
    /// assert_eq!(ErrorKind::Unavailable.name(), "unavailable");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Failed => "failed",
            ErrorKind::Usage => "usage",
            ErrorKind::NotFound => "not_found",
            ErrorKind::Unavailable => "unavailable",
            ErrorKind::Refused => "refused",
        }
    }
}

/// An error of the tool or the console: its kind and a message that says
/// what happened and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    message: String,
}

impl Error {
    /// An error of `kind` saying `message`.
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool_cli::{Error, ErrorKind};
    ///
    /// let e = Error::new(ErrorKind::NotFound, "no item \"a\"");
    /// assert_eq!(e.kind(), ErrorKind::NotFound);
    /// assert_eq!(e.to_string(), "no item \"a\"");
    /// ```
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
        }
    }

    /// Its kind.
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool_cli::{Error, ErrorKind};
    ///
    /// assert_eq!(Error::new(ErrorKind::Refused, "no").kind().exit_code(), 5);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// Its message.
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool_cli::{Error, ErrorKind};
    ///
    /// assert_eq!(Error::new(ErrorKind::Usage, "give --queue").message(), "give --queue");
    /// ```
    pub fn message(&self) -> &str {
        &self.message
    }

    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Usage, message)
    }

    pub(crate) fn not_found(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::NotFound, message)
    }

    /// A store error met while doing `what` (`"reading the counts"`), with
    /// the hint for its kind.
    pub(crate) fn store(what: &str, err: DurableError) -> Self {
        let (kind, hint) = if err.is_unavailable() {
            (
                ErrorKind::Unavailable,
                "the store did not answer: check that it runs and that the URL's host and port are right, then retry",
            )
        } else if err.is_config() {
            (
                ErrorKind::Refused,
                "check the URL's user, password, TLS settings and the role's rights",
            )
        } else if err.is_refused() {
            (ErrorKind::Refused, "nothing was changed")
        } else if err.is_format() {
            (
                ErrorKind::Failed,
                "the stored data is not in a format this version reads: upgrade the tool, or purge the item",
            )
        } else {
            (ErrorKind::Failed, "")
        };
        let sep = if hint.is_empty() { "" } else { ": " };
        Error::new(kind, format!("{what}: {err}{sep}{hint}"))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}
