//! How arguments go to SQL and replies come back: ms values both ways, the
//! put and cancel replies (shared with the caller's-transaction verbs of
//! `tx.rs`), and the one-boolean-a-pair replies of the batched calls.
//!
//! Invariant: nothing here panics on what the server sends; a reply of an
//! unexpected shape is `DurableError::Format`.

use crate::durable::store::backend::{
    ceil_ms, Buried, Cancelled, Counts, DurableError, Put, Stored, StoredState, When, MAX_MS,
};
use crate::durable::store::dead_record;
use crate::durable::store::error::ErrorDetail;

/// A reply of an unexpected shape (another version's schema, say).
pub(super) fn bad_reply(err: postgres::Error) -> DurableError {
    DurableError::Format(ErrorDetail::with_source(
        format!("unexpected reply from the server: {err}"),
        err,
    ))
}

/// A stored ms value as `u64` (a negative one, from a foreign writer, is 0).
pub(super) fn ms(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

/// A `u64` ms value for SQL (clamped to the stored range).
pub(super) fn sql_ms(v: u64) -> i64 {
    v.min(MAX_MS) as i64
}

/// The put arguments: (delay ms, at ms).
pub(super) fn when_args(when: When) -> (Option<i64>, Option<i64>) {
    match when {
        When::After(d) => (Some(sql_ms(ceil_ms(d))), None),
        When::AtServerMs(at) => (None, Some(sql_ms(at))),
    }
}

/// Reads a put's reply row.
pub(super) fn put_reply(row: &postgres::Row) -> Result<Put, DurableError> {
    let result: i32 = row.try_get(0).map_err(bad_reply)?;
    let deadline: Option<i64> = row.try_get(1).map_err(bad_reply)?;
    Ok(put_of(result, deadline))
}

/// A put's reply: (result, deadline).
pub(super) fn put_of(result: i32, deadline: Option<i64>) -> Put {
    let deadline_ms = deadline.map_or(0, ms);
    match result {
        0 => Put::Inserted { deadline_ms },
        1 => Put::Replaced { deadline_ms },
        _ => Put::Exists,
    }
}

/// Reads a cancel's reply row.
pub(super) fn cancel_reply(row: &postgres::Row) -> Result<Cancelled, DurableError> {
    let state: Option<i16> = row.try_get(0).map_err(bad_reply)?;
    let env: Option<Vec<u8>> = row.try_get(1).map_err(bad_reply)?;
    Ok(cancel_of(state, env))
}

/// A cancel's reply: (state, envelope).
pub(super) fn cancel_of(state: Option<i16>, env: Option<Vec<u8>>) -> Cancelled {
    match state {
        Some(0) => Cancelled::Pending(env.unwrap_or_default()),
        Some(1) => Cancelled::InFlight,
        Some(2) => Cancelled::Dead(dead_record::envelope(env.unwrap_or_default())),
        _ => Cancelled::NotFound,
    }
}

/// The ids and tokens of (id, token) pairs, as the SQL arrays of the
/// batched calls take them.
pub(super) fn pair_arrays<'a>(pairs: &[(&'a str, u64)]) -> (Vec<&'a str>, Vec<i64>) {
    let ids = pairs.iter().map(|p| p.0).collect();
    let tokens = pairs.iter().map(|p| sql_ms(p.1)).collect();
    (ids, tokens)
}

/// The replies of a batched call (`extend`, `ack_many`): one boolean a
/// pair, `n` of them, in order; `what` names the call in the error.
pub(super) fn one_bool_each(
    rows: &[postgres::Row],
    n: usize,
    what: &str,
) -> Result<Vec<bool>, DurableError> {
    let held: Vec<bool> = rows
        .iter()
        .map(|r| r.try_get::<_, Option<bool>>(0).map(|b| b.unwrap_or(false)))
        .collect::<Result<_, _>>()
        .map_err(bad_reply)?;
    if held.len() != n {
        return Err(DurableError::Format(
            format!("{what} answered {} of {n} pairs", held.len()).into(),
        ));
    }
    Ok(held)
}

/// The counts query's rows: (state, count) each.
pub(super) fn counts_reply(rows: &[postgres::Row]) -> Result<Counts, DurableError> {
    let mut counts = Counts::default();
    for row in rows {
        let state: i16 = row.try_get(0).map_err(bad_reply)?;
        let n: i64 = row.try_get(1).map_err(bad_reply)?;
        let n = usize::try_from(n).unwrap_or(0);
        match state {
            0 => counts.pending = n,
            1 => counts.in_flight = n,
            2 => counts.dead = n,
            _ => {}
        }
    }
    Ok(counts)
}

/// The get query's row, if any.
pub(super) fn get_reply(row: Option<&postgres::Row>) -> Result<Option<Stored>, DurableError> {
    let Some(row) = row else {
        return Ok(None);
    };
    let state: i16 = row.try_get(0).map_err(bad_reply)?;
    Ok(Some(Stored {
        envelope: row.try_get(2).map_err(bad_reply)?,
        deadline_ms: ms(row.try_get(1).map_err(bad_reply)?),
        state: match state {
            0 => StoredState::Pending,
            1 => StoredState::InFlight,
            _ => StoredState::Dead,
        },
    }))
}

/// The dead-letter listing's rows: (id, stored bytes, attempts, died).
pub(super) fn buried_rows(rows: &[postgres::Row]) -> Result<Vec<Buried>, DurableError> {
    rows.iter()
        .map(|r| {
            let stored: Vec<u8> = r.try_get(1)?;
            let (error, envelope) = dead_record::split(&stored);
            Ok(Buried {
                id: r.try_get(0)?,
                envelope: envelope.to_vec(),
                error,
                attempts: u32::try_from(r.try_get::<_, i32>(2)?).unwrap_or(0),
                died_ms: ms(r.try_get(3)?),
            })
        })
        .collect::<Result<_, postgres::Error>>()
        .map_err(bad_reply)
}

/// A requeue's or purge's count: whether it acted on a dead letter;
/// `retried` when it was sent more than once (then 0 may be its own
/// earlier attempt's doing).
pub(super) fn acted_reply(
    row: &postgres::Row,
    retried: bool,
    verb: &str,
    id: &str,
) -> Result<bool, DurableError> {
    let n: i64 = row.try_get(0).map_err(bad_reply)?;
    if n == 0 && retried {
        return Err(DurableError::lost_reply(verb, id));
    }
    Ok(n > 0)
}
