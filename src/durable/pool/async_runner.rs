//! Async handlers of a `DurablePool` (feature `tokio`): a worker that
//! claims an item of an async kind starts its future on the pool's tokio
//! runtime and goes back to claiming; the pool's settler thread settles
//! each run once its future is done (an impl block of `shared.rs`'s
//! `Inner`; the types it uses live in `shared.rs` beside `Inner`, which
//! holds them).
//!
//! Invariants:
//!
//! - No store call runs on a runtime thread: the task only awaits the
//!   handler's future and sends its outcome to the settler thread (a
//!   channel send never blocks); the settle (ack through the acker, nack,
//!   reschedule, bury) runs there, with the sync handlers' code
//!   (`runner.rs`'s `settle_run`), so an async run's failures, retries,
//!   dead letters and fencing are exactly a sync run's.
//! - The delivery lives in the task until its outcome is sent, so its
//!   lease is heartbeated while the future awaits; a task dropped before
//!   that (its runtime shut down, say) drops the delivery, which releases
//!   the item.
//! - A kind runs at most its `limit` futures at once: a worker takes a slot
//!   of the kind under `State`'s lock before it starts one (waiting on `cv`
//!   while they are all taken; releasing the item if the pool shuts down
//!   meanwhile), and the slot is given back after the run's settle was
//!   handed on, or when its task is dropped. `async_busy` counts the slots
//!   taken, so `wait_idle` and `await_termination` cover the runs.
//! - The settler thread counts in `running`; it exits once the pool is shut
//!   down, every worker has exited and no slot is taken, and the acker is
//!   closed by whichever of the workers and the settler goes last.

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::task::{Context, Poll};

use crate::base::error::{panic_message, quietly};

use super::async_job::AsyncJob;
use super::job::HandlerError;
use super::shared::{AsyncHandler, AsyncRun, BoxRun, Done, Inner, Msg, Slot};

/// A future whose panic is its output's `Err` (the panic's message).
struct CatchUnwind(BoxRun);

impl Future for CatchUnwind {
    type Output = Result<Result<(), HandlerError>, String>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match catch_unwind(AssertUnwindSafe(|| self.0.as_mut().poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(out)) => Poll::Ready(Ok(out)),
            Err(panic) => Poll::Ready(Err(panic_message(&*panic))),
        }
    }
}

impl Inner {
    /// Starts `run`'s future on the runtime once its kind has a free slot,
    /// and returns: the settler settles it when it is done.
    pub(super) fn dispatch(
        self: &Arc<Self>,
        handler: &AsyncHandler,
        payload: &[u8],
        run: AsyncRun,
    ) {
        let aio = self
            .aio
            .as_ref()
            .expect("a pool with async handlers has its runtime");
        let kind = run.info.kind.clone();
        {
            let mut s = self.state.lock();
            loop {
                let taken = s.async_by_kind.get(&kind).copied().unwrap_or(0);
                if taken < handler.limit {
                    break;
                }
                if s.shutdown {
                    // Claimed but not started: give it back at once (the
                    // delivery's drop releases it through the heartbeat).
                    drop(s);
                    drop(run);
                    return;
                }
                self.cv.wait(&mut s);
            }
            *s.async_by_kind.entry(kind.clone()).or_default() += 1;
            s.async_busy += 1;
        }
        let slot = Slot {
            inner: self.clone(),
            kind,
        };
        let job = AsyncJob {
            info: run.info.clone(),
        };
        let made = catch_unwind(AssertUnwindSafe(|| (handler.make)(payload, job)));
        let tx = aio.tx.clone();
        let span = run.span.clone();
        let task = async move {
            let outcome = match made {
                Ok(Ok(future)) => match CatchUnwind(future).await {
                    Ok(Ok(())) => Ok(()),
                    Ok(Err(err)) => Err(quietly(|| err.to_string())
                        .unwrap_or_else(|| "an error whose Display panicked".into())),
                    Err(panic) => Err(format!("panicked: {panic}")),
                },
                Ok(Err(err)) => Err(err.to_string()),
                Err(panic) => Err(format!("panicked: {}", panic_message(&*panic))),
            };
            // Never blocks; the settler is alive while a slot is taken.
            let _ = tx.send(Msg::Done(Box::new(Done { run, outcome, slot })));
        };
        drop(
            aio.runtime
                .spawn(tracing::Instrument::instrument(task, span)),
        );
    }

    /// The settler thread's body: settles finished async runs until the
    /// pool is shut down, its workers have exited and no run is left.
    pub(super) fn settle_async(self: Arc<Self>, rx: Receiver<Msg>) {
        loop {
            if let Ok(Msg::Done(done)) = rx.recv() {
                let Done { run, outcome, slot } = *done;
                let AsyncRun {
                    delivery,
                    info,
                    after,
                    span,
                } = run;
                quietly(|| {
                    let _entered = span.enter();
                    self.settle_run(delivery, &info, after, outcome);
                });
                drop(slot);
            }
            let mut s = self.state.lock();
            if s.shutdown && s.workers == 0 && s.async_busy == 0 {
                s.settler = false;
                s.running -= 1;
                if s.workers == 0 {
                    self.acker.close();
                }
                self.cv.notify_all();
                return;
            }
        }
    }
}
