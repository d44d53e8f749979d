//! # schedpool
//!
//! A scheduled thread pool and a delay queue: Java's
//! `ScheduledThreadPoolExecutor` and `DelayQueue`, ported with their
//! semantics, plus a cancel that drops the closure at once and takes a
//! pending task out of the queue in O(log n) (see
//! [`ScheduledHandle::cancel`] for the exact rule), async handles and a
//! virtual clock for tests.
//!
//! ```
//! use std::time::Duration;
//! use schedpool::ScheduledThreadPool;
//!
//! let pool = ScheduledThreadPool::new(2);
//!
//! // Close an unpaid order after its payment window ...
//! let timeout = pool.schedule(|| "order 42 closed", Duration::from_millis(50))?;
//! // ... unless it is paid first: cancel drops the task at once.
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
//! - [`DelayQueue`]: a blocking queue of [`Delayed`] elements (or
//!   [`DelayItem`]s) that come out once due; [`Key`]s remove them in
//!   O(log n).
//! - [`Periodic`] (from `pool.at_fixed_rate(p)` or `pool.with_fixed_delay(d)`):
//!   periodic tasks with a [`MissedTicks`] policy (burst, skip, delay), an
//!   [`OnPanic`] policy (stop, continue, backoff), run limits, jitter and
//!   bodies that choose their next delay. Handles pause, resume, trigger
//!   and re-period them.
//! - [`IdleTimer`] (`pool.idle_timer`): fires once its subject has been idle
//!   for a while; `touch()` pushes it back without a heap operation.
//! - [`ManualClock`]: virtual time. Give it to a pool or queue, then
//!   `advance` it: a 30-minute timeout fires in microseconds.
//! - Hooks and numbers: a panic handler and before/after hooks on the
//!   [`Builder`], [`RunInfo::current`] inside a run, and
//!   [`ScheduledThreadPool::stats`] with a lateness histogram.
//! - [`durable`]: timeouts that survive restarts and are shared by a fleet.
//!   A `DurableQueue` and a `DurablePool` run over a `DurableBackend`. The
//!   backend is Redis with the `redis` feature, or in memory on a
//!   [`ManualClock`] for tests. Time is the store's clock, delivery is at
//!   least once with fenced leases, and cancel by id takes O(log n).
//! - Errors are values: [`Rejected`] for refused submissions, [`TaskError`]
//!   for tasks that were cancelled or panicked. Nothing panics on bad input.
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
//! `fixed_delay`, or `idle` for an idle timer) and `lateness_us`. A panic
//! emits an `ERROR` event carrying the message; rejections emit `DEBUG`,
//! shutdown `INFO`, and pool starvation (due tasks waiting for a worker past
//! [`Builder::starvation_threshold`]) `WARN` events. With no subscriber the
//! cost is a branch.
//!
//! A user guide with examples and migration tables from Java and from the
//! `scheduled-thread-pool` crate is in `docs/guide.md`.
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

// Layers, each using only those listed before it (docs/design.md):
mod base;
mod delay_queue;
pub mod durable;
#[doc(hidden)]
pub mod internals;
mod leader;
mod pool;
mod queue;
mod structures;
mod task;

pub use base::clock::ManualClock;
pub use base::error::{Rejected, TaskError};
pub use delay_queue::{DelayItem, DelayQueue, Delayed, Key};
pub use pool::builder::Builder;
pub use pool::executor::ScheduledThreadPool;
pub use pool::handle::{PendingTask, ScheduledHandle, TaskState};
pub use pool::hooks::{RunInfo, TaskPanic};
pub use pool::idle::IdleTimer;
pub use pool::periodic::Periodic;
pub use pool::stats::{Lateness, PoolStats};
pub use task::policy::{MissedTicks, Next, OnPanic, RunOutcome};
