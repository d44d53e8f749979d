//! One lease held by this process: the item's id, the claim's token, the
//! lease length its heartbeats renew to, and whether the store has said
//! the lease is lost.
//!
//! Invariants: `lost` only goes from false to true (a lease the store
//! refused once is never held again: a later claim has a new token);
//! `mark_lost` sets it before it takes the wakers, and `poll_lost`
//! registers its waker before it reads it again, so a waiting future is
//! never left asleep on a lost lease.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::Waker;
use std::time::Duration;

use crate::base::sync::Mutex;
use crate::durable::store::backend::ceil_ms;

/// One held lease.
#[derive(Debug)]
pub(crate) struct LeaseCell {
    pub(crate) id: String,
    pub(crate) token: u64,
    lost: AtomicBool,
    /// The lease length heartbeats renew to, in ms (a holder's `extend`
    /// can change it).
    lease_ms: AtomicU64,
    /// Futures waiting for the loss (an async handler's `lease_lost()`).
    wakers: Mutex<Vec<Waker>>,
}

impl LeaseCell {
    pub(super) fn new(id: String, token: u64, lease: Duration) -> Self {
        LeaseCell {
            id,
            token,
            lost: AtomicBool::new(false),
            lease_ms: AtomicU64::new(ceil_ms(lease)),
            wakers: Mutex::new(Vec::new()),
        }
    }

    pub(crate) fn lost(&self) -> bool {
        self.lost.load(Ordering::Acquire)
    }

    pub(crate) fn mark_lost(&self) {
        self.lost.store(true, Ordering::Release);
        let wakers = std::mem::take(&mut *self.wakers.lock());
        for waker in wakers {
            waker.wake();
        }
    }

    /// Ready once the lease is lost; otherwise registers `cx`'s waker
    /// (once per task: a `select!` loop polls it again and again).
    #[cfg(feature = "tokio")]
    pub(crate) fn poll_lost(&self, cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        use std::task::Poll;
        if self.lost() {
            return Poll::Ready(());
        }
        {
            let mut wakers = self.wakers.lock();
            if !wakers.iter().any(|w| w.will_wake(cx.waker())) {
                wakers.push(cx.waker().clone());
            }
        }
        if self.lost() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }

    pub(super) fn set_lease(&self, lease: Duration) {
        self.lease_ms.store(ceil_ms(lease), Ordering::Relaxed);
    }

    pub(super) fn lease_ms(&self) -> u64 {
        self.lease_ms.load(Ordering::Relaxed)
    }
}

/// A registered lease: settle it through [`Leases`](super::leases::Leases)
/// (`settle`, `forget`, `release`, `ack_batch`; each is a no-op on the
/// heartbeats the second time, so a copy handed on cannot settle twice).
#[derive(Debug, Clone)]
pub(crate) struct LeaseRef {
    /// The registry's key.
    pub(super) key: u64,
    pub(crate) cell: Arc<LeaseCell>,
}
