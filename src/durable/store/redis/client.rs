//! The Redis client under the backend: the connection pool, the retry
//! policy, and script calls.
//!
//! Invariants:
//!
//! - Idempotent operations (put, ack, nack, extend, reschedule, cancel,
//!   reads) are retried on connection errors and on `LOADING`-like replies
//!   until `op_timeout`, with one grace attempt past it; `claim` never is (a
//!   lost reply's items come back after one lease).
//! - No attempt outlasts what is left of `op_timeout`: connect and read
//!   timeouts are set from it on every attempt.
//! - A connection goes back to the pool only after a complete reply
//!   (success or a server error); after a transport error it is dropped,
//!   since it may be half-way through a reply.
//! - A transport error says what happened (`transport_error`): a timeout
//!   names the timeout that ran out ("no reply from Redis within N ms"),
//!   never the socket's `EAGAIN` text; the `rediss://` hint is added only
//!   where a TLS-only server is a possible cause: a plain connection that
//!   the server reset or closed before its first reply.

use std::time::{Duration, Instant};

use crate::base::sync::Mutex;
use redis::{Connection, RedisError, RedisResult, Script, Value};

use crate::durable::store::error::{DurableError, ErrorDetail};
use crate::durable::store::options::{server_setters, ServerOptions};

/// The budget of the one attempt an idempotent call gets past its
/// `op_timeout` when its only attempt failed (see `run`).
const GRACE: Duration = Duration::from_millis(250);

/// Settings of a [`RedisBackend`](super::RedisBackend).
///
/// The timeouts, TLS and strictness are the [`ServerOptions`] every
/// networked store shares, in [`server`](Self::server), with the same
/// setters here. On Redis:
///
/// - [`strict`](ServerOptions::strict) refuses a server with no AOF, an
///   evicting `maxmemory-policy`, or `appendfsync no`, or one where these
///   or the server's version cannot be read (an ACL user without
///   `+info`/`+config|get`). `appendfsync everysec` passes: it can lose up
///   to about 2 s of acknowledged puts, even on a kill of `redis-server`
///   while a slow fsync holds back the AOF write; `always` loses none
///   (`docs/durable.md`, "The rules", 4);
/// - [`require_tls`](ServerOptions::require_tls) refuses a URL that is not
///   `rediss://`; a [`ca_pem`](ServerOptions::ca_pem) needs feature
///   `redis-tls` and a `rediss://` URL.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedpool::durable::RedisOptions;
///
/// let o = RedisOptions::default().op_timeout(Duration::from_millis(500)).strict(true);
/// assert_eq!(o.server.op_timeout, Duration::from_millis(500));
/// assert!(o.server.strict);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct RedisOptions {
    /// Timeouts, TLS, strictness and the skew warning.
    pub server: ServerOptions,
    /// After each put, wait for this many replicas to acknowledge it
    /// (`WAIT n timeout`); a shortfall is an error. `None` (the default)
    /// does not wait.
    pub replicas: Option<(u32, Duration)>,
}

impl RedisOptions {
    server_setters!(RedisOptions);

    /// Sets [`replicas`](Self::replicas).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::RedisOptions;
    ///
    /// // Each put waits until one replica has it, at most 100 ms.
    /// let opts = RedisOptions::default().replicas(1, Duration::from_millis(100));
    /// assert_eq!(opts.replicas, Some((1, Duration::from_millis(100))));
    /// ```
    pub fn replicas(mut self, n: u32, timeout: Duration) -> Self {
        self.replicas = Some((n, timeout));
        self
    }
}

/// One queue's connection pool and key names.
pub(super) struct RedisClient {
    client: redis::Client,
    pub(super) name: String,
    /// `due`, `lease`, `data`, `meta`, `wake`, `dead`, `cfg`: KEYS[1..=7]
    /// of every script.
    pub(super) keys: [String; 7],
    pub(super) opts: RedisOptions,
    /// The URL is `rediss://`.
    pub(super) tls: bool,
    idle: Mutex<Vec<Connection>>,
}

const PARTS: [&str; 7] = ["due", "lease", "data", "meta", "wake", "dead", "cfg"];

impl RedisClient {
    /// Validates `name`, parses `url`; connects nothing yet.
    pub(super) fn open(url: &str, name: &str, opts: RedisOptions) -> Result<Self, DurableError> {
        if name.is_empty() || name.contains(['{', '}']) {
            return Err(DurableError::Config(
                format!("queue name {name:?} must be non-empty and free of braces").into(),
            ));
        }
        let info = redis::IntoConnectionInfo::into_connection_info(url)
            .map_err(|e| DurableError::Config(detail(e)))?;
        let tls = matches!(info.addr(), redis::ConnectionAddr::TcpTls { .. });
        if opts.server.require_tls && !tls {
            return Err(DurableError::Config(
                format!(
                    "require_tls is set, but {} is not a rediss:// address",
                    info.addr()
                )
                .into(),
            ));
        }
        if tls && cfg!(not(feature = "redis-tls")) {
            // The redis crate may have TLS compiled in (feature `tokio`
            // needs it), but without `redis-tls` no crypto provider is set
            // up: refuse here, never a panic at the first connection.
            return Err(DurableError::Config(
                format!(
                    "{} is a rediss:// address, but schedpool was built without feature redis-tls",
                    info.addr()
                )
                .into(),
            ));
        }
        // No CLIENT SETINFO handshake: redis-rs waits for its replies with
        // the connect timeout each, so a hung server would hold every new
        // connection for twice the connect timeout (F9).
        let settings = info.redis_settings().clone().set_skip_set_lib_name();
        let info = info.set_redis_settings(settings);
        let client = match &opts.server.ca_pem {
            None => redis::Client::open(info),
            Some(pem) => with_ca(info, pem, tls)?,
        }
        .map_err(|e| DurableError::Config(detail(e)))?;
        #[cfg(feature = "redis-tls")]
        if tls {
            // redis-rs builds its rustls config with the process's default
            // provider: make it ring unless the application chose one.
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        let key = |k: &str| format!("sp:{{{name}}}:{k}");
        Ok(RedisClient {
            client,
            name: name.to_string(),
            keys: PARTS.map(key),
            opts,
            tls,
            idle: Mutex::new(Vec::new()),
        })
    }

    /// The client connections are made from (the async client's too).
    #[cfg(feature = "tokio")]
    pub(super) fn client(&self) -> &redis::Client {
        &self.client
    }

    /// The key of one part of the queue.
    pub(super) fn key(&self, part: &str) -> Option<&str> {
        let i = PARTS.iter().position(|p| *p == part)?;
        Some(&self.keys[i])
    }

    /// The receipt key of item `id` (see `invoke_for`).
    pub(super) fn receipt_key(&self, id: &str) -> String {
        format!("sp:{{{}}}:receipt:{id}", self.name)
    }

    /// The server's clock, in ms since the Unix epoch.
    pub(super) fn server_time_ms(&self) -> Result<u64, DurableError> {
        let (secs, micros): (u64, u64) = self.run(true, |c| redis::cmd("TIME").query(c))?;
        Ok(secs * 1000 + micros / 1000)
    }

    pub(super) fn connect_one(&self) -> RedisResult<Connection> {
        self.connect_within(self.opts.server.connect_timeout)
    }

    fn connect_within(&self, left: Duration) -> RedisResult<Connection> {
        let conn = self
            .client
            .get_connection_with_timeout(left.min(self.opts.server.connect_timeout))?;
        conn.set_read_timeout(Some(self.opts.server.op_timeout))?;
        conn.set_write_timeout(Some(self.opts.server.op_timeout))?;
        Ok(conn)
    }

    /// Runs `f` on a command connection; retries connection failures with
    /// backoff until `op_timeout` when `idempotent`.
    pub(super) fn run<R>(
        &self,
        idempotent: bool,
        mut f: impl FnMut(&mut Connection) -> RedisResult<R>,
    ) -> Result<R, DurableError> {
        let limit = Instant::now()
            .checked_add(self.opts.server.op_timeout)
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(365 * 24 * 3600));
        let mut backoff = Duration::from_millis(10);
        // One attempt past the deadline, for an idempotent call whose only
        // attempt failed: a process paused (SIGSTOP, a VM stall) during the
        // read finds op_timeout spent, while the server answered long ago.
        // The retry (a settle answers from its receipt) costs at most GRACE.
        let mut grace = idempotent;
        // Whether an attempt saw a new plain connection dropped before its
        // first reply: the rediss:// hint, kept when a later attempt
        // fails otherwise (a timeout of the last, short one).
        let mut tls_hint = false;
        loop {
            let pooled = self.idle.lock().pop();
            // A new connection's first reply is its "handshake": a
            // TLS-only server drops a plain one there.
            let fresh = pooled.is_none();
            // One attempt never outlasts what is left of op_timeout.
            let left = match limit.checked_duration_since(Instant::now()) {
                Some(left) if !left.is_zero() => left,
                _ => GRACE.min(self.opts.server.op_timeout),
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
                    // The TLS handshake runs with the first command.
                    Err(err) if refused_to_connect(&err) => return Err(refused(err)),
                    Err(err) if !is_transient(&err) => {
                        // The server answered (out of memory, a script error):
                        // the connection is fine, the command is refused.
                        self.idle.lock().push(conn);
                        return Err(DurableError::Refused(detail(err)));
                    }
                    // Dropped: it may be half-way through a reply.
                    Err(err) => err,
                },
                Err(err) if refused_to_connect(&err) => return Err(refused(err)),
                Err(err) => err,
            };
            tls_hint |= fresh && self.dropped_before_reply(&err);
            let unavailable = |err| {
                let timeout = self.opts.server.op_timeout;
                DurableError::Unavailable(self.transport_error(err, timeout, tls_hint))
            };
            if !idempotent || !is_transient(&err) {
                return Err(unavailable(err));
            }
            if Instant::now() + backoff >= limit {
                if !std::mem::take(&mut grace) {
                    return Err(unavailable(err));
                }
                continue;
            }
            grace = false;
            std::thread::sleep(backoff);
            backoff = (backoff * 2).min(Duration::from_millis(200));
        }
    }

    pub(super) fn invoke<R: redis::FromRedisValue>(
        &self,
        idempotent: bool,
        script: &Script,
        args: &[Vec<Vec<u8>>],
    ) -> Result<R, DurableError> {
        self.invoke_for(None, idempotent, script, args)
    }

    /// As `invoke`, for a settling script: `KEYS[8]` is the item's receipt
    /// key, where the script leaves the token it settled with for
    /// `RECEIPT_MS`. A retry after a lost reply finds it and answers as the
    /// first attempt did, instead of "not held" (a retried ack whose first
    /// attempt succeeded must not report `LeaseLost`).
    pub(super) fn invoke_for<R: redis::FromRedisValue>(
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
    pub(super) fn invoke_counted<R: redis::FromRedisValue>(
        &self,
        receipt_of: Option<&str>,
        idempotent: bool,
        script: &Script,
        args: &[Vec<Vec<u8>>],
    ) -> Result<(R, bool), DurableError> {
        let receipt = receipt_of.map(|id| self.receipt_key(id));
        self.invoke_keyed(receipt, idempotent, script, args)
    }

    /// The key of one of the operator's parts of the queue (`paused`,
    /// `audit`), passed to the scripts that use it as `KEYS[8]`.
    pub(super) fn extra_key(&self, part: &str) -> String {
        format!("sp:{{{}}}:{part}", self.name)
    }

    /// As `invoke_counted`, with `extra` (when given) as `KEYS[8]`.
    pub(super) fn invoke_keyed<R: redis::FromRedisValue>(
        &self,
        receipt: Option<String>,
        idempotent: bool,
        script: &Script,
        args: &[Vec<Vec<u8>>],
    ) -> Result<(R, bool), DurableError> {
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

/// A client whose TLS connections trust only the certificates in `pem`.
#[cfg(feature = "redis-tls")]
fn with_ca(
    info: redis::ConnectionInfo,
    pem: &[u8],
    tls: bool,
) -> Result<redis::RedisResult<redis::Client>, DurableError> {
    if !tls {
        return Err(DurableError::Config(
            "a CA certificate is set, but the URL is not rediss://".into(),
        ));
    }
    Ok(redis::Client::build_with_tls(
        info,
        redis::TlsCertificates {
            client_tls: None,
            root_cert: Some(pem.to_vec()),
        },
    ))
}

#[cfg(not(feature = "redis-tls"))]
fn with_ca(
    _info: redis::ConnectionInfo,
    _pem: &[u8],
    _tls: bool,
) -> Result<redis::RedisResult<redis::Client>, DurableError> {
    Err(DurableError::Config(
        "a CA certificate is set, but schedpool was built without feature redis-tls".into(),
    ))
}

/// One script argument, encoded.
pub(super) fn arg<T: redis::ToRedisArgs>(value: T) -> Vec<Vec<u8>> {
    value.to_redis_args()
}

/// A connection the server or the TLS layer refused for who we are (a
/// wrong or missing password or user, a certificate that does not chain to
/// the CA): retrying cannot cure it.
pub(super) fn refused_to_connect(err: &RedisError) -> bool {
    refused_credentials(err) || err.to_string().contains("invalid peer certificate")
}

/// A wrong or missing password or user (`WRONGPASS`, `NOAUTH`).
fn refused_credentials(err: &RedisError) -> bool {
    err.kind() == redis::ErrorKind::AuthenticationFailed
        || matches!(err.code(), Some("WRONGPASS" | "NOAUTH"))
}

/// The [`DurableError::Config`] of a connection refused for who we are:
/// "authentication: ..." for credentials, the TLS layer's reason otherwise.
pub(super) fn refused(err: RedisError) -> DurableError {
    if refused_credentials(&err) {
        let text = format!("authentication: {err}");
        return DurableError::Config(ErrorDetail::with_source(text, err));
    }
    DurableError::Config(detail(err))
}

pub(super) fn is_transient(err: &RedisError) -> bool {
    err.is_io_error()
        || err.is_timeout()
        || err.is_connection_dropped()
        || err.is_connection_refusal()
        // LOADING (a restart replaying its AOF), TRYAGAIN, MASTERDOWN,
        // CLUSTERDOWN: the server is coming back; wait and retry.
        || matches!(err.retry_method(), redis::RetryMethod::WaitAndRetry)
}

pub(super) fn int(v: &Value) -> Result<i64, DurableError> {
    match v {
        Value::Int(i) => Ok(*i),
        Value::BulkString(b) => std::str::from_utf8(b)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| bad_reply(v)),
        other => Err(bad_reply(other)),
    }
}

pub(super) fn bytes(v: Value) -> Result<Vec<u8>, DurableError> {
    match v {
        Value::BulkString(b) => Ok(b),
        Value::SimpleString(s) => Ok(s.into_bytes()),
        other => Err(bad_reply(&other)),
    }
}

pub(super) fn bad_reply(v: &Value) -> DurableError {
    DurableError::Format(format!("unexpected reply from a queue script: {v:?}").into())
}

/// What a call says when `timeout` ran out before Redis answered (not the
/// socket's `EAGAIN` text, which reads like a server error).
pub(super) fn no_reply(timeout: Duration) -> String {
    format!("no reply from Redis within {} ms", timeout.as_millis())
}

/// The detail of a client or server error: its text, and the error itself
/// as the source.
pub(super) fn detail(err: RedisError) -> ErrorDetail {
    ErrorDetail::with_source(err.to_string(), err)
}

impl RedisClient {
    /// The detail of a transport error (the error kept as the source): a
    /// timeout says which (`timeout` is the one that ran out: `op_timeout`
    /// for a command, the block plus its margin for `BZPOPMIN`), and
    /// `tls_hint` (see [`dropped_before_reply`](Self::dropped_before_reply))
    /// adds the `rediss://` hint.
    pub(super) fn transport_error(
        &self,
        err: RedisError,
        timeout: Duration,
        tls_hint: bool,
    ) -> ErrorDetail {
        let text = if err.is_timeout() {
            no_reply(timeout)
        } else {
            err.to_string()
        };
        let hint = if tls_hint {
            " (if the server accepts TLS only, connect with a rediss:// URL)"
        } else {
            ""
        };
        ErrorDetail::with_source(format!("{text}{hint}"), err)
    }

    /// A plain connection that the server reset or closed: on a new
    /// connection, before its first reply, that is what a TLS-only server
    /// does. Not a refused connection: a TLS-only server accepts them.
    pub(super) fn dropped_before_reply(&self, err: &RedisError) -> bool {
        !self.tls
            && err.is_io_error()
            && !err.is_connection_refusal()
            && err.is_connection_dropped()
    }
}
