//! The PostgreSQL client under the backend: options, the connection pool
//! with prepared statements, the retry policy, and how server errors map
//! onto [`DurableError`].
//!
//! Invariants:
//!
//! - Idempotent calls (put, ack, nack, extend, reschedule, cancel, reads)
//!   are retried on connection failures, on a server that is starting or
//!   shutting down, and on serialization failures and deadlocks, until
//!   `op_timeout`. A claim is retried only when the server says it rolled
//!   back (serialization failure, deadlock): nothing was claimed then. After
//!   a connection failure its items come back after one lease.
//! - A connection goes back to the pool only after a complete reply; after a
//!   transport error it is dropped.
//! - Every error is a `DurableError`; nothing here panics on what the
//!   server sends.

use std::time::{Duration, Instant};

use postgres::{Client, Config, Statement};

use super::error::{classify, map_err, Kind};
use super::schema;
use super::tls::Connector;
use crate::base::sync::Mutex;
use crate::durable::store::error::DurableError;
use crate::durable::store::options::{server_setters, ServerOptions};

/// Settings of a [`PostgresBackend`](super::PostgresBackend).
///
/// The timeouts, TLS and strictness are the [`ServerOptions`] every
/// networked store shares, in [`server`](Self::server), with the same
/// setters here. On PostgreSQL:
///
/// - [`op_timeout`](ServerOptions::op_timeout) is also the command
///   connections' `lock_timeout`, so a statement waiting for a row lock
///   held by another transaction gives up then;
/// - [`strict`](ServerOptions::strict) refuses a server whose `fsync`,
///   `full_page_writes` or `synchronous_commit` is off (without it each is
///   a warning, logged and kept in
///   [`PostgresBackend::warnings`](super::PostgresBackend::warnings));
/// - [`require_tls`](ServerOptions::require_tls) means `sslmode=require`
///   with the certificate and host name checked (`sslmode=require` in the
///   parameters means the same); setting a
///   [`ca_pem`](ServerOptions::ca_pem) turns TLS on. Both need feature
///   `postgres-tls`.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedpool::durable::PostgresOptions;
///
/// let o = PostgresOptions::default().schema("jobs").op_timeout(Duration::from_secs(1));
/// assert_eq!(o.schema, "jobs");
/// assert_eq!(o.server.op_timeout, Duration::from_secs(1));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PostgresOptions {
    /// The schema that holds the tables and functions (default
    /// `schedpool`): at most 50 bytes. Several queues share one schema.
    pub schema: String,
    /// Create the schema's tables and functions at connect when they are
    /// missing (default true). With false, a missing schema is a
    /// [`DurableError::Config`]; apply
    /// [`PostgresBackend::migration_sql`](super::PostgresBackend::migration_sql)
    /// by hand.
    pub migrate: bool,
    /// Timeouts, TLS, strictness and the skew warning.
    pub server: ServerOptions,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        PostgresOptions {
            schema: "schedpool".into(),
            migrate: true,
            server: ServerOptions::default(),
        }
    }
}

impl PostgresOptions {
    server_setters!(PostgresOptions);

    /// Sets [`schema`](Self::schema).
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::durable::PostgresOptions;
    ///
    /// // Several queues share one schema; a second schema keeps two apps apart.
    /// assert_eq!(PostgresOptions::default().schema("billing").schema, "billing");
    /// ```
    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = schema.into();
        self
    }

    /// Sets [`migrate`](Self::migrate).
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::durable::PostgresOptions;
    ///
    /// // The schema is applied by your own migrations (migration_sql).
    /// assert!(!PostgresOptions::default().migrate(false).migrate);
    /// ```
    pub fn migrate(mut self, migrate: bool) -> Self {
        self.migrate = migrate;
        self
    }
}

/// The counts by state of `$1`'s items.
pub(super) fn counts_sql(s: &str) -> String {
    format!("SELECT state, count(*) FROM {s}.items WHERE queue = $1 AND state < 3 GROUP BY state")
}

/// Item `$2` of queue `$1`, wherever it is.
pub(super) fn get_sql(s: &str) -> String {
    format!(
        "SELECT state, deadline, envelope FROM {s}.items \
         WHERE queue = $1 AND id = $2 AND state < 3"
    )
}

/// Up to `$2` dead letters of queue `$1`, oldest death first.
pub(super) fn dead_sql(s: &str) -> String {
    format!(
        "SELECT id, envelope, attempts, score FROM {s}.items WHERE queue = $1 \
         AND state = 2 ORDER BY score, id LIMIT $2"
    )
}

/// The statements every command connection prepares once.
pub(super) struct Stmts {
    pub(super) put: Statement,
    pub(super) claim: Statement,
    pub(super) extend: Statement,
    pub(super) ack: Statement,
    pub(super) ack_many: Statement,
    pub(super) nack: Statement,
    pub(super) reschedule: Statement,
    pub(super) cancel: Statement,
    pub(super) counts: Statement,
    pub(super) peek: Statement,
    pub(super) get: Statement,
    pub(super) now: Statement,
    pub(super) dead: Statement,
}

/// One command connection and its prepared statements.
pub(super) struct Conn {
    pub(super) client: Client,
    pub(super) st: Stmts,
}

pub(super) struct PgClient {
    pub(super) config: Config,
    /// The schema, quoted for SQL.
    pub(super) s: String,
    pub(super) queue: String,
    pub(super) opts: PostgresOptions,
    pub(super) tls: Connector,
    idle: Mutex<Vec<Conn>>,
}

impl PgClient {
    pub(super) fn new(
        mut config: Config,
        queue: &str,
        opts: PostgresOptions,
    ) -> Result<Self, DurableError> {
        let tls = Connector::new(
            &mut config,
            opts.server.require_tls,
            opts.server.ca_pem.as_deref(),
        )?;
        config.connect_timeout(opts.server.connect_timeout);
        config.keepalives(true);
        config.keepalives_idle(Duration::from_secs(10));
        if config.get_application_name().is_none() {
            config.application_name("schedpool");
        }

        Ok(PgClient {
            config,
            s: schema::ident(&opts.schema),
            queue: queue.to_string(),
            opts,
            tls,
            idle: Mutex::new(Vec::new()),
        })
    }

    /// A new plain connection.
    pub(super) fn connect_raw(&self) -> Result<Client, DurableError> {
        self.tls.connect(&self.config).map_err(map_err)
    }

    fn connect_conn(&self) -> Result<Conn, postgres::Error> {
        let mut client = self.tls.connect(&self.config)?;
        // A statement that waits for a row lock (one a caller's open
        // transaction holds, through the `*_in` verbs or its own SQL) gives
        // up at `op_timeout` instead of holding a worker or the acker for as
        // long as that transaction stays open; it fails as `Unavailable`.
        // (A SET, not a startup option, which poolers may refuse.)
        client.batch_execute(&format!(
            "SET lock_timeout = {}",
            self.opts
                .server
                .op_timeout
                .as_millis()
                .clamp(1, i32::MAX as u128)
        ))?;
        let s = &self.s;
        let mut prep = |q: String| client.prepare(&q);
        let st = Stmts {
            put: prep(schema::put_sql(s, &self.opts.schema))?,
            claim: prep(format!("SELECT * FROM {s}.claim($1, $2, $3, $4)"))?,
            extend: prep(schema::extend_sql(s))?,
            ack: prep(format!("SELECT {s}.ack($1, $2, $3)"))?,
            ack_many: prep(schema::ack_many_sql(s))?,
            nack: prep(format!("SELECT {s}.nack($1, $2, $3, $4, $5)"))?,
            reschedule: prep(format!("SELECT {s}.reschedule($1, $2, $3, $4, $5)"))?,
            cancel: prep(schema::cancel_sql(s))?,
            counts: prep(counts_sql(s))?,
            peek: prep(format!(
                "SELECT min(score) FROM {s}.items WHERE queue = $1 AND state = 0"
            ))?,
            get: prep(get_sql(s))?,
            now: prep(format!("SELECT {s}.now_ms()"))?,
            dead: prep(dead_sql(s))?,
        };
        Ok(Conn { client, st })
    }

    /// Runs `f` on a command connection. `idempotent` calls are retried on
    /// transient failures until `op_timeout`; others only when the server
    /// rolled the call back. Returns the result and whether `f` was sent
    /// more than once.
    pub(super) fn run<R>(
        &self,
        idempotent: bool,
        mut f: impl FnMut(&mut Conn) -> Result<R, postgres::Error>,
    ) -> Result<(R, bool), DurableError> {
        let limit = Instant::now()
            .checked_add(self.opts.server.op_timeout)
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(365 * 24 * 3600));
        let mut backoff = Duration::from_millis(10);
        let mut sent = 0u32;
        loop {
            let pooled = self.idle.lock().pop();
            let conn = match pooled {
                Some(c) if !c.client.is_closed() => Ok(c),
                _ => self.connect_conn(),
            };
            let err = match conn {
                Ok(mut conn) => {
                    sent += 1;
                    match f(&mut conn) {
                        Ok(r) => {
                            self.idle.lock().push(conn);
                            return Ok((r, sent > 1));
                        }
                        Err(err) => {
                            let kind = classify(&err);
                            if kind != Kind::Broken {
                                self.idle.lock().push(conn);
                            }
                            match kind {
                                Kind::RolledBack => err,
                                Kind::Broken | Kind::Starting if idempotent => err,
                                _ => return Err(map_err(err)),
                            }
                        }
                    }
                }
                Err(err) => match classify(&err) {
                    Kind::Broken | Kind::Starting => err,
                    _ => return Err(map_err(err)),
                },
            };
            if Instant::now() + backoff >= limit {
                return Err(map_err(err));
            }
            std::thread::sleep(backoff);
            backoff = (backoff * 2).min(Duration::from_millis(200));
        }
    }
}
