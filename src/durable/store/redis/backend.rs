//! The Redis backend (feature `redis`): the `DurableBackend` over the
//! scripts of `scripts.rs`. Connections and retries are `client.rs`; the
//! checks at connect, `checks.rs`; cross-process wake-ups, `wake.rs`.
//!
//! Invariant: every store operation is one script call (or, for a batch
//! over 100, one a chunk of 100), or a read; nothing here keeps state
//! between calls but the wake-ups' (`wake.rs`).

use super::ops_scripts::OpsScripts;
use crate::durable::store::ops::DurableOps;
use std::fmt;
use std::time::Duration;

use redis::{Script, Value};

use super::client::{arg, bad_reply, bytes, int, RedisClient, RedisOptions};
use super::dead::DeadScripts;
use super::reply;
use super::scripts;
use super::wake::Wake;
use crate::durable::store::backend::{
    ceil_ms, Buried, Cancelled, ClaimBatch, Claimed, Counts, DurableBackend, DurableError, Nack,
    Put, PutMode, Repeat, Stored, When,
};
use crate::durable::store::error::ErrorDetail;

/// The most items one claim script leases.
const MAX_CLAIM: usize = 100;

/// The most acks one `ack_many` script settles.
const MAX_ACKS: usize = 100;

/// A [`DurableBackend`] on one Redis queue: the keys `sp:{name}:*`.
///
/// Needs Redis ≥ 7.0 (or Valkey ≥ 7.2). At connect it checks the server's
/// persistence and eviction settings and its clock (see
/// [`RedisOptions`]), and records a format version in the queue's `cfg` key.
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use schedpool::durable::{DurablePool, RedisBackend};
///
/// // Every process of the fleet connects to the same queue name.
/// let backend = RedisBackend::connect("redis://127.0.0.1:6379/0", "orders")?;
/// let pool = DurablePool::builder(backend)
///     .handler("close-order", |_order: &u64, _job| Ok(()))
///     .build()?;
/// pool.schedule("close-order", "order-42", &42u64, Duration::from_secs(30 * 60))?;
/// # Ok::<(), schedpool::durable::DurableError>(())
/// ```
pub struct RedisBackend {
    pub(super) redis: RedisClient,
    /// The blocking connection and the cross-process wake-ups.
    wake: Wake,
    scripts: Scripts,
    dead: DeadScripts,
    pub(super) ops: OpsScripts,
    /// What the checks at connect could not check or found unsafe.
    warnings: Vec<String>,
}

struct Scripts {
    put: Script,
    claim: Script,
    extend: Script,
    ack: Script,
    ack_many: Script,
    nack: Script,
    reschedule: Script,
    cancel: Script,
    get: Script,
}

impl RedisBackend {
    /// Connects to `url` (`redis://host:port/db`) for the queue `name`,
    /// with default [`RedisOptions`].
    ///
    /// # Errors
    ///
    /// As for [`connect_with`](Self::connect_with).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableQueue, RedisBackend};
    ///
    /// let backend = RedisBackend::connect("redis://127.0.0.1:6379/0", "orders")?;
    /// let queue: DurableQueue<u64> = DurableQueue::new(backend);
    /// queue.put("order-42", &42, Duration::from_secs(30 * 60))?;
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
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
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{RedisBackend, RedisOptions};
    ///
    /// let opts = RedisOptions::default()
    ///     .strict(true) // refuse a server without AOF, or with eviction
    ///     .op_timeout(Duration::from_secs(5));
    /// // Bad input is refused before anything is sent:
    /// let err = RedisBackend::connect_with("redis://127.0.0.1:6379/0", "a{b}", opts).unwrap_err();
    /// assert!(err.is_config());
    /// ```
    pub fn connect_with(url: &str, name: &str, opts: RedisOptions) -> Result<Self, DurableError> {
        let redis = RedisClient::open(url, name, opts)?;
        // A TLS-only server drops a plain connection without a word: the
        // client's errors say so (`RedisClient::transport_error`).
        let warnings = redis.check_server()?;
        let timer_slack = redis.read_timer_slack();
        Ok(RedisBackend {
            redis,
            wake: Wake::new(timer_slack),
            scripts: Scripts {
                put: Script::new(&scripts::put()),
                claim: Script::new(&scripts::claim()),
                extend: Script::new(&scripts::extend()),
                ack: Script::new(&scripts::ack()),
                ack_many: Script::new(&scripts::ack_many()),
                nack: Script::new(&scripts::nack()),
                reschedule: Script::new(&scripts::ack_and_reschedule()),
                cancel: Script::new(&scripts::cancel()),
                get: Script::new(&scripts::get()),
            },
            dead: DeadScripts::new(),
            ops: OpsScripts::new(),
            warnings,
        })
    }

    /// The queue's name.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use schedpool::durable::RedisBackend;
    ///
    /// let backend = RedisBackend::connect("redis://127.0.0.1:6379/0", "orders")?;
    /// assert_eq!(backend.name(), "orders");
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn name(&self) -> &str {
        &self.redis.name
    }

    /// What the checks at connect could not check (a setting an ACL user
    /// may not read) or found unsafe (no AOF, an evicting
    /// `maxmemory-policy`, ...): each was also logged at WARN. Empty when
    /// every check passed. With [`RedisOptions::strict`] these are refused
    /// instead, so a strict backend's list is empty.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use schedpool::durable::RedisBackend;
    ///
    /// let backend = RedisBackend::connect("redis://127.0.0.1:6379/0", "orders")?;
    /// for warning in backend.warnings() {
    ///     eprintln!("durability: {warning}"); // e.g. appendonly is off
    /// }
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The client under the backend (the async client's settings).
    #[cfg(feature = "tokio")]
    pub(super) fn client(&self) -> &RedisClient {
        &self.redis
    }

    /// The Redis key of one part of this queue (`due`, `lease`, `data`,
    /// `meta`, `wake`, `dead` or `cfg`), for inspection and tests.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use schedpool::durable::RedisBackend;
    ///
    /// let backend = RedisBackend::connect("redis://127.0.0.1:6379/0", "orders")?;
    /// // `redis-cli ZCARD <key>`: how many items are pending.
    /// println!("{:?}", backend.key("due"));
    /// assert_eq!(backend.key("nonsense"), None);
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn key(&self, part: &str) -> Option<&str> {
        self.redis.key(part)
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
            When::AtServerMs(at) => ("at", at.min(crate::durable::store::backend::MAX_MS)),
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
        let put = reply::put(&reply)?;
        if let (Some((n, timeout)), Some(acked)) = (self.redis.opts.replicas, replicas) {
            if acked < i64::from(n) {
                return Err(DurableError::Unavailable(format!(
                    "the put is on the primary, but only {acked} of {n} replicas acknowledged it within {timeout:?}"
                ).into()));
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
        let (reply, _): (Vec<Value>, _) = self.redis.invoke_keyed(
            Some(self.redis.extra_key("paused")),
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
            let id = String::from_utf8(bytes(id)?)
                .map_err(|e| DurableError::Format(ErrorDetail::with_source(e.to_string(), e)))?;
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

    fn ack_many(&self, acks: &[(&str, u64)]) -> Result<Vec<bool>, DurableError> {
        let mut out = Vec::with_capacity(acks.len());
        // Bounded batches keep each script short (F7).
        for chunk in acks.chunks(MAX_ACKS) {
            let reply: Vec<i64> = self.redis.run(true, |c| {
                let mut inv = self.scripts.ack_many.prepare_invoke();
                for key in &self.redis.keys {
                    inv.key(key);
                }
                for (id, _) in chunk {
                    inv.key(self.redis.receipt_key(id));
                }
                for (id, token) in chunk {
                    inv.arg(*id).arg(*token);
                }
                inv.invoke(c)
            })?;
            if reply.len() != chunk.len() {
                return Err(DurableError::Format(
                    format!("ack_many answered {} of {} acks", reply.len(), chunk.len()).into(),
                ));
            }
            out.extend(reply.into_iter().map(|r| r == 1));
        }
        Ok(out)
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
        reply::cancel(reply, retried, id)
    }

    fn wait(&self, due: Option<Duration>, limit: Duration) -> Result<bool, DurableError> {
        self.wake.wait(&self.redis, due, limit)
    }

    fn unblock(&self) {
        self.wake.unblock(&self.redis);
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

    fn get(&self, id: &str) -> Result<Option<Stored>, DurableError> {
        let reply: Vec<Value> = self.redis.invoke(true, &self.scripts.get, &[arg(id)])?;
        reply::get(reply, id)
    }

    fn server_time_ms(&self) -> Result<u64, DurableError> {
        self.redis.server_time_ms()
    }

    fn dead_letters(&self, max: usize) -> Result<Vec<Buried>, DurableError> {
        self.dead.list(&self.redis, max)
    }

    fn bury(&self, id: &str, token: u64, error: Option<&str>) -> Result<bool, DurableError> {
        self.dead.bury(&self.redis, id, token, error)
    }

    fn requeue(&self, id: &str) -> Result<bool, DurableError> {
        self.dead.requeue(&self.redis, id)
    }

    fn purge(&self, id: &str) -> Result<bool, DurableError> {
        self.dead.purge(&self.redis, id)
    }

    fn ops(&self) -> Option<&dyn DurableOps> {
        Some(self)
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
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
