//! `QueueOptions`: the settings a durable queue and a durable pool share
//! (lease, `max_block`, `max_attempts`), checked once when either is made.
//!
//! A leaf of `take/`: the taker, the queue and the pool builder all read
//! it, so it sits below them.

use std::time::Duration;

use crate::durable::store::error::DurableError;

/// Settings of a durable queue or pool.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use schedpool::durable::{DurableQueue, MemoryBackend, QueueOptions};
///
/// let opts = QueueOptions {
///     lease: Duration::from_secs(60),
///     max_attempts: 5,
///     ..QueueOptions::default()
/// };
/// let queue: DurableQueue<u64> = DurableQueue::with_options(MemoryBackend::new(), opts)?;
/// assert_eq!(queue.options().lease, Duration::from_secs(60));
/// # Ok::<(), schedpool::durable::DurableError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueOptions {
    /// How long a claim holds an item before another consumer may take it
    /// (default 30 s). Heartbeats renew it every third of this while the
    /// [`Delivery`](crate::durable::Delivery) is alive, so it bounds how late an item held by a
    /// killed process comes back, not how long a handler may run.
    pub lease: Duration,
    /// The longest a consumer sleeps without asking the store (default
    /// 5 s): the bound on lateness after a lost wake-up.
    pub max_block: Duration,
    /// Claims after which an item whose lease expires is dead-lettered
    /// instead of redelivered; 0 (the default) means no limit.
    pub max_attempts: u32,
}

impl Default for QueueOptions {
    fn default() -> Self {
        QueueOptions {
            lease: Duration::from_secs(30),
            max_block: Duration::from_secs(5),
            max_attempts: 0,
        }
    }
}

impl QueueOptions {
    pub(crate) fn check(&self) -> Result<(), DurableError> {
        if self.lease < Duration::from_millis(3) {
            return Err(DurableError::Config("lease must be at least 3 ms".into()));
        }
        if self.max_block.is_zero() {
            return Err(DurableError::Config("max_block must be positive".into()));
        }
        Ok(())
    }
}
