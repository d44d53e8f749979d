//! The async Redis client (features `redis` + `tokio`): the producer verbs
//! (put, cancel, get, counts, the dead-letter verbs) over the redis crate's
//! tokio connection, with the same scripts, keys, retry policy and replies
//! as the sync backend.
//!
//! Invariants:
//!
//! - Every verb is one script call or one read (a put with `replicas` is
//!   followed by `WAIT` on the same connection), so a future dropped
//!   mid-way leaves the store as before the call or as after it, never
//!   between: a command already sent runs on the server whether or not
//!   its reply is read.
//! - Idempotent verbs are retried on connection errors and timeouts until
//!   `op_timeout` (async sleeps between attempts); no attempt outlasts what
//!   is left of it. A retried cancel, requeue or purge that finds nothing
//!   reports `Unavailable`, as the sync backend does.
//! - One multiplexed connection, made on first use and dropped after a
//!   transport error; concurrent calls pipeline on it. Nothing here blocks
//!   a thread.

use std::time::{Duration, Instant};

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Cmd, FromRedisValue, RedisError, Value};

use super::backend::RedisBackend;
use super::client::{arg, detail, is_transient, no_reply, refused_to_connect, RedisOptions};
use super::{dead, reply, scripts};
use crate::base::sync::Mutex;
use crate::durable::store::backend::{
    ceil_ms, Buried, Cancelled, Counts, DurableError, Put, PutMode, Stored, When, MAX_MS,
};
use crate::durable::store::error::ErrorDetail;

/// A script as the async client sends it: `EVALSHA`, loading it on
/// `NOSCRIPT`.
struct AioScript {
    hash: String,
    code: String,
}

impl AioScript {
    fn new(code: String) -> Self {
        let hash = redis::Script::new(&code).get_hash().to_string();
        AioScript { hash, code }
    }
}

/// The async client of one Redis queue.
pub(crate) struct RedisAio {
    client: redis::Client,
    keys: [String; 7],
    opts: RedisOptions,
    conn: Mutex<Option<MultiplexedConnection>>,
    put: AioScript,
    cancel: AioScript,
    get: AioScript,
    requeue: AioScript,
    purge: AioScript,
    list: AioScript,
}

impl RedisAio {
    /// The async client of `backend`'s queue: its URL, options and keys.
    /// Connects on first use.
    pub(crate) fn of(backend: &RedisBackend) -> Self {
        let redis = backend.client();
        RedisAio {
            client: redis.client().clone(),
            keys: redis.keys.clone(),
            opts: redis.opts.clone(),
            conn: Mutex::new(None),
            put: AioScript::new(scripts::put()),
            cancel: AioScript::new(scripts::cancel()),
            get: AioScript::new(scripts::get()),
            requeue: AioScript::new(dead::requeue()),
            purge: AioScript::new(dead::purge()),
            list: AioScript::new(dead::list()),
        }
    }

    async fn connection(&self, left: Duration) -> Result<MultiplexedConnection, RedisError> {
        if let Some(conn) = self.conn.lock().clone() {
            return Ok(conn);
        }
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(left.min(self.opts.server.connect_timeout)))
            .set_response_timeout(Some(self.opts.server.op_timeout));
        let conn = self
            .client
            .get_multiplexed_async_connection_with_config(&config)
            .await?;
        *self.conn.lock() = Some(conn.clone());
        Ok(conn)
    }

    /// `EVALSHA script keys args`, then (for a put with `replicas`) `WAIT`:
    /// one attempt on `conn`.
    async fn attempt<R: FromRedisValue + Send>(
        &self,
        conn: &mut MultiplexedConnection,
        script: &AioScript,
        cmd: &Cmd,
        wait: bool,
    ) -> Result<(R, Option<i64>), RedisError> {
        let reply: R = match cmd.query_async(conn).await {
            Err(err)
                if err.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) =>
            {
                redis::cmd("SCRIPT")
                    .arg("LOAD")
                    .arg(&script.code)
                    .query_async::<String>(conn)
                    .await?;
                cmd.query_async(conn).await?
            }
            other => other?,
        };
        let replicas = match (wait, self.opts.replicas) {
            (true, Some((n, timeout))) => Some(
                redis::cmd("WAIT")
                    .arg(n)
                    .arg(timeout.as_millis() as u64)
                    .query_async(conn)
                    .await?,
            ),
            _ => None,
        };
        Ok((reply, replicas))
    }

    /// Runs `script` with `args` (after the queue's keys), retried as the
    /// sync client retries. Returns the reply, `WAIT`'s answer when asked,
    /// and whether the script was sent more than once.
    async fn eval<R: FromRedisValue + Send>(
        &self,
        script: &AioScript,
        args: &[Vec<Vec<u8>>],
        wait: bool,
    ) -> Result<(R, Option<i64>, bool), DurableError> {
        let mut cmd = redis::cmd("EVALSHA");
        cmd.arg(&script.hash).arg(self.keys.len());
        for key in &self.keys {
            cmd.arg(key);
        }
        for a in args.iter().flatten() {
            cmd.arg(a.as_slice());
        }
        self.retry(|mut conn| {
            let cmd = &cmd;
            Box::pin(async move { self.attempt(&mut conn, script, cmd, wait).await })
        })
        .await
        .map(|((r, replicas), sent)| (r, replicas, sent))
    }

    /// Runs `attempt` until it succeeds, fails for good, or `op_timeout`
    /// is spent (every call here is idempotent); returns whether it was
    /// sent more than once.
    async fn retry<'a, R>(
        &self,
        mut attempt: impl FnMut(
            MultiplexedConnection,
        ) -> std::pin::Pin<
            Box<dyn std::future::Future<Output = Result<R, RedisError>> + Send + 'a>,
        >,
    ) -> Result<(R, bool), DurableError> {
        let op_timeout = self.opts.server.op_timeout;
        let limit = Instant::now()
            .checked_add(op_timeout)
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(365 * 24 * 3600));
        let mut backoff = Duration::from_millis(10);
        let mut sent = 0u32;
        loop {
            let left = limit
                .checked_duration_since(Instant::now())
                .filter(|l| !l.is_zero())
                .unwrap_or(Duration::from_millis(1));
            let err = match tokio::time::timeout(left, self.connection(left)).await {
                Ok(Ok(conn)) => {
                    sent += 1;
                    match tokio::time::timeout(left, attempt(conn)).await {
                        Ok(Ok(r)) => return Ok((r, sent > 1)),
                        Ok(Err(err)) if refused_to_connect(&err) => {
                            return Err(DurableError::Config(detail(err)))
                        }
                        Ok(Err(err)) if !is_transient(&err) => {
                            return Err(DurableError::Refused(detail(err)))
                        }
                        Ok(Err(err)) if err.is_timeout() => DurableError::Unavailable(
                            ErrorDetail::with_source(no_reply(op_timeout), err),
                        ),
                        Ok(Err(err)) => DurableError::Unavailable(detail(err)),
                        Err(_) => DurableError::Unavailable(no_reply(op_timeout).into()),
                    }
                }
                Ok(Err(err)) if refused_to_connect(&err) => {
                    return Err(DurableError::Config(detail(err)))
                }
                Ok(Err(err)) if !is_transient(&err) => {
                    return Err(DurableError::Unavailable(detail(err)))
                }
                Ok(Err(err)) => DurableError::Unavailable(detail(err)),
                Err(_) => DurableError::Unavailable(
                    format!(
                        "could not connect to Redis within {} ms",
                        op_timeout.as_millis()
                    )
                    .into(),
                ),
            };
            // The connection may be broken: the next attempt makes a new one.
            *self.conn.lock() = None;
            if Instant::now() + backoff >= limit {
                return Err(err);
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_millis(200));
        }
    }

    pub(crate) async fn put(
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
            When::AtServerMs(at) => ("at", at.min(MAX_MS)),
        };
        let args = [arg(id), arg(mode), arg(how), arg(ms), arg(envelope)];
        let (reply, replicas, _): (Vec<i64>, _, _) = self.eval(&self.put, &args, true).await?;
        let put = reply::put(&reply)?;
        if let (Some((n, timeout)), Some(acked), true) =
            (self.opts.replicas, replicas, put != Put::Exists)
        {
            if acked < i64::from(n) {
                return Err(DurableError::Unavailable(format!(
                    "the put is on the primary, but only {acked} of {n} replicas acknowledged it within {timeout:?}"
                ).into()));
            }
        }
        Ok(put)
    }

    pub(crate) async fn cancel(&self, id: &str) -> Result<Cancelled, DurableError> {
        let (reply, _, retried): (Vec<Value>, _, _) =
            self.eval(&self.cancel, &[arg(id)], false).await?;
        reply::cancel(reply, retried, id)
    }

    pub(crate) async fn get(&self, id: &str) -> Result<Option<Stored>, DurableError> {
        let (reply, _, _): (Vec<Value>, _, _) = self.eval(&self.get, &[arg(id)], false).await?;
        reply::get(reply, id)
    }

    pub(crate) async fn requeue(&self, id: &str) -> Result<bool, DurableError> {
        let (r, _, retried): (i64, _, _) = self.eval(&self.requeue, &[arg(id)], false).await?;
        reply::acted(r, retried, "requeue", id)
    }

    pub(crate) async fn purge(&self, id: &str) -> Result<bool, DurableError> {
        let (r, _, retried): (i64, _, _) = self.eval(&self.purge, &[arg(id)], false).await?;
        reply::acted(r, retried, "purge", id)
    }

    pub(crate) async fn dead_letters(&self, max: usize) -> Result<Vec<Buried>, DurableError> {
        if max == 0 {
            return Ok(Vec::new());
        }
        let (reply, _, _): (Vec<Value>, _, _) = self.eval(&self.list, &[arg(max)], false).await?;
        reply::buried(reply)
    }

    pub(crate) async fn counts(&self) -> Result<Counts, DurableError> {
        let mut pipe = redis::pipe();
        pipe.zcard(&self.keys[0])
            .zcard(&self.keys[1])
            .zcard(&self.keys[5]);
        let ((pending, in_flight, dead), _) = self
            .retry(|mut conn| {
                let pipe = &pipe;
                Box::pin(async move { pipe.query_async(&mut conn).await })
            })
            .await?;
        Ok(Counts {
            pending,
            in_flight,
            dead,
        })
    }
}
