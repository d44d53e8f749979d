//! Dead letters as users see them: [`DeadLetter`], and the verbs that read,
//! requeue and purge them, on [`DurableQueue`] and [`DurablePool`] (an impl
//! block of each, above both).
//!
//! Invariants:
//!
//! - Requeue and purge are one atomic step in the store each
//!   ([`DurableBackend::requeue`](super::DurableBackend::requeue),
//!   [`purge`](super::DurableBackend::purge)): of two processes racing on
//!   one dead letter exactly one wins, and neither touches an item that is
//!   pending or in flight under the same id.
//! - Reading never fails on what an item holds: a dead letter whose bytes
//!   do not open or decode is listed with its `value` as the error.

use std::time::SystemTime;

use super::pool::calendar_def;
use super::pool::durable_pool::DurablePool;
use super::queue::DurableQueue;
use super::store::backend::Buried;
use super::store::envelope::{self, Payload};
use super::store::error::DurableError;
use super::take::delivery::ms_to_time;

/// A dead-lettered item: what it was, how often it ran, why and when it
/// died.
///
/// From [`DurableQueue::dead_letters`] `value` is the decoded value; from
/// [`DurablePool::dead_letters`] (whose kinds have different types) it is
/// the payload's bytes, which [`decode`](DeadLetter::decode) reads.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedpool::durable::{DurablePool, MemoryBackend};
///
/// let pool = DurablePool::builder(MemoryBackend::new())
///     .max_attempts(1)
///     .handler("charge", |amount: &u64, _job| Err(format!("card declined for {amount}").into()))
///     .build()?;
/// pool.schedule("charge", "order-42", &1999u64, Duration::ZERO)?;
/// assert!(pool.wait_idle(Duration::from_secs(5)));
///
/// let dead = pool.dead_letters(10)?;
/// assert_eq!(dead[0].id, "order-42");
/// assert_eq!(dead[0].kind, "charge");
/// assert_eq!(dead[0].attempts, 1);
/// assert_eq!(dead[0].error.as_deref(), Some("card declined for 1999"));
/// assert_eq!(dead[0].decode::<u64>()?, 1999);
/// // Fixed the card: run it again (or `purge` to drop it).
/// assert!(pool.requeue("order-42")?);
/// # pool.shutdown();
/// # Ok::<(), schedpool::durable::DurableError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct DeadLetter<T> {
    /// The item's id.
    pub id: String,
    /// Its kind (the pool's handler name; empty for items put through
    /// [`DurableQueue`], or when the stored bytes do not open).
    pub kind: String,
    /// How many times it was claimed.
    pub attempts: u32,
    /// The last error, as the handler returned it (`Err`: its `Display`
    /// text; a panic: `panicked: ` and the panic message), or the decode
    /// error of an item that did not decode; at most
    /// [`MAX_ERROR_BYTES`](super::MAX_ERROR_BYTES) bytes. `None` when the
    /// item died without one: its lease expired on its last allowed attempt
    /// (the holder crashed or stalled: earlier attempts' errors are not
    /// kept), [`Delivery::dead_letter`](super::Delivery::dead_letter) gave
    /// none, the store found its entry corrupt, or a version before this
    /// one buried it.
    pub error: Option<String>,
    /// When it died, by the store's clock (ms since the Unix epoch).
    pub died_ms: u64,
    /// The value (or, from a pool, the payload's bytes), or why it could
    /// not be read.
    pub value: Result<T, DurableError>,
}

impl<T> DeadLetter<T> {
    /// [`died_ms`](Self::died_ms) as a `SystemTime`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, UNIX_EPOCH};
    /// use schedpool::durable::{DurableQueue, MemoryBackend};
    ///
    /// let queue: DurableQueue<u64> = DurableQueue::new(MemoryBackend::new());
    /// queue.put("a", &1, Duration::ZERO)?;
    /// queue.take()?.expect("open").dead_letter()?;
    /// let dead = &queue.dead_letters(1)?[0];
    /// assert_eq!(dead.died_at(), UNIX_EPOCH + Duration::from_millis(dead.died_ms));
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn died_at(&self) -> SystemTime {
        ms_to_time(self.died_ms)
    }

    /// Reads one stored item: its kind and payload from the envelope, the
    /// value by `read`.
    pub(crate) fn read(
        buried: Buried,
        read: impl FnOnce(&str, &[u8]) -> Result<T, DurableError>,
    ) -> Self {
        let (kind, value) = match envelope::open(&buried.envelope) {
            Ok(env) => {
                // A calendar schedule's dead letter shows its handler's kind and value.
                let (kind, payload) = calendar_def::user_view(&env);
                (kind.to_string(), read(&buried.id, payload))
            }
            Err(err) => (String::new(), Err(err)),
        };
        DeadLetter {
            id: buried.id,
            kind,
            attempts: buried.attempts,
            error: buried.error,
            died_ms: buried.died_ms,
            value,
        }
    }
}

impl DeadLetter<Vec<u8>> {
    /// Decodes the payload bytes of a pool's dead letter as `U` (the type
    /// its kind's handler takes).
    ///
    /// # Errors
    ///
    /// [`DurableError::Format`] when the bytes do not decode as `U`, or
    /// the stored item did not open.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurablePool, MemoryBackend};
    ///
    /// let pool = DurablePool::builder(MemoryBackend::new())
    ///     .threads(1)
    ///     .max_attempts(1)
    ///     .handler("ship", |_: &String, _job| Err("no courier".into()))
    ///     .build()?;
    /// pool.schedule("ship", "parcel-5", &"Berlin".to_string(), Duration::ZERO)?;
    /// assert!(pool.wait_idle(Duration::from_secs(5)));
    /// let dead = &pool.dead_letters(1)?[0];
    /// assert_eq!(dead.decode::<String>()?, "Berlin");
    /// assert!(dead.decode::<u64>().unwrap_err().is_format(), "not the kind's type");
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn decode<U: Payload>(&self) -> Result<U, DurableError> {
        let bytes = self.value.as_ref().map_err(Clone::clone)?;
        envelope::decode(&self.id, bytes)
    }
}

// ===== impl DurableQueue =====

impl<T: Payload> DurableQueue<T> {
    /// Up to `max` dead-lettered items, oldest death first, with their
    /// values (an undecodable one as its error), attempts, last error and
    /// time of death. [`requeue`](Self::requeue) one to run it again,
    /// [`purge`](Self::purge) to drop it.
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
    /// queue.put("order-42", &42, Duration::ZERO)?;
    /// let delivery = queue.take()?.expect("open");
    /// delivery.dead_letter_with("the warehouse refused it")?;
    ///
    /// let dead = &queue.dead_letters(10)?[0];
    /// assert_eq!((dead.id.as_str(), dead.attempts), ("order-42", 1));
    /// assert_eq!(dead.error.as_deref(), Some("the warehouse refused it"));
    /// assert_eq!(dead.value, Ok(42));
    /// assert!(queue.requeue("order-42")?);
    /// let again = queue.take()?.expect("open");
    /// assert_eq!((*again.value(), again.attempt()), (42, 1));
    /// again.ack()?;
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn dead_letters(&self, max: usize) -> Result<Vec<DeadLetter<T>>, DurableError> {
        let buried = self.store().dead_letters(max)?;
        Ok(buried
            .into_iter()
            .map(|b| DeadLetter::read(b, |id, payload| envelope::decode(id, payload)))
            .collect())
    }

    /// Moves the dead letter `id` back to the queue, due now by the store's
    /// clock, with its attempts reset (it gets the full `max_attempts`
    /// again) and its recorded error dropped: `true` when `id` was a dead
    /// letter. One atomic step in the store: of several processes
    /// requeueing the same id at once, exactly one gets `true`, and an item
    /// pending or in flight under `id` is left alone (`false`).
    ///
    /// # Errors
    ///
    /// [`DurableError::Format`] for a corrupt entry with no bytes to
    /// requeue (purge it); [`DurableError::Unavailable`] when the store
    /// could not be reached, or a retry after a lost reply found the dead
    /// letter gone (the first attempt may have requeued it: the item is
    /// then pending).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableQueue, MemoryBackend};
    ///
    /// let queue: DurableQueue<u64> = DurableQueue::new(MemoryBackend::new());
    /// queue.put("order-42", &42, Duration::ZERO)?;
    /// queue.take()?.expect("open").dead_letter_with("the API was down")?;
    /// // The API is back:
    /// assert!(queue.requeue("order-42")?);
    /// assert!(!queue.requeue("order-42")?, "not a dead letter any more");
    /// assert_eq!(queue.counts()?.pending, 1);
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn requeue(&self, id: &str) -> Result<bool, DurableError> {
        self.store().requeue(id)
    }

    /// Deletes the dead letter `id`: `true` when it was one. It is never
    /// delivered. An item pending or in flight under `id` is left alone
    /// (`false`); [`remove`](Self::remove) removes an id wherever it is.
    ///
    /// # Errors
    ///
    /// [`DurableError::Unavailable`] when the store could not be reached,
    /// or a retry after a lost reply found the dead letter gone (the first
    /// attempt may have purged it).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableQueue, MemoryBackend};
    ///
    /// let queue: DurableQueue<u64> = DurableQueue::new(MemoryBackend::new());
    /// queue.put("spam-1", &1, Duration::ZERO)?;
    /// queue.take()?.expect("open").dead_letter()?;
    /// assert!(queue.purge("spam-1")?);
    /// assert_eq!(queue.counts()?.dead, 0);
    /// queue.put("live", &2, Duration::from_secs(60))?;
    /// assert!(!queue.purge("live")?, "a pending item is left alone");
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn purge(&self, id: &str) -> Result<bool, DurableError> {
        self.store().purge(id)
    }
}

// ===== impl DurablePool =====

impl DurablePool {
    /// Up to `max` dead-lettered items (of every kind), oldest death first,
    /// with their payload bytes ([`DeadLetter::decode`] reads them),
    /// attempts, last error (the handler's) and time of death.
    ///
    /// # Errors
    ///
    /// The store's error.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurablePool, MemoryBackend};
    ///
    /// let pool = DurablePool::builder(MemoryBackend::new())
    ///     .threads(1)
    ///     .max_attempts(1)
    ///     .handler("charge", |_: &u64, _job| Err("card declined".into()))
    ///     .build()?;
    /// pool.schedule("charge", "order-42", &1999u64, Duration::ZERO)?;
    /// assert!(pool.wait_idle(Duration::from_secs(5)));
    /// for dead in pool.dead_letters(100)? {
    ///     println!("{} ({}): {:?} after {} attempt(s)", dead.id, dead.kind, dead.error, dead.attempts);
    /// }
    /// assert_eq!(pool.dead_letters(100)?.len(), 1);
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn dead_letters(&self, max: usize) -> Result<Vec<DeadLetter<Vec<u8>>>, DurableError> {
        let buried = self.store().dead_letters(max)?;
        Ok(buried
            .into_iter()
            .map(|b| DeadLetter::read(b, |_, payload| Ok(payload.to_vec())))
            .collect())
    }

    /// Moves the dead letter `id` back to pending, due now by the store's
    /// clock, with its attempts reset and its error dropped: `true` when
    /// `id` was a dead letter. A periodic chain resumes from now. As
    /// [`DurableQueue::requeue`]: atomic, and exactly one of racing
    /// processes wins.
    ///
    /// # Errors
    ///
    /// As for [`DurableQueue::requeue`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use schedpool::durable::{DurablePool, MemoryBackend};
    ///
    /// let api_up = Arc::new(AtomicBool::new(false));
    /// let up = api_up.clone();
    /// let pool = DurablePool::builder(MemoryBackend::new())
    ///     .threads(1)
    ///     .max_attempts(1)
    ///     .handler("notify", move |_: &(), _job| {
    ///         if up.load(Ordering::SeqCst) { Ok(()) } else { Err("API down".into()) }
    ///     })
    ///     .build()?;
    /// pool.schedule("notify", "n-1", &(), Duration::ZERO)?;
    /// assert!(pool.wait_idle(Duration::from_secs(5)));
    /// assert_eq!(pool.counts()?.dead, 1);
    ///
    /// api_up.store(true, Ordering::SeqCst);
    /// assert!(pool.requeue("n-1")?);
    /// assert!(pool.wait_idle(Duration::from_secs(5)));
    /// assert_eq!(pool.stats().succeeded, 1);
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn requeue(&self, id: &str) -> Result<bool, DurableError> {
        self.store().requeue(id)
    }

    /// Deletes the dead letter `id`: `true` when it was one; it never runs.
    /// An item pending or in flight under `id` is left alone;
    /// [`cancel`](Self::cancel) removes an id wherever it is.
    ///
    /// # Errors
    ///
    /// As for [`DurableQueue::purge`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurablePool, MemoryBackend};
    ///
    /// let pool = DurablePool::builder(MemoryBackend::new())
    ///     .threads(1)
    ///     .max_attempts(1)
    ///     .handler("import", |_: &(), _job| Err("malformed file".into()))
    ///     .build()?;
    /// pool.schedule("import", "upload-3", &(), Duration::ZERO)?;
    /// assert!(pool.wait_idle(Duration::from_secs(5)));
    /// assert!(pool.purge("upload-3")?, "dropped for good");
    /// assert_eq!(pool.counts()?.dead, 0);
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn purge(&self, id: &str) -> Result<bool, DurableError> {
        self.store().purge(id)
    }
}
