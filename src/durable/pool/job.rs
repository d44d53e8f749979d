//! What a handler of a `DurablePool` sees: [`JobInfo`] about its run, and
//! [`HandlerError`] for a failure.
//!
//! Below both `pool.rs` and `runner.rs`, which hand these to user code.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::durable::take::lease::LeaseCell;

/// What a handler returns on failure: any error. The item is retried with
/// backoff, then dead-lettered.
///
/// # Examples
///
/// ```
/// use schedpool::durable::{DurablePool, HandlerError, JobInfo, MemoryBackend};
///
/// fn send_mail(to: &String, _job: &JobInfo) -> Result<(), HandlerError> {
///     if !to.contains('@') {
///         return Err(format!("not an address: {to:?}").into()); // any error converts
///     }
///     let _port: u16 = "25".parse()?; // and ? works on any std error
///     Ok(())
/// }
/// let pool = DurablePool::builder(MemoryBackend::new()).threads(1).handler("mail", send_mail).build()?;
/// # pool.shutdown();
/// # Ok::<(), schedpool::durable::DurableError>(())
/// ```
pub type HandlerError = Box<dyn std::error::Error + Send + Sync>;

/// What a handler knows about the run it is in.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedpool::durable::{DurablePool, MemoryBackend};
///
/// let pool = DurablePool::builder(MemoryBackend::new())
///     .threads(1)
///     .handler("charge", |cents: &u64, job| {
///         // At least once: pass the id and token on, so the payment
///         // provider applies this charge once whatever the retries.
///         println!("charge {cents} (key {}, token {}, attempt {})", job.id, job.token, job.attempt);
///         Ok(())
///     })
///     .build()?;
/// pool.schedule("charge", "order-42", &1999u64, Duration::ZERO)?;
/// assert!(pool.wait_idle(Duration::from_secs(5)));
/// # Ok::<(), schedpool::durable::DurableError>(())
/// ```
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
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::durable::{DurablePool, JobInfo, MemoryBackend};
    ///
    /// fn export(rows: &u64, job: &JobInfo) -> Result<(), schedpool::durable::HandlerError> {
    ///     for _batch in 0..*rows / 1000 {
    ///         if job.lease_lost() {
    ///             return Err("lease lost: another process has this export".into());
    ///         }
    ///         // ... write one batch
    ///     }
    ///     Ok(())
    /// }
    /// let pool = DurablePool::builder(MemoryBackend::new()).threads(1).handler("export", export).build()?;
    /// # pool.shutdown();
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn lease_lost(&self) -> bool {
        self.lease.lost()
    }

    /// [`deadline_ms`](Self::deadline_ms) as a `SystemTime`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// use schedpool::durable::{DurablePool, MemoryBackend};
    ///
    /// let pool = DurablePool::builder(MemoryBackend::new())
    ///     .threads(1)
    ///     .handler("report", |_: &(), job| {
    ///         // Report on the period the run was for, not on when it ran.
    ///         let for_time: SystemTime = job.deadline();
    ///         assert!(for_time <= SystemTime::now());
    ///         Ok(())
    ///     })
    ///     .build()?;
    /// pool.schedule("report", "r-1", &(), Duration::ZERO)?;
    /// assert!(pool.wait_idle(Duration::from_secs(5)));
    /// assert_eq!(pool.stats().succeeded, 1);
    /// # Ok::<(), schedpool::durable::DurableError>(())
    /// ```
    pub fn deadline(&self) -> SystemTime {
        crate::durable::take::delivery::ms_to_time(self.deadline_ms)
    }
}
