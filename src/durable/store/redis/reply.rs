//! The replies of the Redis scripts, read the same way by the sync backend
//! (`backend.rs`, `dead.rs`) and the async client (`aio.rs`).
//!
//! Invariant: nothing here panics on what the server sends; a reply of an
//! unexpected shape is `DurableError::Format`.

use redis::Value;

use super::client::{bytes, int};
use crate::durable::store::backend::{Buried, Cancelled, DurableError, Put, Stored, StoredState};
use crate::durable::store::dead_record;
use crate::durable::store::error::ErrorDetail;

/// The `put` script's reply: {status, deadline}.
pub(super) fn put(reply: &[i64]) -> Result<Put, DurableError> {
    Ok(match reply {
        [0, _] => Put::Exists,
        [1, at] => Put::Inserted {
            deadline_ms: *at as u64,
        },
        [2, at] => Put::Replaced {
            deadline_ms: *at as u64,
        },
        _ => {
            return Err(DurableError::Format(
                format!("unexpected put reply {reply:?}").into(),
            ))
        }
    })
}

/// The `cancel` script's reply; `retried` when the script was sent more
/// than once (then "not found" may be this cancel's own earlier attempt).
pub(super) fn cancel(
    reply: Vec<Value>,
    retried: bool,
    id: &str,
) -> Result<Cancelled, DurableError> {
    let mut it = reply.into_iter();
    let status = it.next().as_ref().map(int).transpose()?.unwrap_or(0);
    if status == 0 && retried {
        // An earlier attempt may have removed it, and its reply (with
        // the value) was lost: the outcome is unknown, not NotFound.
        return Err(DurableError::Unavailable(format!(
            "cancel of {id:?}: the reply was lost and the item is gone; it may have been this cancel"
        ).into()));
    }
    let mut payload = || {
        it.next()
            .map(bytes)
            .transpose()
            .map(Option::unwrap_or_default)
    };
    Ok(match status {
        1 => Cancelled::Pending(payload()?),
        2 => Cancelled::InFlight,
        3 => Cancelled::Dead(dead_record::envelope(payload()?)),
        _ => Cancelled::NotFound,
    })
}

/// The `get` script's reply: empty, or {state, deadline, envelope}.
pub(super) fn get(reply: Vec<Value>, id: &str) -> Result<Option<Stored>, DurableError> {
    if reply.is_empty() {
        return Ok(None);
    }
    let Ok([state, deadline, envelope]) = <[Value; 3]>::try_from(reply) else {
        return Err(DurableError::Format("unexpected get reply".into()));
    };
    let state = match int(&state)? {
        0 => StoredState::Pending,
        1 => StoredState::InFlight,
        _ => StoredState::Dead,
    };
    let deadline_ms = u64::try_from(int(&deadline)?)
        .map_err(|_| DurableError::Format(format!("item {id:?}: unreadable meta").into()))?;
    Ok(Some(Stored {
        envelope: bytes(envelope)?,
        deadline_ms,
        state,
    }))
}

/// A requeue's or purge's reply (1 acted, 0 not dead, -1 dead without
/// data); `retried` as for [`cancel`].
pub(super) fn acted(r: i64, retried: bool, verb: &str, id: &str) -> Result<bool, DurableError> {
    match r {
        1 => Ok(true),
        -1 => Err(DurableError::Format(
            format!("dead letter {id:?} has no stored bytes to requeue; purge it").into(),
        )),
        _ if retried => Err(DurableError::lost_reply(verb, id)),
        _ => Ok(false),
    }
}

/// The dead-letter listing's reply: {id, died, attempts, data} each.
pub(super) fn buried(reply: Vec<Value>) -> Result<Vec<Buried>, DurableError> {
    let mut out = Vec::with_capacity(reply.len() / 4);
    let mut it = reply.into_iter();
    while let (Some(id), Some(died), Some(attempts), Some(data)) =
        (it.next(), it.next(), it.next(), it.next())
    {
        let id = String::from_utf8(bytes(id)?).map_err(|e| {
            DurableError::Format(ErrorDetail::with_source(
                format!("a dead letter's id is not UTF-8: {e}"),
                e,
            ))
        })?;
        let stored = bytes(data)?;
        let (error, envelope) = dead_record::split(&stored);
        out.push(Buried {
            id,
            envelope: envelope.to_vec(),
            error,
            attempts: u32::try_from(int(&attempts)?).unwrap_or(0),
            died_ms: u64::try_from(int(&died)?).unwrap_or(0),
        });
    }
    Ok(out)
}
