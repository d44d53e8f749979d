//! How client and server errors map onto [`DurableError`], and which of
//! them a retry may cure. A leaf: the schema, the client and the backend
//! all use it.

use postgres::error::SqlState;

use crate::durable::backend::DurableError;

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

/// Maps a client or server error onto the kinds the Redis backend uses.
pub(super) fn map_err(err: &postgres::Error) -> DurableError {
    let text = match err.as_db_error() {
        Some(db) => format!("{} ({}): {}", db.message(), db.code().code(), err),
        None => err.to_string(),
    };
    let Some(code) = err.code() else {
        return DurableError::Unavailable(text);
    };
    let c = code.code();
    match *code {
        SqlState::UNDEFINED_TABLE
        | SqlState::INVALID_SCHEMA_NAME
        | SqlState::UNDEFINED_FUNCTION
        | SqlState::UNDEFINED_COLUMN => DurableError::Config(format!(
            "the schedpool schema is missing or not this version's (run the migration): {text}"
        )),
        SqlState::INSUFFICIENT_PRIVILEGE => {
            DurableError::Config(format!("the role lacks a right the backend needs: {text}"))
        }
        SqlState::READ_ONLY_SQL_TRANSACTION => DurableError::Refused(format!(
            "the server is read-only (a standby, or after a failover): {text}"
        )),
        SqlState::T_R_SERIALIZATION_FAILURE | SqlState::T_R_DEADLOCK_DETECTED => {
            DurableError::Unavailable(text)
        }
        SqlState::ADMIN_SHUTDOWN | SqlState::CRASH_SHUTDOWN | SqlState::CANNOT_CONNECT_NOW => {
            DurableError::Unavailable(text)
        }
        _ if c.starts_with("08") || c.starts_with("57") => DurableError::Unavailable(text),
        _ if c.starts_with("28") => DurableError::Config(format!("authentication: {text}")),
        _ if c.starts_with("22") => DurableError::Config(format!("invalid argument: {text}")),
        _ => DurableError::Refused(text),
    }
}
