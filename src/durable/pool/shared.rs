//! The state every part of a `DurablePool` shares: `Inner` (the store,
//! the taker, the acker, the handlers, the settings, the counters) and
//! `State`, what its lock protects.
//!
//! Invariants (kept by `runner.rs`, read by `durable_pool.rs`):
//!
//! - `store` is the one contained handle of the pool's backend: the
//!   producer verbs (schedule, cancel, counts) call it directly; the
//!   taker, the leases and the acker hold clones of it.
//! - `busy`, `workers`, `running`, `async_busy` (with `async_by_kind`)
//!   and `settler` change under `state`'s lock and notify `cv` (see
//!   `runner.rs` and `async_runner.rs`).

use std::collections::HashMap;
#[cfg(feature = "tokio")]
use std::future::Future;
#[cfg(feature = "tokio")]
use std::pin::Pin;
use std::sync::atomic::AtomicU64;
#[cfg(feature = "tokio")]
use std::sync::mpsc::{Receiver, Sender};
use std::sync::Arc;
use std::time::Duration;

use crate::base::sync::{Condvar, Mutex};
use crate::durable::store::backend::Repeat;
use crate::durable::store::contained::Store;
use crate::durable::take::acker::Acker;
#[cfg(feature = "tokio")]
use crate::durable::take::delivery::Delivery;
use crate::durable::take::taker::Taker;

#[cfg(feature = "tokio")]
use super::async_job::AsyncJob;
use super::calendar_def::Entry;
use super::job::{HandlerError, JobInfo};

pub(super) type SyncHandler =
    Box<dyn Fn(&[u8], &JobInfo) -> Result<(), HandlerError> + Send + Sync>;

/// A kind's handler: run on a worker thread, or (feature `tokio`) a future
/// run on a tokio runtime (`async_runner.rs`).
pub(super) enum Handler {
    Sync(SyncHandler),
    #[cfg(feature = "tokio")]
    Async(AsyncHandler),
}

pub(super) struct Inner {
    /// The pool's backend, contained.
    pub(super) store: Store,
    /// No workers: any kind may be scheduled.
    pub(super) producer_only: bool,
    pub(super) threads: usize,
    pub(super) taker: Taker,
    pub(super) acker: Acker,
    pub(super) handlers: HashMap<String, Handler>,
    pub(super) backoff: (Duration, Duration),
    pub(super) state: Mutex<State>,
    pub(super) cv: Condvar,
    pub(super) counters: Counters,
    /// Wakes the metrics sampler at shutdown (feature `metrics`; with
    /// `state`'s lock, as `cv`).
    #[cfg(feature = "metrics")]
    pub(super) sampler: Condvar,
    /// A moving average of the handlers' run time, in ns (0: none yet).
    pub(super) run_ns: AtomicU64,
    /// Where async handlers run, and where their outcomes are settled
    /// (feature `tokio`; `None` without async handlers).
    #[cfg(feature = "tokio")]
    pub(super) aio: Option<Aio>,
}

#[derive(Default)]
pub(super) struct State {
    pub(super) running: usize,
    pub(super) workers: usize,
    pub(super) busy: usize,
    pub(super) shutdown: bool,
    /// The calendar schedules this process registered, by id.
    pub(super) calendars: HashMap<String, Arc<Entry>>,
    /// Async runs by kind, from dispatch until their settle is handed on
    /// (or their task was dropped); their sum is `async_busy`.
    #[cfg(feature = "tokio")]
    pub(super) async_by_kind: HashMap<String, usize>,
    #[cfg(feature = "tokio")]
    pub(super) async_busy: usize,
    /// The settler thread of async runs is alive (it counts in `running`,
    /// not in `workers`; the acker closes once both are gone).
    pub(super) settler: bool,
}

#[derive(Default)]
pub(super) struct Counters {
    pub(super) succeeded: AtomicU64,
    pub(super) failed: AtomicU64,
    pub(super) retried: AtomicU64,
    pub(super) dead_lettered: AtomicU64,
    pub(super) lease_lost: AtomicU64,
    pub(super) deferred: AtomicU64,
    pub(super) fires_skipped: AtomicU64,
    pub(super) fires_coalesced: AtomicU64,
}

/// How an item settles after its handler returned `Ok`.
pub(super) enum After {
    /// A one-shot: ack.
    Ack,
    /// A durable chain: ack and put back at the next occurrence.
    Repeat(Repeat),
    /// A calendar schedule: ack and put back at the rule's next fire.
    NextFire(Arc<Entry>),
}

// The async side (feature `tokio`): what a handler makes, the runtime, and
// what the settler thread receives (`async_runner.rs` runs them).

#[cfg(feature = "tokio")]
/// A handler's future, boxed.
pub(super) type BoxRun = Pin<Box<dyn Future<Output = Result<(), HandlerError>> + Send>>;

#[cfg(feature = "tokio")]
/// Makes a run's future from the payload's bytes (the decode error, if
/// any, is the run's failure).
pub(super) type MakeRun =
    Box<dyn Fn(&[u8], AsyncJob) -> Result<BoxRun, HandlerError> + Send + Sync>;

#[cfg(feature = "tokio")]
/// An async kind's handler and its concurrency limit.
pub(super) struct AsyncHandler {
    pub(super) make: MakeRun,
    pub(super) limit: usize,
}

#[cfg(feature = "tokio")]
/// The pool's async side: the runtime its futures run on, and the
/// settler's channel.
pub(super) struct Aio {
    pub(super) runtime: tokio::runtime::Handle,
    pub(super) tx: Sender<Msg>,
}

#[cfg(feature = "tokio")]
impl Aio {
    /// The runtime, and the receiving end for the settler thread.
    pub(super) fn new(runtime: tokio::runtime::Handle) -> (Self, Receiver<Msg>) {
        let (tx, rx) = std::sync::mpsc::channel();
        (Aio { runtime, tx }, rx)
    }

    /// Wakes the settler to look whether it may exit.
    pub(super) fn check(&self) {
        let _ = self.tx.send(Msg::Check);
    }
}

#[cfg(feature = "tokio")]
/// What the settler thread receives.
pub(super) enum Msg {
    Done(Box<Done>),
    /// Look whether the pool is done.
    Check,
}

#[cfg(feature = "tokio")]
/// A finished run, to settle.
pub(super) struct Done {
    pub(super) run: AsyncRun,
    pub(super) outcome: Result<(), String>,
    /// Given back after the settle.
    pub(super) slot: Slot,
}

#[cfg(feature = "tokio")]
/// A claimed item of an async kind, about to run.
pub(super) struct AsyncRun {
    pub(super) delivery: Delivery<()>,
    pub(super) info: JobInfo,
    pub(super) after: After,
    pub(super) span: tracing::Span,
}

#[cfg(feature = "tokio")]
/// One of a kind's slots, taken: given back (and the waiters woken) on drop.
pub(super) struct Slot {
    pub(super) inner: Arc<Inner>,
    pub(super) kind: String,
}

#[cfg(feature = "tokio")]
impl Drop for Slot {
    fn drop(&mut self) {
        let mut s = self.inner.state.lock();
        if let Some(n) = s.async_by_kind.get_mut(&self.kind) {
            *n -= 1;
        }
        s.async_busy -= 1;
        let last = s.shutdown && s.async_busy == 0;
        drop(s);
        self.inner.cv.notify_all();
        if last {
            if let Some(aio) = &self.inner.aio {
                aio.check();
            }
        }
    }
}
