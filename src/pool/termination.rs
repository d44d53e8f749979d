//! The wakers of [`Terminated`](crate::Terminated) futures: the async side
//! of the termination latch (`await_termination` is the blocking side).
//!
//! # Invariants
//!
//! - A poll checks "terminated" and stores its waker under this latch's
//!   lock; termination publishes the run state *before* it takes this lock
//!   to take the wakers. So a poll either sees the pool terminated or
//!   leaves a waker that termination wakes: no lost wake-up.
//! - Wakers are woken outside every lock (the pool's and this one), every
//!   one of them even if one panics.
//! - One waker per waiting task: a waker that `will_wake` the same task
//!   replaces nothing and is not stored twice.

use std::panic::AssertUnwindSafe;
use std::task::{Context, Poll, Waker};

use crate::base::error::drop_quietly;
use crate::base::sync::Mutex;

/// The wakers of futures waiting for a pool's termination.
#[derive(Default)]
pub(super) struct TerminationWakers {
    wakers: Mutex<Vec<Waker>>,
}

impl TerminationWakers {
    /// Ready once `terminated()` says so; otherwise stores `cx`'s waker.
    pub(super) fn poll(&self, cx: &mut Context<'_>, terminated: impl Fn() -> bool) -> Poll<()> {
        if terminated() {
            return Poll::Ready(());
        }
        let mut wakers = self.wakers.lock();
        if terminated() {
            return Poll::Ready(());
        }
        if !wakers.iter().any(|w| w.will_wake(cx.waker())) {
            wakers.push(cx.waker().clone());
        }
        Poll::Pending
    }

    /// Wakes every stored waker (called once the pool terminated, outside
    /// the pool lock).
    ///
    /// # Panics
    ///
    /// A waker is user code: if one panics, the others are still woken,
    /// and then the first panic resumes in the caller.
    pub(super) fn wake_all(&self) {
        let wakers = std::mem::take(&mut *self.wakers.lock());
        let mut first_panic = None;
        for waker in wakers {
            if let Err(payload) = std::panic::catch_unwind(AssertUnwindSafe(|| waker.wake())) {
                match first_panic {
                    None => first_panic = Some(payload),
                    Some(_) => drop_quietly(payload),
                }
            }
        }
        if let Some(payload) = first_panic {
            std::panic::resume_unwind(payload);
        }
    }
}
