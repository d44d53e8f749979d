//! How arguments go to SQL and replies come back: ms values both ways, the
//! put and cancel replies (shared with the caller's-transaction verbs of
//! `tx.rs`), and the one-boolean-a-pair replies of the batched calls.
//!
//! Invariant: nothing here panics on what the server sends; a reply of an
//! unexpected shape is `DurableError::Format`.

use crate::durable::store::backend::{ceil_ms, Cancelled, DurableError, Put, When, MAX_MS};
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
    let deadline_ms = deadline.map_or(0, ms);
    Ok(match result {
        0 => Put::Inserted { deadline_ms },
        1 => Put::Replaced { deadline_ms },
        _ => Put::Exists,
    })
}

/// Reads a cancel's reply row.
pub(super) fn cancel_reply(row: &postgres::Row) -> Result<Cancelled, DurableError> {
    let state: Option<i16> = row.try_get(0).map_err(bad_reply)?;
    let env: Option<Vec<u8>> = row.try_get(1).map_err(bad_reply)?;
    Ok(match state {
        Some(0) => Cancelled::Pending(env.unwrap_or_default()),
        Some(1) => Cancelled::InFlight,
        Some(2) => Cancelled::Dead(crate::durable::store::dead_record::envelope(
            env.unwrap_or_default(),
        )),
        _ => Cancelled::NotFound,
    })
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
