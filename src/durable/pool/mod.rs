//! `DurablePool`: worker threads that run durable items through handlers
//! registered by kind, with retries, dead letters, durable periodic chains
//! and calendar schedules.
//!
//! Layers inside, each using only those before it:
//!
//! 1. `fires` (fire instants in reports), `job` ([`JobInfo`](job::JobInfo),
//!    [`HandlerError`](job::HandlerError));
//! 2. `misfire` ([`Misfire`](misfire::Misfire) and the missed-fire decision, a pure
//!    function of what is stored); `calendar_def` (a calendar schedule's
//!    stored definition); `calendar_fire` (a claimed calendar schedule:
//!    run it, defer it, or persist a misfire decision);
//! 3. `shared`: the state every part of the pool shares (`Inner`: the store,
//!    the taker, the acker, the handlers, the counters), how a run settles
//!    (`After`), and with feature `tokio` the async side's types that
//!    `Inner` holds (the runtime, the settler's channel, a kind's slots);
//! 4. `runner`: the workers and the acker thread, and how a run's outcome
//!    settles its item;
//! 5. `durable_pool`: [`DurablePool`](durable_pool::DurablePool), the public face; `metrics` (feature
//!    `metrics`): the sampler;
//! 6. `calendar` (schedule_calendar and replace_calendar), `tx` (the
//!    verbs in the caller's transaction, feature `postgres`) and
//!    `builder` ([`DurablePoolBuilder`](builder::DurablePoolBuilder)): impl blocks of `DurablePool`'s.
//!
//! With feature `tokio`: `async_job` ([`AsyncJob`](crate::durable::AsyncJob),
//! beside `job`), `async_runner` (async handlers' futures on a runtime and
//! their settler thread, beside `runner`, which dispatches to it), `builder_async`
//! (`handler_async`, beside `builder`), `async_client`
//! ([`AsyncClient`](crate::durable::AsyncClient)) and `async_tx` (its verbs in
//! the caller's async transaction: with `postgres`, or `sqlx-sqlite`).

#[cfg(feature = "tokio")]
pub(crate) mod async_client;
#[cfg(feature = "tokio")]
pub(crate) mod async_job;
#[cfg(feature = "tokio")]
mod async_runner;
#[cfg(all(feature = "tokio", any(feature = "postgres", feature = "sqlx-sqlite")))]
mod async_tx;
pub(crate) mod builder;
#[cfg(feature = "tokio")]
pub(crate) mod builder_async;
pub(crate) mod calendar;
pub(crate) mod calendar_def;
mod calendar_fire;
pub(crate) mod durable_pool;
mod fires;
pub(crate) mod item;
pub(crate) mod job;
#[cfg(feature = "metrics")]
mod metrics;
pub(crate) mod misfire;
mod runner;
mod shared;
#[cfg(any(feature = "postgres", feature = "sqlite"))]
mod tx;
