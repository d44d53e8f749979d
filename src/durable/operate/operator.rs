//! [`Operator`]: the store as an operator sees it, with every change
//! audited.
//!
//! Invariants: an operator holds the backend wrapped as the pool's and the
//! queue's are ([`Store`]); a change is made first and audited after, so a
//! failed audit write reports an error for a change that did happen (the
//! error says so).

use std::time::Duration;

use crate::durable::store::backend::{Cancelled, Counts, DurableBackend};
use crate::durable::store::contained::Store;
use crate::durable::store::error::DurableError;
use crate::durable::store::ops::{
    AuditEntry, DurableOps, ItemDetail, ItemSummary, KindCounts, ListFilter, Page, PausedKind,
};
use std::sync::Arc;

/// The longest operator name accepted, in bytes.
const MAX_BY: usize = 200;

/// The longest kind, in bytes (an envelope's limit).
const MAX_KIND: usize = 255;

/// A store's operator: lists and inspects items, counts them, pauses and
/// resumes kinds for the whole fleet, requeues and purges dead letters in
/// bulk, fires calendar schedules now, and keeps an audit trail of every
/// change it makes in the store itself.
///
/// Make one over the same store a pool or queue uses (`DurablePool::operator`,
/// `DurableQueue::operator`), or over a backend connected just for it, as
/// the `schedpool` command does.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedpool::durable::{DurableQueue, ListFilter, MemoryBackend, Operator, StoredState};
///
/// let store = MemoryBackend::new();
/// let queue: DurableQueue<u64> = DurableQueue::new(store.clone());
/// queue.put("order-42", &42, Duration::from_secs(60))?;
///
/// let ops = Operator::new(store);
/// let page = ops.list(&ListFilter::new(StoredState::Pending))?;
/// assert_eq!(page.items[0].id, "order-42");
/// assert_eq!(ops.overview()?.counts.pending, 1);
/// # Ok::<(), schedpool::durable::DurableError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Operator {
    store: Store,
}

/// What a store holds at a glance.
///
/// # Examples
///
/// ```
/// use schedpool::durable::{MemoryBackend, Operator};
///
/// let overview = Operator::new(MemoryBackend::new()).overview()?;
/// assert_eq!(overview.counts.pending, 0);
/// assert_eq!(overview.oldest_overdue, None);
/// # Ok::<(), schedpool::durable::DurableError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Overview {
    /// The store's clock when read (ms since the Unix epoch).
    pub now_ms: u64,
    /// Totals by state.
    pub counts: Counts,
    /// Counts by kind, in kind order.
    pub by_kind: Vec<KindCounts>,
    /// The paused kinds.
    pub paused: Vec<PausedKind>,
    /// The earliest pending due time (ms), overdue or not.
    pub next_due_ms: Option<u64>,
    /// How late the most overdue pending item is (now − its due time), when
    /// one is due; a paused kind's items count too.
    pub oldest_overdue: Option<Duration>,
}

impl Operator {
    /// An operator over `backend`.
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::durable::{MemoryBackend, Operator};
    ///
    /// let ops = Operator::new(MemoryBackend::new());
    /// assert!(ops.paused_kinds()?.is_empty());
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn new(backend: impl DurableBackend) -> Self {
        Self::from_store(Store::new(Arc::new(backend)))
    }

    pub(crate) fn from_store(store: Store) -> Self {
        Operator { store }
    }

    pub(super) fn store(&self) -> &Store {
        &self.store
    }

    pub(super) fn ops(&self) -> Result<&dyn DurableOps, DurableError> {
        self.store.ops().ok_or_else(|| {
            DurableError::Config(
                format!(
                    "{:?} has no operator side (DurableBackend::ops returns None)",
                    self.store
                )
                .into(),
            )
        })
    }

    /// One page of items: see [`ListFilter`] for the filters and
    /// [`Page::next`] for the next page.
    ///
    /// # Errors
    ///
    /// [`DurableError::Config`] when the backend has no operator side; the
    /// store's error otherwise.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableQueue, ListFilter, MemoryBackend, Operator, StoredState};
    ///
    /// let store = MemoryBackend::new();
    /// let queue: DurableQueue<u64> = DurableQueue::new(store.clone());
    /// for i in 0..5 {
    ///     queue.put(&format!("order-{i}"), &i, Duration::from_secs(60 + i))?;
    /// }
    /// let ops = Operator::new(store);
    /// let first = ops.list(&ListFilter::new(StoredState::Pending).limit(3))?;
    /// assert_eq!(first.items.len(), 3);
    /// let rest = ops.list(&ListFilter::new(StoredState::Pending).limit(3).after(first.next))?;
    /// assert_eq!(rest.items.iter().map(|i| i.id.as_str()).collect::<Vec<_>>(), ["order-3", "order-4"]);
    /// assert_eq!(rest.next, None);
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn list(&self, filter: &ListFilter) -> Result<Page<ItemSummary>, DurableError> {
        self.ops()?.list(filter)
    }

    /// The item stored under `id` in full (payload, attempts, last error,
    /// lease), or `None`.
    ///
    /// # Errors
    ///
    /// As for [`list`](Self::list).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableQueue, MemoryBackend, Operator, StoredState};
    ///
    /// let store = MemoryBackend::new();
    /// let queue: DurableQueue<String> = DurableQueue::new(store.clone());
    /// queue.put("order-42", &"close".to_string(), Duration::ZERO)?;
    /// queue.take()?.expect("open").dead_letter_with("no warehouse")?;
    ///
    /// let item = Operator::new(store).inspect("order-42")?.expect("stored");
    /// assert_eq!(item.summary.state, StoredState::Dead);
    /// assert_eq!(item.payload, b"close");
    /// assert_eq!(item.last_error.as_deref(), Some("no warehouse"));
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn inspect(&self, id: &str) -> Result<Option<ItemDetail>, DurableError> {
        self.ops()?.inspect(id)
    }

    /// Counts by state and kind, the paused kinds, the next due time and
    /// the oldest overdue item's lateness.
    ///
    /// # Errors
    ///
    /// As for [`list`](Self::list).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ManualClock;
    /// use schedpool::durable::{DurableQueue, MemoryBackend, Operator};
    ///
    /// let clock = ManualClock::new();
    /// let store = MemoryBackend::with_clock(clock.clone());
    /// let queue: DurableQueue<u64> = DurableQueue::new(store.clone());
    /// queue.put("a", &1, Duration::from_secs(10))?;
    /// clock.advance(Duration::from_secs(15));
    /// let overview = Operator::new(store).overview()?;
    /// assert_eq!(overview.oldest_overdue, Some(Duration::from_secs(5)));
    /// assert_eq!(overview.by_kind[0].pending, 1);
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn overview(&self) -> Result<Overview, DurableError> {
        let ops = self.ops()?;
        let by_kind = ops.count_by_kind()?;
        let paused = ops.paused_kinds()?;
        let counts = self.store.counts()?;
        let next_due_ms = self.store.peek_deadline_ms()?;
        let now_ms = self.store.server_time_ms()?;
        let oldest_overdue = next_due_ms
            .filter(|&due| due <= now_ms)
            .map(|due| Duration::from_millis(now_ms - due));
        Ok(Overview {
            now_ms,
            counts,
            by_kind,
            paused,
            next_due_ms,
            oldest_overdue,
        })
    }

    /// Pauses `kind` for every process on this store: their claims skip
    /// its pending items, which wait (due or not) until it is resumed; a
    /// restart keeps the pause. Items already in flight finish. `true`
    /// when it was not paused yet (and an audit record is written).
    ///
    /// # Errors
    ///
    /// [`DurableError::Config`] for a kind over 255 bytes or an empty or
    /// over-200-byte `by`; as for [`list`](Self::list) otherwise.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurablePool, MemoryBackend, Operator};
    ///
    /// let store = MemoryBackend::new();
    /// let ops = Operator::new(store.clone());
    /// assert!(ops.pause_kind("mail", "ada")?);
    /// let pool = DurablePool::builder(store)
    ///     .threads(1)
    ///     .handler("mail", |_: &(), _job| Ok(()))
    ///     .build()?;
    /// pool.schedule("mail", "m-1", &(), Duration::ZERO)?;
    /// std::thread::sleep(Duration::from_millis(50));
    /// assert_eq!(pool.counts()?.pending, 1, "paused: it waits");
    /// assert!(ops.resume_kind("mail", "ada")?);
    /// assert!(pool.wait_idle(Duration::from_secs(5)));
    /// assert_eq!(ops.audit(10, None)?[0].action, "resume");
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn pause_kind(&self, kind: &str, by: &str) -> Result<bool, DurableError> {
        check_kind(kind)?;
        check_by(by)?;
        let paused = self.ops()?.pause_kind(kind, by)?;
        if paused {
            self.audit_change(by, "pause", kind, 1)?;
        }
        Ok(paused)
    }

    /// Resumes `kind`: its due items are claimed at once. `true` when it
    /// was paused (and an audit record is written).
    ///
    /// # Errors
    ///
    /// As for [`pause_kind`](Self::pause_kind).
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::durable::{MemoryBackend, Operator};
    ///
    /// let ops = Operator::new(MemoryBackend::new());
    /// assert!(!ops.resume_kind("mail", "ada")?, "was not paused");
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn resume_kind(&self, kind: &str, by: &str) -> Result<bool, DurableError> {
        check_kind(kind)?;
        check_by(by)?;
        let resumed = self.ops()?.resume_kind(kind)?;
        if resumed {
            self.audit_change(by, "resume", kind, 1)?;
        }
        Ok(resumed)
    }

    /// The paused kinds, with who paused each and when.
    ///
    /// # Errors
    ///
    /// As for [`list`](Self::list).
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::durable::{MemoryBackend, Operator};
    ///
    /// let ops = Operator::new(MemoryBackend::new());
    /// ops.pause_kind("mail", "ada")?;
    /// assert_eq!(ops.paused_kinds()?[0].by, "ada");
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn paused_kinds(&self) -> Result<Vec<PausedKind>, DurableError> {
        self.ops()?.paused_kinds()
    }

    /// Removes the item `id` wherever it is (as
    /// [`DurableBackend::cancel`]), with an audit record when it found one.
    ///
    /// # Errors
    ///
    /// As for [`pause_kind`](Self::pause_kind).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{Cancelled, DurableQueue, MemoryBackend, Operator};
    ///
    /// let store = MemoryBackend::new();
    /// let queue: DurableQueue<u64> = DurableQueue::new(store.clone());
    /// queue.put("order-42", &42, Duration::from_secs(60))?;
    /// let ops = Operator::new(store);
    /// assert!(matches!(ops.cancel("order-42", "ada")?, Cancelled::Pending(_)));
    /// assert_eq!(ops.cancel("order-42", "ada")?, Cancelled::NotFound);
    /// assert_eq!(ops.audit(10, None)?.len(), 1);
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn cancel(&self, id: &str, by: &str) -> Result<Cancelled, DurableError> {
        check_by(by)?;
        // Refuse before changing anything when the change cannot be audited.
        self.ops()?;
        let found = self.store.cancel(id)?;
        if found != Cancelled::NotFound {
            self.audit_change(by, "cancel", id, 1)?;
        }
        Ok(found)
    }

    /// Up to `limit` audit records, newest first; `before` (a record's
    /// `seq`) pages back.
    ///
    /// # Errors
    ///
    /// As for [`list`](Self::list).
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::durable::{MemoryBackend, Operator};
    ///
    /// let ops = Operator::new(MemoryBackend::new());
    /// ops.pause_kind("a", "ada")?;
    /// ops.pause_kind("b", "bob")?;
    /// let newest = ops.audit(1, None)?;
    /// assert_eq!((newest[0].by.as_str(), newest[0].target.as_str()), ("bob", "b"));
    /// let older = ops.audit(10, Some(newest[0].seq))?;
    /// assert_eq!(older[0].target, "a");
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn audit(
        &self,
        limit: usize,
        before: Option<u64>,
    ) -> Result<Vec<AuditEntry>, DurableError> {
        self.ops()?.audit(limit, before)
    }

    /// Writes the audit record of a change that was made.
    pub(super) fn audit_change(
        &self,
        by: &str,
        action: &str,
        target: &str,
        count: u64,
    ) -> Result<(), DurableError> {
        self.ops()?
            .record_audit(by, action, target, count)
            .map(drop)
            .map_err(|e| {
                DurableError::Unavailable(
                    format!("{action} {target:?} was done ({count} item(s)), but its audit record was not written: {e}")
                        .into(),
                )
            })
    }
}

/// Checks an operator name: not empty, at most [`MAX_BY`] bytes.
pub(super) fn check_by(by: &str) -> Result<(), DurableError> {
    if by.trim().is_empty() || by.len() > MAX_BY {
        return Err(DurableError::Config(
            format!(
                "an operator name must be 1 to {MAX_BY} bytes, found {} bytes",
                by.len()
            )
            .into(),
        ));
    }
    Ok(())
}

fn check_kind(kind: &str) -> Result<(), DurableError> {
    if kind.len() > MAX_KIND {
        return Err(DurableError::Config(
            format!("a kind is at most {MAX_KIND} bytes, found {}", kind.len()).into(),
        ));
    }
    Ok(())
}
