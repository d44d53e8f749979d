//! The dead-letter steps: bury with a reason, requeue, purge, the listing;
//! each inside the caller's transaction, as `steps.rs`'s.
//!
//! Invariant: only a dead row's envelope carries a dead record
//! (`dead_record.rs`), put in front by `bury` and stripped by `requeue`,
//! here in Rust (the record's one rule, shared with the memory backend).

use rusqlite::{params, Connection, OptionalExtension};

use super::error::{bad_row, map};
use super::steps;
use crate::durable::store::backend::{Buried, MAX_MS, RECEIPT_MS};
use crate::durable::store::dead_record;
use crate::durable::store::error::DurableError;

fn sql(ms: u64) -> i64 {
    ms.min(MAX_MS) as i64
}

/// Moves (id, token) to the dead set, recording `error`: whether that
/// token held it (or left a live receipt).
pub(super) fn bury(
    c: &Connection,
    q: &str,
    id: &str,
    token: u64,
    error: Option<&str>,
    now: u64,
) -> Result<bool, DurableError> {
    let (token, now) = (sql(token), sql(now));
    // The record goes in front in Rust: SQL's `||` makes text of blobs.
    let held: Option<Vec<u8>> = c
        .prepare_cached(
            "SELECT envelope FROM schedpool_items WHERE queue = ?1 AND id = ?2 AND token = ?3 \
             AND state = 1",
        )
        .and_then(|mut s| s.query_row(params![q, id, token], |r| r.get(0)).optional())
        .map_err(|e| map("bury", e))?;
    let n = match held {
        None => 0,
        Some(envelope) => {
            let mut stored = dead_record::record(error);
            stored.extend_from_slice(&envelope);
            c.prepare_cached(
                "UPDATE schedpool_items SET state = 2, score = ?4, envelope = ?5, \
                 r_token = ?3, r_result = 0, r_expires = ?4 + ?6 \
                 WHERE queue = ?1 AND id = ?2 AND token = ?3 AND state = 1",
            )
            .and_then(|mut s| s.execute(params![q, id, token, now, stored, RECEIPT_MS as i64]))
            .map_err(|e| map("bury", e))?
        }
    };
    if n == 1 {
        return Ok(true);
    }
    c.prepare_cached(
        "SELECT EXISTS (SELECT 1 FROM schedpool_items WHERE queue = ?1 AND id = ?2 \
         AND r_token = ?3 AND r_expires > ?4)",
    )
    .and_then(|mut s| s.query_row(params![q, id, token, now], |r| r.get(0)))
    .map_err(|e| map("bury", e))
}

/// Puts the dead item (q, id) back, due now, as a fresh put of its stored
/// value: whether it was dead, and whether it is now the head.
pub(super) fn requeue(
    c: &Connection,
    q: &str,
    id: &str,
    now: u64,
) -> Result<(bool, bool), DurableError> {
    let stored: Option<Vec<u8>> = c
        .prepare_cached(
            "SELECT envelope FROM schedpool_items WHERE queue = ?1 AND id = ?2 AND state = 2",
        )
        .and_then(|mut s| s.query_row(params![q, id], |r| r.get(0)).optional())
        .map_err(|e| map("requeue", e))?;
    let Some(stored) = stored else {
        return Ok((false, false));
    };
    let envelope = dead_record::envelope(stored);
    let token = steps::next_token(c)?;
    let at = now;
    let now = sql(now);
    c.prepare_cached(
        "UPDATE schedpool_items SET state = 0, score = ?3, deadline = ?3, due = ?3, token = ?4, \
         attempts = 0, envelope = ?5, r_token = NULL, r_result = NULL, r_expires = NULL \
         WHERE queue = ?1 AND id = ?2 AND state = 2",
    )
    .and_then(|mut s| s.execute(params![q, id, now, token, envelope]))
    .map_err(|e| map("requeue", e))?;
    Ok((true, steps::head_at(c, q, id, at)?))
}

/// Deletes the dead item (q, id): whether it was dead.
pub(super) fn purge(c: &Connection, q: &str, id: &str) -> Result<bool, DurableError> {
    c.prepare_cached("DELETE FROM schedpool_items WHERE queue = ?1 AND id = ?2 AND state = 2")
        .and_then(|mut s| s.execute(params![q, id]))
        .map(|n| n > 0)
        .map_err(|e| map("purge", e))
}

/// Up to `max` dead items, oldest death first (ties by id).
pub(super) fn list(c: &Connection, q: &str, max: usize) -> Result<Vec<Buried>, DurableError> {
    let max = i64::try_from(max).unwrap_or(i64::MAX);
    let mut st = c
        .prepare_cached(
            "SELECT id, envelope, attempts, score FROM schedpool_items WHERE queue = ?1 \
             AND state = 2 ORDER BY score, id LIMIT ?2",
        )
        .map_err(|e| map("dead_letters", e))?;
    let rows = st
        .query_map(params![q, max], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, Vec<u8>>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, i64>(3)?,
            ))
        })
        .map_err(|e| map("dead_letters", e))?;
    rows.map(|row| {
        let (id, stored, attempts, died) = row.map_err(bad_row)?;
        let (error, envelope) = dead_record::split(&stored);
        Ok(Buried {
            id,
            envelope: envelope.to_vec(),
            error,
            attempts: u32::try_from(attempts).unwrap_or(0),
            died_ms: u64::try_from(died).unwrap_or(0),
        })
    })
    .collect()
}
