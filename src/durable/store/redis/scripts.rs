//! The Lua scripts of the Redis backend: each is one atomic step.
//!
//! KEYS, in this order, for every script (one hash tag, so one Cluster slot):
//! 1 `due` (zset id → due ms), 2 `lease` (zset id → lease expiry ms),
//! 3 `data` (hash id → envelope), 4 `meta` (hash id → "token:attempts:deadline:due"),
//! 5 `wake` (zset, one member: the wake-up marker), 6 `dead` (zset id → ms
//! moved), 7 `cfg` (hash: format version, token counter); the settling
//! scripts (ack, nack, reschedule) also get 8, the item's `receipt:<id>`
//! string, which lives `RECEIPT_MS` (`ack_many` gets one receipt key an
//! item, from 8 on).
//!
//! Invariants the scripts keep:
//! - An id is in at most one of `due`, `lease`, `dead`; it has `data` and
//!   `meta` exactly while it is in one of them.
//! - Tokens come from `HINCRBY cfg token 1`: they never repeat in a queue.
//! - "Now" is `TIME` (scripts replicate as effects since Redis 5).
//! - Every loop is bounded: reclaim ≤ 100 leases, claim ≤ ARGV max; with
//!   a kind paused, a claim reads ≤ `PAUSE_SCAN` due and as many future
//!   items (`KEYS[8]` is then the `paused` hash: claims get it, as they
//!   settle nothing and have no receipt key).
//! - What is read back is untrusted: an id whose `meta` does not parse or
//!   whose `data` is missing is moved to `dead` by the claim that meets
//!   it (never an error that would stop every later claim); an envelope
//!   that does not decode is dead-lettered by the consumer.
//! - `PUT` has no `allow-oom` flag, so Redis refuses it up front when out
//!   of memory (nothing partly written); the others only rewrite or delete
//!   and carry `allow-oom`, so consumers can drain a full server.

/// Shared Lua helpers, prepended to each script after its shebang line.
const PRELUDE: &str = r#"
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function fmt(n) return string.format('%d', n) end
local function parse(m)
  local tok, att, dl, due = string.match(m, '^(%d+):(%d+):(%d+):(%d+)$')
  return tonumber(tok), tonumber(att), tonumber(dl), tonumber(due)
end
local function pack(tok, att, dl, due)
  return fmt(tok) .. ':' .. fmt(att) .. ':' .. fmt(dl) .. ':' .. fmt(due)
end
local function wake_if_head(id, score)
  local head = redis.call('ZRANGE', KEYS[1], 0, 0)
  if head[1] == id then redis.call('ZADD', KEYS[5], score, 'w') end
end
-- Settling scripts get KEYS[8], the item's receipt: "token:result",
-- kept RECEIPT_MS so a retried settle answers as its first attempt did
-- (ack_many gets one receipt key an item, from KEYS[8] on).
local function write_receipt_at(key, token, result)
  redis.call('SET', key, token .. ':' .. result, 'PX', RECEIPT_MS)
end
local function receipt_at(key, token)
  local r = redis.call('GET', key)
  if not r then return nil end
  local tok, result = string.match(r, '^(%d+):(.*)$')
  if tok == token then return result end
  return nil
end
local function write_receipt(token, result) write_receipt_at(KEYS[8], token, result) end
local function receipt(token) return receipt_at(KEYS[8], token) end
local function holds(id, token)
  local m = redis.call('HGET', KEYS[4], id)
  if not m then return nil end
  local tok, att, dl, due = parse(m)
  if tok ~= tonumber(token) then return nil end
  if not redis.call('ZSCORE', KEYS[2], id) then return nil end
  return {tok, att, dl, due}
end
"#;

use crate::durable::store::backend::RECEIPT_MS;

/// How many due items a claim reads when some kind is paused: those of a
/// paused kind are passed over, so a claim finds items of other kinds
/// only among the first `PAUSE_SCAN` due (and the first `PAUSE_SCAN`
/// future ones, for its wait).
pub(super) const PAUSE_SCAN: usize = 1000;

/// A script: the shebang with `flags`, the prelude, then `body`.
pub(super) fn script(flags: &str, body: &str) -> String {
    let prelude = PRELUDE.replace("RECEIPT_MS", &RECEIPT_MS.to_string());
    let body = body.replace("PAUSE_SCAN", &PAUSE_SCAN.to_string());
    format!("#!lua{flags}\n{prelude}\n{body}")
}

/// ARGV: id, mode ("replace" | "if_absent"), when ("after" | "at"), ms, envelope.
/// Returns {status, deadline}: status 1 inserted, 2 replaced, 0 exists.
pub(super) fn put() -> String {
    script(
        "",
        r#"
local id = ARGV[1]
local live = redis.call('ZSCORE', KEYS[1], id) or redis.call('ZSCORE', KEYS[2], id)
if live and ARGV[2] == 'if_absent' then return {0, 0} end
local now = now_ms()
local deadline
if ARGV[3] == 'at' then deadline = tonumber(ARGV[4]) else deadline = now + tonumber(ARGV[4]) end
local token = redis.call('HINCRBY', KEYS[7], 'token', 1)
redis.call('HSET', KEYS[3], id, ARGV[5])
redis.call('HSET', KEYS[4], id, pack(token, 0, deadline, deadline))
redis.call('ZREM', KEYS[2], id)
redis.call('ZREM', KEYS[6], id)
redis.call('ZADD', KEYS[1], deadline, id)
if (tonumber(redis.call('HGET', KEYS[7], 'npaused') or '0') or 0) > 0 then
  -- The head may be of a paused kind: wake a consumer to look.
  redis.call('ZADD', KEYS[5], 'NX', deadline, 'w')
else
  wake_if_head(id, deadline)
end
if live then return {2, deadline} else return {1, deadline} end
"#,
    )
}

/// ARGV: lease ms, max, max_attempts (0: no limit).
/// Returns {now, wait (-1: empty), id1, token1, attempt1, deadline1, due1, envelope1, ...}.
pub(super) fn claim() -> String {
    script(
        " flags=allow-oom",
        r#"
local now = now_ms()
local lease = tonumber(ARGV[1])
local max = tonumber(ARGV[2])
local max_att = tonumber(ARGV[3])
local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, 100)
for _, id in ipairs(expired) do
  redis.call('ZREM', KEYS[2], id)
  local m = redis.call('HGET', KEYS[4], id)
  local tok, att, dl, due
  if m then tok, att, dl, due = parse(m) end
  if not att then
    -- Foreign or corrupt meta: dead-letter it, never stop the claim.
    redis.call('ZADD', KEYS[6], now, id)
  elseif max_att > 0 and att >= max_att then
    redis.call('ZADD', KEYS[6], now, id)
  else
    redis.call('ZADD', KEYS[1], due, id)
  end
end
local out = {now, -1}
local ids = {}
-- Paused kinds (KEYS[8], the `paused` hash, counted in cfg `npaused`):
-- the first PAUSE_SCAN due items are read, those of a paused kind passed
-- over (they stay due); `more` is whether a due item to claim is left.
local npaused = tonumber(redis.call('HGET', KEYS[7], 'npaused') or '0') or 0
local paused = npaused > 0 and KEYS[8] ~= nil
local more, truncated = false, false
local kinds = {}
local function is_paused(env)
  if not env or #env < 2 or string.byte(env, 1) ~= 1 then return false end
  local k = string.sub(env, 3, 2 + string.byte(env, 2))
  if kinds[k] == nil then kinds[k] = redis.call('HGET', KEYS[8], k) ~= false end
  return kinds[k]
end
if paused then
  local cand = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, PAUSE_SCAN)
  truncated = #cand == PAUSE_SCAN
  if #cand > 0 then
    local envs = redis.call('HMGET', KEYS[3], unpack(cand))
    for i, id in ipairs(cand) do
      if not is_paused(envs[i]) then
        if #ids < max then ids[#ids + 1] = id else more = true; break end
      end
    end
  end
elseif max > 0 then
  ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, max)
end
if #ids > 0 then
  -- Batched calls, not six a item (and only commands the documented
  -- least-privileged ACL user has).
  redis.call('ZREM', KEYS[1], unpack(ids))
  local metas = redis.call('HMGET', KEYS[4], unpack(ids))
  local datas = redis.call('HMGET', KEYS[3], unpack(ids))
  -- Tokens last - #ids + 1 .. last, one a claimed item (a dead one's is
  -- skipped: tokens never repeat, and only grow).
  local token = redis.call('HINCRBY', KEYS[7], 'token', #ids) - #ids
  local metas_out, leases, dead = {}, {}, {}
  for i, id in ipairs(ids) do
    local m, data = metas[i], datas[i]
    local tok, att, dl, due
    if m then tok, att, dl, due = parse(m) end
    if not (att and data) then
      -- Foreign, corrupt or truncated (meta unparsable, data missing):
      -- dead-letter it, so it is reported and the items behind it go on.
      dead[#dead + 1] = now
      dead[#dead + 1] = id
    else
      token = token + 1
      att = att + 1
      metas_out[#metas_out + 1] = id
      metas_out[#metas_out + 1] = pack(token, att, dl, due)
      leases[#leases + 1] = now + lease
      leases[#leases + 1] = id
      local n = #out
      out[n + 1] = id
      out[n + 2] = token
      out[n + 3] = att
      out[n + 4] = dl
      out[n + 5] = due
      out[n + 6] = data
    end
  end
  if #metas_out > 0 then
    redis.call('HSET', KEYS[4], unpack(metas_out))
    redis.call('ZADD', KEYS[2], unpack(leases))
  end
  if #dead > 0 then redis.call('ZADD', KEYS[6], unpack(dead)) end
end
local next_at = nil
if paused then
  -- The earliest pending item not paused: due ones left over, else the
  -- first future one within PAUSE_SCAN; past the scan, look again in 1 s.
  if more then
    next_at = now
  else
    local fut = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf', 'WITHSCORES',
                           'LIMIT', 0, PAUSE_SCAN)
    local fids = {}
    for i = 1, #fut, 2 do fids[#fids + 1] = fut[i] end
    if #fids > 0 then
      local envs = redis.call('HMGET', KEYS[3], unpack(fids))
      for i, id in ipairs(fids) do
        if not is_paused(envs[i]) then next_at = tonumber(fut[2 * i]); break end
      end
    end
    if truncated or (next_at == nil and #fids == PAUSE_SCAN) then
      if next_at == nil or next_at > now + 1000 then next_at = now + 1000 end
    end
  end
else
  local d = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  if d[2] then next_at = tonumber(d[2]) end
end
local l = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
if l[2] and (next_at == nil or tonumber(l[2]) < next_at) then next_at = tonumber(l[2]) end
if next_at ~= nil then
  local wait = next_at - now
  if wait < 0 then wait = 0 end
  out[2] = wait
  if max > 0 and (#out - 2) / 6 == max and wait == 0 then
    redis.call('ZADD', KEYS[5], 0, 'w')
  end
end
return out
"#,
    )
}

/// ARGV: lease ms, id1, token1, id2, token2, ... Returns {1|0, ...}.
pub(super) fn extend() -> String {
    script(
        " flags=allow-oom",
        r#"
local now = now_ms()
local out = {}
for i = 2, #ARGV, 2 do
  if holds(ARGV[i], ARGV[i + 1]) then
    redis.call('ZADD', KEYS[2], 'XX', now + tonumber(ARGV[1]), ARGV[i])
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
return out
"#,
    )
}

/// ARGV: id, token. `KEYS[8]`: the item's receipt key. Returns 1 when acked
/// (now, or by an earlier attempt with this token), 0 when the token no
/// longer holds it.
pub(super) fn ack() -> String {
    script(
        " flags=allow-oom",
        r#"
local id = ARGV[1]
if not holds(id, ARGV[2]) then return receipt(ARGV[2]) and 1 or 0 end
redis.call('ZREM', KEYS[2], id)
redis.call('HDEL', KEYS[3], id)
redis.call('HDEL', KEYS[4], id)
write_receipt(ARGV[2], '')
return 1
"#,
    )
}

/// ARGV: id1, token1, id2, token2, ...; KEYS[7 + i]: the receipt key of
/// the i-th id. Returns {1|0, ...}, one a pair, as `ack` answers for one;
/// each pair is checked against its own token.
pub(super) fn ack_many() -> String {
    script(
        " flags=allow-oom",
        r#"
local n = #ARGV / 2
local ids = {}
for i = 1, n do ids[i] = ARGV[2 * i - 1] end
-- `holds` for all at once: the meta's token (one HMGET), and a lease.
local metas = redis.call('HMGET', KEYS[4], unpack(ids))
local out = {}
local done = {}
for i = 1, n do
  local id, token = ids[i], ARGV[2 * i]
  local tok = metas[i] and parse(metas[i])
  if tok == tonumber(token) and redis.call('ZSCORE', KEYS[2], id) then
    done[#done + 1] = id
    write_receipt_at(KEYS[7 + i], token, '')
    out[i] = 1
  elseif receipt_at(KEYS[7 + i], token) then
    out[i] = 1
  else
    out[i] = 0
  end
end
if #done > 0 then
  redis.call('ZREM', KEYS[2], unpack(done))
  redis.call('HDEL', KEYS[3], unpack(done))
  redis.call('HDEL', KEYS[4], unpack(done))
end
return out
"#,
    )
}

/// ARGV: id, token, "retry" | "dead" | "release" | "defer", delay ms.
/// Returns 1, or 0 when the token does not hold it.
pub(super) fn nack() -> String {
    script(
        " flags=allow-oom",
        r#"
local id = ARGV[1]
local h = holds(id, ARGV[2])
if not h then return receipt(ARGV[2]) and 1 or 0 end
local now = now_ms()
redis.call('ZREM', KEYS[2], id)
write_receipt(ARGV[2], '')
if ARGV[3] == 'dead' then
  redis.call('ZADD', KEYS[6], now, id)
elseif ARGV[3] == 'release' then
  redis.call('ZADD', KEYS[1], h[4], id)
  wake_if_head(id, h[4])
elseif ARGV[3] == 'defer' then
  local at = now + tonumber(ARGV[4])
  local att = h[2] - 1
  if att < 0 then att = 0 end
  redis.call('HSET', KEYS[4], id, pack(h[1], att, h[3], at))
  redis.call('ZADD', KEYS[1], at, id)
  wake_if_head(id, at)
else
  local at = now + tonumber(ARGV[4])
  redis.call('HSET', KEYS[4], id, pack(h[1], h[2], h[3], at))
  redis.call('ZADD', KEYS[1], at, id)
  wake_if_head(id, at)
end
return 1
"#,
    )
}

/// ARGV: id, token, "rate" | "delay", period ms. Returns the next due ms, or -1.
pub(super) fn ack_and_reschedule() -> String {
    script(
        " flags=allow-oom",
        r#"
local id = ARGV[1]
local h = holds(id, ARGV[2])
if not h then
  local r = receipt(ARGV[2])
  if r then return tonumber(r) end
  return -1
end
local now = now_ms()
local nxt
if ARGV[3] == 'rate' then nxt = h[3] + tonumber(ARGV[4]) else nxt = now + tonumber(ARGV[4]) end
local token = redis.call('HINCRBY', KEYS[7], 'token', 1)
redis.call('HSET', KEYS[4], id, pack(token, 0, nxt, nxt))
redis.call('ZREM', KEYS[2], id)
redis.call('ZADD', KEYS[1], nxt, id)
wake_if_head(id, nxt)
write_receipt(ARGV[2], fmt(nxt))
return nxt
"#,
    )
}

/// ARGV: id. Reads without writing: returns {state, deadline, envelope}
/// (state 0 pending, 1 in flight, 2 dead; deadline -1 when `meta` does not
/// parse), or {} when the id is not stored.
pub(super) fn get() -> String {
    script(
        " flags=no-writes,allow-oom",
        r#"
local id = ARGV[1]
local state = 0
if not redis.call('ZSCORE', KEYS[1], id) then
  if redis.call('ZSCORE', KEYS[2], id) then state = 1
  elseif redis.call('ZSCORE', KEYS[6], id) then state = 2
  else return {} end
end
local m = redis.call('HGET', KEYS[4], id)
local dl = -1
if m then
  local _, _, d = parse(m)
  if d then dl = d end
end
return {state, dl, redis.call('HGET', KEYS[3], id) or ''}
"#,
    )
}

/// ARGV: id. Returns {1, envelope} pending, {2} in flight, {3, envelope} dead, {0} not found.
pub(super) fn cancel() -> String {
    script(
        " flags=allow-oom",
        r#"
local id = ARGV[1]
local status = 0
if redis.call('ZREM', KEYS[1], id) == 1 then status = 1
elseif redis.call('ZREM', KEYS[2], id) == 1 then status = 2
elseif redis.call('ZREM', KEYS[6], id) == 1 then status = 3 end
if status == 0 then return {0} end
local data = redis.call('HGET', KEYS[3], id)
redis.call('HDEL', KEYS[3], id)
redis.call('HDEL', KEYS[4], id)
if status == 2 then return {2} end
return {status, data or ''}
"#,
    )
}
