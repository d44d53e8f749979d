//! [`SqliteBackend`]: the `DurableBackend` over one SQLite file, shared by
//! the processes of one host. Each verb is one `BEGIN IMMEDIATE`
//! transaction running a step of `steps.rs` or `dead.rs`; connections are
//! pooled; the wake-ups are `wake.rs`'s.
//!
//! Invariants:
//!
//! - Every read-then-write runs in `BEGIN IMMEDIATE`: it holds the file's
//!   write lock from its first read, so two processes never claim one item
//!   (SQLite has one writer at a time; a deferred transaction could read,
//!   then fail to upgrade).
//! - "Now" is the host's clock, read once per verb inside its transaction
//!   (after the write lock is held, so the order of commits is the order
//!   of their "now"s, up to a wall-clock step).
//! - A connection goes back to the pool only after its transaction ended
//!   (committed, or rolled back by its drop).
//! - This process's writers on one file take turns in a fair lock
//!   (`Signal::in_turn`) around their transaction, so SQLite's busy handler
//!   only arbitrates between processes.
//! - Nothing here panics on what the file holds: every error is a
//!   `DurableError` (`error.rs`).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags, TransactionBehavior};

use super::dead;
use super::error::map;
use super::options::{SqliteOptions, Synchronous};
use super::schema;
use super::steps;
use super::wake::{Signal, Waiter};
use crate::durable::store::backend::{
    ceil_ms, Buried, Cancelled, ClaimBatch, Counts, DurableBackend, Nack, Put, PutMode, Repeat,
    Stored, When,
};
use crate::durable::store::error::DurableError;
use crate::durable::store::ops::DurableOps;

/// A [`DurableBackend`] in one SQLite file: durable timeouts with no
/// server. Several processes of one host share the file (WAL mode,
/// `BEGIN IMMEDIATE`, a busy timeout); none of them is "the" server.
///
/// Several queues share one file (rows are keyed by queue name), and the
/// application's own tables may live in it too: then
/// [`DurablePool::schedule_in`](crate::durable::DurablePool::schedule_in)
/// and [`DurableQueue::put_in`](crate::durable::DurableQueue::put_in) put
/// a timeout in the same transaction as an order row.
///
/// Time is the host's wall clock (every process of the host shares it):
/// never early by it. A step of the wall clock moves every pending
/// deadline with it in real time: after a step forward of 10 minutes an
/// item due in 30 minutes is due in 20; after a step back it is due in 40.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedpool::durable::{DurableQueue, SqliteBackend};
///
/// let dir = std::env::temp_dir().join(format!("schedpool-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let backend = SqliteBackend::open(dir.join("timeouts.db"), "orders")?;
/// let queue: DurableQueue<u64> = DurableQueue::new(backend);
/// queue.put("order-42", &42, Duration::ZERO)?;
/// let delivery = queue.take()?.expect("open");
/// assert_eq!(*delivery.value(), 42);
/// delivery.ack()?;
/// # std::fs::remove_dir_all(&dir).unwrap();
/// # Ok::<(), schedpool::durable::DurableError>(())
/// ```
pub struct SqliteBackend {
    path: PathBuf,
    queue: String,
    opts: SqliteOptions,
    idle: Mutex<Vec<Connection>>,
    signal: Arc<Signal>,
    waiter: Waiter,
}

impl SqliteBackend {
    /// Opens (creating when missing) the database file at `path` for the
    /// queue `queue`, with default [`SqliteOptions`]: WAL mode,
    /// `synchronous=FULL`, the schema created or checked.
    ///
    /// # Errors
    ///
    /// As for [`open_with`](Self::open_with).
    pub fn open(path: impl AsRef<Path>, queue: &str) -> Result<Self, DurableError> {
        Self::open_with(path, queue, SqliteOptions::default())
    }

    /// Opens with `opts`.
    ///
    /// # Errors
    ///
    /// [`DurableError::Config`] for an empty queue name, or a file (or
    /// folder) that cannot be opened for writing; [`DurableError::Format`]
    /// for a file that is not a SQLite database, is corrupt, or holds a
    /// schema of a newer version; [`DurableError::Unavailable`] when
    /// another connection holds the file past the busy timeout.
    pub fn open_with(
        path: impl AsRef<Path>,
        queue: &str,
        opts: SqliteOptions,
    ) -> Result<Self, DurableError> {
        if queue.is_empty() {
            return Err(DurableError::Config(
                "a queue name must not be empty".into(),
            ));
        }
        let path = path.as_ref();
        let mut first = connect(path, &opts)?;
        schema::migrate(&mut first)?;
        // Canonical once the file exists: the in-process wake-ups are
        // shared by every backend on the same file, however it was named.
        let path = std::fs::canonicalize(path).map_err(|e| {
            DurableError::Config(crate::durable::store::error::ErrorDetail::with_source(
                format!("the database path {}: {e}", path.display()),
                e,
            ))
        })?;
        let signal = Signal::of(&path);
        let waiter = Waiter::new(connect(&path, &opts)?, signal.clone(), opts.max_poll, queue)?;
        Ok(SqliteBackend {
            path,
            queue: queue.to_string(),
            opts,
            idle: Mutex::new(vec![first]),
            signal,
            waiter,
        })
    }

    /// The SQL that creates the schedpool tables (version 1), for teams
    /// that migrate by hand; `open` runs it when they are missing.
    pub fn migration_sql() -> String {
        schema::migration_sql()
    }

    /// The queue's name.
    pub fn queue(&self) -> &str {
        &self.queue
    }

    /// The database file (canonical).
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub(super) fn queue_name(&self) -> &str {
        &self.queue
    }

    pub(super) fn now(&self) -> u64 {
        (self.opts.clock)()
    }

    /// Runs `step` in one `BEGIN IMMEDIATE` transaction on a pooled
    /// connection, with "now" read once the write lock is held.
    pub(super) fn write<R>(
        &self,
        verb: &str,
        step: impl FnOnce(&Connection, u64) -> Result<R, DurableError>,
    ) -> Result<R, DurableError> {
        let mut conn = self.conn()?;
        let out = self.signal.in_turn(|| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(|e| map(verb, e))?;
            let now = self.now();
            let out = step(&tx, now)?;
            tx.commit().map_err(|e| map(verb, e))?;
            Ok::<R, DurableError>(out)
        })?;
        self.idle
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(conn);
        Ok(out)
    }

    /// Runs a read-only `step` (one snapshot) on a pooled connection.
    pub(super) fn read<R>(
        &self,
        step: impl FnOnce(&Connection) -> Result<R, DurableError>,
    ) -> Result<R, DurableError> {
        let conn = self.conn()?;
        let out = step(&conn)?;
        self.idle
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(conn);
        Ok(out)
    }

    fn conn(&self) -> Result<Connection, DurableError> {
        let pooled = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        match pooled {
            Some(c) => Ok(c),
            None => connect(&self.path, &self.opts),
        }
    }

    /// Wakes this process's waiters when `head` (a commit made something
    /// due earlier).
    pub(super) fn wake_if(&self, head: bool) {
        if head {
            self.signal.bump();
        }
    }
}

/// A connection to `path` with the backend's settings.
fn connect(path: &Path, opts: &SqliteOptions) -> Result<Connection, DurableError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_URI;
    let doing = format!("opening {}", path.display());
    let conn = Connection::open_with_flags(path, flags).map_err(|e| map(&doing, e))?;
    conn.busy_timeout(opts.busy_timeout)
        .map_err(|e| map(&doing, e))?;
    let sync = match opts.synchronous {
        Synchronous::Full => "FULL",
        Synchronous::Normal => "NORMAL",
    };
    // journal_mode answers with the mode it set: anything but "wal" (a
    // read-only file answers with its old mode) is refused.
    let mode: String = conn
        .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
        .map_err(|e| map(&doing, e))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(DurableError::Config(
            format!(
                "{doing}: the database could not be put in WAL mode (it answered {mode:?}): \
                 is it read-only?"
            )
            .into(),
        ));
    }
    conn.execute_batch(&format!(
        "PRAGMA synchronous = {sync}; PRAGMA foreign_keys = OFF;"
    ))
    .map_err(|e| map(&doing, e))?;
    conn.set_prepared_statement_cache_capacity(32);
    Ok(conn)
}

impl DurableBackend for SqliteBackend {
    fn put(
        &self,
        id: &str,
        envelope: &[u8],
        when: When,
        mode: PutMode,
    ) -> Result<Put, DurableError> {
        let q = &self.queue;
        let (put, head) = self.write("put", |c, now| {
            steps::put(c, q, id, envelope, when, mode, now)
        })?;
        self.wake_if(head);
        Ok(put)
    }

    fn claim(
        &self,
        lease: Duration,
        max: usize,
        max_attempts: u32,
    ) -> Result<ClaimBatch, DurableError> {
        let q = &self.queue;
        let lease_ms = ceil_ms(lease);
        let (batch, chain, head) = self.write("claim", |c, now| {
            steps::claim(c, q, lease_ms, max, max_attempts, now)
        })?;
        self.waiter.saw_head(head);
        self.wake_if(chain);
        Ok(batch)
    }

    fn extend(&self, leases: &[(&str, u64)], lease: Duration) -> Result<Vec<bool>, DurableError> {
        let q = &self.queue;
        let lease_ms = ceil_ms(lease);
        self.write("extend", |c, now| {
            steps::extend(c, q, leases, lease_ms, now)
        })
    }

    fn ack(&self, id: &str, token: u64) -> Result<bool, DurableError> {
        let q = &self.queue;
        self.write("ack", |c, now| steps::ack(c, q, id, token, now))
    }

    fn ack_many(&self, acks: &[(&str, u64)]) -> Result<Vec<bool>, DurableError> {
        let q = &self.queue;
        self.write("ack_many", |c, now| {
            acks.iter()
                .map(|(id, token)| steps::ack(c, q, id, *token, now))
                .collect()
        })
    }

    fn nack(&self, id: &str, token: u64, to: Nack) -> Result<bool, DurableError> {
        let q = &self.queue;
        let (held, head) = self.write("nack", |c, now| steps::nack(c, q, id, token, to, now))?;
        self.wake_if(head);
        Ok(held)
    }

    fn ack_and_reschedule(
        &self,
        id: &str,
        token: u64,
        repeat: Repeat,
    ) -> Result<Option<u64>, DurableError> {
        let q = &self.queue;
        let (next, head) = self.write("ack_and_reschedule", |c, now| {
            steps::reschedule(c, q, id, token, repeat, now)
        })?;
        self.wake_if(head);
        Ok(next)
    }

    fn cancel(&self, id: &str) -> Result<Cancelled, DurableError> {
        let q = &self.queue;
        self.write("cancel", |c, _| steps::cancel(c, q, id))
    }

    fn wait(&self, due: Option<Duration>, limit: Duration) -> Result<bool, DurableError> {
        let wait = due.map_or(limit, |d| d.min(limit));
        let until = Instant::now()
            .checked_add(wait)
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(3600));
        let target = due.map(|d| self.now().saturating_add(ceil_ms(d)));
        self.waiter.wait(until, target)
    }

    fn unblock(&self) {
        self.waiter.unblock();
    }

    fn counts(&self) -> Result<Counts, DurableError> {
        self.read(|c| steps::counts(c, &self.queue))
    }

    fn peek_deadline_ms(&self) -> Result<Option<u64>, DurableError> {
        self.read(|c| steps::peek(c, &self.queue))
    }

    fn get(&self, id: &str) -> Result<Option<Stored>, DurableError> {
        self.read(|c| steps::get(c, &self.queue, id))
    }

    fn server_time_ms(&self) -> Result<u64, DurableError> {
        Ok(self.now())
    }

    fn dead_letters(&self, max: usize) -> Result<Vec<Buried>, DurableError> {
        self.read(|c| dead::list(c, &self.queue, max))
    }

    fn bury(&self, id: &str, token: u64, error: Option<&str>) -> Result<bool, DurableError> {
        let q = &self.queue;
        self.write("bury", |c, now| dead::bury(c, q, id, token, error, now))
    }

    fn requeue(&self, id: &str) -> Result<bool, DurableError> {
        let q = &self.queue;
        let (requeued, head) = self.write("requeue", |c, now| dead::requeue(c, q, id, now))?;
        self.wake_if(head);
        Ok(requeued)
    }

    fn purge(&self, id: &str) -> Result<bool, DurableError> {
        let q = &self.queue;
        self.write("purge", |c, _| dead::purge(c, q, id))
    }

    fn ops(&self) -> Option<&dyn DurableOps> {
        Some(self)
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
}

impl fmt::Debug for SqliteBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteBackend")
            .field("path", &self.path)
            .field("queue", &self.queue)
            .field("synchronous", &self.opts.synchronous)
            .finish_non_exhaustive()
    }
}
