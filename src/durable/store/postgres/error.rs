//! How client and server errors map onto [`DurableError`], and which of
//! them a retry may cure. A leaf: the schema, the client and the backend
//! all use it.

use postgres::error::SqlState;

use crate::durable::store::backend::DurableError;
use crate::durable::store::error::ErrorDetail;

/// How one call on a backend's own connection (`conn.rs`) failed.
#[derive(Debug)]
pub(super) enum CallError {
    /// The client or the server said so.
    Pg(postgres::Error),
    /// No reply within the call's budget: the outcome is unknown, and the
    /// connection is not used again.
    TimedOut(std::time::Duration),
    /// The connect, with its startup exchange, took longer than this.
    ConnectTimedOut(std::time::Duration),
    /// The connection closed while waiting for a notification.
    Closed,
    /// The connection's runtime could not be made.
    Io(std::io::Error),
}

impl From<postgres::Error> for CallError {
    fn from(err: postgres::Error) -> Self {
        CallError::Pg(err)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// The connection is gone or the reply was cut: the outcome is unknown.
    Broken,
    /// The server is starting, recovering or shutting down: nothing ran.
    Starting,
    /// The server rolled the statement back (serialization failure,
    /// deadlock): nothing ran, a retry is safe.
    RolledBack,
    /// The server refused the statement; the connection is fine.
    Refused,
}

/// [`classify`] for a call on the backend's own connection: a timeout is
/// a broken connection (the outcome is unknown).
pub(super) fn classify_call(err: &CallError) -> Kind {
    match err {
        CallError::Pg(err) => classify(err),
        CallError::TimedOut(_) | CallError::ConnectTimedOut(_) | CallError::Closed => Kind::Broken,
        CallError::Io(_) => Kind::Refused,
    }
}

pub(super) fn classify(err: &postgres::Error) -> Kind {
    let Some(code) = err.code() else {
        if tls_refused(err) || credentials(err).is_some() {
            return Kind::Refused;
        }
        return Kind::Broken;
    };
    if err.is_closed() {
        return Kind::Broken;
    }
    match *code {
        SqlState::T_R_SERIALIZATION_FAILURE | SqlState::T_R_DEADLOCK_DETECTED => Kind::RolledBack,
        SqlState::ADMIN_SHUTDOWN | SqlState::CRASH_SHUTDOWN | SqlState::CANNOT_CONNECT_NOW => {
            Kind::Starting
        }
        _ if code.code().starts_with("08") => Kind::Broken,
        _ => Kind::Refused,
    }
}

/// Maps a client or server error onto the kinds the Redis backend uses,
/// keeping `err` as the source.
pub(super) fn map_err(err: postgres::Error) -> DurableError {
    let text = match err.as_db_error() {
        Some(db) => format!("{} ({}): {}", db.message(), db.code().code(), err),
        None => err.to_string(),
    };
    type Kind = fn(ErrorDetail) -> DurableError;
    let (kind, message): (Kind, String) = match err.code() {
        None if tls_refused(&err) => (DurableError::Config, format!("TLS: {}", chain(&err))),
        None if credentials(&err).is_some() => {
            (DurableError::Config, credentials(&err).unwrap_or_default())
        }
        None => (DurableError::Unavailable, text),
        Some(code) => {
            let c = code.code();
            match *code {
                SqlState::UNDEFINED_TABLE
                | SqlState::INVALID_SCHEMA_NAME
                | SqlState::UNDEFINED_FUNCTION
                | SqlState::UNDEFINED_COLUMN => (
                    DurableError::Config,
                    format!(
                        "the schedpool schema is missing or not this version's (run the migration): {text}"
                    ),
                ),
                SqlState::INSUFFICIENT_PRIVILEGE => (
                    DurableError::Config,
                    format!("the role lacks a right the backend needs: {text}"),
                ),
                SqlState::READ_ONLY_SQL_TRANSACTION => (
                    DurableError::Refused,
                    format!("the server is read-only (a standby, or after a failover): {text}"),
                ),
                SqlState::T_R_SERIALIZATION_FAILURE
                | SqlState::T_R_DEADLOCK_DETECTED
                | SqlState::LOCK_NOT_AVAILABLE
                | SqlState::ADMIN_SHUTDOWN
                | SqlState::CRASH_SHUTDOWN
                | SqlState::CANNOT_CONNECT_NOW => (DurableError::Unavailable, text),
                _ if c.starts_with("08") || c.starts_with("57") => {
                    (DurableError::Unavailable, text)
                }
                _ if c.starts_with("28") => {
                    (DurableError::Config, format!("authentication: {text}"))
                }
                _ if c.starts_with("22") => {
                    (DurableError::Config, format!("invalid argument: {text}"))
                }
                _ => (DurableError::Refused, text),
            }
        }
    };
    kind(ErrorDetail::with_source(message, err))
}

impl From<postgres::Error> for DurableError {
    /// The kind [`PostgresBackend`](super::PostgresBackend)'s own calls give
    /// the error (`Unavailable` for a broken connection, `Refused` for a
    /// statement the server refused, ...), the error kept as the source: so
    /// `?` works on the `postgres` calls beside the transactional verbs.
    fn from(err: postgres::Error) -> Self {
        map_err(err)
    }
}

/// [`map_err`] for a call on the backend's own connection.
pub(super) fn map_call(err: CallError) -> DurableError {
    match err {
        CallError::Pg(err) => map_err(err),
        CallError::TimedOut(d) => DurableError::Unavailable(
            format!("the server did not answer within {d:?}: timed out (op_timeout)").into(),
        ),
        CallError::ConnectTimedOut(d) => DurableError::Unavailable(
            format!(
                "connecting (TCP, TLS and the startup exchange) did not finish within {d:?}: \
                 timed out (connect_timeout); is this a PostgreSQL server?"
            )
            .into(),
        ),
        CallError::Closed => DurableError::Unavailable("the connection closed".into()),
        CallError::Io(e) => DurableError::Unavailable(ErrorDetail::with_source(
            format!("could not start a connection's runtime: {e}"),
            e,
        )),
    }
}

/// A client-side error that a retry cannot change: about who we are (no
/// password given where the server asks for one, an authentication
/// exchange that failed on our side), or a configuration the client
/// refuses. The message, or `None` for any other error.
fn credentials(err: &postgres::Error) -> Option<String> {
    let text = chain(err);
    let what = err.to_string();
    if what.starts_with("authentication error")
        || (what.starts_with("invalid configuration") && text.contains("password"))
    {
        return Some(format!("authentication: {text}"));
    }
    what.starts_with("invalid configuration")
        .then(|| format!("configuration: {text}"))
}

/// The TLS layer refused the server (a certificate that does not chain to
/// the CA, a wrong host name) or the server refused TLS: a retry cannot
/// cure it.
fn tls_refused(err: &postgres::Error) -> bool {
    let text = chain(err);
    text.contains("invalid peer certificate")
        || text.contains("server does not support TLS")
        || text.contains("TLS was required")
}

/// The error and its sources, ": "-separated (the TLS layer's reason is a
/// source of the client's "error performing TLS handshake").
fn chain(err: &postgres::Error) -> String {
    let mut text = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
