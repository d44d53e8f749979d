//! The pool's metrics (feature `metrics`): handles on the `metrics` facade,
//! registered once per pool, and what a sample publishes. The thread that
//! takes the samples is [`super::sampler`]; the names, types and units are
//! documented in the crate docs ("Metrics") and `docs/guide.md`.
//!
//! # Invariants
//!
//! - Every handle is registered once, when the pool is built, with the
//!   recorder installed then (global, or a `metrics::with_local_recorder`
//!   around `build`): no event looks a name up in a registry.
//! - Only [`PoolMetrics::record_run`] runs per task (two histogram records
//!   on a worker, outside every lock). Counters and gauges are published by
//!   the sampler, counters as the growth of the pool's own counts since its
//!   last sample, so each counter only grows and adds up to the count it
//!   mirrors. The one exception is `rejected`, counted at once where a
//!   submission is refused (outside the lock): refusals are rare, and may
//!   come after the pool terminated, when the sampler is gone.

use std::time::Duration;

use metrics::{Counter, Gauge, Histogram, Unit};

use crate::base::clock::Nanos;

/// Metric names (see the table in the crate docs).
pub(super) const SCHEDULED: &str = "schedpool_scheduled_total";
pub(super) const RAN: &str = "schedpool_ran_total";
pub(super) const CANCELLED: &str = "schedpool_cancelled_total";
pub(super) const FAILED: &str = "schedpool_failed_total";
pub(super) const REJECTED: &str = "schedpool_rejected_total";
pub(super) const QUEUED: &str = "schedpool_queued";
pub(super) const ACTIVE: &str = "schedpool_active";
pub(super) const THREADS: &str = "schedpool_threads";
pub(super) const LAG: &str = "schedpool_lag_seconds";
pub(super) const LATENESS: &str = "schedpool_lateness_seconds";
pub(super) const RUN_TIME: &str = "schedpool_run_seconds";

/// The label that tells pools apart: the pool's thread-name prefix.
pub(super) const POOL_LABEL: &str = "pool";

/// How often the sampler publishes by default.
pub(super) const DEFAULT_INTERVAL: Duration = Duration::from_secs(1);
/// The shortest sampling interval accepted (shorter ones are raised to it).
pub(super) const MIN_INTERVAL: Duration = Duration::from_millis(1);

/// One reading of the pool, taken by the sampler.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Sample {
    /// Tasks accepted (`PoolStats::accepted`).
    pub(super) scheduled: u64,
    /// Runs started (the lateness histogram's count).
    pub(super) ran: u64,
    pub(super) cancelled: u64,
    pub(super) failed: u64,
    pub(super) queued: usize,
    pub(super) active: usize,
    pub(super) threads: usize,
    /// Age of the oldest due task not yet started (0 when none is due).
    pub(super) lag: Nanos,
}

/// The pool's metric handles.
pub(crate) struct PoolMetrics {
    scheduled: Counter,
    ran: Counter,
    cancelled: Counter,
    failed: Counter,
    rejected: Counter,
    queued: Gauge,
    active: Gauge,
    threads: Gauge,
    lag: Gauge,
    lateness: Histogram,
    run_time: Histogram,
}

impl PoolMetrics {
    /// Describes the metrics to the current recorder and registers this
    /// pool's handles, labelled `pool = name`.
    pub(super) fn new(name: &str) -> Self {
        describe();
        let label = || [(POOL_LABEL, name.to_owned())];
        PoolMetrics {
            scheduled: metrics::counter!(SCHEDULED, &label()),
            ran: metrics::counter!(RAN, &label()),
            cancelled: metrics::counter!(CANCELLED, &label()),
            failed: metrics::counter!(FAILED, &label()),
            rejected: metrics::counter!(REJECTED, &label()),
            queued: metrics::gauge!(QUEUED, &label()),
            active: metrics::gauge!(ACTIVE, &label()),
            threads: metrics::gauge!(THREADS, &label()),
            lag: metrics::gauge!(LAG, &label()),
            lateness: metrics::histogram!(LATENESS, &label()),
            run_time: metrics::histogram!(RUN_TIME, &label()),
        }
    }

    /// Counts a refused submission (a cold path: at once, not sampled).
    pub(super) fn count_rejected(&self) {
        self.rejected.increment(1);
    }

    /// Records one run: how late it started and how long its body took.
    #[inline]
    pub(super) fn record_run(&self, lateness: Nanos, run_time: Nanos) {
        self.lateness.record(seconds(lateness));
        self.run_time.record(seconds(run_time));
    }

    /// Publishes `now`: the counters grow by what they grew since `last`
    /// (then `last` is `now`), the gauges are set.
    pub(super) fn publish(&self, now: &Sample, last: &mut Sample) {
        let grow = |counter: &Counter, now: u64, last: u64| {
            if now > last {
                counter.increment(now - last);
            }
        };
        grow(&self.scheduled, now.scheduled, last.scheduled);
        grow(&self.ran, now.ran, last.ran);
        grow(&self.cancelled, now.cancelled, last.cancelled);
        grow(&self.failed, now.failed, last.failed);
        self.queued.set(now.queued as f64);
        self.active.set(now.active as f64);
        self.threads.set(now.threads as f64);
        self.lag.set(seconds(now.lag));
        *last = *now;
    }
}

fn seconds(nanos: Nanos) -> f64 {
    nanos as f64 / 1e9
}

/// Names the unit and meaning of each metric to the current recorder (the
/// Prometheus exporter's `# HELP` lines).
fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram};
    describe_counter!(
        SCHEDULED,
        Unit::Count,
        "Tasks accepted by the pool (a periodic task counts once)."
    );
    describe_counter!(
        RAN,
        Unit::Count,
        "Runs started (every periodic run counts)."
    );
    describe_counter!(
        CANCELLED,
        Unit::Count,
        "Tasks cancelled: by their handle, or by shutdown's policies."
    );
    describe_counter!(
        FAILED,
        Unit::Count,
        "Runs that failed: panicked, or returned Err."
    );
    describe_counter!(
        REJECTED,
        Unit::Count,
        "Submissions refused: the pool was shut down, or no worker could start."
    );
    describe_gauge!(QUEUED, Unit::Count, "Tasks waiting in the queue.");
    describe_gauge!(ACTIVE, Unit::Count, "Tasks running now.");
    describe_gauge!(THREADS, Unit::Count, "Live worker threads.");
    describe_gauge!(
        LAG,
        Unit::Seconds,
        "Age of the oldest due task not yet started (0 when none is due)."
    );
    describe_histogram!(
        LATENESS,
        Unit::Seconds,
        "How late each run started: start minus due."
    );
    describe_histogram!(RUN_TIME, Unit::Seconds, "How long each run's body took.");
}
