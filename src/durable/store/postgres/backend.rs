//! `PostgresBackend`: the `DurableBackend` over the functions of
//! `schema.rs`, and wake-ups by `LISTEN`/`NOTIFY`.
//!
//! Invariants:
//!
//! - Command connections and the listening connection are separate: only
//!   the listener runs `LISTEN`, and it is used by one waiter at a time
//!   (the taker's local leader).
//! - A wait never sleeps past `limit`, and wakes for a notification naming
//!   this queue, draining those already received with it (the claim after
//!   it sees what they announced). A listener that was (re)connected reports a wake-up at
//!   once, so the taker claims: notifications sent while it was away are
//!   lost, and the claim finds what they announced (F1).
//! - `unblock` cannot be lost: it sets `unblock_pending`, which a wait
//!   reads before it blocks and between slices of at most 50 ms.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use postgres::Config;

use super::checks;
use super::client::{async_config, PgClient, PostgresOptions, SETUP_BUDGET};
use super::conn::PgConn;
use super::error::{map_call, CallError};
use super::reply::{
    bad_reply, cancel_reply, counts_reply, get_reply, ms, one_bool_each, pair_arrays, put_reply,
    sql_ms, when_args,
};
use super::schema;
use crate::base::sync::Mutex;
use crate::durable::store::backend::{
    ceil_ms, check_id, Buried, Cancelled, ClaimBatch, Claimed, Counts, DurableBackend,
    DurableError, Nack, Put, PutMode, Repeat, Stored, When, MAX_ID_BYTES,
};
use crate::durable::store::error::ErrorDetail;
use crate::durable::store::ops::DurableOps;

/// The most items one claim leases.
const MAX_CLAIM: usize = 100;

/// How long a wait blocks at least when the caller's limit is shorter: a
/// notification sent just before takes a few hundred µs to arrive.
const MIN_LISTEN: Duration = Duration::from_millis(5);

/// The longest slice of a wait between two looks at `unblock_pending`.
const SLICE: Duration = Duration::from_millis(50);

/// A [`DurableBackend`] on one queue in a PostgreSQL schema.
///
/// At connect it runs (or checks) the schema's versioned migration, and
/// starts listening for wake-ups. Every time-based decision uses the
/// server's `clock_timestamp()`. See `docs/durable.md` for the DDL, the
/// guarantees and their tests.
///
/// Besides the trait, it offers the transactional verbs
/// ([`put_in`](Self::put_in), [`cancel_in`](Self::cancel_in)) that run in
/// the caller's own transaction; `DurableQueue` and `DurablePool` have typed
/// forms of them (`put_in`, `schedule_in`, ...).
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use schedpool::durable::{DurablePool, PostgresBackend};
///
/// let backend = PostgresBackend::connect("host=127.0.0.1 user=app dbname=shop", "orders")?;
/// let pool = DurablePool::builder(backend)
///     .handler("close-order", |_order: &u64, _job| Ok(()))
///     .build()?;
/// // A postgres::Error converts (`?`), kept as the DurableError's source.
/// let mut db = postgres::Client::connect("host=127.0.0.1 user=app dbname=shop", postgres::NoTls)?;
/// let mut tx = db.transaction()?;
/// // ... INSERT INTO orders ... in `tx` ...
/// pool.schedule_in(&mut tx, "close-order", "order-42", &42u64, Duration::from_secs(30 * 60))?;
/// tx.commit()?;
/// # Ok::<(), schedpool::durable::DurableError>(())
/// ```
pub struct PostgresBackend {
    pub(super) pg: PgClient,
    listener: Mutex<Option<PgConn>>,
    unblock_pending: AtomicBool,
    /// What the checks at connect found unsafe (`checks.rs`).
    warnings: Vec<String>,
}

impl PostgresBackend {
    /// Connects to `params` (a `postgresql://` URL or `host=... user=...`
    /// key-value string) for the queue `queue`, with default
    /// [`PostgresOptions`] (schema `schedpool`, migrated at connect).
    ///
    /// # Errors
    ///
    /// As for [`connect_with`](Self::connect_with).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableQueue, PostgresBackend};
    ///
    /// let backend = PostgresBackend::connect("postgresql://app@127.0.0.1/shop", "orders")?;
    /// let queue: DurableQueue<u64> = DurableQueue::new(backend);
    /// queue.put("order-42", &42, Duration::from_secs(30 * 60))?;
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn connect(params: &str, queue: &str) -> Result<Self, DurableError> {
        Self::connect_with(params, queue, PostgresOptions::default())
    }

    /// Connects with `opts`: runs or checks the migration, then listens.
    ///
    /// # Errors
    ///
    /// [`DurableError::Config`] for bad parameters, a queue name that is
    /// empty or over 1,024 bytes, a schema name that is empty or over 50 bytes, failed authentication, a
    /// missing schema with `migrate(false)`, missing rights, or, with
    /// [`PostgresOptions::strict`], server settings that can lose
    /// acknowledged writes ([`warnings`](Self::warnings));
    /// [`DurableError::Format`] when the schema was made by a newer version;
    /// [`DurableError::Unavailable`] when the server cannot be reached.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{PostgresBackend, PostgresOptions};
    ///
    /// let opts = PostgresOptions::default()
    ///     .schema("jobs")
    ///     .op_timeout(Duration::from_secs(5))
    ///     .strict(true); // refuse a server that can lose acknowledged writes
    /// // Bad input is refused before anything is sent:
    /// let err = PostgresBackend::connect_with("host=127.0.0.1 user=app", "", opts).unwrap_err();
    /// assert!(err.is_config());
    /// ```
    pub fn connect_with(
        params: &str,
        queue: &str,
        opts: PostgresOptions,
    ) -> Result<Self, DurableError> {
        let config: tokio_postgres::Config = params.parse().map_err(|e: postgres::Error| {
            DurableError::Config(ErrorDetail::with_source(e.to_string(), e))
        })?;
        Self::from_async_config(config, queue, opts)
    }

    /// As [`connect_with`](Self::connect_with), from a built
    /// [`postgres::Config`] (for settings a string cannot carry).
    ///
    /// # Errors
    ///
    /// As for [`connect_with`](Self::connect_with).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use schedpool::durable::{PostgresBackend, PostgresOptions};
    ///
    /// let mut config = postgres::Config::new();
    /// config
    ///     .host("127.0.0.1")
    ///     .user("app")
    ///     .password(std::env::var("PGPASSWORD").unwrap_or_default())
    ///     .dbname("shop")
    ///     .keepalives_idle(Duration::from_secs(30));
    /// let backend = PostgresBackend::from_config(config, "orders", PostgresOptions::default())?;
    /// assert_eq!(backend.queue(), "orders");
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn from_config(
        config: Config,
        queue: &str,
        opts: PostgresOptions,
    ) -> Result<Self, DurableError> {
        Self::from_async_config(async_config(&config), queue, opts)
    }

    fn from_async_config(
        config: tokio_postgres::Config,
        queue: &str,
        opts: PostgresOptions,
    ) -> Result<Self, DurableError> {
        // The queue name shares every index entry with an id: with both
        // at most MAX_ID_BYTES, an entry always fits.
        if queue.is_empty() || queue.len() > MAX_ID_BYTES {
            return Err(DurableError::Config(
                format!(
                    "a queue name must be 1 to {MAX_ID_BYTES} bytes; this one has {}",
                    queue.len()
                )
                .into(),
            ));
        }
        if opts.schema.is_empty() || opts.schema.len() > schema::MAX_SCHEMA_LEN {
            return Err(DurableError::Config(
                format!(
                    "schema name {:?} must be 1 to {} bytes",
                    opts.schema,
                    schema::MAX_SCHEMA_LEN
                )
                .into(),
            ));
        }
        let pg = PgClient::new(config, queue, opts)?;
        let mut first = pg.connect_raw(SETUP_BUDGET.max(pg.opts.server.op_timeout))?;
        // Before the migration: a strict connect that is refused writes
        // nothing.
        let warnings = checks::check_durability(&mut first, &pg)?;
        schema::migrate(&mut first, &pg.opts.schema, pg.opts.migrate)?;
        checks::check_skew(&mut first, &pg)?;
        let backend = PostgresBackend {
            pg,
            listener: Mutex::new(None),
            unblock_pending: AtomicBool::new(false),
            warnings,
        };
        backend.listen(first)?;
        Ok(backend)
    }

    /// The SQL that creates version 1 of the schema `schema` (including
    /// `CREATE SCHEMA`), for teams that migrate by hand; connect with
    /// `PostgresOptions::migrate(false)` then.
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::durable::PostgresBackend;
    ///
    /// let sql = PostgresBackend::migration_sql("jobs");
    /// assert!(sql.contains("CREATE SCHEMA"));
    /// // Save it as a migration of your own, then connect with
    /// // PostgresOptions::default().schema("jobs").migrate(false).
    /// ```
    pub fn migration_sql(schema: &str) -> String {
        schema::migration_sql(schema)
    }

    /// The queue's name.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use schedpool::durable::PostgresBackend;
    ///
    /// let backend = PostgresBackend::connect("host=127.0.0.1 user=app dbname=shop", "orders")?;
    /// assert_eq!((backend.queue(), backend.schema()), ("orders", "schedpool"));
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn queue(&self) -> &str {
        &self.pg.queue
    }

    /// The schema's name.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use schedpool::durable::{PostgresBackend, PostgresOptions};
    ///
    /// let opts = PostgresOptions::default().schema("jobs");
    /// let backend = PostgresBackend::connect_with("host=127.0.0.1 user=app dbname=shop", "orders", opts)?;
    /// assert_eq!(backend.schema(), "jobs");
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn schema(&self) -> &str {
        &self.pg.opts.schema
    }

    /// What the checks at connect found unsafe: server settings under which
    /// a put or an ack that returned `Ok` can be lost (`fsync`,
    /// `full_page_writes` or `synchronous_commit` off); each was also
    /// logged at WARN. Empty when every check passed. With
    /// [`PostgresOptions::strict`] these are refused instead, so a strict
    /// backend's list is empty.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use schedpool::durable::PostgresBackend;
    ///
    /// let backend = PostgresBackend::connect("host=127.0.0.1 user=app dbname=shop", "orders")?;
    /// for warning in backend.warnings() {
    ///     eprintln!("durability: {warning}"); // e.g. synchronous_commit is off
    /// }
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Makes `client` the listener.
    fn listen(&self, mut client: PgConn) -> Result<(), DurableError> {
        let chan = schema::ident(&schema::channel(&self.pg.opts.schema));
        client
            .batch_execute(&format!("LISTEN {chan}"))
            .map_err(map_call)?;
        *self.listener.lock() = Some(client);
        Ok(())
    }

    fn wait_inner(&self, until: Instant) -> Result<bool, DurableError> {
        let mut slot = self.listener.lock();
        if slot.as_ref().is_none_or(PgConn::is_closed) {
            *slot = None;
            drop(slot);
            let client = self.pg.connect_raw(self.pg.opts.server.op_timeout)?;
            self.listen(client)?;
            // Notifications sent while no listener was up are lost: claim.
            return Ok(true);
        }
        loop {
            if self.unblock_pending.swap(false, Ordering::SeqCst) {
                return Ok(false);
            }
            let now = Instant::now();
            if now >= until {
                return Ok(false);
            }
            let slice = (until - now).min(SLICE);
            let client = slot.as_mut().expect("checked above");
            let next = client.next_notification(slice);
            match next {
                Ok(Some(note)) => {
                    if note.payload() == self.pg.queue {
                        // The claim that follows sees what every
                        // notification already here announced (NOTIFY is
                        // sent at commit): one wake-up for a burst, not one
                        // (and a claim) each.
                        client.drain_notifications();
                        return Ok(true);
                    }
                }
                Ok(None) if client.is_closed() => {
                    *slot = None;
                    return Err(DurableError::Unavailable(
                        "the listening connection closed".into(),
                    ));
                }
                Ok(None) => {}
                Err(e) => {
                    *slot = None;
                    return Err(map_call(e));
                }
            }
        }
    }

    /// Runs a statement that returns one boolean.
    fn settle_bool(
        &self,
        f: impl FnMut(&mut super::client::Conn) -> Result<postgres::Row, CallError>,
    ) -> Result<bool, DurableError> {
        let (row, _) = self.pg.run(true, f)?;
        row.try_get::<_, Option<bool>>(0)
            .map_err(bad_reply)
            .map(|b| b.unwrap_or(false))
    }
}

impl DurableBackend for PostgresBackend {
    fn put(
        &self,
        id: &str,
        envelope: &[u8],
        when: When,
        mode: PutMode,
    ) -> Result<Put, DurableError> {
        // Before sending: the server would refuse an id too long for its
        // index as a `Refused` program limit.
        check_id(id)?;
        let (delay, at) = when_args(when);
        let if_absent = mode == PutMode::IfAbsent;
        let q = &self.pg.queue;
        let (row, _) = self.pg.run(true, |c| {
            c.client
                .query_one(&c.st.put, &[q, &id, &envelope, &delay, &at, &if_absent])
        })?;
        put_reply(&row)
    }

    fn claim(
        &self,
        lease: Duration,
        max: usize,
        max_attempts: u32,
    ) -> Result<ClaimBatch, DurableError> {
        let lease_ms = sql_ms(ceil_ms(lease));
        let max = max.min(MAX_CLAIM) as i32;
        let max_attempts = i32::try_from(max_attempts).unwrap_or(i32::MAX);
        let q = &self.pg.queue;
        let (rows, _) = self.pg.run(false, |c| {
            c.client
                .query(&c.st.claim, &[q, &lease_ms, &max, &max_attempts])
        })?;
        let mut batch = ClaimBatch::default();
        for row in rows {
            let id: Option<String> = row.try_get(0).map_err(bad_reply)?;
            let claimed: i64 = row.try_get(5).map_err(bad_reply)?;
            let Some(id) = id else {
                let wait: Option<i64> = row.try_get(7).map_err(bad_reply)?;
                batch.wait = wait.map(|w| Duration::from_millis(ms(w)));
                continue;
            };
            let get_i64 = |i: usize| row.try_get::<_, i64>(i).map_err(bad_reply);
            batch.items.push(Claimed {
                id,
                token: ms(get_i64(1)?),
                attempt: u32::try_from(row.try_get::<_, i32>(2).map_err(bad_reply)?).unwrap_or(0),
                deadline_ms: ms(get_i64(3)?),
                due_ms: ms(get_i64(4)?),
                claimed_ms: ms(claimed),
                envelope: row.try_get(6).map_err(bad_reply)?,
            });
        }
        // UPDATE ... RETURNING has no order: put them in due order.
        batch
            .items
            .sort_by(|a, b| (a.due_ms, &a.id).cmp(&(b.due_ms, &b.id)));
        Ok(batch)
    }

    fn extend(&self, leases: &[(&str, u64)], lease: Duration) -> Result<Vec<bool>, DurableError> {
        if leases.is_empty() {
            return Ok(Vec::new());
        }
        let (ids, tokens) = pair_arrays(leases);
        let lease_ms = sql_ms(ceil_ms(lease));
        let q = &self.pg.queue;
        let (rows, _) = self.pg.run(true, |c| {
            c.client.query(&c.st.extend, &[q, &ids, &tokens, &lease_ms])
        })?;
        one_bool_each(&rows, leases.len(), "extend")
    }

    fn ack(&self, id: &str, token: u64) -> Result<bool, DurableError> {
        let q = &self.pg.queue;
        let token = sql_ms(token);
        self.settle_bool(|c| c.client.query_one(&c.st.ack, &[q, &id, &token]))
    }

    fn ack_many(&self, acks: &[(&str, u64)]) -> Result<Vec<bool>, DurableError> {
        if acks.is_empty() {
            return Ok(Vec::new());
        }
        let (ids, tokens) = pair_arrays(acks);
        let q = &self.pg.queue;
        let (rows, _) = self.pg.run(true, |c| {
            c.client.query(&c.st.ack_many, &[q, &ids, &tokens])
        })?;
        one_bool_each(&rows, acks.len(), "ack_many")
    }

    fn nack(&self, id: &str, token: u64, to: Nack) -> Result<bool, DurableError> {
        let (kind, delay): (i32, Duration) = match to {
            Nack::Retry(d) => (0, d),
            Nack::Dead => (1, Duration::ZERO),
            Nack::Release => (2, Duration::ZERO),
            Nack::Defer(d) => (3, d),
        };
        let delay = sql_ms(ceil_ms(delay));
        let q = &self.pg.queue;
        let token = sql_ms(token);
        self.settle_bool(|c| {
            c.client
                .query_one(&c.st.nack, &[q, &id, &token, &kind, &delay])
        })
    }

    fn ack_and_reschedule(
        &self,
        id: &str,
        token: u64,
        repeat: Repeat,
    ) -> Result<Option<u64>, DurableError> {
        let (rate, period) = match repeat {
            Repeat::FixedRate(p) => (true, p),
            Repeat::FixedDelay(p) => (false, p),
        };
        let period = sql_ms(ceil_ms(period));
        let q = &self.pg.queue;
        let token = sql_ms(token);
        let (row, _) = self.pg.run(true, |c| {
            c.client
                .query_one(&c.st.reschedule, &[q, &id, &token, &rate, &period])
        })?;
        let next: Option<i64> = row.try_get(0).map_err(bad_reply)?;
        Ok(next.map(ms))
    }

    fn cancel(&self, id: &str) -> Result<Cancelled, DurableError> {
        let q = &self.pg.queue;
        let (row, retried) = self
            .pg
            .run(true, |c| c.client.query_one(&c.st.cancel, &[q, &id]))?;
        let found = cancel_reply(&row)?;
        if found == Cancelled::NotFound && retried {
            // An earlier attempt may have removed it, and its reply (with
            // the value) was lost: the outcome is unknown, not NotFound.
            return Err(DurableError::Unavailable(format!(
                "cancel of {id:?}: the reply was lost and the item is gone; it may have been this cancel"
            ).into()));
        }
        Ok(found)
    }

    fn wait(&self, due: Option<Duration>, limit: Duration) -> Result<bool, DurableError> {
        let limit = limit.max(MIN_LISTEN);
        let block = due.map_or(limit, |d| d.min(limit));
        let until = Instant::now()
            .checked_add(block)
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(24 * 3600));
        self.wait_inner(until)
    }

    fn unblock(&self) {
        self.unblock_pending.store(true, Ordering::SeqCst);
    }

    fn counts(&self) -> Result<Counts, DurableError> {
        let q = &self.pg.queue;
        let (rows, _) = self.pg.run(true, |c| c.client.query(&c.st.counts, &[q]))?;
        counts_reply(&rows)
    }

    fn peek_deadline_ms(&self) -> Result<Option<u64>, DurableError> {
        let q = &self.pg.queue;
        let (row, _) = self
            .pg
            .run(true, |c| c.client.query_one(&c.st.peek, &[q]))?;
        let at: Option<i64> = row.try_get(0).map_err(bad_reply)?;
        Ok(at.map(ms))
    }

    fn get(&self, id: &str) -> Result<Option<Stored>, DurableError> {
        let q = &self.pg.queue;
        let (rows, _) = self
            .pg
            .run(true, |c| c.client.query(&c.st.get, &[q, &id]))?;
        get_reply(rows.first())
    }

    fn server_time_ms(&self) -> Result<u64, DurableError> {
        let (row, _) = self.pg.run(true, |c| c.client.query_one(&c.st.now, &[]))?;
        Ok(ms(row.try_get(0).map_err(bad_reply)?))
    }

    fn dead_letters(&self, max: usize) -> Result<Vec<Buried>, DurableError> {
        self.dead_rows(max)
    }

    fn bury(&self, id: &str, token: u64, error: Option<&str>) -> Result<bool, DurableError> {
        self.bury_row(id, token, error)
    }

    fn requeue(&self, id: &str) -> Result<bool, DurableError> {
        self.requeue_row(id)
    }

    fn purge(&self, id: &str) -> Result<bool, DurableError> {
        self.purge_row(id)
    }

    fn ops(&self) -> Option<&dyn DurableOps> {
        Some(self)
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
}

impl fmt::Debug for PostgresBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresBackend")
            .field("schema", &self.pg.opts.schema)
            .field("queue", &self.pg.queue)
            .finish_non_exhaustive()
    }
}
