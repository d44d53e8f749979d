//! The PostgreSQL backend's operator side ([`DurableOps`]): listings are
//! one indexed range each (`items_by_state_score`, or `items_by_kind`
//! with a kind), counts by kind one index scan, paused kinds and the
//! audit trail rows of their own tables (`schema_v2.rs`).
//!
//! Invariants: reads are retried as any idempotent call; writing an audit
//! record is not retried after a lost reply (it would write it twice);
//! a resume sends the queue's NOTIFY, so waiting consumers claim the
//! kind's due items at once.

use postgres::types::ToSql;

use super::backend::PostgresBackend;
use super::reply::{bad_reply, ms, sql_ms};
use super::schema;
use crate::durable::store::error::DurableError;
use crate::durable::store::ops::{
    fold_counts, AuditEntry, DurableOps, ItemDetail, ItemSummary, KindCounts, ListFilter, Page,
    PausedKind, StoredState,
};

/// The listing's SQL and parameters (`$1` queue, `$2` state, then only the
/// filters given, so the planner picks the kind index for a kind).
fn list_query(s: &str, q: &str, f: &ListFilter) -> (String, Vec<Box<dyn ToSql + Sync>>) {
    let mut text = format!(
        "SELECT id, kind, score, deadline, attempts FROM {s}.items \
         WHERE queue = $1 AND state = $2"
    );
    let mut args: Vec<Box<dyn ToSql + Sync>> =
        vec![Box::new(q.to_string()), Box::new(f.state.code() as i16)];
    let mut push = |sql: &str, v: Box<dyn ToSql + Sync>| {
        args.push(v);
        text.push_str(&sql.replace('?', &format!("${}", args.len())));
    };
    if let Some(kind) = &f.kind {
        push(" AND kind = ?", Box::new(kind.clone()));
    }
    if let Some(p) = &f.id_prefix {
        push(" AND starts_with(id, ?)", Box::new(p.clone()));
    }
    if let Some(from) = f.from_ms {
        push(" AND score >= ?", Box::new(sql_ms(from)));
    }
    if let Some(until) = f.until_ms {
        push(" AND score < ?", Box::new(sql_ms(until)));
    }
    if let Some(c) = &f.after {
        push(
            " AND (score, id) > (?::bigint",
            Box::new(sql_ms(c.score_ms)),
        );
        push(", ?::text)", Box::new(c.id.clone()));
    }
    push(" ORDER BY score, id LIMIT ?", Box::new(f.page() as i64));
    (text, args)
}

impl DurableOps for PostgresBackend {
    fn list(&self, filter: &ListFilter) -> Result<Page<ItemSummary>, DurableError> {
        let (text, args) = list_query(&self.pg.s, &self.pg.queue, filter);
        let params: Vec<&(dyn ToSql + Sync)> = args.iter().map(|b| &**b).collect();
        let (rows, _) = self
            .pg
            .run(true, |c| c.client.query(text.as_str(), &params))?;
        let items = rows
            .iter()
            .map(|r| {
                Ok(ItemSummary::from_parts(
                    r.try_get(0)?,
                    r.try_get(1)?,
                    filter.state,
                    ms(r.try_get(2)?),
                    ms(r.try_get(3)?),
                    u32::try_from(r.try_get::<_, i32>(4)?).unwrap_or(0),
                ))
            })
            .collect::<Result<Vec<_>, postgres::Error>>()
            .map_err(bad_reply)?;
        let next = (items.len() == filter.page()).then(|| items[items.len() - 1].cursor());
        Ok(Page { items, next })
    }

    fn inspect(&self, id: &str) -> Result<Option<ItemDetail>, DurableError> {
        let sql = format!(
            "SELECT state, score, deadline, due, token, attempts, envelope FROM {}.items \
             WHERE queue = $1 AND id = $2 AND state < 3",
            self.pg.s
        );
        let q = &self.pg.queue;
        let (row, _) = self
            .pg
            .run(true, |c| c.client.query_opt(sql.as_str(), &[q, &id]))?;
        let Some(r) = row else {
            return Ok(None);
        };
        let read = || -> Result<Option<ItemDetail>, postgres::Error> {
            let Some(state) = StoredState::from_code(r.try_get::<_, i16>(0)?.into()) else {
                return Ok(None);
            };
            Ok(Some(ItemDetail::new(
                id,
                state,
                ms(r.try_get(1)?),
                ms(r.try_get(2)?),
                ms(r.try_get(3)?),
                ms(r.try_get(4)?),
                u32::try_from(r.try_get::<_, i32>(5)?).unwrap_or(0),
                &r.try_get::<_, Vec<u8>>(6)?,
            )))
        };
        read().map_err(bad_reply)
    }

    fn count_by_kind(&self) -> Result<Vec<KindCounts>, DurableError> {
        let sql = format!(
            "SELECT kind, state, count(*) FROM {}.items WHERE queue = $1 AND state < 3 \
             GROUP BY kind, state ORDER BY kind",
            self.pg.s
        );
        let q = &self.pg.queue;
        let (rows, _) = self.pg.run(true, |c| c.client.query(sql.as_str(), &[q]))?;
        let rows = rows
            .iter()
            .map(|r| {
                Ok((
                    r.try_get::<_, String>(0)?,
                    i64::from(r.try_get::<_, i16>(1)?),
                    r.try_get::<_, i64>(2)?,
                ))
            })
            .collect::<Result<Vec<_>, postgres::Error>>()
            .map_err(bad_reply)?;
        Ok(fold_counts(rows))
    }

    fn pause_kind(&self, kind: &str, by: &str) -> Result<bool, DurableError> {
        let s = &self.pg.s;
        let sql = format!(
            "INSERT INTO {s}.paused (queue, kind, paused_by, at_ms) \
             VALUES ($1, $2, $3, {s}.now_ms()) ON CONFLICT (queue, kind) DO NOTHING"
        );
        let q = &self.pg.queue;
        let (n, _) = self
            .pg
            .run(true, |c| c.client.execute(sql.as_str(), &[q, &kind, &by]))?;
        Ok(n == 1)
    }

    fn resume_kind(&self, kind: &str) -> Result<bool, DurableError> {
        let s = &self.pg.s;
        let chan = schema::channel(&self.pg.opts.schema);
        let sql = format!(
            "WITH d AS (DELETE FROM {s}.paused WHERE queue = $1 AND kind = $2 RETURNING 1) \
             SELECT (SELECT count(*) FROM d), \
                    (SELECT count(*) FROM (SELECT pg_notify($3, $1) FROM d) AS n)"
        );
        let q = &self.pg.queue;
        let (row, _) = self.pg.run(true, |c| {
            c.client.query_one(sql.as_str(), &[q, &kind, &chan])
        })?;
        let n: i64 = row.try_get(0).map_err(bad_reply)?;
        Ok(n == 1)
    }

    fn paused_kinds(&self) -> Result<Vec<PausedKind>, DurableError> {
        let sql = format!(
            "SELECT kind, paused_by, at_ms FROM {}.paused WHERE queue = $1 ORDER BY kind",
            self.pg.s
        );
        let q = &self.pg.queue;
        let (rows, _) = self.pg.run(true, |c| c.client.query(sql.as_str(), &[q]))?;
        rows.iter()
            .map(|r| {
                Ok(PausedKind::new(
                    &r.try_get::<_, String>(0)?,
                    &r.try_get::<_, String>(1)?,
                    ms(r.try_get(2)?),
                ))
            })
            .collect::<Result<_, postgres::Error>>()
            .map_err(bad_reply)
    }

    fn record_audit(
        &self,
        by: &str,
        action: &str,
        target: &str,
        count: u64,
    ) -> Result<AuditEntry, DurableError> {
        let s = &self.pg.s;
        let sql = format!(
            "INSERT INTO {s}.audit (queue, at_ms, by_whom, action, target, count) \
             VALUES ($1, {s}.now_ms(), $2, $3, $4, $5) RETURNING seq, at_ms"
        );
        let q = &self.pg.queue;
        let n = sql_ms(count);
        let (row, _) = self.pg.run(false, |c| {
            c.client
                .query_one(sql.as_str(), &[q, &by, &action, &target, &n])
        })?;
        let seq: i64 = row.try_get(0).map_err(bad_reply)?;
        let at: i64 = row.try_get(1).map_err(bad_reply)?;
        Ok(AuditEntry::new(ms(seq), ms(at), by, action, target, count))
    }

    fn audit(&self, limit: usize, before: Option<u64>) -> Result<Vec<AuditEntry>, DurableError> {
        let sql = format!(
            "SELECT seq, at_ms, by_whom, action, target, count FROM {}.audit \
             WHERE queue = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3",
            self.pg.s
        );
        let q = &self.pg.queue;
        let before = before.map_or(i64::MAX, sql_ms);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let (rows, _) = self.pg.run(true, |c| {
            c.client.query(sql.as_str(), &[q, &before, &limit])
        })?;
        rows.iter()
            .map(|r| {
                Ok(AuditEntry::new(
                    ms(r.try_get(0)?),
                    ms(r.try_get(1)?),
                    &r.try_get::<_, String>(2)?,
                    &r.try_get::<_, String>(3)?,
                    &r.try_get::<_, String>(4)?,
                    ms(r.try_get(5)?),
                ))
            })
            .collect::<Result<_, postgres::Error>>()
            .map_err(bad_reply)
    }
}
