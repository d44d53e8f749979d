//! The Redis backend (feature `redis`): connections, retries, wake-ups and
//! server checks around the scripts of `scripts.rs`.
//!
//! Invariants:
//!
//! - Command connections and the blocking connection are separate: only
//!   the dedicated blocking connection ever runs `BZPOPMIN`, and its read
//!   timeout is the block plus a margin, so a dead socket is torn down
//!   rather than waited on forever.
//! - Idempotent operations (put, ack, nack, extend, reschedule, cancel,
//!   reads) are retried on connection errors until `op_timeout`; `claim`
//!   never is (a lost reply's items come back after one lease).
//! - `unblock` cannot be lost: it sets `unblock_pending` before looking at
//!   `in_wait`, and `wait` sets `in_wait` before looking at
//!   `unblock_pending` (both SeqCst), so either the wait sees the flag and
//!   does not block, or `unblock` sees the wait and repeats `CLIENT UNBLOCK`
//!   until the wait ends.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;
use redis::{Connection, RedisError, RedisResult, Script, Value};

use super::backend::{
    ceil_ms, Cancelled, ClaimBatch, Claimed, Counts, DurableBackend, DurableError, Nack, Put,
    PutMode, Repeat, When,
};
use super::scripts;
use super::{DurableQueue, Payload, QueueOptions};

/// The budget of the one attempt an idempotent call gets past its
/// `op_timeout` when its only attempt failed (see `run`).
const GRACE: Duration = Duration::from_millis(250);

/// The most items one claim script leases.
const MAX_CLAIM: usize = 100;

/// The format version this build writes to a queue's `cfg` hash.
const FORMAT_VERSION: &str = "1";

/// Settings of a [`RedisBackend`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RedisOptions {
    /// Connect timeout of each connection (default 2 s).
    pub connect_timeout: Duration,
    /// The longest one operation (with its retries) may take before it
    /// returns [`DurableError::Unavailable`] (default 2 s).
    pub op_timeout: Duration,
    /// Refuse to connect (instead of warning) when the server has no AOF,
    /// an evicting `maxmemory-policy`, or `appendfsync no` (default false).
    pub strict: bool,
    /// Warn at connect when this machine's clock and the server's differ by
    /// more than this (default 2 s). Skew never makes anything early; it
    /// only shifts what `put_at(SystemTime)` means.
    pub skew_warning: Duration,
    /// After each put, wait for this many replicas to acknowledge it
    /// (`WAIT n timeout`); a shortfall is an error. `None` (the default)
    /// does not wait.
    pub replicas: Option<(u32, Duration)>,
}

impl Default for RedisOptions {
    fn default() -> Self {
        RedisOptions {
            connect_timeout: Duration::from_secs(2),
            op_timeout: Duration::from_secs(2),
            strict: false,
            skew_warning: Duration::from_secs(2),
            replicas: None,
        }
    }
}

impl RedisOptions {
    /// Sets [`strict`](Self::strict).
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// Sets [`op_timeout`](Self::op_timeout).
    pub fn op_timeout(mut self, timeout: Duration) -> Self {
        self.op_timeout = timeout;
        self
    }

    /// Sets [`replicas`](Self::replicas).
    pub fn replicas(mut self, n: u32, timeout: Duration) -> Self {
        self.replicas = Some((n, timeout));
        self
    }
}

/// A [`DurableBackend`] on one Redis queue: the keys `sp:{name}:*`.
///
/// Needs Redis ≥ 7.0 (or Valkey ≥ 7.2). At connect it checks the server's
/// persistence and eviction settings and its clock (see
/// [`RedisOptions`]), and records a format version in the queue's `cfg` key.
pub struct RedisBackend {
    client: redis::Client,
    name: String,
    keys: [String; 7],
    opts: RedisOptions,
    idle: Mutex<Vec<Connection>>,
    blocking: Mutex<Option<Connection>>,
    blocking_id: AtomicI64,
    in_wait: AtomicBool,
    unblock_pending: AtomicBool,
    /// Where a short wait sleeps locally (see `wait`); `unblock` signals it.
    nap: (Mutex<()>, parking_lot::Condvar),
    /// How late Redis may time out a blocked command: one `serverCron`
    /// period (1000 / `hz` ms) plus a margin, read at connect.
    timer_slack: Duration,
    scripts: Scripts,
}

struct Scripts {
    put: Script,
    claim: Script,
    extend: Script,
    ack: Script,
    nack: Script,
    reschedule: Script,
    cancel: Script,
}

impl RedisBackend {
    /// Connects to `url` (`redis://host:port/db`) for the queue `name`,
    /// with default [`RedisOptions`].
    ///
    /// # Errors
    ///
    /// As for [`connect_with`](Self::connect_with).
    pub fn connect(url: &str, name: &str) -> Result<Self, DurableError> {
        Self::connect_with(url, name, RedisOptions::default())
    }

    /// Connects with `opts`, checks the server, and records or checks the
    /// queue's format version.
    ///
    /// # Errors
    ///
    /// [`DurableError::Config`] for a bad URL or name (empty, or with `{` or
    /// `}`), a Redis older than 7.0, or (with `strict`) unsafe persistence
    /// settings; [`DurableError::Format`] when the queue was written by an
    /// incompatible version; [`DurableError::Unavailable`] when the server
    /// cannot be reached.
    pub fn connect_with(url: &str, name: &str, opts: RedisOptions) -> Result<Self, DurableError> {
        if name.is_empty() || name.contains(['{', '}']) {
            return Err(DurableError::Config(format!(
                "queue name {name:?} must be non-empty and free of braces"
            )));
        }
        let info = redis::IntoConnectionInfo::into_connection_info(url)
            .map_err(|e| DurableError::Config(e.to_string()))?;
        // No CLIENT SETINFO handshake: redis-rs waits for its replies with
        // the connect timeout each, so a hung server would hold every new
        // connection for twice the connect timeout (F9).
        let settings = info.redis_settings().clone().set_skip_set_lib_name();
        let client = redis::Client::open(info.set_redis_settings(settings))
            .map_err(|e| DurableError::Config(e.to_string()))?;
        let key = |k: &str| format!("sp:{{{name}}}:{k}");
        let backend = RedisBackend {
            client,
            name: name.to_string(),
            keys: ["due", "lease", "data", "meta", "wake", "dead", "cfg"].map(key),
            opts,
            idle: Mutex::new(Vec::new()),
            blocking: Mutex::new(None),
            blocking_id: AtomicI64::new(0),
            in_wait: AtomicBool::new(false),
            unblock_pending: AtomicBool::new(false),
            nap: (Mutex::new(()), parking_lot::Condvar::new()),
            timer_slack: Duration::from_millis(105),
            scripts: Scripts {
                put: Script::new(&scripts::put()),
                claim: Script::new(&scripts::claim()),
                extend: Script::new(&scripts::extend()),
                ack: Script::new(&scripts::ack()),
                nack: Script::new(&scripts::nack()),
                reschedule: Script::new(&scripts::ack_and_reschedule()),
                cancel: Script::new(&scripts::cancel()),
            },
        };
        let mut backend = backend;
        backend.check_server()?;
        backend.timer_slack = backend.read_timer_slack();
        Ok(backend)
    }

    /// The queue's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The Redis key of one part of this queue (`due`, `lease`, `data`,
    /// `meta`, `wake`, `dead` or `cfg`), for inspection and tests.
    pub fn key(&self, part: &str) -> Option<&str> {
        let i = ["due", "lease", "data", "meta", "wake", "dead", "cfg"]
            .iter()
            .position(|p| *p == part)?;
        Some(&self.keys[i])
    }

    fn check_server(&self) -> Result<(), DurableError> {
        let info: String = self.run(true, |c| redis::cmd("INFO").arg("server").query(c))?;
        let version = info_field(&info, "redis_version").unwrap_or_default();
        let major: u32 = version
            .split('.')
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        if major < 7 {
            return Err(DurableError::Config(format!(
                "Redis {version} is too old: script flags need Redis 7.0 or later"
            )));
        }
        let cfg = self.keys[6].clone();
        let stored: String = self.run(true, |c| {
            redis::cmd("HSETNX")
                .arg(&cfg)
                .arg("version")
                .arg(FORMAT_VERSION)
                .query::<()>(c)?;
            redis::cmd("HGET").arg(&cfg).arg("version").query(c)
        })?;
        if stored != FORMAT_VERSION {
            return Err(DurableError::Format(format!(
                "queue {:?} has format version {stored}; this build reads {FORMAT_VERSION}",
                self.name
            )));
        }
        let mut problems = Vec::new();
        let setting = |name: &str| -> Option<String> {
            let pair: Vec<String> = self
                .run(true, |c| redis::cmd("CONFIG").arg("GET").arg(name).query(c))
                .ok()?;
            pair.get(1).cloned()
        };
        // CONFIG can be disabled on managed services: fall back to INFO.
        let appendonly = setting("appendonly").or_else(|| {
            let info: String = self
                .run(true, |c| redis::cmd("INFO").arg("persistence").query(c))
                .ok()?;
            info_field(&info, "aof_enabled")
                .map(|v| if v == "1" { "yes".into() } else { "no".into() })
        });
        let policy = setting("maxmemory-policy").or_else(|| {
            let info: String = self
                .run(true, |c| redis::cmd("INFO").arg("memory").query(c))
                .ok()?;
            info_field(&info, "maxmemory_policy").map(str::to_string)
        });
        match appendonly.as_deref() {
            Some("yes") => {}
            other => problems.push(format!(
                "appendonly is {}: acknowledged puts can be lost on a restart",
                other.unwrap_or("unknown")
            )),
        }
        if setting("appendfsync").as_deref() == Some("no") {
            problems.push("appendfsync is no: the OS decides when puts reach the disk".into());
        }
        match policy.as_deref() {
            Some("noeviction") => {}
            other => problems.push(format!(
                "maxmemory-policy is {}: Redis may evict queue keys; use noeviction",
                other.unwrap_or("unknown")
            )),
        }
        if !problems.is_empty() {
            if self.opts.strict {
                return Err(DurableError::Config(problems.join("; ")));
            }
            for problem in &problems {
                tracing::warn!(target: "schedpool::durable", queue = %self.name, "{problem}");
            }
        }
        let server = self.server_time_ms()?;
        let local = unix_ms();
        let skew = server.abs_diff(local);
        if Duration::from_millis(skew) > self.opts.skew_warning {
            tracing::warn!(
                target: "schedpool::durable",
                queue = %self.name,
                skew_ms = local as i64 - server as i64,
                "this machine's clock differs from the Redis server's: deadlines follow the server; put_at(SystemTime) shifts by the skew"
            );
        }
        Ok(())
    }

    /// Redis times out blocked commands from its event loop, which may
    /// sleep one `serverCron` period (100 ms at the default `hz` 10).
    fn read_timer_slack(&self) -> Duration {
        let hz: Option<u64> = self
            .run(true, |c| {
                redis::cmd("CONFIG")
                    .arg("GET")
                    .arg("hz")
                    .query::<Vec<String>>(c)
            })
            .ok()
            .and_then(|pair| pair.get(1)?.parse().ok());
        let period = 1000 / hz.unwrap_or(10).clamp(1, 500);
        Duration::from_millis(period + 5)
    }

    /// Sleeps `d` on this process's clock, or until `unblock`.
    fn nap(&self, d: Duration) {
        let until = Instant::now() + d;
        let mut guard = self.nap.0.lock();
        while !self.unblock_pending.load(Ordering::SeqCst) && Instant::now() < until {
            self.nap.1.wait_until(&mut guard, until);
        }
    }

    fn connect_one(&self) -> RedisResult<Connection> {
        self.connect_within(self.opts.connect_timeout)
    }

    fn connect_within(&self, left: Duration) -> RedisResult<Connection> {
        let conn = self
            .client
            .get_connection_with_timeout(left.min(self.opts.connect_timeout))?;
        conn.set_read_timeout(Some(self.opts.op_timeout))?;
        conn.set_write_timeout(Some(self.opts.op_timeout))?;
        Ok(conn)
    }

    /// Runs `f` on a command connection; retries connection failures with
    /// backoff until `op_timeout` when `idempotent`.
    fn run<R>(
        &self,
        idempotent: bool,
        mut f: impl FnMut(&mut Connection) -> RedisResult<R>,
    ) -> Result<R, DurableError> {
        let limit = Instant::now()
            .checked_add(self.opts.op_timeout)
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(365 * 24 * 3600));
        let mut backoff = Duration::from_millis(10);
        // One attempt past the deadline, for an idempotent call whose only
        // attempt failed: a process paused (SIGSTOP, a VM stall) during the
        // read finds op_timeout spent, while the server answered long ago.
        // The retry (a settle answers from its receipt) costs at most GRACE.
        let mut grace = idempotent;
        loop {
            let pooled = self.idle.lock().pop();
            // One attempt never outlasts what is left of op_timeout.
            let left = match limit.checked_duration_since(Instant::now()) {
                Some(left) if !left.is_zero() => left,
                _ => GRACE.min(self.opts.op_timeout),
            };
            let conn = pooled
                .map_or_else(|| self.connect_within(left), Ok)
                .and_then(|c| {
                    c.set_read_timeout(Some(left))?;
                    c.set_write_timeout(Some(left))?;
                    Ok(c)
                });
            let err = match conn {
                Ok(mut conn) => match f(&mut conn) {
                    Ok(r) => {
                        self.idle.lock().push(conn);
                        return Ok(r);
                    }
                    Err(err) if !is_transient(&err) => {
                        // The server answered (out of memory, a script error):
                        // the connection is fine, the command is refused.
                        self.idle.lock().push(conn);
                        return Err(DurableError::Refused(err.to_string()));
                    }
                    // Dropped: it may be half-way through a reply.
                    Err(err) => err,
                },
                Err(err) if !is_transient(&err) => {
                    return Err(DurableError::Unavailable(err.to_string()))
                }
                Err(err) => err,
            };
            if !idempotent {
                return Err(DurableError::Unavailable(err.to_string()));
            }
            if Instant::now() + backoff >= limit {
                if !std::mem::take(&mut grace) {
                    return Err(DurableError::Unavailable(err.to_string()));
                }
                continue;
            }
            grace = false;
            std::thread::sleep(backoff);
            backoff = (backoff * 2).min(Duration::from_millis(200));
        }
    }

    fn invoke<R: redis::FromRedisValue>(
        &self,
        idempotent: bool,
        script: &Script,
        args: &[Vec<Vec<u8>>],
    ) -> Result<R, DurableError> {
        self.invoke_for(None, idempotent, script, args)
    }

    /// As `invoke`, for a settling script: KEYS[8] is the item's receipt
    /// key, where the script leaves the token it settled with for
    /// `RECEIPT_MS`. A retry after a lost reply finds it and answers as the
    /// first attempt did, instead of "not held" (a retried ack whose first
    /// attempt succeeded must not report `LeaseLost`).
    fn invoke_for<R: redis::FromRedisValue>(
        &self,
        receipt_of: Option<&str>,
        idempotent: bool,
        script: &Script,
        args: &[Vec<Vec<u8>>],
    ) -> Result<R, DurableError> {
        self.invoke_counted(receipt_of, idempotent, script, args)
            .map(|(r, _)| r)
    }

    /// The one script call: returns the reply and whether the script was
    /// sent more than once (an earlier attempt failed after sending, so it
    /// may have run).
    fn invoke_counted<R: redis::FromRedisValue>(
        &self,
        receipt_of: Option<&str>,
        idempotent: bool,
        script: &Script,
        args: &[Vec<Vec<u8>>],
    ) -> Result<(R, bool), DurableError> {
        let receipt = receipt_of.map(|id| format!("sp:{{{}}}:receipt:{id}", self.name));
        let sent = std::cell::Cell::new(0u32);
        let reply = self.run(idempotent, |c| {
            sent.set(sent.get() + 1);
            let mut inv = script.prepare_invoke();
            for key in &self.keys {
                inv.key(key);
            }
            if let Some(receipt) = &receipt {
                inv.key(receipt);
            }
            for arg in args.iter().flatten() {
                inv.arg(arg.as_slice());
            }
            inv.invoke(c)
        })?;
        Ok((reply, sent.get() > 1))
    }
}

/// One script argument, encoded.
fn arg<T: redis::ToRedisArgs>(value: T) -> Vec<Vec<u8>> {
    value.to_redis_args()
}

fn is_transient(err: &RedisError) -> bool {
    err.is_io_error()
        || err.is_timeout()
        || err.is_connection_dropped()
        || err.is_connection_refusal()
        // LOADING (a restart replaying its AOF), TRYAGAIN, MASTERDOWN,
        // CLUSTERDOWN: the server is coming back; wait and retry.
        || matches!(err.retry_method(), redis::RetryMethod::WaitAndRetry)
}

fn info_field<'a>(info: &'a str, field: &str) -> Option<&'a str> {
    info.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .map(str::trim)
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis() as u64
}

fn int(v: &Value) -> Result<i64, DurableError> {
    match v {
        Value::Int(i) => Ok(*i),
        Value::BulkString(b) => std::str::from_utf8(b)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| bad_reply(v)),
        other => Err(bad_reply(other)),
    }
}

fn bytes(v: Value) -> Result<Vec<u8>, DurableError> {
    match v {
        Value::BulkString(b) => Ok(b),
        Value::SimpleString(s) => Ok(s.into_bytes()),
        other => Err(bad_reply(&other)),
    }
}

fn bad_reply(v: &Value) -> DurableError {
    DurableError::Format(format!("unexpected reply from a queue script: {v:?}"))
}

impl DurableBackend for RedisBackend {
    fn put(
        &self,
        id: &str,
        envelope: &[u8],
        when: When,
        mode: PutMode,
    ) -> Result<Put, DurableError> {
        let mode = match mode {
            PutMode::Replace => "replace",
            PutMode::IfAbsent => "if_absent",
        };
        let (how, ms) = match when {
            When::After(d) => ("after", ceil_ms(d)),
            When::AtServerMs(at) => ("at", at.min(super::backend::MAX_MS)),
        };
        // WAIT covers the writes of the connection it runs on, so it runs
        // right after the put, on the same connection.
        let (reply, replicas): (Vec<i64>, Option<i64>) = self.run(true, |c| {
            let mut inv = self.scripts.put.prepare_invoke();
            for key in &self.keys {
                inv.key(key);
            }
            inv.arg(id).arg(mode).arg(how).arg(ms).arg(envelope);
            let reply: Vec<i64> = inv.invoke(c)?;
            let replicas = match self.opts.replicas {
                Some((n, timeout)) if reply.first() != Some(&0) => Some(
                    redis::cmd("WAIT")
                        .arg(n)
                        .arg(timeout.as_millis() as u64)
                        .query(c)?,
                ),
                _ => None,
            };
            Ok((reply, replicas))
        })?;
        let put = match reply.as_slice() {
            [0, _] => Put::Exists,
            [1, at] => Put::Inserted {
                deadline_ms: *at as u64,
            },
            [2, at] => Put::Replaced {
                deadline_ms: *at as u64,
            },
            _ => {
                return Err(DurableError::Format(format!(
                    "unexpected put reply {reply:?}"
                )))
            }
        };
        if let (Some((n, timeout)), Some(acked)) = (self.opts.replicas, replicas) {
            if acked < i64::from(n) {
                return Err(DurableError::Unavailable(format!(
                    "the put is on the primary, but only {acked} of {n} replicas acknowledged it within {timeout:?}"
                )));
            }
        }
        Ok(put)
    }

    fn claim(
        &self,
        lease: Duration,
        max: usize,
        max_attempts: u32,
    ) -> Result<ClaimBatch, DurableError> {
        // One script blocks Redis while it runs (about 50 µs per item
        // claimed): bound it (F7). A full batch chains the marker anyway.
        let max = max.min(MAX_CLAIM);
        let reply: Vec<Value> = self.invoke(
            false,
            &self.scripts.claim,
            &[arg(ceil_ms(lease)), arg(max), arg(max_attempts)],
        )?;
        let mut it = reply.into_iter();
        let now = it.next().as_ref().map(int).transpose()?.unwrap_or(0) as u64;
        let wait = it.next().as_ref().map(int).transpose()?.unwrap_or(-1);
        let rest: Vec<Value> = it.collect();
        let mut items = Vec::with_capacity(rest.len() / 6);
        let mut rest = rest.into_iter();
        while let Some(id) = rest.next() {
            let mut field = || rest.next().ok_or_else(|| bad_reply(&Value::Nil));
            let id =
                String::from_utf8(bytes(id)?).map_err(|e| DurableError::Format(e.to_string()))?;
            let token = int(&field()?)? as u64;
            let attempt = int(&field()?)? as u32;
            let deadline_ms = int(&field()?)? as u64;
            let due_ms = int(&field()?)? as u64;
            let envelope = bytes(field()?)?;
            items.push(Claimed {
                id,
                token,
                attempt,
                deadline_ms,
                due_ms,
                claimed_ms: now,
                envelope,
            });
        }
        let wait = u64::try_from(wait).ok().map(Duration::from_millis);
        Ok(ClaimBatch { items, wait })
    }

    fn extend(&self, leases: &[(&str, u64)], lease: Duration) -> Result<Vec<bool>, DurableError> {
        let mut out = Vec::with_capacity(leases.len());
        // Bounded batches keep each script short (F7).
        for chunk in leases.chunks(500) {
            let reply: Vec<i64> = self.run(true, |c| {
                let mut inv = self.scripts.extend.prepare_invoke();
                for key in &self.keys {
                    inv.key(key);
                }
                inv.arg(ceil_ms(lease));
                for (id, token) in chunk {
                    inv.arg(*id).arg(*token);
                }
                inv.invoke(c)
            })?;
            out.extend(reply.into_iter().map(|r| r == 1));
        }
        Ok(out)
    }

    fn ack(&self, id: &str, token: u64) -> Result<bool, DurableError> {
        let r: i64 = self.invoke_for(Some(id), true, &self.scripts.ack, &[arg(id), arg(token)])?;
        Ok(r == 1)
    }

    fn nack(&self, id: &str, token: u64, to: Nack) -> Result<bool, DurableError> {
        let (how, ms) = match to {
            Nack::Retry(d) => ("retry", ceil_ms(d)),
            Nack::Dead => ("dead", 0),
            Nack::Release => ("release", 0),
        };
        let r: i64 = self.invoke_for(
            Some(id),
            true,
            &self.scripts.nack,
            &[arg(id), arg(token), arg(how), arg(ms)],
        )?;
        Ok(r == 1)
    }

    fn ack_and_reschedule(
        &self,
        id: &str,
        token: u64,
        repeat: Repeat,
    ) -> Result<Option<u64>, DurableError> {
        let (how, ms) = match repeat {
            Repeat::FixedRate(p) => ("rate", ceil_ms(p)),
            Repeat::FixedDelay(d) => ("delay", ceil_ms(d)),
        };
        let r: i64 = self.invoke_for(
            Some(id),
            true,
            &self.scripts.reschedule,
            &[arg(id), arg(token), arg(how), arg(ms)],
        )?;
        Ok(u64::try_from(r).ok())
    }

    fn cancel(&self, id: &str) -> Result<Cancelled, DurableError> {
        let (reply, retried): (Vec<Value>, bool) =
            self.invoke_counted(None, true, &self.scripts.cancel, &[arg(id)])?;
        let mut it = reply.into_iter();
        let status = it.next().as_ref().map(int).transpose()?.unwrap_or(0);
        if status == 0 && retried {
            // An earlier attempt may have removed it, and its reply (with
            // the value) was lost: the outcome is unknown, not NotFound.
            return Err(DurableError::Unavailable(format!(
                "cancel of {id:?}: the reply was lost and the item is gone; it may have been this cancel"
            )));
        }
        let mut payload = || {
            it.next()
                .map(bytes)
                .transpose()
                .map(Option::unwrap_or_default)
        };
        Ok(match status {
            1 => Cancelled::Pending(payload()?),
            2 => Cancelled::InFlight,
            3 => Cancelled::Dead(payload()?),
            _ => Cancelled::NotFound,
        })
    }

    fn wait(&self, due: Option<Duration>, limit: Duration) -> Result<bool, DurableError> {
        // Both `due` and `limit` are deadlines; Redis may time a block out
        // one cron period late, so block until a period before the nearer
        // one and nap the rest. Capped: no Duration overflow, and a timeout
        // Redis accepts.
        const MAX_WAIT: Duration = Duration::from_secs(24 * 3600);
        let mut block = due
            .map_or(limit, |d| d.min(limit))
            .min(MAX_WAIT)
            .max(Duration::from_millis(1));
        if block <= self.timer_slack {
            if due.is_none_or(|d| limit < d) {
                // The caller's own limit: take a marker already set, without
                // blocking, then nap.
                let popped: Vec<String> =
                    self.run(true, |c| redis::cmd("ZPOPMIN").arg(&self.keys[4]).query(c))?;
                if !popped.is_empty() {
                    return Ok(true);
                }
            }
            self.nap(block);
            return Ok(false);
        }
        block -= self.timer_slack;
        let mut slot = self.blocking.lock();
        if slot.is_none() {
            let conn = self
                .connect_one()
                .map_err(|e| DurableError::Unavailable(e.to_string()))?;
            *slot = Some(conn);
            let id: i64 = redis::cmd("CLIENT")
                .arg("ID")
                .query(slot.as_mut().expect("just set"))
                .map_err(|e| {
                    *slot = None;
                    DurableError::Unavailable(e.to_string())
                })?;
            self.blocking_id.store(id, Ordering::SeqCst);
        }
        let conn = slot.as_mut().expect("connected above");
        // The client-side deadline: block plus a margin, then tear down (F9).
        let margin = Duration::from_secs(2);
        if let Err(e) = conn.set_read_timeout(Some(block + margin)) {
            *slot = None;
            return Err(DurableError::Unavailable(e.to_string()));
        }
        self.in_wait.store(true, Ordering::SeqCst);
        if self.unblock_pending.swap(false, Ordering::SeqCst) {
            self.in_wait.store(false, Ordering::SeqCst);
            return Ok(false);
        }
        let popped: RedisResult<Option<(String, String, f64)>> = redis::cmd("BZPOPMIN")
            .arg(&self.keys[4])
            .arg(format!("{:.3}", block.as_secs_f64()))
            .query(conn);
        self.in_wait.store(false, Ordering::SeqCst);
        match popped {
            Ok(marker) => Ok(marker.is_some()),
            Err(e) if e.code() == Some("UNBLOCKED") => Ok(false),
            Err(e) => {
                *slot = None;
                Err(DurableError::Unavailable(e.to_string()))
            }
        }
    }

    fn unblock(&self) {
        self.unblock_pending.store(true, Ordering::SeqCst);
        {
            let _guard = self.nap.0.lock();
            self.nap.1.notify_all();
        }
        let deadline = Instant::now() + Duration::from_secs(1);
        while self.in_wait.load(Ordering::SeqCst) && Instant::now() < deadline {
            let id = self.blocking_id.load(Ordering::SeqCst);
            let unblocked: Result<i64, _> = self.run(false, |c| {
                redis::cmd("CLIENT").arg("UNBLOCK").arg(id).query(c)
            });
            if unblocked == Ok(1) {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn counts(&self) -> Result<Counts, DurableError> {
        let (pending, in_flight, dead): (usize, usize, usize) = self.run(true, |c| {
            redis::pipe()
                .zcard(&self.keys[0])
                .zcard(&self.keys[1])
                .zcard(&self.keys[5])
                .query(c)
        })?;
        Ok(Counts {
            pending,
            in_flight,
            dead,
        })
    }

    fn peek_deadline_ms(&self) -> Result<Option<u64>, DurableError> {
        let head: Vec<(String, f64)> = self.run(true, |c| {
            redis::cmd("ZRANGE")
                .arg(&self.keys[0])
                .arg(0)
                .arg(0)
                .arg("WITHSCORES")
                .query(c)
        })?;
        Ok(head.first().map(|(_, score)| *score as u64))
    }

    fn server_time_ms(&self) -> Result<u64, DurableError> {
        let (secs, micros): (u64, u64) = self.run(true, |c| redis::cmd("TIME").query(c))?;
        Ok(secs * 1000 + micros / 1000)
    }

    fn dead_letters(&self, max: usize) -> Result<Vec<(String, Vec<u8>)>, DurableError> {
        if max == 0 {
            return Ok(Vec::new());
        }
        let ids: Vec<String> = self.run(true, |c| {
            redis::cmd("ZRANGE")
                .arg(&self.keys[5])
                .arg(0)
                .arg(max - 1)
                .query(c)
        })?;
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let data: Vec<Option<Vec<u8>>> = self.run(true, |c| {
            redis::cmd("HMGET").arg(&self.keys[2]).arg(&ids).query(c)
        })?;
        Ok(ids
            .into_iter()
            .zip(data)
            .map(|(id, bytes)| (id, bytes.unwrap_or_default()))
            .collect())
    }
}

impl fmt::Debug for RedisBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisBackend")
            .field("queue", &self.name)
            .field("opts", &self.opts)
            .finish_non_exhaustive()
    }
}

impl<T: Payload> DurableQueue<T> {
    /// Connects a queue to Redis at `url` under `name`, with default
    /// [`RedisOptions`] and [`QueueOptions`].
    ///
    /// # Errors
    ///
    /// As for [`RedisBackend::connect_with`].
    pub fn connect(url: &str, name: &str) -> Result<Self, DurableError> {
        Self::with_options(RedisBackend::connect(url, name)?, QueueOptions::default())
    }
}
