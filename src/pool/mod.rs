//! The scheduled thread pool (Java's `ScheduledThreadPoolExecutor`): the
//! state under its lock, submission, cancel and control, the workers, the
//! statistics, the handles, the builder and the public face.
//!
//! Layers inside, each using only those before it: `config`, `hooks` and
//! `stats` (plain types); `inbox` (submissions that skip the lock);
//! `state` (everything the pool lock protects); `shared` (the core:
//! submission, requeue, cancel, shutdown, termination); `control` (pause,
//! resume, trigger, reschedule) and `report` (run reports and the
//! snapshot); `worker` (a worker thread's loop); `handle`; `executor`
//! (`ScheduledThreadPool`); and above it `periodic`, `idle` and `builder`,
//! which add their constructors to it.

pub(crate) mod builder;
mod config;
mod control;
pub(crate) mod executor;
pub(crate) mod handle;
pub(crate) mod hooks;
pub(crate) mod idle;
mod inbox;
pub(crate) mod periodic;
mod report;
pub(crate) mod shared;
mod state;
pub(crate) mod stats;
mod worker;
