//! What an operator reads and changes in a store, beyond the queue's verbs:
//! the [`DurableOps`] trait a backend implements for it (reached through
//! [`DurableBackend::ops`](super::backend::DurableBackend::ops)) and the
//! types that cross it.
//!
//! Invariants every implementation keeps (the contract suite checks them on
//! all four backends):
//!
//! - A listing is in (score, id) order, where an item's score is the time
//!   its state sorts by: its due time when pending, its lease expiry in
//!   flight, its time of death when dead. A page after a [`Cursor`] holds
//!   only items strictly after it, so paging never repeats an item that
//!   stayed where it was.
//! - A paused kind is a row (or key) in the store, not in a process: every
//!   process's claims skip pending items of a paused kind, which stay
//!   pending (never lost, never dead-lettered for it) until it is resumed.
//! - Audit records get increasing sequence numbers from the store; they
//!   are only ever appended.

use std::fmt;
use std::str::FromStr;

use super::error::DurableError;

/// Where a stored item is, as [`DurableBackend::get`](super::backend::DurableBackend::get) and [`DurableOps`] reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoredState {
    /// Waiting for its due time (or due and not yet claimed).
    Pending,
    /// Leased to a holder.
    InFlight,
    /// Dead-lettered.
    Dead,
}

impl StoredState {
    /// The state's code in the SQL stores' `state` column.
    #[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
    pub(crate) fn code(self) -> i64 {
        match self {
            StoredState::Pending => 0,
            StoredState::InFlight => 1,
            StoredState::Dead => 2,
        }
    }

    /// The state of a `state` code (`None` for an acked row's 3).
    #[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
    pub(crate) fn from_code(code: i64) -> Option<Self> {
        match code {
            0 => Some(StoredState::Pending),
            1 => Some(StoredState::InFlight),
            2 => Some(StoredState::Dead),
            _ => None,
        }
    }
}

/// Where a listing resumes: the (score, id) of the last item of a page.
///
/// It prints as `score:id` and parses back, so a command-line tool can
/// hand it to the next invocation.
///
/// # Examples
///
/// ```
/// use schedpool::durable::Cursor;
///
/// let cursor: Cursor = "1700000000000:order-42".parse()?;
/// assert_eq!(cursor.to_string(), "1700000000000:order-42");
/// assert!("order-42".parse::<Cursor>().is_err());
/// # Ok::<(), schedpool::durable::DurableError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cursor {
    /// The last item's score (ms since the Unix epoch, by the store's clock).
    pub score_ms: u64,
    /// The last item's id.
    pub id: String,
}

impl fmt::Display for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.score_ms, self.id)
    }
}

impl FromStr for Cursor {
    type Err = DurableError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || DurableError::Config(format!("a cursor is SCORE:ID, found {s:?}").into());
        let (score, id) = s.split_once(':').ok_or_else(bad)?;
        Ok(Cursor {
            score_ms: score.parse().map_err(|_| bad())?,
            id: id.to_string(),
        })
    }
}

/// Which items a listing returns: one state, optionally narrowed by kind,
/// id prefix and a score range, a page at a time.
///
/// # Examples
///
/// ```
/// use schedpool::durable::{ListFilter, StoredState};
///
/// let filter = ListFilter::new(StoredState::Dead)
///     .kind("charge")
///     .id_prefix("order-")
///     .between(Some(1_700_000_000_000), None)
///     .limit(50);
/// assert_eq!(filter.limit, 50);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListFilter {
    /// The state listed.
    pub state: StoredState,
    /// Only items of this kind (the envelope's kind: a pool's handler
    /// name, empty for a plain queue's items, `schedpool/calendar` for
    /// calendar schedules).
    pub kind: Option<String>,
    /// Only ids starting with this.
    pub id_prefix: Option<String>,
    /// Only scores ≥ this (ms).
    pub from_ms: Option<u64>,
    /// Only scores < this (ms).
    pub until_ms: Option<u64>,
    /// At most this many items (1 to [`MAX_PAGE`]; default 100).
    pub limit: usize,
    /// Only items after this one (from [`Page::next`]).
    pub after: Option<Cursor>,
}

/// The largest page a listing returns.
pub const MAX_PAGE: usize = 1000;

impl ListFilter {
    /// All items in `state`, the first 100.
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::durable::{ListFilter, StoredState};
    ///
    /// assert_eq!(ListFilter::new(StoredState::Pending).limit, 100);
    /// ```
    pub fn new(state: StoredState) -> Self {
        ListFilter {
            state,
            kind: None,
            id_prefix: None,
            from_ms: None,
            until_ms: None,
            limit: 100,
            after: None,
        }
    }

    /// Only items of `kind`.
    ///
    /// # Examples
    ///
    /// ```
    /// # use schedpool::durable::{ListFilter, StoredState};
    /// assert_eq!(ListFilter::new(StoredState::Pending).kind("mail").kind.as_deref(), Some("mail"));
    /// ```
    pub fn kind(mut self, kind: impl Into<String>) -> Self {
        self.kind = Some(kind.into());
        self
    }

    /// Only ids starting with `prefix`.
    ///
    /// # Examples
    ///
    /// ```
    /// # use schedpool::durable::{ListFilter, StoredState};
    /// let filter = ListFilter::new(StoredState::Pending).id_prefix("order-");
    /// assert_eq!(filter.id_prefix.as_deref(), Some("order-"));
    /// ```
    pub fn id_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.id_prefix = Some(prefix.into());
        self
    }

    /// Only scores in `from_ms..until_ms` (each bound optional).
    ///
    /// # Examples
    ///
    /// ```
    /// # use schedpool::durable::{ListFilter, StoredState};
    /// let filter = ListFilter::new(StoredState::Pending).between(Some(10), Some(20));
    /// assert_eq!((filter.from_ms, filter.until_ms), (Some(10), Some(20)));
    /// ```
    pub fn between(mut self, from_ms: Option<u64>, until_ms: Option<u64>) -> Self {
        self.from_ms = from_ms;
        self.until_ms = until_ms;
        self
    }

    /// At most `limit` items (clamped to 1..=[`MAX_PAGE`] when listed).
    ///
    /// # Examples
    ///
    /// ```
    /// # use schedpool::durable::{ListFilter, StoredState};
    /// assert_eq!(ListFilter::new(StoredState::Pending).limit(10).limit, 10);
    /// ```
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    /// Only items after `cursor`.
    ///
    /// # Examples
    ///
    /// ```
    /// # use schedpool::durable::{Cursor, ListFilter, StoredState};
    /// let cursor = Cursor { score_ms: 5, id: "a".into() };
    /// let filter = ListFilter::new(StoredState::Pending).after(Some(cursor.clone()));
    /// assert_eq!(filter.after, Some(cursor));
    /// ```
    pub fn after(mut self, cursor: Option<Cursor>) -> Self {
        self.after = cursor;
        self
    }

    /// The page size to use: `limit` clamped to 1..=[`MAX_PAGE`].
    pub(crate) fn page(&self) -> usize {
        self.limit.clamp(1, MAX_PAGE)
    }

    /// True when an item passes the kind, prefix, range and cursor tests.
    pub(crate) fn admits(&self, score: u64, id: &str, kind: &str) -> bool {
        self.from_ms.is_none_or(|f| score >= f)
            && self.until_ms.is_none_or(|u| score < u)
            && self.kind.as_deref().is_none_or(|k| k == kind)
            && self.id_prefix.as_deref().is_none_or(|p| id.starts_with(p))
            && self
                .after
                .as_ref()
                .is_none_or(|c| (score, id) > (c.score_ms, c.id.as_str()))
    }
}

/// One listed item.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ItemSummary {
    /// The item's id.
    pub id: String,
    /// Its kind (see [`ListFilter::kind`]).
    pub kind: String,
    /// Its state.
    pub state: StoredState,
    /// The time its state sorts by (ms): due time, lease expiry or death.
    pub score_ms: u64,
    /// The occurrence's scheduled time (ms).
    pub deadline_ms: u64,
    /// How many times it was claimed since it was put or requeued.
    pub attempts: u32,
}

/// One page of a listing.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Page<T> {
    /// The items, in order.
    pub items: Vec<T>,
    /// Where the next page starts; `None` when this one is the last. A page
    /// may hold fewer than the limit while `next` is `Some`: a backend may
    /// bound the work of one call.
    pub next: Option<Cursor>,
}

/// An item in full, as an operator inspects it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ItemDetail {
    /// The summary (id, kind, state, score, deadline, attempts).
    pub summary: ItemSummary,
    /// When it is or was due for its current delivery (ms): the deadline,
    /// or a retry's backoff end.
    pub due_ms: u64,
    /// The payload's bytes (the envelope's, without kind or repeat).
    pub payload: Vec<u8>,
    /// The error recorded when it died (dead items only).
    pub last_error: Option<String>,
    /// In flight: the fencing token of the holder's claim and when the
    /// lease expires (ms). The store does not record which process holds
    /// it.
    pub lease: Option<(u64, u64)>,
    /// The stored bytes did not open: why (the payload is then the raw bytes).
    pub unreadable: Option<String>,
}

/// Item counts of one kind.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct KindCounts {
    /// The kind.
    pub kind: String,
    /// Pending items of it.
    pub pending: usize,
    /// In-flight items of it.
    pub in_flight: usize,
    /// Dead items of it.
    pub dead: usize,
}

impl KindCounts {
    /// Zero counts of `kind`.
    ///
    /// # Examples
    ///
    /// ```
    /// # use schedpool::durable::KindCounts;
    /// assert_eq!(KindCounts::new("mail").pending, 0);
    /// ```
    pub fn new(kind: &str) -> Self {
        KindCounts {
            kind: kind.to_string(),
            ..Self::default()
        }
    }

    /// Adds `n` items in `state`.
    pub(crate) fn add(&mut self, state: StoredState, n: usize) {
        match state {
            StoredState::Pending => self.pending += n,
            StoredState::InFlight => self.in_flight += n,
            StoredState::Dead => self.dead += n,
        }
    }
}

/// Counts by kind from (kind, state code, count) rows sorted by kind.
#[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
pub(crate) fn fold_counts(rows: impl IntoIterator<Item = (String, i64, i64)>) -> Vec<KindCounts> {
    let mut out: Vec<KindCounts> = Vec::new();
    for (kind, state, n) in rows {
        if out.last().is_none_or(|k| k.kind != kind) {
            out.push(KindCounts::new(&kind));
        }
        if let (Some(state), Some(last)) = (StoredState::from_code(state), out.last_mut()) {
            last.add(state, usize::try_from(n).unwrap_or(0));
        }
    }
    out
}

/// A paused kind: who paused it and when.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PausedKind {
    /// The kind.
    pub kind: String,
    /// Who paused it, as the operator named themselves.
    pub by: String,
    /// When (ms, by the store's clock).
    pub at_ms: u64,
}

impl PausedKind {
    /// A paused-kind record.
    ///
    /// # Examples
    ///
    /// ```
    /// # use schedpool::durable::PausedKind;
    /// assert_eq!(PausedKind::new("mail", "ada", 5).by, "ada");
    /// ```
    pub fn new(kind: &str, by: &str, at_ms: u64) -> Self {
        PausedKind {
            kind: kind.to_string(),
            by: by.to_string(),
            at_ms,
        }
    }
}

/// One audit record: a change an operator made.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuditEntry {
    /// Its sequence number in the store (increasing).
    pub seq: u64,
    /// When (ms, by the store's clock).
    pub at_ms: u64,
    /// Who, as the operator named themselves.
    pub by: String,
    /// What: `requeue`, `purge`, `pause`, `resume`, `fire`, `cancel`.
    pub action: String,
    /// On what: a filter's text, a kind, a schedule or an item id.
    pub target: String,
    /// How many items it changed.
    pub count: u64,
}

impl AuditEntry {
    /// A record as a store returns it.
    ///
    /// # Examples
    ///
    /// ```
    /// # use schedpool::durable::AuditEntry;
    /// let entry = AuditEntry::new(1, 5, "ada", "pause", "mail", 1);
    /// assert_eq!((entry.seq, entry.action.as_str()), (1, "pause"));
    /// ```
    pub fn new(seq: u64, at_ms: u64, by: &str, action: &str, target: &str, count: u64) -> Self {
        AuditEntry {
            seq,
            at_ms,
            by: by.to_string(),
            action: action.to_string(),
            target: target.to_string(),
            count,
        }
    }
}

/// The operator's side of a store: listing, inspecting, counting by kind,
/// pausing kinds and the audit trail. The four shipped backends implement
/// it; a backend of your own returns it from
/// [`DurableBackend::ops`](super::backend::DurableBackend::ops) to support
/// [`Operator`](crate::durable::Operator).
///
/// Each method is one read or one atomic step on the store.
pub trait DurableOps: Send + Sync {
    /// One page of items matching `filter`, in (score, id) order.
    ///
    /// # Errors
    ///
    /// [`DurableError`] on a store failure.
    fn list(&self, filter: &ListFilter) -> Result<Page<ItemSummary>, DurableError>;

    /// The item stored under `id` in full, or `None`.
    ///
    /// # Errors
    ///
    /// [`DurableError`] on a store failure.
    fn inspect(&self, id: &str) -> Result<Option<ItemDetail>, DurableError>;

    /// Item counts by kind (kinds with no item left out), in kind order.
    ///
    /// # Errors
    ///
    /// [`DurableError`] on a store failure.
    fn count_by_kind(&self) -> Result<Vec<KindCounts>, DurableError>;

    /// Pauses `kind` for every process using the store: `false` when it was
    /// paused already (then the record is left as it was).
    ///
    /// # Errors
    ///
    /// [`DurableError`] on a store failure.
    fn pause_kind(&self, kind: &str, by: &str) -> Result<bool, DurableError>;

    /// Resumes `kind` and wakes waiting consumers: `false` when it was not
    /// paused.
    ///
    /// # Errors
    ///
    /// [`DurableError`] on a store failure.
    fn resume_kind(&self, kind: &str) -> Result<bool, DurableError>;

    /// The paused kinds, in kind order.
    ///
    /// # Errors
    ///
    /// [`DurableError`] on a store failure.
    fn paused_kinds(&self) -> Result<Vec<PausedKind>, DurableError>;

    /// Appends an audit record stamped with the store's clock and the next
    /// sequence number, and returns it.
    ///
    /// # Errors
    ///
    /// [`DurableError`] on a store failure.
    fn record_audit(
        &self,
        by: &str,
        action: &str,
        target: &str,
        count: u64,
    ) -> Result<AuditEntry, DurableError>;

    /// Up to `limit` audit records, newest first, with a sequence number
    /// below `before` when given.
    ///
    /// # Errors
    ///
    /// [`DurableError`] on a store failure.
    fn audit(&self, limit: usize, before: Option<u64>) -> Result<Vec<AuditEntry>, DurableError>;
}
