//! The pool's run reports (failures, lateness, starvation warnings) and its
//! statistics snapshot.

use std::sync::atomic::Ordering;

use crate::base::clock::Nanos;
use crate::pool::hooks::TaskFailure;
use crate::pool::run_state::RunState;
use crate::pool::shared::Shared;
use crate::pool::stats::PoolStats;
use crate::task::header::{Caught, Header};

// ===== the pool's run reports and snapshot =====

impl Shared {
    /// Reports a failed run (a caught panic, or a body's `Err`): `ERROR`
    /// event, counters, the pool's failure handler.
    pub(super) fn report_panic(&self, header: &Header, caught: Caught) {
        if caught.panicked {
            tracing::error!(
                target: "schedpool::task",
                id = header.seq(),
                kind = header.kind().name(),
                panic = %caught.message,
                "task panicked"
            );
            self.panicked.fetch_add(1, Ordering::Relaxed);
        } else {
            tracing::error!(
                target: "schedpool::task",
                id = header.seq(),
                kind = header.kind().name(),
                error = %caught.message,
                "task failed"
            );
        }
        self.failed.fetch_add(1, Ordering::Relaxed);
        let panic = TaskFailure::new(
            header.seq(),
            header.kind().name(),
            caught.message,
            caught.payload,
            caught.panicked,
        );
        self.config.hooks.panicked(panic);
    }

    /// Records a run's lateness; warns (at most once a second) when due
    /// tasks waited longer than the starvation threshold for a worker.
    pub(super) fn record_lateness(&self, id: u64, late: Nanos, now: Nanos) {
        self.lateness.record(late);
        if late > crate::base::clock::delay_nanos(self.config.starvation_threshold) {
            let last = self.last_starvation_warning.load(Ordering::Relaxed);
            let second = 1_000_000_000;
            if (last == 0 || now.saturating_sub(last) >= second)
                && self
                    .last_starvation_warning
                    .compare_exchange(last, now.max(1), Ordering::Relaxed, Ordering::Relaxed)
                    .is_ok()
            {
                tracing::warn!(
                    target: "schedpool::pool",
                    id,
                    lateness_us = late / 1_000,
                    threshold_us = self.config.starvation_threshold.as_micros() as u64,
                    "due tasks are waiting for a free worker (pool starvation)"
                );
            }
        }
    }

    pub(crate) fn stats(&self) -> PoolStats {
        let (queued, active, workers, accepted, completed, cancelled) = {
            let s = self.lock();
            let active = self.ready.running(s.active);
            let counts = (s.accepted, s.completed, s.cancelled);
            (
                s.queue.len(),
                active,
                s.workers,
                counts.0,
                counts.1,
                counts.2,
            )
        };
        PoolStats {
            queued,
            active,
            workers: if self.run_state() == RunState::Terminated {
                0
            } else {
                workers
            },
            accepted,
            completed,
            cancelled,
            rejected: self.rejected.load(Ordering::Relaxed),
            panicked: self.panicked.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
            lateness: self.lateness.snapshot(),
        }
    }
}
