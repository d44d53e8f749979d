//! The storage seam of the durable queue: one trait and the types that cross
//! it (the error type, [`DurableError`], is `error.rs`).
//!
//! Invariants every implementation keeps (the Redis scripts and the
//! in-memory backend are checked against the same tests):
//!
//! - An item is in exactly one of *pending* (waiting for its due time),
//!   *in flight* (leased to one holder until the lease expires), or *dead*
//!   (retries exhausted), or it is gone (acked or cancelled).
//! - Every `put` and every `claim` draws a fresh token from one counter per
//!   queue, so tokens never repeat, and only the holder of an item's
//!   current token can ack, nack, extend or reschedule it (fencing).
//! - "Now" is the backend's clock only (Redis `TIME`, or the in-memory
//!   backend's clock); a client's clock never decides whether an item is due.
//! - An item is claimed only when now ≥ its due time, and an expired lease
//!   returns the item at its stored due time, so a redelivery goes to the
//!   front rather than behind the backlog.

use std::fmt;
use std::time::Duration;

// The error type lives in its own leaf file; every verb here returns it, so
// the files above keep naming it from here.
pub(crate) use super::error::DurableError;
use super::ops::DurableOps;
pub use super::ops::StoredState;

/// When an item becomes due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// This long after the backend's "now" at the moment the put lands.
    After(Duration),
    /// At this instant of the backend's clock, in milliseconds since the
    /// Unix epoch (see [`DurableBackend::server_time_ms`]).
    AtServerMs(u64),
}

/// How `put` treats an id that is already pending or in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PutMode {
    /// Replace its payload and due time, and fence a current holder (its
    /// ack is refused): the TTL-cache semantics.
    #[default]
    Replace,
    /// Leave it untouched and report [`Put::Exists`].
    IfAbsent,
}

/// What a `put` did.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedpool::durable::{DurableQueue, MemoryBackend, Put};
///
/// let queue: DurableQueue<u64> = DurableQueue::new(MemoryBackend::new());
/// assert!(matches!(queue.put("a", &1, Duration::from_secs(60))?, Put::Inserted { .. }));
/// assert!(matches!(queue.put("a", &2, Duration::from_secs(60))?, Put::Replaced { .. }));
/// assert_eq!(queue.put_if_absent("a", &3, Duration::from_secs(60))?, Put::Exists);
/// # Ok::<(), schedpool::durable::DurableError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Put {
    /// The id was new (or only dead-lettered); it is due at `deadline_ms`.
    Inserted {
        /// The due time, in the backend's milliseconds since the Unix epoch.
        deadline_ms: u64,
    },
    /// The id was pending or in flight; it now has the new payload and due time.
    Replaced {
        /// The due time, in the backend's milliseconds since the Unix epoch.
        deadline_ms: u64,
    },
    /// [`PutMode::IfAbsent`] found the id pending or in flight; nothing changed.
    Exists,
}

impl Put {
    /// The new due time, unless nothing was written.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableQueue, MemoryBackend};
    ///
    /// let queue: DurableQueue<u64> = DurableQueue::new(MemoryBackend::new());
    /// let now = queue.server_time_ms()?;
    /// let put = queue.put("a", &1, Duration::from_secs(60))?;
    /// assert!(put.deadline_ms().unwrap() >= now + 60_000);
    /// assert_eq!(queue.put_if_absent("a", &2, Duration::ZERO)?.deadline_ms(), None);
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn deadline_ms(&self) -> Option<u64> {
        match *self {
            Put::Inserted { deadline_ms } | Put::Replaced { deadline_ms } => Some(deadline_ms),
            Put::Exists => None,
        }
    }
}

/// Where a `nack` sends an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nack {
    /// Back to pending, due this long after now (retry backoff; zero
    /// releases it for another consumer at once).
    Retry(Duration),
    /// To the dead-letter set, with no error recorded
    /// ([`DurableBackend::bury`] records one).
    Dead,
    /// Back to pending at the due time it was claimed for (so at the front
    /// of a backlog): an item handed back unstarted (a dropped delivery,
    /// claimed-but-not-started items at close or shutdown).
    Release,
    /// Back to pending `delay` after now, as if this claim had not happened:
    /// the attempt is not counted. For an item this holder cannot run (its
    /// pool has no handler for the kind, say mid-way through a rolling
    /// deploy), so another holder gets it and it is never dead-lettered
    /// for it.
    Defer(Duration),
}

/// The next occurrence of a durable periodic item, computed by the backend
/// with its own clock when the current run is acked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repeat {
    /// The previous occurrence's scheduled time plus the period (Java's
    /// fixed rate: a late run is followed by catch-up runs).
    FixedRate(Duration),
    /// Now plus the delay (Java's fixed delay).
    FixedDelay(Duration),
}

/// One item handed out by [`DurableBackend::claim`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claimed {
    /// The item's id.
    pub id: String,
    /// The fencing token of this claim.
    pub token: u64,
    /// How many times the item has been claimed, this claim included.
    pub attempt: u32,
    /// The occurrence's scheduled time (backend ms): kept across retries and
    /// redeliveries.
    pub deadline_ms: u64,
    /// When this delivery became due (backend ms): the deadline, or a
    /// retry's backoff end.
    pub due_ms: u64,
    /// The backend's clock at the claim (ms).
    pub claimed_ms: u64,
    /// The stored envelope (see `envelope.rs`).
    pub envelope: Vec<u8>,
}

/// The answer of one [`DurableBackend::claim`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClaimBatch {
    /// The items claimed, in due order.
    pub items: Vec<Claimed>,
    /// How long until the next item is due or the next lease expires;
    /// `None` when nothing is pending or in flight.
    pub wait: Option<Duration>,
}

/// What `cancel` found and removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cancelled {
    /// It was pending: here is its envelope.
    Pending(Vec<u8>),
    /// It was in flight: removed, and its holder's ack will be refused.
    InFlight,
    /// It was dead-lettered: here is its envelope.
    Dead(Vec<u8>),
    /// No such id.
    NotFound,
}

/// An item as [`DurableBackend::get`] reads it, without claiming it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    /// The stored envelope (see `envelope.rs`).
    pub envelope: Vec<u8>,
    /// The occurrence's scheduled time (backend ms).
    pub deadline_ms: u64,
    /// Where it is.
    pub state: StoredState,
}

/// Item counts of one queue.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedpool::durable::{DurableQueue, MemoryBackend};
///
/// let queue: DurableQueue<u64> = DurableQueue::new(MemoryBackend::new());
/// queue.put("a", &1, Duration::from_secs(60))?;
/// let counts = queue.counts()?;
/// assert_eq!((counts.pending, counts.in_flight, counts.dead), (1, 0, 0));
/// # Ok::<(), schedpool::durable::DurableError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    /// Waiting for their due time (or due and not yet claimed).
    pub pending: usize,
    /// Leased to a holder.
    pub in_flight: usize,
    /// Dead-lettered.
    pub dead: usize,
}

/// One dead-lettered item, as [`DurableBackend::dead_letters`] reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Buried {
    /// The item's id.
    pub id: String,
    /// Its envelope, as it was stored before it died (see `envelope.rs`).
    pub envelope: Vec<u8>,
    /// The error recorded when it was buried (at most
    /// [`MAX_ERROR_BYTES`](crate::durable::MAX_ERROR_BYTES) bytes), or `None` when
    /// none was (see [`DeadLetter::error`](crate::durable::DeadLetter::error)).
    pub error: Option<String>,
    /// How many times it was claimed.
    pub attempts: u32,
    /// When it died, by the backend's clock (ms since the Unix epoch).
    pub died_ms: u64,
}

/// The storage of a durable queue.
///
/// Four implementations ship: [`MemoryBackend`](crate::durable::MemoryBackend)
/// (always available; follows a [`ManualClock`](crate::ManualClock) for
/// tests), `SqliteBackend` (feature `sqlite`), `RedisBackend` (feature
/// `redis`) and `PostgresBackend` (feature `postgres`).
///
/// A panic in a method of your own implementation does not reach the
/// pool's threads: the queue and the pool call every method with the panic
/// caught and treat it as a failed store call whose outcome is unknown
/// ([`DurableError::Unavailable`], its text naming the method and the
/// panic's message). A taker backs off and claims again, a heartbeat is
/// retried on its next tick, and an item whose settle panicked comes back
/// after its lease.
///
/// Every method is one atomic step on the store. `ack`, `nack`, `extend`
/// and `ack_and_reschedule` are idempotent by (id, token): repeated with the
/// same token within 30 s, a settle answers as its first attempt did, so
/// they may be retried after an ambiguous failure. `put` and `cancel` may be
/// retried too, with a caveat: a retry after a lost reply reports what it
/// finds (`Exists` for a put-if-absent whose first attempt inserted,
/// `NotFound` for a cancel whose first attempt removed). `claim` must not be
/// retried (its items come back after one lease instead).
pub trait DurableBackend: Send + Sync + fmt::Debug + 'static {
    /// Stores `envelope` under `id`, due `when`.
    ///
    /// # Errors
    ///
    /// [`DurableError`] when the store refuses (out of memory) or cannot be
    /// reached within the configured timeout. Nothing is partly written.
    fn put(
        &self,
        id: &str,
        envelope: &[u8],
        when: When,
        mode: PutMode,
    ) -> Result<Put, DurableError>;

    /// Moves expired leases back to pending (or to the dead set once
    /// `max_attempts` claims were made; 0 means no limit), then leases up to
    /// `max` due items for `lease`, earliest first. A backend may lease
    /// fewer per call to keep each step short (Redis: at most 100).
    ///
    /// # Errors
    ///
    /// [`DurableError`] on a store failure; the caller must not retry the
    /// same claim blindly.
    fn claim(
        &self,
        lease: Duration,
        max: usize,
        max_attempts: u32,
    ) -> Result<ClaimBatch, DurableError>;

    /// Extends the leases of (id, token) pairs to now + `lease`; `false`
    /// where the lease is lost (expired and reclaimed, cancelled, replaced).
    ///
    /// # Errors
    ///
    /// [`DurableError`] on a store failure.
    fn extend(&self, leases: &[(&str, u64)], lease: Duration) -> Result<Vec<bool>, DurableError>;

    /// Completes an item: `false` when `token` no longer holds it.
    ///
    /// # Errors
    ///
    /// [`DurableError`] on a store failure.
    fn ack(&self, id: &str, token: u64) -> Result<bool, DurableError>;

    /// Completes many items in one step where the store allows it (one
    /// statement on PostgreSQL, one script call on Redis): for each (id,
    /// token) pair, in order, `true` when it was acked (now, or by an
    /// earlier attempt with that token) and `false` when that token no
    /// longer holds it. Each pair is checked against its own token: a stale
    /// one is refused alone, never the batch. `DurablePool` sends its acks
    /// through this. The default acks them one by one.
    ///
    /// # Errors
    ///
    /// [`DurableError`] on a store failure: then any of the acks may or may
    /// not have been applied, and since each is idempotent by (id, token)
    /// the batch may be repeated.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableBackend, MemoryBackend, PutMode, When};
    ///
    /// let store = MemoryBackend::new();
    /// for id in ["a", "b"] {
    ///     store.put(id, &[1, 0, 0], When::After(Duration::ZERO), PutMode::Replace)?;
    /// }
    /// let batch = store.claim(Duration::from_secs(30), 10, 0)?;
    /// let (a, b) = (&batch.items[0], &batch.items[1]);
    /// // b's token is stale: only b is refused.
    /// let acked = store.ack_many(&[(&a.id, a.token), (&b.id, b.token + 1)])?;
    /// assert_eq!(acked, [true, false]);
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    fn ack_many(&self, acks: &[(&str, u64)]) -> Result<Vec<bool>, DurableError> {
        acks.iter()
            .map(|(id, token)| self.ack(id, *token))
            .collect()
    }

    /// Gives an item back (retry or dead-letter): `false` when `token` no
    /// longer holds it.
    ///
    /// # Errors
    ///
    /// [`DurableError`] on a store failure.
    fn nack(&self, id: &str, token: u64, to: Nack) -> Result<bool, DurableError>;

    /// Atomically acks this occurrence and puts the same id back, due at the
    /// next occurrence: `Some(next due ms)`, or `None` when `token` no longer
    /// holds it.
    ///
    /// # Errors
    ///
    /// [`DurableError`] on a store failure.
    fn ack_and_reschedule(
        &self,
        id: &str,
        token: u64,
        repeat: Repeat,
    ) -> Result<Option<u64>, DurableError>;

    /// Removes an item wherever it is.
    ///
    /// # Errors
    ///
    /// [`DurableError`] on a store failure.
    fn cancel(&self, id: &str) -> Result<Cancelled, DurableError>;

    /// Sleeps until a wake-up marker is set (a new earliest item, a chained
    /// claim, a manual clock's advance), [`unblock`](Self::unblock) is
    /// called, `due` of the backend's time passes (`None`: nothing is
    /// pending), or `limit` of real time passes. Returns `true` when woken by
    /// a marker. A backend on a manual clock ignores `due`: only an advance
    /// (which sets the marker) can make anything due.
    ///
    /// # Errors
    ///
    /// [`DurableError`] when the store cannot be reached.
    fn wait(&self, due: Option<Duration>, limit: Duration) -> Result<bool, DurableError>;

    /// Interrupts a [`wait`](Self::wait) in progress (used by `close`).
    fn unblock(&self);

    /// The counts of pending, in-flight and dead items.
    ///
    /// # Errors
    ///
    /// [`DurableError`] on a store failure.
    fn counts(&self) -> Result<Counts, DurableError>;

    /// The earliest pending due time (backend ms), if any.
    ///
    /// # Errors
    ///
    /// [`DurableError`] on a store failure.
    fn peek_deadline_ms(&self) -> Result<Option<u64>, DurableError>;

    /// Reads the item stored under `id`, wherever it is, without claiming
    /// or changing it: `None` when there is none. A durable calendar
    /// schedule's registration uses it to compare the stored definition
    /// with its own.
    ///
    /// The default refuses: a backend of your own that does not implement
    /// it still works for everything but calendar schedules.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableBackend, MemoryBackend, PutMode, StoredState, When};
    ///
    /// let store = MemoryBackend::new();
    /// assert_eq!(store.get("order-42")?, None);
    /// let put = store.put("order-42", b"\x01\x00\x00", When::After(Duration::from_secs(60)), PutMode::Replace)?;
    /// let stored = store.get("order-42")?.expect("stored");
    /// assert_eq!(stored.state, StoredState::Pending);
    /// assert_eq!(Some(stored.deadline_ms), put.deadline_ms());
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`DurableError`] on a store failure; [`DurableError::Config`] from
    /// the default implementation.
    fn get(&self, id: &str) -> Result<Option<Stored>, DurableError> {
        let _ = id;
        Err(DurableError::Config(
            "this backend cannot read an item by id (DurableBackend::get)".into(),
        ))
    }

    /// The backend's clock: milliseconds since the Unix epoch.
    ///
    /// # Errors
    ///
    /// [`DurableError`] on a store failure.
    fn server_time_ms(&self) -> Result<u64, DurableError>;

    /// Up to `max` dead-lettered items, oldest death first (ties by id).
    ///
    /// # Errors
    ///
    /// [`DurableError`] on a store failure.
    fn dead_letters(&self, max: usize) -> Result<Vec<Buried>, DurableError>;

    /// Moves an item this `token` holds to the dead-letter set, stamped
    /// with the backend's now and recording `error` (cut to
    /// [`MAX_ERROR_BYTES`](crate::durable::MAX_ERROR_BYTES)): [`Nack::Dead`] with a
    /// reason. `false` when `token` no longer holds it; idempotent by (id,
    /// token) as `nack` is.
    ///
    /// # Errors
    ///
    /// [`DurableError`] on a store failure.
    fn bury(&self, id: &str, token: u64, error: Option<&str>) -> Result<bool, DurableError>;

    /// Moves the dead-lettered item `id` back to pending in one atomic
    /// step, as a fresh put of its stored value: due now by the backend's
    /// clock (its deadline too), attempts 0, a new token, its recorded
    /// error dropped. `false` when `id` is not dead-lettered (never was,
    /// purged, revived by a put, or already requeued, by this process or
    /// another): of concurrent requeues of one dead letter exactly one
    /// returns `true`.
    ///
    /// # Errors
    ///
    /// [`DurableError::Format`] when the stored item has no bytes to
    /// requeue (a corrupt entry: purge it); [`DurableError::Unavailable`]
    /// when a retry after a lost reply found it gone (the first attempt may
    /// have requeued it); the store's error otherwise.
    fn requeue(&self, id: &str) -> Result<bool, DurableError>;

    /// Deletes the dead-lettered item `id` in one atomic step: `false` when
    /// `id` is not dead-lettered (a pending or in-flight item of that id is
    /// left alone).
    ///
    /// # Errors
    ///
    /// [`DurableError::Unavailable`] when a retry after a lost reply found
    /// it gone (the first attempt may have purged it); the store's error
    /// otherwise.
    fn purge(&self, id: &str) -> Result<bool, DurableError>;

    /// The operator's side of the store (listing, counts by kind, paused
    /// kinds, the audit trail), which
    /// [`Operator`](crate::durable::Operator) uses. `None` by default: a
    /// backend of your own without it still works for everything else.
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::durable::{DurableBackend, MemoryBackend};
    ///
    /// assert!(MemoryBackend::new().ops().is_some());
    /// ```
    fn ops(&self) -> Option<&dyn DurableOps> {
        None
    }

    /// The concrete backend, for verbs beyond this trait (the PostgreSQL
    /// backend's transactional put and cancel, reached from `DurableQueue`
    /// and `DurablePool`). `None` by default; not for users.
    #[doc(hidden)]
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        None
    }
}

/// How long a settle's receipt lives (ms): a repeated ack, nack or
/// reschedule with the same token within it answers as the first did, so a
/// retry after a lost reply does not report a lost lease. Well past the
/// retry window of one operation (2 s by default).
pub(crate) const RECEIPT_MS: u64 = 30_000;

/// The longest item id, in bytes, on every backend. PostgreSQL keeps an id
/// with its queue name in btree index entries, which cannot exceed 2,704
/// bytes (a third of an 8 KB page; a longer id of random text fails at the
/// server with "index row size exceeds btree version 4 maximum"): 1 KiB for
/// the id, and as much for a PostgreSQL queue name, always fits. Redis and
/// the in-memory backend could store more; the same limit everywhere keeps
/// an application portable between them.
pub(super) const MAX_ID_BYTES: usize = 1024;

/// Checks an item id before anything is sent: not empty, and at most
/// [`MAX_ID_BYTES`] bytes. Ids are only checked where an item is stored: a
/// lookup (cancel, remove) of a longer id finds nothing.
pub(crate) fn check_id(id: &str) -> Result<(), DurableError> {
    if id.is_empty() {
        return Err(DurableError::Config("an item id must not be empty".into()));
    }
    if id.len() > MAX_ID_BYTES {
        // The id's start names it; the whole one would flood a log line.
        let end = (0..=32)
            .rev()
            .find(|&i| id.is_char_boundary(i))
            .unwrap_or(0);
        return Err(DurableError::Config(
            format!(
                "an item id must be at most {MAX_ID_BYTES} bytes; {:?}... has {}",
                &id[..end],
                id.len()
            )
            .into(),
        ));
    }
    Ok(())
}

/// Whole milliseconds of `d`, rounded up so that a deadline is never early.
pub(crate) fn ceil_ms(d: Duration) -> u64 {
    let ms = d.as_millis();
    let ms = if d.subsec_nanos() % 1_000_000 != 0 {
        ms + 1
    } else {
        ms
    };
    u64::try_from(ms).unwrap_or(u64::MAX).min(MAX_MS)
}

/// The largest delay or time the durable API stores, in ms (about 285,000
/// years): keeps every score exact in an IEEE double (Redis zset scores).
pub(crate) const MAX_MS: u64 = 1 << 53;
