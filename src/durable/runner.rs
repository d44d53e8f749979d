//! The worker side of a `DurablePool`: the shared `Inner`, each worker's
//! loop, and how a run's outcome settles its item.
//!
//! Invariants:
//!
//! - Every claimed item is settled exactly once by the worker that ran it:
//!   acked (or rescheduled, for a periodic chain) after its handler
//!   returned `Ok`; nacked with backoff after an error or panic; dead-lettered
//!   once `max_attempts` claims failed. A settle the store refuses means the
//!   lease was lost; a settle that cannot reach the store leaves the item to
//!   come back after its lease. Either way nothing is dropped.
//! - `busy` counts workers between a claim and its settle; `running` counts
//!   live worker threads. Both change under `State`'s lock and notify `cv`,
//!   which `wait_idle` and `await_termination` wait on.

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::base::sync::{Condvar, Mutex};

use super::backend::{Claimed, DurableError};
use super::delivery::Delivery;
use super::envelope;
use super::job::{HandlerError, JobInfo};
use super::taker::Taker;

pub(super) type Handler = Box<dyn Fn(&[u8], &JobInfo) -> Result<(), HandlerError> + Send + Sync>;

pub(super) struct Inner {
    /// No workers: any kind may be scheduled.
    pub(super) producer_only: bool,
    pub(super) taker: Taker,
    pub(super) handlers: HashMap<String, Handler>,
    pub(super) backoff: (Duration, Duration),
    pub(super) state: Mutex<State>,
    pub(super) cv: Condvar,
    pub(super) counters: Counters,
}

#[derive(Default)]
pub(super) struct State {
    pub(super) running: usize,
    pub(super) busy: usize,
    pub(super) shutdown: bool,
}

#[derive(Default)]
pub(super) struct Counters {
    pub(super) succeeded: AtomicU64,
    pub(super) failed: AtomicU64,
    pub(super) retried: AtomicU64,
    pub(super) dead_lettered: AtomicU64,
    pub(super) lease_lost: AtomicU64,
    pub(super) deferred: AtomicU64,
}

impl Inner {
    pub(super) fn work(self: Arc<Self>) {
        loop {
            let claimed = match self.taker.take(None) {
                Ok(Some(c)) => c,
                Ok(None) => break,
                // `take(None)` retries store failures itself; an error here
                // means nothing was claimed.
                Err(_) => continue,
            };
            self.state.lock().busy += 1;
            self.run(claimed);
            let mut s = self.state.lock();
            s.busy -= 1;
            self.cv.notify_all();
        }
        let mut s = self.state.lock();
        s.running -= 1;
        self.cv.notify_all();
    }

    fn run(&self, mut claimed: Claimed) {
        let bytes = std::mem::take(&mut claimed.envelope);
        let env = match envelope::open(&bytes) {
            Ok(env) => env,
            Err(err) => {
                tracing::error!(target: "schedpool::durable", id = %claimed.id, error = %err,
                    "undecodable item moved to the dead-letter set");
                let d = Delivery::new(claimed, (), "", None, &self.taker.leases);
                self.count_settle(d.dead_letter(), &self.counters.dead_lettered);
                return;
            }
        };
        let delivery = Delivery::new(claimed, (), env.kind, env.repeat, &self.taker.leases);
        let info = JobInfo {
            id: delivery.id().to_string(),
            kind: env.kind.to_string(),
            attempt: delivery.attempt(),
            token: delivery.token(),
            deadline_ms: delivery.deadline_ms(),
            claimed_ms: delivery.claimed_ms(),
            lateness: delivery.lateness(),
            lease: delivery.lease_cell(),
        };
        let span = tracing::info_span!(
            target: "schedpool::durable",
            "task",
            id = %info.id,
            kind = %info.kind,
            attempt = info.attempt,
            token = info.token,
            lateness_ms = info.lateness.as_millis() as u64,
        );
        let _entered = span.enter();
        let Some(handler) = self.handlers.get(env.kind) else {
            // Another process (a newer deploy) may have the handler: give
            // the item back without using up an attempt, after a pause so
            // this process does not spin on it.
            let pause = self.backoff.0;
            tracing::warn!(target: "schedpool::durable", retry_in_ms = pause.as_millis() as u64,
                "no handler for this kind in this process; deferred for another");
            self.count_settle(delivery.defer(pause), &self.counters.deferred);
            return;
        };
        let outcome = match catch_unwind(AssertUnwindSafe(|| handler(env.payload, &info))) {
            Ok(result) => result.map_err(|e| e.to_string()),
            Err(panic) => Err(format!(
                "panicked: {}",
                crate::base::error::panic_message(&*panic)
            )),
        };
        match outcome {
            Ok(()) => {
                let settled = match delivery.repeat() {
                    Some(repeat) => delivery.reschedule(repeat).map(drop),
                    None => delivery.ack(),
                };
                self.count_settle(settled, &self.counters.succeeded);
            }
            Err(why) => {
                self.counters.failed.fetch_add(1, Ordering::Relaxed);
                let max = self.taker.opts.max_attempts;
                if max > 0 && info.attempt >= max {
                    tracing::error!(target: "schedpool::durable", error = %why,
                        "run failed; attempts exhausted, moved to the dead-letter set");
                    self.count_settle(delivery.dead_letter(), &self.counters.dead_lettered);
                } else {
                    let backoff = self.backoff(info.attempt);
                    tracing::warn!(target: "schedpool::durable", error = %why,
                        retry_in_ms = backoff.as_millis() as u64, "run failed; will retry");
                    self.count_settle(delivery.nack(backoff), &self.counters.retried);
                }
            }
        }
    }

    fn backoff(&self, attempt: u32) -> Duration {
        let (base, max) = self.backoff;
        let factor = 1u32 << attempt.saturating_sub(1).min(20);
        base.saturating_mul(factor).min(max)
    }

    fn count_settle(&self, settled: Result<(), DurableError>, on_ok: &AtomicU64) {
        match settled {
            Ok(()) => {
                on_ok.fetch_add(1, Ordering::Relaxed);
            }
            Err(DurableError::LeaseLost) => {
                self.counters.lease_lost.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(target: "schedpool::durable",
                    "lease lost before the settle: another holder has the item, or it was cancelled");
            }
            Err(err) => tracing::warn!(target: "schedpool::durable", error = %err,
                "could not settle; the item returns when its lease expires"),
        }
    }
}
