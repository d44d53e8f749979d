//! loom models of the protocol races, one module per protocol: the
//! leader/follower hand-offs of the delay queue (`delay_queue_handoff`),
//! schedule vs shutdown and shutdown of idle workers (`pool_shutdown`), cancel
//! vs take, a submission, a clock advance, purge and re-enqueue
//! (`pool_cancel`), a cancel vs the owner's reclaim of its node
//! (`cancel_reclaim`), pause/resume and re-enqueue of periodic tasks
//! (`periodic`), `wait_idle` (`wait_idle`), a handle's completion vs its waker
//! registration (`completion_vs_waker`), the durable queue's taker
//! (`durable_handoff`), the ready batch (`ready_batch`), the submission
//! inbox (`inbox`) and the delayed submission list (`submissions`).
//!
//! Run with:
//!
//! ```text
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 CARGO_TARGET_DIR=target/loom \
//!     cargo test --release --test loom
//! ```
//!
//! (`.ci/run` does; `-- inbox::` runs one module's models.)
//!
//! loom does not model time: a timed wait is an untimed wait that never
//! times out (see `src/base/sync.rs`). So every model makes progress only through
//! signals: deadlines already past, or a `ManualClock` that is advanced. A
//! lost wake-up therefore shows up as a loom deadlock. The pool's successor
//! (a follower that times the second task, `docs/design.md` rule 5) exists
//! only for a timer that fires, so it is off here and checked on the real
//! clock in `src/wait/tests.rs`. Every pool model shuts
//! its pool down and waits for termination, so all worker threads (loom
//! threads) exit. No model uses a core-0 pool (its keep-alive is a timed wait).
//! Each model has at most 4 threads, workers included.
#![cfg(loom)]

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::{Condvar, Mutex};
use loom::thread;
use schedpool::{DelayItem, DelayQueue, ManualClock, ScheduledThreadPool, TaskError};

mod cancel_reclaim;
mod completion_vs_waker;
mod delay_queue_handoff;
mod durable_handoff;
mod inbox;
mod periodic;
mod pool_cancel;
mod pool_shutdown;
mod ready_batch;
mod submissions;
mod wait_idle;

/// Long enough to never matter: under loom the wait is untimed anyway.
const FOREVER: Duration = Duration::from_secs(3600);

fn past() -> Instant {
    Instant::now()
        .checked_sub(Duration::from_secs(1))
        .unwrap_or_else(Instant::now)
}

fn pool(core: usize) -> ScheduledThreadPool {
    assert!(core > 0, "a core-0 pool uses a timed keep-alive wait");
    ScheduledThreadPool::builder()
        .core_threads(core)
        .thread_name("loom")
        .build()
        .unwrap()
}

/// A one-worker pool on a `ManualClock` that is never advanced: its tasks
/// are due only when a model says so, by cancelling or shutting down.
fn manual_pool() -> ScheduledThreadPool {
    pool_on(&ManualClock::new())
}

/// A one-worker pool on `clock`, which the model advances.
fn pool_on(clock: &ManualClock) -> ScheduledThreadPool {
    workers_on(1, clock)
}

/// A pool of `workers` on `clock`, which the model advances.
fn workers_on(workers: usize, clock: &ManualClock) -> ScheduledThreadPool {
    ScheduledThreadPool::builder()
        .core_threads(workers)
        .clock(clock.clone())
        .build()
        .unwrap()
}

/// Shuts the pool down and checks that it terminates (a worker that never
/// exits is a loom deadlock, not a hang).
fn finish(pool: &ScheduledThreadPool) {
    assert!(pool.shutdown().await_termination(FOREVER));
    assert!(pool.is_terminated());
    assert_eq!(pool.pool_size(), 0);
}
