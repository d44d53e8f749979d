//! The Lua scripts of the operator's side on Redis: listing a page,
//! inspecting an item, pausing and resuming a kind, writing an audit
//! record. Each is one atomic step, with the queue's KEYS 1–7
//! (`scripts.rs`) and, where named, `KEYS[8]`: the `paused` hash (kind →
//! "at_ms:by") or the `audit` sorted set (seq → record).
//!
//! Invariants: `cfg`'s `npaused` is the number of fields of `paused`
//! (pause and resume change both in one script), which claims read to
//! know whether to look at kinds at all; a listing reads at most its
//! budget of entries; audit records are only added.

use redis::Script;

use super::scripts::script;

/// The operator's scripts of one backend.
pub(super) struct OpsScripts {
    pub(super) list: Script,
    pub(super) inspect: Script,
    pub(super) pause: Script,
    pub(super) resume: Script,
    pub(super) record: Script,
    pub(super) count: Script,
}

impl OpsScripts {
    pub(super) fn new() -> Self {
        OpsScripts {
            list: Script::new(&list()),
            inspect: Script::new(&inspect()),
            pause: Script::new(&pause()),
            resume: Script::new(&resume()),
            record: Script::new(&record()),
            count: Script::new(&count()),
        }
    }
}

/// The kind of an envelope (a dead item's: past its dead record), `''`
/// for bytes that do not open: `ops_read::stored_kind`'s rule.
const KIND_OF: &str = r#"
local function kind_of(env)
  if not env then return '' end
  if #env >= 5 and string.sub(env, 1, 3) == '\222\173\001' then
    local n = string.byte(env, 4) * 256 + string.byte(env, 5)
    if #env >= 5 + n then env = string.sub(env, 6 + n) end
  end
  if #env < 2 or string.byte(env, 1) ~= 1 then return '' end
  local n = string.byte(env, 2)
  if #env < 3 + n then return '' end
  return string.sub(env, 3, 2 + n)
end
"#;

/// ARGV: set (1 due, 2 lease, 6 dead), min score (the cursor's, or the
/// range's), cursor id ('' none), max score, kind flag, kind, prefix flag,
/// prefix, limit, budget. Returns {exhausted 0|1, last score, last id,
/// then id, score, meta, data for each item}.
pub(super) fn list() -> String {
    script(
        " flags=no-writes,allow-oom",
        &format!(
            "{KIND_OF}{}",
            r#"
local set = KEYS[tonumber(ARGV[1])]
local min, after_id, max = ARGV[2], ARGV[3], ARGV[4]
local want_kind, kind = ARGV[5] == '1', ARGV[6]
local want_prefix, prefix = ARGV[7] == '1', ARGV[8]
local limit, budget = tonumber(ARGV[9]), tonumber(ARGV[10])
local out = {}
local n, scanned, offset = 0, 0, 0
local last_score, last_id = '', ''
local exhausted = false
while n < limit and scanned < budget do
  local r = redis.call('ZRANGEBYSCORE', set, min, max, 'WITHSCORES', 'LIMIT', offset, 200)
  if #r == 0 then exhausted = true; break end
  offset = offset + #r / 2
  local ids = {}
  for i = 1, #r, 2 do ids[#ids + 1] = r[i] end
  local datas = redis.call('HMGET', KEYS[3], unpack(ids))
  local metas = redis.call('HMGET', KEYS[4], unpack(ids))
  for i, id in ipairs(ids) do
    local score = r[2 * i]
    if not (after_id ~= '' and score == min and id <= after_id) then
      scanned = scanned + 1
      last_score, last_id = score, id
      if (not want_kind or kind_of(datas[i]) == kind)
          and (not want_prefix or string.sub(id, 1, #prefix) == prefix) then
        out[#out + 1] = id
        out[#out + 1] = score
        out[#out + 1] = metas[i] or ''
        out[#out + 1] = datas[i] or ''
        n = n + 1
      end
      if n >= limit or scanned >= budget then break end
    end
  end
  if #ids < 200 and n < limit and scanned < budget then exhausted = true; break end
end
local head = {exhausted and 1 or 0, last_score, last_id}
for _, v in ipairs(out) do head[#head + 1] = v end
return head
"#
        ),
    )
}

/// ARGV: id. Returns {state (0 pending, 1 in flight, 2 dead), score, meta,
/// data}, or {} when not found.
pub(super) fn inspect() -> String {
    script(
        " flags=no-writes,allow-oom",
        r#"
local id = ARGV[1]
local state, score = 0, redis.call('ZSCORE', KEYS[1], id)
if not score then
  state, score = 1, redis.call('ZSCORE', KEYS[2], id)
  if not score then
    state, score = 2, redis.call('ZSCORE', KEYS[6], id)
    if not score then return {} end
  end
end
return {state, score, redis.call('HGET', KEYS[4], id) or '', redis.call('HGET', KEYS[3], id) or ''}
"#,
    )
}

/// `KEYS[8]` `paused`. ARGV: kind, by. Returns 1 when newly paused.
pub(super) fn pause() -> String {
    script(
        "",
        r#"
local ok = redis.call('HSETNX', KEYS[8], ARGV[1], fmt(now_ms()) .. ':' .. ARGV[2])
if ok == 1 then redis.call('HINCRBY', KEYS[7], 'npaused', 1) end
return ok
"#,
    )
}

/// `KEYS[8]` `paused`. ARGV: kind. Returns 1 when it was paused (and sets
/// the wake-up marker, so a consumer claims its due items now).
pub(super) fn resume() -> String {
    script(
        " flags=allow-oom",
        r#"
local ok = redis.call('HDEL', KEYS[8], ARGV[1])
if ok == 1 then
  redis.call('HINCRBY', KEYS[7], 'npaused', -1)
  redis.call('ZADD', KEYS[5], 0, 'w')
end
return ok
"#,
    )
}

/// `KEYS[8]` `audit`. ARGV: by, action, target, count. Returns {seq, at ms};
/// the record is "seq:at:count:#by:#action:" then by, action and target.
pub(super) fn record() -> String {
    script(
        "",
        r#"
local seq = redis.call('HINCRBY', KEYS[7], 'audit', 1)
local t = now_ms()
local rec = fmt(seq) .. ':' .. fmt(t) .. ':' .. ARGV[4] .. ':' .. #ARGV[1] .. ':' .. #ARGV[2]
    .. ':' .. ARGV[1] .. ARGV[2] .. ARGV[3]
redis.call('ZADD', KEYS[8], seq, rec)
return {seq, t}
"#,
    )
}

/// ARGV: set (1 due, 2 lease, 6 dead), first rank, how many (at most
/// 7,000: `unpack` is bounded). Returns
/// {entries read, kind1, n1, kind2, n2, ...} for the set's entries of those
/// ranks (a chunk of `Operator::overview`'s counts by kind).
pub(super) fn count() -> String {
    script(
        " flags=no-writes,allow-oom",
        &format!(
            "{KIND_OF}{}",
            r#"
local set = KEYS[tonumber(ARGV[1])]
local first, n = tonumber(ARGV[2]), tonumber(ARGV[3])
local ids = redis.call('ZRANGE', set, first, first + n - 1)
local counts, order = {}, {}
if #ids > 0 then
  local datas = redis.call('HMGET', KEYS[3], unpack(ids))
  for i = 1, #ids do
    local k = kind_of(datas[i])
    if counts[k] == nil then counts[k] = 0; order[#order + 1] = k end
    counts[k] = counts[k] + 1
  end
end
local out = {#ids}
for _, k in ipairs(order) do out[#out + 1] = k; out[#out + 1] = counts[k] end
return out
"#
        ),
    )
}
