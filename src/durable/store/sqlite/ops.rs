//! The SQLite backend's operator side ([`DurableOps`]): listings are one
//! indexed range each (`(queue, state, score, id)`, or `(queue, kind,
//! state, score, id)` with a kind), counts by kind one covering-index
//! scan, paused kinds and the audit trail rows of their own tables
//! (`schema.rs`, version 2).
//!
//! Invariants: reads run on one snapshot; changes run in `BEGIN
//! IMMEDIATE` as every other verb; a resume wakes this process's waiters
//! at once and other processes' at their next poll of the file (the head
//! they compare with moves earlier).

use rusqlite::types::Value;
use rusqlite::{params, params_from_iter, Connection, OptionalExtension};

use super::backend::SqliteBackend;
use super::error::map;
use crate::durable::store::error::DurableError;
use crate::durable::store::ops::{
    fold_counts, AuditEntry, DurableOps, ItemDetail, ItemSummary, KindCounts, ListFilter, Page,
    PausedKind, StoredState,
};

fn ms(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

fn sql(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX)
}

/// The listing's SQL and parameters: only the filters given, so the
/// planner picks the kind index when a kind is given.
fn list_query(q: &str, f: &ListFilter) -> (String, Vec<Value>) {
    let mut sql_text = String::from(
        "SELECT id, kind, score, deadline, attempts FROM schedpool_items \
         WHERE queue = ?1 AND state = ?2",
    );
    let mut args: Vec<Value> = vec![q.to_string().into(), f.state.code().into()];
    // Appends `text`, its `?` numbered as the next parameter, `v`.
    fn arg(text: &str, v: Value, sql_text: &mut String, args: &mut Vec<Value>) {
        args.push(v);
        sql_text.push_str(&text.replace('?', &format!("?{}", args.len())));
    }
    let (t, a) = (&mut sql_text, &mut args);
    if let Some(kind) = &f.kind {
        arg(" AND kind = ?", kind.clone().into(), t, a);
    }
    if let Some(p) = &f.id_prefix {
        // The range lets the planner use the primary key when the prefix
        // is rare; the exact test stays (ids compare as bytes, BINARY).
        arg(" AND id >= ?", p.clone().into(), t, a);
        arg(" AND id < ?", format!("{p}\u{10FFFF}").into(), t, a);
        arg(" AND substr(id, 1, length(?)) = ?", p.clone().into(), t, a);
    }
    if let Some(from) = f.from_ms {
        arg(" AND score >= ?", sql(from).into(), t, a);
    }
    if let Some(until) = f.until_ms {
        arg(" AND score < ?", sql(until).into(), t, a);
    }
    if let Some(c) = &f.after {
        arg(" AND (score, id) > (?", sql(c.score_ms).into(), t, a);
        arg(", ?)", c.id.clone().into(), t, a);
    }
    arg(
        " ORDER BY score, id LIMIT ?",
        (f.page() as i64).into(),
        t,
        a,
    );
    (sql_text, args)
}

fn list(c: &Connection, q: &str, f: &ListFilter) -> Result<Page<ItemSummary>, DurableError> {
    let (text, args) = list_query(q, f);
    let m = |e| map("listing items", e);
    let items: Vec<ItemSummary> = c
        .prepare_cached(&text)
        .and_then(|mut s| {
            s.query_map(params_from_iter(args), |r| {
                Ok(ItemSummary::from_parts(
                    r.get(0)?,
                    r.get(1)?,
                    f.state,
                    ms(r.get(2)?),
                    ms(r.get(3)?),
                    u32::try_from(r.get::<_, i64>(4)?).unwrap_or(u32::MAX),
                ))
            })?
            .collect()
        })
        .map_err(m)?;
    let next = (items.len() == f.page()).then(|| items[items.len() - 1].cursor());
    Ok(Page { items, next })
}

fn inspect(c: &Connection, q: &str, id: &str) -> Result<Option<ItemDetail>, DurableError> {
    c.prepare_cached(
        "SELECT state, score, deadline, due, token, attempts, envelope FROM schedpool_items \
         WHERE queue = ?1 AND id = ?2 AND state <= 2",
    )
    .and_then(|mut s| {
        s.query_row(params![q, id], |r| {
            let Some(state) = StoredState::from_code(r.get(0)?) else {
                return Ok(None);
            };
            Ok(Some(ItemDetail::new(
                id,
                state,
                ms(r.get(1)?),
                ms(r.get(2)?),
                ms(r.get(3)?),
                ms(r.get(4)?),
                u32::try_from(r.get::<_, i64>(5)?).unwrap_or(u32::MAX),
                &r.get::<_, Vec<u8>>(6)?,
            )))
        })
        .optional()
    })
    .map(Option::flatten)
    .map_err(|e| map("inspecting an item", e))
}

fn count_by_kind(c: &Connection, q: &str) -> Result<Vec<KindCounts>, DurableError> {
    let rows: Vec<(String, i64, i64)> = c
        .prepare_cached(
            "SELECT kind, state, count(*) FROM schedpool_items WHERE queue = ?1 AND state <= 2 \
             GROUP BY kind, state ORDER BY kind",
        )
        .and_then(|mut s| {
            s.query_map([q], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                .collect()
        })
        .map_err(|e| map("counting items by kind", e))?;
    Ok(fold_counts(rows))
}

impl DurableOps for SqliteBackend {
    fn list(&self, filter: &ListFilter) -> Result<Page<ItemSummary>, DurableError> {
        self.read(|c| list(c, self.queue_name(), filter))
    }

    fn inspect(&self, id: &str) -> Result<Option<ItemDetail>, DurableError> {
        self.read(|c| inspect(c, self.queue_name(), id))
    }

    fn count_by_kind(&self) -> Result<Vec<KindCounts>, DurableError> {
        self.read(|c| count_by_kind(c, self.queue_name()))
    }

    fn pause_kind(&self, kind: &str, by: &str) -> Result<bool, DurableError> {
        self.write("pause_kind", |c, now| {
            c.prepare_cached(
                "INSERT INTO schedpool_paused (queue, kind, paused_by, at_ms) VALUES (?1, ?2, ?3, ?4) \
                 ON CONFLICT (queue, kind) DO NOTHING",
            )
            .and_then(|mut s| s.execute(params![self.queue_name(), kind, by, sql(now)]))
            .map(|n| n == 1)
            .map_err(|e| map("pausing a kind", e))
        })
    }

    fn resume_kind(&self, kind: &str) -> Result<bool, DurableError> {
        let resumed = self.write("resume_kind", |c, _| {
            c.prepare_cached("DELETE FROM schedpool_paused WHERE queue = ?1 AND kind = ?2")
                .and_then(|mut s| s.execute(params![self.queue_name(), kind]))
                .map(|n| n == 1)
                .map_err(|e| map("resuming a kind", e))
        })?;
        self.wake_if(resumed);
        Ok(resumed)
    }

    fn paused_kinds(&self) -> Result<Vec<PausedKind>, DurableError> {
        self.read(|c| {
            c.prepare_cached(
                "SELECT kind, paused_by, at_ms FROM schedpool_paused WHERE queue = ?1 ORDER BY kind",
            )
            .and_then(|mut s| {
                s.query_map([self.queue_name()], |r| {
                    Ok(PausedKind::new(
                        &r.get::<_, String>(0)?,
                        &r.get::<_, String>(1)?,
                        ms(r.get(2)?),
                    ))
                })?
                .collect()
            })
            .map_err(|e| map("reading the paused kinds", e))
        })
    }

    fn record_audit(
        &self,
        by: &str,
        action: &str,
        target: &str,
        count: u64,
    ) -> Result<AuditEntry, DurableError> {
        self.write("record_audit", |c, now| {
            c.prepare_cached(
                "INSERT INTO schedpool_audit (queue, at_ms, by_whom, action, target, count) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6) RETURNING seq",
            )
            .and_then(|mut s| {
                s.query_row(
                    params![self.queue_name(), sql(now), by, action, target, sql(count)],
                    |r| r.get::<_, i64>(0),
                )
            })
            .map(|seq| AuditEntry::new(ms(seq), now, by, action, target, count))
            .map_err(|e| map("writing an audit record", e))
        })
    }

    fn audit(&self, limit: usize, before: Option<u64>) -> Result<Vec<AuditEntry>, DurableError> {
        let before = before.map_or(i64::MAX, sql);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.read(|c| {
            c.prepare_cached(
                "SELECT seq, at_ms, by_whom, action, target, count FROM schedpool_audit \
                 WHERE queue = ?1 AND seq < ?2 ORDER BY seq DESC LIMIT ?3",
            )
            .and_then(|mut s| {
                s.query_map(params![self.queue_name(), before, limit], |r| {
                    Ok(AuditEntry::new(
                        ms(r.get(0)?),
                        ms(r.get(1)?),
                        &r.get::<_, String>(2)?,
                        &r.get::<_, String>(3)?,
                        &r.get::<_, String>(4)?,
                        ms(r.get(5)?),
                    ))
                })?
                .collect()
            })
            .map_err(|e| map("reading the audit trail", e))
        })
    }
}
