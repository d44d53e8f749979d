//! The leases a process holds, and the heartbeat thread that keeps them.
//!
//! Invariants (under `State`'s lock):
//!
//! - `live` holds exactly the leases registered and not yet settled: the
//!   deliveries handed out and not yet acked, nacked, rescheduled or
//!   dropped, the items a pool's taker claimed ahead and holds in its
//!   buffer, and the acks waiting in a pool's acker. Each is extended every
//!   `lease / 3` by one batched call per lease length, so a live holder
//!   keeps its item while it works, and a dead process's items come back
//!   one lease after its last heartbeat.
//! - A delivery dropped unsettled moves to `release`; the heartbeat thread
//!   gives it back with `Nack::Release` (at its due time, so at the front),
//!   so `Drop` never does network I/O and the item goes back at once
//!   instead of after its lease.
//! - The thread runs while `live` or `release` is non-empty, and lingers
//!   one tick after, so a steady stream of deliveries does not respawn it.
//! - A lease the store refuses to extend is marked lost for good; the
//!   holder sees it through `Delivery::lease_lost`.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::base::error::quietly;
use crate::base::sync::{Condvar, Mutex};
use crate::durable::store::backend::ceil_ms;
use crate::durable::store::contained::Store;
use crate::durable::store::error::DurableError;

use super::lease::{LeaseCell, LeaseRef};
use super::settle::{self, Verb};

pub(crate) struct Leases {
    store: Store,
    lease: Duration,
    state: Mutex<State>,
    cv: Condvar,
}

#[derive(Default)]
struct State {
    live: HashMap<u64, Arc<LeaseCell>>,
    next_key: u64,
    release: Vec<Arc<LeaseCell>>,
    running: bool,
}

impl Leases {
    pub(super) fn new(store: Store, lease: Duration) -> Arc<Self> {
        Arc::new(Leases {
            store,
            lease,
            state: Mutex::new(State::default()),
            cv: Condvar::new(),
        })
    }

    /// The store the leases are held in.
    pub(crate) fn store(&self) -> &Store {
        &self.store
    }

    /// Starts heartbeating (id, token).
    pub(crate) fn register(self: &Arc<Self>, id: String, token: u64) -> LeaseRef {
        let cell = Arc::new(LeaseCell::new(id, token, self.lease));
        let mut s = self.state.lock();
        s.next_key += 1;
        let key = s.next_key;
        s.live.insert(key, cell.clone());
        self.ensure_thread(&mut s);
        LeaseRef { key, cell }
    }

    /// Stops heartbeating, without a store call: the holder settled the
    /// item another way, or leaves it to its lease.
    pub(crate) fn forget(&self, lease: &LeaseRef) {
        self.state.lock().live.remove(&lease.key);
    }

    /// Stops heartbeating `lease`, then settles its item
    /// ([`settle::one`]); a "not held" answer marks it lost. Heartbeats
    /// stop whatever the result: on an error the item comes back after its
    /// lease.
    pub(crate) fn settle(
        &self,
        lease: &LeaseRef,
        verb: Verb<'_>,
    ) -> Result<Option<u64>, DurableError> {
        self.forget(lease);
        let cell = &lease.cell;
        let settled = settle::one(&self.store, &cell.id, cell.token, verb);
        if matches!(settled, Err(DurableError::LeaseLost)) {
            cell.mark_lost();
        }
        settled
    }

    /// Acks `batch` in one store call ([`settle::ack_many`]); the leases'
    /// heartbeats stop only once it has a reply, so a slow call cannot
    /// let them expire under it. A "not held" answer marks that lease lost.
    pub(crate) fn ack_batch(&self, batch: &[LeaseRef]) -> Result<Vec<bool>, DurableError> {
        let pairs: Vec<(&str, u64)> = batch
            .iter()
            .map(|l| (l.cell.id.as_str(), l.cell.token))
            .collect();
        let acked = settle::ack_many(&self.store, &pairs);
        for lease in batch {
            self.forget(lease);
        }
        if let Ok(held) = &acked {
            for (lease, held) in batch.iter().zip(held) {
                if !held {
                    lease.cell.mark_lost();
                }
            }
        }
        acked
    }

    /// Stops heartbeating and gives the item back at once, from the
    /// heartbeat thread (no I/O on the caller's thread).
    pub(crate) fn release(self: &Arc<Self>, lease: &LeaseRef) {
        let mut s = self.state.lock();
        if let Some(cell) = s.live.remove(&lease.key) {
            s.release.push(cell);
            self.ensure_thread(&mut s);
            self.cv.notify_one();
        }
    }

    /// How many leases are live (handed out, unsettled).
    pub(super) fn live(&self) -> usize {
        self.state.lock().live.len()
    }

    fn ensure_thread(self: &Arc<Self>, s: &mut State) {
        if s.running {
            return;
        }
        let me = self.clone();
        let spawned = std::thread::Builder::new()
            .name("schedpool-heartbeat".into())
            .spawn(move || {
                // A subscriber that panics while this thread logs a failed
                // beat or release (user code) must not end the heartbeats:
                // with `running` still set, none would start again. The
                // loop resumes (its next beat waits a tick first).
                while quietly(|| me.clone().run()).is_none() {}
            });
        match spawned {
            Ok(_) => s.running = true,
            // Without the thread, leases expire and the items come back to
            // another consumer: late, never lost. Say so.
            Err(err) => tracing::error!(
                target: "schedpool::durable",
                error = %err,
                "could not start the heartbeat thread; leases will not be extended"
            ),
        }
    }

    /// A third of the shortest lease being renewed (a holder's `extend` can
    /// shorten one below the queue's lease).
    fn tick(&self, s: &State) -> Duration {
        let ms = s
            .live
            .values()
            .map(|c| c.lease_ms())
            .min()
            .unwrap_or_else(|| ceil_ms(self.lease));
        (Duration::from_millis(ms) / 3).max(Duration::from_millis(1))
    }

    /// Re-plans the next beat after a lease length changed.
    pub(crate) fn retick(&self) {
        let _s = self.state.lock();
        self.cv.notify_one();
    }

    fn run(self: Arc<Self>) {
        let mut last_beat = Instant::now();
        let mut idle_ticks = 0;
        let mut s = self.state.lock();
        loop {
            if !s.release.is_empty() {
                let release = std::mem::take(&mut s.release);
                drop(s);
                for cell in release {
                    let _ = settle::release_one(&self.store, &cell.id, cell.token);
                }
                s = self.state.lock();
                continue;
            }
            let next_tick = last_beat + self.tick(&s);
            if Instant::now() < next_tick {
                self.cv.wait_until(&mut s, next_tick);
                continue;
            }
            last_beat = Instant::now();
            if s.live.is_empty() {
                idle_ticks += 1;
                if idle_ticks > 1 {
                    s.running = false;
                    return;
                }
                continue;
            }
            idle_ticks = 0;
            let cells: Vec<Arc<LeaseCell>> = s.live.values().cloned().collect();
            drop(s);
            self.beat(&cells);
            s = self.state.lock();
        }
    }

    /// Extends every live lease: one call per distinct lease length.
    fn beat(&self, cells: &[Arc<LeaseCell>]) {
        let mut by_lease: HashMap<u64, Vec<&Arc<LeaseCell>>> = HashMap::new();
        for cell in cells.iter().filter(|c| !c.lost()) {
            by_lease.entry(cell.lease_ms()).or_default().push(cell);
        }
        for (ms, mut group) in by_lease {
            // In id order, as the pool's acker sends acks: two batched
            // updates of the same rows wait for each other, never deadlock.
            group.sort_unstable_by(|a, b| a.id.cmp(&b.id));
            let pairs: Vec<(&str, u64)> = group.iter().map(|c| (c.id.as_str(), c.token)).collect();
            match self.store.extend(&pairs, Duration::from_millis(ms)) {
                Ok(held) => {
                    for (cell, held) in group.iter().zip(held) {
                        if !held {
                            cell.mark_lost();
                        }
                    }
                }
                Err(err) => tracing::warn!(
                    target: "schedpool::durable",
                    error = %err,
                    leases = group.len(),
                    "heartbeat failed; retrying next tick"
                ),
            }
        }
    }
}

impl fmt::Debug for Leases {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Leases")
            .field("lease", &self.lease)
            .field("live", &self.live())
            .finish()
    }
}
