//! The Redis backend (feature `redis`): the `DurableBackend` over the
//! scripts of `scripts.rs`, and cross-process wake-ups. Connections and
//! retries are `client.rs`; the checks at connect, `checks.rs`.
//!
//! Invariants:
//!
//! - Command connections and the blocking connection are separate: only
//!   the dedicated blocking connection ever runs `BZPOPMIN`, and its read
//!   timeout is the block plus a margin, so a dead socket is torn down
//!   rather than waited on forever.
//! - `unblock` cannot be lost: it sets `unblock_pending` before looking at
//!   `in_wait`, and `wait` sets `in_wait` before looking at
//!   `unblock_pending` (both SeqCst), so either the wait sees the flag and
//!   does not block, or `unblock` sees the wait and repeats `CLIENT UNBLOCK`
//!   until the wait ends.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::{Duration, Instant};

use crate::base::sync::{Condvar, Mutex};
use redis::{Connection, RedisResult, Script, Value};

use super::client::{arg, bad_reply, bytes, int, RedisClient, RedisOptions};
use super::scripts;
use crate::durable::backend::{
    ceil_ms, Cancelled, ClaimBatch, Claimed, Counts, DurableBackend, DurableError, Nack, Put,
    PutMode, Repeat, When,
};
use crate::durable::envelope::Payload;
use crate::durable::options::QueueOptions;
use crate::durable::queue::DurableQueue;

/// The most items one claim script leases.
const MAX_CLAIM: usize = 100;

/// A [`DurableBackend`] on one Redis queue: the keys `sp:{name}:*`.
///
/// Needs Redis ≥ 7.0 (or Valkey ≥ 7.2). At connect it checks the server's
/// persistence and eviction settings and its clock (see
/// [`RedisOptions`]), and records a format version in the queue's `cfg` key.
pub struct RedisBackend {
    redis: RedisClient,
    blocking: Mutex<Option<Connection>>,
    blocking_id: AtomicI64,
    in_wait: AtomicBool,
    unblock_pending: AtomicBool,
    /// Where a short wait sleeps locally (see `wait`); `unblock` signals it.
    nap: (Mutex<()>, Condvar),
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
        let redis = RedisClient::open(url, name, opts)?;
        redis.check_server()?;
        let timer_slack = redis.read_timer_slack();
        Ok(RedisBackend {
            redis,
            blocking: Mutex::new(None),
            blocking_id: AtomicI64::new(0),
            in_wait: AtomicBool::new(false),
            unblock_pending: AtomicBool::new(false),
            nap: (Mutex::new(()), Condvar::new()),
            timer_slack,
            scripts: Scripts {
                put: Script::new(&scripts::put()),
                claim: Script::new(&scripts::claim()),
                extend: Script::new(&scripts::extend()),
                ack: Script::new(&scripts::ack()),
                nack: Script::new(&scripts::nack()),
                reschedule: Script::new(&scripts::ack_and_reschedule()),
                cancel: Script::new(&scripts::cancel()),
            },
        })
    }

    /// The queue's name.
    pub fn name(&self) -> &str {
        &self.redis.name
    }

    /// The Redis key of one part of this queue (`due`, `lease`, `data`,
    /// `meta`, `wake`, `dead` or `cfg`), for inspection and tests.
    pub fn key(&self, part: &str) -> Option<&str> {
        self.redis.key(part)
    }

    /// Sleeps `d` on this process's clock, or until `unblock`.
    fn nap(&self, d: Duration) {
        let until = Instant::now() + d;
        let mut guard = self.nap.0.lock();
        while !self.unblock_pending.load(Ordering::SeqCst) && Instant::now() < until {
            self.nap.1.wait_until(&mut guard, until);
        }
    }
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
            When::AtServerMs(at) => ("at", at.min(crate::durable::backend::MAX_MS)),
        };
        // WAIT covers the writes of the connection it runs on, so it runs
        // right after the put, on the same connection.
        let (reply, replicas): (Vec<i64>, Option<i64>) = self.redis.run(true, |c| {
            let mut inv = self.scripts.put.prepare_invoke();
            for key in &self.redis.keys {
                inv.key(key);
            }
            inv.arg(id).arg(mode).arg(how).arg(ms).arg(envelope);
            let reply: Vec<i64> = inv.invoke(c)?;
            let replicas = match self.redis.opts.replicas {
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
        if let (Some((n, timeout)), Some(acked)) = (self.redis.opts.replicas, replicas) {
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
        let reply: Vec<Value> = self.redis.invoke(
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
            let reply: Vec<i64> = self.redis.run(true, |c| {
                let mut inv = self.scripts.extend.prepare_invoke();
                for key in &self.redis.keys {
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
        let r: i64 =
            self.redis
                .invoke_for(Some(id), true, &self.scripts.ack, &[arg(id), arg(token)])?;
        Ok(r == 1)
    }

    fn nack(&self, id: &str, token: u64, to: Nack) -> Result<bool, DurableError> {
        let (how, ms) = match to {
            Nack::Retry(d) => ("retry", ceil_ms(d)),
            Nack::Dead => ("dead", 0),
            Nack::Release => ("release", 0),
            Nack::Defer(d) => ("defer", ceil_ms(d)),
        };
        let r: i64 = self.redis.invoke_for(
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
        let r: i64 = self.redis.invoke_for(
            Some(id),
            true,
            &self.scripts.reschedule,
            &[arg(id), arg(token), arg(how), arg(ms)],
        )?;
        Ok(u64::try_from(r).ok())
    }

    fn cancel(&self, id: &str) -> Result<Cancelled, DurableError> {
        let (reply, retried): (Vec<Value>, bool) =
            self.redis
                .invoke_counted(None, true, &self.scripts.cancel, &[arg(id)])?;
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
                let popped: Vec<String> = self.redis.run(true, |c| {
                    redis::cmd("ZPOPMIN").arg(&self.redis.keys[4]).query(c)
                })?;
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
                .redis
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
            .arg(&self.redis.keys[4])
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
            let unblocked: Result<i64, _> = self.redis.run(false, |c| {
                redis::cmd("CLIENT").arg("UNBLOCK").arg(id).query(c)
            });
            if unblocked == Ok(1) {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn counts(&self) -> Result<Counts, DurableError> {
        let (pending, in_flight, dead): (usize, usize, usize) = self.redis.run(true, |c| {
            redis::pipe()
                .zcard(&self.redis.keys[0])
                .zcard(&self.redis.keys[1])
                .zcard(&self.redis.keys[5])
                .query(c)
        })?;
        Ok(Counts {
            pending,
            in_flight,
            dead,
        })
    }

    fn peek_deadline_ms(&self) -> Result<Option<u64>, DurableError> {
        let head: Vec<(String, f64)> = self.redis.run(true, |c| {
            redis::cmd("ZRANGE")
                .arg(&self.redis.keys[0])
                .arg(0)
                .arg(0)
                .arg("WITHSCORES")
                .query(c)
        })?;
        Ok(head.first().map(|(_, score)| *score as u64))
    }

    fn server_time_ms(&self) -> Result<u64, DurableError> {
        self.redis.server_time_ms()
    }

    fn dead_letters(&self, max: usize) -> Result<Vec<(String, Vec<u8>)>, DurableError> {
        if max == 0 {
            return Ok(Vec::new());
        }
        let ids: Vec<String> = self.redis.run(true, |c| {
            redis::cmd("ZRANGE")
                .arg(&self.redis.keys[5])
                .arg(0)
                .arg(max - 1)
                .query(c)
        })?;
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let data: Vec<Option<Vec<u8>>> = self.redis.run(true, |c| {
            redis::cmd("HMGET")
                .arg(&self.redis.keys[2])
                .arg(&ids)
                .query(c)
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
            .field("queue", &self.redis.name)
            .field("opts", &self.redis.opts)
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
