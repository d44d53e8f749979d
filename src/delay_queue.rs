//! [`DelayQueue`]: Java's `DelayQueue`, with O(log n) removal by [`Key`].
//!
//! # Invariants
//!
//! - Values live in a generational [`Slab`]; the heap holds
//!   `(deadline, seq, slot)`; while queued, a slot's recorded heap index is
//!   its entry's position in the heap.
//! - An element's deadline is read once, at `put`, and kept: a user type
//!   whose `deadline()` changes later cannot corrupt the order.
//! - Sequence numbers are unique and increasing: FIFO among equal deadlines.
//! - Waiting follows the leader/follower protocol of [`crate::wait`].
//! - Values are never dropped under the lock (their `Drop` may call back in).

use std::fmt;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use crate::base::clock::{after, to_instant, to_nanos, Clock, ClockListener, ManualClock, Nanos};
use crate::base::sync::Mutex;
use crate::structures::heap::{HeapEntry, IndexedHeap, Positions};
use crate::structures::slots::Slab;
use crate::wait::{Handoff, Leader, Signal, Waitable, Wake};

/// Something with a deadline: an element of a [`DelayQueue`] (Java's `Delayed`).
///
/// The queue reads `deadline()` once, when the element is put.
///
/// # Examples
///
/// ```
/// use std::time::{Duration, Instant};
/// use schedpool::{DelayQueue, Delayed};
///
/// /// A cache entry that expires.
/// struct Entry {
///     key: String,
///     expires: Instant,
/// }
/// impl Delayed for Entry {
///     fn deadline(&self) -> Instant {
///         self.expires
///     }
/// }
///
/// let q = DelayQueue::new();
/// q.put(Entry { key: "user:1".into(), expires: Instant::now() + Duration::from_millis(5) });
/// let expired = q.take().unwrap();
/// assert_eq!(expired.key, "user:1");
/// ```
pub trait Delayed {
    /// The instant from which the element may be taken.
    fn deadline(&self) -> Instant;
}

/// A value paired with a deadline: the ready-made [`Delayed`].
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedpool::{DelayItem, DelayQueue};
///
/// let q = DelayQueue::new();
/// q.put(DelayItem::new("later", Duration::from_secs(3600)));
/// q.put(DelayItem::new("now", Duration::ZERO)); // or q.put_after("now", Duration::ZERO)
/// assert_eq!(q.take().map(DelayItem::into_inner), Some("now"));
/// assert!(q.poll().is_none(), "the other one is an hour away");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DelayItem<T> {
    value: T,
    deadline: Instant,
}

impl<T> DelayItem<T> {
    /// `value`, due `delay` from now by the **real** clock. A delay too
    /// large for an `Instant` saturates at about 146 years: it never comes
    /// due.
    ///
    /// The trap: on a queue built with [`DelayQueue::with_clock`], an item
    /// made here is stamped with the real clock, not the manual one, so it
    /// comes due only once the manual clock has been advanced by `delay`
    /// *plus* all the real time that passed since the clock was made: not
    /// when `advance(delay)` says, and in a test that runs for a while, much
    /// later. Use [`DelayQueue::put_after`] (it reads the queue's own clock)
    /// or `DelayItem::at(value, clock.now() + delay)`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::{DelayItem, DelayQueue, ManualClock};
    ///
    /// let clock = ManualClock::new();
    /// let q = DelayQueue::with_clock(clock.clone());
    /// std::thread::sleep(Duration::from_millis(5)); // real time passes
    /// q.put(DelayItem::new("trap", Duration::from_secs(1)));
    /// q.put_after("right", Duration::from_secs(1));
    /// clock.advance(Duration::from_secs(1));
    /// assert_eq!(q.poll().map(DelayItem::into_inner), Some("right"));
    /// assert!(q.poll().is_none(), "the real-clock item is late by the 5 ms slept, and more");
    /// clock.advance(Duration::from_secs(60)); // far more than the real time since `new`
    /// assert_eq!(q.poll().map(DelayItem::into_inner), Some("trap"));
    /// ```
    pub fn new(value: T, delay: Duration) -> Self {
        let now = Instant::now();
        let delay = delay.min(Duration::from_nanos(crate::base::clock::MAX_DELAY));
        let deadline = now
            .checked_add(delay)
            .unwrap_or_else(|| to_instant(u64::MAX / 2));
        DelayItem { value, deadline }
    }

    /// `value`, due at `deadline`. With a [`ManualClock`], use
    /// `DelayItem::at(value, clock.now() + delay)`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use schedpool::{DelayItem, DelayQueue};
    ///
    /// let q = DelayQueue::new();
    /// let batch_end = Instant::now() + Duration::from_millis(10);
    /// q.put(DelayItem::at("flush", batch_end));
    /// let item = q.take().unwrap();
    /// assert!(Instant::now() >= batch_end, "never early");
    /// assert_eq!(*item.value(), "flush");
    /// ```
    pub fn at(value: T, deadline: Instant) -> Self {
        DelayItem { value, deadline }
    }

    /// The value.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::DelayItem;
    ///
    /// let item = DelayItem::new(vec!["order-1", "order-2"], Duration::ZERO);
    /// assert_eq!(item.value().len(), 2);
    /// ```
    pub fn value(&self) -> &T {
        &self.value
    }

    /// The value, consuming the item.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::DelayItem;
    ///
    /// let item = DelayItem::new(String::from("order-42"), Duration::ZERO);
    /// let id: String = item.into_inner();
    /// assert_eq!(id, "order-42");
    /// ```
    pub fn into_inner(self) -> T {
        self.value
    }
}

impl<T> Delayed for DelayItem<T> {
    fn deadline(&self) -> Instant {
        self.deadline
    }
}

/// Names one element put in a [`DelayQueue`], for [`DelayQueue::remove`].
///
/// A key whose element was taken, removed or cleared never matches another
/// element, even one that reuses its storage (the key carries a generation).
///
/// # Examples
///
/// ```
/// use std::collections::HashMap;
/// use std::time::Duration;
/// use schedpool::{DelayQueue, Key};
///
/// let q = DelayQueue::new();
/// // Keep each order's key to cancel its timeout when it is paid.
/// let mut timeouts: HashMap<u64, Key> = HashMap::new();
/// timeouts.insert(42, q.put_after(42u64, Duration::from_secs(1800)));
/// if let Some(key) = timeouts.remove(&42) {
///     assert!(q.remove(key).is_some());
/// }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key {
    index: usize,
    generation: u64,
}

#[derive(Debug)]
struct Entry {
    deadline: Nanos,
    seq: u64,
    slot: usize,
}

impl HeapEntry for Entry {
    #[inline]
    fn deadline(&self) -> u64 {
        self.deadline
    }
    #[inline]
    fn seq(&self) -> u64 {
        self.seq
    }
}

impl<T> Positions<Entry> for Slab<T> {
    #[inline]
    fn set(&mut self, entry: &Entry, index: usize) {
        self.set_heap_index(entry.slot, index);
    }
}

struct State<T> {
    heap: IndexedHeap<Entry>,
    slots: Slab<T>,
    leader: Leader,
    next_seq: u64,
    closed: bool,
}

impl<T> Waitable for State<T> {
    fn leader(&mut self) -> &mut Leader {
        &mut self.leader
    }
    fn head_deadline(&self) -> Option<Nanos> {
        self.heap.peek().map(|e| e.deadline)
    }
    fn second_deadline(&self) -> Option<Nanos> {
        self.heap.second_deadline()
    }
    fn is_closed(&self) -> bool {
        self.closed
    }
}

impl<T> State<T> {
    fn pop_value(&mut self) -> Option<T> {
        let entry = self.heap.pop(&mut self.slots)?;
        let value = self.slots.take(entry.slot);
        self.shrink();
        Some(value)
    }

    /// Gives memory back as the queue empties.
    fn shrink(&mut self) {
        self.heap.shrink_if_sparse();
        self.slots.release_if_empty();
    }
}

struct Shared<T> {
    state: Mutex<State<T>>,
    available: Signal,
    clock: Clock,
}

impl<T> Shared<T> {
    fn handoff(&self) -> Handoff<'_, State<T>> {
        Handoff::new(self.state.lock(), &self.available, Duration::ZERO)
    }
}

impl<T: Send> ClockListener for Shared<T> {
    fn clock_advanced(&self) {
        self.handoff().new_head();
    }
}

/// An unbounded blocking queue whose elements come out only once their
/// deadline has passed, earliest first, FIFO among equal deadlines (Java's
/// `DelayQueue`, plus keys for O(log n) removal).
///
/// `put` never blocks. `take` blocks until the head is due; several threads
/// may block in it at once, and only one of them (the leader) sleeps with a
/// timeout while the others wait untimed (leader/follower). `close` wakes
/// every blocked taker.
///
/// The queue is `Send + Sync` when `T: Send`; share it with an `Arc`.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use schedpool::DelayQueue;
///
/// let q = Arc::new(DelayQueue::new());
/// let unpaid = q.put_after("order-1", Duration::from_millis(20));
/// q.put_after("order-2", Duration::from_millis(10));
/// assert!(q.remove(unpaid).is_some(), "order-1 was paid: its timeout goes");
///
/// let taker = { let q = q.clone(); std::thread::spawn(move || q.take()) };
/// assert_eq!(taker.join().unwrap().unwrap().into_inner(), "order-2");
/// ```
///
/// # Implementation
///
/// An array 4-ary heap of `(deadline, sequence, slot)` over a generational
/// slot table; each slot records its heap position (Java's `setIndex`), so
/// `remove` is O(log n). Waiting is the leader/follower protocol of Java's
/// `DelayQueue.take`, shared with the pool (see `docs/design.md`).
pub struct DelayQueue<T> {
    shared: Arc<Shared<T>>,
}

impl<T> DelayQueue<T> {
    /// An empty queue on the real clock.
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::{DelayItem, DelayQueue};
    ///
    /// let q: DelayQueue<DelayItem<u64>> = DelayQueue::new();
    /// assert!(q.is_empty());
    /// ```
    pub fn new() -> Self {
        Self::with(Clock::Real)
    }

    fn with(clock: Clock) -> Self {
        DelayQueue {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    heap: IndexedHeap::new(),
                    slots: Slab::new(),
                    leader: Leader::default(),
                    next_seq: 0,
                    closed: false,
                }),
                available: Signal::new(),
                clock,
            }),
        }
    }

    /// An empty queue whose deadlines follow `clock`:
    /// [`ManualClock::advance`] wakes blocked takers. Elements' deadlines
    /// must come from the same clock: [`put_after`](DelayQueue::put_after)
    /// reads it (or `DelayItem::at(v, clock.now() + d)`); `DelayItem::new`
    /// reads the real clock, and its item comes due late here, by the real
    /// time since the clock was made (see [`DelayItem::new`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::{DelayItem, DelayQueue, ManualClock};
    ///
    /// let clock = ManualClock::new();
    /// let q = DelayQueue::with_clock(clock.clone());
    /// q.put_after("sms", Duration::from_secs(60));
    /// q.put(DelayItem::at("push", clock.now() + Duration::from_secs(61)));
    /// assert!(q.poll().is_none());
    /// clock.advance(Duration::from_secs(60));
    /// assert_eq!(q.poll().map(DelayItem::into_inner), Some("sms"));
    /// ```
    pub fn with_clock(clock: ManualClock) -> Self
    where
        T: Send + 'static,
    {
        let q = Self::with(Clock::Manual(clock));
        let listener: Weak<dyn ClockListener> = Arc::downgrade(&q.shared) as Weak<Shared<T>>;
        q.shared.clock.subscribe(listener);
        q
    }
}

impl<T: Delayed> DelayQueue<T> {
    /// Adds `item`, due at `item.deadline()` (read now, once). Never blocks.
    /// Returns the key that [`remove`](Self::remove) takes.
    ///
    /// Putting into a closed queue still stores the item; `poll`, `take`
    /// and `drain_expired` return it once due (`take` never blocks there).
    /// For a value due after a delay, [`put_after`](Self::put_after) reads
    /// the queue's own clock (the one to use with a [`ManualClock`]).
    ///
    /// # Examples
    ///
    /// Any type with a deadline can be an element:
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use schedpool::{DelayQueue, Delayed};
    ///
    /// struct Expiry { key: &'static str, at: Instant }
    /// impl Delayed for Expiry {
    ///     fn deadline(&self) -> Instant { self.at }
    /// }
    ///
    /// let q = DelayQueue::new();
    /// let now = Instant::now();
    /// q.put(Expiry { key: "session-b", at: now + Duration::from_millis(2) });
    /// let a = q.put(Expiry { key: "session-a", at: now + Duration::from_millis(1) });
    /// assert_eq!(q.len(), 2);
    /// assert_eq!(q.peek_deadline(), Some(now + Duration::from_millis(1)), "earliest first");
    /// assert_eq!(q.remove(a).map(|e| e.key), Some("session-a"));
    /// ```
    pub fn put(&self, item: T) -> Key {
        let deadline = to_nanos(item.deadline());
        self.put_at_nanos(item, deadline)
    }

    fn put_at_nanos(&self, item: T, deadline: Nanos) -> Key {
        let mut state = self.shared.state.lock();
        let s = &mut *state;
        let seq = s.next_seq;
        s.next_seq += 1;
        let slot = s.slots.insert(item, seq);
        if s.heap.push(
            Entry {
                deadline,
                seq,
                slot,
            },
            &mut s.slots,
        ) {
            // A new earlier head: the leader's timeout is too long (Java: offer).
            s.leader.clear();
            self.shared.available.one(&s.leader);
        }
        Key {
            index: slot,
            generation: seq,
        }
    }
}

impl<T> DelayQueue<DelayItem<T>> {
    /// Adds `value`, due `delay` from now by the queue's own clock (the real
    /// clock, or the [`ManualClock`] it was built with), and returns its key.
    /// The way to put a delayed value: unlike
    /// [`DelayItem::new`], which reads the real clock, it comes due when a
    /// manual clock is advanced by `delay`. A delay too large for an
    /// `Instant` never comes due. Never blocks.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::{DelayQueue, ManualClock};
    ///
    /// let clock = ManualClock::new();
    /// let q = DelayQueue::with_clock(clock.clone());
    /// let key = q.put_after("order-42 unpaid", Duration::from_secs(1800));
    /// clock.advance(Duration::from_secs(1799));
    /// assert!(q.poll().is_none(), "never early");
    /// clock.advance(Duration::from_secs(1));
    /// assert_eq!(q.poll().map(|item| item.into_inner()), Some("order-42 unpaid"));
    /// assert!(q.remove(key).is_none(), "already taken");
    /// ```
    pub fn put_after(&self, value: T, delay: Duration) -> Key {
        let deadline = after(self.shared.clock.now(), delay);
        let item = DelayItem::at(value, to_instant(deadline));
        self.put_at_nanos(item, deadline)
    }
}

impl<T> DelayQueue<T> {
    /// Removes the element named by `key`, due or not, in O(log n).
    /// `None` if it was already taken, removed or cleared.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::DelayQueue;
    ///
    /// let q = DelayQueue::new();
    /// let key = q.put_after("order-42", Duration::from_secs(1800));
    /// // Paid: the timeout goes, long before its deadline.
    /// assert_eq!(q.remove(key).map(|item| item.into_inner()), Some("order-42"));
    /// assert!(q.remove(key).is_none(), "a key names one element, once");
    /// assert!(q.is_empty());
    /// ```
    pub fn remove(&self, key: Key) -> Option<T> {
        let mut state = self.shared.state.lock();
        let s = &mut *state;
        let index = s.slots.heap_index(key.index, key.generation)?;
        s.heap.remove_at(index, &mut s.slots);
        let value = s.slots.take(key.index);
        s.shrink();
        Some(value)
    }

    /// Takes the head once it is due, blocking as long as needed. Returns
    /// `None` only when the queue is closed and nothing is due.
    ///
    /// # Examples
    ///
    /// A consumer thread that runs until the queue is closed:
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::{Duration, Instant};
    /// use schedpool::{DelayItem, DelayQueue};
    ///
    /// let q: Arc<DelayQueue<DelayItem<&str>>> = Arc::new(DelayQueue::new());
    /// let now = Instant::now();
    /// q.put(DelayItem::at("cache:b", now + Duration::from_millis(2)));
    /// q.put(DelayItem::at("cache:a", now + Duration::from_millis(1)));
    /// // Started after both puts: a consumer running before "cache:a" was
    /// // put could, on a busy machine, find "cache:b" due first.
    /// let consumer = {
    ///     let q = q.clone();
    ///     std::thread::spawn(move || {
    ///         let mut expired = Vec::new();
    ///         while let Some(item) = q.take() {
    ///             expired.push(item.into_inner());
    ///         }
    ///         expired
    ///     })
    /// };
    /// while !q.is_empty() {
    ///     std::thread::sleep(Duration::from_millis(1));
    /// }
    /// q.close(); // wakes the consumer, whose take returns None
    /// assert_eq!(consumer.join().unwrap(), ["cache:a", "cache:b"]);
    /// ```
    pub fn take(&self) -> Option<T> {
        self.take_until(None)
    }

    /// The head if it is due now; never blocks.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::DelayQueue;
    ///
    /// let q = DelayQueue::new();
    /// q.put_after("retry", Duration::from_secs(60));
    /// assert!(q.poll().is_none(), "not due: poll does not wait");
    /// q.put_after("now", Duration::ZERO);
    /// assert_eq!(q.poll().map(|item| item.into_inner()), Some("now"));
    /// ```
    pub fn poll(&self) -> Option<T> {
        let mut state = self.shared.state.lock();
        let due = state
            .heap
            .peek()
            .is_some_and(|e| e.deadline <= self.shared.clock.now());
        if due {
            state.pop_value()
        } else {
            None
        }
    }

    /// Like [`take`](Self::take), but gives up after `timeout` (real time)
    /// and returns `None`. A zero timeout behaves like [`poll`](Self::poll).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::DelayQueue;
    ///
    /// let q = DelayQueue::new();
    /// q.put_after("soon", Duration::from_millis(5));
    /// q.put_after("in an hour", Duration::from_secs(3600));
    /// let first = q.poll_timeout(Duration::from_secs(5));
    /// assert_eq!(first.map(|item| item.into_inner()), Some("soon"));
    /// assert!(q.poll_timeout(Duration::from_millis(5)).is_none(), "gave up");
    /// ```
    pub fn poll_timeout(&self, timeout: Duration) -> Option<T> {
        match Instant::now().checked_add(timeout) {
            Some(limit) => self.take_until(Some(limit)),
            None => self.take(),
        }
    }

    fn take_until(&self, limit: Option<Instant>) -> Option<T> {
        let mut state = self.shared.handoff();
        match state.wait_due(&self.shared.clock, limit) {
            Wake::Due(_) => state.pop_value(),
            Wake::Closed | Wake::TimedOut => None,
        }
    }

    /// The head's deadline, due or not; `None` when empty.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::{DelayQueue, ManualClock};
    ///
    /// let clock = ManualClock::new();
    /// let q = DelayQueue::with_clock(clock.clone());
    /// assert_eq!(q.peek_deadline(), None);
    /// q.put_after("b", Duration::from_secs(20));
    /// q.put_after("a", Duration::from_secs(10));
    /// assert_eq!(q.peek_deadline(), Some(clock.now() + Duration::from_secs(10)));
    /// ```
    pub fn peek_deadline(&self) -> Option<Instant> {
        self.shared
            .state
            .lock()
            .heap
            .peek()
            .map(|e| to_instant(e.deadline))
    }

    /// Removes and returns every element already due, in deadline order.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::{DelayItem, DelayQueue, ManualClock};
    ///
    /// let clock = ManualClock::new();
    /// let cache = DelayQueue::with_clock(clock.clone());
    /// cache.put_after("user:2", Duration::from_secs(20));
    /// cache.put_after("user:1", Duration::from_secs(10));
    /// cache.put_after("user:3", Duration::from_secs(90));
    /// clock.advance(Duration::from_secs(30));
    /// let expired: Vec<_> = cache.drain_expired().into_iter().map(DelayItem::into_inner).collect();
    /// assert_eq!(expired, ["user:1", "user:2"]);
    /// assert_eq!(cache.len(), 1);
    /// ```
    pub fn drain_expired(&self) -> Vec<T> {
        let mut state = self.shared.state.lock();
        let now = self.shared.clock.now();
        let mut out = Vec::new();
        while state.heap.peek().is_some_and(|e| e.deadline <= now) {
            out.extend(state.pop_value());
        }
        out
    }

    /// For [`crate::internals`] only: every heap entry as `(deadline, seq,
    /// slot)` in array order, and every slot as `(occupied, heap_index)`.
    #[allow(clippy::type_complexity)] // a test-only snapshot
    pub(crate) fn internals(&self) -> (Vec<(u64, u64, usize)>, Vec<(bool, usize)>) {
        let state = self.shared.state.lock();
        let heap = (0..state.heap.len())
            .filter_map(|i| state.heap.get(i))
            .map(|e| (e.deadline, e.seq, e.slot))
            .collect();
        (heap, state.slots.snapshot())
    }

    /// The number of elements, due or not.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::DelayQueue;
    ///
    /// let q = DelayQueue::new();
    /// q.put_after(1, Duration::ZERO);
    /// q.put_after(2, Duration::from_secs(60));
    /// assert_eq!(q.len(), 2);
    /// ```
    pub fn len(&self) -> usize {
        self.shared.state.lock().heap.len()
    }

    /// True when there are no elements at all.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::DelayQueue;
    ///
    /// let q = DelayQueue::new();
    /// assert!(q.is_empty());
    /// q.put_after((), Duration::from_secs(60));
    /// assert!(!q.is_empty(), "not due counts too");
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Removes every element, due or not. Every outstanding key goes stale.
    /// The elements are dropped after the queue's lock is released.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::DelayQueue;
    ///
    /// let q = DelayQueue::new();
    /// let key = q.put_after("a", Duration::from_secs(60));
    /// q.put_after("b", Duration::ZERO);
    /// q.clear();
    /// assert!(q.is_empty());
    /// assert!(q.remove(key).is_none(), "its key went stale");
    /// ```
    pub fn clear(&self) {
        let values = {
            let mut state = self.shared.state.lock();
            let s = &mut *state;
            s.heap = IndexedHeap::new();
            s.slots.take_all()
        };
        drop(values);
    }

    /// Closes the queue: every blocked [`take`](Self::take) and
    /// [`poll_timeout`](Self::poll_timeout) wakes and returns `None` (or a
    /// due head), and later ones never block. Elements stay; `put` still works.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use schedpool::{DelayItem, DelayQueue};
    ///
    /// let q: Arc<DelayQueue<DelayItem<&str>>> = Arc::new(DelayQueue::new());
    /// let waiter = { let q = q.clone(); std::thread::spawn(move || q.take()) };
    /// q.close();
    /// assert!(waiter.join().unwrap().is_none(), "a blocked take returns None");
    /// q.put_after("still stored", Duration::ZERO);
    /// assert_eq!(q.take().map(DelayItem::into_inner), Some("still stored"));
    /// ```
    pub fn close(&self) {
        let mut state = self.shared.handoff();
        state.closed = true;
        // The Handoff's drop signals one waiter; each waiter leaving signals
        // the next, so every blocked taker wakes.
    }

    /// True once [`close`](Self::close) was called.
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::{DelayItem, DelayQueue};
    ///
    /// let q: DelayQueue<DelayItem<()>> = DelayQueue::new();
    /// assert!(!q.is_closed());
    /// q.close();
    /// assert!(q.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        self.shared.state.lock().closed
    }
}

impl<T> Default for DelayQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> fmt::Debug for DelayQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.shared.state.lock();
        f.debug_struct("DelayQueue")
            .field("len", &state.heap.len())
            .field("closed", &state.closed)
            .field("clock", &self.shared.clock)
            .finish()
    }
}
