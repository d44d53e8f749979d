//! `DurableQueue<T>`: the `DelayQueue` verbs over a durable backend.
//!
//! Invariants: every value is sealed in a version-1 envelope (`envelope.rs`)
//! before it reaches the backend; every item handed to a caller is a
//! [`Delivery`] registered with the heartbeat thread; an item whose bytes
//! do not decode is dead-lettered (and logged), never handed out and never
//! dropped.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use super::backend::{check_id, Counts, DurableBackend, DurableError, Put, PutMode, When};
use super::delivery::{ms_to_time, Delivery};
use super::envelope::{self, IdGen, Payload};
use super::options::QueueOptions;
use super::taker::Taker;

/// What [`DurableQueue::remove`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Removed<T> {
    /// It was waiting: here is its value. It will never be delivered.
    Pending(T),
    /// It was held by a consumer: removed, and that holder's ack will fail.
    InFlight,
    /// It was dead-lettered: here is its value.
    Dead(T),
    /// No item has this id.
    NotFound,
}

/// A delay queue whose items live in a durable store: they survive
/// restarts and are shared by every process using the same store and queue
/// name.
///
/// The verbs follow [`DelayQueue`](crate::DelayQueue) where they make sense:
/// [`put`](Self::put) by business id (replacing, or
/// [`put_if_absent`](Self::put_if_absent)), [`remove`](Self::remove) by id in
/// O(log n), [`take`](Self::take), [`poll`](Self::poll),
/// [`poll_timeout`](Self::poll_timeout) and [`close`](Self::close). They are
/// fallible (the store can be unreachable) and lease-based: a taken item is
/// a [`Delivery`] to ack. Time is the store's clock only, so a client with a
/// skewed clock cannot make anything early.
///
/// Clones share one queue handle (one local leader, one heartbeat thread).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedpool::durable::{DurableQueue, MemoryBackend, Removed};
///
/// let queue: DurableQueue<u64> = DurableQueue::new(MemoryBackend::new());
/// queue.put("order-42", &42, Duration::from_millis(20))?;
/// queue.put("order-43", &43, Duration::from_millis(20))?;
/// // Order 43 is paid: its timeout is removed in O(log n).
/// assert_eq!(queue.remove("order-43")?, Removed::Pending(43));
///
/// let delivery = queue.take()?.expect("the queue is open");
/// assert_eq!(*delivery.value(), 42);
/// delivery.ack()?;
/// # Ok::<(), schedpool::durable::DurableError>(())
/// ```
pub struct DurableQueue<T> {
    taker: Arc<Taker>,
    ids: Arc<IdGen>,
    _values: PhantomData<fn(T) -> T>,
}

impl<T> Clone for DurableQueue<T> {
    fn clone(&self) -> Self {
        DurableQueue {
            taker: self.taker.clone(),
            ids: self.ids.clone(),
            _values: PhantomData,
        }
    }
}

impl<T: Payload> DurableQueue<T> {
    /// A queue on `backend` with the default [`QueueOptions`].
    pub fn new(backend: impl DurableBackend) -> Self {
        Self::with_options(backend, QueueOptions::default()).expect("the default options are valid")
    }

    /// A queue on `backend` with `opts`.
    ///
    /// # Errors
    ///
    /// [`DurableError::Config`] when a lease is under 3 ms or `max_block`
    /// is zero.
    pub fn with_options(
        backend: impl DurableBackend,
        opts: QueueOptions,
    ) -> Result<Self, DurableError> {
        Self::from_arc(Arc::new(backend), opts)
    }

    pub(super) fn from_arc(
        backend: Arc<dyn DurableBackend>,
        opts: QueueOptions,
    ) -> Result<Self, DurableError> {
        opts.check()?;
        Ok(DurableQueue {
            taker: Arc::new(Taker::new(backend, opts)),
            ids: Arc::new(IdGen::new()),
            _values: PhantomData,
        })
    }

    /// Puts `value` under `id`, due `delay` after the store's now. An item
    /// already pending or in flight under `id` is replaced (new value, new
    /// deadline), and a current holder's ack will fail.
    ///
    /// Repeating a `put` is idempotent only while the item is pending: once
    /// a consumer has claimed it, the repeat replaces the claimed item, the
    /// holder's ack fails with [`DurableError::LeaseLost`], and the item is
    /// delivered again. To retry a put, or to register items at every
    /// start-up, use [`put_if_absent`](Self::put_if_absent).
    ///
    /// # Errors
    ///
    /// [`DurableError::Config`] for an id that is empty or over 1,024 bytes
    /// (the limit of every backend; nothing is sent).
    /// [`DurableError::Refused`] when the store refuses (out of memory):
    /// nothing was written. [`DurableError::Unavailable`] when it could not
    /// be reached within its timeout: the put may or may not have landed;
    /// retry with [`put_if_absent`](Self::put_if_absent) (a repeated `put`
    /// would replace the item if a consumer has claimed it meanwhile), or
    /// remove the id.
    pub fn put(&self, id: &str, value: &T, delay: Duration) -> Result<Put, DurableError> {
        self.put_with(id, value, When::After(delay), PutMode::Replace)
    }

    /// Puts `value` under `id` unless an item with that id is pending or in
    /// flight, in which case nothing changes and [`Put::Exists`] is
    /// returned: the safe retry of a put that returned
    /// [`DurableError::Unavailable`], and the way to register items at
    /// start-up. An id that was acked, cancelled or dead-lettered is absent:
    /// it is put again.
    ///
    /// # Errors
    ///
    /// As for [`put`](Self::put).
    pub fn put_if_absent(&self, id: &str, value: &T, delay: Duration) -> Result<Put, DurableError> {
        self.put_with(id, value, When::After(delay), PutMode::IfAbsent)
    }

    /// Puts `value` under `id`, due at `at` by *this machine's* wall clock:
    /// `at` is turned into a delay once, here, and the store's clock decides
    /// from then on. If this machine's clock is off by 2 minutes, the item is
    /// due 2 minutes off; prefer [`put`](Self::put) with a delay.
    ///
    /// # Errors
    ///
    /// As for [`put`](Self::put).
    pub fn put_at(&self, id: &str, value: &T, at: SystemTime) -> Result<Put, DurableError> {
        let delay = at.duration_since(SystemTime::now()).unwrap_or_default();
        self.put(id, value, delay)
    }

    /// Puts `value` under `id`, due at `at_ms` of the store's clock (ms since
    /// the Unix epoch, as from [`server_time_ms`](Self::server_time_ms)).
    /// Items with equal deadlines come out in id order, so generated ids
    /// ([`push`](Self::push)) come out in put order.
    ///
    /// # Errors
    ///
    /// As for [`put`](Self::put).
    pub fn put_at_server_ms(&self, id: &str, value: &T, at_ms: u64) -> Result<Put, DurableError> {
        self.put_with(id, value, When::AtServerMs(at_ms), PutMode::Replace)
    }

    /// Puts `value` under a generated id (fixed-width, time-ordered within
    /// this process) and returns the id.
    ///
    /// # Errors
    ///
    /// As for [`put`](Self::put).
    pub fn push(&self, value: &T, delay: Duration) -> Result<String, DurableError> {
        let id = self.ids.next();
        self.put(&id, value, delay)?;
        Ok(id)
    }

    /// Generates an id as [`push`](Self::push) does, without putting.
    pub fn next_id(&self) -> String {
        self.ids.next()
    }

    fn put_with(
        &self,
        id: &str,
        value: &T,
        when: When,
        mode: PutMode,
    ) -> Result<Put, DurableError> {
        let sealed = Self::seal(id, value)?;
        self.backend().put(id, &sealed, when, mode)
    }

    /// The stored bytes of `value` under `id`, after checking the id.
    pub(super) fn seal(id: &str, value: &T) -> Result<Vec<u8>, DurableError> {
        check_id(id)?;
        envelope::seal("", None, value)
    }

    /// Removes the item `id` wherever it is, in O(log n).
    ///
    /// # Errors
    ///
    /// [`DurableError`] on a store failure, or [`DurableError::Format`] when
    /// the removed value does not decode (it is removed all the same).
    pub fn remove(&self, id: &str) -> Result<Removed<T>, DurableError> {
        Self::removed(id, self.backend().cancel(id)?)
    }

    /// What a cancel of `id` found, decoded.
    pub(super) fn removed(
        id: &str,
        found: super::backend::Cancelled,
    ) -> Result<Removed<T>, DurableError> {
        use super::backend::Cancelled;
        let open = |bytes: Vec<u8>| -> Result<T, DurableError> {
            let env = envelope::open(&bytes)?;
            envelope::decode(id, env.payload)
        };
        Ok(match found {
            Cancelled::Pending(bytes) => Removed::Pending(open(bytes)?),
            Cancelled::Dead(bytes) => Removed::Dead(open(bytes)?),
            Cancelled::InFlight => Removed::InFlight,
            Cancelled::NotFound => Removed::NotFound,
        })
    }

    /// Waits for a due item: `Ok(None)` once the queue is closed. While the
    /// store is unreachable it keeps retrying with a capped backoff (never
    /// spinning), so it does not return an error.
    ///
    /// # Errors
    ///
    /// None in practice; the `Result` keeps the verbs uniform.
    pub fn take(&self) -> Result<Option<Delivery<T>>, DurableError> {
        self.take_until(None)
    }

    /// One claim attempt: a due item, or `None`. Never blocks on the store
    /// beyond one round trip.
    ///
    /// # Errors
    ///
    /// [`DurableError`] when the claim failed.
    pub fn poll(&self) -> Result<Option<Delivery<T>>, DurableError> {
        self.take_until(Some(Instant::now()))
    }

    /// Waits at most `timeout` for a due item.
    ///
    /// # Errors
    ///
    /// The store's error when it could not be reached until `timeout`
    /// passed.
    pub fn poll_timeout(&self, timeout: Duration) -> Result<Option<Delivery<T>>, DurableError> {
        let limit = Instant::now().checked_add(timeout);
        match limit {
            Some(limit) => self.take_until(Some(limit)),
            None => self.take_until(None),
        }
    }

    /// Claims every item due now, in batches, without waiting.
    ///
    /// # Errors
    ///
    /// [`DurableError`] when a claim failed; what was claimed before is
    /// released back to the queue by dropping it.
    pub fn drain_expired(&self) -> Result<Vec<Delivery<T>>, DurableError> {
        let mut out = Vec::new();
        while let Some(d) = self.poll()? {
            out.push(d);
        }
        Ok(out)
    }

    fn take_until(&self, limit: Option<Instant>) -> Result<Option<Delivery<T>>, DurableError> {
        loop {
            let Some(taken) = self.taker.take(limit)? else {
                return Ok(None);
            };
            let claimed = &taken.claimed;
            let decoded = envelope::open(&claimed.envelope).and_then(|env| {
                let value = envelope::decode::<T>(&claimed.id, env.payload)?;
                Ok((value, env.kind.to_string(), env.repeat))
            });
            match decoded {
                Ok((value, kind, repeat)) => {
                    return Ok(Some(Delivery::new(
                        taken,
                        value,
                        &kind,
                        repeat,
                        &self.taker.leases,
                    )))
                }
                Err(err) => {
                    tracing::error!(
                        target: "schedpool::durable",
                        id = %claimed.id,
                        error = %err,
                        "undecodable item moved to the dead-letter set"
                    );
                    if let Some(lease) = &taken.lease {
                        self.taker.leases.settle(lease);
                    }
                    // Best effort: if this fails, the lease expires and the
                    // item is redelivered, then dead-lettered again.
                    let why = err.to_string();
                    let _ = self.backend().bury(&claimed.id, claimed.token, Some(&why));
                }
            }
        }
    }

    /// The earliest pending deadline, by the store's clock.
    ///
    /// # Errors
    ///
    /// [`DurableError`] on a store failure.
    pub fn peek_deadline(&self) -> Result<Option<SystemTime>, DurableError> {
        Ok(self.backend().peek_deadline_ms()?.map(ms_to_time))
    }

    /// Pending + in flight.
    ///
    /// # Errors
    ///
    /// [`DurableError`] on a store failure.
    pub fn len(&self) -> Result<usize, DurableError> {
        let c = self.counts()?;
        Ok(c.pending + c.in_flight)
    }

    /// True when nothing is pending or in flight.
    ///
    /// # Errors
    ///
    /// [`DurableError`] on a store failure.
    pub fn is_empty(&self) -> Result<bool, DurableError> {
        Ok(self.len()? == 0)
    }

    /// Pending, in-flight and dead-lettered counts.
    ///
    /// # Errors
    ///
    /// [`DurableError`] on a store failure.
    pub fn counts(&self) -> Result<Counts, DurableError> {
        self.backend().counts()
    }

    /// The store's clock, in ms since the Unix epoch.
    ///
    /// # Errors
    ///
    /// [`DurableError`] on a store failure.
    pub fn server_time_ms(&self) -> Result<u64, DurableError> {
        self.backend().server_time_ms()
    }

    /// Closes this handle (and its clones): blocked `take`s return `None` at
    /// once, claimed items not yet handed out are released (with the store
    /// unreachable, only until a release fails: the rest are left to their
    /// leases), and nothing more is claimed. The stored items are untouched, and deliveries already
    /// handed out can still be acked (their heartbeats go on).
    pub fn close(&self) {
        self.taker.close();
    }

    /// True after [`close`](Self::close).
    pub fn is_closed(&self) -> bool {
        self.taker.is_closed()
    }

    /// The options this queue was made with.
    pub fn options(&self) -> QueueOptions {
        self.taker.opts
    }

    pub(super) fn backend(&self) -> &Arc<dyn DurableBackend> {
        self.taker.backend()
    }
}

impl<T> fmt::Debug for DurableQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DurableQueue")
            .field("taker", &self.taker)
            .finish()
    }
}
