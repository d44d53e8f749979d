//! The PostgreSQL backend's dead-letter verbs: bury, requeue, purge and the
//! listing, each one statement on the schema's `items` table (no new
//! function, column or schema version: a schema made by an earlier build
//! serves them as it is).
//!
//! Invariants (besides `schema.rs`'s):
//! - A buried row's `envelope` is its dead record, then its envelope
//!   (`dead_record.rs`); `requeue` strips the record with the same rule as
//!   `dead_record::split`, so a requeued item is byte for byte what was put.
//! - "Now" is read once per statement (the `now` CTE).
//! - Bury matches (id, token, state 1) and leaves a receipt, as `nack`
//!   does; requeue and purge match `state = 2` under the row lock the
//!   update or delete takes, so of racing calls on one dead letter exactly
//!   one acts. Requeue is a put of the stored bytes, due now: a fresh
//!   token, attempts 0, deadline and due now, and the NOTIFY of a new head.

use super::backend::PostgresBackend;
use super::client::PgClient;
use super::reply::{acted_reply, bad_reply, buried_rows};
use crate::durable::store::backend::{Buried, DurableError, RECEIPT_MS};
use crate::durable::store::dead_record;

fn bury_sql(s: &str) -> String {
    format!(
        "WITH now AS (SELECT {s}.now_ms() AS ms),
         u AS (
             UPDATE {s}.items AS i
             SET state = 2, score = now.ms, envelope = $4::bytea || i.envelope,
                 r_token = $3, r_result = 0, r_expires = now.ms + {RECEIPT_MS}
             FROM now
             WHERE i.queue = $1::text AND i.id = $2::text AND i.token = $3::bigint AND i.state = 1
             RETURNING 1)
         SELECT EXISTS (SELECT 1 FROM u)
             OR EXISTS (SELECT 1 FROM {s}.items AS r, now
                        WHERE r.queue = $1 AND r.id = $2 AND r.r_token = $3
                          AND r.r_expires > now.ms)"
    )
}

pub(super) fn requeue_sql(s: &str) -> String {
    let tag: String = dead_record::TAG
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let head = dead_record::HEAD;
    // CASE evaluates its branches in order: get_byte runs only on an
    // envelope long enough for it.
    let len = "(get_byte(i.envelope, 3) * 256 + get_byte(i.envelope, 4))";
    format!(
        "WITH now AS (SELECT {s}.now_ms() AS ms),
         u AS (
             UPDATE {s}.items AS i
             SET state = 0, score = now.ms, deadline = now.ms, due = now.ms,
                 token = nextval('{s}.tokens'), attempts = 0,
                 envelope = CASE
                     WHEN length(i.envelope) < {head}
                       OR substring(i.envelope FROM 1 FOR 3) <> '\\x{tag}'::bytea THEN i.envelope
                     WHEN length(i.envelope) < {head} + {len} THEN i.envelope
                     ELSE substring(i.envelope FROM {head} + 1 + {len})
                 END,
                 r_token = NULL, r_result = NULL, r_expires = NULL
             FROM now
             WHERE i.queue = $1::text AND i.id = $2::text AND i.state = 2
             RETURNING i.score),
         w AS (SELECT {s}.wake_if_head($1, $2, u.score) FROM u)
         SELECT count(*) FROM w"
    )
}

pub(super) fn purge_sql(s: &str) -> String {
    format!(
        "WITH d AS (DELETE FROM {s}.items
                    WHERE queue = $1::text AND id = $2::text AND state = 2 RETURNING 1)
         SELECT count(*) FROM d"
    )
}

// ===== impl PostgresBackend =====

impl PostgresBackend {
    pub(super) fn bury_row(
        &self,
        id: &str,
        token: u64,
        error: Option<&str>,
    ) -> Result<bool, DurableError> {
        let pg = &self.pg;
        let sql = bury_sql(&pg.s);
        let record = dead_record::record(error);
        let token = i64::try_from(token).unwrap_or(i64::MAX);
        let q = &pg.queue;
        let (row, _) = pg.run(true, |c| {
            c.client
                .query_one(sql.as_str(), &[q, &id, &token, &record.as_slice()])
        })?;
        row.try_get::<_, Option<bool>>(0)
            .map(|b| b.unwrap_or(false))
            .map_err(bad_reply)
    }

    pub(super) fn requeue_row(&self, id: &str) -> Result<bool, DurableError> {
        acted(&self.pg, "requeue", &requeue_sql(&self.pg.s), id)
    }

    pub(super) fn purge_row(&self, id: &str) -> Result<bool, DurableError> {
        acted(&self.pg, "purge", &purge_sql(&self.pg.s), id)
    }

    pub(super) fn dead_rows(&self, max: usize) -> Result<Vec<Buried>, DurableError> {
        let q = &self.pg.queue;
        let max = i64::try_from(max).unwrap_or(i64::MAX);
        let (rows, _) = self
            .pg
            .run(true, |c| c.client.query(&c.st.dead, &[q, &max]))?;
        buried_rows(&rows)
    }
}

/// Runs a requeue or purge of `id`: whether it acted on a dead letter.
fn acted(pg: &PgClient, verb: &str, sql: &str, id: &str) -> Result<bool, DurableError> {
    let q = &pg.queue;
    let (row, retried) = pg.run(true, |c| c.client.query_one(sql, &[q, &id]))?;
    acted_reply(&row, retried, verb, id)
}
