//! How client and server errors map onto [`DurableError`], and which of
//! them a retry may cure. A leaf: the schema, the client and the backend
//! all use it.

use postgres::error::SqlState;

use crate::durable::store::backend::DurableError;
use crate::durable::store::error::ErrorDetail;

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

pub(super) fn classify(err: &postgres::Error) -> Kind {
    let Some(code) = err.code() else {
        if tls_refused(err) {
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
