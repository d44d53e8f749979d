//! The in-memory backend: the Redis design's semantics in one process, on
//! the real clock or a [`ManualClock`], so users can test "the order closes
//! after 30 minutes" instantly and without a server.
//!
//! Invariants (under `State`'s lock):
//!
//! - Every id in `items` is in exactly one of `due`, `lease`, `dead`, under
//!   the score its `Item::place` records; no other ids are in those sets.
//! - `tokens` only grows; every put and claim takes the next value.
//! - `marker` is the Redis `wake` key: set by a put that makes a new head,
//!   by a claim that filled its batch with more due, and by a manual clock's
//!   advance; consumed by one `wait`.
//! - Each handle (clone) has its own `unblocked` flag, as each process has
//!   its own Redis connection: one queue's `close` cannot be consumed by
//!   another queue's wait on the same store.

use std::fmt;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::base::sync::{Condvar, Mutex, MutexGuard};

use super::backend::{
    ceil_ms, Buried, Cancelled, ClaimBatch, Claimed, Counts, DurableBackend, DurableError, Nack,
    Put, PutMode, Repeat, Stored, StoredState, When, MAX_MS,
};
use super::ops::DurableOps;
use crate::base::clock::{Clock, ClockListener};
use crate::ManualClock;

// The dead-letter verbs (bury, requeue, purge, the listing).
mod dead;
// The operator's side (listing, counts, paused kinds, audit).
mod ops;
// The state under the lock.
mod state;

use state::{Item, Place, State};

/// A [`DurableBackend`] in this process's memory.
///
/// It keeps nothing across a restart: it is for tests and for trying the
/// durable API. With [`MemoryBackend::with_clock`] it follows a
/// [`ManualClock`]: `advance` makes items due and leases expire, and wakes
/// waiting consumers.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedpool::ManualClock;
/// use schedpool::durable::{DurableQueue, MemoryBackend};
///
/// let clock = ManualClock::new();
/// let queue: DurableQueue<String> = DurableQueue::new(MemoryBackend::with_clock(clock.clone()));
/// queue.put("order-42", &"close".to_string(), Duration::from_secs(30 * 60))?;
/// assert!(queue.poll()?.is_none());
/// clock.advance(Duration::from_secs(30 * 60));
/// let delivery = queue.poll()?.expect("due now");
/// assert_eq!(delivery.id(), "order-42");
/// delivery.ack()?;
/// # Ok::<(), schedpool::durable::DurableError>(())
/// ```
pub struct MemoryBackend {
    inner: Arc<Inner>,
    /// This handle's `unblock`: each clone is its own "process", as each
    /// process has its own Redis backend.
    unblocked: Arc<std::sync::atomic::AtomicBool>,
}

impl Clone for MemoryBackend {
    fn clone(&self) -> Self {
        MemoryBackend {
            inner: self.inner.clone(),
            unblocked: Arc::default(),
        }
    }
}

struct Inner {
    clock: Clock,
    /// The backend time (Unix ms) at which a manual clock's elapsed is 0.
    base_ms: u64,
    state: Mutex<State>,
    woken: Condvar,
}

impl MemoryBackend {
    /// A backend on the real clock (`SystemTime`, in ms).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use schedpool::durable::{DurableQueue, MemoryBackend};
    ///
    /// let store = MemoryBackend::new();
    /// // Clones share the store, as processes share a Redis or PostgreSQL one.
    /// let producer: DurableQueue<u64> = DurableQueue::new(store.clone());
    /// let consumer: DurableQueue<u64> = DurableQueue::new(store);
    /// producer.put("order-42", &42, Duration::ZERO)?;
    /// assert_eq!(*consumer.take()?.expect("open").value(), 42);
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn new() -> Self {
        Self::build(Clock::Real)
    }

    /// A backend whose time follows `clock`: nothing becomes due and no lease
    /// expires until `clock.advance`.
    ///
    /// The store's clock (what [`DurableBackend::server_time_ms`] reads, and
    /// what durable calendar schedules fire by) starts at the real time when
    /// the backend is made and moves with `advance` only: it is not the
    /// clock's [`wall_time`](ManualClock::wall_time), and
    /// [`set_wall_time`](ManualClock::set_wall_time) does not move it. To
    /// start a test at a chosen date ahead of now, advance by the difference:
    ///
    /// ```
    /// use std::time::{Duration, UNIX_EPOCH};
    /// use schedpool::ManualClock;
    /// use schedpool::durable::{DurableBackend, MemoryBackend};
    ///
    /// let clock = ManualClock::new();
    /// let store = MemoryBackend::with_clock(clock.clone());
    /// let now_ms = store.server_time_ms()?;
    /// clock.set_wall_time(UNIX_EPOCH); // moves the pool's wall clock, not the store's
    /// assert_eq!(store.server_time_ms()?, now_ms);
    ///
    /// let target_ms = 4_102_444_800_000; // 2100-01-01 00:00 UTC
    /// clock.advance(Duration::from_millis(target_ms - now_ms));
    /// assert_eq!(store.server_time_ms()?, target_ms);
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn with_clock(clock: ManualClock) -> Self {
        Self::build(Clock::Manual(clock))
    }

    fn build(clock: Clock) -> Self {
        let inner = Arc::new(Inner {
            clock: clock.clone(),
            base_ms: unix_ms(),
            state: Mutex::new(State::default()),
            woken: Condvar::new(),
        });
        let listener: Weak<dyn ClockListener> = Arc::downgrade(&inner) as Weak<dyn ClockListener>;
        clock.subscribe(listener);
        MemoryBackend {
            inner,
            unblocked: Arc::default(),
        }
    }

    fn now(&self) -> u64 {
        match &self.inner.clock {
            Clock::Manual(m) => self.inner.base_ms + m.elapsed().as_millis() as u64,
            Clock::Real => unix_ms(),
        }
    }

    fn lock(&self) -> (MutexGuard<'_, State>, u64) {
        // Read the time under the lock, so operations are ordered by it.
        let state = self.inner.state.lock();
        let now = self.now();
        (state, now)
    }
}

impl Default for MemoryBackend {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for MemoryBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryBackend")
            .field("clock", &self.inner.clock)
            .finish_non_exhaustive()
    }
}

impl ClockListener for Inner {
    fn clock_advanced(&self) {
        self.state.lock().marker = true;
        self.woken.notify_all();
    }
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis() as u64
}

impl DurableBackend for MemoryBackend {
    fn put(
        &self,
        id: &str,
        envelope: &[u8],
        when: When,
        mode: PutMode,
    ) -> Result<Put, DurableError> {
        let (mut s, now) = self.lock();
        let live = s
            .items
            .get(id)
            .is_some_and(|i| !matches!(i.place, Place::Dead(_)));
        if live && mode == PutMode::IfAbsent {
            return Ok(Put::Exists);
        }
        let deadline = match when {
            When::After(d) => now.saturating_add(ceil_ms(d)).min(MAX_MS),
            When::AtServerMs(at) => at.min(MAX_MS),
        };
        let token = s.next_token();
        let old = s.items.insert(
            id.to_string(),
            Item {
                envelope: envelope.to_vec(),
                token,
                attempts: 0,
                deadline,
                due: deadline,
                place: Place::Due(deadline),
            },
        );
        match old {
            Some(old) => {
                // Take the old entry out of its set as the new one is filed.
                s.items.get_mut(id).expect("just inserted").place = old.place;
                s.set(id, Place::Due(deadline));
            }
            None => {
                s.due.insert((deadline, id.to_string()));
            }
        }
        if s.wake_if_head(id) {
            self.inner.woken.notify_one();
        }
        Ok(if live {
            Put::Replaced {
                deadline_ms: deadline,
            }
        } else {
            Put::Inserted {
                deadline_ms: deadline,
            }
        })
    }

    fn claim(
        &self,
        lease: Duration,
        max: usize,
        max_attempts: u32,
    ) -> Result<ClaimBatch, DurableError> {
        let (mut s, now) = self.lock();
        let expired: Vec<String> = s
            .lease
            .iter()
            .take_while(|(score, _)| *score <= now)
            .take(100)
            .map(|(_, id)| id.clone())
            .collect();
        for id in expired {
            let item = &s.items[&id];
            let place = if max_attempts > 0 && item.attempts >= max_attempts {
                Place::Dead(now)
            } else {
                Place::Due(item.due)
            };
            s.set(&id, place);
        }
        let due: Vec<String> = s
            .due
            .iter()
            .take_while(|(score, _)| *score <= now)
            .filter(|(_, id)| s.claimable(id))
            .take(max)
            .map(|(_, id)| id.clone())
            .collect();
        let mut items = Vec::with_capacity(due.len());
        let expiry = now.saturating_add(ceil_ms(lease));
        for id in due {
            let token = s.next_token();
            let item = s.items.get_mut(&id).expect("due ids are stored");
            item.token = token;
            item.attempts += 1;
            items.push(Claimed {
                id: id.clone(),
                token,
                attempt: item.attempts,
                deadline_ms: item.deadline,
                due_ms: item.due,
                claimed_ms: now,
                envelope: item.envelope.clone(),
            });
            s.set(&id, Place::Lease(expiry));
        }
        let head = s.due.iter().find(|(_, id)| s.claimable(id));
        let next = [head, s.lease.first()]
            .into_iter()
            .flatten()
            .map(|(score, _)| *score)
            .min();
        let wait = next.map(|at| Duration::from_millis(at.saturating_sub(now)));
        if max > 0 && items.len() == max && wait == Some(Duration::ZERO) {
            s.marker = true;
            self.inner.woken.notify_one();
        }
        Ok(ClaimBatch { items, wait })
    }

    fn extend(&self, leases: &[(&str, u64)], lease: Duration) -> Result<Vec<bool>, DurableError> {
        let (mut s, now) = self.lock();
        let expiry = now.saturating_add(ceil_ms(lease));
        Ok(leases
            .iter()
            .map(|&(id, token)| {
                let held = s.holds(id, token);
                if held {
                    s.set(id, Place::Lease(expiry));
                }
                held
            })
            .collect())
    }

    fn ack(&self, id: &str, token: u64) -> Result<bool, DurableError> {
        let (mut s, now) = self.lock();
        if !s.holds(id, token) {
            return Ok(s.receipt(id, token, now).is_some());
        }
        s.remove(id);
        s.write_receipt(id, token, 0, now);
        Ok(true)
    }

    fn nack(&self, id: &str, token: u64, to: Nack) -> Result<bool, DurableError> {
        let (mut s, now) = self.lock();
        if !s.holds(id, token) {
            return Ok(s.receipt(id, token, now).is_some());
        }
        s.write_receipt(id, token, 0, now);
        match to {
            Nack::Dead => s.set(id, Place::Dead(now)),
            Nack::Release => {
                let at = s.items.get(id).expect("held").due;
                s.set(id, Place::Due(at));
                if s.wake_if_head(id) {
                    self.inner.woken.notify_one();
                }
            }
            Nack::Defer(delay) => {
                let at = now.saturating_add(ceil_ms(delay)).min(MAX_MS);
                let item = s.items.get_mut(id).expect("held");
                item.due = at;
                item.attempts = item.attempts.saturating_sub(1);
                s.set(id, Place::Due(at));
                if s.wake_if_head(id) {
                    self.inner.woken.notify_one();
                }
            }
            Nack::Retry(delay) => {
                let at = now.saturating_add(ceil_ms(delay)).min(MAX_MS);
                s.items.get_mut(id).expect("held").due = at;
                s.set(id, Place::Due(at));
                if s.wake_if_head(id) {
                    self.inner.woken.notify_one();
                }
            }
        }
        Ok(true)
    }

    fn ack_and_reschedule(
        &self,
        id: &str,
        token: u64,
        repeat: Repeat,
    ) -> Result<Option<u64>, DurableError> {
        let (mut s, now) = self.lock();
        if !s.holds(id, token) {
            return Ok(s.receipt(id, token, now));
        }
        let held = token;
        let token = s.next_token();
        let item = s.items.get_mut(id).expect("held");
        let next = match repeat {
            Repeat::FixedRate(p) => item.deadline.saturating_add(ceil_ms(p)),
            Repeat::FixedDelay(d) => now.saturating_add(ceil_ms(d)),
        }
        .min(MAX_MS);
        item.token = token;
        item.attempts = 0;
        item.deadline = next;
        item.due = next;
        s.set(id, Place::Due(next));
        s.write_receipt(id, held, next, now);
        if s.wake_if_head(id) {
            self.inner.woken.notify_one();
        }
        Ok(Some(next))
    }

    fn cancel(&self, id: &str) -> Result<Cancelled, DurableError> {
        let (mut s, _) = self.lock();
        Ok(match s.remove(id) {
            None => Cancelled::NotFound,
            Some(item) => match item.place {
                Place::Due(_) => Cancelled::Pending(item.envelope),
                Place::Lease(_) => Cancelled::InFlight,
                Place::Dead(_) => Cancelled::Dead(super::dead_record::envelope(item.envelope)),
            },
        })
    }

    fn wait(&self, due: Option<Duration>, limit: Duration) -> Result<bool, DurableError> {
        let real_wait = match (&self.inner.clock, due) {
            (Clock::Real, Some(due)) => due.min(limit),
            _ => limit,
        };
        let until = Instant::now().checked_add(real_wait);
        let mut s = self.inner.state.lock();
        loop {
            if std::mem::take(&mut s.marker) {
                return Ok(true);
            }
            if self
                .unblocked
                .swap(false, std::sync::atomic::Ordering::SeqCst)
            {
                return Ok(false);
            }
            match until {
                Some(until) => {
                    if self.inner.woken.wait_until(&mut s, until) {
                        return Ok(false);
                    }
                }
                None => self.inner.woken.wait(&mut s),
            }
        }
    }

    fn unblock(&self) {
        let _s = self.inner.state.lock();
        self.unblocked
            .store(true, std::sync::atomic::Ordering::SeqCst);
        self.inner.woken.notify_all();
    }

    fn counts(&self) -> Result<Counts, DurableError> {
        let s = self.inner.state.lock();
        Ok(Counts {
            pending: s.due.len(),
            in_flight: s.lease.len(),
            dead: s.dead.len(),
        })
    }

    fn peek_deadline_ms(&self) -> Result<Option<u64>, DurableError> {
        Ok(self.inner.state.lock().due.first().map(|(score, _)| *score))
    }

    fn get(&self, id: &str) -> Result<Option<Stored>, DurableError> {
        let s = self.inner.state.lock();
        Ok(s.items.get(id).map(|item| Stored {
            envelope: item.envelope.clone(),
            deadline_ms: item.deadline,
            state: match item.place {
                Place::Due(_) => StoredState::Pending,
                Place::Lease(_) => StoredState::InFlight,
                Place::Dead(_) => StoredState::Dead,
            },
        }))
    }

    fn server_time_ms(&self) -> Result<u64, DurableError> {
        Ok(self.now())
    }

    fn dead_letters(&self, max: usize) -> Result<Vec<Buried>, DurableError> {
        self.dead_list(max)
    }

    fn bury(&self, id: &str, token: u64, error: Option<&str>) -> Result<bool, DurableError> {
        self.bury_item(id, token, error)
    }

    fn requeue(&self, id: &str) -> Result<bool, DurableError> {
        self.requeue_item(id)
    }

    fn purge(&self, id: &str) -> Result<bool, DurableError> {
        self.purge_item(id)
    }

    fn ops(&self) -> Option<&dyn DurableOps> {
        Some(self)
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
}
