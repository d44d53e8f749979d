//! The worker side of a `DurablePool`: each worker's loop, the acker
//! thread's, and how a run's outcome settles its item (an impl block of
//! `shared.rs`'s `Inner`).
//!
//! Invariants:
//!
//! - Every claimed item is settled exactly once: a one-shot whose handler
//!   returned `Ok` is acked by the pool's acker (`acker.rs`), many in one
//!   store call; the worker that ran it settles everything else itself
//!   (reschedules a periodic chain or a calendar schedule, whose other
//!   settles `calendar_fire.rs` plans; nacks with backoff after an error or
//!   panic; dead-letters once `max_attempts` claims failed). A settle the
//!   store refuses means the lease was lost; a settle that cannot reach the
//!   store leaves the item to come back after its lease. Either way nothing
//!   is dropped.
//! - `busy` counts workers between a claim and the hand-off of its settle
//!   (a worker hands an ack to the acker before it stops counting, and the
//!   acker counts it until its outcome is reported); `workers` counts live
//!   worker threads and `running` live threads (workers and the acker).
//!   They change under `State`'s lock and notify `cv`, which `wait_idle`
//!   and `await_termination` wait on. The last worker to exit closes the
//!   acker, which exits once it has sent every ack.
//! - The taker's prefetch follows the handlers' speed: a claim takes ahead
//!   about as many items as the workers run in `BUFFER_TARGET`, so a batch
//!   of fast jobs costs one claim, and a slow handler's pool claims only
//!   for its idle workers.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::base::error::quietly;

use crate::durable::store::envelope;
use crate::durable::store::error::DurableError;
use crate::durable::take::acker::Outcome;
use crate::durable::take::delivery::Delivery;
use crate::durable::take::settle::Verb;
use crate::durable::take::taker::Taken;

use super::calendar_def;
use super::calendar_fire::{self, Decided, Fire, Plan};
use super::job::JobInfo;
use super::shared::{After, Handler, Inner};

/// How long the items a claim takes ahead should last the workers: short
/// against the 50 ms a new item may wait, long against a claim's round trip.
const BUFFER_TARGET: Duration = Duration::from_millis(10);

/// How long a worker pauses after its take unwound (through a subscriber
/// that panicked while the taker logged a failed claim, say), as the
/// taker's own backoff would have after the failure.
const UNWOUND_TAKE_PAUSE: Duration = Duration::from_millis(50);

/// The most items a claim takes ahead (the backends lease at most 100 a
/// claim anyway).
const MAX_PREFETCH: usize = 100;

impl Inner {
    /// A worker thread's body.
    pub(super) fn work(self: Arc<Self>) {
        loop {
            let taken = match quietly(|| self.taker.take(None)) {
                Some(Ok(Some(t))) => t,
                Some(Ok(None)) => break,
                // `take(None)` retries store failures itself; an error here
                // means nothing was claimed.
                Some(Err(_)) => continue,
                // It unwound (a tracing subscriber that panicked while it
                // logged, say): its turn is handed on (`taker.rs`'s
                // `Marks`); pause, as its backoff would have.
                None => {
                    std::thread::sleep(UNWOUND_TAKE_PAUSE);
                    continue;
                }
            };
            self.state.lock().busy += 1;
            // The handler runs inside its own `catch_unwind`; what runs
            // around it can still unwind: the `Display` or `Drop` of the
            // error it returned, a schedule's `Debug`, a tracing
            // subscriber (all user code). The worker must outlive that
            // with its counts right, or the pool never terminates: the
            // run's item, if unsettled, goes back by `Delivery`'s drop.
            quietly(|| self.run(taken));
            let mut s = self.state.lock();
            s.busy -= 1;
            self.cv.notify_all();
        }
        let mut s = self.state.lock();
        s.workers -= 1;
        s.running -= 1;
        if s.workers == 0 && !s.settler {
            self.acker.close();
        }
        self.cv.notify_all();
        #[cfg(feature = "tokio")]
        if s.workers == 0 {
            if let Some(aio) = &self.aio {
                // The settler may be waiting for the last worker.
                aio.check();
            }
        }
    }

    /// The acker thread's body: sends the workers' acks until the last
    /// worker has exited and every ack is sent.
    pub(super) fn ack(self: Arc<Self>) {
        self.acker.run(|outcome| match outcome {
            Outcome::Acked => self.count_settle(Ok(()), &self.counters.succeeded),
            Outcome::LeaseLost { id, token } => {
                self.counters.lease_lost.fetch_add(1, Ordering::Relaxed);
                // Contained: a subscriber that panicked would kill the only
                // thread that sends the acks, and the pool would never
                // terminate.
                quietly(|| tracing::warn!(target: "schedpool::durable", id, token,
                    "lease lost before the ack: another holder has the item, or it was cancelled"));
            }
            Outcome::Failed { id, error } => {
                quietly(|| tracing::warn!(target: "schedpool::durable", id,
                error = %error,
                "ack failed or unanswered (a batch split over several store calls may have landed in part); if the store did not record it, the item returns when its lease expires"));
            }
        });
        let mut s = self.state.lock();
        s.running -= 1;
        self.cv.notify_all();
    }

    fn run(self: &Arc<Self>, mut taken: Taken) {
        let bytes = std::mem::take(&mut taken.claimed.envelope);
        let env = match envelope::open(&bytes) {
            Ok(env) => env,
            Err(err) => {
                tracing::error!(target: "schedpool::durable", id = %taken.claimed.id, error = %err,
                    "undecodable item moved to the dead-letter set");
                let d = Delivery::new(taken, (), "", None, &self.taker.leases);
                self.count_settle(d.dead_letter_with(&err), &self.counters.dead_lettered);
                return;
            }
        };
        let delivery = Delivery::new(taken, (), env.kind, env.repeat, &self.taker.leases);
        let (kind, payload, after) = if env.kind == calendar_def::KIND {
            match self.plan_fire(&delivery, &bytes, env.payload) {
                Ok(fire) => (fire.kind, fire.payload, After::NextFire(fire.entry)),
                Err(plan) => return self.settle_plan(delivery, plan),
            }
        } else {
            let after = delivery.repeat().map_or(After::Ack, After::Repeat);
            (env.kind, env.payload, after)
        };
        let info = JobInfo {
            id: delivery.id().to_string(),
            kind: kind.to_string(),
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
        let Some(handler) = self.handlers.get(kind) else {
            // Another process (a newer deploy) may have the handler: give
            // the item back without using up an attempt, after a pause so
            // this process does not spin on it.
            return self.defer(
                delivery,
                "no handler for this kind in this process; deferred for another",
            );
        };
        #[cfg_attr(not(feature = "tokio"), allow(clippy::infallible_destructuring_match))]
        let handler = match handler {
            Handler::Sync(handler) => handler,
            #[cfg(feature = "tokio")]
            Handler::Async(handler) => {
                let run = super::shared::AsyncRun {
                    delivery,
                    info,
                    after,
                    span: span.clone(),
                };
                return self.dispatch(handler, payload, run);
            }
        };
        let started = Instant::now();
        let outcome = match catch_unwind(AssertUnwindSafe(|| handler(payload, &info))) {
            Ok(result) => result.map_err(|e| e.to_string()),
            Err(panic) => Err(format!(
                "panicked: {}",
                crate::base::error::panic_message(&*panic)
            )),
        };
        self.observe_run(started.elapsed());
        self.settle_run(delivery, &info, after, outcome);
    }

    /// Settles a run by its outcome: a one-shot's ack goes to the acker; a
    /// chain or a calendar schedule is rescheduled; a failure is retried
    /// with backoff or, on its last allowed attempt, dead-lettered.
    pub(super) fn settle_run(
        &self,
        delivery: Delivery<()>,
        info: &JobInfo,
        after: After,
        outcome: Result<(), String>,
    ) {
        match outcome {
            Ok(()) => {
                let settled = match after {
                    After::Ack => return self.hand_ack(delivery),
                    After::Repeat(repeat) => delivery.reschedule(repeat).map(drop),
                    After::NextFire(entry) => {
                        match calendar_fire::after_run(&entry, info.deadline_ms) {
                            Ok(repeat) => delivery.reschedule(repeat).map(drop),
                            Err(why) => return self.settle_plan(delivery, Plan::Broken(why)),
                        }
                    }
                };
                self.count_settle(settled, &self.counters.succeeded);
            }
            Err(why) => {
                self.counters.failed.fetch_add(1, Ordering::Relaxed);
                let max = self.taker.opts.max_attempts;
                if max > 0 && info.attempt >= max {
                    tracing::error!(target: "schedpool::durable", error = %why,
                        "run failed; attempts exhausted, moved to the dead-letter set");
                    self.count_settle(
                        delivery.dead_letter_with(&why),
                        &self.counters.dead_lettered,
                    );
                } else {
                    let backoff = self.backoff(info.attempt);
                    tracing::warn!(target: "schedpool::durable", error = %why,
                        retry_in_ms = backoff.as_millis() as u64, "run failed; will retry");
                    self.count_settle(delivery.nack(backoff), &self.counters.retried);
                }
            }
        }
    }

    /// Plans a claimed calendar schedule with this process's registration.
    fn plan_fire<'a>(
        &self,
        delivery: &Delivery<()>,
        envelope: &[u8],
        record: &'a [u8],
    ) -> Result<Fire<'a>, Plan> {
        let entry = self.state.lock().calendars.get(delivery.id()).cloned();
        calendar_fire::plan(
            delivery.id(),
            entry,
            envelope,
            record,
            delivery.deadline_ms(),
            delivery.claimed_ms(),
        )
    }

    /// Settles a calendar claim that runs nothing here.
    fn settle_plan(&self, delivery: Delivery<()>, plan: Plan) {
        match plan {
            Plan::Defer(why) => self.defer(delivery, &why),
            Plan::Broken(why) => {
                tracing::error!(target: "schedpool::durable", id = %delivery.id(), error = %why,
                    "calendar schedule moved to the dead-letter set");
                self.count_settle(
                    delivery.dead_letter_with(&why),
                    &self.counters.dead_lettered,
                );
            }
            Plan::Move(decided) => {
                let Decided {
                    repeat,
                    policy,
                    skipped,
                    coalesced,
                    report,
                } = *decided;
                let id = delivery.id().to_string();
                if self.settled(delivery.reschedule(repeat).map(drop)) {
                    let c = &self.counters;
                    c.fires_skipped.fetch_add(skipped.count, Ordering::Relaxed);
                    c.fires_coalesced
                        .fetch_add(coalesced.count, Ordering::Relaxed);
                    tracing::warn!(target: "schedpool::durable", schedule = %id, policy,
                        skipped = skipped.count, coalesced = coalesced.count,
                        skipped_fires = %skipped, coalesced_fires = %coalesced, "{report}");
                }
            }
        }
    }

    /// Gives an item back unrun, after a pause so that this process does
    /// not spin on it; the attempt is not counted.
    fn defer(&self, delivery: Delivery<()>, why: &str) {
        let pause = self.backoff.0;
        tracing::warn!(target: "schedpool::durable", id = %delivery.id(),
            retry_in_ms = pause.as_millis() as u64, "{why}");
        self.count_settle(delivery.defer(pause), &self.counters.deferred);
    }

    /// Hands a one-shot's ack to the pool's acker, which sends many in one
    /// store call and counts the outcome.
    fn hand_ack(&self, delivery: Delivery<()>) {
        if let Err(lease) = self.acker.submit(delivery.hand_off()) {
            // Only after the last worker exited; ack it here.
            let settled = self.taker.leases.settle(&lease, Verb::Ack).map(drop);
            self.count_settle(settled, &self.counters.succeeded);
        }
    }

    /// Folds one handler run into the moving average, and sizes the
    /// taker's prefetch from it: about `BUFFER_TARGET` of work for all
    /// workers, beyond the one item each claims for itself.
    fn observe_run(&self, took: Duration) {
        let sample = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX).max(1);
        let old = self.run_ns.load(Ordering::Relaxed);
        let avg = if old == 0 {
            sample
        } else {
            old - old / 8 + sample / 8
        };
        self.run_ns.store(avg.max(1), Ordering::Relaxed);
        let target = BUFFER_TARGET.as_nanos() as u64;
        let items = (target / avg.max(1)).saturating_mul(self.threads as u64);
        let ahead = usize::try_from(items)
            .unwrap_or(usize::MAX)
            .saturating_sub(self.threads)
            .min(MAX_PREFETCH);
        self.taker.set_prefetch(ahead);
    }

    fn backoff(&self, attempt: u32) -> Duration {
        let (base, max) = self.backoff;
        let factor = 1u32 << attempt.saturating_sub(1).min(20);
        base.saturating_mul(factor).min(max)
    }

    fn count_settle(&self, settled: Result<(), DurableError>, on_ok: &AtomicU64) {
        if self.settled(settled) {
            on_ok.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// True when the settle went through; reports why not otherwise.
    fn settled(&self, settled: Result<(), DurableError>) -> bool {
        match settled {
            Ok(()) => return true,
            Err(DurableError::LeaseLost) => {
                self.counters.lease_lost.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(target: "schedpool::durable",
                    "lease lost before the settle: another holder has the item, or it was cancelled");
            }
            Err(err) => tracing::warn!(target: "schedpool::durable", error = %err,
                "could not settle; the item returns when its lease expires"),
        }
        false
    }
}
