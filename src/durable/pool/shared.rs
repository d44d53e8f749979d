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
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use crate::base::sync::{Condvar, Mutex};
use crate::durable::store::contained::Store;
use crate::durable::take::acker::Acker;
use crate::durable::take::taker::Taker;

use super::calendar_def::Entry;
use super::job::{HandlerError, JobInfo};

pub(super) type SyncHandler =
    Box<dyn Fn(&[u8], &JobInfo) -> Result<(), HandlerError> + Send + Sync>;

/// A kind's handler: run on a worker thread, or (feature `tokio`) a future
/// run on a tokio runtime (`async_runner.rs`).
pub(super) enum Handler {
    Sync(SyncHandler),
    #[cfg(feature = "tokio")]
    Async(super::async_runner::AsyncHandler),
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
    pub(super) aio: Option<super::async_runner::Aio>,
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
