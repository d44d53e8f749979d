//! How SQLite's errors map onto [`DurableError`]. A leaf of the folder.
//!
//! | SQLite | kind | why |
//! |---|---|---|
//! | `BUSY`, `LOCKED` (after the busy timeout) | `Unavailable` | another writer held the file; nothing was written |
//! | `FULL` (disk or `max_page_count`) | `Refused` | nothing was written; frees up when space does |
//! | `READONLY`, `CANTOPEN`, `PERM`, `AUTH` | `Config` | the file or its folder cannot be written: fix the path or its permissions |
//! | `NOTADB`, `CORRUPT` | `Format` | the file is not a SQLite database, or is damaged |
//! | `IOERR` | `Unavailable` | the disk failed the read or write |
//! | anything else from SQLite | `Refused` | |
//! | a value of an unexpected type | `Format` | a foreign writer, or another version's schema |

use rusqlite::ErrorCode;

use crate::durable::store::error::{DurableError, ErrorDetail};

/// A durable kind's constructor.
pub(super) type Kind = fn(ErrorDetail) -> DurableError;

/// `err`, in the durable kinds, its text prefixed with what was being done.
pub(super) fn map(doing: &str, err: rusqlite::Error) -> DurableError {
    let (kind, why) = kind_of(err.sqlite_error_code());
    kind(ErrorDetail::with_source(
        format!("{doing}: {why}: {err}"),
        err,
    ))
}

/// The durable kind of SQLite's result `code` (`None`: not SQLite's, a
/// value of an unexpected type), and why, per the table above.
pub(super) fn kind_of(code: Option<ErrorCode>) -> (Kind, &'static str) {
    match code {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => (
            DurableError::Unavailable,
            "another connection held the database past the busy timeout",
        ),
        Some(ErrorCode::DiskFull) => (
            DurableError::Refused,
            "the disk is full (or the database reached max_page_count); nothing was written",
        ),
        Some(
            ErrorCode::ReadOnly
            | ErrorCode::CannotOpen
            | ErrorCode::PermissionDenied
            | ErrorCode::AuthorizationForStatementDenied,
        ) => (
            DurableError::Config,
            "the database file (or its folder, for the -wal and -shm files) is read-only or cannot be \
             opened for writing",
        ),
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => (
            DurableError::Format,
            "the file is not a SQLite database, or it is corrupt or truncated",
        ),
        Some(ErrorCode::SystemIoFailure) => (DurableError::Unavailable, "the disk failed"),
        Some(_) => (DurableError::Refused, "SQLite refused the statement"),
        // Not SQLite's: a value of an unexpected type (a foreign writer).
        None => (
            DurableError::Format,
            "unexpected row in the schedpool tables",
        ),
    }
}

/// A reply of an unexpected shape (a column of another type: a foreign
/// writer, or another version's schema).
pub(super) fn bad_row(err: rusqlite::Error) -> DurableError {
    DurableError::Format(ErrorDetail::with_source(
        format!("unexpected row in the schedpool tables: {err}"),
        err,
    ))
}
