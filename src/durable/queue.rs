//! `DurableQueue<T>`: the `DelayQueue` verbs over a durable backend.
//!
//! Invariants: the producer verbs (put, remove, counts) call the store
//! directly; only taking goes through the taker; every value is sealed in a version-1 envelope (`envelope.rs`)
//! before it reaches the backend; every item handed to a caller is a
//! [`Delivery`] registered with the heartbeat thread; an item whose bytes
//! do not decode is dead-lettered (and logged), never handed out and never
//! dropped.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use super::store::backend::{check_id, Cancelled, Counts, DurableBackend, Put, PutMode, When};
use super::store::contained::Store;
use super::store::envelope::{self, IdGen, Payload};
use super::store::error::DurableError;
#[cfg(any(feature = "postgres", feature = "sqlite"))]
use super::store::tx::InTransaction;
use super::take::delivery::{ms_to_time, Delivery};
use super::take::options::QueueOptions;
use super::take::settle::{self, Verb};
use super::take::taker::Taker;

/// What [`DurableQueue::remove`] found.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedpool::durable::{DurableQueue, MemoryBackend, Removed};
///
/// let queue: DurableQueue<u64> = DurableQueue::new(MemoryBackend::new());
/// queue.put("order-42", &42, Duration::from_secs(1800))?;
/// match queue.remove("order-42")? {
///     Removed::Pending(order) => println!("timeout of order {order} cancelled"),
///     Removed::InFlight => println!("too late: a consumer is closing it now"),
///     Removed::Dead(order) => println!("order {order} had failed for good"),
///     Removed::NotFound => println!("nothing to cancel"),
/// }
/// # Ok::<(), schedpool::durable::DurableError>(())
/// ```
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
    store: Store,
    taker: Arc<Taker>,
    ids: Arc<IdGen>,
    _values: PhantomData<fn(T) -> T>,
}

impl<T> Clone for DurableQueue<T> {
    fn clone(&self) -> Self {
        DurableQueue {
            store: self.store.clone(),
            taker: self.taker.clone(),
            ids: self.ids.clone(),
            _values: PhantomData,
        }
    }
}

impl<T: Payload> DurableQueue<T> {
    /// A queue on `backend` with the default [`QueueOptions`].
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::durable::{DurableQueue, MemoryBackend};
    ///
    /// // In memory for tests; RedisBackend or PostgresBackend for a fleet.
    /// let queue: DurableQueue<u64> = DurableQueue::new(MemoryBackend::new());
    /// assert!(queue.is_empty()?);
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn new(backend: impl DurableBackend) -> Self {
        Self::with_options(backend, QueueOptions::default()).expect("the default options are valid")
    }

    /// A queue on `backend` with `opts`.
    ///
    /// # Errors
    ///
    /// [`DurableError::Config`] when a lease is under 3 ms or `max_block`
    /// is zero.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableQueue, MemoryBackend, QueueOptions};
    ///
    /// let opts = QueueOptions {
    ///     lease: Duration::from_secs(120), // a killed holder's items come back after 2 min
    ///     max_attempts: 3,                 // then they are dead-lettered
    ///     ..QueueOptions::default()
    /// };
    /// let queue: DurableQueue<u64> = DurableQueue::with_options(MemoryBackend::new(), opts)?;
    /// assert_eq!(queue.options().max_attempts, 3);
    ///
    /// let too_short = QueueOptions { lease: Duration::from_millis(1), ..opts };
    /// let err = DurableQueue::<u64>::with_options(MemoryBackend::new(), too_short).unwrap_err();
    /// assert!(err.is_config());
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
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
        let store = Store::new(backend);
        Ok(DurableQueue {
            taker: Arc::new(Taker::new(store.clone(), opts)),
            store,
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
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ManualClock;
    /// use schedpool::durable::{DurableQueue, MemoryBackend, Put};
    ///
    /// let clock = ManualClock::new();
    /// let queue: DurableQueue<u64> = DurableQueue::new(MemoryBackend::with_clock(clock.clone()));
    /// let put = queue.put("order-42", &42, Duration::from_secs(1800))?;
    /// assert!(matches!(put, Put::Inserted { .. }));
    /// // The same id again replaces it: a new value and a new deadline.
    /// let again = queue.put("order-42", &43, Duration::from_secs(3600))?;
    /// assert!(matches!(again, Put::Replaced { .. }));
    /// assert_eq!(queue.len()?, 1);
    ///
    /// clock.advance(Duration::from_secs(1800));
    /// assert!(queue.poll()?.is_none(), "moved to one hour");
    /// clock.advance(Duration::from_secs(1800));
    /// assert_eq!(*queue.poll()?.expect("due").value(), 43);
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
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
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableQueue, MemoryBackend, Put};
    ///
    /// let queue: DurableQueue<u64> = DurableQueue::new(MemoryBackend::new());
    /// // Every instance registers the same reminder at start-up: only the first lands.
    /// let first = queue.put_if_absent("daily-digest", &1, Duration::from_secs(60))?;
    /// let second = queue.put_if_absent("daily-digest", &2, Duration::from_secs(60))?;
    /// assert!(matches!(first, Put::Inserted { .. }));
    /// assert_eq!(second, Put::Exists);
    /// assert_eq!(queue.len()?, 1);
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
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
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// use schedpool::durable::{DurableQueue, MemoryBackend};
    ///
    /// let queue: DurableQueue<u64> = DurableQueue::new(MemoryBackend::new());
    /// let trial_ends = SystemTime::now() + Duration::from_secs(14 * 24 * 3600);
    /// let put = queue.put_at("trial-7", &7, trial_ends)?;
    /// assert!(put.deadline_ms().is_some());
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
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
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::durable::{DurableQueue, MemoryBackend};
    ///
    /// let queue: DurableQueue<u64> = DurableQueue::new(MemoryBackend::new());
    /// // Due one minute from now by the store's clock, whatever this machine's says.
    /// let at = queue.server_time_ms()? + 60_000;
    /// let put = queue.put_at_server_ms("invoice-3", &3, at)?;
    /// assert_eq!(put.deadline_ms(), Some(at));
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn put_at_server_ms(&self, id: &str, value: &T, at_ms: u64) -> Result<Put, DurableError> {
        self.put_with(id, value, When::AtServerMs(at_ms), PutMode::Replace)
    }

    /// Puts `value` under a generated id (fixed-width, time-ordered within
    /// this process) and returns the id.
    ///
    /// # Errors
    ///
    /// As for [`put`](Self::put).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableQueue, MemoryBackend};
    ///
    /// let queue: DurableQueue<String> = DurableQueue::new(MemoryBackend::new());
    /// let first = queue.push(&"resize image 1".to_string(), Duration::ZERO)?;
    /// let second = queue.push(&"resize image 2".to_string(), Duration::ZERO)?;
    /// assert_ne!(first, second);
    /// // Equal deadlines come out in id order, so in push order.
    /// let d = queue.take()?.expect("open");
    /// assert_eq!(d.id(), first);
    /// d.ack()?;
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn push(&self, value: &T, delay: Duration) -> Result<String, DurableError> {
        let id = self.ids.next();
        self.put(&id, value, delay)?;
        Ok(id)
    }

    /// Generates an id as [`push`](Self::push) does, without putting.
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::durable::{DurableQueue, MemoryBackend};
    ///
    /// let queue: DurableQueue<u64> = DurableQueue::new(MemoryBackend::new());
    /// let (a, b) = (queue.next_id(), queue.next_id());
    /// assert!(a < b, "time-ordered within this process");
    /// assert_eq!(a.len(), b.len(), "fixed width");
    /// ```
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
        self.store.put(id, &sealed, when, mode)
    }

    /// The stored bytes of `value` under `id`, after checking the id.
    fn seal(id: &str, value: &T) -> Result<Vec<u8>, DurableError> {
        check_id(id)?;
        envelope::seal("", None, value)
    }

    /// Removes the item `id` wherever it is, in O(log n).
    ///
    /// # Errors
    ///
    /// [`DurableError`] on a store failure, or [`DurableError::Format`] when
    /// the removed value does not decode (it is removed all the same).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableQueue, MemoryBackend, Removed};
    ///
    /// let queue: DurableQueue<u64> = DurableQueue::new(MemoryBackend::new());
    /// queue.put("order-42", &42, Duration::from_secs(1800))?;
    /// // Paid: cancel the timeout, wherever it is.
    /// assert_eq!(queue.remove("order-42")?, Removed::Pending(42));
    /// assert_eq!(queue.remove("order-42")?, Removed::NotFound);
    ///
    /// queue.put("order-43", &43, Duration::ZERO)?;
    /// let held = queue.take()?.expect("open");
    /// assert_eq!(queue.remove("order-43")?, Removed::InFlight);
    /// assert!(held.ack().unwrap_err().is_lease_lost(), "its holder is fenced off");
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn remove(&self, id: &str) -> Result<Removed<T>, DurableError> {
        Self::removed(id, self.store.cancel(id)?)
    }

    /// What a cancel of `id` found, decoded.
    fn removed(id: &str, found: Cancelled) -> Result<Removed<T>, DurableError> {
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
    ///
    /// # Examples
    ///
    /// A consumer loop, which ends when the queue is closed:
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableQueue, MemoryBackend};
    ///
    /// let queue: DurableQueue<u64> = DurableQueue::new(MemoryBackend::new());
    /// let consumer = {
    ///     let queue = queue.clone();
    ///     std::thread::spawn(move || -> Result<Vec<u64>, schedpool::durable::DurableError> {
    ///         let mut closed = Vec::new();
    ///         while let Some(delivery) = queue.take()? {
    ///             closed.push(*delivery.value()); // close the order, then:
    ///             delivery.ack()?;
    ///         }
    ///         Ok(closed)
    ///     })
    /// };
    /// queue.put("order-1", &1, Duration::from_millis(5))?;
    /// while !queue.is_empty()? {
    ///     std::thread::sleep(Duration::from_millis(1));
    /// }
    /// queue.close();
    /// assert_eq!(consumer.join().unwrap()?, [1]);
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn take(&self) -> Result<Option<Delivery<T>>, DurableError> {
        self.take_until(None)
    }

    /// One claim attempt: a due item, or `None`. Never blocks on the store
    /// beyond one round trip.
    ///
    /// # Errors
    ///
    /// [`DurableError`] when the claim failed.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ManualClock;
    /// use schedpool::durable::{DurableQueue, MemoryBackend};
    ///
    /// let clock = ManualClock::new();
    /// let queue: DurableQueue<u64> = DurableQueue::new(MemoryBackend::with_clock(clock.clone()));
    /// queue.put("order-42", &42, Duration::from_secs(1800))?;
    /// assert!(queue.poll()?.is_none(), "not due: poll does not wait");
    /// clock.advance(Duration::from_secs(1800));
    /// let delivery = queue.poll()?.expect("due now");
    /// assert_eq!((delivery.id(), *delivery.value()), ("order-42", 42));
    /// delivery.ack()?;
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn poll(&self) -> Result<Option<Delivery<T>>, DurableError> {
        self.take_until(Some(Instant::now()))
    }

    /// Waits at most `timeout` for a due item.
    ///
    /// # Errors
    ///
    /// The store's error when it could not be reached until `timeout`
    /// passed.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableQueue, MemoryBackend};
    ///
    /// let queue: DurableQueue<u64> = DurableQueue::new(MemoryBackend::new());
    /// queue.put("soon", &1, Duration::from_millis(5))?;
    /// let delivery = queue.poll_timeout(Duration::from_secs(5))?.expect("due within 5 s");
    /// delivery.ack()?;
    /// assert!(queue.poll_timeout(Duration::from_millis(5))?.is_none(), "nothing more");
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
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
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableQueue, MemoryBackend};
    ///
    /// let queue: DurableQueue<u64> = DurableQueue::new(MemoryBackend::new());
    /// queue.put("a", &1, Duration::ZERO)?;
    /// queue.put("b", &2, Duration::ZERO)?;
    /// queue.put("later", &3, Duration::from_secs(60))?;
    /// let due = queue.drain_expired()?;
    /// assert_eq!(due.len(), 2);
    /// for delivery in due {
    ///     delivery.ack()?;
    /// }
    /// assert_eq!(queue.len()?, 1);
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
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
                        self.taker.leases.forget(lease);
                    }
                    // Best effort: if this fails, the lease expires and the
                    // item is redelivered, then dead-lettered again.
                    let why = err.to_string();
                    let bury = Verb::Bury(Some(&why));
                    let _ = settle::one(&self.store, &claimed.id, claimed.token, bury);
                }
            }
        }
    }

    /// The earliest pending deadline, by the store's clock.
    ///
    /// # Errors
    ///
    /// [`DurableError`] on a store failure.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, UNIX_EPOCH};
    /// use schedpool::durable::{DurableQueue, MemoryBackend};
    ///
    /// let queue: DurableQueue<u64> = DurableQueue::new(MemoryBackend::new());
    /// assert_eq!(queue.peek_deadline()?, None);
    /// let put = queue.put("a", &1, Duration::from_secs(60))?;
    /// let at = UNIX_EPOCH + Duration::from_millis(put.deadline_ms().unwrap());
    /// assert_eq!(queue.peek_deadline()?, Some(at));
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn peek_deadline(&self) -> Result<Option<SystemTime>, DurableError> {
        Ok(self.store.peek_deadline_ms()?.map(ms_to_time))
    }

    /// Pending + in flight.
    ///
    /// # Errors
    ///
    /// [`DurableError`] on a store failure.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableQueue, MemoryBackend};
    ///
    /// let queue: DurableQueue<u64> = DurableQueue::new(MemoryBackend::new());
    /// queue.put("a", &1, Duration::ZERO)?;
    /// queue.put("b", &2, Duration::from_secs(60))?;
    /// let held = queue.take()?.expect("open");
    /// assert_eq!(queue.len()?, 2, "one pending, one in flight");
    /// held.ack()?;
    /// assert_eq!(queue.len()?, 1);
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn len(&self) -> Result<usize, DurableError> {
        let c = self.counts()?;
        Ok(c.pending + c.in_flight)
    }

    /// True when nothing is pending or in flight.
    ///
    /// # Errors
    ///
    /// [`DurableError`] on a store failure.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableQueue, MemoryBackend};
    ///
    /// let queue: DurableQueue<u64> = DurableQueue::new(MemoryBackend::new());
    /// assert!(queue.is_empty()?);
    /// queue.put("a", &1, Duration::from_secs(60))?;
    /// assert!(!queue.is_empty()?);
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn is_empty(&self) -> Result<bool, DurableError> {
        Ok(self.len()? == 0)
    }

    /// Pending, in-flight and dead-lettered counts.
    ///
    /// # Errors
    ///
    /// [`DurableError`] on a store failure.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableQueue, MemoryBackend};
    ///
    /// let queue: DurableQueue<u64> = DurableQueue::new(MemoryBackend::new());
    /// queue.put("ok", &1, Duration::ZERO)?;
    /// queue.put("bad", &2, Duration::ZERO)?;
    /// queue.put("later", &3, Duration::from_secs(60))?;
    /// let (first, second) = (queue.take()?.unwrap(), queue.take()?.unwrap());
    /// first.dead_letter()?;
    /// let c = queue.counts()?;
    /// assert_eq!((c.pending, c.in_flight, c.dead), (1, 1, 1));
    /// second.ack()?;
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn counts(&self) -> Result<Counts, DurableError> {
        self.store.counts()
    }

    /// The store's clock, in ms since the Unix epoch.
    ///
    /// # Errors
    ///
    /// [`DurableError`] on a store failure.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::ManualClock;
    /// use schedpool::durable::{DurableQueue, MemoryBackend};
    ///
    /// let clock = ManualClock::new();
    /// let queue: DurableQueue<u64> = DurableQueue::new(MemoryBackend::with_clock(clock.clone()));
    /// let before = queue.server_time_ms()?;
    /// clock.advance(Duration::from_secs(1));
    /// assert_eq!(queue.server_time_ms()?, before + 1000);
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn server_time_ms(&self) -> Result<u64, DurableError> {
        self.store.server_time_ms()
    }

    /// Closes this handle (and its clones): blocked `take`s return `None` at
    /// once, claimed items not yet handed out are released (with the store
    /// unreachable, only until a release fails: the rest are left to their
    /// leases), and nothing more is claimed. The stored items are untouched, and deliveries already
    /// handed out can still be acked (their heartbeats go on).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableQueue, MemoryBackend};
    ///
    /// let queue: DurableQueue<u64> = DurableQueue::new(MemoryBackend::new());
    /// queue.put("a", &1, Duration::ZERO)?;
    /// queue.put("b", &2, Duration::from_secs(60))?;
    /// let held = queue.take()?.expect("open");
    /// let waiter = { let q = queue.clone(); std::thread::spawn(move || q.take()) };
    /// queue.close();
    /// assert!(waiter.join().unwrap()?.is_none(), "a blocked take returns None");
    /// held.ack()?; // still acked after close
    /// assert_eq!(queue.len()?, 1, "stored items are untouched");
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn close(&self) {
        self.taker.close();
    }

    /// True after [`close`](Self::close).
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::durable::{DurableQueue, MemoryBackend};
    ///
    /// let queue: DurableQueue<u64> = DurableQueue::new(MemoryBackend::new());
    /// let clone = queue.clone();
    /// queue.close();
    /// assert!(clone.is_closed(), "clones share the handle");
    /// ```
    pub fn is_closed(&self) -> bool {
        self.taker.is_closed()
    }

    /// The options this queue was made with.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableQueue, MemoryBackend, QueueOptions};
    ///
    /// let queue: DurableQueue<u64> = DurableQueue::new(MemoryBackend::new());
    /// assert_eq!(queue.options(), QueueOptions::default());
    /// assert_eq!(queue.options().lease, Duration::from_secs(30));
    /// ```
    pub fn options(&self) -> QueueOptions {
        self.taker.opts
    }

    /// The store, for the dead-letter verbs (`dead_letters.rs`).
    pub(super) fn store(&self) -> &Store {
        &self.store
    }
}

impl<T> fmt::Debug for DurableQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DurableQueue")
            .field("taker", &self.taker)
            .finish()
    }
}

// ===== impl DurableQueue (feature redis) =====

#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
impl<T: Payload> DurableQueue<T> {
    /// Connects a queue to Redis at `url` under `name`, with default
    /// [`RedisOptions`](super::RedisOptions) and [`QueueOptions`].
    ///
    /// # Errors
    ///
    /// As for [`RedisBackend::connect_with`](super::RedisBackend::connect_with).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use schedpool::durable::RedisDelayQueue;
    ///
    /// let queue: RedisDelayQueue<u64> = RedisDelayQueue::connect("redis://127.0.0.1:6379/0", "orders")?;
    /// queue.put("order-42", &42, Duration::from_secs(30 * 60))?;
    /// while let Some(delivery) = queue.take()? {
    ///     println!("closing order {}", delivery.value());
    ///     delivery.ack()?;
    /// }
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn connect(url: &str, name: &str) -> Result<Self, DurableError> {
        let backend = super::store::redis::RedisBackend::connect(url, name)?;
        Self::with_options(backend, QueueOptions::default())
    }
}

// ===== impl DurableQueue (features postgres, sqlite) =====

#[cfg(any(feature = "postgres", feature = "sqlite"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "postgres", feature = "sqlite"))))]
impl<T: Payload> DurableQueue<T> {
    /// [`put`](Self::put) in the caller's transaction `tx` (a
    /// `postgres::Transaction` on PostgreSQL, a `rusqlite::Transaction` on
    /// the queue's SQLite file; see [`InTransaction`]): the item exists
    /// only if `tx` commits.
    ///
    /// # Errors
    ///
    /// [`DurableError::Config`] when `tx` is not on this queue's store;
    /// otherwise the store's error, after which the caller's transaction
    /// may be aborted and must be rolled back.
    ///
    /// # Examples
    ///
    /// On SQLite (feature `sqlite`): the order and its timeout in one
    /// `rusqlite` transaction on the queue's file.
    ///
    #[cfg_attr(feature = "sqlite", doc = "```")]
    #[cfg_attr(not(feature = "sqlite"), doc = "```ignore")]
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableQueue, SqliteBackend};
    ///
    /// let dir = std::env::temp_dir().join(format!("schedpool-doc-queue-in-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let file = dir.join("shop.db");
    /// let queue: DurableQueue<u64> = DurableQueue::new(SqliteBackend::open(&file, "orders")?);
    /// let mut db = rusqlite::Connection::open(&file)?;
    /// db.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, state TEXT)", [])?;
    /// let mut tx = db.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    /// tx.execute("INSERT INTO orders (id, state) VALUES (42, 'unpaid')", [])?;
    /// queue.put_in(&mut tx, "order-42", &42, Duration::from_secs(30 * 60))?;
    /// tx.rollback()?; // neither the order nor its timeout
    /// assert_eq!(queue.counts()?.pending, 0);
    /// # drop(queue);
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// On PostgreSQL (feature `postgres`; `no_run`: it needs a server):
    ///
    #[cfg_attr(feature = "postgres", doc = "```no_run")]
    #[cfg_attr(not(feature = "postgres"), doc = "```ignore")]
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableQueue, PostgresBackend};
    ///
    /// let params = "host=127.0.0.1 user=app dbname=shop";
    /// let queue: DurableQueue<u64> = DurableQueue::new(PostgresBackend::connect(params, "orders")?);
    /// let mut db = postgres::Client::connect(params, postgres::NoTls)?;
    /// let mut tx = db.transaction()?;
    /// tx.execute("INSERT INTO orders (id, state) VALUES (42, 'unpaid')", &[])?;
    /// queue.put_in(&mut tx, "order-42", &42, Duration::from_secs(30 * 60))?;
    /// tx.commit()?; // the order and its timeout, or neither
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn put_in<C: InTransaction>(
        &self,
        tx: &mut C,
        id: &str,
        value: &T,
        delay: Duration,
    ) -> Result<Put, DurableError> {
        let sealed = Self::seal(id, value)?;
        tx.put_envelope(
            &*self.store,
            "put_in",
            id,
            &sealed,
            When::After(delay),
            PutMode::Replace,
        )
    }

    /// [`put_if_absent`](Self::put_if_absent) in the caller's transaction.
    ///
    /// # Errors
    ///
    /// As for [`put_in`](Self::put_in).
    ///
    /// # Examples
    ///
    /// On PostgreSQL (feature `postgres`; `no_run`: it needs a server):
    ///
    #[cfg_attr(feature = "postgres", doc = "```no_run")]
    #[cfg_attr(not(feature = "postgres"), doc = "```ignore")]
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableQueue, PostgresBackend};
    ///
    /// let params = "host=127.0.0.1 user=app dbname=shop";
    /// let queue: DurableQueue<u64> = DurableQueue::new(PostgresBackend::connect(params, "orders")?);
    /// let mut db = postgres::Client::connect(params, postgres::NoTls)?;
    /// let mut tx = db.transaction()?;
    /// queue.put_if_absent_in(&mut tx, "order-42", &42, Duration::from_secs(30 * 60))?;
    /// tx.commit()?;
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn put_if_absent_in<C: InTransaction>(
        &self,
        tx: &mut C,
        id: &str,
        value: &T,
        delay: Duration,
    ) -> Result<Put, DurableError> {
        let sealed = Self::seal(id, value)?;
        tx.put_envelope(
            &*self.store,
            "put_if_absent_in",
            id,
            &sealed,
            When::After(delay),
            PutMode::IfAbsent,
        )
    }

    /// [`remove`](Self::remove) in the caller's transaction.
    ///
    /// # Errors
    ///
    /// As for [`put_in`](Self::put_in), and [`DurableError::Format`] when
    /// the removed value does not decode.
    ///
    /// # Examples
    ///
    /// On PostgreSQL (feature `postgres`; `no_run`: it needs a server):
    ///
    #[cfg_attr(feature = "postgres", doc = "```no_run")]
    #[cfg_attr(not(feature = "postgres"), doc = "```ignore")]
    /// use schedpool::durable::{DurableQueue, PostgresBackend, Removed};
    ///
    /// let params = "host=127.0.0.1 user=app dbname=shop";
    /// let queue: DurableQueue<u64> = DurableQueue::new(PostgresBackend::connect(params, "orders")?);
    /// let mut db = postgres::Client::connect(params, postgres::NoTls)?;
    /// let mut tx = db.transaction()?;
    /// tx.execute("UPDATE orders SET state = 'paid' WHERE id = 42", &[])?;
    /// let removed = queue.remove_in(&mut tx, "order-42")?;
    /// tx.commit()?; // paid and no timeout, or neither
    /// assert!(matches!(removed, Removed::Pending(42) | Removed::InFlight | Removed::NotFound));
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn remove_in<C: InTransaction>(
        &self,
        tx: &mut C,
        id: &str,
    ) -> Result<Removed<T>, DurableError> {
        let found = tx.cancel_id(&*self.store, "remove_in", id)?;
        Self::removed(id, found)
    }
}
