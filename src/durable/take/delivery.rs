//! A claimed item in the hands of its holder: the value, its lease, and the
//! verbs that settle it.
//!
//! Invariant: from creation until it is settled (ack, nack, dead-letter,
//! reschedule), handed off (a pool's ack, to its acker) or dropped, a
//! delivery's lease is registered with the heartbeat thread; dropping it
//! unsettled hands it to that thread, which releases the item at once. No
//! verb does I/O in `Drop`.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::durable::store::backend::{Nack, Repeat};
use crate::durable::store::error::DurableError;

use super::lease::{LeaseCell, LeaseRef};
use super::leases::Leases;
use super::settle::Verb;
use super::taker::Taken;

/// An item claimed from a durable queue, leased to this holder.
///
/// Settle it with [`ack`](Delivery::ack) once its work is done, or
/// [`nack`](Delivery::nack) to retry it later. While it is alive its lease
/// is extended in the background; dropping it unsettled releases the item
/// to other consumers at once. If this process dies, the item comes back
/// when its lease expires: delivery is at least once, so make the side
/// effect conditional (see `docs/durable.md`).
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
/// match close_order(*delivery.value()) {
///     Ok(()) => delivery.ack()?,                               // done: removed
///     Err(_) => delivery.nack(Duration::from_secs(10))?,       // retry in 10 s
/// }
/// # fn close_order(_: u64) -> Result<(), ()> { Ok(()) }
/// # Ok::<(), schedpool::durable::DurableError>(())
/// ```
pub struct Delivery<T> {
    value: T,
    item: Meta,
    kind: String,
    repeat: Option<Repeat>,
    leases: Arc<Leases>,
    lease: LeaseRef,
    settled: bool,
}

#[derive(Debug, Clone)]
struct Meta {
    attempt: u32,
    deadline_ms: u64,
    due_ms: u64,
    claimed_ms: u64,
}

impl<T> Delivery<T> {
    /// The delivery of `taken`, whose lease is registered now unless the
    /// claim registered it already.
    pub(crate) fn new(
        taken: Taken,
        value: T,
        kind: &str,
        repeat: Option<Repeat>,
        leases: &Arc<Leases>,
    ) -> Self {
        let Taken { claimed, lease } = taken;
        let lease = lease.unwrap_or_else(|| leases.register(claimed.id, claimed.token));
        Delivery {
            value,
            item: Meta {
                attempt: claimed.attempt,
                deadline_ms: claimed.deadline_ms,
                due_ms: claimed.due_ms,
                claimed_ms: claimed.claimed_ms,
            },
            kind: kind.to_string(),
            repeat,
            leases: leases.clone(),
            lease,
            settled: false,
        }
    }

    /// The item's id.
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
    /// assert_eq!(delivery.id(), "order-42");
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn id(&self) -> &str {
        &self.lease.cell.id
    }

    /// The value.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableQueue, MemoryBackend};
    ///
    /// let queue: DurableQueue<u64> = DurableQueue::new(MemoryBackend::new());
    /// queue.put("order-42", &42, Duration::ZERO)?;
    /// assert_eq!(*queue.take()?.expect("open").value(), 42);
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn value(&self) -> &T {
        &self.value
    }

    /// The value, mutably.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableQueue, MemoryBackend};
    ///
    /// let queue: DurableQueue<String> = DurableQueue::new(MemoryBackend::new());
    /// queue.put("mail-1", &" Bob@Example.com ".to_string(), Duration::ZERO)?;
    /// let mut delivery = queue.take()?.expect("open");
    /// let address = delivery.value_mut();
    /// *address = address.trim().to_lowercase(); // a local copy: the store keeps its own
    /// assert_eq!(delivery.value(), "bob@example.com");
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn value_mut(&mut self) -> &mut T {
        &mut self.value
    }

    /// The fencing token of this claim: it grows with every claim and put
    /// of the queue. Record it with a side effect to make the effect
    /// conditional ("apply only if no higher token applied it").
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableQueue, MemoryBackend};
    ///
    /// let queue: DurableQueue<u64> = DurableQueue::new(MemoryBackend::new());
    /// queue.put("order-42", &42, Duration::ZERO)?;
    /// let first = queue.take()?.expect("open");
    /// let token = first.token();
    /// drop(first); // released unsettled: claimed again, with a higher token
    /// let second = queue.take()?.expect("open");
    /// assert!(second.token() > token);
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn token(&self) -> u64 {
        self.lease.cell.token
    }

    /// Which claim of this item this is: 1 for the first delivery.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableQueue, MemoryBackend};
    ///
    /// let queue: DurableQueue<u64> = DurableQueue::new(MemoryBackend::new());
    /// queue.put("sync-7", &7, Duration::ZERO)?;
    /// let first = queue.take()?.expect("open");
    /// assert_eq!(first.attempt(), 1);
    /// first.nack(Duration::ZERO)?; // failed: retry at once
    /// assert_eq!(queue.take()?.expect("open").attempt(), 2);
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn attempt(&self) -> u32 {
        self.item.attempt
    }

    /// The kind it was put with (the pool's handler name; empty for items
    /// put through [`DurableQueue`](crate::durable::DurableQueue)).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableQueue, MemoryBackend};
    ///
    /// let queue: DurableQueue<u64> = DurableQueue::new(MemoryBackend::new());
    /// queue.put("a", &1, Duration::ZERO)?;
    /// assert_eq!(queue.take()?.expect("open").kind(), "");
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// The scheduled time of this occurrence, by the store's clock. A retry
    /// or a redelivery keeps it.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, UNIX_EPOCH};
    /// use schedpool::durable::{DurableQueue, MemoryBackend};
    ///
    /// let queue: DurableQueue<u64> = DurableQueue::new(MemoryBackend::new());
    /// let put = queue.put("a", &1, Duration::ZERO)?;
    /// let delivery = queue.take()?.expect("open");
    /// assert_eq!(delivery.deadline(), UNIX_EPOCH + Duration::from_millis(put.deadline_ms().unwrap()));
    /// assert!(delivery.claimed_at() >= delivery.deadline(), "never early");
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn deadline(&self) -> SystemTime {
        ms_to_time(self.item.deadline_ms)
    }

    /// The store's clock when this claim was made.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, UNIX_EPOCH};
    /// use schedpool::ManualClock;
    /// use schedpool::durable::{DurableQueue, MemoryBackend};
    ///
    /// let clock = ManualClock::new();
    /// let queue: DurableQueue<u64> = DurableQueue::new(MemoryBackend::with_clock(clock.clone()));
    /// queue.put("a", &1, Duration::from_secs(10))?;
    /// clock.advance(Duration::from_secs(15));
    /// let now_ms = queue.server_time_ms()?;
    /// let delivery = queue.poll()?.expect("due");
    /// assert_eq!(delivery.claimed_at(), UNIX_EPOCH + Duration::from_millis(now_ms));
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn claimed_at(&self) -> SystemTime {
        ms_to_time(self.item.claimed_ms)
    }

    /// The scheduled time in the store's milliseconds since the Unix epoch.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableQueue, MemoryBackend};
    ///
    /// let queue: DurableQueue<u64> = DurableQueue::new(MemoryBackend::new());
    /// let put = queue.put("a", &1, Duration::ZERO)?;
    /// assert_eq!(Some(queue.take()?.expect("open").deadline_ms()), put.deadline_ms());
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn deadline_ms(&self) -> u64 {
        self.item.deadline_ms
    }

    /// The claim time in the store's milliseconds since the Unix epoch.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableQueue, MemoryBackend};
    ///
    /// let queue: DurableQueue<u64> = DurableQueue::new(MemoryBackend::new());
    /// queue.put("a", &1, Duration::ZERO)?;
    /// let delivery = queue.take()?.expect("open");
    /// assert!(delivery.claimed_ms() >= delivery.deadline_ms());
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn claimed_ms(&self) -> u64 {
        self.item.claimed_ms
    }

    /// How late the claim was by the store's clock: claim time minus the
    /// time this delivery became due (the deadline, or a retry's backoff
    /// end). Never negative: nothing is claimed early.
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
    /// queue.put("a", &1, Duration::from_secs(10))?;
    /// clock.advance(Duration::from_secs(12)); // nobody polled for 2 s
    /// assert_eq!(queue.poll()?.expect("due").lateness(), Duration::from_secs(2));
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn lateness(&self) -> Duration {
        Duration::from_millis(self.item.claimed_ms.saturating_sub(self.item.due_ms))
    }

    /// True once the store refused to extend this lease: another holder may
    /// have the item, and [`ack`](Delivery::ack) will fail.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableQueue, MemoryBackend};
    ///
    /// let queue: DurableQueue<u64> = DurableQueue::new(MemoryBackend::new());
    /// queue.put("a", &1, Duration::ZERO)?;
    /// let delivery = queue.take()?.expect("open");
    /// queue.remove("a")?; // cancelled meanwhile
    /// assert!(delivery.extend(Duration::from_secs(60)).unwrap_err().is_lease_lost());
    /// assert!(delivery.lease_lost());
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn lease_lost(&self) -> bool {
        self.lease.cell.lost()
    }

    pub(crate) fn lease_cell(&self) -> Arc<LeaseCell> {
        self.lease.cell.clone()
    }

    pub(crate) fn repeat(&self) -> Option<Repeat> {
        self.repeat
    }

    /// Completes the item: it is removed from the store.
    ///
    /// # Errors
    ///
    /// [`DurableError::LeaseLost`] when this holder no longer holds the item
    /// (its lease expired and another consumer claimed it, or it was
    /// cancelled or replaced); [`DurableError::Unavailable`] when the store
    /// cannot be reached (the item then comes back after its lease).
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
    /// // ... close order 42, then:
    /// delivery.ack()?;
    /// assert!(queue.is_empty()?);
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn ack(mut self) -> Result<(), DurableError> {
        self.settle(Verb::Ack).map(drop)
    }

    /// Gives the item back, due again after `delay` (zero: at once, for
    /// another consumer). Its deadline and attempt count are kept.
    ///
    /// # Errors
    ///
    /// As for [`ack`](Delivery::ack).
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
    /// queue.put("sms-9", &9, Duration::ZERO)?;
    /// let delivery = queue.poll()?.expect("due");
    /// delivery.nack(Duration::from_secs(30))?; // the gateway is down: retry in 30 s
    /// assert!(queue.poll()?.is_none());
    /// clock.advance(Duration::from_secs(30));
    /// assert_eq!(queue.poll()?.expect("due again").attempt(), 2);
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn nack(mut self, delay: Duration) -> Result<(), DurableError> {
        self.settle(Verb::Nack(Nack::Retry(delay))).map(drop)
    }

    /// Moves the item to the dead-letter set, with no error recorded
    /// (its [`DeadLetter::error`](crate::durable::DeadLetter::error) is `None`).
    ///
    /// # Errors
    ///
    /// As for [`ack`](Delivery::ack).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableQueue, MemoryBackend};
    ///
    /// let queue: DurableQueue<u64> = DurableQueue::new(MemoryBackend::new());
    /// queue.put("poison", &0, Duration::ZERO)?;
    /// queue.take()?.expect("open").dead_letter()?;
    /// let dead = queue.dead_letters(10)?;
    /// assert_eq!((dead[0].id.as_str(), dead[0].error.as_deref()), ("poison", None));
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn dead_letter(mut self) -> Result<(), DurableError> {
        self.settle(Verb::Bury(None)).map(drop)
    }

    /// Moves the item to the dead-letter set, recording `error`'s text
    /// (cut to [`MAX_ERROR_BYTES`](crate::durable::MAX_ERROR_BYTES)) as its
    /// [`DeadLetter::error`](crate::durable::DeadLetter::error).
    ///
    /// # Errors
    ///
    /// As for [`ack`](Delivery::ack).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableQueue, MemoryBackend};
    ///
    /// let queue: DurableQueue<String> = DurableQueue::new(MemoryBackend::new());
    /// queue.put("mail-7", &"bob@".to_string(), Duration::ZERO)?;
    /// let delivery = queue.take()?.expect("open");
    /// delivery.dead_letter_with(format_args!("not an address: {:?}", "bob@"))?;
    /// let dead = queue.dead_letters(1)?;
    /// assert_eq!(dead[0].error.as_deref(), Some("not an address: \"bob@\""));
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn dead_letter_with(mut self, error: impl fmt::Display) -> Result<(), DurableError> {
        let why = error.to_string();
        self.settle(Verb::Bury(Some(&why))).map(drop)
    }

    /// Gives the item back, due again after `delay`, without counting this
    /// claim as an attempt (see [`Nack::Defer`]).
    pub(crate) fn defer(mut self, delay: Duration) -> Result<(), DurableError> {
        self.settle(Verb::Nack(Nack::Defer(delay))).map(drop)
    }

    /// Sets this lease to expire `lease` from now, and keeps heartbeats
    /// renewing it to that length.
    ///
    /// # Errors
    ///
    /// [`DurableError::LeaseLost`] when the item is no longer held;
    /// [`DurableError::Unavailable`] when the store cannot be reached.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableQueue, MemoryBackend};
    ///
    /// let queue: DurableQueue<u64> = DurableQueue::new(MemoryBackend::new());
    /// queue.put("report", &1, Duration::ZERO)?;
    /// let delivery = queue.take()?.expect("open");
    /// // A long job: hold it 10 minutes per heartbeat instead of the default 30 s.
    /// delivery.extend(Duration::from_secs(600))?;
    /// delivery.ack()?;
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn extend(&self, lease: Duration) -> Result<(), DurableError> {
        if self.lease_lost() {
            return Err(DurableError::LeaseLost);
        }
        let held = self
            .leases
            .store()
            .extend(&[(self.id(), self.token())], lease)?;
        if held.first() == Some(&true) {
            self.lease.cell.set_lease(lease);
            self.leases.retick();
            Ok(())
        } else {
            self.lease.cell.mark_lost();
            Err(DurableError::LeaseLost)
        }
    }

    /// Acks this occurrence and puts the item back at its next one, in one
    /// atomic step: `Ok(next due ms)`.
    pub(crate) fn reschedule(mut self, repeat: Repeat) -> Result<u64, DurableError> {
        let next = self.settle(Verb::Reschedule(repeat))?;
        Ok(next.expect("a reschedule answers its next due time"))
    }

    /// Hands this delivery's lease on unsettled (to a pool's acker, which
    /// settles it with many others): it stays registered, so heartbeats go
    /// on until the acker sends it, and dropping `self` no longer releases
    /// the item.
    pub(crate) fn hand_off(mut self) -> LeaseRef {
        self.settled = true;
        self.lease.clone()
    }

    /// Settles the item (heartbeats stop whatever the result: on an error
    /// the item comes back after its lease).
    fn settle(&mut self, verb: Verb<'_>) -> Result<Option<u64>, DurableError> {
        self.settled = true;
        self.leases.settle(&self.lease, verb)
    }
}

impl<T> Drop for Delivery<T> {
    fn drop(&mut self) {
        if !self.settled {
            self.leases.release(&self.lease);
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for Delivery<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Delivery")
            .field("id", &self.id())
            .field("value", &self.value)
            .field("token", &self.token())
            .field("attempt", &self.item.attempt)
            .field("deadline_ms", &self.item.deadline_ms)
            .field("claimed_ms", &self.item.claimed_ms)
            .field("lease_lost", &self.lease_lost())
            .finish()
    }
}

pub(crate) fn ms_to_time(ms: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms)
}
