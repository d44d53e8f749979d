//! The backend's atomic steps, each a few statements run inside one
//! transaction the caller holds (`BEGIN IMMEDIATE` on the backend's own
//! connections, or the application's transaction for `put_in` and
//! `cancel_in`): the PostgreSQL functions' semantics, in Rust.
//!
//! Invariants:
//!
//! - "Now" is read once per step, by the caller, from the host's clock,
//!   and passed in: nothing here reads a clock.
//! - Tokens come from the file's one counter (`schedpool_tokens`), drawn
//!   inside the step's transaction, so they never repeat; settles match
//!   (queue, id, token, state 1).
//! - A settle leaves a receipt in the row (`r_token`, `r_result`,
//!   `r_expires`), so a repeated settle with the same token within
//!   `RECEIPT_MS` answers as the first did; claims delete acked rows whose
//!   receipt expired, at most `max + 16` a claim.
//! - Every loop is bounded: reclaim ≤ 100 expired leases, claim ≤ `max`.
//! - Every lookup by id uses the primary key, every range the
//!   `(queue, state, score, id)` index: O(log n).
//! - Every put stores the envelope's kind in `kind`; claims, and the head
//!   a put or a waiter compares with, skip pending items whose kind is in
//!   `schedpool_paused` (they are passed over, one index step each).

use rusqlite::{params, Connection, OptionalExtension};

use super::error::{bad_row, map};
use crate::durable::store::backend::{
    ceil_ms, Cancelled, ClaimBatch, Claimed, Counts, Nack, Put, PutMode, Repeat, Stored,
    StoredState, When, MAX_MS, RECEIPT_MS,
};
use crate::durable::store::dead_record;
use crate::durable::store::error::DurableError;
use crate::durable::store::ops_read::stored_kind;

/// The most expired leases one claim moves back.
const RECLAIM: i64 = 100;

/// A ms value as SQL stores it.
fn sql(ms: u64) -> i64 {
    ms.min(MAX_MS) as i64
}

/// A stored ms value (a negative one, from a foreign writer, is 0).
fn ms(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

/// Draws ?1 tokens, answering the last of them.
pub(super) const TOKENS_SQL: &str =
    "UPDATE schedpool_tokens SET last = last + ?1 WHERE one = 1 RETURNING last";

/// `put`'s first read: the state of (?1, ?2), if stored.
pub(super) const STATE_SQL: &str = "SELECT state FROM schedpool_items WHERE queue = ?1 AND id = ?2";

/// `put`'s write: (?1 queue, ?2 id) pending at ?3 with token ?4,
/// envelope ?5 and kind ?6 (the envelope's, for the operator's index),
/// whatever it was.
pub(super) const UPSERT_SQL: &str =
    "INSERT INTO schedpool_items (queue, id, state, score, deadline, due, token, attempts, envelope, kind) \
     VALUES (?1, ?2, 0, ?3, ?3, ?3, ?4, 0, ?5, ?6) \
     ON CONFLICT (queue, id) DO UPDATE SET state = 0, score = ?3, deadline = ?3, due = ?3, \
       token = ?4, attempts = 0, envelope = ?5, kind = ?6, r_token = NULL, r_result = NULL, \
       r_expires = NULL";

/// `cancel`: deletes (?1, ?2) unless acked, answering its state and
/// envelope.
pub(super) const CANCEL_SQL: &str = "DELETE FROM schedpool_items WHERE queue = ?1 AND id = ?2 \
     AND state < 3 RETURNING state, envelope";

/// The stored deadline of a put `when`, at `now`.
pub(super) fn deadline_of(when: When, now: u64) -> i64 {
    sql(match when {
        When::After(delay) => now.saturating_add(ceil_ms(delay)),
        When::AtServerMs(at) => at,
    })
}

/// A put's answer: `live` when the id was pending or in flight before.
pub(super) fn put_answer(live: bool, deadline: i64) -> Put {
    let deadline_ms = ms(deadline);
    if live {
        Put::Replaced { deadline_ms }
    } else {
        Put::Inserted { deadline_ms }
    }
}

/// A cancel's answer, from the (state, envelope) it deleted.
pub(super) fn cancelled(row: Option<(i64, Vec<u8>)>) -> Cancelled {
    match row {
        None => Cancelled::NotFound,
        Some((0, env)) => Cancelled::Pending(env),
        Some((1, _)) => Cancelled::InFlight,
        Some((_, env)) => Cancelled::Dead(dead_record::envelope(env)),
    }
}

/// Draws `n` tokens: the last of them (the first is `last - n + 1`).
fn tokens(c: &Connection, n: i64) -> Result<i64, DurableError> {
    c.prepare_cached(TOKENS_SQL)
        .and_then(|mut s| s.query_row([n], |r| r.get(0)))
        .map_err(|e| map("drawing a token", e))
}

/// True when some kind of queue `q` is paused (claims then skip its items).
pub(super) fn any_paused(c: &Connection, q: &str) -> Result<bool, DurableError> {
    c.prepare_cached("SELECT EXISTS (SELECT 1 FROM schedpool_paused WHERE queue = ?1)")
        .and_then(|mut s| s.query_row([q], |r| r.get(0)))
        .map_err(|e| map("reading the paused kinds", e))
}

/// Draws one token.
pub(super) fn next_token(c: &Connection) -> Result<i64, DurableError> {
    tokens(c, 1)
}

/// True when (q, id) due at `at` is the earliest pending item.
pub(super) fn head_at(c: &Connection, q: &str, id: &str, at: u64) -> Result<bool, DurableError> {
    is_head(c, q, id, sql(at))
}

/// True when (q, id) at `score` is the earliest pending item.
fn is_head(c: &Connection, q: &str, id: &str, score: i64) -> Result<bool, DurableError> {
    c.prepare_cached(
        "SELECT NOT EXISTS (SELECT 1 FROM schedpool_items WHERE queue = ?1 AND state = 0 \
         AND (score < ?3 OR (score = ?3 AND id < ?2)) \
         AND kind NOT IN (SELECT kind FROM schedpool_paused WHERE queue = ?1))",
    )
    .and_then(|mut s| s.query_row(params![q, id, score], |r| r.get(0)))
    .map_err(|e| map("reading the head", e))
}

/// The receipt a settle with `token` left on (q, id), if it is live.
fn receipt(
    c: &Connection,
    q: &str,
    id: &str,
    token: i64,
    now: i64,
) -> Result<Option<i64>, DurableError> {
    c.prepare_cached(
        "SELECT r_result FROM schedpool_items WHERE queue = ?1 AND id = ?2 \
         AND r_token = ?3 AND r_expires > ?4",
    )
    .and_then(|mut s| {
        s.query_row(params![q, id, token, now], |r| r.get::<_, Option<i64>>(0))
            .optional()
    })
    .map(Option::flatten)
    .map_err(|e| map("reading a receipt", e))
}

/// Stores `envelope` under (q, id): the put and whether it is the new head.
pub(super) fn put(
    c: &Connection,
    q: &str,
    id: &str,
    envelope: &[u8],
    when: When,
    mode: PutMode,
    now: u64,
) -> Result<(Put, bool), DurableError> {
    if id.is_empty() {
        return Err(DurableError::Config("an item id must not be empty".into()));
    }
    let d = deadline_of(when, now);
    let old: Option<i64> = c
        .prepare_cached(STATE_SQL)
        .and_then(|mut s| s.query_row(params![q, id], |r| r.get(0)).optional())
        .map_err(|e| map("put", e))?;
    let live = matches!(old, Some(0 | 1));
    if live && mode == PutMode::IfAbsent {
        return Ok((Put::Exists, false));
    }
    let token = tokens(c, 1)?;
    let kind = stored_kind(StoredState::Pending, envelope);
    c.prepare_cached(UPSERT_SQL)
        .and_then(|mut s| s.execute(params![q, id, d, token, envelope, kind]))
        .map_err(|e| map("put", e))?;
    Ok((put_answer(live, d), is_head(c, q, id, d)?))
}

/// Moves expired leases back (or to the dead set), then leases up to `max`
/// due items for `lease_ms`: the batch, whether it filled with more due
/// (another waiter should claim too), and the earliest pending due time.
pub(super) fn claim(
    c: &Connection,
    q: &str,
    lease_ms: u64,
    max: usize,
    max_attempts: u32,
    now: u64,
) -> Result<(ClaimBatch, bool, Option<u64>), DurableError> {
    let now_i = sql(now);
    let max_i = i64::try_from(max).unwrap_or(i64::MAX);
    let m = |e| map("claim", e);
    c.prepare_cached(
        "DELETE FROM schedpool_items WHERE queue = ?1 AND id IN (SELECT id FROM schedpool_items \
         WHERE queue = ?1 AND state = 3 AND score <= ?2 LIMIT ?3)",
    )
    .and_then(|mut s| s.execute(params![q, now_i, max_i.saturating_add(16)]))
    .map_err(m)?;
    c.prepare_cached(
        "UPDATE schedpool_items SET \
           state = CASE WHEN ?3 > 0 AND attempts >= ?3 THEN 2 ELSE 0 END, \
           score = CASE WHEN ?3 > 0 AND attempts >= ?3 THEN ?2 ELSE due END \
         WHERE queue = ?1 AND id IN (SELECT id FROM schedpool_items WHERE queue = ?1 \
           AND state = 1 AND score <= ?2 ORDER BY score, id LIMIT ?4)",
    )
    .and_then(|mut s| s.execute(params![q, now_i, max_attempts, RECLAIM]))
    .map_err(m)?;
    let paused = any_paused(c, q)?;
    let ids: Vec<String> = c
        .prepare_cached(if paused {
            "SELECT id FROM schedpool_items WHERE queue = ?1 AND state = 0 AND score <= ?2 \
             AND kind NOT IN (SELECT kind FROM schedpool_paused WHERE queue = ?1) \
             ORDER BY score, id LIMIT ?3"
        } else {
            "SELECT id FROM schedpool_items WHERE queue = ?1 AND state = 0 AND score <= ?2 \
             ORDER BY score, id LIMIT ?3"
        })
        .and_then(|mut s| {
            s.query_map(params![q, now_i, max_i], |r| r.get(0))?
                .collect()
        })
        .map_err(m)?;
    let mut items = Vec::with_capacity(ids.len());
    if !ids.is_empty() {
        let n = ids.len() as i64;
        let first = tokens(c, n)? - n + 1;
        let lease_end = sql(now.saturating_add(lease_ms));
        let mut st = c
            .prepare_cached(
                "UPDATE schedpool_items SET state = 1, score = ?3, token = ?4, attempts = attempts + 1 \
                 WHERE queue = ?1 AND id = ?2 RETURNING attempts, deadline, due, envelope",
            )
            .map_err(m)?;
        for (i, id) in ids.into_iter().enumerate() {
            let token = first + i as i64;
            let (attempt, deadline, due, envelope): (i64, i64, i64, Vec<u8>) = st
                .query_row(params![q, id, lease_end, token], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
                })
                .map_err(m)?;
            items.push(Claimed {
                id,
                token: ms(token),
                attempt: u32::try_from(attempt).unwrap_or(u32::MAX),
                deadline_ms: ms(deadline),
                due_ms: ms(due),
                claimed_ms: now,
                envelope,
            });
        }
    }
    let (pending, leased): (Option<i64>, Option<i64>) = c
        .prepare_cached(if paused {
            "SELECT (SELECT score FROM schedpool_items WHERE queue = ?1 AND state = 0 \
                       AND kind NOT IN (SELECT kind FROM schedpool_paused WHERE queue = ?1) \
                       ORDER BY score LIMIT 1), \
                    (SELECT min(score) FROM schedpool_items WHERE queue = ?1 AND state = 1)"
        } else {
            "SELECT (SELECT min(score) FROM schedpool_items WHERE queue = ?1 AND state = 0), \
                    (SELECT min(score) FROM schedpool_items WHERE queue = ?1 AND state = 1)"
        })
        .and_then(|mut s| s.query_row(params![q], |r| Ok((r.get(0)?, r.get(1)?))))
        .map_err(m)?;
    let next = match (pending, leased) {
        (Some(p), Some(l)) => Some(p.min(l)),
        (p, l) => p.or(l),
    };
    let wait = next.map(|at| ms(at).saturating_sub(now));
    let chain = max > 0 && items.len() == max && wait == Some(0);
    let wait = wait.map(std::time::Duration::from_millis);
    Ok((ClaimBatch { items, wait }, chain, pending.map(ms)))
}

/// Extends the leases of (id, token) pairs: one answer a pair.
pub(super) fn extend(
    c: &Connection,
    q: &str,
    leases: &[(&str, u64)],
    lease_ms: u64,
    now: u64,
) -> Result<Vec<bool>, DurableError> {
    let end = sql(now.saturating_add(lease_ms));
    let mut st = c
        .prepare_cached(
            "UPDATE schedpool_items SET score = ?4 WHERE queue = ?1 AND id = ?2 AND token = ?3 \
             AND state = 1",
        )
        .map_err(|e| map("extend", e))?;
    leases
        .iter()
        .map(|(id, token)| {
            st.execute(params![q, id, sql(*token), end])
                .map(|n| n == 1)
                .map_err(|e| map("extend", e))
        })
        .collect()
}

/// Acks (id, token): whether that token held it (or left a live receipt).
pub(super) fn ack(
    c: &Connection,
    q: &str,
    id: &str,
    token: u64,
    now: u64,
) -> Result<bool, DurableError> {
    let (token, now) = (sql(token), sql(now));
    let until = now + RECEIPT_MS as i64;
    let n = c
        .prepare_cached(
            "UPDATE schedpool_items SET state = 3, score = ?4, envelope = x'', r_token = ?3, \
             r_result = 0, r_expires = ?4 WHERE queue = ?1 AND id = ?2 AND token = ?3 AND state = 1",
        )
        .and_then(|mut s| s.execute(params![q, id, token, until]))
        .map_err(|e| map("ack", e))?;
    Ok(n == 1 || receipt(c, q, id, token, now)?.is_some())
}

/// Gives (id, token) back or dead-letters it: whether that token held it,
/// and whether a pending item is now the head.
pub(super) fn nack(
    c: &Connection,
    q: &str,
    id: &str,
    token: u64,
    to: Nack,
    now: u64,
) -> Result<(bool, bool), DurableError> {
    let (token, now_i) = (sql(token), sql(now));
    let (kind, delay) = match to {
        Nack::Retry(d) => (0, ceil_ms(d)),
        Nack::Dead => (1, 0),
        Nack::Release => (2, 0),
        Nack::Defer(d) => (3, ceil_ms(d)),
    };
    let at = sql(now.saturating_add(delay));
    let score: Option<i64> = c
        .prepare_cached(
            "UPDATE schedpool_items SET \
               state = CASE WHEN ?4 = 1 THEN 2 ELSE 0 END, \
               due = CASE WHEN ?4 IN (0, 3) THEN ?6 ELSE due END, \
               score = CASE ?4 WHEN 1 THEN ?5 WHEN 2 THEN due ELSE ?6 END, \
               attempts = CASE WHEN ?4 = 3 THEN max(attempts - 1, 0) ELSE attempts END, \
               r_token = ?3, r_result = 0, r_expires = ?5 + ?7 \
             WHERE queue = ?1 AND id = ?2 AND token = ?3 AND state = 1 RETURNING score",
        )
        .and_then(|mut s| {
            s.query_row(
                params![q, id, token, kind, now_i, at, RECEIPT_MS as i64],
                |r| r.get(0),
            )
            .optional()
        })
        .map_err(|e| map("nack", e))?;
    match score {
        Some(score) if kind != 1 => Ok((true, is_head(c, q, id, score)?)),
        Some(_) => Ok((true, false)),
        None => Ok((receipt(c, q, id, token, now_i)?.is_some(), false)),
    }
}

/// Acks (id, token) and puts it back at its next occurrence: the next due
/// time (or the receipt's), `None` when not held; and whether it is the
/// new head.
pub(super) fn reschedule(
    c: &Connection,
    q: &str,
    id: &str,
    token: u64,
    repeat: Repeat,
    now: u64,
) -> Result<(Option<u64>, bool), DurableError> {
    let (token, now_i) = (sql(token), sql(now));
    let (rate, period) = match repeat {
        Repeat::FixedRate(p) => (true, sql(ceil_ms(p))),
        Repeat::FixedDelay(p) => (false, sql(ceil_ms(p))),
    };
    let next_token = tokens(c, 1)?;
    let next: Option<i64> = c
        .prepare_cached(
            "UPDATE schedpool_items SET state = 0, \
               deadline = min(CASE WHEN ?4 THEN deadline + ?5 ELSE ?6 + ?5 END, ?8), \
               due = min(CASE WHEN ?4 THEN deadline + ?5 ELSE ?6 + ?5 END, ?8), \
               score = min(CASE WHEN ?4 THEN deadline + ?5 ELSE ?6 + ?5 END, ?8), \
               token = ?7, attempts = 0, r_token = ?3, \
               r_result = min(CASE WHEN ?4 THEN deadline + ?5 ELSE ?6 + ?5 END, ?8), \
               r_expires = ?6 + ?9 \
             WHERE queue = ?1 AND id = ?2 AND token = ?3 AND state = 1 RETURNING score",
        )
        .and_then(|mut s| {
            let p = params![
                q,
                id,
                token,
                rate,
                period,
                now_i,
                next_token,
                MAX_MS as i64,
                RECEIPT_MS as i64
            ];
            s.query_row(p, |r| r.get(0)).optional()
        })
        .map_err(|e| map("reschedule", e))?;
    match next {
        Some(next) => Ok((Some(ms(next)), is_head(c, q, id, next)?)),
        None => Ok((receipt(c, q, id, token, now_i)?.map(ms), false)),
    }
}

/// Removes (q, id) wherever it is.
pub(super) fn cancel(c: &Connection, q: &str, id: &str) -> Result<Cancelled, DurableError> {
    let row: Option<(i64, Vec<u8>)> = c
        .prepare_cached(CANCEL_SQL)
        .and_then(|mut s| {
            s.query_row(params![q, id], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()
        })
        .map_err(|e| map("cancel", e))?;
    Ok(cancelled(row))
}

/// Reads (q, id) without changing it.
pub(super) fn get(c: &Connection, q: &str, id: &str) -> Result<Option<Stored>, DurableError> {
    let row: Option<(i64, i64, Vec<u8>)> = c
        .prepare_cached(
            "SELECT state, deadline, envelope FROM schedpool_items WHERE queue = ?1 AND id = ?2 \
             AND state < 3",
        )
        .and_then(|mut s| {
            s.query_row(params![q, id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .optional()
        })
        .map_err(|e| map("get", e))?;
    Ok(row.map(|(state, deadline, envelope)| {
        let (state, envelope) = match state {
            0 => (StoredState::Pending, envelope),
            1 => (StoredState::InFlight, envelope),
            _ => (StoredState::Dead, dead_record::envelope(envelope)),
        };
        Stored {
            envelope,
            deadline_ms: ms(deadline),
            state,
        }
    }))
}

/// The counts by state, and the earliest pending due time.
pub(super) fn counts(c: &Connection, q: &str) -> Result<Counts, DurableError> {
    let mut counts = Counts::default();
    let mut st = c
        .prepare_cached(
            "SELECT state, count(*) FROM schedpool_items WHERE queue = ?1 AND state < 3 \
             GROUP BY state",
        )
        .map_err(|e| map("counts", e))?;
    let rows = st
        .query_map(params![q], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?))
        })
        .map_err(|e| map("counts", e))?;
    for row in rows {
        let (state, n) = row.map_err(bad_row)?;
        let n = usize::try_from(n).unwrap_or(0);
        match state {
            0 => counts.pending = n,
            1 => counts.in_flight = n,
            _ => counts.dead = n,
        }
    }
    Ok(counts)
}

/// The earliest pending due time.
pub(super) fn peek(c: &Connection, q: &str) -> Result<Option<u64>, DurableError> {
    c.prepare_cached("SELECT min(score) FROM schedpool_items WHERE queue = ?1 AND state = 0")
        .and_then(|mut s| s.query_row(params![q], |r| r.get::<_, Option<i64>>(0)))
        .map(|v| v.map(ms))
        .map_err(|e| map("peek", e))
}
