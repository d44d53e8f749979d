//! A durable pool's metrics (feature `metrics`): handles on the `metrics`
//! facade, registered once per pool, and the sampler thread that publishes
//! them. Names, types and units are in the crate docs ("Metrics") and
//! `docs/guide.md`.
//!
//! # Invariants
//!
//! - Every handle is registered once, at `build`, with the recorder
//!   installed then; no run touches a metric: the counters are published
//!   by the sampler as the growth of the pool's own counters
//!   ([`DurableStats`](crate::durable::DurableStats)) since its last sample.
//! - The depth by state and the lag are the store's (all processes), read
//!   with three store calls a sample, on the sampler thread only. A sample
//!   whose store calls fail leaves those gauges as they were (and logs a
//!   `DEBUG` event); the counters are still published.
//! - The sampler publishes when it starts, once an interval, and once
//!   more after shutdown once every worker has exited; then it exits. It
//!   waits on a condvar of its own, which only `shutdown` signals, so the
//!   workers' per-run notifications never wake it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use metrics::{Counter, Gauge, Unit};

use super::shared::{Counters, Inner};

const ITEMS: &str = "schedpool_durable_items";
const LAG: &str = "schedpool_durable_lag_seconds";
const SUCCEEDED: &str = "schedpool_durable_succeeded_total";
const FAILED: &str = "schedpool_durable_failed_total";
const RETRIED: &str = "schedpool_durable_retried_total";
const DEAD_LETTERED: &str = "schedpool_durable_dead_lettered_total";
const LEASE_LOST: &str = "schedpool_durable_lease_lost_total";
const DEFERRED: &str = "schedpool_durable_deferred_total";
const FIRES_SKIPPED: &str = "schedpool_durable_fires_skipped_total";
const FIRES_COALESCED: &str = "schedpool_durable_fires_coalesced_total";

/// How often a durable pool publishes by default: each sample costs three
/// store calls (PostgreSQL counts the queue's rows).
pub(super) const DEFAULT_INTERVAL: Duration = Duration::from_secs(5);
/// The shortest interval accepted (shorter ones are raised to it).
const MIN_INTERVAL: Duration = Duration::from_millis(1);

/// How many counters a durable pool publishes.
const N: usize = 8;

/// The pool's handles: gauges, then counters in [`Counters`]' order.
struct Handles {
    pending: Gauge,
    in_flight: Gauge,
    dead: Gauge,
    lag: Gauge,
    counters: [Counter; N],
}

impl Handles {
    fn new(name: &str) -> Self {
        describe();
        let pool = || ("pool", name.to_owned());
        let items =
            |state: &'static str| metrics::gauge!(ITEMS, &[pool(), ("state", state.to_owned())]);
        let counter = |metric: &'static str| metrics::counter!(metric, &[pool()]);
        Handles {
            pending: items("pending"),
            in_flight: items("in_flight"),
            dead: items("dead"),
            lag: metrics::gauge!(LAG, &[pool()]),
            counters: [
                counter(SUCCEEDED),
                counter(FAILED),
                counter(RETRIED),
                counter(DEAD_LETTERED),
                counter(LEASE_LOST),
                counter(DEFERRED),
                counter(FIRES_SKIPPED),
                counter(FIRES_COALESCED),
            ],
        }
    }
}

/// The pool's counters, in the order of [`Handles::counters`].
fn counts(c: &Counters) -> [u64; N] {
    let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
    [
        get(&c.succeeded),
        get(&c.failed),
        get(&c.retried),
        get(&c.dead_lettered),
        get(&c.lease_lost),
        get(&c.deferred),
        get(&c.fires_skipped),
        get(&c.fires_coalesced),
    ]
}

/// Registers the pool's metrics (labelled `pool = name`) and starts its
/// sampler thread, `"{name}-metrics"`. Best effort: a sampler that cannot
/// start is reported in an `ERROR` event, and the pool runs without it.
pub(super) fn start(inner: &Arc<Inner>, name: &str, interval: Duration) {
    let handles = Handles::new(name);
    let interval = interval.max(MIN_INTERVAL);
    let inner = Arc::clone(inner);
    let spawned = std::thread::Builder::new()
        .name(format!("{name}-metrics"))
        .spawn(move || run(&inner, &handles, interval));
    if let Err(err) = spawned {
        tracing::error!(target: "schedpool::durable", error = %err,
            "could not start the metrics sampler thread; the durable pool's metrics will not be published");
    }
}

fn run(inner: &Inner, handles: &Handles, interval: Duration) {
    let mut last = [0u64; N];
    loop {
        publish(inner, handles, &mut last);
        let mut s = inner.state.lock();
        let until = Instant::now() + interval;
        while !s.shutdown && Instant::now() < until {
            inner.sampler.wait_until(&mut s, until);
        }
        if s.shutdown {
            // The last sample, once the runs in progress have settled.
            while s.running > 0 {
                inner.cv.wait(&mut s);
            }
            drop(s);
            publish(inner, handles, &mut last);
            return;
        }
    }
}

/// One sample: the counters' growth since `last`, and the store's gauges.
fn publish(inner: &Inner, handles: &Handles, last: &mut [u64; N]) {
    let now = counts(&inner.counters);
    for ((counter, now), last) in handles.counters.iter().zip(now).zip(last.iter_mut()) {
        if now > *last {
            counter.increment(now - *last);
        }
        *last = now;
    }
    let backend = &inner.store;
    let store = backend.counts().and_then(|counts| {
        let head = backend.peek_deadline_ms()?;
        let now = backend.server_time_ms()?;
        Ok((counts, head.map_or(0, |at| now.saturating_sub(at))))
    });
    match store {
        Ok((counts, lag_ms)) => {
            handles.pending.set(counts.pending as f64);
            handles.in_flight.set(counts.in_flight as f64);
            handles.dead.set(counts.dead as f64);
            handles.lag.set(lag_ms as f64 / 1e3);
        }
        Err(err) => tracing::debug!(target: "schedpool::durable", error = %err,
            "metrics sample: the store did not answer; its gauges keep their last values"),
    }
}

/// Names the unit and meaning of each metric to the current recorder.
fn describe() {
    use metrics::{describe_counter, describe_gauge};
    describe_gauge!(
        ITEMS,
        Unit::Count,
        "Items in the store by state: pending, in_flight (leased), dead (dead letters)."
    );
    describe_gauge!(
        LAG,
        Unit::Seconds,
        "Age of the oldest due item not yet claimed, by the store's clock (0 when none is due)."
    );
    describe_counter!(
        SUCCEEDED,
        Unit::Count,
        "Runs whose handler returned Ok and whose ack the store accepted (this process)."
    );
    describe_counter!(
        FAILED,
        Unit::Count,
        "Runs whose handler returned Err or panicked (this process)."
    );
    describe_counter!(
        RETRIED,
        Unit::Count,
        "Failed runs given back for a retry (this process)."
    );
    describe_counter!(
        DEAD_LETTERED,
        Unit::Count,
        "Items this process moved to the dead-letter set."
    );
    describe_counter!(
        LEASE_LOST,
        Unit::Count,
        "Settles refused because the lease had been lost (this process)."
    );
    describe_counter!(
        DEFERRED,
        Unit::Count,
        "Items given back unrun: no handler for their kind in this process."
    );
    describe_counter!(
        FIRES_SKIPPED,
        Unit::Count,
        "Missed calendar fires this process dropped (Misfire::skip, the cap of run_all, or max_lateness)."
    );
    describe_counter!(
        FIRES_COALESCED,
        Unit::Count,
        "Missed calendar fires this process folded into one later run (Misfire::run_once)."
    );
}
