//! The Redis backend's dead-letter verbs: the scripts that bury, requeue,
//! purge and list dead letters (built on `scripts.rs`'s prelude and key
//! layout), and their calls.
//!
//! Invariants the scripts keep (besides `scripts.rs`'s):
//! - A buried item's `data` is its dead record, then its envelope
//!   (`dead_record.rs`); `requeue` strips the record with the same rule as
//!   `dead_record::split`, so a requeued item is byte for byte what was put.
//! - `requeue` is a put of the stored bytes, due now: a fresh token from
//!   `cfg`, attempts 0, deadline and due now. It and `purge` act only on an
//!   id in `dead`, so of racing calls on one dead letter exactly one acts.
//! - No new key: a queue written before dead records existed reads as
//!   "no error recorded", and `FORMAT_VERSION` stays 1.

use redis::{Script, Value};

use super::client::{arg, RedisClient};
use super::reply;
use super::scripts::script;
use crate::durable::store::backend::{Buried, DurableError};
use crate::durable::store::dead_record;

/// ARGV: id, token, dead record. `KEYS[8]`: the item's receipt. Returns 1
/// when buried (now, or by an earlier attempt with this token), 0 when the
/// token no longer holds it.
fn bury() -> String {
    script(
        " flags=allow-oom",
        r#"
local id = ARGV[1]
if not holds(id, ARGV[2]) then return receipt(ARGV[2]) and 1 or 0 end
local now = now_ms()
redis.call('ZREM', KEYS[2], id)
write_receipt(ARGV[2], '')
local data = redis.call('HGET', KEYS[3], id)
if data and #ARGV[3] > 0 then redis.call('HSET', KEYS[3], id, ARGV[3] .. data) end
redis.call('ZADD', KEYS[6], now, id)
return 1
"#,
    )
}

/// ARGV: id. Returns 1 requeued, 0 not dead, -1 dead without data.
pub(super) fn requeue() -> String {
    let tag: String = dead_record::TAG.iter().map(|b| format!("\\{b}")).collect();
    let body = r#"
local id = ARGV[1]
if not redis.call('ZSCORE', KEYS[6], id) then return 0 end
local data = redis.call('HGET', KEYS[3], id)
if not data then return -1 end
if #data >= HEAD and string.sub(data, 1, 3) == 'TAG' then
  local n = string.byte(data, 4) * 256 + string.byte(data, 5)
  if #data >= HEAD + n then data = string.sub(data, HEAD + 1 + n) end
end
local now = now_ms()
local token = redis.call('HINCRBY', KEYS[7], 'token', 1)
redis.call('HSET', KEYS[3], id, data)
redis.call('HSET', KEYS[4], id, pack(token, 0, now, now))
redis.call('ZREM', KEYS[6], id)
redis.call('ZADD', KEYS[1], now, id)
wake_if_head(id, now)
return 1
"#
    .replace("TAG", &tag)
    .replace("HEAD", &dead_record::HEAD.to_string());
    script(" flags=allow-oom", &body)
}

/// ARGV: id. Returns 1 purged, 0 not dead.
pub(super) fn purge() -> String {
    script(
        " flags=allow-oom",
        r#"
local id = ARGV[1]
if redis.call('ZREM', KEYS[6], id) == 0 then return 0 end
redis.call('HDEL', KEYS[3], id)
redis.call('HDEL', KEYS[4], id)
return 1
"#,
    )
}

/// ARGV: max. Returns {id1, died1, attempts1, data1, ...}, oldest death
/// first; attempts 0 where `meta` does not parse, data empty where missing.
pub(super) fn list() -> String {
    script(
        " flags=no-writes",
        r#"
local max = tonumber(ARGV[1])
local dead = redis.call('ZRANGE', KEYS[6], 0, max - 1, 'WITHSCORES')
local out = {}
for i = 1, #dead, 2 do
  local id = dead[i]
  local m = redis.call('HGET', KEYS[4], id)
  local att = nil
  if m then local _tok; _tok, att = parse(m) end
  out[#out + 1] = id
  out[#out + 1] = tonumber(dead[i + 1])
  out[#out + 1] = att or 0
  out[#out + 1] = redis.call('HGET', KEYS[3], id) or ''
end
return out
"#,
    )
}

/// The dead-letter scripts of one backend.
pub(super) struct DeadScripts {
    bury: Script,
    requeue: Script,
    purge: Script,
    list: Script,
}

impl DeadScripts {
    pub(super) fn new() -> Self {
        DeadScripts {
            bury: Script::new(&bury()),
            requeue: Script::new(&requeue()),
            purge: Script::new(&purge()),
            list: Script::new(&list()),
        }
    }

    pub(super) fn bury(
        &self,
        redis: &RedisClient,
        id: &str,
        token: u64,
        error: Option<&str>,
    ) -> Result<bool, DurableError> {
        let record = dead_record::record(error);
        let r: i64 = redis.invoke_for(
            Some(id),
            true,
            &self.bury,
            &[arg(id), arg(token), arg(record.as_slice())],
        )?;
        Ok(r == 1)
    }

    pub(super) fn requeue(&self, redis: &RedisClient, id: &str) -> Result<bool, DurableError> {
        let (r, retried): (i64, bool) =
            redis.invoke_counted(None, true, &self.requeue, &[arg(id)])?;
        reply::acted(r, retried, "requeue", id)
    }

    pub(super) fn purge(&self, redis: &RedisClient, id: &str) -> Result<bool, DurableError> {
        let (r, retried): (i64, bool) =
            redis.invoke_counted(None, true, &self.purge, &[arg(id)])?;
        reply::acted(r, retried, "purge", id)
    }

    pub(super) fn list(
        &self,
        redis: &RedisClient,
        max: usize,
    ) -> Result<Vec<Buried>, DurableError> {
        if max == 0 {
            return Ok(Vec::new());
        }
        let reply: Vec<Value> = redis.invoke(true, &self.list, &[arg(max)])?;
        reply::buried(reply)
    }
}
