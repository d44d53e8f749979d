//! What a handler of a `DurablePool` sees: [`JobInfo`] about its run, and
//! [`HandlerError`] for a failure.
//!
//! Below both `pool.rs` and `runner.rs`, which hand these to user code.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::durable::take::lease::LeaseCell;

/// What a handler returns on failure: any error. The item is retried with
/// backoff, then dead-lettered.
pub type HandlerError = Box<dyn std::error::Error + Send + Sync>;

/// What a handler knows about the run it is in.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct JobInfo {
    /// The item's id.
    pub id: String,
    /// Its kind (the handler's name).
    pub kind: String,
    /// Which claim this is: 1 on the first run, higher on retries and
    /// redeliveries.
    pub attempt: u32,
    /// The fencing token of this claim: record it with the side effect to
    /// make the effect conditional.
    pub token: u64,
    /// The occurrence's scheduled time by the store's clock (for a periodic
    /// chain, the occurrence this run is for).
    pub deadline_ms: u64,
    /// The store's clock at this claim (ms since the Unix epoch): never
    /// before `deadline_ms`.
    pub claimed_ms: u64,
    /// How late the claim was by the store's clock. A pool claims a few
    /// ms of work ahead for fast handlers, so the handler may start a few
    /// ms after the claim; that wait is not in this.
    pub lateness: Duration,
    pub(super) lease: Arc<LeaseCell>,
}

impl JobInfo {
    /// True once the store refused to extend this run's lease: it was
    /// cancelled, replaced by a new put, or its lease expired (this process
    /// stalled) and another holder may be running it. A long handler can
    /// check it between steps and stop early; its ack will fail anyway.
    pub fn lease_lost(&self) -> bool {
        self.lease.lost()
    }

    /// [`deadline_ms`](Self::deadline_ms) as a `SystemTime`.
    pub fn deadline(&self) -> SystemTime {
        crate::durable::take::delivery::ms_to_time(self.deadline_ms)
    }
}
