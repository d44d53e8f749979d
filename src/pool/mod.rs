//! The scheduled thread pool (Java's `ScheduledThreadPoolExecutor`): the
//! state under its lock, submission, cancel and control, the workers, the
//! statistics, the handles, the builder and the public face.
//!
//! Layers inside, each using only those before it: `config`, `hooks`,
//! `stats`, `termination` and `metrics` (plain types; `metrics`, the
//! metric handles, only with the feature of that name); `ready_runs` (the
//! run accounting of the queue's ready batch); `inbox` (due submissions
//! that skip the lock), `submissions` (delayed submissions that skip it
//! while a worker is bound to look) and `removals` (cancels' queue nodes,
//! left for the workers; over `submissions`, whose hand-shake it shares);
//! `state` (everything the pool lock
//! protects); `shared` (the core: submission, requeue, cancel, shutdown,
//! termination); `control` (pause, resume, trigger, reschedule), `report`
//! (run reports and the snapshot) and `sampler` (the metrics sampler
//! thread, feature `metrics`); `worker` (a worker thread's loop); `handle`
//! and `cancel_guard` (the handle that cancels on drop); `executor`
//! (`ScheduledThreadPool`); and above it `periodic`, `calendar` (which
//! uses `periodic`'s submission), `idle` and `builder`, which add their
//! constructors to it; with feature `tokio`, `async_handle` and above it
//! `async_tasks` (async bodies, over `periodic` and `calendar`).

#[cfg(feature = "tokio")]
pub(crate) mod async_handle;
#[cfg(feature = "tokio")]
mod async_tasks;
pub(crate) mod builder;
pub(crate) mod calendar;
pub(crate) mod cancel_guard;
mod config;
mod control;
pub(crate) mod executor;
pub(crate) mod handle;
pub(crate) mod hooks;
pub(crate) mod idle;
mod inbox;
#[cfg(feature = "metrics")]
mod metrics;
pub(crate) mod periodic;
pub(crate) mod ready_runs;
mod removals;
mod report;
mod run_state;
#[cfg(feature = "metrics")]
mod sampler;
pub(crate) mod shared;
mod state;
pub(crate) mod stats;
mod submissions;
mod termination;
mod worker;
