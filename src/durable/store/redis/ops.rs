//! The Redis backend's operator side ([`DurableOps`]): listings, inspect,
//! pause, resume and the audit trail are scripts (`ops_scripts.rs`); the
//! paused kinds are one `HGETALL`; counts by kind read every item's
//! envelope, by a script over 5,000 ranks of a set at a time (Lua's `unpack` stops near 8,000).
//!
//! Invariants: a listing page reads at most [`BUDGET`] entries of its
//! sorted set, so one call blocks Redis briefly even when a filter matches
//! little (the page may then be short, with a cursor to go on); counts by
//! kind are not one snapshot (items that move between the chunks may be
//! counted twice or not at all), and cost O(n).

use redis::{Script, Value};

use super::backend::RedisBackend;
use super::client::{arg, bad_reply, bytes, int, RedisClient};
use crate::durable::store::error::DurableError;
use crate::durable::store::ops::{
    AuditEntry, DurableOps, ItemDetail, ItemSummary, KindCounts, ListFilter, Page, PausedKind,
    StoredState,
};

/// The most sorted-set entries one listing call reads.
const BUDGET: usize = 2000;

/// (token, attempts, deadline, due) from a `meta` value.
fn parse_meta(meta: &[u8]) -> (u64, u32, u64, u64) {
    let text = std::str::from_utf8(meta).unwrap_or("");
    let mut it = text.split(':').map(|p| p.parse::<u64>().unwrap_or(0));
    let mut next = || it.next().unwrap_or(0);
    let (tok, att, dl, due) = (next(), next(), next(), next());
    (tok, u32::try_from(att).unwrap_or(u32::MAX), dl, due)
}

fn text(v: Value) -> Result<String, DurableError> {
    String::from_utf8(bytes(v)?).map_err(|e| DurableError::Format(e.to_string().into()))
}

fn score(v: Value) -> Result<u64, DurableError> {
    let t = text(v)?;
    t.parse::<f64>()
        .map(|f| f as u64)
        .map_err(|_| DurableError::Format(format!("bad score {t:?}").into()))
}

fn set_index(state: StoredState) -> u8 {
    match state {
        StoredState::Pending => 1,
        StoredState::InFlight => 2,
        StoredState::Dead => 6,
    }
}

fn list(
    redis: &RedisClient,
    s: &Script,
    f: &ListFilter,
) -> Result<Page<ItemSummary>, DurableError> {
    let from = f.from_ms.unwrap_or(0);
    let (min, after) = match &f.after {
        Some(c) if c.score_ms >= from => (c.score_ms.to_string(), c.id.as_str()),
        _ => (from.to_string(), ""),
    };
    let max = f.until_ms.map_or("+inf".to_string(), |u| format!("({u}"));
    let page = f.page();
    let args = [
        arg(set_index(f.state)),
        arg(min),
        arg(after),
        arg(max),
        arg(if f.kind.is_some() { "1" } else { "0" }),
        arg(f.kind.as_deref().unwrap_or("")),
        arg(if f.id_prefix.is_some() { "1" } else { "0" }),
        arg(f.id_prefix.as_deref().unwrap_or("")),
        arg(page),
        arg(BUDGET.max(page)),
    ];
    let reply: Vec<Value> = redis.invoke(true, s, &args)?;
    let mut it = reply.into_iter();
    let mut field = || it.next().ok_or_else(|| bad_reply(&Value::Nil));
    let exhausted = int(&field()?)? == 1;
    let last_score = text(field()?)?;
    let last_id = text(field()?)?;
    let mut items = Vec::new();
    while let Ok(id) = field() {
        let id = text(id)?;
        let sc = score(field()?)?;
        let (_, attempts, deadline, _) = parse_meta(&bytes(field()?)?);
        let env = bytes(field()?)?;
        items.push(ItemSummary::new(&id, f.state, sc, deadline, attempts, &env));
    }
    let next = if items.len() == page {
        items.last().map(ItemSummary::cursor)
    } else if !exhausted && !last_id.is_empty() {
        Some(crate::durable::store::ops::Cursor {
            score_ms: last_score.parse::<f64>().map_or(0, |f| f as u64),
            id: last_id,
        })
    } else {
        None
    };
    Ok(Page { items, next })
}

/// How many entries one counting script reads (a few ms of Redis each).
const COUNT_CHUNK: usize = 5_000;

/// Counts by kind: every item of each state's set, its envelope read, a
/// chunk of ranks a script call.
fn count_by_kind(redis: &RedisClient, s: &Script) -> Result<Vec<KindCounts>, DurableError> {
    let mut by: std::collections::BTreeMap<String, KindCounts> = Default::default();
    for state in [
        StoredState::Pending,
        StoredState::InFlight,
        StoredState::Dead,
    ] {
        let mut first = 0usize;
        loop {
            let args = [arg(set_index(state)), arg(first), arg(COUNT_CHUNK)];
            let reply: Vec<Value> = redis.invoke(true, s, &args)?;
            let mut it = reply.into_iter();
            let read = it.next().as_ref().map(int).transpose()?.unwrap_or(0);
            while let Some(kind) = it.next() {
                let kind = text(kind)?;
                let n = it.next().as_ref().map(int).transpose()?.unwrap_or(0);
                by.entry(kind.clone())
                    .or_insert_with(|| KindCounts::new(&kind))
                    .add(state, usize::try_from(n).unwrap_or(0));
            }
            if usize::try_from(read).unwrap_or(0) < COUNT_CHUNK {
                break;
            }
            first += COUNT_CHUNK;
        }
    }
    Ok(by.into_values().collect())
}

/// An audit record from its stored text (`ops_scripts::record`).
fn audit_entry(rec: &[u8]) -> Option<AuditEntry> {
    let text = std::str::from_utf8(rec).ok()?;
    let mut parts = text.splitn(6, ':');
    let mut num = || parts.next()?.parse::<u64>().ok();
    let (seq, at, count, by_len, action_len) = (num()?, num()?, num()?, num()?, num()?);
    let rest = parts.next()?;
    let (by, rest) = rest.split_at_checked(usize::try_from(by_len).ok()?)?;
    let (action, target) = rest.split_at_checked(usize::try_from(action_len).ok()?)?;
    Some(AuditEntry::new(seq, at, by, action, target, count))
}

impl DurableOps for RedisBackend {
    fn list(&self, filter: &ListFilter) -> Result<Page<ItemSummary>, DurableError> {
        list(&self.redis, &self.ops.list, filter)
    }

    fn inspect(&self, id: &str) -> Result<Option<ItemDetail>, DurableError> {
        let reply: Vec<Value> = self.redis.invoke(true, &self.ops.inspect, &[arg(id)])?;
        let mut it = reply.into_iter();
        let Some(state) = it.next() else {
            return Ok(None);
        };
        let state = match int(&state)? {
            0 => StoredState::Pending,
            1 => StoredState::InFlight,
            _ => StoredState::Dead,
        };
        let mut field = || it.next().ok_or_else(|| bad_reply(&Value::Nil));
        let sc = score(field()?)?;
        let (token, attempts, deadline, due) = parse_meta(&bytes(field()?)?);
        let env = bytes(field()?)?;
        Ok(Some(ItemDetail::new(
            id, state, sc, deadline, due, token, attempts, &env,
        )))
    }

    fn count_by_kind(&self) -> Result<Vec<KindCounts>, DurableError> {
        count_by_kind(&self.redis, &self.ops.count)
    }

    fn pause_kind(&self, kind: &str, by: &str) -> Result<bool, DurableError> {
        let key = Some(self.redis.extra_key("paused"));
        let (n, _): (i64, _) =
            self.redis
                .invoke_keyed(key, true, &self.ops.pause, &[arg(kind), arg(by)])?;
        Ok(n == 1)
    }

    fn resume_kind(&self, kind: &str) -> Result<bool, DurableError> {
        let key = Some(self.redis.extra_key("paused"));
        let (n, _): (i64, _) =
            self.redis
                .invoke_keyed(key, true, &self.ops.resume, &[arg(kind)])?;
        Ok(n == 1)
    }

    fn paused_kinds(&self) -> Result<Vec<PausedKind>, DurableError> {
        let key = self.redis.extra_key("paused");
        let all: Vec<(String, String)> = self
            .redis
            .run(true, |c| redis::cmd("HGETALL").arg(&key).query(c))?;
        let mut out: Vec<PausedKind> = all
            .iter()
            .map(|(kind, v)| {
                let (at, by) = v.split_once(':').unwrap_or(("0", v));
                PausedKind::new(kind, by, at.parse().unwrap_or(0))
            })
            .collect();
        out.sort_by(|a, b| a.kind.cmp(&b.kind));
        Ok(out)
    }

    fn record_audit(
        &self,
        by: &str,
        action: &str,
        target: &str,
        count: u64,
    ) -> Result<AuditEntry, DurableError> {
        let key = Some(self.redis.extra_key("audit"));
        let args = [arg(by), arg(action), arg(target), arg(count)];
        let (r, _): (Vec<i64>, _) = self
            .redis
            .invoke_keyed(key, false, &self.ops.record, &args)?;
        let (seq, at) = match r[..] {
            [seq, at] => (seq, at),
            _ => return Err(DurableError::Format("bad audit reply".into())),
        };
        Ok(AuditEntry::new(
            u64::try_from(seq).unwrap_or(0),
            u64::try_from(at).unwrap_or(0),
            by,
            action,
            target,
            count,
        ))
    }

    fn audit(&self, limit: usize, before: Option<u64>) -> Result<Vec<AuditEntry>, DurableError> {
        let key = self.redis.extra_key("audit");
        let max = before.map_or("+inf".to_string(), |b| format!("({b}"));
        let recs: Vec<Vec<u8>> = self.redis.run(true, |c| {
            redis::cmd("ZREVRANGEBYSCORE")
                .arg(&key)
                .arg(&max)
                .arg("-inf")
                .arg("LIMIT")
                .arg(0)
                .arg(limit)
                .query(c)
        })?;
        Ok(recs.iter().filter_map(|r| audit_entry(r)).collect())
    }
}
