//! [`Store`]: one durable store opened for operating it, with the verbs the
//! command-line tool and the console share, in the views of `model.rs`.
//!
//! Layers: `open` (URLs to backends), `ops` (the library's operator
//! verbs, mapped to the views), this file (the facade and its errors).
//!
//! Invariants: every change takes the operator's name and is recorded in
//! the store's audit trail by the library; a not-found answer is an
//! [`ErrorKind::NotFound`](crate::ErrorKind::NotFound) error, never a
//! silent success.

mod model;
mod open;
mod ops;

use std::sync::Arc;

use schedpool::durable::DurableBackend;

pub use model::{
    Audit, BulkOutcome, Filter, Item, ItemDetail, KindRow, Lease, Overview, Page, Paused, Schedule,
    State,
};
pub use open::{redact, OpenOptions};
pub(crate) use ops::Ops;

use crate::error::Error;

/// Which bulk change to make to dead letters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BulkAction {
    /// Back to pending, due now, attempts 0.
    Requeue,
    /// Deleted.
    Purge,
}

impl BulkAction {
    /// `requeue` or `purge`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(schedpool_cli::BulkAction::Purge.name(), "purge");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            BulkAction::Requeue => "requeue",
            BulkAction::Purge => "purge",
        }
    }
}

/// A durable store opened for operating it. Cheap to clone (shared).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedpool::durable::{DurableQueue, MemoryBackend};
/// use schedpool_cli::Store;
///
/// let backend = MemoryBackend::new();
/// let queue: DurableQueue<u64> = DurableQueue::new(backend.clone());
/// queue.put("order-42", &42, Duration::from_secs(60))?;
/// let store = Store::from_backend(backend, "memory")?;
/// assert_eq!(store.overview()?.pending, 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Store {
    ops: Arc<Ops>,
    label: Arc<str>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("label", &self.label).finish()
    }
}

impl Store {
    /// Opens the store at `url` (`sqlite:PATH`, `redis://…`, `rediss://…`,
    /// `postgres://…`) for `opts.queue`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Usage`](crate::ErrorKind::Usage) for a URL of no known
    /// form or a store this build does not support;
    /// [`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable) when the
    /// store cannot be reached (or the SQLite file does not exist);
    /// [`ErrorKind::Refused`](crate::ErrorKind::Refused) for refused
    /// credentials or a missing schema.
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool_cli::{ErrorKind, OpenOptions, Store};
    ///
    /// let err = Store::open("ftp://x", &OpenOptions::new("orders")).unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::Usage);
    /// ```
    pub fn open(url: &str, opts: &OpenOptions) -> Result<Store, Error> {
        let ops = open::backend(url, opts)?;
        Ok(Store {
            ops: Arc::new(ops),
            label: format!("{} (queue {})", redact(url), opts.queue).into(),
        })
    }

    /// A store over a backend you already have (a service embedding the
    /// console), shown as `label`.
    ///
    /// # Errors
    ///
    /// The backend's error, as an [`Error`].
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::durable::MemoryBackend;
    ///
    /// let store = schedpool_cli::Store::from_backend(MemoryBackend::new(), "in memory")?;
    /// assert_eq!(store.label(), "in memory");
    /// # Ok::<(), schedpool_cli::Error>(())
    /// ```
    pub fn from_backend(backend: impl DurableBackend, label: &str) -> Result<Store, Error> {
        let ops = Ops::new(backend).map_err(|e| Error::store("opening the store", e))?;
        Ok(Store {
            ops: Arc::new(ops),
            label: label.into(),
        })
    }

    /// What the store is, for titles: its URL without password and its queue.
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::durable::MemoryBackend;
    ///
    /// let store = schedpool_cli::Store::from_backend(MemoryBackend::new(), "orders in memory")?;
    /// assert_eq!(store.label(), "orders in memory");
    /// # Ok::<(), schedpool_cli::Error>(())
    /// ```
    pub fn label(&self) -> &str {
        &self.label
    }

    /// Counts by kind and state, paused kinds, the next deadline and the lag.
    ///
    /// # Errors
    ///
    /// The store's error (see [`Error`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableQueue, MemoryBackend};
    /// use schedpool_cli::{BulkAction, ErrorKind, Filter, State, Store};
    ///
    /// let backend = MemoryBackend::new();
    /// let queue: DurableQueue<u64> = DurableQueue::new(backend.clone());
    /// for id in ["charge-1", "charge-2"] {
    ///     queue.put(id, &1, Duration::ZERO)?;
    ///     queue.take()?.expect("due").dead_letter()?;
    /// }
    /// queue.put("order-1", &1, Duration::from_secs(60))?;
    /// let store = Store::from_backend(backend, "memory")?;
    /// let o = store.overview()?;
    /// assert_eq!((o.pending, o.dead), (1, 2));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn overview(&self) -> Result<Overview, Error> {
        self.ops.overview()
    }

    /// One page of items matching `filter`, after `cursor` (from a previous
    /// page's [`Page::next_cursor`]), at most `limit` (1 to 1,000).
    ///
    /// # Errors
    ///
    /// A usage error for a malformed cursor; the store's error.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableQueue, MemoryBackend};
    /// use schedpool_cli::{BulkAction, ErrorKind, Filter, State, Store};
    ///
    /// let backend = MemoryBackend::new();
    /// let queue: DurableQueue<u64> = DurableQueue::new(backend.clone());
    /// for id in ["charge-1", "charge-2"] {
    ///     queue.put(id, &1, Duration::ZERO)?;
    ///     queue.take()?.expect("due").dead_letter()?;
    /// }
    /// queue.put("order-1", &1, Duration::from_secs(60))?;
    /// let store = Store::from_backend(backend, "memory")?;
    /// let dead = Filter { state: Some(State::Dead), ..Filter::default() };
    /// let page = store.list(&dead, None, 1)?;
    /// assert_eq!(page.items[0].id, "charge-1");
    /// let next = store.list(&dead, page.next_cursor.as_deref(), 1)?;
    /// assert_eq!(next.items[0].id, "charge-2");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn list(&self, filter: &Filter, cursor: Option<&str>, limit: usize) -> Result<Page, Error> {
        self.ops.list(filter, cursor, limit)
    }

    /// The item `id` in full.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotFound`](crate::ErrorKind::NotFound) when there is no
    /// such item; the store's error.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableQueue, MemoryBackend};
    /// use schedpool_cli::{BulkAction, ErrorKind, Filter, State, Store};
    ///
    /// let backend = MemoryBackend::new();
    /// let queue: DurableQueue<u64> = DurableQueue::new(backend.clone());
    /// for id in ["charge-1", "charge-2"] {
    ///     queue.put(id, &1, Duration::ZERO)?;
    ///     queue.take()?.expect("due").dead_letter()?;
    /// }
    /// queue.put("order-1", &1, Duration::from_secs(60))?;
    /// let store = Store::from_backend(backend, "memory")?;
    /// assert_eq!(store.item("order-1")?.item.state, State::Pending);
    /// assert_eq!(store.item("nope").unwrap_err().kind(), ErrorKind::NotFound);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn item(&self, id: &str) -> Result<ItemDetail, Error> {
        self.ops
            .item(id)?
            .ok_or_else(|| Error::not_found(format!("no item {id:?} in {}", self.label)))
    }

    /// Requeues the dead letter `id` (due now, attempts 0), recorded as by `by`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotFound`](crate::ErrorKind::NotFound) when `id` is not
    /// a dead letter (never was, or another operator moved it first).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableQueue, MemoryBackend};
    /// use schedpool_cli::{BulkAction, ErrorKind, Filter, State, Store};
    ///
    /// let backend = MemoryBackend::new();
    /// let queue: DurableQueue<u64> = DurableQueue::new(backend.clone());
    /// for id in ["charge-1", "charge-2"] {
    ///     queue.put(id, &1, Duration::ZERO)?;
    ///     queue.take()?.expect("due").dead_letter()?;
    /// }
    /// queue.put("order-1", &1, Duration::from_secs(60))?;
    /// let store = Store::from_backend(backend, "memory")?;
    /// store.requeue("charge-1", "ada")?;
    /// assert_eq!(store.item("charge-1")?.item.state, State::Pending);
    /// assert_eq!(store.requeue("charge-1", "ada").unwrap_err().kind(), ErrorKind::NotFound);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn requeue(&self, id: &str, by: &str) -> Result<(), Error> {
        if self.ops.requeue(id, by)? {
            Ok(())
        } else {
            Err(Error::not_found(format!(
                "{id:?} is not a dead letter (never was, or it was requeued or purged already): nothing changed"
            )))
        }
    }

    /// Deletes the dead letter `id`, recorded as by `by`.
    ///
    /// # Errors
    ///
    /// As for [`requeue`](Self::requeue).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableQueue, MemoryBackend};
    /// use schedpool_cli::{BulkAction, ErrorKind, Filter, State, Store};
    ///
    /// let backend = MemoryBackend::new();
    /// let queue: DurableQueue<u64> = DurableQueue::new(backend.clone());
    /// for id in ["charge-1", "charge-2"] {
    ///     queue.put(id, &1, Duration::ZERO)?;
    ///     queue.take()?.expect("due").dead_letter()?;
    /// }
    /// queue.put("order-1", &1, Duration::from_secs(60))?;
    /// let store = Store::from_backend(backend, "memory")?;
    /// store.purge("charge-2", "ada")?;
    /// assert_eq!(store.overview()?.dead, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn purge(&self, id: &str, by: &str) -> Result<(), Error> {
        if self.ops.purge(id, by)? {
            Ok(())
        } else {
            Err(Error::not_found(format!(
                "{id:?} is not a dead letter (never was, or it was requeued or purged already): nothing changed"
            )))
        }
    }

    /// Cancels the item `id` wherever it is; the state it was in.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotFound`](crate::ErrorKind::NotFound) when there is no
    /// such item.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableQueue, MemoryBackend};
    /// use schedpool_cli::{BulkAction, ErrorKind, Filter, State, Store};
    ///
    /// let backend = MemoryBackend::new();
    /// let queue: DurableQueue<u64> = DurableQueue::new(backend.clone());
    /// for id in ["charge-1", "charge-2"] {
    ///     queue.put(id, &1, Duration::ZERO)?;
    ///     queue.take()?.expect("due").dead_letter()?;
    /// }
    /// queue.put("order-1", &1, Duration::from_secs(60))?;
    /// let store = Store::from_backend(backend, "memory")?;
    /// assert_eq!(store.cancel("order-1", "ada")?, State::Pending);
    /// assert_eq!(store.cancel("order-1", "ada").unwrap_err().kind(), ErrorKind::NotFound);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cancel(&self, id: &str, by: &str) -> Result<State, Error> {
        self.ops
            .cancel(id, by)?
            .ok_or_else(|| Error::not_found(format!("no item {id:?} to cancel: nothing changed")))
    }

    /// Requeues or purges the dead letters matching `filter` (its state is
    /// ignored: dead letters only), at most `max`, in batches, each moved
    /// exactly once even beside another operator; `dry_run` counts only.
    /// `progress(done)` is called after each batch with the items handled so far.
    ///
    /// # Errors
    ///
    /// The store's error; items moved before it stay moved (the audit
    /// trail records them).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableQueue, MemoryBackend};
    /// use schedpool_cli::{BulkAction, ErrorKind, Filter, State, Store};
    ///
    /// let backend = MemoryBackend::new();
    /// let queue: DurableQueue<u64> = DurableQueue::new(backend.clone());
    /// for id in ["charge-1", "charge-2"] {
    ///     queue.put(id, &1, Duration::ZERO)?;
    ///     queue.take()?.expect("due").dead_letter()?;
    /// }
    /// queue.put("order-1", &1, Duration::from_secs(60))?;
    /// let store = Store::from_backend(backend, "memory")?;
    /// let all = Filter::default();
    /// let dry = store.bulk(BulkAction::Requeue, &all, 10, true, "ada", &mut |_| {})?;
    /// assert_eq!((dry.matched, dry.changed), (2, 0));
    /// let done = store.bulk(BulkAction::Requeue, &all, 10, false, "ada", &mut |_| {})?;
    /// assert_eq!(done.changed, 2);
    /// assert_eq!(store.audit(1)?[0].action, "requeue");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn bulk(
        &self,
        action: BulkAction,
        filter: &Filter,
        max: usize,
        dry_run: bool,
        by: &str,
        progress: &mut dyn FnMut(usize),
    ) -> Result<BulkOutcome, Error> {
        self.ops.bulk(action, filter, max, dry_run, by, progress)
    }

    /// Pauses `kind` for every process of the fleet; `false` when it was
    /// paused already.
    ///
    /// # Errors
    ///
    /// A usage error for an empty kind; the store's error.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableQueue, MemoryBackend};
    /// use schedpool_cli::{BulkAction, ErrorKind, Filter, State, Store};
    ///
    /// let backend = MemoryBackend::new();
    /// let queue: DurableQueue<u64> = DurableQueue::new(backend.clone());
    /// for id in ["charge-1", "charge-2"] {
    ///     queue.put(id, &1, Duration::ZERO)?;
    ///     queue.take()?.expect("due").dead_letter()?;
    /// }
    /// queue.put("order-1", &1, Duration::from_secs(60))?;
    /// let store = Store::from_backend(backend, "memory")?;
    /// assert!(store.pause("mail", "ada")?);
    /// assert!(!store.pause("mail", "ada")?, "paused already");
    /// assert_eq!(store.overview()?.paused[0].by, "ada");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn pause(&self, kind: &str, by: &str) -> Result<bool, Error> {
        self.ops.pause(kind, by)
    }

    /// Resumes `kind`; `false` when it was not paused.
    ///
    /// # Errors
    ///
    /// The store's error.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableQueue, MemoryBackend};
    /// use schedpool_cli::{BulkAction, ErrorKind, Filter, State, Store};
    ///
    /// let backend = MemoryBackend::new();
    /// let queue: DurableQueue<u64> = DurableQueue::new(backend.clone());
    /// for id in ["charge-1", "charge-2"] {
    ///     queue.put(id, &1, Duration::ZERO)?;
    ///     queue.take()?.expect("due").dead_letter()?;
    /// }
    /// queue.put("order-1", &1, Duration::from_secs(60))?;
    /// let store = Store::from_backend(backend, "memory")?;
    /// store.pause("mail", "ada")?;
    /// assert!(store.resume("mail", "ada")?);
    /// assert!(!store.resume("mail", "ada")?, "not paused");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn resume(&self, kind: &str, by: &str) -> Result<bool, Error> {
        self.ops.resume(kind, by)
    }

    /// The durable calendar schedules.
    ///
    /// # Errors
    ///
    /// The store's error.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableQueue, MemoryBackend};
    /// use schedpool_cli::{BulkAction, ErrorKind, Filter, State, Store};
    ///
    /// let backend = MemoryBackend::new();
    /// let queue: DurableQueue<u64> = DurableQueue::new(backend.clone());
    /// for id in ["charge-1", "charge-2"] {
    ///     queue.put(id, &1, Duration::ZERO)?;
    ///     queue.take()?.expect("due").dead_letter()?;
    /// }
    /// queue.put("order-1", &1, Duration::from_secs(60))?;
    /// let store = Store::from_backend(backend, "memory")?;
    /// assert!(store.schedules()?.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn schedules(&self) -> Result<Vec<Schedule>, Error> {
        self.ops.schedules()
    }

    /// Fires the calendar schedule `name` now (its regular fires go on);
    /// the id of the fire's item.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotFound`](crate::ErrorKind::NotFound) when there is no
    /// such schedule.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableQueue, MemoryBackend};
    /// use schedpool_cli::{BulkAction, ErrorKind, Filter, State, Store};
    ///
    /// let backend = MemoryBackend::new();
    /// let queue: DurableQueue<u64> = DurableQueue::new(backend.clone());
    /// for id in ["charge-1", "charge-2"] {
    ///     queue.put(id, &1, Duration::ZERO)?;
    ///     queue.take()?.expect("due").dead_letter()?;
    /// }
    /// queue.put("order-1", &1, Duration::from_secs(60))?;
    /// let store = Store::from_backend(backend, "memory")?;
    /// let err = store.fire("nightly", "ada").unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::NotFound);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn fire(&self, name: &str, by: &str) -> Result<String, Error> {
        self.ops.fire(name, by)
    }

    /// The newest `limit` audit records, newest first.
    ///
    /// # Errors
    ///
    /// The store's error.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableQueue, MemoryBackend};
    /// use schedpool_cli::{BulkAction, ErrorKind, Filter, State, Store};
    ///
    /// let backend = MemoryBackend::new();
    /// let queue: DurableQueue<u64> = DurableQueue::new(backend.clone());
    /// for id in ["charge-1", "charge-2"] {
    ///     queue.put(id, &1, Duration::ZERO)?;
    ///     queue.take()?.expect("due").dead_letter()?;
    /// }
    /// queue.put("order-1", &1, Duration::from_secs(60))?;
    /// let store = Store::from_backend(backend, "memory")?;
    /// store.pause("mail", "ada")?;
    /// let last = &store.audit(10)?[0];
    /// assert_eq!((last.action.as_str(), last.target.as_str(), last.by.as_str()), ("pause", "mail", "ada"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn audit(&self, limit: usize) -> Result<Vec<Audit>, Error> {
        self.ops.audit(limit)
    }
}
