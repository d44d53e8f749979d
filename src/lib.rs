//! # schedpool
//!
//! A scheduled thread pool and a delay queue: Java's
//! `ScheduledThreadPoolExecutor` and `DelayQueue`, ported with their
//! semantics, plus a cancel that never waits on the pool lock, drops the
//! closure and uncounts the task at once, and leaves its queue node to
//! the workers, which reclaim it within 10 ms (see
//! [`ScheduledHandle::cancel`] for the exact promise), async handles and
//! a virtual clock for tests.
//!
//! ```
//! use std::time::Duration;
//! use schedpool::ScheduledThreadPool;
//!
//! let pool = ScheduledThreadPool::new(2);
//!
//! // Close an unpaid order after its payment window ...
//! let timeout = pool.schedule(|| "order 42 closed", Duration::from_millis(50))?;
//! // ... unless it is paid first: cancel drops the closure at once.
//! let paid = pool.schedule(|| "order 43 closed", Duration::from_millis(50))?;
//! assert!(paid.cancel());
//!
//! assert_eq!(timeout.join()?, "order 42 closed");
//! assert!(pool.shutdown().await_termination(Duration::from_secs(5)));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## A tour
//!
//! - [`ScheduledThreadPool`]: `execute`, `submit`, `schedule`,
//!   `schedule_at_fixed_rate`, `schedule_with_fixed_delay`; `shutdown`,
//!   `shutdown_now`, `await_termination`; counters. Configure it with a
//!   [`Builder`].
//! - [`ScheduledHandle`]: `cancel`, `is_done`, `delay`, `wait_timeout`,
//!   `join`, and `.await` (it is a `Future`, with no runtime dependency).
//!   Dropping it detaches the task; [`CancelOnDrop`]
//!   (`handle.cancel_on_drop()`) cancels it on drop instead.
//! - [`DelayQueue`]: a blocking queue of [`Delayed`] elements (or
//!   [`DelayItem`]s) that come out once due; [`Key`]s remove them in
//!   O(log n).
//! - [`Periodic`] (from `pool.at_fixed_rate(p)` or `pool.with_fixed_delay(d)`):
//!   periodic tasks with a [`MissedTicks`] policy (burst, skip, delay), an
//!   [`OnFailure`] policy (stop, continue, backoff) for runs that panic or
//!   return `Err`, run limits, jitter and
//!   bodies that choose their next delay. Handles pause, resume, trigger
//!   and re-period them.
//! - [`OnCalendar`] (from `pool.on_calendar(schedule)`, or
//!   `pool.schedule_calendar`): calendar tasks, run at the wall-clock fire
//!   times of a [`calendar::Schedule`] (a rule of your own, or with the
//!   `calendar` feature a cron expression, a daily time or an aligned
//!   interval in an IANA time zone, with daylight-saving policies), never
//!   early by the wall clock, with a periodic task's handle and controls.
//! - Async bodies (feature `tokio`): `pool.schedule_async(|| async { .. }, delay)`
//!   and `start_async` on [`Periodic`] and [`OnCalendar`] run a future per run on
//!   a tokio runtime while the pool keeps the timing; the `AsyncHandle` adds
//!   `abort` and gives the future's output (guide section 11).
//! - [`IdleTimer`] (`pool.idle_timer`): fires once its subject has been idle
//!   for a while; `touch()` pushes it back without a heap operation.
//! - [`ManualClock`]: virtual time. Give it to a pool or queue, then
//!   `advance` it: a 30-minute timeout fires in microseconds.
//! - Hooks and numbers: a failure handler and before/after hooks on the
//!   [`Builder`], [`RunInfo::current`] inside a run, and
//!   [`ScheduledThreadPool::stats`] with a lateness histogram.
//! - [`durable`]: timeouts that survive restarts and are shared by a fleet.
//!   A `DurableQueue` and a `DurablePool` run over a `DurableBackend`. The
//!   backend is Redis with the `redis` feature, PostgreSQL with the
//!   `postgres` feature, or in memory on a [`ManualClock`] for tests. Time is the store's clock, delivery is at
//!   least once with fenced leases, and cancel by id takes O(log n).
//! - Errors are values: [`Rejected`] for refused submissions, [`TaskError`]
//!   for tasks that were cancelled, panicked or failed; periodic bodies
//!   return `Result` for failures. Nothing panics on bad input.
//!
//! ## Guarantees
//!
//! - Never early: a task or element is not run or returned before its
//!   deadline. Equal deadlines come out in submission order.
//! - Nothing accepted is lost: every accepted task runs, is cancelled, or
//!   is returned by `shutdown_now`.
//! - A periodic task never runs concurrently with itself.
//!
//! ## Observability
//!
//! Each run happens inside a `tracing` span named `task` (target
//! `schedpool::task`) with the fields `id`, `kind` (`once`, `fixed_rate`,
//! `fixed_delay`, `calendar`, or `idle` for an idle timer) and `lateness_us`. A panic
//! emits an `ERROR` event carrying the message (an `Err` a body returns, a
//! "task failed" `ERROR` event with its text); rejections emit `DEBUG`,
//! shutdown `INFO`, and pool starvation (due tasks waiting for a worker past
//! [`Builder::starvation_threshold`]) `WARN` events. With no subscriber the
//! cost is a branch.
//!
//! ## Metrics (feature `metrics`)
//!
//! With the `metrics` feature, both pools publish through the [`metrics`](https://docs.rs/metrics)
//! crate's facade, so any exporter (Prometheus, StatsD, ...) gets them.
//! A pool registers its metrics once, when it is built, with the recorder
//! installed then: install the exporter first. Each metric has the label
//! `pool`: a [`ScheduledThreadPool`]'s [`Builder::thread_name`] prefix, or
//! a `DurablePool`'s `DurablePoolBuilder::name`, so pools in one process
//! are told apart (give them different names). Times are in seconds.
//!
//! | name | type | unit | labels | what |
//! |---|---|---|---|---|
//! | `schedpool_scheduled_total` | counter | count | `pool` | tasks accepted (a periodic task counts once) |
//! | `schedpool_ran_total` | counter | count | `pool` | runs started (every periodic run counts) |
//! | `schedpool_cancelled_total` | counter | count | `pool` | tasks cancelled: by their handle, or by shutdown's policies |
//! | `schedpool_failed_total` | counter | count | `pool` | runs that panicked or returned `Err` |
//! | `schedpool_rejected_total` | counter | count | `pool` | submissions refused: shut down, or no worker could start |
//! | `schedpool_queued` | gauge | count | `pool` | tasks waiting in the queue |
//! | `schedpool_active` | gauge | count | `pool` | tasks running now |
//! | `schedpool_threads` | gauge | count | `pool` | live worker threads |
//! | `schedpool_lag_seconds` | gauge | seconds | `pool` | age of the oldest due task not yet started (0 when none is due) |
//! | `schedpool_lateness_seconds` | histogram | seconds | `pool` | each run's start minus its due time |
//! | `schedpool_run_seconds` | histogram | seconds | `pool` | each run's body time |
//! | `schedpool_durable_items` | gauge | count | `pool`, `state` | items in the store by `state`: `pending`, `in_flight` (leased), `dead` (the dead letters) |
//! | `schedpool_durable_lag_seconds` | gauge | seconds | `pool` | age of the oldest due item not yet claimed, by the store's clock |
//! | `schedpool_durable_succeeded_total` | counter | count | `pool` | [`DurableStats`](durable::DurableStats)`::succeeded` (this process) |
//! | `schedpool_durable_failed_total` | counter | count | `pool` | `DurableStats::failed` |
//! | `schedpool_durable_retried_total` | counter | count | `pool` | `DurableStats::retried` |
//! | `schedpool_durable_dead_lettered_total` | counter | count | `pool` | `DurableStats::dead_lettered` |
//! | `schedpool_durable_lease_lost_total` | counter | count | `pool` | `DurableStats::lease_lost` |
//! | `schedpool_durable_deferred_total` | counter | count | `pool` | `DurableStats::deferred` |
//! | `schedpool_durable_fires_skipped_total` | counter | count | `pool` | `DurableStats::fires_skipped` |
//! | `schedpool_durable_fires_coalesced_total` | counter | count | `pool` | `DurableStats::fires_coalesced` |
//!
//! What it costs: a run records its two histograms on its worker (two
//! handle calls and a clock read); nothing else is done per task. A
//! sampler thread per pool (`"{name}-metrics"`, started at `build`, gone
//! once the pool terminates or shuts down) publishes the counters, as the
//! growth of the pool's own counts, and the gauges every
//! `Builder::metrics_interval` (1 s) or
//! `DurablePoolBuilder::metrics_interval` (5 s; each sample asks the store
//! three questions), and once more at the end; `rejected` is counted at
//! once. The durable gauges are the store's, so every process of a fleet
//! reports the same depth. Lateness, run time and lag are by the pool's
//! clock: virtual time on a [`ManualClock`]. Without the feature, none of
//! this is compiled.
//!
//! ```
//! # #[cfg(feature = "metrics")]
//! # {
//! use std::time::Duration;
//! use schedpool::ScheduledThreadPool;
//!
//! // An exporter's recorder is installed first, e.g.
//! // metrics_exporter_prometheus::PrometheusBuilder::new().install_recorder()?;
//! let pool = ScheduledThreadPool::builder()
//!     .thread_name("timeouts") // pool="timeouts"
//!     .metrics_interval(Duration::from_millis(500))
//!     .build()?;
//! pool.schedule(|| (), Duration::from_millis(1))?.join()?;
//! # }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The example `metrics_prometheus` (package `schedpool-integration`)
//! serves them to Prometheus; the guide's "Metrics" shows a scrape.
//!
//! The user [`guide`] (also `docs/guide.md`) tours what to reach for and why,
//! with migration tables from Java and from the `scheduled-thread-pool` crate.
//!
//! The design (the heap, the leader/follower protocol, why no wake-up is
//! lost) is in `docs/design.md`; the deliberate differences from Java are in
//! `docs/java-differences.md`.

#![warn(
    missing_docs,
    missing_debug_implementations,
    unreachable_pub,
    rust_2018_idioms
)]
#![deny(unsafe_op_in_unsafe_fn)]
#![doc(test(attr(deny(warnings))))]
// docs.rs (Cargo.toml's [package.metadata.docs.rs]): each feature-gated item
// shows the feature it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]

// Layers, each using only those listed before it (docs/design.md):
mod base;
pub mod calendar;
mod delay_queue;
pub mod durable;
#[cfg(not(doctest))]
pub mod guide;
#[doc(hidden)]
pub mod internals;
mod pool;
mod queue;
mod structures;
mod task;
mod wait;

pub use base::clock::ManualClock;
pub use base::error::{BuildError, Panic, Rejected, TaskError};
pub use delay_queue::{DelayItem, DelayQueue, Delayed, Key};
#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
pub use pool::async_handle::AsyncHandle;
pub use pool::builder::Builder;
pub use pool::calendar::OnCalendar;
pub use pool::cancel_guard::CancelOnDrop;
pub use pool::executor::{ScheduledThreadPool, Terminated};
pub use pool::handle::{PendingTask, ScheduledHandle, TaskState};
pub use pool::hooks::{RunInfo, TaskFailure};
pub use pool::idle::IdleTimer;
pub use pool::periodic::Periodic;
pub use pool::stats::{Lateness, PoolStats};
pub use task::policy::{MissedTicks, Next, OnFailure, RunOutcome, RunResult};
