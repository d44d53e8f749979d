//! The pool's metrics sampler (feature `metrics`): one thread per pool that
//! reads the pool's counts under its lock once an interval and publishes
//! them through [`PoolMetrics`](super::metrics::PoolMetrics).
//!
//! # Invariants
//!
//! - A sample is read under one pool lock (so `queued`, `active`, `threads`
//!   and `lag` are one moment's) and published outside it: a recorder is
//!   user code, and none runs under the pool lock.
//! - The sampler publishes once when it starts (every series exists before
//!   the first task), then once an interval, and once more after it sees
//!   the pool terminated; then it exits. It holds the pool's core, not its
//!   owner, so it never keeps a dropped pool from shutting down.
//! - The pool's own counts decide every number: the sampler adds nothing
//!   to the hot paths but the `State` count of cancels.

use std::sync::Arc;
use std::time::Duration;

use crate::base::sync::spawn_named;
use crate::pool::metrics::{Sample, MIN_INTERVAL};
use crate::pool::run_state::RunState;
use crate::pool::shared::Shared;

/// Starts the pool's sampler thread, named `"{thread_name}-metrics"`.
/// Best effort: if the thread cannot start, the pool runs without its
/// counters and gauges (its histograms still record), and says so in an
/// `ERROR` event.
pub(super) fn start(shared: &Arc<Shared>, interval: Duration) {
    let interval = interval.max(MIN_INTERVAL);
    let name = format!("{}-metrics", shared.config.thread_name);
    let shared = Arc::clone(shared);
    if let Err(err) = spawn_named(name, move || run(&shared, interval)) {
        tracing::error!(target: "schedpool::pool", error = %err,
            "could not start the metrics sampler thread; counters and gauges will not be published");
    }
}

fn run(shared: &Shared, interval: Duration) {
    let mut last = Sample::default();
    loop {
        let (now, terminated) = read(shared);
        shared.metrics.publish(&now, &mut last);
        if terminated {
            return;
        }
        // Returns early when the pool terminates, for the last sample.
        shared.await_termination(interval);
    }
}

/// One reading of the pool, and whether it has terminated.
fn read(shared: &Shared) -> (Sample, bool) {
    let (mut sample, terminated) = {
        let state = shared.lock();
        let now = shared.clock.now();
        let lag = state
            .queue
            .oldest_deadline()
            .map_or(0, |due| now.saturating_sub(due));
        let terminated = shared.run_state() == RunState::Terminated;
        let sample = Sample {
            scheduled: state.accepted,
            cancelled: state.cancelled,
            queued: state.queue.len(),
            active: shared.ready.running(state.active),
            threads: if terminated { 0 } else { state.workers },
            lag,
            ..Sample::default()
        };
        (sample, terminated)
    };
    sample.ran = shared.lateness.count();
    sample.failed = shared.failed.load(std::sync::atomic::Ordering::Relaxed);
    (sample, terminated)
}
